#!/usr/bin/env bash
# Where the CPU goes while a node joins: runs bench/cluster/rebalance_bench (1 GiB, a 4th node
# joins 3) RUNS times and records a system-wide `perf record` of 4 s of the steady window and of
# the first 9 s of the join, then prints, per run, the throughput ratio and the share of all CPU
# samples taken by the client threads, the move work (the process's unnamed threads: copy
# threads, coordinator, nodes' move calls), RocksDB's compactions (rocksdb:low) and flushes
# (rocksdb:high), and idle (docs/results/rebalance.md, "Why the ratio swings").
#
# Usage: [RUNS=3] [OUT=/tmp/shoal-profile-join] [FLAGS="--max-mib-per-s=32"] \
#        scripts/profile-join.sh [path/to/rebalance_bench]
# Needs perf (Debian linux-perf) and root or kernel.perf_event_paranoid <= 0.
set -euo pipefail
bench="${1:-build/bench/cluster/rebalance_bench}"
runs="${RUNS:-3}"
out="${OUT:-/tmp/shoal-profile-join}"
flags="${FLAGS:---background-nice=4 --max-mib-per-s=32}"
mkdir -p "$out"

wait_for() {  # LOG PATTERN
  until grep -q "$2" "$1"; do sleep 0.05; done
}

shares() {  # PERF_DATA: the share of samples per kind of thread
  perf report -i "$1" --no-children --sort comm -g none -q 2>/dev/null | awk '
    { gsub("%", "", $1) }
    $2 ~ /^client-/ { clients += $1; next }
    $2 == "rebalance_bench" { moves += $1; next }
    $2 == "rocksdb:low" { compaction += $1; next }
    $2 == "rocksdb:high" { flush += $1; next }
    $2 == "swapper" { idle += $1; next }
    { other += $1 }
    END { printf "%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f", clients, moves, compaction, flush, idle, other }'
}

for r in $(seq 1 "$runs"); do
  log="$out/bench-$r.log"
  # shellcheck disable=SC2086  # FLAGS is a list of words
  "$bench" --variant=dynamic --mb=1024 --dir="${BENCH_DIR:-/tmp/shoal-rebalance-bench}" $flags \
      --timeline="$out/timeline-$r.tsv" >"$out/run-$r.json" 2>"$log" &
  pid=$!
  wait_for "$log" "steady window"
  sleep 0.5  # inside the steady window (at least 5 s)
  perf record -F 499 -a -g -o "$out/steady-$r.data" -- sleep 4 2>/dev/null
  wait_for "$log" "node 4 added"
  perf record -F 499 -a -g -o "$out/during-$r.data" -- sleep 9 2>/dev/null
  wait "$pid"
done

printf "run\tratio\twindow\tclients%%\tmoves%%\tcompaction%%\tflush%%\tidle%%\tother%%\n"
for r in $(seq 1 "$runs"); do
  ratio=$(jq '.join.throughput_ratio * 1000 | round / 1000' "$out/run-$r.json")
  for window in steady during; do
    printf "%s\t%s\t%s\t%s\n" "$r" "$ratio" "$window" "$(shares "$out/$window-$r.data")"
  done
done
