#!/usr/bin/env bash
# Real processes on loopback: a coordinator and two nodes of the `shoal` binary (each on a free
# port), the data and status commands, a graceful SIGTERM of everything, a restart from the
# same directories, and every written document read back. Over mutual TLS: the certificates come
# from `shoal certs`, and the commands find them through a credentials file (`shoal credentials
# add`, SHOAL_CREDENTIALS).
# Usage: net_smoke.sh path/to/shoal [sync|callback]   (the gRPC server API of every process)
set -euo pipefail

shoal=$1
grpc_server=${2:-sync}
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-net-smoke-XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
export SHOAL_CREDENTIALS="$dir/credentials"

fail() {
  echo "FAIL: $*" >&2
  tail -n 20 "$dir"/*.log >&2 || true
  exit 1
}

# Starts a process in the background and sets `address` from its first stdout line (JSON).
# Not called in $(...): the pid must be recorded in this shell.
start() {
  local name=$1
  shift
  rm -f "$dir/$name.out"
  "$shoal" "$@" --json >"$dir/$name.out" 2>"$dir/$name.log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    # The background process may not have created its output file yet: not an error.
    address=$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$dir/$name.out" 2>/dev/null | head -n 1) ||
      address=""
    if [ -n "$address" ]; then return 0; fi
    sleep 0.1
  done
  fail "$name did not start"
}

"$shoal" certs create-ca --certs-dir "$dir/certs" >/dev/null
"$shoal" certs create-node --certs-dir "$dir/certs" --host localhost >/dev/null
"$shoal" certs create-client --certs-dir "$dir/certs" --user admin >/dev/null
[ "$(stat -c %a "$dir/certs/node.key")" = 600 ] || fail "node.key is not 0600"

start_cluster() {
  local listen=$1
  start coordinator coordinator --data "$dir/coordinator" --listen "$listen" \
    --initial-nodes 2 --buckets 8 --no-sync --log-format json --grpc-server "$grpc_server" \
    --certs-dir "$dir/certs"
  coordinator=$address
  start node1 node --id 1 --data "$dir/node-1" --listen 127.0.0.1:0 \
    --coordinator "$coordinator" --no-sync --grpc-server "$grpc_server" --certs-dir "$dir/certs"
  start node2 node --id 2 --data "$dir/node-2" --listen 127.0.0.1:0 \
    --coordinator "$coordinator" --no-sync --grpc-server "$grpc_server" --certs-dir "$dir/certs"
  cluster="shoal://$coordinator"
  "$shoal" credentials add --cluster "$cluster" --certs-dir "$dir/certs" >/dev/null
  # Until both nodes answer (their addresses reach the coordinator with their heartbeats).
  for _ in $(seq 1 100); do
    status=$("$shoal" status --cluster "$cluster" --json 2>/dev/null) || status=""
    if [[ -n $status && $status != *'"reachable":false'* ]]; then return 0; fi
    sleep 0.1
  done
  fail "cluster not serving"
}

stop_cluster() {
  for pid in "${pids[@]}"; do kill -TERM "$pid"; done
  for pid in "${pids[@]}"; do
    wait "$pid" || fail "process $pid exited with $? after SIGTERM"
  done
  pids=()
}

start_cluster 127.0.0.1:0
for i in $(seq 1 30); do
  "$shoal" put --cluster "$cluster" users "u$i" "{\"i\": $i, \"even\": $((i % 2 == 0))}" >/dev/null \
    || fail "put u$i"
done
echo '{"name": "Alice"}' | "$shoal" put --cluster "$cluster" users alice --mode insert >/dev/null \
  || fail "insert alice"
if "$shoal" put --cluster "$cluster" users alice '{}' --mode insert 2>"$dir/err"; then
  fail "a second insert succeeded"
fi
grep -q ALREADY_EXISTS "$dir/err" || fail "duplicate insert: $(cat "$dir/err")"
# A read, query or delete of a collection that does not exist names it and creates nothing; a
# name outside the rule is refused before it is sent.
for command in "get nocoll x" "query nocoll" "delete nocoll x"; do
  # shellcheck disable=SC2086 # the command's words
  if "$shoal" $command --cluster "$cluster" 2>"$dir/err"; then fail "$command succeeded"; fi
  grep -qF 'error: NOT_FOUND (UNKNOWN_COLLECTION): no collection named "nocoll"' "$dir/err" ||
    fail "$command: $(cat "$dir/err")"
done
if "$shoal" put --cluster "$cluster" $'bad\nname' k '{}' 2>"$dir/err"; then
  fail "a collection name with a newline was accepted"
fi
grep -q 'error: INVALID_ARGUMENT: invalid collection name' "$dir/err" || fail "bad name: $(cat "$dir/err")"

# Batch: one result per line in order; a failed write (exit 1) does not stop the others; a
# malformed line fails the command before anything is sent.
printf '%s\n' '{"op":"put","key":"b1","value":{"n":1}}' '{"op":"update","key":"nobody","value":{}}' \
  '' '{"op":"insert","key":"b2","value":{"n":2}}' '{"op":"delete","key":"u30"}' >"$dir/batch.jsonl"
if "$shoal" batch --cluster "$cluster" users --file "$dir/batch.jsonl" --json >"$dir/batch.out"; then
  fail "a batch with a failed write exited 0"
fi
[ "$(jq -r .line "$dir/batch.out" | tr '\n' ' ')" = "1 2 4 5 " ] || fail "batch lines: $(cat "$dir/batch.out")"
[ "$(jq -r '.error.code // "ok"' "$dir/batch.out" | tr '\n' ' ')" = "ok NOT_FOUND ok ok " ] ||
  fail "batch results: $(cat "$dir/batch.out")"
"$shoal" get --cluster "$cluster" users b2 | grep -q '"n":2' || fail "batch b2 not written"
printf '%s\n' '{"op":"put","key":"b3","value":{}}' '{"op":"put","key":"b4"}' |
  "$shoal" batch --cluster "$cluster" users 2>"$dir/err" && fail "a malformed batch succeeded"
grep -q "line 2:" "$dir/err" || fail "malformed batch: $(cat "$dir/err")"
if "$shoal" get --cluster "$cluster" users b3 >/dev/null 2>&1; then fail "a malformed batch wrote"; fi
# From a pipe, batches stream: those before the malformed line's batch are written, and said so.
printf '%s\n' '{"op":"put","key":"b5","value":{}}' '{"op":"put","key":"b6","value":{}}' '{"op":"put"' |
  "$shoal" batch --cluster "$cluster" users --batch-size 1 >"$dir/batch.out" 2>"$dir/err" &&
  fail "a malformed streamed batch succeeded"
grep -q "line 3: not JSON; the 2 writes before its batch were sent" "$dir/err" || fail "streamed: $(cat "$dir/err")"
[ "$(wc -l <"$dir/batch.out")" -eq 2 ] || fail "streamed batch results: $(cat "$dir/batch.out")"
"$shoal" get --cluster "$cluster" users b6 >/dev/null || fail "a streamed batch lost b6"
# From a file redirected to stdin, every line is checked first: nothing is written.
printf '%s\n' '{"op":"put","key":"b7","value":{}}' '{"op":"put"' >"$dir/bad.jsonl"
"$shoal" batch --cluster "$cluster" users --batch-size 1 <"$dir/bad.jsonl" 2>"$dir/err" &&
  fail "a malformed batch file succeeded"
grep -q "line 2: not JSON" "$dir/err" || fail "file batch: $(cat "$dir/err")"
if "$shoal" get --cluster "$cluster" users b7 >/dev/null 2>&1; then fail "a malformed file wrote"; fi
"$shoal" put --cluster "$cluster" users u30 '{"i": 30, "even": true}' >/dev/null || fail "put u30 again"
[ "$("$shoal" get --cluster "$cluster" users alice)" = '{"name": "Alice"}' ] || fail "get alice"
"$shoal" delete --cluster "$cluster" users u30 >/dev/null || fail "delete"
count=$("$shoal" query --cluster "$cluster" users --where 'even==1' | wc -l)
[ "$count" -eq 14 ] || fail "query even==1 returned $count, expected 14"
# Blanks around the operator are not part of the path or the value.
count=$("$shoal" query --cluster "$cluster" users --where ' even == 1 ' | wc -l)
[ "$count" -eq 14 ] || fail "query ' even == 1 ' returned $count, expected 14"
if "$shoal" query --cluster "$cluster" users --where 'even == ' >/dev/null 2>"$dir/err"; then
  fail "a condition without a value was accepted"
fi
grep -q "expected PATH OP JSON" "$dir/err" || fail "condition without a value: $(cat "$dir/err")"
# A string without quotes, or a mistyped operator: the error names the condition and the fix.
"$shoal" query --cluster "$cluster" users --where 'name=Alice' 2>"$dir/err" && fail "name=Alice was accepted"
grep -qF -- "--where 'name=\"Alice\"'" "$dir/err" || fail "name=Alice: $(cat "$dir/err")"
"$shoal" query --cluster "$cluster" users --where 'i=>3' 2>"$dir/err" && fail "i=>3 was accepted"
grep -qF -- "--where 'i=>3': >3 is not a JSON number" "$dir/err" || fail "i=>3: $(cat "$dir/err")"
# The first operator of the condition is its operator: a value may hold another.
"$shoal" put --cluster "$cluster" users op1 '{"expr": "a<=b"}' >/dev/null || fail "put op1"
[ "$("$shoal" query --cluster "$cluster" users --where 'expr == "a<=b"')" = $'op1\t{"expr": "a<=b"}' ] ||
  fail "query expr == \"a<=b\": $("$shoal" query --cluster "$cluster" users --where 'expr == "a<=b"' 2>&1)"
"$shoal" delete --cluster "$cluster" users op1 >/dev/null || fail "delete op1"
# A pretty-printed document from stdin: stored without the whitespace around it, read back as
# written, and one line of the query's KEY<TAB>JSON output.
printf '\n{\n  "name": "Pretty",\n  "tags": [1, 2]\n}\n\n' |
  "$shoal" put --cluster "$cluster" pretty p1 >/dev/null || fail "put from stdin"
[ "$("$shoal" get --cluster "$cluster" pretty p1 | wc -l)" -eq 4 ] || fail "get of a 4-line document"
[ "$("$shoal" query --cluster "$cluster" pretty)" = $'p1\t{"name":"Pretty","tags":[1,2]}' ] ||
  fail "query of a multi-line document: $("$shoal" query --cluster "$cluster" pretty)"
# The query streams: --limit stops early (and exits 0), --json keeps its one object.
count=$("$shoal" query --cluster "$cluster" users --where 'even==1' --limit 5 | wc -l)
[ "$count" -eq 5 ] || fail "query --limit 5 returned $count lines"
json=$("$shoal" query --cluster "$cluster" users --where 'even==1' --limit 3 --json) ||
  fail "query --json"
[[ $json == '{"count":3,'* ]] || fail "query --limit 3 --json: $json"
# --count prints the number alone (or {"count": N}).
[ "$("$shoal" query --cluster "$cluster" users --where 'even==1' --count)" = 14 ] ||
  fail "query --count: $("$shoal" query --cluster "$cluster" users --where 'even==1' --count 2>&1)"
[ "$("$shoal" query --cluster "$cluster" users --where 'even==1' --count --limit 4 --json)" = '{"count":4}' ] ||
  fail "query --count --limit 4 --json"
# A mistyped command is named, with the nearest one.
if "$shoal" gett --cluster "$cluster" users u1 >/dev/null 2>"$dir/err"; then fail "shoal gett succeeded"; fi
grep -q "unknown command 'gett'; did you mean 'get'?" "$dir/err" || fail "shoal gett: $(cat "$dir/err")"
for i in $(seq 1 5); do
  "$shoal" put --cluster "$cluster" users hotkey "{\"n\": $i}" >/dev/null || fail "put hotkey"
done
status=$("$shoal" status --cluster "$cluster" --json) || fail "status"
[[ $status == *'"buckets":8'* ]] || fail "status: $status"
# Every node reports its free disk space and reserve (the balancer plans with them).
[[ $status == *'"free_disk_bytes":'[0-9]* && $status == *'"reserve_bytes":'[0-9]* ]] ||
  fail "status: no free disk space: $status"
# The key written most is the first hot key.
hot=${status#*'"hot_keys":['}
hot=${hot%%\}*}
[[ $hot == *'"collection":"users"'* && $hot == *'"key":"hotkey"'* ]] || fail "hot keys: $status"
"$shoal" status --cluster "$cluster" | grep -q '^hot keys' || fail "status: no hot keys"
# Sharded fields over the network: declare, apply from the CLI, read the folded value.
"$shoal" declare --cluster "$cluster" questions '{"votes": {"fold": "sum", "shards": 4}}' \
  >/dev/null || fail "declare"
"$shoal" put --cluster "$cluster" questions q1 '{"text": "why?"}' >/dev/null || fail "put q1"
for i in $(seq 1 6); do
  "$shoal" apply --cluster "$cluster" questions q1 votes 1 >/dev/null || fail "apply $i"
done
if "$shoal" put --cluster "$cluster" questions q1 '{"votes": 3}' 2>"$dir/err"; then
  fail "a direct write of a sharded field succeeded"
fi
grep -q INVALID_ARGUMENT "$dir/err" || fail "direct write: $(cat "$dir/err")"
[ "$("$shoal" get --cluster "$cluster" questions q1)" = '{"text":"why?","votes":6}' ] ||
  fail "folded get: $("$shoal" get --cluster "$cluster" questions q1)"
stop_cluster
# The coordinator's event log: one JSON object per line, from its start to its graceful stop.
jq -e -s 'length > 0' "$dir/coordinator.log" >/dev/null || fail "coordinator log is not JSON lines"
for event in process.start process.stop process.stopped; do
  jq -e -s --arg e "$event" 'map(select(.event == $e and .proc == "coordinator")) | length == 1' \
    "$dir/coordinator.log" >/dev/null || fail "coordinator log has no single $event"
done

# Restart from the same directories, every process on a new port (a fixed port could be taken
# meanwhile by another program's ephemeral one): the nodes announce their new addresses.
start_cluster 127.0.0.1:0
for i in $(seq 1 29); do
  got=$("$shoal" get --cluster "$cluster" users "u$i") || fail "u$i lost after restart"
  [ "$got" = "{\"i\": $i, \"even\": $((i % 2 == 0))}" ] || fail "u$i is $got"
done
if "$shoal" get --cluster "$cluster" users u30 2>/dev/null; then fail "u30 resurrected"; fi
if "$shoal" get --cluster "$cluster" nocoll x 2>"$dir/err"; then fail "nocoll exists after restart"; fi
grep -q UNKNOWN_COLLECTION "$dir/err" || fail "nocoll after restart: $(cat "$dir/err")"
[ "$("$shoal" get --cluster "$cluster" questions q1)" = '{"text":"why?","votes":6}' ] ||
  fail "votes after restart: $("$shoal" get --cluster "$cluster" questions q1)"
stop_cluster
echo "net smoke: ok"
