#!/usr/bin/env python3
"""What a trace can make grow, and a store that cannot be written, against
a running daemon over real sockets (docs/SECURITY.md).

Usage: test_bounds.py CASE, CASE one of
  names     a 54 KB gzip of 50 kernel names of 1 MiB each, then 200: each
            import is done, adds under 50 MB to the database and keeps the
            daemon under 150 MB (before: +862 MB of database, +655 MB of
            WAL, a 680 MB daemon); every name is its own row, cut to 8 KiB
            with a hash of the whole, counted and warned. Names holding a
            NUL (two alike up to it), a newline or DEL are escaped, each its
            own row, instead of failing the rank or being cut at the NUL.
  caps      max_rank_db_bytes, max_rank_inflated_bytes (a whitespace bomb)
            and max_rank_spill_bytes (an event bomb) each refuse their rank
            with an error naming the setting, quickly, and the daemon goes
            on serving and indexing; spill files live in the state folder,
            never /tmp, and `traced index` spills to $TMPDIR.
  spill_disk  with the state folder on a small disk, a rank whose spills
            would fill it is refused before the disk is full, and the store
            still takes writes (root: a tmpfs; skipped otherwise).
  readonly  a restart on an immutable database file: /healthz degraded
            with the reason, writes 507 naming it (not 500), reads served;
            writable again, writes resume without a restart. The same when
            the files turn immutable under a running daemon. A capture that
            was running when traced was killed and restarted on a read-only
            store is shown interrupted at once (state_stored false, named by
            /healthz) and written so once the store takes writes, never
            shown running (root and chattr; skipped otherwise).
  times     timestamps at the edge of int64 (docs/TRACE_FORMATS.md: 0 <=
            ts < 2^62 ns, 0 <= dur < 2^50 ns): the two 200-byte traces of
            the report (ts 9223372036854775.807, dur 1e20) skip that event
            and count it, the rank indexed with a span of the rest (before:
            span_ns -2^63); two ranks of 5,000 steps of 13-day kernels,
            copies of INT64_MAX bytes and events at 0 and 2^62-1 ns: done,
            every table answers, the sums held at INT64_MAX (never
            negative), the daemon under 200 MB (the timeline once asked
            for 32 GiB).
  csv       kernel names that begin with =, +, - or @ come out of
            ?format=csv quoted behind a single quote (OWASP's advice
            against CSV injection); integers and reals, negative deltas
            included, stay numbers.
"""
import csv
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (SKIPPED, SRC_DIR, TRACED_BIN, TRACES_DIR,  # noqa: E402
                        Daemon,
                        check, check_eq, db_bytes, sanitized, small_disk,
                        vm_hwm, wait_for)

MB = 1 << 20
SMALL_TRACE = os.path.join(TRACES_DIR, "tracelens__mi210_gpu_only_trace.json.gz")


def kernel(name, i, dur_us="5.000"):
    return ('{"ph": "X", "cat": "kernel", "name": %s, "pid": 2, "tid": 0, '
            '"ts": %d.000, "dur": %s}' % (json.dumps(name), 1000 + 10 * i,
                                           dur_us))


def write_trace(path, events, level=6):
    with gzip.open(path, "wt", compresslevel=level) as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        f.write(",\n".join(events))
        f.write("]}\n")


def names_bomb(path, n):
    """n kernel names of 1 MiB each (as the attack: 54 KB of gzip for 50);
    returns the names' first 16 bytes."""
    heads = ["k%04d_" % i + "a" * 10 for i in range(n)]
    write_trace(path, (kernel(h + "a" * (MB - len(h)), i)
                       for i, h in enumerate(heads)), level=9)
    return heads


def imported(d, path, status="done", timeout=300):
    code, cap = d.post("/imports", {"path": path})
    check_eq(code, 202, "import %s: %s" % (path, cap))
    cap = d.wait_status(cap["id"], timeout=timeout)
    check_eq(cap["status"], status, "import %s: %s" % (path, cap))
    return cap


def kernel_rows(d, cid):
    code, t = d.get("/captures/%d/kernels?rank=0&limit=1000" % cid)
    check_eq(code, 200, "kernels")
    return t["rows"]


def warning(cap, code):
    for w in cap["ranks"][0]["warnings"]:
        if w["code"] == code:
            return w["message"]
    raise AssertionError("no warning %s in %s" % (code, cap["ranks"][0]))


def check_cut_names(d, cap, heads):
    rows = kernel_rows(d, cap["id"])
    check_eq(len(rows), len(heads), "one row a name")
    names = sorted(r["name"] for r in rows)
    check_eq(len(set(names)), len(heads), "distinct names stay distinct")
    for name, head in zip(names, sorted(heads)):
        check(name.startswith(head), "the name keeps its first bytes")
        check(re.search(r"\.\.\.#[0-9a-f]{16}$", name), "hash suffix")
        check_eq(len(name.encode()), 8192, "cut to 8 KiB")
    check(all(r["count"] == 1 and r["total_ns"] == 5000 for r in rows),
          "figures")
    check("%d kernel names" % len(heads) in warning(cap, "names_cut"),
          "names_cut counts them")


def case_names():
    with tempfile.TemporaryDirectory(prefix="traced-names-") as root:
        ctrl = os.path.join(root, "ctrl.json.gz")
        # The reader decodes \u0000; two names equal up to their NUL failed
        # the rank on the names table's UNIQUE index.
        write_trace(ctrl, [kernel("k\u0000one", 0), kernel("k\u0000two", 1),
                           kernel("line\nbreak", 2), kernel("del\u007f", 3),
                           kernel("k\u0000one", 4)])
        with Daemon(conf={"import_roots": root}) as d:
            cap = imported(d, ctrl)
            rows = {r["name"]: r["count"] for r in kernel_rows(d, cap["id"])}
            check_eq(rows, {"k\\u0000one": 2, "k\\u0000two": 1,
                            "line\\nbreak": 1, "del\\u007f": 1},
                     "escaped names")
            check("4 kernel names" in warning(cap, "names_escaped"),
                  "names_escaped counts them")
            for n in (50, 200):
                path = os.path.join(root, "names%d.json.gz" % n)
                heads = names_bomb(path, n)
                before = db_bytes(d.conf["db"])
                t0 = time.time()
                cap = imported(d, path)
                took = time.time() - t0
                after = db_bytes(d.conf["db"])
                grown = after[0] - before[0]
                hwm = vm_hwm(d.proc.pid)
                print("%d names of 1 MiB (%.0f KB gzip): %.1f s, database "
                      "+%.1f MB, WAL %.1f MB, daemon VmHWM %.1f MB" % (
                          n, os.path.getsize(path) / 1e3, took, grown / 1e6,
                          after[1] / 1e6, hwm / 1e6))
                check(grown < 50 * 1000 * 1000, "database grew %d" % grown)
                check(after[1] < 80 * 1000 * 1000, "WAL %d" % after[1])
                if not sanitized(d.proc.pid):
                    check(hwm < 150 * 1000 * 1000, "VmHWM %d" % hwm)
                check_cut_names(d, cap, heads)
    print("ok")


# ---- caps ----

def whitespace_bomb(path, json_bytes):
    """A trace whose traceEvents hold json_bytes of blanks: a few hundred
    KB of gzip."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    blank = b" " * MB
    with open(path, "wb") as f:
        f.write(z.compress(b'{"traceEvents": ['))
        for _ in range(json_bytes // MB):
            f.write(z.compress(blank))
        f.write(z.compress(b"]}"))
        f.write(z.flush())


def event_bomb(path, n):
    """n kernels of a few names (32 bytes of time record each)."""
    write_trace(path, (kernel("k%d" % (i % 7), i, "1.000") for i in range(n)),
                level=1)


def failed_with(d, path, setting, within, then=SMALL_TRACE):
    """The import of path fails within `within` s naming setting; the
    daemon then still answers and indexes `then`."""
    t0 = time.time()
    cap = imported(d, path, status="failed", timeout=within + 60)
    took = time.time() - t0
    msg = cap["error"]["message"]
    print("%s refused in %.1f s: %s" % (setting, took, msg[:300]))
    check(setting in msg, "the error names %s: %s" % (setting, msg))
    check(took < within, "refused in %.1f s" % took)
    check_eq(d.get("/healthz")[1]["status"], "ok", "daemon unaffected")
    imported(d, then)


def spill_fds(pid):
    """The files without a name the daemon holds open (spills)."""
    out = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.endswith("(deleted)"):
            out.add(os.path.dirname(target))
    return out


def check_spill_place(d, path):
    """Spills go to <state folder>/spill while the rank is indexed."""
    seen = set()
    code, cap = d.post("/imports", {"path": path})
    check_eq(code, 202, "import")
    while d.get("/captures/%d" % cap["id"])[1]["status"] not in (
            "done", "failed"):
        seen |= spill_fds(d.proc.pid)
        time.sleep(0.005)
    want = os.path.join(os.path.dirname(d.conf["db"]), "spill")
    print("spill folders seen: %s" % sorted(seen))
    check_eq(seen, {want}, "spill folders")


def case_caps():
    with tempfile.TemporaryDirectory(prefix="traced-caps-") as root:
        names = os.path.join(root, "names.json.gz")
        write_trace(names, (kernel("kernel_%04d_" % i + "x" * 2000, i)
                            for i in range(600)))
        blanks = os.path.join(root, "blanks.json.gz")
        whitespace_bomb(blanks, 256 * MB)
        events = os.path.join(root, "events.json.gz")
        event_bomb(events, 1_000_000)
        conf = {"import_roots": root + ":" + TRACES_DIR,
                "max_rank_db_bytes": "1M", "max_rank_inflated_bytes": "32M",
                "max_rank_spill_bytes": "4M"}
        with Daemon(conf=conf) as d:
            before = db_bytes(d.conf["db"])[0]
            failed_with(d, names, "max_rank_db_bytes", 30)
            failed_with(d, blanks, "max_rank_inflated_bytes", 10)
            failed_with(d, events, "max_rank_spill_bytes", 30)
            print("database after the refusals: +%.1f MB" % (
                (db_bytes(d.conf["db"])[0] - before) / 1e6))
        with Daemon(conf={"import_roots": root}) as d:
            check_spill_place(d, events)
        # The command line spills to $TMPDIR: a folder that is not there
        # fails the file, naming it.
        gone = os.path.join(root, "no-such-folder")
        p = subprocess.run([TRACED_BIN, "index", events],
                           env=dict(os.environ, TMPDIR=gone),
                           capture_output=True, text=True, timeout=120)
        check_eq(p.returncode, 1, "traced index with TMPDIR missing")
        check(gone in p.stderr, p.stderr)
    print("ok")


def case_spill_disk():
    with small_disk("40m") as disk, \
            tempfile.TemporaryDirectory(prefix="traced-spill-") as root:
        events = os.path.join(root, "events.json.gz")
        event_bomb(events, 1_500_000)  # 48 MB of time records
        small = os.path.join(root, "small.json.gz")
        write_trace(small, [kernel("k", 0)])
        conf = {"import_roots": root, "db": os.path.join(disk, "traced.db"),
                "trace_root": os.path.join(disk, "traces")}
        with Daemon(conf=conf) as d:
            # Refused before the disk is full: the store, on the same disk,
            # takes the next import.
            failed_with(d, events, "would leave its disk with less than", 60,
                        then=small)
    print("ok")


# ---- a read-only store ----

def chattr(flag, paths):
    return subprocess.run(["chattr", flag] + paths,
                          stderr=subprocess.DEVNULL).returncode == 0


def db_files(d):
    """The database and its WAL. Not the -shm index, which SQLite maps and
    must be able to grow (an immutable one makes SQLite itself fault)."""
    db = d.conf["db"]
    return [db + s for s in ("", "-wal") if os.path.exists(db + s)]


def check_refused(d, root):
    """Writes answer 507 with the reason, reads 200, /healthz degraded."""
    code, body = d.post("/imports", {"path": root})
    check_eq(code, 507, "a write: %s" % body)
    check("read-only" in body["error"]["message"], body)
    code, health = d.get("/healthz")
    check_eq((code, health["status"]), (200, "degraded"), "healthz")
    check("read-only" in health["reason"], health)
    check_eq(d.get("/captures")[0], 200, "reads")
    return health["reason"]


def readonly_restart_and_live():
    """An immutable file at a restart, then under the running daemon."""
    d = Daemon(conf={"import_roots": TRACES_DIR}, keep=True)
    with d:
        imported(d, SMALL_TRACE)
    files = db_files(d)
    if not chattr("+i", files):
        print("skipped: this file system has no immutable flag")
        sys.exit(SKIPPED)
    try:
        d.start()
        print("restart on an immutable file: %s" % check_refused(
            d, TRACES_DIR))
    finally:
        chattr("-i", files)
    imported(d, SMALL_TRACE)  # writable again: no restart needed
    check_eq(d.get("/healthz")[1]["status"], "ok", "healthz after")
    files = db_files(d)
    chattr("+i", files)
    try:
        print("turned immutable while running: %s" % check_refused(
            d, TRACES_DIR))
    finally:
        chattr("-i", files)
    imported(d, SMALL_TRACE)
    check_eq(d.stop(), 0, "exit status")
    shutil.rmtree(d.dir, ignore_errors=True)


def stored_or_none(cap):
    """The capture once its state is the database's (no state_stored)."""
    return cap if "state_stored" not in cap else None


def readonly_recovery():
    """kill -9 during a capture, a restart on a read-only store: the
    capture is written interrupted once the store takes writes."""
    from test_capture_lib import Rig  # the simulator's rig
    rig = Rig()
    with rig:
        cid = rig.capture(env={"ATOM_SIM_FAULTS": "never_ready"})
        rig.wait_phase(cid, "waiting_ready")
        rig.kill9()
        files = db_files(rig.d)[:1]
        chattr("+i", files)
        try:
            rig.restart()
            health = rig.d.get("/healthz")[1]
            check_eq(health["status"], "degraded", "healthz")
            check("capture %d (interrupted)" % cid in health["reason"] and
                  "not yet stored" in health["reason"], health)
            cap = rig.get(cid)
            check_eq((cap["status"], cap["phase"], cap.get("state_stored")),
                     ("interrupted", "waiting_ready", False),
                     "shown interrupted, not yet stored")
            listed = [c for c in rig.d.get("/captures")[1]["captures"]
                      if c["id"] == cid]
            check_eq(listed[0]["status"], "interrupted", "listed")
        finally:
            chattr("-i", files)
        cap = wait_for(lambda: stored_or_none(rig.get(cid)), 20,
                       "the recovered capture's final state stored")
        check_eq((cap["status"], cap["phase"]),
                 ("interrupted", "waiting_ready"), "recovered capture")
        check_eq(rig.d.get("/healthz")[1]["status"], "ok", "healthz after")


def case_readonly():
    if os.geteuid() != 0:
        print("skipped: chattr needs root")
        sys.exit(SKIPPED)
    readonly_restart_and_live()
    readonly_recovery()
    print("ok")


# ---- CSV ----

def case_csv():
    formulas = ['=HYPERLINK("http://x.example/","x")', "+SUM(1,2)", "-2+3",
                "@SUM(A1:A2)"]
    with tempfile.TemporaryDirectory(prefix="traced-csv-") as root:
        a, b = os.path.join(root, "a.json.gz"), os.path.join(root, "b.json.gz")
        write_trace(a, [kernel(n, i, "9.000") for i, n in
                        enumerate(formulas + ["plain"])])
        write_trace(b, [kernel(n, i, "4.000") for i, n in
                        enumerate(formulas + ["plain"])])
        with Daemon(conf={"import_roots": root}) as d:
            ca, cb = imported(d, a), imported(d, b)
            code, body = d.get("/captures/%d/kernels?format=csv" % ca["id"])
            check_eq(code, 200, "csv")
            text = body.decode()
            for name in formulas:
                cell = '"\'' + name.replace('"', '""') + '"'
                check(("\r\n" + cell + ",") in text,
                      "%s is written %s: %s" % (name, cell, text[:600]))
            check("\r\nplain," in text, "plain text as it is")
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
            check_eq(sorted(r["name"] for r in rows),
                     sorted(["'" + n for n in formulas] + ["plain"]),
                     "read back")
            check(all(r["count"] == "1" and r["total_ns"] == "9000"
                      for r in rows), "integers as they are")
            code, body = d.get("/diff?a=%d&b=%d&format=csv" % (ca["id"],
                                                               cb["id"]))
            check_eq(code, 200, "diff csv")
            rows = list(csv.DictReader(io.StringIO(body.decode(),
                                                   newline="")))
            check(all(r["delta_ns"] == "-5000" for r in rows),
                  "negative deltas stay numbers: %s" % rows[:2])
            check(all(float(r["delta_pct"]) < 0 for r in rows),
                  "reals stay numbers")
    print("ok")


# ---- timestamps at the edge ----

MAX_DUR_NS = (1 << 50) - 1
TOP_NS = (1 << 62) - 1
INT64_MAX = (1 << 63) - 1


def us(ns):
    return "%d.%03d" % (ns // 1000, ns % 1000)


def edge_event(cat, name, pid, tid, ts, dur, args=None):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid}
    if args:
        e["args"] = args
    text = json.dumps(e)[:-1]
    return text + ', "ts": %s, "dur": %s}' % (us(ts), us(dur))


def edge_sums(path, n):
    """n steps of kernels, launches, copies and labels as long as the
    range allows, ending at 2^62-1 ns, and one kernel at 0."""
    events, base = [], TOP_NS - MAX_DUR_NS - 10 * n
    for i in range(n):
        ts, label = base + i, "decode[bs=%d tok=1]" % (i % 4 + 1)
        events += [
            edge_event("user_annotation", label, 1, 1, ts, MAX_DUR_NS),
            edge_event("gpu_user_annotation", label, 0, 7, ts, MAX_DUR_NS),
            edge_event("cuda_runtime", "hipLaunchKernel", 1, 1, ts,
                       MAX_DUR_NS, {"correlation": i + 1}),
            edge_event("kernel", "Cijk_gemm_%d" % (i % 3), 0, 7, ts + 1,
                       MAX_DUR_NS, {"correlation": i + 1, "stream": 7}),
            edge_event("kernel", "ncclDevKernel_AllReduce", 0, 8, ts + 2,
                       MAX_DUR_NS, {"stream": 8}),
            edge_event("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 0, 9,
                       ts + 3, MAX_DUR_NS, {"bytes": INT64_MAX})]
    events.append(edge_event("kernel", "first", 0, 7, 0, 1))
    events.append('{"ph": "i", "cat": "cpu_instant_event", "name": '
                  '"Record Window End", "pid": 1, "tid": 1, "ts": %s}'
                  % us(TOP_NS))
    write_trace(path, events)


def case_times():
    root = tempfile.mkdtemp(prefix="traced-times-")
    try:
        for name, bad in (("ts", '"ts": 9223372036854775.807, "dur": 1'),
                          ("dur", '"ts": 10, "dur": 1e20')):
            os.makedirs(os.path.join(root, name))
            with open(os.path.join(root, name, "r.json"), "w") as f:
                f.write('{"traceEvents": [{"ph": "X", "cat": "kernel", '
                        '"name": "k", "pid": 0, "tid": 7, %s}, {"ph": "X", '
                        '"cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
                        '"ts": 1, "dur": 2}]}' % bad)
        for r in (0, 1):
            os.makedirs(os.path.join(root, "sums", "rank_%d" % r))
            edge_sums(os.path.join(root, "sums", "rank_%d" % r,
                                   "t.pt.trace.json.gz"), 5000)
        with Daemon(conf={"import_roots": root}) as d:
            for name in ("ts", "dur"):
                cap = imported(d, os.path.join(root, name, "r.json"))
                rank = cap["ranks"][0]
                check_eq((rank["events"], rank["skipped_events"],
                          rank["kernel_events"], rank["span_ns"]),
                         (2, 1, 1, 2000), "%s at the edge: %s" % (name, rank))
            cap = imported(d, os.path.join(root, "sums"), timeout=600)
            for rank in cap["ranks"]:
                check_eq((rank["skipped_events"], rank["kernel_ns"],
                          rank["memcpy_bytes"], rank["span_ns"]),
                         (0, INT64_MAX, INT64_MAX, TOP_NS), "sums held")
            answers = check_every_table(d, cap["id"])
            hwm = vm_hwm(d.proc.pid)
            print("times: %d tables answered, sums held at INT64_MAX, "
                  "daemon VmHWM %.1f MB" % (answers, hwm / MB))
            # The sanitizers' shadow and quarantine are not the daemon's.
            check(hwm < 200 * MB or sanitized(d.proc.pid),
                  "daemon VmHWM %d" % hwm)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def check_every_table(d, cid):
    """Every table route of the capture answers 200 without a negative
    total (all ranks summed, and each rank)."""
    with open(os.path.join(SRC_DIR, "api", "openapi.yaml")) as f:
        spec = json.load(f)
    n = 0
    for tmpl in spec["paths"]:
        if not tmpl.startswith("/captures/{id}/") or "{r}" in tmpl or \
                "get" not in spec["paths"][tmpl] or "slice" in tmpl or \
                "logs" in tmpl:
            continue
        for query in ("", "?rank=0"):
            code, body = d.get(tmpl.replace("{id}", str(cid)) + query)
            if code == 400 and query:
                continue  # a route without ranks
            check_eq(code, 200, "%s%s: %s" % (tmpl, query, str(body)[:300]))
            n += 1
            for row in body.get("rows", []) if isinstance(body, dict) else []:
                for k, v in row.items():
                    check(not (k.endswith("total_ns") and isinstance(v, int)
                               and v < 0), "%s: %s %s" % (tmpl, k, v))
    code, body = d.get("/diff?a=%d&b=%d&by=kernel" % (cid, cid))
    check_eq(code, 200, "/diff: %s" % str(body)[:300])
    return n


CASES = {"names": case_names, "caps": case_caps,
         "spill_disk": case_spill_disk, "readonly": case_readonly,
         "csv": case_csv, "times": case_times}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: test_bounds.py %s" % "|".join(CASES))
    CASES[sys.argv[1]]()
