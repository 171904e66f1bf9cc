#!/usr/bin/env python3
"""README.md's tour, run as written: `make run`'s script (scripts/run.sh)
on free ports, as the README's "Other ports" says, then every command of
the tour's shell blocks in the order given, from a folder laid out as the
repository's top (build/, demo/ beside, ../shared/traces above), each in
bash as a reader would paste it. curl is wrapped to report each answer's
status on stderr: every answer must be 2xx, every command must exit 0 and
write nothing else on stderr (no traceback, no curl or shell error). The
second capture, the same configuration as the demo's, must be judged
against the demo capture: unchanged.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (SRC_DIR, TRACED_BIN, TRACES_DIR, check,  # noqa: E402
                        check_eq, free_port, wait_for)

# Each answer's status on stderr, the body where the reader sees it.
CURL = "curl() { command curl -w '%{stderr}HTTP %{http_code}\\n' \"$@\"; }\n"


def tour_commands(readme):
    """The commands of the tour's ```sh blocks, continuation lines
    joined, in order."""
    text = open(readme).read()
    start = text.index("## A five-minute tour")
    section = text[start:text.index("\n## ", start + 1)]
    out = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                out.append(line)
    return out


def start_demo(top, port, atom_port):
    """scripts/run.sh with its demo folder in top/demo; returns the
    process and the lines it prints (read in the background)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SIM_", "ATOM_"))}
    env.update(TRACED_DEMO_DIR=os.path.join(top, "demo"),
               TRACED_BIN=TRACED_BIN, TRACED_LISTEN="127.0.0.1:%d" % port,
               ATOM_PORT=str(atom_port))
    p = subprocess.Popen(["sh", os.path.join(SRC_DIR, "scripts", "run.sh")],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    lines = []
    threading.Thread(target=lambda: lines.extend(p.stdout),
                     daemon=True).start()
    return p, lines


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
    p, lines = start_demo(top, port, free_port())
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
        print("the tour's %d commands answered 2xx; capture 2 unchanged "
              "against capture 1 over %d figures" % (len(cmds),
                                                     verdict["compared"]))
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=90)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
