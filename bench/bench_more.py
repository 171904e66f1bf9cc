#!/usr/bin/env python3
"""What ATOM_PROFILER_MORE=1 costs to index (bench_more.sh; docs/PERF.md,
"Cost"), in one run: a MORE trace indexed by this traced (TRACED_BIN: the
op groups against the roof, memory over time, kernel time by source line)
and by today's (TRACED_BASE_BIN: main's build, which reads past what
MORE adds), in turn, ROUNDS times: the median of each round's ratio,
wall (the target, <= 1.15x, as the other indexing targets of
docs/BENCHMARKS.md) and CPU (user + system), and peak RSS; what this
traced found in it.

Usage: bench_more.py TRACE
"""
import json
import os
import statistics
import subprocess
import sys

import bench

BASE = os.environ.get("TRACED_BASE_BIN", "../main/build/traced")


def found(path):
    s = json.loads(subprocess.run([bench.TRACED, "index", "--captures",
                                   "none", path], capture_output=True,
                                  text=True, check=True).stdout)
    print("== %s: %.2f GB JSON, %d events; op groups %d over %d instances "
          "(%d unmodeled, %d left out), memory events %d (%d devices), "
          "source lines %d" % (
              os.path.basename(path), s["json_bytes"] / 1e9, s["events"],
              len(s["op_perf"]), s["op_instances"], s["op_unmodeled"],
              s["op_instances_lost"], s["memory_events"], len(s["memory"]),
              len([r for r in s["sources"] if r["source"]])))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    print("machine:", bench.machine())
    found(path)
    m = bench.rounds({
        "today (%s)" % BASE: [BASE, "index", "--captures", "none", path],
        "traced with MORE's figures": [bench.TRACED, "index", "--captures",
                                       "none", path]})
    bench.show(m, 40)
    (_, bkb, bws, bcs), (_, kb, ws, cs) = m.values()
    wall = statistics.median(w / b for w, b in zip(ws, bws))
    cpu = statistics.median(c / b for c, b in zip(cs, bcs))
    print("  with / without, the median of each round's ratio: wall %.3fx "
          "(target <= 1.15x: %s), CPU %.3fx (load average %.1f); peak RSS "
          "%.1f MB against %.1f MB" % (
              wall, bench.verdict(wall <= 1.15), cpu, os.getloadavg()[0],
              kb / 1024, bkb / 1024))


if __name__ == "__main__":
    main()
