#!/usr/bin/env python3
"""The indexer's benchmarks (bench_index.sh, bench_scale.sh call this).

Every figure is the median of ROUNDS runs of a whole process (stdout to
/dev/null), wall time and peak RSS from wait4(); the commands compared are
run one after the other within each round, so that a noisy neighbour on a
shared machine slows them alike.

  bench.py index  TRACE...   traced (ISA-L build), igzip -dc, traced (zlib
                             build) and zcat on each trace; ratios against
                             the targets (<= 1.5x igzip's wall, <= 2.5x its
                             CPU, <= 1.2x zcat, peak RSS <= 32 MB); with
                             TRACED_BASE_BIN, that build too, in the same
                             rounds, and traced's ratios to it
  bench.py scale  TRACE      N copies of one rank (1, 2, 4) indexed with
                             --jobs 1, 2, 4 (and --jobs 2 --threads 2) in
                             one process; times and the ratios to one copy
  bench.py cpath  BIG SOURCE traced against a build without the critical
                             path (TRACED_BASE_BIN) on BIG: <= 1.15x its
                             wall, peak RSS < 48 MB; HTA's critical path
                             analysis on SOURCE (and BIG with HTA_BIG=1)

Env: TRACED_BIN (build/traced), TRACED_ZLIB_BIN (build-zlib/traced),
ROUNDS (5), BENCH_RT (1: under chrt -f 50 when root), BENCH_PYTHON=1 adds Python's json.load on the first trace;
for cpath TRACED_BASE_BIN, HTA_BIG, HTA_TIMEOUT (1800 s).
"""
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("ROUNDS", "5"))
# The commands compared in rounds() under SCHED_FIFO (chrt -f 50) when
# root, unless BENCH_RT=0: the other work of a shared machine then cannot
# preempt them (a peer's minutes-long run is not: it would starve a core).
# It does not remove a virtual machine's stolen time or shared caches: the
# ratios still move by a tenth between runs of the script on a busy host.
RT = (os.environ.get("BENCH_RT", "1") != "0" and os.geteuid() == 0 and
      shutil.which("chrt") is not None)
TRACED = os.environ.get("TRACED_BIN", "build/traced")
TRACED_ZLIB = os.environ.get("TRACED_ZLIB_BIN", "build-zlib/traced")
BASE = os.environ.get("TRACED_BASE_BIN")  # another build, taking turns


def run(cmd, may_fail=False, rt=False):
    """(wall seconds, peak RSS in KB, CPU seconds: user + system) of one
    run of cmd. RSS and CPU are GNU time's (-f %M %U %S): a child forked
    from this Python process would count the interpreter's pages it shares
    until exec. A failed run exits, or with may_fail is (wall, RSS,
    status). rt: under chrt -f 50 (RT above)."""
    with tempfile.NamedTemporaryFile("r") as out:
        t = time.monotonic()
        prio = ["chrt", "-f", "50"] if rt else []
        p = subprocess.Popen(prio + ["/usr/bin/time", "-f", "%M %U %S", "-o",
                                   out.name] + cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL if may_fail else None)
        status = p.wait()
        wall = time.monotonic() - t
        rss, user, system = out.read().split()[-3:]
        if may_fail:
            return wall, int(rss), status
        if status != 0:
            sys.exit("bench: %s failed (status %d)" % (" ".join(cmd), status))
        return wall, int(rss), float(user) + float(system)


def rounds(cmds, n=None):
    """{label: (median wall, median RSS KB, [walls], [CPU s])}, the
    commands run in turn n (ROUNDS) times."""
    walls = {k: [] for k in cmds}
    rss = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    for _ in range(n or ROUNDS):
        for label, cmd in cmds.items():
            w, r, c = run(cmd, rt=RT)
            walls[label].append(w)
            rss[label].append(r)
            cpu[label].append(c)
    return {k: (statistics.median(walls[k]), statistics.median(rss[k]),
                walls[k], cpu[k]) for k in cmds}


def machine():
    model, cpus = platform.processor() or "?", os.cpu_count()
    try:
        for line in subprocess.run(["lscpu"], capture_output=True,
                                   text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    scan = os.environ.get("TRACED_SCAN")
    if not scan:
        flags = open("/proc/cpuinfo").read()
        scan = ("avx512" if " avx512bw" in flags else
                "avx2" if " avx2" in flags else "sse2") + " (the CPU's best)"
    return "%s, %d cores; stage-1 kernel %s; median of %d runs%s" % (
        model, cpus, scan, ROUNDS, " under SCHED_FIFO" if RT else "")


def check_facts(path):
    """traced index must count every event the generator wrote."""
    out = subprocess.run([TRACED, "index", path], capture_output=True,
                         text=True, check=True).stdout
    got = json.loads(out)
    facts = path + ".facts.json"
    if os.path.exists(facts):
        want = json.load(open(facts))
        assert got["events"] == want["events"], (got["events"], want)
        assert got["json_bytes"] == want["json_bytes"], (got, want)
    assert got["skipped_events"] == 0
    return got


def verdict(ok):
    return "ok" if ok else "MISSED"


def show(m, width=22):
    """rounds()'s answer m, a line per command: medians and every run."""
    for label, (wall, kb, walls, cpus) in m.items():
        print("  %-*s %7.3f s wall %7.3f s CPU  peak RSS %7.1f MB  runs "
              "(wall/CPU s) %s" % (width, label, wall, statistics.median(cpus),
                                   kb / 1024, " ".join(
                                       "%.2f/%.2f" % wc for wc in
                                       zip(walls, cpus))))


def bench_index(paths):
    print("machine:", machine())
    python = os.environ.get("BENCH_PYTHON") == "1"
    for i, path in enumerate(paths):
        got = check_facts(path)
        print("== %s: %.2f GB JSON, %.0f MB gzip, %d events" % (
            os.path.basename(path), got["json_bytes"] / 1e9,
            os.path.getsize(path) / 1e6, got["events"]))
        cmds = {
            "traced": [TRACED, "index", path],
            "igzip": ["igzip", "-dc", path],
            "traced-zlib": [TRACED_ZLIB, "index", path],
            "zcat": ["zcat", path],
        }
        if BASE:
            cmds["base"] = [BASE, "index", path]
        if python and i == 0:
            cmds["json.load"] = [
                "python3", "-c", "import gzip, json, sys; "
                "json.load(gzip.open(sys.argv[1]))", path]
        m = rounds(cmds)
        t, z = m["traced"], m["traced-zlib"]
        r_i, r_z = t[0] / m["igzip"][0], z[0] / m["zcat"][0]
        cpu = {k: statistics.median(v[3]) for k, v in m.items()}
        c_i = cpu["traced"] / cpu["igzip"]
        rss = max(t[1], z[1]) / 1024
        for label, (wall, kb, walls, cpus) in m.items():
            print("  %-12s %7.3f s  CPU %6.3f s  peak RSS %7.1f MB   runs %s"
                  % (label, wall, cpu[label], kb / 1024,
                     " ".join("%.2f" % w for w in walls)))
        print("  traced (ISA-L) / igzip -dc = %.2f  (target <= 1.50: %s)" % (
            r_i, verdict(r_i <= 1.5)))
        print("  CPU (user + system), traced (ISA-L) / igzip -dc = %.2f  "
              "(target <= 2.50: %s)" % (c_i, verdict(c_i <= 2.5)))
        print("  traced (zlib) / zcat       = %.2f  (target <= 1.20: %s)" % (
            r_z, verdict(r_z <= 1.2)))
        print("  peak RSS %.1f MB (target <= 32 MB: %s)" % (
            rss, verdict(rss <= 32)))
        if BASE:
            b = m["base"]
            print("  traced / base (%s): wall %.3f, CPU %.3f, peak RSS %.1f "
                  "against %.1f MB" % (BASE, t[0] / b[0],
                                       cpu["traced"] / cpu["base"],
                                       t[1] / 1024, b[1] / 1024))


def bench_scale(path):
    """1, 2 and 4 copies of the rank with --jobs 1, 2, 4 (a copy is the
    same file named again: it is in the page cache, as a capture's ranks
    are right after the export). Each file gets the cores / jobs threads
    (traced index's default), and for 2 and 4 copies --jobs 2 is also run
    with 2 threads a file, to show what oversubscribing costs."""
    print("machine:", machine())
    got = check_facts(path)
    print("== up to 4 copies of %s (%.2f GB JSON each)" % (
        os.path.basename(path), got["json_bytes"] / 1e9))
    cores = os.cpu_count() or 1
    cmds = {}
    for copies in (1, 2, 4):
        configs = [(jobs, max(1, cores // jobs)) for jobs in (1, 2, 4)
                   if jobs <= copies]
        if copies >= 2:
            configs.append((2, 2))  # two jobs of two threads each
        for jobs, threads in sorted(set(configs)):
            cmds[(copies, jobs, threads)] = [
                TRACED, "index", "--jobs", str(jobs), "--threads",
                str(threads)] + [path] * copies
    m = rounds(cmds)
    one = [v[0] for k, v in m.items() if k[0] == 1][0]
    print("  copies jobs threads   wall s   x one copy   speed-up vs --jobs 1"
          "   peak RSS MB")
    for (copies, jobs, threads), (wall, kb, _, _) in m.items():
        seq = [v[0] for k, v in m.items() if k[0] == copies and k[1] == 1][0]
        print("  %6d %4d %7d %8.2f %12.2f %22.2f %13.1f" % (
            copies, jobs, threads, wall, wall / one, seq / wall, kb / 1024))


def hta_cmd(trace, tmp):
    """HTA's critical path analysis of trace (tests/hta_cpath.py, one
    window over the whole trace), or None without HTA or what it imports."""
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "tests")
    sys.path.insert(0, tests)
    import test_cpath_hta
    src, py = test_cpath_hta.hta_source(tmp), test_cpath_hta.interpreter()
    if src is None or py is None:
        return None
    return ["timeout", os.environ.get("HTA_TIMEOUT", "1800"), py,
            os.path.join(tests, "hta_cpath.py"), "--hta-src", src, "--trace",
            trace]


def bench_cpath(big, source):
    """The critical path's cost: traced against the build without it on
    the big rank (the commands in turn, ROUNDS times), then HTA once per
    trace (minutes: its pandas frames hold the whole trace)."""
    print("machine:", machine())
    got = check_facts(big)
    print("== %s: %.2f GB JSON, %d events, %d steps on a critical path" % (
        os.path.basename(big), got["json_bytes"] / 1e9, got["events"],
        got["critical_path_steps"]))
    base = os.environ.get("TRACED_BASE_BIN", "bench/out/base-build/traced")
    m = rounds({"traced": [TRACED, "index", big],
                "traced-base": [base, "index", big]})
    for label, (wall, kb, walls, cpus) in m.items():
        print("  %-12s %7.3f s  CPU %7.3f s  peak RSS %7.1f MB   runs %s" % (
            label, wall, statistics.median(cpus), kb / 1024,
            " ".join("%.2f" % w for w in walls)))
    ratio, rss = m["traced"][0] / m["traced-base"][0], m["traced"][1] / 1024
    cpu = statistics.median(m["traced"][3]) / statistics.median(
        m["traced-base"][3])
    print("  traced / traced without the critical path = %.3f wall, %.3f CPU"
          "  (target <= 1.15: %s)" % (ratio, cpu, verdict(ratio <= 1.15)))
    print("  peak RSS %.1f MB (target < 48 MB: %s)" % (rss, verdict(rss < 48)))
    traces = [source] + ([big] if os.environ.get("HTA_BIG") == "1" else [])
    with tempfile.TemporaryDirectory(prefix="bench_hta_") as tmp:
        for trace in traces:
            cmd = hta_cmd(trace, tmp)
            if cmd is None:
                print("  HTA: skipped (its source or what it imports is missing)")
                return
            t_wall, t_kb, _ = run([TRACED, "index", trace])
            wall, kb, status = run(cmd, may_fail=True)
            print("== %s: HTA critical_path_analysis %.1f s, peak RSS %.0f MB"
                  "%s; traced index (every figure) %.2f s, %.1f MB" % (
                      os.path.basename(trace), wall, kb / 1024,
                      "" if status == 0 else " (did not finish: status %d)"
                      % status, t_wall, t_kb / 1024))


def main():
    modes = {"index": lambda a: bench_index(a), "scale":
             lambda a: bench_scale(a[0]), "cpath": lambda a: bench_cpath(*a)}
    if len(sys.argv) < 3 or sys.argv[1] not in modes or \
            (sys.argv[1] == "cpath" and len(sys.argv) != 4):
        sys.exit(__doc__)
    modes[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
