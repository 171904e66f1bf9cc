#!/bin/sh
# Proves that no answer changed between two builds, or lists exactly which
# did: every `traced index` output and every GET route's answer (read from
# api/openapi.yaml) of a daemon that imported every trace of
# ../shared/traces and the project's generated traces (tests/answers.py
# says which requests), byte for byte, for A and for B.
#
#   scripts/compare_answers.sh [A [B]]
#
# A and B: a git revision (built from `git archive` into
# $ANSWERS_BUILDS/<commit>, kept for the next run), a path to a traced
# binary, or "." for this working tree (built in build/). Defaults: A the
# parent of HEAD, B ".". The routes asked are B's spec's (a route new in B
# shows as changed: A refused it). Prints each difference, then "answers
# identical on N traces, M routes" or how many differ; exits 1 when some
# differ. The dumps stay in $ANSWERS_OUT (a temporary folder by default) for
# `python3 tests/answers.py compare A B` or `zcat`.
# Env: ANSWERS_BUILDS (build-answers), ANSWERS_OUT, TRACES_DIR.
set -eu
cd "$(dirname "$0")/.."
A=${1:-HEAD~1}
B=${2:-.}
BUILDS=${ANSWERS_BUILDS:-build-answers}
OUT=${ANSWERS_OUT:-$(mktemp -d /tmp/traced-answers-XXXXXX)}
mkdir -p "$BUILDS" "$OUT"

# binary_of REV: the traced binary of REV (built when needed), on stdout.
binary_of() {
  if [ "$1" = . ]; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    nice cmake --build build -j2 --target traced >&2
    echo build/traced
    return
  fi
  if [ -f "$1" ] && [ -x "$1" ]; then
    echo "$1"
    return
  fi
  sha=$(git rev-parse --verify "$1^{commit}")
  dir=$BUILDS/$sha
  if [ ! -x "$dir/build/traced" ]; then
    echo "answers: building $1 ($sha) in $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir/src"
    git archive "$sha" | tar -x -C "$dir/src"
    cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      >/dev/null
    nice cmake --build "$dir/build" -j2 --target traced >&2
  fi
  echo "$dir/build/traced"
}

# spec_of REV: B's api/openapi.yaml, into $OUT/openapi.json.
spec_of() {
  if [ "$1" = . ] || { [ -f "$1" ] && [ -x "$1" ]; }; then
    cp api/openapi.yaml "$OUT/openapi.json"
  else
    git show "$1:api/openapi.yaml" >"$OUT/openapi.json"
  fi
}

bin_a=$(binary_of "$A")
bin_b=$(binary_of "$B")
spec_of "$B"
rm -rf "$OUT/a" "$OUT/b" "$OUT/generated"
python3 tests/answers.py generate "$OUT/generated"
for side in a b; do
  if [ $side = a ]; then bin=$bin_a; else bin=$bin_b; fi
  echo "answers: $side = $bin" >&2
  nice python3 tests/answers.py dump --bin "$bin" --out "$OUT/$side" \
    --spec "$OUT/openapi.json" --extra "$OUT/generated" >&2
done
python3 tests/answers.py compare "$OUT/a" "$OUT/b"
