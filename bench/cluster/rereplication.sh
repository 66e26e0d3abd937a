#!/usr/bin/env bash
# Re-replication after a disk loss with real processes (docs/results/replication.md,
# "Re-replication"): one coordinator (--replicas 3, 32 buckets) and three `shoal node` processes
# on loopback take MIB MiB (KEYS documents of VALUE_BYTES), so that every node holds a copy of
# all of it. Node 3 is then killed with SIGKILL, its data directory deleted, and it is started
# again empty: the coordinator resets it (a new store id), fails over its primaries, and the
# balancer rebuilds each of its copies from the bucket's primary (snapshot and catch-up, under
# the default move throttle). Measured: the time from the restart until `shoal status` shows no
# bucket with fewer than three copies, and the get throughput of CLIENTS clients in windows of
# WINDOW seconds before (BEFORE windows) and during the rebuild, as a ratio of medians.
# MOVE_MIB sets the coordinator's --max-move-mib-per-s (0: unthrottled; default: its default);
# TLS=1 runs every process over mutual TLS (bench/net/processes.sh).
# Usage: [MIB=1024] [VALUE_BYTES=65536] [CLIENTS=16] [WINDOW=2] [BEFORE=5] [MOVE_MIB=] [TLS=0]
#        bench/cluster/rereplication.sh BUILD_DIR
set -euo pipefail

build=${1:-build}
mib=${MIB:-1024}
value_bytes=${VALUE_BYTES:-65536}
clients=${CLIENTS:-16}
window=${WINDOW:-2}
before_windows=${BEFORE:-5}
throttle=()
[ -n "${MOVE_MIB:-}" ] && throttle=(--max-move-mib-per-s "$MOVE_MIB")
keys=$((mib * 1024 * 1024 / value_bytes))
shoal=$build/tools/shoal/shoal
load=$build/bench/net/net_load
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-rereplication-XXXXXX")
# shellcheck source=bench/net/processes.sh
source "$(dirname "$0")/../net/processes.sh"
now_ms() { date +%s%3N; }

start coordinator "$shoal" coordinator --data "$dir/coordinator" --listen 127.0.0.1:0 \
  --initial-nodes 3 --buckets 32 --replicas 3 --no-sync "${throttle[@]}"
coordinator=$address
cluster="shoal://$coordinator"
for i in 1 2 3; do
  start "node$i" "$shoal" node --id "$i" --data "$dir/node-$i" --listen 127.0.0.1:0 \
    --coordinator "$coordinator"
done
node3_pid=${pids[-1]}
sleep 2

# Load: every key once (a put run long enough that each client writes its share), then gets of
# the loaded keys only.
start_load=$(now_ms)
"$load" "${client_security[@]}" --cluster "$cluster" --op get --clients "$clients" --seconds 1 \
  --keys "$keys" \
  --value-bytes "$value_bytes" >/dev/null
echo "loaded $keys documents of $value_bytes bytes ($mib MiB) in $(($(now_ms) - start_load)) ms;" \
  "node 3 holds $(du -sm "$dir/node-3" | cut -f1) MiB"

gets() {  # one window of gets -> ops/s
  "$load" "${client_security[@]}" --cluster "$cluster" --op get --clients "$clients" \
    --seconds "$window" --keys "$keys" \
    --value-bytes "$value_bytes" --skip-load | jq -r .ops_per_second
}
status_field() {
  "$shoal" status "${client_security[@]}" --json --cluster "$cluster" | jq -r ".$1"
}

before=()
for _ in $(seq 1 "$before_windows"); do before+=("$(gets)"); done

kill -KILL "$node3_pid"
wait "$node3_pid" 2>/dev/null || true
rm -rf "$dir/node-3"
start node3-again "$shoal" node --id 3 --data "$dir/node-3" --listen 127.0.0.1:0 \
  --coordinator "$coordinator"
restarted=$(now_ms)
# Wait for the reset to show (node 3's copies gone), then for every bucket to have three again.
for _ in $(seq 1 300); do
  [ "$(status_field under_replicated_buckets)" != 0 ] && break
  sleep 0.1
done
during=()
while [ "$(status_field under_replicated_buckets)" != 0 ]; do
  during+=("$(gets)")
  if [ $(($(now_ms) - restarted)) -gt 1800000 ]; then
    echo "not rebuilt within 30 min" >&2
    exit 1
  fi
done
rebuilt=$(($(now_ms) - restarted))

b=$(printf '%s\n' "${before[@]}" | median)
d=$(printf '%s\n' "${during[@]:-0}" | median)
echo "| MiB | rebuild ms | MiB/s | gets/s before (median of ${#before[@]}) | gets/s during (median of ${#during[@]}) | ratio |"
echo "|---|---|---|---|---|---|"
echo "| $mib | $rebuilt | $(awk -v m="$mib" -v t="$rebuilt" 'BEGIN {printf "%.1f", m * 1000 / t}') | $b | $d | $(awk -v a="$d" -v b="$b" 'BEGIN {printf "%.3f", a / b}') |"
