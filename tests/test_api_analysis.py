"""The analysis routes (steps/buckets, steps/outliers, idle, timeline,
families, families/steps, kernels?family=, /diff?by=family) of a real daemon
over real sockets, against tests/ref_index.py's own reading of the files.

Capture A: the generated trace with every idle cause (make_fixtures.py),
a real vLLM graph-replay trace and the real ATOM-labelled CPU trace; B: the
same generated trace with its GEMMs at other tiles, and the vLLM trace.
Per rank every figure must equal the reference's; summed over ranks, the
sums of the reference's; re-binned timelines must be sums of whole stored
buckets that still add up to gpu_busy_ns; and a GEMM at another tile must
be two rows by kernel but one row (status both) by family.
"""
import gzip
import os
import sys
import tempfile
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402
import ref_index  # noqa: E402
from tracedtest import (TRACES_DIR, Daemon, check, check_eq,  # noqa: E402
                        without_demangled)

VLLM = "tracelens__vllm_decode_full_graph_execution.json.gz"
LABELS = "torch113cpu__atom_run_labels.pt.trace.json.gz"
# Capture B's GEMMs: the same Tensile problems at other tiles.
RETILE = ((b"MT128x128x64_MI16x16x1", b"MT256x64x64_MI32x32x8"),
          (b"MT64x256x64_MI32x32x8", b"MT128x64x32_MI16x16x4"))
STEP_EXTRA = ("min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns",
              "warmup_steps", "steady_count", "steady_total_ns",
              "steady_min_ns", "steady_p50_ns", "steady_p90_ns",
              "steady_p99_ns", "steady_max_ns")


def write_folder(root, name, files):
    """root/name/rank_<i>/trace.pt.trace.json.gz from (bytes) files."""
    top = os.path.join(root, name)
    for i, data in enumerate(files):
        os.makedirs(os.path.join(top, "rank_%d" % i))
        with open(os.path.join(top, "rank_%d" % i,
                               "m_ts_%d.pt.trace.json.gz" % i), "wb") as f:
            f.write(data)
    return top


def fixtures(root):
    """The two imports' folders and, per capture, its rank files."""
    idle = make_fixtures.make_idle(os.path.join(root, "gen"))["path"]
    with open(idle, "rb") as f:
        a_idle = f.read()
    plain = gzip.decompress(a_idle)
    for old, new in RETILE:
        plain = plain.replace(old, new)
    b_idle = gzip.compress(plain, mtime=0)

    def real(name):
        with open(os.path.join(TRACES_DIR, name), "rb") as f:
            return f.read()
    a = write_folder(root, "a", [a_idle, real(VLLM), real(LABELS)])
    b = write_folder(root, "b", [b_idle, real(VLLM)])
    return a, b


def imported(d, path):
    code, cap = d.post("/imports", {"path": path})
    check_eq(code, 202, "POST /imports %s" % (cap,))
    cap = d.wait_status(cap["id"])
    check_eq(cap["status"], "done", "import %s" % (cap,))
    return cap


def rows(d, cid, route, **query):
    q = urllib.parse.urlencode(query)
    code, body = d.get("/captures/%d/%s%s" % (cid, route, "?" + q if q else
                                              ""))
    check_eq(code, 200, "%s %s: %s" % (route, query, body))
    return body["rows"]


def references(d, cap):
    """Per rank: (its file, ref_index's reading with traced's categories)."""
    out = {}
    for r in cap["ranks"]:
        kernels = rows(d, cap["id"], "kernels", rank=r["rank"])
        out[r["rank"]] = (r, ref_index.reference(r["file"], categories={
            k["name"]: k["category"] for k in kernels}))
    return out


def share(num, den):
    return round(num / den, 6) if den else 0.0


def check_idle(d, cid, rank, summ, ref):
    by_cause = {}
    for (_, cause), ns in ref["idle"].items():
        by_cause[cause] = by_cause.get(cause, 0) + ns
    got = rows(d, cid, "idle", rank=rank)
    check_eq({r["cause"]: r["idle_ns"] for r in got}, by_cause,
             "rank %d idle by cause" % rank)
    check_eq(sum(r["idle_ns"] for r in got), summ["idle_ns"],
             "rank %d causes sum" % rank)
    for r in got:
        check(abs(r["share"] - share(r["idle_ns"], summ["idle_ns"])) < 1e-9,
              "rank %d idle share %r" % (rank, r))
    check([r["idle_ns"] for r in got] == sorted(
        (r["idle_ns"] for r in got), reverse=True), "idle order")
    got = rows(d, cid, "idle", rank=rank, by="step")
    check_eq({(r["step"], r["cause"]): r["idle_ns"] for r in got},
             ref["idle"], "rank %d idle by step" % rank)
    return by_cause


def merged(fine, lo, hi):
    cats, steps = {}, {}
    for r in fine[lo:hi]:
        for k, v in r["by_category"].items():
            cats[k] = cats.get(k, 0) + v
        for k, v in r["steps"].items():
            steps[k] = steps.get(k, 0) + v
    best = sorted(steps.items(), key=lambda kv: (-kv[1], kv[0].encode()))
    return {"start_ns": fine[lo]["start_ns"], "end_ns": fine[hi - 1][
        "end_ns"], "busy_ns": sum(r["busy_ns"] for r in fine[lo:hi]),
        "by_category": cats, "steps": steps,
        "step": best[0][0] if best else None}


def check_timeline(d, cid, rank, summ, ref):
    fine = ref["timeline"]
    for n in (4096, 100, 7, 1):
        got = rows(d, cid, "timeline", rank=rank, buckets=n)
        want = [merged(fine, j * len(fine) // n, (j + 1) * len(fine) // n)
                for j in range(min(n, len(fine)))] if n < len(fine) else [
            merged(fine, j, j + 1) for j in range(len(fine))]
        check_eq(got, want, "rank %d timeline in %d" % (rank, n))
        check_eq(sum(r["busy_ns"] for r in got), summ["gpu_busy_ns"],
                 "rank %d timeline busy" % rank)


def check_steps(d, cid, rank, ref):
    for row in rows(d, cid, "steps", rank=rank):
        want = ref["steps"][row["kind"]]
        for k in STEP_EXTRA:
            check_eq(row[k], want[k], "rank %d step %s %s" % (
                rank, row["kind"], k))
    check_eq(rows(d, cid, "steps/buckets", rank=rank), ref["step_buckets"],
             "rank %d buckets" % rank)
    check_eq(rows(d, cid, "steps/histogram", rank=rank),
             ref["step_histogram"], "rank %d histogram" % rank)
    table = {k["name"]: k["demangled"]
             for k in rows(d, cid, "kernels", rank=rank, limit=1000)}
    check_eq(without_demangled(rows(d, cid, "steps/outliers", rank=rank),
                               table),
             ref["step_outliers"], "rank %d outliers" % rank)
    got = rows(d, cid, "steps/outliers", rank=rank, kind="decode")
    check(all(r["kind"] == "decode" for r in got), "kind filter")


def check_families(d, cid, rank, ref):
    keys = ("kernels", "count", "total_ns", "avg_ns", "min_ns", "max_ns",
            "p50_ns", "p99_ns")
    got = rows(d, cid, "families", rank=rank)
    check_eq({r["family"]: {k: r[k] for k in keys} for r in got},
             {f: {k: v[k] for k in keys} for f, v in ref["families"].items()},
             "rank %d families" % rank)
    steps = rows(d, cid, "families/steps", rank=rank)
    check_eq({(r["family"], r["step"]): {k: r[k] for k in (
        "count", "total_ns", "steps", "per_step_ns")} for r in steps},
        ref["family_steps"], "rank %d family steps" % rank)
    for fam in list(ref["families"])[:4]:
        names = {r["name"] for r in rows(d, cid, "kernels", rank=rank,
                                         family=fam)}
        want = {n for n in ref["kernels"] if ref_family(n) == fam}
        check_eq(names, want, "kernels?family=" + fam)


def ref_family(name):
    import ref_analysis
    return ref_analysis.family(name)


def check_all_ranks(d, cid, refs, idle):
    total = sum(s["idle_ns"] for s, _ in refs.values())
    want = {}
    for by in idle.values():
        for cause, ns in by.items():
            want[cause] = want.get(cause, 0) + ns
    got = rows(d, cid, "idle")
    check_eq({r["cause"]: r["idle_ns"] for r in got}, want, "idle summed")
    for r in got:
        check(abs(r["share"] - share(r["idle_ns"], total)) < 1e-9,
              "summed idle share")
    fams = {}
    for _, ref in refs.values():
        for fam, f in ref["families"].items():
            s = fams.setdefault(fam, {"count": 0, "total_ns": 0, "ranks": 0})
            s["count"] += f["count"]
            s["total_ns"] += f["total_ns"]
            s["ranks"] += 1
    check_eq({r["family"]: {k: r[k] for k in ("count", "total_ns", "ranks")}
              for r in rows(d, cid, "families")}, fams, "families summed")
    tl = rows(d, cid, "timeline", buckets=10)
    for rank, (s, _) in refs.items():
        mine = [r for r in tl if r["rank"] == rank]
        check(0 < len(mine) <= 10, "rank %d rows" % rank)
        check_eq(sum(r["busy_ns"] for r in mine), s["gpu_busy_ns"],
                 "all-ranks timeline busy of rank %d" % rank)


def check_diff(d, a, b):
    code, by_k = d.get("/diff?a=%d&b=%d&by=kernel" % (a, b))
    check_eq(code, 200, "diff by kernel")
    tensile = [r for r in by_k["rows"] if r["name"].startswith("Cijk_")]
    tiles = [t.decode() for pair in RETILE for t in pair]
    retiled = [r for r in tensile if any(t in r["name"] for t in tiles)]
    check_eq(sorted(r["status"] for r in retiled),
             ["only_a", "only_a", "only_b", "only_b"], "by kernel: tiles")
    code, by_f = d.get("/diff?a=%d&b=%d&by=family" % (a, b))
    check_eq(code, 200, "diff by family")
    fam = [r for r in by_f["rows"] if r["family"].startswith("Cijk_")]
    check_eq(len(fam), 1, "by family: one Tensile family")
    check_eq(fam[0]["status"], "both", "by family: matched")
    check_eq((fam[0]["a_total_ns"], fam[0]["b_total_ns"]),
             (sum(r["a_total_ns"] for r in tensile),
              sum(r["b_total_ns"] for r in tensile)), "family totals")
    check(all(r["status"] == "both" for r in by_f["rows"]
              if r["family"].startswith("triton_")), "triton matched")


def main():
    with tempfile.TemporaryDirectory(prefix="traced-api-analysis-") as root:
        top_a, top_b = fixtures(root)
        with Daemon(conf={"import_roots": root}) as d:
            a, b = imported(d, top_a), imported(d, top_b)
            refs = references(d, a)
            idle = {}
            for rank, (summ, ref) in refs.items():
                idle[rank] = check_idle(d, a["id"], rank, summ, ref)
                check_timeline(d, a["id"], rank, summ, ref)
                check_steps(d, a["id"], rank, ref)
                check_families(d, a["id"], rank, ref)
            check_all_ranks(d, a["id"], refs, idle)
            check_diff(d, a["id"], b["id"])
    print("api_analysis: ok")


if __name__ == "__main__":
    main()
