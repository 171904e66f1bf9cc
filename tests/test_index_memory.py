#!/usr/bin/env python3
"""Memory stays flat with file size, and the bounded structures still give
exact figures at scale: a ROCm kineto trace whose kernels are written in
shuffled time order (time records spill to disk and are merged) and all
before their hipLaunchKernel events (the correlation tables overflow and
the (name, grid, block) fallback joins the rest). Two sizes, 8x apart:
peak RSS may not grow by more than a fixed slack, and every figure must be
the generator's."""
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile

NAMES = ["Cijk_Alik_Bljk_MT%dx%d" % (i, i) for i in range(40, 80)]
SLACK_BYTES = 24 << 20


def write_trace(path, n):
    """n kernels over len(NAMES) names, 1 us apart, 700 ns long, shuffled;
    then their launches. Returns the expected figures."""
    rng = random.Random(n)
    slots = list(range(n))
    rng.shuffle(slots)
    exp = {"kernel_events": n, "kernel_ns": 700 * n,
           "gpu_busy_ns": 700 * n, "launches": {}}
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        for corr, slot in enumerate(slots):
            name = NAMES[corr % len(NAMES)]
            f.write('{"ph": "X", "cat": "kernel", "name": "%s", "pid": 2, '
                    '"tid": 0, "ts": %d.000, "dur": 0.700, "args": '
                    '{"correlation": %d, "grid": [%d, 1, 1], '
                    '"block": [256, 1, 1]}},\n'
                    % (name, 1000 + slot, corr, corr % 3 + 1))
            key = (name, corr % 3 + 1)
            exp["launches"][key] = exp["launches"].get(key, 0) + 1
        for corr in range(n):
            name = NAMES[corr % len(NAMES)]
            f.write('{"ph": "X", "cat": "cuda_runtime", "name": '
                    '"hipLaunchKernel", "pid": 9, "tid": 9, "ts": %d, '
                    '"dur": 1, "args": {"correlation": %d, "kernel": "%s", '
                    '"grid": [%d, 1, 1], "block": [256, 1, 1], '
                    '"shared memory": %d}},\n'
                    % (999, corr, name, corr % 3 + 1, 1024 * (corr % 3)))
        f.write('{"ph": "i", "name": "end", "pid": 9, "tid": 9, '
                '"ts": 1000}]}\n')
    return exp


def index(path):
    """The summary and the peak RSS (bytes) of `traced index path`."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen([os.environ["TRACED_BIN"], "index", path],
                             stdout=out)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            sys.exit("traced index %s: exit %d" % (path, p.returncode))
        out.seek(0)
        return json.loads(out.read()), usage.ru_maxrss * 1024


def check(got, exp, n):
    for k in ("kernel_events", "kernel_ns", "gpu_busy_ns"):
        if got[k] != exp[k]:
            sys.exit("%d events: %s %d != %d" % (n, k, got[k], exp[k]))
    rows = {(r["name"], r["grid"][0]): (r["count"], r["shared_bytes"])
            for r in got["launches"]}
    want = {k: (c, 1024 * (k[1] - 1)) for k, c in exp["launches"].items()}
    if rows != want:
        sys.exit("%d events: launches differ" % n)
    if len(got["launches"]) != len(want):
        sys.exit("%d events: duplicate launch rows" % n)
    in_phases = sum(p["kernel_events"] for p in got["phases"])
    if in_phases != n or got["span_ns"] != (n - 1) * 1000 + 1700:
        sys.exit("%d events: phases or span wrong" % n)


def main():
    rss = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (50_000, 400_000):
            path = os.path.join(tmp, "big_%d.json.gz" % n)
            exp = write_trace(path, n)
            got, rss[n] = index(path)
            check(got, exp, n)
            print("%d kernels: peak RSS %.1f MB, %d json bytes" % (
                n, rss[n] / 1e6, got["json_bytes"]))
    if rss[400_000] > rss[50_000] + SLACK_BYTES:
        sys.exit("peak RSS grew from %d to %d bytes" % (rss[50_000],
                                                         rss[400_000]))
    print("ok")


if __name__ == "__main__":
    main()
