#!/usr/bin/env python3
"""Each test's time from the log of a suite run (`make test 2>&1 | tee
LOG`): the ctest runs of the release build (build/) and of the ASan+UBSan
build (build-asan/), as docs/TESTS.md's table, slowest first, with the sums
and the slowest ten. --cmake prints the rows of tests/times.cmake instead.

Usage: test_times.py [--cmake] LOG"""
import re
import sys

TEST = re.compile(r"Test +#\d+: (\S+) \.+\**\s*(Passed|Failed|Not Run|"
                  r"\*\*\*Skipped|Skipped|\*\*\*Failed|\*\*\*Timeout)?.*?"
                  r"([\d.]+) sec")
PROJECT = re.compile(r"^Test project (\S+)")


def times(path):
    """{"release"|"asan": {test: seconds}}."""
    out, build = {"release": {}, "asan": {}}, None
    with open(path, errors="replace") as f:
        for line in f:
            m = PROJECT.match(line)
            if m:
                build = "asan" if m.group(1).endswith("-asan") else "release"
                continue
            m = TEST.search(line)
            if m and build:
                out[build][m.group(1)] = float(m.group(3))
    return out


def main():
    args = sys.argv[1:]
    cmake = args[:1] == ["--cmake"]
    t = times(args[-1])
    rel, asan = t["release"], t["asan"]
    names = sorted(set(rel) | set(asan),
                   key=lambda n: (-rel.get(n, 0), -asan.get(n, 0), n))
    fmt = lambda d, n: "%.1f" % d[n] if n in d else "-"  # noqa: E731
    if cmake:
        for n in names:
            print("  %s %s %s" % (n, "%.0f" % rel[n] if n in rel else "-",
                                  "%.0f" % asan[n] if n in asan else "-"))
        return
    print("| test | release s | ASan+UBSan s |")
    print("|---|---:|---:|")
    for n in names:
        print("| `%s` | %s | %s |" % (n, fmt(rel, n), fmt(asan, n)))
    print("| **%d tests, sum** | %.0f | %.0f |" % (
        len(names), sum(rel.values()), sum(asan.values())))
    top = ", ".join("`%s` %.0f s" % (n, rel[n]) for n in names[:10]
                    if n in rel)
    print("\nThe slowest ten (release): %s." % top)


if __name__ == "__main__":
    main()
