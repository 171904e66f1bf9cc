#!/usr/bin/env python3
"""`traced index` on the generated fixtures (make_fixtures.py) against the
figures the generator built them with: ATOM run-label steps per kind on a
TP=2 ROCm capture, launch rows joined from hipLaunchKernel in both orders,
the seed 003 mcTracer timeline (launch rows, copies by direction, host
runtime apart, phases at the gaps and the shape change), malformed files
(exit 1 naming the file and a byte offset), odd events counted as skipped,
and the command line (usage errors, --format, --rules, several files).
ref_index is held to the same figures, so the reference is checked too."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # keep tests/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402
import ref_index  # noqa: E402
import test_index_traces  # noqa: E402  (its check_analysis)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def traced(*args):
    return subprocess.run([os.environ["TRACED_BIN"], "index"] + list(args),
                          capture_output=True, text=True, timeout=300)


def summaries(*args):
    out = traced(*args)
    check(out.returncode == 0, "exit %d for %s: %s" % (out.returncode, args,
                                                       out.stderr))
    return [json.loads(line) for line in out.stdout.splitlines()]


def launches_of(got):
    return {(r["name"], tuple(r["grid"]) if r["grid"] else None,
             tuple(r["block"]) if r["block"] else None,
             r["registers_per_thread"], r["shared_bytes"]):
            [r["count"], r["total_ns"]] for r in got["launches"]}


def check_common(tag, got, exp):
    for k in ("rank", "device", "format", "events", "t0_ns", "span_ns",
              "gpu_busy_ns"):
        check(got[k] == exp[k], "%s: %s %r != %r" % (tag, k, got[k], exp[k]))
    kernels = {r["name"]: [r["count"], r["total_ns"]] for r in got["kernels"]}
    check(kernels == {k: list(v) for k, v in exp["kernels"].items()},
          "%s: kernels %r" % (tag, kernels))
    want = {k: list(v) for k, v in exp["launches"].items()}
    check(launches_of(got) == want, "%s: launches %r != %r" % (
        tag, launches_of(got), want))
    memcpy = {r["kind"]: {k: r[k] for k in ("count", "total_ns", "bytes",
                                            "max_bytes")}
              for r in got["memcpy"]}
    check(memcpy == exp["memcpy"], "%s: memcpy %r" % (tag, memcpy))
    rt = {r["name"]: [r["count"], r["total_ns"]] for r in got["runtime"]}
    check(rt == {k: list(v[:2]) for k, v in exp["runtime"].items()},
          "%s: runtime %r" % (tag, rt))


def check_reference(tag, path, exp):
    """ref_index must agree with the generator too."""
    ref = ref_index.reference(path)
    for k in ("events", "t0_ns", "span_ns", "gpu_busy_ns", "format"):
        check(ref[k] == exp[k], "%s ref: %s %r != %r" % (tag, k, ref[k],
                                                         exp[k]))
    check({k: [v[0], v[1]] for k, v in ref["launches"].items()} ==
          {k: list(v) for k, v in exp["launches"].items()},
          tag + " ref: launches")
    check(ref["memcpy"] == exp["memcpy"], tag + " ref: memcpy")
    return ref


def test_atom(exp_ranks):
    got = summaries(*[e["path"] for e in exp_ranks])
    check(len(got) == 2, "atom: one line per rank file")
    for g, exp in zip(got, exp_ranks):
        tag = "atom rank %d" % exp["rank"]
        check(g["file"] == exp["path"], tag + ": file order")
        check_common(tag, g, exp)
        steps = {r["kind"]: {k: r[k] for k in ("count", "total_ns", "tokens",
                                               "padded", "kernel_ns",
                                               "source")}
                 for r in g["steps"]}
        check(steps == exp["steps"], "%s: steps %r != %r" % (
            tag, steps, exp["steps"]))
        check(all(r["avg_ns"] == r["total_ns"] // r["count"]
                  for r in g["steps"]), tag + ": step avg")
        cats = {r["category"] for r in g["categories"]}
        check({"gemm", "attention", "moe", "communication", "custom",
               "normalization", "copy", "memset"} <= cats,
              "%s: categories %r" % (tag, cats))
        ref = check_reference(tag, exp["path"], exp)
        check(basic_steps(ref["steps"]) == exp["steps"], tag + " ref: steps")


def basic_steps(steps):
    """The figures the generator keeps of each step kind."""
    return {kind: {k: v[k] for k in ("count", "total_ns", "tokens",
                                     "padded", "kernel_ns", "source")}
            for kind, v in steps.items()}


def steps_of(got):
    return {r["kind"]: {k: r[k] for k in ("count", "total_ns", "tokens",
                                          "padded", "kernel_ns", "source")}
            for r in got["steps"]}


def test_generations(gens):
    """Both run-label generations, GPU side and CPU side: every kind the
    generator placed is counted with its tokens and padded steps, unknown
    fields are passed over, capture_graph_bs_N and unknown kinds are not
    steps; ref_index agrees."""
    for name, exps in sorted(gens.items()):
        exp = exps[0]
        got = summaries(exp["path"])[0]
        check(got["skipped_events"] == 0, name + ": skipped events")
        check(steps_of(got) == exp["steps"], "%s: steps %r != %r" % (
            name, steps_of(got), exp["steps"]))
        ref = ref_index.reference(exp["path"])
        check(basic_steps(ref["steps"]) == exp["steps"],
              "%s ref: steps %r" % (name, ref["steps"]))
        kinds = set(exp["steps"])
        want = ({"draft", "dspark", "dspark_ctx_kv", "dspark_sched"}
                if "ffdf3bb5" in name else
                {"propose_eagle", "propose_dspark", "draft_kv",
                 "dspark_sched"})
        check(want <= kinds, "%s: kinds %r" % (name, sorted(kinds)))
        check(not {"capture_graph_bs_8", "decode_helper"} & kinds,
              name + ": a non-step counted")
        side = "cpu" if name.endswith("_cpu") else "gpu"
        check(all(r["source"] == side for r in got["steps"]),
              name + ": source")


def test_idle(exp):
    """Every idle cause where the generator put it, families of every rule,
    the warm-up step; and every analysis figure equal to ref_index's."""
    g = summaries(exp["path"])[0]
    idle = {(r["step"], r["cause"]): r["idle_ns"] for r in g["idle"]}
    check(idle == exp["idle"], "idle: %r != %r" % (idle, exp["idle"]))
    check({c for _, c in idle} == {"host_late", "sync", "collective",
                                   "graph_replay", "between_steps",
                                   "other"}, "idle: a cause is missing")
    for k in ("span_ns", "gpu_busy_ns"):
        check(g[k] == exp[k], "idle: %s %r != %r" % (k, g[k], exp[k]))
    fams = {k["name"]: k["family"] for k in g["kernels"]}
    check(fams == exp["families"], "idle: families %r" % fams)
    warm = {s["kind"]: s["warmup_steps"] for s in g["steps"]}
    check(warm == exp["warmup"], "idle: warm-up %r" % warm)
    check(g["launch_delays"] > 0, "idle: no launch delays")
    ref = ref_index.reference(exp["path"], categories={
        k["name"]: k["category"] for k in g["kernels"]})
    check(ref["idle"] == exp["idle"], "idle ref: %r" % ref["idle"])
    test_index_traces.check_analysis("idle", g, ref)
    check(g["family_steps"], "idle: no family steps")


def test_mctracer(exp):
    g = summaries(exp["path"])[0]
    check_common("mctracer", g, exp)
    rt = {r["name"]: r["max_ns"] for r in g["runtime"]}
    check(rt == {k: v[2] for k, v in exp["runtime"].items()},
          "mctracer: runtime max")
    custom = [r for r in g["categories"] if r["category"] == "custom"]
    kk = exp["kernels"]["kernel_kernel"][1] + exp["kernels"][
        "kernel_kernel_1"][1]
    check(custom and custom[0]["total_ns"] == kk, "mctracer: custom total")
    phases = g["phases"]
    check(len(phases) == len(exp["phases"]), "mctracer: %d phases" %
          len(phases))
    for i, (p, e) in enumerate(zip(phases, exp["phases"])):
        top = p["top_launches"][0]
        for k in ("cause", "start_ns", "end_ns", "kernel_events"):
            check(p[k] == e[k], "mctracer phase %d: %s %r != %r" % (
                i, k, p[k], e[k]))
        check([top["name"], top["grid"], top["count"], top["total_ns"]] ==
              e["top_launch"], "mctracer phase %d: top launch %r" % (i, top))
    check_reference("mctracer", exp["path"], exp)
    forced = summaries("--format", "mctracer", exp["path"])[0]
    check(forced == g, "mctracer: --format mctracer changes the summary")


def test_legacy(exp):
    """2021 kineto: its categories, string tids and integer microseconds
    count as today's do, zero-duration kernels included."""
    g = summaries(exp["path"])[0]
    check_common("legacy", g, exp)
    check(g["kernel_events"] == sum(v[0] for v in exp["kernels"].values()),
          "legacy: kernel_events %d" % g["kernel_events"])
    check(g["runtime_events"] == sum(v[0] for v in exp["runtime"].values()),
          "legacy: runtime_events %d" % g["runtime_events"])
    check_reference("legacy", exp["path"], exp)


def test_failures(fail, good):
    for path, why in sorted(fail.items()):
        out = traced(path)
        check(out.returncode == 1, "%s (%s): exit %d" % (path, why,
                                                         out.returncode))
        check(out.stdout == "", "%s: printed a partial summary" % why)
        check(path in out.stderr and re.search(r"byte \d+", out.stderr),
              "%s: stderr lacks file and offset: %r" % (why, out.stderr))
    bad = sorted(fail)[0]
    out = traced(good, bad, good)
    check(out.returncode == 1, "mixed files: exit %d" % out.returncode)
    check(len(out.stdout.splitlines()) == 2, "mixed files: good ones print")


def test_odd(path, exp):
    g = summaries(path)[0]
    for k, v in exp.items():
        check(g[k] == v, "odd: %s %r != %r" % (k, g[k], v))
    ref = ref_index.reference(path)
    for k, v in exp.items():
        check(ref[k] == v, "odd ref: %s %r != %r" % (k, ref[k], v))


def test_cli(tmp, good):
    for args in ([], ["--format"], ["--format", "xml", good],
                 ["--bogus", "x", good], ["--rules"],
                 ["--rules", os.path.join(tmp, "missing.rules"), good]):
        out = traced(*args)
        check(out.returncode == 2 and out.stdout == "" and out.stderr,
              "usage %r: exit %d" % (args, out.returncode))
    rules = os.path.join(tmp, "my.rules")
    with open(rules, "w") as f:
        f.write("# TileLang MoE kernels\nmoe ^kernel_kernel\n")
    g = summaries("--rules", rules, good)[0]
    cats = {r["name"]: r["category"] for r in g["kernels"]}
    check(cats.get("kernel_kernel") == "moe" and
          cats.get("kernel_kernel_1") == "moe", "--rules: %r" % cats)
    check(summaries("--", good)[0]["file"] == good, "-- before files")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        exp = make_fixtures.generate(tmp, os.environ["TRACES_DIR"])
        test_atom(exp["atom"])
        test_generations(exp["generations"])
        test_idle(exp["idle"])
        for exps in [exp["atom"]] + list(exp["generations"].values()):
            for e in exps:
                g = summaries(e["path"])[0]
                ref = ref_index.reference(e["path"], categories={
                    k["name"]: k["category"] for k in g["kernels"]})
                test_index_traces.check_analysis(e["path"], g, ref)
        test_mctracer(exp["mctracer"])
        test_legacy(exp["legacy"])
        test_failures(exp["fail"], exp["mctracer"]["path"])
        test_odd(*exp["odd"])
        test_cli(tmp, exp["mctracer"]["path"])
    failures.extend(test_index_traces.failures)
    if failures:
        sys.exit("%d failures" % len(failures))
    print("ok")


if __name__ == "__main__":
    main()
