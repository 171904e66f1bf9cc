"""Shared helpers for the Python tests: paths, a running daemon on a free
loopback port with a private database and trace root, and HTTP calls over
real sockets. Standard library only."""
import contextlib
import errno
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SRC_DIR = os.environ.get("SRC_DIR") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
TRACES_DIR = os.environ.get("TRACES_DIR") or os.path.join(
    SRC_DIR, "..", "shared", "traces")
TRACED_BIN = os.environ.get("TRACED_BIN") or os.path.join(
    SRC_DIR, "build", "traced")
# The simulator's rocm-smi stand-in: ATOM's scripts (and the sim's) exit 1
# without a rocm-smi on PATH.
SIM_BIN = os.path.join(SRC_DIR, "sim", "bin")
# Its stand-in for ATOM's image Python (/opt/venv/bin): the scripts run a
# bare `python`, which must import ATOM.
SIM_VENV_BIN = os.path.join(SRC_DIR, "sim", "venv", "bin")
# Kernels only NVIDIA's toolchains name so: SASS arch tags, CUTLASS and
# cuBLAS families, PyTorch's CUDA-only flash attention build. None may run
# on an AMD device (the simulator's ranks are one vendor's).
NVIDIA_ONLY = re.compile(r"\bsm[5-9]\d_|xmma|cutlass|cublas|ampere_|volta_|"
                         r"turing_|hopper_|pytorch_flash::|nvjet", re.I)


def sim_path(path=None):
    """PATH with the rocm-smi and Python stand-ins first (once)."""
    path = os.environ.get("PATH", "") if path is None else path
    first = SIM_BIN + os.pathsep + SIM_VENV_BIN
    if path.startswith(first):
        return path
    return first + os.pathsep + path


def trace_files():
    """Every real trace of ../shared/traces, sorted."""
    return sorted(os.path.join(TRACES_DIR, f) for f in os.listdir(TRACES_DIR)
                  if f.endswith((".json", ".json.gz")))


_PORTS_GIVEN = set()


def _ephemeral_range():
    """The kernel's range for the local ports of outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A port nothing listens on (on any address), never one this process
    was given before, and outside the kernel's ephemeral range: a rig asks
    before the port is bound (twice: traced's, then the ATOM server's),
    and meanwhile every outgoing connection of the tests running beside it
    takes a port from that range (seen: "address already in use" under
    ctest -j 4). Drawn at random from the rest of 1024-65535."""
    lo, hi = _ephemeral_range()
    below, above = max(0, lo - 1024), max(0, 65535 - hi)
    while True:
        n = random.randrange(below + above)
        port = 1024 + n if n < below else hi + 1 + (n - below)
        if port in _PORTS_GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        _PORTS_GIVEN.add(port)
        return port


class Daemon:
    """build/traced run in the background with its own db and trace root.
    Extra configuration keys go in `conf` (written to a config file) and
    `args` (as --key value). Use as a context manager."""

    def __init__(self, conf=None, args=None, workdir=None, keep=False):
        self.dir = workdir or tempfile.mkdtemp(prefix="traced-test-")
        self.keep = keep
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.conf = {
            "listen": "127.0.0.1:%d" % self.port,
            "db": os.path.join(self.dir, "traced.db"),
            "trace_root": os.path.join(self.dir, "traces"),
            "index_jobs": "2",
            # Captures of any absolute model path (tests/test_capture_*.py
            # and tests/test_policy.py confine them).
            "model_roots": "/",
        }
        self.conf.update(conf or {})
        self.args = list(args or [])
        self.proc = None
        self.log_path = os.path.join(self.dir, "daemon.log")

    def write_conf(self):
        path = os.path.join(self.dir, "traced.conf")
        with open(path, "w") as f:
            for k, v in self.conf.items():
                f.write("%s = %s\n" % (k, v))
        return path

    def start(self, timeout=30):
        os.makedirs(self.conf["trace_root"], exist_ok=True)
        cmd = [TRACED_BIN, "--config", self.write_conf()] + self.args
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PATH=sim_path()))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("traced exited %d:\n%s" % (
                    self.proc.returncode, self.log_text()))
            try:
                if self.get("/healthz")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("traced not healthy in %ds:\n%s" % (
            timeout, self.log_text()))

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-8000:]

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the daemon; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("traced ignored signal %d" % sig)
        self.log.close()
        rc = self.proc.returncode
        self.proc = None
        return rc

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        rc = self.stop()
        if exc[0] is None and rc not in (0, None):
            raise RuntimeError("traced exited %s:\n%s" % (rc, self.log_text()))
        if not self.keep and exc[0] is None:
            shutil.rmtree(self.dir, ignore_errors=True)

    # HTTP over a real socket. Each returns (status, parsed JSON or bytes).
    def request(self, method, path, body=None, headers=None, raw=False):
        data = None
        hdrs = dict(headers or {})
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(
                body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        req = urllib.request.Request(self.base + path, data=data,
                                     method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, payload, ctype = r.status, r.read(), \
                    r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            status, payload, ctype = e.code, e.read(), \
                e.headers.get("Content-Type", "")
        if raw or "json" not in ctype:
            return status, payload
        return status, json.loads(payload)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def wait_status(self, cid, statuses=("done", "failed", "cancelled",
                                         "interrupted"), timeout=300):
        """Polls GET /captures/<id> until its status is one of statuses."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            code, cap = self.get("/captures/%s" % cid)
            if code == 200 and cap["status"] in statuses:
                return cap
            time.sleep(0.1)
        raise AssertionError("capture %s not in %s after %ds: %s\n%s" % (
            cid, statuses, timeout, cap, self.log_text()))

    def imported(self, path, timeout=300):
        """POST /imports of path, waited for: the done capture."""
        code, cap = self.post("/imports", {"path": path})
        check(code == 202, "POST /imports %s: %s" % (path, cap))
        cap = self.wait_status(cap["id"], timeout=timeout)
        check(cap["status"] == "done", "import %s: %s" % (path, cap))
        return cap


def run_named_case(scope, prefix, tmp_prefix=None):
    """Runs the case_<argv[1]> function of scope (a test file's globals())
    and exits with what it answers: 0, or 77 for skipped (ctest's
    SKIP_RETURN_CODE); prints "<prefix>_<case>: ok" or "skipped". With
    tmp_prefix, the case is given a new temporary folder of that prefix,
    removed after it."""
    cases = {n[len("case_"):]: f for n, f in scope.items()
             if n.startswith("case_")}
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        sys.exit("usage: %s %s" % (os.path.basename(sys.argv[0]),
                                   "|".join(sorted(cases))))
    if tmp_prefix is None:
        rc = cases[sys.argv[1]]() or 0
    else:
        tmp = tempfile.mkdtemp(prefix=tmp_prefix)
        try:
            rc = cases[sys.argv[1]](tmp) or 0
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%s_%s: %s" % (prefix, sys.argv[1], "skipped" if rc else "ok"))
    sys.exit(rc)


def check(cond, msg=""):
    if not cond:
        raise AssertionError(msg)


def check_eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))


def without_demangled(rows, demangled):
    """rows (step outliers) with their top kernels' "demangled" members
    taken out, each checked first against demangled (name -> the kernels
    table's demangled form, None for a plain name): top lists show what the
    kernels table shows. For comparing with the reference, which reads
    names only."""
    out = []
    for row in rows:
        tops = []
        for top in row["top_kernels"]:
            top = dict(top)
            check_eq(top.pop("demangled", None), demangled.get(top["name"]),
                     "demangled form of the top kernel %s" % top["name"][:60])
            tops.append(top)
        out.append(dict(row, top_kernels=tops))
    return out


def fold_row(acc, row, add=(), least=(), largest=()):
    """Folds row into acc as a route merges rows (common/summary.h's ALL
    column): the members of add summed, of least and of largest the
    least and the largest value."""
    for f in add:
        acc[f] += row[f]
    for f in least:
        acc[f] = min(acc[f], row[f])
    for f in largest:
        acc[f] = max(acc[f], row[f])


# ---- a daemon's memory and database ----

def vm_hwm(pid):
    """The process's peak resident size (VmHWM), in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def sanitized(pid):
    """True when the process runs under ASan (its shadow memory is no
    figure of traced's)."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def db_bytes(db):
    """(database file, WAL file) sizes in bytes."""
    return tuple(os.path.getsize(db + s) if os.path.exists(db + s) else 0
                 for s in ("", "-wal"))


# ---- a full disk (the tests that need it exit SKIPPED without root) ----

SKIPPED = 77  # ctest's SKIP_RETURN_CODE for them


@contextlib.contextmanager
def small_disk(size="3m"):
    """A tmpfs of size mounted on a fresh folder, yielded; unmounted and
    removed after. Exits SKIPPED where mounting is not allowed."""
    top = tempfile.mkdtemp(prefix="traced-disk-")
    mnt = os.path.join(top, "disk")
    os.makedirs(mnt)
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt],
            stderr=subprocess.DEVNULL).returncode != 0:
        print("skipped: cannot mount a tmpfs")
        shutil.rmtree(top)
        sys.exit(SKIPPED)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", mnt])
        shutil.rmtree(top, ignore_errors=True)


def wait_for(cond, timeout, what, every=0.05):
    """cond()'s first true value, asked every `every` s for at most timeout
    seconds; fails naming what."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("timed out waiting for %s (%s s)" % (what, timeout))


def fill(folder, name="filler"):
    """Writes a file (name) in folder until the disk is full; returns its
    path.
    Unbuffered, so that no refused bytes are left to flush at the close
    (a buffered file raised ENOSPC again there); then a byte at a time, so
    the disk is full to its last block."""
    path = os.path.join(folder, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    return path


def post_until_refused(d, limit=5000, models="/models"):
    """POSTs captures (of models in the folder models, under the daemon's
    model_roots) until one is refused (the WAL may hold free frames for a
    while after the disk is full); returns the refusal's status and body
    and the ids accepted."""
    ids = []
    for i in range(limit):
        code, body = d.post("/captures", {"model": "%s/full%d" % (models, i),
                                          "label": "x" * 512})
        if code != 202:
            return code, body, ids
        ids.append(body["id"])
    raise AssertionError("%d writes accepted on a full disk" % limit)
