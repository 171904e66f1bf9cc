#!/usr/bin/env python3
"""Seeds for tests/fuzz_index.c: small whole traces, each cut from a real
trace (TRACES_DIR) or a generated one (make_cpath.py): its metadata, and
the EVENTS events that start first from its first step (a run label or a
ProfilerStep, else its first event), with the trace's top-level members;
and traces of every op TraceLens's per-op reports have a row of
(perf_pairs: the row's first instance's arguments, a launch and its
kernel under it, a [memory] event, inside a step whose label carries the
inference attention models' sums), so that every op model (index/perf/)
and the memory room (index/memory/) are reached. A trace cut short would be refused before the time pass, so
every seed is whole JSON under 64 KiB.

Usage: fuzz_index_seeds.py TRACES_DIR OUT_DIR"""
import gzip
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_cpath  # noqa: E402

PERF_OPS = 32  # ops of one perf seed

EVENTS = 120
MAX_BYTES = 65536


def first_step(events):
    starts = [e["ts"] for e in events
              if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))
              and (str(e.get("name", "")).startswith(("ProfilerStep#",
                                                     "decode[", "prefill[")))]
    return min(starts) if starts else None


def cut(trace, n):
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    timed = [e for e in events if isinstance(e, dict) and
             isinstance(e.get("ts"), (int, float)) and e.get("ph") != "M"]
    meta = [e for e in events if isinstance(e, dict) and e.get("ph") == "M"]
    t0 = first_step(timed)
    timed.sort(key=lambda e: e["ts"])
    if t0 is not None:
        timed = [e for e in timed if e["ts"] >= t0]
    out = dict(trace) if isinstance(trace, dict) else {}
    out["traceEvents"] = meta[:20] + timed[:n]
    return out


def write(out_dir, name, trace):
    for n in (EVENTS, EVENTS // 2, EVENTS // 4):
        text = json.dumps(cut(trace, n), separators=(",", ":"))
        if len(text) <= MAX_BYTES:
            with open(os.path.join(out_dir, name), "w") as f:
                f.write(text)
            return


def op_events(r, i, t):
    """A pair row's op at t us: the CPU op, its launch, its kernel."""
    args = {"External id": i + 1}
    for key, member in (("dims", "Input Dims"), ("types", "Input type"),
                        ("strides", "Input Strides"),
                        ("concrete", "Concrete Inputs")):
        if r[key] is not None:
            args[member] = r[key]
    return [
        {"ph": "X", "cat": "cpu_op", "name": r["name"], "pid": 1, "tid": 1,
         "ts": t, "dur": 8, "args": args},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
         "pid": 1, "tid": 1, "ts": t + 1, "dur": 3,
         "args": {"External id": i + 1, "correlation": i + 1}},
        {"ph": "X", "cat": "kernel", "name": "k%d" % (i % 7), "pid": 0,
         "tid": 7, "ts": t + 5, "dur": 2 + i % 5,
         "args": {"device": 0, "stream": 7, "correlation": i + 1}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
         "pid": 1, "tid": 1, "ts": t + 2,
         "args": {"Total Reserved": 1 << 21, "Total Allocated": 512 * (i % 3),
                  "Bytes": 512 if i % 3 else -1024, "Addr": 4096 * (i % 4),
                  "Device Id": i % 2 - 1, "Device Type": i % 2}}]


def perf_seeds(out_dir):
    """The pairs' rows' ops, PERF_OPS a seed, in one step labeled with the
    vLLM detailed annotation."""
    import tracelens_perf as tlp
    rows = [r for p in tlp.pairs() for r in tlp.rows(p)]
    label = ("execute_0_context_2(sq100sk300sqsq5000sqsk15000)"
             "_generation_8(sq8sk4000sqsq8sqsk4000)")
    for k in range(0, len(rows), PERF_OPS):
        ev = []
        for i, r in enumerate(rows[k:k + PERF_OPS]):
            ev += op_events(r, i, 10 + 12 * i)
        ev.append({"ph": "X", "cat": "user_annotation", "name": label,
                   "pid": 1, "tid": 1, "ts": 5, "dur": 12 * PERF_OPS + 20})
        doc = {"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}],
               "traceEvents": ev}
        text = json.dumps(doc, separators=(",", ":"))
        while len(text) > MAX_BYTES and ev:
            ev = ev[:-4] + ev[-1:]
            text = json.dumps(dict(doc, traceEvents=ev), separators=(",", ":"))
        with open(os.path.join(out_dir, "idx_perf_%03d" % (k // PERF_OPS)),
                  "w") as f:
            f.write(text)


def main():
    traces, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for f in sorted(os.listdir(traces)):
        if f.endswith(".gz"):
            with gzip.open(os.path.join(traces, f), "rt") as g:
                write(out_dir, "idx_" + f[:-3], json.load(g))
    with tempfile.TemporaryDirectory() as tmp:
        for p in make_cpath.generate(tmp):
            opener = gzip.open if p.endswith(".gz") else open
            with opener(p, "rt") as g:
                write(out_dir, "idx_gen_" + os.path.basename(p).replace(".gz", ""),
                      json.load(g))
    perf_seeds(out_dir)


if __name__ == "__main__":
    main()
