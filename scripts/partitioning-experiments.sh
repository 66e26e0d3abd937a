#!/usr/bin/env bash
# Reproduces the placement figures of docs/results/partitioning.md: runs `shoal partition-sim`,
# writes the raw JSON and data files under docs/results/partitioning/, and draws the PNG plots.
# Usage: scripts/partitioning-experiments.sh [path/to/shoal]
set -euo pipefail
shoal="${1:-build/tools/shoal/shoal}"
out=docs/results/partitioning
mkdir -p "$out"
sim() { "$shoal" partition-sim --json "$@"; }

# PLOTS_ONLY=1 redraws the plots from the existing data files.
if [ "${PLOTS_ONLY:-0}" != 1 ]; then

# --- Paper 002 figures 7 and 8: 1,000,000 sequential keys on 10 nodes, keys per node. ---
for cfg in "modulo:modulo:xxh3:1" "identity-1:ring:identity:1" "xxh3-1:ring:xxh3:1" \
           "identity-50:ring:identity:50" "xxh3-50:ring:xxh3:50" "xxh3-200:ring:xxh3:200"; do
  IFS=: read -r name scheme hash vnodes <<<"$cfg"
  sim --scheme "$scheme" --key-hash "$hash" --vnodes "$vnodes" --nodes 10 --keys 1000000 \
      --node-names sequential > "$out/dist-$name.json"
  jq -r '.steps[0].per_node | to_entries[] | "\(.key + 1) \(.value.keys)"' \
      "$out/dist-$name.json" > "$out/dist-$name.dat"
done

# --- Paper 002's claim: 200 tokens keep the distribution uniform after removals (10 -> 5). ---
for v in 1 50 200; do
  sim --scheme ring --vnodes "$v" --nodes 10 --keys 1000000 --seeds 10 \
      --step remove=1 --step remove=1 --step remove=1 --step remove=1 --step remove=1 \
      > "$out/removals-v$v.json"
  jq -r '.steps[] | "\(.nodes) \(.imbalance) \(.max_over_mean)"' "$out/removals-v$v.json" \
      > "$out/removals-v$v.dat"
done

# --- Keys moved for 10 -> 11 and 10 -> 9 nodes, every scheme, 10 seeds. ---
: > "$out/moves.dat"
for scheme in modulo range ring rendezvous jump extendible static; do
  for step in add=1 remove=1; do
    sim --scheme "$scheme" --nodes 10 --keys 1000000 --seeds 10 --step "$step" \
        --theta-max 400000 --theta-min 200000 > "$out/moves-$scheme-$step.json"
    jq -r --arg s "$scheme" --arg st "$step" '.steps[1] |
        "\($s) \($st) \(.moved_fraction) \(.moved_fraction_median) \(.optimal_fraction)"' \
        "$out/moves-$scheme-$step.json" >> "$out/moves.dat"
  done
done

# --- Balance at 2..16 nodes, worst over 10 seeds (uniform random keys). ---
: > "$out/balance.dat"
for n in 2 4 6 8 10 12 14 16; do
  line="$n"
  for scheme in ring rendezvous jump extendible static; do
    v=$(sim --scheme "$scheme" --nodes "$n" --keys 1000000 --keys-pattern uniform --seeds 10 \
            --theta-max 100000 --theta-min 50000 | jq -r '.steps[0].max_over_mean')
    line="$line $v"
  done
  echo "$line" >> "$out/balance.dat"
done
sim --scheme ring --vnodes 200 --nodes 10 --keys 1000000 --seeds 10 > "$out/ring200-10.json"

# --- Paper 001 figure 8: bounded partitions, 100 units of data, Θmax = 1..32 units, Θmin = Θmax/2.
# Two data sets of 1,000,000 uniform random keys: fixed 100-byte records, and zipfian-sized
# records (1 to 100 x 5 bytes). A unit is 1/100 of the data set's total bytes.
for pattern in uniform zipfian; do
  record=100; [ "$pattern" = zipfian ] && record=5
  total=$(sim --scheme modulo --nodes 1 --keys 1000000 --keys-pattern "$pattern" \
              --record-bytes "$record" | jq -r '.total_bytes')
  unit=$((total / 100))
  : > "$out/bounded-$pattern.dat"
  for units in 1 2 4 8 16 32; do
    max=$((units * unit)); min=$((max / 2))
    sim --scheme range --nodes 10 --keys 1000000 --keys-pattern "$pattern" --record-bytes "$record" \
        --theta-max "$max" --theta-min "$min" --min-partitions 10 > "$out/bounded-$pattern-$units.json"
    jq -r --arg u "$units" \
        '.steps[0] | "\($u) \(.partitions) \(.fullness_mean) \(.fullness_stddev) \(.max_over_mean)"' \
        "$out/bounded-$pattern-$units.json" >> "$out/bounded-$pattern.dat"
  done
done

fi

# --- Plots. ---
gnuplot <<GP
set terminal pngcairo size 900,600 noenhanced
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set ylabel "keys per node"
set xlabel "node"
set key below

set output "$out/fig7-one-token.png"
set title "1,000,000 sequential keys on 10 nodes, one token per node (paper 002 fig. 7)"
plot "$out/dist-modulo.dat" using 2:xtic(1) title "modulo", \
     "$out/dist-identity-1.dat" using 2 title "ring, identity hash", \
     "$out/dist-xxh3-1.dat" using 2 title "ring, xxh3"

set output "$out/fig8-vnodes.png"
set title "1,000,000 sequential keys on 10 nodes, virtual nodes (paper 002 fig. 8)"
plot "$out/dist-identity-50.dat" using 2:xtic(1) title "ring, identity, 50 vnodes", \
     "$out/dist-xxh3-50.dat" using 2 title "ring, xxh3, 50 vnodes", \
     "$out/dist-xxh3-200.dat" using 2 title "ring, xxh3, 200 vnodes"

set style data linespoints
set output "$out/removals.png"
set title "Ring imbalance after removing nodes one by one (worst of 10 seeds)"
set xlabel "nodes left"; set ylabel "imbalance sigma/mu"
set xrange [10.5:4.5]
plot "$out/removals-v1.dat" using 1:2 title "1 vnode", \
     "$out/removals-v50.dat" using 1:2 title "50 vnodes", \
     "$out/removals-v200.dat" using 1:2 title "200 vnodes"
unset xrange

set output "$out/balance.png"
set title "max/mean keys per node, 1M uniform keys (worst of 10 seeds)"
set xlabel "nodes"; set ylabel "max/mean"
plot "$out/balance.dat" using 1:2 title "ring 200 vnodes", "" using 1:3 title "rendezvous", \
     "" using 1:4 title "jump", "" using 1:5 title "extendible + Balance", \
     "" using 1:6 title "static 1024", 1.05 with lines dt 2 title "target 1.05"

set output "$out/fig8-bounded.png"
set title "Bounded partitions: 100 units of data, theta_min = theta_max / 2 (paper 001 fig. 8)"
set xlabel "theta_max (units)"; set logscale x 2
set ylabel "partitions"; set y2label "fullness"; set y2tics; set ytics nomirror
set y2range [0:1.2]
plot "$out/bounded-uniform.dat" using 1:2 axes x1y1 title "partitions (100-byte records)", \
     "" using 1:3:4 with yerrorlines axes x1y2 title "fullness mean +- sigma (100-byte records)", \
     "$out/bounded-zipfian.dat" using 1:2 axes x1y1 title "partitions (zipfian sizes)", \
     "" using 1:3:4 with yerrorlines axes x1y2 title "fullness mean +- sigma (zipfian sizes)"
GP
echo "wrote $out"
