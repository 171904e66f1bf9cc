#!/bin/sh
# Builds the libFuzzer targets in build-fuzz with clang, ASan and UBSan:
# the trace reader's (tests/fuzz_reader.c; its corpus the first 64 KiB of
# the real traces) and the indexer's past the reader (tests/fuzz_index.c;
# its corpus small whole traces, tests/fuzz_index_seeds.py), and the
# access points file's with a slice made from it (tests/fuzz_points.c;
# its seed a small real trace's own points), and fuzzes each for
# FUZZ_SECONDS (60). Exits non-zero when a fuzzer finds a crash, a leak or
# a hang. `fuzz.sh build` only builds (scripts/suite.sh builds beside
# other tests); `fuzz.sh run TARGET...` (reader, index, points) fuzzes
# those without building, so that scripts/suite.sh runs them on both
# cores at once.
set -eu
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD:-build-fuzz}
SECS=${FUZZ_SECONDS:-60}
TRACES=${TRACES_DIR:-../shared/traces}

targets="reader index points"
if [ "${1:-}" = run ]; then
  shift
  targets=$*
else
  CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRACED_FUZZ=ON -DTRACED_SANITIZE=ON -DTRACED_INFLATE=zlib >/dev/null
  cmake --build "$BUILD" -j 2 --target fuzz_reader fuzz_index fuzz_points
  [ "${1:-}" = build ] && exit 0
fi

# The first 64 KiB of each real trace and the edge cases: the reader's
# corpus, and the indexer's edge cases.
reader_corpus() {
  corpus=$BUILD/fuzz-corpus
  mkdir -p "$corpus"
  for f in "$TRACES"/*.gz; do
    seed=$corpus/$(basename "$f" .gz)
    [ -s "$seed" ] || { zcat "$f" | head -c 65536 >"$seed" || true; }
  done
  printf '[{"ph":"X","ts":1.5e3,"dur":"2","args":{"co_id":1}},1,]' \
    >"$corpus/bare_array"
  # The times at the edges of docs/TRACE_FORMATS.md's range and of int64.
  edges='{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,'
  edges=$edges'"ts":9223372036854775.807,"dur":1},{"ph":"X","cat":"kernel",'
  edges=$edges'"name":"k","pid":0,"tid":7,"ts":0,"dur":1e20},{"ph":"X",'
  edges=$edges'"cat":"gpu_user_annotation","name":"decode[bs=1 tok=1]","pid":0,'
  edges=$edges'"tid":7,"ts":0,"dur":1125899906842.623},{"ph":"X","cat":"kernel",'
  edges=$edges'"name":"k","pid":0,"tid":7,"ts":4611686018427387.903,"dur":0}]}'
  printf '%s' "$edges" >"$corpus/time_edges"
}

# Every fuzzer but the points file's takes the dictionary of the trace's
# keys and edge values (tests/data/fuzz.dict).
fuzz() {  # fuzz TARGET ARTIFACT_PREFIX CORPUS [ARGS...]
  t=$1 p=$2 c=$3
  shift 3
  "$BUILD/tests/$t" -max_total_time="$SECS" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$BUILD/$p" \
    "$@" "$c"
}

index_run() {
  icorpus=$BUILD/fuzz-index-corpus
  [ -d "$icorpus" ] || python3 tests/fuzz_index_seeds.py "$TRACES" "$icorpus"
  cp "$corpus/time_edges" "$icorpus/time_edges"
  fuzz fuzz_index index- "$icorpus" -dict=tests/data/fuzz.dict
}

points_run() {
  pcorpus=$BUILD/fuzz-points-corpus
  FUZZ_POINTS_TRACE=$TRACES/hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz
  export FUZZ_POINTS_TRACE
  mkdir -p "$pcorpus"
  [ -s "$pcorpus/seed" ] ||
    FUZZ_POINTS_SEED=$pcorpus/seed "$BUILD/tests/fuzz_points" 2>/dev/null
  fuzz fuzz_points points- "$pcorpus"
}

case " $targets " in
*" reader "* | *" index "*) reader_corpus ;;
esac
for t in $targets; do
  case $t in
  reader) fuzz fuzz_reader "" "$corpus" -dict=tests/data/fuzz.dict ;;
  index) index_run ;;
  points) points_run ;;
  *)
    echo "fuzz.sh: no fuzzer $t (reader, index, points)" >&2
    exit 2
    ;;
  esac
done
