#!/usr/bin/env python3
"""Slices of a 1 GB trace through a running daemon (bench_slice.sh).

Imports bench/out/big1.json.gz (bench/make_big_trace.py: copies of a real
MI300X trace, each shifted by the source's span), restarts the daemon so
that its peak RSS (VmHWM) starts again from the idle daemon, then asks
for slices of it over HTTP: a 1 ms window (with and without traced's
tracks), a phase, a tenth of the span and the whole span. For each: wall time to the first byte and to the
end, bytes, events kept, and the daemon's VmHWM after it (target < 64
MB). Each answer is checked without loading the big trace: the events the
window must hold are counted from the source trace, copy by copy (the
generator's own shift), and every event of a small answer is compared
byte for byte with the source event the generator wrote for its copy
(render(template(...))); the whole span is counted by a streaming parse
of the answer.

Env: TRACED_BIN (build/traced), BENCH_OUT (bench/out), BENCH_SOURCE.
"""
import gzip
import http.client
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
import make_big_trace  # noqa: E402
import ref_slice  # noqa: E402
from tracedtest import Daemon  # noqa: E402

OUT = os.environ.get("BENCH_OUT", os.path.join(HERE, "out"))
SOURCE = os.environ.get("BENCH_SOURCE", os.path.join(
    HERE, "..", "..", "shared", "traces",
    "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz"))
BIG = os.path.join(OUT, "big1.json.gz")


def vm_hwm_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


class Source:
    """The source trace as the generator copies it: its events' texts
    and templates, the shift of each copy, and the reference's spans."""

    def __init__(self, path, copies):
        with gzip.open(path, "rb") as f:
            head, self.texts, _ = make_big_trace.split_events(f.read())
        self.temps = [make_big_trace.template(e) for e in self.texts]
        ts = [p[1] for t in self.temps for p in t
              if not isinstance(p, bytes) and p[0] == b"ts"]
        ids = [p[1] for t in self.temps for p in t
               if not isinstance(p, bytes) and p[0] == b"id"]
        self.span_ns = max(ts) - min(ts) + 1000  # make_big_trace's shift
        self.id_step = max(ids) + 1 if ids else 0
        self.copies = copies
        self.ref = ref_slice.Trace(path)

    def copies_in(self, start, end):
        """The copies k whose events may overlap [t0 + start, t0 + end),
        with the window shifted back into the source: (k, lo, hi)."""
        last = max(e for _, b, e in self.ref.spans if b is not None) - \
            self.ref.t0_ns
        for k in range(self.copies):
            lo, hi = start - k * self.span_ns, end - k * self.span_ns
            if hi > 0 and lo < last:
                yield k, lo, hi

    def expected(self, start, end):
        """Events the big trace's window holds: every copy's M events,
        and each copy's events that overlap the window shifted back."""
        meta = self.ref.window(0, 1)["metadata"]
        n = sum(len(self.ref.window(lo, hi)["events"]) - meta
                for _, lo, hi in self.copies_in(start, end))
        return n + meta * self.copies

    def written(self, start, end):
        """The texts the generator wrote for the copies that may overlap
        the window, and every copy's M events (kept in every slice)."""
        ks = {k for k, _, _ in self.copies_in(start, end)}
        meta = [t for t, e in zip(self.temps, self.texts)
                if json.loads(e).get("ph") == "M"]
        return {make_big_trace.render(t, k * self.span_ns,
                                      k * self.id_step).decode()
                for k in range(self.copies)
                for t in (self.temps if k in ks else meta)}


def stream(port, url, sink):
    """GETs url, feeding the body to sink(bytes); (status, seconds to the
    first byte, seconds in all, bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t = time.monotonic()
    conn.request("GET", url)
    r = conn.getresponse()
    first, n = None, 0
    while True:
        chunk = r.read(1 << 20)
        if first is None:
            first = time.monotonic() - t
        if not chunk:
            break
        n += len(chunk)
        sink(chunk)
    conn.close()
    return r.status, first, time.monotonic() - t, n


class Counter:
    """Counts the elements of traceEvents in a streamed document with a
    JSON decoder over a sliding buffer (never the whole text)."""

    def __init__(self):
        self.buf, self.pos, self.n, self.state = "", 0, 0, "head"
        self.tail = ""
        self.dec = json.JSONDecoder()
        self.pending = b""

    def feed(self, chunk):
        data = self.pending + chunk
        try:
            text = data.decode("utf-8")
            self.pending = b""
        except UnicodeDecodeError as e:
            text, self.pending = data[:e.start].decode(), data[e.start:]
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        if self.state == "head":
            i = self.buf.find('"traceEvents":[')
            if i < 0:
                return
            self.pos, self.state = i + len('"traceEvents":['), "events"
        while self.state == "events":
            while self.pos < len(self.buf) and self.buf[self.pos] in ", \n":
                self.pos += 1
            if self.pos >= len(self.buf):
                return
            if self.buf[self.pos] == "]":
                self.state = "tail"
                break
            try:
                _, end = self.dec.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                return  # the element goes on in the next chunk
            if end == len(self.buf):
                return
            self.n += 1
            self.pos = end
        if self.state == "tail":
            self.tail += self.buf[self.pos + (self.tail == ""):]
            self.pos = len(self.buf)

    def traced_slice(self):
        """The answer's last member (the tail is small: the members after
        traceEvents and traced_slice)."""
        return json.loads("{" + self.tail[1:])["traced_slice"]


def small(d, cap, src, start, end, what, extra=""):
    """A window small enough to check whole."""
    rank = cap["ranks"][0]
    url = "/captures/%d/ranks/0/slice?start_ns=%d&end_ns=%d%s" % (
        cap["id"], start, end, extra)
    body = []
    status, first, total, n = stream(d.port, url, body.append)
    assert status == 200, (status, b"".join(body)[:300])
    text = b"".join(body).decode()
    doc = ref_slice.load_slice(text.encode())
    st = doc["traced_slice"]
    want = src.expected(start, end)
    assert st["events_kept"] == want, (what, st["events_kept"], want)
    written = src.written(start, end)
    texts = ref_slice.event_texts(text)[:want]
    bad = [t for t in texts if t not in written]
    assert not bad, (what, bad[:2])
    assert st["t0_ns"] == rank["t0_ns"]
    return first, total, n, st["events_kept"], st["findings"]


def whole(d, cap, facts):
    span = cap["ranks"][0]["span_ns"]
    url = "/captures/%d/ranks/0/slice?start_ns=0&end_ns=%d" % (
        cap["id"], span + 1)
    c = Counter()
    status, first, total, n = stream(d.port, url, c.feed)
    assert status == 200, status
    st = c.traced_slice()
    tracks = st["findings"]["steps"] + st["findings"]["idle"]
    assert st["events_kept"] == facts["events"], (st, facts)
    assert c.n == st["events_kept"] + tracks + (3 if tracks else 0), (
        c.n, st)
    return first, total, n, c.n, st


def import_big(root, big=BIG):
    """A daemon (stopped) with big (big1.json.gz unless said) imported: a
    hard link, else a copy, under its import root, named as kineto names
    a rank; returns (the Daemon, the done capture)."""
    imports = os.path.join(root, "imports")
    os.makedirs(imports)
    dst = os.path.join(imports, os.path.basename(big).replace(
        ".json.gz", ".pt.trace.json.gz"))
    try:
        os.link(big, dst)
    except OSError:
        shutil.copy(big, dst)
    work = os.path.join(root, "daemon")
    d = Daemon(conf={"import_roots": imports, "atom_scripts": "/nonexistent"},
               workdir=work, keep=True)
    with d:
        code, cap = d.post("/imports", {"path": dst})
        assert code == 202, cap
        cap = d.wait_status(cap["id"], timeout=1200)
        assert cap["status"] == "done", cap
    return d, cap


def main():
    facts = json.load(open(BIG + ".facts.json"))
    root = tempfile.mkdtemp(prefix="traced-bench-slice-")
    try:
        d, cap = import_big(root)
        rank = cap["ranks"][0]
        src = Source(SOURCE, facts["copies"])
        print("== %s: %.2f GB JSON, %d events, span %.3f s" % (
            os.path.basename(BIG), facts["json_bytes"] / 1e9,
            facts["events"], rank["span_ns"] / 1e9))
        with d:  # a fresh daemon: its VmHWM starts at the idle daemon's
            pid = d.proc.pid
            print("  idle daemon: VmHWM %.1f MB" % (vm_hwm_kb(pid) / 1024))
            phases = d.get("/captures/%d/phases?rank=0" % cap["id"])[1][
                "rows"]
            mid = phases[len(phases) // 2]
            span = rank["span_ns"]
            wins = [(span // 2, span // 2 + 1000000, "1 ms in the middle"),
                    (span // 2, span // 2 + 1000000, "the same, findings=false"),
                    (mid["start_ns"], mid["end_ns"],
                     "phase %d (%.1f ms)" % (mid["index"], (
                         mid["end_ns"] - mid["start_ns"]) / 1e6)),
                    (span // 3, span // 3 + span // 10, "a tenth of the span")]
            for start, end, what in wins:
                first, total, n, kept, found = small(
                    d, cap, src, start, end, what,
                    "&findings=false" if "findings=false" in what else "")
                print("  %-24s %6.2f s (first byte %.2f s)  %8.1f MB  "
                      "%8d events (= the generator's)  tracks %s  "
                      "VmHWM %.1f MB" % (
                          what, total, first, n / 1e6, kept, found,
                          vm_hwm_kb(pid) / 1024))
            first, total, n, count, st = whole(d, cap, facts)
            print("  %-24s %6.2f s (first byte %.2f s)  %8.1f MB  "
                  "%8d events (= the generator's)  tracks %s  VmHWM %.1f MB"
                  % ("the whole span", total, first, n / 1e6,
                     st["events_kept"], st["findings"],
                     vm_hwm_kb(pid) / 1024))
            hwm = vm_hwm_kb(pid) / 1024
            print("  daemon peak RSS %.1f MB (target < 64 MB: %s)" % (
                hwm, "ok" if hwm < 64 else "MISSED"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
