#!/usr/bin/env bash
# Shoal's throughput as a ratio to Redis's, measured in alternation: each round measures Shoal
# and then Redis for the same operation, so both see the same load on the shared machine, and
# the figure is the median of the per-round ratios (docs/results/network.md, "Asynchronous
# operations"). Shoal: a coordinator and NODES `shoal node` processes on loopback with --no-sync,
# loaded by `net_load --async` (one thread keeping CLIENTS operations in flight, per STYLES:
# `async1` = one batch call in flight per node and kind, `async2` = two; `pipe1`, `pipe2`: the
# same with the calls as messages of one stream per node, ConnectOptions::pipe). Redis: redis-server
# (appendonly yes, appendfsync everysec) and `redis-benchmark -c CLIENTS`. 1 KiB values,
# 10,000 keys.
# Usage: [ROUNDS=5] [NODES="1 3"] [CLIENTS=16] [STYLES="async1 async2"] bench/net/ratio.sh \
#        BUILD_DIR [SECONDS]
set -euo pipefail

build=${1:-build}
seconds=${2:-2}
rounds=${ROUNDS:-5}
node_counts=${NODES:-1 3}
clients=${CLIENTS:-16}
styles=${STYLES:-async1 async2}
shoal=$build/tools/shoal/shoal
load=$build/bench/net/net_load
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-net-ratio-XXXXXX")
# shellcheck source=bench/net/processes.sh
source "$(dirname "$0")/processes.sh"

start_redis
redis_ops() {  # OP (get|set)
  redis-benchmark -p "$redis_port" -t "$1" -d 1024 -c "$clients" -n $((seconds * 40000)) \
    -r 10000 --csv | grep -i "\"$1\"" | cut -d, -f2 | tr -d '"'
}
shoal_ops() {  # COORDINATOR OP STYLE
  local calls=${3#async} pipe=()
  if [[ $3 == pipe* ]]; then
    calls=${3#pipe}
    pipe=(--pipe)
  fi
  "$load" "${client_security[@]}" --cluster "shoal://$1" --op "$2" --clients "$clients" \
    --seconds "$seconds" --async \
    --async-calls "$calls" "${pipe[@]}" | jq .ops_per_second
}

echo "| nodes | op | style | round | shoal ops/s | redis ops/s | ratio |"
echo "|---|---|---|---|---|---|---|"
declare -A ratios
for nodes in $node_counts; do
  rm -rf "$dir/cluster"
  start coordinator "$shoal" coordinator --data "$dir/cluster/coordinator" \
    --listen 127.0.0.1:0 --initial-nodes "$nodes" --buckets 32 --no-sync
  coordinator=$address
  for i in $(seq 1 "$nodes"); do
    start "node$i" "$shoal" node --id "$i" --data "$dir/cluster/node-$i" --listen 127.0.0.1:0 \
      --coordinator "$coordinator" --no-sync
  done
  sleep 1
  for round in $(seq 1 "$rounds"); do
    for op in get put; do
      redis_op=$op
      [ "$op" = put ] && redis_op="set"
      for style in $styles; do
        s=$(shoal_ops "$coordinator" "$op" "$style")
        r=$(redis_ops "$redis_op")
        ratio=$(awk -v s="$s" -v r="$r" 'BEGIN {printf "%.3f", s / r}')
        ratios["$nodes $op $style"]+="$ratio "
        printf '| %s | %s | %s | %s | %.0f | %.0f | %s |\n' "$nodes" "$op" "$style" "$round" \
          "$s" "$r" "$ratio"
      done
    done
  done
  # Stop this cluster before the next (Redis stays up).
  for pid in "${pids[@]:1}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]:1}"; do wait "$pid" 2>/dev/null || true; done
  pids=("${pids[0]}")
done

echo
echo "Median ratio to Redis at $clients clients ($rounds rounds):"
echo
echo "| nodes | op | style | median ratio | min | max |"
echo "|---|---|---|---|---|---|"
for nodes in $node_counts; do
  for op in get put; do
    for style in $styles; do
      values=${ratios["$nodes $op $style"]}
      med=$(echo "$values" | tr ' ' '\n' | grep . | median)
      min=$(echo "$values" | tr ' ' '\n' | grep . | sort -g | head -1)
      max=$(echo "$values" | tr ' ' '\n' | grep . | sort -g | tail -1)
      echo "| $nodes | $op | $style | ${med}x | ${min}x | ${max}x |"
    done
  done
done
