#!/usr/bin/env bash
# The network benchmark of docs/results/network.md: get and put of 1 KiB values at 1, 16 and 64
# concurrent clients on a 1-node and a 3-node Shoal cluster over loopback (each process started
# like `shoal local`, on free ports, with --no-sync: the WAL is fsynced every 100 ms), and
# redis-server (appendonly yes, appendfsync everysec) measured with redis-benchmark at the same
# value size and client counts. Each figure is the median of RUNS runs (default 3).
# Shoal is measured once per gRPC server API in MODES (default "sync callback": `shoal node
# --grpc-server`), and, when BASELINE names the build directory of an older version (whose
# `shoal` may lack --grpc-server), once more with that build's binaries, labelled "before".
# Batched writes: put at BATCH_CLIENTS (default 16) clients with Collection::Batch of each size
# in BATCHES (default "16 64"; empty = none; 1 = the plain put) against redis-benchmark's SET pipelined as deep
# (-P N) at as many clients. SINGLE=0 skips the unbatched get/put points.
# Unbatched get/put are measured once per client style in CONNECTIONS (default "per shared"):
# `per` = each client thread has its own Database (connection), labelled MODE; `shared` = all
# threads share one Database, whose client coalesces their concurrent operations into batch
# calls (net_load --shared-connection), labelled MODE+shared; `shared-nc` = shared without
# coalescing (--no-coalesce), labelled MODE+shared-nc; `async` = ONE thread keeping as many
# operations in flight with the asynchronous API (net_load --async: redis-benchmark's model),
# labelled MODE+async (two batch calls in flight per node and kind); `async1` = the same with one
# (the default).
# BASELINE runs use `per` only.
# Usage: [RUNS=3] [MODES="sync callback"] [BASELINE=DIR] [BATCHES="16 64"] [SINGLE=1]
#        [CONNECTIONS="per shared"] [NODES="1 3"] [CLIENTS="1 16 64"] bench/net/run.sh BUILD_DIR
#        [SECONDS]
set -euo pipefail

build=${1:-build}
seconds=${2:-5}
runs=${RUNS:-3}
modes=${MODES:-sync callback}
baseline=${BASELINE:-}
batches=${BATCHES-16 64}
single=${SINGLE:-1}
batch_clients=${BATCH_CLIENTS:-16}
connections=${CONNECTIONS:-per shared}
node_counts=${NODES:-1 3}
client_counts=${CLIENTS:-1 16 64}
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-net-bench-XXXXXX")
# shellcheck source=bench/net/processes.sh
source "$(dirname "$0")/processes.sh"

stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}

declare -A throughput  # "label nodes op clients" -> ops/s, for the ratios at the end

# One Shoal point, the median of `runs` runs; prints its table row. Batched puts show as
# "put/bN" and count writes per second. Usage: point LABEL NODES COORDINATOR OP CLIENTS BATCH
# [FLAG...] (net_load flags; uses `load` of the caller).
point() {
  local label=$1 nodes=$2 coordinator=$3 op=$4 clients=$5 batch=$6
  shift 6
  local style_flags=("$@")
  local name=$op
  local batch_flag=()
  if [ "$batch" -gt 1 ]; then
    name="$op/b$batch"
    batch_flag=(--batch "$batch")
  fi
  local results=()
  for _ in $(seq 1 "$runs"); do
    # A run that cannot connect (a loaded machine) prints nothing and is left out; one
    # with failed operations still reports its successful ones.
    local out
    out=$("$load" "${client_security[@]}" --cluster "shoal://$coordinator" --op "$op" \
      --clients "$clients" \
      --seconds "$seconds" --value-bytes 1024 "${batch_flag[@]}" "${style_flags[@]}") ||
      echo "net_load: $label $nodes $name $clients: exit $?" >&2
    if [ -n "$out" ]; then results+=("$out"); fi
  done
  if [ "${#results[@]}" -eq 0 ]; then
    echo "no successful run of $label $nodes $name $clients" >&2
    exit 1
  fi
  local ops p50 p99
  ops=$(printf '%s\n' "${results[@]}" | jq .ops_per_second | median)
  p50=$(printf '%s\n' "${results[@]}" | jq .p50_ms | median)
  p99=$(printf '%s\n' "${results[@]}" | jq .p99_ms | median)
  throughput["$label $nodes $name $clients"]=$ops
  printf '| shoal | %s | %s | %s | %s | %.0f | %.3f | %.3f |\n' "$label" "$nodes" "$name" \
    "$clients" "$ops" "$p50" "$p99"
}

# The label suffix and net_load flags of a client style of CONNECTIONS.
style_suffix() {
  case $1 in
    per) echo "" ;;
    shared) echo "+shared" ;;
    shared-nc) echo "+shared-nc" ;;
    async) echo "+async" ;;
    async1) echo "+async1" ;;
    *) echo "unknown connection style $1" >&2; exit 1 ;;
  esac
}
style_flags() {
  case $1 in
    per) ;;
    shared) echo "--shared-connection" ;;
    shared-nc) echo "--shared-connection --no-coalesce" ;;
    async) echo "--async --async-calls 2" ;;
    async1) echo "--async --async-calls 1" ;;
  esac
}

# Measures one Shoal version/API on 1 and 3 nodes.
# Usage: measure LABEL BUILD_DIR STYLES [FLAG...]
measure() {
  local label=$1 dir_build=$2 styles=$3
  shift 3
  local shoal=$dir_build/tools/shoal/shoal load=$dir_build/bench/net/net_load
  for nodes in $node_counts; do
    rm -rf "$dir/cluster"
    start coordinator "$shoal" coordinator --data "$dir/cluster/coordinator" \
      --listen 127.0.0.1:0 --initial-nodes "$nodes" --buckets 32 --no-sync "$@"
    local coordinator=$address
    for i in $(seq 1 "$nodes"); do
      start "node$i" "$shoal" node --id "$i" --data "$dir/cluster/node-$i" --listen 127.0.0.1:0 \
        --coordinator "$coordinator" --no-sync "$@"
    done
    sleep 1
    if [ "$single" != 0 ]; then
      for style in $styles; do
        local suffix flags
        suffix=$(style_suffix "$style")
        read -r -a flags <<<"$(style_flags "$style")"
        for op in get put; do
          for clients in $client_counts; do
            point "$label$suffix" "$nodes" "$coordinator" "$op" "$clients" 1 "${flags[@]}"
          done
        done
      done
    fi
    for batch in $batches; do
      # Batch 1 is the plain put, already measured with the single points.
      if [ "$batch" -gt 1 ] || [ "$single" = 0 ]; then
        point "$label" "$nodes" "$coordinator" put "$batch_clients" "$batch"
      fi
    done
    stop_all
  done
}

echo "| system | server | nodes | op | clients | ops/s | p50 ms | p99 ms |"
echo "|---|---|---|---|---|---|---|---|"
if [ -n "$baseline" ]; then measure before "$baseline" per; fi
for mode in $modes; do measure "$mode" "$build" "$connections" --grpc-server "$mode"; done

start_redis
port=$redis_port
# One redis-benchmark point, the median of `runs` runs. Usage: redis_point OP CLIENTS PIPELINE
redis_point() {
  local op=$1 clients=$2 pipeline=$3
  local name=$op
  [ "$pipeline" -gt 1 ] && name="$op/P$pipeline"
  local ops_runs=() p50_runs=() p99_runs=()
  for _ in $(seq 1 "$runs"); do
    # -n sized for about `seconds` seconds at ~40k ops/s (~100k ops/s pipelined);
    # --csv: "test","rps","avg","min","p50","p95","p99","max" (latencies per request).
    local line requests=$((seconds * 40000))
    [ "$pipeline" -gt 1 ] && requests=$((seconds * 100000))
    line=$(redis-benchmark -p "$port" -t "$op" -d 1024 -c "$clients" -P "$pipeline" \
      -n "$requests" -r 10000 --csv | grep -i "\"$op\"")
    ops_runs+=("$(echo "$line" | cut -d, -f2 | tr -d '"')")
    p50_runs+=("$(echo "$line" | cut -d, -f5 | tr -d '"')")
    p99_runs+=("$(echo "$line" | cut -d, -f7 | tr -d '"')")
  done
  local ops p50 p99
  ops=$(printf '%s\n' "${ops_runs[@]}" | median)
  p50=$(printf '%s\n' "${p50_runs[@]}" | median)
  p99=$(printf '%s\n' "${p99_runs[@]}" | median)
  throughput["redis 1 $name $clients"]=$ops
  printf '| redis | - | 1 | %s | %s | %.0f | %.3f | %.3f |\n' "$name" "$clients" "$ops" "$p50" \
    "$p99"
}
if [ "$single" != 0 ]; then
  for op in get set; do
    for clients in $client_counts; do redis_point "$op" "$clients" 1; done
  done
fi
for batch in $batches; do
  if [ "$batch" -gt 1 ] || [ "$single" = 0 ]; then redis_point set "$batch_clients" "$batch"; fi
done
stop_all

echo
echo "Ratio to Redis at 16 clients (batched puts: to SET pipelined as deep, at $batch_clients clients):"
echo
echo "| server | op | 1 node | 3 nodes |"
echo "|---|---|---|---|"
ratio() {  # LABEL SHOAL_OP REDIS_OP CLIENTS (a point not measured shows as 0)
  local r=${throughput["redis 1 $3 $4"]:-0}
  [ "$r" = 0 ] && return 0
  printf '| %s | %s | %.2fx | %.2fx |\n' "$1" "$2" \
    "$(echo "${throughput["$1 1 $2 $4"]:-0} / $r" | bc -l)" \
    "$(echo "${throughput["$1 3 $2 $4"]:-0} / $r" | bc -l)"
}
for label in ${baseline:+before} $modes; do
  if [ "$single" != 0 ]; then
    for style in $connections; do
      [ -n "$baseline" ] && [ "$label" = before ] && [ "$style" != per ] && continue
      ratio "$label$(style_suffix "$style")" get get 16
      ratio "$label$(style_suffix "$style")" put set 16
    done
  fi
  for batch in $batches; do
    if [ "$batch" -gt 1 ]; then
      ratio "$label" "put/b$batch" "set/P$batch" "$batch_clients"
    elif [ "$single" = 0 ]; then
      ratio "$label" put set "$batch_clients"
    fi
  done
done
