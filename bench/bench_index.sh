#!/bin/sh
# Indexing speed and memory on big traces (docs/BENCHMARKS.md), in one run:
#   traced index (ISA-L build) <= 1.5 x `igzip -dc FILE >/dev/null` wall,
#   and <= 2.5 x its CPU (user + system, every analysis included);
#   traced index (zlib build)  <= 1.2 x `zcat FILE >/dev/null` wall;
#   peak RSS <= 32 MB on the 1 GB and on the 4 GB trace alike.
# Builds bench/out/big1.json.gz (>= 1 GB of JSON) and big4.json.gz (4x)
# unless they exist (bench/setup.sh), and the zlib build in build-zlib
# unless TRACED_ZLIB_BIN names one; then runs all four side by side,
# ROUNDS (5) times, and prints medians (bench/bench.py).
# Env: as bench/setup.sh, TRACED_ZLIB_BIN, ROUNDS, BENCH_PYTHON=1 (Python's
# json.load on the 1 GB trace too: slow, 5 GB of memory), BENCH_BIG4=0 (the
# 1 GB trace alone: the 4 GB one takes minutes to make and to run),
# TRACED_BASE_BIN (another build taking turns: traced's ratios to it).
set -eu
. "$(dirname "$0")/setup.sh"
command -v igzip >/dev/null || { echo "bench: igzip missing (apt-get install isal)" >&2; exit 2; }
if [ -z "${TRACED_ZLIB_BIN:-}" ]; then
  cmake -S . -B build-zlib -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRACED_INFLATE=zlib >/dev/null
  cmake --build build-zlib -j2 --target traced >/dev/null
  TRACED_ZLIB_BIN=build-zlib/traced
fi
make_trace big1 1000000000
traces="$OUT/big1.json.gz"
if [ "${BENCH_BIG4:-1}" != 0 ]; then
  make_trace big4 4000000000
  traces="$traces $OUT/big4.json.gz"
fi
# shellcheck disable=SC2086 # the traces' paths, split on purpose
TRACED_BIN=$BIN TRACED_ZLIB_BIN=$TRACED_ZLIB_BIN \
  python3 bench/bench.py index $traces
