"""Sweeps (docs/SWEEPS.md) over HTTP against a running traced and the ATOM
simulator (sim/), each case its own ctest entry:

  api   POST /sweeps refuses what it must, naming the member; a ladder and
        ATOM CI's scenarios (from tests/data/atom/models.json, resolved
        here independently as .github/scripts/catalog.py does) make the
        points expected, each a queued capture tied to its sweep; the
        points count against max_queued; GET lists and CSV; DELETE cancels
        a queued sweep with its points, then deletes it; a sweep whose
        points were all cancelled one by one settles failed. A capture
        whose server compiles for minutes holds the GPU slot meanwhile,
        so the sweeps stay queued.
  run   a sweep of four concurrencies (1, 2, 4, 300) runs to done with one
        launch (MAX_NUM_SEQS 300 for the largest) and four benches, each
        point a done capture whose ranks are its own window's files, moved
        out of the sweep's launch folder (its rank folders left empty),
        with steps no wider than its concurrency. Its scaling asked while
        queued is not kept; once done it is, until a point is deleted.
  daemon the same with profile_control daemon: traced starts and stops
        each point's profiling window against the one server (a warm-up
        and a profiled bench per point).
  death the server dies at the third point (the simulator's
        die_during_bench at its 15th completion request: points of 1 and
        2 send 4 and 7): the sweep fails there, the first two points are
        kept done, the fourth is cancelled, the server is not relaunched.
  cancel DELETE /sweeps/<id> while its second point benchmarks: that point
        is cancelled by the runner (the server stopped), the others at
        once, the sweep is cancelled; then DELETE deletes it all.
  restart traced killed (-9) while the second point benchmarks: the next
        start marks it interrupted, ends the processes it left, and the
        sweep resumes with a relaunch: its third point done, the sweep
        done.
  recollect traced killed (-9) once the second point's window is complete
        in the launch folder: the next start moves it into the point's
        folder and indexes it; the sweep goes on to done.
  scaling on ranks the simulator generates (SIM_SCALING: each family's
        kernel a + b x bs with 3% noise, one family breaking at bs 8),
        a sweep of five concurrencies: every fit of /sweeps/<id>/scaling
        equals an independent least-squares fit of the points' step
        samples (and critical paths) read back over HTTP; each family's
        fitted b is within 5% of the truth; the breaking family's
        piecewise fit says where; the knee, what stops scaling and the
        launch-bound crossover are the ones the truth implies; CSV rows;
        every computed figure of the JSON and CSV at its unit's digits
        (docs/SWEEPS.md, "Precision"), whole ns as integers.
  compare two sweeps on generated ranks, the second's GEMM family 1.3x
        steeper: /sweeps/<b>/compare?to=<a> gives its slope ratio within
        5% of 1.3 and attention's of 1, and each point's verdict as
        /captures/<id>/verdict?baseline= makes it; regressed at the
        largest concurrency.
"""
import csv
import glob
import io
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import SRC_DIR, check, check_eq  # noqa: E402
from test_capture_lib import FINAL, Rig, model_dir, run_cases  # noqa: E402
import test_web  # noqa: E402

MODELS_JSON = os.path.join(SRC_DIR, "tests", "data", "atom", "models.json")
# ATOM's seconds in a real one (docs/TESTS.md, "A faster clock"): a sweep
# waits on ATOM's polls, pauses and exports at every point.
SCALE = 10
# The generated ranks' truth (scaling, compare) needs the batch sizes the
# simulator's scheduler forms at ATOM's pace against the bench's real
# requests: at 10 the steps outrun the requests and too few batches pass
# 8 for the break (fused MoE's at 8) to show; they keep ATOM's clock.
GENERATED_SCALE = 1


def ci_points(model, variant, isl=None, osl=None):
    """ATOM CI's points of a models.json entry (catalog.py's
    _resolve_scenarios), independently of traced: [(isl, osl, conc,
    ratio)] by scenario then concurrency."""
    doc = json.load(open(MODELS_JSON))
    entry = [m for m in doc["models"] if m["display"] == model][0]
    var = [v for v in entry["variants"] if v.get("label", "") == variant][0]
    scenarios = var.get("scenarios") or entry.get("scenarios") or \
        doc["default_scenarios"]
    lo, hi = var.get("conc_min", 0), var.get("conc_max", 256)
    out = []
    for sc in scenarios:
        if (isl, osl) != (None, None) and (sc["isl"], sc["osl"]) != (isl, osl):
            continue
        for c in sorted(c for c in sc["concurrency"] if lo <= c <= hi):
            out.append((sc["isl"], sc["osl"], c,
                        sc.get("random_range_ratio", 0.8)))
    return out


def refused(d, body, status, field, what):
    code, out = d.post("/sweeps", body)
    check_eq((code, out.get("error", {}).get("field")), (status, field),
             "%s: %s" % (what, out))


def sweep_of(d, sid):
    code, sw = d.get("/sweeps/%d" % sid)
    check_eq(code, 200, "GET /sweeps/%d: %s" % (sid, sw))
    return sw


def check_refusals(rig, glm):
    d = rig.d
    refused(d, {"model": rig.model, "conc": 8}, 400, "conc", "conc a number")
    refused(d, {"model": rig.model}, 400, "conc", "no ladder")
    refused(d, {"model": rig.model, "conc": [2], "scenario": "ci"}, 400,
            "scenario", "ladder and scenario")
    refused(d, {"model": rig.model, "scenario": "nightly"}, 400, "scenario",
            "unknown scenario")
    refused(d, {"model": rig.model, "conc": [4, 2, 4]}, 400, "conc",
            "a concurrency twice")
    refused(d, {"model": rig.model, "conc": [0]}, 400, "conc", "conc 0")
    refused(d, {"model": rig.model, "conc": list(range(1, 66))}, 400, "conc",
            "65 points, sweep_points_max 64")
    refused(d, {"model": rig.model, "scenario": "ci"}, 400, "scenario",
            "ci without a preset")
    refused(d, {"model": glm, "scenario": "ci", "isl": 77}, 400, "isl",
            "ci at an ISL no scenario has")
    refused(d, {"model": rig.model, "conc": [2], "bogus": 1}, 400, "bogus",
            "an unknown member")
    refused(d, {"model": rig.model, "conc": [2], "env": {"LD_PRELOAD": "x"}},
            400, "env.LD_PRELOAD", "the capture policy")


def check_ci(rig, glm, variant, isl=None):
    """A ci sweep's points are ATOM CI's, each a queued capture."""
    body = {"model": glm, "scenario": "ci", "variant": variant}
    if isl is not None:
        body["isl"] = isl
    code, sw = rig.d.post("/sweeps", body)
    check_eq(code, 202, "POST ci %r: %s" % (variant, sw))
    want = ci_points("GLM-5.2-FP8", variant, isl,
                     1024 if isl is not None else None)
    got = [(p["isl"], p["osl"], p["conc"]) for p in sw["points"]]
    check_eq(got, [w[:3] for w in want], "ci points of %r" % variant)
    check_eq(sw["points_total"], len(want), "points_total")
    for p in sw["points"]:
        cap = rig.get(p["capture"])
        check_eq((cap["status"], cap["sweep"]),
                 ("queued", {"id": sw["id"], "point": p["point"],
                             "conc": p["conc"],
                             "conc_max": max(w[2] for w in want)}),
                 "point capture")
        args = cap["params"]["bench_args"]
        at = args.index("--random-range-ratio")
        check_eq(float(args[at + 1]), want[p["point"]][3], "range ratio")
        check_eq((cap["params"]["isl"], cap["params"]["conc"]),
                 (p["isl"], p["conc"]), "point params")
    return sw


def cancel(rig, sid):
    code, sw = rig.d.delete("/sweeps/%d" % sid)
    check_eq((code, sw["status"]), (200, "cancelled"), "DELETE queued")
    for p in sw["points"]:
        check_eq((p["status"], p["error"]),
                 ("cancelled", "the sweep was cancelled"), "its points")
    code, gone = rig.d.delete("/sweeps/%d" % sid)
    check_eq((code, gone), (200, {"deleted": sid}), "DELETE cancelled")
    check_eq(rig.d.get("/sweeps/%d" % sid)[0], 404, "gone")
    for p in sw["points"]:
        check_eq(rig.d.get("/captures/%d" % p["capture"])[0], 404,
                 "point %d gone" % p["point"])


def check_queue_bound(rig):
    d = rig.d
    code, sw = d.post("/sweeps", {"model": rig.model, "conc": [1, 2, 3]})
    check_eq(code, 202, "3 points: %s" % sw)
    code, out = d.post("/sweeps",
                       {"model": rig.model, "conc": list(range(1, 19))})
    check_eq((code, out["error"]["field"]), (429, "queue"),
             "3 + 18 > max_queued 20")
    code, two = d.post("/sweeps", {"model": rig.model, "conc": [8, 16],
                                   "label": "two", "isl": 8, "osl": 4})
    check_eq(code, 202, "two more")
    check_eq((two["label"], two["params"]["conc"],
              [p["conc"] for p in two["points"]]),
             ("two", [8, 16], [8, 16]), "label and ladder")
    code, lst = d.get("/sweeps?limit=1")
    check_eq([s["id"] for s in lst["sweeps"]], [two["id"]], "newest first")
    check_eq(lst["next_before"], two["id"], "next page")
    code, text = d.request("GET", "/sweeps/%d?format=csv" % two["id"],
                           raw=True)
    rows = list(csv.DictReader(io.StringIO(text.decode())))
    check_eq([(r["point"], r["conc"], r["status"]) for r in rows],
             [("0", "8", "queued"), ("1", "16", "queued")], "points CSV")
    # Cancelled point by point: the sweep settles, failed (none done).
    for p in two["points"]:
        check_eq(d.delete("/captures/%d" % p["capture"])[0], 200, "cancel")
    check_eq(sweep_of(d, two["id"])["status"], "failed", "settled")
    cancel(rig, sw["id"])
    d.delete("/sweeps/%d" % two["id"])


def api():
    rig = Rig(conf={"models_json": MODELS_JSON, "max_queued": "20"},
              sim_env={"SIM_COMPILE_S": "600", "SIM_COMPILE_LOG_S": "1"},
              scale=SCALE)
    with rig:
        glm = model_dir(rig.models, "GLM-5.2-FP8", template="{{ m }}")
        holder = rig.capture()
        rig.wait_phase(holder, "waiting_ready")
        check_refusals(rig, glm)
        check_queue_bound(rig)
        # README's request, and narrowed to one pair.
        for variant, isl in (("", None), ("MTP3", None), ("MTP3", 8192)):
            sw = check_ci(rig, glm, variant, isl)
            cancel(rig, sw["id"])
        code, _ = rig.d.delete("/captures/%d" % holder)
        check_eq(code, 202, "the holder cancelled")
        rig.wait(holder)
        time.sleep(0.2)


def wait_sweep(d, sid, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        sw = sweep_of(d, sid)
        if sw["status"] in FINAL:
            return sw
        time.sleep(0.2)
    raise AssertionError("sweep %d not final: %s" % (sid, sweep_of(d, sid)))


def rank_files(folder):
    """The trace files of the rank folders under folder, by rank label."""
    out = {}
    for path in glob.glob(os.path.join(folder, "*", "*.pt.trace.json*")):
        out.setdefault(os.path.basename(os.path.dirname(path)), []).append(
            os.path.basename(path))
    return out


def start_sweep(rig, ladder, **given):
    body = dict(model=rig.model, conc=ladder, tp=2, isl=8, osl=4)
    body.update(given)
    code, sw = rig.d.post("/sweeps", body)
    check_eq(code, 202, "POST /sweeps: %s" % sw)
    return sw


def check_point(rig, p, names, bench=True):
    """A done point: its own ranks, its own files, steps within conc, the
    bench's figures (unless a restart cut the bench's end)."""
    cap = rig.get(p["capture"])
    check_eq((cap["status"], len(cap["ranks"])), ("done", 2),
             "point %d: %s" % (p["point"], cap.get("error")))
    files = rank_files(cap["trace_dir"])
    check_eq(sorted(files), ["rank_0", "rank_1"], "its rank folders")
    for label, fs in files.items():
        check_eq(len(fs), 1, "one window of %s" % label)
        check((label, fs[0]) not in names, "a file of its own: %s" % fs[0])
        names.add((label, fs[0]))
    code, steps = rig.d.get("/captures/%d/steps/buckets?kind=decode"
                            % p["capture"])
    widest = max([b["lo"] for b in steps["rows"] if b["dim"] == "bs"] + [0])
    check(0 < widest <= p["conc"], "decode bs within conc %d: %d" % (
        p["conc"], widest))
    check(isinstance(p["output_throughput"], float) or not bench,
          "its bench figures")
    return cap


def run():
    with Rig(scale=SCALE) as rig:
        sw = start_sweep(rig, [300, 1, 4, 2], label="ladder")
        early = scaling_text(rig, sw["id"])
        sw = wait_sweep(rig.d, sw["id"])
        check_eq((sw["status"], sw["points_done"]), ("done", 4),
                 "sweep: %s" % sw)
        check_eq([p["conc"] for p in sw["points"]], [1, 2, 4, 300], "order")
        names = set()
        caps = [check_point(rig, p, names) for p in sw["points"]]
        starts = rig.calls("start_atom_server.sh")
        check_eq(len(starts), 1, "one launch")
        check_eq(starts[0]["env"].get("MAX_NUM_SEQS"), "300",
                 "launched for the largest concurrency")
        benches = rig.calls("run_benchmark.sh")
        check_eq([b["argv"][4] for b in benches], ["1", "2", "4", "300"],
                 "one bench per point, in order")
        check_eq(len(rig.calls("stop_atom_server.sh")), 1,
                 "one stop (the first point's, before its launch)")
        check_eq({c["max_num_seqs"]["value"] for c in caps}, {300},
                 "every point's plan")
        launch = caps[0]["launch_dir"]
        check_eq(rank_files(launch), {}, "the launch folder left empty")
        check(all(c["launch_dir"] == launch for c in caps), "one folder")
        check_kept(rig, sw, early)


def scaling_text(rig, sid):
    code, text = rig.d.request("GET", "/sweeps/%d/scaling" % sid, raw=True)
    check_eq(code, 200, "scaling: %s" % text[:300])
    return text


def check_kept(rig, sw, early):
    """The scaling asked while the points waited was not kept; once they
    are all final it is, byte for byte, until one of them is deleted."""
    done = scaling_text(rig, sw["id"])
    check(done != early, "the answer while queued was kept")
    got = json.loads(done)
    check_eq([p["status"] for p in got["points"]], ["done"] * 4, "fresh")
    check(got["rows"], "fits once done")
    check_eq(scaling_text(rig, sw["id"]), done, "the same answer again")
    gone = sw["points"][0]["capture"]
    check_eq(rig.d.delete("/captures/%d" % gone)[0], 200, "a point deleted")
    after = json.loads(scaling_text(rig, sw["id"]))
    check_eq([p["capture"] for p in after["points"]],
             [p["capture"] for p in sw["points"][1:]], "its point gone")
    step = [r["n"] for r in after["rows"] if r["figure"] == "step"]
    check(step and step[0] < [r["n"] for r in got["rows"]
                              if r["figure"] == "step"][0],
          "fitted without its samples: %s" % step)


def daemon():
    with Rig(conf={"profile_control": "daemon"}, scale=SCALE) as rig:
        sw = wait_sweep(rig.d, start_sweep(rig, [1, 3])["id"])
        check_eq((sw["status"], sw["points_done"]), ("done", 2),
                 "sweep: %s" % sw)
        check_eq(len(rig.calls("start_atom_server.sh")), 1, "one launch")
        check_eq([b["argv"][4] for b in rig.calls("run_benchmark.sh")],
                 ["1", "1", "3", "3"], "a warm-up and a run per point")
        names = set()
        for p in sw["points"]:
            check_point(rig, p, names)


def death():
    with Rig(sim_env={"ATOM_SIM_FAULTS": "die_during_bench=15"},
             scale=SCALE) as rig:
        sw = start_sweep(rig, [1, 2, 3, 4])
        sw = wait_sweep(rig.d, sw["id"])
        check_eq([p["status"] for p in sw["points"]],
                 ["done", "done", "failed", "cancelled"], "points: %s" % sw)
        check_eq((sw["status"], sw["error"]["point"]), ("failed", 2),
                 "the sweep ends at the third point")
        check("server died" in sw["points"][2]["error"],
              "why: %s" % sw["points"][2]["error"])
        check("the sweep ended at point 2" in sw["points"][3]["error"],
              "the rest: %s" % sw["points"][3]["error"])
        check_eq(len(rig.calls("start_atom_server.sh")), 1, "no relaunch")
        names = set()
        for p in sw["points"][:2]:
            check_point(rig, p, names)


def point_in(rig, sid, point, phase):
    """Waits until the point runs phase; its capture id."""
    cid = sweep_of(rig.d, sid)["points"][point]["capture"]
    rig.wait_phase(cid, phase, timeout=120)
    return cid


def cancel_running():
    with Rig(scale=SCALE) as rig:
        sw = start_sweep(rig, [1, 2, 3])
        cid = point_in(rig, sw["id"], 1, "benchmark")
        code, out = rig.d.delete("/sweeps/%d" % sw["id"])
        check_eq((code, out["status"]), (202, "cancelled"), "DELETE running")
        check_eq(out["points"][2]["status"], "cancelled", "the rest at once")
        check_eq(rig.wait(cid)["status"], "cancelled", "the running point")
        sw = sweep_of(rig.d, sw["id"])
        check_eq([p["status"] for p in sw["points"]],
                 ["done", "cancelled", "cancelled"], "points")
        # A cancel while ranks may export stops the server once their
        # exports end, or once the drain gives up on them (export_max_polls
        # looks without progress: 60 s at 1 s a look).
        cap = rig.get(cid)
        check(rig.stop_calls_after(cap["finished_at"], timeout=90),
              "the server stopped: %r, the stop script's calls %r" % (
                  cap, rig.calls("stop_atom_server.sh")))
        code, gone = rig.d.delete("/sweeps/%d" % sw["id"])
        check_eq((code, gone), (200, {"deleted": sw["id"]}), "deleted")
        check(not os.path.exists(os.path.join(
            rig.d.conf["trace_root"], "sweeps", str(sw["id"]))),
              "its folder gone")
        for p in sw["points"]:
            check_eq(rig.d.get("/captures/%d" % p["capture"])[0], 404,
                     "its points gone")


def restart():
    with Rig(scale=SCALE) as rig:
        sw = start_sweep(rig, [1, 2, 3])
        cid = point_in(rig, sw["id"], 1, "benchmark")
        rig.kill9()
        rig.restart()
        check_eq(rig.get(cid)["status"], "interrupted", "the point cut")
        sw = wait_sweep(rig.d, sw["id"])
        check_eq([p["status"] for p in sw["points"]],
                 ["done", "interrupted", "done"], "resumed: %s" % sw)
        check_eq(sw["status"], "done", "the sweep")
        check_eq(len(rig.calls("start_atom_server.sh")), 2, "a relaunch")
        check_point(rig, sw["points"][2], set())


def recollect():
    # At 4, the window complete in the launch folder before traced's
    # next poll (8 s of ATOM's, the export 2) is still 1.5 s of real
    # time for the test to see and kill in.
    with Rig(conf={"export_poll_s": "8"},
             sim_env={"SIM_EXPORT_DELAY_S": "2"}, scale=4) as rig:
        sw = start_sweep(rig, [1, 2, 3])
        cid = point_in(rig, sw["id"], 1, "exporting")
        launch = os.path.join(rig.d.conf["trace_root"], "sweeps",
                              str(sw["id"]), "launch")
        deadline = time.time() + 30
        # Complete: one .gz a rank and no .json (the exporter removes it
        # last, docs/ATOM.md).
        while time.time() < deadline and not (
                sorted(rank_files(launch)) == ["rank_0", "rank_1"] and
                all(len(f) == 1 and f[0].endswith(".gz")
                    for f in rank_files(launch).values())):
            time.sleep(0.02)
        check_eq(rig.get(cid)["phase"], "exporting", "killed while exporting")
        rig.kill9()
        rig.restart()
        sw = wait_sweep(rig.d, sw["id"])
        check_eq([p["status"] for p in sw["points"]], ["done"] * 3,
                 "collected after the restart: %s" % sw)
        check_eq(rank_files(launch), {}, "the launch folder empty")
        names = set()
        for p in sw["points"]:
            check_point(rig, p, names, bench=p["point"] != 1)


# The truth of the generated ranks (sim/sim_scaling.py): family name as
# the indexer folds it -> (kernel name, a_ns, b_ns, break_bs, b2_ns).
FAMILIES = {
    "Cijk_Alik_Bljk_HHS_BH": ("Cijk_Alik_Bljk_HHS_BH_MT64x64x32_MI32x32x8x1",
                              6000, 1500, None, None),
    "paged_attention_ll4mi_QKV_mfma16_kernel": (
        "paged_attention_ll4mi_QKV_mfma16_kernel", 3000, 900, None, None),
    "fused_moe_kernel_gptq_awq": ("fused_moe_kernel_gptq_awq", 8000, 4000, 8,
                                  500),
    "rms_norm_kernel": ("rms_norm_kernel", 2000, 50, None, None),
}


def ols(points):
    """Least squares of [(x, y)]: (a, b, r2), r2 None without spread."""
    n = float(len(points))
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    syy = sum((y - my) ** 2 for _, y in points)
    b = sxy / sxx
    sse = sum((y - (my - b * mx) - b * x) ** 2 for x, y in points)
    return my - b * mx, b, (1 - sse / syy) if syy > 0 else None


def samples_of(d, cid):
    """(figure, name) -> [(bs, y)] of a capture's kept decode steps, read
    over HTTP, as docs/SWEEPS.md defines them."""
    out = {}
    figs = {}
    for f in d.get("/captures/%d/steps/samples/figures" % cid)[1]["rows"]:
        figs.setdefault(f["rank"], {})[f["index"]] = (f["figure"], f["name"])
    rows = d.get("/captures/%d/steps/samples" % cid)[1]["rows"]
    for r in rows:
        if r["kind"] not in ("decode", "eager_decode") or r["bs"] is None \
                or r["warmup"]:
            continue
        busy = 0
        out.setdefault(("step", "decode"), []).append((r["bs"], r["dur_ns"]))
        for i, v in enumerate(r["values"]):
            fig = figs[r["rank"]][i]
            if fig[0] == "kernel":
                continue
            busy += v if fig[0] == "category" else 0
            out.setdefault(fig, []).append((r["bs"], v))
        out.setdefault(("idle", "decode"), []).append(
            (r["bs"], max(0, r["dur_ns"] - busy)))
    paths = []
    for rank in sorted(figs):
        paths += d.get("/captures/%d/critical_path/steps?kind=decode&rank=%d"
                       "&limit=1000" % (cid, rank))[1]["rows"]
    for r in paths:
        if r["status"] == "ok":
            bs = int(r["label"].split("bs=")[1].split("/")[0].split(" ")[0])
            out.setdefault(("path", "host"), []).append(
                (bs, r["cpu_ns"] + r["launch_ns"]))
            out.setdefault(("path", "device"), []).append((bs, r["gpu_ns"]))
    return out


def check_fits(rig, sw, sc):
    pooled = {}
    for p in sw["points"]:
        for key, xs in samples_of(rig.d, p["capture"]).items():
            pooled.setdefault(key, []).extend(xs)
    rows = {(r["figure"], r["name"]): r for r in sc["rows"]}
    check_eq(sorted(rows), sorted(pooled), "the figures fitted")
    for key, xs in pooled.items():
        a, b, r2 = ols(xs)
        row = rows[key]
        groups = {}
        for x, y in xs:
            groups.setdefault(x, []).append(y)
        check_eq([(g[0], g[1]) for g in row["by_bs"]],
                 [(x, len(ys)) for x, ys in sorted(groups.items())],
                 "%s by batch size" % (key,))
        for g in row["by_bs"]:
            near(g[2], sum(groups[g[0]]) / len(groups[g[0]]), 0, "a mean")
        check_eq(row["n"], len(xs), "%s samples" % (key,))
        near(row["a_ns"], a, 0, "%s a" % (key,))
        near(row["b_ns_per_seq"], b, 3, "%s b" % (key,))
        if r2 is not None:
            near(row["r2"], r2, 6, "%s r2" % (key,))
    return rows


def near(got, want, decimals, what):
    """got is want as docs/SWEEPS.md's "Precision" writes it: rounded to
    decimals places (an integer at 0), want's digits beyond them left."""
    check(abs(got - want) <= 0.5 * 10 ** -decimals * (1 + 1e-9) + 1e-9 *
          abs(want), "%s: %r against %r" % (what, got, want))
    check(isinstance(got, int) if decimals == 0 else
          abs(got * 10 ** decimals - round(got * 10 ** decimals)) < 1e-6,
          "%s: %r has more than %d decimals" % (what, got, decimals))


# Each computed figure of a sweep's answers and its decimals (0: whole ns,
# an integer), as docs/SWEEPS.md's "Precision" says; the bench's figures
# are ATOM's own.
DECIMALS = {"a_ns": 0, "a1_ns": 0, "a2_ns": 0, "rmse_ns": 0,
            "b_ns_per_seq": 3, "b1_ns_per_seq": 3, "b2_ns_per_seq": 3,
            "se_b_ns": 3, "r2": 6, "r2_piecewise": 6, "share_lo": 6,
            "share_hi": 6, "growth": 6, "launch_bound_share": 6,
            "gain_pct": 3, "bs_mean": 3, "crossover_bs": 3, "ratio": 6,
            "a_a_ns": 0, "b_a_ns": 0, "a_b_ns_per_seq": 3,
            "b_b_ns_per_seq": 3}


def check_digits(text, what):
    """Every computed figure of an answer's text (JSON, or CSV rows) is
    written with no more digits than its unit has; a duration and a
    by_bs mean are whole ns, never 6.52816e+06. A real keeps the fewest
    digits that read back (docs/API.md), so a slope of exactly 2130
    ns/seq reads 2.13e+03. Returns how many were read."""
    seen = [0]

    def one(key, tok):
        if key not in DECIMALS or tok in ("", "null", None):
            return
        seen[0] += 1
        d = DECIMALS[key]
        check("e" not in tok.lower() or d > 0,
              "%s: %s is %s" % (what, key, tok))
        if d == 0:
            check(tok.lstrip("-").isdigit(), "%s: %s %s not whole ns" % (
                what, key, tok))
        else:
            near(float(tok), float(tok), d, "%s: %s" % (what, key))

    def walk(v, key=None):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            if key == "by_bs":
                for g in v:
                    check(g[2][0] == "i", "%s: by_bs mean %s" % (what, g[2]))
                return
            for x in v:
                walk(x, key)
        elif isinstance(v, tuple):
            one(key, v[1])
    if text.lstrip().startswith("{"):
        walk(json.loads(text, parse_float=lambda t: ("f", t),
                        parse_int=lambda t: ("i", t)))
    else:
        for row in csv.DictReader(io.StringIO(text)):
            for k, tok in row.items():
                one(k, tok)
    check(seen[0] > 0, "%s: no figure read" % what)
    return seen[0]


def check_truth(rows):
    for fam, (_, a, b, brk, b2) in FAMILIES.items():
        row = rows[("family", fam)]
        print("%s: b %.1f (truth %d), break %s b1 %s b2 %s (truth %s, %s)" % (
            fam, row["b_ns_per_seq"], b, row["break_bs"],
            row["b1_ns_per_seq"], row["b2_ns_per_seq"], brk, b2), flush=True)
        if brk is None:
            check(abs(row["b_ns_per_seq"] - b) <= 0.05 * b,
                  "%s: b %.1f, truth %d" % (fam, row["b_ns_per_seq"], b))
            check(row["break_bs"] is None, "%s: one line holds" % fam)
            continue
        check(row["break_bs"] in (brk - 1, brk, brk + 1),
              "%s breaks at %s, truth %d" % (fam, row["break_bs"], brk))
        check(abs(row["b1_ns_per_seq"] - b) <= 0.05 * b,
              "%s: b1 %.1f, truth %d" % (fam, row["b1_ns_per_seq"], b))
        # Above the break few samples lie between 8 and 16 (the tail of
        # the largest point's window), and its slope is an eighth of the
        # one below: within a third.
        check(abs(row["b2_ns_per_seq"] - b2) <= b2 / 3,
              "%s: b2 %.1f, truth %d" % (fam, row["b2_ns_per_seq"], b2))


def knee_of(points, pct):
    """The last concurrency whose next point gains at least pct% of output
    throughput per doubling, when a later one gains less."""
    done = [p for p in points if p["status"] == "done" and
            p["output_throughput"]]
    for p, q in zip(done, done[1:]):
        gain = (q["output_throughput"] / p["output_throughput"]) ** (
            1 / math.log2(q["conc"] / p["conc"])) - 1
        if gain * 100 < pct:
            return {"conc": p["conc"], "gain_pct": gain * 100,
                    "next_conc": q["conc"]}
    return None


def stops_of(rows):
    """Each family's share of the step (the fits') at the step's smallest
    and largest batch, its growth, largest first."""
    step = rows[("step", "decode")]
    at = (lambda r, x: r["a_ns"] + r["b_ns_per_seq"] * x)
    lo, hi = step["bs_min"], step["bs_max"]
    out = [(r["name"], round(at(r, hi) / at(step, hi) -
                             at(r, lo) / at(step, lo), 9))
           for k, r in rows.items() if k[0] == "family"]
    return sorted(out, key=lambda t: -t[1])


def generated(rig, steeper=None, factor=1.0):
    """The simulator's ranks generated from FAMILIES (SIM_SCALING, re-read
    at every export), one family's slope times factor."""
    spec = {"families": [{"name": k, "a_ns": a, "noise": 0.03,
                          "b_ns": b * (factor if f == steeper else 1),
                          **({"break_bs": brk, "b2_ns": b2} if brk else {})}
                         for f, (k, a, b, brk, b2) in FAMILIES.items()],
            "launch_ns": 20000, "seed": 7}
    with open(rig.path("scaling.json"), "w") as f:
        json.dump(spec, f)
    rig.env["SIM_SCALING"] = rig.path("scaling.json")


def scaling():
    rig = Rig(sim_env={"SIM_MAX_TOKENS": "64"}, scale=GENERATED_SCALE)
    generated(rig)
    with rig:
        sw = start_sweep(rig, [1, 2, 4, 8, 16], osl=32)
        sw = wait_sweep(rig.d, sw["id"])
        check_eq(sw["status"], "done", "sweep: %s" % sw)
        code, sc = rig.d.get("/sweeps/%d/scaling" % sw["id"])
        check_eq(code, 200, "scaling: %s" % sc)
        rows = check_fits(rig, sw, sc)
        check_truth(rows)
        scen = sc["scenarios"][0]
        want = knee_of(sc["points"], sc["knee_pct"])
        check_eq((scen["knee"] or {}).get("conc"), (want or {}).get("conc"),
                 "the knee: %s" % scen["knee"])
        if want is not None:
            near(scen["knee"]["gain_pct"], want["gain_pct"], 3, "its gain")
        stops = stops_of(rows)
        check_eq([x["name"] for x in scen["stops_scaling"]],
                 [n for n, _ in stops], "what stops scaling")
        for x, (_, growth) in zip(scen["stops_scaling"], stops):
            # Made from the fits before they are rounded: within their
            # rounding of the growth the rows give.
            check(abs(x["growth"] - growth) <= 1e-5, "%s grows %r, %r" % (
                x["name"], x["growth"], growth))
        check_eq(scen["stops_scaling"][0]["name"],
                 "fused_moe_kernel_gptq_awq", "the steepest family first")
        check(scen["launch_bound_at_min"] and not scen["launch_bound_at_max"],
              "launch-bound at bs 1, compute-bound at 16: %s" % scen)
        check(scen["crossover_bs"] is not None and
              4 < scen["crossover_bs"] < 16, "crossover: %s" % scen)
        code, text = rig.d.request(
            "GET", "/sweeps/%d/scaling?format=csv" % sw["id"], raw=True)
        got = list(csv.DictReader(io.StringIO(text.decode())))
        check_eq([(r["figure"], r["name"]) for r in got],
                 [(r["figure"], r["name"]) for r in sc["rows"]], "CSV rows")
        n = check_digits(text.decode(), "scaling CSV")
        code, raw = rig.d.request("GET", "/sweeps/%d/scaling" % sw["id"],
                                  raw=True)
        n += check_digits(raw.decode(), "scaling")
        print("precision: %d figures read, each at its unit's" % n,
              flush=True)
        print("scaling:", json.dumps(scen), flush=True)
        check_page(rig, sw["id"], sc)


def check_page(rig, sid, sc):
    """The dashboard's sweep page (web/sweep.js), rendered headless: its
    pictures say the curve, its knee and every fit, in the figures the API
    gave; the "what stops scaling" table lists the families in order."""
    chromium = test_web.find_chromium()
    if chromium is None:
        print("no chromium: the page is not rendered", flush=True)
        return
    dom, page = test_web.dump_dom(chromium, "http://127.0.0.1:%d/#/sweeps/%d"
                                  % (rig.d.port, sid))
    pics = test_web.Pictures()
    pics.feed(dom)
    scen = sc["scenarios"][0]
    curve = [d for d in pics.descs if d.startswith("Output tokens/s")]
    check_eq(len(curve), 1, "one curve: %s" % pics.descs)
    for p in sc["points"]:
        check("concurrency %d: " % p["conc"] in curve[0], "point %d" % p["conc"])
    knee = scen["knee"]["conc"] if scen["knee"] else None
    check(("The knee: concurrency %d " % knee if knee else "No knee")
          in curve[0], "the knee: %s" % curve[0])
    fits = [d for d in pics.descs if d.startswith("Decode step and")]
    check_eq(len(fits), 1, "one fit picture")
    rows = {(r["figure"], r["name"]): r for r in sc["rows"]}
    for fam in [x["name"] for x in scen["stops_scaling"][:5]]:
        r = rows[("family", fam)]
        check("%s %s ns + %d ns per sequence" % (
            fam, format(round(r["a_ns"]), ","), round(r["b_ns_per_seq"]))
              in fits[0], "%s drawn with its fit: %s" % (fam, fits[0]))
    check("breaks at bs %d" % rows[("family", "fused_moe_kernel_gptq_awq")][
        "break_bs"] in fits[0], "where it breaks")
    path = [d for d in pics.descs if d.startswith("Decode critical path")]
    check(path and "launch-bound below bs %.1f" % scen["crossover_bs"]
          in path[0], "the crossover: %s" % path)
    names = [t for t in page.texts if t in FAMILIES]
    check_eq(names[:len(scen["stops_scaling"])],
             [x["name"] for x in scen["stops_scaling"]],
             "what stops scaling, in order")


def compare():
    rig = Rig(sim_env={"SIM_MAX_TOKENS": "64"}, scale=GENERATED_SCALE)
    generated(rig)
    gemm = "Cijk_Alik_Bljk_HHS_BH"
    with rig:
        a = wait_sweep(rig.d, start_sweep(rig, [2, 8, 16], osl=32)["id"])
        generated(rig, gemm, 1.3)
        b = wait_sweep(rig.d, start_sweep(rig, [2, 8, 16], osl=32)["id"])
        check_eq((a["status"], b["status"]), ("done", "done"), "both done")
        code, cmp = rig.d.get("/sweeps/%d/compare?to=%d" % (b["id"], a["id"]))
        check_eq(code, 200, "compare: %s" % cmp)
        ratio = {r["name"]: r["ratio"] for r in cmp["slopes"]
                 if r["figure"] == "family"}
        print("slope ratios:", ratio, flush=True)
        check(abs(ratio[gemm] - 1.3) <= 0.05 * 1.3, "GEMM 1.3x: %s" % ratio)
        check_digits(rig.d.request("GET", "/sweeps/%d/compare?to=%d" % (
            b["id"], a["id"]), raw=True)[1].decode(), "compare")
        # The steepest unchanged one (a line: the breaking family's line
        # depends on where its samples fall).
        name = "paged_attention_ll4mi_QKV_mfma16_kernel"
        check(abs(ratio[name] - 1) <= 0.05, "%s unchanged: %s" % (
            name, ratio[name]))
        check_eq([(p["conc"], p["b_capture"]) for p in cmp["points"]],
                 [(q["conc"], q["capture"]) for q in a["points"]], "paired")
        for p in cmp["points"]:
            code, v = rig.d.get("/captures/%d/verdict?baseline=%d" % (
                p["a_capture"], p["b_capture"]))
            check_eq(p["verdict"], v["verdict"], "conc %d's verdict" % p["conc"])
        check_eq(cmp["points"][-1]["verdict"], "regressed",
                 "16: %s" % cmp["points"][-1]["changes"])
        check_eq(rig.d.get("/sweeps/%d/compare?to=%d" % (b["id"], b["id"])
                           )[1]["error"]["field"], "to", "itself")
        check_eq(rig.d.get("/sweeps/%d/compare?to=999" % b["id"])[0], 404,
                 "unknown")


if __name__ == "__main__":
    cases = {c.__name__: c for c in (api, run, daemon, death, cancel_running,
                                     restart, recollect, scaling,
                                     compare)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))
