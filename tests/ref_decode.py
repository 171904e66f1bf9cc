"""The independent reference of traced's decode figures (docs/DECODE.md):
op, module and layer of every device record, from the run trace's host
stacks and, for graph replays, from the rank's capture traces. Shares no
code with the C side (index/dec_*.c, hoststack.c): the stacks here are
the frames containing a time, sorted; replays are whole lists matched
after the fact; per-step figures are lists of sums.

reference(run_path, captures) -> {
  "complete": {rank scalars of TR_SUM_RANK_DECODE},
  "modules": {(step, module): row}, "layers": {(step, layer): row},
  "ops": {(step, op): row}, "layer_modules": {(step, layer, module): row},
  "op_modules": {(step, op, module): row},
  "kernels": {(step, module, name): row},
  "steps": {step: row}, "median": {(step, layer, module): row}}
with rows as the summary's (share rounded as the C side rounds it).
captures: [(path, bs, q, mode)] with mode "AUTO", "FULL", "PIECEWISE".
"""
import re
from decimal import ROUND_HALF_UP, Decimal

import ref_index
import refcache
from ref_analysis import bucket_value, cut_text

MOD_PFX = "nn.Module: "
ATOM_KINDS = {"prefill", "decode", "eager_decode", "dummy_decode",
              "dummy_eager_decode", "dummy_prefill", "draft", "dspark",
              "dspark_ctx_kv", "dspark_sched", "draft_kv"}
ATOM_LABEL = re.compile(r"^(propose_[A-Za-z0-9_]+|[a-z_]+)\[")
TAG = re.compile(r"^[A-Za-z0-9_.]{1,256}$")
LAYER_TAG = re.compile(r"(?:^|(?<=\.))layers\.(\d+)(?=\.|$)")
INSTANCE = re.compile(r"^(.*)_(\d{1,9})$")
SGLANG_OP = re.compile(r"^(sglang_profiler::.+)_\d+$")
REASONS = ("no_capture", "no_graph", "count_differs", "names_differ")
# Each table of the reference and the summary's keys of its rows (the
# summary's member decode_<table>, the route decode/<table>).
TABLE_KEYS = {"modules": ("step", "module"), "layers": ("step", "layer"),
              "ops": ("step", "op"),
              "layer_modules": ("step", "layer", "module"),
              "op_modules": ("step", "op", "module"),
              "kernels": ("step", "module", "name"),
              "blocks": ("step", "module"),
              "sources": ("step", "source", "module")}
# The summary member and the route of a table when they are not
# decode_<table> and decode/<table>.
MEMBERS = {"sources": ("sources", "sources")}
SOURCE = re.compile(r"^([^(]+)\((\d+)\): (.*)$", re.S)
# The model's code is none of these (docs/DECODE.md, "Sources"): the
# interpreter's standard library (Python 3.11's stdlib_module_names)...
STDLIB = set("""abc aifc antigravity argparse array ast asynchat asyncio
asyncore atexit audioop base64 bdb binascii bisect builtins bz2 cProfile
calendar cgi cgitb chunk cmath cmd code codecs codeop collections colorsys
compileall concurrent configparser contextlib contextvars copy copyreg crypt
csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils
doctest email encodings ensurepip enum errno faulthandler fcntl filecmp
fileinput fnmatch fractions ftplib functools gc genericpath getopt getpass
gettext glob graphlib grp gzip hashlib heapq hmac html http idlelib imaplib
imghdr imp importlib inspect io ipaddress itertools json keyword lib2to3
linecache locale logging lzma mailbox mailcap marshal math mimetypes mmap
modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt ntpath
nturl2path numbers opcode operator optparse os ossaudiodev pathlib pdb pickle
pickletools pipes pkgutil platform plistlib poplib posix posixpath pprint
profile pstats pty pwd py_compile pyclbr pydoc pydoc_data pyexpat queue
quopri random re readline reprlib resource rlcompleter runpy sched secrets
select selectors shelve shlex shutil signal site smtpd smtplib sndhdr socket
socketserver spwd sqlite3 sre_compile sre_constants sre_parse ssl stat
statistics string stringprep struct subprocess sunau symtable sys sysconfig
syslog tabnanny tarfile telnetlib tempfile termios textwrap this threading
time timeit tkinter token tokenize tomllib trace traceback tracemalloc tty
turtle turtledemo types typing unicodedata unittest urllib uu uuid venv
warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc
zipapp zipfile zipimport zlib zoneinfo""".split())
# ... and the libraries that run ops for it.
LIBRARIES = {"accelerate", "aiter", "apex", "deep_gemm", "flash_attn",
             "flashinfer", "numpy", "sgl_kernel", "torch", "torchaudio",
             "torchvision", "tqdm", "transformer_engine", "triton"}


# ------------------------------------------------------------- events

def _events(path):
    """(format, [(ts, dur, e)] of well-formed X events in file order)."""
    doc, _ = ref_index.load(path)
    events = doc if isinstance(doc, list) else doc.get("traceEvents")
    fmt = ref_index.detect_format(doc, events)
    scale = 0 if fmt == "mctracer" else 3
    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        tsdur = ref_index.well_formed(e, scale)
        if tsdur is None:
            continue
        out.append((tsdur[0], tsdur[1], e))
    return fmt, out


def _thread(e):
    return (("s" if isinstance(e.get("pid"), str) else "n", e.get("pid")),
            ("s" if isinstance(e.get("tid"), str) else "n", e.get("tid")))


def _args(e):
    return e.get("args") if isinstance(e.get("args"), dict) else {}


def _field(text, key, start):
    """(first, second) numbers of `key` (bs=117/128) after start, where
    key starts a field (after '[', ' ' or ','); -1 when absent."""
    m = re.compile(r"[\[ ,]" + re.escape(key) + r"(\d+)(?:/(\d+))?").search(
        text, start - 1)
    if not m:
        return -1, -1
    return int(m.group(1)), int(m.group(2)) if m.group(2) else -1


def step_label(name):
    """(kind, bs, graph_bs, tok) of a step label, or None."""
    m = ATOM_LABEL.match(name)
    if m and (m.group(1) in ATOM_KINDS or (m.group(1).startswith("propose_")
                                          and len(m.group(1)) > 8)):
        kind = m.group(1)
        bs, graph = _field(name, "bs=", len(kind) + 1)
        tok, _ = _field(name, "tok=", len(kind) + 1)
        return kind, bs, graph if graph >= 0 else bs, tok
    m = re.match(r"execute_diffusion_(\d+)", name)
    if m:
        return "diffusion", int(m.group(1)), int(m.group(1)), -1
    if name.startswith("execute_"):
        c = re.search(r"context_(\d+)", name)
        g = re.search(r"generation_(\d+)", name)
        if c and g:
            nums = re.findall(r"\((?:sq)?(\d+)", name)
            bs = sum(int(x) for x in nums[:2])
            c, g = int(c.group(1)), int(g.group(1))
            kind = "mixed" if c and g else ("prefill" if c else "decode")
            return kind, bs, bs, -1
    m = re.match(r"step\[(EXTEND|DECODE|MIXED)", name)
    if m:
        kind = {"EXTEND": "prefill", "DECODE": "decode",
                "MIXED": "mixed"}[m.group(1)]
        c = re.search(r" c_sq=(\d+)", name)
        g = re.search(r" g_sq=(\d+)", name)
        if c or g:
            bs = (int(c.group(1)) if c else 0) + (int(g.group(1)) if g else 0)
        else:
            toks = re.search(r" toks=(\d+)", name)
            bsm = re.search(r" bs=(\d+)", name)
            if kind != "decode" and toks:
                bs = int(toks.group(1))
            else:
                bs = int(bsm.group(1)) if bsm else -1
        return kind, bs, bs, -1
    return None


def _launch_class(name):
    low = name.lower()
    if "graphlaunch" in low:
        return "graph"
    if "launch" in low and "hostfunc" not in low:
        return "kernel"
    if "memcpy" in low:
        return "copy"
    if "memset" in low:
        return "memset"
    return None


def source_kind(name):
    """"src" for a python_function frame of the model's own code at an
    absolute path, "pkg" at a relative one, else None."""
    m = SOURCE.match(name)
    if not m or name.startswith("<"):
        return None
    path = m.group(1)
    if path.startswith("/"):
        return None if any(d in path for d in (
            "/site-packages/", "/dist-packages/", "/lib/python")) else "src"
    top = re.split(r"[/.]", path, maxsplit=1)[0][:31]
    return None if top in STDLIB or top in LIBRARIES else "pkg"


def _frame_of(cls, e):
    """(kind, name) of a host frame event, or None."""
    cat, name = e.get("cat"), e.get("name") or ""
    if cls is None and cat in ("cpu_op", "Operator"):
        m = SGLANG_OP.match(name)
        return ("op", m.group(1) if m else name)
    if cls is None and cat == "python_function" and name.startswith(MOD_PFX):
        return ("module", name[len(MOD_PFX):])
    if cls is None and cat == "python_function" and source_kind(name):
        return (source_kind(name), name)
    if (cls == "label_cpu" and cat == "user_annotation"
            and step_label(name) is None and not name.startswith("capture_")
            and TAG.match(name)):
        return ("tag", name)
    return None


class _File:
    """A file's events sorted out: frames by thread, launches, step
    labels, capture windows, device records."""

    def __init__(self, path, names, capture):
        self.fmt, evs = _events(path)
        self.frames = {}     # thread -> [(start, end, kind, name, id)]
        self.launches = []   # (ts, thread, corr, class, kernel name)
        self.labels = []     # (ts, dur, thread, step label tuple, name)
        self.windows = []    # (open, close, thread, fallback)
        self.devices = []    # (ts, dur, cls, name, stream, corr, order)
        begins, opened = 0, {}
        streams = {}
        for ts, dur, e in evs:
            cls = ref_index.classify(self.fmt, e)
            name, args = e.get("name") or "", _args(e)
            fr = _frame_of(cls, e)
            if fr:
                lst = self.frames.setdefault(_thread(e), [])
                lst.append((ts, ts + dur, fr[0], fr[1], len(lst)))
            if cls == "label_cpu" and e.get("cat") == "user_annotation":
                st = step_label(name)
                if st:
                    self.labels.append((ts, dur, _thread(e), st, name))
                elif capture and name.startswith("capture_graph_bs_"):
                    self.windows.append((ts, ts + dur, _thread(e), 1))
            corr = ref_index.num(args.get("correlation", args.get("co_id")))
            if cls == "runtime":
                low = name.lower()
                if capture and "streambegincapture" in low:
                    begins += 1
                    opened.setdefault(_thread(e), []).append(ts + dur)
                    continue
                if capture and "streamendcapture" in low:
                    q = opened.get(_thread(e))
                    if q:
                        self.windows.append((q.pop(), ts, _thread(e), 0))
                    continue
                lc = _launch_class(name) if corr is not None else None
                if lc == "graph" and not capture:
                    self.launches.append((ts, _thread(e), corr, lc, None))
                elif lc in ("kernel", "copy", "memset"):
                    kname = args.get("kernel") if lc == "kernel" else None
                    if capture and isinstance(kname, str):
                        names.setdefault(kname, len(names))
                    self.launches.append((ts, _thread(e), corr, lc,
                                          kname if capture else None))
            elif cls in ("kernel", "copy", "memset") and not capture:
                names.setdefault(name, len(names))
                sk = (ref_index.num(args.get("device")) if "device" in args
                      else e.get("pid"),
                      ref_index.num(args.get("stream")) if "stream" in args
                      else e.get("tid"))
                streams.setdefault(sk, len(streams))
                self.devices.append((ts, dur, cls, name, streams[sk],
                                     corr, len(self.devices)))
        self.windows = [w for w in self.windows if (w[3] == 1) == (begins == 0)]
        for lst in self.frames.values():
            lst.sort(key=lambda f: f[0])


def _frame_order(f):
    """Outermost first: start, longer, module before op, name bytes."""
    return (f[0], -f[1], f[2] == "op", f[3].encode())


def _stacks(frames, points):
    """For points [(ts, thread, key)] the stack (tuple of frames,
    outermost first) of its thread at ts, by key."""
    out = {}
    by_thread = {}
    for ts, th, key in points:
        by_thread.setdefault(th, []).append((ts, key))
    for th, pts in by_thread.items():
        fr = frames.get(th, [])
        pts.sort(key=lambda p: p[0])
        i, active = 0, []
        for ts, key in pts:
            while i < len(fr) and fr[i][0] <= ts:
                active.append(fr[i])
                i += 1
            active = [f for f in active if f[1] > ts]
            out[key] = tuple(sorted(active, key=_frame_order)[:256])
    return out


def _first_launches(stacks, order):
    """Per launch key (in start order): 1 when it is the first under its
    innermost (non-pass-through) op frame instance."""
    seen, first = set(), {}
    for key in order:
        ops = [f for f in stacks[key] if f[2] == "op" and f[3] != "execute"]
        if not ops:
            first[key] = 0
            continue
        inst = ops[-1]
        first[key] = 0 if inst in seen else 1
        seen.add(inst)
    return first


# ------------------------------------------------------------- identity

def identity(stack):
    """(op, ops, module, layer, source) of a stack (docs/DECODE.md)."""
    srcs = ([f[3] for f in reversed(stack) if f[2] == "src"] or
            [f[3] for f in reversed(stack) if f[2] == "pkg"])
    ops = [f[3] for f in reversed(stack) if f[2] == "op" and f[3] != "execute"]
    op = ops[0] if ops else None
    distinct = list(dict.fromkeys(ops))
    segs, layer, tag_layer = [], None, None
    for f in stack:
        if f[2] in ("op", "src", "pkg"):
            continue
        if f[2] == "tag":
            found = LAYER_TAG.findall(f[3])
            if found:
                tag_layer = int(found[-1])
            segs.append(LAYER_TAG.sub("layers.*", f[3]))
            continue
        m = INSTANCE.match(f[3])
        cls = m.group(1) if m and m.group(1) else f[3]
        inst = int(m.group(2)) if m and m.group(1) else None
        segs.append(cls)
        if (layer is None and inst is not None
                and (cls.endswith("Layer") or cls.endswith("Block"))):
            layer = inst
    if tag_layer is not None:
        layer = tag_layer
    module = "/".join(segs)[:2048] or None
    return op, distinct, module, layer, srcs[0] if srcs else None


# ------------------------------------------------------------- captures

class _Capfile:
    def __init__(self, bs, q, mode):
        self.bs, self.q, self.mode, self.graphs = bs, q, mode, []


def read_capture(path, bs, q, mode, names):
    """A capture file's graphs: each a list of launches (stack, class,
    kernel name, first)."""
    f = _File(path, names, capture=True)
    cap = _Capfile(bs, q, mode)
    wins = sorted(f.windows, key=lambda w: w[0])
    launches = sorted(f.launches, key=lambda x: x[0])
    keys = [(ts, th, n) for n, (ts, th, _, _, _) in enumerate(launches)]
    stacks = _stacks(f.frames, keys)
    first = _first_launches(stacks, range(len(launches)))
    for wo, wc, wth, _ in wins:
        g = []
        for n, (ts, th, corr, lc, kname) in enumerate(launches):
            if not wo <= ts < wc:
                continue
            # Another window open then on this launch's thread takes it.
            mine = [w for w in wins if w[2] == th and w[0] <= ts < w[1]]
            if mine and mine[-1][:3] != (wo, wc, wth):
                continue
            if not mine and max((w for w in wins if w[0] <= ts < w[1]),
                                key=lambda w: w[0])[:3] != (wo, wc, wth):
                continue
            g.append((stacks[n], lc, kname, first[n]))
        cap.graphs.append(g)
    if cap.mode == "AUTO":
        cap.mode = "PIECEWISE" if len(cap.graphs) > 1 else "FULL"
    return cap


def candidates(caps, label, piece):
    """The candidate graphs [(file index, graph index)] of a graph launch."""
    want = q = -1
    if label:
        _, bs, graph, tok = label
        want = graph if graph >= 0 else bs
        if tok > 0 and bs > 0 and tok % bs == 0:
            q = tok // bs
    b = -1
    if want >= 0:
        above = [c.bs for c in caps if c.bs >= want]
        b = min(above) if above else -1
    q_known = q >= 0 and any(c.q == q and (b < 0 or c.bs == b) for c in caps)
    picks = []
    for i, c in enumerate(caps):
        if want >= 0 and b < 0 and c.bs >= 0:
            continue
        if b >= 0 and c.bs >= 0 and c.bs != b:
            continue
        if q_known and c.q >= 0 and c.q != q:
            continue
        picks.append((c.bs, c.q, c.mode == "PIECEWISE", i))
    out = []
    for _, _, _, i in sorted(picks):
        c = caps[i]
        if not c.graphs:
            continue
        if c.mode != "PIECEWISE":
            out.append((i, 0))
        elif piece < len(c.graphs):
            out.append((i, piece))
    return out[:16]


def fits(launch, rec):
    _, lc, kname, _ = launch
    cls, name = rec[2], rec[3]
    if lc == "copy":
        return cls == "copy" or "Memcpy" in name or "copyBuffer" in name
    if lc == "memset":
        return cls == "memset" or "Memset" in name or "fillBuffer" in name
    if kname is None:
        return cls == "kernel"
    return cls == "kernel" and name == kname


def match(graph, recs):
    """The launch index of each record, and whether short; None."""
    n = len(recs)
    streams = {r[4] for r in recs}
    if len(graph) == n:
        if len(streams) == 1:
            if all(fits(graph[i], recs[i]) for i in range(n)):
                return list(range(n)), False
        else:
            queues = {}
            for i, r in enumerate(recs):
                queues.setdefault(r[4], []).append(i)
            at = [None] * n
            for li, launch in enumerate(graph):
                heads = [q[0] for q in queues.values()
                         if q and fits(launch, recs[q[0]])]
                if not heads:
                    break
                h = min(heads)
                at[h] = li
                queues[recs[h][4]].pop(0)
            else:
                return at, False
    return None


def match_short(graph, recs):
    n = len(recs)
    if len({r[4] for r in recs}) != 1 or len(graph) <= n:
        return None
    left, j = [], 0
    for i, launch in enumerate(graph):
        if j < n and fits(launch, recs[j]):
            left.append(i)
            j += 1
    if j < n:
        return None
    right, j = [None] * n, n - 1
    for i in range(len(graph) - 1, -1, -1):
        if j >= 0 and fits(graph[i], recs[j]):
            right[j] = i
            j -= 1
    return left if right == left else None


# ------------------------------------------------------------- tables

def _pct(values, p):
    """Percentile p (per mille) of values (zeros included), valued by the
    medians' rule and clamped to the nonzero values' range."""
    n = len(values)
    if n == 0:
        return 0
    s = sorted(values)
    v = s[-(-n * p // 1000) - 1]
    if v == 0:
        return 0
    nz = [x for x in s if x]
    return min(max(bucket_value(v), nz[0]), nz[-1])


def _share(total, den):
    if den <= 0 or total <= 0:
        return 0.0
    return float((Decimal(total) / Decimal(den)).quantize(
        Decimal("0.000001"), rounding=ROUND_HALF_UP))


@refcache.cached
def reference(run_path, captures):
    names = {}
    caps = [read_capture(p, bs, q, mode, names)
            for p, bs, q, mode in captures]
    f = _File(run_path, names, capture=False)
    # Steps: a label starting inside an earlier one of its thread is part
    # of it.
    steps, outer = [], {}
    for ts, dur, th, st, name in sorted(f.labels, key=lambda x: x[0]):
        if ts < outer.get(th, -(1 << 62)):
            continue
        outer[th] = ts + dur
        steps.append({"ts": ts, "end": ts + dur, "thread": th, "label": st,
                      "name": name, "kind": st[0], "graphs": 0, "recs": []})
    kinds = list(dict.fromkeys(
        st[0] for _, _, _, st, _ in sorted(f.labels, key=lambda x: 0)))

    def step_at(th, ts):
        for s in steps:
            if s["thread"] == th and s["ts"] <= ts < s["end"]:
                return s
        return None

    launches = sorted(f.launches, key=lambda x: x[0])
    stacks = _stacks(f.frames, [(ts, th, n) for n, (ts, th, *_ ) in
                                enumerate(launches)])
    first = _first_launches(stacks, range(len(launches)))
    by_corr = {}
    for n, (ts, th, corr, lc, _) in enumerate(launches):
        by_corr.setdefault(corr, []).append(n)
    c = {k: 0 for k in (
        "capture_traces", "capture_graphs", "capture_launches", "replays",
        "replay_kernels", "replay_ns", "replays_matched", "replays_short",
        "replays_short_ns", "missing_launches", "replays_unmatched",
        "replays_unmatched_ns", "empty_graph_launches", "kernels_no_launch",
        "kernels_no_launch_ns", "kernels_no_op", "kernels_no_op_ns")}
    c["capture_traces"] = len(caps)
    c["capture_graphs"] = sum(len(x.graphs) for x in caps)
    c["capture_launches"] = sum(len(g) for x in caps for g in x.graphs)
    reasons = {r: {"replays": 0, "ns": 0} for r in REASONS}
    attributed = []   # (step or None, stack, name, first, dur, counted)
    used_first = set()
    # Device records to launches: the latest launch of the correlation at
    # or before it; graph launches collect theirs.
    replays = {}
    for rec in f.devices:
        ts, dur, cls, name, stream, corr, _ = rec
        cands = [n for n in by_corr.get(corr, []) if launches[n][0] <= ts]
        if not cands:
            c["kernels_no_launch"] += 1
            c["kernels_no_launch_ns"] += dur
            attributed.append((None, (), name, 0, dur, False))
            continue
        n = cands[-1]
        if launches[n][3] == "graph":
            replays.setdefault(n, []).append(rec)
            continue
        fl = first[n] if n not in used_first else 0
        used_first.add(n)
        attributed.append((step_at(launches[n][1], launches[n][0]), stacks[n],
                           name, fl, dur, True))
    for n, (ts, th, corr, lc, _) in enumerate(launches):
        if lc != "graph":
            continue
        c["replays"] += 1
        s = step_at(th, ts)
        piece = s["graphs"] if s else 0
        if s:
            s["graphs"] += 1
        recs = sorted(replays.get(n, []), key=lambda r: (
            r[0], ("kernel", "copy", "memset").index(r[2]), r[4],
            names[r[3]], r[1]))
        c["replay_kernels"] += len(recs)
        ns = sum(r[1] for r in recs)
        c["replay_ns"] += ns
        if not recs:
            c["empty_graph_launches"] += 1
            continue
        cand = candidates(caps, s["label"] if s else None, piece)
        maxlen = max((len(caps[i].graphs[g]) for i, g in cand), default=0)
        got = None
        if cand and len(recs) <= maxlen:
            for i, g in cand:
                got = match(caps[i].graphs[g], recs)
                if got:
                    got = (caps[i].graphs[g], got[0], False)
                    break
            else:
                for i, g in cand:
                    at = match_short(caps[i].graphs[g], recs)
                    if at:
                        got = (caps[i].graphs[g], at, True)
                        break
        if got is None:
            if not cand:
                why = "no_graph" if caps else "no_capture"
            elif len(recs) > maxlen or not any(
                    len(caps[i].graphs[g]) == len(recs) for i, g in cand):
                why = "count_differs"
            else:
                why = "names_differ"
            reasons[why]["replays"] += 1
            reasons[why]["ns"] += ns
            c["replays_unmatched"] += 1
            c["replays_unmatched_ns"] += ns
            for r in recs:
                attributed.append((s, (), r[3], 0, r[1], False))
            continue
        graph, at, short = got
        if short:
            c["replays_short"] += 1
            c["replays_short_ns"] += ns
            c["missing_launches"] += len(graph) - len(recs)
        else:
            c["replays_matched"] += 1
        for r, li in zip(recs, at):
            stack, _, _, fl = graph[li]
            attributed.append((s, stack, r[3], fl, r[1], True))
    c["unmatched_reasons"] = reasons
    return _tables(c, steps, kinds, attributed, f)


PER_STEP = ("modules", "layers", "ops", "layer_modules", "sources")


def _tables(c, steps, kinds, attributed, f):
    ident = {}
    kind_ns, kind_kernels, kind_attr = {}, {}, {}
    ent = {}
    for s in steps:
        s["sums"] = {}
    for s, stack, name, fl, dur, known in attributed:
        if stack not in ident:
            ident[stack] = identity(stack)
        op, ops, module, layer, src = ident[stack]
        if known and op is None:
            c["kernels_no_op"] += 1
            c["kernels_no_op_ns"] += dur
        kind = s["kind"] if s else None
        kind_ns[kind] = kind_ns.get(kind, 0) + dur
        kind_kernels[kind] = kind_kernels.get(kind, 0) + 1
        if op is not None:
            kind_attr[kind] = kind_attr.get(kind, 0) + dur
        keys = {"modules": (kind, module), "layers": (kind, layer),
                "ops": (kind, op), "layer_modules": (kind, layer, module),
                "op_modules": (kind, op, module),
                "kernels": (kind, module, name),
                "sources": (kind, src, module)}
        for t, k in keys.items():
            e = ent.setdefault(t, {}).setdefault(k, {
                "kernels": 0, "count": 0, "total_ns": 0, "subtree_ns": 0})
            e["kernels"] += 1
            e["count"] += fl
            e["total_ns"] += dur
            if s and t in PER_STEP:
                s["sums"][(t, k)] = s["sums"].get((t, k), 0) + dur
        for o in ops:
            e = ent.setdefault("ops", {}).setdefault((kind, o), {
                "kernels": 0, "count": 0, "total_ns": 0, "subtree_ns": 0})
            e["subtree_ns"] += dur
        if s:
            s["recs"].append((layer, module, name, dur))
    nsteps = {}
    for s in steps:
        nsteps[s["kind"]] = nsteps.get(s["kind"], 0) + 1
    out = {"complete": c}
    for t in ("modules", "layers", "ops", "layer_modules", "op_modules",
              "kernels", "sources"):
        rows = {}
        for k, e in ent.get(t, {}).items():
            kind = k[0]
            n = nsteps.get(kind, 0) if kind is not None else 0
            row = {"kernels": e["kernels"], "total_ns": e["total_ns"]}
            if t in ("ops", "op_modules"):
                row["count"] = e["count"]
            if t == "ops":
                row["subtree_ns"] = e["subtree_ns"]
            if t == "sources" and k[1] is not None:
                m = SOURCE.match(k[1])
                row.update({"file": m.group(1), "line": int(m.group(2)),
                            "function": m.group(3)})
            elif t == "sources":
                row.update({"file": None, "line": None, "function": None})
            if t in PER_STEP:
                per = [s["sums"].get((t, k), 0) for s in steps
                       if s["kind"] == kind] if kind is not None else []
                row.update({
                    "steps": n, "per_step_ns": e["total_ns"] // n if n else 0,
                    "p50_ns": _pct(per, 500), "p99_ns": _pct(per, 990),
                    "step_ns": kind_ns.get(kind, 0),
                    "share": _share(e["total_ns"], kind_ns.get(kind, 0))})
            if t == "modules":
                row["layers"] = len({lk[1] for lk in ent["layer_modules"]
                                     if lk[0] == kind and lk[2] == k[1]
                                     and lk[1] is not None})
            rows[k] = row
        out[t] = rows
    out["steps"], out["median"] = _steps(steps, kinds, kind_ns, kind_kernels,
                                         kind_attr, nsteps)
    out["blocks"] = blocks(out["layer_modules"], nsteps)
    return out


def blocks(layer_modules, nsteps):
    """The repeated block: {(step, module): row} over the layers of each
    module (layer and module known)."""
    per = {}
    for (kind, layer, module), row in layer_modules.items():
        if layer is not None and module is not None:
            per.setdefault((kind, module), []).append((layer,
                                                       row["total_ns"]))
    out = {}
    for key, layers in per.items():
        n = nsteps.get(key[0], 0) if key[0] is not None else 0
        total = sum(ns for _, ns in layers)
        fast = min(layers, key=lambda x: (x[1], x[0]))
        slow = min(layers, key=lambda x: (-x[1], x[0]))
        out[key] = {"layers": len(layers), "total_ns": total, "steps": n,
                    "layer_ns": total // (len(layers) * n) if n else 0,
                    "fastest_layer": fast[0],
                    "fastest_ns": fast[1] // n if n else 0,
                    "slowest_layer": slow[0],
                    "slowest_ns": slow[1] // n if n else 0}
    return out


def _steps(steps, kinds, kind_ns, kind_kernels, kind_attr, nsteps):
    rows, median = {}, {}
    t0 = None
    for kind in kinds:
        mine = [s for s in steps if s["kind"] == kind]
        if not mine:
            rows[kind] = {"steps": 0, "kernels": 0, "step_ns": 0,
                          "attributed_ns": 0, "median_label": None,
                          "median_dur_ns": None, "median_abs_start": None,
                          "median_ns": 0}
            continue
        durs = [s["end"] - s["ts"] for s in mine]
        p50 = min(max(bucket_value(sorted(durs)[-(-len(durs) * 500 // 1000)
                                                - 1]), min(durs)), max(durs))
        best = min(mine, key=lambda s: (abs(s["end"] - s["ts"] - p50),
                                        s["ts"]))
        rows[kind] = {"steps": nsteps[kind], "kernels": kind_kernels.get(
            kind, 0), "step_ns": kind_ns.get(kind, 0),
            "attributed_ns": kind_attr.get(kind, 0),
            "median_label": cut_text(best["name"]),
            "median_dur_ns": best["end"] - best["ts"],
            "median_abs_start": best["ts"],
            "median_ns": sum(r[3] for r in best["recs"])}
        kernels = {}
        for layer, module, name, dur in best["recs"]:
            m = kernels.setdefault((layer, module, name), [0, 0])
            m[0] += 1
            m[1] += dur
        for (layer, module, name), (n, ns) in kernels.items():
            seg = median.setdefault((kind, layer, module), {
                "kernels": 0, "total_ns": 0, "all": []})
            seg["kernels"] += n
            seg["total_ns"] += ns
            seg["all"].append((name, n, ns))
    for seg in median.values():
        top = sorted(seg.pop("all"), key=lambda k: (-k[2], k[0].encode()))
        seg["top_kernels"] = [{"name": k[0], "kernels": k[1],
                               "total_ns": k[2]} for k in top[:5]]
    return rows, median
