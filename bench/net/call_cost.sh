#!/usr/bin/env bash
# What a gRPC exchange costs by the way it is made (bench/net/grpc_call_cost.cc), and in the same
# run Redis's SET and GET at 16 clients as the line the network target is drawn against
# (docs/results/network.md, "A stream instead of a call"). Redis: redis-server (appendonly yes,
# appendfsync everysec) and `redis-benchmark -c 16 -d 1024`; each round measures Redis, then every
# way of the echo benchmark once.
# Usage: [ROUNDS=3] [WAYS=...] bench/net/call_cost.sh BUILD_DIR [SECONDS]
set -euo pipefail

build=${1:-build}
seconds=${2:-3}
rounds=${ROUNDS:-3}
echo_bench=$build/bench/net/grpc_call_cost
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-call-cost-XXXXXX")
# shellcheck source=bench/net/processes.sh
source "$(dirname "$0")/processes.sh"

start_redis
redis_ops() {  # OP (get|set)
  redis-benchmark -p "$redis_port" -t "$1" -d 1024 -c 16 -n $((seconds * 40000)) -r 10000 \
    --csv | grep -i "\"$1\"" | cut -d, -f2 | tr -d '"'
}

ways_args=()
[ -n "${WAYS:-}" ] && ways_args=(--ways "$WAYS")
: >"$dir/set"
: >"$dir/get"
for round in $(seq 1 "$rounds"); do
  redis_ops set >>"$dir/set"
  redis_ops get >>"$dir/get"
  echo "round $round"
  "$echo_bench" --rounds 1 --seconds "$seconds" "${ways_args[@]}" | tee "$dir/round"
  grep '^| [a-z]' "$dir/round" | grep -v '^| way' >>"$dir/rows"
done
echo
echo "Medians of $rounds rounds:"
head -n 2 "$dir/round"
cut -d'|' -f2 "$dir/rows" | awk '!seen[$0]++' | while read -r way; do
  row="| $way |"
  for column in 3 4 5 6 7; do
    value=$(grep -F "| $way |" "$dir/rows" | cut -d'|' -f"$column" | tr -d ' ' | median)
    row="$row $value |"
  done
  echo "$row"
done
echo "redis SET ops/s at 16 clients, median of $rounds: $(median <"$dir/set")"
echo "redis GET ops/s at 16 clients, median of $rounds: $(median <"$dir/get")"
