#!/usr/bin/env bash
# Writes runs.dat and medians.dat from the runs' JSON in this directory and prints, per arm, the
# sorted ratios, their median and the pooled ratio (mean during / mean steady).
set -euo pipefail
cd "$(dirname "$0")"
../../../../scripts/rebalance-arms.sh nice4 nice8 c1 c30 j30 jt30
