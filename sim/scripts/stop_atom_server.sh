#!/bin/bash
# ATOM simulator: stop the simulated ATOM server.
# Usage: bash stop_atom_server.sh
#
# As ATOM's scripts/stop_atom_server.sh: SIGTERM, wait up to
# SIM_STOP_WAIT_S (5) s, then SIGKILL whatever is left; idempotent, exit 0.
# Stops every sim server of this ATOM_SIM_HOME (found in /proc, plus the
# pid file), never another home's. The bench client is not a server
# process and is not touched (nor is it by ATOM's script).

set -uo pipefail
# shellcheck source=simlib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/simlib.sh"
sim_record stop_atom_server.sh "$@"

echo "=== Stopping ATOM server ==="

PIDS="$(sim_server_pids | tr '\n' ' ')"
if [ -n "${PIDS// /}" ]; then
    echo "Sending SIGTERM to ATOM processes..."
    # shellcheck disable=SC2086
    kill -TERM $PIDS 2>/dev/null || true
    # shellcheck disable=SC2086
    if ! sim_wait_gone "${SIM_STOP_WAIT_S:-5}" $PIDS; then
        echo "SIGTERM did not finish cleanup; escalating to SIGKILL..."
        for pid in $PIDS; do
            sim_kill_tree "$pid"
        done
        # shellcheck disable=SC2086
        sim_wait_gone 5 $PIDS || true
    fi
fi
rm -f "$SIM_PID_FILE"

echo "Waiting for GPU memory to release..."
echo "GPU memory released after 1s"
echo "Server stopped."
exit 0
