#!/usr/bin/env python3
"""What "mark_trace": true costs on the ATOM simulator (bench_mark_trace.sh;
docs/DECODE.md, "Cost"), in one run: ROUNDS captures of each, alternated,
the same request (TP 2) and the same run trace on both sides (the SGLang
pair's, whose graph replays its capture traces recorded; the simulator
writes them per rank with --mark-trace). Each capture's phases are timed
by polling GET /captures/<id> every 50 ms (their median per phase), the
capture traces' bytes on disk counted, and, apart from the daemon, one
rank's indexing timed with and without its capture traces beside it
(traced index, CPU seconds: the part of the indexing phase that is
decode's).

What the simulator cannot show is ATOM's own side: the torch profiler
running over every graph capture at start-up (SIM_CAPTURE_EXPORT_S a
capture stands for its export, 0.1 s unless set) and record_function
around every decorated module of eager steps (graph replays run none).
Usage: bench_mark_trace.py (env: TRACED_BIN, ROUNDS)."""
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "sim"))
sys.path.insert(0, HERE)
import bench  # noqa: E402
from test_capture_lib import FINAL, Rig  # noqa: E402
from tracedtest import TRACES_DIR  # noqa: E402

PAIR = os.path.join(TRACES_DIR, "graph_pairs", "sglang_decode")
REQUEST = {"tp": 2, "conc": 2, "isl": 8, "osl": 4}  # the rig's model


def run_trace():
    return [os.path.join(PAIR, n) for n in sorted(os.listdir(PAIR))
            if n.endswith(".json.gz")][0]


def phase_order():
    """The phases in the order a capture runs them (common/lifecycle.h)."""
    with open(os.path.join(HERE, "..", "common", "lifecycle.h")) as f:
        return re.findall(r"XX\(\w+, (\w+), (?:\"\w+\"|NULL)\)", f.read())


def timed(rig, mark):
    """{phase: seconds}, the whole capture's seconds, the capture traces'
    bytes, the finished capture."""
    cid = rig.capture(mark_trace=mark, **REQUEST)
    seen, t0 = {}, time.monotonic()
    while True:
        cap = rig.get(cid)
        seen.setdefault(cap["phase"], time.monotonic())
        if cap["status"] in FINAL:
            break
        time.sleep(0.05)
    end = time.monotonic()
    if cap["status"] != "done":
        sys.exit("bench: capture %d %s: %s" % (cid, cap["status"],
                                                cap.get("error")))
    # A phase shorter than the poll may go unseen: its time counts in the
    # phase before it.
    marks = sorted(seen.items(), key=lambda kv: kv[1]) + [("end", end)]
    phases = {p: b - a for (p, a), (_, b) in zip(marks, marks[1:])}
    size = 0
    for top, _, files in os.walk(cap["trace_dir"]):
        if os.path.basename(top) == "capture_traces":
            size += sum(os.path.getsize(os.path.join(top, f)) for f in files)
    return phases, end - t0, size, cap


def main():
    rounds = int(os.environ.get("ROUNDS", "3"))
    print("machine:", bench.machine().rsplit(";", 1)[0])
    got = {False: [], True: []}
    # Phase bounds for a busy machine (the tests' are short).
    with Rig(traces=[run_trace()], sim_env={"SIM_LAUNCH_CAP_S": "300"},
             conf={"launch_timeout_s": "300", "ready_timeout_s": "300",
                   "bench_timeout_s": "300"}) as rig:
        for _ in range(rounds):
            for mark in (False, True):
                got[mark].append(timed(rig, mark))
        cap = got[True][-1][3]
        r0 = cap["ranks"][0]
        caps = os.path.join(cap["trace_dir"], "rank_0", "capture_traces")
        m = bench.rounds({"without": [bench.TRACED, "index", "--captures",
                                      "none", r0["file"]],
                          "with": [bench.TRACED, "index", "--captures", caps,
                                   r0["file"]]}, max(rounds, 5))
    print("== %d captures each, TP 2, the run trace %s" % (
        rounds, os.path.basename(run_trace())))
    print("  %-16s %12s %12s %10s" % ("phase (median s)", "mark_trace off",
                                       "on", "on - off"))
    for p in phase_order()[:-1] + ["whole capture"]:
        v = [statistics.median(r[0].get(p, 0) if p != "whole capture"
                               else r[1] for r in got[mark])
             for mark in (False, True)]
        print("  %-16s %12.2f %12.2f %+10.2f" % (p, v[0], v[1], v[1] - v[0]))
    print("  capture traces: %.1f KB per capture (%d ranks), rank 0: %d "
          "traces, %d graphs; %d replays, %d matched" % (
              statistics.median(r[2] for r in got[True]) / 1024,
              len(cap["ranks"]), r0["capture_traces"], r0["capture_graphs"],
              r0["replays"], r0["replays_matched"]))
    (wo_wall, wo_kb, _, wo_cpu), (w_wall, w_kb, _, w_cpu) = (
        m["without"], m["with"])
    print("  rank 0 indexed without / with its capture traces: CPU %.3f / "
          "%.3f s, wall %.3f / %.3f s, peak RSS %.1f / %.1f MB (medians)" % (
              statistics.median(wo_cpu), statistics.median(w_cpu), wo_wall,
              w_wall, wo_kb / 1024, w_kb / 1024))


if __name__ == "__main__":
    main()
