"""The dashboard's screens (docs/screens/*.png), one per page and tab, made
with headless Chromium from a running traced (scripts/screens.sh starts
one on the demo and calls this).

Usage: screens.py BASE OUT CAPTURE OTHER FAILED MARKED MORE
  BASE     the dashboard's URL (http://127.0.0.1:PORT)
  OUT      the folder the PNGs go to
  CAPTURE  the done capture whose page and tabs are shown
  OTHER    a second done capture of the same configuration (the diff)
  FAILED   a failed capture (its log opened at the error)
  MARKED   a done capture with mark_trace (its graph replays attributed):
           the Decode tab's
  MORE     a done import of a trace taken with ATOM_PROFILER_MORE=1
           (shapes, Python frames, [memory] events): the Perf tab's, and
           its memory over time (perf-memory.png)

Every screen is 1400 CSS pixels wide: the capture's page as a 1400x900
window shows it (what is above the fold), each tab from its tab bar down,
as tall as it is up to TALL pixels.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
    __file__)), "..", "tests"))
from browser import Browser, find_chromium  # noqa: E402

WIDTH, HEIGHT, TALL = 1400, 900, 1400
# The capture page's tabs (web/capture.js's TABS, then analysis.js's,
# results.js's, decode.js's, perf.js's), by the id its URL takes.
TABS = ["kernels", "launches", "categories", "steps", "memcpy", "runtime",
        "phases", "timeline", "idle", "critical", "families", "collectives",
        "decode", "perf"]
# The top of the tab bar in page coordinates, and the page's height.
TAB_TOP = """(() => {
  const bar = document.querySelector('nav.tabs');
  const h = document.documentElement.scrollHeight;
  return bar ? [bar.getBoundingClientRect().top + scrollY - 40, h] : [0, h];
})()"""
# The Perf tab's memory section in page coordinates: [top, height].
MEMORY_TOP = """(() => {
  const f = document.querySelector('figure.memory');
  const r = f ? f.getBoundingClientRect() : null;
  return r ? [r.top + scrollY - 50, document.documentElement.scrollHeight]
    : [0, 0];
})()"""


def shot(browser, page, url, path, tab=False):
    """url's screen in path (from the tab bar down when tab)."""
    browser.show(page, url)
    if tab:
        top, height = browser.eval(page, TAB_TOP)
        clip = {"x": 0, "y": top, "width": WIDTH,
                "height": min(TALL, height - top)}
        browser.screenshot(page, path, clip)
    else:
        browser.screenshot(page, path)
    print(os.path.basename(path))


def shot_memory(browser, page, url, path):
    """The memory over time of url's Perf tab, with its tables below."""
    browser.show(page, url)
    top, height = browser.eval(page, MEMORY_TOP)
    browser.screenshot(page, path, {"x": 0, "y": top, "width": WIDTH,
                                    "height": min(900, height - top)})
    print(os.path.basename(path))


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    base, out, cid, other, failed, marked, more = sys.argv[1:]
    chromium = find_chromium()
    if not chromium:
        sys.exit("no chromium (apt-get install -y chromium)")
    os.makedirs(out, exist_ok=True)
    browser = Browser(chromium)
    try:
        page = browser.page("about:blank")
        browser.viewport(page, WIDTH, HEIGHT)
        shot(browser, page, base + "/#/", os.path.join(out, "captures.png"))
        top = "%s/#/captures/%s" % (base, cid)
        shot(browser, page, top, os.path.join(out, "capture.png"))
        which = {"decode": marked, "perf": more}
        for tab in TABS:
            shot(browser, page, "%s/#/captures/%s?tab=%s" % (
                base, which.get(tab, cid), tab),
                os.path.join(out, "tab-%s.png" % tab), tab=True)
        shot_memory(browser, page, "%s/#/captures/%s?tab=perf&rank=0" % (
            base, more), os.path.join(out, "perf-memory.png"))
        shot(browser, page, "%s/#/diff/%s/%s" % (base, cid, other),
             os.path.join(out, "diff.png"))
        shot(browser, page, "%s/#/captures/%s" % (base, failed),
             os.path.join(out, "failed.png"))
    finally:
        browser.close()


if __name__ == "__main__":
    main()
