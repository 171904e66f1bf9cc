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
  dom_shows_results  headless chromium renders the collectives of a
                     generated TP=4 import (who held the others back, the
                     rank x time skew map: their text alternatives say
                     tests/ref_collectives.py's figures) and the verdicts
                     (badges in the list and the head, the regressed
                     family); each rank's part of the worst instances
                     links to its slice, which holds that rank's kernel;
                     screenshots in <build>/web-artifacts. Exits 77
                     without chromium.
  dom_links_slices   headless chromium renders a capture's steps and
                     phases: every outlier step (slowest and median) and
                     every phase links to its slice, the rank's window of
                     the raw trace (/captures/<id>/ranks/<r>/slice), for
                     one rank and for all; each link answers a slice of
                     that window holding that step. Exits 77 without
                     chromium.
  dom_opens_perfetto headless chromium, driven over the DevTools pipe,
                     clicks "open in Perfetto" beside a rank's slice and
                     beside all ranks' of an import: perfetto_ui_url (a
                     stand-in page served by the test that answers PING
                     with PONG only from the third) receives, titled with
                     the file name, exactly the bytes the slice's link
                     downloads; with perfetto_ui_url empty the action is
                     not offered. Exits 77 without chromium.
  dom_shows_decode   headless chromium renders the Decode tab of a
                     generated ATOM-style import (make_decode_pairs.py: two
                     graph batch sizes, piecewise and full, layer 2 3x
                     slower, a replay with a dropped kernel): the median
                     step's stacked bar (its text alternative and each
                     part's tooltip with its kernels say
                     tests/ref_decode.py's figures), the slow layer first,
                     the repeated block's spread bars, a module's kernels,
                     the dropped kernel in the completeness table, CSV
                     links, and /diff by module of one step kind per step;
                     screenshots in <build>/web-artifacts. Exits 77
                     without chromium.
  dom_shows_perf     headless chromium renders the Perf tab of the H100
                     trace (shapes, Python frames, [memory] events): a
                     roofline point per op group of /ops/perf with its row
                     on hover and the H100's roofs in its text alternative,
                     the time-lost table in /ops/perf's order, the memory
                     chart whose text says each device's peak (the largest
                     Total Allocated), the memory and source tables as
                     their routes give them; screenshots in
                     <build>/web-artifacts. Exits 77 without chromium.
  dom_shows_pictures headless chromium renders the analysis pictures of an
                     import (the generated trace with every idle cause, and
                     a real one): the timeline, the step-time histograms,
                     the idle bars and the diff's signed bars, whose text
                     alternatives (<desc>) must say tests/ref_index.py's
                     figures; screenshots, wide and narrow, are kept in
                     <build>/web-artifacts. Exits 77 without chromium.
"""
import glob
import gzip
import html
import html.parser
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import HEADLESS, Browser, find_chromium  # noqa: E402
import ref_cpath  # noqa: E402
import ref_index  # noqa: E402
from tracedtest import (SRC_DIR, TRACED_BIN, TRACES_DIR, Daemon,  # noqa
                        check, check_eq, run_named_case)

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
    phases = re.findall(r"XX\((\w+), (\w+), (?:\"\w+\"|NULL)[,)]", src)
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
        # The SVG namespace is a name (createElementNS), never fetched.
        src = read(os.path.join(WEB, name)).replace(
            "'http://www.w3.org/2000/svg'", "SVGNS")
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
                "progress", "error", "bench", "collectives", "verdict"]
RANK_KEYS = ["rank", "label", "status", "device", "kernel_events",
             "distinct_kernels", "kernel_ns", "gpu_busy_ns", "span_ns",
             "memcpy_bytes", "runtime_ns", "t0_ns"]
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
    "steps/histogram": ["kind", "lo_ns", "hi_ns", "count"],
    "steps/buckets": ["kind", "dim", "lo", "hi", "count", "padded_share",
                      "p50_ns", "p99_ns", "max_ns"],
    "steps/outliers": ["kind", "role", "index", "start_ns", "dur_ns",
                       "label", "top_kernels"],
    "idle": ["cause", "idle_ns", "share"],
    "timeline": ["start_ns", "end_ns", "busy_ns", "by_category", "step"],
    "families": ["family", "category", "kernels", "count", "total_ns",
                 "avg_ns", "p50_ns", "p99_ns", "max_ns", "share"],
    "families/steps": ["family", "step", "count", "total_ns", "steps",
                       "per_step_ns"],
    "critical_path/summary": ["step", "steps", "analyzed", "length_ns",
                              "length_p50_ns", "length_max_ns"] + [
        b + "_ns" for b in ("cpu", "gpu", "comm", "launch", "gap", "sync")] +
    ["kernels", "kernels_on_path", "queue_max"],
    "critical_path/steps": ["index", "step", "role", "status", "dur_ns",
                            "length_ns", "kernels", "kernels_on_path",
                            "queue_max"],
    "critical_path": ["index", "step", "what", "where", "bound", "from_ns",
                      "to_ns"],
    "critical_path/kernels": ["name", "step", "steps", "steps_on",
                              "instances", "on_path", "critical_ns",
                              "slack_p50_ns", "slack_p99_ns",
                              "slack_max_ns"],
    "critical_path/families": ["family", "step", "steps", "steps_on",
                               "critical_ns", "slack_p50_ns"],
    "idle/culprits": ["step", "cause", "culprit", "culprit_kind", "count",
                      "idle_ns", "p50_ns", "p99_ns"],
    "sequences": ["step", "n", "sequence", "count", "steps", "total_ns"],
    "sequences/median": ["step", "position", "family", "name", "count",
                         "dur_ns", "share"],
}
# Tables that may be empty for a trace without GPU-side run labels.
MAY_BE_EMPTY = ("steps", "memcpy", "steps/histogram", "steps/buckets",
                "steps/outliers", "families/steps", "idle/culprits")
ALL_RANK_KEYS = ["ranks", "slowest_rank", "slowest_rank_ns", "fastest_rank",
                 "fastest_rank_ns"]
# The query parameters web/*.js may send to each route.
JS_PARAMS = {
    "/captures": {"status", "kind", "limit"},
    "/captures/{id}/kernels": {"rank", "q", "category", "sort", "limit",
                               "family", "on_path"},
    "/captures/{id}/launches": {"rank", "q", "sort", "limit"},
    "/captures/{id}/runtime": {"rank", "q", "sort", "limit"},
    "/captures/{id}/categories": {"rank"},
    "/captures/{id}/steps": {"rank"},
    "/captures/{id}/memcpy": {"rank"},
    "/captures/{id}/phases": {"rank"},
    "/captures/{id}/steps/histogram": {"rank"},
    "/captures/{id}/steps/buckets": {"rank"},
    "/captures/{id}/steps/outliers": {"rank"},
    "/captures/{id}/idle": {"rank", "by"},
    "/captures/{id}/timeline": {"rank", "buckets"},
    "/captures/{id}/families": {"rank", "q", "category", "sort", "limit",
                                "on_path"},
    "/captures/{id}/families/steps": {"rank", "q", "limit"},
    "/captures/{id}/logs": {"which"},
    "/diff": {"a", "b", "by", "norm", "rank", "kind", "limit"},
    "/captures/{id}/collectives": {"rank", "by"},
    "/captures/{id}/collectives/instances": {"limit"},
    "/captures/{id}/collectives/timeline": set(),
    "/captures/{id}/verdict": set(),
    "/captures/{id}/ranks/{r}/slice": {"start_ns", "end_ns"},
    "/captures/{id}/slice": {"start_ns", "end_ns"},
    "/settings": set(),
    "/captures/{id}/decode/steps": {"rank"},
    "/captures/{id}/decode/median": {"rank", "kind", "limit"},
    "/captures/{id}/decode/modules": {"rank", "kind", "q", "limit"},
    "/captures/{id}/decode/layers": {"rank", "kind", "limit"},
    "/captures/{id}/decode/ops": {"rank", "kind", "q", "limit"},
    "/captures/{id}/decode/layer_modules": {"rank", "kind", "q", "limit"},
    "/captures/{id}/decode/op_modules": {"rank", "kind", "q", "limit"},
    "/captures/{id}/decode/blocks": {"rank", "kind", "q", "limit"},
    "/captures/{id}/decode/kernels": {"rank", "kind", "module", "limit"},
    "/captures/{id}/critical_path/summary": {"rank"},
    "/captures/{id}/critical_path/steps": {"rank", "limit"},
    "/captures/{id}/critical_path": {"rank", "kind", "step", "limit"},
    "/captures/{id}/critical_path/kernels": {"rank", "q", "limit"},
    "/captures/{id}/critical_path/families": {"rank", "q", "limit"},
    "/captures/{id}/idle/culprits": {"rank", "limit"},
    "/captures/{id}/sequences": {"rank", "q", "limit"},
    "/captures/{id}/sequences/median": {"rank", "limit"},
}
# Every table tab offers its rows as CSV (the same query, format=csv).
for _path in JS_PARAMS:
    if _path.startswith("/captures/{id}/") and "/ranks/" not in _path and \
            _path not in ("/captures/{id}/logs", "/captures/{id}/verdict",
                          "/captures/{id}/slice"):
        JS_PARAMS[_path] = JS_PARAMS[_path] | {"format"}
# What web/results.js reads of the collective routes and the verdict.
RESULT_KEYS = {
    "collectives": ["rank", "count", "total_ns", "exposed_ns", "matched",
                    "wait_ns", "transfer_ns", "last", "held_ns"],
    "collectives/instances": ["family", "index", "start_ns", "skew_ns",
                              "last_rank", "per_rank"],
    "collectives/timeline": ["bin", "start_ns", "rank", "instances",
                             "late_ns", "last"],
}
VERDICT_KEYS = ["verdict", "baseline", "baseline_source", "compared",
                "threshold_pct", "step_noise_pct", "pinned", "reasons",
                "changes"]
# Tables asked with sort and a row limit, as web/capture.js does.
LONG_TABLES = ("kernels", "launches", "runtime", "families")


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
    check(t["rows"] or table in MAY_BE_EMPTY, table + " has no rows")
    for row in t["rows"]:
        has(row, ROW_KEYS[table] + (ALL_RANK_KEYS if table == "kernels" and
                                    rank is None else []), table + " row")


def check_results(d, cid, used):
    """The collective routes and the verdict as web/results.js asks."""
    for table, keys in RESULT_KEYS.items():
        check(("/captures/{id}/" + table) in used, table)
        code, t = d.get("/captures/%d/%s" % (cid, table))
        check_eq(code, 200, "%s %s" % (table, t))
        has(t, ["rank", "rows"], table)
        for row in t["rows"]:
            has(row, keys, table + " row")
    code, v = d.get("/captures/%d/verdict" % cid)
    check_eq(code, 200, "verdict %s" % (v,))
    has(v, VERDICT_KEYS, "verdict")
    check("/captures/{id}/baseline" in used, "the pin")


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
        check_results(d, cid, used)
        code, st = d.get("/settings")
        check_eq((code, st), (200, {"perfetto_ui_url":
                                    "https://ui.perfetto.dev"}), "settings")
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


def chromium_run(chromium, url, *extra):
    profile = tempfile.mkdtemp(prefix="traced-web-chromium-")
    try:
        return subprocess.run(
            [chromium] + HEADLESS + ["--user-data-dir=" + profile,
                                     "--virtual-time-budget=15000"] +
            list(extra) + [url],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=180,
            check=True)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dump_dom(chromium, url):
    out = chromium_run(chromium, url, "--dump-dom")
    dom = out.stdout.decode("utf-8")
    page = Texts()
    page.feed(dom)
    return dom, page


def with_chromium(what):
    """A DOM case, handed the headless chromium it drives; without one it
    is skipped, saying that what is."""
    def wrap(case):
        def run():
            chromium = find_chromium()
            if not chromium:
                print("note: no /usr/bin/chromium: %s is skipped" % what)
                return SKIPPED
            return case(chromium)
        return run
    return wrap


@with_chromium("the headless DOM check")
def case_dom_shows_kernels(chromium):
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


# ---- the analysis pictures ----

VLLM = "tracelens__vllm_decode_full_graph_execution.json.gz"


class Pictures(html.parser.HTMLParser):
    """The <desc> texts of the SVG pictures, and the signed bars of a
    diff: [(class of its rect or None, rect width)]."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.descs, self.bars, self.svgs = [], [], []
        self.forest = []   # per forest row: {band: (x, w), ci: (x1, x2), est}
        self._in_desc, self._delta = False, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svgs.append(a)
            self._delta = "delta" in (a.get("class") or "")
            if self._delta:
                self.bars.append([None, 0.0])
            if "forest" in (a.get("class") or ""):
                self.forest.append({})
        elif self.forest and self.svgs[-1].get("class") == "forest" and \
                tag in ("rect", "line", "circle"):
            self._forest_shape(tag, a)
        elif tag == "desc":
            self._in_desc = True
            self.descs.append("")
        elif tag == "rect" and self._delta:
            self.bars[-1] = [a.get("class"), float(a.get("width", 0))]

    def _forest_shape(self, tag, a):
        cls = (a.get("class") or "").split()
        row = self.forest[-1]
        if tag == "rect" and "band" in cls:
            row["band"] = (float(a["x"]), float(a["width"]))
        elif tag == "line" and "ci" in cls:
            row["ci"] = (float(a["x1"]), float(a["x2"]))
            row["change"] = cls[1] if len(cls) > 1 else None
        elif tag == "circle":
            row["est"] = float(a["cx"])

    def handle_endtag(self, tag):
        if tag == "desc":
            self._in_desc = False
        elif tag == "svg":
            self._delta = False

    def handle_data(self, data):
        if self._in_desc:
            self.descs[-1] += data


def ns(text):
    """The integers of "1,234 ns" figures in text, in order."""
    return [int(x.replace(",", "")) for x in re.findall(
        r"([\d,]+) ns", text)]


def pictures(chromium, url, shot, width):
    """The page's pictures; a screenshot of it kept as shot."""
    dom = chromium_run(chromium, url, "--dump-dom",
                       "--window-size=%d,2000" % width).stdout.decode()
    chromium_run(chromium, url, "--hide-scrollbars", "--screenshot=" + shot,
                 "--window-size=%d,2400" % width)
    p = Pictures()
    p.feed(dom)
    check(os.path.getsize(shot) > 0, "no screenshot " + shot)
    return p


def import_folder(d, root, name, files):
    top = os.path.join(root, name)
    for i, data in enumerate(files):
        os.makedirs(os.path.join(top, "rank_%d" % i))
        with open(os.path.join(top, "rank_%d" % i, "t.pt.trace.json.gz"),
                  "wb") as f:
            f.write(data)
    code, cap = d.post("/imports", {"path": top})
    check_eq(code, 202, "import " + name)
    cap = d.wait_status(cap["id"])
    check_eq(cap["status"], "done", "import " + name)
    return cap


def picture_refs(d, cap):
    out = {}
    for r in cap["ranks"]:
        code, t = d.get("/captures/%d/kernels?rank=%d" % (cap["id"],
                                                          r["rank"]))
        out[r["rank"]] = ref_index.reference(r["file"], categories={
            k["name"]: k["category"] for k in t["rows"]})
    return out


def rank_descs(p, refs, head, tail, what):
    """The descriptions of p's pictures of a rank ("<head><rank><tail>..."),
    one per rank of refs, each as (rank, text, the rank's reference)."""
    descs = [t for t in p.descs if t.startswith(head)]
    check_eq(len(descs), len(refs), what)
    for text in descs:
        rank = int(re.match(re.escape(head) + r"(\d+)" + re.escape(tail),
                            text).group(1))
        yield rank, text, refs[rank]


def check_timeline_descs(p, refs):
    for rank, text, ref in rank_descs(p, refs, "Rank ", ":",
                                      "one timeline per rank"):
        busy, span = ns(text)[:2]
        check_eq((busy, span), (ref["gpu_busy_ns"], ref["span_ns"]),
                 "timeline busy and span of rank %d" % rank)
        cats = {}
        for row in ref["timeline"]:
            for k, v in row["by_category"].items():
                cats[k] = cats.get(k, 0) + v
        said = dict((m.group(1), int(m.group(2).replace(",", "")))
                    for m in re.finditer(r"(\w+) ([\d,]+) ns", text.split(
                        "By category:")[1].split(".")[0]))
        check_eq(said, cats, "timeline categories of rank %d" % rank)


def check_idle_descs(p, refs):
    for rank, text, ref in rank_descs(p, refs, "rank ", " idle",
                                      "one idle bar per rank"):
        want = {}
        for (_, cause), v in ref["idle"].items():
            want[cause] = want.get(cause, 0) + v
        said = {m.group(1): int(m.group(2).replace(",", "")) for m in
                re.finditer(r"(\w+) ([\d,]+) ns \(", text)}
        check_eq(ns(text)[0], ref["idle_ns"], "idle of rank %d" % rank)
        check_eq(said, want, "idle causes of rank %d" % rank)


def check_critical_descs(p, path):
    """The Critical path tab of one rank: a bar per step kind saying its
    path's length and breakdown, and its median and slowest steps' paths
    one lane per thread or stream, each lane saying its stretches, all as
    the independent reference (ref_cpath.py) has them."""
    ref = ref_cpath.reference(path)
    bars = {t.split(":")[0]: t for t in p.descs
            if re.match(r"[\w#]+: critical path ", t)}
    check_eq(sorted(bars), sorted(ref["kinds"]), "a bar per step kind")
    for kind, text in bars.items():
        k = ref["kinds"][kind]
        said = {m.group(1): int(m.group(2).replace(",", "")) for m in
                re.finditer(r"(\w+) ([\d,]+) ns", text.split(": ", 1)[1])}
        want = {b: k[b + "_ns"] for b in ("cpu", "gpu", "comm", "launch",
                                          "gap", "sync")}
        want["path"] = k["length_ns"]
        check_eq(said, want, "critical path of " + kind)
    lanes = {}
    for t in p.descs:
        m = re.match(r"(\S+) (median|slowest) step #(\d+), (\S+ \S+): ", t)
        if m:
            lanes[(m.group(1), m.group(2), int(m.group(3)), m.group(4))] = \
                t.split(": ", 1)[1].count("; ") + 1
    check(lanes, "no path drawn")
    segs = {}
    for sg in ref["segments"]:
        segs.setdefault((sg["index"], sg["where"]), []).append(sg)
    steps = {(kind, role): i for i, row in ref["steps"].items()
             for kind in [row["step"]] for role in (row["role"] or
                                                     "").split()}
    want = {(kind, role, i, where): len(v) for (kind, role), i in
            steps.items() for (j, where), v in segs.items() if j == i}
    check_eq(lanes, want, "the picked steps' lanes and their stretches")


def check_histogram_descs(p, ref):
    descs = [t for t in p.descs if re.match(r"\w+: \d+ steps in", t)]
    check_eq(len(descs), len(ref["steps"]), "one histogram per kind")
    for text in descs:
        kind = text.split(":")[0]
        step, bins = ref["steps"][kind], [b for b in ref["step_histogram"]
                                          if b["kind"] == kind]
        check_eq(int(re.search(r": (\d+) steps", text).group(1)),
                 step["count"], kind + " steps")
        p50 = int(re.search(r"p50 ([\d,]+) ns", text).group(1).replace(
            ",", ""))
        p99 = int(re.search(r"p99 ([\d,]+) ns", text).group(1).replace(
            ",", ""))
        check_eq((p50, p99), (step["p50_ns"], step["p99_ns"]),
                 kind + " p50/p99")
        said = [(int(a.replace(",", "")), int(n)) for a, n in re.findall(
            r"([\d,]+) ns: (\d+)", text.split("Bins:")[1])]
        check_eq(said, [(b["lo_ns"], b["count"]) for b in bins],
                 kind + " bins")


def check_diff_bars(p, d, a, b):
    code, diff = d.get("/diff?a=%d&b=%d&by=kernel&norm=none&limit=200" % (
        a, b))
    check_eq(code, 200, "diff")
    tables = (diff["rows"], diff["categories"])
    check_eq(len(p.bars), sum(map(len, tables)), "one bar per diff row")
    bars = iter(p.bars)
    for rows in tables:   # the kernels' table, then the categories'
        most = max(abs(r["delta_ns"]) for r in rows)
        check(most > 0 or rows is diff["categories"],
              "the two imports differ")
        for row in rows:
            cls, width = next(bars)
            want = None if row["delta_ns"] == 0 else (
                "worse" if row["delta_ns"] > 0 else "better")
            what = str(row.get("name", row.get("category")))[:40]
            check_eq(cls, want, "bar of " + what)
            check(abs(width - (abs(row["delta_ns"]) / most * 50 if most
                               else 0)) < 1e-6, "bar width of " + what)


class Links(html.parser.HTMLParser):
    """The href of every link of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a" and dict(attrs).get("href"):
            self.hrefs.append(dict(attrs)["href"])


def slice_links(chromium, url, ranks=False):
    """The page's links to one rank's slices (with ranks, to all ranks'
    slices instead)."""
    p = Links()
    p.feed(dump_dom(chromium, url)[0])
    return {h for h in p.hrefs if "/slice?" in h and
            ("/ranks/" not in h) == ranks}


def slice_href(cid, rank, start, end):
    return "captures/%d/ranks/%d/slice?start_ns=%d&end_ns=%d" % (
        cid, rank, start, max(end, start + 1))


def ranks_href(cid, start, end):
    return "captures/%d/slice?start_ns=%d&end_ns=%d" % (
        cid, start, max(end, start + 1))


def check_slice_link(d, href, step=None):
    """The link answers the slice of its window; a step's holds it.
    Returns the slice."""
    code, ctype, body = fetch(d, "/" + href)
    check_eq((code, ctype), (200, "application/json"), href)
    doc = json.loads(body)
    q = dict(kv.split("=") for kv in href.split("?")[1].split("&"))
    st = doc["traced_slice"]
    check_eq((st["start_ns"], st["end_ns"]), (int(q["start_ns"]),
                                              int(q["end_ns"])), href)
    if step is not None:
        steps = [e for e in doc["traceEvents"] if e.get("cat") == "traced"
                 and e.get("tid") == 1 and e["args"]["label"] ==
                 step["label"] and e["args"]["step_ns"] == step["dur_ns"]]
        check_eq(len(steps), 1, href + ": the step's track")
    return doc


@with_chromium("the slice links check")
def case_dom_links_slices(chromium):
    import make_fixtures
    with tempfile.TemporaryDirectory(prefix="traced-web-slices-") as root:
        with open(make_fixtures.make_idle(root)["path"], "rb") as f:
            idle = f.read()
        with open(os.path.join(TRACES_DIR, VLLM), "rb") as f:
            vllm = f.read()
        with Daemon(conf={"import_roots": root}) as d:
            cid = import_folder(d, root, "a", [idle, vllm])["id"]
            base = "%s/#/captures/%d" % (d.base, cid)
            outliers = d.get("/captures/%d/steps/outliers" % cid)[1]["rows"]
            check(len(outliers) >= 4, "outlier steps: %r" % outliers)
            for rank, q in ((0, "&rank=0"), (None, "")):
                links = slice_links(chromium, base + "?tab=steps" + q)
                for o in outliers:
                    if rank is not None and o["rank"] != rank:
                        continue
                    href = slice_href(cid, o["rank"], o["start_ns"],
                                      o["start_ns"] + o["dur_ns"])
                    check(href in links, "no slice link for the %s step "
                          "%r: %r" % (o["role"], o, sorted(links)))
                    check_slice_link(d, href, o)
            check_ranks_links(d, chromium, cid, base, outliers)
            phases = d.get("/captures/%d/phases" % cid)[1]["rows"]
            check({p["rank"] for p in phases} == {0, 1}, "phases of 2 ranks")
            for rank, q in ((1, "&rank=1"), (None, "")):
                links = slice_links(chromium, base + "?tab=phases" + q)
                want = {slice_href(cid, p["rank"], p["start_ns"], p["end_ns"])
                        for p in phases if rank is None or p["rank"] == rank}
                check_eq(links, want, "phase slice links (rank %s)" % rank)
                for href in sorted(want)[:3]:
                    check_slice_link(d, href)
    return 0


def check_ranks_links(d, chromium, cid, base, outliers):
    """Each outlier step links to all ranks' slice of its instants (from
    the capture's t0), which holds the step on its rank's track."""
    t0s = {r["rank"]: r["t0_ns"] for r in d.get("/captures/%d" % cid)[1][
        "ranks"]}
    t0 = min(t0s.values())
    links = slice_links(chromium, base + "?tab=steps", ranks=True)
    for o in outliers:
        off = t0s[o["rank"]] - t0
        href = ranks_href(cid, o["start_ns"] + off,
                          o["start_ns"] + o["dur_ns"] + off)
        check(href in links, "no all-ranks link for the %s step %r: %r" % (
            o["role"], o, sorted(links)))
        code, ctype, body = fetch(d, "/" + href)
        check_eq((code, ctype), (200, "application/json"), href)
        doc = json.loads(body)
        place = sorted(t0s).index(o["rank"])
        steps = [e for e in doc["traceEvents"] if e.get("cat") == "traced"
                 and e["pid"] // 1000 == place and e.get("tid") == 1 and
                 e["args"]["label"] == o["label"] and
                 e["args"]["step_ns"] == o["dur_ns"]]
        check_eq(len(steps), 1, href + ": the step on its rank's track")


def artifacts_dir():
    out = os.path.join(os.path.dirname(os.path.abspath(TRACED_BIN)),
                       "web-artifacts")
    os.makedirs(out, exist_ok=True)
    return out


@with_chromium("the pictures check")
def case_dom_shows_pictures(chromium):
    import make_fixtures
    shots = artifacts_dir()
    with tempfile.TemporaryDirectory(prefix="traced-web-pics-") as root:
        with open(make_fixtures.make_idle(root)["path"], "rb") as f:
            idle = f.read()
        other = gzip.compress(gzip.decompress(idle).replace(
            b"MT128x128x64_MI16x16x1", b"MT256x64x64_MI32x32x8"), mtime=0)
        with open(os.path.join(TRACES_DIR, VLLM), "rb") as f:
            vllm = f.read()
        with Daemon(conf={"import_roots": root}) as d:
            a = import_folder(d, root, "a", [idle, vllm])
            b = import_folder(d, root, "b", [other, vllm])
            refs = picture_refs(d, a)
            base = "%s/#/captures/%d" % (d.base, a["id"])
            for width, tag in ((1280, "wide"), (400, "narrow")):
                p = pictures(chromium, base + "?tab=timeline", os.path.join(
                    shots, "timeline_%s.png" % tag), width)
                check_timeline_descs(p, refs)
                check(all(s.get("viewbox") and s.get("width") == "100%"
                          for s in p.svgs), "pictures scale to the width")
                p = pictures(chromium, base + "?tab=idle", os.path.join(
                    shots, "idle_%s.png" % tag), width)
                check_idle_descs(p, refs)
                p = pictures(chromium, base + "?tab=steps&rank=0",
                             os.path.join(shots, "steps_%s.png" % tag), width)
                check_histogram_descs(p, refs[0])
                p = pictures(chromium, base + "?tab=critical&rank=0",
                             os.path.join(shots, "critical_%s.png" % tag),
                             width)
                check_critical_descs(p, next(r["file"] for r in a["ranks"]
                                             if r["rank"] == 0))
                p = pictures(chromium, "%s/#/diff/%d/%d" % (
                    d.base, a["id"], b["id"]), os.path.join(
                        shots, "diff_%s.png" % tag), width)
                check_diff_bars(p, d, a["id"], b["id"])
    print("screenshots in", shots)
    return 0


# ---- collectives and verdicts (web/results.js) ----

def held_descs(p):
    """{rank: (last, matched, held_ns, wait_ns)} said by the held bars."""
    out = {}
    for t in p.descs:
        m = re.match(r"rank (\d+) arrived last ([\d,]+) times of ([\d,]+) "
                     r"and held the others back ([\d,]+) ns; it waited "
                     r"([\d,]+) ns\.", t)
        if m:
            out[int(m.group(1))] = tuple(int(x.replace(",", ""))
                                         for x in m.groups()[1:])
    return out


def skew_desc(p):
    """{rank: (mean late ns, collectives)} said by the rank x time map."""
    out = {}
    for t in p.descs:
        m = re.match(r"rank (\d+) ([\d,]+) ns late on average over ([\d,]+) "
                     r"collectives\.", t)
        if m:
            out[int(m.group(1))] = (int(m.group(2).replace(",", "")),
                                    int(m.group(3).replace(",", "")))
    return out


def check_collective_pictures(p, ref):
    by_rank = {}
    for f in ref["families"]:
        row = by_rank.setdefault(f["rank"], [0, 0, 0, 0])
        for i, k in enumerate(("last", "matched", "held_ns", "wait_ns")):
            row[i] += f[k]
    check_eq(held_descs(p), {r: tuple(v) for r, v in by_rank.items()},
             "held bars")
    late = {}
    for t in ref["timeline"]:
        v = late.setdefault(t["rank"], [0, 0])
        v[0] += t["late_ns"]
        v[1] += t["instances"]
    check_eq(skew_desc(p), {r: (int(math.floor(l / n + 0.5)), n)
                            for r, (l, n) in late.items()}, "skew map")


def check_instance_slices(d, chromium, cid):
    """Each rank's part of a worst collective links to its slice: the
    rank's window of the instance, holding that rank's kernel of it."""
    rows = d.get("/captures/%d/collectives/instances?limit=20" % cid)[1]
    want = {slice_href(cid, p["rank"], p["start_ns"],
                       p["start_ns"] + p["dur_ns"]): p
            for r in rows["rows"] for p in r["per_rank"]}
    check(len(want) >= 8, "instances of 4 ranks: %r" % rows)
    url = "%s/#/captures/%d?tab=collectives" % (d.base, cid)
    links = slice_links(chromium, url)
    check_eq(links, set(want), "the worst instances' slice links")
    # Each instance links to all ranks' slice from its first start.
    starts = {int(h.split("start_ns=")[1].split("&")[0])
              for h in slice_links(chromium, url, ranks=True)}
    check_eq(starts, {r["start_ns"] for r in rows["rows"]},
             "the worst instances' all-ranks links")
    for href in sorted(want)[:4]:
        doc = check_slice_link(d, href)
        durs = [round(e["dur"] * 1000) for e in doc["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") == "kernel"]
        check(want[href]["dur_ns"] in durs, href + ": the rank's collective "
              "kernel (%d ns) in its slice" % want[href]["dur_ns"])


def check_forest(d, chromium, cid, shots):
    """The verdict panel's forest plot draws the verdict's top changes:
    each row's text alternative says its figure, difference, interval,
    band and change, and its dot, interval line and shaded band sit where
    those numbers fall on the plot's one scale."""
    v = d.get("/captures/%d/verdict" % cid)[1]
    want = [c for c in v["changes"] if "ci_pct" in c][:8]
    check(want and any(c["name"] == "fused_moe_kernel" for c in want),
          "changes with intervals: %s" % v["changes"])
    p = pictures(chromium, "%s/#/captures/%d" % (d.base, cid),
                 os.path.join(shots, "verdict.png"), 1280)
    descs = [t for t in p.descs if re.match(r"\S+ .*: [-+]?[\d.]+% \("
                                             r"interval", t)]
    check_eq(len(descs), len(want), "forest rows: %s" % descs)
    check_eq(len(p.forest), len(want), "forest shapes")
    rng = float(re.search(r"scale \u00b1([\d.]+)%", descs[0]).group(1))
    sign = lambda x: ("+" if x > 0 else "") + "%.1f" % x  # noqa: E731
    for c, text, shape in zip(want, descs, p.forest):
        lo, hi = c["ci_pct"]
        said = "%s %s: %s%% (interval %s%% to %s%%), band \u00b1%.1f%% " \
            "(%s), %s;" % (c["figure"], c["name"], sign(c["diff_pct"]),
                           sign(lo), sign(hi), c["band_pct"],
                           c["band_source"], c["change"])
        check(text.startswith(said), "row text %r, want %r" % (text, said))

        def x(pct):
            return 500 + pct / rng * 480
        check(abs(shape["est"] - x(c["diff_pct"])) < 2 and
              abs(shape["ci"][0] - x(lo)) < 2 and
              abs(shape["ci"][1] - x(hi)) < 2 and
              abs(shape["band"][0] - x(-c["band_pct"])) < 2 and
              shape["change"] == c["change"],
              "row %s drawn at %s" % (c["name"], shape))
    check(rng >= max(max(abs(c["ci_pct"][0]), abs(c["ci_pct"][1]),
                         c["band_pct"]) for c in want) * 1.09,
          "one scale holds every row")


@with_chromium("the results check")
def case_dom_shows_results(chromium):
    import make_collectives
    import ref_collectives
    shots = artifacts_dir()
    config = {"model": "web-model", "tp": 2, "isl": 128, "osl": 128,
              "conc": 4}
    with tempfile.TemporaryDirectory(prefix="traced-web-results-") as root:
        tp4 = make_collectives.make_tp4(root)
        base = make_collectives.make_verdict_set(root, "base", 1, decode=12)
        slow = make_collectives.make_verdict_set(root, "slow", 3, decode=12,
                                                 slow={"moe": 1.2})
        with Daemon(conf={"import_roots": root}) as d:
            ids = []
            for top, extra in ((os.path.dirname(os.path.dirname(tp4[0])), {}),
                               (base, config), (slow, config)):
                code, cap = d.post("/imports", dict(extra, path=top))
                check_eq(code, 202, "import %s" % top)
                ids.append(d.wait_status(cap["id"])["id"])
            ref = ref_collectives.reference(tp4, keep=1000)
            for width, tag in ((1280, "wide"), (400, "narrow")):
                p = pictures(chromium, "%s/#/captures/%d?tab=collectives" % (
                    d.base, ids[0]), os.path.join(
                        shots, "collectives_%s.png" % tag), width)
                check_collective_pictures(p, ref)
            check_instance_slices(d, chromium, ids[0])
            dom, page = dump_dom(chromium, "%s/#/captures/%d" % (d.base,
                                                                ids[2]))
            check("regressed" in page.texts, "the capture's badge")
            check("fused_moe_kernel" in " ".join(page.texts),
                  "the regressed family in the verdict")
            check_forest(d, chromium, ids[2], shots)
            dom, page = dump_dom(chromium, d.base + "/#/")
            check_eq(sorted(t for t in page.texts if t in (
                "regressed", "incomparable", "unchanged", "improved")),
                ["incomparable", "incomparable", "regressed"],
                "the list's badges")
    print("screenshots in", shots)
    return 0


# ---- decode (web/decode.js) ----

class Grids(html.parser.HTMLParser):
    """Tables (their header and rows of cell texts), the median bar's parts
    (layer, module, tooltip), the spread bars' labels, the hrefs."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.parts, self.spreads, self.hrefs = [], [], [], []
        self.descs = []
        self._cell = None
        self._text = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"head": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("th", "td") and self.tables:
            self._cell = [tag, ""]
        elif tag == "rect" and "part" in (a.get("class") or ""):
            self.parts.append([a.get("data-layer"), a.get("data-module"), ""])
            self._text = self.parts[-1]
        elif tag == "circle" and "group" in (a.get("class") or ""):
            self.parts.append([a.get("data-op"), None, ""])
            self._text = self.parts[-1]
        elif tag == "svg" and "spread" in (a.get("class") or ""):
            self.spreads.append(a.get("aria-label"))
        elif tag == "desc":
            self.descs.append(["", "", ""])
            self._text = self.descs[-1]
        elif tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._cell:
            t = self.tables[-1]
            if self._cell[0] == "th":
                t["head"].append(self._cell[1].strip())
            else:
                t["rows"][-1].append(self._cell[1].strip())
            self._cell = None
        elif tag in ("rect", "desc", "circle"):
            self._text = None

    def handle_data(self, data):
        if self._cell:
            self._cell[1] += data
        if self._text is not None:
            self._text[2] += data

    def table(self, *head):
        """The table whose headers start with head: its header and rows."""
        got = [t for t in self.tables if tuple(t["head"][:len(head)]) == head]
        check(got, "no table headed %r: %r" % (head, [
            t["head"][:2] for t in self.tables]))
        return {"head": got[0]["head"], "rows": [r for r in got[0]["rows"]
                                                 if r]}


def grids(chromium, url, shot=None, width=1280):
    dom = chromium_run(chromium, url, "--dump-dom",
                       "--window-size=%d,2000" % width).stdout.decode()
    if shot:
        chromium_run(chromium, url, "--hide-scrollbars", "--screenshot=" +
                     shot, "--window-size=%d,3000" % width)
    g = Grids()
    g.feed(dom)
    return g


def exact(v):
    return "{:,} ns".format(v)


def check_median_bar(g, ref, slow):
    """The median step's bar of rank 0: its parts and their tooltips, its
    text alternative's layers, the slow layer named."""
    med = {k[1:]: v for k, v in ref["median"].items() if k[0] == "decode"}
    check_eq(sorted(((None if l == "" else int(l), m) for l, m, _ in
                     g.parts), key=repr),
             sorted(((l, m if m is not None else "(none)") for l, m in med),
                    key=repr), "the median bar's parts")
    for l, m, tip in g.parts:
        want = med[(None if l == "" else int(l), None if m == "(none)" else m)]
        check(exact(want["total_ns"]) in tip, "part %s %s: %r" % (l, m, tip))
        for k in want["top_kernels"]:
            check("%s \u00d7%d %s" % (k["name"], k["kernels"], exact(
                k["total_ns"])) in tip, "part %s %s kernels: %r" % (l, m, tip))
    by_layer = {}
    for (layer, _), v in med.items():
        by_layer[layer] = by_layer.get(layer, 0) + v["total_ns"]
    desc = [d for d in g.descs if d[2].startswith("decode median step")]
    check_eq(len(desc), 1, "one median bar")
    text = desc[0][2]
    check(exact(sum(by_layer.values())) in text, text)
    for layer, v in by_layer.items():
        check(("layer %d %s" % (layer, exact(v)) if layer is not None else
               "outside layers " + exact(v)) in text, text)
    check("Slowest layer: %d." % slow in text, text)


@with_chromium("the decode check")
def case_dom_shows_decode(chromium):
    import make_decode_pairs
    import ref_decode
    shots = artifacts_dir()
    with tempfile.TemporaryDirectory(prefix="traced-web-decode-") as root:
        fa = make_decode_pairs.make(os.path.join(root, "a"), ranks=2, slow=2)
        make_decode_pairs.make(os.path.join(root, "b"), ranks=2, seed=5,
                               slow=1)
        r0 = fa["ranks"][0]
        ref = ref_decode.reference(r0["run"], [tuple(c) for c in
                                               r0["captures"]])
        with Daemon(conf={"import_roots": root}) as d:
            ids = []
            for name in ("a", "b"):
                code, cap = d.post("/imports", {"path": os.path.join(root,
                                                                     name)})
                check_eq(code, 202, "import " + name)
                cap = d.wait_status(cap["id"])
                check_eq(cap["status"], "done", "import %s" % (cap,))
                ids.append(cap["id"])
            base = "%s/#/captures/%d?tab=decode&rank=0" % (d.base, ids[0])
            g = grids(chromium, base, os.path.join(shots, "decode_wide.png"))
            check_median_bar(g, ref, 2)
            # By module (the default), all figures of the reference.
            mods = g.table("module")
            want = sorted(((k[1], v) for k, v in ref["modules"].items()
                           if k[0] == "decode"),
                          key=lambda kv: (-kv[1]["total_ns"], kv[0] or ""))
            check_eq([r[0] for r in mods["rows"]][:5],
                     [k or "(none)" for k, _ in want][:5],
                     "modules, largest first")
            # The completeness table: the replay that lost a kernel.
            comp = g.table("rank", "capture traces")
            short = comp["head"].index("short")
            for row, rf in zip(comp["rows"], fa["ranks"]):
                check(row[short].startswith("%d (%d kernels missing;" % (
                    rf["short"], rf["missing"])), "short: %r" % row)
            for t in ("modules", "median", "steps"):
                check(any("decode/%s?" % t in h and "format=csv" in h
                          for h in g.hrefs), "CSV of decode/" + t)
            # By layer: the slow layer first.
            g = grids(chromium, base + "&view=layers")
            rows = g.table("layer")["rows"]
            check_eq(rows[0][0], "2", "the slow layer first")
            check_eq(len(rows), len([k for k in ref["layers"]
                                     if k[0] == "decode"]), "layer rows")
            # The repeated block: a spread bar per module, layer 2 slowest.
            g = grids(chromium, base + "&view=blocks", os.path.join(
                shots, "decode_blocks.png"))
            blocks = [v for k, v in ref["blocks"].items() if k[0] == "decode"]
            check_eq(sorted(g.spreads), sorted(
                "fastest layer %d %s, mean %s, slowest layer %d %s" % (
                    b["fastest_layer"], exact(b["fastest_ns"]),
                    exact(b["layer_ns"]), b["slowest_layer"],
                    exact(b["slowest_ns"])) for b in blocks), "spreads")
            check(all(b["slowest_layer"] == 2 for b in blocks), "slowest")
            # A module's kernels.
            mod = "model.layers.*.mlp.down_proj"
            g = grids(chromium, base + "&module=" + mod)
            names = [r[0] for r in g.table("kernel")["rows"]]
            check_eq(sorted(names), sorted(
                k[2] for k in ref["kernels"] if k[:2] == ("decode", mod)),
                "kernels of " + mod)
            # Narrow.
            grids(chromium, base, os.path.join(shots, "decode_narrow.png"),
                  400)
            # /diff by module, per decode step.
            q = "by=module&kind=decode&norm=per_step"
            p = pictures(chromium, "%s/#/diff/%d/%d?%s" % (
                d.base, ids[0], ids[1], q), os.path.join(
                    shots, "diff_module.png"), 1280)
            code, diff = d.get("/diff?a=%d&b=%d&%s&limit=200" % (
                ids[0], ids[1], q))
            check_eq(code, 200, "diff by module")
            check_eq(diff["kind"], "decode", "kind")
            check_eq(len(p.bars), len(diff["rows"]) + len(
                diff["categories"]), "one bar per diff row")
            g = grids(chromium, "%s/#/diff/%d/%d?%s" % (d.base, ids[0],
                                                       ids[1], q))
            check_eq([r[0] for r in g.table("module")["rows"]],
                     [r["module"] or "(none)" for r in diff["rows"]],
                     "the diff's modules")
    print("screenshots in", shots)
    return 0


# ---- the Perf tab (web/perf.js) ----

@with_chromium("the Perf tab check")
def case_dom_shows_perf(chromium):
    shots = artifacts_dir()
    trace = os.path.join(TRACES_DIR, "tracelens__h100_Qwen_Qwen1.5-0.5B-"
                         "Chat__1016005.json.gz")
    with Daemon(conf={"import_roots": TRACES_DIR}) as d:
        cid = d.imported(trace)["id"]
        api = {t: d.get("/captures/%d/%s?rank=0&limit=1000" % (cid, t))[1]
               for t in ("ops/perf", "memory", "sources")}
        base = "%s/#/captures/%d?tab=perf&rank=0" % (d.base, cid)
        g = grids(chromium, base, os.path.join(shots, "perf_wide.png"))
        perf = api["ops/perf"]["rows"]
        drawn = [r for r in perf if (r["flops_per_byte"] or 0) > 0 and
                 (r["tflops_s_mean"] or 0) > 0]
        check_eq(sorted(op for op, _, _ in g.parts),
                 sorted(r["op"] for r in drawn), "a point per op group")
        for op, _, tip in g.parts:
            check(any(r["op"] == op and r["params"] in tip and
                      "%s instances" % "{:,}".format(r["count"]) in tip
                      for r in drawn), "%s's tooltip: %r" % (op, tip))
        roof = [t for _, _, t in g.descs if "op groups" in t]
        check(roof and "Roof H100 SXM: 3.35 TB/s" in roof[0] and
              "matrix_bf16 989.4 TFLOPS/s" in roof[0], "roofs: %r" % roof)
        lost = g.table("op", "category", "parameters")["rows"]
        check_eq([r[0] for r in lost],
                 [r["op"] for r in perf if r["lost_us"] is not None][:25],
                 "time lost, largest first")
        mem = [t for _, _, t in g.descs if t.startswith("Rank 0, ")]
        check_eq(len(mem), 1, "one memory chart")
        for r in api["memory"]["rows"]:
            check("%s allocated up to %d bytes" % (
                r["device"], r["peak_allocated_bytes"]) in mem[0],
                "%s's peak: %r" % (r["device"], mem[0]))
        peaks = g.table("device", "peak allocated")["rows"]
        check_eq([r[0] for r in peaks],
                 [r["device"] for r in api["memory"]["rows"]], "devices")
        srcs = g.table("step", "source")["rows"]
        check_eq([r[1] for r in srcs][:10],
                 [r["source"] or "(no frame of the model's code)"
                  for r in api["sources"]["rows"]][:10], "sources")
        check(any("ops/perf?" in h and "format=csv" in h for h in g.hrefs),
              "CSV of ops/perf")
        grids(chromium, base, os.path.join(shots, "perf_narrow.png"), 400)
    print("screenshots in", shots)
    return 0


# ---- "open in Perfetto": the postMessage hand-off ----

# A stand-in for the Perfetto UI (the deep-linking protocol of
# perfetto.dev's docs): it answers its opener's PING with PONG (only from
# the third, so the dashboard must keep asking), then sends the trace it
# is handed to /got, with its title.
FAKE_UI = b"""<!doctype html><title>fake Perfetto UI</title><script>
let pings = 0;
window.addEventListener('message', ev => {
  if (ev.source !== window.opener) return;
  if (ev.data === 'PING') {
    if (++pings >= 3) ev.source.postMessage('PONG', '*');
    return;
  }
  const p = ev.data && ev.data.perfetto;
  if (p) fetch('/got?title=' + encodeURIComponent(p.title),
    {method: 'POST', body: p.buffer});
});
</script>"""


class FakeUi:
    """FAKE_UI served on a free loopback port; what it was handed, by
    arrival: [(title, bytes)]."""

    def __init__(self):
        import http.server
        import threading
        got, arrived = [], threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(FAKE_UI)

            def do_POST(self):
                n = int(self.headers["Content-Length"])
                title = urllib.parse.unquote(self.path.split("title=")[1])
                got.append((title, self.rfile.read(n)))
                arrived.set()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.got, self.arrived = got, arrived
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.url = "http://127.0.0.1:%d/ui/" % self.server.server_port
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# The index of the first "open in Perfetto" shown beside a link to one
# rank's slice (ranks false) or to all ranks' (true).
PERFETTO_BUTTON = """[...document.querySelectorAll(
  '.slice button.perfetto:not([hidden])')].findIndex(b =>
  b.parentNode.querySelector('a').getAttribute('href').includes('/ranks/')
  !== %s)"""
# Clicks button i; its slice's link: [href, file name].
PERFETTO_CLICK = """(() => {
  const b = document.querySelectorAll(
    '.slice button.perfetto:not([hidden])')[%d];
  const a = b.parentNode.querySelector('a');
  b.click();
  return [a.getAttribute('href'), a.getAttribute('download')];
})()"""


@with_chromium("the Perfetto check")
def case_dom_opens_perfetto(chromium):
    """Clicking "open in Perfetto" beside a rank's slice and beside all
    ranks' opens perfetto_ui_url (a stand-in served here) and hands it,
    after PING/PONG, exactly the bytes of the slice the link downloads,
    titled with its file name; with perfetto_ui_url empty the action is
    not offered."""
    import make_fixtures
    ui, browser = FakeUi(), None
    with tempfile.TemporaryDirectory(prefix="traced-web-perfetto-") as root:
        # Steps with GPU-side labels: their cards link to slices.
        with open(make_fixtures.make_idle(root)["path"], "rb") as f:
            idle = f.read()
        try:
            with Daemon(conf={"import_roots": root,
                              "perfetto_ui_url": ui.url}) as d:
                cid = import_folder(d, root, "p", [idle, idle])["id"]
                browser = Browser(chromium)
                page = browser.page("%s/#/captures/%d?tab=steps" % (d.base,
                                                                    cid))
                for ranks in (False, True):
                    i = browser.wait_for(page, "(%s) + 1" % (
                        PERFETTO_BUTTON % str(ranks).lower())) - 1
                    ui.arrived.clear()
                    href, name = browser.eval(page, PERFETTO_CLICK % i,
                                              gesture=True)
                    check(ui.arrived.wait(60), "nothing handed to the UI "
                          "for " + href)
                    code, ctype, body = fetch(d, "/" + href)
                    check_eq((code, ctype), (200, "application/json"), href)
                    title, got = ui.got[-1]
                    check_eq(title, name, href + ": title")
                    check(got == body, "%s: %d bytes handed over, the slice "
                          "is %d" % (href, len(got), len(body)))
                    check_eq(("/ranks/" not in href), ranks, href)
            with Daemon(conf={"import_roots": root,
                              "perfetto_ui_url": ""}) as d:
                cid = import_folder(d, root, "q", [idle])["id"]
                dom, _ = dump_dom(chromium, "%s/#/captures/%d?tab=steps" % (
                    d.base, cid))
                check("/slice?" in dom, "no slice link")
                check(not re.search(r'<button[^>]*class="perfetto"'
                                    r'(?![^>]*hidden)', dom),
                      "open in Perfetto offered with perfetto_ui_url empty")
        finally:
            if browser:
                browser.close()
            ui.close()
    return 0


if __name__ == "__main__":
    run_named_case(globals(), "web")
