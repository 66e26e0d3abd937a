#!/usr/bin/env bash
# Summarizes rebalance_bench runs by arm: writes runs.dat and medians.dat in the current
# directory (for a results directory's plot.gp) and prints, per arm, the sorted throughput
# ratios (during / steady), their median and the pooled ratio (mean during / mean steady).
#
# Usage: scripts/rebalance-arms.sh ARM...   (from a results directory; ARM is a path prefix:
#        the runs of arm "j30" are j30-*.json, of "../eleventh/c30" ../eleventh/c30-*.json)
set -euo pipefail
echo "# arm_index arm run steady during after ratio (ops/s in thousands)" > runs.dat
echo "# arm_index median_ratio" > medians.dat
i=0
for arm in "$@"; do
  i=$((i + 1))
  name=$(basename "$arm")
  for f in "$arm"-*.json; do
    run=${f#"$arm"-}; run=${run%.json}
    jq -r --arg i "$i" --arg arm "$name" --arg run "$run" '.join |
      [$i, $arm, $run, (.steady.ops_per_s / 1000), (.during.ops_per_s / 1000),
       (.after.ops_per_s / 1000), .throughput_ratio] | @tsv' "$f"
  done | sort -n -k3 >> runs.dat
  awk -v i="$i" -v arm="$name" '$1 == i { r[n++] = $7; s += $4; d += $5 }
    END {
      for (a = 0; a < n; a++) for (b = a + 1; b < n; b++) if (r[b] < r[a]) { t = r[a]; r[a] = r[b]; r[b] = t }
      m = n % 2 ? r[(n - 1) / 2] : (r[n / 2 - 1] + r[n / 2]) / 2
      printf "%s %.3f\n", i, m >> "medians.dat"
      line = ""; for (a = 0; a < n; a++) line = line sprintf(" %.2f", r[a])
      printf "%-6s runs %2d  sorted:%s  median %.2f  pooled %.2f\n", arm, n, line, m, d / s
    }' runs.dat
done
