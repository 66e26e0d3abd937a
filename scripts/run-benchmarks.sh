#!/usr/bin/env bash
# Runs every benchmark program of a build directory (default: build) with repetitions, so each
# report holds medians, and keeps the full output under <build>/bench-results/.
set -euo pipefail
build="${1:-build}"
reps="${BENCH_REPETITIONS:-5}"
out="$build/bench-results"
mkdir -p "$out"
status=0
while IFS= read -r bench; do
  name=$(basename "$bench")
  echo "== $name"
  if ! "$bench" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
      2>&1 | tee "$out/$name.txt"; then
    status=1
  fi
# bench/cluster holds whole-cluster experiments with their own script (rebalance-experiments.sh).
done < <(find "$build/bench" -type f -name '*_bench' -perm -u+x -not -path '*/bench/cluster/*' | sort)
exit $status
