# shellcheck shell=bash
# Shared by bench/net/run.sh, ratio.sh and cpu_split.sh (sourced): processes started in the
# background on free loopback ports, killed on exit, and the median of a column of numbers.
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
