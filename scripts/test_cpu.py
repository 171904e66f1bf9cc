#!/usr/bin/env python3
"""Runs one test and records the CPU (user + system) of its whole process
tree: the test, the daemons it starts, their children (the simulator's
servers and scripts), whatever they fork, including what outlives its
parent. ctest runs each test under it when the build is configured with
-DTRACED_TEST_CPU=ON (tests/CMakeLists.txt; scripts/suite.sh does);
docs/TESTS.md, "CPU".

  test_cpu.py LOG NAME -- COMMAND...

appends to LOG one line "NAME user_s sys_s wall_s how exit" (one write,
O_APPEND: whole lines from tests running at once) and exits with
COMMAND's status.

  test_cpu.py --table RELEASE_LOG [ASAN_LOG]

prints docs/TESTS.md's table from the logs of the release and the
ASan+UBSan builds (build*/Testing/cpu.txt; a test's last line counts):
each test's CPU seconds and wall seconds, the most CPU first, their sums
and the ten costliest.

How, by what the machine allows:
  cgroup  the test runs in a cgroup of its own (cgroup v2's cpu.stat, or
          v1's cpuacct): every process of the tree is counted, whoever
          reaps it, until the cgroup is empty;
  reaped  no cgroup may be made (not root): this process is the tree's
          subreaper (PR_SET_CHILD_SUBREAPER), so that every descendant
          whose parent dies is reparented to it and reaped here; the
          children's rusage then holds every process of the tree.
TEST_CPU_HOW=reaped takes the second where the first is possible.
Either way, what the test leaves running once it exits is given 5 s to
end, then killed (its pids on stderr, "+left" in the line): its CPU so
far is counted, and a test leaving processes behind is a defect to fix.
"""
import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 5.0
LIBC = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    return LIBC.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def mounts():
    """{fstype: [(mount point, options)]} of the cgroup filesystems."""
    out = {}
    with open("/proc/self/mounts") as f:
        for line in f:
            _, point, fstype, opts = line.split()[:4]
            if fstype in ("cgroup", "cgroup2"):
                out.setdefault(fstype, []).append(
                    (point, opts.split(",")))
    return out


def own_cgroups():
    """{controller or "": path} of this process (/proc/self/cgroup)."""
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                out[c] = path
    return out


class Cgroup:
    """A cgroup of the test's own beside this process's (v2 first)."""

    def __init__(self, path, v2):
        self.path, self.v2 = path, v2

    @classmethod
    def make(cls, name):
        m, own = mounts(), own_cgroups()
        tries = [(p, own.get(""), True) for p, _ in m.get("cgroup2", [])]
        tries += [(p, own.get("cpuacct"), False)
                  for p, opts in m.get("cgroup", []) if "cpuacct" in opts]
        for point, rel, v2 in tries:
            if rel is None:
                continue
            sweep(os.path.join(point, rel.lstrip("/")))
            path = os.path.join(point, rel.lstrip("/"),
                                "traced-test-%d-%s" % (os.getpid(), name))
            try:
                os.mkdir(path)
            except OSError:
                continue
            cg = cls(path, v2)
            # Moving this process in and back out proves that the test
            # may be moved in (the child, before its exec).
            if cg.usage() is not None and cg.join() and cg.leave():
                return cg
            cg.leave()
            cg.remove()
        return None

    def join(self):
        return write(os.path.join(self.path, "cgroup.procs"), "0")

    def leave(self):
        return write(os.path.join(os.path.dirname(self.path),
                                  "cgroup.procs"), "0")

    def pids(self):
        with open(os.path.join(self.path, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]

    def usage(self):
        """(user s, system s), or None where this cgroup does not say."""
        try:
            if self.v2:
                with open(os.path.join(self.path, "cpu.stat")) as f:
                    st = dict(line.split() for line in f)
                return (int(st["user_usec"]) / 1e6,
                        int(st["system_usec"]) / 1e6)
            out = []
            for part in ("user", "sys"):
                with open(os.path.join(self.path,
                                       "cpuacct.usage_" + part)) as f:
                    out.append(int(f.read()) / 1e9)
            return tuple(out)
        except (OSError, KeyError, ValueError):
            return None

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError as e:
            print("test_cpu: %s left: %s" % (self.path, e), file=sys.stderr)


def sweep(parent):
    """Removes the empty cgroups of launchers that were killed (ctest
    kills a test past its timeout)."""
    for d in os.listdir(parent):
        if d.startswith("traced-test-"):
            pid = d.split("-")[2]
            if pid.isdigit() and not os.path.exists("/proc/" + pid):
                try:
                    os.rmdir(os.path.join(parent, d))
                except OSError:
                    pass


def write(path, text):
    try:
        with open(path, "w") as f:
            f.write(text)
        return True
    except OSError:
        return False


def reap():
    """Reaps every child that has ended; True while some are alive."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def alive(cg):
    """The tree's processes still running (the cgroup's, or children
    left to this subreaper)."""
    if cg:
        reap()
        return cg.pids()
    return [0] if reap() else []


def children():
    """This process's children (left to it as the tree's subreaper)."""
    me = str(os.getpid())
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if ppid == me:
            out.append(int(pid))
    return out


def end_left(cg):
    """Waits GRACE_S for what the test left running, then kills it; the
    pids killed."""
    deadline = time.monotonic() + GRACE_S
    while alive(cg) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = []
    for _ in range(50):
        pids = [p for p in (cg.pids() if cg else children())
                if p != os.getpid()]
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left += [p for p in pids if p not in left]
        time.sleep(0.05)
        reap()
    while alive(cg):
        time.sleep(0.05)
    return left


def run(cmd, cg):
    """Runs cmd (in cg); its exit status as a shell gives it. Meanwhile
    reaps every process left to this subreaper as soon as it ends, as
    init would: a zombie would still count as alive (kill(pid, 0), a
    process group's members)."""
    pid = os.fork()
    if pid == 0:
        try:
            # ctest ends a test past its timeout by killing this process:
            # the test goes with it, as it would without a launcher.
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if cg is None or cg.join():
                os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, lambda sig, _: os.kill(pid, sig))
    while True:
        got, status = os.wait()
        if got == pid:
            rc = os.waitstatus_to_exitcode(status)
            return 128 - rc if rc < 0 else rc


def read_log(path):
    """{test: (cpu s, wall s)}, a test's last line."""
    out = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 6:
                out[w[0]] = (float(w[1]) + float(w[2]), float(w[3]))
    return out


def table(paths):
    logs = [read_log(p) for p in paths]
    names = sorted(set().union(*logs), key=lambda n: (
        -sum(g[n][0] for g in logs if n in g), n))
    builds = ["release", "ASan+UBSan"][:len(logs)]
    print("| test | %s |" % " | ".join(
        "%s CPU s | %s wall s" % (b, b) for b in builds))
    print("|---|" + "---:|" * 2 * len(logs))

    def cell(g, n, i):
        return "%.1f" % g[n][i] if n in g else "-"
    for n in names:
        print("| `%s` | %s |" % (n, " | ".join(
            "%s | %s" % (cell(g, n, 0), cell(g, n, 1)) for g in logs)))
    print("| **sum** | %s |" % " | ".join(
        "%.0f | %.0f" % (sum(v[0] for v in g.values()),
                         sum(v[1] for v in g.values())) for g in logs))
    print("\nThe ten costliest (CPU s, %s): %s." % (
        " + ".join(builds), ", ".join(
            "`%s` %.0f" % (n, sum(g[n][0] for g in logs if n in g))
            for n in names[:10])))


def main():
    args = sys.argv[1:]
    if args[:1] == ["--table"] and len(args) in (2, 3):
        table(args[1:])
        return
    if len(args) < 4 or args[2] != "--":
        sys.exit(__doc__)
    log, name, cmd = args[0], args[1], args[3:]
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    cg = None if os.environ.get("TEST_CPU_HOW") == "reaped" else \
        Cgroup.make(name)
    t0 = time.monotonic()
    rc = run(cmd, cg)
    wall = time.monotonic() - t0
    left = end_left(cg)
    if left:
        print("test_cpu: %s left %d processes running, killed: %s" % (
            name, len(left), " ".join(map(str, left))), file=sys.stderr)
    if cg:
        user, system = cg.usage()
        cg.remove()
    else:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, system = ru.ru_utime, ru.ru_stime
    line = "%s %.2f %.2f %.2f %s%s %d\n" % (
        name, user, system, wall, "cgroup" if cg else "reaped",
        "+left" if left else "", rc)
    os.makedirs(os.path.dirname(os.path.abspath(log)), exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    sys.exit(rc)


if __name__ == "__main__":
    main()
