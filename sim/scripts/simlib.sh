# Sourced by the simulator's scripts: where the sim lives, its home, the
# call record and the search for this home's server processes.
# shellcheck shell=bash

SIM_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)"
SIM_PY="${SIM_PYTHON:-python3}"
# Absolute, exported: the server inherits it and the stop script matches
# servers by this exact value in /proc/<pid>/environ, so concurrent sims
# with different homes never touch each other's processes.
ATOM_SIM_HOME="$(mkdir -p "${ATOM_SIM_HOME:-/tmp/atom-sim}" &&
    cd -- "${ATOM_SIM_HOME:-/tmp/atom-sim}" && pwd)"
export ATOM_SIM_HOME
SIM_LOG_DIR="$ATOM_SIM_HOME/logs"
# shellcheck disable=SC2034  # used by the scripts that source this
SIM_PID_FILE="$ATOM_SIM_HOME/server.pid"
mkdir -p "$SIM_LOG_DIR"

# sim_record SCRIPT ARGS...: one line in $ATOM_SIM_HOME/calls.jsonl.
sim_record() {
    "$SIM_PY" "$SIM_DIR/simcommon.py" record "$@" || true
}

# The pids of this home's sim servers: python running atom_sim_server.py
# with our ATOM_SIM_HOME in its environment (the pid file alone would miss
# a server whose launcher was killed before writing it). ATOM's scripts
# find theirs by name ('atom\.entrypoints'); a name alone would also hit
# other homes' servers.
sim_server_pids() {
    local f pid
    grep -l -a 'atom_sim_server[.]py' /proc/[0-9]*/cmdline 2>/dev/null |
    while read -r f; do
        pid="${f#/proc/}"
        pid="${pid%/cmdline}"
        # grep without -q: it must read to the end, or under pipefail the
        # writer's SIGPIPE would turn a match into a failure.
        tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n 2p |
            grep 'atom_sim_server[.]py$' >/dev/null || continue
        tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
            grep -xF "ATOM_SIM_HOME=$ATOM_SIM_HOME" >/dev/null || continue
        echo "$pid"
    done | sort -un
}

# sim_kill_tree PID: SIGKILL a process and everything under it, children
# first, as ATOM's launcher does.
sim_kill_tree() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
        sim_kill_tree "$child"
    done
    kill -9 "$1" 2>/dev/null || true
}

# sim_alive PID: the process exists and is not a zombie. An orphaned
# server's zombie can linger until init reaps it (about a second here),
# and kill -0 succeeds on a zombie.
sim_alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' \
        "/proc/$1/status" 2>/dev/null)
    [ -n "$state" ] && [ "$state" != "Z" ]
}

# sim_wait_gone SECONDS PIDS...: poll until none of PIDS is alive; 0 when
# they all went, 1 on timeout.
sim_wait_gone() {
    local cap="$1" n pid alive
    shift
    n=$(awk -v c="$cap" 'BEGIN { print int(c / 0.1) }')
    while :; do
        alive=0
        for pid in "$@"; do
            sim_alive "$pid" && alive=1
        done
        [ "$alive" -eq 0 ] && return 0
        [ "$n" -le 0 ] && return 1
        n=$((n - 1))
        sleep 0.1
    done
}

# sim_polls CAP_S POLL_S: how many polls POLL_S apart fill CAP_S seconds
# (rounded up; both may be fractional).
sim_polls() {
    awk -v c="$1" -v p="$2" \
        'BEGIN { n = c / p; print (n == int(n)) ? n : int(n) + 1 }'
}
