#!/usr/bin/env bash
# `shoal local` keeps serving when one of its processes dies: a node killed with SIGKILL is
# reported and started again on its data directory and port, and every document written before
# is read back; with --no-restart the killed node stays down and the rest keeps running; SIGTERM
# then stops everything and leaves no process behind. With --replicas 3, a node killed for good
# fails over: every document stays readable and takes new writes; a node stopped (SIGSTOP) past
# the failover timeout and woken serves nothing stale; a node killed and restarted gets its
# copies back; `shoal replicas --set 3` takes a running cluster from one copy to three; `shoal
# plan` names the copies a join would replace; started again on its data, a cluster keeps its
# K and names a node started beyond its members; with --insecure it serves plaintext.
# Usage: local_smoke.sh path/to/shoal
set -euo pipefail

shoal=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-local-smoke-XXXXXX")
# shellcheck source=tests/cluster/local_lib.sh
source "$(dirname "$0")/local_lib.sh"
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR

# Polls `shoal status --json` until the jq condition $1 holds, at most $2 times 0.1 s apart; the
# last answer stays in $status.
await_status() {
  local tries
  for tries in $(seq 1 "$2"); do
    status=$("$shoal" status --json --cluster "$cluster") || fail "status"
    [ "$(echo "$status" | jq "$1")" = true ] && return 0
    sleep 0.1
  done
  return 1
}

fail() {
  echo "FAIL: $*" >&2
  cat "$dir/local.out" >&2 || true
  tail -n 20 "$dir"/data/*.log >&2 || true
  exit 1
}

# Waits until `pattern` appears in local's output.
await_line() {
  for _ in $(seq 1 300); do
    if grep -q "$1" "$dir/local.out" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  fail "no line matching '$1'"
}

pid_of() { sed -n "s/^$1 .*(pid \([0-9]*\))$/\1/p" "$dir/local.out" | head -n 1; }

# RESTART=1: on the last run's data directory and ports.
run_local() {
  if [ -z "${RESTART:-}" ]; then
    rm -rf "$dir/data"
    base=$(free_base_port) || fail "no free ports"
  fi
  : >"$dir/local.out"
  "$shoal" local --nodes "${NODES:-2}" --buckets 8 --base-port "$base" --data "$dir/data" \
    --restart-delay-ms 300 "$@" >"$dir/local.out" 2>&1 &
  local_pid=$!
  await_line "ready"
  cluster="shoal://127.0.0.1:$base"
}

stop_local() {
  kill -TERM "$local_pid"
  wait "$local_pid" || fail "shoal local exited with $? after SIGTERM"
  local_pid=""
  if pgrep -f "$dir/data" >/dev/null; then fail "a child outlived shoal local"; fi
}

# Every u$i reads back with "i": $i (or "$1": $i when given), retrying for 10 s.
read_all() {
  local field=${1:-i}
  for i in $(seq 1 20); do
    local ok=0
    for _ in $(seq 1 50); do
      if "$shoal" get --cluster "$cluster" users "u$i" 2>/dev/null | grep -q "\"$field\": *$i"; then
        ok=1
        break
      fi
      sleep 0.2
    done
    [ $ok = 1 ] || fail "u$i not read back"
  done
}

# Every u$i takes {"FIELD": i} (FIELD defaults to i), each write retried for 10 s.
write_all() {
  local field=${1:-i}
  for i in $(seq 1 20); do
    local ok=0
    for _ in $(seq 1 50); do
      if "$shoal" put --cluster "$cluster" users "u$i" "{\"$field\": $i}" >/dev/null 2>&1; then
        ok=1
        break
      fi
      sleep 0.2
    done
    [ $ok = 1 ] || fail "u$i takes no write ($field)"
  done
}

# 1. A killed node comes back by itself; a second cluster on its ports is refused. On ports other
# than the commands' default, the output says how to name the cluster, and SHOAL_CLUSTER does.
run_local
if [ "$base" != 7400 ]; then
  grep -q "need only --cluster $cluster, or SHOAL_CLUSTER=$cluster" "$dir/local.out" ||
    fail "shoal local did not say how to reach a cluster on port $base"
fi
SHOAL_CLUSTER=$cluster "$shoal" status >/dev/null || fail "status with SHOAL_CLUSTER"
for i in $(seq 1 20); do
  "$shoal" put --cluster "$cluster" users "u$i" "{\"i\": $i}" >/dev/null || fail "put u$i"
done
node1=$(pid_of "node 1")
[ -n "$node1" ] || fail "no pid for node 1"
kill -KILL "$node1"
await_line "node 1 (pid $node1) was killed by SIGKILL; the other processes keep serving"
await_line "node 1 restarted (pid"
kill -0 "$local_pid" || fail "shoal local stopped"
read_all
# A second cluster on the same ports is refused before it writes anything: the credentials
# registered for the address still reach the first one.
if "$shoal" local --nodes 2 --base-port "$base" --data "$dir/data2" >"$dir/second.out" 2>&1; then
  fail "a second shoal local on the same ports started"
fi
grep -q "127.0.0.1:$base is in use (another shoal local?)" "$dir/second.out" ||
  fail "a second shoal local said: $(cat "$dir/second.out")"
[ ! -e "$dir/data2" ] || fail "a refused shoal local created its data directory"
read_all
stop_local

# 2. --no-restart: the node stays down, the rest keeps running; removing it waits and says why.
run_local --no-restart
node2=$(pid_of "node 2")
kill -KILL "$node2"
await_line "node 2 (pid $node2) was killed by SIGKILL; the other processes keep serving (--no-restart"
sleep 1
kill -0 "$local_pid" || fail "shoal local stopped after a node died"
grep -q "node 2 restarted" "$dir/local.out" && fail "node 2 was restarted"
"$shoal" status --cluster "$cluster" >/dev/null || fail "the coordinator stopped answering"
# Its buckets have no other copy (K = 1): removing it waits, and says why once nothing moves.
timeout 14 "$shoal" remove-node --id 2 --cluster "$cluster" >"$dir/remove.out" 2>&1 || true
grep -q "no move has started or progressed for 10 s: a bucket whose every copy is on a node that is down" \
  "$dir/remove.out" || fail "remove-node of a dead node said: $(cat "$dir/remove.out")"
stop_local

# 3. K = 3: node 1 (the primary of some buckets, a backup of the others) is killed for good.
# Its buckets fail over and the others drop it; reads and writes of every document go on.
NODES=3 run_local --replicas 3 --no-restart
write_all
node1=$(pid_of "node 1")
kill -KILL "$node1"
await_line "node 1 (pid $node1) was killed by SIGKILL"
read_all
write_all after
read_all after
# `status` shows the outcome: every bucket has a reachable primary, and none has K copies once
# the primaries reported node 1 (after 1 s of silence); each is listed with its two replicas.
# Node 1 is shown unreachable, at the address it had.
await_status '.replication_factor == 3 and .primary_unreachable_buckets == 0 and
  .under_replicated_buckets == 8 and (.degraded_buckets | length) == 8 and
  all(.degraded_buckets[]; (.replicas | length) == 2) and
  (.nodes[] | select(.id == 1) | .reachable == false and (.address | test(":[0-9]+$")))' 50 ||
  fail "status after the failover: $status"
stop_local

# 4. K = 3: node 1 is stopped (SIGSTOP) for 3 s, longer than the failover timeout, then woken.
# Writes go on meanwhile; once awake it serves nothing stale: every document reads its last write.
# The cluster is created with a floor of one in-sync copy (--min-in-sync).
NODES=3 run_local --replicas 3 --min-in-sync 1 --no-restart
await_status '.replication_factor == 3 and .min_in_sync == 1' 1 ||
  fail "--min-in-sync 1 was not the new cluster's floor: $status"
write_all
node1=$(pid_of "node 1")
kill -STOP "$node1"
write_all stopped
sleep 1
kill -CONT "$node1"
sleep 1
kill -0 "$node1" || fail "node 1 did not survive SIGSTOP/SIGCONT"
read_all stopped
stop_local

# 5. K = 3 (the default with three nodes) with restarts: node 1 is killed and `shoal local` starts
# it again; the cluster gives it its copies back (snapshot and catch-up from each primary) until
# every bucket has three.
NODES=3 run_local
await_status '.replication_factor == 3' 1 || fail "three nodes do not default to K = 3: $status"
write_all
node1=$(pid_of "node 1")
kill -KILL "$node1"
await_line "node 1 restarted"
write_all back
# Its primaries failed over when it came back fenced, so some copies are rebuilt on it.
for _ in $(seq 1 150); do
  if grep -qs "move.begin" "$dir"/data/*.log; then break; fi
  sleep 0.1
done
grep -qs "move.begin" "$dir"/data/*.log || fail "no copy was rebuilt on node 1"
await_status '.primary_unreachable_buckets == 0 and .under_replicated_buckets == 0' 150 ||
  fail "node 1 did not get its copies back: $status"
read_all back
stop_local

# 6. K changes online: settings that cannot be met are refused and change nothing; a K = 1
# cluster goes to 2 copies without waiting (the coordinator raises the floor once they are
# built), then to 3 with `shoal replicas --set 3`, which waits until every copy is built;
# a node may not leave while that would leave fewer than K active nodes; `force-primary` refuses
# without --accept-data-loss.
NODES=3 run_local --replicas 1 --enable-failpoints
write_all
# A setting that cannot be met changes nothing and says why in the operator's words.
if "$shoal" replicas --set 4 --cluster "$cluster" >"$dir/replicas.out" 2>&1; then
  fail "replicas --set 4 on 3 nodes succeeded"
fi
grep -q "K can be 1 to 3" "$dir/replicas.out" || fail "replicas --set 4 said: $(cat "$dir/replicas.out")"
if "$shoal" replicas --set 2 --min-in-sync 3 --cluster "$cluster" >"$dir/replicas.out" 2>&1; then
  fail "replicas --min-in-sync 3 above --set 2 succeeded"
fi
grep -q "min_in_sync 3 exceeds K = 2" "$dir/replicas.out" ||
  fail "replicas --min-in-sync 3 said: $(cat "$dir/replicas.out")"
await_status '.replication_factor == 1 and .min_in_sync == 1' 10 ||
  fail "a refused replicas command changed the cluster: $status"
# Without waiting: the coordinator itself raises the floor (2 of 2) once the copies are built;
# meanwhile `status` shows the floor in force and the one that waits (each move is held 2 s
# after its BEGIN so that the copies take a while).
"$shoal" failpoint --target "127.0.0.1:$base" "coordinator.after_begin=pause:2000" >/dev/null ||
  fail "failpoint on the coordinator"
"$shoal" replicas --set 2 --no-wait --cluster "$cluster" >"$dir/replicas.out" 2>&1 ||
  fail "replicas --set 2 --no-wait: $(cat "$dir/replicas.out")"
await_status '.replication_factor == 2 and .min_in_sync == 1 and .pending_min_in_sync == 2' 20 ||
  fail "status while the copies are built: $status"
"$shoal" status --cluster "$cluster" >"$dir/status.out" || fail "status (text)"
grep -q "min_in_sync 1 (2 once every bucket has 2 copies)" "$dir/status.out" ||
  fail "status while the copies are built said: $(cat "$dir/status.out")"
"$shoal" failpoint --target "127.0.0.1:$base" "" >/dev/null || fail "failpoints off"
await_status '.replication_factor == 2 and .min_in_sync == 2 and .pending_min_in_sync == 0 and
  .under_replicated_buckets == 0' 300 || fail "status after replicas --set 2 --no-wait: $status"
"$shoal" replicas --set 3 --cluster "$cluster" >"$dir/replicas.out" 2>&1 ||
  fail "replicas --set 3: $(cat "$dir/replicas.out")"
grep -q "replicas: done, the cluster is balanced" "$dir/replicas.out" ||
  fail "replicas --set 3 said: $(cat "$dir/replicas.out")"
await_status '.replication_factor == 3 and .min_in_sync == 2 and .under_replicated_buckets == 0' \
  50 || fail "status after replicas --set 3: $status"
# Without --set, `replicas` shows the setting.
[ "$("$shoal" replicas --json --cluster "$cluster")" = \
  '{"min_in_sync":2,"pending_min_in_sync":0,"replication_factor":3}' ] ||
  fail "replicas --json: $("$shoal" replicas --json --cluster "$cluster" 2>&1)"
"$shoal" replicas --cluster "$cluster" | grep -q "^replicas: K = 3, min_in_sync 2 " ||
  fail "replicas: $("$shoal" replicas --cluster "$cluster" 2>&1)"
read_all
# Three copies need three nodes: a node may not leave (it would stay leaving for good).
if "$shoal" remove-node --id 2 --cluster "$cluster" >"$dir/remove.out" 2>&1; then
  fail "remove-node below K active nodes succeeded"
fi
grep -q "add a node first, or lower K" "$dir/remove.out" || fail "remove-node said: $(cat "$dir/remove.out")"
await_status 'all(.nodes[]; .state == "active")' 10 || fail "a refused remove-node changed the cluster: $status"
# A plan names the copy that leaves and the one that arrives: with node 4 joining, each move
# replaces a copy on node 1, 2 or 3 by one on node 4, never "node 1 -> node 1" (its primary).
"$shoal" plan --add 4 --json --cluster "$cluster" >"$dir/plan.json" || fail "plan --add 4"
jq -e '(.moves | length) > 0 and all(.moves[] | select(.mode != "handoff");
  .to == 4 and .from >= 1 and .from <= 3)' "$dir/plan.json" >/dev/null ||
  fail "plan --add 4: $(cat "$dir/plan.json")"
"$shoal" plan --add 4 --cluster "$cluster" >"$dir/plan.out" || fail "plan --add 4 (text)"
grep -q "node [123] -> node 4 " "$dir/plan.out" || fail "plan --add 4 said: $(cat "$dir/plan.out")"
if "$shoal" force-primary --bucket 0 --node 2 --cluster "$cluster" >"$dir/force.out" 2>&1; then
  fail "force-primary went on without --accept-data-loss"
fi
grep -q "accept-data-loss" "$dir/force.out" || fail "force-primary said: $(cat "$dir/force.out")"
stop_local

# 7. Started again on its data directory, the cluster keeps its own K (the flag shapes a new
# cluster only, and the output says so); a node started beyond its members is named with the
# command that adds it (it joins only then), and a member not started is named.
RESTART=1 NODES=4 run_local --replicas 2
grep -q "^setting .*this cluster keeps K = 3, min_in_sync 2 .*shoal replicas --set 2" \
  "$dir/local.out" || fail "a restart with --replicas 2 said: $(cat "$dir/local.out")"
grep -q "^copies       3 of every bucket" "$dir/local.out" ||
  fail "a restart with --replicas 2 showed: $(cat "$dir/local.out")"
grep -q "^node 4 .*runs, but is not a member of this cluster: \`shoal add-node --id 4\` adds it" \
  "$dir/local.out" || fail "node 4 was not named: $(cat "$dir/local.out")"
await_status '(.nodes | length) == 3' 1 || fail "node 4 joined by itself: $status"
"$shoal" add-node --id 4 --cluster "$cluster" >"$dir/add.out" 2>&1 || fail "add-node 4: $(cat "$dir/add.out")"
await_status '.replication_factor == 3 and (.nodes | length) == 4 and
  .under_replicated_buckets == 0' 100 || fail "status after node 4 joined: $status"
read_all
stop_local
RESTART=1 NODES=3 run_local --no-restart
grep -q "^node 4 .*a member this run did not start (--nodes 3)" "$dir/local.out" ||
  fail "a restart without node 4 said: $(cat "$dir/local.out")"
stop_local

# 8. --insecure: the cluster serves plaintext, and the commands reach it with --insecure (the
# wait for "ready" fails if `shoal local` cannot reach its own cluster).
run_local --insecure
grep -q "^security     OFF (--insecure)" "$dir/local.out" || fail "insecure: $(cat "$dir/local.out")"
"$shoal" put --insecure --cluster "$cluster" users plain '{"n": 1}' >/dev/null || fail "insecure put"
[ "$("$shoal" get --insecure --cluster "$cluster" users plain)" = '{"n": 1}' ] || fail "insecure get"
stop_local
echo "local smoke: OK"
