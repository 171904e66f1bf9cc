#!/usr/bin/env python3
"""index/'s rooms keep their walls (index/README.md): a room's files
include only common/, index/index.h, their own room's headers and the
faces (<room>.h) of the rooms before it in the README's table, so the
include graph between rooms is a stack; no file outside a room includes
its internal header (<room>_int.h) but its tests. The order is read from
the README, the includes from the sources, so a new room or include is
checked without an edit here."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import SRC_DIR, check  # noqa: E402

INDEX = os.path.join(SRC_DIR, "index")
INCLUDE = re.compile(r'^\s*#\s*include\s+"index/([a-z_]+)/([a-z_]+\.h)"', re.M)


def rooms():
    """The rooms in the README's order (its table's first column)."""
    text = open(os.path.join(INDEX, "README.md")).read()
    order = re.findall(r"^\| `([a-z_]+)/` \|", text, re.M)
    check(order, "index/README.md lists no room")
    on_disk = sorted(d for d in os.listdir(INDEX)
                     if os.path.isdir(os.path.join(INDEX, d)))
    check(sorted(order) == on_disk,
          "index/README.md lists %s, index/ holds %s" % (order, on_disk))
    return order


def sources(folder):
    for f in sorted(os.listdir(folder)):
        if f.endswith((".c", ".h")):
            yield os.path.join(folder, f)


def includes(path):
    return INCLUDE.findall(open(path, encoding="utf-8").read())


def main():
    order = rooms()
    bad = []
    for i, room in enumerate(order):
        below = order[:i]
        for path in sources(os.path.join(INDEX, room)):
            for other, header in includes(path):
                if other == room or (other in below and
                                     header == other + ".h"):
                    continue
                bad.append("%s includes index/%s/%s" % (
                    os.path.relpath(path, SRC_DIR), other, header))
    for path in list(sources(INDEX)) + [
            p for top in ("api", "store", "daemon", "common", "atom",
                          "fleet") for p in sources(os.path.join(SRC_DIR,
                                                                 top))]:
        for other, header in includes(path):
            if header != other + ".h":
                bad.append("%s includes index/%s/%s, an internal header" % (
                    os.path.relpath(path, SRC_DIR), other, header))
    check(not bad, "\n".join(bad))
    print("rooms %s: a stack, %d files checked" % (
        " < ".join(order), sum(1 for r in order for _ in
                               sources(os.path.join(INDEX, r)))))


if __name__ == "__main__":
    main()
