#!/bin/sh
# HTTP API throughput while the daemon indexes a big import.
#
# Starts build/traced (or $TRACED_BIN) with an import root, imports a small
# multi-rank folder of real traces and waits for it, then starts the import
# of a >= 1 GB (uncompressed) kineto trace laid out as $BIG_RANKS ranks and,
# while that indexes, runs wrk (32 connections, $SECONDS_EACH s) on
#   GET /captures/<id>                  (the capture object, with its ranks)
#   GET /captures/<id>/kernels?limit=50 (all ranks summed)
# of the small, already indexed import, then restarts the daemon without
# its answer cache (answer_cache_mb = 0: the big import resumes, as after
# any restart) and runs
#   GET /captures/<id>/kernels?limit=N  (a new N each request, uncached:
#                                        the sums' row)
# Prints req/s, p99 latency and errors of each run. Targets: >= 2000
# req/s, p99 <= 20 ms, no errors; the uncached row >= 5000 req/s, p99 <
# 20 ms.
#
# The big trace (bench/make_big_trace.py: a real trace's events repeated,
# shifted in time, to 1.1 GB of JSON) is kept in $BENCH_DIR for the next
# run.
set -eu

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
TRACES_DIR=${TRACES_DIR:-$SRC_DIR/../shared/traces}
TRACED_BIN=${TRACED_BIN:-$SRC_DIR/build/traced}
BENCH_DIR=${BENCH_DIR:-/tmp/traced-bench-api}
SECONDS_EACH=${SECONDS_EACH:-15}
BIG_RANKS=${BIG_RANKS:-24}
PORT=${PORT:-17731}
BASE=http://127.0.0.1:$PORT

[ -x "$TRACED_BIN" ] || make -C "$SRC_DIR"
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }

BIG=$BENCH_DIR/big.pt.trace.json.gz
RUN=$BENCH_DIR/run
rm -rf "$RUN"
mkdir -p "$RUN/imports" "$BENCH_DIR"

# ---- the big trace (bench/make_big_trace.py repeats a real one) ----
SEED=$TRACES_DIR/tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0
if [ ! -s "$BIG" ]; then
  python3 "$SRC_DIR/bench/make_big_trace.py" --min-bytes 1100000000 \
    --source "$SEED.json.gz" --out "$BIG"
fi
echo "big trace: $(du -h "$BIG" | cut -f1) gzip"

# ---- the daemon ----
cat >"$RUN/traced.conf" <<EOF
listen = 127.0.0.1:$PORT
db = $RUN/traced.db
trace_root = $RUN/traces
import_roots = $BENCH_DIR
atom_scripts = $RUN/no-atom-here
index_jobs = 2
EOF
# $@: extra --key value arguments.
start_daemon() {
  "$TRACED_BIN" --config "$RUN/traced.conf" "$@" >>"$RUN/daemon.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 100); do
    curl -sf "$BASE/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
}
start_daemon
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT INT TERM

# POST /imports; prints the new id.
import_path() {
  curl -sf -X POST -H 'Content-Type: application/json' \
    -d "{\"path\": \"$1\"}" "$BASE/imports" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}

status_of() {
  curl -sf "$BASE/captures/$1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])'
}

wait_done() {
  while :; do
    s=$(status_of "$1")
    case $s in
      done) return 0 ;;
      failed|cancelled|interrupted) echo "import $1: $s" >&2; exit 1 ;;
    esac
    sleep 0.2
  done
}

i=0
for f in tracelens__mi210_gpu_only_trace.json.gz \
         tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz \
         tracelens__mi300_resnet_act_checkpoint.json.gz \
         hta__ns_resolution_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz; do
  mkdir -p "$RUN/imports/small/rank_$i"
  cp "$TRACES_DIR/$f" "$RUN/imports/small/rank_$i/t.pt.trace.json.gz"
  i=$((i + 1))
done
SMALL=$(import_path "$RUN/imports/small")
wait_done "$SMALL"
echo "indexed import $SMALL (4 ranks of real traces)"

for r in $(seq 0 $((BIG_RANKS - 1))); do
  mkdir -p "$RUN/imports/big/rank_$r"
  # A hard link: traced follows no symbolic link in a trace folder.
  ln "$BIG" "$RUN/imports/big/rank_$r/big.pt.trace.json.gz" 2>/dev/null ||
    cp "$BIG" "$RUN/imports/big/rank_$r/big.pt.trace.json.gz"
done
BIGID=$(import_path "$RUN/imports/big")
START=$(date +%s)
echo "import $BIGID started ($BIG_RANKS ranks of the big trace)"

# wrk's summary: req/s, p99, errors (socket errors and non-2xx answers).
# $2: a wrk Lua script (optional).
run_wrk() {
  out=$(wrk -t 4 -c 32 -d "${SECONDS_EACH}s" --latency ${2:+-s "$2"} \
    "$BASE$1")
  rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
  p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  sock=$(echo "$out" | awk '/Socket errors/ {print $0}')
  printf '%-40s %10s req/s  p99 %8s  non-2xx %s  %s\n' \
    "GET $1${2:+?limit=(new)}" "$rps" \
    "$p99" "${non2xx:-0}" "${sock:-socket errors: none}"
}

run_wrk "/captures/$SMALL"
echo "  (import $BIGID was $(status_of "$BIGID") at the end)"
run_wrk "/captures/$SMALL/kernels?limit=50"
echo "  (import $BIGID was $(status_of "$BIGID") at the end)"
# Answers about done captures are kept in memory (api/cache.c), so the
# runs above mostly measure that. The store's own cost: the daemon again
# without the cache (the big import resumes where it was), each request (of
# the 4 wrk threads) with a limit (1..1000, table_limit_max) of its own.
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null || true
start_daemon --answer-cache-mb 0
for _ in $(seq 100); do
  [ "$(status_of "$BIGID")" = running ] && break
  sleep 0.1
done
echo "restarted without the answer cache; import $BIGID $(status_of "$BIGID")"
cat >"$RUN/distinct.lua" <<EOF
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local n = 0
function request()
  n = n + 1
  return wrk.format(nil, "/captures/$SMALL/kernels?limit="
                    .. ((n * 4 + tid) % 1000 + 1))
end
EOF
run_wrk "/captures/$SMALL/kernels" "$RUN/distinct.lua"
echo "  (import $BIGID was $(status_of "$BIGID") at the end)"
wait_done "$BIGID"
echo "import $BIGID done in $(( $(date +%s) - START )) s"
curl -sf "$BASE/metrics" | grep -E '^traced_(index|ranks)'
