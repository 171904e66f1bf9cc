"""Generated ranks whose kernel time is known (docs/SWEEPS.md): a test knob,
not ATOM's behaviour. With SIM_SCALING=<file>, each rank's export is made
here instead of copied from a real trace, so that a test can hold traced's
fits of time against batch size to the truth it set.

The file: {"families": [{"name": a kernel name, "a_ns", "b_ns" (per
sequence), "noise" (relative standard deviation, default 0.02), and
optionally "break_bs" with "b2_ns": the slope from that batch size on}],
"launch_ns" (a launch call's host time, default 6000), "seed"}.

Per step the engine ran while profiling (its run label, ATOM's: bs= read
from it), every family runs once as a kernel of a + b x bs (prefill: x the
step's tokens / 16) times (1 + noise x a standard normal draw), launched by
a hipLaunchKernel of launch_ns under a cpu_op on one host thread; the
kernel starts LAUNCH_LATENCY_NS after its launch or when the kernel before
it ends, whichever is later, so that small batches leave the device waiting
for the host (launch-bound) and large ones the host waiting for the device.
The next step's host work starts SCHED_NS after both sides of the last one
ended (the scheduler waits for its tokens). Each step carries its label as
a CPU user_annotation over its launches and a gpu_user_annotation over its
kernels.
"""
import json
import os
import random
import re
import time

LAUNCH_LATENCY_NS = 4000   # a launch call's start to its kernel's, idle
SCHED_NS = 50000           # between two steps
T0_NS = 1700000000000000000
HOST = (4242, 4242)        # pid, tid of the launching thread
DEVICE = (0, 7)            # the GPU and its stream


def spec():
    """The file SIM_SCALING names, or None when it is not set."""
    path = os.environ.get("SIM_SCALING", "")
    if not path:
        return None
    with open(path) as f:
        return json.load(f)


def us(ns):
    return "%d.%03d" % (ns // 1000, ns % 1000)


def event(cat, name, where, ts, dur, args):
    return json.dumps({"ph": "X", "cat": cat, "name": name, "pid": where[0],
                       "tid": where[1], "ts": float(us(ts)),
                       "dur": float(us(max(dur, 1))), "args": args})


def kernel_ns(fam, x, rng):
    a, b = fam["a_ns"], fam["b_ns"]
    brk = fam.get("break_bs")
    mean = a + b * x if brk is None or x < brk else \
        a + b * brk + fam["b2_ns"] * (x - brk)
    return max(1, int(round(mean * (1 + fam.get("noise", 0.02) *
                                    rng.gauss(0.0, 1.0)))))


class Window:
    """The events of one rank's window, step by step."""

    def __init__(self, sp, rank):
        self.sp = sp
        self.rng = random.Random("%s/%d/%d" % (sp.get("seed", 1), rank,
                                               time.time_ns()))
        self.events = []
        self.corr = 0
        self.host = self.dev = T0_NS

    def step(self, label):
        m = re.search(r"bs=(\d+)", label)
        kind = label.split("[", 1)[0]
        if m is None or kind.startswith("dummy") or \
                kind not in ("decode", "eager_decode", "prefill"):
            return
        bs = int(m.group(1))
        tok = re.search(r"tok=(\d+)", label)
        x = bs if kind != "prefill" else max(1, int(tok.group(1)) // 16
                                             if tok else bs)
        start = self.host = max(self.host, self.dev) + SCHED_NS
        first = None
        launch = self.sp.get("launch_ns", 6000)
        for fam in self.sp["families"]:
            self.corr += 1
            args = {"External id": self.corr, "correlation": self.corr}
            self.events.append(event("cpu_op", "atom::" + fam["name"][:24],
                                     HOST, self.host, launch + 200,
                                     {"External id": self.corr}))
            self.events.append(event("cuda_runtime", "hipLaunchKernel", HOST,
                                     self.host + 100, launch, args))
            begin = max(self.host + 100 + LAUNCH_LATENCY_NS, self.dev)
            dur = kernel_ns(fam, x, self.rng)
            self.events.append(event(
                "kernel", fam["name"], DEVICE, begin, dur,
                dict(args, device=0, stream=DEVICE[1])))
            first = begin if first is None else first
            self.dev = begin + dur
            self.host += launch + 300
        self.events.append(event("user_annotation", label, HOST, start,
                                 self.host - start, {"External id": 0}))
        self.events.append(event("gpu_user_annotation", label, DEVICE, first,
                                 self.dev - first, {"External id": 0}))


def rank_text(sp, rank, labels):
    """The exported JSON of rank `rank` for a window of `labels`."""
    w = Window(sp, rank)
    for label in labels:
        w.step(label)
    return ('{"schemaVersion": 1, "distributedInfo": {"rank": %d}, '
            '"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}], '
            '"traceEvents": [%s]}' % (rank, ", ".join(w.events)))
