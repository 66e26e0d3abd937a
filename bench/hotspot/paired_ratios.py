#!/usr/bin/env python3
"""Per-point spread of the paired ratios of hotspot_bench's throughput experiment.

Reads OUT_DIR/throughput.json (every run of every point) and writes OUT_DIR/paired.tsv, one
gnuplot block per node count: nodes, shards, runs, the median paired ratio (hot / independent of
runs that ran back to back), its first and third quartile, min and max, how many pairs reached
0.8, and the conflicts per successful update of each side. Prints the same as a markdown table.

Usage: paired_ratios.py OUT_DIR
"""
import json
import os
import statistics
import sys

TARGET = 0.8


def quartiles(values):
    """First quartile, median, third quartile (linear interpolation between closest ranks)."""
    s = sorted(values)

    def at(p):
        rank = p * (len(s) - 1)
        low = int(rank)
        high = min(low + 1, len(s) - 1)
        return s[low] + (s[high] - s[low]) * (rank - low)

    return at(0.25), statistics.median(s), at(0.75)


def conflicts_per_update(runs, side):
    succeeded = sum(r[side]["succeeded"] for r in runs)
    return sum(r[side]["conflicts"] for r in runs) / succeeded if succeeded else 0.0


def usage_per_update(runs, side):
    """CPU microseconds and voluntary context switches per successful update, if measured."""
    succeeded = sum(r[side]["succeeded"] for r in runs)
    if not succeeded or "cpu_s" not in runs[0][side]:
        return None
    return (1e6 * sum(r[side]["cpu_s"] for r in runs) / succeeded,
            sum(r[side]["voluntary_switches"] for r in runs) / succeeded)


def main(out_dir):
    with open(os.path.join(out_dir, "throughput.json")) as f:
        report = json.load(f)
    header = ("nodes\tshards\truns\tpaired_median\tpaired_q1\tpaired_q3\tpaired_min\tpaired_max"
              "\tpairs_at_target\thot_conflicts_per_update\tindependent_conflicts_per_update")
    blocks = {}
    rows = []
    for point in report["points"]:
        runs = point["runs"]
        ratios = [r["hot"]["votes_per_s"] / r["independent"]["votes_per_s"] for r in runs
                  if r["independent"]["votes_per_s"] > 0]
        q1, median, q3 = quartiles(ratios)
        row = (point["nodes"], point["shards"], len(ratios), median, q1, q3, min(ratios),
               max(ratios), sum(1 for x in ratios if x >= TARGET),
               conflicts_per_update(runs, "hot"), conflicts_per_update(runs, "independent"))
        rows.append(row)
        blocks.setdefault(point["nodes"], []).append(
            "{}\t{}\t{}\t{:.4f}\t{:.4f}\t{:.4f}\t{:.4f}\t{:.4f}\t{}\t{:.4f}\t{:.4f}".format(*row))
    with open(os.path.join(out_dir, "paired.tsv"), "w") as f:
        f.write("# " + header + "\n")
        f.write("\n\n\n".join("\n".join(lines) for lines in blocks.values()) + "\n")
    print("| nodes | S | pairs | median paired ratio | IQR | min – max | pairs ≥ 0.8 "
          "| conflicts / update hot | independent |")
    print("|---:|---:|---:|---:|---|---|---:|---:|---:|")
    for nodes, shards, n, median, q1, q3, lo, hi, met, hot_c, ind_c in rows:
        mark = "" if median >= TARGET else " **(< 0.8)**"
        print(f"| {nodes} | {shards} | {n} | {median:.2f}{mark} | {q1:.2f} – {q3:.2f} "
              f"| {lo:.2f} – {hi:.2f} | {met}/{n} | {hot_c:.3f} | {ind_c:.3f} |")
    usage = [(p["nodes"], p["shards"], usage_per_update(p["runs"], "hot"),
              usage_per_update(p["runs"], "independent")) for p in report["points"]]
    if all(hot is not None for _, _, hot, _ in usage):
        print("\n| nodes | S | CPU µs / update hot | independent | blocking switches / update hot "
              "| independent |")
        print("|---:|---:|---:|---:|---:|---:|")
        for nodes, shards, hot, ind in usage:
            print(f"| {nodes} | {shards} | {hot[0]:.1f} | {ind[0]:.1f} | {hot[1]:.3f} | {ind[1]:.3f} |")
    below = [(row[0], row[1]) for row in rows if row[3] < TARGET]
    print(f"\nmedian paired ratio >= {TARGET}: {len(rows) - len(below)} of {len(rows)} points"
          + (f"; below: {below}" if below else ""))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
