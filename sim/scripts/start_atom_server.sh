#!/bin/bash
# ATOM simulator: start the simulated ATOM OpenAI-compatible server.
# Usage: bash start_atom_server.sh [MODEL_PATH] [TP_SIZE] [PORT]
#                                  [EXTRA_ARGS...]
#
# Same argv, defaults, output and exit codes as ATOM's scripts/
# start_atom_server.sh: kills this home's earlier servers, truncates the
# log with a config header, starts the server in the background appending
# to the log, then polls /v1/models for at most SIM_LAUNCH_CAP_S (120) s.
# "Server is ready!" exit 0, or "ERROR: Server process died" exit 1; when
# the cap passes it FALLS THROUGH and exits 0 with the server still
# loading, as ATOM's does. EXTRA_ARGS are word-split (ATOM passes them as
# an unquoted "$*"). Log: $ATOM_SIM_HOME/logs/atom_server.log.

set -euo pipefail
# shellcheck source=simlib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/simlib.sh"
sim_record start_atom_server.sh "$@"

MODEL_PATH="${1:-/data/DeepSeek-R1-0528}"
TP_SIZE="${2:-8}"
PORT="${3:-8000}"
shift 3 2>/dev/null || true
EXTRA_ARGS="$*"
KV_CACHE_DTYPE="${KV_CACHE_DTYPE:-fp8}"
MAX_NUM_SEQS="${MAX_NUM_SEQS:-256}"
GPU_MEM_UTIL="${GPU_MEM_UTIL:-0.9}"
LOG_FILE="$SIM_LOG_DIR/atom_server.log"
LAUNCH_CAP_S="${SIM_LAUNCH_CAP_S:-120}"
POLL_S="${SIM_POLL_S:-1}"

export AITER_LOG_LEVEL="${AITER_LOG_LEVEL:-INFO}"

# === Pre-flight: ensure GPU is clean ===
echo "Pre-flight: cleaning up processes and GPU memory..."
KILLED=""
for pid in $(sim_server_pids); do
    echo "  killing server $pid and its children"
    sim_kill_tree "$pid"
    KILLED="$KILLED $pid"
done
# shellcheck disable=SC2086
sim_wait_gone 10 $KILLED || true
echo "GPU memory clear after 1s"

# Write config header to log (truncates old content).
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

# setsid: the server leaves the caller's session and process group, so
# signalling the launcher's group does not stop it: stop_atom_server.sh
# does. Its stdio goes to the log only, never to the launcher's pipes.
# shellcheck disable=SC2086
setsid "$SIM_PY" "$SIM_DIR/atom_sim_server.py" \
    --model "$MODEL_PATH" \
    --kv_cache_dtype "$KV_CACHE_DTYPE" \
    -tp "$TP_SIZE" \
    --max-num-seqs "$MAX_NUM_SEQS" \
    --gpu-memory-utilization "$GPU_MEM_UTIL" \
    --server-port "$PORT" \
    $EXTRA_ARGS \
    >> "$LOG_FILE" 2>&1 < /dev/null &

SERVER_PID=$!
echo "$SERVER_PID" > "$SIM_PID_FILE"
echo "Server started in background (PID: $SERVER_PID)"

echo "Waiting for server to be ready..."
POLLS=$(sim_polls "$LAUNCH_CAP_S" "$POLL_S")
for _ in $(seq 1 "$POLLS"); do
    if curl -sf "http://localhost:${PORT}/v1/models" > /dev/null 2>&1; then
        echo "Server is ready! (PID: $SERVER_PID, GPU VRAM loaded)"
        exit 0
    fi
    if ! sim_alive "$SERVER_PID"; then
        echo "ERROR: Server process died. Check $LOG_FILE"
        exit 1
    fi
    sleep "$POLL_S"
done
