#!/bin/sh
# The fleet at scale: NODES (4) simulated nodes publish CAPTURES (2000)
# captures of RANKS (8) ranks to a throwaway PostgreSQL, then a lab view
# serves them under wrk beside one node's own routes. See
# bench/bench_fleet.py for what is printed and the environment it reads.
set -eu
SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
export TRACED_BIN=${TRACED_BIN:-$SRC_DIR/build/traced}
export TRACES_DIR=${TRACES_DIR:-$SRC_DIR/../shared/traces}
[ -x "$TRACED_BIN" ] || make -C "$SRC_DIR"
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
exec python3 "$SRC_DIR/bench/bench_fleet.py"
