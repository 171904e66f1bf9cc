#!/usr/bin/env python3
"""Decode through a running daemon over real sockets (docs/DECODE.md):

- imports of generated ATOM-style folders (make_decode_pairs.py: two ranks
  with their capture_traces, found by the layout scan): every decode route
  per rank equals the independent reference (ref_decode.py) exactly; all
  ranks, the reference's rows summed by the map's rules; the repeated
  block over all ranks from each layer summed first; ?kind=, ?q=,
  ?module=; CSV; the rank's completeness on the capture object;
  /diff?by=module|layer|op with ?kind= and per-step normalisation against
  a second folder whose slow layer is another;
- an import of the real SGLang pair's folder (its capture_traces with
  execution_details.json beside the run trace);
- a capture on the ATOM simulator with "mark_trace": true: --mark-trace
  on the server's command line, each rank's capture traces written by the
  simulator from the real SGLang pair, matched, and its breakdown served;
  --mark-trace as a server_args word refused.
"""
import csv
import io
import os
import sys
import tempfile
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_decode_pairs  # noqa: E402
import ref_decode  # noqa: E402
from test_capture_lib import Rig  # noqa: E402
from tracedtest import TRACES_DIR, Daemon, check, check_eq  # noqa: E402

TABLES = {t: (ref_decode.MEMBERS.get(t, (None, "decode/%s" % t))[1], keys)
          for t, keys in ref_decode.TABLE_KEYS.items()}
# How each figure sums over ranks (common/summary.h's TR_SUM_DEC_*).
SUMMED = {"kernels", "total_ns", "steps", "step_ns", "count", "subtree_ns"}
LARGEST = {"per_step_ns", "p50_ns", "p99_ns", "layers"}


def rows(d, cid, route, **query):
    q = urllib.parse.urlencode(dict(query, limit=1000))
    code, body = d.get("/captures/%d/%s?%s" % (cid, route, q))
    check_eq(code, 200, "%s %s: %s" % (route, query, body))
    return body["rows"]


def keyed(got, keys):
    return {tuple(r[k] for k in keys): r for r in got}


def check_rank(d, cid, rank, ref):
    for t, (route, keys) in TABLES.items():
        got = keyed(rows(d, cid, route, rank=rank), keys)
        check_eq(sorted(got, key=repr), sorted(ref[t], key=repr),
                 "rank %d %s keys" % (rank, t))
        for key, want in ref[t].items():
            for f, v in want.items():
                check_eq(got[key][f], v, "rank %d %s %r %s" % (rank, t, key,
                                                              f))
    steps = keyed(rows(d, cid, "decode/steps", rank=rank), ("step",))
    for kind, want in ref["steps"].items():
        check_eq(steps[(kind,)]["median_ns"], want["median_ns"],
                 "rank %d median step" % rank)
    med = rows(d, cid, "decode/median", rank=rank, kind="decode")
    check_eq({(r["layer"], r["module"]): (r["total_ns"], r["top_kernels"])
              for r in med},
             {k[1:]: (v["total_ns"], v["top_kernels"])
              for k, v in ref["median"].items() if k[0] == "decode"},
             "rank %d median rows" % rank)


def summed(refs, t):
    """The reference's rows of table t summed over ranks by the map's rules
    (all but the share, checked apart)."""
    out = {}
    for ref in refs:
        for key, row in ref[t].items():
            acc = out.setdefault(key, {})
            for f, v in row.items():
                if f in SUMMED:
                    acc[f] = acc.get(f, 0) + v
                elif f in LARGEST:
                    acc[f] = max(acc.get(f, v), v)
    return out


def check_all_ranks(d, cid, refs):
    for t in ("modules", "layers", "ops", "layer_modules", "op_modules",
              "kernels"):
        route, keys = TABLES[t]
        got = keyed(rows(d, cid, route), keys)
        want = summed(refs, t)
        check_eq(sorted(got, key=repr), sorted(want, key=repr),
                 "all ranks %s keys" % t)
        for key, w in want.items():
            for f, v in w.items():
                check_eq(got[key][f], v, "all ranks %s %r %s" % (t, key, f))
            if "share" in got[key]:
                share = round(w["total_ns"] / w["step_ns"], 6) \
                    if w["step_ns"] else 0.0
                check(abs(got[key]["share"] - share) < 1e-9, "share")
    # The repeated block: each layer summed over the ranks first.
    lm = summed(refs, "layer_modules")
    nsteps = {}
    for ref in refs:
        for kind, s in ref["steps"].items():
            nsteps[kind] = nsteps.get(kind, 0) + s["steps"]
    want = ref_decode.blocks(lm, nsteps)
    got = keyed(rows(d, cid, "decode/blocks"), ("step", "module"))
    check_eq(got.keys(), want.keys(), "all-ranks blocks")
    for key, w in want.items():
        for f, v in w.items():
            check_eq(got[key][f], v, "all-ranks block %r %s" % (key, f))


def check_filters(d, cid):
    got = rows(d, cid, "decode/modules", kind="prefill")
    check(got and all(r["step"] == "prefill" for r in got), "?kind=")
    got = rows(d, cid, "decode/modules", q="MLP.GATE")
    check(got and all("mlp.gate" in r["module"] for r in got), "?q=")
    mod = "model.layers.*.mlp.down_proj"
    got = rows(d, cid, "decode/kernels", module=mod, kind="decode")
    check(len(got) == 1 and got[0]["module"] == mod, "?module= %r" % got)
    summary = rows(d, cid, "decode/kernels", rank=0, module=mod, q="MT64x128",
                   kind="decode")
    check_eq(len(summary), 1, "?module= with ?q=")
    code, body = d.get("/captures/%d/decode/kernels?module=%s&format=csv" % (
        cid, urllib.parse.quote(mod)), raw=True)
    check_eq(code, 200, "csv")
    table = list(csv.DictReader(io.StringIO(body.decode())))
    check_eq([(r["module"], int(r["total_ns"])) for r in table],
             [(r["module"], r["total_ns"])
              for r in rows(d, cid, "decode/kernels", module=mod)], "CSV")
    code, body = d.get("/captures/%d/decode/layers?module=x" % cid)
    check_eq((code, body["error"]["field"]), (400, "module"), "no ?module=")


def check_complete(cap, refs):
    for r, ref in zip(cap["ranks"], refs):
        for k, v in ref["complete"].items():
            check_eq(r[k], v, "rank %d %s on the capture" % (r["rank"], k))


def check_diff(d, a, b, fa, fb):
    q = "/diff?a=%d&b=%d&by=layer&kind=decode&norm=per_step" % (a, b)
    code, body = d.get(q)
    check_eq(code, 200, "diff by layer: %s" % (body,))
    check_eq(body["a_steps"], 10, "decode steps divide")
    layers = {r["layer"]: r for r in body["rows"]}
    # a's slow layer got 3x faster in b, b's got 3x slower: the largest.
    top = body["rows"][:2]
    check_eq({r["layer"] for r in top}, {fa, fb}, "slow layers lead")
    check(layers[fa]["delta_ns"] < 0 < layers[fb]["delta_ns"], "signs")
    code, body = d.get("/diff?a=%d&b=%d&by=module&kind=decode&norm=per_step"
                       % (a, b))
    check_eq(code, 200, "diff by module")
    check(all(r["status"] == "both" for r in body["rows"]), "same modules")
    code, body = d.get("/diff?a=%d&b=%d&by=op" % (a, b))
    check_eq(code, 200, "diff by op")
    check("aten::mm" in {r["op"] for r in body["rows"]}, "ops")
    code, body = d.get("/diff?a=%d&b=%d&by=kernel&kind=decode" % (a, b))
    check_eq((code, body["error"]["field"]), (400, "kind"), "kind by kernel")


def imports(root):
    fa = make_decode_pairs.make(os.path.join(root, "a"), ranks=2, slow=2)
    fb = make_decode_pairs.make(os.path.join(root, "b"), ranks=2, seed=5,
                                slow=1)
    refs = [ref_decode.reference(r["run"], [tuple(c) for c in r["captures"]])
            for r in fa["ranks"]]
    with Daemon(conf={"import_roots": root + ":" + TRACES_DIR}) as d:
        a = d.imported(os.path.join(root, "a"))
        check_complete(a, refs)
        for rank, ref in enumerate(refs):
            check_rank(d, a["id"], rank, ref)
        check_all_ranks(d, a["id"], refs)
        check_filters(d, a["id"])
        b = d.imported(os.path.join(root, "b"))
        check_diff(d, a["id"], b["id"], 2, 1)
        sg = d.imported(os.path.join(TRACES_DIR, "graph_pairs",
                                     "sglang_decode"))
        check_eq((sg["ranks"][0]["capture_traces"],
                  sg["ranks"][0]["replays_matched"]), (1, 1), "sglang pair")
        got = rows(d, sg["id"], "decode/blocks", kind="decode")
        check_eq(got[0]["layers"], 36, "Qwen3-8B's 36 layers")
    print("imports: ok")


def sim_capture():
    with Rig() as rig:
        code, body = rig.d.post("/captures", {"model": rig.model, "tp": 1,
                                              "server_args": ["--mark-trace"]})
        check_eq((code, body["error"]["field"]), (400, "server_args[0]"),
                 "--mark-trace as a word")
        cid = rig.capture(tp=2, conc=2, isl=8, osl=4, mark_trace=True)
        cap = rig.wait(cid)
        check_eq(cap["status"], "done", "capture %s" % (cap,))
        start = rig.calls("start_atom_server.sh")[-1]
        check("--mark-trace" in start["argv"], "argv %s" % start["argv"])
        for r in cap["ranks"]:
            check_eq((r["capture_traces"], r["replays"], r["replays_matched"],
                      r["replays_unmatched"]), (1, 1, 1, 0),
                     "rank %d decode completeness" % r["rank"])
            path = os.path.join(cap["trace_dir"], "rank_%d" % r["rank"],
                                "capture_traces", "bs_32_q_1_rank%d.json.gz"
                                % r["rank"])
            check(os.path.exists(path), path)
        got = rows(rig.d, cid, "decode/modules", kind="decode")
        check(any(r["module"] and "Qwen3DecoderLayer" in r["module"]
                  for r in got), "the breakdown of the real model")
        with open(rig.path("logs", "atom_server.log")) as f:
            check("Saved capture trace for bs_32_q_1" in f.read(), "log")
    print("simulator: ok")


def main():
    with tempfile.TemporaryDirectory(prefix="traced-api-decode-") as root:
        imports(root)
    sim_capture()
    print("ok")


if __name__ == "__main__":
    main()
