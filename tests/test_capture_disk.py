"""A full disk under the database.

Usage: test_capture_disk.py [queue]
  (none)  in the middle of a capture: the capture's state write is refused,
          retried, and the capture fails in memory (its GPU slot is not
          held by a disk); once space is back its final state is written
          (failed, never left running), /healthz says ok again and imports
          work.
  queue   while imports wait: one import indexing and four queued when the
          disk fills; once space is back every one reaches a final state
          within 30 s, without a restart, each consistent (done only in
          phase done, with its ranks; a failure with its error), the
          queued ones done (a rank whose rows the store refuses is indexed
          again, not failed), and the same after a restart; with the disk full again and imports
          waiting, SIGTERM ends traced within its own deadline (never its
          45 s watchdog).
Needs root and a tmpfs: exits 77 (skipped) elsewhere."""
import os
import shutil
import signal
import sqlite3
import sys
import time

from test_capture_lib import SMALL, Rig, check, check_eq, run_cases
from tracedtest import (TRACES_DIR, Daemon, fill, post_until_refused,
                        small_disk, wait_for)

# A rank that takes a moment to index (3.7 MB of gzip), so that imports
# queue behind it.
BIG = os.path.join(TRACES_DIR,
                   "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0"
                   ".json.gz")
FINAL = ("done", "failed", "cancelled", "interrupted")



def full_disk_mid_capture(mnt, root):
    folder = os.path.join(root, "imp")
    os.makedirs(folder)
    shutil.copy(SMALL[0], os.path.join(folder, "t.pt.trace.json.gz"))
    # 2 prompts streaming 40 tokens 0.1 s apart, after 4 warm-ups: the
    # bench runs about 12 s, time to fill the disk before its next write.
    rig = Rig(conf={"db": os.path.join(mnt, "traced.db"),
                    "import_roots": root},
              sim_env={"SIM_MAX_TOKENS": "40", "SIM_TOKEN_S": "0.1"})
    with rig:
        cid = rig.capture(tp=2, osl=40)
        rig.wait_phase(cid, "benchmark")
        filler = fill(mnt)
        code, body, queued = post_until_refused(rig.d, models=rig.models)
        check_eq(code, 507, "a write on the full disk: %r" % (body,))
        check_eq(rig.d.get("/healthz")[1]["status"], "degraded", "healthz")
        # The capture's next write (its move to exporting) is refused; it
        # fails in memory and says so on traced's log.
        wait_for(lambda: "store refuses writes" in rig.d.log_text(), 90,
                 "the capture failed in memory")
        check_eq(rig.get(cid)["status"], "running", "the store lags")
        os.unlink(filler)
        cap = wait_for(lambda: (lambda c: c if c["status"] != "running"
                                else None)(rig.get(cid)), 30,
                       "the final state written")
        check_eq(cap["status"], "failed", "status once space is back")
        check("store refuses writes" in cap["error"]["message"], cap["error"])
        check(cap["finished_at"] is not None, "finished_at")
        for q in queued:
            code, body = rig.d.delete("/captures/%d" % q)
            check(code == 200 and body["status"] == "cancelled",
                  "cancel queued %d: %s %r" % (q, code, body))
        check_eq(rig.d.get("/healthz")[1], {"status": "ok"}, "healthz back")
        code, imp = rig.d.post("/imports", {"path": folder})
        check_eq(code, 202, "import once space is back: %r" % (imp,))
        imp = rig.wait(imp["id"])
        check_eq((imp["status"], imp["phase"]), ("done", "done"), "import")


def lay_out(root, name, files):
    top = os.path.join(root, name)
    for i, f in enumerate(files):
        os.makedirs(os.path.join(top, "rank_%d" % i))
        shutil.copy(f, os.path.join(top, "rank_%d" % i, "t.pt.trace.json.gz"))
    return top


def consistent(cap, what):
    """A capture's stored state says one thing: done only in phase done
    with every rank done; any other final status with its error."""
    check(cap["status"] in FINAL, "%s: %s" % (what, cap["status"]))
    if cap["status"] == "done":
        check_eq(cap["phase"], "done", "%s: phase of a done one" % what)
        check(cap["ranks"] and all(r["status"] == "done"
                                   for r in cap["ranks"]), what)
    else:
        check(cap["error"] and cap["error"].get("message"),
              "%s: %s without an error: %r" % (what, cap["status"], cap))


def truncate_wal(db):
    """Checkpoints the database into its file and empties the WAL, so that
    on a full disk no write finds room left in it (SQLite reuses a WAL's
    slack after a checkpoint: a full disk alone still takes small
    writes)."""
    con = sqlite3.connect(db, timeout=10)
    try:
        for _ in range(200):
            busy, _, _ = con.execute(
                "PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy == 0 and os.path.getsize(db + "-wal") == 0:
                return
            time.sleep(0.05)
    finally:
        con.close()
    raise AssertionError("the WAL of %s could not be emptied" % db)


def full(d, mnt, db):
    """The disk under db full, its WAL empty: every write refused. An
    import running beside it may give space back (its spill files) after
    the disk filled, so a write taken then (202) is followed by another
    fill, at most 10 times. Returns the folder of the fillers."""
    fillers = os.path.join(mnt, "fillers")
    os.makedirs(fillers, exist_ok=True)
    for i in range(10):
        truncate_wal(db)
        fill(fillers, "filler%d" % i)
        code, body = d.post("/captures", {"model": "/models/full"})
        if code != 202:
            break
    check_eq(code, 507, "a write on the full disk: %r" % (body,))
    return fillers


def stored(db, cid):
    """(status, phase) of capture cid as the database file holds it."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
    try:
        return con.execute("SELECT status, phase FROM captures WHERE id = ?",
                           (cid,)).fetchone()
    finally:
        con.close()


def restart_conf(d):
    """d's configuration for another daemon on the same database."""
    return {k: v for k, v in d.conf.items() if k != "listen"}


def full_disk_queue(mnt, root):
    db = os.path.join(mnt, "queue.db")
    d = Daemon(conf={"db": db, "import_roots": root, "index_jobs": "1"},
               keep=True)
    with d:
        ids = imports_waiting(d, root, 4)
        fillers = full(d, mnt, db)
        # Long enough for the runner to try every step against the store:
        # the indexing import's ranks and end, then the queued ones.
        time.sleep(45)
        shutil.rmtree(fillers)
        back = time.time()
        caps = [d.wait_status(i, FINAL, timeout=max(1, back + 30 -
                                                     time.time()))
                for i in ids]
        print("final within %.1f s of space returning: %s" % (
            time.time() - back, [(c["status"], c["phase"]) for c in caps]))
        for cap in caps:
            consistent(cap, "import %d" % cap["id"])
        check_eq([c["status"] for c in caps[1:]], ["done"] * 4,
                 "the queued imports, run once space was back: %r" % (
                     [c["error"] for c in caps[1:]],))
        # A final state the full disk refused is the runner's to write
        # again (daemon/work.c); the API shows it meanwhile. A stop before
        # that write gives it up and the next start indexes the import
        # again: the restart below is asked once the store has them.
        for cap in caps:
            wait_for(lambda: stored(db, cap["id"]) == (cap["status"],
                                                       cap["phase"]),
                     30, "import %d's final state stored" % cap["id"])
    # A restart finds them as they were: nothing left running or mended
    # into another state.
    with Daemon(conf=restart_conf(d), workdir=d.dir) as again:
        for cap in caps:
            now = again.get("/captures/%d" % cap["id"])[1]
            consistent(now, "after a restart: import %d" % cap["id"])
            check_eq((now["status"], now["phase"]),
                     (cap["status"], cap["phase"]), "after a restart")


def imports_waiting(d, root, n_small):
    """An import of 2 big ranks (indexing) and n_small small ones queued
    behind it; their ids."""
    big = lay_out(root, "big%d" % time.time_ns(), [BIG] * 2)
    code, cap = d.post("/imports", {"path": big})
    check_eq(code, 202, "big import: %r" % (cap,))
    ids = [cap["id"]]
    for i in range(n_small):
        small = lay_out(root, "small%d_%d" % (i, time.time_ns()), SMALL[:2])
        code, cap = d.post("/imports", {"path": small})
        check_eq(code, 202, "small import %d: %r" % (i, cap))
        ids.append(cap["id"])
    wait_for(lambda: d.get("/captures/%d" % ids[0])[1]["status"] == "running",
             30, "the big import running")
    return ids


def full_disk_sigterm(mnt, root):
    for name in os.listdir(mnt):   # the queue case's database, its spill
        path = os.path.join(mnt, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    db = os.path.join(mnt, "sigterm.db")
    d = Daemon(conf={"db": db, "import_roots": root, "index_jobs": "1"},
               keep=True)
    d.start()
    try:
        ids = imports_waiting(d, root, 4)
        fillers = full(d, mnt, db)
        time.sleep(8)   # writes refused and waiting to be tried again
        t0 = time.time()
        rc = d.stop(signal.SIGTERM, timeout=60)
        took = time.time() - t0
        print("SIGTERM on the full disk: exit %s in %.1f s" % (rc, took))
        check("not stopped after" not in d.log_text(), d.log_text())
        check_eq(rc, 0, "exit status")
        # What the store refuses is given up at once (a final state too:
        # the next start settles it), not waited for.
        check(took < 5, "SIGTERM took %.1f s" % took)
        shutil.rmtree(fillers)
    finally:
        d.stop()
    # Space back, a restart: the waiting imports run, each to its end.
    with Daemon(conf=restart_conf(d), workdir=d.dir) as again:
        for i in ids:
            consistent(again.wait_status(i, FINAL, timeout=120),
                       "import %d after the restart" % i)


def main():
    queue = sys.argv[1:] == ["queue"]
    # The queue's disk holds every import's rows once space is back (the
    # filler takes the rest while it is there).
    with small_disk("32m" if queue else "3m") as mnt:
        top = os.path.dirname(mnt)

        def full_disk_mid_capture_case():
            full_disk_mid_capture(mnt, top)

        def full_disk_queue_case():
            full_disk_queue(mnt, top)

        def full_disk_sigterm_case():
            full_disk_sigterm(mnt, top)

        run_cases([full_disk_queue_case, full_disk_sigterm_case] if queue
                  else [full_disk_mid_capture_case])


if __name__ == "__main__":
    main()
