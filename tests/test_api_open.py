"""Open results (CSV and slices), against a real daemon over real sockets.

Usage: test_api_open.py CASE, CASE one of
  csv    every route of api/openapi.yaml that declares the format parameter
         answers ?format=csv with RFC 4180 text holding the JSON answer's
         rows, row for row, in order: a header naming the members in the
         order first met, each cell the documented rendering of the JSON
         value (nested values as their JSON text), CRLF records; asked
         with no parameters and with the file's examples, for one rank and
         all ranks, of an import of real traces; every route whose JSON
         answer has rows declares format; a bad format is 400 naming it;
         kept answers keep their type.
  slice  a slice of every rank of an import (every real trace, the
         generated rank with every idle cause and GPU-side labels, an
         mcTracer rank, a rank with the reader's quirks) holds exactly the
         events tests/ref_slice.py keeps for the window, in file order and
         each byte for byte as in the file, with the document's other
         members and the counts; over the whole span traced's idle tracks
         sum to /idle's figures by cause and its steps to /steps' counts;
         over phases, outlier steps and other windows the tracks are the
         whole-span ones that overlap, and an outlier step's slice holds
         that step; findings=false adds none; bad windows, unknown ranks,
         a trace swapped for a link, gone or changed since indexing are
         refused with JSON errors naming the field.
  slice_bounds  at most 2 slices at once (429 naming slice) while two
         clients read nothing, an all-ranks slice counting as one; when
         they go their producers end and the next slice is served; the
         daemon stops promptly (exit 0) with a slice in flight.
  slice_ranks  the all-ranks slice (GET /captures/<id>/slice) of an
         import whose ranks are two real traces twice: valid JSON whose
         rank parts, in rank order, are each exactly the events that
         rank's own slice of the same instants holds, with only pid
         remapped (disjoint ranges, one pid per process), process
         names prefixed by the rank and flow ids made each rank's own
         (no two ranks share one), then a name for each process that
         had none and a sort index for each; with and without findings,
         at the ranks' whole spans and at random windows; bad windows,
         an unknown parameter or capture and a changed rank refused.
  slice_slow  two clients that read a slice slower than
         slice_min_bytes_per_s (1 KiB every half second) but never let go
         lose it within slice_window_s and a bit (their answers cut
         short), and a third is served meanwhile; a client that reads
         fast enough but longer than slice_timeout_s loses it then.
"""
import csv
import gzip
import io
import json
import os
import random
import re
import shutil
import socket
import sys
import tempfile
import time
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (TRACES_DIR, Daemon, check, check_eq,  # noqa: E402
                        sanitized, trace_files)
from test_api import (OPENAPI, RANKS_A, RANKS_B, check_error, deref,  # noqa
                      example_query, import_daemon, import_done, lay_out, raw,
                      walk_paths)
import make_fixtures  # noqa: E402
import ref_index  # noqa: E402
import ref_slice  # noqa: E402

CSV_TYPE = "text/csv; charset=utf-8; header=present"


# ---- CSV ----

def columns(rows):
    """Every member of any row, in the order first met."""
    out = []
    for row in rows:
        for k in row:
            if k not in out:
                out.append(k)
    return out


def same_cell(cell, value):
    """True when cell is the documented rendering of the JSON value."""
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, str):
        # A text a spreadsheet would run as a formula carries a leading
        # quote (OWASP's CSV injection advice, api/csv.c).
        guarded = value[:1] in ("=", "+", "-", "@", "\t", "\r")
        return cell == ("'" + value if guarded else value)
    if isinstance(value, int):
        return cell == str(value)
    # reals, arrays, objects: their JSON text, read back
    return json.loads(cell) == value


def check_records(body, what):
    """body is CRLF-terminated records (a bare LF only inside quotes)."""
    text = body.decode("utf-8")
    check(text == "" or text.endswith("\r\n"), what + ": no final CRLF")
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif ch == "\n" and not quoted:
            check(i > 0 and text[i - 1] == "\r", "%s: bare LF at %d" % (
                what, i))
    check(not quoted, what + ": unbalanced quotes")
    return text


def check_csv(d, url, what, key="rows"):
    """GET url as JSON and as CSV: the CSV holds the JSON's table (its
    member key)."""
    sep = "&" if "?" in url else "?"
    code, hdrs, jbody = raw(d, "GET", url + sep + "format=json")
    check_eq(code, 200, "%s json: %r" % (what, jbody[:300]))
    code2, _, plain = raw(d, "GET", url)
    check_eq((code2, plain), (200, jbody), what + ": format=json is the "
             "default")
    rows = json.loads(jbody)[key]
    code, hdrs, cbody = raw(d, "GET", url + sep + "format=csv")
    check_eq(code, 200, "%s csv: %r" % (what, cbody[:300]))
    check_eq(hdrs.get("content-type"), CSV_TYPE, what + ": type")
    text = check_records(cbody, what)
    records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    if not rows:
        check_eq(records, [], what + ": no rows, empty body")
        return 0
    cols = columns(rows)
    check_eq(records[0], cols, what + ": header")
    check_eq(len(records) - 1, len(rows), what + ": rows")
    for i, (rec, row) in enumerate(zip(records[1:], rows)):
        check_eq(len(rec), len(cols), "%s: row %d width" % (what, i))
        for name, cell in zip(cols, rec):
            check(same_cell(cell, row.get(name)),
                  "%s: row %d %s: %r is not %r" % (what, i, name, cell,
                                                   row.get(name)))
    # Kept answers (done captures) keep their type and bytes.
    code, hdrs, again = raw(d, "GET", url + sep + "format=csv")
    check_eq((code, hdrs.get("content-type"), again), (200, CSV_TYPE, cbody),
             what + ": kept CSV")
    return len(rows)


def table_key(spec, op):
    """The member of the route's JSON answer that its CSV holds: `rows`,
    else its one array of objects (a list's `sweeps`, a sweep's `points`);
    None when the answer is not a table."""
    content = op["responses"]["200"]["content"]
    props = deref(spec, content.get("application/json", {}).get(
        "schema", {})).get("properties", {})
    if "rows" in props:
        return "rows"
    tables = [k for k, v in props.items() if deref(spec, v).get(
        "type") == "array" and deref(spec, deref(spec, v).get(
            "items", {})).get("type") == "object"]
    return tables[0] if len(tables) == 1 else None


def declares_format(spec, op):
    return any(deref(spec, p)["name"] == "format"
               for p in op.get("parameters", []))


def csv_urls(spec, tmpl, op, common, url, ids):
    """The queries to compare: none (all ranks), the examples (format
    dropped), and the examples without rank."""
    qs = [q for q in example_query(spec, op, common)
          if not q.startswith("format=")]
    if tmpl == "/diff":
        qs = ["a=%d" % ids[0], "b=%d" % ids[1]] + [
            q for q in qs if q[:2] not in ("a=", "b=")]
        variants = [qs, [q for q in qs if not q.startswith("rank=")],
                    qs[:2] + ["by=category"]]
    else:
        variants = [[], qs, [q for q in qs if not q.startswith("rank=")]]
    for q in variants:
        yield url + ("?" + "&".join(q) if q else "")


def case_csv():
    spec = json.load(open(OPENAPI))
    root, d = import_daemon()
    with d:
        a = import_done(d, lay_out(root, "a", RANKS_A))["id"]
        b = import_done(d, lay_out(root, "b", RANKS_B))["id"]
        walked, rows = set(), 0
        for tmpl, op, common, url in walk_paths(spec, (a, b), None):
            key = table_key(spec, op)
            if key == "rows":
                check(declares_format(spec, op),
                      tmpl + ": a table route without format")
            if not declares_format(spec, op):
                continue
            content = op["responses"]["200"]["content"]
            check("text/csv" in content, tmpl + ": text/csv not declared")
            check(key is not None, tmpl + ": CSV of no table")
            for full in csv_urls(spec, tmpl, op, common, url, (a, b)):
                rows += check_csv(d, full, "GET " + full, key)
            check_error(d.get(url + "?format=xml"), 400, "format",
                        tmpl + " format=xml")
            walked.add(tmpl)
        check(len(walked) >= 15, "table routes walked: %r" % sorted(walked))
        check(rows > 1000, "rows compared: %d" % rows)
        print("csv: %d routes, %d rows compared" % (len(walked), rows))
    shutil.rmtree(root)


# ---- slices ----

# A rank with the reader's quirks (docs/TRACE_FORMATS.md, "seen in the
# wild"): trailing commas in the document, in an event and in its args, a
# raw tab inside a name. Kernels at 1000..1003 us, the second and third
# quirky.
QUIRKS = (b'{"schemaVersion": 1, "traceEvents": [\n'
          b'{"ph": "X", "cat": "kernel", "name": "k0", "pid": 0, "tid": 1,'
          b' "ts": 1000.000, "dur": 0.500},\n'
          b'{"ph": "X", "cat": "kernel", "name": "k\t1", "pid": 0, "tid": 1,'
          b' "ts": 1001.000, "dur": 0.500},\n'
          b'{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 1,'
          b' "ts": 1002.000, "dur": 0.500, "args": {"grid": [1, 1, 1,],},},\n'
          b'{"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 1,'
          b' "ts": 1003.000, "dur": 0.500},\n'
          b'],\n"traceName": "quirks",}\n')
# The quirky rank's events by window (start_ns, end_ns): names kept and
# how many of them were mended.
QUIRK_WINDOWS = {(0, 3500): (["k0", "k\t1", "k2", "k3"], 2),
                 (1000, 2000): (["k\t1"], 1), (3000, 3001): (["k3"], 0)}


def rank_files(root):
    """(name, gzip bytes) of every rank: the real traces, the generated
    ranks (every idle cause with GPU labels; mcTracer), the quirks."""
    out = []
    for path in trace_files():
        with open(path, "rb") as f:
            out.append((os.path.basename(path), f.read()))
    gen = os.path.join(root, "gen")
    for made in (make_fixtures.make_idle(gen),
                 make_fixtures.make_mctracer(gen)):
        with open(made["path"], "rb") as f:
            data = f.read()
        out.append((os.path.basename(made["path"]), data if data[:2] ==
                    b"\x1f\x8b" else gzip.compress(data, mtime=0)))
    out.append(("quirks", gzip.compress(QUIRKS, mtime=0)))
    return out


def lay_out_files(root, name, files):
    """root/name/rank_<i>/m_ts_<i>.pt.trace.json.gz holding files[i]."""
    top = os.path.join(root, name)
    for i, (_, data) in enumerate(files):
        os.makedirs(os.path.join(top, "rank_%d" % i))
        with open(os.path.join(top, "rank_%d" % i,
                               "m_ts_%d.pt.trace.json.gz" % i), "wb") as f:
            f.write(data)
    return top


def slice_url(cid, rank, start, end, extra=""):
    return "/captures/%d/ranks/%d/slice?start_ns=%d&end_ns=%d%s" % (
        cid, rank, start, end, extra)


def get_slice(d, cid, rank, start, end, extra=""):
    url = slice_url(cid, rank, start, end, extra)
    code, hdrs, body = raw(d, "GET", url)
    check_eq(code, 200, "GET %s: %r" % (url, body[:300]))
    check_eq(hdrs.get("content-type"), "application/json", url + ": type")
    check(hdrs.get("content-disposition", "").startswith("attachment"),
          url + ": disposition")
    return ref_slice.load_slice(body), body


def ns(v, scale):
    return int(Decimal(v).scaleb(scale))


class Rank:
    """One rank of the import: its file, the reference's view, the
    store's figures."""

    def __init__(self, d, cid, summary, path):
        self.d, self.cid, self.rank = d, cid, summary["rank"]
        self.path, self.t0, self.span = path, summary["t0_ns"], \
            summary["span_ns"]
        self.ref = ref_slice.Trace(path)
        doc = self.ref.doc
        events = ref_slice.events_of(doc)
        self.scale = 3 if ref_index.detect_format(doc, events) == \
            "kineto" else 0
        pids = [e["pid"] for e in events if isinstance(e, dict) and
                isinstance(e.get("pid"), int) and
                not isinstance(e.get("pid"), bool)]
        self.pid = max(pids) + 1 if pids else 1
        check_eq(self.t0, self.ref.t0_ns, "rank %d t0_ns" % self.rank)

    def table(self, route):
        code, body = self.d.get("/captures/%d/%s?rank=%d" % (
            self.cid, route, self.rank))
        check_eq(code, 200, route)
        return body["rows"]

    def tracks(self, rest, what):
        """traced's events after the kept ones: names first, then
        findings (tid, name, start_ns, end_ns, args), trace ns."""
        for e in rest:
            check_eq((e.get("pid"), e.get("cat", "traced")),
                     (self.pid, "traced"), what + ": a track event")
        xs = [e for e in rest if e["ph"] == "X"]
        if not xs:
            check_eq(rest, [], what + ": names without findings")
            return []
        check_eq([(e["ph"], e["name"], e["tid"]) for e in rest[:3]],
                 [("M", "process_name", 0), ("M", "thread_name", 1),
                  ("M", "thread_name", 2)], what + ": traced's names")
        check_eq((rest[0]["args"]["name"], len(rest)), ("traced", len(xs) + 3),
                 what + ": traced's process, names first")
        out = []
        for e in xs:
            b, dur = ns(e["ts"], self.scale), ns(e["dur"], self.scale)
            key = "step_ns" if e["tid"] == 1 else "idle_ns"
            check_eq(dur, e["args"][key], what + ": dur is " + key)
            out.append((e["tid"], e["name"], b, b + dur, e["args"]))
        return out

    def check(self, start, end, what, extra=""):
        """The slice of [start, end) against the reference: (its document,
        its bytes, its findings, how many events it kept)."""
        doc, body = get_slice(self.d, self.cid, self.rank, start, end, extra)
        ref = self.ref.window(start, end)
        evs, n = doc["traceEvents"], len(ref["events"])
        check_eq(evs[:n], ref["events"], what + ": events")
        check_eq([(k, v) for k, v in doc.items() if k not in (
            "traceEvents", "traced_slice")], ref["members"], what +
            ": members")
        check_eq(list(doc)[-1], "traced_slice", what + ": last member")
        st = doc["traced_slice"]
        check_eq((st["t0_ns"], st["start_ns"], st["end_ns"], st["events_read"],
                  st["events_kept"], st["metadata_events"],
                  st["events_dropped"], st["members_dropped"]),
                 (self.t0, start, end, ref["read"], n, ref["metadata"], 0, 0),
                 what + ": traced_slice")
        found = self.tracks(evs[n:], what)
        if "findings=false" in extra:
            check_eq((found, st["findings"]), ([], None), what + ": none")
        else:
            check_eq(st["findings"], {
                "steps": sum(f[0] == 1 for f in found),
                "idle": sum(f[0] == 2 for f in found)}, what + ": counted")
        return doc, body, found, n

    def check_whole(self):
        """The whole span: events byte for byte; the tracks sum to the
        store's idle by cause and count its steps."""
        _, body, found, n = self.check(0, self.span + 1, "rank %d whole" %
                                       self.rank)
        texts = set(ref_slice.event_texts(ref_slice.plain_text(self.path)))
        kept = ref_slice.event_texts(body.decode("utf-8"))
        for t in kept[:n]:
            check(t in texts, "rank %d: %r is not byte for byte" % (
                self.rank, t[:200]))
        by_cause = {}
        for tid, name, b, e, args in found:
            if tid == 2:
                by_cause[name] = by_cause.get(name, 0) + args["idle_ns"] - \
                    args["between_steps_ns"]
                by_cause["between_steps"] = by_cause.get(
                    "between_steps", 0) + args["between_steps_ns"]
        check_eq({k: v for k, v in by_cause.items() if v},
                 {r["cause"]: r["idle_ns"] for r in self.table("idle")},
                 "rank %d: idle tracks by cause" % self.rank)
        check_eq(sum(f[0] == 1 for f in found),
                 sum(r["count"] for r in self.table("steps")),
                 "rank %d: step tracks" % self.rank)
        return found

    def check_windows(self, whole, rnd):
        """Phases, outlier steps and random windows: their tracks are the
        whole span's that overlap."""
        wins = [(p["start_ns"], max(p["end_ns"], p["start_ns"] + 1),
                 "phase %d" % p["index"]) for p in self.table("phases")[:4]]
        outliers = self.table("steps/outliers")
        wins += [(o["start_ns"], o["start_ns"] + max(o["dur_ns"], 1),
                  "%s step %s %d" % (o["kind"], o["role"], o["index"]))
                 for o in outliers[:4]]
        for _ in range(2):
            a = rnd.randrange(0, self.span + 1)
            wins.append((a, a + rnd.randrange(1, self.span // 20 + 2),
                         "random"))
        wins.append((self.span + 10, self.span + 20, "after the end"))
        for start, end, what in wins:
            what = "rank %d %s [%d, %d)" % (self.rank, what, start, end)
            found = self.check(start, end, what)[2]
            lo, hi = self.t0 + start, self.t0 + end
            check_eq(found, [f for f in whole if f[2] < hi and f[3] > lo],
                     what + ": tracks")
        for o in outliers[:4]:
            found = self.check(o["start_ns"], o["start_ns"] +
                               max(o["dur_ns"], 1), "outlier")[2]
            check((1, o["kind"], self.t0 + o["start_ns"], self.t0 +
                   o["start_ns"] + o["dur_ns"], {"label": o["label"],
                                                 "step_ns": o["dur_ns"]})
                  in found, "rank %d: outlier %r not in its slice" % (
                      self.rank, o))
        self.check(0, self.span + 1, "rank %d no findings" % self.rank,
                   "&findings=false")


def check_points(d, r):
    """The rank's slices were read from its access points (the windows
    above were checked against the reference that way); without its
    points file a slice reads the whole file and is the same."""
    pts = os.path.join(d.conf["trace_root"], "logs", str(r.cid), "points",
                       "rank_%d.points" % r.rank)
    check(os.path.getsize(pts) > 0, "rank %d: no points file" % r.rank)
    check(re.search(r"slice of \S+m_ts_%d\.pt\.trace\.json\.gz: \d+ bytes of "
                    r"text read in \d+ of \d+ pieces" % r.rank,
                    d.log_text()), "rank %d: no slice from points" % r.rank)
    mid = r.span // 2
    windows = [(mid, mid + 1000000), (0, r.span + 1)]
    with_points = [get_slice(d, r.cid, r.rank, a, b)[1] for a, b in windows]
    os.rename(pts, pts + ".away")
    try:
        for (a, b), want in zip(windows, with_points):
            check_eq(get_slice(d, r.cid, r.rank, a, b)[1], want,
                     "rank %d [%d, %d): from points and whole" % (r.rank,
                                                                   a, b))
    finally:
        os.rename(pts + ".away", pts)


def check_quirks(d, cid, rank):
    """The quirky rank: strict JSON out, mended where it had to be."""
    for (start, end), (names, mended) in QUIRK_WINDOWS.items():
        doc, _ = get_slice(d, cid, rank, start, end, "&findings=false")
        check_eq([e["name"] for e in doc["traceEvents"]], names,
                 "quirks [%d, %d)" % (start, end))
        check_eq((doc["traced_slice"]["events_mended"],
                  doc["traceName"]), (mended, "quirks"), "quirks mended")


def check_refusals(d, cid, top):
    """Bad requests and files that may not be served: JSON errors."""
    base = "/captures/%d/ranks/0/slice" % cid
    for q, field in (("", "start_ns"), ("?start_ns=5", "end_ns"),
                     ("?end_ns=5", "start_ns"),
                     ("?start_ns=5&end_ns=5", "end_ns"),
                     ("?start_ns=-1&end_ns=5", "start_ns"),
                     ("?start_ns=x&end_ns=5", "start_ns"),
                     ("?start_ns=1&end_ns=5&findings=yes", "findings"),
                     ("?start_ns=1&end_ns=5&bogus=1", "bogus"),
                     ("?start_ns=1&start_ns=2&end_ns=5", "start_ns")):
        check_error(d.get(base + q), 400, field, "slice" + q)
    check_error(d.get("/captures/%d/ranks/99/slice?start_ns=0&end_ns=1" %
                      cid), 404, "rank", "unknown rank")
    check_error(d.get("/captures/%d/ranks/x/slice?start_ns=0&end_ns=1" %
                      cid), 400, "rank", "bad rank")
    check_error(d.get("/captures/999999/ranks/0/slice?start_ns=0&end_ns=1"),
                404, "id", "unknown capture")
    path = os.path.join(top, "rank_0", "m_ts_0.pt.trace.json.gz")
    with open(path, "rb") as f:
        data = f.read()
    url = base + "?start_ns=0&end_ns=1000"
    with open(path, "ab") as f:
        f.write(b"\0")
    check_error(d.get(url), 409, "rank", "a trace that changed")
    os.unlink(path)
    check_error(d.get(url), 404, "rank", "a trace that is gone")
    os.symlink(os.path.join(TRACES_DIR, RANKS_A[0]), path)
    check_error(d.get(url), 403, "rank", "a trace swapped for a link")
    os.unlink(path)
    with open(path, "wb") as f:
        f.write(data)
    check_eq(get_slice(d, cid, 0, 0, 1000)[0]["traced_slice"]["start_ns"], 0,
             "served again once restored")


def case_slice():
    root, d = import_daemon()
    rnd = random.Random(10)
    with d:
        files = rank_files(root)
        top = lay_out_files(root, "s", files)
        cap = import_done(d, top)
        by_rank = {r["rank"]: r for r in cap["ranks"]}
        check_eq(sorted(by_rank), list(range(len(files))), "ranks indexed")
        for i, (name, _) in enumerate(files):
            path = os.path.join(top, "rank_%d" % i,
                                "m_ts_%d.pt.trace.json.gz" % i)
            if name == "quirks":
                check_quirks(d, cap["id"], i)
                continue
            r = Rank(d, cap["id"], by_rank[i], path)
            r.check_windows(r.check_whole(), rnd)
            check_points(d, r)
        check_refusals(d, cap["id"], top)
    shutil.rmtree(root)


# ---- slices: bounds ----

def open_slice(d, url, wait_s=0):
    """A connection that asks for url and reads only its status line,
    asking again for up to wait_s seconds while it is refused 429 (a
    slot a closed client held is freed once its producer sees the close:
    a moment on a busy machine)."""
    deadline = time.time() + wait_s
    while True:
        s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (
            url, d.port)).encode())
        head = b""
        while b"\r\n" not in head:
            chunk = s.recv(1)
            check(chunk, "connection closed before the status line")
            head += chunk
        if not head.startswith(b"HTTP/1.1 429") or time.time() > deadline:
            break
        s.close()
        time.sleep(0.2)
    check(head.startswith(b"HTTP/1.1 200"), "status %r" % head)
    return s


def slices_full(d, root, what):
    """The large trace imported into d under root, and two slices of all of
    it asked for by clients that read nothing (their producers fill the
    ring and the sockets, and wait): a third is refused (what names it).
    The capture, the whole slice's URL and the two connections."""
    cap = import_done(d, lay_out(root, "big", [
        "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz"]))
    whole = slice_url(cap["id"], 0, 0, cap["ranks"][0]["span_ns"] + 1)
    held = [open_slice(d, whole), open_slice(d, whole)]
    check_error(d.get(whole), 429, "slice", what)
    return cap, whole, held


def served_again(d, url, what):
    """Asks for url until it is answered 200 (a slot freed), for at most
    60 s."""
    deadline = time.time() + 60
    while time.time() < deadline:
        code, _, _ = raw(d, "GET", url)
        if code == 200:
            break
        time.sleep(0.2)
    check_eq(code, 200, what)


def case_slice_bounds():
    root, d = import_daemon()
    with d:
        cap, whole, held = slices_full(d, root, "a third slice")
        for s in held:
            s.close()
        served_again(d, slice_url(cap["id"], 0, 0, 1000),
                     "a slice once the others went")
        # An all-ranks slice is one slice: it holds one of the 2 slots
        # (the second of the two closed before may still be freeing).
        ranks = ranks_url(cap["id"], 0, cap["ranks"][0]["span_ns"] + 1)
        held = [open_slice(d, ranks, 60), open_slice(d, whole, 60)]
        check_error(d.get(ranks), 429, "slice", "a third slice (all ranks)")
        check_error(d.get(whole), 429, "slice", "a third slice (a rank)")
        for s in held:
            s.close()
        served_again(d, ranks_url(cap["id"], 0, 1000),
                     "an all-ranks slice once the others went")
        # A slice in flight when the daemon stops: it ends at once.
        held = open_slice(d, whole)
        t = time.time()
        check_eq(d.stop(timeout=30), 0, "exit status with a slice in flight")
        check(time.time() - t < 10, "stopped in %.1f s" % (time.time() - t))
        held.close()
    shutil.rmtree(root)


def read_for(s, seconds, rate):
    """Reads s at about rate bytes a second for at most seconds; the bytes
    read and whether the server ended the answer (EOF, or reset)."""
    got, end = 0, time.time() + seconds
    s.settimeout(1)
    while time.time() < end:
        t = time.time()
        try:
            chunk = s.recv(max(1, int(rate / 20)))
        except socket.timeout:
            continue
        except ConnectionError:
            return got, True
        if not chunk:
            return got, True
        got += len(chunk)
        time.sleep(max(0.0, 0.05 - (time.time() - t)))
    return got, False


def case_slice_slow():
    root = tempfile.mkdtemp(prefix="traced-api-slow-")
    d = Daemon(conf={"import_roots": root, "slice_min_bytes_per_s": "65536",
                     "slice_window_s": "3", "slice_timeout_s": "8"})
    with d:
        cap, whole, slow = slices_full(d, root, "a third slice at once")
        t0, served = time.time(), None
        while time.time() - t0 < 30 and served is None:
            for s in slow:
                read_for(s, 0.25, 2048)   # 2 KiB/s: below the floor
            code, _, body = raw(d, "GET", slice_url(cap["id"], 0, 0, 1000))
            if code == 200:
                served = time.time() - t0
        check(served is not None, "no slice served beside two slow readers")
        print("a third slice served %.1f s after two slow readers began" %
              served)
        for s in slow:
            _, ended = read_for(s, 10, 1 << 20)
            check(ended, "a slow reader's slice never ended")
            s.close()
        # Fast enough (256 KiB/s, the floor is 64), but longer than 8 s:
        # ended then, by the timeout and not by the floor (what is in
        # flight is bounded, so what traced hands on follows the client);
        # what was sent before is still read, then the end.
        floors = d.log_text().count("below slice_min_bytes_per_s")
        s = open_slice(d, whole)
        got, ended = read_for(s, 12, 256 << 10)
        rest = 0
        if not ended:
            rest, ended = read_for(s, 30, 64 << 20)
        s.close()
        check(ended, "the answer never ended")
        log = d.log_text()
        if sanitized(d.proc.pid) and \
                log.count("below slice_min_bytes_per_s") != floors:
            # Under ASan on a loaded machine the client's reads can stall
            # a whole window, and the floor ends the slice first.
            print("note: ASan build: ended by the floor, not the timeout")
        else:
            check("slice_timeout_s" in log, log)
            check_eq(log.count("below slice_min_bytes_per_s"), floors,
                     "a client reading 256 KiB/s is above the floor")
        check(got + rest < cap["ranks"][0]["json_bytes"] // 2,
              "%d bytes of %d sent" % (got + rest,
                                       cap["ranks"][0]["json_bytes"]))
    shutil.rmtree(root)


# ---- all ranks in one timeline ----

# Two traces recorded on different days, each on two ranks: ranks 0 and 3
# share a clock (and every pid), ranks 1 and 2 another, far later one.
RANKS_TIMELINE = ["tracelens__vllm_decode_full_graph_execution.json.gz",
                  "tracelens__mi210_gpu_only_trace.json.gz",
                  "tracelens__mi210_gpu_only_trace.json.gz",
                  "tracelens__vllm_decode_full_graph_execution.json.gz"]
PID_STRIDE = 1000  # index/slice/slice_ranks.c: a rank's pids, place * 1000 + n
DOT = "\u00b7"


def ranks_url(cid, start, end, extra=""):
    return "/captures/%d/slice?start_ns=%d&end_ns=%d%s" % (cid, start, end,
                                                           extra)


def rank_part(d, cid, r, start, end, ref, extra):
    """The events rank r's own slice of the same instants holds: asked of
    the daemon when its window starts at its t0 or later, else (a window
    before its first event: no findings) the reference's."""
    shift = ref.t0_ns - r["t0_ns"]
    if start + shift >= 0:
        doc, _ = get_slice(d, cid, r["rank"], start + shift, end + shift,
                           extra)
        return doc["traceEvents"]
    return ref.window(start + shift, end + shift)["events"]


def is_meta(e, name):
    return e.get("ph") == "M" and e.get("name") == name


def flow_id(e, place, places):
    """A flow event's id in the merged timeline (index/slice/slice_ranks.c):
    id x ranks + place when a plain integer that stays within 2^53."""
    i = e.get("id")
    if e.get("ph") not in ("s", "t", "f") or type(i) is not int or i < 0 \
            or len(str(i)) > 16 or i * places + place > 2 ** 53:
        return i
    return i * places + place


def check_rank_part(r, place, places, own, got, what):
    """got (the merged events in rank r's pids, in order) is own with
    only pid remapped (a process name prefixed, a flow's id made the
    rank's), then a name for each process that had none and each one's
    sort index."""
    prefix = "rank %d %s " % (r["rank"], DOT)
    check(len(got) >= len(own), "%s: %d events of %d" % (what, len(got),
                                                         len(own)))
    pids, named = {}, set()
    for i, (a, b) in enumerate(zip(own, got)):
        key = json.dumps(a.get("pid"), default=str)
        new = pids.setdefault(key, b.get("pid"))
        check_eq(b.get("pid"), new, "%s: event %d's pid" % (what, i))
        want = dict(a, pid=new)
        if "id" in a:
            want["id"] = flow_id(a, place, places)
        if is_meta(a, "process_name"):
            want["args"] = dict(a["args"], name=prefix + a["args"]["name"])
            named.add(new)
        check_eq(b, want, "%s: event %d" % (what, i))
    check_eq(len(set(pids.values())), len(pids), what + ": pids one-to-one")
    for p in pids.values():
        check(isinstance(p, int) and p // PID_STRIDE == place,
              "%s: pid %r not the rank's" % (what, p))
    rest = got[len(own):]
    for e in rest:
        check(is_meta(e, "process_name") or is_meta(e, "process_sort_index"),
              "%s: after the part %r" % (what, e))
    sort = {e["pid"]: e["args"]["sort_index"] for e in rest
            if is_meta(e, "process_sort_index")}
    check_eq(sort, {p: p for p in pids.values()}, what + ": sort indices")
    for e in rest:
        if is_meta(e, "process_name"):
            check(e["pid"] not in named and
                  e["args"]["name"].startswith(prefix + "pid "),
                  "%s: %r" % (what, e))
            named.add(e["pid"])
    check_eq(named, set(pids.values()), what + ": every process named")
    return len(pids)


def check_timeline(d, cap, paths, start, end, extra=""):
    """The all-ranks slice of [start, end) against each rank's own."""
    cid = cap["id"]
    code, hdrs, body = raw(d, "GET", ranks_url(cid, start, end, extra))
    what = "all ranks [%d, %d)%s" % (start, end, extra)
    check_eq(code, 200, "%s: %r" % (what, body[:300]))
    check_eq(hdrs.get("content-type"), "application/json", what + ": type")
    check(hdrs.get("content-disposition", "").startswith("attachment"),
          what + ": disposition")
    doc = ref_slice.load_slice(body)
    check_eq(list(doc), ["traceEvents", "traced_slice"], what + ": members")
    ranks = sorted(cap["ranks"], key=lambda r: r["rank"])
    t0 = min(r["t0_ns"] for r in ranks)
    st = doc["traced_slice"]
    check_eq((st["t0_ns"], st["start_ns"], st["end_ns"]), (t0, start, end),
             what + ": window")
    check_eq([x["rank"] for x in st["ranks"]], [r["rank"] for r in ranks],
             what + ": ranks")
    places = [e["pid"] // PID_STRIDE for e in doc["traceEvents"]]
    check_eq(places, sorted(places), what + ": ranks one after the other")
    flows = {}
    for e in doc["traceEvents"]:
        if e.get("ph") in ("s", "t", "f"):
            flows.setdefault(e["id"], set()).add(e["pid"] // PID_STRIDE)
    check_eq([i for i, p in flows.items() if len(p) > 1], [],
             what + ": flow ids shared by ranks")
    for place, r in enumerate(ranks):
        ref = ref_slice.Trace(paths[r["rank"]], t0_ns=t0)
        own = rank_part(d, cid, r, start, end, ref, extra)
        got = [e for e in doc["traceEvents"]
               if e["pid"] // PID_STRIDE == place]
        n = check_rank_part(r, place, len(ranks), own, got, "%s rank %d" % (
            what, r["rank"]))
        # events_kept counts the trace's, not traced's tracks.
        tracks = {e["pid"] for e in own if is_meta(e, "process_name") and
                  e["args"]["name"] == "traced"}
        check_eq((st["ranks"][place]["events_kept"],
                  st["ranks"][place]["processes"]),
                 (sum(e.get("pid") not in tracks for e in own), n),
                 what + ": rank %d's counts" % r["rank"])
    return doc


def case_slice_ranks():
    root, d = import_daemon()
    rnd = random.Random(21)
    with d:
        top = lay_out(root, "t", RANKS_TIMELINE)
        cap = import_done(d, top)
        paths = {i: os.path.join(top, "rank_%d" % i,
                                 "model_ts_%d.pt.trace.json.gz" % i)
                 for i in range(len(RANKS_TIMELINE))}
        by_rank = {r["rank"]: r for r in cap["ranks"]}
        t0 = min(r["t0_ns"] for r in cap["ranks"])
        late = by_rank[1]["t0_ns"] - t0
        early = by_rank[0]["span_ns"] + 1
        # Ranks 0 and 3 whole, 1 and 2 before their first event (names
        # only); then the reverse; then windows at random in each.
        check_timeline(d, cap, paths, 0, early, "&findings=false")
        doc = check_timeline(d, cap, paths, 0, early)
        check(any(e.get("cat") == "traced" for e in doc["traceEvents"]),
              "traced's tracks in the merged timeline")
        check_timeline(d, cap, paths, late, late + by_rank[1]["span_ns"] + 1)
        for base, span in ((0, early), (late, by_rank[1]["span_ns"])):
            for _ in range(3):
                a = base + rnd.randrange(span)
                check_timeline(d, cap, paths, a,
                               a + 1 + rnd.randrange(span // 4))
        base = "/captures/%d/slice" % cap["id"]
        for q, field in (("", "start_ns"), ("?start_ns=5&end_ns=5", "end_ns"),
                         ("?start_ns=0&end_ns=1&rank=0", "rank"),
                         ("?start_ns=-1&end_ns=1", "start_ns")):
            check_error(d.get(base + q), 400, field, "slice" + q)
        check_error(d.get("/captures/999999/slice?start_ns=0&end_ns=1"), 404,
                    "id", "unknown capture")
        # A rank's file changed since it was indexed: refused, naming it.
        with open(paths[2], "ab") as f:
            f.write(b"\0")
        check_error(d.get(base + "?start_ns=0&end_ns=1"), 409, "rank",
                    "a changed rank")
    shutil.rmtree(root)


CASES = {"csv": case_csv, "slice": case_slice,
         "slice_ranks": case_slice_ranks,
         "slice_bounds": case_slice_bounds, "slice_slow": case_slice_slow}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: test_api_open.py {%s}" % "|".join(CASES))
    CASES[sys.argv[1]]()
    print("ok")
