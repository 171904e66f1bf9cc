#!/bin/sh
# What "mark_trace": true costs on the ATOM simulator (docs/DECODE.md,
# "Cost"): captures with and without it, alternated, phase by phase; the
# capture traces' bytes; one rank's indexing with and without them.
# Env: TRACED_BIN (build/traced), ROUNDS (3).
set -eu
cd "$(dirname "$0")/.."
BIN=${TRACED_BIN:-build/traced}
[ -x "$BIN" ] || { echo "bench: $BIN not built (make)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: GNU time missing (apt-get install time)" >&2; exit 2; }
TRACED_BIN=$(realpath "$BIN") SRC_DIR=$(pwd) python3 bench/bench_mark_trace.py
