#!/usr/bin/env bash
# The paired measure of docs/results/rebalance.md for rebalance_bench runs: within each join,
# client ops/s in the 100 ms timeline samples with a move in flight against the samples between
# moves, the share of samples with a move in flight, and the ratio those two predict
# (1 - (1 - in-flight/between) x share), next to the measured window ratio.
#
# Usage: scripts/rebalance-paired.sh RUN.tsv...   (each beside its RUN.json)
set -euo pipefail
printf "run\tin-flight / between\tshare in flight\tpredicted\tmeasured\n"
for f in "$@"; do
  json=${f%.tsv}.json
  b=$(jq '.join.seconds_to_balanced' "$json")
  r=$(jq '.join.throughput_ratio * 100 | round / 100' "$json")
  awk -v b="$b" -v f="${f%.tsv}" -v r="$r" '!/^#/ && $1 >= 0 && $1 < b {
      if ($5 > 0) { a += $2; na++ } else { c += $2; nc++ } }
    END { q = (a / na) / (c / nc); s = na / (na + nc)
          printf "%s\t%.2f\t%.2f\t%.2f\t%s\n", f, q, s, 1 - (1 - q) * s, r }' "$f"
done
