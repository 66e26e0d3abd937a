# shellcheck shell=bash
# Shared by the scripts that run `shoal local` (sourced): tests/cluster/local_smoke.sh and
# bench/cluster/failover.sh. The sourcing script sets `dir` (a scratch directory) first; the
# cleanup kills `local_pid` and every process started under `dir`, then removes it.

local_pid=""
# shoal local registers its cluster here, and the commands find their credentials here: never in
# the user's ~/.config/shoal/credentials.
export SHOAL_CREDENTIALS="$dir/credentials"
cleanup() {
  if [ -n "$local_pid" ]; then kill -KILL "$local_pid" 2>/dev/null || true; fi
  pkill -KILL -f "$dir/" 2>/dev/null || true
  rm -rf "${dir:?}"
}
trap cleanup EXIT

# A base port with the next COUNT - 1 ports free too (a coordinator and its nodes).
free_base_port() {
  local count=${1:-4}
  for _ in $(seq 1 50); do
    local base=$((20000 + RANDOM % 40000)) busy=0
    for p in $(seq "$base" $((base + count - 1))); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy=1; fi
    done
    if [ $busy = 0 ]; then echo "$base"; return 0; fi
  done
  return 1
}
