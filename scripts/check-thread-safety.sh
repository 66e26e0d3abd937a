#!/usr/bin/env bash
# Checks the thread-safety annotations (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED, ...) of the
# node, coordinator, client, transport, network, remote-client and process layers with clang's
# -Wthread-safety.
#
# usage: scripts/check-thread-safety.sh <build-dir> [path-regex]
#
# The build may use any compiler: each source file is compiled again by clang++ (at -O0, through ccache
# when installed, so that an unchanged file costs a cache lookup) with the
# include paths and macros that <build-dir>/compile_commands.json records for it. The network layer's
# files include generated protobuf headers, so the build's proto target must have run.
# A path-regex (jq syntax) checks only the matching files of those layers.
# Exits non-zero, printing clang's diagnostics, if any file has a thread-safety warning or does not parse.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 <build-dir> [path-regex]" >&2
  exit 2
fi
build_dir=$1
only=${2:-.}
db="$build_dir/compile_commands.json"
if [ ! -f "$db" ]; then
  echo "check-thread-safety: $db not found (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)" >&2
  exit 2
fi
clangxx=${CLANGXX:-$(command -v clang++-14 || command -v clang++ || true)}
if [ -z "$clangxx" ]; then
  echo "check-thread-safety: clang++ not found" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

root=$(cd "$(dirname "$0")/.." && pwd)

# Whether `file`, or a project header it includes (transitively), declares a lock or annotation:
# a file that sees none can break no annotation, and is not parsed (clang takes seconds a file).
declare -A sees_locks_memo=()
sees_locks() {
  local file=$1
  if [ -n "${sees_locks_memo[$file]+x}" ]; then
    return "${sees_locks_memo[$file]}"
  fi
  sees_locks_memo[$file]=1  # an include cycle ends here
  local result=1
  if grep -qE 'absl::Mutex|ABSL_[A-Z_]*(GUARDED_BY|LOCKS_REQUIRED|LOCKS_EXCLUDED)' "$file"; then
    result=0
  else
    local header
    while read -r header; do
      if [ -f "$root/$header" ] && sees_locks "$root/$header"; then
        result=0
        break
      fi
    done < <(sed -nE 's|^#include "((src\|include)/[^"]+)".*|\1|p' "$file")
  fi
  sees_locks_memo[$file]=$result
  return $result
}

# One clang response file per source file that sees a lock: the recorded command's -I/-isystem/-D/-U/-include flags,
# then the analysis flags. Optimisation, warning and code-generation flags (some gcc-only) are dropped.
n=0
skipped=0
while IFS=$'\t' read -r file command; do
  if ! sees_locks "$file"; then
    skipped=$((skipped + 1))
    continue
  fi
  # The recorded command is shell-quoted (e.g. -DNAME=\"value\"); let the shell split it.
  eval "words=($command)"
  args=()
  i=0
  while [ $i -lt ${#words[@]} ]; do
    w=${words[$i]}
    case "$w" in
      -isystem|-I|-D|-U|-include|-iquote)
        args+=("$w" "${words[$((i + 1))]}")
        i=$((i + 1)) ;;
      -I*|-D*|-U*|-pthread)
        args+=("$w") ;;
    esac
    i=$((i + 1))
  done
  # An object at -O0, not -fsyntax-only: the compiler cache keeps objects (and their warnings),
  # so a file whose preprocessed text did not change is not parsed again (a clean checkout of
  # the same commit checks in seconds, not minutes). A failed check is never cached.
  args+=(-std=c++20 -c -O0 -g0 -o "$tmp/$n.o" -Wthread-safety -Werror=thread-safety
         -Wno-unknown-warning-option "$file")
  n=$((n + 1))
  for a in "${args[@]}"; do
    a=${a//\\/\\\\}
    a=${a//\"/\\\"}
    a=${a// /\\ }
    printf '%s\n' "$a"
  done > "$tmp/$n.rsp"
  printf '%s\n' "$file" > "$tmp/$n.file"
done < <(jq -r --arg only "$only" '.[]
    | select(.file | test("/src/(node|client|transport|net|coordinator|remote|process)/[^/]+\\.cc$"))
    | select(.file | test("_test\\.cc$") | not)
    | select(.file | test($only))
    | .file + "\t" + .command' "$db" | sort -u)

if [ $n -eq 0 ]; then
  echo "check-thread-safety: no source files of the checked layers in $db" >&2
  exit 2
fi

export clangxx
launcher=$(command -v ccache || true)
export launcher
find "$tmp" -name '*.rsp' -print0 |
  xargs -0 -n 1 -P "$(nproc)" bash -c \
    'if ! $launcher "$clangxx" @"$1" > "${1%.rsp}.log" 2>&1; then touch "${1%.rsp}.fail"; fi' _

failed=0
for f in "$tmp"/*.fail; do
  [ -e "$f" ] || continue
  failed=$((failed + 1))
  echo "=== $(cat "${f%.fail}.file")"
  cat "${f%.fail}.log"
done
if [ $failed -ne 0 ]; then
  echo "check-thread-safety: $failed of $n files failed" >&2
  exit 1
fi
echo "check-thread-safety: $n files clean ($skipped see no lock)"
