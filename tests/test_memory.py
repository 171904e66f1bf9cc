#!/usr/bin/env python3
"""Memory over time (index/memory/, docs/ANALYSIS.md "Memory") against an
independent reading of the raw JSON (tests/ref_memory.py):

- every shared trace holding [memory] events (profile_memory), indexed
  alone: per device the peak equals the largest Total Allocated of its
  events exactly, and every figure of the memory table, every timeline
  bucket (the events' count, least and largest Total Allocated, largest
  Total Reserved) and, summed over modules, every op's allocations, bytes
  live at the peak and never freed equal the reference's;
- through a running daemon over real sockets, the H100 trace imported:
  /memory, /memory/timeline (every stored bucket, and re-binned into 16
  rows whose figures are the reference buckets' merged), /memory/ops
  (its ?q=), all ranks with their rank, CSV, a bad ?buckets= refused
  naming it.
"""
import csv
import gzip
import io
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_memory  # noqa: E402
import tracedtest  # noqa: E402
from tracedtest import TRACES_DIR, Daemon, check, check_eq  # noqa: E402

H100 = "tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
DEVICE_FIGURES = ("events", "allocs", "frees", "alloc_bytes", "freed_bytes",
                  "peak_allocated_bytes", "peak_ns", "peak_reserved_bytes",
                  "first_allocated_bytes", "last_allocated_bytes",
                  "never_freed_bytes", "never_freed_count",
                  "freed_before_bytes")
BUCKET_FIGURES = ("start_ns", "end_ns", "events", "allocated_min_bytes",
                  "allocated_max_bytes", "reserved_max_bytes")


def traces_with_memory():
    out = []
    for root, _, files in os.walk(TRACES_DIR):
        for f in sorted(files):
            if not f.endswith((".json.gz", ".json")):
                continue
            path = os.path.join(root, f)
            opener = gzip.open if f.endswith(".gz") else open
            with opener(path, "rb") as fh:
                if b'"[memory]"' in fh.read():
                    out.append(path)
    return sorted(out)


def index(path):
    out = subprocess.run([tracedtest.TRACED_BIN, "index", "--captures",
                          "none", path], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def by_op(rows):
    """The memory_ops rows summed over modules: {(device, op): row}."""
    out = {}
    for r in rows:
        acc = out.setdefault((r["device"], r["op"]), {
            "allocs": 0, "alloc_bytes": 0, "peak_live_bytes": 0,
            "never_freed_bytes": 0})
        for k in acc:
            acc[k] += r[k]
    return out


def check_trace(path, s):
    name = os.path.relpath(path, TRACES_DIR)
    devs, ops = ref_memory.reference(path, s["t0_ns"], s["span_ns"])
    check(devs, name + ": memory events")
    check_eq(s["memory_events"], sum(d["events"] for d in devs.values()),
             name + " events")
    got = {r["device"]: r for r in s["memory"]}
    check_eq(sorted(got), sorted(devs), name + " devices")
    for dev, want in devs.items():
        for f in DEVICE_FIGURES:
            check_eq(got[dev][f], want[f], "%s %s %s" % (name, dev, f))
        tl = {r["index"]: r for r in s["memory_timeline"]
              if r["device"] == dev}
        check_eq(sorted(tl), sorted(want["timeline"]), name + " buckets")
        for i, b in want["timeline"].items():
            for f in BUCKET_FIGURES:
                check_eq(tl[i][f], b[f], "%s %s bucket %d %s" % (name, dev,
                                                                 i, f))
    mine = by_op(s["memory_ops"])
    want = {k: v for k, v in ops.items() if v["allocs"] > 0}
    check_eq(sorted(mine, key=repr), sorted(want, key=repr), name + " ops")
    for k, v in want.items():
        for f in ("allocs", "alloc_bytes", "peak_live_bytes",
                  "never_freed_bytes"):
            check_eq(mine[k][f], v[f], "%s %s %s" % (name, k, f))
    return devs


def route(d, cid, table, **query):
    q = "&".join("%s=%s" % kv for kv in sorted(query.items()))
    code, body = d.get("/captures/%d/%s?%s" % (cid, table, q))
    check_eq(code, 200, "%s %s: %s" % (table, query, body))
    return body["rows"]


def merged(buckets, n):
    """The reference's buckets of a device merged as the route does."""
    out = {}
    for i, b in sorted(buckets.items()):
        j = i * n // ref_memory.MEMORY_BUCKETS
        if j not in out:
            out[j] = dict(b, index=i)
            continue
        out[j]["end_ns"] = b["end_ns"]
        tracedtest.fold_row(out[j], b, ("events",), ("allocated_min_bytes",),
                            ("allocated_max_bytes", "reserved_max_bytes"))
    return [out[j] for j in sorted(out)]


def routes(devs, s):
    with Daemon(conf={"import_roots": TRACES_DIR}) as d:
        cid = d.imported(os.path.join(TRACES_DIR, H100))["id"]
        want = sorted(s["memory"],
                      key=lambda r: (r["device_type"], r["device_id"]))
        check_eq(route(d, cid, "memory", rank=0), want, "/memory?rank=0")
        every = route(d, cid, "memory")
        check_eq(every, [dict(r, rank=0) for r in want], "/memory all ranks")
        for dev, want in devs.items():
            fine = [r for r in route(d, cid, "memory/timeline", rank=0,
                                     buckets=1024) if r["device"] == dev]
            check_eq(fine, sorted((r for r in s["memory_timeline"]
                                   if r["device"] == dev),
                                  key=lambda r: r["index"]),
                     "every stored bucket")
            coarse = [r for r in route(d, cid, "memory/timeline", rank=0,
                                       buckets=16) if r["device"] == dev]
            check(len(coarse) <= 16, "at most 16 rows")
            for r, w in zip(coarse, merged(want["timeline"], 16)):
                for f in ("index",) + BUCKET_FIGURES:
                    check_eq(r[f], w[f], "%s 16 buckets %s" % (dev, f))
            check_eq(len(coarse), len(merged(want["timeline"], 16)),
                     "16 buckets: rows")
        ops = route(d, cid, "memory/ops", rank=0, limit=1000)
        check_eq(by_op(ops), by_op(s["memory_ops"]), "/memory/ops")
        gpu = [r for r in ops if r["device"] == "cuda:0"]
        check_eq([r["peak_live_bytes"] for r in gpu],
                 sorted((r["peak_live_bytes"] for r in gpu), reverse=True),
                 "largest at the peak first")
        mm = route(d, cid, "memory/ops", rank=0, q="mm", limit=1000)
        check(mm and all("mm" in (r["op"] or "") for r in mm), "?q=mm")
        code, body = d.get("/captures/%d/memory?format=csv" % cid, raw=True)
        check_eq(code, 200, "csv")
        rows = list(csv.DictReader(io.StringIO(body.decode())))
        check_eq([int(r["peak_allocated_bytes"]) for r in rows],
                 [r["peak_allocated_bytes"] for r in every], "csv peaks")
        code, body = d.get("/captures/%d/memory/timeline?buckets=0" % cid)
        check_eq((code, body["error"]["field"]), (400, "buckets"), "buckets")


def main():
    paths = traces_with_memory()
    check(len(paths) >= 2, "shared traces with [memory] events")
    h100 = None
    for path in paths:
        s = index(path)
        devs = check_trace(path, s)
        for dev, want in devs.items():
            print("%s %s: peak %d bytes at %d ns, %d events" % (
                os.path.relpath(path, TRACES_DIR), dev,
                want["peak_allocated_bytes"], want["peak_ns"],
                want["events"]))
        if path.endswith(H100):
            h100 = (devs, s)
    check(h100 is not None, "the H100 trace")
    routes(*h100)
    print("memory: ok")


if __name__ == "__main__":
    main()
