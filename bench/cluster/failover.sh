#!/usr/bin/env bash
# Failover time with real processes (docs/results/replication.md, "Failover time"): RUNS times,
# a fresh `shoal local --nodes 3 --replicas 3 --no-restart` takes KEYS documents, node 1 (the
# primary of a third of the buckets, a backup of the rest) is killed with SIGKILL, and the time
# from the kill until every document has taken a new write again is measured (each key retried
# by `shoal put` until it succeeds, keys in turn). Prints every run, then the median and the max.
# Usage: [RUNS=20] [KEYS=16] bench/cluster/failover.sh BUILD_DIR
set -euo pipefail

build=${1:-build}
runs=${RUNS:-20}
keys=${KEYS:-16}
shoal=$build/tools/shoal/shoal
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-failover-XXXXXX")
# shellcheck source=tests/cluster/local_lib.sh
source "$(dirname "$0")/../../tests/cluster/local_lib.sh"
now_ms() { date +%s%3N; }

echo "| run | kill to every key written (ms) |"
echo "|---|---|"
times=()
for run in $(seq 1 "$runs"); do
  rm -rf "$dir/data"
  base=$(free_base_port)
  "$shoal" local --nodes 3 --replicas 3 --buckets 8 --base-port "$base" --data "$dir/data" \
    --no-restart >"$dir/local.out" 2>&1 &
  local_pid=$!
  for _ in $(seq 1 200); do grep -q ready "$dir/local.out" && break; sleep 0.1; done
  cluster="shoal://127.0.0.1:$base"
  for i in $(seq 1 "$keys"); do "$shoal" put --cluster "$cluster" f "k$i" '{"v": 0}' >/dev/null; done
  node1=$(sed -n 's/^node 1 .*(pid \([0-9]*\))$/\1/p' "$dir/local.out" | head -n 1)
  start=$(now_ms)
  kill -KILL "$node1"
  for i in $(seq 1 "$keys"); do
    until "$shoal" put --cluster "$cluster" f "k$i" '{"v": 1}' >/dev/null 2>&1; do sleep 0.02; done
  done
  elapsed=$(($(now_ms) - start))
  times+=("$elapsed")
  echo "| $run | $elapsed |"
  kill -TERM "$local_pid"
  wait "$local_pid" 2>/dev/null || true
  local_pid=""
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
max=$(printf '%s\n' "${times[@]}" | sort -n | tail -1)
echo
echo "median ${median} ms, max ${max} ms over $runs runs"
