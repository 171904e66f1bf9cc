#!/usr/bin/env python3
"""traced's critical path against Holistic Trace Analysis' own
(hta/analyzers/critical_path_analysis.py, run through tests/hta_cpath.py)
on the same traces: per iteration, the path's length and the device
records on it (the kernels, copies and memsets whose own span the path
runs through), and each difference explained (docs/CRITICAL_PATH.md, "Where
traced follows HTA, and where not"):

- ties: where both paths have the same length, a record only one of them
  takes has slack 0 in traced (it lies on a longest path too);
- the last of two or more ProfilerSteps: HTA drops its CPU events at load,
  so it has no path; traced has one;
- nanosecond times: HTA rounds them to microseconds (start up, end down);
  traced on the trace rounded the same way equals HTA;
- CUDA graph replays: HTA's window keeps one kernel of a replay (its
  correlation index maps a launch to one kernel) and takes the others' time
  as kernel-to-kernel overhead; traced keeps them all (same length here);
- zero-weight launch edges (an HTA option for its simulations, off by
  default and on in its own tests): traced follows the default.

HTA and an interpreter with what HTA imports are needed (Debian's
python3-pandas, -networkx, -plotly, -psutil and -yaml, which
scripts/deps.sh installs when either variable below is set): HTA's
source from TRACED_HTA_SRC (the folder holding the hta package) or a
clone of its repository (TRACED_HTA_REPO, read with git archive). Both
come from the environment only: HTA's code is never in this tree, and a
machine without it (CI's) skips the test (77), saying what is missing.

Usage: test_cpath_hta.py TRACED
"""
import glob
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_cpath  # noqa: E402

TRACES = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "traces"))
SKIP = 77


def hta_source(tmp):
    src = os.environ.get("TRACED_HTA_SRC")
    if src and os.path.isdir(os.path.join(src, "hta")):
        return src
    repo = os.environ.get("TRACED_HTA_REPO")
    if not repo or not os.path.isdir(repo):
        return None
    out = os.path.join(tmp, "hta_src")
    os.makedirs(out)
    tar = subprocess.run(["git", "-C", repo, "archive", "HEAD", "hta"],
                         capture_output=True)
    if tar.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", out], input=tar.stdout, check=True)
    return out


# The third-party modules HTA's analyzers import.
HTA_IMPORTS = "import pandas, networkx, numpy, plotly, psutil, yaml"


def interpreter():
    for py in (sys.executable, "/usr/bin/python3"):
        if py and subprocess.run([py, "-c", HTA_IMPORTS],
                                 capture_output=True).returncode == 0:
            return py
    return None


class Hta:
    def __init__(self, py, src):
        self.py, self.src = py, src

    def run(self, trace, annotation=None, instances=(0,), env=None):
        cmd = [self.py, os.path.join(HERE, "hta_cpath.py"), "--hta-src",
               self.src, "--trace", trace]
        if annotation is not None:
            cmd += ["--annotation", annotation, "--instances",
                    ",".join(map(str, instances))]
        out = subprocess.run(cmd, capture_output=True, text=True,
                             env=dict(os.environ, **(env or {})))
        if out.returncode != 0:
            raise AssertionError("HTA failed on %s: %s" % (trace,
                                                           out.stderr[-2000:]))
        return json.loads(out.stdout)["windows"]


def traced(binary, trace):
    """Per step (index order): length (us), records {(name, start_us,
    end_us): (on_path, slack_ns)}, bounds, kind, start."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as dump:
        subprocess.run([binary, "index", trace], check=True,
                       stdout=subprocess.DEVNULL,
                       env=dict(os.environ, TRACED_CPATH_DUMP=dump.name))
        steps = [json.loads(line) for line in open(dump.name)]
    steps.sort(key=lambda s: s["index"])
    for s in steps:
        s["recs"] = {(r[0] if r[0] != "copy" else None, us(r[2]), us(r[3])):
                     (r[4], r[5]) for r in s["records"]}
    return steps


def us(ns):
    """ns as HTA's microseconds: exact for whole ones (a float of a Unix
    time in ns has no room for them)."""
    return ns // 1000 if ns % 1000 == 0 else ns / 1000.0


def on_path(recs):
    return {k for k, (on, _) in recs.items() if on}


def hta_recs(w):
    return {(r[0], int(r[2]) if r[2] == int(r[2]) else r[2],
             int(r[3]) if r[3] == int(r[3]) else r[3]) for r in w["records"]}


def same_ignoring_copy_names(a, b):
    """Records compared by times and name, copies and memsets by times
    (traced's dump names them "copy")."""
    norm = lambda s: {(n if n is not None and not n.startswith(  # noqa
        ("Memcpy", "Memset")) else None, t0, t1) for n, t0, t1 in s}
    return norm(a), norm(b)


class Check:
    def __init__(self):
        self.errors, self.notes = [], []

    def ok(self, cond, what):
        if not cond:
            self.errors.append(what)

    def paths(self, name, mine, hta):
        """Equal lengths; records equal but for ties (slack 0 in traced)."""
        self.ok(abs(mine["length_ns"] / 1000.0 - hta["length"]) < 1e-6,
                "%s: length traced %.3f us, HTA %.3f us" % (
                    name, mine["length_ns"] / 1000.0, hta["length"]))
        t, h = same_ignoring_copy_names(on_path(mine["recs"]),
                                        hta_recs(hta))
        slack = {}
        for (n, t0, t1), (_, s) in mine["recs"].items():
            key = (n if n is not None else None, t0, t1)
            slack[key] = s
        for k in h - t:
            match = [s for (n, t0, t1), s in slack.items()
                     if (t0, t1) == k[1:] and (k[0] is None or n == k[0] or
                                               n is None)]
            self.ok(match and min(match) == 0,
                    "%s: HTA has %s on its path, traced not and not a tie "
                    "(slack %s)" % (name, k, match))
        self.notes.append("%s: length traced %.3f us, HTA %.3f us; %d records "
                          "on HTA's path, %d on traced's, %s" % (
                              name, mine["length_ns"] / 1000.0,
                              hta["length"], len(h), len(t),
                              "%d differ, all ties" % len(t ^ h) if t != h
                              else "the same"))


def rounded_copy(src, dst):
    """The trace with times as HTA rounds ns ones: start up to the next
    microsecond, end down (trace_parser.round_down_time_stamps)."""
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if "ts" in e and "dur" in e:
            end = math.floor(e["ts"] + e["dur"])
            e["ts"] = math.ceil(e["ts"])
            e["dur"] = end - e["ts"]
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)


def main():
    binary = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="cpath_hta_")
    try:
        src, py = hta_source(tmp), interpreter()
        if src is None:
            print("skipped: no HTA source: set TRACED_HTA_SRC (the folder "
                  "holding its hta package) or TRACED_HTA_REPO (a clone of "
                  "HolisticTraceAnalysis); CI has neither")
            sys.exit(SKIP)
        if py is None:
            print("skipped: no interpreter can %r (Debian's python3-pandas "
                  "-networkx -plotly -psutil -yaml)" % HTA_IMPORTS)
            sys.exit(SKIP)
        run(binary, Hta(py, src), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(binary, hta, tmp):
    c = Check()
    # AlexNet (HTA's own test trace, cuda_sync events): one path over the
    # whole trace (no ProfilerStep), HTA's window "" the same.
    alex = glob.glob(os.path.join(TRACES, "hta__alexnet_*.json.gz"))[0]
    w = hta.run(alex)[0]
    c.paths("alexnet", traced(binary, alex)[0], w)
    c.ok(len(w["records"]) > 30, "alexnet: HTA's path holds records")

    gen = make_cpath.generate(os.path.join(tmp, "gen"))
    for path in [p for p in gen if "multistream_" in p and "_ns" not in p]:
        mine = traced(binary, path)
        last = len(mine) - 1
        ws = hta.run(path, "ProfilerStep#", range(len(mine)))
        for i, s in enumerate(mine):
            name = "%s step %d" % (os.path.basename(path), i)
            w = [x for x in ws if x["instance"] == i][0]
            if i == last:
                # HTA drops the last ProfilerStep's CPU events at load
                # (Trace._filter_irrelevant_gpu_kernels): no window.
                c.ok(not w["ok"], "%s: HTA analysed the last step" % name)
                c.ok(s["status"] == 0 and s["length_ns"] > 0,
                     "%s: traced did not" % name)
                continue
            c.ok(w["ok"], "%s: HTA failed" % name)
            if w["ok"]:
                c.paths(name, s, w)
        # Zero-weight launch edges (HTA's option for simulations, on in its
        # tests): never shorter, and traced follows the default (off).
        on = hta.run(path, "ProfilerStep#", range(last),
                     env={"CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE": "1"})
        for x, y in zip(on, ws):
            c.ok(x["length"] >= y["length"],
                 "%s: zero-weight launch edges shortened the path" % path)

    # Nanosecond times: HTA rounds each event to whole microseconds; traced
    # on the trace rounded as HTA rounds it equals HTA.
    ns = [p for p in gen if "multistream_ns" in p][0]
    rounded = os.path.join(tmp, "rounded.json.gz")
    rounded_copy(ns, rounded)
    mine, exact = traced(binary, rounded), traced(binary, ns)
    ws = hta.run(ns, "ProfilerStep#", range(len(mine) - 1))
    for i, w in enumerate(ws):
        c.paths("ns trace step %d (rounded)" % i, mine[i], w)
    c.ok(any(abs(e["length_ns"] / 1000.0 - w["length"]) > 1e-6
             for e, w in zip(exact, ws)),
         "ns trace: rounding made no difference (the case proves nothing)")

    # CUDA graph replays (the ATOM-style rank, run-label windows): HTA keeps
    # one kernel of each replay and counts the rest as kernel-to-kernel
    # overhead; traced takes every replayed kernel (lengths agree here).
    atom = [p for p in gen if "atom_rank" in p][0]
    mine = traced(binary, atom)
    ws = hta.run(atom, "decode[", range(len(mine)))
    graph = {"mlp_gate_up_gemm", "silu_mul_kernel", "mlp_down_gemm"}
    for s, w in zip(mine, ws):
        name = "atom_rank step %d" % s["index"]
        c.ok(w["ok"] and abs(s["length_ns"] / 1000.0 - w["length"]) < 1e-6,
             "%s: lengths differ" % name)
        t, h = same_ignoring_copy_names(on_path(s["recs"]), hta_recs(w))
        c.ok(t - h and {k[0] for k in t - h} <= graph and not h - t,
             "%s: not just the replayed kernels differ: %s / %s" % (
                 name, t - h, h - t))
        c.ok(w["bound_by"].get("gpu_kernel_kernel_overhead", 0) > 0 and
             s["bounds"]["gap"] == 0,
             "%s: HTA's overhead is the replay: %s vs %s" % (
                 name, w["bound_by"], s["bounds"]))
    for n in c.notes:
        print(n)
    for e in c.errors:
        print("FAIL", e)
    print("%d checks failed" % len(c.errors))
    sys.exit(1 if c.errors else 0)


if __name__ == "__main__":
    main()
