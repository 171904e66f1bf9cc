# Sourced by the simulator's scripts: where the sim lives, its home, the
# call record, this home's server processes, and ATOM's GPU check.
# shellcheck shell=bash

SIM_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)"
# The sim's own helpers run python3; ATOM's server and bench run the bare
# `python` of PATH, as ATOM's scripts do (start_atom_server.sh:83,
# run_benchmark.sh:77): sim/venv/bin stands for ATOM's /opt/venv/bin.
SIM_PY=python3
# shellcheck disable=SC2034  # used by the scripts that source this
ATOM_PY="${SIM_PYTHON:-python}"
# Absolute, exported: the server inherits it and the scripts match servers
# by this exact value in /proc/<pid>/environ, so concurrent sims with
# different homes never touch each other's processes.
ATOM_SIM_HOME="$(mkdir -p "${ATOM_SIM_HOME:-/tmp/atom-sim}" &&
    cd -- "${ATOM_SIM_HOME:-/tmp/atom-sim}" && pwd)"
export ATOM_SIM_HOME
# ATOM's /app/logs_claude: written by the scripts, never made by them
# (start_atom_server.sh:20,81, run_benchmark.sh:24,75): whoever drives
# them makes it, as traced does.
# shellcheck disable=SC2034  # used by the scripts that source this
SIM_LOG_DIR="$ATOM_SIM_HOME/logs"
# shellcheck disable=SC2034  # used by the scripts that source this
SIM_PID_FILE="$ATOM_SIM_HOME/server.pid"
# The server runs as ATOM's does, `python -m atom.entrypoints.openai_server`
# (sim/pkg stands in for ATOM's package).
SIM_SERVER_MODULE="atom.entrypoints.openai_server"

# sim_record SCRIPT ARGS...: one line in $ATOM_SIM_HOME/calls.jsonl.
sim_record() {
    "$SIM_PY" "$SIM_DIR/simcommon.py" record "$@" || true
}

# The pids of this home's sim servers: python running ATOM's server module
# with our ATOM_SIM_HOME in its environment. ATOM's scripts find theirs
# by name (pkill -f 'atom.entrypoints'); a name alone would also hit
# other homes' servers, so parallel tests would kill each other.
sim_server_pids() {
    local f pid env
    local -a argv envs
    # Two greps over /proc narrow it to this home's processes running the
    # module (bash reads the few left itself: on a loaded machine each
    # spawned process costs, and the stop script asks six times).
    { grep -l -a -F "ATOM_SIM_HOME=$ATOM_SIM_HOME" /proc/[0-9]*/environ \
        2>/dev/null || true; } |
    while read -r f; do
        pid="${f#/proc/}"
        pid="${pid%/environ}"
        mapfile -d '' -t argv 2>/dev/null <"/proc/$pid/cmdline" || continue
        if [ "${argv[1]:-}" != "-m" ] ||
            [ "${argv[2]:-}" != "$SIM_SERVER_MODULE" ]; then
            continue
        fi
        mapfile -d '' -t envs 2>/dev/null <"/proc/$pid/environ" || continue
        for env in "${envs[@]}"; do
            if [ "$env" = "ATOM_SIM_HOME=$ATOM_SIM_HOME" ]; then
                sim_alive "$pid" && echo "$pid"
                break
            fi
        done
    done | sort -un
}

# sim_signal SIGNAL PIDS...: signals each, ignoring those already gone.
# The server takes TERM as ATOM's API process does; USR1 and USR2 stand
# for SIGKILL and SIGTERM of ATOM's engine and worker processes
# (sim/atom_sim_server.py).
sim_signal() {
    local sig="$1" pid
    shift
    for pid in "$@"; do
        kill "-$sig" "$pid" 2>/dev/null || true
    done
}

# sim_alive PID: the process exists and is not a zombie (kill -0 succeeds
# on a zombie, and an orphaned server's lingers until init reaps it).
sim_alive() {
    local key state
    kill -0 "$1" 2>/dev/null || return 1
    while read -r key state _; do
        if [ "$key" = "State:" ]; then
            [ "$state" != "Z" ]
            return
        fi
    done 2>/dev/null <"/proc/$1/status"
    return 1
}

# sim_polls CAP_S POLL_S: how many polls POLL_S apart fill CAP_S seconds
# (rounded up; both may be fractional).
sim_polls() {
    awk -v c="$1" -v p="$2" \
        'BEGIN { n = c / p; print (n == int(n)) ? n : int(n) + 1 }'
}

# sim_part SECONDS NUM DEN: SECONDS * NUM / DEN, for sleeps that keep
# ATOM's proportions (its 2 s and 3 s pre-flight pauses).
sim_part() {
    awk -v s="$1" -v n="$2" -v d="$3" 'BEGIN { printf "%.3f", s * n / d }'
}

# sim_sleep SECONDS: sleep SECONDS of ATOM's time, which passes
# SIM_TIME_SCALE times faster than real time (default 1; simcommon.py,
# "the clock"). Every pause of the scripts goes through it.
sim_sleep() {
    sleep "$(awk -v s="$1" -v k="${SIM_TIME_SCALE:-1}" \
        'BEGIN { if (k + 0 <= 0) k = 1; printf "%.3f", s / k }')"
}

# sim_gpus_in_use: how many GPUs rocm-smi shows with VRAM in use, by
# ATOM's own pipeline shape: under `set -euo pipefail` a missing rocm-smi
# (or one that prints no VRAM% line) makes grep fail, the pipeline fails,
# and the assignment that calls this exits the script with status 1,
# printing nothing (rocm-smi's stderr goes to /dev/null), as ATOM's does.
sim_gpus_in_use() {
    rocm-smi --showmemuse 2>/dev/null | grep "VRAM%" |
        awk '$NF > 0' | wc -l
}

# sim_poll_ready PORT: ATOM's dual ready check, once (run_benchmark.sh:
# 42-44, start_atom_server.sh:99-101): GET /v1/models answers (curl
# without a timeout), then the GPUs rocm-smi shows with VRAM in use, left
# in SIM_VRAM_COUNT (0: not ready). Call it as a plain command, as
# sim_wait_vram_free: a missing rocm-smi then ends the caller at the
# check, as ATOM's assignment does under its `set -e`.
sim_poll_ready() {
    SIM_VRAM_COUNT=0
    if curl -sf "http://localhost:$1/v1/models" > /dev/null 2>&1; then
        # shellcheck disable=SC2034  # read by the scripts that source this
        SIM_VRAM_COUNT=$(sim_gpus_in_use)
    fi
}

# sim_wait_vram_free TRIES WORD: up to TRIES rocm-smi checks SIM_POLL_S
# apart; "GPU memory WORD after Ns" once no GPU holds VRAM. Leaves the
# count of the last check in SIM_VRAM_HELD. Call it as a plain command:
# under the caller's `set -e` a missing rocm-smi then ends the caller at
# the check, as ATOM's loop does.
sim_wait_vram_free() {
    local i
    for i in $(seq 1 "$1"); do
        SIM_VRAM_HELD=$(sim_gpus_in_use)
        if [ "$SIM_VRAM_HELD" -eq 0 ]; then
            echo "GPU memory $2 after ${i}s"
            return 0
        fi
        sim_sleep "${SIM_POLL_S:-1}"
    done
}

# The processes of this home (their environment holds our ATOM_SIM_HOME),
# alive, this shell excepted.
sim_home_pids() {
    local f pid
    { grep -l -a -F "ATOM_SIM_HOME=$ATOM_SIM_HOME" /proc/[0-9]*/environ \
        2>/dev/null || true; } |
    while read -r f; do
        pid="${f#/proc/}"
        pid="${pid%/environ}"
        if [ "$pid" != "$$" ] && [ "$pid" != "$BASHPID" ] &&
            sim_alive "$pid"; then
            echo "$pid"
        fi
    done
}

# sim_kill_like MODE [-SIG] [-f] [-a] PATTERN: pkill (MODE kill) and pgrep
# (MODE list) as ATOM's scripts call them (start_atom_server.sh:29-34,
# stop_atom_server.sh:15-62): PATTERN is an extended regular expression
# matched against the whole command line with -f, else against the
# process name; the last word is the pattern. ATOM's match every process
# of the machine, the sim's this home's only (tests side by side). ATOM's
# engine and worker processes (`multiprocessing.spawn`) are threads of
# the sim's server: a pattern matching their command line reaches the
# server as SIGUSR1 (for -9/-KILL) or SIGUSR2 (any other signal), and
# pgrep does not list them. The bash match runs in this shell: no process
# of ours carries the pattern in its command line for traced to see.
sim_kill_like() {
    local mode="$1" sig=TERM full=0 all=0 pattern="" arg pid cmd left=1
    local -a argv
    shift
    for arg in "$@"; do
        case "$arg" in
            -[0-9]*|-[A-Z]*) sig="${arg#-}" ;;
            -*)
                [[ $arg == *f* ]] && full=1
                [[ $arg == *a* ]] && all=1
                ;;
            *) pattern="$arg" ;;
        esac
    done
    for pid in $(sim_home_pids); do
        if [ "$full" = 1 ]; then
            mapfile -d '' -t argv 2>/dev/null <"/proc/$pid/cmdline" || continue
            cmd="${argv[*]}"
        else
            read -r cmd 2>/dev/null <"/proc/$pid/comm" || continue
        fi
        [[ $cmd =~ $pattern ]] || continue
        left=0
        if [ "$mode" = kill ]; then
            kill "-$sig" "$pid" 2>/dev/null || true
        elif [ "$all" = 1 ]; then
            echo "$pid $cmd"
        else
            echo "$pid"
        fi
    done
    if [ "$mode" = kill ] &&
        [[ "from multiprocessing.spawn import spawn_main" =~ $pattern ]]; then
        case "$sig" in
            9|KILL) sig=USR1 ;;
            *) sig=USR2 ;;
        esac
        # shellcheck disable=SC2046
        sim_signal "$sig" $(sim_server_pids)
        left=0
    fi
    return "$left"
}

# ATOM's scripts' own words, on this home's processes only.
pkill() { sim_kill_like kill "$@"; }
pgrep() { sim_kill_like list "$@"; }

# `source simlib.sh record "$@"`: the sourcing script's call, recorded
# as it starts (source's own arguments are its positional parameters
# only until it returns).
if [ "${1:-}" = record ]; then
    shift
    sim_record "$(basename -- "$0")" "$@"
fi
