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
# simulator's default stops at 8 tokens to keep the tests short.
export SIM_MAX_TOKENS="${SIM_MAX_TOKENS:-1024}"
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

"$BIN" --listen "$LISTEN" --db "$DEMO/traced.db" \
  --trace-root "$DEMO/traces" --atom-scripts "$PWD/sim/scripts" \
  --atom-port "${ATOM_PORT:-8000}" \
  --server-log "$ATOM_SIM_HOME/logs/atom_server.log" \
  --bench-result "$ATOM_SIM_HOME/logs/benchmark.json" \
  --models-json "$PWD/tests/data/atom/models.json" \
  --model-roots "$DEMO/model" \
  --ready-poll-s 1 --export-poll-s 1 --import-roots "$TRACES:$DEMO" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid; sim/scripts/stop_atom_server.sh >/dev/null 2>&1; exit 0' INT TERM

api="http://$LISTEN"
i=0
until curl -sf "$api/healthz" >/dev/null; do
  i=$((i + 1))
  [ $i -lt 100 ] || { echo "traced did not start"; kill $pid; exit 1; }
  sleep 0.1
done

echo "traced is up: dashboard at $api/  (no ATOM here: using the simulator)"
body='{"model":"'"$MODEL"'","isl":128,"osl":32,"conc":4,"label":"demo"}'
id=$(curl -sf -X POST "$api/captures" -H 'Content-Type: application/json' \
       -d "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "queued demo capture $id: $api/#/captures/$id"

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
    done*|failed*|cancelled*|interrupted*) break ;;
  esac
  sleep 0.5
done
curl -sf "$api/captures/$id/kernels?limit=5" | python3 -c '
import json, sys
d = json.load(sys.stdin)
rows = d["rows"] if isinstance(d, dict) else d
print("top kernels, all ranks:")
for r in rows:
    print("  %10.3f ms  %6d x  %s" % (r["total_ns"] / 1e6, r["count"], r["name"][:90]))'
echo "traced keeps running (Ctrl-C stops it): $api/"
wait $pid
