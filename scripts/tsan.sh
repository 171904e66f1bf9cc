#!/bin/sh
# The indexer's threads under ThreadSanitizer: builds `traced` with clang
# in build-tsan and runs `traced index` on every real trace (the graph
# pairs' run traces with their capture folders), on the generated
# critical-path traces (tests/make_cpath.py) and on several files at once
# (--jobs 2, the command line's workers). A file is indexed by the reader's
# two threads, then decode's walk and each closed step's analysis run
# beside the time pass (index/kit/agg_beside.c). Then a slice with its pump
# (test_slice_points quick). Exits non-zero on any report
# (TSan's exit status 66) or failure. `tsan.sh build` only builds
# (scripts/suite.sh builds beside other tests).
set -eu
cd "$(dirname "$0")/.."
BUILD=${TSAN_BUILD:-build-tsan}
TRACES=${TRACES_DIR:-../shared/traces}
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"
# clang 14's TSan refuses the memory layout of kernels that randomise
# mmap with more than 28 bits: without address randomisation it fits.
run() { setarch "$(uname -m)" -R "$@"; }

CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRACED_TSAN=ON >/dev/null
cmake --build "$BUILD" -j 2 --target traced test_slice_points
[ "${1:-}" = build ] && exit 0

gen=$(mktemp -d /tmp/traced-tsan-XXXXXX)
trap 'rm -rf "$gen"' EXIT
python3 -c 'import sys; sys.path.insert(0, "tests"); import make_cpath
make_cpath.generate(sys.argv[1])' "$gen" >/dev/null

n=0
for f in "$TRACES"/*.gz "$TRACES"/graph_pairs/*/*.json.gz "$gen"/*.json.gz; do
  [ -f "$f" ] || continue
  run "$BUILD/traced" index --threads 2 "$f" >/dev/null ||
    { echo "tsan: $f failed (status $?)" >&2; exit 1; }
  n=$((n + 1))
done
run "$BUILD/traced" index --jobs 2 --threads 2 "$gen"/*.json.gz >/dev/null ||
  { echo "tsan: --jobs 2 failed (status $?)" >&2; exit 1; }
# A slice's pump (index/slice/slice_feed.c): a thread inflating ahead of the
# parse, its ranges compared byte for byte with the whole file's slice.
TRACES_DIR=$TRACES run "$BUILD/tests/test_slice_points" quick >/dev/null ||
  { echo "tsan: test_slice_points failed (status $?)" >&2; exit 1; }
echo "tsan: $n files, one --jobs run and a slice's pump, no report"
