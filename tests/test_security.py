"""traced in a hostile local world (docs/SECURITY.md): each attack against a real
daemon over real sockets, as another user of the machine would try it.

Usage: test_security.py CASE, CASE one of
  files     no byte of a file outside the import roots is ever served: a
            trace linked to a secret, a rank folder linked out of the root,
            a folder of linked files, a trace or rank folder swapped for a
            link (or a FIFO) after indexing, a log swapped for a link; a
            rank that fails keeps no path; POST /imports answers the same
            for existing and missing paths outside the roots.
  fifos     FIFOs named like traces (in rank folders, a folder of them, one
            given as the path) end in a clear failure within seconds, and
            the import after them finishes.
  browser   what a page in a browser on the machine can send: a text/plain
            or form POST is 415, a foreign or null Origin 403 (POST, DELETE,
            preflight), a Host that does not name traced 403 (DNS
            rebinding), a cross-site fetch 403; the dashboard's own
            same-origin requests pass; no CORS header is ever sent; every
            answer carries the CSP and safe headers; HEAD / needs no token
            as GET / does not.
  args      server_args may not set a flag traced sets itself (or one that
            would make the server write a file of the client's choice) in
            any spelling ATOM's parser takes: kebab, snake, "=value", an
            abbreviation, -tp/-t; bench_args neither its result path; a
            word with a space is refused unless it is JSON (stored
            compact); env may never set a variable of the deny list, even
            when env_allow admits its prefix.
  disk      the database on a small tmpfs, filled: writes answer 507 with a
            clear error, /healthz says degraded with the reason (and
            /metrics traced_store_degraded 1); once space is freed, writes
            and the DELETE of a finished import work and /healthz is ok.
            Exits 77 (skipped) where tmpfs cannot be mounted.
  slowloris 1,100 connections from 127.0.0.1, half trickling a header line
            every 2 s, half idle: /healthz from 127.0.0.2 answers within 1 s
            throughout; at most max_connections_per_client of them are
            kept, and those are closed at request_timeout_s although they
            keep sending (the deadline runs from the request's start).
  secrets   the token in no command line (ps) and no file others may
            read; the installed configuration private; the start-up
            warnings true: none with a long token from either setting, "no
            auth_token" only without both, a token under 16 bytes said so.
  echo      the command line's and the configuration file's errors name the
            key, never a value: --auth-token=SECRET, an unknown key with a
            value, a value in a key's place, a bad number or word, a bad
            listen, a line of the file; each exits 2 without the secret
            on stdout or stderr.
"""
import errno
import http.client
import json
import os
import re
import resource
import socket
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (SRC_DIR, TRACED_BIN, TRACES_DIR, Daemon,  # noqa
                        check, check_eq, fill, post_until_refused,
                        small_disk)

SMALL = "tracelens__mi210_gpu_only_trace.json.gz"
SECRET = b"TRACED-SECRET-7f3a9c: never to be served\n"


def error_of(resp, status, what):
    code, body = resp
    check_eq(code, status, "%s: status (%r)" % (what, body))
    check(isinstance(body, dict) and "error" in body, what + ": " + repr(body))
    return body["error"]


def no_secret(resp, what):
    """resp = (code, body): no byte of the secret in it."""
    body = resp[1] if isinstance(resp[1], bytes) else json.dumps(resp[1])
    body = body if isinstance(body, bytes) else body.encode()
    check(SECRET[:20] not in body, "%s served the secret: %r" % (what,
                                                                 body[:200]))


class World:
    """An import root, a secret outside it, and a daemon that may read the
    root. Everything lives in private temp folders."""

    def __init__(self, **conf):
        self.top = tempfile.mkdtemp(prefix="traced-sec-")
        self.root = os.path.join(self.top, "imports")
        self.outside = os.path.join(self.top, "outside")
        os.makedirs(self.root)
        os.makedirs(self.outside)
        self.secret = os.path.join(self.outside, "secret.json.gz")
        with open(self.secret, "wb") as f:
            f.write(SECRET)
        conf.setdefault("import_roots", self.root)
        conf.setdefault("atom_scripts", os.path.join(self.top, "none"))
        self.d = Daemon(conf=conf)

    def folder(self, name, files=(SMALL,)):
        """root/name/rank_<i>/t.pt.trace.json.gz, copies of real traces."""
        top = os.path.join(self.root, name)
        for i, f in enumerate(files):
            os.makedirs(os.path.join(top, "rank_%d" % i))
            shutil.copy(os.path.join(TRACES_DIR, f), self.rank_file(top, i))
        return top

    @staticmethod
    def rank_file(top, i):
        return os.path.join(top, "rank_%d" % i, "t%d.pt.trace.json.gz" % i)

    def imported(self, path, status="done", timeout=60):
        code, cap = self.d.post("/imports", {"path": path})
        check_eq(code, 202, "POST /imports %s: %r" % (path, cap))
        cap = self.d.wait_status(cap["id"], timeout=timeout)
        check_eq(cap["status"], status, "import of %s: %r" % (path, cap))
        return cap

    def close(self):
        shutil.rmtree(self.top, ignore_errors=True)


def raw(d, method, path, body=None, headers=None, source="127.0.0.1"):
    """(status, lower-case headers, body bytes), every header as given (a
    Host among them replaces http.client's), from the address source."""
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30,
                                      source_address=(source, 0))
    try:
        hdrs = dict(headers or {})
        conn.putrequest(method, path, skip_host="Host" in hdrs,
                        skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def trace(d, cid, rank):
    return d.get("/captures/%d/ranks/%d/trace" % (cid, rank), raw=True)


# ---- files ----

def check_linked_at_import(w):
    """Links in an import folder are refused by the scan, named, and no
    rank is stored (so none can be served)."""
    d = w.d
    top = w.folder("linked_file")
    os.unlink(w.rank_file(top, 0))
    os.symlink(w.secret, w.rank_file(top, 0))
    os.symlink(w.outside, os.path.join(w.folder("linked_dir"), "rank_1"))
    files = os.path.join(w.root, "linked_files")
    os.makedirs(files)
    shutil.copy(os.path.join(TRACES_DIR, SMALL), os.path.join(files, "a.json.gz"))
    os.symlink(w.secret, os.path.join(files, "b.json.gz"))
    for path, named in [(top, "rank_0/t0.pt.trace.json.gz"),
                        (os.path.join(w.root, "linked_dir"), "rank_1"),
                        (files, "b.json.gz")]:
        cap = w.imported(path, "failed")
        msg = cap["error"]["message"]
        check(named in msg and "symbolic link" in msg,
              "the refusal names %s: %r" % (named, msg))
        check_eq(cap["ranks"], [], "no rank stored for %s" % path)
        for rank in (0, 1):
            resp = trace(d, cap["id"], rank)
            check_eq(resp[0], 404, "trace of a refused import")
            no_secret(resp, "trace of %s" % path)


def check_failed_rank_keeps_no_path(w):
    """A rank that fails to index keeps no path: its file is never served,
    not even after it is swapped for a link to the secret."""
    d = w.d
    top = w.folder("half_bad", [SMALL, SMALL])
    with open(w.rank_file(top, 1), "wb") as f:
        f.write(b"this is no trace")
    cap = w.imported(top, "failed")
    bad = [r for r in cap["ranks"] if r["status"] == "failed"]
    check_eq(len(bad), 1, "one failed rank: %r" % cap["ranks"])
    check(bad[0].get("file") is None, "failed rank keeps a path: %r" % bad)
    check_eq(trace(d, cap["id"], 1)[0], 404, "trace of the failed rank")
    os.unlink(w.rank_file(top, 1))
    os.symlink(w.secret, w.rank_file(top, 1))
    resp = trace(d, cap["id"], 1)
    check_eq(resp[0], 404, "trace of the failed rank, linked")
    no_secret(resp, "failed rank")
    check_eq(trace(d, cap["id"], 0)[0], 200, "the good rank is served")


def check_swapped_after_indexing(w):
    """A done import whose files change under it: a trace swapped for a
    link or a FIFO, a rank folder swapped for a link: 403 or 404 at once,
    never a byte of the target."""
    d = w.d
    top = w.folder("swapped", [SMALL, SMALL, SMALL])
    cap = w.imported(top)
    cid = cap["id"]
    with open(w.rank_file(top, 0), "rb") as f:
        check_eq(trace(d, cid, 0), (200, f.read()), "trace before the swap")
    os.unlink(w.rank_file(top, 0))
    os.symlink(w.secret, w.rank_file(top, 0))
    os.unlink(w.rank_file(top, 1))
    os.mkfifo(w.rank_file(top, 1))
    shutil.rmtree(os.path.join(top, "rank_2"))
    os.makedirs(os.path.join(w.outside, "rank_2"))
    shutil.copy(w.secret, w.rank_file(w.outside, 2))
    os.symlink(os.path.join(w.outside, "rank_2"), os.path.join(top, "rank_2"))
    for rank, what in [(0, "trace swapped for a link"),
                       (1, "trace swapped for a FIFO"),
                       (2, "rank folder swapped for a link")]:
        t0 = time.time()
        resp = trace(d, cid, rank)
        check(resp[0] in (403, 404), "%s: %r" % (what, resp))
        check(time.time() - t0 < 5, what + ": slow")
        no_secret(resp, what)
    os.unlink(os.path.join(top, "rank_2"))
    shutil.rmtree(top)
    check_eq(trace(d, cid, 0)[0], 404, "trace of a removed folder")


def check_log_swapped(w):
    """A log of a capture (here the fallback folder of an import) that is a
    link: refused, never followed."""
    d = w.d
    cap = w.imported(w.folder("logged"))
    logs = os.path.join(d.conf["trace_root"], "logs", str(cap["id"]))
    os.makedirs(logs, exist_ok=True)   # its ranks' collectives are there
    os.symlink(w.secret, os.path.join(logs, "server.log"))
    resp = d.get("/captures/%d/logs?which=server" % cap["id"], raw=True)
    check(resp[0] in (403, 404), "log linked to the secret: %r" % (resp,))
    no_secret(resp, "log")


def check_no_existence_oracle(w):
    """Outside the roots, existing and missing paths get the same answer,
    through a link inside the root or not, with ".." or not."""
    d = w.d
    link = os.path.join(w.root, "to_outside")
    os.symlink(w.outside, link)
    answers = []
    for path in [w.secret, os.path.join(w.outside, "missing"),
                 os.path.join(link, "secret.json.gz"),
                 os.path.join(link, "missing"),
                 os.path.join(link, "missing", "deeper"),
                 w.root + "/../outside/secret.json.gz",
                 w.root + "/../outside/missing"]:
        err = error_of(d.post("/imports", {"path": path}), 403,
                       "import of " + path)
        answers.append((err["code"], err["field"],
                        err["message"].replace(path, "<path>")))
    check_eq(len(set(answers)), 1, "one answer outside: %r" % answers)
    os.unlink(link)


def case_files():
    w = World()
    try:
        with w.d:
            check_linked_at_import(w)
            check_failed_rank_keeps_no_path(w)
            check_swapped_after_indexing(w)
            check_log_swapped(w)
            check_no_existence_oracle(w)
    finally:
        w.close()


# ---- fifos ----

def case_fifos():
    """More FIFOs than index_jobs (2): a blocking open would hold every
    indexing thread; each import must fail fast, naming the FIFO, and the
    good import after them must finish."""
    w = World()
    try:
        with w.d as d:
            fifo_ranks = os.path.join(w.root, "fifo_ranks")
            for i in range(4):
                os.makedirs(os.path.join(fifo_ranks, "rank_%d" % i))
                os.mkfifo(os.path.join(fifo_ranks, "rank_%d" % i,
                                       "t.pt.trace.json"))
            fifo_files = os.path.join(w.root, "fifo_files")
            os.makedirs(fifo_files)
            for i in range(4):
                os.mkfifo(os.path.join(fifo_files, "r%d.json" % i))
            t0 = time.time()
            for path in (fifo_ranks, fifo_files):
                cap = w.imported(path, "failed", timeout=20)
                check("FIFO" in cap["error"]["message"],
                      "names the FIFO: %r" % cap["error"])
            one = os.path.join(fifo_files, "r0.json")
            err = error_of(d.post("/imports", {"path": one}), 400,
                           "a FIFO as the path")
            check("FIFO" in err["message"], "names the FIFO: %r" % err)
            took = time.time() - t0
            check(took < 20, "FIFOs took %.1fs" % took)
            w.imported(w.folder("after"), timeout=30)
            print("fifos: two imports of 4 FIFOs each and a FIFO path "
                  "refused in %.2f s; the next import done after %.2f s" % (
                      took, time.time() - t0))
            check_eq(d.get("/healthz")[0], 200, "healthz")
    finally:
        w.close()


# ---- browser ----

CAPTURE = json.dumps({"model": "/models/x", "tp": 1}).encode()
JSON = {"Content-Type": "application/json"}


def refused(resp, status, field, what):
    code, hdrs, body = resp
    check_eq(code, status, "%s: %r" % (what, body))
    check_eq(json.loads(body)["error"]["field"], field, what + ": field")
    return hdrs


def check_no_cors(hdrs, what):
    bad = [k for k in hdrs if k.startswith("access-control-")]
    check(not bad, "%s: CORS headers %r" % (what, bad))


def check_simple_posts(d):
    """The POSTs a page may send without a preflight never reach a route."""
    for ctype in ("text/plain", "application/x-www-form-urlencoded",
                  "multipart/form-data; boundary=x", None,
                  "application/jsonx"):
        hdrs = {"Content-Type": ctype} if ctype else {}
        refused(raw(d, "POST", "/captures", CAPTURE, hdrs), 415,
                "Content-Type", "POST as %s" % ctype)
    code, _, body = raw(d, "POST", "/captures", CAPTURE,
                        {"Content-Type": "application/json; charset=utf-8"})
    check_eq(code, 202, "POST as JSON with a charset: %r" % body)
    return json.loads(body)["id"]


def check_origins(d, cid):
    port = d.port
    evil = {"Origin": "http://evil.example"}
    for origin in ("http://evil.example", "null",
                   "http://127.0.0.1:%d.evil.example" % port,
                   "http://localhost:%d" % port):
        hdrs = dict(JSON, Origin=origin)
        refused(raw(d, "POST", "/captures", CAPTURE, hdrs), 403, "Origin",
                "POST from %s" % origin)
    hdrs = refused(raw(d, "DELETE", "/captures/%d" % cid, None, evil), 403,
                   "Origin", "DELETE from a foreign origin")
    check_no_cors(hdrs, "DELETE")
    check_eq(d.get("/captures/%d" % cid)[0], 200, "not deleted")
    pre = dict(evil, **{"Access-Control-Request-Method": "DELETE",
                        "Access-Control-Request-Headers": "content-type"})
    hdrs = refused(raw(d, "OPTIONS", "/captures/%d" % cid, None, pre), 403,
                   "Origin", "preflight from a foreign origin")
    check_no_cors(hdrs, "preflight")
    code, hdrs, _ = raw(d, "OPTIONS", "/captures", None,
                        {"Origin": "http://127.0.0.1:%d" % port,
                         "Access-Control-Request-Method": "POST"})
    check_eq(code, 405, "preflight, same origin")
    check_no_cors(hdrs, "same-origin preflight")
    fetch = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
    refused(raw(d, "GET", "/captures", None, fetch), 403, "Sec-Fetch-Site",
            "cross-site fetch")
    nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    check_eq(raw(d, "GET", "/", None, nav)[0], 200, "a link from elsewhere")
    refused(raw(d, "POST", "/captures", CAPTURE, dict(JSON, **nav)), 403,
            "Sec-Fetch-Site", "a cross-site form POST")


def check_hosts(d):
    port = d.port
    for host in ("evil.example:%d" % port, "127.1.nip.io:%d" % port,
                 "127.0.0.1.nip.io:%d" % port, "localhost.evil:%d" % port,
                 "127.0.0.1:%d" % (port + 1), "127.0.0.1", "[::2]:%d" % port,
                 "127.0.0.1:%dx" % port):
        refused(raw(d, "POST", "/captures", CAPTURE, dict(JSON, Host=host)),
                403, "Host", "POST with Host %s" % host)
        refused(raw(d, "GET", "/captures", None, {"Host": host}), 403, "Host",
                "GET with Host %s" % host)
    for host in ("127.0.0.1:%d" % port, "localhost:%d" % port,
                 "LocalHost:%d" % port, "127.0.0.2:%d" % port,
                 "[::1]:%d" % port):
        origin = "http://" + host
        code, _, body = raw(d, "POST", "/captures", CAPTURE,
                            dict(JSON, Host=host, Origin=origin,
                                 **{"Sec-Fetch-Site": "same-origin"}))
        check_eq(code, 202, "same-origin POST via %s: %r" % (host, body))


def check_headers(d):
    for path in ("/", "/app.js", "/captures", "/nope"):
        code, hdrs, _ = raw(d, "GET", path)
        csp = hdrs.get("content-security-policy", "")
        for part in ("default-src 'none'", "script-src 'self'",
                     "frame-ancestors 'none'", "connect-src 'self'"):
            check(part in csp, "%s: CSP %r lacks %s" % (path, csp, part))
        check_eq((hdrs.get("x-content-type-options"),
                  hdrs.get("cross-origin-resource-policy")),
                 ("nosniff", "same-origin"), path + ": headers")
        if code == 200 and path != "/captures":
            check_eq((hdrs.get("referrer-policy"),
                      hdrs.get("x-frame-options"),
                      hdrs.get("cross-origin-opener-policy")),
                     ("no-referrer", "DENY", "same-origin-allow-popups"),
                     path + ": a page's headers")
        check_no_cors(hdrs, path)
    # The dashboard has no inline script or handler (the CSP blocks them).
    page = raw(d, "GET", "/")[2].decode()
    check(not re.search(r"<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+\s*=", page),
          "inline script in index.html")


def case_browser():
    w = World()
    try:
        with w.d as d:
            cid = check_simple_posts(d)
            check_origins(d, cid)
            check_hosts(d)
            check_headers(d)
    finally:
        w.close()
    token = "tok-3f9a"
    allowed = Daemon(conf={"auth_token": token, "allowed_hosts":
                           "traced.lab.example other.example",
                           "atom_scripts": "/nonexistent"})
    with allowed as d:
        for method in ("GET", "HEAD"):
            check_eq(raw(d, method, "/")[0], 200, method + " / without token")
            check_eq(raw(d, method, "/captures")[0], 401,
                     method + " /captures without token")
        auth = {"Authorization": "Bearer " + token}
        host = "traced.lab.example:%d" % d.port
        code, _, body = raw(d, "POST", "/captures", CAPTURE,
                            dict(JSON, Host=host, Origin="http://" + host,
                                 **auth))
        check_eq(code, 202, "POST via an allowed host: %r" % body)
        # Behind a reverse proxy: its own port in Host, or Host rewritten
        # to the listen address and the proxy's name in Origin.
        for hdrs in ({"Host": "traced.lab.example",
                      "Origin": "https://traced.lab.example"},
                     {"Host": "traced.lab.example:8443"},
                     {"Origin": "https://traced.lab.example"}):
            code, _, body = raw(d, "POST", "/captures", CAPTURE,
                                dict(JSON, **dict(auth, **hdrs)))
            check_eq(code, 202, "behind a proxy %r: %r" % (hdrs, body))
        refused(raw(d, "POST", "/captures", CAPTURE,
                    dict(JSON, Origin="https://evil.example", **auth)),
                403, "Origin", "a foreign origin, allowed_hosts set")
        refused(raw(d, "POST", "/captures", CAPTURE,
                    dict(JSON, Host="evil.example:%d" % d.port, **auth)),
                403, "Host", "a name not in allowed_hosts")


# ---- args ----

# ATOM's own options (atom/model_engine/arg_utils.py, api_server.py), with
# values of their kinds: a request may give them (atom/policy.c judges
# every word by ATOM's option set; tests/test_policy.py has the rest).
ATOM_FLAGS = [["--served-model-name", "x"], ["--served_model_name", "x"],
              ["-pp", "1"], ["-pcp", "1"], ["-dp", "1"], ["-dcp", "1"],
              ["--kv_cache_dtype", "fp8"], ["--kv-cache-dtype", "bf16"],
              ["--max-num-seqs", "8"], ["--moe-backend", "standard"],
              ["--method", "mtp"], ["--num-speculative-tokens", "2"],
              ["--enable-expert-parallel"], ["--gpu-memory-utilization=0.5"],
              ["--online_quant_config", "{}"], ["--chat-template", "x"],
              ["--max-model-len", "1024"]]
# Options traced sets itself, or that name an address: never from a request.
OWN = {"server_args": ["--model", "--tensor-parallel-size", "--server-port",
                       "--torch-profiler-dir", "--host", "--port"],
       "bench_args": ["--result-dir", "--result-filename", "--base-url",
                      "--host", "--port", "--model", "--num-prompts"]}


def spellings(flag):
    """Every word argparse (allow_abbrev, ATOM's two spellings) would take
    as flag: full, snake, =value, and each prefix."""
    out = []
    for f in {flag, "--" + flag[2:].replace("-", "_")}:
        out += [f, f + "=/x"]
        out += [f[:n] for n in range(3, len(f))]
        out += [f[:n] + "=/x" for n in range(3, len(f), 3)]
    return out


def post_args(d, **kw):
    body = {"model": "/models/x", "tp": 1}
    body.update(kw)
    return d.post("/captures", body)


def check_own_flags(d):
    """Full names are refused naming the option; an abbreviation is no
    option by its full name (traced judges only those)."""
    for member, flags in OWN.items():
        first = ["--enforce-eager"] if member == "server_args" else \
            ["--disable-tqdm"]
        for flag in flags:
            names = (flag, "--" + flag[2:].replace("-", "_"))
            for word in spellings(flag):
                err = error_of(post_args(d, **{member: first + [word, "1"]}),
                               400, "%s %s" % (member, word))
                check_eq(err["field"], member + "[1]", word + ": field")
                full = word.split("=")[0] in names
                check((flag in err["message"] or names[1] in err["message"])
                      if full else "full name" in err["message"],
                      "%s: %r" % (word, err))
    for word in ("-tp", "-tp=4", "-tp4", "-t", "-t=4"):
        err = error_of(post_args(d, server_args=[word]), 400, word)
        check("-tp" in err["message"] or "-t" in err["message"],
              "%s: %r" % (word, err))
    for words in ATOM_FLAGS:
        code, cap = post_args(d, server_args=words)
        check_eq(code, 202, "ATOM's own %s refused: %r" % (words, cap))
    code, cap = post_args(d, bench_args=["--num-warmups=0", "--seed", "3"])
    check_eq(code, 202, "bench_args: %r" % (cap,))


def check_spaces(d):
    for word in ("{% if x %}", "a b", '{"a": "x y"}', '"a b"', "[1, 2] x",
                 '{"a": 1, "a": 2}'):
        err = error_of(post_args(d, server_args=["--chat-template", word]),
                       400, "word %r" % word)
        check_eq(err["field"], "server_args[1]", "field of %r" % word)
    code, cap = post_args(d, server_args=[
        "--online_quant_config", '{"use_index_cache": true, "x": [1, 2]}'],
        bench_args=["--metadata", '{"k": "v"}'])
    check_eq(code, 202, "JSON words: %r" % (cap,))
    check_eq(cap["params"]["server_args"][1],
             '{"use_index_cache":true,"x":[1,2]}', "stored compact")
    check_eq(cap["params"]["bench_args"][1], '{"k":"v"}', "bench compact")


DENIED = ["HSA_TOOLS_LIB", "HSA_TOOLS_REPORT_LOAD_FAILURE", "NCCL_NET_PLUGIN",
          "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_ENV_PLUGIN",
          "NCCL_DEBUG_FILE", "NCCL_TOPO_FILE", "NCCL_GRAPH_DUMP_FILE",
          "ATOM_TORCH_PROFILER_DIR", "ATOM_RTL_TRACE_DIR", "ATOM_FWD_DUMP_DIR",
          "ATOM_DEBUG_TOPK_PATH", "ATOM_KV_EVENTS_ENDPOINT", "AITER_ASM_DIR",
          "ROCP_TOOL_LIBRARIES", "ROCPROFILER_REGISTER_LIB", "HIP_PATH",
          "TORCH_HOME", "AMD_LOG_LEVEL_FILE", "AMD_COMGR_REDIRECT_LOGS",
          "MIOPEN_USER_DB_PATH", "TORCH_EXTENSIONS_DIR", "LD_PRELOAD",
          "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP",
          "HIP_LD_PRELOAD_X"]
ALLOWED = ["NCCL_DEBUG", "HIP_VISIBLE_DEVICES", "ATOM_USE_TRITON_MOE",
           "AITER_LOG_LEVEL", "NCCL_SOCKET_IFNAME", "ATOM_PROFILER_TIMEOUT"]


def check_env(d):
    for name in DENIED:
        err = error_of(post_args(d, env={name: "/tmp/x"}), 400, name)
        check_eq(err["field"], "env." + name, name + ": field")
        check("never" in err["message"], "%s: %r" % (name, err))
    code, cap = post_args(d, env={n: "1" for n in ALLOWED})
    check_eq(code, 202, "allowed env: %r" % (cap,))


def case_args():
    # An env_allow that admits loader and Python variables: the deny list
    # still wins.
    with Daemon(conf={"atom_scripts": "/nonexistent",
                      "env_allow": "ATOM_ AITER_ HSA_ HIP_ AMD_ NCCL_ ROCP_ "
                                   "ROCPROFILER_ MIOPEN_ TORCH_ LD_ PYTHON"}) \
            as d:
        check_own_flags(d)
        check_spaces(d)
        check_env(d)


# ---- disk ----

def case_disk():
    # 4 MB: deleting the one import rewrites most of the database's pages
    # into the WAL (1.5 MB with the critical path's tables), which must fit
    # in what the filler leaves once it is gone.
    with small_disk("4m") as mnt:
        check_disk(mnt)


def check_disk(mnt):
    w = World(db=os.path.join(mnt, "traced.db"))
    try:
        with w.d as d:
            kept = w.imported(w.folder("kept"))["id"]
            filler = fill(mnt)
            code, body, accepted = post_until_refused(d)
            print("disk: %d writes fitted in the WAL after the disk filled; "
                  "then 507" % len(accepted))
            check_eq(code, 507, "a write on a full disk: %r" % (body,))
            check_eq(body["error"]["code"], "insufficient_storage", "code")
            check("full" in body["error"]["message"], "message: %r" % body)
            code, health = d.get("/healthz")
            check_eq((code, health["status"]), (200, "degraded"),
                     "healthz on a full disk: %r" % health)
            check("full" in health["reason"], "reason: %r" % health)
            metrics = d.get("/metrics", raw=True)[1].decode()
            check("traced_store_degraded 1" in metrics, "metrics gauge")
            code, _ = d.delete("/captures/%d" % kept)
            check(code in (200, 507), "DELETE on a full disk: %d" % code)
            os.unlink(filler)
            code, cap = d.post("/captures", {"model": "/models/after"})
            check_eq(code, 202, "a write once space is back: %r" % (cap,))
            check_eq(d.get("/healthz"), (200, {"status": "ok"}),
                     "healthz once space is back")
            if code == 202 and d.get("/captures/%d" % kept)[0] == 200:
                check_eq(d.delete("/captures/%d" % kept),
                         (200, {"deleted": kept}), "DELETE once space is back")
            check_eq(d.get("/captures/%d" % kept)[0], 404, "deleted")
    finally:
        w.close()


# ---- slowloris ----

ATTACKERS = 1100
PER_CLIENT = 64  # max_connections_per_client's default


def open_attackers(port, n):
    """n connections from 127.0.0.1, every other one starting a request."""
    socks = []
    for i in range(n):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            if i % 2 == 0:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                          % port)
        except OSError:
            s.close()
            continue
        socks.append((s, i % 2 == 0))
    return socks


def still_open(s):
    """False once the server has closed (or reset) the connection."""
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.settimeout(2)


def trickle(socks):
    for s, talking in socks:
        if talking:
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                pass


def probe(port):
    """Seconds GET /healthz from 127.0.0.2 took (inf when it failed)."""
    t0 = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3,
                                      source_address=("127.0.0.2", 0))
    try:
        conn.request("GET", "/healthz")
        ok = conn.getresponse().status == 200
    except OSError:
        ok = False
    finally:
        conn.close()
    return time.time() - t0 if ok else float("inf")


def case_slowloris():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 4096)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    check(want >= ATTACKERS + 100, "need %d descriptors, have %d" % (
        ATTACKERS + 100, want))
    # The defaults: 64 per client address, 512 in all, 10 s per request.
    with Daemon(conf={"atom_scripts": "/nonexistent"}) as d:
        t0 = time.time()
        socks = open_attackers(d.port, ATTACKERS)
        worst, kept, rounds = 0.0, None, 0
        while time.time() - t0 < 13:
            worst = max(worst, probe(d.port))
            if time.time() - t0 > 2 * rounds:
                trickle(socks)
                rounds += 1
            if kept is None and time.time() - t0 > 2:
                kept = sum(still_open(s) for s, _ in socks)
            time.sleep(0.3)
        left = sum(still_open(s) for s, _ in socks)
        for s, _ in socks:
            s.close()
        print("slowloris: %d connections opened, %d kept after 2 s, %d "
              "after 13 s; slowest /healthz %.3f s" % (len(socks), kept,
                                                        left, worst))
        check(worst < 1.0, "/healthz took %.2f s under attack" % worst)
        check(kept is not None and kept <= PER_CLIENT,
              "%s connections from one address kept" % kept)
        check_eq(left, 0, "connections left after request_timeout_s")


# ---- bounds ----

BIG = "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz"


def check_queue_bound(d):
    """The defaults: 256 queued at most (a capture runs, loading slowly)."""
    from test_api import wait_running
    first = d.post("/captures", {"model": "/models/q", "tp": 1})[1]["id"]
    wait_running(d, first)
    queued = []
    for i in range(256):
        code, cap = d.post("/captures", {"model": "/models/q%d" % i, "tp": 1})
        check_eq(code, 202, "queued capture %d: %r" % (i, cap))
        queued.append(cap["id"])
    err = error_of(d.post("/captures", {"model": "/models/one-more"}), 429,
                   "the 257th queued capture")
    check_eq(err["field"], "queue", "field of a full queue")
    check_eq(d.delete("/captures/%d" % queued[0])[0], 200, "cancel one")
    check_eq(d.post("/captures", {"model": "/models/again"})[0], 202,
             "room again")
    return first


def check_request_bounds(d):
    big_env = {"ATOM_A": "x" * 40000, "ATOM_B": "y" * 30000}
    err = error_of(d.post("/captures", {"model": "/m", "env": big_env}), 413,
                   "70 KB of env")
    check_eq(err["field"], "body", "field of a large request")
    check("max_params_bytes" in err["message"], "names the key: %r" % err)
    for path in ("/captures?limit=501", "/captures/1/kernels?limit=1001",
                 "/diff?a=1&b=1&limit=1001"):
        err = error_of(d.get(path), 400, path)
        check_eq(err["field"], "limit", path + ": field")
    code, page = d.get("/captures")
    check_eq((code, len(page["captures"])), (200, 50), "default list page")
    check(page["next_before"] is not None, "next_before of a full page")


def case_bounds():
    from test_api import sim_daemon
    home, d = sim_daemon()
    try:
        with d:
            first = check_queue_bound(d)
            check_request_bounds(d)
            check_eq(d.delete("/captures/%d" % first)[0], 202, "cancel")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    for conf in ({}, {"max_response_bytes": "114688"}):
        w = World(**conf)
        try:
            with w.d as d:
                check_tables(w, d, bool(conf))
                if conf:
                    check_list_cut(d)
        finally:
            w.close()


def check_tables(w, d, small):
    """BIG has 135 kernels: 100 rows by default (about 100 KB), all with
    limit=1000 (about 135 KB: too large with max_response_bytes = 112
    KiB)."""
    cid = w.imported(w.folder("big", [BIG]))["id"]
    code, got = d.get("/captures/%d/kernels" % cid)
    check_eq((code, len(got["rows"])), (200, 100), "default limit")
    path = "/captures/%d/kernels?limit=1000" % cid
    if not small:
        code, got = d.get(path)
        check_eq((code, len(got["rows"])), (200, 135), "limit=1000")
        return
    err = error_of(d.get(path), 413, "an answer above 112 KiB")
    check_eq(err["field"], "limit", "field of a large answer")
    check("max_response_bytes" in err["message"], "names the key")


def check_list_cut(d):
    """Pages cut at max_response_bytes / 2 of row text still lead on to
    every capture, once."""
    ids = {d.post("/captures", {"model": "/models/c%d" % i,
                                "label": "%d" % i + "x" * 1000})[1]["id"]
           for i in range(80)}
    seen, before, pages = [], None, 0
    while True:
        code, page = d.get("/captures?kind=capture" +
                           ("&before=%d" % before if before else ""))
        check_eq(code, 200, "page %d" % pages)
        pages += 1
        seen += [c["id"] for c in page["captures"]]
        before = page["next_before"]
        if before is None:
            break
    check(pages > 2, "pages were not cut: %d" % pages)
    check_eq(sorted(seen), sorted(ids), "every capture once")


# ---- secrets ----

def check_cmdline(token):
    d = Daemon(conf={"atom_scripts": "/nonexistent"},
               args=["--auth-token", token])
    with d:
        with open("/proc/%d/cmdline" % d.proc.pid, "rb") as f:
            cmdline = f.read()
        check(token.encode() not in cmdline, "token in cmdline: %r" % cmdline)
        check(b"--auth-token" in cmdline, "cmdline: %r" % cmdline)
        check_eq(d.get("/captures")[0], 401, "without the token")
        check_eq(d.get("/captures", headers={
            "Authorization": "Bearer " + token})[0], 200, "with the token")


def check_token_file(top, token):
    path = os.path.join(top, "token")
    with open(path, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    with Daemon(conf={"atom_scripts": "/nonexistent",
                      "auth_token_file": path}) as d:
        check_eq(d.get("/captures", headers={
            "Authorization": "Bearer " + token})[0], 200, "token from a file")
        check_eq(d.get("/captures")[0], 401, "token file: without it")
    for mode, conf in [(0o644, {"auth_token_file": path}),
                       (0o600, {"auth_token_file": path,
                                "auth_token": "other"})]:
        os.chmod(path, mode)
        d = Daemon(conf=dict(conf, atom_scripts="/nonexistent"))
        try:
            d.start(10)
        except RuntimeError as e:
            check("auth_token_file" in str(e) or "chmod" in str(e),
                  "refusal names the key: %s" % e)
            continue
        finally:
            d.stop()
            shutil.rmtree(d.dir, ignore_errors=True)
        raise AssertionError("started with %o %r" % (mode, conf))


def check_install(top):
    build = os.path.dirname(os.path.abspath(os.environ.get(
        "TRACED_BIN", os.path.join(SRC_DIR, "build", "traced"))))
    dest = os.path.join(top, "dest")
    env = dict(os.environ, DESTDIR=dest)
    for round in range(2):
        r = subprocess.run(["cmake", "--install", build], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        check_eq(r.returncode, 0, "cmake --install: %s" % r.stderr)
        conf = os.path.join(dest, "etc", "traced", "traced.conf")
        check_eq((stat.S_IMODE(os.stat(conf).st_mode),
                  stat.S_IMODE(os.stat(os.path.dirname(conf)).st_mode)),
                 (0o600, 0o700), "installed modes, round %d" % round)
        os.chmod(conf, 0o644)   # as an older install left it
        os.chmod(os.path.dirname(conf), 0o755)


def check_warnings(top):
    """The start-up warnings say what is true of the token loaded: none
    when auth_token_file holds a long one, "no auth_token" only when
    neither setting is set, a short token (under 16 bytes) said so."""
    path = os.path.join(top, "warn-token")
    for token, conf, said in (
            ("f" * 32, "file", None),
            ("short-tok", "file", "the auth token is 9 bytes"),
            ("inline-tok-0123456789", "inline", None),
            ("inl-short", "inline", "the auth token is 9 bytes"),
            (None, None, "no auth_token")):
        settings = {"atom_scripts": "/nonexistent"}
        if conf == "file":
            with open(path, "w") as f:
                f.write(token + "\n")
            os.chmod(path, 0o600)
            settings["auth_token_file"] = path
        elif conf == "inline":
            settings["auth_token"] = token
        with Daemon(conf=settings) as d:
            log = d.log_text()
        warned = [line for line in log.splitlines() if "warning" in line]
        if said is None:
            check_eq(warned, [], "%s token of %d bytes" % (conf, len(token)))
        else:
            check(len(warned) == 1 and said in warned[0],
                  "%r: %r" % (said, warned))


def case_secrets():
    top = tempfile.mkdtemp(prefix="traced-sec-secrets-")
    try:
        check_cmdline("cmdline-tok-91c2")
        check_token_file(top, "file-tok-5d7e")
        check_install(top)
        check_warnings(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def case_echo():
    secret = "SECRET-9d41e"
    top = tempfile.mkdtemp(prefix="traced-sec-echo-")
    conf = os.path.join(top, "traced.conf")
    try:
        for args, names in [
                (["--auth-token=" + secret], "auth-token"),
                (["--auth-token", secret, secret], None),
                (["--no-such-key", secret], "no-such-key"),
                (["--atom-port", secret], "atom_port"),
                (["--profile-control", secret], "profile_control"),
                (["--listen", secret], "listen"),
                (["--index-jobs", "0", secret], None),
                (["--config", conf], "atom_port")]:
            with open(conf, "w") as f:
                f.write("db = %s/db\natom_port = %s\n" % (top, secret))
            r = subprocess.run([TRACED_BIN] + args, capture_output=True,
                               timeout=30)
            out = r.stdout + r.stderr
            check_eq(r.returncode, 2, "%r: exit (%r)" % (args, out))
            check(secret.encode() not in out, "%r echoed: %r" % (args, out))
            if names is not None:
                check(names.encode() in out, "%r: %r names no key" % (
                    args, out))
    finally:
        shutil.rmtree(top, ignore_errors=True)


CASES = {"files": case_files, "fifos": case_fifos, "browser": case_browser,
         "args": case_args, "disk": case_disk, "slowloris": case_slowloris,
         "bounds": case_bounds, "secrets": case_secrets, "echo": case_echo}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: test_security.py {%s}" % "|".join(CASES))
    CASES[sys.argv[1]]()
    print("ok")
