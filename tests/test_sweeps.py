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
"""
import csv
import io
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import SRC_DIR, check, check_eq  # noqa: E402
from test_capture_lib import Rig, model_dir, run_cases  # noqa: E402

MODELS_JSON = os.path.join(SRC_DIR, "tests", "data", "atom", "models.json")


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
                             "conc": p["conc"]}), "point capture")
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
              sim_env={"SIM_COMPILE_S": "600", "SIM_COMPILE_LOG_S": "1"})
    with rig:
        glm = model_dir(rig.models, "GLM-5.2-FP8", template="{{ m }}")
        holder = rig.capture()
        rig.wait_phase(holder, "waiting_ready")
        check_refusals(rig, glm)
        check_queue_bound(rig)
        for variant, isl in (("", None), ("MTP3", 8192)):
            sw = check_ci(rig, glm, variant, isl)
            cancel(rig, sw["id"])
        code, _ = rig.d.delete("/captures/%d" % holder)
        check_eq(code, 202, "the holder cancelled")
        rig.wait(holder)
        time.sleep(0.2)


if __name__ == "__main__":
    cases = {c.__name__: c for c in (api,)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))
