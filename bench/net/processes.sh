# shellcheck shell=bash
# Shared by bench/net/run.sh, ratio.sh, cpu_split.sh and call_cost.sh (sourced): processes
# started in the background on free loopback ports, killed on exit, Redis as the reference
# point, and the median of a column of numbers.
# The sourcing script sets `dir` (a scratch directory, removed on exit) before sourcing.

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "${dir:?}"
}
trap cleanup EXIT

# Starts a process (NAME BINARY ARGS...) in the background and sets `address` from its JSON
# stdout line. Not called in $(...): the pid must be recorded in this shell.
start() {
  local name=$1
  shift
  "$@" --json >"$dir/$name.out" 2>"$dir/$name.log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    # The background process may not have created its output file yet: not an error.
    address=$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$dir/$name.out" 2>/dev/null | head -n 1) ||
      address=""
    if [ -n "$address" ]; then return 0; fi
    sleep 0.1
  done
  echo "$name did not start" >&2
  exit 1
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# A free TCP port on loopback.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Starts redis-server as the network target's reference (appendonly yes, appendfsync everysec,
# no snapshots) on a free port under $dir/redis, and sets `redis_port` once it answers.
start_redis() {
  redis_port=$(free_port)
  mkdir -p "$dir/redis"
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$dir/redis" --appendonly yes \
    --appendfsync everysec --save '' --daemonize no >"$dir/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
