"""The dashboard (web/), served by a real daemon over real sockets.

Usage: test_web.py CASE, CASE one of
  assets_served      GET / is web/index.html; every file it loads is served
                     byte for byte with its Content-Type; the JS never
                     parses API strings as HTML and loads nothing from outside.
  paths_in_openapi   every API path template of web/*.js is a path of
                     api/openapi.yaml, every data route of that file is used,
                     and each GET one answers (for an imported real trace)
                     with the members the dashboard reads.
  dom_shows_kernels  headless chromium renders a capture, the list and a
                     diff: the top kernels of a real trace (by
                     tests/ref_index.py) appear in order as whole text
                     nodes, and names and labels holding < > & are escaped.
                     Exits 77 (skipped) without /usr/bin/chromium.
"""
import glob
import html
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_index  # noqa: E402
from tracedtest import SRC_DIR, TRACES_DIR, Daemon, check, check_eq  # noqa

WEB = os.path.join(SRC_DIR, "web")
OPENAPI = os.path.join(SRC_DIR, "api", "openapi.yaml")
# 45 distinct kernels, most of them C++ templates: names with < > and &.
TRACE = "tracelens__mi210_gpu_only_trace.json.gz"
LABEL = "web <b>check</b> & co"
SKIPPED = 77
TYPES = {".html": "text/html", ".js": ("text/javascript",
         "application/javascript"), ".css": "text/css"}


def fetch(d, path):
    """(status, content type, body bytes) of GET path."""
    try:
        with urllib.request.urlopen(d.base + path, timeout=60) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def js_sources():
    return {os.path.basename(p): read(p)
            for p in sorted(glob.glob(os.path.join(WEB, "*.js")))}


class Refs(html.parser.HTMLParser):
    """Scripts and style sheets that a page loads."""

    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("src"):
            self.refs.append(a["src"])
        if tag == "link" and a.get("rel") == "stylesheet":
            self.refs.append(a["href"])


# lifecycle.js is made by traced from common/lifecycle.h, not a file of web/.
MADE = ["lifecycle.js"]


def vocabulary():
    """Statuses (name, final) and phases, read from the X-macro rows of
    common/lifecycle.h: the one definition the served lists must follow."""
    src = read(os.path.join(SRC_DIR, "common", "lifecycle.h"))
    statuses = re.findall(r"XX\((\w+), (\w+), (true|false)\)", src)
    phases = re.findall(r"XX\((\w+), (\w+), (?:\"\w+\"|NULL)\)", src)
    return ([(n, f == "true") for _, n, f in statuses],
            [n for _, n in phases])


def js_array(src, name):
    m = re.search(r"const %s = \[([^\]]*)\];" % name, src)
    check(m is not None, "lifecycle.js has no %s: %s" % (name, src))
    return re.findall(r"'(\w+)'", m.group(1))


def check_lifecycle_js(d):
    statuses, phases = vocabulary()
    check(len(statuses) >= 6 and len(phases) >= 8, (statuses, phases))
    code, ctype, body = fetch(d, "/lifecycle.js")
    check_eq(code, 200, "GET /lifecycle.js")
    check(ctype.startswith("text/javascript"), ctype)
    src = body.decode()
    check_eq(js_array(src, "STATUSES"), [n for n, _ in statuses], "STATUSES")
    check_eq(js_array(src, "FINAL"), [n for n, f in statuses if f], "FINAL")
    check_eq(js_array(src, "PHASES"), phases, "PHASES")
    spec = json.loads(read(os.path.join(SRC_DIR, "api", "openapi.yaml")))
    enums = spec["components"]["schemas"]
    check_eq(enums["Status"]["enum"], [n for n, _ in statuses],
             "openapi Status")
    check_eq(enums["Phase"]["enum"], phases, "openapi Phase")


def case_assets_served():
    page_src = read(os.path.join(WEB, "index.html"), "rb")
    refs = Refs()
    refs.feed(page_src.decode())
    assets = sorted(os.path.basename(p) for p in glob.glob(
        os.path.join(WEB, "*")) if p.endswith((".js", ".css")))
    check_eq(sorted(refs.refs), sorted(assets + MADE),
             "files index.html loads")
    check("app.js" in refs.refs and "style.css" in refs.refs, refs.refs)
    with Daemon() as d:
        code, ctype, body = fetch(d, "/")
        check_eq(code, 200, "GET /")
        check(ctype.startswith("text/html"), "GET / type " + ctype)
        check_eq(body, page_src, "GET / body")
        for name in ["index.html"] + assets:
            code, ctype, body = fetch(d, "/" + name)
            check_eq(code, 200, "GET /" + name)
            check(ctype.startswith(TYPES[os.path.splitext(name)[1]]),
                  "%s served as %r" % (name, ctype))
            check_eq(body, read(os.path.join(WEB, name), "rb"), name)
        check_eq(fetch(d, "/no-such-file.js")[0], 404, "unknown file")
        check_lifecycle_js(d)
    for name, src in js_sources().items():
        for bad in ("innerHTML", "outerHTML", "insertAdjacentHTML",
                    "document.write", "eval("):
            check(bad not in src, "%s uses %s" % (name, bad))
    for name in ["index.html"] + assets:
        src = read(os.path.join(WEB, name))
        check(not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", src),
              name + " loads something from outside")


def js_paths():
    """The API path templates of web/*.js: quoted strings starting with
    '/' outside comments (app.js writes every API path as such a template
    and passes it through url())."""
    paths = set()
    for name, src in js_sources().items():
        src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
        check_eq(src.count("fetch("), int(name == "app.js"),
                 name + ": fetch() calls outside withToken()")
        paths |= set(re.findall(r"'(/[A-Za-z{][^' ]*)'", src))
    return paths


def import_trace(d):
    code, cap = d.post("/imports", {"path": os.path.join(TRACES_DIR, TRACE),
                                    "label": LABEL})
    check_eq(code, 202, "POST /imports: %s" % (cap,))
    cap = d.wait_status(cap["id"])
    check_eq(cap["status"], "done", "import status: %s" % (cap,))
    return cap


def has(obj, keys, what):
    check(isinstance(obj, dict), "%s: not an object: %r" % (what, obj))
    missing = [k for k in keys if k not in obj]
    check(not missing, "%s lacks %s" % (what, missing))


# What the dashboard reads from each answer.
CAPTURE_KEYS = ["id", "kind", "label", "params", "status", "phase",
                "created_at", "started_at", "finished_at", "phase_started_at",
                "progress", "error", "bench"]
RANK_KEYS = ["rank", "label", "status", "device", "kernel_events",
             "distinct_kernels", "kernel_ns", "gpu_busy_ns", "span_ns",
             "memcpy_bytes", "runtime_ns"]
ROW_KEYS = {
    "kernels": ["name", "category", "count", "total_ns", "avg_ns", "min_ns",
                "max_ns", "share"],
    "launches": ["name", "grid", "block", "registers_per_thread",
                 "shared_bytes", "count", "total_ns", "avg_ns"],
    "categories": ["category", "count", "total_ns", "share"],
    "steps": ["kind", "count", "total_ns", "avg_ns", "tokens", "padded"],
    "memcpy": ["kind", "count", "total_ns", "bytes", "max_bytes"],
    "runtime": ["name", "count", "total_ns", "median_ns", "max_ns"],
    "phases": ["index", "start_ns", "end_ns", "busy_ns", "kernel_events",
               "cause", "top_kernels", "top_launches"],
}
ALL_RANK_KEYS = ["ranks", "slowest_rank", "slowest_rank_ns", "fastest_rank",
                 "fastest_rank_ns"]
# The query parameters web/*.js may send to each route.
JS_PARAMS = {
    "/captures": {"status", "kind", "limit"},
    "/captures/{id}/kernels": {"rank", "q", "category", "sort", "limit"},
    "/captures/{id}/launches": {"rank", "q", "sort", "limit"},
    "/captures/{id}/runtime": {"rank", "q", "sort", "limit"},
    "/captures/{id}/categories": {"rank"},
    "/captures/{id}/steps": {"rank"},
    "/captures/{id}/memcpy": {"rank"},
    "/captures/{id}/phases": {"rank"},
    "/captures/{id}/logs": {"which"},
    "/diff": {"a", "b", "by", "norm", "rank", "limit"},
}
# Tables asked with sort and a row limit, as web/capture.js does.
LONG_TABLES = ("kernels", "launches", "runtime")


def check_table(d, cid, table, rank):
    """A table route as the dashboard asks it, all ranks or one."""
    query = ["rank=%d" % rank] if rank is not None else []
    if table in LONG_TABLES:
        query += ["sort=total", "limit=100"]
    code, t = d.get("/captures/%d/%s%s" % (
        cid, table, "?" + "&".join(query) if query else ""))
    check_eq(code, 200, "%s %s" % (table, t))
    has(t, ["rank", "rows"], table)
    check_eq(t["rank"], rank, table + " rank")
    check(t["rows"] or table in ("steps", "memcpy"), table + " has no rows")
    for row in t["rows"]:
        has(row, ROW_KEYS[table] + (ALL_RANK_KEYS if table == "kernels" and
                                    rank is None else []), table + " row")


def query_params(doc, path):
    """Names of the query parameters that openapi.yaml lists for GET path."""
    refs = doc["components"]["parameters"]
    params = doc["paths"][path].get("parameters", []) + \
        doc["paths"][path]["get"].get("parameters", [])
    params = [refs[p["$ref"].split("/")[-1]] if "$ref" in p else p
              for p in params]
    return {p["name"] for p in params if p["in"] == "query"}


def case_paths_in_openapi():
    doc = json.loads(read(OPENAPI))
    spec = doc["paths"]
    used = js_paths()
    check_eq(sorted(used - set(spec)), [], "JS paths not in openapi.yaml")
    unused = {p for p in spec if p not in ("/", "/{file}", "/healthz",
                                           "/metrics")} - used
    check_eq(sorted(unused), [], "openapi routes the dashboard never uses")
    for path, names in JS_PARAMS.items():
        check(path in used, path + " not in web/*.js")
        check_eq(sorted(names - query_params(doc, path)), [],
                 "query parameters of %s not in openapi.yaml" % path)
    with Daemon(conf={"import_roots": TRACES_DIR}) as d:
        cap = import_trace(d)
        cid = cap["id"]
        has(cap, CAPTURE_KEYS + ["ranks"], "capture")
        check(cap["ranks"], "no ranks")
        for r in cap["ranks"]:
            has(r, RANK_KEYS, "rank")
        rank = cap["ranks"][0]["rank"]
        code, lst = d.get("/captures?limit=50")
        check_eq(code, 200, "list")
        has(lst, ["captures", "next_before"], "list")
        check_eq([c["id"] for c in lst["captures"]], [cid], "listed ids")
        has(lst["captures"][0], CAPTURE_KEYS, "listed capture")
        for table in ROW_KEYS:
            check(("/captures/{id}/" + table) in used, table)
            check_table(d, cid, table, None)
            check_table(d, cid, table, rank)
        code, diff = d.get("/diff?a=%d&b=%d&by=kernel&norm=none&limit=200"
                           % (cid, cid))
        check_eq(code, 200, "diff %s" % (diff,))
        has(diff, ["by", "norm", "a_steps", "b_steps", "rows", "warnings",
                   "categories"], "diff")
        for w in diff["warnings"]:
            has(w, ["code", "message"], "diff warning")
        for key, rows in (("name", diff["rows"]),
                          ("category", diff["categories"])):
            check(rows, "diff without %s rows" % key)
            for row in rows:
                has(row, [key, "a_count", "b_count", "a_total_ns",
                          "b_total_ns", "delta_ns", "delta_pct", "status"],
                    "diff row")
                check_eq((row["delta_ns"], row["status"]), (0, "both"),
                         "a capture against itself")
        code, ctype, body = fetch(d, "/captures/%d/ranks/%d/trace" % (
            cid, rank))
        check_eq(code, 200, "raw trace")
        check_eq(body, read(os.path.join(TRACES_DIR, TRACE), "rb"), "trace")


def top_kernels(n):
    """The n kernel names of TRACE with the largest total time, largest
    first, from the independent reference (tests/ref_index.py)."""
    total = {k: v["total_ns"] for k, v in
             ref_index.reference(os.path.join(TRACES_DIR, TRACE))
             ["kernels"].items()}
    ranked = sorted(total, key=lambda k: (-total[k], k))
    check(total[ranked[n - 1]] > total[ranked[n]], "tie at the cut")
    return ranked[:n]


class Texts(html.parser.HTMLParser):
    """Text nodes (entities decoded) and tag names of a serialised DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts = []
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)

    def handle_data(self, data):
        self.texts.append(data)


def dump_dom(chromium, url):
    profile = tempfile.mkdtemp(prefix="traced-web-chromium-")
    try:
        out = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--no-first-run", "--user-data-dir=" + profile,
             "--virtual-time-budget=15000", "--dump-dom", url],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=180,
            check=True)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    dom = out.stdout.decode("utf-8")
    page = Texts()
    page.feed(dom)
    return dom, page


def case_dom_shows_kernels():
    chromium = next((p for p in ("/usr/bin/chromium", shutil.which(
        "chromium")) if p and os.access(p, os.X_OK)), None)
    if not chromium:
        print("note: no /usr/bin/chromium: the headless DOM check is skipped")
        return SKIPPED
    top = top_kernels(5)
    check(any("<" in n for n in top), "no top kernel name holds '<'")
    with Daemon(conf={"import_roots": TRACES_DIR}) as d:
        cid = import_trace(d)["id"]
        dom, page = dump_dom(chromium, "%s/#/captures/%d" % (d.base, cid))
        at = [page.texts.index(n) if n in page.texts else -1 for n in top]
        check(-1 not in at, "top kernels missing from the page: %s" % (
            [n for n, i in zip(top, at) if i < 0]))
        check_eq(at, sorted(at), "top kernels in order of total time")
        for name in top:
            check(html.escape(name, quote=False) in dom,
                  "name not escaped: " + name)
        dom, page = dump_dom(chromium, d.base + "/#/")
        check(any(LABEL in t for t in page.texts), "label not in the list")
        check("b" not in page.tags, "the label became markup")
        dom, page = dump_dom(chromium, "%s/#/diff/%d/%d" % (d.base, cid, cid))
        check(top[0] in page.texts, "top kernel not in the diff")
    return 0


def main():
    cases = {n[len("case_"):]: f for n, f in globals().items()
             if n.startswith("case_")}
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        sys.exit("usage: test_web.py %s" % "|".join(sorted(cases)))
    rc = cases[sys.argv[1]]() or 0
    print("web_%s: %s" % (sys.argv[1], "skipped" if rc else "ok"))
    sys.exit(rc)


if __name__ == "__main__":
    main()
