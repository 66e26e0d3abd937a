#!/bin/sh
# examples_link_check: each example links only the client library. Fails if a binary given as an
# argument carries a server-side library, either as a shared library (ldd: RocksDB, ZooKeeper) or
# linked in statically (nm: symbols of the node, coordinator, metadata, embedded-server or process
# layers, of RocksDB or of the ZooKeeper client).
set -eu

dynamic_pattern='librocksdb|libzookeeper'
static_pattern='shoal::(node|coordinator|metadata|server|process)::|rocksdb::|zoo_|zookeeper'

if [ "$#" -eq 0 ]; then
  echo "usage: $0 BINARY..."
  exit 2
fi

status=0
for binary in "$@"; do
  name=$(basename "$binary")
  clean=1
  dynamic=$(ldd "$binary" | grep -E "$dynamic_pattern" || true)
  if [ -n "$dynamic" ]; then
    echo "$name: links a server-side shared library:"
    echo "$dynamic"
    clean=0
  fi
  symbols=$(nm -C "$binary")
  # An empty or stripped symbol table would pass the check below without showing anything.
  if ! printf '%s\n' "$symbols" | grep -q 'shoal::Database::Connect'; then
    echo "$name: no symbol table to check (shoal::Database::Connect not found)"
    status=1
    continue
  fi
  static=$(printf '%s\n' "$symbols" | grep -E "$static_pattern" || true)
  if [ -n "$static" ]; then
    echo "$name: links server-side code statically ($(printf '%s\n' "$static" | wc -l) symbols):"
    printf '%s\n' "$static" | head -20
    clean=0
  fi
  if [ "$clean" -eq 1 ]; then
    echo "$name: client library only"
  else
    status=1
  fi
done
exit "$status"
