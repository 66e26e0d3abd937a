#!/usr/bin/env bash
# Installs every Debian package that Shoal's build, tests, benchmarks and demo need.
# Idempotent: packages already present are skipped, and apt-get runs only when something is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config clang clang-format clang-tidy libclang-rt-14-dev
  # lld: links the executables several times faster than GNU ld (CMakeLists.txt)
  lld
  # libraries
  libabsl-dev libxxhash-dev libcli11-dev libfmt-dev nlohmann-json3-dev librocksdb-dev
  libsimdjson-dev rapidjson-dev libpqxx-dev
  # tcmalloc, the allocator of the shoal executable (CMakeLists.txt, SHOAL_MALLOC)
  libgoogle-perftools-dev
  # ZooKeeper metadata store: C client library, and the server its tests start
  libzookeeper-mt-dev zookeeper
  # network layer: gRPC and protocol buffers
  protobuf-compiler protobuf-compiler-grpc libgrpc++-dev libprotobuf-dev
  # certificates (src/security) on the OpenSSL that gRPC's TLS runs on
  libssl-dev
  # password hashing for users (Argon2id): src/security
  libsodium-dev
  # the PostgreSQL shard backend's tests start a real server
  postgresql
  # tests and benchmarks
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  # plots for docs/results
  gnuplot-nox jq
  # the reference point of the network benchmark (bench/net)
  redis-server redis-tools
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
