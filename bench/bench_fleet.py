#!/usr/bin/env python3
"""The fleet at scale (docs/FLEET.md): NODES simulated nodes publish
CAPTURES captures of RANKS ranks to one PostgreSQL, then a lab view serves
them; printed: publish throughput, PostgreSQL bytes per capture (beside a
node's SQLite bytes per capture), the time the lab view takes to follow
them and to copy a capture in, and under wrk (32 connections) the lab's
list (/fleet/captures, the list at every capture) and a cross-node diff
beside the same routes on one node's own SQLite (/captures, /diff of two
of its captures): req/s, p50, p99, and the ratios lab/node. Target: the
lab's list and diff within 2x of the node's own (p50 and p99).

How the nodes are made: one real import of RANKS copies of TRACE (a real
trace of ../shared/traces), then each node's database is that one cloned
CAPTURES/NODES times in SQLite (every row of every table hanging off the
capture, as the store's foreign keys say, created_at spread over 30 days);
each node then starts with fleet_dsn and publishes them all (the backfill,
unbounded here). Every capture is a real one's rows; only ids and times
differ.

Environment: TRACED_BIN, TRACES_DIR, NODES (4), CAPTURES (2000), RANKS (8),
TRACE (torch113cpu__atom_run_labels.pt.trace.json.gz), SECONDS_EACH (10),
ROUNDS (3), BENCH_DIR (a temporary folder, removed after).
"""
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import pgtest  # noqa: E402
from tracedtest import TRACED_BIN, TRACES_DIR, Daemon  # noqa: E402

NODES = int(os.environ.get("NODES", 4))
CAPTURES = int(os.environ.get("CAPTURES", 2000))
RANKS = int(os.environ.get("RANKS", 8))
TRACE = os.environ.get("TRACE", "torch113cpu__atom_run_labels.pt.trace.json.gz")
SECONDS_EACH = int(os.environ.get("SECONDS_EACH", 10))
ROUNDS = int(os.environ.get("ROUNDS", 3))
DAY_NS = 86400 * 10**9


def say(*a):
    print(*a, flush=True)


def cpu_s(pid, children=False):
    """CPU seconds of a process (with its reaped children's)."""
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14])
                                        if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def pg_cpu_s(pg):
    """CPU seconds of the cluster: the postmaster with the backends it
    reaped, and the live ones."""
    with open(os.path.join(pg.data, "postmaster.pid")) as f:
        pm = int(f.readline())
    kids = subprocess.run(["pgrep", "-P", str(pm)], capture_output=True,
                          text=True).stdout.split()
    return cpu_s(pm, True) + sum(cpu_s(int(k)) for k in kids)


def wait(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.5)
    raise SystemExit("timed out: " + what)


# ---- the template capture and its clones ----

def template(top):
    """A traced without the fleet imports RANKS copies of TRACE: its
    database, with one done capture."""
    ranks = os.path.join(top, "ranks")
    for r in range(RANKS):
        os.makedirs(os.path.join(ranks, "rank_%d" % r))
        shutil.copy(os.path.join(TRACES_DIR, TRACE), os.path.join(
            ranks, "rank_%d" % r, "r.pt.trace.json.gz"))
    d = Daemon(conf={"import_roots": top}, workdir=os.path.join(top, "tpl"))
    with d:
        code, cap = d.post("/imports", {"path": ranks, "model": "/models/m",
                                        "tp": RANKS, "isl": 1024,
                                        "osl": 1024, "conc": 64})
        assert code == 202, cap
        cap = d.wait_status(cap["id"], timeout=600)
        assert cap["status"] == "done", cap
        db = d.conf["db"]
        out = os.path.join(top, "template.db")
        subprocess.run(["sqlite3", db, "VACUUM INTO '%s'" % out], check=True)
    return out


def hanging(db):
    """(table, fk column, by rank) of every table hanging off captures or
    ranks, and each table's columns."""
    rows = db.execute(
        "SELECT m.name, f.\"from\", f.\"table\" = 'ranks' FROM sqlite_schema"
        " m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table' AND"
        " f.\"table\" IN ('captures', 'ranks')").fetchall()
    cols = {t: [c[1] for c in db.execute("PRAGMA table_info(%s)" % t)]
            for t, _, _ in rows + [("captures", 0, 0)]}
    return [r for r in rows if not r[0].startswith("fleet_")], cols


def clone(path, n, spread_from):
    """Capture 1 of the database at path cloned until it holds n captures,
    created 30 days apart / n, from spread_from (ns)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys = OFF")
    tables, cols = hanging(db)
    ccols = [c for c in cols["captures"] if c != "id"]
    rtables = [(t, fk) for t, fk, by_rank in tables if by_rank]
    ctables = [(t, fk) for t, fk, by_rank in tables
               if not by_rank and t != "ranks"]
    rcols = [c for c in cols["ranks"] if c not in ("id", "capture_id")]
    ranks = db.execute("SELECT id FROM ranks WHERE capture_id = 1"
                       " ORDER BY rank").fetchall()
    step = 30 * DAY_NS // max(n, 1)
    stamps = ("created_at", "started_at", "finished_at", "phase_started_at")
    for k in range(n):
        shift = spread_from + k * step - db.execute(
            "SELECT created_at FROM captures WHERE id = 1").fetchone()[0]
        sel = ", ".join("%s + %d" % (c, shift) if c in stamps else c
                        for c in ccols)
        if k > 0:
            cur = db.execute("INSERT INTO captures(%s) SELECT %s FROM captures"
                             " WHERE id = 1" % (", ".join(ccols), sel))
            cid = cur.lastrowid
        else:
            db.execute("UPDATE captures SET %s WHERE id = 1" % ", ".join(
                "%s = %s + %d" % (c, c, shift) for c in stamps))
            continue
        for t, fk in ctables:
            tc = [c for c in cols[t] if c != fk]
            db.execute("INSERT INTO %s(%s, %s) SELECT %s, ? FROM %s WHERE"
                       " %s = 1" % (t, ", ".join(tc), fk, ", ".join(tc), t,
                                    fk), (cid,))
        for (rid,) in ranks:
            cur = db.execute("INSERT INTO ranks(%s, capture_id) SELECT %s, ?"
                             " FROM ranks WHERE id = ?" % (
                                 ", ".join(rcols), ", ".join(rcols)),
                             (cid, rid))
            new = cur.lastrowid
            for t, fk in rtables:
                tc = [c for c in cols[t] if c != fk]
                db.execute("INSERT INTO %s(%s, %s) SELECT %s, ? FROM %s"
                           " WHERE %s = ?" % (t, ", ".join(tc), fk,
                                              ", ".join(tc), t, fk),
                           (new, rid))
        if k % 100 == 99:
            db.commit()
    db.commit()
    db.close()


# ---- wrk ----

def wrk(url, pid):
    """(req/s, p50 ms, p99 ms, errors, the daemon's CPU us per request) of
    one wrk run."""
    c0 = cpu_s(pid)
    out = subprocess.run(["wrk", "-t2", "-c32", "-d%ds" % SECONDS_EACH,
                          "--latency", url], capture_output=True, text=True,
                         check=True).stdout
    used = cpu_s(pid) - c0
    n = int(re.search(r"(\d+) requests in", out).group(1))

    def ms(label):
        m = re.search(r"^\s*%s%%\s+([\d.]+)(us|ms|s)\s*$" % label, out, re.M)
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "us" else v * 1000 \
            if m.group(2) == "s" else v
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errs = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: (.*)", out)
    return rps, ms("50"), ms("99"), (int(errs.group(1)) if errs else 0,
                                     sock.group(1) if sock else ""), \
        used * 1e6 / max(n, 1)


def measure(rows):
    """rows: [(name, url, pid)]: ROUNDS rounds, the rows taking turns; the
    median of each figure."""
    got = {name: [] for name, _, _ in rows}
    for _ in range(ROUNDS):
        for name, url, pid in rows:
            got[name].append(wrk(url, pid))
    return {name: (statistics.median(r[0] for r in runs),
                   statistics.median(r[1] for r in runs),
                   statistics.median(r[2] for r in runs),
                   sum(r[3][0] for r in runs),
                   ";".join(r[3][1] for r in runs if r[3][1]),
                   statistics.median(r[4] for r in runs))
            for name, runs in got.items()}


# ---- the run ----

def main():
    top = os.environ.get("BENCH_DIR") or tempfile.mkdtemp(
        prefix="traced-bench-fleet-")
    os.makedirs(top, exist_ok=True)
    os.chmod(top, 0o755)
    pg = pgtest.fleet_cluster()
    daemons = []
    try:
        run(top, pg, daemons)
    finally:
        for d in daemons:
            if d.proc is not None:
                d.stop()
        pg.remove()
        if not os.environ.get("BENCH_DIR"):
            shutil.rmtree(top, ignore_errors=True)


def run(top, pg, daemons):
    subprocess.run([TRACED_BIN, "fleet", "migrate", "--fleet-dsn", pg.dsn()],
                   check=True, capture_output=True)
    say("template: %d ranks of %s" % (RANKS, TRACE))
    tpl = template(top)
    per = CAPTURES // NODES
    t = time.time()
    nodes = []
    for i in range(NODES):
        name = "n%d" % (i + 1)
        pg.psql("CREATE ROLE %s LOGIN PASSWORD 'pw-%s' IN ROLE traced_node"
                % (name, name))
        pgtest.passfile(top, pg, name, "pw-" + name)
        work = os.path.join(top, name)
        os.makedirs(work)
        db = os.path.join(work, "traced.db")
        shutil.copy(tpl, db)
        clone(db, per, time.time_ns() - 31 * DAY_NS + i * 3600 * 10**9)
        nodes.append((name, work, db))
    say("cloned: %d nodes x %d captures in %.0f s" % (NODES, per,
                                                       time.time() - t))
    sqlite_per = statistics.mean(os.path.getsize(db) for _, _, db in nodes) \
        / per
    ds = []
    for name, work, db in nodes:
        d = Daemon(conf={"fleet_dsn": pg.dsn(user=name, tcp=True,
                                             passfile=os.path.join(
                                                 top, "pgpass-" + name)),
                         "node_name": name, "fleet_backfill_per_s": "100000",
                         "db": db}, workdir=work)
        ds.append(d)
        daemons.append(d)
    t0, pg0 = time.time(), pg_cpu_s(pg)
    for d in ds:
        d.start(timeout=120)
    total = per * NODES
    wait(lambda: int(pg.value("SELECT count(*) FROM fleet.captures")) ==
         total, 7200, "every capture published")
    took = time.time() - t0
    node_cpu = sum(cpu_s(d.proc.pid) for d in ds)
    pg_cpu = pg_cpu_s(pg) - pg0
    size = int(pg.value("SELECT pg_total_relation_size('fleet.captures') +"
                        " pg_total_relation_size('fleet.capture_tables')"))
    dbsize = int(pg.value("SELECT pg_database_size('fleet')"))
    say("published: %d captures of %d ranks from %d nodes in %.1f s: %.1f "
        "captures/s (%.2f per node)" % (total, RANKS, NODES, took,
                                        total / took, total / took / NODES))
    say("CPU per capture published: %.0f ms in the nodes (export and "
        "send), %.0f ms in PostgreSQL; load average %s" % (
            node_cpu * 1000 / total, pg_cpu * 1000 / total,
            open("/proc/loadavg").read().split()[0]))
    say("PostgreSQL: %.0f KB per capture (tables, TOAST and indexes; the "
        "database %.0f MB in all); a node's SQLite: %.0f KB per capture" % (
            size / total / 1024, dbsize / 2**20, sqlite_per / 1024))
    pg.psql("CREATE ROLE lab LOGIN PASSWORD 'pw-lab' IN ROLE traced_reader")
    pgtest.passfile(top, pg, "lab", "pw-lab")
    lab = Daemon(conf={"fleet_dsn": pg.dsn(user="lab", tcp=True,
                                           passfile=os.path.join(
                                               top, "pgpass-lab")),
                       "node_name": "lab", "fleet_view": "true"})
    daemons.append(lab)
    t0 = time.time()
    lab.start(timeout=120)
    wait(lambda: sum(n["captures"] for n in lab.get("/fleet/nodes")[1]
                     ["nodes"]) == total, 600, "followed")
    say("lab view: followed %d captures in %.1f s" % (total,
                                                      time.time() - t0))
    serve(lab, ds[0], per)
    # Without the answer cache (answer_cache_mb = 0): every request runs
    # the store's query, on the lab's copies and on the node's own rows.
    for d in (lab, ds[0]):
        d.stop()
        d.conf["answer_cache_mb"] = "0"
        d.start(timeout=120)
    say("\nthe same without the answer cache (answer_cache_mb = 0):")
    serve(lab, ds[0], per, lists=False)


def serve(lab, node, per, lists=True):
    a, b = 1, per // 2
    t0 = time.time()
    other = "n2" if NODES > 1 else "n1"
    code, _ = lab.get("/diff?a=n1:%d&b=%s:%d&limit=50" % (a, other, b))
    assert code == 200
    if lists:
        say("first cross-node diff (two captures copied from PostgreSQL): "
            "%.2f s" % (time.time() - t0))
    lp, npid = lab.proc.pid, node.proc.pid
    rows = [("lab list", lab.base + "/fleet/captures?limit=50", lp),
            ("node list", node.base + "/captures?limit=50", npid)] \
        if lists else []
    rows += [("lab diff", lab.base + "/diff?a=n1:%d&b=%s:%d&limit=50" % (
        a, other, b), lp),
        ("node diff", node.base + "/diff?a=%d&b=%d&limit=50" % (a, b),
         npid)]
    got = measure(rows)
    say("\nwrk, 32 connections, %d s each, %d rounds taking turns "
        "(medians); load average %s:" % (
            SECONDS_EACH, ROUNDS, open("/proc/loadavg").read().split()[0]))
    say("| route | req/s | p50 | p99 | daemon CPU/req | non-2xx |")
    say("|---|---|---|---|---|---|")
    for name, url, _ in rows:
        rps, p50, p99, bad, sock, us = got[name]
        say("| %s `%s` | %.0f | %.2f ms | %.2f ms | %.0f us | %d%s |" % (
            name, url.split("/", 3)[3], rps, p50, p99, us, bad,
            " (" + sock + ")" if sock else ""))
    for what in ("list", "diff") if lists else ("diff",):
        lab_, node_ = got["lab " + what], got["node " + what]
        say("lab/node %s: p50 %.2fx, p99 %.2fx, CPU/req %.2fx (target: at "
            "most 2x)" % (what, lab_[1] / node_[1], lab_[2] / node_[2],
                          lab_[5] / node_[5]))


if __name__ == "__main__":
    main()
