"""ATOM's engine side, simulated with threads: the CoreManager in the API
server (atom/model_engine/engine_core_mgr.py), one EngineCore per DP rank
or pipeline stage (engine_core.py, engine_utility.py), each driving its
ModelRunner workers (async_proc.py, model_runner.py).

What matters for traced, as ATOM does it:
  - utility commands (start/stop_profile, get_mtp_statistics) run one at a
    time in each engine's busy loop, between forward steps; the caller
    (the API server's event loop) blocks on one response per engine, each
    wait bounded by its timeout (ATOM_PROFILER_TIMEOUT for stop_profile);
  - a command goes to every worker of the engine, and the engine waits
    for rank 0's answer only: the other ranks export in parallel and may
    finish later; a forward step needs every worker (collectives), so
    requests stall until the last rank has exported;
  - rank folders are made when the workers start; the export runs inside
    the profiler's exit: X.pt.trace.json, gzipped chunked into
    X.pt.trace.json.gz, the .json removed, one log line per outcome;
  - a worker that dies takes its engine down (the monitor's "proc died
    unexpectedly" line, the other workers joined then killed) and its
    pending command never answers.
Workers are threads here, not processes: see sim/README.md.
"""
import gzip
import os
import queue
import random
import sys
import threading
import time
import traceback

import simcommon as sc
import sim_labels
import sim_compose
import sim_scaling
from sim_traces import global_rank_text, model_stem, traces_dir

log = sc.atom_logger()
EXPORT_CHUNKS = 8            # the .json is written, and gzipped, in steps
EXPORT_GROW_S = 0.5          # a slow export's .json grows this often


class Killed(Exception):
    """The thread's process was SIGKILLed: stop now, clean nothing."""


class WorkerDied(Exception):
    def __init__(self, exitcode):
        super().__init__("exitcode=%d" % exitcode)
        self.exitcode = exitcode


class EngineDown(Exception):
    """The engine's runners were shut down (ATOM: SystemExit in call_func)."""


class Seq:
    """One request in an engine: `on_token(text, finish_reason)` is called
    from the engine thread per token, the reason set on the last one."""

    def __init__(self, tokens, prompt_tokens, on_token):
        self.tokens = tokens
        self.prompt_tokens = prompt_tokens
        self.emitted = 0
        self.on_token = on_token
        self.aborted = False


def knob(name, default):
    return sc.env_float(name, default)


class Worker(threading.Thread):
    """One ModelRunner: rank `rank` of `engine`, with its FIFO of commands
    (ATOM's shared-memory broadcast queue)."""

    def __init__(self, engine, rank):
        super().__init__(daemon=True, name="ModelRunner%d/%d" % (
            rank, engine.nworkers))
        self.process_name = self.name
        self.engine = engine
        self.rank = rank
        self.global_rank = engine.index * engine.nworkers + rank
        self.dir = engine.rank_dir(rank)
        self.inbox = queue.Queue()
        self.pending = 0              # commands queued or running (mgr.cv)
        self.profiling = False
        self.killed = threading.Event()
        self.terminating = threading.Event()
        self.exited = threading.Event()
        if self.dir and rank not in sc.fault_ranks("missing_rank"):
            os.makedirs(self.dir, exist_ok=True)

    def nap(self, seconds):
        if self.killed.wait(max(0.0, sc.real_s(seconds))):
            raise Killed()

    def run(self):
        code = 0
        try:
            self.serve()
        except Killed:
            return
        except WorkerDied as e:
            code = e.exitcode
        except Exception:  # noqa: BLE001 - multiprocessing prints it too
            sc.write_line(sys.stderr, "Process %s:\n%s" % (
                self.name, traceback.format_exc().rstrip()))
            code = 1
        finally:
            self.exited.set()
            self.engine.mgr.worker_exited(self)
        if code:
            self.engine.runner_died(self, code)

    def serve(self):
        while True:
            cmd = self.next_command()
            if cmd is None:
                return
            result = getattr(self, cmd)()
            if self.rank == 0:
                self.engine.rank0_result(result)
            self.engine.mgr.command_done(self)
            if self.terminating.is_set():
                return

    def next_command(self):
        while True:
            try:
                return self.inbox.get(timeout=0.05)
            except queue.Empty:
                if self.killed.is_set():
                    raise Killed()
                if self.terminating.is_set():
                    return None

    def start_profiler(self):
        """As ModelRunner.start_profiler: nothing without a profiler dir or
        when already running; True either way."""
        if self.rank == 0 and sc.fault_on("start_profile_500"):
            raise RuntimeError("simulated profiler failure: kineto could not "
                               "start (start_profile_500)")
        if self.dir is not None and not self.profiling and \
                self.rank not in sc.fault_ranks("missing_rank"):
            self.profiling = True
            log.info("Rank %d: profiler started (detailed=%s, dir=%s)",
                     self.rank, os.environ.get("ATOM_PROFILER_MORE",
                                               "0") == "1", self.dir)
        return True

    def stop_profiler(self):
        """As ModelRunner.stop_profiler (model_runner.py:1107): the export
        runs inside the profiler's __exit__; when kineto raises there
        (profiler_stop_failed=R), ATOM logs it and no file comes."""
        if not self.profiling:
            return {"trace_dir": self.dir, "elapsed": 0.0}
        t0 = sc.monotonic()
        log.info("Rank %d: stopping profiler...", self.rank)
        self.profiling = False
        try:
            # kineto gathers its events before a byte is written.
            self.nap(knob("SIM_EXPORT_PREP_S", 0.0) +
                     sc.fault_number("export_prep", 0.0))
            if self.rank in sc.fault_ranks("profiler_stop_failed"):
                raise RuntimeError("CUPTI/roctracer: activity buffer "
                                   "corrupted (profiler_stop_failed)")
            self.export()
        except (Killed, WorkerDied):
            raise
        except Exception:  # noqa: BLE001 - as ATOM: logged, then on
            log.exception("Rank %d: profiler stop failed", self.rank)
        elapsed = round(sc.monotonic() - t0, 1)
        log.info("Rank %d: profiler stop completed in %.1fs", self.rank,
                 elapsed)
        return {"trace_dir": self.dir, "elapsed": elapsed}

    def export_phases(self):
        """(seconds writing the .json, seconds gzipping): SIM_EXPORT_DELAY_S
        halved, plus slow_export=S (every rank) and slow_export_rank=R:S."""
        half = knob("SIM_EXPORT_DELAY_S", 0.5) / 2
        extra = [fnum(v) for v in sc.fault_values("slow_export")]
        for v in sc.fault_values("slow_export_rank"):
            rank, _, secs = (v or "").partition(":")
            if rank.strip().isdigit() and int(rank) == self.rank:
                extra.append(fnum(secs))
        return half + max(extra + [0.0]), half

    def export(self):
        """The profiler's on_trace_ready (model_runner._on_trace_ready)."""
        stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime())
        ms = int((time.time() % 1) * 1000)
        out = os.path.join(self.dir, "%s_ts_%s_%03d.pt.trace.json.gz" % (
            model_stem(self.engine.mgr.args.model), stamp, ms))
        tmp = out[:-3]
        json_s, gzip_s = self.export_phases()
        try:
            t0 = sc.monotonic()
            self.write_json(tmp, json_s)
            if self.rank in sc.fault_ranks("worker_death", "orphan_json"):
                raise WorkerDied(-9)
            if self.rank in sc.fault_ranks("export_hang"):
                # A worker gone silent mid-export (stuck in the kernel, or
                # killed where ATOM's monitor does not see it): no byte,
                # no line more, until it is killed.
                self.killed.wait()
                raise Killed()
            if self.rank in sc.fault_ranks("export_fail"):
                raise OSError(28, "No space left on device", out)
            self.gzip_json(tmp, out, gzip_s)
            os.remove(tmp)
            log.info("Rank %d: trace exported to %s (%.1f MB, %.1fs)",
                     self.rank, out, os.path.getsize(out) / 1e6,
                     sc.monotonic() - t0)
        except (Killed, WorkerDied):
            raise
        except Exception:  # noqa: BLE001 - ATOM logs every export error
            log.exception("Rank %d: failed to export trace to %s", self.rank,
                          out)
            for p in (tmp, out):
                if os.path.exists(p):
                    os.remove(p)

    def write_json(self, path, seconds):
        """export_chrome_trace: the .json appears at once and grows, at
        least every EXPORT_GROW_S, for as long as `seconds`."""
        scaling = sim_scaling.spec()
        window = self.engine.window()
        data = (sim_scaling.rank_text(scaling, self.global_rank,
                                      [name for _, _, name in window.passes])
                if scaling is not None else
                global_rank_text(self.global_rank, window)).encode("utf-8")
        chunks = max(EXPORT_CHUNKS, int(seconds / EXPORT_GROW_S))
        step = max(1, -(-len(data) // chunks))
        with open(path, "wb") as f:
            for i in range(0, len(data), step):
                self.nap(seconds / chunks)
                f.write(data[i:i + step])
                f.flush()

    def gzip_json(self, src, dst, seconds):
        """Chunked gzip straight into the final name, so a growing .gz is
        visible while the .json still exists; truncated_gz=R cuts it."""
        size = os.path.getsize(src)
        step = max(1, -(-size // EXPORT_CHUNKS))
        with open(src, "rb") as f, gzip.open(dst, "wb") as g:
            while True:
                chunk = f.read(step)
                if not chunk:
                    break
                self.nap(seconds / EXPORT_CHUNKS)
                g.write(chunk)
        if self.rank in sc.fault_ranks("truncated_gz"):
            os.truncate(dst, os.path.getsize(dst) // 2)


def fnum(text, default=0.0):
    try:
        return float(text)
    except (TypeError, ValueError):
        return default


class Engine(threading.Thread):
    """One EngineCore: its busy loop runs utility commands, then one
    forward step for every running request."""

    def __init__(self, mgr, index, spec):
        super().__init__(daemon=True, name="EngineCore-%d" % index)
        self.process_name = "EngineCore_DP%d" % spec["dp"]
        self.mgr = mgr
        self.index = index
        self.spec = spec
        self.nworkers = spec["workers"]
        self.utility = queue.Queue()
        self.rank0 = queue.Queue()
        self.new = []                 # requests routed here (mgr.cv)
        self.running = []
        self.peers = [self]           # engines a forward step waits for
        self.down = threading.Event()
        self.wedged = threading.Event()
        self.runners_up = True        # False once shut down: drop outputs
        self.spec_stats = {"drafted": 0, "accepted": 0, "dist": {}}
        self.profiling = False        # steps are recorded for the labels
        self.steps = []               # sim_labels.Step of this window
        self.seed = 0                 # its noise (sim_compose.py)
        self.exported = None          # the window the workers export
        self.workers = [Worker(self, r) for r in range(self.nworkers)]

    def rank_dir(self, rank):
        """rank_<r>, dp<d>_tp<r> with data parallelism, pp<p>_ prefixed
        with pipeline parallelism (ModelRunner.__init__)."""
        root = self.spec["root"]
        if root is None:
            return None
        d = self.spec["dp"]
        name = ("dp%d_tp%d" % (d, rank) if self.spec["dp_names"] or d > 0
                else "rank_%d" % rank)
        if self.spec["pp_prefix"]:
            name = "pp%d_%s" % (self.spec["pp"], name)
        return os.path.join(root, name)

    # ---- the busy loop ----
    def run(self):
        for w in self.workers:
            w.start()
        self.mgr.ready.wait()
        try:
            while not self.stopped():
                if self.wedged.is_set():
                    self.nap(3600)
                self.run_utilities()
                if self.take_new() or self.running:
                    self.step()
                else:
                    with self.mgr.cv:
                        self.mgr.cv.wait(0.05)
        except (Killed, EngineDown):
            pass
        finally:
            self.down.set()

    def stopped(self):
        return self.mgr.killed.is_set() or self.mgr.terminating.is_set() \
            or not self.runners_up

    def nap(self, seconds):
        if self.mgr.killed.wait(max(0.0, sc.real_s(seconds))):
            raise Killed()

    def take_new(self):
        with self.mgr.cv:
            room = self.mgr.args.max_num_seqs - len(self.running)
            take, self.new = self.new[:max(0, room)], self.new[max(0, room):]
        self.running += take
        return bool(take)

    def step(self):
        """One forward pass: every worker of every peer engine must be idle
        (a rank still exporting holds the collective), then one token for
        each running request."""
        with self.mgr.cv:
            while not all(w.pending == 0 or w.exited.is_set()
                          for e in self.peers for w in e.workers):
                if self.stopped():
                    raise EngineDown()
                self.mgr.cv.wait(0.05)
        t0 = sc.monotonic()
        passes = self.passes()
        self.nap(self.step_s(passes) - (sc.monotonic() - t0))
        if self.stopped():
            raise EngineDown()
        self.record_step(passes)
        alive = []
        for seq in self.running:
            if seq.aborted:
                continue
            seq.emitted += 1
            self.count_draft()
            last = seq.emitted >= seq.tokens
            seq.on_token(" tok", "length" if last else None)
            if not last:
                alive.append(seq)
        self.running = alive

    def passes(self):
        """The step's forward passes as ATOM labels them: the sequences
        getting their first token are a prefill, the others a decode (at
        most --max-num-seqs of them run: take_new)."""
        live = [q for q in self.running if not q.aborted]
        new = [q.prompt_tokens for q in live if q.emitted == 0]
        old = [q.prompt_tokens + q.emitted for q in live if q.emitted > 0]
        return ([sim_labels.Step("prefill", new)] if new else []) + \
            ([sim_labels.Step("decode", old)] if old else [])

    def step_s(self, passes):
        """Seconds the step takes: SIM_TOKEN_S, or with SIM_TOKEN_S=trace
        (make run's demo) as long as its passes and the scheduler take in
        the composed ranks (sim_compose.pass_ns), so that the bench's TTFT
        and TPOT are the traces' step times."""
        if os.environ.get("SIM_TOKEN_S") != "trace":
            return knob("SIM_TOKEN_S", 0.001)
        return sum(sim_compose.pass_ns(p.kind, p, traces_dir()) +
                   sim_compose.SCHED_NS for p in passes) / 1e9

    def record_step(self, passes):
        """The step's passes, while profiling."""
        if not self.profiling or len(self.steps) >= sim_labels.MAX_STEPS:
            return
        self.steps += passes
        self.mgr.dp_sync(self)

    def window(self):
        """The profiled window as each worker exports it: the ranks of an
        engine ran the same steps (sim_compose.py)."""
        return self.exported

    def count_draft(self):
        """Speculative acceptance as the scheduler counts it, when a
        --method is given: k drafted, a fixed share accepted."""
        args = self.mgr.args
        if not args.method:
            return
        k = args.num_speculative_tokens
        rate = args.spec_decode_acceptance_rate
        if rate is None and args.spec_decode_acceptance_length:
            rate = (args.spec_decode_acceptance_length - 1) / max(1, k)
        acc = int(round(k * (0.7 if rate is None else rate)))
        st = self.spec_stats
        st["drafted"] += k
        st["accepted"] += acc
        st["dist"][acc] = st["dist"].get(acc, 0) + 1

    # ---- utility commands (engine_utility.EngineUtilityHandler) ----
    def run_utilities(self):
        while not self.stopped():
            try:
                cmd = self.utility.get_nowait()
            except queue.Empty:
                return
            log.info("Engine Core: executing utility command: %s", cmd)
            t0 = sc.monotonic()
            result = getattr(self, "do_" + cmd)()
            if result is not None and not self.stopped():
                self.mgr.responses.put({"cmd": cmd, "result": result})
            log.info("Engine Core: utility command '%s' finished in %.2fs",
                     cmd, sc.monotonic() - t0)

    def do_start_profile(self):
        result = self.call_func("start_profiler")
        self.steps, self.profiling = [], True
        self.seed = random.getrandbits(32)   # this window's noise
        log.info("Engine Core: profiler started")
        return result

    def do_stop_profile(self):
        log.info("Engine Core: stopping profiler...")
        self.profiling = False
        self.exported = sim_compose.Window(
            self.steps, self.mgr.args, self.seed,
            self.index * self.nworkers, self.nworkers, traces_dir())
        result = self.call_func("stop_profiler")
        log.info("Engine Core: profiler stopped, result=%r", result)
        return result

    def do_get_mtp_statistics(self):
        st = self.spec_stats
        if not self.mgr.args.method:
            return {"enabled": False}
        return {"enabled": True, "total_draft_tokens": st["drafted"],
                "total_accepted_tokens": st["accepted"],
                "distribution": {str(k): v for k, v in st["dist"].items()}}

    def call_func(self, name):
        """Broadcast to every worker; wait for rank 0's answer only."""
        with self.mgr.cv:
            for w in self.workers:
                w.pending += 1
                w.inbox.put(name)
        while True:
            try:
                out = self.rank0.get(timeout=0.05)
            except queue.Empty:
                if self.mgr.killed.is_set():
                    raise Killed()
                if self.workers[0].exited.is_set():
                    raise EngineDown()
                continue
            if isinstance(out, EngineDown):
                raise out
            return out

    def rank0_result(self, result):
        if self.runners_up:
            self.rank0.put(result)

    # ---- a worker died (AsyncIOProcManager.monitor_procs and exit) ----
    def runner_died(self, dead, exitcode):
        label = "AsyncIOProcManager(ModelRunner)"
        log.error("%s: [%s] proc died unexpectedly (exitcode=%d), shutting "
                  "down.", label, dead.name, exitcode)
        self.runners_up = False
        log.info("%s: shutdown all runners...", label)
        join_s = sc.real_s(knob("SIM_RUNNER_JOIN_S", 0.5))
        for w in self.workers:
            w.exited.wait(join_s)       # joined one after the other
        alive = [w for w in self.workers if not w.exited.is_set()]
        for w in alive:
            log.info("AsyncIOProc(%s): received signal 15 (SIGTERM), "
                     "exiting...", w.name)
        deadline = time.monotonic() + join_s / 5
        for w in alive:
            w.exited.wait(max(0.0, deadline - time.monotonic()))
        for w in alive:
            w.killed.set()
        log.info("%s: All runners are shutdown.", label)
        self.rank0.put(EngineDown())
        with self.mgr.cv:
            self.mgr.cv.notify_all()


class CoreManager:
    """The API server's view of its engines (engine_core_mgr.CoreManager,
    DisaggCoreManager with --enable-rapidserve)."""

    def __init__(self, args):
        self.args = args
        self.label = ("DisaggCoreManager" if args.enable_rapidserve
                      else "Engine Core Mgr")
        self.cv = threading.Condition()
        self.ready = threading.Event()
        self.killed = threading.Event()       # SIGKILL of the children
        self.terminating = threading.Event()  # SIGTERM to the children
        self.responses = queue.Queue()
        self.all_exited = threading.Event()
        self.on_all_exited = None
        specs, groups = layout(args)
        self.engines = []
        for i, spec in enumerate(specs):
            log.info("%s: Creating EngineCore engine %d (dp=%d, pp=%d) of %d",
                     self.label, i, spec["dp"], spec["pp"], len(specs))
            self.engines.append(Engine(self, i, spec))
        self.heads = []
        for members in groups:
            engines = [self.engines[i] for i in members]
            head = engines[-1] if args.enable_rapidserve else engines[0]
            head.peers = engines
            self.heads.append(head)
        self.workers_total = sum(e.nworkers for e in self.engines)
        self.workers_exited = 0

    def start(self):
        for e in self.engines:
            log.info("%s: Starting EngineCore for DP rank %d/%d", self.label,
                     e.spec["dp"], len(self.engines))
            e.start()

    def go(self):
        """The engines are loaded: their busy loops start."""
        log.info("%s: All %d EngineCores initialized and ready", self.label,
                 len(self.engines))
        self.ready.set()

    def gpus(self):
        """GPUs the deployment occupies (prefill and decode share theirs)."""
        if self.args.enable_rapidserve:
            return self.engines[0].nworkers
        return self.workers_total

    # ---- worker bookkeeping ----
    def command_done(self, worker):
        with self.cv:
            worker.pending -= 1
            self.cv.notify_all()

    def worker_exited(self, worker):
        with self.cv:
            worker.pending = 0
            self.workers_exited += 1
            done = self.workers_exited == self.workers_total
            self.cv.notify_all()
        if done:
            self.all_exited.set()
            if self.on_all_exited:
                self.on_all_exited()

    # ---- calls from the API server: they block the caller ----
    def utility_sync(self, cmd, timeout):
        """broadcast_utility_command_sync: stale answers drained, one
        answer awaited per engine, each wait bounded by `timeout`."""
        while True:
            try:
                self.responses.get_nowait()
            except queue.Empty:
                break
        for e in self.engines:
            e.utility.put(cmd)
        with self.cv:
            self.cv.notify_all()
        out = []
        for _ in self.engines:
            try:
                out.append(self.responses.get(timeout=sc.real_s(timeout)))
            except queue.Empty:
                raise TimeoutError(
                    "%s: Timed out waiting for UTILITY_RESPONSE for command "
                    "'%s' (timeout=%ss)" % (self.label, cmd, timeout))
        return out

    def start_profile(self):
        # ATOM's start_profile uses the default timeout, 300 s.
        self.utility_sync("start_profile",
                          knob("SIM_UTILITY_TIMEOUT_S", 3.0))
        log.info("Profiling started")

    def stop_profile(self):
        timeout = float(os.environ.get("ATOM_PROFILER_TIMEOUT", "300"))
        return [r.get("result", {}) for r in
                self.utility_sync("stop_profile", timeout)]

    def get_mtp_statistics(self):
        """LLMEngine.get_mtp_statistics (ATOM: a 30 s timeout)."""
        resps = self.utility_sync("get_mtp_statistics",
                                  knob("SIM_UTILITY_TIMEOUT_S", 3.0))
        stats = [r["result"] for r in resps if r["result"].get("enabled")]
        dist = {}
        for s in stats:
            for k, v in s.get("distribution", {}).items():
                dist[int(k)] = dist.get(int(k), 0) + int(v)
        drafted = sum(s["total_draft_tokens"] for s in stats)
        accepted = sum(s["total_accepted_tokens"] for s in stats)
        steps = sum(dist.values())
        return {"enabled": bool(stats), "total_draft_tokens": drafted,
                "total_accepted_tokens": accepted,
                "acceptance_rate": accepted / drafted if drafted else 0.0,
                "average_tokens_per_forward": (1 + accepted / steps
                                               if steps else 0.0),
                "distribution": dict(sorted(dist.items())),
                "distribution_percent": {k: v / steps for k, v in
                                         sorted(dist.items())}}

    def dp_sync(self, busy):
        """ATOM keeps the DP ranks of an MoE model in step: a rank with
        nothing to run does a dummy decode (dummy_decode[bs=1 tok=1 d=1])
        while a peer steps. Recorded for the labels only."""
        if len(self.heads) < 2:
            return
        for e in self.heads:
            if e is not busy and e.profiling and not e.running and \
                    len(e.steps) < sim_labels.MAX_STEPS:
                e.steps.append(sim_labels.Step("dummy", [1]))

    def add_request(self, seq):
        """least_requests routing over the DP groups."""
        with self.cv:
            head = min(self.heads, key=lambda e: len(e.new) + len(e.running))
            head.new.append(seq)
            self.cv.notify_all()

    # ---- the children's fate ----
    def kill_children(self):
        """SIGKILL of every engine and worker process (ATOM's pkill -9 -f
        multiprocessing.spawn): exports stop where they are."""
        self.killed.set()
        for e in self.engines:
            for w in e.workers:
                w.killed.set()

    def terminate_children(self, signalled=True):
        """SIGTERM to every engine and worker (or, unsignalled, the
        SHUTDOWN message CoreManager.close sends): each finishes what it
        is doing, then exits; no further answer reaches the server."""
        if signalled:
            for e in self.engines:
                log.info("Engine Core: received signal 15 (SIGTERM), "
                         "exiting...")
                for w in e.workers:
                    log.info("AsyncIOProc(%s): received signal 15 "
                             "(SIGTERM), exiting...", w.name)
        self.terminating.set()
        for e in self.engines:
            for w in e.workers:
                w.terminating.set()

    def close(self):
        """CoreManager.close, from the API server's shutdown: SHUTDOWN to
        the engines, SIGTERM to those still running after the grace,
        SIGKILL to those still running after that."""
        log.info("%s: Shutting down all %d EngineCores", self.label,
                 len(self.engines))
        self.terminate_children(signalled=False)
        join_s = sc.real_s(knob("SIM_RUNNER_JOIN_S", 0.5))
        if not self.all_exited.wait(join_s):
            self.terminate_children()
            if not self.all_exited.wait(join_s / 5):
                self.kill_children()
        log.info("%s: All EngineCores shut down", self.label)


def visible_devices():
    """torch.cuda.device_count(): HIP_VISIBLE_DEVICES' entries, else the
    node's SIM_GPUS."""
    listed = os.environ.get("HIP_VISIBLE_DEVICES")
    if listed is not None:
        return len([d for d in listed.split(",") if d.strip()])
    return int(knob("SIM_GPUS", 8))


def tp_world_size(args):
    """Config.tp_world_size (atom/config.py:1543): with --fake-eplb on a
    node with fewer devices than -tp, only that many workers run (and
    export), each the rank it would be in the wider deployment."""
    tp = args.tensor_parallel_size
    if not args.fake_eplb:
        return tp
    visible = visible_devices()
    return visible if 0 < visible < tp else tp


def layout(args):
    """([engine spec], [[engine index of a DP group]]) as CoreManager and
    DisaggCoreManager lay ATOM's deployment out. Workers per engine are
    TP x PCP (EngineCore: one pipeline stage's slice), TP being
    tp_world_size."""
    tp, pp = tp_world_size(args), args.pipeline_parallel_size
    pcp, dp = args.prefill_context_parallel_size, args.data_parallel_size
    root = args.torch_profiler_dir

    def spec(d, p, workers, sub=None, dp_names=False):
        return {"dp": d, "pp": p, "workers": workers, "dp_names": dp_names,
                "pp_prefix": pp > 1, "root": (None if root is None else
                                              os.path.join(root, sub)
                                              if sub else root)}
    if args.enable_rapidserve:
        return ([spec(0, 0, tp * pcp, "prefill"),
                 spec(0, 0, tp * pcp, "decode")], [[0, 1]])
    if args.enable_dp_attention:
        n = tp * dp     # one engine per GPU, each TP 1
        return ([spec(d, 0, pcp, dp_names=n > 1) for d in range(n)],
                [[d] for d in range(n)])
    specs = [spec(i // pp, i % pp, tp * pcp, dp_names=dp > 1)
             for i in range(dp * pp)]
    return specs, [list(range(d * pp, (d + 1) * pp)) for d in range(dp)]


def server_sizes(args):
    """(tp_size, dp_size) as /server_info reports them: DP attention turns
    -tp N -dp M into N*M engines of TP 1."""
    if args.enable_dp_attention:
        return 1, args.tensor_parallel_size * args.data_parallel_size
    return args.tensor_parallel_size, args.data_parallel_size
