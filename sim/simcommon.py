"""Shared helpers of the ATOM simulator (standard library only): the sim
home, the call record, the fault switches, the readiness probe.

Also a small command line for the bash scripts:
  simcommon.py record SCRIPT [ARGS...]   append one line to calls.jsonl
  simcommon.py ready URL [--timeout S]   what ATOM's check_server_ready.py
                                         does: print the served model ids
                                         and exit 0 when /v1/models lists
                                         at least one, else print nothing
                                         and exit 1
"""
import datetime
import json
import os
import sys
import urllib.request

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


def launch_faults():
    """Switches from ATOM_SIM_FAULTS (';' or newline separated) as the
    process was started with them."""
    return parse_switches(os.environ.get("ATOM_SIM_FAULTS", ""), ";\n")


def file_faults():
    """Switches from $ATOM_SIM_HOME/faults, one per line, read now: tests
    flip them between steps without relaunching."""
    try:
        with open(os.path.join(home(), "faults")) as f:
            return parse_switches(f.read(), "\n")
    except FileNotFoundError:
        return []


def faults():
    return launch_faults() + file_faults()


def fault_values(name):
    """Every value given to switch `name` (None for a bare switch); empty
    when the switch is off."""
    return [v for n, v in faults() if n == name]


def fault_on(name):
    return bool(fault_values(name))


def fault_ranks(name):
    """The rank numbers given to a per-rank switch (orphan_json=1 ...)."""
    out = set()
    for v in fault_values(name):
        for part in (v or "").split(","):
            if part.strip().isdigit():
                out.add(int(part))
    return out


def env_float(name, default):
    try:
        return float(os.environ.get(name, ""))
    except ValueError:
        return default


def ready(url, timeout):
    """The model ids /v1/models serves, or [] when it does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            doc = json.load(r)
        return [m.get("id", "") for m in doc.get("data", [])]
    except (OSError, ValueError, AttributeError):
        return []


def main(argv):
    if len(argv) >= 2 and argv[0] == "record":
        record_call(argv[1], argv[2:])
        return 0
    if len(argv) >= 2 and argv[0] == "ready":
        timeout = 3.0
        if len(argv) >= 4 and argv[2] == "--timeout":
            timeout = float(argv[3])
        ids = ready(argv[1], timeout)
        if ids:
            print(",".join(ids))
            return 0
        return 1
    print("usage: simcommon.py record SCRIPT [ARGS...] | "
          "ready URL [--timeout S]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
