#!/bin/sh
# Every rank of a capture at once: 1, 2 and 4 copies of the 1 GB rank
# (bench/out/big1.json.gz, bench/setup.sh) indexed by one `traced index
# --jobs J` process, J = 1, 2, 4, each file with the cores / J threads
# (idx_options.threads; the daemon passes cores / index_jobs), and --jobs 2
# with 2 threads a file as well (what oversubscribing costs). Prints the
# median wall of ROUNDS (5) runs of each, side by side, with its ratio to
# one copy and the speed-up over --jobs 1 (bench/bench.py).
# Env: as bench/setup.sh, ROUNDS.
set -eu
. "$(dirname "$0")/setup.sh"
make_trace big1 1000000000
TRACED_BIN=$BIN python3 bench/bench.py scale "$OUT/big1.json.gz"
