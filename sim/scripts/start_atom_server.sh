#!/bin/bash
# ATOM simulator: start the simulated ATOM OpenAI-compatible server.
# Usage: bash start_atom_server.sh [MODEL_PATH] [TP_SIZE] [PORT]
#                                  [EXTRA_ARGS...]
#
# Behaves as ATOM's scripts/start_atom_server.sh (ffdf3bb5):
#  - set -euo pipefail; EXTRA_ARGS="$*" is expanded unquoted, so every
#    argument is split again at whitespace and glob-expanded, and quotes
#    inside it are not removed: a JSON value with a space can never reach
#    the server intact;
#  - pre-flight: ATOM's pkill of 'atom.entrypoints' (SIGTERM to the
#    server), a pause, pkill -9 of 'multiprocessing.spawn' (its engine and
#    worker processes: a server that could not handle its SIGTERM, e.g.
#    blocked in /stop_profile, lives on), a pause, then up to 30 checks of
#    `rocm-smi --showmemuse`: without rocm-smi on PATH the script exits 1
#    right there, printing nothing useful (sim/bin/rocm-smi stands in);
#  - clears the compile cache, truncates the log with a config header,
#    starts the server in the background with a plain `&` (it stays in
#    this script's process group), then tries up to 120 times (ATOM's
#    count at SIM_POLL_S=1): ready = GET /v1/models answers (curl without
#    a timeout) AND rocm-smi shows VRAM in use -> "Server is ready!" exit 0;
#    the server gone -> "ERROR: Server process died" exit 1; after the last
#    try it FALLS THROUGH and exits 0 with the server possibly still
#    loading.
#  - runs the bare `python` of PATH (sim/venv/bin stands for ATOM's
#    /opt/venv/bin, where ATOM is installed).
# One deviation: ATOM's pkill matches every process of the machine; the
# sim's only this ATOM_SIM_HOME's (simlib.sh), so that tests running side
# by side never kill each other's servers.

set -euo pipefail

MODEL_PATH="${1:-/data/DeepSeek-R1-0528}"
TP_SIZE="${2:-8}"
PORT="${3:-8000}"
# The simulator's own: its home and the call record, before the shift.
# shellcheck source=simlib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/simlib.sh" record "$@"
shift 3 2>/dev/null || true
EXTRA_ARGS="$*"
KV_CACHE_DTYPE="${KV_CACHE_DTYPE:-fp8}"
MAX_NUM_SEQS="${MAX_NUM_SEQS:-256}"
GPU_MEM_UTIL="${GPU_MEM_UTIL:-0.9}"
LOG_FILE="$SIM_LOG_DIR/atom_server.log"
POLL_S="${SIM_POLL_S:-1}"
TRIES=$(sim_polls "${SIM_LAUNCH_CAP_S:-120}" "$POLL_S")
PREFLIGHT_S="${SIM_PREFLIGHT_S:-0.5}"   # ATOM pauses 2 s + 3 s

export AITER_LOG_LEVEL="${AITER_LOG_LEVEL:-INFO}"
# ATOM exports its own hard-coded KINETO_CONFIG, whatever the caller set.
export KINETO_CONFIG="$ATOM_SIM_HOME/libkineto.conf"

echo "Pre-flight: cleaning up processes and GPU memory..."
# ATOM's own lines (start_atom_server.sh:29-35): pkill and pgrep are
# simlib.sh's, on this home's processes.
pkill -f 'atom.entrypoints' 2>/dev/null || true
sim_sleep "$(sim_part "$PREFLIGHT_S" 2 5)"
pkill -9 -f 'multiprocessing.spawn' 2>/dev/null || true
pkill -9 -f 'multiprocessing.resource_tracker' 2>/dev/null || true
sim_sleep "$(sim_part "$PREFLIGHT_S" 3 5)"

sim_wait_vram_free 30 clear
if [ "$SIM_VRAM_HELD" -gt 0 ]; then
    echo "WARNING: GPU memory still in use after 30s. Dumping GPU process" \
        "info:"
    rocm-smi --showpidgpus 2>&1 | grep "PID.*is using" | grep -v "0 DRM" ||
        true
    echo "Attempting force kill of GPU-holding processes..."
    for pid in $(rocm-smi --showpidgpus 2>&1 |
                 sed -n 's/^PID \([0-9][0-9]*\) .*/\1/p'); do
        kill -9 "$pid" 2>/dev/null || true
    done
    sim_sleep "$POLL_S"
fi

# ATOM clears ~/.cache/atom (its compile cache) and ./gpucore.* here.
rm -rf "$ATOM_SIM_HOME/cache/atom/"*
rm -rf ./gpucore.*

# Config header, to stdout and the log (truncating it: a fatal marker of
# the previous run never survives a launch).
{
echo "========================================"
echo " ATOM Server Launcher"
echo "========================================"
echo " Model:          $MODEL_PATH"
echo " TP Size:        $TP_SIZE"
echo " Port:           $PORT"
echo " KV Cache dtype: $KV_CACHE_DTYPE"
echo " Max num seqs:   $MAX_NUM_SEQS"
echo " GPU mem util:   $GPU_MEM_UTIL"
echo " Extra args:     ${EXTRA_ARGS:-none}"
echo " Date:           $(date)"
echo "----------------------------------------"
echo " Inherited env vars (ATOM_*, V4_*, AITER_*, HSA_*, AMD_*, HIP_*):"
ENV_RE='^(ATOM_|V4_|AITER_|HSA_|AMD_|HIP_|KV_CACHE|MAX_NUM_SEQS|'
ENV_RE+='MAX_MODEL_LEN|MAX_BATCHED_TOKENS|GPU_MEM_UTIL)'
env | grep -E "$ENV_RE" \
  | sort | sed 's/^/   /' || echo "   (none set)"
echo "========================================"
} | tee "$LOG_FILE"

# shellcheck disable=SC2086  # word splitting and globbing, as ATOM's
"$ATOM_PY" -m "$SIM_SERVER_MODULE" \
    --model "$MODEL_PATH" \
    --kv_cache_dtype "$KV_CACHE_DTYPE" \
    -tp "$TP_SIZE" \
    --max-num-seqs "$MAX_NUM_SEQS" \
    --gpu-memory-utilization "$GPU_MEM_UTIL" \
    --server-port "$PORT" \
    $EXTRA_ARGS \
    >> "$LOG_FILE" 2>&1 &

SERVER_PID=$!
echo "$SERVER_PID" > "$SIM_PID_FILE"
echo "Server started in background (PID: $SERVER_PID)"

echo "Waiting for server to be ready..."
for _ in $(seq 1 "$TRIES"); do
    sim_poll_ready "$PORT"
    if [ "$SIM_VRAM_COUNT" -gt 0 ]; then
        echo "Server is ready! (PID: $SERVER_PID, GPU VRAM loaded)"
        exit 0
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "ERROR: Server process died. Check $LOG_FILE"
        exit 1
    fi
    sim_sleep "$POLL_S"
done
