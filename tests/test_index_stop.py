#!/usr/bin/env python3
"""A rank being indexed stops when asked, against a running daemon over
real sockets (docs/API.md, rank_index_timeout_s; docs/ARCHITECTURE.md).

The rank is a big trace the test writes: one block of 20,000 kernels and
their launches, gzipped once and written N times as gzip members (a file
of many members is one gzip stream to every reader), so that its indexing
lasts seconds while the file costs only its writing. The test sees where
the indexer is from what the daemon does: its progress while it reads,
and the rank's access-points file (logs/<id>/points/rank_0.points.tmp),
which is opened once the reading is over, while the walk of the rank's
records runs, and renamed or removed at its end.

Usage: test_index_stop.py CASE, CASE one of
  sigterm   SIGTERM while the rank is read, then (restarted) while its
            records are walked: traced exits 0 within bound() each time,
            leaving no temporary file; the next start indexes the import
            again to done, with the figures the generator wrote and those
            of an uninterrupted import of the same file.
  cancel    DELETE of the import while its records are walked
            (index_jobs 1): cancelled, and its indexing slot free within
            bound(), a real trace's import behind it done.
  deadline  rank_index_timeout_s = 1: the rank fails naming the setting
            (the capture failed in indexing) within seconds; the daemon
            goes on serving and indexing.
"""
import gzip
import os
import shutil
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (TRACES_DIR, Daemon, check, check_eq,  # noqa: E402
                        run_named_case, sanitized, wait_for)

SMALL_TRACE = os.path.join(TRACES_DIR,
                           "tracelens__mi210_gpu_only_trace.json.gz")
BLOCK = 20000    # kernels (and launches) in one gzip member
KERNEL_NS = 5000  # each kernel's duration
LAUNCH_NS = 2000  # each launch's
STOP_S = 1.5     # a stop's bound; the walk alone lasts longer than this
COPIES = 300     # members of the rank: 1.47 GB of JSON, 6 M kernels


def block():
    out = []
    for i in range(BLOCK):
        ts = 1000 + i * 10
        out.append(b'{"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel",'
                   b'"pid":1,"tid":1,"ts":%d,"dur":%d,"args":'
                   b'{"correlation":%d}},' % (ts, LAUNCH_NS // 1000, i + 1))
        out.append(b'{"ph":"X","cat":"kernel","name":"kernel_%d","pid":0,'
                   b'"tid":7,"ts":%d,"dur":%d,"args":{"correlation":%d,'
                   b'"stream":7,"device":0}},' % (i % 50, ts + 3,
                                                  KERNEL_NS // 1000, i + 1))
    return b"".join(out)


def big_trace(path, copies):
    """The rank; returns the figures it must give."""
    member = gzip.compress(block(), compresslevel=6, mtime=0)
    with open(path, "wb") as f:
        f.write(gzip.compress(b'{"schemaVersion":1,"traceEvents":[',
                              mtime=0))
        for _ in range(copies):
            f.write(member)
        f.write(gzip.compress(b'{"ph":"M","name":"process_name","pid":0,'
                              b'"args":{"name":"GPU 0"}}]}', mtime=0))
    n = copies * BLOCK
    return {"events": 2 * n + 1, "kernel_events": n,
            "kernel_ns": n * KERNEL_NS, "runtime_events": n,
            "runtime_ns": n * LAUNCH_NS, "file_bytes": os.path.getsize(path)}


def get(d, cid):
    code, cap = d.get("/captures/%d" % cid)
    check_eq(code, 200, "GET /captures/%d" % cid)
    return cap


def log_dir(d, cid):
    """The capture's log folder (docs/API.md: <trace_root>/logs/<id>)."""
    return os.path.join(d.conf["trace_root"], "logs", str(cid))


def points_tmp(d, cid):
    return os.path.join(log_dir(d, cid), "points", "rank_0.points.tmp")


def reading(d, cid):
    """Until the rank is being read (progress counted, no points file
    yet); the capture."""
    def now():
        cap = get(d, cid)
        check(cap["status"] in ("queued", "running"),
              "the import ended before it was read: %r" % (cap,))
        done = (cap.get("progress") or {}).get("bytes_indexed") or 0
        if done > 0 and not os.path.exists(points_tmp(d, cid)):
            return cap
        return None
    return wait_for(now, 120, "the rank read")


def walking(d, cid):
    """Until the rank's reading is over and its records are walked (its
    points file open)."""
    path = points_tmp(d, cid)
    deadline = time.time() + 300
    while not os.path.exists(path):
        check(time.time() < deadline, "no walk in 300 s")
        check(get(d, cid)["status"] in ("queued", "running"),
              "the import ended before its walk")
        time.sleep(0.005)


def bound(read_s):
    """A stop's bound, given the seconds the rank's read took in this run:
    STOP_S, or half the read where the machine is slower. The indexing
    threads run at nice 10 (daemon/work.c), so a busy machine (a suite's
    other tests and builds) slows the read, the walk and the stop alike:
    1.5 to 1.7 s for a stop at load 8 with the suite beside it, 0.1 to
    0.3 s alone. A stop that waited for the walk would take longer than
    the read: this rank's walk outlasts its read (4.8 to 6.9 s against
    3.8 to 4.1 s at load 8)."""
    return max(STOP_S, read_s / 2)


def stopped(d, what, limit):
    """SIGTERM: traced exits 0 within limit seconds; the seconds it took."""
    t0 = time.time()
    rc = d.stop(signal.SIGTERM, timeout=60)
    took = time.time() - t0
    print("SIGTERM %s: exit %s in %.2f s (bound %.2f s)" % (what, rc, took,
                                                             limit))
    check_eq(rc, 0, "exit status")
    check(took < limit, "SIGTERM %s took %.2f s" % (what, took))
    return took


def no_leftovers(d, cid):
    """Nothing half-written is left of the stopped rank."""
    left = []
    for top, _, files in os.walk(log_dir(d, cid)):
        left += [os.path.join(top, f) for f in files if f.endswith(".tmp")]
    check_eq(left, [], "temporary files left")


def figures(d, cid):
    """What a done import answers: its rank's summary (without what names
    the file or the time it was made) and its tables."""
    cap = get(d, cid)
    check_eq((cap["status"], cap["phase"]), ("done", "done"), "import")
    rank = {k: v for k, v in cap["ranks"][0].items()
            if not isinstance(v, (dict, list)) and
            k not in ("file", "path", "id", "capture_id", "indexed_at",
                      "index_ms", "label")}
    tables = {}
    for t in ("kernels?limit=1000", "categories", "idle", "timeline",
              "launches?limit=1000", "runtime"):
        code, body = d.get("/captures/%d/%s" % (cid, t))
        check_eq(code, 200, t)
        tables[t] = body.get("rows", body) if isinstance(body, dict) else body
    return rank, tables


def check_truth(rank, truth):
    for k, v in truth.items():
        check_eq(rank[k], v, "rank summary %s" % k)


def case_sigterm(tmp):
    root = os.path.join(tmp, "imp")
    os.makedirs(root)
    path = os.path.join(root, "big.pt.trace.json.gz")
    work = os.path.join(tmp, "daemon")
    conf = {"import_roots": root}
    d = Daemon(conf=conf, workdir=work, keep=True).start()
    # ASan's indexer takes 3.3 times the release's time (the 1 GB bench
    # trace: 1.77 s against 0.54 s): a third of the rank reads and walks
    # as long, and the whole case costs what it does in release.
    truth = big_trace(path, COPIES // 3 if sanitized(d.proc.pid) else COPIES)
    code, cap = d.post("/imports", {"path": path})
    check_eq(code, 202, "import")
    cid = cap["id"]
    reading(d, cid)
    stopped(d, "while the rank is read", STOP_S)
    t0 = time.time()
    d = Daemon(conf=conf, workdir=work, keep=True).start()
    check_eq(get(d, cid)["status"], "running", "recovered")
    walking(d, cid)
    stopped(d, "while its records are walked", bound(time.time() - t0))
    no_leftovers(d, cid)
    with Daemon(conf=conf, workdir=work, keep=True) as d:
        d.wait_status(cid, timeout=600)
        rank, tables = figures(d, cid)
        check_truth(rank, truth)
        check_eq(sum(r["count"] for r in tables["kernels?limit=1000"]),
                 truth["kernel_events"], "kernel rows' counts")
        again = d.imported(path, timeout=600)["id"]
        rank2, tables2 = figures(d, again)
        check_eq(rank, rank2, "rank summary against an uninterrupted import")
        for t in tables:
            check_eq(tables[t], tables2[t], "%s against an uninterrupted "
                     "import" % t)
    print("figures as the generator's and an uninterrupted import's: "
          "%d kernels, %d ns" % (rank["kernel_events"], rank["kernel_ns"]))


def case_cancel(tmp):
    path = os.path.join(tmp, "big.pt.trace.json.gz")
    big_trace(path, COPIES)
    conf = {"import_roots": tmp + ":" + TRACES_DIR, "index_jobs": "1"}
    with Daemon(conf=conf) as d:
        t0 = time.time()
        code, cap = d.post("/imports", {"path": path})
        check_eq(code, 202, "import")
        cid = cap["id"]
        walking(d, cid)
        limit = bound(time.time() - t0)
        t0 = time.time()
        code, _ = d.delete("/captures/%d" % cid)
        check_eq(code, 202, "DELETE while walked")
        code, small = d.post("/imports", {"path": SMALL_TRACE})
        check_eq(code, 202, "import behind it")
        small = d.wait_status(small["id"], timeout=120)
        took = time.time() - t0
        print("cancelled while walked; the next import done %.2f s after "
              "(bound %.2f s)" % (took, limit))
        check_eq(small["status"], "done", "the import behind it")
        cap = get(d, cid)
        check_eq((cap["status"], cap["phase"]), ("cancelled", "indexing"),
                 "the cancelled import")
        check(took < limit, "the slot freed in %.2f s" % took)
        no_leftovers(d, cid)


def case_deadline(tmp):
    path = os.path.join(tmp, "big.pt.trace.json.gz")
    big_trace(path, 2 * COPIES)
    conf = {"import_roots": tmp + ":" + TRACES_DIR,
            "rank_index_timeout_s": "1"}
    with Daemon(conf=conf) as d:
        t0 = time.time()
        code, cap = d.post("/imports", {"path": path})
        check_eq(code, 202, "import")
        cap = d.wait_status(cap["id"], timeout=120)
        took = time.time() - t0
        msg = cap["error"]["message"]
        print("failed in %.1f s: %s" % (took, msg))
        check_eq((cap["status"], cap["phase"]), ("failed", "indexing"),
                 "the late import")
        check("rank_index_timeout_s (1 s)" in msg, msg)
        check(took >= 1 and took < 10, "failed after %.1f s" % took)
        check_eq(cap["ranks"][0]["status"], "failed", "the rank")
        check_eq(d.get("/healthz")[1]["status"], "ok", "daemon unaffected")
        d.imported(SMALL_TRACE)
        no_leftovers(d, cap["id"])


if __name__ == "__main__":
    run_named_case(globals(), "index_stop", tmp_prefix="traced-stop-")
