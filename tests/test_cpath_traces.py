#!/usr/bin/env python3
"""`traced index` against the independent reference (ref_cpath.py) on every
real trace of ../shared/traces and on the generated ones (make_cpath.py):
every critical path figure of the summary exactly (the kinds' breakdown,
every step's path, the picked steps' segments, per kernel and family
their time on the path, steps and slack, the idle culprits, launch costs,
kernel sequences and the median step's kernels), and each step's records
on the path with their slack (TRACED_CPATH_DUMP).

Usage: test_cpath_traces.py TRACED [TRACE...]  (no traces: all of them)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_cpath  # noqa: E402
import ref_cpath  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "traces"))
COLS = ("critical_ns", "launch_calls", "launch_call_ns", "launch_call_p50_ns",
        "launch_call_p99_ns", "launch_queue_ns", "launch_queue_p50_ns",
        "launch_queue_p99_ns")


def traced(binary, path):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as dump:
        env = dict(os.environ, TRACED_CPATH_DUMP=dump.name)
        out = subprocess.run([binary, "index", path], env=env, check=True,
                             capture_output=True).stdout
        steps = [json.loads(line) for line in open(dump.name)]
    return json.loads(out), steps


class Diff:
    def __init__(self, name):
        self.name, self.errors = name, []

    def eq(self, what, got, want):
        if got != want:
            self.errors.append("%s: %s\n   traced: %s\n   ref:    %s" % (
                self.name, what, json.dumps(got, default=str)[:600],
                json.dumps(want, default=str)[:600]))

    def keyed(self, what, rows, key, want):
        got = {}
        for r in rows:
            k = key(r)
            self.eq("%s %s twice" % (what, k), k in got, False)
            got[k] = r
        self.eq("%s keys" % what, sorted(map(str, got)),
                sorted(map(str, want)))
        for k, w in want.items():
            if k in got:
                self.eq("%s %s" % (what, k),
                        {f: got[k].get(f) for f in w}, w)


def check(binary, path):
    d = Diff(os.path.basename(path))
    s, dump = traced(binary, path)
    ref = ref_cpath.reference(path)
    d.eq("host_events", s["host_events"], ref["host_events"])
    d.eq("critical_path_steps", s["critical_path_steps"],
         ref["critical_path_steps"])
    d.keyed("critical_kinds", s["critical_kinds"], lambda r: r["step"],
            ref["kinds"])
    d.keyed("critical_steps", s["critical_steps"], lambda r: r["index"],
            ref["steps"])
    d.eq("critical_segments", s["critical_segments"], ref["segments"])
    d.keyed("kernel_paths", s["kernel_paths"],
            lambda r: (r["name"], r["step"]), ref["kernel_paths"])
    d.keyed("family_paths", s["family_paths"],
            lambda r: (r["family"], r["step"]), ref["family_paths"])
    d.keyed("idle_culprits", s["idle_culprits"],
            lambda r: (r["step"], r["cause"], r["culprit"],
                       r["culprit_kind"]), ref["culprits"])
    d.keyed("kernel_sequences", s["kernel_sequences"],
            lambda r: (r["step"], r["n"], r["sequence"]), ref["sequences"])
    d.eq("median_sequence", s["median_sequence"], ref["median_sequence"])
    zero = dict.fromkeys(COLS, 0)
    d.keyed("kernels' columns", s["kernels"], lambda r: r["name"],
            {n["name"]: ref["kernel_cols"].get(n["name"], zero)
             for n in s["kernels"]})
    d.keyed("families' columns", s["families"], lambda r: r["family"],
            {f["family"]: ref["family_cols"].get(f["family"], zero)
             for f in s["families"]})
    d.eq("dumped steps", [x["index"] for x in dump if x["status"] == 0],
         [x[0] for x in ref["dump"]])
    by_index = {x[0]: x for x in ref["dump"]}
    lanes = {}
    for x in dump:
        want = by_index.get(x["index"])
        if want is None:
            continue
        d.eq("step %d length" % x["index"], x["length_ns"], want[2])
        d.eq("step %d bounds" % x["index"],
             [x["bounds"][b] for b in ref_cpath.BOUNDS], want[3])
        inv = lanes or {v: "%d/%d" % k for k, v in
                        ref_cpath.read(path)["lanes"].items()}
        lanes = inv
        got = {(r[2], r[3], r[1]): (r[4], r[5]) for r in x["records"]}
        d.eq("step %d records" % x["index"], got,
             {(k[0], k[1], inv[k[2]]): v for k, v in want[4].items()})
    return d.errors


def check_atom(binary, path):
    """The ATOM-style rank: its slow _prepare_inputs is the first culprit
    of decode with the idle time it caused, and the side stream's kernel
    is off the path in every step, its slack the attention's end minus its
    own."""
    d = Diff(os.path.basename(path) + " (ATOM-style)")
    facts = json.load(open(path + ".facts.json"))
    s, dump = traced(binary, path)
    decode = [r for r in s["idle_culprits"] if r["step"] == "decode"]
    top = max(decode, key=lambda r: r["idle_ns"])
    d.eq("first culprit", (top["culprit"], top["culprit_kind"], top["cause"],
                           top["count"], top["idle_ns"]),
         ("atom/model_engine/model_runner.py(655): _prepare_inputs",
          "python", "host_late", facts["slow_steps"],
          facts["prepare_idle_ns"]))
    for x, st in zip(sorted(dump, key=lambda x: x["index"]), facts["steps"]):
        side, attn = st["side"], st["attention"]
        got = [(r[4], r[5]) for r in x["records"]
               if r[0] == side[0] and r[2] == side[1]]
        d.eq("step %d side kernel (on path, slack)" % x["index"], got,
             [(0, attn[2] - side[2])])
    return d.errors


def check_many_kinds(binary, folder):
    """More run-label kinds than traced keeps: the critical path's steps
    are the labels of the kinds the steps table keeps, and nothing else
    (a kind past them once wrote past the per-kind tables)."""
    path = make_cpath.many_kinds().write(
        os.path.join(folder, "many_kinds.json.gz"))
    d = Diff(os.path.basename(path))
    kept = json.load(open(path + ".facts.json"))["kept"]
    s, dump = traced(binary, path)
    d.eq("steps table kinds", sorted(r["kind"] for r in s["steps"]),
         sorted(kept))
    d.eq("critical path kinds",
         sorted(r["step"] for r in s["critical_kinds"]), sorted(kept))
    d.eq("critical path steps", (s["critical_path_steps"], len(dump)),
         (len(kept), len(kept)))
    return d.errors


def main():
    binary = sys.argv[1]
    paths = sys.argv[2:] or (
        sorted(glob.glob(os.path.join(ROOT, "*.json.gz"))) +
        sorted(glob.glob(os.path.join(ROOT, "graph_pairs", "*", "*.json.gz")))
        + make_cpath.generate(tempfile.mkdtemp(prefix="cpath_traces_")))
    errors = [] if sys.argv[2:] else check_many_kinds(
        binary, tempfile.mkdtemp(prefix="cpath_kinds_"))
    for path in paths:
        got = check(binary, path)
        if os.path.basename(path) == "atom_rank.json.gz":
            got += check_atom(binary, path)
        print("%-60s %s" % (os.path.basename(path)[:60],
                            "ok" if not got else "%d differences" % len(got)))
        errors += got
    for e in errors[:40]:
        print(e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
