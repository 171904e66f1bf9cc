#!/bin/sh
# Slices of a 4 GB trace with its access points file and without it
# (today's whole-file path), in one run, as ratios (docs/BENCHMARKS.md,
# "Slices from access points"): a 1 ms window, a phase against inflating
# just the bytes it read, the whole span; every answer the same bytes by
# both paths. Builds bench/out/big4.json.gz unless it exists
# (bench/setup.sh; ~4 minutes, ~270 MB), then runs
# bench/bench_slice_points.py. Exits non-zero on a wrong answer, not on a
# missed speed target (printed).
# Env: as bench/setup.sh, and ROUNDS (5).
set -eu
. "$(dirname "$0")/setup.sh"
make_trace big4 4000000000
TRACED_BIN=$BIN BENCH_OUT=$OUT BENCH_SOURCE=$SRC \
  python3 bench/bench_slice_points.py
