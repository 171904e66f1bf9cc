#!/usr/bin/env python3
"""Independent reference for `traced index`: the rank-summary figures of a
trace computed with Python's json module (Decimal numbers, whole file in
memory) and plain sorting. Shares no code with the C side; other areas'
tests import it:

    import ref_index
    ref = ref_index.reference(path)      # dict, see reference()

`python3 ref_index.py FILE` prints the reference as JSON.

Rules (the contract in docs/API.md, docs/TRACE_FORMATS.md, docs/ATOM.md):
- kineto ts/dur are microseconds, converted to integer ns exactly
  (truncated past the ns); mcTracer ts/dur are ns.
- an element of traceEvents that is not an object, has a non-string
  ph/cat/name, a non-numeric ts/dur or a negative dur is skipped; so is a
  ph "X" event without ts or dur. Only ph "X" events are counted.
- t0 = earliest ts of any non-"M" event, span = latest end - t0.
- medians are the lower median (sorted[(n-1)//2]).
"""
import bisect
import gzip
import json
import os
import re
import sys
from decimal import Decimal, InvalidOperation

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_analysis  # noqa: E402
import refcache  # noqa: E402

KERNEL_CATS = {"kernel", "Kernel"}
COPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
# Run-label kinds of both ATOM generations (docs/ATOM.md): ffdf3bb5's
# draft/dspark/dspark_ctx_kv, the seed's draft_kv and propose_* (below).
STEP_KINDS = ("prefill", "decode", "eager_decode", "dummy_decode",
              "dummy_eager_decode", "dummy_prefill", "draft", "dspark",
              "dspark_ctx_kv", "dspark_sched", "draft_kv")
COPY_DIRS = {"htod": "HtoD", "dtoh": "DtoH", "dtod": "DtoD",
             "htoh": "HtoH", "ptop": "PtoP"}
PROFILER_STEP_RE = re.compile(r"^ProfilerStep#\d+$")
LABEL_RE = re.compile(r"^(propose_[A-Za-z0-9_]+|[a-z_]+)\[")
TOK_RE = re.compile(r"[\[ ,]tok=(\d*)")
BAD_UTF8 = re.compile("[\udc80-\udcff]")
BS_RE = re.compile(r"[\[ ,]bs=(\d*)(?:/(\d+))?")


def load(path):
    """The parsed document (dict or bare list)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    # Invalid UTF-8 survives as lone surrogates; such events are skipped.
    text = raw.decode("utf-8", errors="surrogateescape")
    return json.loads(text, parse_float=Decimal, strict=False), len(raw)


def num(v, scale=0):
    """An integer from a JSON number or numeric string, times 10**scale,
    truncated toward zero; None when not numeric."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, str):
        try:
            v = Decimal(v.strip())
        except InvalidOperation:
            return None
        if not v.is_finite():
            return None
    if isinstance(v, (int, Decimal)):
        return int(Decimal(v).scaleb(scale))
    return None


def dim3(v):
    if isinstance(v, list) and len(v) == 3:
        out = [num(x) for x in v]
        if all(isinstance(x, int) for x in out):
            return tuple(out)
    return None


def detect_format(doc, events):
    """kineto unless the events look like mcTracer: no cat, and args.co_id
    or a pid lane 1..3 on the first event that is not metadata."""
    if isinstance(doc, list):
        return "kineto"
    kineto_keys = {"schemaVersion", "deviceProperties", "distributedInfo",
                   "traceName", "displayTimeUnit", "baseTimeNanoseconds"}
    if kineto_keys & set(doc):
        return "kineto"
    for e in events:
        if not isinstance(e, dict) or e.get("ph") == "M":
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        lane = num(e.get("pid")) in (1, 2, 3) and not isinstance(
            e.get("pid"), str)
        if "cat" not in e and ("co_id" in args or lane):
            return "mctracer"
        return "kineto"
    return "kineto"


def delivered(e, scale):
    """(ts_ns, dur_ns), each None when absent, of an event the reader
    hands over; None when it skips the event as malformed."""
    for k in ("ph", "cat", "name"):
        if k in e and e[k] is not None and not isinstance(e[k], str):
            return None
        if isinstance(e.get(k), str) and BAD_UTF8.search(e[k]):
            return None
    ts = dur = None
    if "ts" in e:
        ts = num(e["ts"], scale)
        if ts is None and e["ts"] is not None:
            return None
    if "dur" in e:
        dur = num(e["dur"], scale)
        if dur is None and e["dur"] is not None:
            return None
        if dur is not None and dur < 0:
            return None
    return ts, dur


def well_formed(e, scale):
    """(ts_ns, dur_ns) or None when the event is malformed, or a ph "X"
    event without ts or dur (nothing to count)."""
    tsdur = delivered(e, scale)
    if tsdur is not None and e.get("ph") == "X" and None in tsdur:
        return None
    return tsdur


class Span:
    """The earliest start and latest end of the well-formed events but ph
    "M" (an instant's end its start), as traced counts a rank's span."""

    def __init__(self):
        self.t0 = self.tend = None

    def add(self, e, ts, dur):
        if ts is None:
            return
        end = ts + (dur or 0) if e.get("ph") == "X" else ts
        self.t0 = ts if self.t0 is None else min(self.t0, ts)
        self.tend = end if self.tend is None else max(self.tend, end)


def x_events(fmt, events, span):
    """(place in the file, event, ts, dur, args, class) of each well-formed
    ph "X" event in file order; span takes every well-formed event but M."""
    scale = 0 if fmt == "mctracer" else 3
    for place, e in enumerate(events):
        tsdur = well_formed(e, scale) if isinstance(e, dict) else None
        if tsdur is None or e.get("ph") == "M":
            continue
        span.add(e, *tsdur)
        if e.get("ph") == "X":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            yield place, e, tsdur[0], tsdur[1], args, classify(fmt, e)


def classify(fmt, e):
    if fmt == "mctracer":
        pid = e.get("pid")
        if isinstance(pid, str) or num(pid) not in (1, 2, 3):
            return None
        pid = num(pid)
        if pid == 1:
            return "runtime"
        if pid == 2:
            return "kernel"
        return "memset" if e.get("name", "").lower().startswith(
            "memset") else "copy"
    cat = e.get("cat")
    if cat is None:
        return "label_cpu"
    if cat in KERNEL_CATS:
        return "kernel"
    if cat in COPY_CATS:
        return "copy"
    if cat in MEMSET_CATS:
        return "memset"
    if cat in RUNTIME_CATS:
        return "runtime"
    if cat == "user_annotation":
        return "label_cpu"
    if cat == "gpu_user_annotation":
        return "label_gpu"
    return None


def copy_kind(e):
    kind = (e.get("args") or {}).get("kind")
    name = e.get("name") or ""
    word = None
    if isinstance(kind, str) and len(kind) == 4:
        word = kind
    elif len(name) >= 11 and name[:7].lower() == "memcpy ":
        word = name[7:11]
    return COPY_DIRS.get((word or "").lower(), "other")


def parse_label(name):
    """(kind, tokens, padded) of a run label, or None. The profiler's own
    "ProfilerStep#<N>" is the kind ProfilerStep (used only where a trace
    has no run labels: see reference())."""
    if PROFILER_STEP_RE.match(name or ""):
        return "ProfilerStep", 0, 0
    m = LABEL_RE.match(name or "")
    if not m:
        return None
    kind = m.group(1)
    if kind not in STEP_KINDS and not kind.startswith("propose_"):
        return None
    rest = name[len(kind):]
    tok = TOK_RE.search(rest)
    tokens = int(tok.group(1)) if tok and tok.group(1) else 0
    bs = BS_RE.search(rest)
    padded = 0
    if bs and bs.group(1) and bs.group(2):
        padded = int(bs.group(2)) > int(bs.group(1))
    return kind, tokens, int(padded)


def drop_profiler_steps(steps, ev, labels):
    """ProfilerStep steps count only in a trace without run labels."""
    kinds = set(steps["cpu"]) | set(steps["gpu"])
    if "ProfilerStep" not in kinds or len(kinds) == 1:
        return
    steps["cpu"].pop("ProfilerStep", None)
    labels.pop(("cpu", "ProfilerStep"), None)
    ev["labels"] = [lab for lab in ev["labels"] if lab[2] != "ProfilerStep"]
    ev["kinds"] = [k for k in ev["kinds"] if k != "ProfilerStep"]


def lower_median(values):
    s = sorted(values)
    return s[(len(s) - 1) // 2] if s else 0


def union_length(intervals):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def merged(intervals):
    """The union of (start, end) intervals: sorted [start, end] lists,
    touching ones joined."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def kernel_ns_in_labels(labels, kernels):
    """Kernel time starting inside the union of each kind's labels."""
    out = {}
    for kind, ivs in labels.items():
        union = merged(ivs)
        starts = [m[0] for m in union]
        total = 0
        for ts, dur in kernels:
            i = bisect.bisect_right(starts, ts) - 1
            if i >= 0 and ts < union[i][1]:
                total += dur
        out[kind] = total
    return out


class _Launches:
    """The launch join as the contract defines it: a ROCm kernel (no
    shared memory of its own, a correlation) takes registers/shared memory
    (and grid/block when it has none) from the runtime launch event of its
    correlation; a second kernel under one correlation (graph launch), or
    one without a launch event, takes what every launch of the same
    (args.kernel, grid, block) agreed on, else null."""

    def __init__(self):
        self.by_corr = {}          # corr -> launch fields, first one wins
        self.consensus = {}        # (name, grid, block) -> set of (regs, shm)
        self.waiting = []          # (name, grid, block, corr, dur)
        self.rows = {}

    def add_launch(self, args):
        regs = num(args.get("registers per thread"))
        shm = num(args.get("shared memory"))
        kernel = args.get("kernel")
        if not isinstance(kernel, str):
            kernel = None
        if kernel is None and regs is None and shm is None:
            return
        corr = num(args.get("correlation"))
        grid, block = dim3(args.get("grid")), dim3(args.get("block"))
        if kernel is not None:
            self.consensus.setdefault((kernel, grid, block), set()).add(
                (regs, shm))
        self.by_corr.setdefault(corr, (grid, block, regs, shm))

    def row(self, key, dur):
        r = self.rows.setdefault(key, [0, 0, None, None])
        r[0] += 1
        r[1] += dur
        r[2] = dur if r[2] is None else min(r[2], dur)
        r[3] = dur if r[3] is None else max(r[3], dur)

    def add_kernel(self, fmt, name, args, dur):
        grid, block = dim3(args.get("grid")), dim3(args.get("block"))
        shm = num(args.get("shared memory"))
        if fmt == "mctracer":
            dyn, sta = num(args.get("dynamic_shared")), num(
                args.get("static_shared"))
            if shm is None and (dyn is not None or sta is not None):
                shm = (dyn or 0) + (sta or 0)
        corr = num(args.get("correlation", args.get("co_id")))
        if fmt == "mctracer" or shm is not None or corr is None:
            regs = num(args.get("registers per thread",
                                args.get("registers_per_thread")))
            self.row((name, grid, block, regs, shm), dur)
        else:
            self.waiting.append((name, grid, block, corr, dur))

    def finish(self):
        used = set()
        for name, grid, block, corr, dur in self.waiting:
            launch = self.by_corr.get(corr)
            if launch is not None and corr not in used:
                used.add(corr)
                lg, lb, regs, shm = launch
                self.row((name, grid or lg, block or lb, regs, shm), dur)
                continue
            agreed = self.consensus.get((name, grid, block), set())
            regs, shm = next(iter(agreed)) if len(agreed) == 1 else (None,
                                                                      None)
            self.row((name, grid, block, regs, shm), dur)
        return {k: tuple(v) for k, v in self.rows.items()}


def analysis(r, t0, tend, ev, categories):
    """The analysis figures (ref_analysis.py) into r: step distributions,
    buckets and outliers, idle time by cause, launch delays, the timeline,
    families and their time per step kind."""
    side = "gpu" if r["steps"] and r["steps"][next(iter(r["steps"]))][
        "source"] == "gpu" else "cpu"
    labels = [lab[:5] for lab in ev["labels"] if lab[5] == side]
    kernels = [(d[0], d[1], d[4]) for d in ev["device"] if d[2] == "kernel"]
    more, r["step_buckets"], r["step_outliers"], r["step_histogram"] = \
        ref_analysis.steps(labels, kernels)
    for kind, extra in more.items():
        r["steps"][kind].update(extra)
    for o in r["step_outliers"]:
        o["start_ns"] -= t0
    r["warmup_steps"] = sum(v["warmup_steps"] for v in more.values())
    r["idle"], r["idle_ns"] = ref_analysis.idle(
        t0, tend, ev["device"], ev["calls"], labels, ev["kinds"])
    delays = ref_analysis.launch_delays(ev["device"], ev["calls"])
    r["launch_delays"] = len(delays)
    for k, p in (("min", None), ("p50", 500), ("p99", 990), ("max", None)):
        r["launch_delay_%s_ns" % k] = (
            0 if not delays else min(delays) if k == "min" else
            max(delays) if k == "max" else ref_analysis.pct(delays, p))

    def category(rec):
        if rec[2] != "kernel":
            return rec[2]
        return (categories or {}).get(rec[4], "other")
    r["timeline"], r["timeline_bucket_ns"] = ref_analysis.timeline(
        t0, tend, ev["device"], labels, category)
    durs = {}
    for ts, dur, name in kernels:
        durs.setdefault(name, []).append(dur)
    r["families"] = ref_analysis.families(durs)
    r["step_samples"], r["sample_figures"] = ref_analysis.step_samples(
        side, labels, ev["kinds"], ev["device"], ev["calls"],
        categories or {}, durs, t0)
    r["family_steps"] = ref_analysis.family_steps(
        labels, kernels, {k: v["count"] for k, v in r["steps"].items()}) \
        if side == "gpu" else {}


@refcache.cached
def reference(path, fmt="auto", categories=None):
    """The reference figures of one trace file:
    events, skipped_events, format, t0_ns, span_ns, device, kernel_events,
    kernel_ns, distinct_kernels, memcpy_count, memcpy_bytes, memcpy_ns,
    memset_count, memset_ns, runtime_events, runtime_ns, gpu_busy_ns,
    kernels {name: {count,total_ns,min_ns,max_ns,median_ns,first_ns,
    last_ns}}, memcpy {kind: {count,total_ns,bytes,max_bytes}},
    runtime {name: {count,total_ns,median_ns,max_ns}},
    launches {(name, grid, block, regs, shared): (count,total,min,max)},
    steps {kind: {count,total_ns,tokens,padded,kernel_ns,source, and the
    distribution of ref_analysis.steps()}}, json_bytes, rank; and the
    analysis (ref_analysis.py): step_buckets, step_histogram,
    step_outliers, warmup_steps, idle {(step, cause): ns}, idle_ns,
    launch_delays and launch_delay_{min,p50,p99,max}_ns, timeline,
    timeline_bucket_ns, families {family: row}, family_steps {(family,
    step): row}. categories ({kernel name: category}, e.g. traced's own
    kernel rows) names the categories of the timeline; others: "other"."""
    doc, json_bytes = load(path)
    events = doc if isinstance(doc, list) else doc.get("traceEvents")
    if not isinstance(events, list):
        raise ValueError("%s: no traceEvents array" % path)
    if fmt == "auto":
        fmt = detect_format(doc, events)
    scale = 0 if fmt == "mctracer" else 3
    r = {"format": fmt, "events": len(events), "skipped_events": 0,
         "json_bytes": json_bytes}
    kernels, copies, runtime = {}, {}, {}
    # ROCm 6.2 copies carry no bytes: their runtime call (same correlation)
    # has them as "size". Copies waiting, and runtime calls' bytes.
    copies_without_bytes, call_bytes = [], {}
    steps = {"cpu": {}, "gpu": {}}
    labels, kernel_times, device_ivs = {}, [], []
    launches = _Launches()
    span = Span()
    device = None
    # For the analysis: device records (ts, dur, type, corr, name), host
    # calls (ts, dur, corr, name), run labels (ts, dur, kind, name, place
    # in the file, side), the kinds in the order first seen.
    ev = {"device": [], "calls": [], "labels": [], "kinds": []}
    for place, e in enumerate(events):
        tsdur = well_formed(e, scale) if isinstance(e, dict) else None
        if tsdur is None:
            r["skipped_events"] += 1
            continue
        ts, dur = tsdur
        ph = e.get("ph")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if ph == "M":
            if (fmt == "mctracer" and device is None and num(e.get("pid")) == 2
                    and isinstance(args.get("name"), str)):
                device = args["name"]
            continue
        span.add(e, ts, dur)
        if ph != "X":
            continue
        cls = classify(fmt, e)
        name = e.get("name") or ""
        rcorr = num(args.get("correlation", args.get("co_id")))
        rcorr = -1 if rcorr is None else rcorr
        if cls == "kernel":
            k = kernels.setdefault(name, {"durs": [], "starts": []})
            k["durs"].append(dur)
            k["starts"].append(ts)
            kernel_times.append((ts, dur))
            device_ivs.append((ts, ts + dur))
            launches.add_kernel(fmt, name, args, dur)
            ev["device"].append((ts, dur, "kernel", rcorr, name))
        elif cls in ("copy", "memset"):
            kind = "memset" if cls == "memset" else copy_kind(e)
            c = copies.setdefault(kind, {"count": 0, "total_ns": 0,
                                         "bytes": 0, "max_bytes": 0})
            b = num(args.get("bytes", args.get("size")))
            corr = num(args.get("correlation"))
            if b is None and fmt != "mctracer" and corr is not None:
                copies_without_bytes.append((kind, corr))
            b = b or 0
            c["count"] += 1
            c["total_ns"] += dur
            c["bytes"] += b
            c["max_bytes"] = max(c["max_bytes"], b)
            device_ivs.append((ts, ts + dur))
            ev["device"].append((ts, dur, "memset" if cls == "memset"
                                 else "copy", rcorr, name))
        elif cls == "runtime":
            runtime.setdefault(name, []).append(dur)
            ev["calls"].append((ts, dur, rcorr, name))
            corr = num(args.get("correlation"))
            if fmt != "mctracer" and corr is not None:
                launches.add_launch(args)
                b = num(args.get("bytes", args.get("size")))
                if "kernel" not in args and b is not None:
                    call_bytes.setdefault(corr, b)
        elif cls in ("label_cpu", "label_gpu"):
            lab = parse_label(name)
            if lab is None:
                continue
            kind, tokens, padded = lab
            side = "gpu" if cls == "label_gpu" else "cpu"
            if side == "gpu" and kind == "ProfilerStep":
                continue   # kineto's GPU-side step spans only some kernels
            ev["labels"].append((ts, dur, kind, name, place, side))
            if kind not in ev["kinds"]:
                ev["kinds"].append(kind)
            s = steps[side].setdefault(kind, {"count": 0, "total_ns": 0,
                                              "tokens": 0, "padded": 0})
            s["count"] += 1
            s["total_ns"] += dur
            s["tokens"] += tokens
            s["padded"] += padded
            labels.setdefault((side, kind), []).append((ts, ts + dur))
    drop_profiler_steps(steps, ev, labels)
    for kind, corr in copies_without_bytes:
        b = call_bytes.pop(corr, None)
        if b is not None:
            copies[kind]["bytes"] += b
            copies[kind]["max_bytes"] = max(copies[kind]["max_bytes"], b)
    t0 = span.t0 if span.t0 is not None else 0
    tend = span.tend if span.tend is not None else 0
    r["t0_ns"], r["span_ns"] = t0, tend - t0
    if fmt == "kineto" and isinstance(doc, dict):
        props = doc.get("deviceProperties")
        if isinstance(props, list) and props and isinstance(props[0], dict):
            device = props[0].get("name") or None
        dist = doc.get("distributedInfo")
        r["rank"] = dist.get("rank") if isinstance(dist, dict) else None
    else:
        r["rank"] = None
    r["device"] = device or None
    r["kernels"] = {
        n: {"count": len(k["durs"]), "total_ns": sum(k["durs"]),
            "min_ns": min(k["durs"]), "max_ns": max(k["durs"]),
            "median_ns": lower_median(k["durs"]),
            "first_ns": min(k["starts"]) - t0,
            "last_ns": max(k["starts"]) - t0}
        for n, k in kernels.items()}
    r["kernel_events"] = sum(k["count"] for k in r["kernels"].values())
    r["kernel_ns"] = sum(k["total_ns"] for k in r["kernels"].values())
    r["distinct_kernels"] = len(kernels)
    r["memcpy"] = copies
    real = [c for k, c in copies.items() if k != "memset"]
    r["memcpy_count"] = sum(c["count"] for c in real)
    r["memcpy_bytes"] = sum(c["bytes"] for c in real)
    r["memcpy_ns"] = sum(c["total_ns"] for c in real)
    ms = copies.get("memset", {"count": 0, "total_ns": 0})
    r["memset_count"], r["memset_ns"] = ms["count"], ms["total_ns"]
    r["runtime"] = {n: {"count": len(d), "total_ns": sum(d),
                        "median_ns": lower_median(d), "max_ns": max(d)}
                    for n, d in runtime.items()}
    r["runtime_events"] = sum(len(d) for d in runtime.values())
    r["runtime_ns"] = sum(sum(d) for d in runtime.values())
    r["gpu_busy_ns"] = union_length(device_ivs)
    r["launches"] = launches.finish()
    side = "gpu" if steps["gpu"] else "cpu"
    in_labels = kernel_ns_in_labels(
        {k: v for (sd, k), v in labels.items() if sd == side}, kernel_times)
    r["steps"] = {k: dict(v, kernel_ns=in_labels.get(k, 0), source=side)
                  for k, v in steps[side].items()}
    analysis(r, t0, tend, ev, categories)
    return r


def _jsonable(r):
    out = dict(r)
    out["launches"] = [list(k) + list(v) for k, v in r["launches"].items()]
    out["idle"] = [[s, c, ns] for (s, c), ns in r["idle"].items()]
    out["family_steps"] = [dict(v, family=f, step=k) for (f, k), v in
                           r["family_steps"].items()]
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ref_index.py FILE")
    json.dump(_jsonable(reference(sys.argv[1])), sys.stdout, indent=1,
              default=str)
    sys.stdout.write("\n")
