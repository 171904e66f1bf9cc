#!/bin/sh
# The verdicts' false-alarm and detection rates (docs/VERDICTS.md) on
# generated serving captures (tests/make_serving.py), each imported into
# a daemon and every pair judged over HTTP (tests/verdict_rates.py):
# same-build pairs, and one family slowed by each of SLOWDOWNS percent in
# every step; prints the rates and the smallest slowdown detected in at
# least 95% of the pairs.
# Env: TRACED_BIN (build/traced), PAIRS (100), SLOWDOWNS ("3 4 5 6 7 8 10"),
# FAMILY (moe; or gemm, attn, norm, act), TP (1), THRESHOLD (the daemon's
# regression_threshold_pct, 5), SEED (1), PAIRED (0; 1: the runs of a pair
# share their benchmark's seed, so their steps line up).
set -eu
cd "$(dirname "$0")/.."
BIN=${TRACED_BIN:-build/traced}
[ -x "$BIN" ] || { echo "bench: $BIN not built (make)" >&2; exit 2; }
TRACED_BIN=$(realpath "$BIN") python3 bench/bench_verdict.py
