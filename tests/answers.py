#!/usr/bin/env python3
"""Every answer of one build, to compare with another's byte for byte.

  answers.py generate DIR                    the project's generated traces
  answers.py dump --bin TRACED --out DIR [--extra GENERATED]
                                             every answer of TRACED into DIR
  answers.py compare DIR_A DIR_B             every difference between two
                                             dumps; exit 1 when there is one

scripts/compare_answers.sh builds two revisions and runs both. A dump holds:

  - `traced index` of every trace of TRACES_DIR (../shared/traces by
    default) and of the --extra folders: each file alone (with its capture_traces when it has some,
    graph_pairs/ included, and each capture trace as a trace of its own),
    with one thread and with two, with a small --max-kernel-names (names
    folded), with --points (the points file's bytes), every file at once
    with --jobs 2, and the top-level files as the ranks of one capture with
    --collectives (the answer file);
  - a daemon that imports each of those files, each graph pair's folder
    and the whole folder as one capture of many ranks, then every GET route
    of api/openapi.yaml (read at run time, so a new route is asked without
    an edit here) for each import: bare, with each rank, each value of each
    enum parameter (by, sort, format=csv, on_path...), each other query
    parameter with its spec example and with a value taken from the bare
    answer's rows (a kernel name, a step kind, a module...), the slices of
    fixed windows, and /diff between consecutive imports by each of its by
    values.

Answers are kept as the daemon sent them (status, Content-Type, body),
except for what changes from one run of one build to the next (VOLATILE:
wall-clock times, the daemon's own counters of time and requests), which
is masked. `answers.py compare` of two dumps of one build lists nothing.
Env: TRACES_DIR, SRC_DIR (the tree whose api/openapi.yaml is read; the
dumped build's own spec is better: scripts/compare_answers.sh passes it).
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tracedtest as T  # noqa: E402

# Bodies larger than this are kept as their hash only (a raw trace); the
# others gzipped, to show where two differ.
KEEP_BYTES = 4 << 20
# Members that differ between two runs of one build: wall-clock times.
VOLATILE_KEYS = re.compile(r"^(created_at|started_at|finished_at|"
                           r"phase_started_at)$")
# Metric lines whose value is the daemon's own time or request count.
VOLATILE_METRICS = re.compile(r"^traced_(index_seconds_total|"
                              r"http_requests_total)")
# Windows of the slices, ns after t0: the first ms, the first 20 ms, one
# ms in the middle of the span (filled in per import).
SLICE_WINDOWS = [(0, 1000000), (0, 20000000)]
# The row members a query parameter may take its value from.
PARAM_SOURCES = {
    "q": ("name", "family", "module", "op", "sequence"),
    "category": ("category",),
    "family": ("family",),
    "kind": ("kind", "step"),
    "module": ("module",),
    "step": ("index",),
}


def sha(b):
    return hashlib.sha256(b).hexdigest()


class Dump:
    """The answers, one file each under out/ (gzipped), listed in
    out/answers.tsv: key, sha256 of the body, its size, its file."""

    def __init__(self, out):
        self.out = out
        os.makedirs(out, exist_ok=True)
        self.manifest = open(os.path.join(out, "answers.tsv"), "w")
        self.n = 0
        self.keys = set()
        self.routes = set()  # the spec's templates asked

    def has(self, key):
        return key in self.keys

    def put(self, key, body):
        assert key not in self.keys, key
        self.keys.add(key)
        self.n += 1
        name = "%05d.gz" % self.n
        digest = sha(body)
        if len(body) <= KEEP_BYTES:
            with gzip.open(os.path.join(self.out, name), "wb", 1) as f:
                f.write(body)
        else:
            name = "-"
        self.manifest.write("%s\t%s\t%d\t%s\n" % (key, digest, len(body),
                                                  name))

    def close(self):
        self.manifest.close()


# ---- traced index ----

NOT_TRACES = ("facts.json", "execution_details.json")


def trace_files(root):
    """Every trace file under root, sorted, capture traces included."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        out += [os.path.join(dirpath, f) for f in sorted(files)
                if f.endswith((".json", ".json.gz")) and
                not f.endswith(NOT_TRACES)]
    return out


def index_inputs(roots):
    """(label, path, extra args) of every trace file to index alone: each
    file of each root (with the capture_traces beside it, by default), and
    a run trace whose capture traces are in a graph pair's folder of their
    own (graph_pairs/<name>/ without a run trace)."""
    out = [(label(roots, p), p, []) for root in roots
           for p in trace_files(root)]
    gp = os.path.join(roots[0], "graph_pairs")
    for name in sorted(os.listdir(gp)) if os.path.isdir(gp) else []:
        caps = os.path.join(gp, name, "capture_traces")
        runs = [p for p in os.listdir(os.path.join(gp, name))
                if p.endswith(".json.gz")]
        top = [p for _, p, _ in out if os.path.dirname(p) == roots[0] and
               name in os.path.basename(p)]
        if os.path.isdir(caps) and not runs and top:
            out.append(("%s+captures" % label(roots, top[0]), top[0],
                        ["--captures", caps]))
    return out


def run_index(binary, args):
    p = subprocess.run([binary, "index"] + args, capture_output=True)
    return b"exit %d\n%s\n--- stderr\n%s" % (p.returncode, p.stdout,
                                             p.stderr)


def dump_index(binary, roots, d):
    inputs = index_inputs(roots)
    tmp = tempfile.mkdtemp(prefix="answers-")
    for label, path, extra in inputs:
        for variant, args in (("", []), ("threads1", ["--threads", "1"]),
                              ("threads2", ["--threads", "2"]),
                              ("names16", ["--max-kernel-names", "16"])):
            d.put("index %s %s" % (label, variant),
                  run_index(binary, extra + args + [path]))
        pts = os.path.join(tmp, "points")
        os.makedirs(pts, exist_ok=True)
        d.put("index %s points" % label,
              run_index(binary, extra + ["--points", pts, path]))
        for f in sorted(os.listdir(pts)):
            with open(os.path.join(pts, f), "rb") as fh:
                d.put("index %s points-file %s" % (label, f), fh.read())
            os.unlink(os.path.join(pts, f))
    paths = [p for _, p, extra in inputs if not extra]
    d.put("index --jobs 2 all", run_index(binary, ["--jobs", "2"] + paths))
    top = sorted(p for p in paths if os.path.dirname(p) == roots[0])
    coll = os.path.join(tmp, "collectives.json")
    d.put("index --collectives top", run_index(
        binary, ["--collectives", coll, "--captures", "none"] + top))
    if os.path.exists(coll):
        with open(coll, "rb") as fh:
            d.put("index --collectives top file", fh.read())
    subprocess.run(["rm", "-rf", tmp])
    return len(inputs)


# ---- the daemon ----

def normalise(path, ctype, body):
    """The body with what changes between runs of one build masked."""
    if "json" in ctype:
        try:
            doc = json.loads(body)
        except ValueError:
            return body
        if not mask(doc):
            return body
        return json.dumps(doc, sort_keys=False).encode()
    if path.startswith("/metrics"):
        lines = [re.sub(r" \S+$", " *", ln)
                 if VOLATILE_METRICS.match(ln) else ln
                 for ln in body.decode("utf-8", "replace").split("\n")]
        return "\n".join(lines).encode()
    return body


def mask(doc):
    """Masks VOLATILE_KEYS in doc in place; whether any was there."""
    hit = False
    if isinstance(doc, dict):
        for k in doc:
            if VOLATILE_KEYS.match(k) and isinstance(doc[k], str):
                doc[k] = "*"
                hit = True
            else:
                hit = mask(doc[k]) or hit
    elif isinstance(doc, list):
        for v in doc:
            hit = mask(v) or hit
    return hit


def get(daemon, path):
    """(status, Content-Type, body) of GET path."""
    req = urllib.request.Request(daemon.base + path, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def spec_params(spec, op):
    """The operation's parameters, $refs resolved."""
    out = []
    for p in op.get("parameters", []):
        if "$ref" in p:
            p = spec["components"]["parameters"][p["$ref"].split("/")[-1]]
        out.append(p)
    return out


def row_values(body, members):
    """Values of the first of members found in the answer's rows: the
    first row's and the last's."""
    try:
        doc = json.loads(body)
    except ValueError:
        return []
    rows = doc.get("rows") if isinstance(doc, dict) else None
    vals = []
    for row in (rows[0], rows[-1]) if rows else ():
        for m in members:
            v = row.get(m) if isinstance(row, dict) else None
            if isinstance(v, (str, int)) and not isinstance(v, bool) and \
                    str(v) not in vals:
                vals.append(str(v))
                break
    return vals


def variants(spec, op, bare, ranks):
    """Query strings to ask beside the bare one."""
    qs = []
    for p in spec_params(spec, op):
        if p.get("in") != "query" or p.get("required"):
            continue
        name, sch = p["name"], p.get("schema", {})
        vals = []
        if name == "rank":
            vals = [str(r) for r in ranks]
        elif "enum" in sch:
            vals = [str(v) for v in sch["enum"]]
        else:
            if "example" in p:
                vals.append(str(p["example"]))
            if name in PARAM_SOURCES:
                vals += row_values(bare, PARAM_SOURCES[name])
            if name == "q":  # a substring, case-insensitive
                vals += [v[:6].upper() for v in row_values(
                    bare, PARAM_SOURCES["q"])]
        for v in dict.fromkeys(vals):
            qs.append({name: v})
    # Each rank with the enum parameters (by, format) too.
    enums = [p for p in spec_params(spec, op) if p.get("in") == "query" and
             "enum" in p.get("schema", {}) and p["name"] != "sort"]
    for r in ranks:
        for p in enums:
            for v in p["schema"]["enum"]:
                qs.append({"rank": str(r), p["name"]: str(v)})
    return qs


class Ask:
    """GETs into the dump, each answer kept as status, type and body."""

    def __init__(self, daemon, d, spec):
        self.daemon, self.d, self.n = daemon, d, 0
        self.asked = {}  # path -> (status, body): a repeat is not asked
        # The spec's templates as patterns, literal ones first.
        self.templates = [(re.compile("^%s$" % re.sub(
            r"\\{[a-z]+\\}", "[^/]+", re.escape(t))), t)
            for t in sorted(spec["paths"], key=lambda t: t.count("{"))]

    def __call__(self, path, query=None):
        if query:
            path += "?" + urllib.parse.urlencode(query)
        if self.d.has("GET %s" % path):
            return self.asked[path]
        status, ctype, body = get(self.daemon, path)
        self.n += 1
        self.d.routes.update([next((t for r, t in self.templates
                                    if r.match(path.split("?")[0])), path)])
        self.d.put("GET %s" % path, b"%d %s\n" % (status, ctype.encode()) +
                   normalise(path, ctype, body))
        self.asked[path] = (status, body if len(body) < 65536 else b"")
        return status, body


def is_rank_dir(path):
    return re.match(r"(rank_|dp)\d", os.path.basename(path)) is not None


def import_inputs(roots):
    """What to import: each trace file alone (but a rank folder's, which
    its capture imports), each folder of rank folders, each graph pair's
    folder, and the folder of the top-level traces as one capture of as
    many ranks."""
    files, folders = [], []
    for root in roots:
        for dirpath, dirs, fs in os.walk(root):
            dirs.sort()
            if any(is_rank_dir(os.path.join(dirpath, x)) for x in dirs):
                folders.append(dirpath)
            if os.path.basename(os.path.dirname(dirpath)) == "graph_pairs":
                folders.append(dirpath)
            if not any(is_rank_dir(x) for x in dirpath.split(os.sep)):
                files += [os.path.join(dirpath, f) for f in sorted(fs)
                          if f.endswith((".json", ".json.gz")) and
                          not f.endswith(NOT_TRACES)]
    return files + folders + [roots[0]]


def capture_routes(spec):
    return [(p, ops["get"]) for p, ops in spec["paths"].items()
            if p.startswith("/captures/{id}") and "get" in ops]


def ask_capture(ask, spec, cid, cap):
    ranks = [r["rank"] for r in cap.get("ranks", [])]
    span = max([r.get("span_ns") or 0 for r in cap.get("ranks", [])] + [0])
    windows = SLICE_WINDOWS + [(span // 2, span // 2 + 1000000)]
    for tmpl, op in capture_routes(spec):
        for r in ranks if "{r}" in tmpl else [None]:
            path = tmpl.replace("{id}", str(cid))
            if r is not None:
                path = path.replace("{r}", str(r))
            if tmpl.endswith("slice"):
                for s, e in windows:
                    for f in ("true", "false"):
                        ask(path, {"start_ns": s, "end_ns": e,
                                   "findings": f})
                continue
            _, bare = ask(path)
            for q in variants(spec, op, bare, ranks):
                ask(path, q)


def ask_diff(ask, spec, ids):
    op = spec["paths"]["/diff"]["get"]
    bys = [p for p in spec_params(spec, op) if p["name"] == "by"][0]
    for a, b in zip(ids, ids[1:] + ids[:1]):
        for by in bys["schema"]["enum"]:
            _, bare = ask("/diff", {"a": a, "b": b, "by": by})
            for q in variants(spec, op, bare, []):
                if "by" not in q and "a" not in q and "b" not in q:
                    ask("/diff", dict({"a": a, "b": b, "by": by}, **q))
    ask("/diff", {"a": ids[0], "b": ids[0], "rank": 0})


def ask_rest(ask, spec):
    """The routes outside captures: lists, settings, the fleet's (no fleet
    here: their refusals), the dashboard's files."""
    for p, ops in spec["paths"].items():
        if "get" not in ops or p.startswith(("/captures/{id}", "/diff")) \
                or "{" in p:
            continue
        _, bare = ask(p)
        for q in variants(spec, ops["get"], bare, []):
            ask(p, q)
    _, index = ask("/")
    for f in sorted(set(re.findall(rb'(?:src|href)="/?([\w.-]+)"', index))):
        ask("/" + f.decode())


def label(roots, path):
    """path as the dump names it: from the folder above its root, so that
    two dumps of one generated folder name it alike wherever it is."""
    root = [r for r in roots if path == r or path.startswith(r + os.sep)][0]
    return os.path.relpath(path, os.path.dirname(root))


def dump_daemon(binary, roots, spec, d):
    T.TRACED_BIN = binary
    with T.Daemon(conf={"import_roots": ":".join(roots)}) as daemon:
        ask = Ask(daemon, d, spec)
        ids = []
        for path in import_inputs(roots):
            code, cap = daemon.post("/imports", {"path": path})
            d.put("POST /imports %s" % label(roots, path), json.dumps(
                [code, cap.get("error") if isinstance(cap, dict) else cap])
                .encode())
            if code == 202:
                ids.append(daemon.wait_status(cap["id"], timeout=1800)["id"])
        done = []
        for cid in ids:
            _, cap = ask("/captures/%d" % cid)
            cap = json.loads(cap)
            if cap.get("status") == "done":
                ask_capture(ask, spec, cid, cap)
                done.append(cid)
        ask_diff(ask, spec, done)
        ask_rest(ask, spec)
        return len(ids), ask.n


def generate(out):
    """The project's own generated traces (GPU-side run labels, decode
    pairs, collectives over ranks, critical-path shapes, damaged files),
    written once and dumped by both builds alike."""
    import make_collectives
    import make_cpath
    import make_decode_pairs
    import make_fixtures
    make_fixtures.generate(os.path.join(out, "fixtures"))
    make_cpath.generate(os.path.join(out, "cpath"))
    make_collectives.make_tp4(os.path.join(out, "collectives"))
    make_decode_pairs.make(os.path.join(out, "decode"))


def cmd_dump(a):
    spec = json.load(open(a.spec))
    roots = [os.path.realpath(r) for r in [a.traces] + a.extra]
    d = Dump(a.out)
    n_index = dump_index(a.bin, roots, d)
    n_imports, n_asked = dump_daemon(a.bin, roots, spec, d)
    d.close()
    stats = {"traces": n_index, "imports": n_imports, "requests": n_asked,
             "answers": d.n, "routes": len(d.routes)}
    with open(os.path.join(a.out, "stats.json"), "w") as f:
        json.dump(stats, f)
    print("answers: %(traces)d traces indexed, %(imports)d imports, "
          "%(routes)d routes, %(requests)d requests, %(answers)d answers" %
          stats)


# ---- compare ----

def manifest(path):
    out = {}
    with open(os.path.join(path, "answers.tsv")) as f:
        for line in f:
            key, digest, size, name = line.rstrip("\n").split("\t")
            out[key] = (digest, int(size), name)
    return out


def first_difference(x, y, where=""):
    """Where two JSON values first differ, and the two values there."""
    if type(x) is not type(y):
        return where or "/", x, y
    if isinstance(x, dict):
        for k in list(x) + [k for k in y if k not in x]:
            if k not in x or k not in y:
                return "%s/%s" % (where, k), x.get(k, "(absent)"), \
                    y.get(k, "(absent)")
            got = first_difference(x[k], y[k], "%s/%s" % (where, k))
            if got:
                return got
        if list(x) != list(y):
            return where + " (member order)", list(x), list(y)
        return None
    if isinstance(x, list):
        for i, (u, v) in enumerate(zip(x, y)):
            got = first_difference(u, v, "%s/%d" % (where, i))
            if got:
                return got
        if len(x) != len(y):
            return where + " (length)", len(x), len(y)
        return None
    return None if x == y else (where or "/", x, y)


def explain(dir_a, dir_b, a, b):
    """A line or two on how two bodies differ."""
    if a[2] == "-" or b[2] == "-":
        return "sizes %d and %d" % (a[1], b[1])
    ba = gzip.open(os.path.join(dir_a, a[2])).read()
    bb = gzip.open(os.path.join(dir_b, b[2])).read()
    la, lb = ba.split(b"\n"), bb.split(b"\n")
    for i, (u, v) in enumerate(zip(la, lb)):
        if u != v:
            try:
                got = first_difference(json.loads(u), json.loads(v))
                if got:
                    return "line %d at %s: %s -> %s" % (
                        i + 1, got[0], json.dumps(got[1])[:200],
                        json.dumps(got[2])[:200])
            except ValueError:
                pass
            return "line %d: %r -> %r" % (i + 1, u[:200], v[:200])
    return "line counts %d and %d" % (len(la), len(lb))


def cmd_compare(a):
    ma, mb = manifest(a.a), manifest(a.b)
    diffs = 0
    for key in [k for k in ma if k not in mb]:
        print("only in %s: %s" % (a.a, key))
        diffs += 1
    for key in [k for k in mb if k not in ma]:
        print("only in %s: %s" % (a.b, key))
        diffs += 1
    changed = [k for k in ma if k in mb and ma[k][0] != mb[k][0]]
    for key in changed:
        print("changed: %s\n  %s" % (key, explain(a.a, a.b, ma[key],
                                                 mb[key])))
    diffs += len(changed)
    same = sum(1 for k in ma if k in mb and ma[k][0] == mb[k][0])
    st = json.load(open(os.path.join(a.b, "stats.json")))
    if diffs:
        print("answers: %d differ, %d identical" % (diffs, same))
        return 1
    print("answers identical on %d traces, %d routes (%d imports, %d "
          "answers)" % (st["traces"], st["routes"], st["imports"], same))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("dump")
    p.add_argument("--bin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--traces", default=T.TRACES_DIR)
    p.add_argument("--extra", action="append", default=[],
                   help="another folder of traces (answers.py generate's)")
    p.add_argument("--spec", default=os.path.join(T.SRC_DIR, "api",
                                                  "openapi.yaml"))
    p = sub.add_parser("generate")
    p.add_argument("out")
    p = sub.add_parser("compare")
    p.add_argument("a")
    p.add_argument("b")
    a = ap.parse_args()
    if a.cmd == "dump":
        return cmd_dump(a)
    if a.cmd == "generate":
        return generate(a.out)
    return cmd_compare(a)


if __name__ == "__main__":
    sys.exit(main())
