#!/usr/bin/env bash
# The sharded-field benchmark of docs/results/hotspot.md: paper 003 Figure 6 (32 clients voting
# on 16 questions, naive vs 10 static shards, with and without retries, 10 s per configuration,
# 3 nodes) and the throughput of one hot counter with 1..64 shards against as many independent
# keys (16 clients, RUNS runs of SECONDS_PER_RUN s per point, median, on 1 and 3 nodes), on an embedded
# cluster without fsync. Writes figure6.{json,tsv}, throughput.{json,tsv}, the stdout tables
# (figure6.txt, throughput.txt), the load average before and after (uptime.txt) and the plots
# figure6.png and throughput.png into OUT_DIR.
# Usage: bench/hotspot/run.sh [BUILD_DIR] [OUT_DIR]
# Environment: RUNS (default 5) and SECONDS_PER_RUN (default 2) of the throughput experiment,
# FIG6_SECONDS (default 10) per Figure 6 configuration; FIG6_SYNC=1 then runs Figure 6 once more
# with --sync (fsync per write) into OUT_DIR/sync and draws figure6-sync.png (sync off vs on);
# PLOT_ONLY=1 redraws the plots from the TSV files already in OUT_DIR; BENCH_FLAGS go to every
# hotspot_bench run (e.g. --combine: concurrent sharded updates share writes).
set -euo pipefail

build=${1:-build}
out=${2:-docs/results/hotspot}
runs=${RUNS:-5}
seconds=${SECONDS_PER_RUN:-2}
bench=$build/bench/hotspot/hotspot_bench
read -r -a bench_flags <<<"${BENCH_FLAGS:-}"
mkdir -p "$out"

fig6_seconds=${FIG6_SECONDS:-10}
if [ "${PLOT_ONLY:-0}" != 1 ]; then
  {
    echo "before: $(uptime)"
    "$bench" "${bench_flags[@]}" --experiment figure6 --clients 32 --questions 16 --shards 10 --nodes 3 \
      --seconds "$fig6_seconds" --out "$out" | tee "$out/figure6.txt" >&2
    echo "between: $(uptime)"
    "$bench" "${bench_flags[@]}" --experiment throughput --clients 16 --shard-counts 1,2,4,8,16,32,64 \
      --node-counts 1,3 --runs "$runs" --seconds "$seconds" --out "$out" |
      tee "$out/throughput.txt" >&2
    echo "after: $(uptime)"
    if [ "${FIG6_SYNC:-0}" = 1 ]; then
      mkdir -p "$out/sync"
      "$bench" "${bench_flags[@]}" --experiment figure6 --clients 32 --questions 16 --shards 10 --nodes 3 \
        --seconds "$fig6_seconds" --sync --out "$out/sync" | tee "$out/sync/figure6.txt" >&2
      echo "after figure6 --sync: $(uptime)"
    fi
  } >"$out/uptime.txt"
fi

# The clustered-histogram style of both Figure 6 plots.
histogram_style='set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.8
set xtics rotate by -20 font ",9"
set grid ytics'

# Figure 6: failed votes (%) and time per vote (mean, p99) per configuration.
gnuplot <<GP
set terminal pngcairo size 1000,420 font ",10"
set output "$out/figure6.png"
set datafile separator "\t"
set key autotitle columnhead
${histogram_style}
set yrange [0:*]
set multiplot layout 1,2 title "Paper 003 Figure 6 on Shoal: 32 clients, 16 questions, 10 shards (embedded, 3 nodes, no fsync)"
set title "failed votes"
set ylabel "% of votes attempted"
plot "$out/figure6.tsv" using 4:xtic(1) notitle lc rgb "#d62728"
set title "time per vote, retries included"
set ylabel "ms"
set key top left
plot "$out/figure6.tsv" using 6:xtic(1) title "mean" lc rgb "#1f77b4", \
     "" using 8 title "p99" lc rgb "#ff7f0e"
unset multiplot
GP

# Throughput of one hot counter vs independent keys; the ratio below.
gnuplot <<GP
set terminal pngcairo size 1000,420 font ",10"
set output "$out/throughput.png"
set datafile separator "\t"
set logscale x 2
set xlabel "shards of the hot counter = independent keys"
set grid
set key below
set multiplot layout 1,2 title "One hot counter (Apply, 16 clients) vs independent keys (Get + CompareAndSet), median of runs"
set title "updates per second"
set ylabel "updates/s"
set yrange [0:*]
plot "$out/throughput.tsv" index 0 using 2:3 with linespoints lw 2 lc rgb "#1f77b4" title "hot, 1 node", \
     "" index 0 using 2:4 with linespoints lw 2 dt 2 lc rgb "#1f77b4" title "independent, 1 node", \
     "" index 1 using 2:3 with linespoints lw 2 lc rgb "#d62728" title "hot, 3 nodes", \
     "" index 1 using 2:4 with linespoints lw 2 dt 2 lc rgb "#d62728" title "independent, 3 nodes"
set title "hot / independent"
set ylabel "ratio"
set yrange [0:*]
plot "$out/throughput.tsv" index 0 using 2:5 with linespoints lw 2 lc rgb "#1f77b4" title "1 node", \
     "" index 1 using 2:5 with linespoints lw 2 lc rgb "#d62728" title "3 nodes", \
     0.8 with lines lc rgb "#555555" dt 3 title "target 0.8"
unset multiplot
GP
# The median paired ratio per point with its interquartile range and its min/max, and 0.8.
python3 "$(dirname "$0")/paired_ratios.py" "$out" >"$out/paired.txt"
gnuplot <<GP
set terminal pngcairo size 800,460 font ",10"
set output "$out/paired.png"
set datafile separator "\t"
set logscale x 2
set xrange [0.7:90]
set yrange [0:*]
set xlabel "shards of the hot counter = independent keys (S)"
set ylabel "hot / independent, runs back to back"
set grid
set key below
set title "One hot counter vs S independent keys: median paired ratio (bars: quartiles; dots: min, max)"
plot "$out/paired.tsv" index 0 using 2:4:5:6 with yerrorlines lw 2 lc rgb "#1f77b4" title "1 node", \
     "" index 0 using 2:7 with points pt 7 ps 0.5 lc rgb "#1f77b4" notitle, \
     "" index 0 using 2:8 with points pt 7 ps 0.5 lc rgb "#1f77b4" notitle, \
     "" index 1 using (\$2*1.08):4:5:6 with yerrorlines lw 2 lc rgb "#d62728" title "3 nodes", \
     "" index 1 using (\$2*1.08):7 with points pt 7 ps 0.5 lc rgb "#d62728" notitle, \
     "" index 1 using (\$2*1.08):8 with points pt 7 ps 0.5 lc rgb "#d62728" notitle, \
     0.8 with lines lw 2 lc rgb "#555555" dt 2 title "target 0.8"
GP
if [ -f "$out/sync/figure6.tsv" ]; then
  gnuplot <<GP
set terminal pngcairo size 1000,420 font ",10"
set output "$out/figure6-sync.png"
set datafile separator "\t"
set key autotitle columnhead top left
${histogram_style}
set logscale y
set multiplot layout 1,2 title "Figure 6 with and without fsync per write (32 clients, 16 questions, 10 shards, 3 nodes)"
set title "failed votes"
set ylabel "% of votes attempted (log)"
plot "$out/figure6.tsv" using (\$4+0.01):xtic(1) title "sync off" lc rgb "#1f77b4", \
     "$out/sync/figure6.tsv" using (\$4+0.01) title "sync on" lc rgb "#d62728"
set title "mean time per vote, retries included"
set ylabel "ms (log)"
plot "$out/figure6.tsv" using 6:xtic(1) title "sync off" lc rgb "#1f77b4", \
     "$out/sync/figure6.tsv" using 6 title "sync on" lc rgb "#d62728"
unset multiplot
GP
fi
echo "wrote $out/figure6.png $out/throughput.png $out/paired.png" >&2
