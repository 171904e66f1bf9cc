#!/usr/bin/env python3
"""README.md's tour, run as written: `make run`'s script (scripts/run.sh)
on free ports, as the README's "Other ports" says, then every command of
the shell blocks of the tour and of the sweep on the simulator (not the
block said to be for a real ATOM box) in the order given, from a folder
laid out as the repository's top (build/, demo/ beside, ../shared/traces
above), each in bash as a reader would paste it. curl is wrapped to
report each answer's status on stderr: every answer must be 2xx, every
command must exit 0 and write nothing else on stderr (no traceback, no
curl or shell error). The second capture, the same configuration as the
demo's, must be judged against the demo capture: unchanged; the demo's
bench must agree with its traces (TPOT and TTFT at least a decode step
and a prefill); the sweep's four points must be done.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_capture_lib import start_run  # noqa: E402
from tracedtest import (NVIDIA_ONLY, SRC_DIR, TRACED_BIN,  # noqa: E402
                        TRACES_DIR, check, check_eq, free_port, wait_for)

# Each answer's status on stderr, the body where the reader sees it.
CURL = "curl() { command curl -w '%{stderr}HTTP %{http_code}\\n' \"$@\"; }\n"


# The README's sections a reader runs against `make run`, in order.
SECTIONS = ("## A five-minute tour", "## A sweep, as ATOM's CI runs it")
# The first line of a block that needs a real ATOM box (its models under
# /data): said so to the reader, not run here.
REAL_BOX = "# on a real ATOM box"


def tour_commands(readme):
    """The commands of the sections' ```sh blocks (not those for a real
    ATOM box), continuation lines joined, in order."""
    text = open(readme).read()
    out = []
    for title in SECTIONS:
        start = text.index(title)
        section = text[start:text.index("\n## ", start + 1)]
        for block in re.findall(r"```sh\n(.*?)```", section, re.S):
            if block.startswith(REAL_BOX):
                continue
            for line in block.replace("\\\n", " ").splitlines():
                if line.strip():
                    out.append(line)
    return out


def run(top, assigned, cmd):
    """cmd in bash at top, after the tour's assignments so far."""
    return subprocess.run(["bash", "-c", CURL + "".join(
        a + "\n" for a in assigned) + cmd], cwd=top, timeout=600,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def check_run(cmd, r):
    answers = re.findall(r"^HTTP (\d+)$", r.stderr, re.M)
    other = [x for x in r.stderr.splitlines()
             if not re.match(r"^HTTP \d+$", x)]
    check_eq(r.returncode, 0, "%s: exit status\n%s" % (cmd, r.stderr))
    check(not other, "%s wrote on stderr: %s" % (cmd, other))
    check(all(a.startswith("2") for a in answers),
          "%s answered %s:\n%s" % (cmd, answers, r.stdout[:2000]))
    check(answers or not cmd.startswith("curl"), "%s: no answer" % cmd)


def main():
    tmp = tempfile.mkdtemp(prefix="traced-tour-")
    top = os.path.join(tmp, "repo")     # the repository's top, as seen
    os.makedirs(top)
    os.symlink(os.path.dirname(os.path.abspath(TRACED_BIN)),
               os.path.join(top, "build"))
    os.symlink(os.path.dirname(os.path.abspath(TRACES_DIR)),
               os.path.join(tmp, "shared"))
    port = free_port()
    p, lines = start_run(os.path.join(top, "demo"), "127.0.0.1:%d" % port,
                         free_port())
    try:
        wait_for(lambda: any("traced keeps running" in x for x in lines),
                 300, "make run's demo capture")
        check(any(re.search(r"capture 1: done done ", x) for x in lines),
              "".join(lines))
        cmds = tour_commands(os.path.join(SRC_DIR, "README.md"))
        check_eq(cmds[0], "api=localhost:7700", "the tour's first line")
        assigned = ["api=localhost:%d" % port]
        outputs = {}
        for cmd in cmds[1:]:
            r = run(top, assigned, cmd)
            check_run(cmd, r)
            outputs[cmd] = r.stdout
            print("ok: %s" % cmd[:100])
        verdict = json.loads(next(out for cmd, out in outputs.items()
                                  if cmd.startswith(
                                      "curl -s $api/captures/2/verdict")))
        check_eq((verdict["verdict"], verdict["baseline"]),
                 ("unchanged", 1), "capture 2's verdict: %s" % verdict)
        with open(os.path.join(top, "first20ms.json")) as f:
            check(json.load(f)["traceEvents"], "the slice's events")
        # The bench and the traces tell one story: a decode step gives
        # every running request its next token, so the bench's TPOT is at
        # least a decode step (and the scheduler, the prefills between,
        # the machine's load), its TTFT at least a prefill.
        bench = json.loads(run(top, assigned,
                               "curl -s $api/captures/1").stdout)["bench"]
        steps = {r["kind"]: r for r in json.loads(run(
            top, assigned, "curl -s $api/captures/1/steps").stdout)["rows"]}
        tpot, dec = bench["median_tpot_ms"] * 1e6, steps["decode"]["p50_ns"]
        check(tpot >= 0.9 * dec, "TPOT p50 %.0f ns, decode step p50 %d ns"
              % (tpot, dec))
        check(bench["median_ttft_ms"] * 1e6 >= steps["prefill"]["min_ns"],
              "TTFT p50 %s ms, prefill %s" % (bench["median_ttft_ms"],
                                              steps["prefill"]))
        # One vendor's kernels on a device named as that vendor's.
        cap = json.loads(run(top, assigned, "curl -s $api/captures/1").stdout)
        check_eq({r["device"] for r in cap["ranks"]}, {"AMD Instinct MI300X"},
                 "the demo's devices")
        names = [r["name"] for r in json.loads(run(
            top, assigned, 'curl -s "$api/captures/1/kernels?limit=1000"'
        ).stdout)["rows"]]
        check(names and not any(NVIDIA_ONLY.search(n) for n in names),
              "NVIDIA kernels on the MI300X: %s" % [
                  n for n in names if NVIDIA_ONLY.search(n)][:5])
        sweep = json.loads(run(top, assigned, "curl -s $api/sweeps/1").stdout)
        check_eq((sweep["status"], sweep["points_done"],
                  [p["status"] for p in sweep["points"]]),
                 ("done", 4, ["done"] * 4), "the sweep: %s" % sweep)
        print("the tour's %d commands answered 2xx; capture 2 unchanged "
              "against capture 1 over %d figures" % (len(cmds),
                                                     verdict["compared"]))
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=90)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
