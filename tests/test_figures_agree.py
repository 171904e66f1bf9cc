#!/usr/bin/env python3
"""Every figure two routes both report, read from both over HTTP, must
agree (docs/ANALYSIS.md, docs/CRITICAL_PATH.md: one definition each), on
captures of real traces: a TP 2 rank pair the simulator composes of real
forward passes (GPU-side labels, graph replays), resnet's three
ProfilerSteps (host-side steps, two streams) and the V100 trace of five;
per rank and over all ranks:

  - a step's critical path never exceeds its window (critical_path/steps,
    and each kind's sum in critical_path/summary), its five bounds make
    its length, over all ranks as on one (every rank's rows as the rank
    gives them), and ?kind= gives that kind's steps;
  - a kind with two analysed steps or more has a median and a slowest
    step, never the same one; the median is /steps/outliers' median step
    (the same label);
  - /steps' count of a kind is critical_path/summary's steps;
  - "kernel time inside" a kind (/steps kernel_ns) is the kernels its
    step cards' rule counts: /families/steps summed under GPU-side
    labels; a card never lists more kernel time than its kind holds;
  - /idle/culprits' idle caused, by step and cause, is /idle?by=step's;
  - kernels?on_path=1 and families?on_path=1's critical_ns are
    critical_path/kernels' and critical_path/families' summed over kinds;
  - /diff's totals by category are each capture's /categories;
  - the verdict's category figures are /categories' totals per real step
    (a rank's steps: the ranks of a TP group run the same);
  - and every real in these answers, JSON and CSV, is written with the
    fewest digits that read back (never 0.23145099999999999).
"""
import math
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_composed import make_ranks  # noqa: E402
from tracedtest import TRACES_DIR, Daemon, check, check_eq  # noqa: E402

ALL = 1000       # limit: the most a route gives
# The bounds that make a critical path's length (docs/CRITICAL_PATH.md).
BOUNDS = ("cpu_ns", "gpu_ns", "comm_ns", "launch_ns", "gap_ns")


class Reader:
    def __init__(self, d, cid):
        self.d, self.cid = d, cid

    def rows(self, route, **q):
        query = "&".join("%s=%s" % (k, v) for k, v in q.items()
                         if v is not None)
        code, body = self.d.get("/captures/%d/%s?%s" % (self.cid, route,
                                                        query))
        check_eq(code, 200, "%s: %s" % (route, body))
        return body["rows"]


def composed_pair(tmp):
    """rank_0 and rank_1 of a TP 2 engine the simulator composes of real
    forward passes (make_composed.py)."""
    top = os.path.join(tmp, "tp2")
    make_ranks(top, 7, ranks=2)
    return top


def check_paths(rd, rank, what):
    steps = rd.rows("critical_path/steps", rank=rank, limit=ALL)
    summary = rd.rows("critical_path/summary", rank=rank, limit=ALL)
    for s in steps:
        check(s["status"] != "ok" or s["length_ns"] <= s["dur_ns"],
              "%s: step %d's path %d beyond its window %d" % (
                  what, s["index"], s["length_ns"], s["dur_ns"]))
        # Its five bounds make its length (docs/CRITICAL_PATH.md), over
        # all ranks as on one: a step's own, never its kind's.
        check_eq(sum(s[b] for b in BOUNDS), s["length_ns"],
                 "%s: step %d's breakdown" % (what, s["index"]))
    if rank is None:       # every rank's rows as each rank gives them
        mine = []
        for r in sorted({s["rank"] for s in steps}):
            mine += [dict(x, rank=r) for x in rd.rows(
                "critical_path/steps", rank=r, limit=ALL)]
        check_eq(sorted((s["rank"], s["index"], s["cpu_ns"], s["gpu_ns"])
                        for s in steps),
                 sorted((s["rank"], s["index"], s["cpu_ns"], s["gpu_ns"])
                        for s in mine), "%s: every rank's steps" % what)
    for k in {s["step"] for s in steps}:
        check_eq({s["step"] for s in rd.rows("critical_path/steps",
                                               rank=rank, kind=k,
                                               limit=ALL)}, {k},
                 "%s: critical_path/steps?kind=%s" % (what, k))
    outliers = rd.rows("steps/outliers", rank=rank, limit=ALL)
    counts = {r["kind"]: r["count"] for r in rd.rows("steps", rank=rank)}
    for k in summary:
        check(k["length_ns"] <= k["window_ns"], "%s: %s" % (what, k))
        check_eq(k["steps"], counts.get(k["step"]), "%s: %s steps" % (
            what, k["step"]))
        if rank is None:   # the picks are a rank's
            continue
        roles = [s for s in steps if s["step"] == k["step"] and s["role"]]
        if k["analyzed"] >= 2:
            check_eq(sorted(s["role"] for s in roles), ["median", "slowest"],
                     "%s: %s's picks" % (what, k["step"]))
        med = [s for s in roles if "median" in s["role"]]
        card = [o for o in outliers if o["kind"] == k["step"] and
                o["role"] == "median"]
        check(med and card and med[0]["label"] == card[0]["label"],
              "%s: %s's median step: %s, its card %s" % (
                  what, k["step"], med[:1], card[:1]))


def check_inside(rd, rank, what):
    steps = rd.rows("steps", rank=rank)
    fams = rd.rows("families/steps", rank=rank, limit=ALL)
    for s in steps:
        if s["source"] == "gpu":
            check_eq(sum(f["total_ns"] for f in fams if f["step"] ==
                         s["kind"]), s["kernel_ns"],
                     "%s: %s's kernel time inside" % (what, s["kind"]))
    for o in rd.rows("steps/outliers", rank=rank, limit=ALL):
        kind = next(s for s in steps if s["kind"] == o["kind"])
        listed = sum(t["total_ns"] for t in o["top_kernels"])
        check(listed <= kind["kernel_ns"] and (kind["kernel_ns"] > 0 or
                                               listed == 0),
              "%s: %s's card lists %d ns, the kind holds %d" % (
                  what, o["label"], listed, kind["kernel_ns"]))


def check_idle(rd, rank, what):
    by_step = {(r["step"], r["cause"]): r["idle_ns"]
               for r in rd.rows("idle", rank=rank, by="step")}
    caused = {}
    for c in rd.rows("idle/culprits", rank=rank, limit=ALL):
        key = (c["step"], c["cause"])
        caused[key] = caused.get(key, 0) + c["idle_ns"]
        check(c["p50_ns"] <= c["p99_ns"], "%s: %s" % (what, c))
    for key, ns in caused.items():
        check_eq(ns, by_step.get(key), "%s: idle caused %s" % (what, key))


def check_on_path(rd, rank, what):
    for table, key in (("kernels", "name"), ("families", "family")):
        paths = {}
        for r in rd.rows("critical_path/" + table, rank=rank, limit=ALL):
            paths[r[key]] = paths.get(r[key], 0) + r["critical_ns"]
        on = {r[key]: r["critical_ns"]
              for r in rd.rows(table, rank=rank, on_path=1, limit=ALL)}
        check_eq(on, {k: v for k, v in paths.items() if v > 0},
                 "%s: %s on the path" % (what, table))


def check_diff(d, a, b):
    code, diff = d.get("/diff?a=%d&b=%d&by=category&limit=1000" % (a, b))
    check_eq(code, 200, "diff")
    for side, cid in (("a", a), ("b", b)):
        cats = {r["category"]: r["total_ns"]
                for r in Reader(d, cid).rows("categories", limit=ALL)}
        check_eq({r["category"]: r[side + "_total_ns"] for r in diff["rows"]
                  if r[side + "_total_ns"]}, cats, "diff's %s" % side)


def check_verdict(d, a, b):
    code, v = d.get("/captures/%d/verdict?baseline=%d" % (b, a))
    check_eq(code, 200, "verdict")
    check(any(f["figure"] == "category" for f in v["figures"]),
          "verdict: %s" % v)
    for cid, side in ((a, "baseline"), (b, "value")):
        rd = Reader(d, cid)
        # A capture's real steps are a rank's (its ranks run the same).
        real = max(sum(s["count"] for s in rd.rows("steps", rank=r)
                       if not s["kind"].startswith("dummy_"))
                   for r in range(2))
        cats = {r["category"]: r["total_ns"]
                for r in rd.rows("categories", limit=ALL)}
        for f in v["figures"]:
            if f["figure"] == "category" and f[side] is not None:
                # llround(): halves away from zero (Python's round()
                # takes them to even)
                check_eq(f[side], math.floor(cats[f["name"]] / real + 0.5),
                         "verdict's %s %s" % (f["name"], side))


REAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])")


def significant(text):
    """The significant digits of a real's text."""
    mantissa = re.split("[eE]", text.lstrip("-"))[0].replace(".", "")
    return mantissa.strip("0")


def check_numbers(d, paths):
    """Every real in the answers' text, JSON and CSV, has the fewest
    digits that read back as its value (docs/API.md)."""
    for path in paths:
        code, text = d.get(path, raw=True)
        check_eq(code, 200, path)
        for tok in REAL.findall(text.decode()):
            check(len(significant(tok)) <=
                  len(significant(repr(float(tok)))),
                  "%s: %s, not %r" % (path, tok, float(tok)))


def main():
    tmp = tempfile.mkdtemp(prefix="traced-agree-")
    try:
        pair = composed_pair(tmp)
        paths = [pair, pair] + [os.path.join(TRACES_DIR, n) for n in (
            "tracelens__mi300_resnet_act_checkpoint.json.gz",
            "hta__ns_resolution_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")]
        with Daemon(conf={"import_roots": "%s:%s" % (TRACES_DIR, tmp)}) as d:
            ids = []
            for p in paths:
                code, cap = d.post("/imports", {"path": p})
                check_eq(code, 202, "import %s" % cap)
                check_eq(d.wait_status(cap["id"], timeout=300)["status"],
                         "done", p)
                ids.append(cap["id"])
            for cid, p in zip(ids, paths):
                rd = Reader(d, cid)
                ranks = [None] + list(range(2 if p.endswith("tp2") else 1))
                for rank in ranks:
                    what = "%s rank %s" % (os.path.basename(p), rank)
                    check_paths(rd, rank, what)
                    check_inside(rd, rank, what)
                    check_idle(rd, rank, what)
                    check_on_path(rd, rank, what)
                    print("agree: %s" % what)
            check_diff(d, ids[2], ids[3])
            check_diff(d, ids[0], ids[2])
            check_verdict(d, ids[0], ids[1])
            check_numbers(d, [p % ids[0] for p in (
                "/captures/%d/idle?by=step", "/captures/%d/categories",
                "/captures/%d/categories?format=csv", "/captures/%d/kernels",
                "/captures/%d/kernels?format=csv", "/captures/%d/steps",
                "/captures/%d/families", "/captures/%d/timeline",
                "/captures/%d/collectives?by=rank")] + [
                "/diff?a=%d&b=%d&by=category" % (ids[0], ids[2]),
                "/diff?a=%d&b=%d&by=category&format=csv" % (ids[0], ids[2]),
                "/captures/%d/verdict?baseline=%d" % (ids[1], ids[0])])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("every figure two routes report agrees on %d captures" % len(ids))


if __name__ == "__main__":
    main()
