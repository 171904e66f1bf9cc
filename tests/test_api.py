"""traced's HTTP API (api/), against a real daemon over real sockets.

Usage: test_api.py CASE, CASE one of
  validation  every bad member of POST /captures and every bad query
              parameter gets a 4xx JSON error naming it; unknown ids 404,
              unknown routes 404, wrong methods 405 with Allow; nothing is
              stored by a refused request, the daemon keeps serving, and a
              good request is stored with its defaults filled in.
  auth        with auth_token set: no or a wrong token is 401 (JSON, with
              WWW-Authenticate), the right one passes, /healthz needs none,
              and a refused POST stores nothing.
  metrics     /metrics is Prometheus text whose request counters match the
              requests made, per route template and code.
  contract    every GET route of api/openapi.yaml answers, for an imported
              real trace, with and without the example parameters, with
              the types, enum values and members its schema requires; a
              query parameter a route does not declare is refused.
  imports     a multi-rank folder of real traces is imported: per-rank and
              summed kernels and categories, and per-rank steps, memcpy
              and runtime equal tests/ref_index.py's own reading of the
              files; a second import while one runs is
              queued, progress shows while indexing; the raw trace is
              served byte for byte; DELETE removes the import (and the
              answers kept about it), never its originals, and cancels a
              running one; paths outside import_roots are refused.
  diff        /diff of an import with itself is all zero; of two imports
              it equals the sums of ref_index over their ranks, sorted by
              |delta|.
  statuses    every route of api/openapi.yaml, every method it takes and one
              it does not, called with bad input (no token, a wrong token,
              a foreign Host and Origin, bad and unknown ids, ranks and
              query parameters, bad values of each, bodies too big, not
              JSON, of the wrong type): every answer's status is one the
              file declares for that route and method (405 where a method
              is not the route's).
  cancel      with the ATOM simulator (sim/) loading slowly: DELETE of a
              queued capture cancels it at once (200), of the running one
              answers 202 and the capture becomes cancelled; its logs are
              served (tail, 404 for a missing one); DELETE of a finished
              one removes the record and its folders under trace_root.
"""
import http.client
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (SRC_DIR, TRACES_DIR, Daemon, check, check_eq,  # noqa
                        free_port)

OPENAPI = os.path.join(SRC_DIR, "api", "openapi.yaml")
STATUSES = ("queued", "running", "done", "failed", "cancelled",
            "interrupted")
# Real traces, small enough to index in a blink: three with GPU kernels,
# one with ATOM's run labels (steps).
LABELS = "torch113cpu__atom_run_labels.pt.trace.json.gz"
RANKS_A = ["tracelens__mi210_gpu_only_trace.json.gz",
           "hta__alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
           "tracelens__vllm_decode_full_graph_execution.json.gz", LABELS]
# Shares mi210 with A (status "both") and repeats it on two ranks (ties in
# slowest/fastest rank).
RANKS_B = ["tracelens__mi210_gpu_only_trace.json.gz",
           "tracelens__mi210_gpu_only_trace.json.gz",
           "tracelens__torch_compile_triton_trace.json.gz"]
BIG = "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz"


def raw(d, method, path, body=None, headers=None):
    """(status, headers dict with lower-case names, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def check_error(resp, status, field, what):
    """resp = (code, body) of a refused request: the error shape of
    docs/API.md naming field (a prefix match for list items)."""
    code, body = resp
    check_eq(code, status, "%s: status (%r)" % (what, body))
    check(isinstance(body, dict) and set(body) == {"error"},
          "%s: not an error body: %r" % (what, body))
    err = body["error"]
    check_eq(sorted(err), ["code", "field", "message"], what + ": members")
    check(isinstance(err["message"], str) and err["message"],
          what + ": empty message")
    if field is None:
        check(err["field"] is None, "%s: field %r" % (what, err["field"]))
    else:
        check(isinstance(err["field"], str) and
              err["field"].startswith(field),
              "%s: field %r, wanted %r" % (what, err["field"], field))
    return err


# ---- reference figures (tests/ref_index.py reads the files itself) ----

def reference(path):
    import ref_index
    return ref_index.reference(path)


def by_name(rows, key="name"):
    return {r[key]: r for r in rows}


def summed(tables):
    """The all-ranks rows the API must serve, from per-rank tables
    ({name: {count, total_ns}}, rank i = tables[i]): count and total_ns
    summed, ranks = how many ranks have the row, slowest/fastest = the rank
    with the largest/smallest total (ties: the lower rank)."""
    out = {}
    for rank, table in enumerate(tables):
        for name, row in table.items():
            s = out.setdefault(name, {"count": 0, "total_ns": 0,
                                      "ranks": 0, "per": []})
            s["count"] += row["count"]
            s["total_ns"] += row["total_ns"]
            s["ranks"] += 1
            s["per"].append((row["total_ns"], rank))
    for s in out.values():
        s["slowest_rank"] = min(s["per"], key=lambda p: (-p[0], p[1]))[1]
        s["fastest_rank"] = min(s["per"], key=lambda p: (p[0], p[1]))[1]
    return out


def pairs(table):
    """{name: (count, total_ns)} of a table."""
    return {k: (v["count"], v["total_ns"]) for k, v in table.items()}


# ---- imports ----

def lay_out(root, name, files):
    """root/name/rank_<i>/<file>: ATOM's rank folders, holding copies of
    the real traces (copies, so that a delete reaching them would show)."""
    top = os.path.join(root, name)
    for i, f in enumerate(files):
        os.makedirs(os.path.join(top, "rank_%d" % i))
        shutil.copy(os.path.join(TRACES_DIR, f),
                    os.path.join(top, "rank_%d" % i,
                                 "model_ts_%d.pt.trace.json.gz" % i))
    return top


def snapshot(top):
    """Every file under top with its size: to prove it was left alone."""
    out = {}
    for dirpath, _, names in os.walk(top):
        for n in names:
            p = os.path.join(dirpath, n)
            out[p] = os.path.getsize(p)
    return out


def import_daemon():
    root = tempfile.mkdtemp(prefix="traced-api-imports-")
    return root, Daemon(conf={"import_roots": root,
                              "atom_scripts": os.path.join(root, "none")})


def post_import(d, path, label=None):
    body = {"path": path}
    if label:
        body["label"] = label
    code, cap = d.post("/imports", body)
    check_eq(code, 202, "POST /imports %s: %r" % (path, cap))
    check_eq(cap["kind"], "import", "kind")
    check_eq(cap["params"], {"path": os.path.realpath(path),
                             "format": "auto"}, "params")
    return cap


def import_done(d, path):
    cap = post_import(d, path)
    done = d.wait_status(cap["id"])
    check_eq(done["status"], "done", "import of %s: %r" % (path, done))
    return done


# ---- cases ----

GOOD = {"model": "/models/Qwen", "tp": 2}


def bad_bodies():
    """(body, field the error must name, what)."""
    def m(**kw):
        b = {"model": "/models/x"}
        b.update(kw)
        return b
    return [
        ({}, "model", "missing model"),
        ({"model": ""}, "model", "empty model"),
        ({"model": 7}, "model", "model not a string"),
        ({"model": "-rf"}, "model", "model like an option"),
        ({"model": "/a\nb"}, "model", "newline in model"),
        ({"model": "/m" * 3000}, "model", "model too long"),
        (m(tp=0), "tp", "tp 0"),
        (m(tp=65), "tp", "tp 65"),
        (m(tp="8"), "tp", "tp a string"),
        (m(tp=8.0), "tp", "tp a real"),
        (m(tp=True), "tp", "tp a bool"),
        (m(isl=0), "isl", "isl 0"),
        (m(osl=1048577), "osl", "osl too big"),
        (m(conc=65537), "conc", "conc too big"),
        (m(prompt_multiplier=1001), "prompt_multiplier", "multiplier"),
        (m(more="yes"), "more", "more not a bool"),
        (m(more=True, prompt_multiplier=10), "more", "more with mult 10"),
        (m(env={"LD_PRELOAD": "/x.so"}), "env.LD_PRELOAD", "LD_PRELOAD"),
        (m(env={"PATH": "/tmp"}), "env.PATH", "PATH"),
        (m(env={"ATOM_PROFILER_MORE": "1"}, prompt_multiplier=10),
         "env.ATOM_PROFILER_MORE", "more through env"),
        (m(env={"ATOM_X": 1}), "env.ATOM_X", "env value not a string"),
        (m(env={"ATOM-X": "1"}), "env.ATOM-X", "env name"),
        (m(env=["ATOM_X=1"]), "env", "env not an object"),
        (m(server_args=["--a", 1]), "server_args[1]", "server_args item"),
        (m(server_args="--a --b"), "server_args", "server_args string"),
        (m(bench_args=[["x"]]), "bench_args[0]", "bench_args nested"),
        (m(bench_args=["x"] * 257), "bench_args", "too many words"),
        (m(label="x" * 2000), "label", "label too long"),
        (m(label=5), "label", "label not a string"),
        (m(tpp=8), "tpp", "unknown member (typo)"),
        ([GOOD], "body", "array body"),
    ]


def bad_raw_bodies():
    return [
        (b'{"model": ', "body", "truncated JSON"),
        (b"model=/x", "body", "not JSON"),
        (b"", "body", "empty body"),
        (b'{"model": "/a", "model": "/b"}', "body", "duplicate member"),
        (b'{"model": "/a\\u0000b"}', "body", "NUL in a string"),
        (b'{"model": "\xff"}', "body", "not UTF-8"),
    ]


def bad_queries():
    """(path, status, field)."""
    k = "/captures/1/kernels"
    return [
        (k + "?rank=-1", 400, "rank"), (k + "?rank=x", 400, "rank"),
        (k + "?rank=", 400, "rank"), (k + "?rank=1.5", 400, "rank"),
        (k + "?rank=99999999999", 400, "rank"),
        (k + "?sort=bogus", 400, "sort"), (k + "?sort", 400, "sort"),
        (k + "?sort=", 400, "sort"), (k + "?limit=0", 400, "limit"),
        (k + "?limit=100001", 400, "limit"),
        (k + "?category=bogus", 400, "category"),
        (k + "?bogus=1", 400, "bogus"), (k + "?rank=1&rank=2", 400, "rank"),
        (k + "?q=" + "x" * 300, 400, "q"),
        ("/captures/1/categories?q=x", 400, "q"),
        ("/captures/1/steps?sort=name", 400, "sort"),
        ("/captures/1/launches?category=gemm", 400, "category"),
        ("/captures/1?rank=0", 400, "rank"),
        ("/captures?limit=0", 400, "limit"),
        ("/captures?limit=1001", 400, "limit"),
        ("/captures?status=bogus", 400, "status"),
        ("/captures?kind=bogus", 400, "kind"),
        ("/captures?before=-3", 400, "before"),
        ("/diff?a=1", 400, "b"), ("/diff?b=1", 400, "a"),
        ("/diff?a=x&b=1", 400, "a"), ("/diff?a=1&b=2&by=bogus", 400, "by"),
        ("/diff?a=1&b=2&norm=bogus", 400, "norm"),
        ("/diff?a=1&b=2&rank=-1", 400, "rank"),
        ("/captures/1/logs?which=../../etc/passwd", 400, "which"),
        ("/captures/abc", 400, "id"), ("/captures/0", 400, "id"),
        ("/captures/-1/kernels", 400, "id"),
        ("/captures/1/ranks/x/trace", 400, "rank"),
        ("/metrics?x=1", 400, "x"),
        ("/captures/999", 404, "id"), ("/captures/999/kernels", 404, "id"),
        ("/captures/999/phases?rank=0", 404, "id"),
        ("/captures/999/ranks/0/trace", 404, "id"),
        ("/captures/999/logs", 404, "id"),
        ("/diff?a=999&b=998", 404, "a"),
    ]


def case_validation():
    with Daemon(conf={"atom_scripts": "/nonexistent"}) as d:
        for body, field, what in bad_bodies():
            check_error(d.post("/captures", body), 400, field, what)
        for body, field, what in bad_raw_bodies():
            check_error(d.post("/captures", body), 400, field, what)
        big = json.dumps({"model": "/m", "label": "x" * (2 << 20)}).encode()
        check_error(d.post("/captures", big), 413, "body", "oversized body")
        check_endless_body(d)
        for path, status, field in bad_queries():
            check_error(d.get(path), status, field, "GET " + path)
        check_error(d.delete("/captures/999"), 404, "id", "DELETE unknown")
        check_error(d.get("/nope/at/all"), 404, None, "unknown route")
        check_error(d.get("/captures/1/bogus"), 404, None, "unknown table")
        for method, path, allow in [("PUT", "/captures", "GET, POST"),
                                    ("DELETE", "/healthz", "GET"),
                                    ("POST", "/diff", "GET"),
                                    ("GET", "/imports", "POST"),
                                    ("POST", "/captures/1",
                                     "GET, DELETE")]:
            code, hdrs, body = raw(d, method, path)
            check_eq(code, 405, method + " " + path)
            check_eq(hdrs.get("allow"), allow, "Allow of " + path)
            check_eq(json.loads(body)["error"]["code"],
                     "method_not_allowed", "405 code")
        err = check_error(d.post("/imports", {"path": "/tmp"}), 403,
                          "path", "imports off")
        check("import_roots" in err["message"], "403 names the key")
        # Nothing refused was stored; the daemon still serves.
        check_eq(d.get("/captures"), (200, {"captures": [],
                                            "next_before": None}),
                 "list after refusals")
        body = dict(GOOD, env={"ATOM_PROFILER_X": "1", "HIP_VISIBLE": "0"},
                    server_args=["--kv_cache_dtype", "fp8"], label="ok",
                    more=True)
        code, cap = d.post("/captures", body)
        check_eq(code, 202, "good POST: %r" % (cap,))
        want = dict(body, isl=1024, osl=1024, conc=64, prompt_multiplier=1,
                    bench_args=[], mark_trace=False)
        check_eq(cap["params"], want, "stored params with defaults")
        check_eq((cap["kind"], cap["label"]), ("capture", "ok"), "kind")
        check(cap["status"] in STATUSES, "status %r" % cap["status"])
        if cap["status"] == "queued":
            check_eq(cap["queue_position"], 1, "queue position")
        code, lst = d.get("/captures")
        check_eq([c["id"] for c in lst["captures"]], [cap["id"]], "list")
        check_list(d, cap["id"])


def check_endless_body(d):
    """A client that never stops sending is cut off (the server answers
    413 and closes) well before 64 MiB, and the daemon goes on."""
    sent = 0
    with socket.create_connection(("127.0.0.1", d.port), timeout=60) as s:
        s.sendall(b"POST /captures HTTP/1.1\r\nHost: t\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: 1073741824\r\n\r\n")
        try:
            while sent < 64 << 20:
                s.sendall(b" " * 65536)
                sent += 65536
        except OSError:
            pass
    check(sent < 64 << 20, "an endless body was read on and on")
    check_eq(d.get("/healthz")[0], 200, "serving after an endless body")


def check_list(d, first):
    """GET /captures: newest first, filters, and paging by next_before."""
    ids = [first] + [d.post("/captures", {"model": "/models/m%d" % i})[1]
                     ["id"] for i in range(4)]
    for cid in ids:
        d.wait_status(cid)   # no scripts: each fails at once
    code, page = d.get("/captures?limit=2")
    check_eq([c["id"] for c in page["captures"]], ids[:-3:-1], "page 1")
    check_eq(page["next_before"], ids[-2], "next_before")
    code, page = d.get("/captures?limit=2&before=%d" % ids[-2])
    check_eq([c["id"] for c in page["captures"]], ids[-3:-5:-1], "page 2")
    code, page = d.get("/captures?limit=2&before=%d" % ids[1])
    check_eq(([c["id"] for c in page["captures"]], page["next_before"]),
             ([ids[0]], None), "last page")
    code, page = d.get("/captures?model=/models/m2")
    check_eq([c["id"] for c in page["captures"]], [ids[3]], "model filter")
    check_eq(d.get("/captures?kind=import")[1]["captures"], [], "kind")
    code, page = d.get("/captures?status=failed&kind=capture")
    check_eq(sorted(c["id"] for c in page["captures"]), ids, "status")
    check(all("ranks" not in c for c in page["captures"]), "no ranks")


def case_auth():
    token = "s3cret-Token_42"
    # Many wrong tokens on purpose: each 401 answered at once (their
    # slowing is security_guesses').
    with Daemon(conf={"auth_token": token, "auth_retry_delay_ms": "0",
                      "atom_scripts": "/nonexistent"}) as d:
        for hdr in [None, "Bearer wrong", "Bearer " + token + "x",
                    "Bearer " + token[:-1], "Basic " + token, token]:
            headers = {"Authorization": hdr} if hdr else {}
            for method, path in [("GET", "/captures"), ("GET", "/metrics"),
                                 ("GET", "/captures/1/kernels"),
                                 ("GET", "/nope")]:
                code, hdrs, body = raw(d, method, path, headers=headers)
                check_eq(code, 401, "%s %s with %r" % (method, path, hdr))
                check_eq(json.loads(body)["error"]["code"], "unauthorized",
                         "401 body")
                check(hdrs.get("www-authenticate", "").startswith("Bearer"),
                      "WWW-Authenticate")
            code, _, _ = raw(d, "POST", "/captures", json.dumps(GOOD),
                             headers)
            check_eq(code, 401, "POST without the token")
        check_eq(d.get("/healthz"), (200, {"status": "ok"}), "healthz")
        # The dashboard's files hold no data: a browser loads them without
        # a header, then asks for the token.
        for path in ["/"] + ["/" + f for f in web_files()]:
            check_eq(raw(d, "GET", path)[0], 200, "GET %s without" % path)
        auth = {"Authorization": "Bearer " + token}
        check_eq(d.get("/captures", headers=auth),
                 (200, {"captures": [], "next_before": None}),
                 "nothing stored by refused POSTs")
        code, cap = d.post("/captures", GOOD, headers=auth)
        check_eq(code, 202, "POST with the token")
        code, got = d.get("/captures/%d" % cap["id"], headers=auth)
        check_eq((code, got["id"]), (200, cap["id"]), "GET with the token")


METRIC_LINE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-z_]+="[^"\\]*"'
    r'(,[a-z_]+="[^"\\]*")*)\})? (-?[0-9]+(\.[0-9]+)?)$')


def parse_metrics(text):
    """{(name, ((label, value), ...)): number}; every line must parse."""
    out, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            check(len(parts) == 4, "comment line %r" % line)
            if parts[1] == "TYPE":
                check(parts[3] in ("counter", "gauge"), line)
                typed.add(parts[2])
            continue
        m = METRIC_LINE.match(line)
        check(m is not None, "bad metrics line %r" % line)
        labels = tuple(re.findall(r'([a-z_]+)="([^"]*)"', m.group(3) or ""))
        check(m.group(1) in typed, "no # TYPE before %s" % m.group(1))
        out[(m.group(1), labels)] = float(m.group(5))
    return out


def case_metrics():
    with Daemon(conf={"atom_scripts": "/nonexistent"}) as d:
        for _ in range(3):
            d.get("/captures/999")
        for _ in range(2):
            d.get("/captures/5/kernels?rank=0")
        d.get("/nope/x")
        d.post("/captures", {"tp": 1})
        d.get("/captures")
        d.get("/diff?a=1")
        code, text = d.get("/metrics")
        check_eq(code, 200, "metrics")
        m = parse_metrics(text.decode())

        def req(route, code):
            return m.get(("traced_http_requests_total",
                          (("route", route), ("code", code))))
        check_eq(req("/captures/{id}", "404"), 3, "/captures/{id} 404")
        check_eq(req("/captures/{id}/kernels", "404"), 2, "kernels 404")
        check_eq(req("other", "404"), 1, "unknown route")
        check_eq(req("/captures", "400"), 1, "POST 400")
        check_eq(req("/captures", "200"), 1, "list 200")
        check_eq(req("/diff", "400"), 1, "diff 400")
        check(req("/healthz", "200") >= 1, "healthz counted")
        for s in STATUSES:
            check_eq(m.get(("traced_captures", (("status", s),))), 0,
                     "traced_captures " + s)
        for name in ("traced_queue_length", "traced_index_bytes_total",
                     "traced_index_seconds_total",
                     "traced_ranks_indexed_total"):
            check((name, ()) in m, name + " missing")
        code, text = d.get("/metrics")
        check_eq(parse_metrics(text.decode())[(
            "traced_http_requests_total",
            (("route", "/metrics"), ("code", "200")))], 1, "metrics counted")
        code, _ = d.post("/captures", GOOD)
        m = parse_metrics(d.get("/metrics")[1].decode())
        check_eq(sum(m[("traced_captures", (("status", s),))]
                     for s in STATUSES), 1, "one capture counted")


# ---- contract: walk api/openapi.yaml ----

def deref(spec, node):
    """node with $ref followed and allOf merged (required unioned,
    properties updated)."""
    while isinstance(node, dict) and "$ref" in node:
        target = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    if isinstance(node, dict) and "allOf" in node:
        merged = {"required": [], "properties": {}}
        for sub in node["allOf"]:
            sub = deref(spec, sub)
            merged["required"] += sub.get("required", [])
            merged["properties"].update(sub.get("properties", {}))
        node = merged
    return node


TYPES = {"integer": int, "number": (int, float), "string": str,
         "boolean": bool, "array": list, "object": dict}


def check_schema(spec, schema, value, where):
    """value has the type, enum value and members schema requires,
    recursively through objects and the first item of arrays."""
    schema = deref(spec, schema)
    if value is None:
        check(schema.get("nullable", False), where + ": null")
        return
    if "type" in schema:
        check(isinstance(value, TYPES[schema["type"]]) and
              (schema["type"] == "boolean") == isinstance(value, bool),
              "%s: %r is not %s" % (where, value, schema["type"]))
    if "enum" in schema:
        check(value in schema["enum"], "%s: %r not in %r" % (
            where, value, schema["enum"]))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            check(key in value, "%s: no %r in %r" % (where, key,
                                                     sorted(value)))
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                check_schema(spec, sub, value[key], where + "." + key)
    elif isinstance(value, list) and value and "items" in schema:
        check_schema(spec, schema["items"], value[0], where + "[0]")


def example_query(spec, op, params_common):
    qs = []
    for p in list(params_common) + op.get("parameters", []):
        p = deref(spec, p)
        if p["in"] == "query":
            qs.append("%s=%s" % (p["name"], p["example"]))
    return qs


def walk_paths(spec, ids, asset):
    """(template, operation, path-level parameters, url) for every GET to
    call, the ids of the import standing for {id}, rank 0 for {r}."""
    for tmpl, item in spec["paths"].items():
        common = item.get("parameters", [])
        for method, op in item.items():
            if method != "get" or op.get("x-no-walk"):
                continue
            if "{file}" in tmpl or tmpl == "/":
                if asset is None:
                    continue
            url = tmpl.replace("{id}", str(ids[0])).replace(
                "{r}", "0").replace("{file}", asset or "")
            yield tmpl, op, common, url


def web_files():
    """The dashboard files compiled in (CMakeLists.txt: web/*.html|js|css)."""
    web = os.path.join(SRC_DIR, "web")
    return sorted(f for f in os.listdir(web) if f.endswith(
        (".html", ".js", ".css"))) if os.path.isdir(web) else []


def check_undeclared(d, spec, ids, asset):
    """A query parameter the file does not declare for a route is refused
    with 400 naming it: the file lists all that is accepted."""
    names = {deref(spec, p)["name"] for item in spec["paths"].values()
             for op in item.values() if isinstance(op, dict)
             for p in op.get("parameters", [])
             if deref(spec, p)["in"] == "query"} | {"bogus"}
    for tmpl, op, common, url in walk_paths(spec, ids, asset):
        if tmpl in ("/", "/{file}"):
            continue
        declared = {deref(spec, p)["name"] for p in op.get("parameters", [])}
        for name in sorted(names - declared):
            check_error(d.get("%s?%s=1" % (url, name)), 400, name,
                        "undeclared %s on %s" % (name, tmpl))


def case_contract():
    spec = json.load(open(OPENAPI))
    asset = (web_files() or [None])[0]
    root, d = import_daemon()
    with d:
        a = import_done(d, lay_out(root, "a", RANKS_A))["id"]
        b = import_done(d, lay_out(root, "b", RANKS_B))["id"]
        walked = set()
        for tmpl, op, common, url in walk_paths(spec, (a, b), asset):
            qs = example_query(spec, op, common)
            if tmpl == "/diff":
                qs = ["a=%d" % a, "b=%d" % b] + [q for q in qs if q[:2]
                                                 not in ("a=", "b=")]
            for q in ([], qs):
                full = url + ("?" + "&".join(q) if q else "")
                if not q and any(deref(spec, p).get("required") and
                                 deref(spec, p)["in"] == "query"
                                 for p in op.get("parameters", [])):
                    continue   # e.g. /diff's a and b are required
                code, hdrs, body = raw(d, "GET", full)
                check_eq(code, 200, "GET %s: %r" % (full, body[:300]))
                ctype = hdrs.get("content-type", "").split(";")[0]
                content = op["responses"]["200"]["content"]
                check(ctype in content, "%s: type %s not in %s" % (
                    full, ctype, sorted(content)))
                if ctype == "application/json":
                    check_schema(spec, content[ctype]["schema"],
                                 json.loads(body), full)
                walked.add(tmpl)
        check_undeclared(d, spec, (a, b), asset)
        check_eq(walked, {t for t, item in spec["paths"].items()
                          if "get" in item and
                          not item["get"].get("x-no-walk")},
                 "GET routes walked")
        # The write routes, with the schema's answers.
        code, cap = d.post("/captures", GOOD)
        check_eq(code, 202, "POST /captures")
        check_schema(spec, {"$ref": "#/components/schemas/Capture"}, cap,
                     "POST /captures")
        code, gone = d.delete("/captures/%d" % a)
        check_eq((code, gone), (200, {"deleted": a}), "DELETE done import")
    shutil.rmtree(root)


def case_imports():
    root, d = import_daemon()
    with d:
        a_top = lay_out(root, "a", RANKS_A)
        big_top = lay_out(root, "big", [BIG] * 8)
        originals = snapshot(root)
        big = post_import(d, big_top, label="big one")
        check_eq(big["label"], "big one", "label")
        # Watch it run: phase indexing with its progress.
        deadline, seen = time.time() + 120, None
        while time.time() < deadline:
            cap = d.get("/captures/%d" % big["id"])[1]
            if cap["status"] == "running":
                seen = cap
                break
            time.sleep(0.01)
        check(seen is not None, "big import never seen running")
        check_eq(seen["phase"], "indexing", "phase while running")
        for k in ("ranks_indexed", "bytes_indexed", "bytes_total"):
            check(isinstance(seen["progress"].get(k), int),
                  "progress.%s while indexing: %r" % (k, seen["progress"]))
        a = post_import(d, a_top)
        check_eq(d.get("/captures/%d" % big["id"])[1]["status"], "running",
                 "big still running (make it bigger)")
        check_eq((a["status"], a["queue_position"]), ("queued", 1),
                 "second import queued, not refused")
        check_eq(d.wait_status(big["id"])["status"], "done", "big done")
        cap = d.wait_status(a["id"])
        check_eq(cap["status"], "done", "import a: %r" % cap)
        check_ranks(d, a["id"], cap, RANKS_A)
        check_trace_download(d, a["id"], a_top)
        check_refused_paths(d, root)
        # Delete: the record and its files under trace_root go, the
        # imported originals stay; answers kept about it go too.
        kernels = "/captures/%d/kernels?rank=1&limit=5" % big["id"]
        diff = "/diff?a=%d&b=%d" % (a["id"], big["id"])
        for path in (kernels, diff):
            first = d.get(path)
            check_eq(first[0], 200, "GET " + path)
            check_eq(d.get(path), first, "GET %s again" % path)
        check_eq(d.delete("/captures/%d" % big["id"]),
                 (200, {"deleted": big["id"]}), "DELETE done import")
        check_error(d.get("/captures/%d" % big["id"]), 404, "id",
                    "GET deleted")
        check_error(d.delete("/captures/%d" % big["id"]), 404, "id",
                    "DELETE twice")
        check_error(d.get(kernels), 404, "id", "kernels of deleted")
        check_error(d.get(diff), 404, "b", "diff with deleted")
        # A running import is cancelled through the loop (202 at once).
        again = post_import(d, big_top)
        wait_running(d, again["id"])
        code, got = d.delete("/captures/%d" % again["id"])
        check_eq((code, got["status"]), (202, "running"), "DELETE running")
        check_eq(d.wait_status(again["id"])["status"], "cancelled",
                 "import cancelled")
        check_eq(d.delete("/captures/%d" % again["id"]),
                 (200, {"deleted": again["id"]}), "DELETE cancelled")
        check_eq(snapshot(root), originals, "imported originals untouched")
        check_eq(d.get("/captures/%d" % a["id"])[0], 200, "other kept")
    shutil.rmtree(root)


def check_ranks(d, cid, cap, files):
    """Kernels and categories of each rank and summed over ranks against
    ref_index's reading of the files; returns the per-rank categories."""
    refs = [reference(os.path.join(TRACES_DIR, f)) for f in files]
    check_eq(len(cap["ranks"]), len(files), "ranks of the capture")
    cats = []
    for i, ref in enumerate(refs):
        code, got = d.get("/captures/%d/kernels?rank=%d" % (cid, i))
        check_eq((code, got["capture"], got["rank"]), (200, cid, i),
                 "envelope")
        rows = by_name(got["rows"])
        check_eq(pairs(rows), pairs(ref["kernels"]), "rank %d kernels" % i)
        for name, r in rows.items():
            check_eq(r["avg_ns"], r["total_ns"] // r["count"], "avg floor")
        totals = [r["total_ns"] for r in got["rows"]]
        check_eq(totals, sorted(totals, reverse=True), "sorted by total")
        cats.append(check_categories(d, cid, i, ref, got["rows"]))
        check_small_tables(d, cid, i, ref)
    code, got = d.get("/captures/%d/kernels" % cid)
    check_eq(got["rank"], None, "summed rank null")
    want = summed([ref["kernels"] for ref in refs])
    rows = by_name(got["rows"])
    check_eq(sorted(rows), sorted(want), "summed kernel names")
    for name, w in want.items():
        r = rows[name]
        check_eq((r["count"], r["total_ns"], r["ranks"], r["slowest_rank"],
                  r["fastest_rank"]),
                 (w["count"], w["total_ns"], w["ranks"], w["slowest_rank"],
                  w["fastest_rank"]), "summed " + name)
    got = by_name(d.get("/captures/%d/categories" % cid)[1]["rows"],
                  "category")
    check_eq(pairs(got), pairs(summed(cats)), "summed categories")
    got = d.get("/captures/%d/kernels?limit=2&sort=name" % cid)[1]["rows"]
    check_eq([r["name"] for r in got], sorted(want)[:2], "sort=name limit")
    # Kept answers are per query: an escaped "&" is part of q.
    for query, rank in [("q=e&rank=1", 1), ("q=e%26rank%3D1", None),
                        ("q=e&rank=1", 1)]:
        got = d.get("/captures/%d/kernels?%s" % (cid, query))[1]
        check_eq(got["rank"], rank, "rank of ?" + query)
    return cats


def check_small_tables(d, cid, rank, ref):
    """steps, memcpy and runtime of a rank equal ref_index's (runtime's
    median_ns is the indexer's to prove: tests/test_index_*)."""
    for table, key, members in [
            ("steps", "kind", ("count", "total_ns", "tokens", "padded",
                               "kernel_ns", "source")),
            ("memcpy", "kind", ("count", "total_ns", "bytes", "max_bytes")),
            ("runtime", "name", ("count", "total_ns", "max_ns"))]:
        got = by_name(d.get("/captures/%d/%s?rank=%d" % (
            cid, table, rank))[1]["rows"], key)
        check_eq({k: tuple(v[m] for m in members) for k, v in got.items()},
                 {k: tuple(v[m] for m in members)
                  for k, v in ref[table].items()},
                 "rank %d %s" % (rank, table))


def check_categories(d, cid, rank, ref, kernel_rows):
    """A rank's categories are its kernels grouped by their category plus
    ref_index's copies ("copy") and memsets ("memset"); their sum is the
    rank's device time."""
    got = by_name(d.get("/captures/%d/categories?rank=%d" % (
        cid, rank))[1]["rows"], "category")
    want = {}
    for r in kernel_rows:
        c = want.setdefault(r["category"], [0, 0])
        c[0] += r["count"]
        c[1] += r["total_ns"]
    for cat, count, ns in [("copy", ref["memcpy_count"], ref["memcpy_ns"]),
                           ("memset", ref["memset_count"],
                            ref["memset_ns"])]:
        if count:
            c = want.setdefault(cat, [0, 0])
            c[0] += count
            c[1] += ns
    check_eq(pairs(got), {k: tuple(v) for k, v in want.items()},
             "rank %d categories" % rank)
    check_eq(sum(v["total_ns"] for v in got.values()),
             ref["kernel_ns"] + ref["memcpy_ns"] + ref["memset_ns"],
             "rank %d device time" % rank)
    return got


def check_trace_download(d, cid, top):
    code, hdrs, body = raw(d, "GET", "/captures/%d/ranks/1/trace" % cid)
    check_eq(code, 200, "trace download")
    with open(os.path.join(top, "rank_1", "model_ts_1.pt.trace.json.gz"),
              "rb") as f:
        check(body == f.read(), "trace bytes differ")
    check_eq(hdrs["content-type"], "application/gzip", "trace type")
    check(hdrs["content-disposition"].startswith("attachment;"),
          "attachment")
    check_error(d.get("/captures/%d/ranks/7/trace" % cid), 404, "rank",
                "missing rank")


def check_refused_paths(d, root):
    outside = tempfile.mkdtemp(prefix="traced-api-outside-")
    try:
        os.symlink(outside, os.path.join(root, "link_out"))
        shutil.copy(os.path.join(TRACES_DIR, RANKS_A[0]), outside)
        for path, status in [(outside, 403), ("/etc", 403),
                             (os.path.join(root, "link_out"), 403),
                             (os.path.join(root, os.path.relpath("/etc",
                                                                 root)),
                              403),
                             (os.path.join(root, "missing"), 400),
                             (os.path.join(outside, "missing"), 403),
                             ("relative/path", 400), ("", 400)]:
            check_error(d.post("/imports", {"path": path}), status, "path",
                        "import of %r" % path)
        check_error(d.post("/imports", {"path": root, "format": "csv"}),
                    400, "format", "bad format")
        check_error(d.post("/imports", {"path": root, "pth": "x"}), 400,
                    "pth", "unknown member")
        check_error(d.post("/imports", {}), 400, "path", "no path")
    finally:
        os.unlink(os.path.join(root, "link_out"))
        shutil.rmtree(outside)


def case_diff():
    root, d = import_daemon()
    with d:
        a = import_done(d, lay_out(root, "a", RANKS_A))
        b = import_done(d, lay_out(root, "b", RANKS_B))
        cats_a = check_ranks(d, a["id"], a, RANKS_A)
        cats_b = check_ranks(d, b["id"], b, RANKS_B)
        a, b = a["id"], b["id"]
        code, same = d.get("/diff?a=%d&b=%d" % (a, a))
        check_eq(code, 200, "diff a a")
        check(same["rows"], "no rows")
        for r in same["rows"] + same["categories"]:
            check_eq((r["status"], r["delta_ns"], r["a_total_ns"],
                      r["a_count"]), ("both", 0, r["b_total_ns"],
                                      r["b_count"]), "self diff %r" % r)
        refs_a = [reference(os.path.join(TRACES_DIR, f))["kernels"]
                  for f in RANKS_A]
        refs_b = [reference(os.path.join(TRACES_DIR, f))["kernels"]
                  for f in RANKS_B]
        got = d.get("/diff?a=%d&b=%d" % (a, b))[1]
        check_diff(got["rows"], "name", summed(refs_a), summed(refs_b))
        check_eq({r["status"] for r in got["rows"]},
                 {"both", "only_a", "only_b"}, "every status met")
        check_diff(got["categories"], "category", summed(cats_a),
                   summed(cats_b))
        got = d.get("/diff?a=%d&b=%d&by=category" % (a, b))[1]
        check_diff(got["rows"], "category", summed(cats_a), summed(cats_b))
        full = d.get("/diff?a=%d&b=%d" % (a, b))[1]["rows"]
        check_eq(d.get("/diff?a=%d&b=%d&limit=3" % (a, b))[1]["rows"],
                 full[:3], "limit=3")
        check_error(d.get("/diff?a=%d&b=99999" % a), 404, "b", "unknown b")
        check_error(d.get("/diff?a=99999&b=%d" % a), 404, "a", "unknown a")
    shutil.rmtree(root)


def check_diff(got, key, sa, sb):
    """Diff rows (key member: key) against the summed tables of a and b."""
    rows = {r[key]: r for r in got}
    check_eq(sorted(rows), sorted(set(sa) | set(sb)), "diff keys")
    for name, r in rows.items():
        wa, wb = sa.get(name), sb.get(name)
        at, bt = (wa or {}).get("total_ns", 0), (wb or {}).get("total_ns", 0)
        status = "both" if wa and wb else "only_a" if wa else "only_b"
        check_eq((r["a_count"], r["b_count"], r["a_total_ns"],
                  r["b_total_ns"], r["delta_ns"], r["status"]),
                 ((wa or {}).get("count", 0), (wb or {}).get("count", 0),
                  at, bt, bt - at, status), "diff row " + name)
        if at:
            check(abs(r["delta_pct"] - 100.0 * (bt - at) / at) <= 0.0005,
                  "delta_pct of " + name)
        else:
            check(r["delta_pct"] is None, "delta_pct null when a is 0")
    deltas = [abs(r["delta_ns"]) for r in got]
    check_eq(deltas, sorted(deltas, reverse=True), "sorted by |delta|")


def sim_daemon():
    """A daemon driving sim/'s ATOM whose server takes a minute to load,
    so that a capture stays running until cancelled."""
    home = tempfile.mkdtemp(prefix="traced-api-sim-")
    os.environ.update(ATOM_SIM_HOME=home, SIM_LOAD_S="60",
                      SIM_STOP_WAIT_S="1")
    return home, Daemon(conf={
        "atom_scripts": os.path.join(SRC_DIR, "sim", "scripts"),
        "atom_port": str(free_port()),
        "server_log": os.path.join(home, "logs", "atom_server.log"),
        "bench_result": os.path.join(home, "logs", "benchmark.json"),
        "ready_poll_s": "1"})


def wait_running(d, cid):
    deadline = time.time() + 60
    while time.time() < deadline:
        cap = d.get("/captures/%d" % cid)[1]
        # Past a capture's first stop (a server is being launched), or an
        # import indexing.
        if cap["phase"] in ("launching", "waiting_ready", "indexing"):
            return cap
        check(cap["status"] in ("queued", "running"),
              "capture %d: %r" % (cid, cap))
        time.sleep(0.05)
    raise AssertionError("capture %d never ran" % cid)


def check_logs(d, cid, cap):
    """Every log of the capture's log_dir is served as its tail."""
    logs = [f[:-4] for f in os.listdir(cap["log_dir"]) if f.endswith(".log")]
    check(logs, "no logs in %s" % cap["log_dir"])
    for which in logs:
        code, hdrs, body = raw(d, "GET", "/captures/%d/logs?which=%s" % (
            cid, which))
        check_eq(code, 200, "log " + which)
        check(hdrs["content-type"].startswith("text/plain"), "log type")
        with open(os.path.join(cap["log_dir"], which + ".log"), "rb") as f:
            text = f.read()
        check_eq(int(hdrs["x-log-bytes"]), len(text), "X-Log-Bytes")
        check(text.endswith(body), "log %s is not the file's tail" % which)
    missing = [w for w in ("server", "bench", "launcher", "stop")
               if w not in logs]
    for which in missing:
        check_error(d.get("/captures/%d/logs?which=%s" % (cid, which)), 404,
                    "which", "missing log " + which)


def case_cancel():
    home, d = sim_daemon()
    with d:
        first = d.post("/captures", dict(GOOD, tp=1))[1]
        wait_running(d, first["id"])
        code, second = d.post("/captures", dict(GOOD, tp=1, label="2nd"))
        check_eq((code, second["status"], second["queue_position"]),
                 (202, "queued", 1), "second capture queued behind")
        code, got = d.delete("/captures/%d" % second["id"])
        check_eq((code, got["id"], got["status"]),
                 (200, second["id"], "cancelled"), "DELETE queued")
        code, got = d.delete("/captures/%d" % first["id"])
        check_eq((code, got["id"], got["status"]), (202, first["id"],
                                                    "running"),
                 "DELETE running")
        cap = d.wait_status(first["id"], timeout=120)
        check_eq(cap["status"], "cancelled", "cancelled: %r" % cap)
        check_logs(d, first["id"], cap)
        folders = [cap["trace_dir"], cap["log_dir"]]
        check(all(os.path.isdir(f) for f in folders), "folders exist")
        check_eq(d.delete("/captures/%d" % first["id"]),
                 (200, {"deleted": first["id"]}), "DELETE cancelled")
        check(not any(os.path.exists(f) for f in folders), "folders gone")
        check_eq(d.delete("/captures/%d" % second["id"]),
                 (200, {"deleted": second["id"]}), "DELETE the other")
        check_eq(d.get("/captures")[1]["captures"], [], "all deleted")
    shutil.rmtree(home)


BAD_VALUES = ["x", "-1", "0", "99999999999999999999", "", "%00", "a" * 300]


def declared(spec, tmpl, method):
    """The statuses api/openapi.yaml declares for method on tmpl. A method
    the route does not take is 405, when one of its methods declares it,
    or what every request may meet before its route (401, 403, 413,
    500)."""
    item = spec["paths"][tmpl]
    op = item.get(method.lower())
    if op is None:
        says = any("405" in o.get("responses", {}) for o in item.values()
                   if isinstance(o, dict))
        return {"401", "403", "413", "500"} | ({"405"} if says else set())
    return set(op["responses"])


def bad_urls(spec, tmpl, op_params, ids):
    """URLs of bad input for one route: bad and unknown ids and ranks, an
    unknown parameter, a repeated one, bad values of each."""
    cid, rank = ids
    urls = []
    for id_text, r_text in [(str(cid), str(rank)), ("abc", "0"), ("0", "0"),
                            ("999999", "0"), (str(cid), "x"),
                            (str(cid), "99")]:
        urls.append(tmpl.replace("{id}", id_text).replace("{r}", r_text)
                    .replace("{file}", "nope.js"))
    good = urls[0]
    names = [deref(spec, p)["name"] for p in op_params
             if deref(spec, p)["in"] == "query"]
    out = urls + [good + "?bogus=1",
                  good + "?" + "&".join("%s=1" % n for n in names + names[:1])]
    for n in names:
        out += [good + "?%s=%s" % (n, v) for v in BAD_VALUES]
    return out


def check_declared(d, spec, tmpl, method, url, body, headers):
    want = declared(spec, tmpl, method)
    h = dict(headers)
    if method in ("POST", "PUT", "PATCH"):
        h.setdefault("Content-Type", "application/json")
    try:
        code, _, _ = raw(d, method, url, body, h)
    except (ConnectionError, http.client.HTTPException):
        return 0   # a body too big: the 413 came before it was sent
    check(str(code) in want, "%s %s (%s): %d, undeclared (declared: %s)" % (
        method, url[:120], sorted(h), code, sorted(want)))
    return 1


def walk_route(d, spec, tmpl, method, cid, auth):
    """Bad input to one route and method: without the token, a wrong one,
    a foreign Origin or Host; every bad URL; for a body, bad ones."""
    item = spec["paths"][tmpl]
    params = item.get("parameters", []) + item.get(
        method.lower(), {}).get("parameters", [])
    urls = bad_urls(spec, tmpl, params, (cid, 0))
    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
    calls = 0
    for hdrs in [{}, {"Authorization": "Bearer no"},
                 dict(auth, Origin="http://evil.example"),
                 dict(auth, Host="evil.example:%d" % d.port)]:
        calls += check_declared(d, spec, tmpl, method, urls[0], body, hdrs)
    for url in urls if method != "PATCH" else urls[:1]:
        calls += check_declared(d, spec, tmpl, method, url, body, auth)
    if body is not None:
        for b, h in [(b"not json", auth), (b"[1]", auth),
                     (b"{}", dict(auth, **{"Content-Type": "text/plain"})),
                     (b"{\"x\": " + b"1" * (2 << 20) + b"}", auth)]:
            calls += check_declared(d, spec, tmpl, method, urls[0], b, h)
    return calls


def case_statuses():
    spec = json.load(open(OPENAPI))
    token = "st4tus-token"
    root = tempfile.mkdtemp(prefix="traced-api-statuses-")
    top = lay_out(root, "a", RANKS_A[:2])
    with Daemon(conf={"import_roots": root, "auth_token": token,
                      "auth_retry_delay_ms": "0",
                      "atom_scripts": os.path.join(root, "none")}) as d:
        auth = {"Authorization": "Bearer " + token}
        code, cap = d.post("/imports", {"path": top}, headers=auth)
        check_eq(code, 202, "import")
        cid = cap["id"]
        deadline = time.time() + 120
        while d.get("/captures/%d" % cid, headers=auth)[1]["status"] != \
                "done" and time.time() < deadline:
            time.sleep(0.1)
        calls = 0
        # DELETE last: it removes the import the others read.
        for last in (False, True):
            for tmpl, item in spec["paths"].items():
                for method in [m.upper() for m in item if m != "parameters"] \
                        + ["PATCH"]:
                    if (method == "DELETE") == last:
                        calls += walk_route(d, spec, tmpl, method, cid, auth)
        print("%d bad requests, every status declared" % calls)
    shutil.rmtree(root)


CASES = {"validation": case_validation, "auth": case_auth,
         "metrics": case_metrics, "contract": case_contract,
         "imports": case_imports, "diff": case_diff, "cancel": case_cancel,
         "statuses": case_statuses}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: test_api.py {%s}" % "|".join(CASES))
    CASES[sys.argv[1]]()
    print("ok")
