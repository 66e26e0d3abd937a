# shellcheck shell=bash
# Shared by bench/net/run.sh, ratio.sh, cpu_split.sh and call_cost.sh (sourced): processes
# started in the background on free loopback ports, killed on exit, Redis as the reference
# point, and the median of a column of numbers.
# The sourcing script sets `dir` (a scratch directory, removed on exit) before sourcing.

# Security of the cluster processes started here and of their clients (docs/security.md):
# plaintext (--insecure) by default, as the numbers of docs/results/network.md were measured and
# as Redis serves; TLS=1 runs them over mutual TLS with certificates made in $dir/certs (the
# sourcing script sets `shoal` first). `start` gives a coordinator or node the server half;
# scripts pass "${client_security[@]}" to net_load and the commands.
if [ "${TLS:-0}" = 1 ]; then
  [ -n "${shoal:-}" ] || { echo "TLS=1 needs \$shoal set before sourcing processes.sh" >&2; exit 2; }
  mkdir -p "$dir"
  "$shoal" certs create-ca --certs-dir "$dir/certs" >/dev/null
  "$shoal" certs create-node --certs-dir "$dir/certs" >/dev/null
  "$shoal" certs create-client --certs-dir "$dir/certs" --user admin >/dev/null
  server_security=(--certs-dir "$dir/certs")
  client_security=(--certs-dir "$dir/certs")
else
  server_security=(--insecure)
  client_security=(--insecure)
fi

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
  local security=()
  case "${2:-}" in coordinator | node) security=("${server_security[@]}") ;; esac
  "$@" "${security[@]}" --json >"$dir/$name.out" 2>"$dir/$name.log" &
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
