#!/bin/sh
# Indexing speed and memory on big traces (issue 11's targets), in one run:
#   traced index (ISA-L build) <= 1.5 x `igzip -dc FILE >/dev/null` wall;
#   traced index (zlib build)  <= 1.2 x `zcat FILE >/dev/null` wall;
#   peak RSS < 32 MB on the 1 GB and on the 4 GB trace alike.
# Builds bench/out/big1.json.gz (>= 1 GB of JSON) and big4.json.gz (4x) from
# a real MI300X trace (bench/make_big_trace.py) unless they exist, and the
# zlib build in build-zlib unless TRACED_ZLIB_BIN names one; then runs all
# four side by side, ROUNDS (5) times, and prints medians (bench/bench.py).
# Env: TRACED_BIN (build/traced), TRACED_ZLIB_BIN, BENCH_OUT (bench/out),
# BENCH_SOURCE, ROUNDS, BENCH_PYTHON=1 (Python's json.load, once, slow).
set -eu
cd "$(dirname "$0")/.."
BIN=${TRACED_BIN:-build/traced}
OUT=${BENCH_OUT:-bench/out}
SRC=${BENCH_SOURCE:-../shared/traces/tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz}

[ -x "$BIN" ] || { echo "bench: $BIN not built (make)" >&2; exit 2; }
command -v igzip >/dev/null || { echo "bench: igzip missing (apt-get install isal)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: GNU time missing (apt-get install time)" >&2; exit 2; }
if [ -z "${TRACED_ZLIB_BIN:-}" ]; then
  cmake -S . -B build-zlib -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRACED_INFLATE=zlib >/dev/null
  cmake --build build-zlib -j2 --target traced >/dev/null
  TRACED_ZLIB_BIN=build-zlib/traced
fi
mkdir -p "$OUT"
avail_kb=$(df -Pk "$OUT" | awk 'NR == 2 { print $4 }')
if [ "$avail_kb" -lt 2000000 ]; then
  echo "bench: less than 2 GB free under $OUT" >&2
  exit 2
fi

make_trace() {  # make_trace NAME MIN_BYTES
  [ -s "$OUT/$1.json.gz" ] && [ -s "$OUT/$1.json.gz.facts.json" ] && return
  echo "bench: generating $OUT/$1.json.gz (>= $2 bytes of JSON)"
  python3 bench/make_big_trace.py --source "$SRC" --min-bytes "$2" \
    --out "$OUT/$1.json.gz"
}
make_trace big1 1000000000
make_trace big4 4000000000

TRACED_BIN=$BIN TRACED_ZLIB_BIN=$TRACED_ZLIB_BIN \
  python3 bench/bench.py index "$OUT/big1.json.gz" "$OUT/big4.json.gz"
