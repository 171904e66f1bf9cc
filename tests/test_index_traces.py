#!/usr/bin/env python3
"""`traced index` on every real trace in $TRACES_DIR against ref_index (an
independent Python + Decimal reference): totals, every kernel's figures,
launch rows, copies, runtime, steps, gpu_busy, and the shape of the tables
(orders, shares, categories summing to device time, phases); the analysis
(check_analysis): step distributions, buckets and outliers, idle time by
cause summing to the idle time, launch delays, the timeline summing to
gpu_busy_ns, demangled names (against llvm-cxxfilt, another demangler, where
it reads them) and families. Each trace is also indexed uncompressed: the
summary must not change."""
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # keep tests/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_index  # noqa: E402
from tracedtest import without_demangled  # noqa: E402

CATEGORIES = {"gemm", "attention", "moe", "communication", "custom",
              "routing", "copy", "memset", "elementwise", "normalization",
              "softmax_topk", "sync", "other"}
TOTALS = ("events", "skipped_events", "kernel_events", "kernel_ns",
          "distinct_kernels", "memcpy_count", "memcpy_bytes", "memcpy_ns",
          "memset_count", "memset_ns", "runtime_events", "runtime_ns",
          "gpu_busy_ns", "t0_ns", "span_ns", "device", "rank", "format",
          "json_bytes")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run_index(path):
    out = subprocess.run([os.environ["TRACED_BIN"], "index", path],
                         capture_output=True, text=True, timeout=600)
    check(out.returncode == 0, "%s: exit %d: %s" % (path, out.returncode,
                                                    out.stderr))
    lines = out.stdout.splitlines()
    check(len(lines) == 1, "%s: %d output lines" % (path, len(lines)))
    return json.loads(lines[0])


def near(got, want):
    """Histogram medians: within 1/1024 of the true value."""
    return abs(got - want) * 1024 <= max(want, 1) + 1024


def share_ok(row_share, total, den):
    want = 0 if den == 0 else total / den
    return abs(row_share - want) <= 0.5e-6 + 1e-12


def sorted_by_total(rows, key):
    order = [(-r["total_ns"], r[key]) for r in rows]
    return order == sorted(order)


def check_kernels(name, got, ref):
    kernels = got["kernels"]
    check(sorted_by_total(kernels, "name"), name + ": kernels order")
    check(len(kernels) == len(ref["kernels"]), name + ": kernel rows")
    for row in kernels:
        want = ref["kernels"].get(row["name"])
        if want is None:
            check(False, "%s: unexpected kernel %s" % (name, row["name"]))
            continue
        for k in ("count", "total_ns", "min_ns", "max_ns", "first_ns",
                  "last_ns"):
            check(row[k] == want[k], "%s: %s %s %r != %r" % (
                name, row["name"][:60], k, row[k], want[k]))
        check(near(row["median_ns"], want["median_ns"]),
              "%s: %s median %d vs %d" % (name, row["name"][:60],
                                          row["median_ns"],
                                          want["median_ns"]))
        check(row["avg_ns"] == want["total_ns"] // want["count"],
              name + ": avg " + row["name"][:60])
        check(share_ok(row["share"], row["total_ns"], got["kernel_ns"]),
              name + ": share " + row["name"][:60])
        check(row["category"] in CATEGORIES, name + ": category id")


def launch_key(row):
    g = tuple(row["grid"]) if row["grid"] is not None else None
    b = tuple(row["block"]) if row["block"] is not None else None
    return (row["name"], g, b, row["registers_per_thread"],
            row["shared_bytes"])


def check_launches(name, got, ref):
    rows = got["launches"]
    check(sorted_by_total(rows, "name"), name + ": launches order")
    mine = {launch_key(r): (r["count"], r["total_ns"], r["min_ns"],
                            r["max_ns"]) for r in rows}
    check(len(mine) == len(rows), name + ": duplicate launch rows")
    check(mine == ref["launches"], "%s: launches differ: %s" % (
        name, sorted(set(mine.items()) ^ set(ref["launches"].items()),
                     key=str)[:4]))


def check_tables(name, got, ref):
    memcpy = {r["kind"]: {k: r[k] for k in ("count", "total_ns", "bytes",
                                            "max_bytes")}
              for r in got["memcpy"]}
    check(memcpy == ref["memcpy"], "%s: memcpy %r != %r" % (
        name, memcpy, ref["memcpy"]))
    check(sorted_by_total(got["memcpy"], "kind"), name + ": memcpy order")
    check(sorted_by_total(got["runtime"], "name"), name + ": runtime order")
    check(len(got["runtime"]) == len(ref["runtime"]), name + ": runtime rows")
    for r in got["runtime"]:
        want = ref["runtime"].get(r["name"], {})
        check((r["count"], r["total_ns"], r["max_ns"]) ==
              (want.get("count"), want.get("total_ns"), want.get("max_ns")),
              "%s: runtime %s" % (name, r["name"]))
        check(near(r["median_ns"], want.get("median_ns", -10**9)),
              "%s: runtime median %s" % (name, r["name"]))
    steps = {r["kind"]: {k: r[k] for k in ("count", "total_ns", "tokens",
                                           "padded", "kernel_ns", "source")}
             for r in got["steps"]}
    want = {kind: {k: v[k] for k in ("count", "total_ns", "tokens",
                                     "padded", "kernel_ns", "source")}
            for kind, v in ref["steps"].items()}
    check(steps == want, "%s: steps %r != %r" % (name, steps, want))
    check([r["kind"] for r in got["steps"]] == sorted(steps),
          name + ": steps order")


def check_categories(name, got):
    cats = got["categories"]
    check(sorted_by_total(cats, "category"), name + ": categories order")
    check(all(c["category"] in CATEGORIES for c in cats), name + ": ids")
    check(sum(c["count"] for c in cats) == got["kernel_events"] +
          got["memcpy_count"] + got["memset_count"], name + ": cat counts")
    check(sum(c["total_ns"] for c in cats) == got["device_ns"],
          name + ": cat totals")
    check(got["device_ns"] == got["kernel_ns"] + got["memcpy_ns"] +
          got["memset_ns"], name + ": device_ns")
    per = {}
    for k in got["kernels"]:
        per[k["category"]] = per.get(k["category"], 0) + k["total_ns"]
    for c in cats:
        extra = (got["memcpy_ns"] if c["category"] == "copy" else
                 got["memset_ns"] if c["category"] == "memset" else 0)
        check(c["total_ns"] == per.get(c["category"], 0) + extra,
              "%s: category %s total" % (name, c["category"]))
        check(share_ok(c["share"], c["total_ns"], got["device_ns"]),
              "%s: category %s share" % (name, c["category"]))


def check_phases(name, got):
    phases = got["phases"]
    check(len(phases) <= 64, name + ": too many phases")
    check(bool(phases) == (got["kernel_events"] + got["memcpy_count"] +
                           got["memset_count"] > 0), name + ": no phases")
    check(sum(p["kernel_events"] for p in phases) == got["kernel_events"],
          name + ": phase kernel events")
    for i, p in enumerate(phases):
        check(p["index"] == i, name + ": phase index")
        check(p["cause"] == ("start" if i == 0 else p["cause"]) and
              p["cause"] in ("start", "gap", "shape"), name + ": cause")
        check(0 <= p["start_ns"] <= p["end_ns"] <= got["span_ns"],
              name + ": phase bounds")
        check(0 <= p["busy_ns"] <= p["end_ns"] - p["start_ns"],
              name + ": phase busy")
        check(i == 0 or p["start_ns"] >= phases[i - 1]["start_ns"],
              name + ": phase order")
        check(len(p["top_kernels"]) <= 5 and len(p["top_launches"]) <= 5,
              name + ": top lists")


STEP_EXTRA = ("min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns",
              "warmup_steps", "steady_count", "steady_total_ns",
              "steady_min_ns", "steady_p50_ns", "steady_p90_ns",
              "steady_p99_ns", "steady_max_ns")
ANALYSIS_TOTALS = ("idle_ns", "launch_delays", "launch_delay_min_ns",
                   "launch_delay_p50_ns", "launch_delay_p99_ns",
                   "launch_delay_max_ns", "warmup_steps",
                   "timeline_bucket_ns")
FAMILY_KEYS = ("kernels", "count", "total_ns", "min_ns", "max_ns",
               "p50_ns", "p99_ns", "avg_ns")


def demangled_by_llvm(names):
    """{name: llvm-cxxfilt's reading} for the names it reads (it stops at
    what LLVM 14 does not know, e.g. DF16b)."""
    tool = shutil.which("llvm-cxxfilt")
    if not tool or not names:
        return {}
    out = subprocess.run([tool], input="\n".join(names) + "\n",
                         capture_output=True, text=True, timeout=60)
    return {n: d for n, d in zip(names, out.stdout.splitlines())
            if d != n}


def check_names(name, got):
    mangled = [k["name"] for k in got["kernels"] if k["name"].startswith(
        "_Z")]
    llvm = demangled_by_llvm(mangled)
    for k in got["kernels"]:
        if k["name"].startswith("_Z"):
            check(isinstance(k["demangled"], str) and
                  k["demangled"].startswith("void "),
                  "%s: %s not demangled" % (name, k["name"][:60]))
            if k["name"] in llvm:
                check(k["demangled"] == llvm[k["name"]],
                      "%s: demangled %s" % (name, k["name"][:60]))
        else:
            check(k["demangled"] is None, name + ": demangled a plain name")


def check_families(name, got, ref):
    fams = {f["family"]: f for f in got["families"]}
    check(set(fams) == set(ref["families"]), "%s: families %r" % (
        name, sorted(set(fams) ^ set(ref["families"]))[:6]))
    top = {}
    for k in got["kernels"]:
        check(k["family"] in fams, name + ": kernel family unknown")
        t = top.get(k["family"])
        if t is None or k["total_ns"] > t["total_ns"]:
            top[k["family"]] = k
    for fam, f in fams.items():
        want = ref["families"].get(fam, {})
        check(all(f[k] == want.get(k) for k in FAMILY_KEYS),
              "%s: family %s %r != %r" % (name, fam[:50], f, want))
        check(f["category"] == top[fam]["category"],
              name + ": family category " + fam[:50])
        check(share_ok(f["share"], f["total_ns"], got["kernel_ns"]),
              name + ": family share")
    check(sorted_by_total(got["families"], "family"),
          name + ": families order")
    fsteps = {(r["family"], r["step"]): {k: r[k] for k in (
        "count", "total_ns", "steps", "per_step_ns")}
        for r in got["family_steps"]}
    check(fsteps == ref["family_steps"], "%s: family steps %r != %r" % (
        name, fsteps, ref["family_steps"]))


def check_analysis(name, got, ref):
    """The analysis figures against ref_analysis.py, and its sums."""
    for k in ANALYSIS_TOTALS:
        check(got[k] == ref[k], "%s: %s %r != %r" % (name, k, got[k],
                                                     ref[k]))
    check(got["idle_ns"] == got["span_ns"] - got["gpu_busy_ns"],
          name + ": idle is span minus busy")
    idle = {(r["step"], r["cause"]): r["idle_ns"] for r in got["idle"]}
    check(idle == ref["idle"], "%s: idle %r != %r" % (name, idle,
                                                      ref["idle"]))
    check(sum(idle.values()) == got["idle_ns"], name + ": causes sum")
    for row in got["steps"]:
        want = ref["steps"][row["kind"]]
        for k in STEP_EXTRA:
            check(row[k] == want[k], "%s: step %s %s %r != %r" % (
                name, row["kind"], k, row[k], want[k]))
    check(got["step_buckets"] == ref["step_buckets"],
          "%s: step buckets %r != %r" % (name, got["step_buckets"][:3],
                                         ref["step_buckets"][:3]))
    check(got["step_histogram"] == ref["step_histogram"],
          "%s: step histogram %r != %r" % (name, got["step_histogram"][:3],
                                           ref["step_histogram"][:3]))
    table = {k["name"]: k["demangled"] for k in got["kernels"]}
    check(without_demangled(got["step_outliers"], table) ==
          ref["step_outliers"], "%s: step outliers differ" % name)
    check(sum(r["busy_ns"] for r in got["timeline"]) == got["gpu_busy_ns"],
          name + ": timeline sums to gpu_busy_ns")
    check(all(sum(r["by_category"].values()) == r["busy_ns"]
              for r in got["timeline"]), name + ": categories sum to busy")
    check(got["timeline"] == ref["timeline"], "%s: timeline differs" % name)
    check_names(name, got)
    check_families(name, got, ref)
    check_samples(name, got, ref)


def check_samples(name, got, ref):
    """The steps' own figures (the verdicts' samples) against
    ref_analysis.step_samples()."""
    figs = [(r["figure"], r["name"]) for r in got["sample_figures"]]
    check(figs == (ref["sample_figures"] if ref["step_samples"] else []),
          "%s: sample figures %r != %r" % (name, figs[:4],
                                           ref["sample_figures"][:4]))
    mine = {(s["kind"], s["ordinal"]): {
        "start_ns": s["start_ns"], "dur_ns": s["dur_ns"],
        "warmup": s["warmup"], "bs": s["bs"], "tok": s["tok"],
        "step": s["step"], "values": dict(zip(figs, s["values"]))}
        for s in got["step_samples"]}
    check(mine == ref["step_samples"], "%s: step samples differ: %r" % (
        name, sorted(set(mine) ^ set(ref["step_samples"]))[:4] or
        [(k, v, ref["step_samples"].get(k)) for k, v in mine.items()
         if v != ref["step_samples"].get(k)][:1]))


def main():
    traces = sorted(glob.glob(os.path.join(os.environ["TRACES_DIR"], "*.gz")))
    check(len(traces) >= 10, "traces found: %d" % len(traces))
    for path in traces:
        name = os.path.basename(path)
        got = run_index(path)
        ref = ref_index.reference(path, categories={
            k["name"]: k["category"] for k in got["kernels"]})
        for k in TOTALS:
            check(got[k] == ref[k], "%s: %s %r != %r" % (name, k, got[k],
                                                         ref[k]))
        check(got["file_bytes"] == os.path.getsize(path), name + ": size")
        check(got["file"] == path, name + ": file")
        check_kernels(name, got, ref)
        check_launches(name, got, ref)
        check_tables(name, got, ref)
        check_categories(name, got)
        check_phases(name, got)
        check_analysis(name, got, ref)
        with tempfile.NamedTemporaryFile(suffix=".json") as plain:
            with gzip.open(path, "rb") as f:
                plain.write(f.read())
            plain.flush()
            again = run_index(plain.name)
        for k in ("file", "file_bytes"):
            got.pop(k)
            again.pop(k)
        check(got == again, name + ": plain and gzip summaries differ")
        print("ok", name, got["kernel_events"], "kernels")
    if failures:
        sys.exit("%d failures" % len(failures))


if __name__ == "__main__":
    main()
