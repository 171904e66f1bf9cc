"""systemd/traced.service, the hardened unit (docs/ATOM.md, "Under
systemd"):

  score     `systemd-analyze security --offline=true` rates it 5.0 or
            lower (skipped, saying so, where systemd-analyze is missing);
  file      every setting has its reason in a comment; the folders ATOM
            writes to and never makes are made by an ExecStartPre=+ step
            (outside the sandbox, before ProtectSystem=strict applies) and
            are writable; no "-" path of ReadWritePaths is left for systemd
            to skip silently; PATH has ATOM's image Python (/opt/venv/bin)
            first and ROCm's tools;
  sandbox   a capture of the ATOM simulator runs to done under the unit's
            own sandbox settings, with `systemd-run --property=...`, where
            systemd is PID 1 (skipped, saying so, elsewhere).

Usage: test_unit.py [CASE...]."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_capture_lib import model_dir, run_cases  # noqa: E402
from tracedtest import (SRC_DIR, TRACED_BIN, TRACES_DIR,  # noqa: E402
                        Daemon, check, check_eq, free_port, sim_path,
                        wait_for)

UNIT = os.path.join(SRC_DIR, "systemd", "traced.service")
MAX_EXPOSURE = 5.0
# docs/API.md's defaults of server_log and bench_result: ATOM's scripts
# hard-code them (start_atom_server.sh:20, run_benchmark.sh:24).
ATOM_LOG_FOLDER = "/app/logs_claude"
# Settings that are the service's own business, not its sandbox.
NOT_SANDBOX = ("Type", "NotifyAccess", "ExecStart", "ExecStartPre", "Restart",
               "RestartSec", "TimeoutStopSec", "KillMode", "StateDirectory",
               "ReadWritePaths", "Environment")


def service_lines():
    """(key, value) of the [Service] section, in order, and the section's
    lines as written."""
    section, pairs, lines = None, [], []
    with open(UNIT) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("["):
                section = line
                continue
            if section != "[Service]":
                continue
            lines.append(line)
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                pairs.append((key, value))
    return pairs, lines


def score():
    tool = shutil.which("systemd-analyze")
    if tool is None:
        print("skipped: systemd-analyze is not installed (Debian's systemd "
              "package)")
        return
    r = subprocess.run([tool, "security", "--offline=true", UNIT],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d)", r.stdout)
    check(m is not None, "no rating:\n" + r.stdout[-2000:])
    rating = float(m.group(1))
    print("systemd-analyze security: %.1f" % rating)
    check(rating <= MAX_EXPOSURE, "exposure %.1f above %.1f:\n%s" % (
        rating, MAX_EXPOSURE, r.stdout))


def file_says_why():
    pairs, lines = service_lines()
    # Every block of settings (lines between blank lines) carries its
    # reason in a comment.
    block = []
    for line in lines + [""]:
        if line.strip():
            block.append(line)
            continue
        settings = [x for x in block if not x.startswith("#")]
        check(not settings or any(x.startswith("#") for x in block),
              "settings without a reason: %s" % settings)
        block = []
    keys = dict(pairs)
    pre = [v for k, v in pairs if k == "ExecStartPre"]
    check(pre and all(v.startswith("+") for v in pre),
          "ExecStartPre outside the sandbox: %s" % pre)
    made = " ".join(pre).split()
    rw = keys["ReadWritePaths"].split()
    check(ATOM_LOG_FOLDER in made, "ExecStartPre does not make %s: %s" % (
        ATOM_LOG_FOLDER, pre))
    check("-" + ATOM_LOG_FOLDER in rw or ATOM_LOG_FOLDER in rw,
          "%s not writable: %s" % (ATOM_LOG_FOLDER, rw))
    for path in rw:
        if path.startswith("-"):
            check(path[1:] in made, "%s may be skipped: not made by "
                  "ExecStartPre" % path)
    check_eq(keys.get("ProtectSystem"), "strict", "ProtectSystem")
    # ATOM's scripts run a bare `python`: ATOM's image Python first
    # (docker/Dockerfile:19), before the system's; ROCm's tools on it.
    path = keys["Environment"].partition("PATH=")[2].split(":")
    check_eq(path[0], "/opt/venv/bin", "PATH's first folder")
    check("/opt/rocm/bin" in path and path.index("/opt/venv/bin") <
          path.index("/usr/bin"), "PATH: %s" % path)


def sandbox_properties(rw):
    """The unit's sandbox, as systemd-run --property words, with the
    test's own folders writable."""
    pairs, _ = service_lines()
    props = ["%s=%s" % (k, v) for k, v in pairs if k not in NOT_SANDBOX]
    props += ["ReadWritePaths=%s" % " ".join(rw),
              "Environment=PATH=%s" % sim_path()]
    return props


def sandbox():
    """The simulator's capture under the unit's sandbox, as a transient
    service, where systemd runs the machine."""
    try:
        with open("/proc/1/comm") as f:
            init = f.read().strip()
    except OSError:
        init = "?"
    if init != "systemd" or shutil.which("systemd-run") is None:
        print("skipped: systemd is not PID 1 here (PID 1 is %s): "
              "systemd-run cannot apply the unit's properties" % init)
        return
    # Not under /tmp: the unit's PrivateTmp gives it a /tmp of its own.
    top = tempfile.mkdtemp(prefix="unit-test-", dir=os.path.join(
        SRC_DIR, "build") if os.path.isdir(os.path.join(SRC_DIR, "build"))
        else SRC_DIR)
    home, db = os.path.join(top, "sim"), os.path.join(top, "traced.db")
    model = model_dir(os.path.join(top, "models"), "Unit-Model")
    port, atom_port = free_port(), free_port()
    unit = "traced-unit-test-%d" % os.getpid()
    argv = [TRACED_BIN, "--listen", "127.0.0.1:%d" % port, "--db", db,
            "--trace-root", os.path.join(top, "traces"),
            "--atom-scripts", os.path.join(SRC_DIR, "sim", "scripts"),
            "--atom-port", str(atom_port),
            "--server-log", os.path.join(home, "logs", "atom_server.log"),
            "--bench-result", os.path.join(home, "logs", "benchmark.json"),
            "--model-roots", os.path.join(top, "models"),
            "--ready-poll-s", "1", "--export-poll-s", "1"]
    env = ["ATOM_SIM_HOME=" + home, "SIM_LOAD_S=0.3", "SIM_POLL_S=0.1",
           "SIM_EXPORT_DELAY_S=0.2", "SIM_TRACES_DIR=" + TRACES_DIR]
    cmd = ["systemd-run", "--unit", unit, "--collect", "--quiet"]
    for p in sandbox_properties([top, SRC_DIR]):
        cmd += ["--property", p]
    for e in env:
        cmd += ["--setenv", e]
    subprocess.run(cmd + argv, check=True, timeout=60)
    try:
        d = Api("http://127.0.0.1:%d" % port)
        wait_for(lambda: _healthy(d), 30, "traced under the sandbox")
        code, cap = d.post("/captures", {"model": model, "tp": 2, "conc": 2,
                                         "isl": 8, "osl": 4})
        check_eq(code, 202, "POST /captures: %r" % (cap,))
        deadline = time.time() + 180
        while time.time() < deadline:
            code, cap = d.get("/captures/%d" % cap["id"])
            if cap["status"] in ("done", "failed", "cancelled",
                                 "interrupted"):
                break
            time.sleep(0.5)
        check_eq((cap["status"], cap.get("error")), ("done", None),
                 "capture under the sandbox")
        check_eq(len(cap["ranks"]), 2, "ranks")
    finally:
        subprocess.run(["systemctl", "stop", unit], timeout=90)
        subprocess.run([os.path.join(SRC_DIR, "sim", "scripts",
                                     "stop_atom_server.sh")],
                       env=dict(os.environ, ATOM_SIM_HOME=home,
                                PATH=sim_path()),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=90)
        shutil.rmtree(top, ignore_errors=True)


class Api(Daemon):
    """HTTP calls to a traced that systemd runs (not this test)."""

    def __init__(self, base):  # noqa: no Daemon set-up: nothing to start
        self.base = base


def _healthy(d):
    try:
        return d.get("/healthz")[0] == 200
    except OSError:
        return False


if __name__ == "__main__":
    cases = {c.__name__: c for c in (score, file_says_why, sandbox)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))
