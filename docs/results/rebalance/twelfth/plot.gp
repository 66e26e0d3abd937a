# Throughput during / steady per run, by arm (runs.dat: arm_index arm run steady during after
# ratio, ops/s in thousands). gnuplot plot.gp, from this directory.
set terminal pngcairo size 1000,500 font ",10"
set output "ratios.png"
set title "1 GiB, warm-up 30 s, steady 10 s: throughput in the join's window / the steady window, per run"
set xrange [0.5:4.5]
set yrange [0.6:1.25]
set bmargin 6
set xtics ("control, no join\n(eleventh session)" 1, "join, 32 MiB/s\n(eleventh session)" 2, \
           "join, 32 MiB/s\n(twelfth session)" 3, "join, 16 MiB/s\n(twelfth session)" 4)
set ylabel "ops/s in the window / ops/s steady"
set grid ytics
set key below
plot "runs.dat" using 1:7 with points pt 7 ps 1 title "one run", \
     "medians.dat" using 1:2 with points pt 3 ps 3 lc rgb "black" title "median", \
     0.9 with lines dt 2 lc rgb "red" title "target 0.9"
