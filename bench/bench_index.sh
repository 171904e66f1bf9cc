#!/bin/sh
# Indexing speed and memory on big traces (the reader's targets):
#   `traced index` wall time <= 0.5 x `zcat FILE >/dev/null` on a >= 1 GB
#   (uncompressed) trace; peak RSS <= 64 MB and flat from 1 GB to 4 GB.
# Builds bench/out/big1.json.gz (>= 1 GB of JSON) and big4.json.gz (4x) from
# a real ROCm trace (bench/make_big_trace.py) unless they exist, then times,
# in the same run: traced index, zcat, igzip -dc, and (1 GB only) Python's
# json.load. Each figure is the best of BENCH_RUNS (1) runs.
# Env: TRACED_BIN (build/traced), BENCH_OUT (bench/out), BENCH_SOURCE,
# BENCH_RUNS, BENCH_NO_PYTHON=1 to skip the slow json.load baseline.
set -eu
cd "$(dirname "$0")/.."
BIN=${TRACED_BIN:-build/traced}
OUT=${BENCH_OUT:-bench/out}
SRC=${BENCH_SOURCE:-../shared/traces/tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz}
RUNS=${BENCH_RUNS:-1}

[ -x "$BIN" ] || { echo "bench: $BIN not built (make)" >&2; exit 2; }
mkdir -p "$OUT"
avail_kb=$(df -Pk "$OUT" | awk 'NR == 2 { print $4 }')
if [ "$avail_kb" -lt 2000000 ]; then
  echo "bench: less than 2 GB free under $OUT" >&2
  exit 2
fi

make_trace() {  # make_trace NAME MIN_BYTES
  [ -s "$OUT/$1.json.gz" ] && [ -s "$OUT/$1.json.gz.facts.json" ] && return
  echo "bench: generating $OUT/$1.json.gz (>= $2 bytes of JSON)"
  python3 bench/make_big_trace.py --source "$SRC" --min-bytes "$2" \
    --out "$OUT/$1.json.gz"
}
make_trace big1 1000000000
make_trace big4 4000000000

# measure LABEL CMD... -> prints "LABEL SECONDS PEAK_RSS_KB" (best of RUNS).
measure() {
  python3 - "$RUNS" "$@" <<'EOF'
import resource, subprocess, sys, time
runs, label, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
best = None
for _ in range(runs):
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = __import__('os').wait4(p.pid, 0)
    wall = time.monotonic() - t
    if status != 0:
        sys.exit(f'{label}: {cmd} failed ({status})')
    if best is None or wall < best[0]:
        best = (wall, ru.ru_maxrss)
print(label, f'{best[0]:.3f}', best[1])
EOF
}

# check FILE: traced index must count every event the generator wrote.
check() {
  "$BIN" index "$1" | python3 -c '
import json, sys
got = json.load(sys.stdin)
want = json.load(open(sys.argv[1] + ".facts.json"))
assert got["events"] == want["events"], (got["events"], want["events"])
assert got["json_bytes"] == want["json_bytes"], (got["json_bytes"],
                                                 want["json_bytes"])
assert got["skipped_events"] == 0
print("  events %d, json %.2f GB: match the generator" %
      (got["events"], got["json_bytes"] / 1e9))' "$1"
}

report() {  # report FILE WITH_PYTHON
  f=$1
  echo "== $f ($(du -m "$f" | cut -f1) MB gzip)"
  check "$f"
  t=$(measure traced "$BIN" index "$f")
  z=$(measure zcat zcat "$f")
  i=$(measure igzip igzip -dc "$f")
  p=""
  if [ "$2" = yes ] && [ "${BENCH_NO_PYTHON:-0}" != 1 ]; then
    p=$(measure json.load python3 -c \
      'import gzip, json, sys; json.load(gzip.open(sys.argv[1]))' "$f")
  fi
  printf '%s\n%s\n%s\n%s\n' "$t" "$z" "$i" "$p" | awk '
    NF == 3 { s[$1] = $2; r[$1] = $3 }
    END {
      printf "  traced index   %7.2f s  peak RSS %6.1f MB\n", s["traced"], r["traced"] / 1024
      printf "  zcat           %7.2f s  traced/zcat  = %.2f (target <= 0.50)\n", s["zcat"], s["traced"] / s["zcat"]
      printf "  igzip -dc      %7.2f s  traced/igzip = %.2f\n", s["igzip"], s["traced"] / s["igzip"]
      if ("json.load" in s)
        printf "  json.load      %7.2f s  traced/json  = %.3f  (its RSS %.0f MB)\n", s["json.load"], s["traced"] / s["json.load"], r["json.load"] / 1024
    }'
}

report "$OUT/big1.json.gz" yes
report "$OUT/big4.json.gz" no
