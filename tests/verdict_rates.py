"""The verdicts' false-alarm and detection rates, measured on generated
captures (make_serving.py) through a running daemon: every capture is
imported (the real indexer, store and finish), every pair judged by GET
/captures/<b>/verdict?baseline=<a>. Shared by tests/test_verdict_rates.py
(bounded, asserts the rates) and bench/bench_verdict.py (more pairs, the
smallest slowdown detected).

Pairs: a_i and b_i two runs of one build (seeds of their own: other
output lengths, other jitter, other outliers); a_i and s_i, s_i a run with
one family's kernels `factor` x slower in every step. Paired (Rates(...,
paired=True)): the runs of pair i share their benchmark's seed (the same
output lengths: the same steps, which line up), the rest their own. Imports carry no
model, so no history widens the bands: the rates are those of a capture's
own noise.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_serving  # noqa: E402

FAMILY_KERNEL = {k: v[0] for k, v in make_serving.FAMILIES.items()}


def import_all(d, tops, batch=64):
    """{name: id} of the folders imported, done (a few at a time: the
    queue is bounded)."""
    ids, names = {}, list(tops)
    for i in range(0, len(names), batch):
        for n in names[i:i + batch]:
            code, cap = d.post("/imports", {"path": tops[n], "label": n})
            if code != 202:
                raise AssertionError("import %s: %d %s" % (n, code, cap))
            ids[n] = cap["id"]
        for n in names[i:i + batch]:
            cap = d.wait_status(ids[n], timeout=600)
            if cap["status"] != "done":
                raise AssertionError("import %s: %s" % (n, cap))
    return ids


def verdict(d, b, a, tests=None):
    code, v = d.get("/captures/%d/verdict?baseline=%d" % (b, a))
    if code != 200:
        raise AssertionError("verdict %d vs %d: %d %s" % (b, a, code, v))
    if tests is not None:
        tests[v["test"]] = tests.get(v["test"], 0) + 1
    return v


def family_of(d, cid, key):
    """The family traced gives the kernel of family key."""
    code, rows = d.get("/captures/%d/kernels?q=%s" % (
        cid, FAMILY_KERNEL[key][:12]))
    if code != 200 or not rows:
        raise AssertionError("kernels of %d: %d %s" % (cid, code, rows))
    return rows["rows"][0][
        "family"]


def names_family(v, family):
    return v["verdict"] == "regressed" and any(
        c["figure"] == "family" and c["name"] == family and
        c["change"] == "regressed" for c in v["changes"])


class Rates:
    """Captures generated under tmp and imported into daemon d."""

    def __init__(self, d, tmp, pairs, tp=1, seed=1, paired=False):
        self.d, self.tmp, self.pairs, self.tp = d, tmp, pairs, tp
        self.seed = seed * 100000
        self.paired = paired   # pair i's runs share a benchmark seed
        self.tests = {}        # verdicts judged by each test
        self.gen_s = 0.0   # seconds spent generating
        self.base = self._make("a", 1, {})

    def _make(self, tag, offset, slow):
        t = time.time()
        tops = {"%s%d" % (tag, i): make_serving.make_capture(
            self.tmp, "%s%d" % (tag, i), self.seed + offset * 10000 + i,
            slow=slow, tp=self.tp,
            bench=self.seed + 10000 + i if self.paired else None)
            for i in range(self.pairs)}
        gen = time.time() - t
        ids = import_all(self.d, tops)
        for top in tops.values():   # indexed: the files are not needed
            for root, _, files in os.walk(top):
                for f in files:
                    os.unlink(os.path.join(root, f))
        self.gen_s += gen
        return [ids["%s%d" % (tag, i)] for i in range(self.pairs)]

    def false_alarms(self):
        """(unchanged, pairs, [verdicts that were not]) of same-build
        pairs."""
        other = self._make("b", 2, {})
        bad = []
        for a, b in zip(self.base, other):
            v = verdict(self.d, b, a, self.tests)
            if v["verdict"] != "unchanged":
                bad.append(v)
        return self.pairs - len(bad), self.pairs, bad

    def detected(self, key, factor, offset):
        """(pairs regressed naming the family, pairs, [misses])."""
        slow = self._make("s%s%d_" % (key, round(factor * 1000)), offset,
                          {key: factor})
        family = family_of(self.d, slow[0], key)
        miss = []
        for a, s in zip(self.base, slow):
            v = verdict(self.d, s, a, self.tests)
            if not names_family(v, family):
                miss.append(v)
        return self.pairs - len(miss), self.pairs, miss


def summary(v):
    """A verdict in one line, for a failure's message."""
    return "%s by %s: %s" % (v["verdict"], v["test"], [
        (c["figure"], c["name"][:24], c.get("diff_pct"), c.get("ci_pct"),
         c["band_pct"]) for c in v["changes"][:4]])
