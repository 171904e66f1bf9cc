#!/bin/sh
# Decode's cost, in one run (docs/DECODE.md, "Cost"):
#   traced index of bench/'s big trace (1 GB, bench/make_big_trace.py's
#   copies of the xDiT run trace) with that run's real capture trace beside
#   it (graph_pairs/xdit_flux.1_aiter_sage/capture_traces: every replay
#   matched, short: the run trace lost one of its kernels) against
#   today's traced (TRACED_BASE_BIN, main's build) on the same trace:
#   <= 1.2x its time (CPU, user + system; wall beside it);
#   peak RSS < 48 MB; and this traced without the capture beside them;
#   and beside it, on the real pair itself, traced and TraceLens's own
#   graph-mode inference report (the capture merged into the replays, its
#   ops summary by parent module), time for time and figure for figure.
# TraceLens is not part of traced: TRACELENS_DIR names a checkout of it
# (its TraceLens/ package; python3-pandas from Debian). Without it, that
# part is skipped.
# Env: as bench/setup.sh, TRACED_BASE_BIN (../main/build/traced),
# TRACELENS_DIR, TRACELENS_PYTHON (/usr/bin/python3), ROUNDS (5),
# TL_ROUNDS (1: TraceLens takes a minute a run).
set -eu
. "$(dirname "$0")/setup.sh"
BASE=${TRACED_BASE_BIN:-../main/build/traced}
[ -x "$BASE" ] || { echo "bench: $BASE not built (TRACED_BASE_BIN)" >&2; exit 2; }
make_trace big1 1000000000
PAIR=../shared/traces/graph_pairs/xdit_flux.1_aiter_sage
RUN=../shared/traces/tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz
TRACED_BIN=$BIN TRACED_BASE_BIN=$BASE \
  python3 bench/bench_decode.py "$OUT/big1.json.gz" "$PAIR/capture_traces" \
  "$RUN" "$PAIR/tracelens_ops_summary.csv"
