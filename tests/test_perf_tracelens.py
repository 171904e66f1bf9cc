#!/usr/bin/env python3
"""traced's op groups (op_perf, docs/PERF.md) against TraceLens's own
per-op reports of the same traces (../shared/traces/perf_pairs; with
TRACELENS_DIR set and Debian's python3-pandas at hand, also TraceLens
run live on the shared traces it has a report of, for the sheets the
pairs keep).

`traced index` makes each pair's rank summary (the SGLang pair with its
capture trace beside it, as TraceLens merged it). Every row of every
per-op sheet must be a group of traced's with the same op and
parameters (TraceLens's param columns; its is_recompute column where it
has one) whose per-instance gflops and data_moved_mb are TraceLens's
GFLOPS_first and Data Moved (MB)_first within 0.1%, whose TFLOPS/s and
TB/s means are within 1% and whose instance count is equal, or be
listed in docs/PERF.md, "Where traced counts otherwise", with its
reason. A listed row that no longer differs fails too: the list says
what traced does today."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tracedtest  # noqa: E402
import tracelens_perf as tlp  # noqa: E402


def summary(pair):
    out = subprocess.run([tracedtest.TRACED_BIN] + tlp.index_args(pair),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def sheet_of(category):
    """TraceLens's standard report writes Normalization without _fwd,
    its inference report with it: one name for both."""
    return category[:-4] if category.endswith("_fwd") else category


def ours(g):
    """A traced group in TraceLens's units."""
    timed = g["timed"]
    rate = g["inv_s"] / timed / 1e12 if timed else None
    return {
        "gflops": g["flops"] / 1e9,
        "data_moved_mb": None if g["bytes"] is None else g["bytes"] / (1 << 20),
        "tflops_s_mean": None if rate is None else g["flops"] * rate,
        "tb_s_mean": (None if rate is None or g["bytes"] is None
                      else g["bytes"] * rate),
        "count": g["count"],
    }


def match(r, groups):
    """traced's group of TraceLens's row r, or None."""
    for g in groups:
        if g["op"] != r["name"]:
            continue
        if r["recompute"] is not None and \
                bool(g["recompute"]) != (r["recompute"] == "True"):
            continue
        if tlp.same_params(r["params"], json.loads(g["params"]), ignore=()):
            return g
    return None


def differs(r, g):
    """Why traced's group g answers TraceLens's row r otherwise, or
    None."""
    if g is None:
        return "no such group"
    if sheet_of(g["category"]) != sheet_of(r["sheet"]):
        return "category %s" % g["category"]
    o = ours(g)
    if o["count"] != r["count"]:
        return "count %d vs %d" % (o["count"], r["count"])
    for k, tol in (("gflops", tlp.TOL_WORK), ("data_moved_mb", tlp.TOL_WORK),
                   ("tflops_s_mean", tlp.TOL_RATE),
                   ("tb_s_mean", tlp.TOL_RATE)):
        a, b = o[k], r[k]
        if b is None or (k != "data_moved_mb" and k != "gflops" and b == 0):
            continue  # TraceLens has none (NaN): nothing to compare
        if not tlp.close(b, a, tol):
            return "%s %r vs %r" % (k, a, b)
    return None


def main():
    listed = tlp.documented()
    seen, bad, ok, on_list = set(), [], 0, 0
    for pair in tlp.pairs():
        groups = summary(pair)["op_perf"]
        for r in tlp.rows(pair):
            key = tlp.row_key(r)
            seen.add(key)
            why = differs(r, match(r, groups))
            if why is None and key in listed:
                bad.append("listed but as TraceLens: %s %s %s %s" % key)
            elif why is None:
                ok += 1
            elif key in listed:
                on_list += 1
            else:
                bad.append("%s %s %s %s: %s" % (key + (why,)))
    stale = [k for k in listed if k not in seen]
    for k in stale:
        bad.append("listed but no such row: %s %s %s %s" % k)
    print("%d rows as TraceLens, %d on docs/PERF.md's list" % (ok, on_list))
    for b in bad:
        print("DIFFERS", b)
    assert not bad, "%d rows differ and are not listed" % len(bad)


if __name__ == "__main__":
    main()
