"""Regression verdicts (docs/ANALYSIS.md) through a running daemon: imports of
generated TP=2 captures (tests/make_collectives.py) declaring one
configuration, built to stay within noise (another seed), to regress (the
MoE kernel family 20% slower per step) and to be incomparable (the other
ATOM label taxonomy); the baseline picked (latest, pinned, asked), the
badge in the list, the Prometheus gauges, and the webhook received by a
test server on loopback.

    test_verdicts.py verdicts   the verdicts, baselines, list, metrics and
                                the webhook's bodies
    test_verdicts.py failures   a webhook answering 500, one redirecting
                                elsewhere and one refusing connections:
                                retried, bounded, never fatal
"""
import http.server
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_collectives  # noqa: E402
import ref_analysis  # noqa: E402
import ref_index  # noqa: E402
from tracedtest import Daemon, check, check_eq, free_port  # noqa: E402

CONFIG = {"model": "gen-model", "tp": 2, "isl": 1024, "osl": 1024,
          "conc": 8}
MOE = "fused_moe_kernel"


class Hook:
    """A webhook receiver on loopback: records each POST; answers status."""

    def __init__(self, status=200):
        self.bodies, self.status = [], status
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                hook.bodies.append((self.headers.get("Content-Type"),
                                    json.loads(self.rfile.read(n))))
                self.send_response(hook.status)
                if 300 <= hook.status < 400:   # elsewhere: not followed
                    self.send_header("Location", "http://192.0.2.1/away")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.url = "http://127.0.0.1:%d/hook" % self.server.server_port
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def wait(self, n, timeout=30):
        deadline = time.time() + timeout
        while len(self.bodies) < n and time.time() < deadline:
            time.sleep(0.05)
        return self.bodies

    def close(self):
        self.server.shutdown()


def imported(d, path, **extra):
    code, cap = d.post("/imports", dict(CONFIG, path=path, **extra))
    check_eq(code, 202, "import %s: %s" % (path, cap))
    cap = d.wait_status(cap["id"])
    check_eq(cap["status"], "done", "%s: %s" % (path, cap))
    return cap


def verdict(d, cid, baseline=None):
    code, v = d.get("/captures/%d/verdict%s" % (
        cid, "" if baseline is None else "?baseline=%d" % baseline))
    check_eq(code, 200, "verdict %d: %s" % (cid, v))
    return v


def per_step(top, family):
    """The family's time per real step over all ranks, read with the
    references: its kernels summed, over the real (prefill + decode)
    steps of the rank with most."""
    total, steps = 0, 0
    for r in sorted(os.listdir(top)):
        d = os.path.join(top, r)
        ref = ref_index.reference(os.path.join(d, os.listdir(d)[0]))
        total += sum(k["total_ns"] for n, k in ref["kernels"].items()
                     if ref_analysis.family(n) == family)
        steps = max(steps, sum(s["count"] for k, s in ref["steps"].items()
                               if k in ("prefill", "decode")))
    return total / steps


def check_regressed(v, base_top, slow_top):
    check_eq(v["verdict"], "regressed", "slow: %s" % v)
    fam = [c for c in v["changes"] if c["figure"] == "family" and
           c["name"] == MOE]
    check_eq(len(fam), 1, "the MoE family is a change: %s" % v["changes"])
    a, b = per_step(base_top, MOE), per_step(slow_top, MOE)
    check_eq((fam[0]["baseline"], fam[0]["value"]), (round(a), round(b)),
             "MoE ns per real step")
    check(abs(fam[0]["delta_pct"] - (b - a) * 100 / a) < 1e-3,
          "delta %s vs %s" % (fam[0]["delta_pct"], (b - a) * 100 / a))
    check(18 < fam[0]["delta_pct"] < 22, "about 20%%: %s" % fam[0])
    check_eq(fam[0]["change"], "regressed", "direction")
    check(all(c["change"] == "regressed" for c in v["changes"]),
          "nothing faster: %s" % v["changes"])


def check_list_and_metrics(d, expect):
    code, page = d.get("/captures?limit=50")
    check_eq(code, 200, "list")
    got = {c["id"]: c["verdict"]["verdict"] for c in page["captures"]}
    check_eq(got, expect, "the list's badges")
    code, text = d.get("/metrics", raw=True)
    text = text.decode()
    for name in ("regressed", "improved", "unchanged", "incomparable"):
        n = sum(1 for v in expect.values() if v == name)
        check('traced_verdicts{verdict="%s"} %d\n' % (name, n) in text,
              "gauge %s = %d" % (name, n))
    return text


def case_verdicts(tmp):
    sets = os.path.join(tmp, "sets")
    tops = {n: make_collectives.make_verdict_set(sets, n, seed, **kw)
            for n, seed, kw in (("base", 1, {}), ("noise", 2, {}),
                                ("slow", 3, {"slow": {"moe": 1.2}}),
                                ("noise2", 5, {}),
                                ("other", 4, {"taxonomy": "ffdf3bb5"}))}
    hook = Hook()
    d = Daemon(conf={"import_roots": tmp, "webhook_url": hook.url})
    try:
        with d:
            run_verdicts(d, tops, hook)
    finally:
        hook.close()


def run_verdicts(d, tops, hook):
    ids, want = {}, {}
    for name in ("base", "noise", "slow"):
        ids[name] = imported(d, tops[name])["id"]
    v = verdict(d, ids["base"])
    check_eq((v["verdict"], v["baseline"], v["reasons"][0]["code"]),
             ("incomparable", None, "no_baseline"), "first: %s" % v)
    v = verdict(d, ids["noise"])
    check_eq((v["verdict"], v["baseline"], v["baseline_source"]),
             ("unchanged", ids["base"], "latest"), "noise: %s" % v)
    check(v["compared"] >= 10 and v["changes"] == [], "noise: %s" % v)
    v = verdict(d, ids["slow"])
    check_eq((v["baseline"], v["baseline_source"]), (ids["noise"], "latest"),
             "slow's baseline")
    check_regressed(v, tops["noise"], tops["slow"])
    check_regressed(verdict(d, ids["slow"], ids["base"]), tops["base"],
                    tops["slow"])
    want.update({ids["base"]: "incomparable", ids["noise"]: "unchanged",
                 ids["slow"]: "regressed"})
    text = check_list_and_metrics(d, want)
    check(re.search(r'traced_regressed\{model="gen-model",tp="2",isl="1024",'
                    r'osl="1024",conc="8",variant="",more="0"\} 1\n', text),
          "the configuration's latest regressed:\n" + text)
    run_pinned(d, tops, ids, want)
    bodies = hook.wait(len(want))
    check_eq(len(bodies), len(want), "one webhook per import")
    for ctype, body in bodies:
        check_eq(ctype, "application/json", "webhook Content-Type")
        check_eq(body["verdict"]["verdict"], want[body["capture"]],
                 "webhook of %d" % body["capture"])
        check_eq(body["verdict"], {k: v for k, v in verdict(
            d, body["capture"]).items() if k != "pinned"}, "webhook body")
    print("verdicts: %s; %d webhooks received" % (sorted(want.items()),
                                                  len(bodies)))


def run_pinned(d, tops, ids, want):
    code, pin = d.request("PUT", "/captures/%d/baseline" % ids["base"])
    check_eq((code, pin), (200, {"capture": ids["base"], "pinned": True}),
             "pin")
    check_eq(verdict(d, ids["base"])["pinned"], True, "pinned")
    ids["noise2"] = imported(d, tops["noise2"])["id"]
    v = verdict(d, ids["noise2"])
    check_eq((v["verdict"], v["baseline"], v["baseline_source"]),
             ("unchanged", ids["base"], "pinned"), "pinned: %s" % v)
    ids["other"] = imported(d, tops["other"])["id"]
    v = verdict(d, ids["other"])
    check_eq((v["verdict"], v["baseline"]), ("incomparable", ids["base"]),
             "other taxonomy: %s" % v)
    check_eq([r["code"] for r in v["reasons"]], ["different_label_taxonomy"],
             "other taxonomy's reason")
    code, pin = d.delete("/captures/%d/baseline" % ids["base"])
    check_eq(code, 200, "unpin")
    check_eq(verdict(d, ids["base"])["pinned"], False, "unpinned")
    want.update({ids["noise2"]: "unchanged", ids["other"]: "incomparable"})
    for path, code, field in (
            ("/captures/%d/verdict?baseline=%d" % (ids["slow"], ids["slow"]),
             400, "baseline"),
            ("/captures/%d/verdict?baseline=99999" % ids["slow"], 404,
             "baseline"),
            ("/captures/%d/verdict?baseline=x" % ids["slow"], 400,
             "baseline"),
            ("/captures/99999/verdict", 404, "id")):
        got, body = d.get(path)
        check_eq((got, body["error"]["field"]), (code, field), path)
    got, body = d.request("PUT", "/captures/99999/baseline")
    check_eq((got, body["error"]["field"]), (404, "id"), "pin unknown")
    got, _ = d.get("/captures/%d/baseline" % ids["base"])
    check_eq(got, 405, "GET /baseline")


def metric(d, name):
    code, text = d.get("/metrics", raw=True)
    m = re.search(re.escape(name) + r" (\d+)\n", text.decode())
    return int(m.group(1)) if m else None


def case_failures(tmp):
    sets = os.path.join(tmp, "sets")
    top = make_collectives.make_verdict_set(sets, "one", 1, decode=6)
    failing, moved = Hook(status=500), Hook(status=302)
    dead = "http://127.0.0.1:%d/hook" % free_port()
    try:
        for hook, url in ((failing, failing.url), (moved, moved.url),
                          (None, dead)):
            d = Daemon(conf={"import_roots": tmp, "webhook_url": url,
                             "webhook_retries": "2",
                             "webhook_timeout_s": "2"})
            with d:
                t = time.time()
                imported(d, top)
                deadline = time.time() + 20
                while (metric(d, 'traced_webhooks_total{result="failed"}')
                       != 1 and time.time() < deadline):
                    time.sleep(0.1)
                check_eq(metric(d, 'traced_webhooks_total{result="failed"}'),
                         1, "%s: given up once" % url)
                check(time.time() - t >= 3, "backed off 1 s then 2 s")
                check_eq(len(hook.bodies) if hook else 3, 3,
                         url + " attempts")
                check_eq(d.get("/healthz")[0], 200, "still serving")
                check("dropped after 3 attempts" in d.log_text(), "said")
    finally:
        failing.close()
        moved.close()
    print("failures: 500, a redirect elsewhere (not followed) and a refused "
          "connection each tried 3 times; captures done")


if __name__ == "__main__":
    cases = {"verdicts": case_verdicts, "failures": case_failures}
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        sys.exit("usage: test_verdicts.py verdicts|failures")
    tmp = tempfile.mkdtemp(prefix="traced-verdict-")
    try:
        cases[sys.argv[1]](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
