#!/usr/bin/env bash
# examples_run: starts a coordinator and a node of the `shoal` binary on loopback (free ports),
# runs each example against it and checks what it printed. Over mutual TLS: the examples call
# Database::Connect(uri) with no options, so they find the admin certificate through the
# credentials file named by SHOAL_CREDENTIALS.
# Usage: run_examples.sh path/to/shoal path/to/examples/dir
set -euo pipefail

shoal=$1
examples=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-examples-XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
export SHOAL_CREDENTIALS="$dir/credentials"

fail() {
  echo "FAIL: $*" >&2
  tail -n 20 "$dir"/*.log >&2 || true
  exit 1
}

# Starts a process in the background and sets `address` from its first stdout line (JSON).
start() {
  local name=$1
  shift
  "$shoal" "$@" --json >"$dir/$name.out" 2>"$dir/$name.log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    address=$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$dir/$name.out" 2>/dev/null | head -n 1) ||
      address=""
    if [ -n "$address" ]; then return 0; fi
    sleep 0.1
  done
  fail "$name did not start"
}

"$shoal" certs create-ca --certs-dir "$dir/certs" >/dev/null
"$shoal" certs create-node --certs-dir "$dir/certs" >/dev/null
"$shoal" certs create-client --certs-dir "$dir/certs" --user admin >/dev/null
start coordinator coordinator --data "$dir/coordinator" --listen 127.0.0.1:0 --initial-nodes 1 \
  --buckets 8 --no-sync --certs-dir "$dir/certs"
cluster="shoal://$address"
"$shoal" credentials add --cluster "$cluster" --certs-dir "$dir/certs" >/dev/null
start node1 node --id 1 --data "$dir/node-1" --listen 127.0.0.1:0 --coordinator "$address" \
  --no-sync --certs-dir "$dir/certs"
for _ in $(seq 1 100); do
  status=$("$shoal" status --cluster "$cluster" --json 2>/dev/null) || status=unreachable
  if [[ $status != *unreachable* && $status != *'"reachable":false'* ]]; then break; fi
  sleep 0.1
done

# Runs one example and checks that its output contains `expected`.
check() {
  local example=$1 expected=$2
  local out
  out=$("$examples/example_$example" "$cluster" 2>"$dir/$example.log") ||
    fail "example_$example exited with $?: $out"
  [[ $out == *"$expected"* ]] || fail "example_$example printed: $out"
  echo "example_$example: ok"
}
check connect_write_read 'alice = {"name": "Alice", "age": 31} (version'
check query 'lyon {"country": "FR", "population": 520000}'
check sharded_counter '"likes":100'

for pid in "${pids[@]}"; do kill -TERM "$pid"; done
for pid in "${pids[@]}"; do wait "$pid" || fail "process $pid exited with $? after SIGTERM"; done
pids=()
