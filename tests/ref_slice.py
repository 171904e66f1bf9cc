#!/usr/bin/env python3
"""Independent reference for slices (GET /captures/<id>/ranks/<r>/slice):
the trace loaded whole with Python's json module and filtered here, sharing
no code with the C side.

    import ref_slice
    ref = ref_slice.reference(path, start_ns, end_ns)   # see Trace.window()
    trace = ref_slice.Trace(path); trace.window(a, b); trace.window(c, d)

`python3 ref_slice.py FILE START_NS END_NS` prints how many events the
window holds.

Rules (api/openapi.yaml, index/slice/slice.c): the window is [t0 + start_ns,
t0 + end_ns) with t0 the rank's t0_ns (tests/ref_index.py); an event the
reader hands over spans [ts, ts + dur) for ph "X" (dur when present), else
[ts, ts + 1 ns); it is kept when that span overlaps the window; every ph
"M" event is kept; an event without ts that is not "M" is not; the
document's other members are kept, in order.
"""
import gzip
import json
import os
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_index  # noqa: E402


def events_of(doc):
    return doc if isinstance(doc, list) else doc.get("traceEvents", [])


class Trace:
    """A trace loaded whole, and the events the reader hands over with
    their spans, to cut windows from."""

    def __init__(self, path, t0_ns=None):
        self.doc = doc = ref_index.load(path)[0]
        events = events_of(doc)
        scale = 3 if ref_index.detect_format(doc, events) == "kineto" else 0
        # t0: the earliest ts of an event that is counted and not "M"
        # (ref_index's rule).
        self.t0_ns = min((t[0] for e in events if isinstance(e, dict) and
                          e.get("ph") != "M" for t in [
                              ref_index.well_formed(e, scale)]
                          if t is not None and t[0] is not None),
                         default=0) if t0_ns is None else t0_ns
        # (event, begin, end): begin None for metadata (always kept) and
        # for events without ts (never kept).
        self.spans = []
        for e in events:
            tsdur = ref_index.delivered(e, scale) if isinstance(e, dict) \
                else None
            if tsdur is None:
                continue
            ts, dur = tsdur
            if e.get("ph") == "M" or ts is None:
                self.spans.append((e, None, e.get("ph") == "M"))
                continue
            end = ts + dur if e.get("ph") == "X" and dur is not None else ts
            self.spans.append((e, ts, max(end, ts + 1)))
        self.members = [] if isinstance(doc, list) else [
            (k, v) for k, v in doc.items() if k != "traceEvents"]

    def window(self, start_ns, end_ns):
        """{"events": the kept events (parsed, in file order), "members":
        [(key, value)] of the document but traceEvents, "read": events the
        reader hands over, "metadata": kept ph "M" events, "t0_ns"}."""
        lo, hi = self.t0_ns + start_ns, self.t0_ns + end_ns
        kept, meta = [], 0
        for e, b, end in self.spans:
            if b is None:
                if end:
                    kept.append(e)
                    meta += 1
            elif b < hi and end > lo:
                kept.append(e)
        return {"events": kept, "members": self.members,
                "read": len(self.spans), "metadata": meta,
                "t0_ns": self.t0_ns}


def reference(path, start_ns, end_ns):
    """Trace(path).window(start_ns, end_ns)."""
    return Trace(path).window(start_ns, end_ns)


def load_slice(body):
    """A slice's bytes as JSON: strict (no NaN, no control characters in
    strings), numbers as Decimal like ref_index.load()."""
    def no_constant(name):
        raise ValueError("not strict JSON: %s" % name)
    return json.loads(body.decode("utf-8"), parse_float=Decimal,
                      parse_constant=no_constant)


def plain_text(path):
    """The file's JSON text (inflated when gzip)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="surrogateescape")


def event_texts(text):
    """The text of each element of a document's traceEvents (or bare
    array), as written."""
    dec = json.JSONDecoder(strict=False)
    start = text.find("[", text.find('"traceEvents"')) + 1 \
        if text.lstrip()[:1] == "{" else text.find("[") + 1
    out, pos = [], start
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return out
        _, end = dec.raw_decode(text, pos)
        out.append(text[pos:end])
        pos = end


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: ref_slice.py FILE START_NS END_NS")
    r = reference(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps({"events": len(r["events"]), "read": r["read"],
                      "metadata": r["metadata"], "t0_ns": r["t0_ns"]}))
