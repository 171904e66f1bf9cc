"""A rank's trace made of real forward passes: what the simulator exports
by default (no SIM_TRACE_FILE), so that a capture of the simulator looks
like a capture of an LLM server, not of whatever trace happened to be
rotated in.

Each step the engine ran while profiling (sim_labels.Step) is one copy of
a real forward pass, cut from a real trace of ../shared/traces
(TEMPLATE): the vLLM gpt-oss decode, one graph replay of 421 kernels on
an MI300X (32 sequences). It serves prefill steps too: vLLM's forward is
one for both (its execute_ annotation counts the context, i.e. prefill,
requests beside the generation ones; unified attention takes both), and
it is the only LLM forward of an AMD GPU among the real traces (the only
prefill, the H100 Qwen trace, is NVIDIA's: ranks that mixed the two
showed CUDA kernels on a ROCm device). Every rank is then one vendor's:
the template's kernels, its device (deviceProperties, named as its
gfx942 with 304 CUs and 192 GiB is named: DEVICE_NAME). A copy keeps the
pass's host events (CPU ops, runtime calls) as they were, laid from the
step's start, and its device records (kernels, copies, memsets) with
their names, shapes and order; what changes is:

  - each record's duration, for the work of the step against the
    template's (work_ratio): attention and KV-cache kernels by the
    query-key pairs they score (a decode's summed context, a prefill's
    causal c(c+1)/2 per sequence), the others (weights read once per
    step) 0.7 + 0.3 x the step's tokens over the template's: a prefill's
    time grows with its tokens, as a real engine's; a record never
    shorter than FIXED_NS or its own duration;
  - noise, as two runs and two TP ranks differ: per rank and step a clock
    factor (lognormal, CLOCK_SIGMA) and per record its own (RECORD_SIGMA);
  - when it starts: LAUNCH_NS after its launch call when its stream is
    free, else right after the record before it on the stream (at most
    GAP_NS apart, as the template's); a blocking call (a synchronize, a
    synchronous copy) ends when what it waits for has, and the host events
    after it move with it;
  - ids (correlation, External id, Python ids) made unique per copy, the
    host on the worker's process, the device records on its GPU.

The steps follow each other as an engine runs them: the next one starts
SCHED_NS (the scheduler, lognormal SCHED_SIGMA) after the slowest rank of
the engine has finished the last one, host and device, so the ranks of a
TP group start every step together. Each step carries ATOM's run label
(sim_labels.forward_label) as kineto records a record_function: a CPU
user_annotation over the pass's host events and a gpu_user_annotation over
its device records. Drafter passes (--method) have no real trace to come
from: their labels are host annotations only (SCHED_NS each).

Without ATOM_PROFILER_MORE=1 the copy is what ATOM's profiler writes by
default (model_runner.py: record_shapes, with_stack and profile_memory
off): no python_function events and no input shapes.
"""
import bisect
import decimal
import functools
import gzip
import json
import math
import os
import random
import re
import threading

import sim_labels

LAUNCH_NS = 5000      # launch call start to kernel start, stream free
GAP_NS = 2000         # at most between records queued on one stream
FIXED_NS = 2000       # a record's fixed cost, never scaled away
SYNC_NS = 1000        # a blocking call returns this long after its wait
SCHED_NS = 300000     # the scheduler between two steps
SCHED_SIGMA = 0.1
CLOCK_SIGMA = 0.01    # per rank and step
RECORD_SIGMA = 0.02   # per record
ID_STRIDE = 10 ** 7   # ids of copy k are the template's + k x ID_STRIDE
PACE_CTX = 16      # SIM_TOKEN_S=trace: mean contexts this close pace alike
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CATS = ("cpu_op", "cuda_runtime", "cuda_driver", "python_function")
SHAPE_ARGS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
# Kernels whose work follows the context (attention, the KV cache).
ATTENTION = re.compile(r"attention|attn|flash|fmha|reshape_and_cache|"
                       r"kvcache|kv_cache", re.I)
# The calls that return only once the device has done what they wait for.
BLOCKING = re.compile(r"Synchronize|^(cuda|hip)Memcpy(WithStream)?$")


def ns(v):
    """Exact integer ns of a kineto time (Decimal microseconds)."""
    return int(decimal.Decimal(v) * 1000)


def us(t):
    """kineto's microseconds with three decimals."""
    return "%s%d.%03d" % ("-" if t < 0 else "", abs(t) // 1000,
                          abs(t) % 1000)


class Template:
    """One real forward pass: the host events of its window (those of the
    window's thread starting inside it), the device records their calls
    launched, and the work it did (tok: tokens, pairs: query-key pairs)."""

    def __init__(self, doc, window, work):
        self.top = {k: v for k, v in doc.items() if k != "traceEvents"}
        self.keys = list(doc)
        self.work = work
        w0, w1 = ns(window["ts"]), ns(window["ts"]) + ns(window["dur"])
        self.w0 = w0
        where = (window["pid"], window["tid"])
        self.host = []
        for e in doc["traceEvents"]:
            if (e.get("ph") == "X" and e.get("cat") in HOST_CATS and
                    (e.get("pid"), e.get("tid")) == where and
                    w0 <= ns(e["ts"]) <= w1):
                self.host.append((ns(e["ts"]) - w0, ns(e.get("dur", 0)), e))
        self.host.sort(key=lambda h: (h[0], -h[1]))
        for _, _, e in self.host:
            plain(e)
        launched = {h[2]["args"].get("correlation") for h in self.host
                    if h[2]["cat"] in ("cuda_runtime", "cuda_driver")}
        launched.discard(None)
        self.device = sorted(
            ((ns(e["ts"]), ns(e.get("dur", 0)), e)
             for e in doc["traceEvents"]
             if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS and
             e.get("args", {}).get("correlation") in launched),
            key=lambda d: d[0])
        for _, _, e in self.device:
            plain(e)
        self.by_corr = {}
        for i, (_, _, e) in enumerate(self.device):
            self.by_corr.setdefault(e["args"]["correlation"], []).append(i)
        self.host_pid, self.host_tid = where
        self.span = w1 - w0


def plain(e):
    """The event's args with plain floats, its name and category as JSON
    text (serialised once, copied many times)."""
    e["args"] = {k: float(v) if isinstance(v, decimal.Decimal) else v
                 for k, v in e.get("args", {}).items()}
    e["_text"] = "%s, \"name\": %s" % (json.dumps(e["cat"]),
                                        json.dumps(e["name"]))


def vllm_forward(doc):
    """The vLLM forward: its execute_ annotation (execute_<n>_context_<p>
    (...)_generation_<d>(sq<d>sk<sum of contexts>...)) is the window; its
    work, the query-key pairs its attention scored (sk: one query per
    sequence)."""
    for e in doc["traceEvents"]:
        m = re.match(r"execute_\d+_context_\d+\(.*?\)_generation_(\d+)"
                     r"\(sq\d+sk(\d+)", str(e.get("name", "")))
        if m and e.get("cat") == "user_annotation":
            bs, keys = int(m.group(1)), int(m.group(2))
            return e, {"tok": bs, "pairs": keys}
    raise ValueError("no execute_ annotation")


TEMPLATE = ("tracelens__vllm_decode_full_graph_execution.json.gz",
            vllm_forward)
# What the template's device is: its deviceProperties leave the name
# empty, their gfx 9.4 with 304 CUs and 192 GiB is this one.
DEVICE_NAME = "AMD Instinct MI300X"

_templates = {}
_lock = threading.Lock()


def template(traces_dir):
    """The template every step copies, read once per process."""
    path = os.path.join(traces_dir, TEMPLATE[0])
    with _lock:
        if path not in _templates:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                doc = json.load(f, parse_float=decimal.Decimal)
            _templates[path] = Template(doc, *TEMPLATE[1](doc))
        return _templates[path]


def pairs(step):
    """The query-key pairs a step's attention scores: a prefill's every
    token against those before it (causal), a decode's one query against
    its context (dummies and eager decodes are decodes)."""
    if step.kind == "prefill":
        return sum(c * (c + 1) // 2 for c in step.ctx)
    return sum(step.ctx)


def work_ratio(name, step, work):
    """(fixed share, scaled share) of a record's duration for this step's
    work against the template's."""
    if ATTENTION.search(name):
        return 0.0, pairs(step) / work["pairs"]
    return 0.7, 0.3 * step.tok / work["tok"]


def lognormal(rng, sigma):
    return math.exp(rng.gauss(-sigma * sigma / 2, sigma))


class Window:
    """The steps an engine ran while its profiler was on, as every rank of
    it exports them: `ranks` workers (global ranks first_rank...), noise
    drawn from `seed`, templates from `traces_dir`."""

    def __init__(self, steps, args, seed, first_rank, ranks, traces_dir):
        self.passes = sim_labels.passes(steps, args)
        self.seed, self.first, self.ranks = seed, first_rank, ranks
        self.traces_dir = traces_dir
        self.starts = None
        self.copies = {}               # (pass, rank) -> its Copy
        self.lock = threading.Lock()   # the workers export at once

    def rng(self, *key):
        return random.Random("%d/%s" % (self.seed, "/".join(map(str, key))))

    def step_starts(self):
        """Each pass's start (ns, from the decode template's window): the
        slowest rank's end of the pass before, plus the scheduler."""
        with self.lock:
            if self.starts is None:
                self.starts = self.lay_out()
            return self.starts

    def lay_out(self):
        t = template(self.traces_dir).w0
        starts = []
        for k, (_, step, _) in enumerate(self.passes):
            starts.append(t)
            end = t + SCHED_NS
            for r in range(self.first, self.first + self.ranks):
                self.copies[k, r] = Copy(self, k, step, r, t)
            if step is not None:
                end = max(self.copies[k, r].end()
                          for r in range(self.first, self.first + self.ranks))
            t = end + int(SCHED_NS * lognormal(self.rng("sched", k),
                                               SCHED_SIGMA))
        return starts


def pass_ns(kind, step, traces_dir):
    """A pass's wall time as its copy on one rank draws it, from its start
    to its last host or device end (SIM_TOKEN_S=trace paces the engine's
    steps by it), for its batch and mean context to PACE_CTX tokens (one
    copy per batch and context drawn, not per step)."""
    return _pass_ns(kind, step.bs, round(sum(step.ctx) / step.bs / PACE_CTX),
                    traces_dir)


@functools.lru_cache(maxsize=4096)
def _pass_ns(kind, bs, ctx, traces_dir):
    step = sim_labels.Step(kind, [max(1, ctx * PACE_CTX)] * bs)
    return Copy(Window([], None, 0, 0, 1, traces_dir), 0, step, 0, 0).end()


class Copy:
    """Pass k of the window on global rank `rank`, started at `t0`: its
    records' times (place()), then its events (events())."""

    def __init__(self, win, k, step, rank, t0):
        self.win, self.k, self.step = win, k, step
        self.rank, self.t0 = rank, t0
        self.tp = template(win.traces_dir)
        self.placed = None

    def durations(self):
        """Each device record's duration in this copy."""
        rng = self.win.rng("rank", self.rank, self.k)
        clock = lognormal(rng, CLOCK_SIGMA)
        out = []
        for _, dur, e in self.tp.device:
            fixed, scaled = work_ratio(e["name"], self.step, self.tp.work)
            base = min(dur, FIXED_NS)
            d = base + (dur - base) * (fixed + scaled)
            out.append(max(1, int(d * clock * lognormal(rng,
                                                         RECORD_SIGMA))))
        return out

    def place(self):
        """(host starts and ends, device starts, device durations), in ns:
        the host as recorded but for blocking calls, which end once what
        they wait for has (what follows them moves with them), the device
        records as their streams free up."""
        if self.placed is not None:
            return self.placed
        durs = self.durations()
        dev = [None] * len(self.tp.device)
        free, last_src = {}, {}
        times, shifts = [], []     # from template time times[i]: shifts[i]
        blocked = {}               # host index -> its end

        def shift_at(x):
            i = bisect.bisect_right(times, x) - 1
            return shifts[i] if i >= 0 else 0

        for h, (t, d, e) in enumerate(self.tp.host):
            start = self.t0 + t + shift_at(t)
            corr = e.get("args", {}).get("correlation")
            own = self.tp.by_corr.get(corr, ()) if corr is not None else ()
            for i in own:
                src, src_dur, rec = self.tp.device[i]
                stream = (rec.get("pid"), rec.get("tid"))
                gap = min(GAP_NS, max(0, src - last_src.get(stream, src)))
                dev[i] = max(start + LAUNCH_NS,
                             free.get(stream, start) + gap)
                free[stream] = dev[i] + durs[i]
                last_src[stream] = src + src_dur
            if e["cat"] == "cuda_runtime" and BLOCKING.search(e["name"]):
                waits = [dev[i] + durs[i] for i in own] or list(free.values())
                if waits:
                    blocked[h] = max(start, max(waits)) + SYNC_NS
                    at = bisect.bisect_right(times, t + d)
                    times.insert(at, t + d)
                    shifts.insert(at, blocked[h] - (self.t0 + t + d))
        host = [(self.t0 + t + shift_at(t),
                 blocked.get(h, self.t0 + t + d + shift_at(t + d)))
                for h, (t, d, _) in enumerate(self.tp.host)]
        self.placed = (host, dev, durs)
        return self.placed

    def end(self):
        host, dev, durs = self.place()
        ends = [e for _, e in host] + [s + d for s, d in zip(dev, durs)
                                        if s is not None]
        return max(ends) if ends else self.t0

    def events(self, detailed):
        """(the copy's events as kineto writes them, JSON texts; its first
        device start; its last device end)."""
        host, dev, durs = self.place()
        off = self.k * ID_STRIDE
        hp, ht = self.tp.host_pid + self.rank, self.tp.host_tid + self.rank
        out = []
        for (start, end), (_, _, e) in zip(host, self.tp.host):
            if e["cat"] == "python_function" and not detailed:
                continue
            out.append(event(e["_text"], hp, ht, start, end - start,
                             shifted_args(e["args"], off, detailed)))
        flows = set()
        first = last = None
        for i, (_, _, e) in enumerate(self.tp.device):
            if dev[i] is None:
                continue
            args = shifted_args(e["args"], off, detailed)
            args["device"] = self.rank
            tid = e.get("tid")
            out.append(event(e["_text"], self.rank, tid, dev[i], durs[i],
                             args))
            corr = args["correlation"]
            out.append(flow("f", corr, self.rank, tid, dev[i]))
            flows.add(corr)
            first = dev[i] if first is None else min(first, dev[i])
            last = max(last or 0, dev[i] + durs[i])
        for (start, _), (_, _, e) in zip(host, self.tp.host):
            corr = e["args"].get("correlation")
            corr = corr + off if isinstance(corr, int) else None
            if corr in flows:
                out.append(flow("s", corr, hp, ht, start))
        return out, first, last

    def label(self, name, host, device):
        """The pass's run label as kineto records a record_function: on the
        host over `host`, on the GPU (the stream of its first record) over
        `device` (None: no record)."""
        ext = 2 * 10 ** 9 + self.k
        h0, h1 = host
        out = [event(label_text("user_annotation", name),
                     self.tp.host_pid + self.rank,
                     self.tp.host_tid + self.rank, h0, h1 - h0,
                     {"External id": ext})]
        if device is not None:
            stream = next((e.get("tid") for _, _, e in self.tp.device), 0)
            out.append(event(label_text("gpu_user_annotation", name),
                             self.rank, stream,
                             device[0], device[1] - device[0],
                             {"External id": ext}))
        return out


def shifted_args(args, off, detailed):
    out = {}
    for key, v in args.items():
        if key in SHAPE_ARGS and not detailed:
            continue
        if key in ("correlation", "External id", "Python id",
                   "Python parent id", "Ev Idx") and isinstance(v, int) \
                and v > 0:
            v += off
        out[key] = v
    return out


def dumps(v):
    return json.dumps(v, default=float)


def label_text(cat, name):
    return "%s, \"name\": %s" % (json.dumps(cat), json.dumps(name))


def event(text, pid, tid, ts, dur, args):
    """A complete event; text: its category and name (plain())."""
    return ('{"ph": "X", "cat": %s, "pid": %s, "tid": %s, "ts": %s, '
            '"dur": %s, "args": %s}' % (text, json.dumps(pid),
                                        json.dumps(tid), us(ts), us(dur),
                                        json.dumps(args)))


def flow(ph, corr, pid, tid, ts):
    return ('{"ph": "%s", "id": %d, "pid": %s, "tid": %s, "ts": %s, '
            '"cat": "ac2g", "name": "ac2g"%s}' % (
                ph, corr, dumps(pid), dumps(tid), us(ts),
                ', "bp": "e"' if ph == "f" else ""))


def rank_text(win, rank, world, detailed):
    """Global rank `rank`'s trace of the window: the decode template's
    top-level keys (its device, its runtime's versions), distributedInfo
    for this rank, and the passes' events, each pass's label first."""
    starts = win.step_starts()
    events = []
    for k, (_, step, name) in enumerate(win.passes):
        c = win.copies[k, rank]
        if step is None:      # a drafter's pass: its label only
            events += c.label(name, (starts[k], starts[k] + SCHED_NS), None)
            continue
        evs, first, last = c.events(detailed)
        host = c.place()[0]
        events += c.label(name, (host[0][0], max(h[1] for h in host)),
                          None if first is None else (first, last))
        events += evs
    return document(win, rank, world, detailed, events)


def document(win, rank, world, detailed, events):
    tp = template(win.traces_dir)
    parts = []
    for key in tp.keys:
        v = tp.top.get(key)
        if key == "traceEvents":
            parts.append('"traceEvents": [\n%s\n]' % ",\n".join(events))
            continue
        if key == "distributedInfo":
            v = {"backend": v.get("backend", "nccl"), "rank": rank,
                 "world_size": world}
        elif key == "deviceProperties":
            v = [dict(d, name=d.get("name") or DEVICE_NAME) for d in v]
        elif key in ("record_shapes", "with_stack", "profile_memory"):
            v = 1 if detailed else 0
        parts.append("%s: %s" % (json.dumps(key), dumps(v)))
    return "{\n%s\n}" % ",\n".join(parts)
