"""The dashboard's pages as a performance engineer reads them (web/), in
headless Chromium driven over the DevTools pipe (tests/browser.py),
against a real daemon over real sockets. Each case exits 77 (skipped)
without /usr/bin/chromium.

Usage: test_web_pages.py CASE, CASE one of
  palette       one colour per name on every page: the kernel categories
                of two real ranks (the table's cells, the category bar,
                the timeline's legend, the glance, the diff by category),
                the idle causes and the critical path's bounds, each the
                colour web/charts.js's PALETTE gives it (read here from
                the file), the categories' colours distinct, the bands
                (steps, phases) in greys no name has, and no colour of
                the table written anywhere else in web/.
  axes          every picture over time (timeline, step histograms,
                phases, idle bars, critical-path lanes, the collectives'
                held bars and skew map, decode's median step) has an axis
                of round ticks in one unit, its label naming the unit;
                the timeline's spans the rank's span_ns; the mouse over
                each shows a readout with a time in it.
  empty_states  a trace without run labels says why it has no steps; its
                Decode tab shows the whole trace's
                modules (/decode/modules' rows) instead of "predates";
                one rank's collectives say why nothing is matched (no
                "0 ns held" bars); a filter matching nothing says so.
  demangled     the diff of two imports of a trace with mangled kernel
                names shows each in the demangled form the Kernels tab
                shows (the kernels table's demangled), the name as traced
                on hover.
  capture_top   a capture of the ATOM simulator at 1400x900: above the
                fold the verdict's line and the glance (each step kind's
                steady p50 to the ns, the idle share of the ranks' spans,
                the top five families in order), the benchmark's
                latencies as one table (the bench's medians exactly),
                model_id and tokenizer_id apart; a capture failed on a
                fatal marker opens its log scrolled to the line its error
                quotes, marked, and its phase bar without the sweep-only
                collecting; the ranks table's device cells (a dash where
                the trace names none); a capture with mark_trace (a real
                graph pair, 36 layers) draws its whole median step, every
                part of /decode/median, its device time to the ns; a
                sweep asked without a TP names the one its points ran
                with, its curve a y axis in tok/s.
  screens       docs/screens holds a PNG of every tab of the capture page
                (the tabs web/*.js defines) and of the list, a capture's
                top, a diff and a failure, as scripts/screens.py makes
                them, and README.md links each.
"""
import gzip
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser, find_chromium  # noqa: E402
from tracedtest import (SRC_DIR, TRACES_DIR, Daemon,  # noqa: E402
                        check, check_eq, run_named_case, wait_for)

WEB = os.path.join(SRC_DIR, "web")
SKIPPED = 77
# Real traces: 11 categories and mangled names (vLLM decode with graph
# replays); no run labels, GPU only; NCCL on one rank; ProfilerStep only,
# with modules.
VLLM = "tracelens__vllm_decode_full_graph_execution.json.gz"
GPU_ONLY = "tracelens__mi210_gpu_only_trace.json.gz"
NCCL = "tracelens__mi300_resnet_act_checkpoint.json.gz"
QWEN = "tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
UNITS = ("ns", "\u00b5s", "ms", "s", "%")


def read(path):
    with open(path) as f:
        return f.read()


def plain_phases():
    """The phases a plain capture runs, as the phase bar writes them: the
    spec's Phase enum (common/lifecycle.h's rows, web_assets_served holds
    them equal) but queued and collecting, a sweep point's only
    (docs/SWEEPS.md)."""
    spec = json.loads(read(os.path.join(SRC_DIR, "api", "openapi.yaml")))
    return [p.replace("_", " ")
            for p in spec["components"]["schemas"]["Phase"]["enum"]
            if p not in ("queued", "collecting")]


def js_object(name):
    """{key: value} of `const NAME = {k: 'v', ...};` in web/charts.js."""
    m = re.search(r"const %s = \{(.*?)\};" % name, read(os.path.join(
        WEB, "charts.js")), re.S)
    check(m is not None, "charts.js has no " + name)
    return dict(re.findall(r"(\w+): '([^']*)'", m.group(1)))


def rgb(color):
    """'#4e79a7' or 'rgb(78, 121, 167)' as a tuple."""
    if color.startswith("#"):
        return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(int(x) for x in re.findall(r"\d+", color)[:3])


def import_files(d, root, name, paths):
    """An import of a folder holding each of paths as a rank."""
    top = os.path.join(root, name)
    for i, p in enumerate(paths):
        os.makedirs(os.path.join(top, "rank_%d" % i))
        with open(p, "rb") as f, open(os.path.join(
                top, "rank_%d" % i, "t.pt.trace.json.gz"), "wb") as g:
            g.write(f.read())
    code, cap = d.post("/imports", {"path": top})
    check_eq(code, 202, "import " + name)
    cap = d.wait_status(cap["id"])
    check_eq(cap["status"], "done", "import %s: %s" % (name, cap))
    return cap


def with_browser(case):
    """Runs case(browser) with a browser, or skips without chromium."""
    chromium = find_chromium()
    if not chromium:
        print("note: no /usr/bin/chromium: the page check is skipped")
        return SKIPPED
    browser = Browser(chromium)
    try:
        case(browser)
    finally:
        browser.close()
    return 0


def page_of(browser, width=1400, height=900):
    page = browser.page("about:blank")
    browser.viewport(page, width, height)
    return page


def text(browser, page):
    return browser.eval(page, "document.getElementById('app').innerText")


# ---- one palette ----

# Every coloured name on the page: [where, name, colour]. A legend's name
# is its label with spaces for underscores; a band's legend says "band".
COLOURS = """(() => {
  const bg = e => getComputedStyle(e).backgroundColor;
  const out = [];
  for (const s of document.querySelectorAll('span.cat')) {
    out.push(['cell', s.textContent.trim(), bg(s.querySelector('.dot'))]);
  }
  for (const s of document.querySelectorAll('.legend > span')) {
    const i = s.querySelector(':scope > i');
    if (i) out.push([s.closest('.bands') ? 'band' : 'legend',
      s.textContent.trim().replace(/ /g, '_'), bg(i)]);
  }
  for (const r of document.querySelectorAll('rect[data-category]')) {
    out.push(['bar', r.dataset.category, r.getAttribute('fill')]);
  }
  for (const tr of document.querySelectorAll('.fams tr')) {
    out.push(['glance', /\\(([^)]+)\\)$/.exec(
      tr.querySelector('.fam').title)[1], bg(tr.querySelector('.dot'))]);
  }
  for (const r of document.querySelectorAll('rect.lane-band')) {
    out.push(['band', '', r.getAttribute('fill')]);
  }
  return out;
})()"""


def check_one_table(palette):
    """No colour of the table is written in another file of web/."""
    for name in os.listdir(WEB):
        if name == "charts.js" or not name.endswith((".js", ".css")):
            continue
        src = read(os.path.join(WEB, name)).lower()
        for k, v in palette.items():
            check(v.lower() not in src, "%s writes %s's colour %s" % (
                name, k, v))


def case_palette():
    palette, alias = js_object("PALETTE"), js_object("ALIAS")
    cats = list(palette)[:13]
    check_eq(cats[0], "gemm", "the categories lead the table")
    check_eq(len({rgb(palette[c]) for c in cats}), 13,
             "thirteen categories, thirteen colours")
    check_one_table(palette)
    import make_fixtures

    def case(browser):
        with tempfile.TemporaryDirectory(prefix="traced-web-pal-") as root, \
                Daemon(conf={"import_roots": root}) as d:
            idle = make_fixtures.make_idle(root)["path"]
            vllm = os.path.join(TRACES_DIR, VLLM)
            a = import_files(d, root, "a", [idle, vllm])["id"]
            b = import_files(d, root, "b", [vllm, idle])["id"]
            page = page_of(browser)
            seen = {}
            for url in ["#/captures/%d" % a] + [
                    "#/captures/%d?tab=%s" % (a, t) for t in (
                        "categories", "families", "timeline", "idle")] + [
                    "#/captures/%d?tab=critical&rank=0" % a,
                    "#/diff/%d/%d?by=category" % (a, b)]:
                browser.show(page, d.base + "/" + url)
                for where, name, colour in browser.eval(page, COLOURS):
                    seen.setdefault((where, name), set()).add(rgb(colour))
            bands = set()
            for (where, name), colours in seen.items():
                if where == "band":
                    bands |= colours
                    continue
                key = alias.get(name, name)
                if key not in palette:   # a series (modules): no name
                    continue
                check_eq(colours, {rgb(palette[key])},
                         "%s %s's colour" % (where, name))
            names = {n for (w, n) in seen if n in cats}
            check(len(names) >= 10, "categories shown: %s" % names)
            for n in names:
                places = {w for (w, m) in seen if m == n}
                check(len(places) >= 2, "%s shown only in %s" % (n, places))
            check(bands, "no band drawn")
            check(not bands & {rgb(v) for v in palette.values()},
                  "a band in a name's colour: %s" % bands)
            for cause in ("sync", "collective", "between_steps"):
                check(("legend", cause) in seen, "idle legend " + cause)
            print("palette: %d categories, each on %s; bands %s" % (
                len(names), sorted({w for (w, n) in seen if n in names}),
                sorted(bands)))
    return with_browser(case)


# ---- axes and readouts ----

# Each picture over time: its axis (unit, domain, ticks [text, left %],
# label) and the viewport point of its first shape, scrolled into view.
AXES = """(() => [...document.querySelectorAll('[data-time]')].map(c => {
  const ax = c.querySelector('.axis');
  const fig = c.matches('figure') ? c : c.querySelector('figure.hovers');
  const pic = fig && fig.querySelector('svg');
  const shape = pic && (pic.querySelector('rect') || pic);
  return {kind: c.className, fig: !!fig, axis: ax && {unit: ax.dataset.unit,
    lo: Number(ax.dataset.lo), hi: Number(ax.dataset.hi),
    ticks: [...ax.querySelectorAll('.tick')].map(t =>
      [t.textContent, parseFloat(t.style.left)]),
    label: ax.querySelector('.axis-label').textContent}};
}))()"""
POINT = """(() => {
  const c = document.querySelectorAll('[data-time]')[%d];
  const fig = c.matches('figure') ? c : c.querySelector('figure.hovers');
  const pic = fig.querySelector('svg');
  pic.scrollIntoView({block: 'center'});
  const r = (pic.querySelector('rect') || pic).getBoundingClientRect();
  return [r.left + Math.min(r.width / 2, 40), r.top + r.height / 2];
})()"""
READOUT = """(() => {
  const c = document.querySelectorAll('[data-time]')[%d];
  const box = c.querySelector('.readout');
  return box && !box.hidden ? box.innerText : null;
})()"""
FACTOR = {"ns": 1, "\u00b5s": 1e3, "ms": 1e6, "s": 1e9, "%": 0.01}


def check_axis(where, ax):
    check(ax is not None, where + ": no axis")
    check(ax["unit"] in UNITS, "%s: unit %r" % (where, ax["unit"]))
    check(ax["label"].endswith("(%s)" % ax["unit"]), where + ": label " +
          ax["label"])
    values = [float(t.replace(",", "")) for t, _ in ax["ticks"]]
    check(len(values) >= 2, "%s: ticks %s" % (where, ax["ticks"]))
    check_eq(values, sorted(values), where + ": ticks in order")
    f = FACTOR[ax["unit"]]
    for v, (_, left) in zip(values, ax["ticks"]):
        check(ax["lo"] - 1e-6 * f <= v * f <= ax["hi"] + 1e-6 * f,
              "%s: tick %s outside [%s, %s]" % (where, v, ax["lo"], ax["hi"]))
        want = (v * f - ax["lo"]) / (ax["hi"] - ax["lo"]) * 100
        check(abs(left - want) < 0.01, "%s: tick %s at %s%%, not %s%%" % (
            where, v, left, want))


def check_pictures(browser, page, url, where, need):
    """Every picture over time of url: its axis and its readout. Returns
    the axes."""
    browser.show(page, url)
    got = browser.eval(page, AXES)
    check(len(got) >= need, "%s: %d pictures over time" % (where, len(got)))
    for i, pic in enumerate(got):
        name = "%s #%d (%s)" % (where, i, pic["kind"])
        check_axis(name, pic["axis"])
        check(pic["fig"], name + ": no picture with a readout")
        x, y = browser.eval(page, POINT % i)
        browser.mouse(page, x, y)
        said = browser.eval(page, READOUT % i)
        check(said and re.search(r"\d (ns|\u00b5s|ms|s)\b", said),
              "%s: readout %r" % (name, said))
    return [p["axis"] for p in got]


def case_axes():
    import make_collectives
    import make_fixtures

    def case(browser):
        with tempfile.TemporaryDirectory(prefix="traced-web-axes-") as root, \
                Daemon(conf={"import_roots": root}) as d:
            idle = make_fixtures.make_idle(root)["path"]
            a = import_files(d, root, "a", [idle, os.path.join(
                TRACES_DIR, VLLM)])
            tp4 = make_collectives.make_tp4(root)
            code, cap = d.post("/imports", {"path": os.path.dirname(
                os.path.dirname(tp4[0]))})
            check_eq(code, 202, "import tp4")
            c4 = d.wait_status(cap["id"])["id"]
            page = page_of(browser)
            base = "%s/#/captures/%d?tab=" % (d.base, a["id"])
            axes = check_pictures(browser, page, base + "timeline",
                                  "timeline", 2)
            spans = [r["span_ns"] for r in sorted(a["ranks"],
                                                  key=lambda r: r["rank"])]
            check_eq([(x["lo"], x["hi"]) for x in axes],
                     [(0, s) for s in spans], "the timelines' span")
            for tab, need in (("steps&rank=0", 1), ("phases", 1),
                              ("idle", 1), ("critical&rank=0", 2),
                              ("decode&rank=1", 0)):
                check_pictures(browser, page, base + tab, tab, need)
            check_pictures(browser, page, "%s/#/captures/%d?tab=collectives"
                           % (d.base, c4), "collectives", 2)
    return with_browser(case)


# ---- empty states ----

def case_empty_states():
    def case(browser):
        with Daemon(conf={"import_roots": TRACES_DIR}) as d:
            ids = {}
            for name in (GPU_ONLY, NCCL, QWEN):
                code, cap = d.post("/imports", {"path": os.path.join(
                    TRACES_DIR, name)})
                check_eq(code, 202, "import " + name)
                ids[name] = d.wait_status(cap["id"])["id"]
            page = page_of(browser)
            url = "%s/#/captures/%d?tab=" % (d.base, ids[GPU_ONLY])
            browser.show(page, url + "steps")
            said = text(browser, page)
            check("No steps: the trace has neither ATOM's run labels" in said
                  and "no rows" not in said, "steps: " + said[-600:])
            browser.show(page, url + "kernels&q=no-such-kernel")
            check("No rows with name contains \u201cno-such-kernel\u201d" in
                  text(browser, page), "a filter matching nothing")
            check_decode_whole(d, browser, page, ids[QWEN])
            check_decode_whole(d, browser, page, ids[GPU_ONLY])
            browser.show(page, "%s/#/captures/%d?tab=collectives" % (
                d.base, ids[NCCL]))
            said = text(browser, page)
            check("One rank ran collectives" in said and "held" not in said
                  and not browser.eval(page, "document.querySelectorAll("
                                       "'figure.held').length"),
                  "one rank's collectives: " + said[-800:])
            fams = d.get("/captures/%d/collectives" % ids[NCCL])[1]["rows"]
            check(fams, "the trace has collectives")
            for f in fams:
                check(f["family"] in said, "family " + f["family"])
    return with_browser(case)


# The decode table's first column (the one after the tools).
DECODE_COLUMN = """[...document.querySelectorAll('table.grid')].find(t =>
  t.querySelector('th').textContent === 'module').querySelectorAll(
  'tbody tr td:first-child')"""


def check_decode_whole(d, browser, page, cid):
    """The Decode tab of a trace without run labels: its modules over the
    whole trace, as /decode/modules answers them without a kind."""
    rows = d.get("/captures/%d/decode/modules?limit=100" % cid)[1]["rows"]
    check(rows and d.get("/captures/%d/decode/steps" % cid)[1]["rows"] == [],
          "capture %d: modules without step kinds" % cid)
    browser.show(page, "%s/#/captures/%d?tab=decode" % (d.base, cid))
    said = text(browser, page)
    check("predates" not in said and "No run labels in this trace" in said,
          "decode of %d: %s" % (cid, said[-600:]))
    shown = browser.eval(page, "[...%s].map(td => td.innerText.trim())" %
                         DECODE_COLUMN)
    check_eq(shown, [r["module"] or "(none)" for r in rows],
             "capture %d's modules" % cid)


# ---- names demangled ----

# Each shown kernel name (a .name of a table cell): [text, title].
NAMES = """[...document.querySelectorAll('td .name')].map(n =>
  [n.textContent, n.title])"""


def case_demangled():
    def case(browser):
        with tempfile.TemporaryDirectory(prefix="traced-web-dem-") as root, \
                Daemon(conf={"import_roots": root}) as d:
            vllm = os.path.join(TRACES_DIR, VLLM)
            a = import_files(d, root, "a", [vllm])["id"]
            b = import_files(d, root, "b", [vllm])["id"]
            kernels = d.get("/captures/%d/kernels?limit=1000" % a)[1]["rows"]
            want = {k["name"]: k["demangled"] for k in kernels
                    if k["demangled"]}
            check(want and all(n.startswith("_Z") for n in want),
                  "mangled names: %s" % list(want))
            diff = d.get("/diff?a=%d&b=%d&limit=200" % (a, b))[1]["rows"]
            check(set(want) <= {r["name"] for r in diff}, "in the diff")
            page = page_of(browser)
            shown = {}
            for url in ("#/diff/%d/%d" % (a, b), "#/captures/%d" % a):
                browser.show(page, d.base + "/" + url)
                shown[url] = dict((title, txt) for txt, title in
                                  browser.eval(page, NAMES) if title)
                for name, dem in want.items():
                    check_eq(shown[url].get(name), dem, "%s: %s" % (
                        url, name))
                check(not any(t.startswith("_Z") for t in
                              shown[url].values()), url + ": a raw name")
            print("demangled: %d names as the Kernels tab shows them" %
                  len(want))
    return with_browser(case)


# ---- the top of a capture's page ----

FOLD = """(() => {
  const r = s => document.querySelector(s).getBoundingClientRect();
  return [r('#glance').bottom, r('.verdict-line').bottom, innerHeight];
})()"""
STEP_TITLES = """[...document.querySelectorAll('#glance table.mini td span')]
  .map(s => s.title)"""
BENCH_ROWS = """Object.fromEntries([...document.querySelectorAll(
  '.bench table.grid tbody tr')].map(tr => [tr.cells[0].textContent,
  [...tr.cells].slice(1).map(c => c.title)]))"""
# Opens "all fields"; each row of it: [name, rect, overflows].
FIELDS = """(() => {
  const det = document.querySelector('.bench details');
  det.open = true;
  return [...det.querySelectorAll('tr')].map(tr => {
    const r = tr.cells[0].parentNode.getBoundingClientRect();
    const td = tr.querySelector('td');
    return [tr.querySelector('th').textContent, [r.top, r.bottom],
      td.scrollWidth > td.clientWidth];
  });
})()"""
RANK_DEVICES = """(() => {
  const heads = t => [...t.querySelectorAll('th')].map(h => h.textContent);
  const t = [...document.querySelectorAll('table')].find(t =>
    heads(t).includes('device') && heads(t).includes('busy/span'));
  const i = heads(t).indexOf('device');
  return [...t.querySelectorAll('tbody tr')].map(tr =>
    tr.children[i].textContent);
})()"""

ERROR_LINE = """(() => {
  const pre = document.querySelector('pre.log');
  const e = pre.querySelector('[data-line=error]');
  return {line: e.textContent, cls: e.className, top: e.offsetTop,
    height: e.offsetHeight, scroll: pre.scrollTop, box: pre.clientHeight,
    all: pre.scrollHeight};
})()"""


def check_top(d, browser, page, cid):
    cap = d.get("/captures/%d" % cid)[1]
    browser.show(page, "%s/#/captures/%d" % (d.base, cid))
    glance, verdict, fold = browser.eval(page, FOLD)
    check(glance <= fold and verdict <= fold, "below the fold: glance %s, "
          "verdict %s of %s" % (glance, verdict, fold))
    titles = browser.eval(page, STEP_TITLES)
    steps = d.get("/captures/%d/steps" % cid)[1]["rows"]
    check(steps, "steps")
    for s in steps[:3]:
        check("{:,} ns".format(s["steady_p50_ns"]) in titles,
              "%s p50 %s not in %s" % (s["kind"], s["steady_p50_ns"], titles))
    ranks = [r for r in cap["ranks"] if r["status"] == "done"]
    share = 100.0 * sum(r["idle_ns"] for r in ranks) / sum(
        r["span_ns"] for r in ranks)
    check_eq(browser.eval(page, "document.querySelector('.idle-share')"
                          ".textContent"), "%.1f%%" % share, "idle share")
    fams = d.get("/captures/%d/families?limit=5" % cid)[1]["rows"]
    check_eq(browser.eval(page, "[...document.querySelectorAll('.fam')]"
                          ".map(s => s.textContent)"),
             [f["family"] for f in fams], "the top families")
    bench = browser.eval(page, BENCH_ROWS)
    check_eq(sorted(bench), ["E2EL", "ITL", "TPOT", "TTFT"], "latencies")
    for k in ("ttft", "tpot", "itl", "e2el"):
        check_eq(float(bench[k.upper()][1]), cap["bench"]["median_%s_ms" % k],
                 k + " median")
    rows = {r[0]: r for r in browser.eval(page, FIELDS)}
    mid, tok = rows["model_id"], rows["tokenizer_id"]
    check(mid[1][1] <= tok[1][0] or tok[1][1] <= mid[1][0],
          "model_id %s and tokenizer_id %s overlap" % (mid[1], tok[1]))
    check(not mid[2] and not tok[2], "a field overflows its cell")


def check_log(d, browser, page, cid):
    err = d.get("/captures/%d" % cid)[1]["error"]
    check(err and err["log_tail"], "a failure with its log: %s" % err)
    browser.show(page, "%s/#/captures/%d" % (d.base, cid))
    e = browser.eval(page, ERROR_LINE)
    line = e["line"].rstrip("\n")
    check(line in err["log_tail"].split("\n") and line.strip() in
          err["message"] and "err" in e["cls"], "the error line %r" % e)
    check(e["all"] > e["box"] and e["scroll"] > 0, "the log fits: %r" % e)
    check(e["scroll"] <= e["top"] and e["top"] + e["height"] <= e["scroll"] +
          e["box"], "the error line out of view: %r" % e)
    # The phases a plain capture runs, the one it failed in marked.
    bar = browser.eval(page, "[...document.querySelectorAll('ol.phases li')]"
                       ".map(li => [li.textContent, li.className])")
    check_eq([p for p, _ in bar], plain_phases(), "the phase bar")
    check_eq([p for p, c in bar if c == "failed"], [err["phase"]],
             "the failed phase")


def check_ranks(d, browser, page, cid):
    """The ranks table's device column: each rank's device as its trace
    names it, a dash where it names none (not a blank cell)."""
    ranks = d.get("/captures/%d" % cid)[1]["ranks"]
    browser.show(page, "%s/#/captures/%d" % (d.base, cid))
    cells = browser.eval(page, RANK_DEVICES)
    check_eq(cells, [r["device"] or "\u2013" for r in ranks],
             "the ranks' devices")


def check_sweep(d, browser, page, sid):
    """A sweep asked without a TP says the one its points ran with; its
    curve has a throughput axis up its left, in round ticks of tok/s."""
    sw = d.get("/sweeps/%d" % sid)[1]
    check(sw["params"].get("tp") is None, "a sweep without tp")
    tp = d.get("/captures/%d" % sw["points"][0]["capture"])[1]["launch"]["tp"]
    browser.show(page, "%s/#/sweeps/%d" % (d.base, sid))
    browser.wait_for(page, "document.querySelector('figure.curve') && "
                     "!/TP \u2013/.test(document.getElementById('app')"
                     ".textContent)", 10)
    head = browser.eval(page, "document.querySelector('#app p').textContent")
    check(" \u00b7 TP %d \u00b7 " % tp in head, "the sweep's TP: %r" % head)
    ticks = browser.eval(page, "[...document.querySelectorAll('figure.curve "
                         "svg text.tick')].map(t => t.textContent)")
    # Round steps of about a quarter of the top (charts.js, ticksOf): the
    # last tick at least 3/8 of the highest throughput, none above it.
    top = max(p["output_throughput"] for p in sw["points"])
    vals = [float(t[:-len(" tok/s")].replace(",", "")) for t in ticks
            if t.endswith(" tok/s")]
    check(len(vals) == len(ticks) >= 2 and vals[0] == 0 and
          0.375 * top <= vals[-1] <= top, "the curve's y ticks: %r, top %s"
          % (ticks, top))


def check_median(d, browser, page, cid):
    """The Decode tab's median step of rank 0: every part, its total."""
    parts = d.get("/captures/%d/decode/median?rank=0&kind=decode&limit=1000"
                  % cid)[1]["rows"]
    step = [r for r in d.get("/captures/%d/decode/steps?rank=0" % cid)[1][
        "rows"] if r["step"] == "decode"]
    check(len(parts) > 100 and step, "a median step of %d parts" % len(parts))
    browser.show(page, "%s/#/captures/%d?tab=decode&rank=0" % (d.base, cid))
    desc = browser.eval(page, "document.querySelector('figure.median desc')"
                        ".textContent")
    check(": {:,} ns of device time in {} parts.".format(
        step[0]["median_ns"], len(parts)) in desc, "median bar: " + desc)


def case_capture_top():
    import make_fixtures
    from test_capture_lib import Rig

    def case(browser):
        with tempfile.TemporaryDirectory(prefix="traced-web-top-") as root:
            idle = make_fixtures.make_idle(root)["path"]
            with gzip.open(idle) as f:
                check(b"decode[" in f.read(), "a trace with run labels")
            with Rig(traces=[idle, os.path.join(TRACES_DIR, VLLM)]) as rig:
                ok = rig.capture()
                check_eq(rig.wait(ok)["status"], "done", "the capture")
                bad = rig.capture(env={"ATOM_SIM_FAULTS":
                                       "fatal_marker_during_bench=2"})
                check_eq(rig.wait(bad)["status"], "failed", "the fault")
                marked = rig.capture(mark_trace=True)
                check_eq(rig.wait(marked)["status"], "done", "mark_trace")
                code, sw = rig.d.post("/sweeps", {"model": rig.model,
                                                  "isl": 8, "osl": 4,
                                                  "conc": [1, 2]})
                check_eq(code, 202, "POST /sweeps %s" % sw)
                wait_for(lambda: rig.d.get("/sweeps/%d" % sw["id"])[1][
                    "status"] == "done", 180, "the sweep")
                page = page_of(browser)
                check_top(rig.d, browser, page, ok)
                check_ranks(rig.d, browser, page, ok)
                check_log(rig.d, browser, page, bad)
                check_median(rig.d, browser, page, marked)
                check_sweep(rig.d, browser, page, sw["id"])
    return with_browser(case)


# ---- docs/screens ----

def case_screens():
    tabs = []
    for name in ("capture.js", "analysis.js", "results.js", "decode.js",
                 "perf.js"):
        tabs += re.findall(r"\{id: '(\w+)', label: '[A-Z]", read(os.path.join(
            WEB, name)))
    check(len(tabs) >= 13, "tabs: %s" % tabs)
    m = re.search(r"TABS = \[([^\]]*)\]", read(os.path.join(
        SRC_DIR, "scripts", "screens.py")))
    check_eq(sorted(re.findall(r'"(\w+)"', m.group(1))), sorted(tabs),
             "the tabs scripts/screens.py draws")
    want = {"tab-%s.png" % t for t in tabs} | {
        "captures.png", "capture.png", "diff.png", "failed.png",
        "perf-memory.png"}
    shots = os.path.join(SRC_DIR, "docs", "screens")
    have = set(os.listdir(shots)) if os.path.isdir(shots) else set()
    check_eq(sorted(want - have), [], "screens missing from docs/screens")
    check_eq(sorted(have - want), [], "screens of nothing in docs/screens")
    readme = read(os.path.join(SRC_DIR, "README.md"))
    for png in sorted(want):
        check("](docs/screens/%s)" % png in readme, "README links " + png)
        with open(os.path.join(shots, png), "rb") as f:
            check(f.read(8) == b"\x89PNG\r\n\x1a\n", png + " is a PNG")
    return 0


if __name__ == "__main__":
    run_named_case(globals(), "web_pages")
