#!/bin/sh
# What the critical path costs the indexer (docs/CRITICAL_PATH.md,
# docs/BENCHMARKS.md), in one run: `traced index` of the 1 GB rank against
# the same command of a build without it (BASE_REV, default the main
# commit the critical path was merged onto), target <= 1.15x its wall
# time and peak RSS < 48 MB; beside it, Holistic Trace Analysis'
# critical_path_analysis on the source trace (and with HTA_BIG=1 on the
# 1 GB rank too), time and peak RSS.
# Builds bench/out/big1.json.gz unless it exists (bench/setup.sh), and the
# baseline in $OUT/base-build from `git archive BASE_REV` unless
# TRACED_BASE_BIN names one; then runs bench/bench.py cpath.
# Env: as bench/setup.sh, TRACED_BASE_BIN, BASE_REV, ROUNDS (5), HTA_BIG,
# HTA_TIMEOUT (seconds, 1800), TRACED_HTA_SRC / TRACED_HTA_REPO (as
# tests/test_cpath_hta.py).
set -eu
. "$(dirname "$0")/setup.sh"
make_trace big1 1000000000
if [ -z "${TRACED_BASE_BIN:-}" ]; then
  # The merge that brought index/cpath/cpath.c into main, its first parent.
  rev=${BASE_REV:-$(git log --first-parent --diff-filter=A --format=%H -1 \
    -- index/cpath/cpath.c)^1}
  rm -rf "$OUT/base-src"
  mkdir -p "$OUT/base-src"
  git archive "$rev" | tar -x -C "$OUT/base-src"
  cmake -S "$OUT/base-src" -B "$OUT/base-build" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$OUT/base-build" -j2 --target traced >/dev/null
  TRACED_BASE_BIN=$OUT/base-build/traced
fi
TRACED_BIN=$BIN TRACED_BASE_BIN=$TRACED_BASE_BIN \
  python3 bench/bench.py cpath "$OUT/big1.json.gz" "$SRC"
