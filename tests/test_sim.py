"""The ATOM simulator (sim/) against ATOM ffdf3bb5's behaviour
(docs/ATOM.md and ATOM's code, sim/README.md): real scripts and server
processes on free ports, real sockets, a private ATOM_SIM_HOME per case.
Every case kills whatever it left and removes its home. Standard library
only. Usage: test_sim.py [GROUP] (scripts, server, faults, strict,
container; all without)."""
import gzip
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import (NVIDIA_ONLY, SIM_BIN, SIM_VENV_BIN,  # noqa: E402
                        SRC_DIR, TRACES_DIR, check, check_eq, free_port,
                        sim_path, wait_for)

SCRIPTS = os.path.join(SRC_DIR, "sim", "scripts")
SIM_PKG = os.path.join(SRC_DIR, "sim", "pkg")
SERVER_MODULE = "atom.entrypoints.openai_server"   # sim/pkg stands in
ROCM_SMI = os.path.join(SIM_BIN, "rocm-smi")
MI250 = os.path.join(TRACES_DIR, "hta__mi250_minitoy_train_ROCm6_2_kineto"
                     ".json.gz")
VLLM = os.path.join(TRACES_DIR, "tracelens__vllm_decode_full_graph_execution"
                    ".json.gz")   # small, and has a distributedInfo
SMALL = [MI250, VLLM]
MODEL_NAME = "My Model:v4.1-x"        # a space and a colon to sanitise
STEM = "My_Model_v4.1-x"
NAME_RE = re.compile(r"^%s_ts_\d{8}_\d{6}_\d{3}\.pt\.trace\.json\.gz$"
                     % re.escape(STEM))
EXPORTED_RE = re.compile(r"^\[atom \d\d:\d\d:\d\d\] Rank (\d+): trace "
                         r"exported to (\S+) \((\d+\.\d) MB, (\d+\.\d)s\)$",
                         re.M)


def no_rocm_smi_path():   # without the stand-in nor any real rocm-smi
    return os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and d != SIM_BIN and not os.path.exists(
            os.path.join(d, "rocm-smi")))


def proc_servers(home):
    """Live (non-zombie) sim servers whose environment has this home: an
    independent re-implementation of what the scripts must find."""
    out = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/status" % d) as f:
                zombie = "\nState:\tZ" in f.read()
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if argv[1:3] == [b"-m", SERVER_MODULE.encode()] and \
                not zombie and b"ATOM_SIM_HOME=" + home.encode() in env:
            out.append(int(d))
    return out


class Sim:
    """A private home and port; run() a script and wait, spawn() one in
    the background, server() the server alone. close() kills what is
    left (servers of this home, spawned processes), removes the home."""

    def __init__(self, logs=True, **env):
        self.home = tempfile.mkdtemp(prefix="atom-sim-test-")
        self.port = free_port()
        self.trace_dir = os.path.join(self.home, "traces")
        # A model folder as ATOM's bench needs one (its tokenizer); ATOM's
        # logs folder, which its scripts never make, made as traced makes
        # it (without: logs=False).
        self.model = self.path("data", MODEL_NAME)
        os.makedirs(self.model)
        with open(os.path.join(self.model, "tokenizer_config.json"), "w") as f:
            json.dump({"chat_template": None}, f)
        if logs:
            os.makedirs(self.path("logs"))
        self.env = dict(os.environ)
        for k in [k for k in self.env if k.startswith(("SIM_", "ATOM_"))]:
            del self.env[k]
        self.env.update({"ATOM_SIM_HOME": self.home, "SIM_LOAD_S": "0.3",
                         "SIM_POLL_S": "0.1", "SIM_EXPORT_DELAY_S": "0.2",
                         "SIM_TRACES_DIR": TRACES_DIR, "SIM_PREFLIGHT_S":
                         "0.2", "SIM_STOP_WAIT_S": "1",
                         "SIM_TRACE_FILE": ":".join(SMALL),
                         "PATH": sim_path()})
        self.env.update(env)
        self.spawned = []

    def path(self, *parts):
        return os.path.join(self.home, *parts)

    def cmd(self, script, args):
        return ["bash", os.path.join(SCRIPTS, script)] + [str(a)
                                                           for a in args]

    def run(self, script, *args, env=None, timeout=60):
        return subprocess.run(self.cmd(script, args), timeout=timeout,
                              env=dict(self.env, **(env or {})),
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)

    def spawn_cmd(self, argv, env=None, log=None):
        out = open(log, "ab") if log else subprocess.PIPE
        self.spawned.append(subprocess.Popen(
            argv, env=dict(self.env, **(env or {})), stdout=out,
            stderr=subprocess.STDOUT))
        if log:
            out.close()   # the child has its own copy
        return self.spawned[-1]

    def spawn(self, script, *args, env=None):
        return self.spawn_cmd(self.cmd(script, args), env)

    def start(self, *extra, tp=1, env=None, expect=0):
        r = self.run("start_atom_server.sh", self.model, tp, self.port,
                     "--torch-profiler-dir", self.trace_dir, *extra, env=env)
        check_eq(r.returncode, expect, "start exit:\n" + r.stdout +
                 self.log()[-3000:])
        return r

    def server(self, *argv, env=None):
        """The server alone (no launcher), its output in the log; once
        it answers."""
        os.makedirs(self.path("logs"), exist_ok=True)
        env = dict(env or {}, PYTHONPATH=SIM_PKG)
        p = self.spawn_cmd([sys.executable, "-m", SERVER_MODULE, "--model",
                            self.model, "--server-port", str(self.port)] +
                           list(argv), env,
                           log=self.path("logs", "atom_server.log"))
        wait_for(lambda: not self.models_fail() or p.poll() is not None,
                 20, "server up")
        check(p.poll() is None, "server died:\n" + self.log())
        return p

    def profiling(self, tp, *faults):
        """A server of TP `tp` with a profiler folder, the fault switches
        set, its profiler started."""
        p = self.server("-tp", str(tp), "--torch-profiler-dir",
                        self.trace_dir)
        self.faults(*faults)
        check_eq(self.http("POST", "/start_profile"), (200, {
            "status": "success", "message": "Profiling started"}), "start")
        return p

    def bench(self, conc, mult, profile, *extra, env=None, timeout=60):
        return self.run("run_benchmark.sh", self.model, self.port, 8, 4, conc,
                        mult, profile, *extra, env=env, timeout=timeout)

    def faults(self, *lines):
        with open(self.path("faults"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def log(self):
        path = self.path("logs", "atom_server.log")
        return open(path, errors="replace").read() if os.path.exists(
            path) else ""

    def calls(self, script):
        with open(self.path("calls.jsonl")) as f:
            return [r for r in map(json.loads, f) if r["script"] == script]

    def http(self, method, route, body=None, timeout=10):
        req = urllib.request.Request(
            "http://127.0.0.1:%d%s" % (self.port, route), method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def later(self, method, route, body=None, timeout=60):
        """http() in a thread; .join() then .result: (status, doc,
        seconds taken), or the exception it raised."""
        def call():
            try:
                t.result = timed(lambda: self.http(method, route, body,
                                                   timeout))
            except (OSError, ValueError) as e:   # the server went away
                t.result = e
        t = threading.Thread(target=call, daemon=True)
        t.start()
        return t

    def silent(self, route="/health", seconds=1.0):
        """The port accepts the connection, and nothing answers within
        `seconds` (ATOM's event loop blocked)."""
        with socket.create_connection(("127.0.0.1", self.port), 2) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % route.encode())
            s.settimeout(seconds)
            try:
                return s.recv(1) == b""
            except socket.timeout:
                return True

    def models_fail(self):
        try:
            self.http("GET", "/v1/models", timeout=2)
        except OSError:
            return True
        return False

    def vram_gpus(self):
        """GPUs the stand-in's --showmemuse shows with VRAM in use."""
        out = subprocess.run([ROCM_SMI, "--showmemuse"], env=self.env,
                             stdout=subprocess.PIPE, text=True).stdout
        return [int(g) for g, v in re.findall(
            r"GPU\[(\d+)\]\s+: GPU Memory Allocated \(VRAM%\): (\d+)", out)
            if int(v) > 0]

    def stop(self):
        r = self.run("stop_atom_server.sh")
        check_eq(r.returncode, 0, "stop exit:\n" + r.stdout)
        check_eq(proc_servers(self.home), [], "servers left after stop")
        return r

    def close(self):
        for p in self.spawned:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
        for pid in proc_servers(self.home):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.home, ignore_errors=True)


def timed(fn):
    t0 = time.time()
    return fn() + (time.time() - t0,)


def rank_files(folder):   # (.gz names, .json names), None when absent
    if not os.path.isdir(folder):
        return None
    names = os.listdir(folder)
    return ([n for n in names if n.endswith(".pt.trace.json.gz")],
            [n for n in names if n.endswith(".pt.trace.json")])


def rank_done(folder):
    f = rank_files(folder) or ([], ["absent"])
    return len(f[0]) == 1 and not f[1]


def expected_doc(source, rank):   # the source, distributedInfo.rank set
    with gzip.open(source) as f:
        doc = json.load(f)
    info = dict(doc.get("distributedInfo") or {})
    info["rank"] = rank
    doc["distributedInfo"] = info
    return doc


LABEL_RE = re.compile(r"^[a-z_]+\[")
ANNOTATIONS = ("user_annotation", "gpu_user_annotation")


def strip_labels(doc):
    """(the run labels the simulator put first in traceEvents, GPU side;
    the document without them)."""
    events = doc["traceEvents"]
    n = 0
    while n < len(events) and events[n].get("cat") in ANNOTATIONS and \
            LABEL_RE.match(events[n].get("name", "")):
        n += 1
    labels = [e["name"] for e in events[:n]
              if e["cat"] == "gpu_user_annotation"]
    return labels, dict(doc, traceEvents=events[n:])


def exported_labels(folder):
    gz, _ = rank_files(folder)
    with gzip.open(os.path.join(folder, gz[0])) as f:
        return strip_labels(json.load(f))[0]


def check_rank_trace(folder, global_rank):
    """The rank's one .gz is its source with distributedInfo.rank set and
    ATOM's run labels of the profiled steps first: a prefill, decodes."""
    gz, js = rank_files(folder)
    check(js == [] and len(gz) == 1 and NAME_RE.match(gz[0]),
          "%s: %s %s" % (folder, gz, js))
    with gzip.open(os.path.join(folder, gz[0])) as f:
        labels, doc = strip_labels(json.load(f))
    check(doc == expected_doc(SMALL[global_rank % 2], global_rank),
          "%s: content differs from its source" % folder)
    return labels


def server_output(sim):   # the log after the launcher's header
    log = sim.log()
    return log[log.rindex("=" * 40) + 40:]


# ---------------------------------------------------------------- scripts

def test_capture_profile():
    """start -> ready (VRAM shown); bench PROFILE 1, TP 2: CONC*2 warm-ups
    before /start_profile, CONC*mult prompts inside the window, then
    /stop_profile; a .json stage seen before each .gz; the client never
    says "Profiler started"; argv and env recorded; ATOM's defaults."""
    sim = Sim()
    try:
        r = sim.start("--level", "0", tp=2, env={"ATOM_PROFILER_MORE": "0",
                                                 "AITER_X": "1"})
        check("Server is ready!" in r.stdout, r.stdout)
        pid = int(open(sim.path("server.pid")).read())
        check_eq(proc_servers(sim.home), [pid], "server pid")
        check_eq(sim.vram_gpus(), [0, 1], "VRAM of TP 2")
        check_eq(sorted(os.listdir(sim.trace_dir)), ["rank_0", "rank_1"],
                 "rank folders made at start")
        p = sim.spawn("run_benchmark.sh", sim.model, sim.port, 8, 4, 2, 1, 1)
        seen_json = set()

        def exported():
            for rank in (0, 1):
                f = rank_files(os.path.join(sim.trace_dir, "rank_%d" % rank))
                if f and f[1]:
                    seen_json.add(rank)
            return all(rank_done(os.path.join(sim.trace_dir, "rank_%d" % r))
                       for r in (0, 1))
        wait_for(exported, 20, "both ranks exported")
        out = p.communicate(timeout=20)[0].decode()
        check_eq(p.returncode, 0, "bench exit:\n" + out)
        check_eq(seen_json, {0, 1}, "ranks seen with a .json before .gz")
        for r in (0, 1):
            check_rank_trace(os.path.join(sim.trace_dir, "rank_%d" % r), r)
        check("Starting profiler..." in out and "Stopping profiler..." in out
              and "Profiler started" not in out and
              "Profiler stopped" not in out, out)
        check_bench_order(sim, warmups=4, prompts=2)
        check_calls(sim, pid)
        check_defaults(sim)
    finally:
        sim.close()


def check_bench_order(sim, warmups, prompts, conc=2):
    """The server log's access lines: warm-ups, /start_profile, prompts,
    /stop_profile; the result JSON agrees."""
    log = sim.log()
    start = log.index('"POST /start_profile HTTP/1.1" 200')
    stop = log.index('"POST /stop_profile HTTP/1.1" 200')
    done = '"POST /v1/completions HTTP/1.1" 200'
    check_eq(log[:start].count(done), warmups, "warm-ups")
    check_eq(log[start:stop].count(done), prompts, "profiled prompts")
    check("Rank 0: profiler started (detailed=False, dir=%s/rank_0)"
          % sim.trace_dir in log[:start], "profiler started line")
    with open(sim.path("logs", "benchmark.json")) as f:
        res = json.load(f)
    check_eq((res["completed"], res["num_prompts"], res["max_concurrency"]),
             (prompts, prompts, conc), "completed, num_prompts, concurrency")
    for key in ("request_throughput", "output_throughput", "mean_ttft_ms",
                "mean_tpot_ms", "mean_itl_ms", "p99_itl_ms", "duration"):
        check(isinstance(res[key], float) and res[key] > 0, key)
    check_eq(round(res["output_throughput"] * res["duration"]),
             res["total_output_tokens"], "throughput x duration")


def check_calls(sim, pid):
    start = sim.calls("start_atom_server.sh")[-1]
    check_eq(start["argv"], [sim.model, "2", str(sim.port),
                             "--torch-profiler-dir", sim.trace_dir,
                             "--level", "0"], "start argv")
    server = [c for c in sim.calls("atom_sim_server") if c["pid"] == pid]
    argv = server[0]["argv"]
    check_eq(argv[argv.index("-tp") + 1], "2", "server -tp")
    check_eq(argv[argv.index("--torch-profiler-dir") + 1], sim.trace_dir,
             "server profiler dir")
    check_eq(server[0]["env"].get("AITER_X"), "1", "AITER_ env")
    check_eq(server[0]["env"].get("KINETO_CONFIG"), sim.path(
        "libkineto.conf"), "KINETO_CONFIG set by the launcher")
    check(sim.calls("rocm-smi"), "rocm-smi never called")
    client = sim.calls("benchmark_serving")[-1]["argv"]
    for a in ("--num-prompts=2", "--num-warmups=4", "--max-concurrency=2",
              "--profile", "--random-range-ratio=0.8"):
        check(a in client, "%s in %s" % (a, client))


def check_defaults(sim):
    """PROMPT_MULTIPLIER defaults to 10 and PROFILE to 0."""
    r = sim.run("run_benchmark.sh", sim.model, sim.port, 8, 4, 8)
    check_eq(r.returncode, 0, r.stdout)
    client = sim.calls("benchmark_serving")[-1]["argv"]
    check("--num-prompts=80" in client and "--profile" not in client,
          str(client))
    with open(sim.path("logs", "benchmark.json")) as f:
        check_eq(json.load(f)["completed"], 80, "default multiplier")


def test_warmups_and_bench_options():
    """A later --num-warmups 0 in the extra args wins (no completion
    before /start_profile); snake_case works for the client's own options
    but not for its dataset-group options; unknown options exit 2."""
    sim = Sim()
    try:
        sim.start()
        r = sim.bench(3, 1, 1, "--num-warmups", "0", "--num_prompts", "2")
        check_eq(r.returncode, 0, r.stdout)
        check_bench_order(sim, warmups=0, prompts=2, conc=3)
        for extra, what in ((["--bogus"], "unrecognized arguments: --bogus"),
                            (["--random_input_len", "3"],
                             "unrecognized arguments: --random_input_len 3"),
                            (["--num-warmups", "x"], "argument --num-warmups/"
                             "--num_warmups: invalid int value: 'x'")):
            r = sim.bench(1, 1, 0, *extra)
            check_eq(r.returncode, 2, r.stdout)
            check("benchmark_serving.py: error: " + what in r.stdout,
                  r.stdout)
        sim.stop()
    finally:
        sim.close()


def test_argv_like_atoms_parser():
    """The server's parser is ATOM's: an unknown word, a JSON value split
    by the launcher's word splitting, and a JSON value still wrapped in
    its quotes (not removed by the launcher) all exit 2 with argparse's
    message in the server log, and the start script says the server
    died; both spellings and a compact JSON value are accepted."""
    sim = Sim()
    try:
        spaced = '{"global_quant_config": "ptpc_fp8"}'
        for extra, what in (
                (["--bogus", "1"], "unrecognized arguments: --bogus 1"),
                (["--online_quant_config", spaced],
                 "argument --online_quant_config/--online-quant-config: "
                 "invalid loads value: '{\"global_quant_config\":'"),
                (["--hf-overrides", "'{\"a\":1}'"],
                 "argument --hf-overrides/--hf_overrides: invalid loads "
                 "value: %r" % "'{\"a\":1}'"),
                (["--dcp_config", "{}"], "unrecognized arguments: "
                 "--dcp_config {}")):
            r = sim.start(*extra, expect=1)
            check("ERROR: Server process died" in r.stdout, r.stdout)
            out = server_output(sim)
            check(out.lstrip().startswith("usage: openai_server.py [-h]"),
                  out[:300])
            check("openai_server.py: error: " + what in out, out[-600:])
        compact = '{"global_quant_config":"ptpc_fp8","exclude_layer":' \
                  '["lm_head"]}'
        r = sim.start("--online_quant_config", compact, "--max_num_seqs",
                      "64", "--enable-eplb", "--no-enable-prefix-caching")
        log = sim.log()
        check("'online_quant_config': {'global_quant_config': 'ptpc_fp8', "
              "'exclude_layer': ['lm_head']}" in log, log[-2000:])
        check("'eplb_enable': True" in log and "'enable_prefix_caching': "
              "False" in log, "flags not parsed")
        sim.stop()
    finally:
        sim.close()


def test_extra_args_split_and_globbed():
    """EXTRA_ARGS are re-split and glob-expanded (ATOM's unquoted
    $EXTRA_ARGS): a word with a '*' names the files of the cwd."""
    sim = Sim()
    try:
        cwd = sim.path("cwd")
        os.makedirs(cwd)
        open(os.path.join(cwd, "only.tmpl"), "w").close()
        r = subprocess.run(sim.cmd("start_atom_server.sh", [
            sim.model, 1, sim.port, "--chat-template *.tmpl",
            "--served-model-name", "a b"]), cwd=cwd, env=sim.env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        check_eq(r.returncode, 1, r.stdout)
        argv = sim.calls("atom_sim_server")[-1]["argv"]
        check_eq(argv[-5:], ["--chat-template", "only.tmpl",
                             "--served-model-name", "a", "b"], "split argv")
        check("unrecognized arguments: b" in sim.log(), sim.log()[-500:])
    finally:
        sim.close()


def test_engine_checks_exit_1():
    """ATOM's checks while building the engine: a traceback, exit 1."""
    sim = Sim()
    try:
        for extra, what in ((["-dcp", "3"], "AssertionError: tp_size (2) "
                             "must be divisible by dcp_size (3)"),
                            (["--eplb-config", '{"bogus":1}'],
                             "ValueError: Unknown --eplb-config key(s): "
                             "['bogus']"),
                            (["--method", "eagle3"], "ValueError: "
                             "--draft-model is required")):
            r = sim.start(*extra, tp=2, expect=1)
            check("ERROR: Server process died" in r.stdout, r.stdout)
            out = server_output(sim)
            check("Traceback (most recent call last)" in out and what in out,
                  out[-800:])
        # A typo in the model's path: ATOM's server loads its tokenizer
        # first (api_server.py main), and dies at its start.
        r = sim.run("start_atom_server.sh", sim.model + "x", 1, sim.port)
        check_eq(r.returncode, 1, "a model folder that is not there")
        check("ERROR: Server process died" in r.stdout, r.stdout)
        check("OSError: Can't load tokenizer for '%sx'" % sim.model
              in server_output(sim), server_output(sim)[-800:])
        model = sim.path("Kimi")
        os.makedirs(model)
        for name, doc in (("config.json", {"auto_map": {"AutoConfig":
                                                         "x.Y"}}),
                          ("tokenizer_config.json", {"chat_template": None})):
            with open(os.path.join(model, name), "w") as f:
                json.dump(doc, f)
        r = sim.run("start_atom_server.sh", model, 1, sim.port)
        check_eq(r.returncode, 1, "remote code without the flag")
        check("trust_remote_code=True" in sim.log(), sim.log()[-500:])
        r = sim.run("start_atom_server.sh", model, 1, sim.port,
                    "--trust-remote-code")
        check_eq(r.returncode, 0, r.stdout)
        sim.stop()
    finally:
        sim.close()


def test_rocm_smi():
    """Without rocm-smi on PATH (or with no_rocm_smi) the start script
    exits 1 at its pre-flight check, printing nothing after it, and starts
    no server; the stand-in shows VRAM exactly while a server of this home
    has loaded its model; the bench script needs it too."""
    sim = Sim(SIM_LOAD_S="1.5")
    try:
        for env in ({"PATH": no_rocm_smi_path()},
                    {"ATOM_SIM_FAULTS": "no_rocm_smi"}):
            r = sim.start(env=env, expect=1)
            check_eq(r.stdout, "Pre-flight: cleaning up processes and GPU "
                     "memory...\n", "output")
            check_eq(proc_servers(sim.home), [], "server started")
        r = subprocess.run([ROCM_SMI, "--showmemuse"], env=dict(
            sim.env, ATOM_SIM_FAULTS="no_rocm_smi"), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check_eq((r.returncode, r.stdout), (127, ""), "no_rocm_smi exit")
        check("command not found" in r.stderr, r.stderr)
        p = sim.spawn("start_atom_server.sh", sim.model, 2, sim.port,
                      "-pcp", "2")
        wait_for(lambda: proc_servers(sim.home), 10, "server process")
        check_eq(sim.vram_gpus(), [], "VRAM while loading")
        check(sim.models_fail(), "port bound while loading")
        check_eq(p.wait(30), 0, "start exit")
        check_eq(sim.vram_gpus(), [0, 1, 2, 3], "VRAM of TP 2 x PCP 2")
        pid = proc_servers(sim.home)[0]
        out = subprocess.run([ROCM_SMI, "--showpidgpus"], env=sim.env,
                             stdout=subprocess.PIPE, text=True).stdout
        check("PID %d is using 4 DRM device(s):\n0 1 2 3" % pid in out, out)
        r = sim.bench(1, 1, 0, env={"PATH": no_rocm_smi_path()})
        check_eq(r.returncode, 1, "bench without rocm-smi:\n" + r.stdout)
        check("Server is ready!" not in r.stdout, r.stdout)
        sim.stop()
        check_eq(sim.vram_gpus(), [], "VRAM after stop")
    finally:
        sim.close()


def test_die_on_start_and_never_ready():
    """die_on_start: exit 1 with ATOM's message. never_ready: the
    launcher falls through after its tries with exit 0 (not readiness)."""
    sim = Sim(ATOM_SIM_FAULTS="die_on_start")
    try:
        r = sim.start(expect=1)
        check("ERROR: Server process died" in r.stdout, r.stdout)
        check("RuntimeError: Engine core initialization failed" in sim.log(),
              sim.log()[-500:])
        r = sim.run("run_benchmark.sh", sim.model, sim.port, 8, 4, 1, 1, 1,
                    env={"SIM_BENCH_WAIT_S": "0.3"})
        check_eq(r.returncode, 1, "bench without server:\n" + r.stdout)
        check("ERROR: Server not ready after 0.3s" in r.stdout, r.stdout)
        t0 = time.time()
        r = sim.start(env={"ATOM_SIM_FAULTS": "never_ready",
                           "SIM_LAUNCH_CAP_S": "1"})
        check(time.time() - t0 >= 1.0, "tries not waited")
        check("Server is ready!" not in r.stdout, r.stdout)
        check(sim.models_fail(), "/v1/models answered")
        check_eq(len(proc_servers(sim.home)), 1, "server still loading")
        sim.stop()
    finally:
        sim.close()


def test_fatal_marker_and_old_marker():
    """A launch truncates the log: a marker of the previous run never
    fails wait_server_ready; a marker of this launch does."""
    sim = Sim(SIM_LAUNCH_CAP_S="1")
    try:
        os.makedirs(sim.path("logs"), exist_ok=True)
        with open(sim.path("logs", "atom_server.log"), "w") as f:
            f.write("HSA_STATUS_ERROR old run\n" + "x" * 200000 + "\n")
        w = sim.spawn("wait_server_ready.sh", sim.port, 1, 1)
        time.sleep(0.5)  # its log snapshot first, as when it runs first
        sim.start()
        out = w.communicate(timeout=20)[0].decode()
        check_eq(w.returncode, 0, "clean relaunch after old marker:\n" + out)
        check("log truncated" in out, out)
        marker = "Memory access fault by GPU node-2 (Agent handle: 0x1)"
        sim.faults("fatal_marker=" + marker)
        # The old server stopped first: on a loaded machine the waiter's
        # first poll can come before the relaunch's pre-flight has
        # stopped it, and the old server answers ready.
        sim.stop()
        w = sim.spawn("wait_server_ready.sh", sim.port, 1, 1)
        time.sleep(0.5)
        r = sim.start()
        check("Server is ready!" not in r.stdout, r.stdout)
        out = w.communicate(timeout=20)[0].decode()
        check_eq(w.returncode, 1, "marker missed:\n" + out)
        check(marker in server_output(sim), "marker not logged")
        sim.stop()
    finally:
        sim.close()


def test_stop_escalates_and_isolates():
    """A server that does not take its SIGTERM survives a relaunch's
    pre-flight (only its engine and workers are SIGKILLed, as ATOM's
    pkill -9 of multiprocessing.spawn) and keeps the port: the new server
    cannot bind and dies. The stop script SIGKILLs it. Another home's
    server is never touched, by the stop script nor by a pre-flight."""
    a = Sim(ATOM_SIM_FAULTS="ignore_sigterm")
    b = Sim()
    try:
        a.start()
        b.start()
        old = proc_servers(a.home)
        # The launcher may even say ready: the old server answers
        # /v1/models and the new one holds VRAM until its bind fails.
        r = a.run("start_atom_server.sh", a.model, 1, a.port)
        check(r.returncode in (0, 1), r.stdout)
        wait_for(lambda: "address already in use" in a.log(), 10, "bind")
        wait_for(lambda: proc_servers(a.home) == old, 10, "new one gone")
        check_eq(a.vram_gpus(), [], "its workers were killed")
        r = a.stop()
        check("escalating to SIGKILL" in r.stdout, r.stdout)
        check_eq(len(proc_servers(b.home)), 1, "other home's server")
        check_eq(b.http("GET", "/v1/models")[0], 200, "other home answers")
        b.stop()
        check_eq(b.run("stop_atom_server.sh").returncode, 0, "second stop")
    finally:
        a.close()
        b.close()


# ----------------------------------------------------------------- server

def test_routes():
    """/health, /server_info, /v1/models, 404 and 405 as FastAPI answers;
    a model name that is not the server's is a 400; keep-alive. Without
    --torch-profiler-dir /stop_profile answers 200 with elapsed 0.0 and
    /start_profile 200 with no rank started (ATOM's model_runner)."""
    sim = Sim()
    try:
        sim.server("-tp", "2", "-dp", "2", "--served-model-name", "m")
        check_eq(sim.http("POST", "/stop_profile")[1]["traces"],
                 [{"trace_dir": None, "elapsed": 0.0}] * 2, "idle stop")
        check_eq(sim.http("POST", "/start_profile")[0], 200, "start")
        check("profiler started (" not in sim.log(), "a rank started")
        check_eq(sim.http("GET", "/health"), (200, {"status": "ok"}), "health")
        check_eq(sim.http("GET", "/server_info"), (200, {
            "model_id": "m", "served_model_name": "m", "tp_size": 2,
            "dp_size": 2}), "server_info")
        check_eq(sim.http("GET", "/v1/models")[1]["data"][0]["id"], "m", "id")
        check_eq(sim.http("GET", "/nope"), (404, {"detail": "Not Found"}),
                 "404")
        check_eq(sim.http("GET", "/start_profile"),
                 (405, {"detail": "Method Not Allowed"}), "405")
        code, doc = sim.http("POST", "/v1/completions",
                             {"model": "x", "prompt": "a"})
        check(code == 400 and "does not match" in doc["detail"], str(doc))
        code, doc = sim.http("POST", "/v1/completions",
                             {"model": "m", "prompt": "a b", "max_tokens": 3})
        check_eq((code, doc["usage"]["completion_tokens"],
                  doc["usage"]["prompt_tokens"]), (200, 3, 2), "completion")
        conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
        socks = []
        for _ in range(2):
            conn.request("GET", "/health")
            check_eq(conn.getresponse().read(), b'{"status":"ok"}', "body")
            socks.append(conn.sock)
        check(socks[0] is socks[1] is not None, "not kept alive")
        conn.close()
    finally:
        sim.close()


def test_stop_profile_blocks_the_server():
    """Rank 0 exports slowly: /stop_profile blocks the whole event loop
    (no /health, no /v1/models, no completion chunk) until rank 0 has
    exported; rank 1 finished first; the answer is ATOM's; the log lines
    are ATOM's, with size and time."""
    sim = Sim()
    try:
        sim.profiling(2, "slow_export_rank=0:2.5")
        t = sim.later("POST", "/stop_profile")
        wait_for(lambda: "Rank 0: stopping profiler" in sim.log(), 5, "stop")
        check(sim.silent("/health") and sim.silent("/v1/models"),
              "the server answered while rank 0 exported")
        check(rank_done(os.path.join(sim.trace_dir, "rank_1")),
              "rank 1 not exported meanwhile")
        t.join(20)
        code, doc, secs = t.result
        check(code == 200 and secs >= 2.5, "%s %s %.1f" % (code, doc, secs))
        check_eq(doc["message"], "Profiling stopped. Trace files generated.",
                 "message")
        check_eq([tr["trace_dir"] for tr in doc["traces"]],
                 [os.path.join(sim.trace_dir, "rank_0")], "traces")
        check(doc["traces"][0]["elapsed"] >= 2.5, str(doc))
        check_eq(sim.http("GET", "/health")[0], 200, "health after")
        lines = EXPORTED_RE.findall(sim.log())
        check_eq([int(m[0]) for m in lines], [1, 0], "export order")
        for rank, path, mb, secs in lines:
            check(path.startswith(os.path.join(sim.trace_dir, "rank_" + rank))
                  and os.path.isfile(path), path)
            check_eq(mb, "%.1f" % (os.path.getsize(path) / 1e6), "MB")
        check("Rank 0: profiler stop completed in " in sim.log(), "stop line")
        for r in (0, 1):
            check_rank_trace(os.path.join(sim.trace_dir, "rank_%d" % r), r)
    finally:
        sim.close()


def test_other_ranks_hold_the_next_step():
    """Rank 1 exports slowly: /stop_profile answers once rank 0 is done,
    but a completion waits for rank 1 (a forward step needs every rank)."""
    sim = Sim()
    try:
        sim.profiling(2, "slow_export_rank=1:2")
        t0 = time.time()
        code, doc = sim.http("POST", "/stop_profile")
        check(code == 200 and time.time() - t0 < 1.5, "stop waited rank 1")
        check(not rank_done(os.path.join(sim.trace_dir, "rank_1")),
              "rank 1 done too early")
        code, doc, secs = timed(lambda: sim.http(
            "POST", "/v1/completions", {"prompt": "a", "max_tokens": 2}))
        check(code == 200 and time.time() - t0 >= 2, "completion did not "
              "wait for rank 1 (%.1f s)" % (time.time() - t0))
        check(rank_done(os.path.join(sim.trace_dir, "rank_1")), "rank 1")
    finally:
        sim.close()


def test_profiler_timeout():
    """ATOM_PROFILER_TIMEOUT=1 and a 3 s rank-0 export: /stop_profile
    answers 500 after 1 s with ATOM's detail and traceback; the export
    goes on and completes; the engine stays busy until then."""
    sim = Sim(ATOM_PROFILER_TIMEOUT="1")
    try:
        sim.profiling(1, "slow_export_rank=0:3")
        t0 = time.time()
        code, doc = sim.http("POST", "/stop_profile")
        check(code == 500 and 1 <= time.time() - t0 < 2.5, "%s %.1f" % (
            code, time.time() - t0))
        check_eq(doc, {"detail": "Failed to stop profiling: Engine Core Mgr: "
                       "Timed out waiting for UTILITY_RESPONSE for command "
                       "'stop_profile' (timeout=1.0s)"}, "detail")
        log = sim.log()
        check(re.search(r"\] Failed to stop profiling\nTraceback \(most "
                        r"recent call last\):\n(.|\n)*TimeoutError", log),
              log[-1500:])
        check_eq(sim.http("GET", "/health")[0], 200, "health after the 500")
        check(not rank_done(os.path.join(sim.trace_dir, "rank_0")), "early")
        wait_for(lambda: EXPORTED_RE.search(sim.log()), 10, "export done")
        check(time.time() - t0 >= 2.8, "export cut short")
        check_rank_trace(os.path.join(sim.trace_dir, "rank_0"), 0)
    finally:
        sim.close()


def test_sigterm_waits_for_the_loop():
    """SIGTERM while /stop_profile blocks: nothing happens until the call
    returns; then uvicorn's graceful shutdown, exit 0, VRAM freed."""
    sim = Sim()
    try:
        p = sim.profiling(1, "slow_export_rank=0:2")
        t = sim.later("POST", "/stop_profile")
        wait_for(lambda: "Rank 0: stopping profiler" in sim.log(), 5, "stop")
        p.send_signal(signal.SIGTERM)
        time.sleep(1)
        check(p.poll() is None and "Shutting down" not in sim.log(),
              "SIGTERM handled while the loop was blocked")
        check_eq(p.wait(10), 0, "exit status")
        t.join(5)
        log = sim.log()
        check(log.index("Rank 0: trace exported") < log.index(
            "INFO:     Shutting down") < log.index("Finished server process"),
              log[-1500:])
        check_eq(sim.vram_gpus(), [], "VRAM after shutdown")
    finally:
        sim.close()


def test_stop_script_while_exporting():
    """The stop script while /stop_profile blocks: the server cannot take
    its SIGTERM, the ranks finish only what fits in the wait, then
    SIGKILL: rank 0's export is cut, its .json left behind. (Its export
    takes 60 s: the script's five checks of /proc took over 10 s on a
    loaded machine; the kill ends the test well before.)"""
    sim = Sim(SIM_STOP_WAIT_S="1")
    try:
        sim.start(tp=2)
        sim.faults("slow_export_rank=0:60")
        sim.http("POST", "/start_profile")
        sim.later("POST", "/stop_profile")
        wait_for(lambda: "Rank 0: stopping profiler" in sim.log(), 5, "stop")
        r = sim.stop()
        check("escalating to SIGKILL" in r.stdout, r.stdout)
        check(rank_done(os.path.join(sim.trace_dir, "rank_1")), "rank 1")
        gz, js = rank_files(os.path.join(sim.trace_dir, "rank_0"))
        check(gz == [] and len(js) == 1, "rank 0: %s %s" % (gz, js))
        check_eq(sim.vram_gpus(), [], "VRAM after the kill")
    finally:
        sim.close()


def test_layouts():
    """Rank folders made when the workers start, named as ATOM names them:
    workers = TP x PCP; dp<d>_tp<r> with DP (and DP attention), pp<p>_
    with PP, prefill/ and decode/ halves with --enable-rapidserve; one
    /stop_profile trace entry per engine; /server_info's sizes."""
    cases = [(["-tp", "2", "-pcp", "2"], ["rank_0", "rank_1", "rank_2",
                                          "rank_3"], (2, 1), 1),
             (["-tp", "2", "-dp", "2"], ["dp0_tp0", "dp0_tp1", "dp1_tp0",
                                         "dp1_tp1"], (2, 2), 2),
             (["-tp", "2", "--enable-dp-attention"], ["dp0_tp0", "dp1_tp0"],
              (1, 2), 2),
             (["-tp", "2", "-pp", "2"], ["pp0_rank_0", "pp0_rank_1",
                                         "pp1_rank_0", "pp1_rank_1"], (2, 1),
              2),
             (["-tp", "2", "--enable-rapidserve"],
              ["decode/rank_0", "decode/rank_1", "prefill/rank_0",
               "prefill/rank_1"], (2, 1), 2)]
    for argv, folders, sizes, engines in cases:
        sim = Sim()
        try:
            sim.server("--torch-profiler-dir", sim.trace_dir, *argv)
            got = sorted(os.path.relpath(d, sim.trace_dir) for d, subs, _ in
                         os.walk(sim.trace_dir) if not subs)
            check_eq(got, folders, "folders of %s" % argv)
            info = sim.http("GET", "/server_info")[1]
            check_eq((info["tp_size"], info["dp_size"]), sizes, "sizes")
            sim.http("POST", "/start_profile")
            code, doc = sim.http("POST", "/stop_profile")
            check_eq(len(doc["traces"]), engines, "traces of %s" % argv)
            wait_for(lambda: all(rank_done(os.path.join(sim.trace_dir, f))
                                 for f in folders), 10, "all exported")
            check_eq(sim.vram_gpus(), list(range(len(folders) if
                     "--enable-rapidserve" not in argv else 2)), "GPUs")
        finally:
            sim.close()


# ----------------------------------------------------------------- faults

def test_export_faults():
    """export_fail=1: ATOM's line with a traceback, both files removed;
    truncated_gz=2 looks complete but fails to gunzip; missing_rank=3 has
    no folder; rank 0 intact."""
    sim = Sim()
    try:
        sim.faults("export_fail=1", "truncated_gz=2", "missing_rank=3")
        sim.server("-tp", "4", "--torch-profiler-dir", sim.trace_dir)
        check(not os.path.exists(os.path.join(sim.trace_dir, "rank_3")),
              "missing rank has a folder")
        sim.http("POST", "/start_profile")
        check_eq(sim.http("POST", "/stop_profile")[0], 200, "stop")
        wait_for(lambda: rank_done(os.path.join(sim.trace_dir, "rank_2")),
                 10, "rank 2")
        wait_for(lambda: "Rank 1: failed to export" in sim.log(), 10, "fail")
        log = sim.log()
        folder = os.path.join(sim.trace_dir, "rank_1")
        check(re.search(r"\] Rank 1: failed to export trace to %s/%s_ts_\S+"
                        r"\.pt\.trace\.json\.gz\nTraceback \(most recent call"
                        r" last\):\n(.|\n)*OSError: \[Errno 28\]"
                        % (re.escape(folder), re.escape(STEM)), log),
              log[-2000:])
        check_eq(rank_files(folder), ([], []), "rank 1 files")
        check_rank_trace(os.path.join(sim.trace_dir, "rank_0"), 0)
        gz = rank_files(os.path.join(sim.trace_dir, "rank_2"))[0][0]
        try:
            with gzip.open(os.path.join(sim.trace_dir, "rank_2", gz)) as f:
                f.read()
            raise AssertionError("truncated .gz decompressed")
        except (EOFError, gzip.BadGzipFile):
            pass
        check("Rank 3:" not in log, "missing rank logged")
    finally:
        sim.close()


def test_worker_death_during_export():
    """worker_death=1: rank 1 dies after its .json; the monitor's line;
    the engine goes down (rank 0 still finishes within the join); no
    answer: /stop_profile is a 500 after ATOM_PROFILER_TIMEOUT; the API
    process lives on (/health), VRAM is freed, completions hang."""
    sim = Sim(ATOM_PROFILER_TIMEOUT="1.5")
    try:
        sim.profiling(2, "worker_death=1")
        t0 = time.time()
        code, doc = sim.http("POST", "/stop_profile")
        check(code == 500 and time.time() - t0 >= 1.5, "%s %s" % (code, doc))
        check("timeout=1.5s" in doc["detail"], doc["detail"])
        log = sim.log()
        check("AsyncIOProcManager(ModelRunner): [ModelRunner1/2] proc died "
              "unexpectedly (exitcode=-9), shutting down." in log, log[-1500:])
        gz, js = rank_files(os.path.join(sim.trace_dir, "rank_1"))
        check(gz == [] and len(js) == 1, "rank 1: %s %s" % (gz, js))
        check_rank_trace(os.path.join(sim.trace_dir, "rank_0"), 0)
        check_eq(sim.http("GET", "/health")[0], 200, "API process alive")
        wait_for(lambda: sim.vram_gpus() == [], 5, "VRAM freed")
        try:
            sim.http("POST", "/v1/completions", {"prompt": "a"}, timeout=1)
            raise AssertionError("a completion answered with no engine")
        except socket.timeout:
            pass
    finally:
        sim.close()


def test_start_profile_500():
    """start_profile_500: rank 0's profiler fails to start, its worker
    dies (the monitor's line), the engine never answers: /start_profile
    blocks SIM_UTILITY_TIMEOUT_S, then ATOM's 500, logged as 'Failed to
    start profiling' with its traceback; rank 0 never says started."""
    sim = Sim(SIM_UTILITY_TIMEOUT_S="1")
    try:
        sim.server("-tp", "2", "--torch-profiler-dir", sim.trace_dir)
        sim.faults("start_profile_500")
        t = sim.later("POST", "/start_profile")
        time.sleep(0.3)
        check(sim.silent("/health", 0.4), "answered while start blocked")
        t.join(10)
        code, doc, secs = t.result
        check(code == 500 and secs >= 1, "%s %.1f" % (code, secs))
        check_eq(doc["detail"], "Failed to start profiling: Engine Core Mgr: "
                 "Timed out waiting for UTILITY_RESPONSE for command "
                 "'start_profile' (timeout=1.0s)", "detail")
        log = sim.log()
        check("] Failed to start profiling\nTraceback" in log and
              "[ModelRunner0/2] proc died unexpectedly (exitcode=1)" in log,
              log[-2000:])
        check("Rank 0: profiler started" not in log, "rank 0 started")
    finally:
        sim.close()


def test_die_during_bench():
    """The server dies at the 6th completion (2nd profiled prompt): as
    ATOM's client, the bench exits 0 and writes the JSON with completed
    short; with strict_bench it exits nonzero and leaves the stale JSON."""
    sim = Sim(ATOM_SIM_FAULTS="die_during_bench=6")
    try:
        sim.start()
        stale = sim.path("logs", "benchmark.json")
        r = sim.bench(2, 2, 1)
        check_eq(r.returncode, 0, "ATOM-like bench:\n" + r.stdout)
        with open(stale) as f:
            res = json.load(f)
        check(res["completed"] < res["num_prompts"] == 4, str(res))
        check("FAILED requests:" in r.stdout, r.stdout)
        check_eq(proc_servers(sim.home), [], "server survived")
        check("EngineCore exited unexpectedly" in sim.log(), "death line")
        with open(stale, "w") as f:
            f.write('{"stale": true}')
        sim.start()
        sim.faults("strict_bench")
        r = sim.bench(2, 2, 0)
        check(r.returncode != 0, "strict bench exit 0:\n" + r.stdout)
        check_eq(open(stale).read(), '{"stale": true}', "stale JSON")
        sim.stop()
    finally:
        sim.close()


def test_fatal_marker_during_bench():
    """The marker lands in the log mid-bench and the requests hang (the
    server still answers /health) until the server is stopped; then, as
    ATOM's client, the bench ends with exit 0 and a short result."""
    marker = "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION"
    sim = Sim()
    try:
        sim.faults("fatal_marker=" + marker, "fatal_marker_during_bench=3")
        sim.start()
        check(marker not in sim.log(), "marker during load")
        p = sim.spawn("run_benchmark.sh", sim.model, sim.port, 8, 4, 1, 1, 0)
        wait_for(lambda: marker in sim.log(), 10, "marker in log")
        time.sleep(0.5)
        check(p.poll() is None, "bench did not hang")
        check_eq(sim.http("GET", "/health")[0], 200, "health")
        sim.stop()
        out = p.communicate(timeout=20)[0].decode()
        check_eq(p.returncode, 0, "bench exit:\n" + out)
        with open(sim.path("logs", "benchmark.json")) as f:
            res = json.load(f)
        check(res["completed"] < res["num_prompts"], str(res))
    finally:
        sim.close()



# ----------------------------------------------------------------- strict

def test_no_logs_folder():
    """ATOM's scripts write /app/logs_claude and never make it
    (start_atom_server.sh:20,81; run_benchmark.sh:24,75): without the
    folder the start script stops at its tee under set -euo pipefail
    before any server starts, and the bench at its log header."""
    sim = Sim(logs=False)
    try:
        r = sim.run("start_atom_server.sh", sim.model, 1, sim.port)
        check_eq(r.returncode, 1, r.stdout)
        check("atom_server.log: No such file or directory" in r.stdout,
              r.stdout)
        check(not os.path.exists(sim.path("logs")), "a logs folder made")
        check_eq(sim.calls("atom_sim_server"), [], "a server started")
        sim.server("--torch-profiler-dir", sim.trace_dir)
        shutil.rmtree(sim.path("logs"))
        r = sim.bench(1, 1, 0)
        check_eq(r.returncode, 1, r.stdout)
        check("benchmark.log: No such file or directory" in r.stdout,
              r.stdout)
        check_eq(sim.calls("benchmark_serving"), [], "a bench started")
    finally:
        sim.close()


def test_tokenizer_and_chat_template():
    """ATOM's bench loads the model's tokenizer and, with
    --use-chat-template, applies its encoder or template
    (benchmark_serving.py:1140-1160, chat_encoders.py): no tokenizer, no
    template, several encoders and no template all crash it, exit 1."""
    sim = Sim()
    try:
        sim.start()
        bare = sim.path("data", "No-Tokenizer")
        os.makedirs(bare)
        r = sim.run("run_benchmark.sh", bare, sim.port, 8, 4, 1, 1, 0)
        check_eq(r.returncode, 1, r.stdout)
        check("OSError: Can't load tokenizer for '%s'" % bare in r.stdout,
              r.stdout[-1500:])
        r = sim.bench(1, 1, 0, "--use-chat-template")
        check_eq(r.returncode, 1, r.stdout)
        check("ValueError: Cannot use chat template functions because "
              "tokenizer.chat_template is not set" in r.stdout,
              r.stdout[-1500:])
        enc = os.path.join(sim.model, "encoding")
        os.makedirs(enc)
        for name in ("encoding_a.py", "encoding_b.py"):
            open(os.path.join(enc, name), "w").close()
        r = sim.bench(1, 1, 0, "--use-chat-template")
        check_eq(r.returncode, 1, r.stdout)
        check("Multiple encoding_*.py found in %s, refusing to guess: "
              "['encoding_a.py', 'encoding_b.py']" % enc in r.stdout,
              r.stdout[-1500:])
        with open(os.path.join(sim.model, "chat_template.jinja"), "w") as f:
            f.write("{{ messages }}")
        check_eq(sim.bench(1, 1, 0, "--use-chat-template").returncode, 0,
                 "the tokenizer's template")
        os.unlink(os.path.join(sim.model, "chat_template.jinja"))
        os.unlink(os.path.join(enc, "encoding_b.py"))
        check_eq(sim.bench(1, 1, 0, "--use-chat-template").returncode, 0,
                 "one encoder")
    finally:
        sim.close()


def test_max_num_seqs_queues():
    """--max-num-seqs bounds a step's batch: beyond it requests queue, and
    the run labels say so (bs at most 2 with 6 requests in flight)."""
    sim = Sim()
    try:
        sim.start("--max-num-seqs", "2")
        r = sim.bench(6, 1, 1)
        check_eq(r.returncode, 0, r.stdout)
        wait_for(lambda: rank_done(os.path.join(sim.trace_dir, "rank_0")),
                 20, "export")
        labels = check_rank_trace(os.path.join(sim.trace_dir, "rank_0"), 0)
        sizes = [int(re.match(r"\w+\[bs=(\d+)", n).group(1)) for n in labels]
        check(max(sizes) <= 2, "batch sizes %s" % sizes)
        check(sum(n.startswith("prefill[") for n in labels) >= 3, labels)
    finally:
        sim.close()


def test_stop_failed_and_partial_run():
    """profiler_stop_failed=R: kineto raises in rank R's exit, ATOM logs
    it and the stop's end, no file; fail_request=N: that request's 500,
    the bench exits 0 with completed short (ATOM's bench)."""
    sim = Sim()
    try:
        sim.start(tp=2)
        sim.faults("profiler_stop_failed=1")
        check_eq(sim.bench(2, 1, 1).returncode, 0, "bench")
        wait_for(lambda: rank_done(os.path.join(sim.trace_dir, "rank_0")),
                 20, "rank 0's export")
        log = sim.log()
        check("Rank 1: profiler stop failed" in log and
              "Rank 1: profiler stop completed in" in log, log[-3000:])
        check_eq(rank_files(os.path.join(sim.trace_dir, "rank_1")),
                 ([], []), "rank 1's files")
        # The run before sent requests 1-6: 7-10 are warm-ups, 11-12 prompts.
        sim.faults("fail_request=12")
        r = sim.bench(2, 1, 0)
        check_eq(r.returncode, 0, r.stdout)
        with open(sim.path("logs", "benchmark.json")) as f:
            res = json.load(f)
        check_eq((res["completed"], res["num_prompts"]), (1, 2), "result")
        check("RuntimeError: simulated failure of completion request 12" in
              sim.log(), sim.log()[-2000:])
    finally:
        sim.close()


def test_slow_compile_and_export():
    """SIM_COMPILE_S: the port stays closed while the log grows a line a
    second; slow_export: the .json grows while it is written."""
    sim = Sim(SIM_COMPILE_S="3", SIM_COMPILE_LOG_S="0.5")
    try:
        p = sim.spawn("start_atom_server.sh", sim.model, 1, sim.port,
                      "--torch-profiler-dir", sim.trace_dir)
        wait_for(lambda: "Compiling the model" in sim.log(), 20, "compile")
        check(sim.models_fail(), "answered while compiling")
        p.wait(timeout=60)
        check(sim.log().count("Compiling the model") >= 4, sim.log()[-2000:])
        sim.faults("slow_export=3")
        sim.http("POST", "/start_profile")
        later = sim.later("POST", "/stop_profile")
        folder = os.path.join(sim.trace_dir, "rank_0")
        sizes = []

        def grown():
            names = [n for n in os.listdir(folder) if n.endswith(".json")]
            if names:
                size = os.path.getsize(os.path.join(folder, names[0]))
                if not sizes or size > sizes[-1]:
                    sizes.append(size)
            return len(sizes) >= 3
        wait_for(grown, 20, "a growing .json", every=0.1)
        later.join()
    finally:
        sim.close()


def test_fake_eplb():
    """--fake-eplb with fewer devices than -tp: only tp_world_size workers
    run and export (atom/config.py:1543); /server_info keeps the logical
    TP."""
    sim = Sim(SIM_GPUS="2")
    try:
        sim.server("-tp", "4", "--fake-eplb", "--torch-profiler-dir",
                   sim.trace_dir)
        check_eq(sorted(os.listdir(sim.trace_dir)), ["rank_0", "rank_1"],
                 "rank folders")
        check_eq(sim.http("GET", "/server_info")[1]["tp_size"], 4, "tp_size")
        check_eq(sim.vram_gpus(), [0, 1], "GPUs")
    finally:
        sim.close()


def test_foreign_gpu_holder():
    """Someone else's process holding GPU memory, in rocm-smi's table with
    its name; and one of another PID namespace (foreign_gpu_pid=N)."""
    sim = Sim()
    job = subprocess.Popen(["sleep", "60"])
    try:
        os.makedirs(sim.path("gpu"))
        with open(sim.path("gpu", str(job.pid)), "w") as f:
            json.dump({"pid": job.pid, "gpus": [0], "percent": 20,
                       "foreign": True}, f)
        sim.faults("foreign_gpu_pid=4194000")
        out = subprocess.run([ROCM_SMI, "--showpids"], env=sim.env,
                             stdout=subprocess.PIPE, text=True).stdout
        check(re.search(r"^%d\tsleep\t1\t" % job.pid, out, re.M), out)
        check(re.search(r"^4194000\tunknown\t", out, re.M), out)
        check_eq(sim.vram_gpus(), [0], "VRAM held")
    finally:
        job.kill()
        job.wait()
        sim.close()


def test_container_mode():
    """SIM_CONTAINER=1: rocm-smi lists PIDs that are not in /proc (the
    host's), the server holds the KFD stand-in open exactly while it holds
    VRAM, and the stop script exits 1 when memory held from outside stays
    in use after its force kill (stop_atom_server.sh:82-86), as ATOM's
    does in a container without --pid=host."""
    sim = Sim(SIM_CONTAINER="1")
    kfd = sim.path("kfd")
    open(kfd, "w").close()
    sim.env["SIM_KFD"] = kfd
    try:
        sim.start(tp=2)
        pid = proc_servers(sim.home)[0]
        fds = [os.readlink("/proc/%d/fd/%s" % (pid, f))
               for f in os.listdir("/proc/%d/fd" % pid)]
        check(os.path.realpath(kfd) in fds, "KFD not held: %s" % fds)
        out = subprocess.run([ROCM_SMI, "--showpids"], env=sim.env,
                             stdout=subprocess.PIPE, text=True).stdout
        rows = [int(x) for x in re.findall(r"^(\d+)\t", out, re.M)]
        check(rows and all(not os.path.exists("/proc/%d" % r) for r in rows)
              and pid not in rows, "host PIDs: %s" % out)
        with open(sim.path("faults"), "w") as f:
            f.write("host_gpu_pid=%d:7:5\n" % rows[0])
        r = sim.run("stop_atom_server.sh")
        check_eq(r.returncode, 1, "stop exit:\n" + r.stdout)
        check("GPU memory still held after force-kill" in r.stdout, r.stdout)
        check_eq(sim.vram_gpus(), [7], "VRAM held from outside")
    finally:
        sim.close()


def test_memory_held_outside():
    """Memory other processes hold on a GPU of the launch comes out of the
    server's budget (model_runner.py:1591-1611): with less free than
    --gpu-memory-utilization asks, the load fails with ATOM's
    RuntimeError."""
    sim = Sim()
    try:
        sim.faults("host_gpu_pid=4194000:1:20")
        sim.start(tp=2, expect=1)
        check("RuntimeError: Per-request cache tensor exceeds available KV "
              "budget" in sim.log() and "on GPU 1" in sim.log(),
              sim.log()[-800:])
        sim.start("--gpu-memory-utilization", "0.8", tp=2)
        sim.faults("")
        sim.stop()
    finally:
        sim.close()


def test_v4_level_and_draft_hub_id():
    """A DeepSeek-V4 checkpoint (config.json) under ATOM's default level 3
    dies of the cluster_dims bug in its warm-up compile (the seed's
    skill); at --level 0 it serves. A --draft-model that is a Hugging Face
    id cannot be downloaded offline: OSError, exit 1."""
    sim = Sim()
    try:
        with open(os.path.join(sim.model, "config.json"), "w") as f:
            json.dump({"architectures": ["DeepseekV4ForCausalLM"]}, f)
        sim.start(tp=2, expect=1)
        check("torch._inductor.exc.InductorError: AttributeError: "
              "'KernelMetadata' object has no attribute 'cluster_dims'" in
              sim.log(), sim.log()[-800:])
        sim.start("--level", "0", tp=2)
        sim.stop()
        sim.start("--method", "eagle3", "--draft-model", "Inferact/Nope",
                  tp=1, expect=1)
        check("OSError: We couldn't connect to 'https://huggingface.co'" in
              sim.log() and "Inferact/Nope" in sim.log(), sim.log()[-800:])
    finally:
        sim.close()


def test_export_hang():
    """export_hang=R: rank R writes its .json and then nothing more, no
    line, no .gz, while the other ranks export."""
    sim = Sim()
    try:
        sim.profiling(2, "export_hang=1")
        status, _ = sim.http("POST", "/stop_profile", timeout=30)
        check_eq(status, 200, "rank 0 answered")
        time.sleep(1.5)
        gz, js = rank_files(os.path.join(sim.trace_dir, "rank_1"))
        check_eq((len(gz), len(js)), (0, 1), "rank 1's files")
        check("Rank 1: stopping profiler" in sim.log() and
              "Rank 1: profiler stop completed" not in sim.log(),
              sim.log()[-800:])
        check(rank_done(os.path.join(sim.trace_dir, "rank_0")), "rank 0")
    finally:
        sim.close()


def test_scripts_python_and_pkill():
    """The scripts run the bare `python` of PATH, as ATOM's: without the
    stand-in for ATOM's /opt/venv/bin the server cannot import its module
    and the start script reports its death. The stop script pkills ATOM's
    patterns over this home's processes: an lm_eval of this home goes, one
    of another home stays."""
    sim = Sim()
    other = tempfile.mkdtemp(prefix="other-home-")
    plant = ["bash", "-c", 'exec -a "$0" sleep 60', "lm_eval --tasks x"]
    try:
        path = os.pathsep.join(d for d in sim.env["PATH"].split(os.pathsep)
                               if d != SIM_VENV_BIN)
        r = sim.start(env={"PATH": path, "SIM_PYTHON": "python3"}, expect=1)
        check("ERROR: Server process died" in r.stdout, r.stdout)
        check("No module named 'atom'" in sim.log(), sim.log()[-500:])
        mine = sim.spawn_cmd(plant)
        theirs = sim.spawn_cmd(plant, env={"ATOM_SIM_HOME": other})
        wait_for(lambda: b"lm_eval" in open("/proc/%d/cmdline" % mine.pid,
                                            "rb").read(), 10, "plant")
        r = sim.run("stop_atom_server.sh")
        check_eq(r.returncode, 0, r.stdout)
        check("Sending SIGTERM to ATOM processes" in r.stdout, r.stdout)
        wait_for(lambda: mine.poll() is not None, 10, "this home's lm_eval")
        check(theirs.poll() is None, "another home's lm_eval was killed")
    finally:
        sim.close()
        shutil.rmtree(other, ignore_errors=True)


def test_chat_backend_cannot_profile():
    """ATOM's openai-chat request function asserts a chat/completions URL
    (backend_request_func.py:338-341): with --profile the bench crashes at
    /start_profile, after its warm-ups."""
    sim = Sim()
    try:
        sim.start(tp=1)
        r = sim.bench(1, 1, 1, "--backend", "openai-chat", "--endpoint",
                      "/v1/chat/completions")
        check(r.returncode != 0, r.stdout)
        check(r.stdout.find("Warmup completed.") <
              r.stdout.find("AssertionError: OpenAI Chat Completions API URL "
                            "must end with 'chat/completions'."), r.stdout)
        sim.stop()
    finally:
        sim.close()


def test_run_labels():
    """The exported traces carry ATOM's run labels of the profiled steps:
    prefill and decode, MTP drafts (ffdf3bb5's draft[...], the newer
    propose_eagle[...] with SIM_LABELS=seed), a DP rank's dummies; ctx
    lists and padded graphs formatted as run_labels.py does."""
    sys.path.insert(0, os.path.join(SRC_DIR, "sim"))
    import sim_labels
    check_eq(sim_labels.ctx_text(list(range(1, 9))), "[1, 2, 3]...+5",
             "ctx beyond five")
    check_eq(sim_labels.ctx_text([7]), "7", "one ctx")

    class Args:
        cudagraph_capture_sizes = "[1,2,4,8]"
        enforce_eager = False
        method = None
        num_speculative_tokens = 1
    step = sim_labels.Step("decode", [10, 11, 12])
    check_eq(sim_labels.forward_label(step, Args), "decode[bs=3/4 tok=3 d=3]",
             "padded decode")
    step = sim_labels.Step("prefill", [5] * 6)
    check_eq(sim_labels.forward_label(step, Args),
             "prefill[bs=6 tok=30 ctx=[5, 5, 5]...+3]", "prefill")
    for argv, env, want in (
            (["--method", "mtp", "--num-speculative-tokens", "2"], {},
             "draft[1/2 bs=1]"),
            (["--method", "mtp", "--num-speculative-tokens", "2"],
             {"SIM_LABELS": "seed"}, "propose_eagle[1/2 tok=1 bs=1/1 graph]"),
            (["-dp", "2"], {}, "dummy_decode[bs=1 tok=1 d=1]")):
        sim = Sim(**env)
        try:
            sim.start(*argv)
            check_eq(sim.bench(1, 1, 1).returncode, 0, "bench")
            folders = sorted(os.listdir(sim.trace_dir))
            wait_for(lambda: all(rank_done(os.path.join(sim.trace_dir, f))
                                 for f in folders), 20, "exports")
            labels = [n for f in folders for n in
                      exported_labels(os.path.join(sim.trace_dir, f))]
            check(any(n.startswith("prefill[bs=1 ") for n in labels), labels)
            check(any(n.startswith("decode[bs=1 ") for n in labels), labels)
            check(want in labels, "%s not in %s" % (want, labels))
        finally:
            sim.close()


def test_time_scale():
    """SIM_TIME_SCALE: ATOM's seconds pass that many times faster and
    nothing else changes. At 10, the start script's pre-flight of 5 s
    (ATOM's 2 s + 3 s), a load of 4 s and a compile of 3 s take a tenth
    as long, and the script says what it says at 1 with a tenth of each
    (stamps and pids aside), the compile's progress in ATOM's seconds;
    rank 0's export held 8 s keeps /stop_profile and the whole server
    silent for a tenth of it, and the server logs ATOM's seconds; the
    scripts' pauses (sim_sleep) are ATOM's seconds too."""
    said = {}
    for scale, div in (("1", 10), ("10", 1)):
        sim = Sim()
        try:
            knobs = {"SIM_TIME_SCALE": scale, "SIM_PREFLIGHT_S": 5 / div,
                     "SIM_LOAD_S": 4 / div, "SIM_COMPILE_S": 3 / div,
                     "SIM_POLL_S": 1 / div, "SIM_LAUNCH_CAP_S": 120 / div}
            sim.env.update({k: str(v) for k, v in knobs.items()})
            r = sim.start()
            said[scale] = re.sub(r"(Date: +|PID: )[^)\n]*", r"\1", r.stdout
                                 ).replace(sim.home, "HOME").replace(
                                     str(sim.port), "PORT")
            if scale == "1":
                continue
            check("of 3 s, level" in sim.log(), sim.log()[-2000:])
            sim.faults("slow_export_rank=0:8")
            check_eq(sim.http("POST", "/start_profile")[0], 200, "start")
            later = sim.later("POST", "/stop_profile")
            time.sleep(0.2)
            check(sim.silent(seconds=0.3), "answered while exporting")
            later.join()
            code, _, held = later.result
            # Unscaled it would hold 8 s: a bound no load reaches.
            check(code == 200 and 0.8 <= held < 8, "held %.1f s" % held)
            # ATOM's seconds: the 8 s and the real work's time, ten-fold.
            m = re.search(r"Rank 0: profiler stop completed in ([\d.]+)s",
                          sim.log())
            check(m and float(m.group(1)) >= 8, sim.log()[-2000:])
            sim.stop()
        finally:
            sim.close()
    check_eq(said["10"], said["1"], "the start script's output")
    # The scripts' pauses: 60 s of ATOM's at 100 (unscaled, a minute).
    r, took = timed(lambda: (subprocess.run(
        ["bash", "-c", "source %s/simlib.sh && sim_sleep 60" % SCRIPTS],
        env=dict(os.environ, SIM_TIME_SCALE="100"), timeout=30),))
    check(r.returncode == 0 and took < 30, "sim_sleep 60: %.1f s" % took)
def forward_records(path, window):
    """The device records (kernels, copies, memsets) of a real trace's
    forward pass, in start order, as (name, us): those launched by the
    runtime calls of window(events)'s thread inside it. Read here, apart
    from the sim."""
    with gzip.open(path) as f:
        evs = json.load(f)["traceEvents"]
    w = window(evs)
    corr = {e["args"]["correlation"] for e in evs
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and
            e["tid"] == w["tid"] and w["ts"] <= e["ts"] <= w["ts"] + w["dur"]}
    recs = sorted((e for e in evs if e.get("cat") in (
        "kernel", "gpu_memcpy", "gpu_memset") and
        e["args"].get("correlation") in corr), key=lambda e: e["ts"])
    return [(e["name"], e["dur"]) for e in recs]


def composed_steps(folder):
    """[(label, [device record names in start order], their time, label
    duration)] of a composed rank's trace, by its GPU-side labels."""
    gz, _ = rank_files(folder)
    with gzip.open(os.path.join(folder, gz[0])) as f:
        doc = json.load(f)
    evs = doc["traceEvents"]
    labels = sorted((e for e in evs if e.get("cat") == "gpu_user_annotation"),
                    key=lambda e: e["ts"])
    recs = sorted((e for e in evs if e.get("cat") in (
        "kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
    out = []
    for lab in labels:
        inside = [e for e in recs
                  if lab["ts"] <= e["ts"] < lab["ts"] + lab["dur"]]
        out.append((lab["name"], [e["name"] for e in inside],
                    sum(e["dur"] for e in inside), lab["dur"]))
    check_eq(sum(len(s[1]) for s in out), len(recs),
             "%s: records outside the labels" % folder)
    return doc, out


def test_composed_ranks():
    """Without SIM_TRACE_FILE each step is a copy of the real vLLM
    forward (its graph replay), prefill and decode alike, in its order:
    one vendor's kernels on a device named as that vendor's (no NVIDIA
    kernel on the MI300X); two TP ranks run the same steps and records,
    differing by a little noise; decode steps vary in length, and so do
    prefill steps, growing with their prompts' tokens; no python_function
    without ATOM_PROFILER_MORE."""
    forward = forward_records(VLLM, lambda evs: next(
        e for e in evs if str(e.get("name")).startswith("execute_")))
    names = [n for n, _ in forward]
    check_eq(len(names), 434, "the forward's records")
    check(not any(NVIDIA_ONLY.search(n) for n in names), "NVIDIA kernels")
    sim = Sim(SIM_TRACE_FILE="", SIM_MAX_TOKENS="64")
    try:
        sim.start(tp=2)
        # ISL 512 at a random range ratio of 0.25 (ATOM's script's
        # default is 0.8): prompts of 128 to 512 tokens.
        sim.env["RANDOM_RANGE_RATIO"] = "0.25"
        r = sim.run("run_benchmark.sh", sim.model, sim.port, 512, 16, 4, 2,
                    1)
        check_eq(r.returncode, 0, r.stdout)
        folders = [os.path.join(sim.trace_dir, "rank_%d" % i)
                   for i in range(2)]
        wait_for(lambda: all(rank_done(f) for f in folders), 60, "exports")
        (doc0, r0), (doc1, r1) = [composed_steps(f) for f in folders]
    finally:
        sim.close()
    check_eq(doc0["distributedInfo"]["world_size"], 2, "world size")
    for doc in (doc0, doc1):
        check_eq({d["name"] for d in doc["deviceProperties"]},
                 {"AMD Instinct MI300X"}, "the ranks' devices")
    check(not any(e.get("cat") == "python_function"
                  for e in doc0["traceEvents"]), "python_function events")
    check_eq([s[0] for s in r0], [s[0] for s in r1], "the ranks' labels")
    kinds = [s[0].split("[")[0] for s in r0]
    check(kinds.count("decode") >= 8 and kinds.count("prefill") >= 2, kinds)
    for (label, got, busy, _), (_, got1, busy1, _) in zip(r0, r1):
        check(got == names and got1 == names,
              "%s: its records are not the real forward's" % label)
        check(0.9 < busy1 / busy < 1.1 and busy1 != busy,
              "%s: rank 1's %s us against rank 0's %s" % (label, busy1,
                                                          busy))
    steps = [s[3] for s in r0 if s[0].startswith("decode[")]
    check(len(set(steps)) == len(steps), "decode steps of one length")
    for label, _, busy, _ in r0:
        want = expected_us(label, forward)
        check(0.9 < busy / want < 1.1, "%s: %.0f us, %.0f expected" % (
            label, busy, want))
    # Prefills of different prompts last differently, the longer ones
    # with more tokens: of any two whose tokens differ by a fifth or more
    # (well above the ranks' noise), the larger lasts longer.
    pre = sorted((label_work(s[0])[0], s[3]) for s in r0
                 if s[0].startswith("prefill["))
    check(len({d for _, d in pre}) == len(pre), "prefills of one length")
    pairs = [(a, b) for i, a in enumerate(pre) for b in pre[i + 1:]
             if b[0] >= 1.2 * a[0]]
    check(pairs and all(b[1] > a[1] for a, b in pairs),
          "prefill (tokens, us): %s" % pre)
    print("prefills (tokens, us): %s" % pre)


def label_work(label):
    """(tokens, query-key pairs) of a composed step by its run label: a
    prefill's tok and, each prompt scoring the ones before it, the sum of
    c(c+1)/2 over its contexts (ctx=[...] lists up to five: the test's
    prefills have four); a decode's sequences and None (its label lists
    no contexts)."""
    tok = int(re.search(r"tok=(\d+)", label).group(1))
    ctx = [int(c) for c in re.search(r"ctx=\[([\d, ]*)\]", label).group(
        1).split(",")] if "ctx=[" in label else []
    if label.startswith("prefill["):
        return tok, sum(c * (c + 1) // 2 for c in ctx)
    return tok, None


def expected_us(label, forward):
    """A step's busy time as sim/README.md states it: each record of the
    forward (32 sequences, 55,086 context tokens) scaled by the step's
    work, attention by its query-key pairs, the rest 0.7 + 0.3 x tokens
    / 32, never below 2 us. Decode labels do not list their contexts:
    their attention is taken at its floor (a few hundred context tokens
    against 55,086: under 0.2% of the step)."""
    tok, pairs = label_work(label)
    out = 0.0
    for name, dur in forward:
        base = min(dur, 2.0)
        if re.search(r"attention|attn|reshape_and_cache|kv_?cache", name,
                     re.I):
            ratio = pairs / 55086 if pairs is not None else 0.0
        else:
            ratio = 0.7 + 0.3 * tok / 32
        out += base + (dur - base) * ratio
    return out


GROUPS = {
    "scripts": [test_capture_profile, test_warmups_and_bench_options,
                test_argv_like_atoms_parser, test_extra_args_split_and_globbed,
                test_engine_checks_exit_1, test_rocm_smi,
                test_die_on_start_and_never_ready,
                test_fatal_marker_and_old_marker,
                test_stop_escalates_and_isolates],
    "server": [test_routes, test_stop_profile_blocks_the_server,
               test_other_ranks_hold_the_next_step, test_profiler_timeout,
               test_sigterm_waits_for_the_loop,
               test_stop_script_while_exporting, test_layouts],
    "faults": [test_export_faults, test_worker_death_during_export,
               test_start_profile_500, test_die_during_bench,
               test_fatal_marker_during_bench],
    "strict": [test_no_logs_folder, test_tokenizer_and_chat_template,
               test_max_num_seqs_queues, test_stop_failed_and_partial_run,
               test_slow_compile_and_export, test_fake_eplb,
               test_foreign_gpu_holder, test_run_labels],
    "container": [test_container_mode, test_memory_held_outside,
                  test_v4_level_and_draft_hub_id, test_export_hang,
                  test_chat_backend_cannot_profile],
    "pkill": [test_scripts_python_and_pkill],
    "composed": [test_composed_ranks],
    "clock": [test_time_scale],
}


def main(argv):
    names = argv or list(GROUPS)
    failed = 0
    for case in [c for n in names for c in GROUPS[n]]:
        t0 = time.time()
        try:
            case()
            print("PASS %s (%.1fs)" % (case.__name__, time.time() - t0))
        except Exception:  # report every case, then fail the run
            failed += 1
            print("FAIL %s\n%s" % (case.__name__, traceback.format_exc()))
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
