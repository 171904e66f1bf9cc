#!/bin/bash
# ATOM simulator: poll http://localhost:$PORT/v1/models until the server is
# ready or the max wait elapses. Exit 0 = ready, 1 = timeout / startup
# error. As ATOM's scripts/wait_server_ready.sh (ffdf3bb5): ready is any
# non-empty answer body of `curl -s -m 3` (an error page counts); fatal
# markers are looked for only in the log bytes appended after it started
# (a log that shrank, truncated by a launch, is rescanned from byte 0), so
# a marker written before it started is missed, as with ATOM's.
#
# Usage: bash wait_server_ready.sh [PORT] [MAX_MIN] [POLL_SEC] [LOG_FILE]
#   PORT      default 8000
#   MAX_MIN   default 6
#   POLL_SEC  default 30 (whole seconds, as in ATOM's)
#   LOG_FILE  default $ATOM_SIM_HOME/logs/atom_server.log

set -uo pipefail
# shellcheck source=simlib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/simlib.sh" record "$@"

PORT="${1:-8000}"
MAX_MIN="${2:-6}"
POLL="${3:-30}"
LOG_FILE="${4:-$SIM_LOG_DIR/atom_server.log}"
ITERS=$(( MAX_MIN * 60 / POLL ))
MARKERS="cluster_dims\|InductorError\|SHUTDOWN signal\|proc died"
MARKERS+="\|Memory access fault\|HSA_STATUS_ERROR"

LOG_START_BYTES=0
if [ -f "$LOG_FILE" ]; then
    LOG_START_BYTES=$(stat -c %s "$LOG_FILE" 2>/dev/null || echo 0)
fi

for ((i=1; i<=ITERS; i++)); do
    sim_sleep "$POLL"
    READY=$(curl -s -m 3 "http://localhost:${PORT}/v1/models" 2>/dev/null |
        head -c 60)
    ERR=0
    if [ -f "$LOG_FILE" ]; then
        CUR_BYTES=$(stat -c %s "$LOG_FILE" 2>/dev/null || echo 0)
        if [ "$CUR_BYTES" -lt "$LOG_START_BYTES" ]; then
            echo "[t=$((i*POLL))s] log truncated (cur=$CUR_BYTES" \
                "< snapshot=$LOG_START_BYTES), scanning from offset 0"
            LOG_START_BYTES=0
        fi
        ERR=$(tail -c "+$((LOG_START_BYTES + 1))" "$LOG_FILE" 2>/dev/null \
            | grep -c "$MARKERS")
    fi
    ERR="${ERR:-0}"
    echo "[t=$((i*POLL))s] ready=${READY:-(empty)} err=$ERR"
    if [ -n "$READY" ]; then
        echo "Server READY"
        exit 0
    fi
    if [ "$ERR" -gt 0 ]; then
        echo "Server FAILED to start (errors detected)"
        tail -c "+$((LOG_START_BYTES + 1))" "$LOG_FILE" | tail -30
        exit 1
    fi
done

echo "Server NOT ready after ${MAX_MIN} min"
tail -c "+$((LOG_START_BYTES + 1))" "$LOG_FILE" | tail -30
exit 1
