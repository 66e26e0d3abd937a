#!/usr/bin/env bash
# Writes runs.dat and medians.dat from the runs' JSON (this directory and, for the eleventh
# session's arms, ../eleventh) and prints, per arm, the sorted ratios, their median and the
# pooled ratio (mean during / mean steady); then, for the old/new read-loop runs, the fresh WAL
# seeks per join and the longest drain read.
set -euo pipefail
cd "$(dirname "$0")"
arms="../eleventh/c30 ../eleventh/j30 r32 r16"
echo "# arm_index arm run steady during after ratio (ops/s in thousands)" > runs.dat
echo "# arm_index median_ratio" > medians.dat
i=0
for arm in $arms; do
  i=$((i + 1))
  for f in "$arm"-*.json; do
    run=${f#"$arm"-}; run=${run%.json}
    jq -r --arg i "$i" --arg arm "$(basename "$arm")" --arg run "$run" '.join |
      [$i, $arm, $run, (.steady.ops_per_s / 1000), (.during.ops_per_s / 1000),
       (.after.ops_per_s / 1000), .throughput_ratio] | @tsv' "$f"
  done | sort -n -k3 >> runs.dat
  awk -v i="$i" -v arm="$(basename "$arm")" '$1 == i { r[n++] = $7; s += $4; d += $5 }
    END {
      for (a = 0; a < n; a++) for (b = a + 1; b < n; b++) if (r[b] < r[a]) { t = r[a]; r[a] = r[b]; r[b] = t }
      m = n % 2 ? r[(n - 1) / 2] : (r[n / 2 - 1] + r[n / 2]) / 2
      printf "%s %.3f\n", i, m >> "medians.dat"
      line = ""; for (a = 0; a < n; a++) line = line sprintf(" %.2f", r[a])
      printf "%-5s runs %2d  sorted:%s  median %.2f  pooled %.2f\n", arm, n, line, m, d / s
    }' runs.dat
done
for arm in r16 r32; do
  printf "%s: balanced after (s), fence p99 (ms)\n" "$arm"
  for f in "$arm"-*.json; do jq -r '.join | "  \(.seconds_to_balanced * 10 | round / 10)\t\(.fence_p99_ms)"' "$f"; done
done
printf "read loop: run\tratio\twal_seeks\tlongest drain read (ms)\tfence p99 (ms)\n"
for f in old-*.json new-*.json; do
  [ -e "$f" ] || continue
  jq -r --arg f "${f%.json}" '.join | "\($f)\t\(.throughput_ratio * 100 | round / 100)\t\(.wal_seeks)\t\([.fence_phases[].drain_read_ms] | max)\t\(.fence_p99_ms)"' "$f"
done
