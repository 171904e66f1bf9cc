"""An independent reading of a trace's [memory] events (profile_memory),
for tests/test_memory.py: per device (Device Type, Device Id) the figures
of traced's memory tables (common/summary.h's TR_SUM_MEMORY*,
docs/ANALYSIS.md "Memory"), computed from the raw JSON with the events
in time order (file order among equal times):

- the largest Total Allocated and the time of the first event reaching
  it, the largest Total Reserved, the first and last Total Allocated;
- allocations and frees with their bytes; allocations followed by
  address to their free: those never freed, frees of what was allocated
  before the trace;
- the timeline: every fourth boundary of the utilisation timeline's grid
  over the rank's span (t0, span from the summary), per bucket the events' count, least and largest
  Total Allocated, largest Total Reserved;
- by op: the innermost CPU op (cat cpu_op) on the event's thread whose
  [ts, ts + dur) holds it (the latest start; ties: the shortest), its
  allocations, those live at the device's peak, those never freed.

Timestamps are read exactly (kineto's microseconds as decimals)."""
import gzip
import json
from decimal import Decimal

import refcache

BUCKETS = 4096   # the utilisation timeline's
MEMORY_BUCKETS = 1024  # every fourth of its boundaries
NAMES = ["cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip",
         "fpga", "maia", "xla", "vulkan", "metal", "xpu", "mps", "meta",
         "hpu", "ve", "lazy", "ipu", "mtia", "privateuseone"]


def ns(v):
    return int(Decimal(v) * 1000)


def device_name(t, i):
    name = NAMES[t] if 0 <= t < len(NAMES) else "type%d" % t
    return name if i < 0 else "%s:%d" % (name, i)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def memory_events(events):
    out = []
    for k, e in enumerate(events):
        if e.get("name") != "[memory]" or e.get("ph") not in ("i", "I"):
            continue
        a = e.get("args", {})
        out.append({"ts": ns(e["ts"]), "k": k, "tid": (e.get("pid"),
                                                        e.get("tid")),
                    "bytes": int(a["Bytes"]),
                    "ta": int(a["Total Allocated"]),
                    "tr": int(a.get("Total Reserved", 0)),
                    "addr": int(a.get("Addr", 0)),
                    "dev": device_name(int(a["Device Type"]),
                                       int(a.get("Device Id", 0)))})
    out.sort(key=lambda m: (m["ts"], m["k"]))
    return out


def op_of(events, mems):
    """Each memory event's innermost CPU op name (or None)."""
    ops = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and "dur" in e:
            s = ns(e["ts"])
            ops.setdefault((e.get("pid"), e.get("tid")), []).append(
                (s, s + ns(e["dur"]), e["name"]))
    for m in mems:
        best = None
        for s, end, name in ops.get(m["tid"], ()):
            if s <= m["ts"] < end and (best is None or s > best[0] or
                                       (s == best[0] and end < best[1])):
                best = (s, end, name)
        m["op"] = best[2] if best else None


@refcache.cached
def reference(path, t0, span):
    events = load(path)
    mems = memory_events(events)
    op_of(events, mems)
    width = -(-span // BUCKETS) * (BUCKETS // MEMORY_BUCKETS) if span > 0 \
        else 0
    nb = -(-span // width) if width else 0
    devs, ops = {}, {}
    for m in mems:
        d = devs.setdefault(m["dev"], {
            "events": 0, "allocs": 0, "frees": 0, "alloc_bytes": 0,
            "freed_bytes": 0, "peak_allocated_bytes": None, "peak_ns": None,
            "peak_reserved_bytes": None, "first_allocated_bytes": m["ta"],
            "freed_before_bytes": 0, "live": {}, "tl": {}})
        d["events"] += 1
        d["last_allocated_bytes"] = m["ta"]
        if d["peak_reserved_bytes"] is None or m["tr"] > d["peak_reserved_bytes"]:
            d["peak_reserved_bytes"] = m["tr"]
        o = ops.setdefault((m["dev"], m["op"]), {
            "allocs": 0, "alloc_bytes": 0, "live": 0, "peak_live_bytes": 0})
        if m["bytes"] > 0:
            d["allocs"] += 1
            d["alloc_bytes"] += m["bytes"]
            o["allocs"] += 1
            o["alloc_bytes"] += m["bytes"]
            old = d["live"].pop(m["addr"], None)
            if old is not None:
                ops[(m["dev"], old[1])]["live"] -= old[0]
            d["live"][m["addr"]] = (m["bytes"], m["op"])
            o["live"] += m["bytes"]
        elif m["bytes"] < 0:
            d["frees"] += 1
            d["freed_bytes"] -= m["bytes"]
            old = d["live"].pop(m["addr"], None)
            if old is None:
                d["freed_before_bytes"] -= m["bytes"]
            else:
                ops[(m["dev"], old[1])]["live"] -= old[0]
        if d["peak_allocated_bytes"] is None or m["ta"] > d["peak_allocated_bytes"]:
            d["peak_allocated_bytes"] = m["ta"]
            d["peak_ns"] = m["ts"] - t0
            for (dev, _), x in ops.items():
                if dev == m["dev"]:
                    x["peak_live_bytes"] = x["live"]
        if nb and m["ts"] >= t0:
            i = min((m["ts"] - t0) // width, nb - 1)
            b = d["tl"].setdefault(i, {"events": 0, "allocated_min_bytes": m["ta"],
                                       "allocated_max_bytes": m["ta"],
                                       "reserved_max_bytes": m["tr"]})
            b["events"] += 1
            b["allocated_min_bytes"] = min(b["allocated_min_bytes"], m["ta"])
            b["allocated_max_bytes"] = max(b["allocated_max_bytes"], m["ta"])
            b["reserved_max_bytes"] = max(b["reserved_max_bytes"], m["tr"])
    for (dev, op), o in ops.items():
        o["never_freed_bytes"] = sum(b for b, w in devs[dev]["live"].values()
                                     if w == op)
    for name, d in devs.items():
        d["never_freed_bytes"] = sum(b for b, _ in d["live"].values())
        d["never_freed_count"] = len(d["live"])
        d["timeline"] = {i: dict(b, start_ns=i * width,
                                 end_ns=min((i + 1) * width, span))
                         for i, b in d.pop("tl").items()}
        del d["live"]
    return devs, ops
