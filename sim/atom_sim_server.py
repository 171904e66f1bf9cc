"""A stand-in for `python -m atom.entrypoints.openai_server` (ROCm/ATOM):
the same command line, log lines, HTTP routes and asynchronous per-rank
kineto export, without a GPU. Standard library only. See sim/README.md.

Lifecycle: parse argv -> "load" for SIM_LOAD_S seconds (the port is not
bound yet: connection refused, as with uvicorn before the engine is up)
-> serve. Fault switches (ATOM_SIM_FAULTS at launch, $ATOM_SIM_HOME/faults
re-read at each step) bend that path: die, hang, or spoil an export.
"""
import argparse
import datetime
import gzip
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simcommon as sc  # noqa: E402

# Rotated over the ranks (rank r gets entry r % 4): ROCm kineto traces.
DEFAULT_TRACES = (
    "tracelens__mi300_resnet_act_checkpoint.json.gz",
    "tracelens__mi210_gpu_only_trace.json.gz",
    "tracelens__torch_compile_triton_trace.json.gz",
    "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
)
DEFAULT_MARKER = ("Memory access fault by GPU node-2 (Agent handle: "
                  "0x5555) on address 0x7f00. Reason: Page not present or "
                  "supervisor privilege.")
MAX_BODY_BYTES = 16 << 20


class Log:
    """Lines to stdout (the start script appends it to the server log),
    one write per line under a lock so request threads never interleave."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, msg):
        with self.lock:
            sys.stdout.write(msg + "\n")
            sys.stdout.flush()


log = Log()


def info(msg):
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    log("%s - atom - INFO - %s" % (stamp, msg))


def parse_args(argv):
    """ATOM's server options that matter here; any other option is kept
    (recorded in calls.jsonl) and otherwise ignored."""
    p = argparse.ArgumentParser(prog="openai_server.py", add_help=False)
    p.add_argument("--model", default="/data/DeepSeek-R1-0528")
    p.add_argument("-tp", "--tensor-parallel-size", dest="tp", type=int,
                   default=1)
    p.add_argument("--server-port", type=int, default=8000)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--torch-profiler-dir", default=None)
    p.add_argument("--kv_cache_dtype", default="bf16")
    args, unknown = p.parse_known_args(argv)
    args.unknown = unknown
    return args


def traces_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("SIM_TRACES_DIR") or os.path.normpath(
        os.path.join(here, "..", "..", "shared", "traces"))


def trace_sources():
    """SIM_TRACE_FILE (colon-separated, rotated over ranks) or the default
    rotation from SIM_TRACES_DIR."""
    files = os.environ.get("SIM_TRACE_FILE", "")
    if files:
        return [f for f in files.split(":") if f]
    return [os.path.join(traces_dir(), n) for n in DEFAULT_TRACES]


_source_cache = {}
_source_lock = threading.Lock()


def source_text(path):
    """(JSON text of the trace, gunzipped when it is gzip; whether its top
    level has a distributedInfo object), cached per path."""
    with _source_lock:
        if path not in _source_cache:
            with open(path, "rb") as f:
                raw = f.read()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            text = raw.decode("utf-8")
            top = json.loads(text)
            has_info = isinstance(top, dict) and isinstance(
                top.get("distributedInfo"), dict)
            _source_cache[path] = (text, has_info)
        return _source_cache[path]


def rank_trace(text, has_info, rank):
    """`text` with its top-level distributedInfo.rank set to `rank`. Every
    other byte is kept, so figures computed from the source trace hold for
    the exported one. The distributedInfo object itself is re-serialised
    (key order kept); when absent, {"rank": r} is inserted as the first key.
    A legacy bare-array trace has no place for it and is returned as is.
    Assumes the first '"distributedInfo"' in the text is the top-level key
    (kineto writes it before traceEvents)."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("{", start):
        return text
    if not has_info:
        return "%s\"distributedInfo\": {\"rank\": %d}, %s" % (
            text[:start + 1], rank, text[start + 1:])
    key = '"distributedInfo"'
    obj_at = text.index("{", text.index(key) + len(key))
    obj, end = json.JSONDecoder().raw_decode(text, obj_at)
    obj["rank"] = rank
    return text[:obj_at] + json.dumps(obj) + text[end:]


def model_stem(model):
    base = os.path.basename(model.rstrip("/")) or "model"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", base)


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.requests = 0          # completion requests received
        self.profiling = False
        self.fatal_logged = False
        self.more = os.environ.get("ATOM_PROFILER_MORE", "0") == "1"

    def next_request(self):
        with self.lock:
            self.requests += 1
            return self.requests


def switch_count(name, default):
    """The number given to a counting switch (die_during_bench=N)."""
    for v in sc.fault_values(name):
        if v and v.isdigit():
            return int(v)
    return default


def hang():
    """What a faulted GPU process does: nothing, forever."""
    while True:
        time.sleep(3600)


def export_rank(st, rank):
    """One rank's export, as ATOM's worker does it: write X.pt.trace.json,
    gzip it to X.pt.trace.json.gz, unlink the .json; on failure unlink
    both. Fault switches spoil one step."""
    delay = sc.env_float("SIM_EXPORT_DELAY_S", 0.5)
    slow = max([float(v) for v in sc.fault_values("slow_export")
                if v and re.fullmatch(r"[0-9.]+", v)] or [0.0])
    if rank in sc.fault_ranks("missing_rank"):
        info("[rank %d] profiler produced no trace" % rank)
        return
    time.sleep(delay / 2 + slow)
    rank_dir = os.path.join(st.args.torch_profiler_dir, "rank_%d" % rank)
    now = datetime.datetime.now()
    stem = "%s_ts_%s_%03d.pt.trace.json" % (
        model_stem(st.args.model), now.strftime("%Y%m%d_%H%M%S"),
        now.microsecond // 1000)
    jpath = os.path.join(rank_dir, stem)
    gpath = jpath + ".gz"
    try:
        sources = trace_sources()
        text = rank_trace(*source_text(sources[rank % len(sources)]), rank)
        os.makedirs(rank_dir, exist_ok=True)
        info("[rank %d] exporting trace to %s" % (rank, jpath))
        with open(jpath, "w", encoding="utf-8") as f:
            f.write(text)
        if rank in sc.fault_ranks("orphan_json"):
            info("[rank %d] worker died during export" % rank)
            return
        time.sleep(delay / 2)
        if rank in sc.fault_ranks("export_fail"):
            raise OSError("simulated export failure")
        write_gzip(gpath, text.encode("utf-8"))
        if rank in sc.fault_ranks("truncated_gz"):
            os.truncate(gpath, os.path.getsize(gpath) // 2)
        os.unlink(jpath)
        info("[rank %d] trace saved: %s" % (rank, gpath))
    except (OSError, ValueError, IndexError) as e:
        log("ERROR: [rank %d] trace export failed: %s" % (rank, e))
        for p in (jpath, gpath):
            if os.path.exists(p):
                os.unlink(p)


def write_gzip(path, data):
    """Streams into the final name, so a growing .gz is visible before the
    .json goes away, as with the real exporter."""
    with gzip.open(path, "wb", compresslevel=6) as g:
        for i in range(0, len(data), 1 << 20):
            g.write(data[i:i + (1 << 20)])


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass  # access lines are written in uvicorn's format by reply()

    def access(self, code):
        phrase = {200: "OK", 400: "Bad Request", 404: "Not Found",
                  500: "Internal Server Error"}.get(code, "")
        log('INFO:     %s:%d - "%s %s HTTP/1.1" %d %s' % (
            self.client_address[0], self.client_address[1], self.command,
            self.path, code, phrase))

    def reply(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.access(code)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY_BYTES:
            raise ValueError("body too large")
        raw = self.rfile.read(n) if n > 0 else b""
        return json.loads(raw) if raw.strip() else {}

    def do_GET(self):
        st = self.server.st
        if self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{
                "id": st.args.model, "object": "model",
                "created": int(time.time()), "owned_by": "atom"}]})
        elif self.path == "/health":
            self.reply(200, {"status": "ok"})
        else:
            self.reply(404, {"detail": "Not Found"})

    def do_POST(self):
        routes = {"/v1/completions": self.completions,
                  "/start_profile": self.start_profile,
                  "/stop_profile": self.stop_profile}
        route = routes.get(self.path)
        if route is None:
            self.reply(404, {"detail": "Not Found"})
            return
        try:
            body = self.read_body()
        except ValueError as e:
            self.reply(400, {"detail": "invalid request body: %s" % e})
            return
        route(body)

    def start_profile(self, body):
        st = self.server.st
        if sc.fault_on("start_profile_500"):
            err = "simulated profiler failure"
        elif not st.args.torch_profiler_dir:
            err = "torch profiler is not enabled (--torch-profiler-dir)"
        else:
            err = None
        if err:
            log("ERROR: Failed to start profiling: %s" % err)
            self.reply(500, {"detail": "Failed to start profiling: " + err})
            return
        st.profiling = True
        info("Starting torch profiler on %d ranks (record_shapes=%s, "
             "with_stack=%s, profile_memory=%s)" % (
                 st.args.tp, st.more, st.more, st.more))
        self.reply(200, {"status": "success",
                         "message": "Profiling started"})

    def stop_profile(self, body):
        """Answers at once; the ranks export in threads afterwards."""
        st = self.server.st
        if not st.profiling:
            err = "profiler is not running"
            log("ERROR: Failed to stop profiling: %s" % err)
            self.reply(500, {"detail": "Failed to stop profiling: " + err})
            return
        st.profiling = False
        info("Stopping torch profiler; exporting %d ranks" % st.args.tp)
        for r in range(st.args.tp):
            threading.Thread(target=export_rank, args=(st, r)).start()
        dirs = [os.path.join(st.args.torch_profiler_dir, "rank_%d" % r)
                for r in range(st.args.tp)]
        self.reply(200, {"status": "success",
                         "message": "Profiling stopped. Trace files "
                                    "generated.", "traces": dirs})

    def bench_faults(self, n):
        """die_during_bench=N: exit at completion request N (default 1).
        fatal_marker_during_bench=N: log the marker there and hang."""
        st = self.server.st
        if sc.fault_on("die_during_bench") and \
                n >= switch_count("die_during_bench", 1):
            log("ERROR: EngineCore exited unexpectedly (request %d)" % n)
            os._exit(1)
        if sc.fault_on("fatal_marker_during_bench") and \
                n >= switch_count("fatal_marker_during_bench", 1):
            with st.lock:
                first = not st.fatal_logged
                st.fatal_logged = True
            if first:
                vals = [v for v in sc.fault_values("fatal_marker") if v]
                log(vals[0] if vals else DEFAULT_MARKER)
            hang()

    def completions(self, body):
        st = self.server.st
        self.bench_faults(st.next_request())
        if not isinstance(body, dict):
            self.reply(400, {"detail": "expected a JSON object"})
            return
        prompt = body.get("prompt", "")
        prompt_tokens = len(str(prompt).split())
        try:
            max_tokens = int(body.get("max_tokens") or 16)
        except (TypeError, ValueError):
            self.reply(400, {"detail": "max_tokens must be an integer"})
            return
        n = max(1, min(max_tokens, int(sc.env_float("SIM_MAX_TOKENS", 8))))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                 "total_tokens": prompt_tokens + n}
        if body.get("stream"):
            self.stream(n, usage)
            return
        time.sleep(n * sc.env_float("SIM_TOKEN_S", 0.001))
        self.reply(200, {
            "id": "cmpl-sim", "object": "text_completion",
            "created": int(time.time()), "model": st.args.model,
            "choices": [{"index": 0, "text": " tok" * n,
                         "finish_reason": "length"}], "usage": usage})

    def stream(self, n, usage):
        """Server-sent events, one token per chunk, then [DONE]. HTTP/1.0:
        the body ends when the connection closes."""
        token_s = sc.env_float("SIM_TOKEN_S", 0.001)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.access(200)
        for i in range(n):
            time.sleep(token_s)
            chunk = {"id": "cmpl-sim", "object": "text_completion",
                     "model": self.server.st.args.model,
                     "choices": [{"index": 0, "text": " tok",
                                  "finish_reason": None if i < n - 1
                                  else "length"}]}
            if i == n - 1:
                chunk["usage"] = usage
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # a bench opens CONC connections at once


def on_sigterm(signum, frame):
    if sc.fault_on("ignore_sigterm"):
        log("WARNING: SIGTERM ignored")
        return
    log("INFO:     Shutting down")
    os._exit(0)


def load(st):
    """The engine start-up: log lines like ATOM's, SIM_LOAD_S seconds, and
    the load-time fault switches."""
    args = st.args
    load_s = sc.env_float("SIM_LOAD_S", 1.0)
    log("Loading tokenizer from %s..." % args.model)
    log("Initializing async engine with model %s..." % args.model)
    info("EngineArgs: tensor_parallel_size=%d kv_cache_dtype=%s "
         "torch_profiler_dir=%s ATOM_PROFILER_MORE=%s extra=%s" % (
             args.tp, args.kv_cache_dtype, args.torch_profiler_dir,
             "1" if st.more else "0", " ".join(args.unknown) or "none"))
    time.sleep(load_s / 2)
    if sc.fault_on("die_on_start"):
        log("Traceback (most recent call last):")
        log('  File "atom/model_engine/engine_core.py", line 1, in run')
        log("RuntimeError: Engine core initialization failed. "
            "See root cause above.")
        sys.exit(1)
    markers = [v for v in sc.fault_values("fatal_marker") if v]
    if markers and not sc.fault_on("fatal_marker_during_bench"):
        log(markers[0])
        hang()
    for r in range(args.tp):
        info("[rank %d] model weights loaded" % r)
    if sc.fault_on("never_ready"):
        t0 = time.time()
        while True:
            time.sleep(1)
            info("still loading (%d s)" % (time.time() - t0))
    time.sleep(load_s / 2)


def main(argv):
    signal.signal(signal.SIGTERM, on_sigterm)
    sc.record_call("atom_sim_server", argv)
    args = parse_args(argv)
    st = State(args)
    load(st)
    log("Starting server on %s:%d..." % (args.host, args.server_port))
    try:
        httpd = Server((args.host, args.server_port), Handler)
    except OSError as e:
        log("ERROR:    [Errno %d] error while attempting to bind on address "
            "('%s', %d): %s" % (e.errno or 0, args.host, args.server_port,
                                e.strerror))
        return 1
    httpd.st = st
    log("INFO:     Started server process [%d]" % os.getpid())
    log("INFO:     Waiting for application startup.")
    log("INFO:     Application startup complete.")
    log("INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)"
        % (args.host, args.server_port))
    httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
