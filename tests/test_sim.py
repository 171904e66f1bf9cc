"""The ATOM simulator (sim/) against ATOM's contract (docs/ATOM.md): real
scripts, real server processes on free ports, a private ATOM_SIM_HOME per
case. Every case stops its servers and checks, by its own scan of /proc,
that no server of its home is left. Standard library only."""
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import SRC_DIR, TRACES_DIR, check, check_eq, free_port  # noqa

SCRIPTS = os.path.join(SRC_DIR, "sim", "scripts")
MI250 = os.path.join(TRACES_DIR, "hta__mi250_minitoy_train_ROCm6_2_kineto"
                     ".json.gz")
VLLM = os.path.join(TRACES_DIR, "tracelens__vllm_decode_full_graph_execution"
                    ".json.gz")   # small, and has a distributedInfo
DEFAULT_ROTATION = [os.path.join(TRACES_DIR, n) for n in (
    "tracelens__mi300_resnet_act_checkpoint.json.gz",
    "tracelens__mi210_gpu_only_trace.json.gz",
    "tracelens__torch_compile_triton_trace.json.gz",
    "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz")]
MODEL = "/data/My Model:v4.1-x"        # a space and a colon to sanitise
STEM = "My_Model_v4.1-x"
NAME_RE = re.compile(r"^%s_ts_\d{8}_\d{6}_\d{3}\.pt\.trace\.json\.gz$"
                     % re.escape(STEM))


def proc_servers(home):
    """Live (non-zombie) sim servers whose environment has this home: an
    independent re-implementation of what the stop script must find."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/status" % d) as f:
                zombie = "\nState:\tZ" in f.read()
            if len(argv) < 2 or zombie or not argv[1].endswith(
                    b"atom_sim_server.py"):
                continue
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if b"ATOM_SIM_HOME=" + home.encode() in env:
            out.append(int(d))
    return out


class Sim:
    """A private home and port; run() a script and wait, spawn() one in
    the background. close() kills whatever is left (servers of this home,
    spawned scripts) and removes the home."""

    def __init__(self, **env):
        self.home = tempfile.mkdtemp(prefix="atom-sim-test-")
        self.port = free_port()
        self.trace_dir = os.path.join(self.home, "traces")
        self.env = dict(os.environ)
        for k in [k for k in self.env if k.startswith(("SIM_", "ATOM_"))]:
            del self.env[k]
        self.env.update({"ATOM_SIM_HOME": self.home, "SIM_LOAD_S": "0.3",
                         "SIM_POLL_S": "0.1", "SIM_EXPORT_DELAY_S": "0.5",
                         "SIM_TRACES_DIR": TRACES_DIR})
        self.env.update(env)
        self.spawned = []

    def path(self, *parts):
        return os.path.join(self.home, *parts)

    def cmd(self, script, args):
        return ["bash", os.path.join(SCRIPTS, script)] + [str(a)
                                                           for a in args]

    def run(self, script, *args, env=None, timeout=30):
        e = dict(self.env, **(env or {}))
        return subprocess.run(self.cmd(script, args), env=e, timeout=timeout,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)

    def spawn(self, script, *args, env=None):
        p = subprocess.Popen(self.cmd(script, args),
                             env=dict(self.env, **(env or {})),
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        self.spawned.append(p)
        return p

    def start(self, *extra, tp=1, env=None, expect=0):
        r = self.run("start_atom_server.sh", MODEL, tp, self.port,
                     "--torch-profiler-dir", self.trace_dir, *extra, env=env)
        check_eq(r.returncode, expect, "start exit:\n" + r.stdout)
        return r

    def bench(self, conc, mult, profile, *extra, timeout=30):
        return self.run("run_benchmark.sh", MODEL, self.port, 8, 8, conc,
                        mult, profile, *extra, timeout=timeout)

    def faults(self, *lines):
        with open(self.path("faults"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def log(self, name="atom_server.log"):
        with open(self.path("logs", name), errors="replace") as f:
            return f.read()

    def calls(self, script):
        with open(self.path("calls.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        return [r for r in rows if r["script"] == script]

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

    def models_fail(self):
        try:
            self.http("GET", "/v1/models", timeout=2)
        except OSError:
            return True
        return False

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
            p.stdout.close()
        for pid in proc_servers(self.home):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.home, ignore_errors=True)


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def rank_files(trace_dir, rank):
    d = os.path.join(trace_dir, "rank_%d" % rank)
    if not os.path.isdir(d):
        return None
    names = os.listdir(d)
    return ([n for n in names if n.endswith(".pt.trace.json.gz")],
            [n for n in names if n.endswith(".pt.trace.json")])


def rank_done(trace_dir, rank):
    f = rank_files(trace_dir, rank)
    return f is not None and len(f[0]) == 1 and not f[1]


def expected_doc(source, rank):
    """The source trace as parsed JSON with distributedInfo.rank = rank."""
    with gzip.open(source) as f:
        doc = json.load(f)
    info = dict(doc.get("distributedInfo") or {})
    info["rank"] = rank
    doc["distributedInfo"] = info
    return doc


def test_capture_profile():
    """start -> ready; bench PROFILE 1 with TP 2: warm-ups, profiler
    window, one .gz per rank after a visible .json stage, content equal to
    the source traces but for the rank; argv recorded; ATOM defaults."""
    sim = Sim()
    try:
        r = sim.start("--level", "0", tp=2, env={"ATOM_PROFILER_MORE": "0",
                                                 "AITER_X": "1"})
        check("Server is ready!" in r.stdout, r.stdout)
        pid = int(open(sim.path("server.pid")).read())
        check_eq(proc_servers(sim.home), [pid], "server pid")
        w = sim.run("wait_server_ready.sh", sim.port, 1, 1)
        check_eq(w.returncode, 0, w.stdout)
        check("Server READY" in w.stdout, w.stdout)
        code, models = sim.http("GET", "/v1/models")
        check_eq(models["data"][0]["id"], MODEL, "model id")

        p = sim.spawn("run_benchmark.sh", MODEL, sim.port, 8, 8, 2, 1, 1)
        seen_json = set()

        def exported():
            for rank in (0, 1):
                f = rank_files(sim.trace_dir, rank)
                if f and f[1]:
                    seen_json.add(rank)
            return all(rank_done(sim.trace_dir, r) for r in (0, 1))
        wait_for(exported, 20, "both ranks exported")
        out = p.communicate(timeout=20)[0]
        check_eq(p.returncode, 0, "bench exit:\n" + out)
        check_eq(seen_json, {0, 1}, "ranks seen with a .json before .gz")
        check_rank_traces(sim.trace_dir, 2, DEFAULT_ROTATION)
        check_bench_order(sim, conc=2, mult=1)
        check_calls(sim, pid)
        check_defaults(sim)
    finally:
        sim.close()


def check_rank_traces(trace_dir, tp, sources):
    for rank in range(tp):
        gz, js = rank_files(trace_dir, rank)
        check_eq(js, [], "rank %d .json left" % rank)
        check_eq(len(gz), 1, "rank %d .gz count" % rank)
        check(NAME_RE.match(gz[0]), "name " + gz[0])
        with gzip.open(os.path.join(trace_dir, "rank_%d" % rank,
                                    gz[0])) as f:
            doc = json.load(f)
        want = expected_doc(sources[rank % len(sources)], rank)
        check(doc == want, "rank %d content differs from its source" % rank)


def check_bench_order(sim, conc, mult):
    """Warm-ups (CONC*2) before /start_profile, CONC*mult prompts inside
    the window, then /stop_profile; the JSON's figures agree."""
    log = sim.log()
    start = log.index('"POST /start_profile HTTP/1.1" 200')
    stop = log.index('"POST /stop_profile HTTP/1.1" 200')
    check(start < stop, "start before stop")
    done = '"POST /v1/completions HTTP/1.1" 200'
    check_eq(log[:start].count(done), conc * 2, "warm-ups")
    check_eq(log[start:stop].count(done), conc * mult, "profiled prompts")
    with open(sim.path("logs", "benchmark.json")) as f:
        res = json.load(f)
    check_eq(res["completed"], conc * mult, "completed")
    check_eq(res["num_prompts"], conc * mult, "num_prompts")
    check_eq(res["max_concurrency"], conc, "max_concurrency")
    for key in ("request_throughput", "output_throughput", "mean_ttft_ms",
                "mean_tpot_ms", "mean_itl_ms", "p99_itl_ms", "duration"):
        check(isinstance(res[key], float) and res[key] > 0, key)
    check_eq(res["total_output_tokens"], conc * mult * 8, "output tokens")
    check_eq(round(res["output_throughput"] * res["duration"]),
             res["total_output_tokens"], "throughput x duration")
    bl = sim.log("benchmark.log")
    check("Profiler started" in bl and "Profiler stopped" in bl, bl)


def check_calls(sim, pid):
    start = sim.calls("start_atom_server.sh")[-1]
    check_eq(start["argv"], [MODEL, "2", str(sim.port),
                             "--torch-profiler-dir", sim.trace_dir,
                             "--level", "0"], "start argv")
    server = [c for c in sim.calls("atom_sim_server") if c["pid"] == pid]
    check_eq(len(server), 1, "server record")
    argv = server[0]["argv"]
    check_eq(argv[argv.index("-tp") + 1], "2", "server -tp")
    check_eq(argv[argv.index("--server-port") + 1], str(sim.port), "port")
    check_eq(argv[argv.index("--torch-profiler-dir") + 1], sim.trace_dir,
             "server profiler dir")
    check_eq(server[0]["env"].get("ATOM_PROFILER_MORE"), "0", "MORE env")
    check_eq(server[0]["env"].get("AITER_X"), "1", "AITER_ env")
    bench = sim.calls("run_benchmark.sh")[-1]
    check_eq(bench["argv"][5:7], ["1", "1"], "PROMPT_MULTIPLIER, PROFILE")
    client = sim.calls("benchmark_serving")[-1]["argv"]
    for a in ("--num-prompts=2", "--num-warmups=4", "--max-concurrency=2",
              "--profile"):
        check(a in client, "%s in %s" % (a, client))


def check_defaults(sim):
    """PROMPT_MULTIPLIER defaults to 10 and PROFILE to 0; the result JSON
    of the earlier run is replaced; 32 concurrent streams all succeed."""
    r = sim.run("run_benchmark.sh", MODEL, sim.port, 8, 8, 32)
    check_eq(r.returncode, 0, r.stdout)
    client = sim.calls("benchmark_serving")[-1]["argv"]
    check("--num-prompts=320" in client and "--profile" not in client,
          str(client))
    with open(sim.path("logs", "benchmark.json")) as f:
        check_eq(json.load(f)["completed"], 320, "default multiplier")


def test_profile_http_and_relaunch():
    """Daemon-style profiling: /stop_profile answers before any file
    exists; a relaunch kills the earlier server; ATOM_PROFILER_MORE=1 is
    seen by the server; 500 when the profiler is not running."""
    sim = Sim(SIM_TRACE_FILE=VLLM + ":" + MI250)
    try:
        sim.start(tp=1)
        old = proc_servers(sim.home)
        sim.start(tp=3, env={"ATOM_PROFILER_MORE": "1"})
        new = proc_servers(sim.home)
        check(len(new) == 1 and new[0] not in old, "relaunch %s %s"
              % (old, new))
        code, body = sim.http("POST", "/stop_profile", {})
        check_eq(code, 500, "stop without start")
        check("detail" in body, str(body))
        check_eq(sim.http("POST", "/start_profile", {}),
                 (200, {"status": "success", "message": "Profiling started"}),
                 "start_profile")
        code, body = sim.http("POST", "/stop_profile", {})
        check_eq(code, 200, "stop_profile")
        check_eq(body["message"], "Profiling stopped. Trace files generated.",
                 "message")
        check_eq(body["traces"], [os.path.join(sim.trace_dir, "rank_%d" % r)
                                  for r in range(3)], "traces")
        check(not os.path.exists(sim.trace_dir), "export was synchronous")
        wait_for(lambda: all(rank_done(sim.trace_dir, r) for r in range(3)),
                 10, "3 ranks exported")
        check_rank_traces(sim.trace_dir, 3, [VLLM, MI250])
        check("record_shapes=True" in sim.log(), "MORE=1 not seen")
        sim.stop()
        check(sim.models_fail(), "/v1/models answers after stop")
        again = sim.run("stop_atom_server.sh")
        check_eq(again.returncode, 0, "second stop")
    finally:
        sim.close()


def test_die_on_start():
    """Exit 1 with ATOM's message; a bench then finds no server."""
    sim = Sim(ATOM_SIM_FAULTS="die_on_start")
    try:
        r = sim.start(expect=1)
        check("ERROR: Server process died" in r.stdout, r.stdout)
        check_eq(proc_servers(sim.home), [], "dead server left")
        r = sim.run("run_benchmark.sh", MODEL, sim.port, 8, 8, 1, 1, 1,
                    env={"SIM_BENCH_WAIT_S": "0.3"})
        check_eq(r.returncode, 1, "bench without server:\n" + r.stdout)
        check("ERROR: Server not ready after 0.3s" in r.stdout, r.stdout)
    finally:
        sim.close()


def test_never_ready_falls_through():
    """The launcher's exit 0 after its cap is not readiness."""
    sim = Sim(ATOM_SIM_FAULTS="never_ready", SIM_LAUNCH_CAP_S="1")
    try:
        t0 = time.time()
        r = sim.start()
        check(time.time() - t0 >= 1.0, "cap not waited")
        check("Server is ready!" not in r.stdout, r.stdout)
        check(sim.models_fail(), "/v1/models answered")
        check_eq(len(proc_servers(sim.home)), 1, "server still loading")
        sim.stop()
    finally:
        sim.close()


def test_fatal_marker_and_old_marker():
    """A launch truncates the log: a marker of the previous run (and any
    bytes before the relaunch) never fails wait_server_ready; a marker of
    this launch does, while start falls through with exit 0."""
    sim = Sim(SIM_LAUNCH_CAP_S="1")
    try:
        os.makedirs(sim.path("logs"), exist_ok=True)
        old = "HSA_STATUS_ERROR old run\n" + "x" * 200000 + "\n"
        with open(sim.path("logs", "atom_server.log"), "w") as f:
            f.write(old)
        w = sim.spawn("wait_server_ready.sh", sim.port, 1, 1)
        time.sleep(0.5)  # its log snapshot first, as when it runs first
        sim.start()
        out = w.communicate(timeout=20)[0]
        check_eq(w.returncode, 0, "clean relaunch after old marker:\n" + out)
        check("log truncated" in out, out)
        check("old run" not in sim.log(), "old marker survived the launch")

        # Through the faults file: the launcher echoes ATOM_* variables
        # into the log header, so a marker in ATOM_SIM_FAULTS would be
        # found there rather than in the server's output.
        marker = "Memory access fault by GPU node-2 (Agent handle: 0x1)"
        sim.faults("fatal_marker=" + marker)
        w = sim.spawn("wait_server_ready.sh", sim.port, 1, 1)
        time.sleep(0.5)
        r = sim.start()
        check("Server is ready!" not in r.stdout, r.stdout)
        out = w.communicate(timeout=20)[0]
        check_eq(w.returncode, 1, "marker missed:\n" + out)
        check("Server FAILED to start" in out, out)
        check(marker in server_output(sim), "marker not logged")
        check(sim.models_fail(), "faulted server answers")
        sim.stop()
    finally:
        sim.close()


def server_output(sim):
    """The log after the launcher's config header."""
    log = sim.log()
    return log[log.index("Loading tokenizer from"):]


def test_start_profile_500():
    """Switch file re-read per step; as with ATOM the bench ignores the
    500 and exits 0, and no trace appears."""
    sim = Sim()
    try:
        sim.start()
        sim.faults("start_profile_500")
        code, body = sim.http("POST", "/start_profile", {})
        check_eq(code, 500, "status")
        check(body["detail"].startswith("Failed to start profiling"),
              str(body))
        r = sim.bench(1, 1, 1)
        check_eq(r.returncode, 0, r.stdout)
        check("Profiler started" not in r.stdout, r.stdout)
        time.sleep(1.0)
        check(not os.path.exists(sim.trace_dir), "traces appeared")
        sim.stop()
    finally:
        sim.close()


def test_export_faults():
    """orphan_json, truncated_gz, missing_rank, export_fail on ranks 1-4
    of one TP 5 capture, rank 0 intact; then slow_export."""
    sim = Sim(SIM_TRACE_FILE=MI250)
    try:
        sim.start(tp=5)
        sim.faults("orphan_json=1", "truncated_gz=2", "missing_rank=3",
                   "export_fail=4")
        check_eq(sim.bench(1, 1, 1).returncode, 0, "bench")
        wait_for(lambda: rank_done(sim.trace_dir, 0) and rank_done(
            sim.trace_dir, 2) and rank_files(sim.trace_dir, 4) == ([], []),
            10, "exports settled")
        time.sleep(0.5)
        check_rank_traces(sim.trace_dir, 1, [MI250])
        gz, js = rank_files(sim.trace_dir, 1)
        check(gz == [] and len(js) == 1, "orphan_json %s %s" % (gz, js))
        gz, js = rank_files(sim.trace_dir, 2)
        path = os.path.join(sim.trace_dir, "rank_2", gz[0])
        try:
            with gzip.open(path) as f:
                f.read()
            raise AssertionError("truncated .gz decompressed")
        except (EOFError, gzip.BadGzipFile):
            pass
        check(not os.path.exists(os.path.join(sim.trace_dir, "rank_3")),
              "missing rank has a folder")
        sim.faults("slow_export=1.5")
        sim.start(tp=1, env={"SIM_EXPORT_DELAY_S": "0.2"})
        shutil.rmtree(sim.trace_dir)
        sim.http("POST", "/start_profile", {})
        sim.http("POST", "/stop_profile", {})
        t0 = time.time()
        wait_for(lambda: rank_done(sim.trace_dir, 0), 10, "slow export")
        check(time.time() - t0 >= 1.5, "slow_export not slow")
        sim.stop()
    finally:
        sim.close()


def test_die_during_bench():
    """The server dies at the 6th completion (2nd profiled prompt): as
    ATOM's client, the bench exits 0 and writes the JSON with completed
    short; with strict_bench it exits nonzero and leaves the stale JSON
    alone."""
    sim = Sim(ATOM_SIM_FAULTS="die_during_bench=6")
    try:
        sim.start()
        os.makedirs(sim.path("logs"), exist_ok=True)
        stale = sim.path("logs", "benchmark.json")
        r = sim.bench(2, 2, 1)
        check_eq(r.returncode, 0, "ATOM-like bench:\n" + r.stdout)
        with open(stale) as f:
            res = json.load(f)
        check(res["completed"] < res["num_prompts"] == 4, str(res))
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
    """The marker lands in the log mid-bench and the bench hangs until the
    server is stopped; then, as ATOM's client, it ends with exit 0 and a
    result short of its prompts."""
    marker = "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION"
    sim = Sim()
    try:
        sim.faults("fatal_marker=" + marker, "fatal_marker_during_bench=3")
        sim.start()
        check(marker not in sim.log(), "marker during load")
        p = sim.spawn("run_benchmark.sh", MODEL, sim.port, 8, 8, 1, 1, 0)
        wait_for(lambda: marker in sim.log(), 10, "marker in log")
        time.sleep(0.5)
        check(p.poll() is None, "bench did not hang")
        sim.stop()
        out = p.communicate(timeout=20)[0]
        check_eq(p.returncode, 0, "bench exit:\n" + out)
        with open(sim.path("logs", "benchmark.json")) as f:
            res = json.load(f)
        check(res["completed"] < res["num_prompts"], str(res))
    finally:
        sim.close()


def test_stop_escalates_and_isolates():
    """A server ignoring SIGTERM is SIGKILLed; another home's server is
    never touched."""
    a = Sim(ATOM_SIM_FAULTS="ignore_sigterm", SIM_STOP_WAIT_S="0.5")
    b = Sim()
    try:
        a.start()
        b.start()
        r = a.stop()
        check("escalating to SIGKILL" in r.stdout, r.stdout)
        check_eq(len(proc_servers(b.home)), 1, "other home's server")
        check_eq(b.http("GET", "/v1/models")[0], 200, "other home answers")
        b.stop()
    finally:
        a.close()
        b.close()


CASES = [test_capture_profile, test_profile_http_and_relaunch,
         test_die_on_start, test_never_ready_falls_through,
         test_fatal_marker_and_old_marker, test_start_profile_500,
         test_export_faults, test_die_during_bench,
         test_fatal_marker_during_bench, test_stop_escalates_and_isolates]


def main():
    failed = 0
    for case in CASES:
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
    sys.exit(main())
