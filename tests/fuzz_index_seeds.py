#!/usr/bin/env python3
"""Seeds for tests/fuzz_index.c: small whole traces, each cut from a real
trace (TRACES_DIR) or a generated one (make_cpath.py): its metadata, and
the EVENTS events that start first from its first step (a run label or a
ProfilerStep, else its first event), with the trace's top-level members.
A trace cut short would be refused before the time pass, so every seed is
whole JSON under 64 KiB.

Usage: fuzz_index_seeds.py TRACES_DIR OUT_DIR"""
import gzip
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_cpath  # noqa: E402

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


if __name__ == "__main__":
    main()
