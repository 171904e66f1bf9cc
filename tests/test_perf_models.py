#!/usr/bin/env python3
"""The op performance models alone (index/perf/, docs/PERF.md) against
TraceLens's own per-op reports: every row of every per-op sheet of
../shared/traces/perf_pairs goes through traced's model of its op, from
the arguments of the row's first instance (Input Dims, Input type, Input
Strides, Concrete Inputs as the report kept them; the inference attention
ops get a vLLM iteration annotation carrying the row's own sq/sk
aggregates). Each must give TraceLens's parameters, its GFLOPS_first and
its Data Moved (MB)_first within 0.1%, or be on docs/PERF.md's list of
rows traced counts otherwise, with a reason that names a model (the
whole-trace test, test_perf_tracelens.py, checks the rest).

Kernel times and counts are the whole-trace test's; the models' own
subjects are work and parameters. A row whose op has no traced model
must be listed too."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tracedtest  # noqa: E402
import tracelens_perf as tlp  # noqa: E402

EVAL = os.environ.get("PERF_EVAL") or os.path.join(
    os.path.dirname(tracedtest.TRACED_BIN), "tests", "perf_eval")


def annotation(p):
    """A vLLM detailed iteration annotation with the row's aggregates."""
    g = [p.get(k, 0) for k in ("c_sq", "c_sk", "c_sqsq", "c_sqsk",
                                "g_sq", "g_sk", "g_sqsq", "g_sqsk")]
    return ("execute_0_context_0(sq%dsk%dsqsq%dsqsk%d)"
            "_generation_0(sq%dsk%dsqsq%dsqsk%d)" % tuple(int(x) for x in g))


def event(r):
    args = {}
    for key, member in (("dims", "Input Dims"), ("types", "Input type"),
                        ("strides", "Input Strides"),
                        ("concrete", "Concrete Inputs")):
        if r[key] is not None:
            args[member] = r[key]
    ev = {"name": r["name"], "args": args}
    if "g_sqsk" in r["params"]:
        ev["annot"] = annotation(r["params"])
    return ev


def differs(r, a):
    """Why traced's model answer a differs from TraceLens's row r, or
    None."""
    if not a.get("model"):
        return "no model"
    if not tlp.same_params(r["params"], a["params"]):
        return "params %s" % json.dumps(a["params"], sort_keys=True)
    if not tlp.close(r["gflops"], a["gflops"], tlp.TOL_WORK):
        return "gflops %r vs %r" % (a["gflops"], r["gflops"])
    mb = None if a["bytes"] is None else a["bytes"] / (1 << 20)
    if not tlp.close(r["data_moved_mb"], mb, tlp.TOL_WORK):
        return "data_moved_mb %r vs %r" % (mb, r["data_moved_mb"])
    return None


# Where aten's conv ops keep stride, padding, dilation, transposed and
# output padding among their Concrete Inputs.
CONV_AT = {"aten::convolution": (3, 4, 5, 6, 7),
           "aten::convolution_backward": (4, 5, 6, 7, 8)}


def forged(rows):
    """Conv rows' ops with numbers past int64_t's arithmetic: under UBSan
    no undefined behaviour (perf_eval would abort), and no answer where
    the output shape leaves int64_t (a padding of INT64_MAX; a transposed
    op with an output padding of INT64_MAX). A dilation of INT64_MIN
    overflows only where the kernel is wider than 1: its answer is not
    checked."""
    big = 2**63 - 1
    evs, want = [], []
    for r in rows:
        if r["name"] not in CONV_AT or r["concrete"] is None:
            continue
        _, pad, dil, trans, opad = CONV_AT[r["name"]]
        for forge in ({pad: "[%d, %d]" % (big, big)},
                      {dil: "[-%d, 1]" % (big + 1)},
                      {trans: "True", opad: "[%d, 0]" % big}):
            ev = event(r)
            ev["args"]["Concrete Inputs"] = [
                forge.get(i, v) for i, v in enumerate(r["concrete"])]
            evs.append(ev)
            want.append(None if dil in forge else 0)
    out = subprocess.run([EVAL], input="".join(json.dumps(e) + "\n"
                                                for e in evs),
                         capture_output=True, text=True, check=True)
    got = [json.loads(line)["model"] for line in out.stdout.splitlines()]
    got = [None if w is None else g for g, w in zip(got, want)]
    assert len(evs) >= 3 and got == want, (
        "forged conv shapes answered: %r" % got)
    print("%d forged conv ops: no answer" % len(evs))


def main():
    listed = tlp.documented()
    all_rows = [r for p in tlp.pairs() for r in tlp.rows(p)]
    text = "".join(json.dumps(event(r)) + "\n" for r in all_rows)
    out = subprocess.run([EVAL], input=text, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(all_rows), (len(out), len(all_rows))
    bad, ok, on_list = [], 0, 0
    for r, line in zip(all_rows, out):
        why = differs(r, json.loads(line))
        key = tlp.row_key(r)
        if why is None:
            ok += 1
        elif key in listed:
            on_list += 1
        else:
            bad.append("%s %s %s %s: %s" % (key + (why,)))
    print("%d rows: %d as TraceLens, %d on docs/PERF.md's list"
          % (len(all_rows), ok, on_list))
    for b in bad:
        print("DIFFERS", b)
    assert not bad, "%d rows differ and are not listed" % len(bad)
    assert ok > 0.8 * len(all_rows), "most rows must match"
    forged(all_rows)


if __name__ == "__main__":
    main()
