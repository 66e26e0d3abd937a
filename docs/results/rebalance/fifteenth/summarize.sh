#!/usr/bin/env bash
# Writes runs.dat and medians.dat and prints, per arm, the sorted throughput ratios, their median
# and the pooled ratio: the twelfth session's 16 and 32 MiB/s joins (in alternation) and this
# session's (r16-N, r32-N, in alternation); then this session's runs one by one; then the paired
# in-flight / between-moves measure of docs/results/rebalance.md for this session's runs.
set -euo pipefail
cd "$(dirname "$0")"
../../../../scripts/rebalance-arms.sh ../twelfth/r16 ../twelfth/r32 r16 r32
printf "run\tsteady\tduring\tratio\tp99 ratio\tbalanced (s)\tfence p99 (ms)\tfirst serve (ms)\tcommitted\taborted\terrors\n"
for f in $(ls r16-*.json r32-*.json); do
  jq -r --arg f "${f%.json}" '.join | "\($f)\t\(.steady.ops_per_s | round)\t\(.during.ops_per_s | round)\t\(.throughput_ratio * 100 | round / 100)\t\(.p99_ratio * 100 | round / 100)\t\(.seconds_to_balanced * 10 | round / 10)\t\(.fence_p99_ms)\t\(.first_serve_ms)\t\(.moves_committed)\t\(.moves_aborted)\t\(.errors)"' "$f"
done
../../../../scripts/rebalance-paired.sh r16-*.tsv r32-*.tsv
