#!/bin/sh
# The suite in stages (`make test`, `make check`; docs/TESTS.md). Each stage
# prints its time and the load average, so that a run's log says where its
# time went and on how busy a machine.
#
#   suite.sh all      the release build; its tests while the sanitizer and
#                     fuzzer builds are made beside them (niced); the tests
#                     under ASan+UBSan (all but those labelled `waits` or
#                     `browser`), with ThreadSanitizer (scripts/tsan.sh) and
#                     the fuzzers (scripts/fuzz.sh) beside them at nice 5
#   suite.sh check    the release build and its tests not labelled `slow`
#   suite.sh release  the release build and all its tests
#   suite.sh asan     the ASan+UBSan build and its tests but `waits` and
#                     `browser`
#
# Env: BUILD (build), JOBS (cores: compile jobs), CTEST_JOBS (tests at once,
# twice the cores: most tests wait on processes and sockets, and those
# labelled `cpu` take two slots; tests/times.cmake).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
CTEST_JOBS=${CTEST_JOBS:-$((JOBS * 2))}

# took NAME T0: the line that says NAME took since T0 (date +%s), and the
# load after it.
took() {
  echo "suite: $1 $(($(date +%s) - $2)) s," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# stage NAME COMMAND...: runs it, then took(). Not nested: its variables
# are the shell's own, which a stage inside COMMAND would overwrite.
stage() {
  name=$1
  shift
  t0=$(date +%s)
  "$@"
  took "$name" "$t0"
}

# ctest_in DIR [ARGS...]: the tests, then the CPU they took in all
# (scripts/test_cpu.py's lines of this run, docs/TESTS.md "CPU"): beside
# the stage's wall, it says whether the stage was short of cores or of
# ctest's slots.
ctest_in() {
  dir=$1
  shift
  rm -f "$dir/Testing/cpu.txt"
  rc=0
  (cd "$dir" && ctest --output-on-failure -j "$CTEST_JOBS" "$@") || rc=$?
  [ ! -s "$dir/Testing/cpu.txt" ] ||
    awk '{ s += $2 + $3; n++ } END { printf "suite: %d tests, %.0f s of CPU\n",
      n, s }' "$dir/Testing/cpu.txt"
  return $rc
}

release_build() {
  # shellcheck disable=SC2086 # CMAKE_FLAGS: words
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRACED_TEST_CPU=ON ${CMAKE_FLAGS:-} >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
}

# The ASan+UBSan build's tests read the Python references' answers the
# release build's computed (tests/refcache.py: keyed by content).
asan_build() {
  case $BUILD in
  /*) refs=$BUILD/refcache ;;
  *) refs=$PWD/$BUILD/refcache ;;
  esac
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTRACED_SANITIZE=ON \
    -DTRACED_INFLATE=zlib -DTRACED_REF_CACHE="$refs" -DTRACED_TEST_CPU=ON \
    >/dev/null
  cmake --build build-asan -j "$JOBS"
}

# Tests that only wait on the simulator's clock gain nothing under the
# sanitizers; the rule is in docs/TESTS.md.
asan_tests() { ctest_in build-asan -LE 'waits|browser'; }

# The sanitizer builds one after the other (niced by the caller);
# build-asan/.built says the first is done.
sanitizer_builds() {
  rm -f build-asan/.built build-fuzz/.built
  asan_build
  touch build-asan/.built
  scripts/tsan.sh build
  scripts/fuzz.sh build
  touch build-fuzz/.built
}

# ThreadSanitizer's run and the fuzzers, once their builds are made (the
# sanitizer builds' process is $1): two fuzzers in turn on one core;
# ThreadSanitizer, then the third fuzzer, on the other. Started beside the
# ASan+UBSan tests at nice 5, they take the CPU those tests leave while
# they wait on processes and sockets (each fuzzer still fuzzes 60 s).
# A failed check's log is named in build-fuzz/late.failed; the suite tells
# it at its end (late_told), where a CI log's tail shows it.
late_checks() {
  rm -f build-fuzz/late.failed
  while [ ! -e build-fuzz/.built ] && kill -0 "$1" 2>/dev/null; do
    sleep 1
  done
  [ -e build-fuzz/.built ] || exit 1
  scripts/fuzz.sh run reader index >build-fuzz/fuzz.log 2>&1 &
  fuzz=$!
  scripts/tsan.sh >build-tsan/tsan.log 2>&1 ||
    { echo build-tsan/tsan.log >build-fuzz/late.failed; exit 1; }
  scripts/fuzz.sh run points >build-fuzz/fuzz-points.log 2>&1 ||
    { echo build-fuzz/fuzz-points.log >build-fuzz/late.failed; exit 1; }
  wait "$fuzz" || { echo build-fuzz/fuzz.log >build-fuzz/late.failed; exit 1; }
  grep -h "^tsan:\|Done [0-9]* runs" build-tsan/tsan.log build-fuzz/fuzz.log \
    build-fuzz/fuzz-points.log || true
}

# late_told PID: waits for the late checks; when one failed, its log, then
# the lines that say what failed (a sanitizer's or libFuzzer's summary, the
# input it wrote, in base64 when small, the file traced failed on) last.
late_told() {
  wait "$1" && return 0
  failed=$(cat build-fuzz/late.failed 2>/dev/null || echo build-fuzz/fuzz.log)
  cat "$failed"
  echo "suite: the late checks failed; from $failed:"
  grep -E "SUMMARY|ERROR|ALARM|Test unit written|^tsan: " "$failed" || true
  # A small input libFuzzer wrote, whole, to be replayed elsewhere.
  sed -n 's/.*Test unit written to \(.*\)/\1/p' "$failed" | while read -r unit; do
    [ "$(wc -c <"$unit")" -gt 2048 ] || echo "$unit: $(base64 -w 0 "$unit")"
  done
  return 1
}

all() {
  t_all=$(date +%s)
  log=$(mktemp /tmp/traced-suite-builds-XXXXXX)
  stage release-build release_build
  nice scripts/suite.sh sanitizer-builds >"$log" 2>&1 &
  builds=$!
  stage release-tests ctest_in "$BUILD"
  t0=$(date +%s)
  while [ ! -e build-asan/.built ] && kill -0 "$builds" 2>/dev/null; do
    sleep 1
  done
  [ -e build-asan/.built ] || { cat "$log"; exit 1; }
  echo "suite: waited $(($(date +%s) - t0)) s for the ASan build"
  nice -n 5 scripts/suite.sh late-checks "$builds" &
  late=$!
  stage asan-tests asan_tests
  wait "$builds" || { cat "$log"; exit 1; }
  rm -f "$log"
  stage tsan-and-fuzzers late_told "$late"
  took all "$t_all"
}

case "${1:-all}" in
all) all ;;
check)
  stage release-build release_build
  stage check-tests ctest_in "$BUILD" -LE slow
  ;;
release)
  stage release-build release_build
  stage release-tests ctest_in "$BUILD"
  ;;
asan)
  stage asan-build asan_build
  stage asan-tests asan_tests
  ;;
sanitizer-builds) sanitizer_builds ;;
late-checks) late_checks "$2" ;;
*)
  echo "usage: suite.sh [all|check|release|asan]" >&2
  exit 2
  ;;
esac
