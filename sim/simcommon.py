"""Shared helpers of the ATOM simulator (standard library only): the sim
home, the call record, the fault switches, ATOM's two-spelling argument
parser, ATOM's and uvicorn's log formats, and the VRAM records the
rocm-smi stand-in reads.

Also a small command line for the bash scripts:
  simcommon.py record SCRIPT [ARGS...]   append one line to calls.jsonl
"""
import argparse
import datetime
import json
import logging
import os
import sys
import threading
import time

# Environment names worth recording: what ATOM's launcher dumps in its log
# header, what traced's env_allow lets a request set, and the sim's knobs.
ENV_PREFIXES = ("ATOM_", "AITER_", "HSA_", "HIP_", "AMD_", "V4_", "NCCL_",
                "RCCL_", "MIOPEN_", "TORCH_", "PYTORCH_", "SIM_",
                "KV_CACHE", "MAX_NUM_SEQS", "MAX_MODEL_LEN",
                "MAX_BATCHED_TOKENS", "GPU_MEM_UTIL", "RANDOM_RANGE_RATIO",
                "KINETO_")


def home():
    """The sim's home folder (ATOM_SIM_HOME, default /tmp/atom-sim), made
    absolute: the stop script matches servers by this exact value."""
    return os.path.abspath(os.environ.get("ATOM_SIM_HOME", "/tmp/atom-sim"))


def env_subset(environ=None):
    environ = os.environ if environ is None else environ
    return {k: v for k, v in sorted(environ.items())
            if k.startswith(ENV_PREFIXES)}


def record_call(script, argv):
    """Appends {"script", "argv", "env", "pid", "time"} as one line to
    $ATOM_SIM_HOME/calls.jsonl. One write() on an O_APPEND descriptor, so
    concurrent writers never interleave inside a line."""
    os.makedirs(home(), exist_ok=True)
    line = json.dumps({
        "script": script,
        "argv": list(argv),
        "env": env_subset(),
        "pid": os.getpid(),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }) + "\n"
    fd = os.open(os.path.join(home(), "calls.jsonl"),
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


# ---- fault switches ----

def parse_switches(text, seps):
    """[(name, value or None)] from switch text such as 'orphan_json=1'.
    Values may hold spaces (fatal_marker=Memory access fault by GPU ...),
    so only `seps` split switches apart."""
    for sep in seps[1:]:
        text = text.replace(sep, seps[0])
    out = []
    for item in text.split(seps[0]):
        item = item.strip()
        if not item or item.startswith("#"):
            continue
        name, eq, value = item.partition("=")
        out.append((name.strip(), value.strip() if eq else None))
    return out


def faults():
    """Switches from ATOM_SIM_FAULTS (';' or newline separated, as the
    process was started) plus $ATOM_SIM_HOME/faults (one per line, read
    now: tests flip them between steps without relaunching)."""
    out = parse_switches(os.environ.get("ATOM_SIM_FAULTS", ""), ";\n")
    try:
        with open(os.path.join(home(), "faults")) as f:
            out += parse_switches(f.read(), "\n")
    except FileNotFoundError:
        pass
    return out


def fault_values(name):
    """Every value given to switch `name` (None for a bare switch); empty
    when the switch is off."""
    return [v for n, v in faults() if n == name]


def fault_on(name):
    return bool(fault_values(name))


def fault_ranks(*names):
    """The rank numbers given to per-rank switches (orphan_json=1,3 ...)."""
    out = set()
    for name in names:
        for v in fault_values(name):
            for part in (v or "").split(","):
                if part.strip().isdigit():
                    out.add(int(part))
    return out


def fault_number(name, default):
    """The number given to a switch (die_during_bench=N,
    start_profile_500=S), or `default` when bare or not a number."""
    for v in fault_values(name):
        try:
            return float(v)
        except (TypeError, ValueError):
            pass
    return default


def env_float(name, default):
    try:
        return float(os.environ.get(name, ""))
    except ValueError:
        return default


# ---- the clock ----
# SIM_TIME_SCALE (default 1): ATOM's seconds in one real second. Every
# wait of the simulator (its knobs' and fault switches' seconds, ATOM's
# own timeouts, the scripts' sleeps) lasts 1/SIM_TIME_SCALE as long, and
# the durations it logs are ATOM's; what it does, in what order, with what
# exit codes and log lines, is the same. Wall-clock stamps (log lines,
# trace names, calls.jsonl) stay real. traced's time_scale runs its own
# waits on ATOM at the same pace (docs/TESTS.md).

def time_scale():
    scale = env_float("SIM_TIME_SCALE", 1.0)
    return scale if scale > 0 else 1.0


def real_s(seconds):
    """ATOM's seconds as real ones."""
    return seconds / time_scale()


def sleep(seconds):
    time.sleep(real_s(seconds))


def monotonic():
    """ATOM's clock: seconds, for differences only."""
    return time.monotonic() * time_scale()


# ---- ATOM's argument parser ----

class FlexibleArgumentParser(argparse.ArgumentParser):
    """ATOM's parser (atom/utils/arg_parser.py): every long option given to
    the parser itself also answers to its other spelling (--max-num-seqs
    and --max_num_seqs). Options added through an argument group go
    through argparse's own add_argument and get no second spelling, as in
    ATOM (--dcp-config has no --dcp_config)."""

    def add_argument(self, *names, **kwargs):
        spellings = list(names)
        for name in names:
            if not name.startswith("--"):
                continue
            for other in ("--" + name[2:].replace("_", "-"),
                          "--" + name[2:].replace("-", "_")):
                taken = self._option_string_actions
                if other not in spellings and other not in taken:
                    spellings.append(other)
        return super().add_argument(*spellings, **kwargs)


# ---- log formats ----

_log_lock = threading.RLock()


def write_line(stream, text):
    """One whole line to stdout or stderr: the start script appends both
    to the server log, and request threads must never interleave."""
    with _log_lock:
        stream.write(text + "\n")
        stream.flush()


class _ThreadProcessName(logging.Filter):
    """ATOM's workers are processes named ModelRunner<r>/<n>; the sim's
    are threads that carry that name for %(processName)s."""

    def filter(self, record):
        name = getattr(threading.current_thread(), "process_name", None)
        if name:
            record.processName = name
        return True


class _LockedHandler(logging.StreamHandler):
    def emit(self, record):
        with _log_lock:
            super().emit(record)


def atom_logger():
    """The "atom" logger as ATOM configures it (atom/utils/__init__.py
    getLogger): INFO to stderr, '[atom HH:MM:SS] msg', or the long format
    with ATOM_LOG_MORE set to a nonzero integer."""
    logger = logging.getLogger("atom")
    if logger.handlers:
        return logger
    logger.setLevel(logging.INFO)
    handler = _LockedHandler(sys.stderr)
    more = os.environ.get("ATOM_LOG_MORE", "0").strip()
    if more.lstrip("-").isdigit() and int(more) != 0:
        fmt = logging.Formatter(
            "[%(name)s %(levelname)s] %(asctime)s.%(msecs)01d - "
            "%(processName)s:%(process)d - %(pathname)s:%(lineno)d - "
            "%(funcName)s\n%(message)s", "%Y-%m-%d %H:%M:%S")
    else:
        fmt = logging.Formatter("[%(name)s %(asctime)s] %(message)s",
                                "%H:%M:%S")
    handler.setFormatter(fmt)
    handler.addFilter(_ThreadProcessName())
    logger.addHandler(handler)
    logger.propagate = False
    return logger


def uvicorn_log(level, msg, stream=None):
    """uvicorn's default format: the level, padded to 9 columns with its
    colon ('INFO:     ', 'ERROR:    '). Its access lines go to stdout,
    everything else to stderr."""
    write_line(stream or sys.stderr, "%-9s %s" % (level + ":", msg))


# ---- VRAM records, read by sim/bin/rocm-smi ----

def gpu_dir():
    return os.path.join(home(), "gpu")


def gpu_claim(pid, gpus, percent, foreign=False):
    """Marks GPUs 0..gpus-1 as holding `percent` % VRAM for server `pid`
    (its model is loaded), or with `foreign` for any process (someone
    else's GPU job, which tests plant). Written whole, then renamed into
    place."""
    os.makedirs(gpu_dir(), exist_ok=True)
    path = os.path.join(gpu_dir(), str(pid))
    with open(path + ".tmp", "w") as f:
        json.dump({"pid": pid, "gpus": list(range(gpus)),
                   "percent": percent, "foreign": foreign}, f)
    os.replace(path + ".tmp", path)


def gpu_release(pid):
    try:
        os.unlink(os.path.join(gpu_dir(), str(pid)))
    except FileNotFoundError:
        pass


def alive(pid, server=True):
    """The process runs (not a zombie) and, with `server`, is a sim
    server: a record left by a SIGKILLed server, or its pid reused, holds
    no VRAM."""
    try:
        with open("/proc/%d/status" % pid) as f:
            if "\nState:\tZ" in f.read():
                return False
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return not server or argv[1:3] == [b"-m",
                                       b"atom.entrypoints.openai_server"]


def server_alive(pid):
    return alive(pid)


def container():
    """SIM_CONTAINER=1: the sim runs as ATOM does in its own container,
    without --pid=host (ATOM CI's, .github/actions/setup-gpu-container/
    action.yml:132): rocm-smi lists the host's PIDs, which no process here
    has."""
    return os.environ.get("SIM_CONTAINER", "0") not in ("", "0")


def host_pid(pid):
    """The PID the host knows a process of this container by: a number no
    process here has (above this namespace's pid_max where it is small,
    as Docker's 32768), the same for the process's life."""
    for k in range(1, 5):
        h = k * 1000000 + pid
        if not os.path.exists("/proc/%d" % h):
            return h
    return pid


def open_kfd():
    """The server's hold on the KFD device, as HIP opens /dev/kfd in every
    GPU process: SIM_KFD names the stand-in file (none: nothing held).
    Returns the open file, or None."""
    path = os.environ.get("SIM_KFD", "")
    return open(path, "rb") if path else None


def gpu_holders():
    """[(pid, [gpu...], percent)] of this home's live servers, of the
    foreign processes planted with a foreign record while they live, and
    of foreign_gpu_pid=N (a process of another PID namespace: listed
    whether or not N exists here) and host_gpu_pid=N[:GPU[:PERCENT]]
    (one of another container: GPU 7 and 5 % unless given). In container
    mode the local holders are listed by their host PIDs."""
    out = []
    try:
        names = sorted(os.listdir(gpu_dir()))
    except FileNotFoundError:
        names = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(gpu_dir(), name)) as f:
                rec = json.load(f)
        except (OSError, ValueError):
            continue
        if alive(int(name), server=not rec.get("foreign")):
            pid = host_pid(int(name)) if container() else int(name)
            out.append((pid, rec.get("gpus", []), rec.get("percent", 0)))
    for v in fault_values("foreign_gpu_pid"):
        if (v or "").strip().isdigit():
            out.append((int(v), [0], 40))
    for v in fault_values("host_gpu_pid"):
        parts = [p.strip() for p in (v or "").split(":")]
        if all(p.isdigit() for p in parts) and 1 <= len(parts) <= 3:
            parts += ["7", "5"][len(parts) - 1:]
            out.append((int(parts[0]), [int(parts[1])], int(parts[2])))
    return out


def gpu_use(exclude=None):
    """{gpu: percent in use}, summed over the holders (at most 100), those
    of pid `exclude` (a server asking what others hold) left out."""
    use = {}
    for pid, gpus, percent in gpu_holders():
        if exclude is not None and pid in (exclude, host_pid(exclude)):
            continue
        for g in gpus:
            use[g] = min(100, use.get(g, 0) + percent)
    return use


def process_name(pid):
    """/proc/<pid>/comm, as rocm-smi's KFD table shows it."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip() or "unknown"
    except OSError:
        return "unknown"

def get_tokenizer(tokenizer_id):
    """AutoTokenizer.from_pretrained as the simulator can: a local folder
    with a tokenizer_config.json; {"chat_template": text or None}. ATOM's
    bench loads it so (benchmark_serving.py), and so does its server at
    start, before the engine (api_server.py main, _load_tokenizer)."""
    conf_path = os.path.join(tokenizer_id, "tokenizer_config.json")
    if not os.path.isfile(conf_path):
        raise OSError(
            "Can't load tokenizer for '%s'. If you were trying to load it "
            "from 'https://huggingface.co/models', make sure you don't have "
            "a local directory with the same name. Otherwise, make sure '%s' "
            "is the correct path to a directory containing all relevant "
            "files for a PreTrainedTokenizerFast tokenizer."
            % (tokenizer_id, tokenizer_id))
    with open(conf_path) as f:
        template = json.load(f).get("chat_template")
    jinja = os.path.join(tokenizer_id, "chat_template.jinja")
    if template is None and os.path.isfile(jinja):
        with open(jinja) as f:
            template = f.read()
    return {"chat_template": template}



def main(argv):
    if len(argv) >= 2 and argv[0] == "record":
        record_call(argv[1], argv[2:])
        return 0
    print("usage: simcommon.py record SCRIPT [ARGS...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

