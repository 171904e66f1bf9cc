#!/usr/bin/env python3
"""Independent reference for traced's critical path figures (index/cpath*.c,
docs/CRITICAL_PATH.md): the whole trace in memory, plain
sorting and a graph per step, sharing no code with the C side (it reads
the events with ref_index.py's parser and takes the idle stretches, the
percentile rule and the families from ref_analysis.py).

    import ref_cpath
    ref = ref_cpath.reference(path)   # dict, see reference()

`python3 ref_cpath.py FILE` prints it as JSON.

The rules, as docs/CRITICAL_PATH.md states them:
- host events: cpu_op (and a bare-array trace's uncategorised ops),
  user_annotation, python_function, runtime/driver calls; a thread is
  "pid/tid". In time order: by start, the longer first, ops and
  annotations before calls, then file order (calls: by correlation).
- device items: kernels, copies, memsets by start, cuda_sync events by end;
  host events first on equal times.
- steps: the host's ATOM run labels, else its ProfilerStep#N, else the whole
  span ("trace"). A step holds the ops and calls of any thread starting in
  its window [start, end] with a duration, the device records their calls
  launched (by correlation: the latest call of it up to the record's start)
  and the cuda_sync events of its calls.
- the graph and its longest path: cpath_step.c's comment, with the same
  order of nodes (the step's events in time order) for its ties.
"""
import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_analysis  # noqa: E402
import ref_index  # noqa: E402
import refcache  # noqa: E402

U32 = (1 << 32) - 1
KK_NS = 1500000          # HTA's kernel-kernel threshold
GRACE_NS = 10000000
SEGMENTS = 2048
MEDIAN_SEQ = 2048
QUEUE_POINTS = 1024
SEQ_TOP = 10
KEEP_STEPS = 65536
BOUNDS = ("cpu", "gpu", "comm", "launch", "gap", "sync", "idle")
SYNC_NAMES = ("Event Sync", "Stream Wait Event", "Context Sync",
              "Stream Sync")
E_OP, E_DEP, E_BLOCK, E_LAUNCH, E_KK, E_SYNC = range(6)
HOST_KIND = {"op": 0, "annot": 1, "py": 2, "rt": 3}
CULPRIT_KIND = ("cpu_op", "annotation", "python", "runtime", "none",
                "unknown")


def id_text(v):
    n = ref_index.num(v)
    if n is not None:
        return str(n)
    return ref_analysis.cut_text(v, 64) if isinstance(v, str) else ""


def call_flags(name):
    blocking = any(w in name for w in ("Synchronize", "EventQuery",
                                       "Memcpy"))
    launchy = any(w in name for w in ("LaunchKernel", "GraphLaunch", "Memcpy",
                                      "MemsetAsync",
                                      "LaunchCooperativeKernel"))
    return blocking, launchy


def host_class(fmt, e, cls):
    """The host kind of an X event, or None."""
    cat = e.get("cat")
    if fmt == "mctracer":
        return "rt" if cls == "runtime" else None
    if cls == "runtime":
        return "rt"
    if cat in ("cpu_op", "Operator"):
        return "op"
    if cat == "python_function":
        return "py"
    if cls == "label_cpu":
        if cat is None and label_flag(e.get("name") or "") is None:
            return "op"
        return "annot"
    return None


def label_flag(name):
    if ref_index.PROFILER_STEP_RE.match(name):
        return "pstep"
    if ref_index.parse_label(name) is not None:
        return "label"
    return None


def corr_of(args, limit):
    v = ref_index.num(args.get("correlation", args.get("co_id")))
    return v if v is not None and 0 <= v < limit else -1


@refcache.cached
def read(path):
    """The trace's host events, device items and facts."""
    doc, _ = ref_index.load(path)
    events = doc if isinstance(doc, list) else doc.get("traceEvents")
    fmt = ref_index.detect_format(doc, events)
    host, dev, lanes, seq = [], [], {}, 0
    span = ref_index.Span()
    # For the idle stretches (ref_analysis): device records, host calls,
    # run labels of each side, kinds in the order first seen.
    idle = {"device": [], "calls": [], "labels": {"cpu": [], "gpu": []},
            "kinds": []}

    def lane(device, stream):
        return lanes.setdefault((device, stream), len(lanes))

    for place, e, ts, dur, args, cls in ref_index.x_events(fmt, events,
                                                           span):
        name = e.get("name") or ""
        rcorr = ref_index.num(args.get("correlation", args.get("co_id")))
        rcorr = -1 if rcorr is None else rcorr
        if cls in ("kernel", "copy", "memset"):
            idle["device"].append((ts, dur, cls, rcorr, name))
        elif cls == "runtime":
            idle["calls"].append((ts, dur, rcorr, name))
        elif cls in ("label_cpu", "label_gpu"):
            lab = ref_index.parse_label(name)
            side = "gpu" if cls == "label_gpu" else "cpu"
            # kineto's GPU-side ProfilerStep spans only some kernels
            if lab is not None and (side, lab[0]) != ("gpu", "ProfilerStep"):
                idle["labels"][side].append((ts, dur, lab[0], name, place))
                if lab[0] not in idle["kinds"]:
                    idle["kinds"].append(lab[0])
        hk = host_class(fmt, e, cls)
        if hk is not None:
            thread = id_text(e.get("pid")) + "/" + id_text(e.get("tid"))
            h = {"start": ts, "dur": dur, "kind": hk, "name": name,
                 "thread": thread, "seq": seq, "place": place,
                 "corr": corr_of(args, (1 << 40) - 1) if hk == "rt" else -1,
                 "flag": label_flag(name) if hk == "annot" else None}
            if hk == "rt":
                h["blocking"], h["launchy"] = call_flags(name)
            seq += 1
            host.append(h)
            continue
        device = ref_index.num(args.get("device"))
        if device is None:
            device = ref_index.num(e.get("pid"))
        stream = ref_index.num(args.get("stream"))
        if stream is None:
            stream = ref_index.num(e.get("tid"))
        device = -1 if device is None else device
        stream = -1 if stream is None else stream
        if cls in ("kernel", "copy", "memset"):
            dev.append({"start": ts, "dur": dur, "end": ts + dur,
                        "type": {"kernel": 0, "copy": 1, "memset": 2}[cls],
                        "name": name, "corr": corr_of(args, 1 << 46),
                        "lane": lane(device, stream), "place": place})
        elif e.get("cat") == "cuda_sync" and name in SYNC_NAMES:
            kind = SYNC_NAMES.index(name)
            ln = lane(device, stream) if kind != 2 else 0xffff
            ws = ref_index.num(args.get("wait_on_stream"))
            wl = lane(device, ws) if ws is not None else 0xffff
            wc = ref_index.num(args.get("wait_on_cuda_event_record_corr_id"))
            wc = (wc + 1) & 0xffffffff if wc is not None and \
                0 <= wc < (1 << 46) else 0
            dev.append({"start": ts, "dur": dur, "end": ts + dur,
                        "type": 8 + kind + ((wl + 1) << 8), "sync": kind,
                        "lane": ln, "wait_lane": wl, "wait_corr": wc - 1,
                        "corr": corr_of(args, 1 << 46), "place": place})
    drop_profiler_steps(idle)
    return {"host": host, "dev": dev, "lanes": lanes, "t0": span.t0 or 0,
            "tend": span.tend or 0, "fmt": fmt, "idle": idle,
            "gpu_labels": [lab[0] for lab in idle["labels"]["gpu"]]}


def drop_profiler_steps(idle):
    """ProfilerStep is a step kind of the idle stretches only in a trace
    without run labels (ref_index.drop_profiler_steps)."""
    if "ProfilerStep" not in idle["kinds"] or len(idle["kinds"]) == 1:
        return
    idle["kinds"].remove("ProfilerStep")
    for side in ("cpu", "gpu"):
        idle["labels"][side] = [lab for lab in idle["labels"][side]
                                if lab[2] != "ProfilerStep"]


def host_key(h):
    """Time order of host events: by start, the longer first; Python
    functions before ops and annotations before calls (a Python function
    and an op of one span: the op is inner), then file order (calls: by
    correlation)."""
    t = U32 - min(h["dur"], U32)
    if h["kind"] == "rt":
        return (h["start"], t, 1, h["corr"] + 1, h["seq"])
    return (h["start"], t, 0 if h["kind"] != "py" else -1, h["seq"], 0)


def dev_key(d):
    key = d["end"] if d["type"] >= 8 else d["start"]
    return (key, d["type"], ((d["corr"] + 1) << 16) | d["lane"], d["place"])


def is_record(e):
    return e["k"] in ("kernel", "copy", "memset")


def is_node(e):
    return e["k"] in ("op", "rt")


def main_times(tr):
    """Start times of the records the C time pass is driven by (agg.c's
    device records, host calls with a correlation or that wait, run
    labels): where steps are checked for closing."""
    out = [d["start"] for d in tr["dev"] if d["type"] < 8]
    for h in tr["host"]:
        if h["kind"] == "rt":
            n = h["name"]
            sync = "Synchronize" in n or (("Memcpy" in n or "memcpy" in n)
                                          and "Async" not in n)
            if sync or h["corr"] >= 0:
                out.append(h["start"])
        elif h["flag"] == "label":
            out.append(h["start"])
    out.extend(tr["gpu_labels"])
    return sorted(out)


class Walk:
    """The merged walk: steps opened, events routed, steps closed."""

    def __init__(self, tr, source):
        self.tr, self.source = tr, source
        self.open, self.closed, self.join = [], [], {}
        self.lane_state, self.next_index = {}, 0
        self.launch_cost = {}
        self.forced = 0

    def open_step(self, ws, we, kind, label):
        if len(self.open) == 8:
            self.forced += 1
            self.close(self.open[0], ws)
        self.open.append({"index": self.next_index, "kind": kind,
                          "label": label, "ws": ws, "we": we, "ev": [],
                          "lanes": {}, "pending": 0})
        self.next_index += 1

    def close(self, s, now):
        self.open.remove(s)
        self.closed.append(s)

    def done(self, s, now):
        if now <= s["we"]:
            return False
        if s["pending"] > 0 and now <= s["we"] + 1000000000:
            return False
        for lane, (corr, end) in s["lanes"].items():
            ls = self.lane_state.get(lane)
            if ls is not None and ls["last_corr"] == corr and \
                    now < end + GRACE_NS:
                return False
        return True

    def checkpoint(self, now):
        for s in list(self.open):
            if self.done(s, now):
                self.close(s, now)

    def host(self, h):
        if h["kind"] == "annot" and (
                (self.source == "labels" and h["flag"] == "label") or
                (self.source == "psteps" and h["flag"] == "pstep")):
            kind = "ProfilerStep" if self.source == "psteps" else \
                ref_index.parse_label(h["name"])[0]
            self.open_step(h["start"], h["start"] + h["dur"], kind,
                           h["name"])
        if h["kind"] not in ("op", "rt"):
            return
        e = {"k": h["kind"], "start": h["start"], "end": h["start"] + h["dur"],
             "name": h["name"], "lane": h["thread"], "corr": h["corr"],
             "blocking": h.get("blocking", False),
             "launchy": h.get("launchy", False), "parent": h["parent"]}
        j = None
        if h["kind"] == "rt" and h["corr"] >= 0:
            j = {"start": h["start"], "dur": h["dur"], "thread": h["thread"],
                 "seen": False, "in": []}
            self.join[h["corr"]] = j
        if h["dur"] <= 0:
            return
        for s in self.open:
            if s["ws"] <= h["start"] <= s["we"]:
                s["ev"].append(dict(e))
                if j is not None and len(j["in"]) < 2:
                    j["in"].append((s, len(s["ev"]) - 1))
                if e["launchy"]:
                    s["pending"] += 1

    def record(self, d):
        j = self.join.get(d["corr"]) if d["corr"] >= 0 else None
        first = j is not None and not j["seen"]
        ls = self.lane_state.setdefault(d["lane"], {
            "has_prev": False, "prev_start": 0, "item": None,
            "last_corr": None})
        e = {"k": ("kernel", "copy", "memset")[d["type"]], "start": d["start"],
             "end": d["end"], "name": d["name"], "lane": d["lane"],
             "corr": d["corr"], "first": first, "qfree": False,
             "launch_next": None, "launch": None,
             "comm": d["type"] == 0 and ref_analysis.is_comm(d["name"])}
        if first:
            e["qfree"] = not ls["has_prev"] or ls["prev_start"] <= j["start"]
            if ls["item"] is not None and ls["item"][0] in self.open:
                ls["item"][0]["ev"][ls["item"][1]]["launch_next"] = \
                    j["start"]
            ls["has_prev"], ls["prev_start"], ls["item"] = \
                True, d["start"], None
            if d["type"] == 0:
                c = self.launch_cost.setdefault(d["name"], ([], []))
                c[0].append(max(j["dur"], 0))
                c[1].append(max(d["start"] - (j["start"] + j["dur"]), 0))
        ls["last_corr"] = d["corr"]
        if j is None:
            return
        j["seen"] = True
        for s, at in j["in"]:
            if s not in self.open:
                continue
            if first and s["ev"][at]["launchy"]:
                s["pending"] -= 1
            s["lanes"][d["lane"]] = (d["corr"], d["end"])
            s["ev"].append(dict(e, launch=at))
            if first and ls["item"] is None:
                ls["item"] = (s, len(s["ev"]) - 1)

    def sync(self, d):
        j = self.join.get(d["corr"]) if d["corr"] >= 0 else None
        for s, _ in (j["in"] if j else []):
            if s in self.open:
                s["ev"].append({"k": "sync", "start": d["start"],
                                "end": d["end"], "corr": d["corr"],
                                "sync": d["sync"], "lane": d["lane"],
                                "wait_lane": d["wait_lane"],
                                "wait_corr": d["wait_corr"]})


def parents(host):
    """Each host event's call-stack parent (name, kind): the innermost
    host event of its thread running at its start, in time order."""
    stacks = {}
    for h in host:
        st = stacks.setdefault(h["thread"], [])
        while st and st[-1]["start"] + st[-1]["dur"] <= h["start"]:
            st.pop()
        h["parent"] = (st[-1]["name"], st[-1]["kind"]) if st else None
        st.append(h)


def walk(tr, source):
    host = sorted(tr["host"], key=host_key)
    parents(host)
    dev = sorted(tr["dev"], key=dev_key)
    checks = main_times(tr)
    w = Walk(tr, source)
    if source == "span":
        w.open_step(tr["t0"], tr["tend"], "trace", None)
    items = [(h["start"], 0, i, h) for i, h in enumerate(host)]
    items += [(dev_key(d)[0], 1, i, d) for i, d in enumerate(dev)]
    items.sort(key=lambda x: x[:3])
    ci = 0
    for key, side, _, x in items:
        while ci < len(checks) and checks[ci] < key:
            w.checkpoint(checks[ci])
            ci += 1
        if side == 0:
            w.host(x)
        elif x["type"] >= 8:
            w.sync(x)
        else:
            w.record(x)
    while ci < len(checks):
        w.checkpoint(checks[ci])
        ci += 1
    for s in list(w.open):
        w.close(s, None)
    return w


# ------------------------------------------------------------ the graph

class Graph:
    def __init__(self, ev):
        self.ev, self.edges = ev, []

    def t(self, node):
        e = self.ev[node // 2]
        return e["end"] if node % 2 else e["start"]

    def add(self, src, dst, typ, attr=None):
        w = 0
        if typ in (E_OP, E_LAUNCH, E_KK):
            w = max(self.t(dst) - self.t(src), 0)
        self.edges.append((src, dst, w, typ, attr))


def host_chains(g):
    """Per thread: enter/exit boundaries of its ops and calls in call-stack
    order; top-level to top-level weighs 0, a blocking call's exit 0."""
    state = {}
    for i, e in enumerate(g.ev):
        if not is_node(e):
            continue
        st = state.setdefault(e["lane"], {"last": None, "stack": [],
                                          "parent": None})
        while st["stack"] and g.ev[st["stack"][-1]]["end"] <= e["start"]:
            chain_exit(g, st)
        if st["last"] is not None:
            chain_edge(g, st, 2 * i, E_DEP if not st["stack"] else E_OP)
        st["last"], st["parent"] = 2 * i, i
        st["stack"].append(i)
    for st in state.values():
        while st["stack"]:
            chain_exit(g, st)


def chain_exit(g, st):
    i = st["stack"][-1]
    if st["last"] is not None:
        chain_edge(g, st, 2 * i + 1,
                   E_BLOCK if g.ev[i].get("blocking") else E_OP)
    st["last"], st["parent"] = 2 * i + 1, i
    st["stack"].pop()


def chain_edge(g, st, dst, typ):
    src = st["last"]
    if typ == E_DEP:
        g.add(src, dst, typ)
    elif src % 2 == 0:
        g.add(src, dst, typ, ("ev", src // 2))
    elif dst % 2 == 1:
        g.add(src, dst, typ, ("ev", dst // 2))
    else:
        g.add(src, dst, typ, ("parent", st["parent"]))


def device_edges(g, infer):
    ev = g.ev
    calls = {}
    for i, e in enumerate(ev):
        if e["k"] == "rt" and e["corr"] >= 0:
            calls[e["corr"]] = i
    launches = {}    # (lane, call) -> [first, last]
    for i, e in enumerate(ev):
        if is_record(e) and e["launch"] is not None:
            launches.setdefault((e["lane"], e["launch"]), [i, i])[1] = i
    recs_of = {}
    for i, e in enumerate(ev):
        if is_record(e) and e["launch"] is not None:
            recs_of.setdefault(e["launch"], []).append(i)
    last, ksync = {}, {}

    def before(lane, call):
        best = None
        for (ln, c), (f, lst) in launches.items():
            if ln == lane and c < call and (best is None or c > best[0]):
                best = (c, lst)
        return best[1] if best else None

    def after(lane, call):
        best = None
        for (ln, c), (f, lst) in launches.items():
            if ln == lane and c > call and ev[c]["lane"] == ev[call]["lane"] \
                    and (best is None or c < best[0]):
                best = (c, f)
        return best[1] if best else None

    blocking = sorted((e["end"], i) for i, e in enumerate(ev)
                      if infer and e["k"] == "rt" and e["blocking"])
    order = [i for i, e in enumerate(ev) if is_record(e) or e["k"] == "sync"]
    b = 0
    for i in order + [None]:
        key = None if i is None else (ev[i]["end"] if ev[i]["k"] == "sync"
                                      else ev[i]["start"])
        while b < len(blocking) and (key is None or blocking[b][0] < key):
            c = blocking[b][1]
            b += 1
            own = recs_of.get(c, [])
            for r in own:
                if ev[r]["end"] <= ev[c]["end"]:
                    g.add(2 * r + 1, 2 * c + 1, E_SYNC)
            if not own:
                for lane in last:
                    if ev[last[lane]]["end"] <= ev[c]["end"]:
                        g.add(2 * last[lane] + 1, 2 * c + 1, E_SYNC)
        if i is None:
            break
        e = ev[i]
        if e["k"] == "sync":
            call = calls.get(e["corr"]) if e["corr"] >= 0 else None
            if call is None:
                continue
            if e["sync"] in (2, 3):
                for lane in last:
                    if e["sync"] == 2 or lane == e["lane"]:
                        g.add(2 * last[lane] + 1, 2 * call + 1, E_SYNC)
                continue
            rec = calls.get(e["wait_corr"]) if e["wait_corr"] >= 0 else None
            if rec is None or e["wait_lane"] == 0xffff:
                continue
            src = before(e["wait_lane"], rec)
            if src is None:
                continue
            if e["sync"] == 0:
                g.add(2 * src + 1, 2 * call + 1, E_SYNC)
            else:
                dest = after(e["lane"], call)
                if dest is not None:
                    ksync[dest] = src
            continue
        prev = last.get(e["lane"])
        sync = ksync.get(i)
        sync_end = ev[sync]["end"] if sync is not None else None
        g.add(2 * i, 2 * i + 1, E_OP, ("ev", i))
        if sync is not None:
            g.add(2 * sync + 1, 2 * i, E_SYNC)
        lc = ev[e["launch"]] if e["launch"] is not None else None
        nxt = e["launch_next"]
        if (lc is not None and e["first"] and e["qfree"] and
                (nxt is None or nxt >= e["start"]) and
                (prev is None or ev[prev]["end"] < lc["start"]) and
                (sync is None or sync_end < lc["start"])):
            g.add(2 * e["launch"], 2 * i, E_LAUNCH)
        elif (prev is not None and e["start"] - ev[prev]["end"] < KK_NS and
              (sync is None or sync_end < ev[prev]["end"])):
            g.add(2 * prev + 1, 2 * i, E_KK, ("ev", prev))
        last[e["lane"]] = i


def longest(g):
    """fwd, pred edge, bwd per node; None on a cycle."""
    n = 2 * len(g.ev)
    out, indeg = [[] for _ in range(n)], [0] * n
    for k, (src, dst, w, typ, attr) in enumerate(g.edges):
        out[src].append(k)
        indeg[dst] += 1
    queue = [v for v in range(n) if indeg[v] == 0]
    head = 0
    while head < len(queue):
        v = queue[head]
        head += 1
        for k in out[v]:
            dst = g.edges[k][1]
            indeg[dst] -= 1
            if indeg[dst] == 0:
                queue.append(dst)
    if len(queue) < n:
        return None
    fwd, pred, bwd = [0] * n, [None] * n, [0] * n
    for v in queue:
        for k in out[v]:
            src, dst, w, typ, _ = g.edges[k]
            cand = fwd[v] + w
            if pred[dst] is None or cand > fwd[dst] or (
                    cand == fwd[dst] and (src, typ) < (
                        g.edges[pred[dst]][0], g.edges[pred[dst]][3])):
                fwd[dst], pred[dst] = cand, k
    for v in reversed(queue):
        for k in out[v]:
            src, dst, w, _, _ = g.edges[k]
            bwd[v] = max(bwd[v], w + bwd[dst])
    return fwd, pred, bwd


def bound_of(g, e):
    typ = e[3]
    if typ == E_LAUNCH:
        return 3
    if typ == E_KK:
        return 4
    if typ in (E_SYNC, E_BLOCK):
        return 5
    if typ == E_DEP:
        return 6
    x = g.ev[e[0] // 2]
    if is_node(x):
        return 0
    return 2 if x.get("comm") else 1


def seg_what(g, e):
    """(name, what, lane) a stretch names."""
    typ, attr = e[3], e[4]
    if attr is not None and attr[0] == "parent":
        x = g.ev[attr[1]]
        p = x["parent"]
        if p is None:
            return ("", "none", x["lane"])
        return (p[0], "runtime" if p[1] == "rt" else "host", x["lane"])
    x = g.ev[attr[1]] if attr is not None and typ != E_KK else \
        g.ev[e[1] // 2]
    what = {"op": "host", "rt": "runtime", "kernel": "kernel"}.get(
        x["k"], "copy")
    return (x["name"] if what != "copy" else "copy", what, x["lane"])


def analyse(ev, infer):
    """A step's path: dict length, bounds, path_from/to, on_path (set of
    event indices), slack {index: ns}, segments; or status cycle."""
    g = Graph(ev)
    host_chains(g)
    device_edges(g, infer)
    got = longest(g)
    if got is None:
        return {"status": "cycle"}
    fwd, pred, bwd = got
    end = None
    for v in range(len(fwd)):
        if end is None or fwd[v] > fwd[end]:
            end = v
    res = {"status": "ok", "length": fwd[end] if end is not None else 0,
           "bounds": [0] * 7, "on_path": set(), "segs": [],
           "slack": {}, "path_from": 0, "path_to": 0}
    for i, e in enumerate(ev):
        if is_record(e):
            res["slack"][i] = res["length"] - (
                fwd[2 * i] + max(e["end"] - e["start"], 0) + bwd[2 * i + 1])
    if end is None:
        return res
    path, v = [], end
    while pred[v] is not None:
        path.append(g.edges[pred[v]])
        v = g.edges[pred[v]][0]
    res["path_from"], res["path_to"] = g.t(v), g.t(end)
    for e in reversed(path):
        b = bound_of(g, e)
        frm, to = g.t(e[0]), g.t(e[1])
        res["bounds"][b] += max(to - frm, 0) if b >= 5 else e[2]
        if e[3] == E_OP and e[0] + 1 == e[1]:
            res["on_path"].add(e[0] // 2)
        if e[2] == 0 and to <= frm:
            continue
        name, what, lane = seg_what(g, e)
        last = res["segs"][-1] if res["segs"] else None
        if last and (last["bound"], last["what"], last["name"],
                     last["lane"]) == (b, what, name, lane) and \
                last["to"] == frm:
            last["to"] = to
            last["weight"] += e[2]
            last["count"] += 1
            continue
        res["segs"].append({"from": frm, "to": to, "weight": e[2],
                            "name": name, "what": what, "lane": lane,
                            "bound": b, "count": 1})
    return res


# ------------------------------------------------------------- figures

def share(v, den):
    if den <= 0 or v <= 0:
        return 0.0
    return ((v * 2000000 + den) // (den * 2)) / 1e6


def queue_of(s):
    """(max, ns x depth, extent, series) of a step's launches waiting."""
    ev, end, q = s["ev"], s["we"], []
    for e in ev:
        if not is_record(e):
            continue
        end = max(end, e["end"])
        if e["first"] and e["launch"] is not None and \
                ev[e["launch"]]["start"] < e["start"]:
            q.append((ev[e["launch"]]["start"], 1))
            q.append((e["start"], -1))
    q.sort()
    depth = qmax = area = 0
    series = []
    for k, (t, d) in enumerate(q):
        nxt = q[k + 1][0] if k + 1 < len(q) else end
        depth += d
        qmax = max(qmax, depth)
        if nxt > t:
            area += depth * (nxt - t)
        if len(series) < QUEUE_POINTS and (k + 1 == len(q) or
                                           q[k + 1][0] != t):
            series.append((t, depth))
    return qmax, area, end - s["ws"], series


WHAT_CODE = {"host": 0, "runtime": 1, "kernel": 2, "copy": 3, "none": 4}


def group_of(v):
    wall = [0] * 7
    g = dict(v[0], weight=0, count=0)
    heavy = 0
    for i, x in enumerate(v):
        wall[x["bound"]] += x["to"] - x["from"]
        g["weight"] += x["weight"]
        g["count"] += x["count"]
        if x["weight"] > v[heavy]["weight"]:
            heavy = i
    g["to"] = v[-1]["to"]
    g["name"], g["what"] = v[heavy]["name"], v[heavy]["what"]
    for b in range(7):
        if wall[b] > wall[g["bound"]]:
            g["bound"] = b
    return g


def coalesce(v):
    n, size = len(v), 1
    while True:
        out, i = [], 0
        while i < n and len(out) < SEGMENTS + size:
            j = i + 1
            while (j < n and j - i < size and v[j]["lane"] == v[i]["lane"]
                   and WHAT_CODE[v[j]["what"]] // 2 ==
                   WHAT_CODE[v[i]["what"]] // 2):
                j += 1
            out.append(v[i] if size == 1 else group_of(v[i:j]))
            i = j
        if len(out) <= SEGMENTS:
            break
        size *= 2
    return out[:SEGMENTS]


def seq_runs(ev):
    runs = []
    for e in ev:
        if e["k"] != "kernel":
            continue
        if runs and runs[-1][0] == e["name"]:
            runs[-1][1] += 1
            runs[-1][2] += e["end"] - e["start"]
        elif len(runs) < MEDIAN_SEQ:
            runs.append([e["name"], 1, e["end"] - e["start"]])
    return runs


def path_row(rows, key):
    return rows.setdefault(key, {"steps": set(), "steps_on": set(),
                                 "instances": 0, "on_path": 0,
                                 "critical_ns": 0, "slack": []})


def finish_path(r):
    sl = r["slack"]
    return {"steps": len(r["steps"]), "steps_on": len(r["steps_on"]),
            "instances": r["instances"], "on_path": r["on_path"],
            "critical_ns": r["critical_ns"],
            "slack_p50_ns": ref_analysis.pct(sl, 500),
            "slack_p99_ns": ref_analysis.pct(sl, 990),
            "slack_max_ns": max(sl) if sl else 0}


def culprits(tr, host):
    """{(step, cause, culprit, kind): [idle ns of each stretch part]}."""
    idl = tr["idle"]
    side = "gpu" if idl["labels"]["gpu"] else "cpu"
    labels, kinds = idl["labels"][side], idl["kinds"]
    dev = ref_analysis.device_order(idl["device"])
    gaps, _, end = ref_analysis.union_walk(dev)
    sync = [(c[0], c[1]) for c in idl["calls"] if ref_analysis.is_sync(c[3])]
    idx = ref_analysis.launch_index(idl["calls"])
    stretches = [(tr["t0"] if g0 is None else g0, rec, lc)
                 for g0, rec, lc in gaps]
    stretches.append((tr["t0"] if end is None else end, None, None))
    rts = {}
    for h in host:
        if h["kind"] == "rt" and h["corr"] >= 0:
            rts.setdefault(h["corr"], []).append((h["start"], h["thread"]))
    by_thread = {}
    for h in host:
        if h["flag"] is None:
            by_thread.setdefault(h["thread"], []).append(h)
    out = {}
    for g0, rec, last_corr in stretches:
        g1 = rec[0] if rec is not None else tr["tend"]
        if g1 <= g0:
            continue
        cause = ref_analysis.gap_cause(g0, rec, last_corr, sync, idx)
        if cause not in ("host_late", "sync"):
            continue
        thread = None
        if rec is not None and rec[3] >= 0:
            calls = [c for c in rts.get(rec[3], []) if c[0] <= rec[0]]
            thread = calls[-1][1] if calls else None
        if thread is None:
            who = (None, "unknown")
        else:
            cover = [h for h in by_thread.get(thread, [])
                     if h["start"] <= g0 < h["start"] + h["dur"]]
            who = (None, "none")
            if cover:
                f = max(cover, key=host_key)
                who = (f["name"], CULPRIT_KIND[HOST_KIND[f["kind"]]])
        pieces = ref_analysis.cover_pieces(g0, g1, labels, kinds) \
            if labels else [(g0, g1, None)]
        parts = {}
        for a, b, kind in pieces:
            if kind is None and labels:
                continue
            parts[kind] = parts.get(kind, 0) + b - a
        for kind, ns in parts.items():
            if ns > 0:
                out.setdefault((kind, cause) + who, []).append(ns)
    return out


def source_of(tr):
    flags = {h["flag"] for h in tr["host"] if h["kind"] == "annot"}
    return "labels" if "label" in flags else "psteps" if "pstep" in flags \
        else "span"


def gpu_side(tr):
    """Whether /steps counts the trace's steps by their GPU-side labels."""
    return bool(tr["idle"]["labels"]["gpu"])


def p50_of(tr, source, kind):
    """The kind's p50 step time as /steps gives it."""
    if source == "labels" and gpu_side(tr):
        d = [lab[1] for lab in tr["idle"]["labels"]["gpu"] if lab[2] == kind]
    elif source == "labels":
        d = [h["dur"] for h in tr["host"] if h["flag"] == "label" and
             ref_index.parse_label(h["name"])[0] == kind]
    elif source == "psteps":
        d = [h["dur"] for h in tr["host"] if h["flag"] == "pstep"]
    else:
        return 0
    return ref_analysis.pct(d, 500)


def lane_text(tr):
    inv = {v: "%d/%d" % k for k, v in tr["lanes"].items()}
    return lambda seg: ("thread " + seg["lane"]) if seg["what"] in (
        "host", "runtime", "none") else "stream " + inv[seg["lane"]]


@refcache.cached
def reference(path):
    """The critical path figures of one trace:
    kinds {step: critical_kinds row}, steps {index: critical_steps row},
    segments [critical_segments rows in order], kernel_paths {(name, step):
    row}, family_paths {(family, step): row}, culprits {(step, cause,
    culprit, culprit_kind): row}, sequences {(step, n, sequence): row} (the
    top 10 of each step and n), median_sequence [rows], kernel_cols
    {name: added columns}, family_cols {family: ...}, host_events,
    critical_path_steps; and dump [per step: (index, kind, length,
    bounds, {record: (on_path, slack)})] to check TRACED_CPATH_DUMP."""
    tr = read(path)
    source = source_of(tr)
    host = sorted(tr["host"], key=host_key)
    w = walk(tr, source)
    infer = not any(d["type"] >= 8 for d in tr["dev"])
    rel = lambda t: t - tr["t0"]  # noqa: E731
    kinds, paths, fpaths, crit, fcrit, seqs = {}, {}, {}, {}, {}, {}
    steps, dump, picks = [], [], {}
    for s in w.closed:
        k = kinds.setdefault(s["kind"], {
            "steps": 0, "analyzed": 0, "window_ns": 0, "lengths": [],
            "bounds": [0] * 7, "kernels": 0, "kernels_on_path": 0,
            "queue_max": 0, "queue_area_ns": 0, "extent_ns": 0})
        k["steps"] += 1
        res = analyse(s["ev"], infer)
        # An analysed step's window runs to the end of its last record and
        # of its path (its records may end after its label).
        we = s["we"] if res["status"] != "ok" else max(
            [s["we"], res["path_to"]] +
            [e["end"] for e in s["ev"] if is_record(e)])
        row = {"index": s["index"], "step": s["kind"], "label": s["label"],
               "start_ns": rel(s["ws"]), "dur_ns": we - s["ws"],
               "status": res["status"], "events": len(s["ev"])}
        steps.append(row)
        if res["status"] != "ok":
            for b in BOUNDS:
                row[b + "_ns"] = 0
            row.update(length_ns=0, path_from_ns=0, path_to_ns=0,
                       kernels=0, kernels_on_path=0, queue_max=0,
                       queue_area_ns=0, extent_ns=0)
            continue
        ev = s["ev"]
        qmax, area, extent, series = queue_of(s)
        kern = [i for i, e in enumerate(ev) if e["k"] == "kernel"]
        row.update(length_ns=res["length"],
                   path_from_ns=rel(res["path_from"]),
                   path_to_ns=rel(res["path_to"]), kernels=len(kern),
                   kernels_on_path=sum(i in res["on_path"] for i in kern),
                   queue_max=qmax, queue_area_ns=area, extent_ns=extent)
        for b, v in zip(BOUNDS, res["bounds"]):
            row[b + "_ns"] = v
        dump.append((s["index"], s["kind"], res["length"], res["bounds"],
                     {(ev[i]["start"], ev[i]["end"], ev[i]["lane"]):
                      (int(i in res["on_path"]), res["slack"][i])
                      for i, e in enumerate(ev) if is_record(e)}))
        k["analyzed"] += 1
        k["window_ns"] += we - s["ws"]
        k["lengths"].append(res["length"])
        k["bounds"] = [a + b for a, b in zip(k["bounds"], res["bounds"])]
        k["kernels"] += row["kernels"]
        k["kernels_on_path"] += row["kernels_on_path"]
        k["queue_max"] = max(k["queue_max"], qmax)
        k["queue_area_ns"] += area
        k["extent_ns"] += extent
        fams = []
        for i in kern:
            e = ev[i]
            on, dur = i in res["on_path"], e["end"] - e["start"]
            fam = ref_analysis.family(e["name"])
            fams.append((fam, dur))
            for rows, key in ((paths, (e["name"], s["kind"])),
                              (fpaths, (fam, s["kind"]))):
                r = path_row(rows, key)
                r["steps"].add(s["index"])
                r["instances"] += 1
                r["slack"].append(max(res["slack"][i], 0))
                if on:
                    r["on_path"] += 1
                    r["critical_ns"] += dur
                    r["steps_on"].add(s["index"])
            if on:
                crit[e["name"]] = crit.get(e["name"], 0) + dur
                fcrit[fam] = fcrit.get(fam, 0) + dur
        for p in range(len(fams)):
            total = fams[p][1]
            for n in range(2, 9):
                if p + n > len(fams):
                    break
                total += fams[p + n - 1][1]
                q = seqs.setdefault((s["kind"], n, tuple(
                    f for f, _ in fams[p:p + n])), [0, 0])
                q[0] += 1
                q[1] += total
        pk = picks.setdefault(s["kind"], {})
        # The step's time as /steps counts it: the span of its records
        # under GPU-side labels, else its label's.
        recs = [e for e in ev if is_record(e)]
        d = (max(e["end"] for e in recs) - min(e["start"] for e in recs)
             if source == "labels" and gpu_side(tr) and recs else
             0 if source == "labels" and gpu_side(tr) else s["we"] - s["ws"])
        pick = {"row": row, "segs": coalesce(res["segs"]),
                "queue": [[rel(t), dep] for t, dep in series],
                "runs": seq_runs(ev), "d": d}
        if "slowest" not in pk or d >= pk["slowest"]["d"]:
            pk["runner"] = pk.get("slowest")
            pk["slowest"] = pick
        elif pk.get("runner") is None or d >= pk["runner"]["d"]:
            pk["runner"] = pick
        p50 = p50_of(tr, source, s["kind"])
        if "median" not in pk or abs(d - p50) < abs(pk["median"]["d"] - p50):
            pk["median"] = pick
    out = {"host_events": len(tr["host"]),
           "critical_path_steps": len(w.closed), "dump": dump}
    out["kinds"] = {
        kind: dict({b + "_ns": v for b, v in zip(BOUNDS, k["bounds"])},
                   steps=k["steps"], analyzed=k["analyzed"],
                   window_ns=k["window_ns"], length_ns=sum(k["lengths"]),
                   length_p50_ns=ref_analysis.pct(k["lengths"], 500),
                   length_max_ns=max(k["lengths"]) if k["lengths"] else 0,
                   kernels=k["kernels"], kernels_on_path=k["kernels_on_path"],
                   queue_max=k["queue_max"], queue_area_ns=k["queue_area_ns"],
                   extent_ns=k["extent_ns"])
        for kind, k in kinds.items()}
    roles = {}
    for kind, pk in picks.items():
        # The slowest shown is never the median (two steps or more).
        if pk.get("runner") and pk["slowest"] is pk["median"]:
            pk["slowest"] = pk["runner"]
        for role in ("median", "slowest"):
            roles.setdefault(pk[role]["row"]["index"], []).append(
                (role, pk[role]))
    out["steps"] = {}
    kept = {r["index"] for r in steps[:KEEP_STEPS]}
    for row in steps[:KEEP_STEPS] + [
            p["row"] for ps in roles.values() for _, p in ps
            if p["row"]["index"] not in kept]:
        got = roles.get(row["index"], [])
        names = [r for r, _ in got]
        out["steps"][row["index"]] = dict(
            row, role=" ".join(names) if names else None,
            queue=got[0][1]["queue"] if got else None)
    where = lane_text(tr)
    out["segments"] = []
    for kind in sorted(picks, key=lambda k: k.encode()):
        pk = picks[kind]
        chosen = [pk["median"]]
        if pk["slowest"]["row"]["index"] != pk["median"]["row"]["index"]:
            chosen.append(pk["slowest"])
        for p in chosen:
            for i, sg in enumerate(p["segs"]):
                out["segments"].append({
                    "index": p["row"]["index"], "step": kind, "seq": i,
                    "what": sg["name"],
                    "kind": sg["what"], "where": where(sg),
                    "bound": BOUNDS[sg["bound"]], "from_ns": rel(sg["from"]),
                    "to_ns": rel(sg["to"]), "weight_ns": sg["weight"],
                    "count": sg["count"]})
    out["kernel_paths"] = {k: finish_path(r) for k, r in paths.items()}
    out["family_paths"] = {k: finish_path(r) for k, r in fpaths.items()}
    out["culprits"] = {
        k: {"count": len(v), "idle_ns": sum(v),
            "p50_ns": ref_analysis.pct(v, 500),
            "p99_ns": ref_analysis.pct(v, 990)}
        for k, v in culprits(tr, host).items()}
    top = {}
    for (kind, n, fams), (count, total) in seqs.items():
        top.setdefault((kind, n), []).append((-count, -total,
                                              [f.encode() for f in fams],
                                              fams, count, total))
    out["sequences"] = {}
    for (kind, n), v in top.items():
        for _, _, _, fams, count, total in sorted(v)[:SEQ_TOP]:
            out["sequences"][(kind, n, " > ".join(fams))] = {
                "count": count, "total_ns": total,
                "steps": kinds[kind]["analyzed"]}
    out["median_sequence"] = []
    for kind in sorted(picks, key=lambda k: k.encode()):
        runs = picks[kind]["median"]["runs"]
        tot = sum(r[2] for r in runs)
        for i, (name, count, dur) in enumerate(runs):
            out["median_sequence"].append({
                "step": kind, "position": i,
                "family": ref_analysis.family(name), "name": name,
                "count": count, "dur_ns": dur, "share": share(dur, tot)})
    out["kernel_cols"], out["family_cols"] = launch_cols(w, crit, fcrit)
    return out


def cols(calls, queues, critical):
    return {"critical_ns": critical, "launch_calls": len(calls),
            "launch_call_ns": sum(calls),
            "launch_call_p50_ns": ref_analysis.pct(calls, 500),
            "launch_call_p99_ns": ref_analysis.pct(calls, 990),
            "launch_queue_ns": sum(queues),
            "launch_queue_p50_ns": ref_analysis.pct(queues, 500),
            "launch_queue_p99_ns": ref_analysis.pct(queues, 990)}


def launch_cols(w, crit, fcrit):
    names = set(w.launch_cost) | set(crit)
    kcols = {n: cols(*w.launch_cost.get(n, ([], [])), crit.get(n, 0))
             for n in names}
    fam = {}
    for n in names:
        f = fam.setdefault(ref_analysis.family(n), ([], []))
        calls, queues = w.launch_cost.get(n, ([], []))
        f[0].extend(calls)
        f[1].extend(queues)
    fcols = {f: cols(c, q, fcrit.get(f, 0)) for f, (c, q) in fam.items()}
    return kcols, fcols


def _jsonable(x):
    if isinstance(x, dict):
        return {("|".join(map(str, k)) if isinstance(k, tuple) else str(k)):
                _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, set):
        return sorted(x)
    return x


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ref_cpath.py FILE")
    json.dump(_jsonable(reference(sys.argv[1])), sys.stdout, indent=1)
    sys.stdout.write("\n")
