#!/usr/bin/env python3
"""traced's device time per (op, parent module) against TraceLens's own
answer on the two real graph-capture pairs of ../shared/traces/graph_pairs
(tracelens_ops_summary.csv: TraceLens's inference report with the capture
merged into the replays, group_by_parent_module).

Both count the same thing for every kernel with a CPU op above its launch:
the kernel's time under its innermost op instance (the launcher: TraceLens's
get_kernel_launchers walks up from the launch past python_function events
and the pass-through op "execute" to the first cpu_op; traced's op is the
innermost op frame past the same), grouped by the op's name and the
innermost nn.Module above it (TraceLens's parent_module: the call stack's
nn.Module entries, the instance suffix dropped; traced's module path, whose
last segment is that class in these traces, which carry no module tags).
Replayed kernels take the op and module of the capture launch that recorded
them, in both. Count is the op instances that launched (TraceLens's Count,
one row per launcher event; traced's count). What differs, and why:

1. Time. TraceLens keeps timestamps as float64 microseconds since the epoch
   (~4.9e12 us), where one ulp is ~0.98 ns: each kernel's busy time
   (end - start, both rounded) is off by up to half an ulp, so its sums
   are off by up to 0.5 ns per kernel (13 ns over the 544-kernel rows of the
   SGLang pair, 6.7 ns over xDiT's largest). traced reads the three decimal
   digits as exact integer nanoseconds (docs/TRACE_FORMATS.md) and sums
   integers: its figure is the kernels' exact total. The test allows 0.5 ns
   per kernel and no more.
2. Kernels with no CPU op above their launch (SGLang's run trace: three
   kernels launched from Python by hipLaunchKernel and hipModuleLaunchKernel
   with only python_function frames above them). TraceLens falls back to
   the runtime call as the launcher and reports rows named
   "hipLaunchKernel" and "hipModuleLaunchKernel"; traced does not take a
   runtime API for an op: they are its op-less row (op null), and counted
   in the rank's completeness (kernels_no_op, kernels_no_op_ns), so that
   an API name is never read as an op. Their time is the same.
3. TraceLens leaves NCCL/RCCL kernels out of its ops summary; traced keeps
   them under their op (a collective is device time of the step). These
   pairs have none: the test checks that, so the equality holds for all
   rows.
4. TraceLens's SGLang op names drop the run-volatile counter of
   sglang_profiler ops (normalize_sglang_profiler_op_names); traced drops it
   the same way (docs/DECODE.md, "Events").

Where TraceLens aligns xDiT's 1566 replayed kernels to its 1567 capture
launches greedily (discarding the last), traced places them only because
the placement is unique (the leftmost and rightmost ones agree): the rank
counts 4 short replays with 1 missing launch each, and still the same rows.
"""
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tracedtest  # noqa: E402

TRACES = tracedtest.TRACES_DIR
PAIRS = os.path.join(TRACES, "graph_pairs")
ULP_NS = 0.5  # half an ulp of float64 microseconds at ~4.9e12 us, in ns
COMM = ("nccl", "rccl")

CASES = [
    ("sglang_decode",
     os.path.join(PAIRS, "sglang_decode", "sglang_Qwen3-8B_decode.json.gz"),
     {"replays": 1, "replays_matched": 1, "replays_short": 0,
      "missing_launches": 0, "kernels_no_op": 3},
     {("hipLaunchKernel", None): 2, ("hipModuleLaunchKernel", None): 1}),
    ("xdit_flux.1_aiter_sage",
     os.path.join(TRACES,
                  "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0"
                  ".json.gz"),
     {"replays": 4, "replays_matched": 0, "replays_short": 4,
      "missing_launches": 4, "kernels_no_op": 0},
     {}),
]


def tracelens_rows(path):
    """{(op, parent class or None): (total us, count)}."""
    out = {}
    for r in csv.DictReader(open(path, newline="")):
        pm = r["parent_module"]
        pm = None if pm == "NA" else pm[len("nn.Module: "):]
        out[(r["name"], pm)] = (float(r["total_direct_kernel_time_sum"]),
                                int(r["Count"]))
    return out


def traced_rows(summary):
    """{(op, parent class or None): [total ns, count, kernels]} summed over
    the step kinds."""
    out = {}
    for r in summary["decode_op_modules"]:
        parent = r["module"].split("/")[-1] if r["module"] else None
        row = out.setdefault((r["op"], parent), [0, 0, 0])
        row[0] += r["total_ns"]
        row[1] += r["count"]
        row[2] += r["kernels"]
    return out


def check_pair(name, run, complete, runtime_rows):
    caps = os.path.join(PAIRS, name, "capture_traces")
    out = subprocess.run([tracedtest.TRACED_BIN, "index", "--captures", caps, run],
                         capture_output=True, text=True, check=True)
    s = json.loads(out.stdout)
    for k, v in complete.items():
        tracedtest.check(s[k] == v, "%s: %s %s, expected %s"
                         % (name, k, s[k], v))
    tracedtest.check(s["replays_unmatched"] == 0, name + ": unmatched")
    ours = traced_rows(s)
    theirs = tracelens_rows(os.path.join(PAIRS, name,
                                         "tracelens_ops_summary.csv"))
    tracedtest.check(not any(c in (op or "").lower() for op, _ in theirs
                             for c in COMM), name + ": NCCL in the pair")
    # 2: the runtime-call rows are traced's op-less row, kernel for kernel.
    opless = ours.pop((None, None), [0, 0, 0])
    rt_us = sum(theirs.pop(k)[0] for k in runtime_rows)
    rt_kernels = sum(runtime_rows.values())
    tracedtest.check(opless[2] == rt_kernels == s["kernels_no_op"],
                     "%s: %d op-less kernels, TraceLens %d"
                     % (name, opless[2], rt_kernels))
    tracedtest.check(abs(opless[0] - rt_us * 1000) <= ULP_NS * rt_kernels,
                     "%s: op-less %d ns, TraceLens %.3f us"
                     % (name, opless[0], rt_us))
    tracedtest.check(set(ours) == set(theirs), "%s: rows differ: %s / %s" % (
        name, sorted(set(ours) - set(theirs), key=str)[:5],
        sorted(set(theirs) - set(ours), key=str)[:5]))
    worst = 0.0
    for key, (ns, count, kernels) in ours.items():
        us, tl_count = theirs[key]
        err = abs(ns - us * 1000)
        worst = max(worst, err / kernels)
        # 1: within half a float64 ulp per kernel of TraceLens's sum.
        tracedtest.check(err <= ULP_NS * kernels,
                         "%s %s: %d ns, TraceLens %.6f us (%d kernels)"
                         % (name, key, ns, us, kernels))
        tracedtest.check(count == tl_count, "%s %s: count %d, TraceLens %d"
                         % (name, key, count, tl_count))
    total = sum(v[0] for v in ours.values()) + opless[0]
    tracedtest.check(total == s["device_ns"], name + ": rows miss time")
    print("%s: %d rows equal to TraceLens's (worst %.3f ns a kernel), %d "
          "op-less kernels = its runtime-call rows" % (name, len(ours), worst,
                                                       rt_kernels))


def main():
    for case in CASES:
        check_pair(*case)
    print("ok")


if __name__ == "__main__":
    main()
