#!/usr/bin/env python3
"""Decode's figures from `traced index` (docs/DECODE.md) against the
independent reference (ref_decode.py), exactly (ns), table for table: on
every real trace of ../shared/traces (each without captures), on both real
graph-capture pairs (with theirs), and on a generated ATOM-style profile
folder (make_decode_pairs.py: two ranks, a FULL and a PIECEWISE capture,
a layer 3x slower, a replay that lost a kernel it can do without and one
that lost a kernel it cannot be placed without). On the generated folder
also the generator's own facts: the slow layer comes first, the dropped
kernels are in completeness. And the CLI's --captures none|DIR|auto."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_decode_pairs  # noqa: E402
import ref_decode  # noqa: E402
import tracedtest  # noqa: E402
from tracedtest import check, check_eq  # noqa: E402

PAIRS = os.path.join(tracedtest.TRACES_DIR, "graph_pairs")
TABLES = {t: (ref_decode.MEMBERS.get(t, ("decode_%s" % t,))[0], keys)
          for t, keys in ref_decode.TABLE_KEYS.items()}
STEP_FIELDS = ("steps", "kernels", "step_ns", "attributed_ns",
               "median_label", "median_dur_ns", "median_ns")


def index(path, captures="auto"):
    out = subprocess.run([tracedtest.TRACED_BIN, "index", "--captures",
                          captures, path], capture_output=True, text=True)
    check(out.returncode == 0, "%s: %s" % (path, out.stderr))
    return json.loads(out.stdout)


def compare(what, s, ref):
    """Every decode figure of summary s against the reference's."""
    rows = 0
    for k, v in ref["complete"].items():
        check_eq(s[k], v, "%s: %s" % (what, k))
    for t, (member, keys) in TABLES.items():
        got = {tuple(r[k] for k in keys): r for r in s[member]}
        check_eq(len(got), len(s[member]), what + ": duplicate rows")
        check_eq(sorted(got, key=repr), sorted(ref[t], key=repr),
                 "%s: %s keys" % (what, t))
        for key, row in ref[t].items():
            for f, v in row.items():
                check_eq(got[key][f], v, "%s: %s %r %s" % (what, t, key, f))
        rows += len(got)
    steps = {r["step"]: r for r in s["decode_steps"]}
    check_eq(sorted(steps), sorted(ref["steps"]), what + ": step kinds")
    for kind, e in ref["steps"].items():
        for f in STEP_FIELDS:
            check_eq(steps[kind][f], e[f], "%s: step %s %s" % (what, kind, f))
        start = e["median_abs_start"]
        check_eq(steps[kind]["median_start_ns"],
                 None if start is None else start - s["t0_ns"],
                 "%s: step %s median start" % (what, kind))
    med = {(r["step"], r["layer"], r["module"]):
           {k: r[k] for k in ("kernels", "total_ns", "top_kernels")}
           for r in s["decode_median"]}
    check_eq(med, ref["median"], what + ": median")
    # Every device record is in the tables once.
    for member in ("decode_modules", "decode_layers", "decode_op_modules",
                   "decode_kernels", "sources"):
        check_eq(sum(r["total_ns"] for r in s[member]), s["device_ns"],
                 "%s: %s sum" % (what, member))
    return rows


def real_traces():
    for path in tracedtest.trace_files():
        s = index(path, "none")
        rows = compare(os.path.basename(path), s,
                       ref_decode.reference(path, []))
        check_eq(s["replays_unmatched"], s["replays"], path)
        print("%s: %d rows" % (os.path.basename(path), rows))


def pairs():
    sg = os.path.join(PAIRS, "sglang_decode")
    run = os.path.join(sg, "sglang_Qwen3-8B_decode.json.gz")
    caps = [(os.path.join(sg, "capture_traces", "bs_32_rank0.json.gz"), 32,
             -1, "FULL")]
    s = index(run)  # auto: the capture_traces folder beside it
    rows = compare("sglang pair", s, ref_decode.reference(run, caps))
    check_eq(s["replays_matched"], 1, "sglang: matched")
    print("sglang pair: %d rows" % rows)
    xd = os.path.join(PAIRS, "xdit_flux.1_aiter_sage", "capture_traces")
    run = os.path.join(tracedtest.TRACES_DIR, "tracelens__xdit_flux.1_aiter_"
                       "sage_profile_trace_rank_0.json.gz")
    caps = [(os.path.join(xd, "capture_trace_rank_0.json.gz"), 1, -1, "FULL")]
    s = index(run, xd)
    rows = compare("xdit pair", s, ref_decode.reference(run, caps))
    check_eq(s["replays_short"], 4, "xdit: short")
    print("xdit pair: %d rows" % rows)
    # Without its captures every replay is unmatched, for that reason.
    s = index(run, "none")
    check_eq(s["unmatched_reasons"]["no_capture"]["replays"], 4, "no_capture")
    check_eq(s["unmatched_reasons"]["no_capture"]["ns"], s["replay_ns"],
             "no_capture ns")
    check(any(w["code"] == "replays_unmatched" for w in s["warnings"]),
          "the summary warns")


def generated(tmp):
    facts = make_decode_pairs.make(tmp, ranks=2)
    for r, f in enumerate(facts["ranks"]):
        s = index(f["run"])
        rows = compare("generated rank %d" % r, s, ref_decode.reference(
            f["run"], [tuple(c) for c in f["captures"]]))
        check_eq(s["capture_traces"], 2, "capture traces")
        check_eq(s["capture_graphs"], f["graphs"], "graphs")
        check_eq(s["replays"], f["replays"], "replays")
        check_eq(s["replays_short"], f["short"], "short replays")
        check_eq(s["missing_launches"], f["missing"], "missing launches")
        check_eq(s["replays_unmatched"], f["unmatched"], "unmatched")
        check_eq(s["unmatched_reasons"]["count_differs"]["replays"],
                 f["unmatched"], "count_differs")
        check_eq(s["replays_matched"],
                 f["replays"] - f["short"] - f["unmatched"], "matched")
        # The slow layer first, in decode and in prefill.
        for kind in ("decode", "prefill"):
            layers = [x for x in s["decode_layers"]
                      if x["step"] == kind and x["layer"] is not None]
            check_eq(layers[0]["layer"], facts["slow_layer"],
                     "rank %d %s: slowest layer" % (r, kind))
            check(layers[0]["per_step_ns"] > 2.5 * layers[1]["per_step_ns"],
                  "3x slower")
        # The repeated block: per module, one row per layer.
        lm = [x for x in s["decode_layer_modules"] if x["step"] == "decode"
              and x["module"] == "model.layers.*.mlp.gate_up_proj"]
        check_eq(sorted(x["layer"] for x in lm), list(range(4)), "layers")
        print("generated rank %d: %d rows" % (r, rows))


def source_cap():
    """Python frames' names are bounded as kernel names are: with
    --max-kernel-names 10, at most 40 of the H100 trace's 446 are judged,
    so its sources are fewer, and the summary says it capped."""
    path = os.path.join(tracedtest.TRACES_DIR, "tracelens__h100_Qwen_Qwen1."
                        "5-0.5B-Chat__1016005.json.gz")
    out = subprocess.run([tracedtest.TRACED_BIN, "index", "--captures",
                          "none", "--max-kernel-names", "10", path],
                         capture_output=True, text=True, check=True)
    s = json.loads(out.stdout)
    srcs = {r["source"] for r in s["sources"] if r["source"]}
    full = json.loads(subprocess.run(
        [tracedtest.TRACED_BIN, "index", "--captures", "none", path],
        capture_output=True, text=True, check=True).stdout)
    every = {r["source"] for r in full["sources"] if r["source"]}
    check(0 < len(srcs) < len(every),
          "fewer sources under the cap: %d of %d" % (len(srcs), len(every)))
    capped = [w for w in s["warnings"] if w["code"] == "decode_capped"]
    check(capped and "Python frames beyond 40 names" in
          capped[0]["message"], "the cap said: %r" % capped)
    check_eq(sum(r["total_ns"] for r in s["sources"]), s["device_ns"],
             "every device record still counted once")


def main():
    source_cap()
    real_traces()
    pairs()
    with tempfile.TemporaryDirectory(prefix="traced-decode-") as tmp:
        generated(tmp)
    print("ok")


if __name__ == "__main__":
    main()
