#!/bin/sh
# Makes docs/screens/*.png, the dashboard as a newcomer sees it after
# `make run`: runs the demo (scripts/run.sh, on free ports and in a
# folder of its own), captures the same configuration a second time (the
# diff), once with the simulator's fatal marker during the benchmark (a
# failed capture) and once with mark_trace (ATOM's graph-capture traces:
# the Decode tab's), imports the H100 trace of ../shared/traces (the Perf
# tab's: shapes, Python frames, memory), then has headless Chromium draw
# each page
# and tab (scripts/screens.py). Needs Debian's chromium
# (apt-get install -y chromium) and a built build/traced (make).
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-docs/screens}
command -v chromium >/dev/null ||
  { echo "screens.sh: needs chromium (apt-get install -y chromium)"; exit 1; }
[ -x build/traced ] || { echo "screens.sh: build traced first (make)"; exit 1; }

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
tmp=$(mktemp -d)
listen=127.0.0.1:$(port)
api=http://$listen
TRACED_LISTEN=$listen ATOM_PORT=$(port) TRACED_DEMO_DIR=$tmp/demo \
  ./scripts/run.sh >"$tmp/run.log" 2>&1 &
run=$!
trap 'kill $run 2>/dev/null; wait $run 2>/dev/null; rm -rf "$tmp"' EXIT

# The status of capture $1 once it is final (done, failed, ...).
final() {
  i=0
  while [ $i -lt 600 ]; do
    s=$(curl -sf "$api/captures/$1" | python3 -c '
import json, sys
c = json.load(sys.stdin)
print(c["status"] if c["status"] not in ("queued", "running") else "")' \
      2>/dev/null || true)
    [ -n "$s" ] && { echo "$s"; return; }
    i=$((i + 1))
    sleep 0.5
  done
  echo "screens.sh: capture $1 never ended; $tmp/run.log:" >&2
  cat "$tmp/run.log" >&2
  exit 1
}

# Queues a capture of the demo's configuration with extra members $1.
queue() {
  curl -sf -X POST "$api/captures" -H 'Content-Type: application/json' \
    -d '{"model":"'"$tmp/demo/model/gpt-oss-120b"'","isl":128,"osl":32,"conc":4'"$1"'}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}

until curl -sf "$api/captures/1" >/dev/null 2>&1; do sleep 0.2; done
echo "demo capture 1: $(final 1)"
again=$(queue ',"label":"again"')
echo "capture $again: $(final "$again")"
bad=$(queue ',"label":"fault","env":{"ATOM_SIM_FAULTS":"fatal_marker_during_bench=2"}')
echo "capture $bad: $(final "$bad")"
marked=$(queue ',"label":"mark_trace","mark_trace":true')
echo "capture $marked: $(final "$marked")"
# The Perf tab's: a real trace taken with record_shapes, with_stack and
# profile_memory (the simulator's captures have none of them), imported
# from the shared traces the demo may import from.
more=$(curl -sf -X POST "$api/imports" -H 'Content-Type: application/json' \
  -d '{"path":"'"$(cd ../shared/traces && pwd -P)"'/tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz","label":"MORE"}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
echo "import $more: $(final "$more")"
python3 scripts/screens.py "$api" "$OUT" 1 "$again" "$bad" "$marked" "$more"
