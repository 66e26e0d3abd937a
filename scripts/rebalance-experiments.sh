#!/usr/bin/env bash
# Reproduces docs/results/rebalance.md: runs bench/cluster/rebalance_bench (a 3-node embedded
# cluster gains a 4th node under a steady client workload), keeps the raw JSON and timelines under
# docs/results/rebalance/, writes the median tables and draws the PNG plots.
#
# Usage: scripts/rebalance-experiments.sh [path/to/rebalance_bench]
#   MB=1024     full data size in MiB (MB/4 is run too, for the first-serve time)
#   RUNS=3      repetitions (FIRST_RUN=k starts numbering at k)
#   CONFIGS="dynamic:1024:baselines static:1024 dynamic:256"  variant:MiB[:baselines], run in
#               this order within each repetition
#   PLOTS_ONLY=1     redraw tables and plots from the existing files
#   OUT=dir          where the files go (default docs/results/rebalance)
#   FLAGS="..."      more rebalance_bench flags for every run (e.g. --moves-per-node=2)
# Build: cmake -S . -B build-rebal -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
#        cmake --build build-rebal -j2 --target rebalance_bench
set -euo pipefail
bench="${1:-build-rebal/bench/cluster/rebalance_bench}"
mb="${MB:-1024}"
quarter=$((mb / 4))
runs="${RUNS:-3}"
out="${OUT:-docs/results/rebalance}"
dir="${BENCH_DIR:-/tmp/shoal-rebalance-bench}"
mkdir -p "$out"

if [ "${PLOTS_ONLY:-0}" != 1 ]; then
  # Each configuration is variant:MiB[:baselines]; repetitions interleave the configurations.
  configs="${CONFIGS:-dynamic:$mb:baselines static:$mb dynamic:$quarter}"
  for run in $(seq "${FIRST_RUN:-1}" "$runs"); do
    for cfg in $configs; do
      IFS=: read -r variant size with <<<"$cfg"
      extra=()
      [ "${with:-}" = baselines ] && extra=(--baselines)
      echo "== run $run: $variant, $size MiB ${extra[*]:-}" >&2
      # shellcheck disable=SC2086  # FLAGS is a list of words
      "$bench" --variant="$variant" --mb="$size" --dir="$dir" "${extra[@]}" ${FLAGS:-} \
          --timeline="$out/timeline-$variant-$size-$run.tsv" \
          > "$out/$variant-$size-$run.json" || echo "== exit status $?" >&2
    done
  done
fi

# --- Median tables (jq; the median of an even count is the lower middle). ---
median() {  # median <jq path> <files...>
  local path="$1"; shift
  jq -s "[.[] | $path] | map(select(. != null)) | sort | .[(length - 1) / 2 | floor]" "$@"
}
summary="$out/summary.txt"
{
  for prefix in $(ls "$out"/*.json | sed 's/-[0-9]*\.json$//' | sort -u); do
    files=()
    for f in "$prefix"-*.json; do [ -s "$f" ] && files+=("$f"); done
    [ "${#files[@]}" -gt 0 ] || continue
    printf '%s (%d runs):' "$(basename "$prefix")" "${#files[@]}"
    for field in .load.stored_bytes .load.buckets .join.seconds_to_balanced .join.bytes_moved \
                 .join.optimal_bytes .join.moves_committed .join.moves_aborted \
                 .join.first_serve_ms .join.fence_p99_ms .join.fence_max_ms \
                 .join.steady.ops_per_s .join.during.ops_per_s .join.throughput_ratio \
                 .join.after.ops_per_s .join.steady.p99_ms .join.during.p99_ms .join.p99_ratio \
                 .join.steady.max_ms .join.during.max_ms .join.buckets_after .join.errors \
                 .load.seconds; do
      printf ' %s=%s' "${field#.}" "$(median "$field" "${files[@]}")"
    done
    printf '\n'
  done
  for f in "$out"/*.json; do
    if [ -s "$f" ] && jq -e '.split_move' "$f" > /dev/null; then
      printf '%s: balancer %s s, %s bytes; split-move %s s, %s bytes; rehash %s s, %s bytes\n' \
          "$(basename "$f")" "$(jq .join.seconds_to_balanced "$f")" "$(jq .join.bytes_moved "$f")" \
          "$(jq .split_move.seconds "$f")" "$(jq .split_move.bytes_copied "$f")" \
          "$(jq .rehash.seconds "$f")" "$(jq .rehash.bytes_copied "$f")"
    fi
  done
} > "$summary"
cat "$summary"

have_static=0
ls "$out/static-$mb"-*.json > /dev/null 2>&1 && have_static=1
if [ "$have_static" = 1 ]; then
# Bar data for the time plot: the first run with baselines.
bars="$out/times.dat"
first=""
for f in "$out/dynamic-$mb"-*.json; do
  if [ -z "$first" ] && [ -s "$f" ] && jq -e '.split_move' "$f" > /dev/null; then first="$f"; fi
done
{
  echo "# variant seconds moved_mib"
  echo "\"dynamic (a)\" $(median .join.seconds_to_balanced "$out/dynamic-$mb"-*.json) \
$(median '.join.bytes_moved / 1048576' "$out/dynamic-$mb"-*.json)"
  echo "\"static 256 (b)\" $(median .join.seconds_to_balanced "$out/static-$mb"-*.json) \
$(median '.join.bytes_moved / 1048576' "$out/static-$mb"-*.json)"
  if [ -n "$first" ]; then
    echo "\"rehash (c)\" $(jq .rehash.seconds "$first") $(jq '.rehash.bytes_copied / 1048576' "$first")"
    echo "\"key-by-key (d)\" $(jq .split_move.seconds "$first") \
$(jq '.split_move.bytes_copied / 1048576' "$first")"
  fi
} > "$bars"
fi

# --- Plots. ---
# One timeline plot per data size: the first run of the dynamic variant.
for timeline in "$out"/timeline-dynamic-*-1.tsv; do
  [ -s "$timeline" ] || continue
  size=$(basename "$timeline" .tsv | cut -d- -f3)
  gnuplot <<GP
set terminal pngcairo size 900,500 font ",10"
set output "$out/timeline-$size.png"
set title "Node 4 joins 3 nodes ($size MiB, dynamic buckets): client ops/s and MiB moved, per 100 ms"
set xlabel "seconds since AddNode"
set ylabel "client ops/s (4 threads, 50% get / 50% upsert)"
set y2label "cumulative MiB moved"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key top left
set grid
plot "$timeline" using 1:2 with lines lw 1 lc rgb "#1f77b4" title "ops/s", \
     "$timeline" using 1:3 axes x1y2 with steps lw 2 lc rgb "#d62728" title "MiB moved"
GP
done

if [ "$have_static" != 1 ]; then
  echo "wrote $out/timeline-*.png $summary (no static runs: no times.png)" >&2
  exit 0
fi
gnuplot <<GP
set terminal pngcairo size 800,450 font ",10"
set output "$out/times.png"
set title "Adding a 4th node to 3 ($mb MiB): wall time, under the same client workload"
set style data histogram
set style fill solid 0.8 border -1
set boxwidth 0.7
set ylabel "seconds"
set y2label "MiB moved or copied"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set grid ytics
set style histogram clustered gap 1
plot "$bars" using 2:xtic(1) title "wall time (s)" lc rgb "#1f77b4", \
     "" using 3 axes x1y2 title "MiB moved / copied" lc rgb "#ff7f0e"
GP
echo "wrote $out/timeline-*.png $out/times.png $summary" >&2
