"""Shared by the capture tests (tests/test_capture*.py): a traced daemon
driving the ATOM simulator (sim/) in a private ATOM_SIM_HOME, on a free
port, with short polls; the simulator's record of every script call; the
processes left behind (found in /proc by their environment, so nothing of
ours can hide). Standard library only."""
import datetime
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (Daemon, SRC_DIR, TRACED_BIN,  # noqa: E402
                        TRACES_DIR, check, check_eq, free_port, sim_path)
import ref_index  # noqa: E402

SCRIPTS = os.path.join(SRC_DIR, "sim", "scripts")
# Small real traces (tens of KB), rotated over ranks by the simulator.
SMALL = [os.path.join(TRACES_DIR, n) for n in (
    "tracelens__mi210_gpu_only_trace.json.gz",
    "tracelens__torch_compile_triton_trace.json.gz",
    "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "tracelens__vllm_decode_full_graph_execution.json.gz")]
FINAL = ("done", "failed", "cancelled", "interrupted")


def model_dir(root, name, template=None, **files):
    """A model folder root/name as ATOM's bench needs one: a
    tokenizer_config.json (chat_template `template`) and any other files
    given (name -> text; "encoding/x.py" makes the folder)."""
    path = os.path.join(root, name)
    os.makedirs(path, exist_ok=True)
    files.setdefault("tokenizer_config.json",
                     json.dumps({"chat_template": template}))
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(path, rel)), exist_ok=True)
        with open(os.path.join(path, rel), "w") as f:
            f.write(text)
    return path


# The rig's own durations in real seconds: the simulator's (SIM_*) and
# traced's bounds. With a time scale they are given as that many times
# ATOM's seconds, so that they last as long as without one.
SIM_REAL_S = {"SIM_LOAD_S": 0.3, "SIM_POLL_S": 0.1, "SIM_EXPORT_DELAY_S": 0.2,
              "SIM_STOP_WAIT_S": 2, "SIM_LAUNCH_CAP_S": 3,
              "SIM_BENCH_WAIT_S": 10}
TRACED_REAL_S = {"ready_timeout_s": 20, "export_max_polls": 10,
                 "stop_timeout_s": 20, "launch_timeout_s": 30,
                 "bench_timeout_s": 60}


def scaled(real, scale):
    """{name: text of value * scale}: real seconds as ATOM's."""
    return {k: "%g" % (v * scale) for k, v in real.items()}


def sim_procs(home, but=None):
    """Live processes (not zombies) whose environment holds the simulator
    home `home`, `but` (a pid) and this one excepted."""
    needle = ("ATOM_SIM_HOME=" + home).encode()
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in (but, os.getpid()):
            continue
        try:
            with open("/proc/%s/status" % pid) as f:
                if "\nState:\tZ" in f.read():
                    continue
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if needle in env:
            out.append(int(pid))
    return out


def start_run(demo, listen, atom_port):
    """`make run`'s script (scripts/run.sh) in a session of its own, as a
    terminal runs it: (the process, the lines it prints, read in the
    background)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SIM_", "ATOM_"))}
    env.update(TRACED_DEMO_DIR=demo, TRACED_BIN=TRACED_BIN,
               TRACED_LISTEN=listen, ATOM_PORT=str(atom_port))
    p = subprocess.Popen(["sh", os.path.join(SRC_DIR, "scripts", "run.sh")],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    lines = []
    # p.reader: join it for every line once p has ended.
    p.reader = threading.Thread(target=lambda: lines.extend(p.stdout),
                                daemon=True)
    p.reader.start()
    return p, lines


class Rig:
    """A simulator home and a traced configured for it. The SIM_* knobs and
    ATOM_SIM_HOME go in traced's environment (the scripts inherit it).
    Models live under home/models (model_roots); the default one is a
    plain model without a chat template. The simulator's logs folder
    (ATOM's /app/logs_claude) does not exist: traced makes it.

    scale: ATOM's seconds in a real one, for the simulator's clock
    (SIM_TIME_SCALE) and traced's (time_scale) alike (docs/TESTS.md, "A
    faster clock"). The seconds a test gives (conf, sim_env, fault
    switches) are ATOM's; the rig's own bounds keep their real length;
    traced's polls (ready_poll_s, export_poll_s: 1 s of ATOM's) come
    scale times as often."""

    def __init__(self, conf=None, sim_env=None, traces=SMALL, scale=1):
        self.home = tempfile.mkdtemp(prefix="capture-sim-")
        self.models = os.path.join(self.home, "models")
        self.model = model_dir(self.models, "Sim-Model")
        self.port = free_port()
        self.scale = scale
        self.env = dict(scaled(SIM_REAL_S, scale), **{
            "ATOM_SIM_HOME": self.home, "SIM_TIME_SCALE": str(scale),
            "SIM_TRACES_DIR": TRACES_DIR, "SIM_TRACE_FILE": ":".join(traces),
            "PATH": sim_path()})
        self.env.update(sim_env or {})
        self.conf = dict(scaled(TRACED_REAL_S, scale), **{
            "atom_scripts": SCRIPTS, "atom_port": str(self.port),
            "server_log": self.path("logs", "atom_server.log"),
            "bench_result": self.path("logs", "benchmark.json"),
            "ready_poll_s": "1", "export_poll_s": "1",
            "time_scale": str(scale), "model_roots": self.models})
        self.conf.update(conf or {})
        self.d = None
        self.workdir = None

    def path(self, *parts):
        return os.path.join(self.home, *parts)

    def start(self, workdir=None):
        saved = dict(os.environ)
        for k in [k for k in os.environ if k.startswith(("SIM_", "ATOM_"))]:
            del os.environ[k]
        os.environ.update(self.env)
        try:
            self.d = Daemon(conf=self.conf, workdir=workdir, keep=True)
            self.d.start()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.workdir = self.d.dir
        return self

    def kill9(self):
        """kill -9 of traced, as a crash: nothing of it runs any cleanup."""
        self.d.proc.send_signal(signal.SIGKILL)
        self.d.proc.wait()
        self.d.log.close()
        self.d.proc = None

    def restart(self):
        """A new traced on the same database and trace root."""
        conf = dict(self.conf, db=self.d.conf["db"],
                    trace_root=self.d.conf["trace_root"])
        saved_conf, self.conf = self.conf, conf
        try:
            return self.start(workdir=self.workdir)
        finally:
            self.conf = saved_conf

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[0] is not None and self.d is not None:
            sys.stderr.write("---- traced log ----\n%s\n" % self.d.log_text())
        rc = self.close()
        if exc[0] is None and rc not in (0, None):
            raise AssertionError("traced exited %s (sanitizer report?):\n%s"
                                 % (rc, self.d.log_text()))

    def close(self):
        """Stops traced (returns its exit status) and the simulator."""
        rc = None
        if self.d is not None and self.d.proc is not None:
            rc = self.d.stop()
        env = dict(os.environ, **self.env)
        subprocess.run([os.path.join(SCRIPTS, "stop_atom_server.sh")],
                       env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        for pid in self.sim_procs():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.home, ignore_errors=True)
        if self.workdir and rc in (0, None):
            shutil.rmtree(self.workdir, ignore_errors=True)
        return rc

    # ---- the simulator's side ----
    def calls(self, script=None):
        """The simulator's record of invocations, oldest first."""
        try:
            with open(self.path("calls.jsonl")) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []
        return [r for r in rows if script is None or r["script"] == script]

    def stop_calls_after(self, stamp, timeout=0):
        """The stop script's calls at or after the RFC 3339 stamp (traced's
        finished_at), waiting up to timeout seconds for one."""
        deadline = time.time() + timeout
        while True:
            at = epoch(stamp)
            calls = [c for c in self.calls("stop_atom_server.sh")
                     if epoch(c["time"]) >= at]
            if calls or time.time() >= deadline:
                return calls
            time.sleep(0.1)

    def sim_procs(self):
        """Live processes (not zombies) whose environment holds this home,
        traced itself excepted: the scripts, the server, the bench."""
        return sim_procs(self.home, self.d.proc.pid
                         if self.d and self.d.proc else None)

    def wait_no_procs(self, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            left = self.sim_procs()
            if not left:
                return
            time.sleep(0.1)
        raise AssertionError("processes left: %s" % [
            open("/proc/%d/cmdline" % p, "rb").read().replace(b"\0", b" ")
            for p in left if os.path.exists("/proc/%d" % p)])

    # ---- traced's side ----
    def capture(self, **params):
        params.setdefault("model", self.model)
        params.setdefault("tp", 2)
        if params["tp"] is None:    # as a request without one
            del params["tp"]
        params.setdefault("conc", 2)
        params.setdefault("isl", 8)
        params.setdefault("osl", 4)
        code, cap = self.d.post("/captures", params)
        check_eq(code, 202, "POST /captures %s" % cap)
        return cap["id"]

    def get(self, cid):
        code, cap = self.d.get("/captures/%d" % cid)
        check_eq(code, 200, "GET /captures/%d" % cid)
        return cap

    def wait(self, cid, statuses=FINAL, timeout=180):
        return self.d.wait_status(cid, statuses, timeout=timeout)

    def wait_phase(self, cid, phase, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            cap = self.get(cid)
            if cap["phase"] == phase and cap["status"] == "running":
                return cap
            check(cap["status"] in ("queued", "running"),
                  "capture %d ended before %s: %s" % (cid, phase, cap))
            time.sleep(0.05)
        raise AssertionError("capture %d never in %s" % (cid, phase))


def epoch(stamp):
    """Seconds since the epoch of an ISO 8601 / RFC 3339 UTC stamp, with or
    without fractions ("...T09:50:00.123Z", "...T09:50:00.123456+00:00")."""
    stamp = stamp.replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(stamp).timestamp()


def rank_gz(cap, label):
    """The one exported .gz of a rank folder of a capture."""
    folder = os.path.join(cap["trace_dir"], label)
    files = [f for f in os.listdir(folder) if f.endswith(".pt.trace.json.gz")]
    check_eq(len(files), 1, "gz files in %s" % folder)
    return os.path.join(folder, files[0])


def check_rank_figures(d, cid, rank, path):
    """The rank's figures served by traced equal the independent reference
    computed over the same file (tests/ref_index.py)."""
    ref = ref_index.reference(path)
    code, body = d.get("/captures/%d/kernels?rank=%d" % (cid, rank))
    check_eq(code, 200, "kernels of rank %d" % rank)
    got = {r["name"]: (r["count"], r["total_ns"]) for r in body["rows"]}
    want = {n: (k["count"], k["total_ns"]) for n, k in ref["kernels"].items()}
    check_eq(got, want, "kernels of rank %d (%s)" % (rank, path))
    code, cap = d.get("/captures/%d" % cid)
    summary = [r for r in cap["ranks"] if r["rank"] == rank][0]
    for key in ("kernel_events", "kernel_ns", "memcpy_count", "memcpy_bytes",
                "memcpy_ns", "events"):
        check_eq(summary[key], ref[key], "%s of rank %d" % (key, rank))
    return ref


def gz_json_rank(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    return doc.get("distributedInfo", {}).get("rank")


def run_cases(cases):
    """Runs each case(); prints a result line each and the closing
    'N passed, N failed' line; exits 1 when any failed."""
    passed = failed = 0
    for case in cases:
        t0 = time.time()
        try:
            case()
            passed += 1
            print("PASS %s (%.1f s)" % (case.__name__, time.time() - t0),
                  flush=True)
        except Exception:   # noqa: BLE001 - report and go on
            failed += 1
            print("FAIL %s (%.1f s)" % (case.__name__, time.time() - t0),
                  flush=True)
            traceback.print_exc()
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
