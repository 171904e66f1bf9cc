#!/bin/sh
# Slices of a 1 GB trace through the daemon (docs/BENCHMARKS.md):
# the daemon's peak RSS (VmHWM) under 64 MB while it streams a slice, the
# answer valid JSON holding exactly the window's events (counted from the
# generator's source trace and checked byte for byte; the whole span
# counted by a streaming parse). Builds bench/out/big1.json.gz unless it
# exists (bench/setup.sh), then runs bench/bench_slice.py.
# Env: as bench/setup.sh.
set -eu
. "$(dirname "$0")/setup.sh"
make_trace big1 1000000000
TRACED_BIN=$BIN BENCH_OUT=$OUT BENCH_SOURCE=$SRC python3 bench/bench_slice.py
