# Sourced by bench_index.sh and bench_scale.sh: the build to measure, the
# folder of the big traces, and make_trace NAME MIN_BYTES, which builds
# $OUT/NAME.json.gz (>= MIN_BYTES of JSON) from a real MI300X trace
# (bench/make_big_trace.py) unless it exists.
# Env: TRACED_BIN (build/traced), BENCH_OUT (bench/out), BENCH_SOURCE.
cd "$(dirname "$0")/.."
BIN=${TRACED_BIN:-build/traced}
OUT=${BENCH_OUT:-bench/out}
SRC=${BENCH_SOURCE:-../shared/traces/tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz}

[ -x "$BIN" ] || { echo "bench: $BIN not built (make)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: GNU time missing (apt-get install time)" >&2; exit 2; }
mkdir -p "$OUT"

make_trace() {  # make_trace NAME MIN_BYTES
  [ -s "$OUT/$1.json.gz" ] && [ -s "$OUT/$1.json.gz.facts.json" ] && return
  avail_kb=$(df -Pk "$OUT" | awk 'NR == 2 { print $4 }')
  if [ "$avail_kb" -lt $(($2 / 1024 / 8)) ]; then
    echo "bench: not enough room under $OUT for $1" >&2
    exit 2
  fi
  echo "bench: generating $OUT/$1.json.gz (>= $2 bytes of JSON)"
  python3 bench/make_big_trace.py --source "$SRC" --min-bytes "$2" \
    --out "$OUT/$1.json.gz"
}
