#!/usr/bin/env python3
"""Each test's time from the log of a suite run (`make test 2>&1 | tee
LOG`): the ctest runs of the release build (build/) and of the ASan+UBSan
build (build-asan/), as docs/TESTS.md's table, slowest first, with the sums
and the slowest ten; with a second log, its times beside them ("before").
--cmake prints the rows of tests/times.cmake instead.

Usage: test_times.py [--cmake] LOG [BEFORE_LOG]"""
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
    logs = args[1:] if cmake else args
    t = times(logs[0])
    rel, asan = t["release"], t["asan"]
    names = sorted(set(rel) | set(asan),
                   key=lambda n: (-rel.get(n, 0), -asan.get(n, 0), n))
    if cmake:
        for n in names:
            print("  %s %s %s" % (n, "%.0f" % rel[n] if n in rel else "-",
                                  "%.0f" % asan[n] if n in asan else "-"))
        return
    cols = [rel, asan]
    head = "| test | release s | ASan+UBSan s |"
    if len(logs) > 1:
        b = times(logs[1])
        cols += [b["release"], b["asan"]]
        head += " before: release s | before: ASan+UBSan s |"
    print(head)
    print("|---|" + "---:|" * len(cols))
    for n in names:
        print("| `%s` | %s |" % (n, " | ".join(
            "%.1f" % c[n] if n in c else "-" for c in cols)))
    print("| **sum** | %s |" % " | ".join("%.0f" % sum(c.values())
                                          for c in cols))
    top = ", ".join("`%s` %.0f s" % (n, rel[n]) for n in names[:10]
                    if n in rel)
    print("\nThe slowest ten (release): %s." % top)


if __name__ == "__main__":
    main()
