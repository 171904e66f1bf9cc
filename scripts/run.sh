#!/bin/sh
# `make run`: runs traced in the foreground until Ctrl-C.
#
# Where ATOM is installed (/app/ATOM/scripts), traced drives it with the
# configuration in /etc/traced/traced.conf (or the defaults). Elsewhere it
# drives the built-in ATOM simulator (sim/) and queues one small demo
# capture, printing its phases, so that a newcomer sees a capture go from
# queued to done and can open it in the dashboard.
set -eu
cd "$(dirname "$0")/.."
BIN=${TRACED_BIN:-build/traced}
LISTEN=${TRACED_LISTEN:-127.0.0.1:7700}

if [ -x /app/ATOM/scripts/start_atom_server.sh ]; then
  CONF=/etc/traced/traced.conf
  [ -f "$CONF" ] || CONF=config/traced.conf
  exec "$BIN" --config "$CONF" --listen "$LISTEN"
fi

DEMO=${TRACED_DEMO_DIR:-$PWD/demo}
export ATOM_SIM_HOME="$DEMO/atom-sim"
# Every request runs its whole output (OSL 32), as on a real server: the
# simulator's default stops at 8 tokens to keep the tests short. Each
# step lasts as long as the traces it exports say (the default, 1 ms,
# keeps the tests short): the bench's TPOT is then the decode step's.
export SIM_MAX_TOKENS="${SIM_MAX_TOKENS:-1024}"
export SIM_TOKEN_S="${SIM_TOKEN_S:-trace}"
# ATOM's scripts (and the simulator's) need rocm-smi and a `python` that
# imports ATOM (/opt/venv/bin in ATOM's image): the sim's stand-ins.
export PATH="$PWD/sim/bin:$PWD/sim/venv/bin:$PATH"
# The demo model is named like one of ATOM CI's presets (ATOM's own
# models.json, a verbatim copy in tests/data/atom): the capture runs it as
# ATOM CI would, and says so.
MODEL="$DEMO/model/gpt-oss-120b"
mkdir -p "$MODEL" "$ATOM_SIM_HOME"
echo '{"chat_template": null}' > "$MODEL/tokenizer_config.json"
TRACES=$(cd ../shared/traces 2>/dev/null && pwd -P || echo "$DEMO")
ATOM_PORT=${ATOM_PORT:-8000}

# One `make run` a demo folder: a second would share its database, and
# its capture's stop script would stop the first one's server. The lock
# is this script's alone (closed for traced, so that a server it leaves
# cannot hold it).
exec 9>"$DEMO/run.lock"
flock -n 9 || {
  echo "make run: $DEMO is in use by another make run: stop that one" \
    "(Ctrl-C), or give this one a folder and ports of its own:" \
    "TRACED_DEMO_DIR=/tmp/demo2 TRACED_LISTEN=127.0.0.1:7701" \
    "ATOM_PORT=8001 make run" >&2
  exit 1
}
# A server an earlier run of this folder left (killed without its
# clean-up): stopped now, so that its port is free again.
if [ -f "$ATOM_SIM_HOME/server.pid" ]; then
  sim/scripts/stop_atom_server.sh >/dev/null 2>&1 || true
fi
# A port another process holds is said now: traced would fail to listen
# (and /healthz answer from that process), the server fail to bind.
taken() {
  python3 -c 'import socket, sys
h = sys.argv[1].strip("[]")
s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((h, int(sys.argv[2])))' "$1" "$2" 2>/dev/null && return 1
  echo "make run: $3 port $1:$2 is taken by another process" \
    "(another make run?): pick free ones, e.g." \
    "TRACED_LISTEN=127.0.0.1:7701 ATOM_PORT=8001 make run (README.md," \
    "Other ports)" >&2
}
taken "${LISTEN%:*}" "${LISTEN##*:}" "traced's" && exit 1
taken 0.0.0.0 "$ATOM_PORT" "the simulated ATOM server's" && exit 1

"$BIN" --listen "$LISTEN" --db "$DEMO/traced.db" \
  --trace-root "$DEMO/traces" --atom-scripts "$PWD/sim/scripts" \
  --atom-port "$ATOM_PORT" \
  --server-log "$ATOM_SIM_HOME/logs/atom_server.log" \
  --bench-result "$ATOM_SIM_HOME/logs/benchmark.json" \
  --models-json "$PWD/tests/data/atom/models.json" \
  --model-roots "$DEMO/model" \
  --ready-poll-s 1 --export-poll-s 1 --import-roots "$TRACES:$DEMO" 9>&- &
pid=$!
# However this script ends (Ctrl-C, a kill, a command that failed under
# set -e: a foreground command a signal killed ends the script before an
# INT or TERM trap could run), traced stops and so does the server it
# left up after its capture (in a session of its own: a Ctrl-C does not
# reach it). Nothing in here may fail: set -e holds in traps too.
stop() {
  trap - EXIT INT TERM HUP
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  sim/scripts/stop_atom_server.sh >/dev/null 2>&1 || true
}
trap stop EXIT
trap 'exit 0' INT TERM HUP

api="http://$LISTEN"
i=0
until curl -sf "$api/healthz" >/dev/null; do
  kill -0 "$pid" 2>/dev/null ||
    { echo "make run: traced did not start (its message is above)"; exit 1; }
  i=$((i + 1))
  [ $i -lt 100 ] || { echo "make run: traced did not answer in 10 s"; exit 1; }
  sleep 0.1
done

echo "traced is up: dashboard at $api/  (no ATOM here: using the simulator)"
body='{"model":"'"$MODEL"'","isl":128,"osl":32,"conc":4,"label":"demo"}'
id=$(curl -sf -X POST "$api/captures" -H 'Content-Type: application/json' \
       -d "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "queued demo capture $id: $api/#/captures/$id"
[ "$id" = 1 ] || echo "  ($DEMO keeps the captures of earlier runs: the" \
  "README's tour names captures 1 to 3, which are theirs; rm -rf $DEMO" \
  "before make run starts afresh)"

last=""
while :; do
  state=$(curl -sf "$api/captures/$id" | python3 -c '
import json, sys
c = json.load(sys.stdin)
p = c.get("preset") or {}
print(c["status"], c["phase"], ("preset " + p["match"] + " tp %s" %
      c["launch"]["tp"]) if p.get("applied") else "")')
  if [ "$state" != "$last" ]; then
    echo "  capture $id: $state"
    last=$state
  fi
  case "$state" in
    done*) break ;;
    failed*|cancelled*|interrupted*)
      curl -sf "$api/captures/$id" | python3 -c '
import json, sys
e = json.load(sys.stdin).get("error") or {}
print("  why: %s" % e.get("message", "(no error recorded)"))'
      echo "traced keeps running (Ctrl-C stops it): $api/#/captures/$id"
      wait $pid
      exit ;;
  esac
  sleep 0.5
done
curl -sf "$api/captures/$id/kernels?limit=5" | python3 -c '
import json, sys
d = json.load(sys.stdin)
rows = d["rows"] if isinstance(d, dict) else d
print("top kernels, all ranks:")
for r in rows:
    # Demangled as the dashboard shows them (the kernels table'"'"'s own).
    name = r.get("demangled") or r["name"]
    print("  %10.3f ms  %6d x  %s" % (r["total_ns"] / 1e6, r["count"], name[:90]))'
echo "traced keeps running (Ctrl-C stops it): $api/"
wait $pid
