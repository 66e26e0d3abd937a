#!/usr/bin/env bash
# Where an operation's CPU goes: the node's and the client's CPU time per operation, read from
# /proc/PID/stat over the middle of a run, at several client counts (docs/results/network.md,
# "An idle machine"). One coordinator and one `shoal node` on loopback with --no-sync, loaded by
# `net_load --async` (one thread, CLIENTS operations in flight, one batch call in flight per
# node and kind). Fitting node_us = per_call / batch + per_op over two client counts splits a
# call's fixed cost from an operation's own.
# Usage: [OPS="put get"] [CLIENTS="1 16 64 256"] bench/net/cpu_split.sh BUILD_DIR [SECONDS]
set -euo pipefail

build=${1:-build}
seconds=${2:-8}
ops=${OPS:-put get}
client_counts=${CLIENTS:-1 16 64 256}
shoal=$build/tools/shoal/shoal
load=$build/bench/net/net_load
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-cpu-split-XXXXXX")
# shellcheck source=bench/net/processes.sh
source "$(dirname "$0")/processes.sh"

ticks_per_second=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime of a process

start coordinator "$shoal" coordinator --data "$dir/coordinator" --listen 127.0.0.1:0 \
  --initial-nodes 1 --buckets 32 --no-sync
coordinator=$address
start node1 "$shoal" node --id 1 --data "$dir/node-1" --listen 127.0.0.1:0 \
  --coordinator "$coordinator" --no-sync
node_pid=${pids[1]}
sleep 1

echo "| op | clients | ops/s | node cores | client cores | node CPU us/op | client CPU us/op |"
echo "|---|---|---|---|---|---|---|"
# The middle of the run: after the load (get) and the first calls, before the end.
skip=$(awk -v s="$seconds" 'BEGIN {printf "%.1f", s * 0.3}')
window=$(awk -v s="$seconds" 'BEGIN {printf "%.1f", s * 0.4}')
for op in $ops; do
  for clients in $client_counts; do
    "$load" "${client_security[@]}" --cluster "shoal://$coordinator" --op "$op" \
      --clients "$clients" \
      --seconds "$seconds" --async --async-calls 1 >"$dir/load.out" &
    load_pid=$!
    sleep "$skip"
    n0=$(cpu_ticks "$node_pid")
    l0=$(cpu_ticks "$load_pid")
    t0=$(date +%s%N)
    sleep "$window"
    n1=$(cpu_ticks "$node_pid")
    l1=$(cpu_ticks "$load_pid")
    t1=$(date +%s%N)
    wait "$load_pid"
    rate=$(jq .ops_per_second "$dir/load.out")
    awk -v op="$op" -v c="$clients" -v r="$rate" -v n="$((n1 - n0))" -v l="$((l1 - l0))" \
      -v hz="$ticks_per_second" -v ns="$((t1 - t0))" 'BEGIN {
        el = ns / 1e9; nc = n / hz / el; lc = l / hz / el
        printf "| %s | %s | %.0f | %.2f | %.2f | %.1f | %.1f |\n", op, c, r, nc, lc,
          nc / r * 1e6, lc / r * 1e6 }'
  done
done
