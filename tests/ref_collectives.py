#!/usr/bin/env python3
"""Independent reference for the collectives matched across ranks (issue
10): from the raw JSON of each rank, read whole with Python's json module
(ref_index.load: exact decimal timestamps), with plain lists and sorting.
Shares no code with the C side.

    import ref_collectives
    ref = ref_collectives.reference([rank0_path, rank1_path, ...])

`python3 ref_collectives.py FILE...` prints it as JSON.

The rules it implements (api/openapi.yaml, README "Collectives"):
- a collective is a kernel event whose name matches a communication
  pattern (ref_analysis.COMM); a compute kernel is any other kernel whose
  name is no copy or memset kernel (the category table's order: a
  communication pattern first, then copy, then memset);
- its family is ref_analysis.family(name); its stream args.stream, else
  tid; its lane the stream's place among the streams of its family on the
  rank, by first start;
- exposed: its duration minus the part of it inside the union of the
  rank's compute kernels;
- its step kind: of the step side's labels (GPU-side when the rank has
  any), the kinds with a label started at or before its start and ending
  after it; of those the one whose latest label (started at or before it)
  started last, ties to the kind seen first in the file;
- the k-th collective of (family, lane) on every rank is one instance,
  up to the shortest count; first/last arrival, skew, the last rank (ties:
  the lower rank), wait = min(last - start, dur), transfer = dur - wait,
  late = start - first; held = the others' waits, to the last rank;
- instances worst first: skew desc, first start, family, lane, index;
- timeline: `bins` equal bins over [min t0, max end) of the ranks, width
  ceil(span / bins), by the first arrival.
"""
import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_analysis  # noqa: E402
import ref_index  # noqa: E402
import refcache  # noqa: E402

COPY = ("memory_copy", "copybuffer", "memcpy", "direct_copy",
        "catarraybatchedcopy")
MEMSET = ("memset", "fillbuffer")
FIGURES = ("count", "total_ns", "exposed_ns", "matched", "wait_ns",
           "transfer_ns", "late_ns", "last", "held_ns")


def kind_of_kernel(name):
    low = name.lower()
    if ref_analysis.is_comm(name):
        return "comm"
    if low.startswith(COPY[0]) or any(p in low for p in COPY[1:]):
        return "copy"
    if any(p in low for p in MEMSET):
        return "memset"
    return "compute"


def covered(union, starts, s, e):
    """The part of [s, e) inside the merged intervals union (starts: their
    starts, for bisect)."""
    i = max(bisect.bisect_right(starts, s) - 1, 0)
    total = 0
    while i < len(union) and union[i][0] < e:
        a, b = union[i]
        total += max(0, min(e, b) - max(s, a))
        i += 1
    return total


def covering_kind(labels, kinds, t):
    """The kind covering the nanosecond at t: idle time's rule
    (ref_analysis.cover_pieces)."""
    return ref_analysis.cover_pieces(t, t + 1, labels, kinds)[0][2]


def read_rank(path):
    """t0, end, and the rank's collectives [{start, dur, exposed, family,
    lane, kind}] in start order."""
    doc, _ = ref_index.load(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    fmt = ref_index.detect_format(doc, events)
    span = ref_index.Span()
    kernels, labels = [], {"gpu": [], "cpu": []}
    kinds = {"gpu": [], "cpu": []}
    for _, e, ts, dur, args, cls in ref_index.x_events(fmt, events, span):
        if cls == "kernel":
            stream = ref_index.num(args.get("stream"))
            if stream is None:
                stream = ref_index.num(e.get("tid"))
            kernels.append((ts, dur, e.get("name") or "", stream))
        elif cls in ("label_gpu", "label_cpu"):
            lab = ref_index.parse_label(e.get("name"))
            side = "gpu" if cls == "label_gpu" else "cpu"
            if lab is not None:
                labels[side].append((ts, dur, lab[0], e.get("name"), None))
                if lab[0] not in kinds[side]:
                    kinds[side].append(lab[0])
    side = "gpu" if labels["gpu"] else "cpu"
    union = ref_index.merged((ts, ts + dur) for ts, dur, name, _ in kernels
                   if kind_of_kernel(name) == "compute")
    starts = [a for a, _ in union]
    comm = sorted(k for k in kernels if kind_of_kernel(k[2]) == "comm")
    lanes, out = {}, []
    for ts, dur, name, stream in comm:
        fam = ref_analysis.family(name)
        lane = lanes.setdefault(fam, {}).setdefault(stream,
                                                    len(lanes.get(fam, {})))
        out.append({"start": ts, "dur": dur, "family": fam, "lane": lane,
                    "exposed": dur - covered(union, starts, ts, ts + dur),
                    "kind": covering_kind(labels[side], kinds[side], ts)})
    return span.t0 or 0, span.tend or 0, out


def new_figs():
    return dict.fromkeys(FIGURES, 0)


def match(ranks, bins=256, keep=None):
    """ranks: [(rank, t0, end, collectives)] of one group."""
    fam_rows, step_rows, instances = {}, {}, []
    warnings = []
    t0 = min(r[1] for r in ranks)
    span = max(r[2] for r in ranks) - t0
    width = (span + bins - 1) // bins if span > 0 else 1
    for rank, _, _, colls in ranks:
        for c in colls:
            for rows, key in ((fam_rows, c["family"]),
                              (step_rows, c["kind"])):
                f = rows.setdefault((key, rank), new_figs())
                f["count"] += 1
                f["total_ns"] += c["dur"]
                f["exposed_ns"] += c["exposed"]
    keys = sorted({(c["family"], c["lane"]) for _, _, _, cs in ranks
                   for c in cs}, key=lambda k: (k[0].encode(), k[1]))
    timeline = {}
    for fam, lane in keys if len(ranks) > 1 else []:
        seqs = [[c for c in cs if (c["family"], c["lane"]) == (fam, lane)]
                for _, _, _, cs in ranks]
        n = min(len(s) for s in seqs)
        if len({len(s) for s in seqs}) > 1:
            warnings.append({"family": fam, "lane": lane,
                             "counts": {ranks[i][0]: len(s)
                                        for i, s in enumerate(seqs)}})
        for k in range(n):
            recs = [s[k] for s in seqs]
            instances.append(instance(ranks, recs, fam, lane, k, fam_rows,
                                      step_rows, timeline, t0, width, bins))
    instances.sort(key=lambda x: (-x["skew_ns"], x["first"],
                                  x["family"].encode(), x["lane"],
                                  x["index"]))
    for x in instances:
        x["start_ns"] = x.pop("first") - t0
    return {"t0_ns": t0, "span_ns": span, "matched": len(instances),
            "families": fam_rows, "steps": step_rows,
            "instances": instances[:keep] if keep else instances,
            "timeline": timeline, "warnings": warnings}


def instance(ranks, recs, fam, lane, k, fam_rows, step_rows, timeline, t0,
             width, bins):
    first = min(r["start"] for r in recs)
    last = max(r["start"] for r in recs)
    lj = [r["start"] for r in recs].index(last)
    per, held = [], 0
    for j, r in enumerate(recs):
        rank, rt0 = ranks[j][0], ranks[j][1]
        wait = min(last - r["start"], r["dur"])
        per.append({"rank": rank, "start_ns": r["start"] - rt0,
                    "dur_ns": r["dur"], "wait_ns": wait,
                    "transfer_ns": r["dur"] - wait})
        if j != lj:
            held += wait
        for rows, key in ((fam_rows, fam), (step_rows, r["kind"])):
            f = rows[(key, rank)]
            f["matched"] += 1
            f["wait_ns"] += wait
            f["transfer_ns"] += r["dur"] - wait
            f["late_ns"] += r["start"] - first
        b = min(max((first - t0) // width, 0), bins - 1)
        t = timeline.setdefault((b, rank), {"instances": 0, "late_ns": 0,
                                            "wait_ns": 0, "last": 0})
        t["instances"] += 1
        t["late_ns"] += r["start"] - first
        t["wait_ns"] += wait
        t["last"] += j == lj
        skew = timeline.setdefault(("skew", b), [0])
        skew[0] = max(skew[0], last - first)
    for rows, key in ((fam_rows, fam), (step_rows, recs[lj]["kind"])):
        rows[(key, ranks[lj][0])]["last"] += 1
        rows[(key, ranks[lj][0])]["held_ns"] += held
    return {"family": fam, "index": k, "lane": lane, "first": first,
            "skew_ns": last - first, "last_rank": ranks[lj][0],
            "per_rank": per}


@refcache.cached
def reference(paths, bins=256, keep=None):
    """The matched collectives of the rank files (ranks 0..n-1, one
    group) as traced answers them: rows keyed as the routes' rows."""
    ranks = [(i,) + read_rank(p) for i, p in enumerate(paths)]
    m = match(ranks, bins, keep)
    width = (m["span_ns"] + bins - 1) // bins if m["span_ns"] > 0 else 1
    m["families"] = [dict(f, family=k, rank=r) for (k, r), f in
                     sorted(m["families"].items(),
                            key=lambda x: (x[0][0].encode(), x[0][1]))]
    m["steps"] = [dict(f, step=k, rank=r) for (k, r), f in
                  sorted(m["steps"].items(),
                         key=lambda x: (x[0][0] is not None,
                                        (x[0][0] or "").encode(), x[0][1]))]
    m["timeline"] = [dict(v, bin=b, rank=r, start_ns=b * width,
                          end_ns=(b + 1) * width,
                          skew_max_ns=m["timeline"][("skew", b)][0])
                     for (b, r), v in sorted(
                         (k, v) for k, v in m["timeline"].items()
                         if k[0] != "skew")]
    return m


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: ref_collectives.py FILE...")
    json.dump(reference(sys.argv[1:]), sys.stdout, indent=1)
    sys.stdout.write("\n")
