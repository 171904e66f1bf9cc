#!/bin/sh
# Every rank of a capture at once: 1, 2 and 4 copies of the 1 GB rank
# (bench/out/big1.json.gz, made by bench_index.sh's generator unless it
# exists) indexed by one `traced index --jobs J` process, J = 1, 2, 4 (each
# file gets the cores / J threads, idx_options.threads). Prints the median
# wall of ROUNDS (5) runs of each, side by side, with its ratio to one copy
# and the speed-up over --jobs 1 (bench/bench.py).
# Env: TRACED_BIN (build/traced), BENCH_OUT (bench/out), BENCH_SOURCE, ROUNDS.
set -eu
cd "$(dirname "$0")/.."
BIN=${TRACED_BIN:-build/traced}
OUT=${BENCH_OUT:-bench/out}
SRC=${BENCH_SOURCE:-../shared/traces/tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz}

[ -x "$BIN" ] || { echo "bench: $BIN not built (make)" >&2; exit 2; }
mkdir -p "$OUT"
if [ ! -s "$OUT/big1.json.gz" ] || [ ! -s "$OUT/big1.json.gz.facts.json" ]; then
  python3 bench/make_big_trace.py --source "$SRC" --min-bytes 1000000000 \
    --out "$OUT/big1.json.gz"
fi
TRACED_BIN=$BIN python3 bench/bench.py scale "$OUT/big1.json.gz"
