#!/bin/bash
# ATOM simulator: stop the simulated ATOM server.
# Usage: bash stop_atom_server.sh
#
# As ATOM's scripts/stop_atom_server.sh (ffdf3bb5): its PATTERNS, SIGTERM
# to what they match (the server, its engine/worker processes, lm_eval...),
# up to 5 checks SIM_STOP_WAIT_S/5 apart (ATOM: 5 s), SIGKILL of whatever
# is left, a pause, a last SIGKILL pass, then up to 60 checks
# that rocm-smi shows no VRAM in use ("GPU memory released after Ns";
# without rocm-smi the check sees 0 and passes, as ATOM's, which has no
# `set -e`). "Server stopped.", exit 0, idempotent.
# A server blocked in /stop_profile cannot run its SIGTERM handler: it is
# SIGKILLed after the wait, its ranks' exports cut wherever they are.
# Deviation, as the start script's: only this ATOM_SIM_HOME's processes
# are matched (ATOM's pkill matches every process of the machine). The
# bench client is not touched, nor is it by ATOM's script.

set -uo pipefail
# shellcheck source=simlib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/simlib.sh" record "$@"

WAIT_S="${SIM_STOP_WAIT_S:-5}"
POLL_S="${SIM_POLL_S:-1}"

echo "=== Stopping ATOM server ==="

# ATOM's patterns and rounds (stop_atom_server.sh:15-64); pkill and pgrep
# are simlib.sh's, on this home's processes.
PATTERNS=(
    'atom.entrypoints'
    'multiprocessing.spawn'
    'multiprocessing.resource_tracker'
    'atom.model_engine'
    'lm_eval'
)

count_alive() {
    local total=0 pat n
    for pat in "${PATTERNS[@]}"; do
        n=$(pgrep -f "$pat" 2>/dev/null | wc -l)
        total=$((total + n))
    done
    echo "$total"
}

if [ "$(count_alive)" -gt 0 ]; then
    echo "Sending SIGTERM to ATOM processes..."
    for pat in "${PATTERNS[@]}"; do
        pkill -TERM -f "$pat" 2>/dev/null || true
    done
    for _ in 1 2 3 4 5; do
        sim_sleep "$(sim_part "$WAIT_S" 1 5)"
        [ "$(count_alive)" -eq 0 ] && break
    done
fi

if [ "$(count_alive)" -gt 0 ]; then
    echo "SIGTERM did not finish cleanup; escalating to SIGKILL..."
    for pat in "${PATTERNS[@]}"; do
        pkill -KILL -f "$pat" 2>/dev/null || true
    done
    sim_sleep "$(sim_part "${SIM_PREFLIGHT_S:-0.5}" 2 5)"   # ATOM: 2 s
fi

if [ "$(count_alive)" -gt 0 ]; then
    echo "Stubborn processes still alive — final SIGKILL pass:"
    for pat in "${PATTERNS[@]}"; do
        pgrep -af "$pat" 2>/dev/null || true
    done
    for pat in "${PATTERNS[@]}"; do
        pkill -KILL -9 -f "$pat" 2>/dev/null || true
    done
    sim_sleep "$(sim_part "${SIM_PREFLIGHT_S:-0.5}" 3 5)"   # ATOM: 3 s
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
