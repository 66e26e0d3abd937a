#!/usr/bin/env bash
# Writes runs.dat and medians.dat from the runs' JSON (this directory and, for the eleventh
# session's arms, ../eleventh) and prints, per arm, the sorted ratios, their median and the
# pooled ratio (mean during / mean steady); then, for the old/new read-loop runs, the fresh WAL
# seeks per join and the longest drain read.
set -euo pipefail
cd "$(dirname "$0")"
../../../../scripts/rebalance-arms.sh ../eleventh/c30 ../eleventh/j30 r32 r16
for arm in r16 r32; do
  printf "%s: balanced after (s), fence p99 (ms)\n" "$arm"
  for f in "$arm"-*.json; do jq -r '.join | "  \(.seconds_to_balanced * 10 | round / 10)\t\(.fence_p99_ms)"' "$f"; done
done
printf "read loop: run\tratio\twal_seeks\tlongest drain read (ms)\tfence p99 (ms)\n"
for f in old-*.json new-*.json; do
  [ -e "$f" ] || continue
  jq -r --arg f "${f%.json}" '.join | "\($f)\t\(.throughput_ratio * 100 | round / 100)\t\(.wal_seeks)\t\([.fence_phases[].drain_read_ms] | max)\t\(.fence_p99_ms)"' "$f"
done
