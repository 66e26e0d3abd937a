#!/usr/bin/env bash
# The queries of paper 000's Tables 2 and 3 with two first page sizes of a query in
# `rebalancing` (docs/results/client-side-sharding.md, "A larger first page in rebalancing"):
# `clientside_bench --ops Query1,Query2` with --rebalancing-first-page BEFORE and then AFTER, in
# alternation, ROUNDS times, so that both see the same load on the shared machine. Prints each
# round's paired overhead and statements per query, then the median paired overhead per table
# row and first page size.
# Usage: [ROUNDS=3] [BACKENDS="postgres embedded remote"] [BEFORE=256] [AFTER=1024] \
#        bench/clientside_first_page.sh BUILD_DIR
set -euo pipefail

build=${1:-build}
rounds=${ROUNDS:-3}
backends=${BACKENDS:-postgres embedded remote}
before=${BEFORE:-256}
after=${AFTER:-1024}
bench=$build/bench/clientside_bench
out=$(mktemp -d "${TMPDIR:-/tmp}/shoal-first-page-XXXXXX")
trap 'rm -rf "$out"' EXIT

# One run: "TABLE|OP|PAIRED|TRIPS" lines (TABLE = the heading of the table the row is in).
run() {  # BACKEND FIRST_PAGE
  local extra=()
  [ "$1" = postgres ] && extra=(--postgres-durability both)
  "$bench" --backend "$1" "${extra[@]}" --ops Query1,Query2 --repeats 21 \
    --rebalancing-first-page "$2" |
    awk -F'|' '/^###/ {sub(/^### /, ""); sub(/ \(median.*/, ""); table = $0}
               /^\| Query/ {gsub(/ /, "", $2); gsub(/ /, "", $6); gsub(/ /, "", $8);
                            print table "|" $2 "|" $6 "|" ($8 == "" ? "-" : $8)}'
}

for round in $(seq 1 "$rounds"); do
  for backend in $backends; do
    for page in "$before" "$after"; do
      run "$backend" "$page" | sed "s/^/$page|$round|/" >>"$out/rows"
    done
  done
done

echo "| first page | round | table | query | paired overhead | statements per query |"
echo "|---|---|---|---|---|---|"
awk -F'|' '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}' "$out/rows"
echo
echo "Median paired overhead over $rounds rounds:"
echo
echo "| table | query | first page $before | first page $after |"
echo "|---|---|---|---|"
awk -F'|' -v b="$before" -v a="$after" '
  { v = $5; sub(/%/, "", v); key = $3 "|" $4; vals[key, $1] = vals[key, $1] " " v
    if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
  function median(s,   arr, k, i, j, t) {
    k = split(s, arr, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (arr[j] + 0 < arr[i] + 0) {
      t = arr[i]; arr[i] = arr[j]; arr[j] = t }
    return arr[int((k + 1) / 2)]
  }
  END { for (i = 1; i <= n; i++) { split(order[i], p, "|")
          printf "| %s | %s | %+d%% | %+d%% |\n", p[1], p[2], median(vals[order[i], b]),
            median(vals[order[i], a]) } }' "$out/rows"
