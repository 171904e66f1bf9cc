"""A reference's answer over the real traces computed once and shared: by
the tests that ask the same of the same trace, and by the release and
ASan+UBSan builds, whose tests read the same real traces with the same
Python (docs/TESTS.md, "CPU"). Standard library only.

    @refcache.cached
    def reference(path, ...):

makes reference() return its answer from $TRACED_REF_CACHE (a folder,
tests/CMakeLists.txt) when an earlier call computed it. Only calls whose
every file or folder argument lies in $TRACES_DIR (the real traces, read
in place and never written) are kept; any other call (a generated trace
in a temporary folder, an argument that is neither a path nor plain data)
computes, as does every call where either variable is unset (a test run
by hand).

The key holds everything the answer is a function of: each path's place
in $TRACES_DIR and the content of the file (and of the files beside it
whose names start with its name: a trace's side files) or of every file
in the folder, the other arguments, the source of the reference's module
and of every module of this tree it imports, directly or not, and
Python's version. Change a trace, a reference or an argument and the
answer is computed again; nothing is looked up by a name alone.

Two calls that ask the same at once compute it once: the second waits on
the first's lock. An answer is written whole (a rename) or not at all,
and read back as a fresh copy: a caller may change what it is given. A
call keeps one answer: computing it with changed code removes the old.
"""
import ast
import fcntl
import functools
import glob
import hashlib
import importlib.util
import json
import os
import pickle
import sys
import tempfile

TREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Uncached(Exception):
    """An argument the cache does not key (the call computes)."""


def _file_hash(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def _origin(module):
    """module's source file (a test run as a script: __main__'s)."""
    if module == "__main__":
        return getattr(sys.modules["__main__"], "__file__", None)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec else None


@functools.lru_cache(maxsize=None)
def _sources(module):
    """The source files of module and of the modules of this tree it
    imports, directly or not (a sorted tuple)."""
    seen, todo = set(), [module]
    while todo:
        origin = _origin(todo.pop())
        if origin is None:
            continue
        origin = os.path.abspath(origin)
        if (not origin.endswith(".py") or origin in seen or
                not origin.startswith(TREE + os.sep)):
            continue
        seen.add(origin)
        with open(origin, "rb") as f:
            tree = ast.parse(f.read(), origin)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    not node.level:
                todo.append(node.module)
    return tuple(sorted(seen))


def _canon(v, top):
    """v as JSON data for the key: each file or folder it names by its
    place in top and its content; Uncached for a path outside top."""
    if isinstance(v, str) and os.path.exists(v):
        real = os.path.realpath(v)
        if not real.startswith(top + os.sep):
            raise Uncached(v)
        rel = os.path.relpath(real, top)
        if os.path.isdir(real):
            files = sorted(os.path.join(r, f) for r, _, fs in os.walk(real)
                           for f in fs)
            return ["dir", rel] + [[os.path.relpath(f, real), _file_hash(f)]
                                   for f in files]
        return ["file", rel] + [[os.path.basename(p), _file_hash(p)]
                                for p in sorted(glob.glob(glob.escape(real) +
                                                          "*"))]
    if isinstance(v, (list, tuple)):
        return [type(v).__name__] + [_canon(x, top) for x in v]
    if isinstance(v, (set, frozenset)):
        return ["set"] + sorted(json.dumps(_canon(x, top)) for x in v)
    if isinstance(v, dict):
        return ["dict"] + sorted([json.dumps(_canon(k, top)), _canon(x, top)]
                                 for k, x in v.items())
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise Uncached(type(v).__name__)


def _keys(fn, args, kwargs, top):
    """(the call's key: the function, its arguments and the content of
    the files they name; the code's: Python's version and the sources)."""
    code = hashlib.sha256(sys.version.encode())
    for src in _sources(fn.__module__):
        code.update(os.path.relpath(src, TREE).encode())
        code.update(_file_hash(src).encode())
    call = hashlib.sha256(json.dumps([
        fn.__module__, fn.__qualname__, _canon(args, top),
        _canon(kwargs, top)]).encode())
    return call.hexdigest()[:32], code.hexdigest()[:32]


def _load_or_compute(path, fn, args, kwargs):
    """path's answer, or fn's, written to path; the answers of the same
    call by other code (an earlier version of a reference) are removed,
    so that the cache holds one answer per call."""
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, "rb") as f:
                return pickle.load(f)
        except FileNotFoundError:
            pass
        out = fn(*args, **kwargs)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.rename(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        for old in glob.glob(glob.escape(path.rsplit(".", 2)[0]) +
                             ".*.pickle"):
            if old != path:
                os.unlink(old)
        return out


def cached(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        cache, traces = (os.environ.get("TRACED_REF_CACHE"),
                         os.environ.get("TRACES_DIR"))
        if not cache or not traces:
            return fn(*args, **kwargs)
        try:
            call_key, code_key = _keys(fn, args, kwargs,
                                       os.path.realpath(traces))
        except Uncached:
            return fn(*args, **kwargs)
        os.makedirs(cache, exist_ok=True)
        module = fn.__module__
        if module == "__main__":
            module = os.path.basename(_origin(module) or "main")[:-3]
        return _load_or_compute(os.path.join(cache, "%s.%s.%s.%s.pickle" % (
            module, fn.__qualname__, call_key, code_key)), fn, args, kwargs)
    return call
