#!/usr/bin/env python3
"""How out of order a trace's events are, for slices that start at an
access point (index/read/read.h) and must decide how far past their window
to read.

For each event e of traceEvents (in file order, at output offset o_e,
timestamp ts_e), its lateness is measured against the events before it
with a later timestamp:

  bytes: o_e - (offset of the first earlier event with ts > ts_e)
  ns:    (the largest ts before e) - ts_e

A slice that has read up to an event with ts past its window's end must
read that many more bytes (at most the max) to be sure to have seen every
event of the window. Stdlib only.

It also cuts the text into SEGMENT-byte pieces (as access points would,
4 MiB by default) and says how many pieces a window of the span holds an
event of (by ts .. ts + dur): what a slice must inflate when each piece
carries its time range.

usage: event_order.py [--segment BYTES] TRACE.json[.gz]...
"""
import bisect
import gzip
import json
import sys


def events(text):
    """(offset, ts, end in ns) of each traceEvents member with a numeric
    ts."""
    start = text.find('"traceEvents"')
    if start < 0:
        return
    i = text.index("[", start) + 1
    dec = json.JSONDecoder()
    n = len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            return
        ev, end = dec.raw_decode(text, i)
        ts = ev.get("ts") if isinstance(ev, dict) else None
        if isinstance(ts, (int, float)):
            # docs/TRACE_FORMATS.md: Kineto's ts is in microseconds.
            dur = ev.get("dur")
            dur = dur if isinstance(dur, (int, float)) and dur > 0 else 0
            yield i, int(round(ts * 1000)), int(round((ts + dur) * 1000))
        i = end


def pct(sorted_vals, q):
    if not sorted_vals:
        return 0
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))]


def pieces_touched(ranges, lo, hi):
    """How many pieces hold an event overlapping [lo, hi]."""
    return sum(1 for a, b in ranges if a <= hi and b >= lo)


def windows(ranges, t0, t1):
    """Pieces touched by a 1 ms window in the middle of the span and by a
    tenth of the span there."""
    mid = (t0 + t1) // 2
    tenth = (t1 - t0) // 10
    return {"pieces": len(ranges),
            "touched_1ms": pieces_touched(ranges, mid, mid + 1000000),
            "touched_tenth": pieces_touched(ranges, mid, mid + tenth)}


def measure(path, segment):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    pmax_ts = []  # running max of ts, in file order
    offsets = []
    late_b, late_ns = [], []
    ranges = {}  # piece -> [min ts, max end]
    for off, ts, end in events(text):
        r = ranges.setdefault(off // segment, [ts, end])
        r[0], r[1] = min(r[0], ts), max(r[1], end)
        if pmax_ts and pmax_ts[-1] > ts:
            # the first earlier event whose ts is past this one's
            j = bisect.bisect_right(pmax_ts, ts)
            late_b.append(off - offsets[j])
            late_ns.append(pmax_ts[-1] - ts)
        else:
            late_b.append(0)
            late_ns.append(0)
        pmax_ts.append(max(ts, pmax_ts[-1]) if pmax_ts else ts)
        offsets.append(off)
    n = len(late_b)
    out_of_order = sum(1 for b in late_b if b > 0)
    late_b.sort()
    late_ns.sort()
    span = [min(r[0] for r in ranges.values()),
            max(r[1] for r in ranges.values())] if ranges else [0, 0]
    return {
        "trace": path.rsplit("/", 1)[-1],
        "bytes": len(text),
        "events": n,
        "late_events": out_of_order,
        "late_bytes_p50_p99_max": [pct(late_b, .5), pct(late_b, .99),
                                   late_b[-1] if n else 0],
        "late_ns_p50_p99_max": [pct(late_ns, .5), pct(late_ns, .99),
                                late_ns[-1] if n else 0],
        "segment": segment,
        **windows(list(ranges.values()), *span),
    }


def main():
    args = sys.argv[1:]
    segment = 4 << 20
    if len(args) >= 2 and args[0] == "--segment":
        segment = int(args[1])
        args = args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    for path in args:
        print(json.dumps(measure(path, segment)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
