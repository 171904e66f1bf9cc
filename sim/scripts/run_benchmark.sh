#!/bin/bash
# ATOM simulator: serving benchmark against the simulated server.
# Usage: bash run_benchmark.sh [MODEL] [PORT] [ISL] [OSL] [CONCURRENCY]
#            [PROMPT_MULTIPLIER] [PROFILE] [BENCH_EXTRA_ARGS...]
#
# As ATOM's scripts/run_benchmark.sh (ffdf3bb5): PROMPT_MULTIPLIER
# defaults to 10, PROFILE=1 adds --profile, RANDOM_RANGE_RATIO defaults to
# 0.8. Ready = GET /v1/models answers and rocm-smi shows VRAM in use, up
# to 120 tries (at SIM_POLL_S=1; without rocm-smi on PATH the script exits
# 1 at its first answer). The client gets --num-warmups=CONC*2 and the
# extra args AFTER ATOM's own, so the last value of a flag wins
# (`--num-warmups 0` there overrides). Writes $ATOM_SIM_HOME/logs/
# benchmark.log and benchmark.json; its exit status is the client's, 0
# even when requests failed or the server died (sim/sim_bench.py).

set -euo pipefail

MODEL="${1:-/data/DeepSeek-R1-0528}"
PORT="${2:-8000}"
ISL="${3:-1024}"
OSL="${4:-1024}"
CONCURRENCY="${5:-128}"
PROMPT_MULTIPLIER="${6:-10}"
PROFILE="${7:-0}"
# The simulator's own: its home and the call record, before the shift.
# shellcheck source=simlib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/simlib.sh" record "$@"
_n=$(( $# < 7 ? $# : 7 ))
shift "$_n" 2>/dev/null || true
EXTRA_ARGS="$*"
NUM_PROMPTS=$(( CONCURRENCY * PROMPT_MULTIPLIER ))
RANDOM_RANGE_RATIO="${RANDOM_RANGE_RATIO:-0.8}"
# ATOM's is /app/logs_claude, the server log's folder too; the simulator
# may put the result elsewhere (SIM_RESULT_DIR) to tell them apart.
OUTPUT_DIR="${SIM_RESULT_DIR:-$SIM_LOG_DIR}"
POLL_S="${SIM_POLL_S:-1}"
TRIES=$(sim_polls "${SIM_BENCH_WAIT_S:-120}" "$POLL_S")

# The config header, to stdout and (with a date) to the log, as ATOM's.
bench_header() {
    echo "========================================"
    echo " ATOM Performance Benchmark"
    echo "========================================"
    echo " Model:          $MODEL"
    echo " Base URL:       http://localhost:${PORT}"
    echo " ISL/OSL:        ${ISL}/${OSL}"
    echo " Concurrency:    $CONCURRENCY"
    echo " Num Prompts:    $NUM_PROMPTS (x${PROMPT_MULTIPLIER})"
    echo " Range Ratio:    $RANDOM_RANGE_RATIO"
    echo " Profile:        $PROFILE"
    echo " Extra args:     ${EXTRA_ARGS:-none}"
    if [ $# -gt 0 ]; then
        echo " Date:           $1"
    fi
    echo "========================================"
}

bench_header

echo "Waiting for server to be ready..."
for i in $(seq 1 "$TRIES"); do
    sim_poll_ready "$PORT"
    if [ "$SIM_VRAM_COUNT" -gt 0 ]; then
        echo "Server is ready! (GPU VRAM loaded on $SIM_VRAM_COUNT GPUs)"
        break
    fi
    if [ "$i" -eq "$TRIES" ]; then
        echo "ERROR: Server not ready after ${SIM_BENCH_WAIT_S:-120}s"
        exit 1
    fi
    if [ $((i % 10)) -eq 0 ]; then
        echo "  Waiting... (${i}s)"
    fi
    sim_sleep "$POLL_S"
done

LOG_FILE="${OUTPUT_DIR}/benchmark.log"
RESULT_FILE="${OUTPUT_DIR}/benchmark.json"

bench_header "$(date)" > "$LOG_FILE"

# shellcheck disable=SC2046,SC2086  # split and globbed, as ATOM's
"$ATOM_PY" -u "$SIM_DIR/sim_bench.py" \
    --model="$MODEL" --backend=vllm --base-url="http://localhost:${PORT}" \
    --dataset-name=random \
    --random-input-len="$ISL" --random-output-len="$OSL" \
    --random-range-ratio="$RANDOM_RANGE_RATIO" \
    --max-concurrency="$CONCURRENCY" \
    --num-prompts="$NUM_PROMPTS" \
    --trust-remote-code \
    --num-warmups=$((CONCURRENCY * 2)) \
    --request-rate=inf --ignore-eos \
    --save-result \
    --result-filename="$RESULT_FILE" \
    --percentile-metrics="ttft,tpot,itl,e2el" \
    $([ "$PROFILE" = "1" ] && echo "--profile") \
    ${EXTRA_ARGS:-} \
    2>&1 | tee -a "$LOG_FILE"
