#!/usr/bin/env bash
# Mutual TLS against --insecure (docs/results/security.md): two clusters of one coordinator and
# NODES `shoal node` processes each on loopback (--no-sync, 32 buckets, one copy), one over mutual
# TLS with `shoal certs` certificates and one with --insecure, both up for the whole run; each
# round loads one and then the other (the order alternating by round) with `net_load` (CLIENTS
# threads, each with its own connection and one single get or put in flight, 1 KiB values, 10,000
# keys), so both see the same load on the shared machine. Prints every round and the median
# per-round ratio (TLS / insecure) of throughput, of p50 and p99 latency and of the nodes' CPU
# time per operation (/proc/PID/stat over the run).
# GRPC_SERVER=callback runs both arms on gRPC's callback server API (default sync).
# LOAD_FLAGS are passed to every net_load run of both arms: "--shared-connection" (every thread
# on one Database, so one connection per node) or "--pipe" (ConnectOptions::pipe: one stream per
# node carries every thread's calls).
# The TLS arm's clients authenticate with the `admin` client certificate; AUTH=password makes
# them a `write` user with a password instead (a credentials file with the password, the
# certificate still the transport's), so every call carries the password and is checked.
# Usage: [ROUNDS=7] [CLIENTS=16] [NODES=3] [OPS="get put"] [GRPC_SERVER=sync] [AUTH=certificate]
#        [LOAD_FLAGS=]
#        bench/net/security.sh BUILD_DIR [SECONDS]
set -euo pipefail

build=${1:-build}
seconds=${2:-3}
rounds=${ROUNDS:-7}
clients=${CLIENTS:-16}
nodes=${NODES:-3}
ops=${OPS:-get put}
grpc_server=${GRPC_SERVER:-sync}
read -r -a load_flags <<<"${LOAD_FLAGS:-}"
shoal=$build/tools/shoal/shoal
load=$build/bench/net/net_load
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-net-security-XXXXXX")
# shellcheck source=bench/net/processes.sh
TLS=0 source "$(dirname "$0")/processes.sh"

"$shoal" certs create-ca --certs-dir "$dir/certs" >/dev/null
"$shoal" certs create-node --certs-dir "$dir/certs" >/dev/null
"$shoal" certs create-client --certs-dir "$dir/certs" --user admin >/dev/null

ticks_per_second=$(getconf CLK_TCK)
declare -A coordinators node_pids clients_of
for arm in tls insecure; do
  if [ "$arm" = tls ]; then
    server_security=(--certs-dir "$dir/certs")
    clients_of[$arm]="--certs-dir $dir/certs"
  else
    server_security=(--insecure)
    clients_of[$arm]="--insecure"
  fi
  start "coordinator-$arm" "$shoal" coordinator --data "$dir/$arm/coordinator" \
    --listen 127.0.0.1:0 --initial-nodes "$nodes" --buckets 32 --no-sync --grpc-server "$grpc_server"
  coordinators[$arm]=$address
  for i in $(seq 1 "$nodes"); do
    start "$arm-node$i" "$shoal" node --id "$i" --data "$dir/$arm/node-$i" --listen 127.0.0.1:0 \
      --coordinator "${coordinators[$arm]}" --no-sync --grpc-server "$grpc_server"
    node_pids[$arm]+="${pids[-1]} "
  done
done
sleep 2
if [ "${AUTH:-certificate}" = password ]; then
  password=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  printf '%s\n' "$password" | "$shoal" user add bench --role write --password-stdin \
    --cluster "shoal://${coordinators[tls]}" --certs-dir "$dir/certs" >/dev/null
  jq -n --arg cluster "shoal://${coordinators[tls]}" --arg password "$password" \
    --arg certs "$dir/certs" '{clusters: [{cluster: $cluster, user: "bench", password: $password,
      ca: "\($certs)/ca.crt", cert: "\($certs)/client.admin.crt",
      key: "\($certs)/client.admin.key"}]}' >"$dir/credentials"
  chmod 600 "$dir/credentials"
  export SHOAL_CREDENTIALS="$dir/credentials"
  clients_of[tls]=""
fi
# Every key once in each cluster (a short get run loads them), so that the get arms find them.
for arm in tls insecure; do
  # shellcheck disable=SC2086
  "$load" ${clients_of[$arm]} --cluster "shoal://${coordinators[$arm]}" --op get \
    --clients "$clients" --seconds 1 "${load_flags[@]}" >"$dir/load-$arm.out" || { cat "$dir/load-$arm.out" >&2; exit 1; }
done

node_ticks() {  # ARM -> utime + stime of the arm's nodes
  local total=0
  for pid in ${node_pids[$1]}; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$total"
}

measure() {  # ARM OP -> "ops/s p50_ms p99_ms node_cpu_us_per_op"
  local before after out
  before=$(node_ticks "$1")
  local skip=()
  [ "$2" = get ] && skip=(--skip-load)
  # shellcheck disable=SC2086
  out=$("$load" ${clients_of[$1]} --cluster "shoal://${coordinators[$1]}" --op "$2" \
    --clients "$clients" --seconds "$seconds" "${skip[@]}" "${load_flags[@]}" |
    jq -r '"\(.ops_per_second) \(.p50_ms) \(.p99_ms)"')
  after=$(node_ticks "$1")
  read -r ops p50 p99 <<<"$out"
  cpu=$(awk -v t=$((after - before)) -v hz="$ticks_per_second" -v o="$ops" -v s="$seconds" \
    'BEGIN {printf "%.1f", t / hz * 1e6 / (o * s)}')
  echo "$ops $p50 $p99 $cpu"
}

echo "| op | round | insecure ops/s | TLS ops/s | ratio | insecure p50 ms | TLS p50 ms | insecure p99 ms | TLS p99 ms | insecure node CPU µs/op | TLS node CPU µs/op |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
declare -A ratios p50s p99s cpus
for round in $(seq 1 "$rounds"); do
  for op in $ops; do
    # The order alternates by round, so that neither arm always runs second.
    if [ $((round % 2)) = 1 ]; then
      read -r oi ai bi ci <<<"$(measure insecure "$op")"
      read -r ot at bt ct <<<"$(measure tls "$op")"
    else
      read -r ot at bt ct <<<"$(measure tls "$op")"
      read -r oi ai bi ci <<<"$(measure insecure "$op")"
    fi
    ratio=$(awk -v a="$ot" -v b="$oi" 'BEGIN {printf "%.3f", a / b}')
    ratios[$op]+="$ratio "
    p50s[$op]+="$(awk -v a="$at" -v b="$ai" 'BEGIN {printf "%.3f", a / b}') "
    p99s[$op]+="$(awk -v a="$bt" -v b="$bi" 'BEGIN {printf "%.3f", a / b}') "
    cpus[$op]+="$(awk -v a="$ct" -v b="$ci" 'BEGIN {printf "%.3f", a / b}') "
    printf '| %s | %s | %.0f | %.0f | %s | %.2f | %.2f | %.2f | %.2f | %s | %s |\n' "$op" "$round" \
      "$oi" "$ot" "$ratio" "$ai" "$at" "$bi" "$bt" "$ci" "$ct"
  done
done

echo
echo "Medians of the per-round ratios TLS / insecure at $clients clients, $nodes nodes ($rounds rounds):"
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
