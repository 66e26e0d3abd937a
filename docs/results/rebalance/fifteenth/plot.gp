# Throughput during / steady per run, by day (runs.dat: arm_index arm run steady during after
# ratio, ops/s in thousands). gnuplot plot.gp, from this directory, after summarize.sh.
set terminal pngcairo size 900,500 font ",10"
set output "ratios.png"
set title "1 GiB join at 16 and 32 MiB/s (alternating), warm-up 30 s, steady 10 s: throughput in the join's window / the steady window"
set xrange [0.5:4.5]
set yrange [0.55:1.25]
set bmargin 6
set xtics ("twelfth session\n16 MiB/s (10 runs)" 1, "twelfth session\n32 MiB/s (6 runs)" 2, "fifteenth session\n16 MiB/s (6 runs)" 3, "fifteenth session\n32 MiB/s (6 runs)" 4)
set ylabel "ops/s in the window / ops/s steady"
set grid ytics
set key below
plot "runs.dat" using 1:7 with points pt 7 ps 1 title "one run", \
     "medians.dat" using 1:2 with points pt 3 ps 3 lc rgb "black" title "median", \
     0.9 with lines dt 2 lc rgb "red" title "target 0.9"
