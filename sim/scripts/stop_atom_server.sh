#!/bin/bash
# ATOM simulator: stop the simulated ATOM server.
# Usage: bash stop_atom_server.sh
#
# As ATOM's scripts/stop_atom_server.sh (ffdf3bb5): SIGTERM to the server
# and its engine/worker processes, up to 5 checks SIM_STOP_WAIT_S/5 apart
# (ATOM: 5 s), SIGKILL of whatever is left, a pause, then up to 60 checks
# that rocm-smi shows no VRAM in use ("GPU memory released after Ns";
# without rocm-smi the check sees 0 and passes, as ATOM's, which has no
# `set -e`). "Server stopped.", exit 0, idempotent.
# A server blocked in /stop_profile cannot run its SIGTERM handler: it is
# SIGKILLed after the wait, its ranks' exports cut wherever they are.
# Deviation, as the start script's: only this ATOM_SIM_HOME's server is
# touched (ATOM pkills every ATOM process of the machine). The bench
# client is not touched, nor is it by ATOM's script.

set -uo pipefail
# shellcheck source=simlib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/simlib.sh"
sim_record stop_atom_server.sh "$@"

WAIT_S="${SIM_STOP_WAIT_S:-5}"
POLL_S="${SIM_POLL_S:-1}"

echo "=== Stopping ATOM server ==="

PIDS="$(sim_server_pids | tr '\n' ' ')"
if [ -n "${PIDS// /}" ]; then
    echo "Sending SIGTERM to ATOM processes..."
    # shellcheck disable=SC2086
    sim_signal TERM $PIDS
    # shellcheck disable=SC2086
    sim_signal USR2 $PIDS
    for _ in 1 2 3 4 5; do
        sim_sleep "$(sim_part "$WAIT_S" 1 5)"
        [ -z "$(sim_server_pids)" ] && break
    done
fi

LEFT="$(sim_server_pids | tr '\n' ' ')"
if [ -n "${LEFT// /}" ]; then
    echo "SIGTERM did not finish cleanup; escalating to SIGKILL..."
    # shellcheck disable=SC2086
    sim_signal KILL $LEFT
    sim_sleep "$(sim_part "${SIM_PREFLIGHT_S:-0.5}" 2 5)"   # ATOM: 2 s
fi
rm -f "$SIM_PID_FILE"

echo "Waiting for GPU memory to release..."
sim_wait_vram_free 60 released
if [ "$SIM_VRAM_HELD" -gt 0 ]; then
    echo "WARNING: GPU memory still in use after 60s, force-killing GPU" \
        "PIDs..."
    for pid in $(rocm-smi --showpids 2>/dev/null |
                 awk '/^PID/{f=1; next} f && $1 ~ /^[0-9]+$/ {print $1}'); do
        echo "  kill -9 $pid"
        kill -9 "$pid" 2>/dev/null || true
    done
    sim_sleep "$POLL_S"
    if [ "$(sim_gpus_in_use)" -gt 0 ]; then
        echo "ERROR: GPU memory still held after force-kill. Manual" \
            "intervention required."
        rocm-smi --showpids 2>&1 | head -40
        exit 1
    fi
fi

echo "Server stopped."
exit 0
