#!/usr/bin/env bash
# The allocator A/B of docs/results/network.md ("The allocator"): bench/net/ratio.sh on the same
# binaries with glibc's malloc, jemalloc and tcmalloc (the last two put in front of glibc's with
# LD_PRELOAD), arm after arm, round after round, so that every arm sees the same machine.
# SYSTEM_BUILD is a build directory configured with -DSHOAL_MALLOC=system:
#   cmake -S . -B build-sysmalloc -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHOAL_MALLOC=system
#   ninja -C build-sysmalloc shoal net_load
# Needs libjemalloc2 and libtcmalloc-minimal4 (Debian; scripts/install-deps.sh installs the
# second, redis-server the first).
# Usage: [ROUNDS=3] [NODES=1] [RATIO_ROUNDS=3] bench/net/allocator-ab.sh SYSTEM_BUILD
set -euo pipefail

system_build=$(realpath "${1:?usage: bench/net/allocator-ab.sh SYSTEM_BUILD}")
rounds=${ROUNDS:-3}
nodes=${NODES:-1}
ratio_rounds=${RATIO_ROUNDS:-3}
lib=/usr/lib/x86_64-linux-gnu
declare -A preload=([system]="" [jemalloc]="$lib/libjemalloc.so.2"
                    [tcmalloc]="$lib/libtcmalloc_minimal.so.4")
wrappers=$(mktemp -d "${TMPDIR:-/tmp}/shoal-allocator-ab-XXXXXX")
trap 'rm -rf "$wrappers"' EXIT

# A build directory per arm whose shoal and net_load run the system build's binaries with the
# arm's allocator preloaded.
for arm in system jemalloc tcmalloc; do
  for binary in tools/shoal/shoal bench/net/net_load; do
    mkdir -p "$wrappers/$arm/$(dirname "$binary")"
    printf '#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' "${preload[$arm]}" \
      "$system_build/$binary" >"$wrappers/$arm/$binary"
    chmod +x "$wrappers/$arm/$binary"
  done
done

for round in $(seq 1 "$rounds"); do
  for arm in system jemalloc tcmalloc; do
    echo "=== round $round arm $arm"
    ROUNDS=$ratio_rounds NODES=$nodes STYLES=async1 \
      "$(dirname "$0")/ratio.sh" "$wrappers/$arm" 2 | grep "^| [0-9] |"
  done
done
