#!/usr/bin/env python3
"""Decode's cost (bench_decode.sh; docs/DECODE.md, "Cost"), in one run:

  1. bench/'s big trace indexed with its real capture trace beside it, by
     this traced (TRACED_BIN) and by today's (TRACED_BASE_BIN), and by this
     one without the capture, in turn, ROUNDS times: the median of each
     round's ratio to today's, CPU time (user + system: the target, <=
     1.2x; on a machine shared with other work, wall time is mostly the
     wait for a core) and wall; peak RSS (target < 48 MB); the replays it
     matched.
  2. The real pair itself, traced against TraceLens's own graph-mode
     report (tracelens_report.py, with TRACELENS_DIR): wall, CPU, peak RSS,
     and figure for figure their time per (op, parent module): how many
     rows agree within half a float64 ulp per kernel (TraceLens keeps
     microseconds since the epoch in floats; tests/test_decode_tracelens.py
     explains every difference), the largest rows side by side.

Usage: bench_decode.py BIG_TRACE CAPTURE_FOLDER PAIR_RUN PAIR_CSV
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import bench

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
# The rows as the test that holds them to TraceLens's reads them.
from test_decode_tracelens import tracelens_rows, traced_rows  # noqa: E402

BASE = os.environ.get("TRACED_BASE_BIN", "../main/build/traced")
TL_DIR = os.environ.get("TRACELENS_DIR", "")
TL_PY = os.environ.get("TRACELENS_PYTHON", "/usr/bin/python3")
TL_ROUNDS = int(os.environ.get("TL_ROUNDS", "1"))


def summary(args):
    out = subprocess.run([bench.TRACED, "index"] + args, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def big(path, caps):
    got = bench.check_facts(path)
    s = summary(["--captures", caps, path])
    print("== %s: %.2f GB JSON, %d events; its capture trace: %d graph, %d "
          "launches; %d replays: %d matched, %d short (%d launches lost "
          "from the trace), %d unmatched" % (
              os.path.basename(path), got["json_bytes"] / 1e9, got["events"],
              s["capture_graphs"], s["capture_launches"], s["replays"],
              s["replays_matched"], s["replays_short"],
              s["missing_launches"], s["replays_unmatched"]))
    m = bench.rounds({
        "today (%s)" % BASE: [BASE, "index", path],
        "traced with captures": [bench.TRACED, "index", "--captures", caps,
                                 path],
        "traced, no captures": [bench.TRACED, "index", path]})
    bench.show(m)
    (_, _, tws, tcs), (_, dkb, dws, dcs), (_, nkb, nws, ncs) = m.values()

    def ratio(xs, ys):
        return statistics.median(x / y for x, y in zip(xs, ys))
    cpu, wall = ratio(dcs, tcs), ratio(dws, tws)
    print("  with captures / today, the median of each round's ratio: CPU "
          "%.2f (target <= 1.20: %s), wall %.2f (load average %.1f: on a "
          "busy machine wall time is mostly waiting for a core); peak RSS "
          "%.1f MB (target < 48 MB: %s)" % (
              cpu, bench.verdict(cpu <= 1.2), wall, os.getloadavg()[0],
              dkb / 1024, bench.verdict(dkb / 1024 < 48)))
    print("  no captures / today: CPU %.2f, wall %.2f; peak RSS %.1f MB" % (
        ratio(ncs, tcs), ratio(nws, tws), nkb / 1024))


def pair(run, caps, csv_path):
    print("== the pair: %s with %s" % (os.path.basename(run), caps))
    cmds = {"traced": [bench.TRACED, "index", "--captures", caps, run]}
    with tempfile.TemporaryDirectory(prefix="tracelens-") as out:
        m = bench.rounds(cmds)
        if TL_DIR:
            m.update(bench.rounds({"TraceLens graph-mode report": [
                TL_PY, os.path.join(HERE, "tracelens_report.py"), TL_DIR,
                run, caps, out]}, TL_ROUNDS))
            csv_path = os.path.join(out, "ops_summary.csv")
        else:
            print("  (TRACELENS_DIR unset: TraceLens not run; its figures "
                  "from %s)" % csv_path)
        bench.show(m)
        if TL_DIR:
            tl, tr = m["TraceLens graph-mode report"], m["traced"]
            print("  TraceLens / traced: wall %.1fx, CPU %.1fx, peak RSS "
                  "%.1fx" % (tl[0] / tr[0], statistics.median(tl[3]) /
                             statistics.median(tr[3]), tl[1] / tr[1]))
        theirs = tracelens_rows(csv_path)
    ours = traced_rows(summary(["--captures", caps, run]))
    agree = [k for k in ours if k in theirs and
             abs(ours[k][0] - theirs[k][0] * 1000) <= 0.5 * ours[k][2] and
             ours[k][1] == theirs[k][1]]
    print("  (op, parent module) rows: traced %d, TraceLens %d, equal %d "
          "(within 0.5 ns a kernel, same count); the others: %s" % (
              len(ours), len(theirs), len(agree),
              sorted(set(ours) ^ set(theirs), key=str)))
    print("  %-44s %-24s %14s %14s %6s" % ("op", "parent module", "traced us",
                                          "TraceLens us", "count"))
    for k in sorted(ours, key=lambda k: -ours[k][0])[:8]:
        print("  %-44.44s %-24.24s %14.3f %14.3f %6d" % (
            k[0], k[1] or "NA", ours[k][0] / 1000,
            theirs.get(k, (float("nan"),))[0], ours[k][1]))


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    print("machine:", bench.machine())
    big(sys.argv[1], sys.argv[2])
    pair(sys.argv[3], sys.argv[2], sys.argv[4])


if __name__ == "__main__":
    main()
