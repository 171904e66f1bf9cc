#!/usr/bin/env python3
"""The indexer's benchmarks (bench_index.sh, bench_scale.sh call this).

Every figure is the median of ROUNDS runs of a whole process (stdout to
/dev/null), wall time and peak RSS from wait4(); the commands compared are
run one after the other within each round, so that a noisy neighbour on a
shared machine slows them alike.

  bench.py index  TRACE...   traced (ISA-L build), igzip -dc, traced (zlib
                             build) and zcat on each trace; ratios against
                             the targets (<= 1.5x igzip, <= 1.2x zcat, peak
                             RSS < 32 MB)
  bench.py scale  TRACE      N copies of one rank (1, 2, 4) indexed with
                             --jobs 1, 2, 4 (and --jobs 2 --threads 2) in
                             one process; times and the ratios to one copy

Env: TRACED_BIN (build/traced), TRACED_ZLIB_BIN (build-zlib/traced),
ROUNDS (5), BENCH_PYTHON=1 adds Python's json.load on the first trace.
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("ROUNDS", "5"))
TRACED = os.environ.get("TRACED_BIN", "build/traced")
TRACED_ZLIB = os.environ.get("TRACED_ZLIB_BIN", "build-zlib/traced")


def run(cmd):
    """(wall seconds, peak RSS in KB, CPU seconds: user + system) of one
    run of cmd. RSS and CPU are GNU time's (-f %M %U %S): a child forked
    from this Python process would count the interpreter's pages it shares
    until exec."""
    with tempfile.NamedTemporaryFile("r") as out:
        t = time.monotonic()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M %U %S", "-o",
                              out.name] + cmd, stdout=subprocess.DEVNULL)
        status = p.wait()
        wall = time.monotonic() - t
        if status != 0:
            sys.exit("bench: %s failed (status %d)" % (" ".join(cmd), status))
        rss, user, system = out.read().split()[-3:]
        return wall, int(rss), float(user) + float(system)


def rounds(cmds, n=None):
    """{label: (median wall, median RSS KB, [walls], [CPU s])}, the
    commands run in turn n (ROUNDS) times."""
    walls = {k: [] for k in cmds}
    rss = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    for _ in range(n or ROUNDS):
        for label, cmd in cmds.items():
            w, r, c = run(cmd)
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
    return "%s, %d cores; stage-1 kernel %s; median of %d runs" % (
        model, cpus, scan, ROUNDS)


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
        if python and i == 0:
            cmds["json.load"] = [
                "python3", "-c", "import gzip, json, sys; "
                "json.load(gzip.open(sys.argv[1]))", path]
        m = rounds(cmds)
        t, z = m["traced"], m["traced-zlib"]
        r_i, r_z = t[0] / m["igzip"][0], z[0] / m["zcat"][0]
        rss = max(t[1], z[1]) / 1024
        for label, (wall, kb, walls, _) in m.items():
            print("  %-12s %7.3f s  peak RSS %7.1f MB   runs %s" % (
                label, wall, kb / 1024, " ".join("%.2f" % w for w in walls)))
        print("  traced (ISA-L) / igzip -dc = %.2f  (target <= 1.50: %s)" % (
            r_i, verdict(r_i <= 1.5)))
        print("  traced (zlib) / zcat       = %.2f  (target <= 1.20: %s)" % (
            r_z, verdict(r_z <= 1.2)))
        print("  peak RSS %.1f MB (target < 32 MB: %s)" % (
            rss, verdict(rss < 32)))


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


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("index", "scale"):
        sys.exit(__doc__)
    if sys.argv[1] == "index":
        bench_index(sys.argv[2:])
    else:
        bench_scale(sys.argv[2])


if __name__ == "__main__":
    main()
