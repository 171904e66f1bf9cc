"""The tree as committed (git ls-files, else every file under it): no
merge's conflict markers left in a file, and no path of one machine's
workspace (a checkout's parent folder, which tests reach through
TRACES_DIR and the like, never by name). Runs no code of traced's."""
import os
import subprocess
import sys

from tracedtest import SRC_DIR, check

MARKERS = ("<<<<<<< ", ">>>>>>> ")


def tree_files():
    try:
        out = subprocess.run(["git", "-C", SRC_DIR, "ls-files", "-z"],
                             check=True, capture_output=True).stdout
        return [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        return [os.path.relpath(os.path.join(d, f), SRC_DIR)
                for d, _, fs in os.walk(SRC_DIR) for f in fs]


def text_lines(name):
    try:
        with open(os.path.join(SRC_DIR, name), "rb") as f:
            data = f.read()
    except OSError:
        return []
    if b"\0" in data:
        return []
    return data.decode("utf-8", "replace").splitlines()


def main():
    workspace = os.path.dirname(os.path.abspath(SRC_DIR)) + os.sep
    found = []
    for name in tree_files():
        for no, line in enumerate(text_lines(name), 1):
            if line.startswith(MARKERS):
                found.append("%s:%d: a conflict marker" % (name, no))
            if workspace != os.sep and workspace in line:
                found.append("%s:%d: names %s" % (name, no, workspace))
    check(not found, "\n".join(found))
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
