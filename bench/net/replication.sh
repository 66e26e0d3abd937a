#!/usr/bin/env bash
# K = 3 against K = 1 on three nodes (docs/results/replication.md, "K = 3 against K = 1"): two
# clusters of one coordinator and three `shoal node` processes each on loopback, one with
# --replicas 3 and one without, both up for the whole run; each round loads one and then the
# other with `net_load` (CLIENTS threads, one single get or put in flight each, 1 KiB values,
# 10,000 keys), so both see the same load on the shared machine. Prints every round and the
# median per-round ratio (K = 3 / K = 1) of throughput, of p50/p99 latency and of the three nodes'
# CPU time per operation (/proc/PID/stat over the run). Nodes sync every acknowledged write (the
# default), as a replicated deployment would.
# OPS="get" measures gets alone, SETTLE seconds after the keys were loaded (background flushes and
# compactions of the load done first).
# Usage: [ROUNDS=5] [CLIENTS=16] [OPS="put get"] [SETTLE=0] bench/net/replication.sh BUILD_DIR
#        [SECONDS]
set -euo pipefail

build=${1:-build}
seconds=${2:-3}
rounds=${ROUNDS:-5}
clients=${CLIENTS:-16}
ops=${OPS:-put get}
settle=${SETTLE:-0}
shoal=$build/tools/shoal/shoal
load=$build/bench/net/net_load
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-net-replication-XXXXXX")
# shellcheck source=bench/net/processes.sh
source "$(dirname "$0")/processes.sh"

ticks_per_second=$(getconf CLK_TCK)
declare -A coordinators node_pids
for k in 1 3; do
  start "coordinator-k$k" "$shoal" coordinator --data "$dir/k$k/coordinator" \
    --listen 127.0.0.1:0 --initial-nodes 3 --buckets 32 --replicas "$k" --no-sync
  coordinators[$k]=$address
  for i in 1 2 3; do
    start "k$k-node$i" "$shoal" node --id "$i" --data "$dir/k$k/node-$i" --listen 127.0.0.1:0 \
      --coordinator "${coordinators[$k]}"
    node_pids[$k]+="${pids[-1]} "
  done
done
sleep 2
# Load every key once in each cluster (a short get run loads them first), so that the get arms
# find them and need not load them again: the nodes' CPU is read over each whole net_load run.
for k in 1 3; do
  "$load" "${client_security[@]}" --cluster "shoal://${coordinators[$k]}" --op get \
    --clients "$clients" --seconds 1 \
    >/dev/null
done
sleep "$settle"

node_ticks() {  # K -> utime + stime of the cluster's three nodes
  local total=0
  for pid in ${node_pids[$1]}; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$total"
}

measure() {  # K OP -> "ops/s p50_ms p99_ms node_cpu_us_per_op"
  local before after out
  before=$(node_ticks "$1")
  local skip=()
  [ "$2" = get ] && skip=(--skip-load)
  out=$("$load" "${client_security[@]}" --cluster "shoal://${coordinators[$1]}" --op "$2" \
    --clients "$clients" \
    --seconds "$seconds" "${skip[@]}" | jq -r '"\(.ops_per_second) \(.p50_ms) \(.p99_ms)"')
  after=$(node_ticks "$1")
  read -r ops p50 p99 <<<"$out"
  cpu=$(awk -v t=$((after - before)) -v hz="$ticks_per_second" -v o="$ops" -v s="$seconds" \
    'BEGIN {printf "%.1f", t / hz * 1e6 / (o * s)}')
  echo "$ops $p50 $p99 $cpu"
}

echo "| op | round | K=1 ops/s | K=3 ops/s | ratio | K=1 p50 ms | K=3 p50 ms | K=1 p99 ms | K=3 p99 ms | K=1 node CPU µs/op | K=3 node CPU µs/op |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
declare -A ratios p50s p99s cpus
for round in $(seq 1 "$rounds"); do
  for op in $ops; do
    read -r o1 a1 b1 c1 <<<"$(measure 1 "$op")"
    read -r o3 a3 b3 c3 <<<"$(measure 3 "$op")"
    ratio=$(awk -v a="$o3" -v b="$o1" 'BEGIN {printf "%.3f", a / b}')
    ratios[$op]+="$ratio "
    p50s[$op]+="$(awk -v a="$a3" -v b="$a1" 'BEGIN {printf "%.3f", a / b}') "
    p99s[$op]+="$(awk -v a="$b3" -v b="$b1" 'BEGIN {printf "%.3f", a / b}') "
    cpus[$op]+="$(awk -v a="$c3" -v b="$c1" 'BEGIN {printf "%.3f", a / b}') "
    printf '| %s | %s | %.0f | %.0f | %s | %.2f | %.2f | %.2f | %.2f | %s | %s |\n' "$op" "$round" \
      "$o1" "$o3" "$ratio" "$a1" "$a3" "$b1" "$b3" "$c1" "$c3"
  done
done

echo
echo "Medians of the per-round ratios K = 3 / K = 1 at $clients clients ($rounds rounds):"
echo
echo "| op | throughput | p50 latency | p99 latency | node CPU per op |"
echo "|---|---|---|---|---|"
for op in $ops; do
  t=$(echo "${ratios[$op]}" | tr ' ' '\n' | grep . | median)
  p=$(echo "${p50s[$op]}" | tr ' ' '\n' | grep . | median)
  q=$(echo "${p99s[$op]}" | tr ' ' '\n' | grep . | median)
  c=$(echo "${cpus[$op]}" | tr ' ' '\n' | grep . | median)
  echo "| $op | ${t}x | ${p}x | ${q}x | ${c}x |"
done
