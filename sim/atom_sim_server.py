"""A stand-in for `python -m atom.entrypoints.openai_server` (ROCm/ATOM
ffdf3bb5) without a GPU: ATOM's command line (sim/atom_args.py), its
start-up, log lines and failures, the engines and their per-rank export
(sim/engine.py), served on one asyncio event loop as uvicorn serves
ATOM's FastAPI app (sim/sim_http.py, sim/sim_app.py). Standard library
only. See sim/README.md.

Life: parse argv (argparse: exit 2) -> build the engine (ATOM's checks:
exit 1 with a traceback) -> workers start, rank folders made -> "load"
for SIM_LOAD_S seconds with the port unbound (connection refused) ->
VRAM claimed (sim/bin/rocm-smi sees it) -> serve.

Signals, as ATOM's process tree takes them (workers are threads here):
  SIGTERM, SIGINT  while loading: default action, the process dies (ATOM
                   installs uvicorn's handler only when it serves); while
                   serving: uvicorn's graceful shutdown, which starts only
                   when the event loop runs again (not while a profile
                   call blocks it) and waits for requests in flight;
                   a second one skips that wait.
  SIGUSR1          the sim's stand-in for SIGKILL of ATOM's engine and
                   worker processes (its scripts' pkill -9 -f
                   multiprocessing.spawn): exports stop where they are,
                   VRAM is freed, this process lives on.
  SIGUSR2          the stand-in for SIGTERM to those processes: each
                   finishes what it is doing, then exits.
"""
import asyncio
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atom_args  # noqa: E402
import sim_capture  # noqa: E402
import simcommon as sc  # noqa: E402
from sim_app import App  # noqa: E402
from sim_engine import CoreManager  # noqa: E402
from sim_http import Server  # noqa: E402

log = sc.atom_logger()


class Lifecycle:
    """The signals' effects, set from handlers, acted on by threads and
    the event loop's ticker (handlers run between bytecodes: they only
    set flags or start a thread)."""

    def __init__(self):
        self.mgr = None
        self.should_exit = False
        self.force_exit = False

    def children(self, what):
        if self.mgr is not None:
            threading.Thread(target=getattr(self.mgr, what),
                             daemon=True).start()

    def install_children_signals(self):
        signal.signal(signal.SIGUSR1,
                      lambda s, f: self.children("kill_children"))
        signal.signal(signal.SIGUSR2,
                      lambda s, f: self.children("terminate_children"))
        if sc.fault_on("ignore_sigterm"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def install_uvicorn_signals(self):
        if sc.fault_on("ignore_sigterm"):
            return

        def on_exit(signum, frame):
            if self.should_exit:
                self.force_exit = True
            self.should_exit = True
        signal.signal(signal.SIGTERM, on_exit)
        signal.signal(signal.SIGINT, on_exit)


def hang():
    """What a faulted GPU process does: nothing, forever."""
    while True:
        time.sleep(3600)


def build_engine(args):
    """main() of api_server up to the engine: ATOM's lines and checks."""
    if args.default_chat_template_kwargs:
        kwargs = json.loads(args.default_chat_template_kwargs)
        log.info("Default chat template kwargs: %s", kwargs)
    log.info("Loading tokenizer from %s...", args.model)
    if atom_args.needs_remote_code(args.model) and not args.trust_remote_code:
        raise ValueError(
            "The repository %s contains custom code which must be executed "
            "to correctly load the model. Please pass the argument "
            "`trust_remote_code=True` to allow custom code to be run."
            % args.model)
    # _load_tokenizer (llm_engine.py:23): a model folder without a
    # tokenizer (a typo in its path) ends the server here, at its start.
    sc.get_tokenizer(args.model)
    if args.chat_template:
        log.info("Loaded chat template from file: %s" % args.chat_template
                 if os.path.isfile(args.chat_template) else
                 "Using inline chat template from --chat-template argument")
    log.info("Initializing engine with model %s...", args.model)
    atom_args.check_engine_args(args)
    log.info("Engine kwargs: %s", {k: v for k, v in sorted(vars(args).items())
                                   if k not in SERVER_ONLY})
    return CoreManager(args)


SERVER_ONLY = {"host", "server_port", "timeout_keep_alive", "model",
               "disable_uvicorn_access_log", "chat_template", "request_log",
               "default_chat_template_kwargs", "served_model_name"}


def load(args, mgr):
    """The workers load the model for SIM_LOAD_S seconds; the load-time
    fault switches bend it."""
    load_s = sc.env_float("SIM_LOAD_S", 1.0)
    sc.sleep(load_s / 2)
    if sc.fault_on("die_on_start"):
        raise RuntimeError("Engine core initialization failed. See root "
                           "cause above. (die_on_start)")
    markers = [v for v in sc.fault_values("fatal_marker") if v]
    if markers and not sc.fault_on("fatal_marker_during_bench"):
        sc.write_line(sys.stderr, markers[0])
        hang()
    gpus = int(sc.env_float("SIM_GPUS", 8))
    if mgr.gpus() > gpus:
        raise RuntimeError("HIP error: invalid device ordinal (the "
                           "deployment needs %d GPUs, this node has %d)"
                           % (mgr.gpus(), gpus))
    check_memory(args, mgr)
    for e in mgr.engines:
        for w in e.workers:
            log.info("[%s] Model load done: %s",
                     os.path.basename(w.dir or "rank_%d" % w.rank),
                     args.model)
            # capture_cudagraph: --mark-trace profiles each capture.
            if args.mark_trace and w.dir:
                sim_capture.write(w.dir, w.rank)
    if sc.fault_on("never_ready"):
        hang()
    sc.sleep(load_s / 2)
    compile_graphs(args)


def check_memory(args, mgr):
    """ATOM counts the memory other processes hold on a GPU inside its own
    budget of gpu_memory_utilization x total (model_runner.py:1591-1611):
    what they hold comes out of the KV cache, and a budget it cannot meet
    fails the load (:1626-1662). Stricter than ATOM, which fails only when
    the weights and the smallest cache no longer fit: any GPU whose free
    share is below the share asked fails here."""
    held = sc.gpu_use(exclude=os.getpid())
    want = args.gpu_memory_utilization
    for g in range(mgr.gpus()):
        free = 1.0 - held.get(g, 0) / 100.0
        if free < want:
            total = 192.0
            raise RuntimeError(
                "Per-request cache tensor exceeds available KV budget "
                "(%.2fGB) at --gpu-memory-utilization %.2f on GPU %d. Only "
                "%.2fGB is physically free on the GPU (other processes may "
                "be holding memory); raising --gpu-memory-utilization will "
                "NOT help. Free GPU memory or reduce --max-num-seqs "
                "(currently %d)." % (max(0.0, (free - (1 - want)) * total),
                                     want, g, free * total,
                                     args.max_num_seqs))


class InductorError(Exception):
    """torch._inductor.exc.InductorError, as Python names it in a
    traceback."""


InductorError.__module__ = "torch._inductor.exc"


def deepseek_v4(model):
    """The model folder's config.json names a DeepSeek-V4 architecture
    (ATOM's model_runner.py:105: DeepseekV4ForCausalLM)."""
    try:
        with open(os.path.join(model, "config.json")) as f:
            arches = json.load(f).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return False
    return any(str(a).startswith("DeepseekV4") for a in arches)


def compile_graphs(args):
    """torch.compile and CUDA-graph capture after the load, for
    SIM_COMPILE_S (+ slow_compile=S) seconds (minutes in ATOM on a cold
    cache, which the start script wipes at every launch), a line every
    SIM_COMPILE_LOG_S (the progress a ready wait can follow); the port is
    not bound yet."""
    if args.level > 0 and deepseek_v4(args.model):
        # The seed's skill: "V4-Pro Inductor + autotune hits a cluster_dims
        # bug on AMD -- pass --level 0". The engine dies in its warm-up.
        raise InductorError("AttributeError: 'KernelMetadata' object has no "
                            "attribute 'cluster_dims'")
    total = sc.env_float("SIM_COMPILE_S", 0.0) + \
        sc.fault_number("slow_compile", 0.0)
    every = max(0.05, sc.env_float("SIM_COMPILE_LOG_S", 1.0))
    t0 = sc.monotonic()
    while sc.monotonic() - t0 < total:
        sc.sleep(min(every, total - (sc.monotonic() - t0)))
        log.info("Compiling the model: capturing CUDA graphs (%.0f s of "
                 "%.0f s, level %d)", sc.monotonic() - t0, total,
                 args.level)


async def serve(args, app, life):
    """uvicorn.run: start-up lines, bind (a bind failure exits 1 after
    the application's shutdown), then tick until told to stop."""
    pid = os.getpid()
    sc.uvicorn_log("INFO", "Started server process [%d]" % pid)
    sc.uvicorn_log("INFO", "Waiting for application startup.")
    log.info("Server started successfully and ready to accept requests")
    sc.uvicorn_log("INFO", "Application startup complete.")
    http = Server(app, access_log=not args.disable_uvicorn_access_log,
                  keep_alive_s=args.timeout_keep_alive)
    try:
        await http.listen(args.host, args.server_port)
    except OSError as e:
        sc.uvicorn_log("ERROR", str(e))
        shutdown_app(app)
        return 1
    sc.uvicorn_log("INFO", "Uvicorn running on http://%s:%d (Press CTRL+C "
                   "to quit)" % (args.host, args.server_port))
    life.install_uvicorn_signals()
    while not life.should_exit:
        await asyncio.sleep(0.1)
    sc.uvicorn_log("INFO", "Shutting down")
    http.stop_listening()
    if http.busy:
        sc.uvicorn_log("INFO", "Waiting for connections to close. (CTRL+C "
                       "to force quit)")
    while http.busy and not life.force_exit:
        await asyncio.sleep(0.1)
    shutdown_app(app)
    sc.uvicorn_log("INFO", "Finished server process [%d]" % pid)
    return 0


def shutdown_app(app):
    """The lifespan's shutdown: engine.close() (blocking, as in ATOM)."""
    sc.uvicorn_log("INFO", "Waiting for application shutdown.")
    log.info("Server shutting down, releasing resources...")
    app.mgr.close()
    sc.uvicorn_log("INFO", "Application shutdown complete.")


def main(argv):
    life = Lifecycle()
    life.install_children_signals()
    sc.record_call("atom_sim_server", argv)
    args = atom_args.parse(argv)
    if args.mark_trace and args.torch_profiler_dir:
        # The run traces whose graph replays the capture traces recorded.
        os.environ["SIM_TRACE_FILE"] = sim_capture.pair_run_trace()
    mgr = build_engine(args)
    life.mgr = mgr
    pid = os.getpid()
    kfd = sc.open_kfd()

    def released():
        sc.gpu_release(pid)
        if kfd is not None:
            kfd.close()
    mgr.on_all_exited = released
    mgr.start()
    load(args, mgr)
    sc.gpu_claim(pid, mgr.gpus(), round(args.gpu_memory_utilization * 100))
    mgr.go()
    log.info("Starting server on %s:%d (loop=uvloop)...", args.host,
             args.server_port)
    try:
        return asyncio.run(serve(args, App(args, mgr), life))
    finally:
        sc.gpu_release(pid)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
