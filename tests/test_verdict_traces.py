#!/usr/bin/env python3
"""Verdicts on the real traces of $TRACES_DIR (every *.gz below it, the
graph pairs' included) that have steps, ATOM run labels or the profiler's
ProfilerStep#N (ref_index.py's rules find them, not traced), and kernels,
and on a rank the simulator composes of their real forward passes (the
demo's: a prefill and 31 decode steps, the batch ramping down):

  - a slowed copy: every kernel of the trace's dominant family (the
    largest total, ref_analysis.family()) 10% longer;
  - a jittered copy: every kernel's duration times uniform(0.98, 1.02);

both with the time after each lengthened (or shortened) kernel moved by
what it gained, so that the copy is a consistent timeline: an event at
time t moves by the sum of the changes of the kernels that ended before t
and the share of those running at t. Each copy is imported beside the
original (a single-file import, no configuration: no history) and judged
against it: the slowed one `regressed` naming the family, the jittered one
`unchanged`; their steps line up with the original's, so with at least
three steps the test used is `paired_steps`. The composed rank is also
judged against a second capture of its configuration (other noise, the
same steps: `unchanged`, paired) and one whose steps were cut otherwise
(the first prefill split in two: `unchanged`, by buckets). A trace with
steps but no kernels (the CPU-only ATOM labels trace) has no family to
slow: it is listed and passed over.
"""
import bisect
import glob
import gzip
import json
import os
import random
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_analysis  # noqa: E402
import ref_index  # noqa: E402
import refcache  # noqa: E402
from make_fixtures import dumps, us  # noqa: E402
from make_composed import make_ranks  # noqa: E402
from tracedtest import Daemon, check  # noqa: E402

KERNEL_CATS = ("kernel", "Kernel")


def ns(v):
    return int(round(float(v) * 1000))


def events_of(doc):
    return doc if isinstance(doc, list) else doc.get("traceEvents", [])


class Warp:
    """t -> t + the change of the kernels before t (and of those running
    at t, in proportion)."""

    def __init__(self, changes):   # [(start, end, extra)] in ns
        self.by_end = sorted(changes, key=lambda c: c[1])
        self.ends = [c[1] for c in self.by_end]
        self.cum = [0]
        for c in self.by_end:
            self.cum.append(self.cum[-1] + c[2])
        self.by_start = sorted(changes)
        self.starts = [c[0] for c in self.by_start]
        self.longest = max((c[1] - c[0] for c in changes), default=0)

    def __call__(self, t):
        done = self.cum[bisect.bisect_right(self.ends, t)]
        lo = bisect.bisect_left(self.starts, t - self.longest)
        part = 0.0
        for s, e, x in self.by_start[lo:bisect.bisect_left(self.starts, t)]:
            if s < t < e:
                part += x * (t - s) / (e - s)
        return t + done + int(round(part))


def changed_copy(path, out, family):
    """Writes path's copy with each kernel of family 10% longer (family
    None: each kernel's duration times uniform(0.98, 1.02), seeded by the
    file's name)."""
    with open(out, "wb") as f:
        f.write(changed_bytes(path, family))


@refcache.cached
def changed_bytes(path, family):
    """changed_copy()'s gzip file (a real trace's kept, tests/refcache.py:
    the same in both builds)."""
    if family is None:
        rng = random.Random(os.path.basename(path))

        def scale(k):
            return rng.uniform(0.98, 1.02)
    else:
        def scale(k):
            return 1.1 if ref_analysis.family(k) == family else 1.0
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    evs = events_of(doc)
    changes = []
    for e in evs:
        if (isinstance(e, dict) and e.get("ph") == "X" and
                e.get("cat") in KERNEL_CATS and "dur" in e and "ts" in e):
            s, d = ns(e["ts"]), ns(e["dur"])
            changes.append((s, s + d, int(round(d * (scale(e["name"]) - 1)))))
    warp = Warp(changes)
    for e in evs:
        if not isinstance(e, dict) or not isinstance(
                e.get("ts"), (int, float)):
            continue
        s = ns(e["ts"])
        if isinstance(e.get("dur"), (int, float)):
            end = warp(s + ns(e["dur"]))
            e["dur"] = us(end - warp(s))
        e["ts"] = us(warp(s))
    return gzip.compress(dumps(doc).encode())


@refcache.cached
def facts(path):
    """(step kinds, dominant family or None) of a trace, read with
    ref_index's rules (its classes, its run labels and ProfilerStep,
    dropped where run labels are) without the whole reference."""
    doc, _ = ref_index.load(path)
    evs = events_of(doc)
    fmt = ref_index.detect_format(doc, evs)
    kinds, fams = set(), {}
    for e in evs:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cls = ref_index.classify(fmt, e)
        if cls in ("label_cpu", "label_gpu"):
            lab = ref_index.parse_label(e.get("name"))
            if lab and not (cls == "label_gpu" and lab[0] == "ProfilerStep"):
                kinds.add(lab[0])
        elif cls == "kernel" and e.get("dur") is not None:
            f = ref_analysis.family(e.get("name") or "")
            fams[f] = fams.get(f, 0) + ns(e["dur"])
    if len(kinds) > 1:
        kinds.discard("ProfilerStep")
    return kinds, (max(sorted(fams), key=lambda f: fams[f]) if fams
                   else None)


def imported(d, path):
    code, cap = d.post("/imports", {"path": path})
    check(code == 202, "import %s: %s" % (path, cap))
    cap = d.wait_status(cap["id"], timeout=300)
    check(cap["status"] == "done", "%s: %s" % (path, cap))
    return cap["id"]


def verdict(d, b, a):
    code, v = d.get("/captures/%d/verdict?baseline=%d" % (b, a))
    check(code == 200, "verdict: %s" % v)
    return v


def real_steps(path):
    """The real (prefill, decode..., or profiler) steps of a trace."""
    ref = ref_index.reference(path)
    return sum(s["count"] for k, s in ref["steps"].items()
               if not k.startswith("dummy_"))


def judge(d, base, path, want, test, failures, what):
    """path imported and judged against capture base: want, by test
    (None: any); the verdict."""
    v = verdict(d, imported(d, path), base)
    if v["verdict"] != want or (test and v["test"] != test):
        failures.append("%s: %s by %s %s" % (what, v["verdict"], v["test"], [
            (c["figure"], c["name"][:30], c.get("diff_pct"), c["band_pct"])
            for c in v["changes"]]))
    return v


def one_trace(d, tmp, path, kinds, family, failures, others=()):
    """The slowed and jittered copies of path against it (and others:
    [(path, test)] of captures of the same build: unchanged by test)."""
    name = os.path.basename(path)
    slow = os.path.join(tmp, "slow_" + name)
    jitter = os.path.join(tmp, "jitter_" + name)
    changed_copy(path, slow, family)
    changed_copy(path, jitter, None)
    steps = real_steps(path)
    test = "paired_steps" if steps >= 3 else None
    base = imported(d, path)
    v = judge(d, base, slow, "regressed", test, failures, name + " slowed")
    named = [c for c in v["changes"] if c["figure"] == "family" and
             c["name"] == family and c["change"] == "regressed"]
    if not named:
        failures.append("%s slowed: %s not named" % (name, family))
    judge(d, base, jitter, "unchanged", test, failures, name + " jittered")
    for other, how in others:
        judge(d, base, other, "unchanged", how, failures,
              "%s against %s" % (os.path.basename(other), name))
    print("%s (%s, %d steps): slowed %s by %s, %s %s%% [%s]; jittered "
          "unchanged%s" % (
              name, ", ".join(sorted(kinds)), steps, v["verdict"],
              v["test"], family[:40],
              named[0].get("diff_pct") if named else None,
              named[0].get("band_note") if named else "",
              "".join("; %s unchanged by %s" % (os.path.basename(o), t)
                      for o, t in others)))


def composed(tmp, name, seed, split):
    """The demo's rank, composed of real forward passes (make_composed.py),
    copied to tmp/<name>.pt.trace.json.gz."""
    path = os.path.join(tmp, name + ".pt.trace.json.gz")
    shutil.move(make_ranks(os.path.join(tmp, name), seed, split=split)[0],
                path)
    return path


def main():
    top = os.environ["TRACES_DIR"]
    paths = sorted(glob.glob(os.path.join(top, "**", "*.gz"),
                             recursive=True))
    tmp = tempfile.mkdtemp(prefix="traced-vtraces-")
    failures, judged = [], 0
    try:
        with Daemon(conf={"import_roots": "%s:%s" % (top, tmp)}) as d:
            for path in paths:
                kinds, family = facts(path)
                if not kinds:
                    continue
                if family is None:
                    print("%s: steps %s but no kernel: no family to slow" % (
                        os.path.basename(path), sorted(kinds)))
                    continue
                one_trace(d, tmp, path, kinds, family, failures)
                judged += 1
            demo = composed(tmp, "demo", 1, False)
            kinds, family = facts(demo)
            one_trace(d, tmp, demo, kinds, family, failures, [
                (composed(tmp, "again", 2, False), "paired_steps"),
                (composed(tmp, "cut", 3, True), "buckets")])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    check(judged >= 5, "traces with steps and kernels: %d" % judged)
    check(not failures, "\n".join(failures))
    print("%d real traces and a composed rank: each slowed copy regressed "
          "naming its dominant family, each jittered copy unchanged" %
          judged)


if __name__ == "__main__":
    main()
