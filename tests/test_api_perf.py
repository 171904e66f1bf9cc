#!/usr/bin/env python3
"""The op groups' route (GET /captures/<id>/ops/perf, docs/PERF.md)
through a running daemon over real sockets:

- imports of the H100 trace (a file) and the SGLang pair's folder (graph
  replays): every row of ?rank=0 and of all ranks equals the one made
  here from the rank summary `traced index` prints for the same file
  (its op_perf rows: work, counts, kernel time, inv_s) and its roof
  (gpu_roof), each derived figure computed anew (TraceLens's units, the
  rates' means, the roof's time, attainable rate, share, bound, time
  lost); the rows by the time lost, largest first;
- a generated two-rank ATOM-style folder (make_decode_pairs.py, its GEMMs
  with shapes): all ranks' rows are the two ranks' summed by the rules
  docs/PERF.md gives;
- /diff?by=perf between that folder and another without a slow layer:
  each side's achieved rates are its ops/perf means; the verdict of the
  second imported again with a model against the first: its op_groups;
- ?q= (op or category), ?category=, ?sort=, ?limit=, CSV, refusals
  naming the field;
- the gpu_roof setting: a daemon told MI355X puts the H100 trace against
  the MI355X's datasheet, and a roof by hand against its own figures;
  the rank summary's gpu_roof says which.
"""
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_decode_pairs  # noqa: E402
import tracedtest  # noqa: E402
import tracelens_perf as tlp  # noqa: E402
from tracedtest import TRACES_DIR, Daemon, check, check_eq  # noqa: E402

H100 = "h100_qwen1.5-0.5b"
SGLANG = "sglang_qwen3-8b_decode"
KEY = ("op", "params", "recompute")
SUMMED = ("count", "timed", "kernels", "nested", "kernel_ns", "inv_s")


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def peak_of(roof, spec):
    """The roof's peak for a compute spec ("matrix_bf16"), or None."""
    if roof is None or spec is None:
        return None
    unit, prec = spec.split("_", 1)
    if unit == "matrix":
        return roof["matrix"].get(prec)
    return roof["vec_fp64"] if prec == "fp64" else roof["vec_fp32"]


def derive(g, roof):
    """The route's row of a group g (op_perf's stored members, summed
    over ranks when several) on roof."""
    peak = peak_of(roof, g["compute_spec"])
    tb = roof["tb_s"] if roof else None
    fl, by, timed = g["flops"], g["bytes"], g["timed"]
    c = fl / (peak * 1e12) if peak else None
    m = by / (tb * 1e12) if tb and by is not None else None
    roof_s = max(x for x in (c, m) if x is not None) \
        if c is not None or m is not None else None
    ns = g["kernel_ns"]
    row = {k: g[k] for k in KEY + ("category", "compute_spec", "count",
                                   "timed", "kernels", "nested")}
    for k in ("input_dims", "input_types", "input_strides",
              "concrete_inputs"):
        row[k] = g[k]
    row.update({
        "gflops": fl / 1e9,
        "data_moved_mb": None if by is None else by / 1048576,
        "flops_per_byte": fl / by if by else None,
        "kernel_us_mean": ns / 1e3 / g["count"] if g["count"] else 0.0,
        "kernel_us_median": g["kernel_p50_ns"] / 1e3,
        "kernel_us_min": g["kernel_min_ns"] / 1e3,
        "kernel_us_max": g["kernel_max_ns"] / 1e3,
        "kernel_us_sum": ns / 1e3,
        "tflops_s_mean": fl * g["inv_s"] / timed / 1e12 if timed else None,
        "tb_s_mean": (by * g["inv_s"] / timed / 1e12
                      if timed and by is not None else None),
        "peak_tflops": peak, "peak_tb_s": tb,
        "attainable_tflops": fl / roof_s / 1e12 if roof_s else None,
        "pct_of_attainable": (100.0 * timed * roof_s * 1e9 / ns
                              if ns > 0 and roof_s is not None else None),
        "bound": (None if roof_s is None else "compute"
                  if c is not None and (m is None or c >= m) else "memory"),
        "lost_us": (max(0.0, ns / 1e3 - timed * roof_s * 1e6)
                    if roof_s is not None else None),
    })
    return row


def summary(pair, extra=()):
    out = subprocess.run([tracedtest.TRACED_BIN] + list(extra) +
                         tlp.index_args(pair), capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def route(d, cid, **query):
    q = "&".join("%s=%s" % kv for kv in sorted(dict({"limit": 1000},
                                                    **query).items()))
    code, body = d.get("/captures/%d/ops/perf?%s" % (cid, q))
    check_eq(code, 200, "ops/perf %s: %s" % (query, body))
    return body["rows"]


def keyed(rows):
    return {tuple(r[k] for k in KEY): r for r in rows}


def check_rows(got, want, what):
    g, w = keyed(got), keyed(want)
    check_eq(sorted(g, key=repr), sorted(w, key=repr), what + " groups")
    for k, row in w.items():
        for f, v in row.items():
            check(close(g[k][f], v), "%s %s %s: %r vs %r" % (what, k, f,
                                                            g[k][f], v))
    lost = [r["lost_us"] for r in got]
    check(all(a is not None and b is not None and a >= b
              for a, b in zip(lost, lost[1:])), what + ": by time lost")


def real_pairs(d):
    for pair, path in ((H100, "tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__"
                        "1016005.json.gz"),
                       (SGLANG, "graph_pairs/sglang_decode")):
        cap = d.imported(os.path.join(TRACES_DIR, path))
        ref = summary(pair)
        want = [derive(g, ref["gpu_roof"]) for g in ref["op_perf"]]
        check(len(want) > 20, "%s has op groups" % pair)
        check_rows(route(d, cap["id"], rank=0), want, pair + " rank 0")
        every = route(d, cap["id"])
        check_rows(every, want, pair + " all ranks")
        check(all(r["ranks"] == 1 for r in every), pair + " ranks")
        rank = cap["ranks"][0]
        check_eq(rank["gpu_roof"], ref["gpu_roof"], pair + " roof")
        check_eq((rank["op_instances"], rank["op_instances_lost"]),
                 (ref["op_instances"], 0), pair + " instances")
    check_eq(ref["gpu_roof"]["name"], "MI300X", "the SGLang pair's GPU")
    return cap["id"]


def summed(per_rank):
    """Groups summed over ranks by docs/PERF.md's rules."""
    out = {}
    for rows in per_rank:
        for g in rows:
            k = tuple(g[f] for f in KEY)
            if k not in out:
                out[k] = dict(g)
                continue
            tracedtest.fold_row(out[k], g, SUMMED, ("kernel_min_ns",),
                                ("kernel_max_ns", "kernel_p50_ns"))
    return list(out.values())


def two_ranks(d, root):
    facts = make_decode_pairs.make(os.path.join(root, "a"), ranks=2)
    cap = d.imported(os.path.join(root, "a"))
    per_rank, roof = [], None
    for f in facts["ranks"]:
        caps = os.path.dirname(f["captures"][0][0])
        out = subprocess.run([tracedtest.TRACED_BIN, "index", "--captures",
                              caps, f["run"]], capture_output=True,
                             text=True, check=True).stdout
        s = json.loads(out)
        per_rank.append(s["op_perf"])
        roof = s["gpu_roof"]
    check(all(len(p) >= 5 for p in per_rank), "the GEMMs' groups")
    for r, rows in enumerate(per_rank):
        check_rows(route(d, cap["id"], rank=r),
                   [derive(g, roof) for g in rows], "rank %d" % r)
    every = route(d, cap["id"])
    check_rows(every, [derive(g, roof) for g in summed(per_rank)],
               "two ranks summed")
    check(all(r["ranks"] == 2 for r in every), "both ranks have each")
    diff_perf(d, root, cap["id"], every)


def group_key(r):
    return r["op"] + " " + r["params"] + (" recompute" if r["recompute"]
                                          else "")


def import_model(d, path):
    """POST /imports of path as model "gen" (a configuration, so that its
    verdict has a baseline), waited for."""
    code, cap = d.post("/imports", {"path": path, "model": "gen", "tp": 2})
    check_eq(code, 202, "import %s: %s" % (path, cap))
    cap = d.wait_status(cap["id"])
    check_eq(cap["status"], "done", "import %s" % path)
    return cap["id"]


def verdict_rates(d, root):
    """The verdict of the folder without a slow layer against the one with
    it: its op groups are /diff?by=perf&norm=per_step's rows."""
    a = import_model(d, os.path.join(root, "a"))
    b = import_model(d, os.path.join(root, "b"))
    code, v = d.get("/captures/%d/verdict" % b)
    check_eq((code, v["baseline"]), (200, a), "verdict baseline: %s" % v)
    code, body = d.get("/diff?a=%d&b=%d&by=perf&norm=per_step&limit=10"
                       % (a, b))
    check_eq(code, 200, "diff")
    check(v["op_groups"], "the verdict's op groups")
    check_eq(v["op_groups"], body["rows"], "verdict op groups = /diff's")


def diff_perf(d, root, a, rows_a):
    """/diff?by=perf against a second folder without a slow layer:
    each side's rates are its ops/perf means, the change theirs."""
    make_decode_pairs.make(os.path.join(root, "b"), ranks=2, seed=5, slow=99)
    b = d.imported(os.path.join(root, "b"))["id"]
    rows_b = {group_key(r): r for r in route(d, b)}
    want_a = {group_key(r): r for r in rows_a}
    code, body = d.get("/diff?a=%d&b=%d&by=perf&limit=1000" % (a, b))
    check_eq(code, 200, "diff by=perf: %s" % body)
    got = {r["group"]: r for r in body["rows"]}
    check_eq(sorted(got), sorted(set(want_a) | set(rows_b)), "diff groups")
    for k, r in got.items():
        ra, rb = want_a.get(k), rows_b.get(k)
        check(close(r["a_tflops_s"], ra and ra["tflops_s_mean"]), k + " a")
        check(close(r["b_tflops_s"], rb and rb["tflops_s_mean"]), k + " b")
        check(close(r["a_tb_s"], ra and ra["tb_s_mean"]), k + " a TB/s")
        check_eq((r["a_total_ns"], r["a_count"]),
                 (round(ra["kernel_us_sum"] * 1000), ra["count"])
                 if ra else (0, 0), k + " a time")
        x, y = ((ra or {}).get("tflops_s_mean"),
                (rb or {}).get("tflops_s_mean"))
        want = (y - x) * 100 / x if x and y is not None else None
        check(want is None and r["tflops_delta_pct"] is None or
              abs(r["tflops_delta_pct"] - want) <= 0.0005 + 1e-9,
              k + " change")
    check(any(abs(r["tflops_delta_pct"] or 0) > 10 for r in got.values()),
          "the GEMMs ran faster without the slow layer")
    verdict_rates(d, root)


def filters(d, cid):
    every = route(d, cid)
    gemm = route(d, cid, q="gemm")
    check_eq(sorted(json.dumps(r, sort_keys=True) for r in gemm),
             sorted(json.dumps(r, sort_keys=True) for r in every
                    if "gemm" in r["op"].lower() or
                    "gemm" in r["category"].lower()), "?q=gemm")
    check(any(r["category"] == "GEMM" for r in gemm), "GEMM rows")
    check_eq(route(d, cid, category="GEMM"),
             [r for r in every if r["category"] == "GEMM"], "?category=GEMM")
    with open(os.path.join(tracedtest.SRC_DIR, "api", "openapi.yaml")) as f:
        cats = json.load(f)["components"]["schemas"]["OpCategory"]["enum"]
    check(all(r["category"] in cats for r in every), "categories named")
    for sort, key, desc in (("total", "kernel_us_sum", True),
                            ("count", "count", True),
                            ("avg", "kernel_us_mean", True),
                            ("name", "op", False)):
        got = [r[key] for r in route(d, cid, sort=sort)]
        check_eq(got, sorted(got, reverse=desc), "?sort=" + sort)
    check_eq(route(d, cid, limit=2), every[:2], "?limit=2")
    code, body = d.get("/captures/%d/ops/perf?format=csv&limit=1000" % cid,
                       raw=True)
    check_eq(code, 200, "csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    check_eq([(r["op"], r["params"]) for r in rows],
             [(r["op"], r["params"]) for r in every], "csv rows")
    check_eq(json.loads(rows[0]["input_dims"]), every[0]["input_dims"],
             "csv JSON cell")
    for q, field in (("sort=slowest", "sort"), ("limit=0", "limit"),
                     ("category=gemm", "category"), ("rank=x", "rank"),
                     ("by=op", "by")):
        code, body = d.get("/captures/%d/ops/perf?%s" % (cid, q))
        check_eq((code, body["error"]["field"]), (400, field), q)


def roof_setting(root):
    trace = os.path.join(TRACES_DIR, "tracelens__h100_Qwen_Qwen1.5-0.5B-"
                         "Chat__1016005.json.gz")
    for setting, name, bf16, tb in (
            ("MI355X", "MI355X", 2516.6, 8.0),
            ("lab card:tb_s=2,bf16=500,vec_fp32=40", "lab card", 500, 2)):
        with Daemon(conf={"import_roots": TRACES_DIR,
                          "gpu_roof": setting}) as d:
            cap = d.imported(trace)
            roof = cap["ranks"][0]["gpu_roof"]
            check_eq((roof["name"], roof["tb_s"]), (name, tb), setting)
            rows = route(d, cap["id"], q="aten::mm")
            check(rows and all(r["peak_tflops"] == bf16 and
                               r["peak_tb_s"] == tb for r in rows),
                  "%s: the GEMMs' roof" % setting)
    res = subprocess.run([tracedtest.TRACED_BIN, "--gpu-roof", "H300",
                          "--db", os.path.join(root, "x.db")],
                         capture_output=True, text=True, timeout=30)
    check(res.returncode != 0 and "gpu_roof" in res.stderr,
          "a roof of no GPU refused: %s" % res.stderr)


def main():
    with tempfile.TemporaryDirectory() as root:
        with Daemon(conf={"import_roots": root + ":" + TRACES_DIR}) as d:
            cid = real_pairs(d)
            two_ranks(d, root)
            filters(d, cid)
        roof_setting(root)
    print("ops/perf: ok")


if __name__ == "__main__":
    main()
