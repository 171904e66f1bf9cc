"""The fleet (docs/FLEET.md) against a real PostgreSQL: throwaway clusters
of Debian's server (tests/pgtest.py), traced nodes publishing to them, and
lab views reading them, all over real sockets. After every fault, every
capture of every node is in PostgreSQL exactly once, and the lab view
answers each of them with the node's own figures.

Usage: test_fleet.py CASE, CASE one of
  e2e           two nodes (imports of real traces and of generated TP=2
                sets; captures on the built-in simulator) and a lab view:
                listed together with filters, every table of every capture
                equal to its node's, diffs across nodes equal to a diff on
                one node, a verdict against a baseline of the other node
                equal to the same verdict made on one node, the trend, a
                delete, raw traces and all ranks' slices redirected to
                their node
  web           the lab view's list and trend pages in a real Chromium:
                the points link to their captures (skipped without
                chromium)
  roles         row-level security: a node's role writes only its own
                node's rows, the lab's role reads only; a node_name that is
                not its role's, and a fleet_dsn holding a password, refused
  migrate_race  two nodes start at once on an empty database with the
                owner's role: one migration, both publish
  backfill      captures made before fleet_dsn was set are published on
                the first connection, at most fleet_backfill_per_s
  stop          PostgreSQL stopped during publishes, then started: the
                outbox waits (/healthz degraded, reason fleet), then
                drains; the lab view keeps answering its copies (503 at
                once for the others)
  kill9         PostgreSQL killed with -9 during publishes, restarted
  after_commit  traced killed after a publish's commit, before its outbox
                row is cleared: published again, not doubled
  two_nodes     two nodes publishing at once
  rebuild       a node's SQLite deleted and made anew: its rows stay, new
                captures get new UUIDs, node:id names the new one
  newer_schema  a schema newer than the node: refused with a clear message,
                nothing lost; published once it is not
  password      a wrong password: refused, /healthz degraded; published
                once the password file is right
  disk          PostgreSQL's disk full: the outbox grows, one row per
                capture, nothing lost; drained once there is space
                (skipped where a tmpfs cannot be mounted)
  standby       a lab view reading a streaming standby (pg_basebackup -R)
                of the fleet's PostgreSQL
  bad_dsn       a fleet_dsn holding a password (key=value or URI) or one
                libpq cannot parse: traced says so and exits 1, never
                aborts (needs no PostgreSQL)
Exits 77 (skipped) where no PostgreSQL server is installed.
"""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_collectives  # noqa: E402
import pgtest  # noqa: E402
from tracedtest import (SKIPPED, SRC_DIR, TRACED_BIN, TRACES_DIR,  # noqa
                        Daemon, check, check_eq, small_disk, wait_for)

CONFIG = {"model": "gen-model", "tp": 2, "isl": 1024, "osl": 1024,
          "conc": 8}
SMALL = ["tracelens__mi210_gpu_only_trace.json.gz",
         "tracelens__torch_compile_triton_trace.json.gz",
         "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
         "tracelens__vllm_decode_full_graph_execution.json.gz",
         "torch113cpu__atom_run_labels.pt.trace.json.gz"]
FINAL = ("done", "failed", "cancelled", "interrupted")
WAIT = 120  # seconds for anything to be published or followed


# ---- the fleet: a PostgreSQL, its schema, its roles ----

class Fleet:
    """A throwaway cluster with the fleet's schema (`traced fleet
    migrate`), a role per node (n1, n2: traced_node) and the lab's
    (traced_reader), each with a password in a password file."""

    def __init__(self, nodes=("n1", "n2"), migrate=True, pg=None):
        self.pg = pg or pgtest.fleet_cluster()
        self.dir = tempfile.mkdtemp(prefix="traced-fleet-")
        self.daemons = []
        if migrate:
            out = self.migrate()
            check_eq(out.returncode, 0, "migrate: %s" % out.stderr)
            check("version 0 -> 1" in out.stdout, out.stdout)
        for name in list(nodes) + ["lab"]:
            group = "traced_reader" if name == "lab" else "traced_node"
            if migrate:
                self.pg.psql("CREATE ROLE %s LOGIN PASSWORD 'pw-%s' IN ROLE"
                             " %s" % (name, name, group))
            pgtest.passfile(self.dir, self.pg, name, "pw-" + name)

    def migrate(self, dsn=None):
        return subprocess.run([TRACED_BIN, "fleet", "migrate", "--fleet-dsn",
                               dsn or self.pg.dsn()],
                              capture_output=True, text=True, timeout=120)

    def passfile(self, name):
        return os.path.join(self.dir, "pgpass-%s" % name)

    def dsn(self, name):
        return self.pg.dsn(user=name, tcp=True, passfile=self.passfile(name))

    def node(self, name, dsn=None, env=None, **conf):
        """A traced publishing as node name (not started)."""
        base = {"fleet_dsn": dsn or self.dsn(name), "node_name": name,
                "import_roots": "%s:%s" % (TRACES_DIR, self.dir),
                "fleet_outbox_max_age_s": "2"}
        base.update(conf)
        d = Daemon(conf=base)
        d.env = env
        self.daemons.append(d)
        return d

    def lab(self, dsn=None, **conf):
        base = {"fleet_dsn": dsn or self.dsn("lab"), "node_name": "lab",
                "fleet_view": "true", "fleet_outbox_max_age_s": "3"}
        base.update(conf)
        d = Daemon(conf=base)
        d.env = None
        self.daemons.append(d)
        return d

    def close(self, failed=False):
        for d in self.daemons:
            if d.proc is not None:
                if failed:
                    sys.stderr.write("---- %s ----\n%s\n" % (
                        d.conf.get("node_name"), d.log_text()))
                d.stop()
        if failed:
            try:
                sys.stderr.write(open(self.pg.log).read()[-3000:])
            except OSError:
                pass
        self.pg.remove()
        shutil.rmtree(self.dir, ignore_errors=True)
        for d in self.daemons:
            shutil.rmtree(d.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close(failed=exc[0] is not None)


def start(d):
    """Starts d with its own environment additions."""
    saved = dict(os.environ)
    os.environ.update(d.env or {})
    try:
        return d.start(timeout=60)
    finally:
        os.environ.clear()
        os.environ.update(saved)


# ---- captures ----

def imported(d, path, wait=True, **extra):
    code, cap = d.post("/imports", dict(extra, path=path))
    check_eq(code, 202, "import %s: %s" % (path, cap))
    return d.wait_status(cap["id"], timeout=WAIT)["id"] if wait else cap["id"]


def import_small(d, n, wait=True, **extra):
    """n imports of the small real traces (round robin)."""
    ids = [imported(d, os.path.join(TRACES_DIR, SMALL[i % len(SMALL)]),
                    wait=False, **extra) for i in range(n)]
    if wait:
        for i in ids:
            d.wait_status(i, timeout=WAIT)
    return ids


def final_ids(d):
    code, page = d.get("/captures?limit=500")
    check_eq(code, 200, "list")
    return sorted(c["id"] for c in page["captures"] if c["status"] in FINAL)


def metric(d, name):
    code, text = d.get("/metrics", raw=True)
    m = re.search(r"^%s (\d+)$" % re.escape(name), text.decode(), re.M)
    return int(m.group(1)) if m else None


def outbox(d):
    return metric(d, "traced_fleet_outbox_length")


def outbox_rows(d):
    """The outbox as the node's database holds it now (the metric follows
    it at the publisher's next look)."""
    db = sqlite3.connect("file:%s?mode=ro" % d.conf["db"], uri=True,
                         timeout=10)
    try:
        return db.execute("SELECT count(*) FROM fleet_outbox").fetchone()[0]
    finally:
        db.close()


def health(d):
    return d.get("/healthz")[1]


# ---- what PostgreSQL holds ----

def published(pg, node):
    """{id: copies} of node's live (not deleted) captures in PostgreSQL."""
    return {int(i): int(n) for i, n in pg.psql(
        "SELECT id, count(*) FROM fleet.captures WHERE node = '%s' AND NOT"
        " deleted GROUP BY id" % node)}


def tables_each(pg, node):
    """The number of capture_tables rows of each of node's captures, by
    uuid."""
    return {u: int(n) for u, n in pg.psql(
        "SELECT c.uuid, count(t.tbl) FROM fleet.captures c LEFT JOIN"
        " fleet.capture_tables t USING (node, uuid) WHERE c.node = '%s'"
        " AND NOT c.deleted GROUP BY c.uuid" % node)}


def drained(pg, d, node, timeout=WAIT):
    """Waits until d's outbox is empty and every final capture of it is in
    PostgreSQL; then checks each is there exactly once, with all its
    tables."""
    def done():
        # A final state writes its outbox row in the same transaction, so
        # final ids and an empty outbox mean published (and migrated: a
        # node whose first publish has not come asks nothing of PostgreSQL).
        ids = final_ids(d)
        if not ids or outbox_rows(d) != 0:
            return False
        return set(published(pg, node)) >= set(ids) and ids
    ids = wait_for(done, timeout, "%s published" % node, every=0.2)
    check_once(pg, d, node)
    return ids


def check_once(pg, d, node, old=()):
    """Every final capture of d exactly once (old: ids of an earlier
    database of the node, there too), each with as many tables."""
    want = {i: 1 for i in final_ids(d)}
    for i in old:
        want[i] = want.get(i, 0) + 1
    check_eq(published(pg, node), want, "%s's captures in PostgreSQL" % node)
    counts = set(tables_each(pg, node).values())
    check_eq(len(counts), 1, "tables per capture of %s: %s" % (node, counts))


# ---- what the lab view answers ----

def table_routes():
    """(route, values of by, takes rank, takes limit) of every table of
    common/summary.h's TR_TABLE_MAP: a table added there is checked too."""
    src = open(os.path.join(SRC_DIR, "common", "summary.h")).read()
    body = src[src.index("#define TR_TABLE_ROWS_"):]
    body = body[:body.index("/* XX(scope, name")]
    out = []
    body = body.replace("\\\n", " ")   # the macro's line ends
    # R(XX, name, ROWS, row, rows, route, ...); C(XX, name, ROWS, row,
    # route, ...)
    for m in re.finditer(r'[RC]\(XX, \w+, \w+, \w+,(?:\s*\w+,)?\s*"([^"]+)",'
                         r'(.*?)(?=[RC]\(XX|\Z)', body, re.S):
        rest = m.group(2)
        by = re.search(r'TR_BY\(([^)]*)\)', rest)
        out.append((m.group(1), re.findall(r'"(\w+)"', by.group(1))
                    if by else [None], "TR_P(RANK)" in rest,
                    "TR_P(LIMIT)" in rest))
    check(len(out) >= 18, "table rows found: %d" % len(out))
    return out


ROUTES = None


def get_ok(d, path):
    code, body = d.get(path)
    check_eq(code, 200, "GET %s: %s" % (path, body))
    return body


def check_capture(lab, d, node, cid, full=True):
    """The lab view's answers about node:cid are the node's own: the
    capture object and, with full, every table for every rank and all
    (else a few tables for all ranks)."""
    global ROUTES
    ROUTES = ROUTES or table_routes()
    mine = get_ok(d, "/captures/%d" % cid)
    theirs = get_ok(lab, "/captures/%s:%d" % (node, cid))
    check_eq((theirs.pop("node"), theirs["id"]), (node, cid), "named")
    for key in ("uuid", "node_url"):
        check(theirs.pop(key), key)
    if theirs.get("verdict"):
        check_eq(theirs["verdict"].pop("baseline_node"), node, "verdict")
    check_eq(theirs, mine, "capture object %s:%d" % (node, cid))
    if mine["status"] != "done":
        return 0
    ranks = [r["rank"] for r in mine["ranks"] if r["status"] == "done"]
    n = 0
    for route, bys, has_rank, has_limit in ROUTES:
        if not full and route not in ("kernels", "steps", "families"):
            continue
        for by in bys:
            for rank in [None] + (ranks if has_rank and full else []):
                q = "&".join(x for x in (
                    "by=" + by if by else "", "rank=%d" % rank
                    if rank is not None else "", "limit=1000"
                    if has_limit else "") if x)
                a = get_ok(d, "/captures/%d/%s?%s" % (cid, route, q))
                b = get_ok(lab, "/captures/%s:%d/%s?%s" % (node, cid,
                                                           route, q))
                check_eq((b["capture"], b["node"]), (cid, node), route)
                check_eq(b["rows"], a["rows"], "%s:%d %s?%s" % (
                    node, cid, route, q))
                n += 1
    return n


def followed(lab, node, ids, timeout=WAIT):
    """Waits until the lab view lists every id of node."""
    def seen():
        page = get_ok(lab, "/fleet/captures?node=%s&limit=500" % node)
        return {c["id"] for c in page["captures"]} >= set(ids)
    wait_for(seen, timeout, "%s followed by the lab view" % node, every=0.2)


def run(case):
    """Runs case(fleet) in a Fleet made for it."""
    with Fleet() as f:
        case(f)


# ---- e2e ----

def verdict_sets(folder):
    sets = os.path.join(folder, "sets")
    return {n: make_collectives.make_verdict_set(sets, n, seed, **kw)
            for n, seed, kw in (("base", 1, {}), ("noise", 2, {}),
                                ("slow", 3, {"slow": {"moe": 1.2}}))}


def sim_capture(f):
    """n2 as a traced driving the built-in ATOM simulator: a capture
    finished there."""
    import test_capture_lib
    rig = test_capture_lib.Rig(conf={
        "fleet_dsn": f.dsn("n2"), "node_name": "n2",
        "import_roots": "%s:%s" % (TRACES_DIR, f.dir),
        "fleet_outbox_max_age_s": "2"})
    rig.start()
    cid = rig.capture()
    cap = rig.wait(cid, timeout=WAIT)
    check_eq(cap["status"], "done", "sim capture (%r)" % (cap["error"],))
    return rig, cid


def case_e2e():
    with Fleet() as f:
        tops = verdict_sets(f.dir)
        n1 = start(f.node("n1"))
        base = imported(n1, tops["base"], **CONFIG)
        real = import_small(n1, 3)
        rig, sim = sim_capture(f)
        n2 = rig.d
        try:
            e2e_run(f, n1, n2, tops, base, real, sim)
        finally:
            rig.close()


def e2e_run(f, n1, n2, tops, base, real, sim):
    slow = imported(n2, tops["slow"], **CONFIG)
    other = imported(n2, os.path.join(TRACES_DIR, SMALL[0]))
    ids1, ids2 = drained(f.pg, n1, "n1"), drained(f.pg, n2, "n2")
    lab = start(f.lab())
    followed(lab, "n1", ids1)
    followed(lab, "n2", ids2)
    # Listed together, newest first, each with its node and ref.
    page = get_ok(lab, "/fleet/captures?limit=500")["captures"]
    check_eq(sorted((c["node"], c["id"]) for c in page),
             sorted([("n1", i) for i in ids1] + [("n2", i) for i in ids2]),
             "the lab's list")
    check(all(c["ref"] == "%s:%d" % (c["node"], c["id"]) for c in page),
          "refs")
    stamps = [c["created_at"] for c in page]
    check_eq(stamps, sorted(stamps, reverse=True), "newest first")
    e2e_filters(lab, n1, n2, page, base, slow)
    # Every figure the node's own.
    n = sum(check_capture(lab, n1, "n1", i) for i in [base] + real)
    n += check_capture(lab, n2, "n2", sim) + check_capture(lab, n2, "n2",
                                                           slow)
    # The lab view's own metrics, after the publisher's; a node has none.
    check(metric(lab, "traced_fleet_followed_seq") > 0, "followed_seq")
    check(metric(lab, "traced_fleet_copies_total") >= len(real) + 3, "copies")
    check_eq(metric(lab, "traced_fleet_follow_failures_total"), 0, "failures")
    check(metric(lab, "traced_fleet_unheard_seconds") is not None, "unheard")
    for name in ("followed_seq", "unheard_seconds", "copies_total",
                 "follow_failures_total"):
        check_eq(metric(n1, "traced_fleet_" + name), None, "a node's " + name)
    # Across nodes: the same diff one node makes of the same two runs.
    base_on2 = imported(n2, tops["base"], **CONFIG)
    for q in ("by=kernel&limit=1000", "by=family&norm=per_step",
              "by=category", "by=step&rank=1"):
        a = get_ok(n2, "/diff?a=%d&b=%d&%s" % (base_on2, slow, q))
        b = get_ok(lab, "/diff?a=n1:%d&b=n2:%d&%s" % (base, slow, q))
        check_eq((b.pop("a"), b.pop("a_node"), b.pop("b"), b.pop("b_node")),
                 (base, "n1", slow, "n2"), "named")
        a.pop("a")
        a.pop("b")
        check_eq(b, a, "cross-node diff %s" % q)
    # A verdict against the other node's baseline: regressed, as n2 says
    # of the same pair.
    v = get_ok(lab, "/captures/n2:%d/verdict" % slow)
    check_eq((v["baseline_node"], v["baseline"], v["baseline_source"],
              v["verdict"], v["capture_node"]),
             ("n1", base, "fleet", "regressed", "n2"), "verdict %s" % v)
    mine = get_ok(n2, "/captures/%d/verdict?baseline=%d" % (slow, base_on2))
    for key in ("verdict", "reasons", "changes", "compared",
                "step_noise_pct"):
        check_eq(v[key], mine[key], "verdict's " + key)
    v2 = get_ok(lab, "/captures/n2:%d/verdict?baseline=n1:%d" % (slow, base))
    check_eq((v2["baseline_source"], v2["changes"]), ("asked", v["changes"]),
             "asked baseline")
    drained(f.pg, n2, "n2")
    followed(lab, "n2", [base_on2])
    e2e_trend_and_files(f, lab, n1, n2, (base, slow, base_on2), real)
    print("e2e: %d captures listed, %d table answers equal the nodes', "
          "cross-node diffs and verdict equal one node's" % (len(page), n))


def e2e_filters(lab, n1, n2, page, base, slow):
    def ids(q):
        got = get_ok(lab, "/fleet/captures?limit=500&" + q)["captures"]
        return sorted((c["node"], c["id"]) for c in got)
    check_eq(ids("node=n2"), sorted(("n2", c["id"]) for c in page
                                    if c["node"] == "n2"), "node filter")
    check_eq(ids("model=gen-model"), [("n1", base), ("n2", slow)], "model")
    key = json.dumps(["gen-model", 2, 1024, 1024, 8, None, 0],
                     separators=(",", ":"))
    check_eq(ids("config=" + key.replace('"', "%22")),
             [("n1", base), ("n2", slow)], "config filter")
    gpus = {c["gpu"] for c in page if c["gpu"]}
    for gpu in gpus:
        check_eq(ids("gpu=" + gpu.replace(" ", "%20")),
                 sorted((c["node"], c["id"]) for c in page
                        if c["gpu"] == gpu), "gpu " + gpu)
    check_eq(ids("since=2000-01-01&until=2000-01-02"), [], "dates")
    check_eq(len(ids("since=2000-01-01")), len(page), "since")
    first = get_ok(lab, "/fleet/captures?limit=2")
    rest = get_ok(lab, "/fleet/captures?limit=500&before=" +
                  first["next_before"])["captures"]
    check_eq([c["ref"] for c in first["captures"] + rest],
             [c["ref"] for c in page], "pages")
    for q, field in (("since=yesterday", "since"), ("limit=0", "limit"),
                     ("before=x", "before"), ("bogus=1", "bogus")):
        code, body = lab.get("/fleet/captures?" + q)
        check_eq((code, body["error"]["field"]), (400, field), q)
    code, body = lab.get("/captures/n1:99999/kernels")
    check_eq((code, body["error"]["field"]), (404, "id"), "unknown capture")
    code, body = lab.get("/diff?a=n1:%d&b=n9:1" % base)
    check_eq((code, body["error"]["field"]), (404, "b"), "unknown b")
    code, body = lab.delete("/captures/n1:%d" % base)
    check_eq(code, 405, "DELETE through the lab view")
    code, body = n1.get("/fleet/captures")
    check_eq(code, 404, "a node without fleet_view")


def e2e_trend_and_files(f, lab, n1, n2, gen, real):
    base, slow, base_on2 = gen
    key = json.dumps(["gen-model", 2, 1024, 1024, 8, None, 0],
                     separators=(",", ":"))
    cfgs = get_ok(lab, "/fleet/configs")["configs"]
    mine = [c for c in cfgs if c["key"] == key]
    check_eq(len(mine), 1, "configs: %s" % cfgs)
    check_eq((mine[0]["captures"], mine[0]["nodes"]), (3, 2), "config")
    t = get_ok(lab, "/fleet/trend?config=" + key.replace('"', "%22"))
    check_eq([p["ref"] for p in t["points"]],
             ["n1:%d" % base, "n2:%d" % slow, "n2:%d" % base_on2],
             "trend points, oldest first")
    for p, (d, cid) in zip(t["points"], ((n1, base), (n2, slow),
                                         (n2, base_on2))):
        steps = get_ok(d, "/captures/%d/steps" % cid)["rows"]
        decode = [r for r in steps if r["kind"] == "decode"][0]
        check_eq(p["figures"]["decode_p50_ns"], decode["steady_p50_ns"],
                 "decode p50 of " + p["ref"])
        fam = get_ok(d, "/captures/%d/families?limit=5" % cid)["rows"]
        check_eq([x["family"] for x in p["figures"]["families"]],
                 [x["family"] for x in fam], "top families")
    # Raw traces stay on their node: a redirect there.
    code, hdrs, _ = raw_get(lab, "/captures/n1:%d/ranks/0/trace" % real[0])
    check_eq(code, 307, "raw trace")
    check_eq(hdrs["location"], "%s/captures/%d/ranks/0/trace" % (
        n1.base, real[0]), "to its node")
    # So do all ranks' slices.
    code, hdrs, _ = raw_get(lab, "/captures/n1:%d/slice?start_ns=0&end_ns=9"
                            % real[0])
    check_eq(code, 307, "all ranks' slice")
    check_eq(hdrs["location"], "%s/captures/%d/slice?start_ns=0&end_ns=9" % (
        n1.base, real[0]), "all ranks' slice to its node")
    # A delete on a node: a tombstone, gone from the lab view.
    check_eq(n1.delete("/captures/%d" % real[0])[0], 200, "delete")
    wait_for(lambda: f.pg.value(
        "SELECT deleted FROM fleet.captures WHERE node = 'n1' AND id = %d"
        % real[0]) == "t" and outbox(n1) == 0, WAIT, "the delete published")
    check_eq(f.pg.value("SELECT count(*) FROM fleet.capture_tables t JOIN"
                        " fleet.captures c USING (node, uuid) WHERE"
                        " c.id = %d AND c.node = 'n1'" % real[0]), "0",
             "its tables gone")
    wait_for(lambda: lab.get("/captures/n1:%d" % real[0])[0] == 404, WAIT,
             "the lab view hears of the delete")
    check_once(f.pg, n1, "n1")


def raw_get(d, path):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, body


# ---- web ----

def case_web():
    chromium = next((p for p in ("/usr/bin/chromium",
                                 shutil.which("chromium")) if p), None)
    if not chromium:
        print("skipped: no chromium")
        sys.exit(SKIPPED)
    import test_web
    with Fleet() as f:
        tops = verdict_sets(f.dir)
        n1, n2 = start(f.node("n1")), start(f.node("n2"))
        a = imported(n1, tops["base"], **CONFIG)
        b = imported(n2, tops["noise"], **CONFIG)
        c = imported(n1, tops["slow"], **CONFIG)
        drained(f.pg, n1, "n1")
        drained(f.pg, n2, "n2")
        lab = start(f.lab())
        followed(lab, "n1", [a, c])
        followed(lab, "n2", [b])
        key = json.dumps(["gen-model", 2, 1024, 1024, 8, None, 0],
                         separators=(",", ":"))
        url = "%s/#/trend?config=%s" % (lab.base, key.replace(
            '"', "%22"))
        dom, page = test_web.dump_dom(chromium, url)
        refs = re.findall(r'<a href="#/captures/([^"]+)" class="point"',
                          dom)
        want = ["n1:%d" % a, "n2:%d" % b, "n1:%d" % c]
        if refs[:6] != want + want:  # what the page said instead
            print("trend page texts: %r" % page.texts[:80], file=sys.stderr)
        # Three charts (decode, step, families: five series) link them.
        check_eq(refs[:6], want + want, "points linked, oldest first")
        check("Decode p50" in dom and "n2:%d" % b in dom, "trend page")
        decode = get_ok(n2, "/captures/%d/steps" % b)["rows"]
        p50 = [r for r in decode if r["kind"] == "decode"][0]
        check("n2:%d %s ns" % (b, "{:,}".format(p50["steady_p50_ns"]))
              in dom, "the point's figure in the text alternative")
        shots = test_web.artifacts_dir()
        test_web.chromium_run(chromium, url, "--window-size=1200,1400",
                              "--screenshot=" + os.path.join(
                                  shots, "fleet-trend.png"))
        # The point opens its capture: node and id together.
        dom, _ = test_web.dump_dom(chromium, "%s/#/captures/n2:%d" % (
            lab.base, b))
        check("Import #n2:%d" % b in dom, "the capture page of n2:%d" % b)
        dom, _ = test_web.dump_dom(chromium, lab.base + "/#/")
        for node, cid in (("n1", a), ("n2", b), ("n1", c)):
            check('href="#/captures/%s:%d"' % (node, cid) in dom,
                  "the lab's list links %s:%d" % (node, cid))
        print("web: the trend's points and the list link n1:%d, n2:%d, "
              "n1:%d" % (a, b, c))


# ---- roles ----

def as_role(pg, role, sql):
    """psql over TCP as role (its password), returning the result."""
    return subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v",
                           "ON_ERROR_STOP=1", "-d", pg.dsn(user=role,
                                                           tcp=True),
                           "-c", sql], capture_output=True, text=True,
                          env=dict(os.environ, PGPASSWORD="pw-" + role))


def case_roles():
    with Fleet() as f:
        n1, n2 = start(f.node("n1")), start(f.node("n2"))
        import_small(n1, 1)
        import_small(n2, 1)
        drained(f.pg, n1, "n1")
        drained(f.pg, n2, "n2")
        bad = as_role(f.pg, "n1", "INSERT INTO fleet.captures(node, uuid, id,"
                      " kind, status, store_version) VALUES ('n2',"
                      " gen_random_uuid(), 7, 'import', 'done', 6)")
        check(bad.returncode != 0 and "row-level security" in bad.stderr,
              "n1 writes a row of n2: %s" % bad.stderr)
        for sql in ("UPDATE fleet.captures SET label = 'x' WHERE node = 'n2'",
                    "DELETE FROM fleet.capture_tables WHERE node = 'n2'",
                    "DELETE FROM fleet.captures WHERE node = 'n2'"):
            got = as_role(f.pg, "n1", sql)
            check(got.returncode == 0, sql + got.stderr)
        check_eq(as_role(f.pg, "n1", "SELECT count(*) FROM fleet.captures")
                 .stdout.strip(), "1", "n1 sees its own rows only")
        check_once(f.pg, n2, "n2")
        for sql in ("INSERT INTO fleet.nodes(node) VALUES ('lab')",
                    "DELETE FROM fleet.captures",
                    "UPDATE fleet.capture_tables SET rows = '[]'"):
            got = as_role(f.pg, "lab", sql)
            check(got.returncode != 0 and "permission denied" in got.stderr,
                  "the lab's role: %s: %s" % (sql, got.stderr))
        check_eq(as_role(f.pg, "lab", "SELECT count(*) FROM fleet.captures")
                 .stdout.strip(), "2", "the lab reads every row")
        # A node named otherwise than its role: refused, said.
        n3 = start(f.node("n3", dsn=f.dsn("n1")))
        import_small(n3, 1)
        wait_for(lambda: "fleet" in health(n3).get("reason", ""), 30,
                 "degraded")
        check("a node's role is named as the node" in health(n3)["reason"],
              health(n3))
        check_eq(outbox(n3), 1, "kept in the outbox")
        n3.stop()
        check("node_name is \"n3\" but fleet_dsn's role is \"n1\"" in
              n3.log_text(), n3.log_text())
        # A password in fleet_dsn: traced refuses to start.
        out = subprocess.run([TRACED_BIN, "--listen", "127.0.0.1:0", "--db",
                              os.path.join(f.dir, "x.db"), "--trace-root",
                              f.dir, "--fleet-dsn", "host=127.0.0.1 "
                              "password=secret user=n1"],
                             capture_output=True, text=True, timeout=60)
        check(out.returncode != 0 and "fleet_dsn holds a password" in
              out.stderr and "secret" not in out.stderr, out.stderr)
        print("roles: n1 cannot write n2's rows, the lab's role writes "
              "nothing, a node named otherwise than its role and a DSN "
              "with a password are refused")


# ---- migrations ----

def case_migrate_race():
    with Fleet(migrate=False) as f:
        owner = f.pg.dsn()
        ds = [f.node(n, dsn=owner) for n in ("n1", "n2")]
        for d in ds:   # at once
            os.makedirs(d.conf["trace_root"], exist_ok=True)
        procs = [subprocess.Popen([TRACED_BIN, "--config", d.write_conf()],
                                  stdout=open(d.log_path, "ab"),
                                  stderr=subprocess.STDOUT) for d in ds]
        try:
            for d, p in zip(ds, procs):
                d.proc, d.log = p, open(d.log_path, "ab")
                wait_for(lambda: ok(d), 60, "started")
            for d in ds:
                import_small(d, 2)
            for d, n in zip(ds, ("n1", "n2")):
                drained(f.pg, d, n)
        finally:
            for d in ds:
                d.stop()
        check_eq(f.pg.psql("SELECT version FROM fleet.schema_migrations"),
                 [["1"]], "migrated once")
        again = f.migrate()
        check("nothing to do" in again.stdout, again.stdout)
        print("migrate_race: two nodes at once on an empty database: one "
              "migration, both published")


def ok(d):
    try:
        return d.get("/healthz")[0] == 200
    except OSError:
        return False


# ---- backfill ----

def case_backfill():
    with Fleet() as f:
        d = f.node("n1")
        plain = dict(d.conf)
        del plain["fleet_dsn"]
        d.conf = plain
        start(d)
        ids = import_small(d, 12)
        d.stop()
        d.conf = dict(plain, fleet_dsn=f.dsn("n1"), fleet_backfill_per_s="4")
        t0 = time.time()
        start(d)
        drained(f.pg, d, "n1")
        took = time.time() - t0
        check_eq(sorted(published(f.pg, "n1")), ids, "backfilled")
        spread = float(f.pg.value(
            "SELECT extract(epoch FROM max(published_at) - min(published_at))"
            " FROM fleet.captures WHERE node = 'n1'"))
        # 4 a second, the first second's at once: 12 take 2 s at least.
        check(spread >= 1.5, "published over %.2f s" % spread)
        check_eq(metric(d, "traced_fleet_backfilled_total"), 12, "counted")
        print("backfill: 12 old captures published over %.1f s (%.1f s "
              "after the start) at 4 a second" % (spread, took))


# ---- faults ----

def fault_then_recover(f, fault, recover, n=6):
    """Node n1 imports n captures; fault() while they are published, then
    the outbox keeps them (/healthz degraded) until recover()."""
    d = start(f.node("n1"))
    first = import_small(d, 1)
    drained(f.pg, d, "n1")
    lab = start(f.lab())
    followed(lab, "n1", first)
    check_capture(lab, d, "n1", first[0], full=False)
    ids = import_small(d, n, wait=False)
    wait_for(lambda: metric(d, "traced_fleet_published_total") >= 2, WAIT,
             "publishing")
    fault()   # while the others are indexed and published
    ids += import_small(d, 2, wait=False)   # and some surely after it
    for i in ids:
        d.wait_status(i, timeout=WAIT)
    wait_for(lambda: "fleet: " in health(d).get("reason", ""), 60,
             "/healthz degraded for the fleet")
    waiting = outbox(d)
    check(waiting >= 1, "the outbox holds what was not sent: %s" % waiting)
    check(metric(d, "traced_fleet_outbox_age_seconds") >= 2, "its age")
    during(f, d, lab, first[0])
    recover()
    ids = drained(f.pg, d, "n1")
    check_eq(health(d)["status"], "ok", "healthy again")
    followed(lab, "n1", ids)
    for i in ids:
        check_capture(lab, d, "n1", i, full=i == ids[-1])
    return waiting


def during(f, d, lab, copied):
    """While PostgreSQL cannot be reached: the lab view answers the copy it
    has and refuses the others at once."""
    if f.pg.running:
        return
    t = time.time()
    check_eq(lab.get("/captures/n1:%d/kernels" % copied)[0], 200,
             "a copy answers without PostgreSQL")
    other = [c["id"] for c in get_ok(lab, "/fleet/captures")["captures"]
             if c["id"] != copied]
    if other:
        code, body = lab.get("/captures/n1:%d/kernels" % other[0])
        check_eq(code, 503, "no copy, no PostgreSQL: %s" % body)
    check(time.time() - t < 8, "answered in %.1f s" % (time.time() - t))


def case_stop():
    with Fleet() as f:
        n = fault_then_recover(f, lambda: f.pg.stop("fast"), f.pg.start)
        print("stop: %d captures waited in the outbox while PostgreSQL was "
              "stopped; each published once after" % n)


def case_kill9():
    with Fleet() as f:
        n = fault_then_recover(f, f.pg.kill9, f.pg.start)
        print("kill9: %d captures waited while PostgreSQL was down after "
              "kill -9; each published once after" % n)


def case_after_commit():
    with Fleet() as f:
        d = start(f.node("n1", env={"TRACED_FLEET_FAULT":
                                    "exit_after_commit"}))
        cid = import_small(d, 1)[0]
        wait_for(lambda: d.proc.poll() is not None, WAIT, "the crash")
        d.proc = None
        d.log.close()
        check_eq(published(f.pg, "n1"), {cid: 1}, "committed")
        before = f.pg.psql("SELECT uuid, published_at, seq FROM"
                           " fleet.captures")
        (uuid, nt), = tables_each(f.pg, "n1").items()
        check_eq(sqlite_count(d, "SELECT count(*) FROM fleet_outbox"), 1,
                 "its outbox row survived the crash")
        d.env = None
        start(d)
        drained(f.pg, d, "n1")
        check_eq(f.pg.psql("SELECT uuid, published_at, seq FROM"
                           " fleet.captures"), before, "not doubled")
        check_eq(tables_each(f.pg, "n1"), {uuid: nt}, "its tables once")
        check_eq(metric(d, "traced_fleet_published_total"), 1,
                 "sent again")
        lab = start(f.lab())
        followed(lab, "n1", [cid])
        check_capture(lab, d, "n1", cid)
        print("after_commit: killed between the commit and the outbox; "
              "sent again at the restart, one row, %d tables" % nt)


def sqlite_count(d, sql):
    out = subprocess.run(["sqlite3", d.conf["db"], sql], capture_output=True,
                         text=True)
    return int(out.stdout.strip())


def case_two_nodes():
    with Fleet() as f:
        n1, n2 = start(f.node("n1")), start(f.node("n2"))
        a = import_small(n1, 8, wait=False)
        b = import_small(n2, 8, wait=False)
        for d, ids in ((n1, a), (n2, b)):
            for i in ids:
                d.wait_status(i, timeout=WAIT)
        ids1, ids2 = drained(f.pg, n1, "n1"), drained(f.pg, n2, "n2")
        seqs = [int(s) for s, in f.pg.psql("SELECT seq FROM fleet.captures"
                                           " ORDER BY seq")]
        check_eq(len(set(seqs)), len(seqs), "one change seq each")
        lab = start(f.lab())
        followed(lab, "n1", ids1)
        followed(lab, "n2", ids2)
        for d, node, ids in ((n1, "n1", ids1), (n2, "n2", ids2)):
            for i in ids:
                check_capture(lab, d, node, i, full=False)
        print("two_nodes: %d + %d captures published at once, each once"
              % (len(ids1), len(ids2)))


def case_rebuild():
    with Fleet() as f:
        d = start(f.node("n1"))
        old = import_small(d, 2)
        drained(f.pg, d, "n1")
        lab = start(f.lab())
        followed(lab, "n1", old)
        kept = {i: get_ok(d, "/captures/%d/kernels?limit=1000" % i)["rows"]
                for i in old}
        old_uuids = {i: u for i, u in f.pg.psql(
            "SELECT id, uuid FROM fleet.captures WHERE node = 'n1'")}
        d.stop()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(d.conf["db"] + suffix):
                os.unlink(d.conf["db"] + suffix)
        start(d)
        new = import_small(d, 3, wait=True)
        check_eq(new[:2], old, "ids counted again")
        wait_for(lambda: outbox(d) == 0 and len(published(f.pg, "n1")) == 3,
                 WAIT, "published")
        check_once(f.pg, d, "n1", old=[int(i) for i in old_uuids])
        uuids = f.pg.psql("SELECT uuid FROM fleet.captures WHERE node = 'n1'")
        check_eq(len({u for u, in uuids}), 5, "five UUIDs")
        followed(lab, "n1", new)
        wait_for(lambda: len(get_ok(lab, "/fleet/captures?node=n1")
                             ["captures"]) == 5, WAIT, "five listed")
        for i in new:   # node:id names the new capture
            check_capture(lab, d, "n1", i, full=False)
        for i, u in old_uuids.items():   # the old ones by their uuid
            rows = get_ok(lab, "/captures/%s/kernels?limit=1000" % u)["rows"]
            check_eq(rows, kept[int(i)], "old %s (%s)" % (i, u))
        refs = {c["ref"] for c in get_ok(lab, "/fleet/captures?node=n1")
                ["captures"]}
        check(set(old_uuids.values()) <= refs, "old ones listed by uuid")
        print("rebuild: 2 old captures kept under their UUIDs, 3 new with "
              "new ones; n1:1 and n1:2 name the new")


def case_newer_schema():
    with Fleet() as f:
        f.pg.psql("INSERT INTO fleet.schema_migrations(version) VALUES (99)")
        d = start(f.node("n1"))
        ids = import_small(d, 2)
        wait_for(lambda: "fleet" in health(d).get("reason", ""), 60,
                 "degraded")
        reason = health(d)["reason"]
        check("the fleet's schema is version 99, newer than this traced's 1:"
              " upgrade traced" in reason, reason)
        # The metric follows the outbox at the publisher's next look.
        wait_for(lambda: outbox(d) == 2, 30, "both imports in the outbox")
        check_eq((outbox(d), published(f.pg, "n1")), (2, {}), "kept")
        out = f.migrate()
        check(out.returncode == 1 and "newer than this traced's" in
              out.stderr, out.stderr)
        f.pg.psql("DELETE FROM fleet.schema_migrations WHERE version = 99")
        check_eq(drained(f.pg, d, "n1"), ids, "published once it is not")
        print("newer_schema: refused (%s), nothing lost" % reason[:80])


def case_password():
    with Fleet() as f:
        path = f.passfile("n1")
        good = open(path).read()
        with open(path, "w") as fh:
            fh.write(good.replace("pw-n1", "wrong"))
        d = start(f.node("n1"))
        ids = import_small(d, 2)
        wait_for(lambda: "fleet" in health(d).get("reason", ""), 60,
                 "degraded")
        reason = health(d)["reason"]
        check("password authentication failed" in reason, reason)
        check("wrong" not in reason and "wrong" not in d.log_text(),
              "the password is never said")
        check_eq(outbox(d), 2, "kept")
        with open(path, "w") as fh:
            fh.write(good)
        check_eq(drained(f.pg, d, "n1"), ids, "published with the password")
        print("password: refused (%s), published once right" % reason[:90])


def case_disk():
    with small_disk("64m") as mnt:
        pg = pgtest.Cluster().init().start()
        try:
            space = os.path.join(mnt, "pg")
            os.makedirs(space)
            os.chmod(os.path.dirname(mnt), 0o755)   # the server goes in
            pgtest._chown(space)
            pg.psql("CREATE TABLESPACE small LOCATION '%s'" % space,
                    db="postgres")
            pg.psql("CREATE DATABASE fleet TABLESPACE small", db="postgres")
        except Exception:
            pg.remove()
            raise
        with Fleet(pg=pg) as f:
            n = fault_then_recover(f, lambda: fill(mnt),
                                   lambda: os.unlink(os.path.join(
                                       mnt, "filler")))
            print("disk: %d captures waited while PostgreSQL's disk was full,"
                  " one outbox row each; each published once after" % n)


def fill(folder):
    from tracedtest import fill as fill_disk
    fill_disk(folder)


def case_standby():
    with Fleet() as f:
        d = start(f.node("n1"))
        ids = import_small(d, 2)
        drained(f.pg, d, "n1")
        sb = f.pg.standby()
        try:
            check_eq(sb.value("SELECT pg_is_in_recovery()", db="fleet"), "t",
                     "a standby")
            lab = start(f.lab(dsn=sb.dsn(user="lab", tcp=True,
                                         passfile=f.passfile("lab"))))
            followed(lab, "n1", ids)
            for i in ids:
                check_capture(lab, d, "n1", i, full=i == ids[0])
            more = import_small(d, 1)
            drained(f.pg, d, "n1")
            followed(lab, "n1", more)   # streamed to the standby
            check_capture(lab, d, "n1", more[0], full=False)
            check_eq(health(lab)["status"], "ok", "healthy")
        finally:
            sb.stop()
        print("standby: the lab view read %d captures from a streaming "
              "standby, one of them published after it started" %
              (len(ids) + 1))


def case_sweep():
    """A sweep on a node driving the simulator (docs/SWEEPS.md): its
    points are published as the captures they are; the lab view lists the
    sweep (/fleet/sweeps), answers /sweeps/<node:id> with the node's
    points under the node's ids, its scaling with the node's very fits,
    and a second sweep compared with it as the node compares them."""
    import test_capture_lib
    with Fleet() as f:
        rig = test_capture_lib.Rig(conf={
            "fleet_dsn": f.dsn("n2"), "node_name": "n2",
            "import_roots": "%s:%s" % (TRACES_DIR, f.dir),
            "fleet_outbox_max_age_s": "2"}, scale=10)
        rig.start()
        try:
            sweep_on_lab(f, rig.d)
        finally:
            rig.close()


def sweep_run(n2):
    """A sweep of 1, 2 and 4 on n2's simulator, run to its end: its id."""
    code, sw = n2.post("/sweeps", {"model": os.path.join(
        n2.conf["model_roots"], "Sim-Model"), "tp": 2, "isl": 8, "osl": 4,
        "conc": [1, 2, 4]})
    check_eq(code, 202, "sweep: %s" % sw)
    wait_for(lambda: get_ok(n2, "/sweeps/%d" % sw["id"])["status"] in FINAL,
             WAIT, "the sweep", every=0.2)
    return sw["id"]


def sweep_on_lab(f, n2):
    sid = sweep_run(n2)
    mine = get_ok(n2, "/sweeps/%d" % sid)
    check_eq(mine["status"], "done", "the sweep on its node")
    ids = drained(f.pg, n2, "n2")
    lab = start(f.lab())
    followed(lab, "n2", ids)
    ref = "n2:%d" % sid
    check_eq([(s["ref"], s["points_published"], s["points_done"],
               sorted(s["conc"])) for s in get_ok(lab, "/fleet/sweeps")[
                   "sweeps"]], [(ref, 3, 3, [1, 2, 4])], "the fleet's sweeps")
    theirs = get_ok(lab, "/sweeps/" + ref)
    check_eq((theirs["status"], [(p["conc"], p["capture"], p["capture_node"])
                                 for p in theirs["points"]]),
             ("done", [(p["conc"], p["capture"], "n2")
                       for p in mine["points"]]), "its points in the lab")
    own = get_ok(n2, "/sweeps/%d/scaling" % sid)
    lab_sc = get_ok(lab, "/sweeps/%s/scaling" % ref)
    check(own["rows"], "fits on the node")
    check_eq(lab_sc["rows"], own["rows"], "the lab's fits are the node's")
    check_eq(lab_sc["scenarios"], own["scenarios"], "its scenarios")
    check_eq(lab.get("/sweeps/n2:999")[0], 404, "an unknown sweep")
    compare_on_lab(f, n2, lab, sid)


def compare_on_lab(f, n2, lab, a):
    """A second sweep of the same ladder compared with the first on the
    lab view as on its node: each point's verdict the lab's own verdict
    of the pair, the slopes the node's, the captures named by the node."""
    b = sweep_run(n2)
    followed(lab, "n2", drained(f.pg, n2, "n2"))
    own = get_ok(n2, "/sweeps/%d/compare?to=%d" % (b, a))
    theirs = get_ok(lab, "/sweeps/n2:%d/compare?to=n2:%d" % (b, a))
    check_eq((theirs["a"], theirs["a_node"], theirs["b"], theirs["b_node"]),
             (b, "n2", a, "n2"), "the sweeps compared")
    check_eq([(p["conc"], p["a_capture"], p["a_capture_node"], p["b_capture"],
               p["b_capture_node"]) for p in theirs["points"]],
             [(p["conc"], p["a_capture"], "n2", p["b_capture"], "n2")
              for p in own["points"]], "the points paired, the node's ids")
    check_eq(len(theirs["points"]), 3, "three points compared")
    for p in theirs["points"]:
        v = get_ok(lab, "/captures/n2:%d/verdict?baseline=n2:%d" % (
            p["a_capture"], p["b_capture"]))
        check_eq(p["verdict"], v["verdict"], "conc %d's verdict" % p["conc"])
    check(own["slopes"], "slopes on the node")
    check_eq(theirs["slopes"], own["slopes"], "the lab's slopes are the node's")
    code, text = lab.request("GET", "/sweeps/n2:%d/compare?to=n2:%d&format=csv"
                             % (b, a), raw=True)
    check_eq((code, text.decode().count("\r\n")), (200, 4), "CSV: %s" % text)
    for q, field in (("to=n2:%d" % b, "to"), ("to=n2:999", "to"),
                     ("to=n2:x", "to"), ("", "to")):
        code, out = lab.get("/sweeps/n2:%d/compare?%s" % (b, q))
        check_eq((code // 100, out["error"]["field"]), (4, field),
                 "%s: %s" % (q, out))
    print("sweep: the lab compares n2:%d with n2:%d as n2 does: %s" % (
        b, a, [p["verdict"] for p in theirs["points"]]), flush=True)


def case_bad_dsn():
    top = tempfile.mkdtemp(prefix="traced-fleet-dsn-")
    try:
        for dsn, said in (
                ("host=127.0.0.1 password=s3cr3t user=n1",
                 "fleet_dsn holds a password"),
                ("postgresql://n1:s3cr3t@127.0.0.1/fleet",
                 "fleet_dsn holds a password"),
                ("host=127.0.0.1 ==s3cr3t",
                 "fleet_dsn is not a libpq connection string")):
            out = subprocess.run(
                [TRACED_BIN, "--listen", "127.0.0.1:0", "--db",
                 os.path.join(top, "x.db"), "--trace-root", top,
                 "--atom-scripts", "/nonexistent", "--fleet-dsn", dsn],
                capture_output=True, text=True, timeout=60)
            check_eq(out.returncode, 1, "%s: exit status (%s)" % (
                said, out.stderr))
            check(said in out.stderr and "s3cr3t" not in out.stderr and
                  "Assertion" not in out.stderr, out.stderr)
        print("bad_dsn: a password and an unparsable DSN: exit 1, said")
    finally:
        shutil.rmtree(top, ignore_errors=True)


CASES = {"e2e": case_e2e, "web": case_web, "roles": case_roles,
         "migrate_race": case_migrate_race, "backfill": case_backfill,
         "stop": case_stop, "kill9": case_kill9,
         "after_commit": case_after_commit, "two_nodes": case_two_nodes,
         "rebuild": case_rebuild, "newer_schema": case_newer_schema,
         "password": case_password, "disk": case_disk,
         "standby": case_standby, "bad_dsn": case_bad_dsn,
         "sweep": case_sweep}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: test_fleet.py " + "|".join(CASES))
    if sys.argv[1] != "bad_dsn":
        pgtest.need_server()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    CASES[sys.argv[1]]()
