#!/usr/bin/env python3
"""Prints the medians of storage_ops_bench as a markdown table with ratios against raw RocksDB.

Usage: storage_ops_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
         --benchmark_out=ops.json --benchmark_out_format=json
       ops_ratios.py ops.json
"""
import json
import re
import sys


def main(path):
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    medians = {}
    for run in runs:
        if run.get("aggregate_name") != "median":
            continue
        # BM_Store/insert/100/iterations:100000/real_time/threads:1_median
        m = re.match(r"BM_(\w+)/(\w+)/(\d+)/.*threads:(\d+)", run["name"])
        if not m:
            continue
        kind, op, size, threads = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        medians[(kind, op, size, threads)] = run
    print("| op | doc | threads | store ops/s | p50 / p99 µs | raw ops/s | store/raw "
          "| raw get+put ops/s | store/(get+put) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (kind, op, size, threads), store in sorted(medians.items()):
        if kind != "Store":
            continue
        raw = medians.get(("Raw", op, size, threads))
        rmw = medians.get(("Raw", op + "_rmw", size, threads))
        s = store["items_per_second"]
        row = [op, f"{size} B", str(threads), f"{s / 1e3:.1f}k",
               f"{store['p50_us']:.1f} / {store['p99_us']:.1f}"]
        if raw:
            row += [f"{raw['items_per_second'] / 1e3:.1f}k", f"{s / raw['items_per_second']:.2f}"]
        else:
            row += ["", ""]
        if rmw:
            row += [f"{rmw['items_per_second'] / 1e3:.1f}k", f"{s / rmw['items_per_second']:.2f}"]
        else:
            row += ["", ""]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
