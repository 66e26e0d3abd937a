set terminal pngcairo size 1000,480 font ",10"
set output "ops-and-ratio.png"
set multiplot layout 1,2 title "1 GiB, node 4 joins, moves paced at 32 MiB/s: the destination copies (copy) or hard-links (link) the export files"
set xrange [0.5:2.5]
set bmargin 6
set xtics ("copy\n(9 runs)" 1, "link\n(9 runs)" 2)
set ylabel "client ops/s (thousands)"
set key below
set grid ytics
plot "runs.dat" using ($1-0.15):4 with points pt 7 ps 0.8 title "steady (before the join)", \
     "" using ($1):5 with points pt 5 ps 0.8 title "during the moves", \
     "" using ($1+0.15):6 with points pt 9 ps 0.8 title "after (balanced)"
set ylabel "throughput during / steady"
set yrange [0.6:1.3]
unset key
plot "runs.dat" using 1:7 with points pt 7 ps 1 title "runs", 0.9 with lines dt 2 lc rgb "red" title "target 0.9"
unset multiplot
