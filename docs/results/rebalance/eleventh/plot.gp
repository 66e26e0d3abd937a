# Throughput during / steady per run, by arm (runs.dat: arm_index arm run steady during after
# ratio, ops/s in thousands). gnuplot plot.gp, from this directory.
set terminal pngcairo size 1150,500 font ",10"
set output "ratios.png"
set title "1 GiB, 32 MiB/s: throughput in the join's window / the steady window, per run\n(control: the same windows, no node added)"
set xrange [0.5:6.5]
set yrange [0.6:1.15]
set bmargin 6
set xtics ("join, nice 4\nwarm-up 1 s, steady 5 s" 1, "join, nice 8\nwarm-up 1 s, steady 5 s" 2, \
           "control\nwarm-up 1 s, steady 5 s" 3, "control\nwarm-up 30 s, steady 10 s" 4, \
           "join, nice 4\nwarm-up 30 s, steady 10 s" 5, "as the 5th arm,\nwith tcmalloc" 6)
set ylabel "ops/s in the window / ops/s steady"
set grid ytics
set key below
plot "runs.dat" using 1:7 with points pt 7 ps 1 title "one run", \
     "medians.dat" using 1:2 with points pt 3 ps 3 lc rgb "black" title "median", \
     0.9 with lines dt 2 lc rgb "red" title "target 0.9"
