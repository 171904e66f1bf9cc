#!/bin/sh
# What ATOM_PROFILER_MORE=1 costs to index, in one run (docs/PERF.md,
# "Cost"): bench/'s MORE trace (bench/make_big_trace.py's copies of the
# H100 trace, which kineto took with record_shapes, with_stack and
# profile_memory: CPU ops with shapes, Python frames, [memory] events)
# indexed by this traced (op groups, memory, sources) and by today's
# (TRACED_BASE_BIN, main's build, which reads past them), in turn: the
# ratio of their times (target <= 1.15x) and peak RSS.
# Env: as bench/setup.sh, TRACED_BASE_BIN (../main/build/traced), ROUNDS
# (5), MORE_BYTES (1000000000: the trace's JSON bytes).
set -eu
BENCH_SOURCE=${BENCH_MORE_SOURCE:-../shared/traces/tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz}
. "$(dirname "$0")/setup.sh"
BASE=${TRACED_BASE_BIN:-../main/build/traced}
[ -x "$BASE" ] || { echo "bench: $BASE not built (TRACED_BASE_BIN)" >&2; exit 2; }
make_trace more1 "${MORE_BYTES:-1000000000}"
TRACED_BIN=$BIN TRACED_BASE_BIN=$BASE python3 bench/bench_more.py \
  "$OUT/more1.json.gz"
