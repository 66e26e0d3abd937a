#!/usr/bin/env bash
# Writes runs.dat and medians.dat from the runs' JSON (this directory, and the same 32 MiB/s
# join of the eleventh and twelfth sessions) and prints, per arm, the sorted ratios, their
# median and the pooled ratio (mean during / mean steady); then the per-run details of this
# session's runs.
set -euo pipefail
cd "$(dirname "$0")"
../../../../scripts/rebalance-arms.sh ../eleventh/j30 ../twelfth/r32 r32
printf "run\tsteady\tduring\tratio\tbalanced (s)\tfence p99 (ms)\tfirst serve (ms)\tcommitted\taborted\terrors\n"
for f in $(ls r32-*.json | sort -t- -k2 -n); do
  jq -r --arg f "${f%.json}" '.join | "\($f)\t\(.steady.ops_per_s | round)\t\(.during.ops_per_s | round)\t\(.throughput_ratio * 100 | round / 100)\t\(.seconds_to_balanced * 10 | round / 10)\t\(.fence_p99_ms)\t\(.first_serve_ms)\t\(.moves_committed)\t\(.moves_aborted)\t\(.errors)"' "$f"
done
# Within each run: client ops/s in the 100 ms samples of the join window with a move in flight
# against the samples between moves, the share of samples with a move in flight, and the ratio
# those two predict (1 - (1 - in-flight/between) x share), next to the measured one; for this
# session's runs and the twelfth session's 32 and 16 MiB/s arms.
../../../../scripts/rebalance-paired.sh r32-*.tsv ../twelfth/r32-*.tsv ../twelfth/r16-*.tsv
