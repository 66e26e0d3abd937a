#!/usr/bin/env bash
# Writes runs.dat and medians.dat from the runs' JSON (this directory's default joins and the
# same 32 MiB/s join of the eleventh to thirteenth sessions) and prints, per arm, the sorted
# ratios, their median and the pooled ratio; then the per-run details of this session's runs;
# then, for this session's runs and the SCHED_IDLE experiment (sched-idle/), the paired
# in-flight / between-moves measure of docs/results/rebalance.md.
set -euo pipefail
cd "$(dirname "$0")"
../../../../scripts/rebalance-arms.sh ../eleventh/j30 ../twelfth/r32 ../thirteenth/r32 r32
printf "run\tsteady\tduring\tratio\tbalanced (s)\tfence p99 (ms)\tfirst serve (ms)\tcommitted\taborted\terrors\n"
for f in $(ls r32-*.json | sort -t- -k2 -n); do
  jq -r --arg f "${f%.json}" '.join | "\($f)\t\(.steady.ops_per_s | round)\t\(.during.ops_per_s | round)\t\(.throughput_ratio * 100 | round / 100)\t\(.seconds_to_balanced * 10 | round / 10)\t\(.fence_p99_ms)\t\(.first_serve_ms)\t\(.moves_committed)\t\(.moves_aborted)\t\(.errors)"' "$f"
done
# Within each run: client ops/s in the 100 ms samples of the join window with a move in flight
# against the samples between moves, the share of samples with a move in flight, and the ratio
# those two predict (1 - (1 - in-flight/between) x share), next to the measured one.
../../../../scripts/rebalance-paired.sh r32-*.tsv sched-idle/n4-*.tsv sched-idle/idle-*.tsv
