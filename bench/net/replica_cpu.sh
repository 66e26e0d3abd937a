#!/usr/bin/env bash
# A backup's CPU per replicated write against the primary's per client write
# (docs/results/replication.md, "Where a replicated put's CPU goes"). One coordinator and three
# `shoal node` processes on loopback with ONE bucket at --replicas 3: one node is its primary
# and does all the client work, the other two only apply the stream, so each process's CPU time
# (/proc/PID/stat over the middle of a net_load put run) is one role's. A K = 1 cluster of the
# same shape (one bucket on one node) is loaded in alternation as the reference for a client
# write without replication. Prints every round and the medians of the per-round values.
# Usage: [ROUNDS=5] [CLIENTS=16] bench/net/replica_cpu.sh BUILD_DIR [SECONDS]
set -euo pipefail

build=${1:-build}
seconds=${2:-4}
rounds=${ROUNDS:-5}
clients=${CLIENTS:-16}
shoal=$build/tools/shoal/shoal
load=$build/bench/net/net_load
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-replica-cpu-XXXXXX")
# shellcheck source=bench/net/processes.sh
source "$(dirname "$0")/processes.sh"

ticks_per_second=$(getconf CLK_TCK)
declare -A coordinators node_pids
for k in 1 3; do
  start "coordinator-k$k" "$shoal" coordinator --data "$dir/k$k/coordinator" \
    --listen 127.0.0.1:0 --initial-nodes 3 --buckets 1 --replicas "$k" --no-sync \
    --split-mib 0 --merge-mib 0
  coordinators[$k]=$address
  for i in 1 2 3; do
    start "k$k-node$i" "$shoal" node --id "$i" --data "$dir/k$k/node-$i" --listen 127.0.0.1:0 \
      --coordinator "${coordinators[$k]}"
    node_pids[$k,$i]=${pids[-1]}
  done
done
status() { "$shoal" status --cluster "shoal://${coordinators[$1]}" --json; }
# The node ids holding the bucket, its primary first (a node's `buckets` are its primaries).
replicas() {
  status "$1" | jq -r '[(.nodes[] | select(.buckets > 0) | .id),
                        (.nodes[] | select(.backups > 0) | .id)] | join(" ")'
}
# Every copy in place before the first round.
for _ in $(seq 1 100); do
  [ "$(status 3 | jq .under_replicated_buckets)" = 0 ] && break
  sleep 0.2
done

ticks() { awk '{print $14 + $15}' "/proc/${node_pids[$1,$2]}/stat"; }

# K -> "ops/s us_per_put(node in replicas order)..."
measure() {
  local k=$1 ids t0 t1 out
  read -r -a ids <<<"$(replicas "$k")"
  "$load" --cluster "shoal://${coordinators[$k]}" --op put --clients "$clients" \
    --seconds "$seconds" >"$dir/load.out" &
  local load_pid=$!
  sleep "$(awk -v s="$seconds" 'BEGIN {print s * 0.3}')"
  declare -A before
  for id in "${ids[@]}"; do before[$id]=$(ticks "$k" "$id"); done
  t0=$(date +%s%N)
  sleep "$(awk -v s="$seconds" 'BEGIN {print s * 0.4}')"
  out=""
  t1=$(date +%s%N)
  for id in "${ids[@]}"; do out+="$(($(ticks "$k" "$id") - before[$id])) "; done
  wait "$load_pid"
  local rate
  rate=$(jq .ops_per_second "$dir/load.out")
  awk -v r="$rate" -v hz="$ticks_per_second" -v ns="$((t1 - t0))" -v t="$out" 'BEGIN {
    n = split(t, a, " "); printf "%.0f", r
    for (i = 1; i <= n; ++i) printf " %.1f", a[i] / hz / (ns / 1e9) / r * 1e6 }'
}

echo "| round | K=1 puts/s | K=1 node us/put | K=3 puts/s | primary us/put | backup us/put (each) | backup / primary | backup / K=1 node |"
echo "|---|---|---|---|---|---|---|---|"
declare -a to_primary to_k1
for round in $(seq 1 "$rounds"); do
  read -r r1 n1 _ <<<"$(measure 1)"
  read -r r3 p b1 b2 <<<"$(measure 3)"
  backup=$(awk -v a="$b1" -v b="$b2" 'BEGIN {printf "%.1f", (a + b) / 2}')
  bp=$(awk -v b="$backup" -v p="$p" 'BEGIN {printf "%.3f", b / p}')
  bk=$(awk -v b="$backup" -v n="$n1" 'BEGIN {printf "%.3f", b / n}')
  to_primary+=("$bp")
  to_k1+=("$bk")
  echo "| $round | $r1 | $n1 | $r3 | $p | $b1, $b2 | $bp | $bk |"
done
echo
echo "Medians over $rounds rounds at $clients clients: backup / primary" \
  "$(printf '%s\n' "${to_primary[@]}" | median)x, backup / K=1 node" \
  "$(printf '%s\n' "${to_k1[@]}" | median)x"
