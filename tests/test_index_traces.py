#!/usr/bin/env python3
"""`traced index` on every real trace in $TRACES_DIR against ref_index (an
independent Python + Decimal reference): totals, every kernel's figures,
launch rows, copies, runtime, steps, gpu_busy, and the shape of the tables
(orders, shares, categories summing to device time, phases). Each trace is
also indexed uncompressed: the summary must not change."""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # keep tests/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_index  # noqa: E402

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
    check(steps == ref["steps"], "%s: steps %r != %r" % (name, steps,
                                                         ref["steps"]))
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


def main():
    traces = sorted(glob.glob(os.path.join(os.environ["TRACES_DIR"], "*.gz")))
    check(len(traces) >= 10, "traces found: %d" % len(traces))
    for path in traces:
        name = os.path.basename(path)
        got = run_index(path)
        ref = ref_index.reference(path)
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
