"""The analysis half of the independent reference (ref_index.py calls it):
step-time distributions, idle time by cause, the utilisation timeline,
launch delays and kernel families, computed with plain sorting and
interval arithmetic from the events ref_index read. Shares no code with
the C side. The rules are docs/API.md's and the ones the C files document:

- percentile p of n samples: the sample of rank ceil(p n) - 1 of the
  sorted samples, valued by the log-linear rule of the medians (exact
  below 1024 ns; else the midpoint of its bucket, 512 per power of two),
  clamped to [min, max];
- records in time order: by start, then labels, kernels, copies, memsets,
  host calls, then by correlation (labels: by their place in the file);
- the rest as each function says.
"""
import bisect
import re

COMM = ("nccl", "rccl", "allreduce", "all_reduce", "all_gather",
        "allgather", "reduce_scatter", "reducescatter", "cross_device",
        "alltoall", "all_to_all", "multimem", "sendrecv", "mscclpp",
        "quickreduce")
TYPE_ORDER = {"kernel": 2, "copy": 3, "memset": 4}
BUCKETS = 21
TIMELINE_BUCKETS = 4096
SLOWEST = 5
TOP = 5


def bucket_value(v):
    """The value the medians' histogram reports for a sample v."""
    if v < 1024:
        return v
    e = v.bit_length() - 1
    width = 1 << (e - 9)
    low = (v >> (e - 9)) * width
    return low + width // 2


def pct(values, p):
    """Percentile p (per mille) of values, as the summaries report it."""
    if not values:
        return 0
    s = sorted(values)
    rank = -(-len(s) * p // 1000) - 1
    return min(max(bucket_value(s[rank]), s[0]), s[-1])


def dist(values):
    return {"min_ns": min(values), "p50_ns": pct(values, 500),
            "p90_ns": pct(values, 900), "p99_ns": pct(values, 990),
            "max_ns": max(values)}


def label_field(label, key):
    """(first, second) numbers after `key` (bs=117/128 gives both)."""
    m = re.search(r"[\[ ,]" + re.escape(key) + r"(\d+)(?:/(\d+))?", label)
    if not m:
        return None, None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else None


def bucket_of(v):
    b = 0 if v <= 1 else (v - 1).bit_length()
    return min(b, BUCKETS - 1)


def cut_text(name, limit=256):
    raw = name.encode()
    if len(raw) <= limit:
        return name
    while limit > 0 and (raw[limit] & 0xC0) == 0x80:
        limit -= 1
    return raw[:limit].decode()


# ---------------------------------------------------------------- steps

def steps(labels, kernels):
    """labels: [(ts, dur, kind, name, order)] of the step side; kernels:
    [(ts, dur, name)]. Per kind: the distribution, the steady state after
    the warm-up (leading steps slower than 2 x p50, at most ceil(n/10)),
    the bs/tok buckets, the slowest and median steps with their kernels."""
    by_kind = {}
    for lab in sorted(labels, key=lambda x: (x[0], x[4])):
        by_kind.setdefault(lab[2], []).append(lab)
    kstarts = sorted(kernels)
    starts = [k[0] for k in kstarts]
    out, buckets, outliers, hist = {}, [], [], []
    for kind, labs in sorted(by_kind.items()):
        durs = [lab[1] for lab in labs]
        p50 = pct(durs, 500)
        cap, warm = -(-len(durs) // 10), 0
        while warm < cap and durs[warm] > 2 * p50:
            warm += 1
        steady = durs[warm:]
        row = dict(dist(durs), warmup_steps=warm, steady_count=len(steady),
                   steady_total_ns=sum(steady))
        row.update({"steady_" + k: v for k, v in dist(steady).items()})
        out[kind] = row
        buckets += kind_buckets(kind, labs)
        hist += kind_histogram(kind, labs)
        outliers += kind_outliers(kind, labs, p50, kstarts, starts)
    return out, buckets, outliers, hist


def hist_bin(v):
    """The step-time histogram's bin of v: 64 ns below 1024, else 8 per
    power of two."""
    width = 64 if v < 1024 else 1 << (v.bit_length() - 1 - 3)
    lo = v - v % width
    return lo, lo + width


def kind_histogram(kind, labs):
    bins = {}
    for lab in labs:
        b = hist_bin(lab[1])
        bins[b] = bins.get(b, 0) + 1
    return [{"kind": kind, "lo_ns": lo, "hi_ns": hi, "count": n}
            for (lo, hi), n in sorted(bins.items())]


def kind_buckets(kind, labs):
    rows = {}
    for ts, dur, _, name, _ in labs:
        bs, graph = label_field(name, "bs=")
        tok, _ = label_field(name, "tok=")
        padded = int(bs is not None and graph is not None and graph > bs)
        for dim, v in (("bs", bs), ("tok", tok)):
            if v is None or v < 1:
                continue
            rows.setdefault((dim, bucket_of(v)), []).append((dur, padded))
    out = []
    for (dim, b), items in sorted(rows.items()):
        durs = [d for d, _ in items]
        padded = sum(p for _, p in items)
        out.append({"kind": kind, "dim": dim,
                    "lo": 1 if b == 0 else (1 << (b - 1)) + 1,
                    "hi": (1 << b) if b < BUCKETS - 1 else None,
                    "count": len(items), "padded": padded,
                    "padded_share": round(padded / len(items), 6),
                    "min_ns": min(durs), "p50_ns": pct(durs, 500),
                    "p99_ns": pct(durs, 990), "max_ns": max(durs)})
    return out


def top_kernels(ts, dur, kstarts, starts):
    """The kernels starting in [ts, ts + dur), by total, then name."""
    acc = {}
    for i in range(bisect.bisect_left(starts, ts),
                   bisect.bisect_left(starts, ts + dur)):
        a = acc.setdefault(kstarts[i][2], [0, 0])
        a[0] += 1
        a[1] += kstarts[i][1]
    ranked = sorted(acc.items(), key=lambda kv: (-kv[1][1],
                                                 kv[0].encode()))
    return [{"name": n, "count": c, "total_ns": t}
            for n, (c, t) in ranked[:TOP]]


def kind_outliers(kind, labs, p50, kstarts, starts):
    slow = sorted(labs, key=lambda x: (-x[1], x[0], x[4]))[:SLOWEST]
    median = min(labs, key=lambda x: (abs(x[1] - p50), x[0], x[4]))
    out = []
    for role, i, lab in ([("slowest", i, lab) for i, lab in enumerate(slow)]
                         + [("median", 0, median)]):
        out.append({"kind": kind, "role": role, "index": i,
                    "start_ns": lab[0], "dur_ns": lab[1],
                    "label": cut_text(lab[3]),
                    "top_kernels": top_kernels(lab[0], lab[1], kstarts,
                                               starts)})
    return out


# ----------------------------------------------------------------- idle

def is_sync(name):
    return "Synchronize" in name or (
        ("Memcpy" in name or "memcpy" in name) and "Async" not in name)


def is_comm(name):
    low = name.lower()
    return any(p in low for p in COMM)


def device_order(device):
    """device: [(ts, dur, type, corr, name)] sorted as the time pass walks
    them; corr -1 when none."""
    return sorted(device, key=lambda d: (d[0], TYPE_ORDER[d[2]], d[3]))


def union_walk(device):
    """The union of device intervals as the walk grows it: [(gap_start,
    record)] for every record that starts after the union's end, the
    increments [(start, end, record)], the busy time, and for each record
    the correlation of the record that last grew the union before it."""
    gaps, grow, before = [], [], []
    cur, last_corr = None, -1
    for rec in device:
        ts, dur = rec[0], rec[1]
        before.append(last_corr)
        if cur is None or ts > cur:
            gaps.append((cur, rec, last_corr))
        if cur is None or ts + dur > cur:
            lo = ts if cur is None or ts > cur else cur
            grow.append((lo, ts + dur, rec))
            cur = ts + dur
            last_corr = rec[3]
    return gaps, grow, cur


def cover_pieces(g0, g1, labels, kinds):
    """[(start, end, kind or None)] of [g0, g1): the kind whose covering
    label started last (ties: first seen in the file), where "started
    last" counts every label of the kind started so far."""
    cuts = {g0, g1}
    for ts, dur, _, _, _ in labels:
        for t in (ts, ts + dur):
            if g0 < t < g1:
                cuts.add(t)
    cuts = sorted(cuts)
    out = []
    for a, b in zip(cuts, cuts[1:]):
        best = None
        for kind in kinds:
            mine = [lab for lab in labels if lab[2] == kind and lab[0] <= a]
            if not any(lab[0] + lab[1] > a for lab in mine):
                continue
            last = max(lab[0] for lab in mine)
            if best is None or last > best[1]:
                best = (kind, last)
        out.append((a, b, best[0] if best else None))
    return out


def launch_index(calls):
    """corr -> sorted [(start, call)] of the host calls with it."""
    idx = {}
    for c in calls:
        if c[2] >= 0:
            idx.setdefault(c[2], []).append(c[0])
    for v in idx.values():
        v.sort()
    return idx


def launch_start(idx, rec):
    """The start of the latest call of rec's correlation that started
    before rec, or None."""
    starts = idx.get(rec[3])
    if rec[3] < 0 or not starts:
        return None
    i = bisect.bisect_left(starts, rec[0])
    return starts[i - 1] if i else None


def gap_cause(g0, rec, last_corr, calls_sync, idx):
    """The cause of the stretch from g0 ended by rec (None: the end)."""
    if rec is not None and rec[3] >= 0 and rec[3] == last_corr:
        return "graph_replay"
    g1 = rec[0] if rec is not None else None
    for ts, dur in calls_sync:
        if (g1 is None or ts < g1) and ts + dur > g0:
            return "sync"
    if rec is not None and rec[2] == "kernel" and is_comm(rec[4]):
        return "collective"
    launch = launch_start(idx, rec) if rec is not None else None
    if launch is not None and launch > g0:
        return "host_late"
    return "other"


def idle(t0, tend, device, calls, labels, kinds):
    """{(step or None, cause): ns} of the idle time, and its total."""
    dev = device_order(device)
    gaps, _, end = union_walk(dev)
    sync = [(c[0], c[1]) for c in calls if is_sync(c[3])]
    idx = launch_index(calls)
    stretches = [(t0 if g0 is None else g0, rec, lc) for g0, rec, lc in gaps]
    stretches.append((t0 if end is None else end, None, None))
    out, total = {}, 0
    for g0, rec, last_corr in stretches:
        g1 = rec[0] if rec is not None else tend
        if g1 <= g0:
            continue
        total += g1 - g0
        cause = gap_cause(g0, rec, last_corr, sync, idx)
        for a, b, kind in (cover_pieces(g0, g1, labels, kinds) if labels
                           else [(g0, g1, None)]):
            key = (kind, cause) if kind or not labels else (
                None, "between_steps")
            out[key] = out.get(key, 0) + b - a
    return out, total


def launch_delays(device, calls):
    """Kernel start minus its call's start, for the first device record of
    each correlation at or after its call (when that is a kernel)."""
    idx = launch_index(calls)
    seen, out = set(), []
    for rec in device_order(device):
        launch = launch_start(idx, rec)
        if launch is None or rec[3] in seen:
            continue
        seen.add(rec[3])
        if rec[2] == "kernel":
            out.append(rec[0] - launch)
    return out


# ------------------------------------------------------------- timeline

def spread(row_of, width, t0, a, b, add):
    i = (a - t0) // width
    while a < b:
        hi = t0 + (i + 1) * width
        add(row_of[i] if i < len(row_of) else row_of[-1], min(b, hi) - a)
        a = min(b, hi)
        i += 1


def timeline(t0, tend, device, labels, category):
    """The 4096-bucket rows: union busy, split by the category of the
    record that grew the union, and each kind's label union."""
    span = tend - t0
    if span <= 0:
        return [], 0
    width = -(-span // TIMELINE_BUCKETS)
    n = -(-span // width)
    rows = [{"index": i, "start_ns": i * width,
             "end_ns": min((i + 1) * width, span), "busy_ns": 0,
             "by_category": {}, "steps": {}} for i in range(n)]
    _, grow, _ = union_walk(device_order(device))
    for a, b, rec in grow:
        cat = category(rec)

        def add(row, ns, cat=cat):
            row["busy_ns"] += ns
            row["by_category"][cat] = row["by_category"].get(cat, 0) + ns
        spread(rows, width, t0, a, b, add)
    for kind in sorted({lab[2] for lab in labels}):
        ivs = sorted((lab[0], lab[0] + lab[1]) for lab in labels
                     if lab[2] == kind)
        merged = []
        for s, e in ivs:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        for s, e in merged:
            def add(row, ns, kind=kind):
                row["steps"][kind] = row["steps"].get(kind, 0) + ns
            spread(rows, width, t0, s, e, add)
    for row in rows:
        best = sorted(row["steps"].items(), key=lambda kv: (-kv[1],
                                                            kv[0].encode()))
        row["step"] = best[0][0] if best else None
    return rows, width


# ------------------------------------------------------------- families

SOURCE = re.compile(r"(\d+)")
TILE = re.compile(r"_[A-Za-wyzA-Z]*\d+x\d")
FAMILY_RULES = (("ck_tile::kentry<", "arg2", False),
                ("cijk_", "tile", True), ("nvjet", "tile", False),
                ("cutlass", "tile", False), ("xmma", "tile", False),
                ("cudnn", "tile", False), ("gemm", "tile", False),
                ("triton_", "ordinal", False))


class Mangled:
    """Just enough of the Itanium mangling to name a kernel: the nested
    name's parts and its template arguments' names (arg n), skipping
    every other construct by the grammar's shapes."""

    def __init__(self, s):
        self.s, self.i, self.subs, self.arg2 = s, 0, [], None

    def number(self):
        j = self.i
        while self.s[j].isdigit():
            j += 1
        n, self.i = int(self.s[self.i:j]), j
        return n

    def source(self):
        n = self.number()
        name = self.s[self.i:self.i + n]
        self.i += n
        return "(anonymous namespace)" if name.startswith(
            "_GLOBAL__N") else name

    def to_underscore(self):
        self.i = self.s.index("_", self.i) + 1

    def substitution(self):
        """S_, S<base 36>_, or St/Sa/Ss...: the parts it stands for."""
        s, i = self.s, self.i
        if s[i + 1] in "tabsiod":
            self.i += 2
            return ["std"]
        j = s.index("_", i)
        k = s[i + 1:j]
        self.i = j + 1
        ref = 0 if not k else int(k, 36) + 1
        return list(self.subs[ref]) if ref < len(self.subs) else []

    def skip_type(self):
        """One type or template argument; its name parts when it is a
        named class."""
        s, c = self.s, self.s[self.i]
        if c.isdigit():
            return [self.source()]
        if c == "N":
            return self.nested()
        if c == "S":
            parts = self.substitution()
            if self.s[self.i].isdigit():
                parts.append(self.source())
            if self.s[self.i] == "I":
                self.args()
            return parts
        self.i += 1
        if c == "L":
            if s[self.i] == "N":
                self.nested()
            else:
                self.skip_type()
            while s[self.i] != "E":
                self.i += 1
            self.i += 1
        elif c in "IJXF":
            while s[self.i] != "E":
                self.skip_type()
            self.i += 1
        elif c == "T":
            self.to_underscore()
        elif c == "D":
            self.i += 1
            if s[self.i - 1] == "F":
                self.number()
                self.i += 1
            elif s[self.i - 1] == "p":
                self.skip_type()
        elif c in "PRKVO":
            self.skip_type()
        elif c == "A":
            self.to_underscore()
            self.skip_type()
        elif c == "M":
            self.skip_type()
            self.skip_type()
        return None

    def args(self, want=None):
        """I ... E; the name parts of argument `want` (from 1)."""
        self.i += 1
        n, got = 0, None
        while self.s[self.i] != "E":
            n += 1
            parts = self.skip_type()
            if n == want:
                got = parts
        self.i += 1
        return got

    def nested(self, outer=False):
        """N <prefix parts> [I args E] ... E: the parts; for the outer name
        the second template argument of its last part goes to arg2."""
        self.i += 1
        parts = []
        while self.s[self.i] != "E":
            c = self.s[self.i]
            if c.isdigit():
                parts.append(self.source())
                self.subs.append(list(parts))
            elif c == "S":
                parts = self.substitution()
            elif c == "I":
                got = self.args(2)
                if outer:
                    self.arg2 = got
                self.subs.append(list(parts))
            elif c == "T":
                self.to_underscore()
            else:
                self.i += 1 + (c in "CD")
        self.i += 1
        return parts


def mangled_family(name):
    """(qualified name, its identifiers, the name of its 2nd template
    argument) of a _ZN... name; None for another shape."""
    if not name.startswith("_ZN"):
        return None
    m = Mangled(name)
    m.i = 2
    try:
        parts = m.nested(outer=True)
    except (IndexError, ValueError):
        return None
    idents = re.findall(r"\d+([A-Za-z_][A-Za-z_0-9]*)", name)
    return "::".join(parts), " ".join(idents), (
        "::".join(m.arg2) if m.arg2 else None)


def strip_text(d):
    if d.startswith("void "):
        d = d[5:]
    d = d.rstrip()
    if d.endswith(")"):
        depth = 0
        for i in range(len(d) - 1, -1, -1):
            depth += d[i] == ")"
            depth -= d[i] == "("
            if d[i] == "(" and depth == 0:
                d = d[:i]
                break
    out, depth = [], 0
    for ch in d:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).rstrip()


def family(name):
    """The family of a kernel name by the built-in rules (rules.c)."""
    got = mangled_family(name) if name.startswith("_Z") else None
    if name.startswith("_Z") and got is None:
        return name
    if got is not None and got[0]:
        base, text, arg2 = got
        text = "void " + base + "< " + text
    else:  # not mangled, or past what a demangler reads: the name itself
        base, text, arg2 = strip_text(name), name, None
    low = text.lower()
    for pat, action, prefix in FAMILY_RULES:
        hit = low.startswith(pat) if prefix else pat in low
        if name.startswith("_Z") and pat == "ck_tile::kentry<":
            hit = base == "ck_tile::kentry"
        if not hit:
            continue
        if action == "tile":
            m = TILE.search(base)
            return base[:m.start()] if m and m.start() > 0 else base
        if action == "ordinal":
            return re.sub(r"(?<=.)_\d+$", "", base)
        if action == "arg2" and arg2:
            return arg2
        return base
    return base


def families(kernels):
    """kernels: {name: [durations]}: {family: row}."""
    out = {}
    for name, durs in kernels.items():
        f = out.setdefault(family(name), {"kernels": 0, "durs": []})
        f["kernels"] += 1
        f["durs"] += durs
    rows = {}
    for fam, f in out.items():
        d = f["durs"]
        rows[fam] = {"kernels": f["kernels"], "count": len(d),
                     "total_ns": sum(d), "min_ns": min(d), "max_ns": max(d),
                     "p50_ns": pct(d, 500), "p99_ns": pct(d, 990),
                     "avg_ns": sum(d) // len(d)}
    return rows


def family_steps(labels, kernels, step_counts):
    """GPU labels [(ts, dur, kind, ...)], kernels [(ts, dur, name)]:
    {(family, kind): {count, total_ns, steps, per_step_ns}} of kernels
    starting inside the union of the kind's labels."""
    out = {}
    for kind in {lab[2] for lab in labels}:
        merged = []
        for s, e in sorted((lab[0], lab[0] + lab[1]) for lab in labels
                           if lab[2] == kind):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        starts = [m[0] for m in merged]
        for ts, dur, name in kernels:
            i = bisect.bisect_right(starts, ts) - 1
            if i >= 0 and ts < merged[i][1]:
                r = out.setdefault((family(name), kind),
                                   {"count": 0, "total_ns": 0})
                r["count"] += 1
                r["total_ns"] += dur
    for (fam, kind), r in out.items():
        r["steps"] = step_counts[kind]
        r["per_step_ns"] = r["total_ns"] // step_counts[kind]
    return out


# ------------------------------------------------------- step samples

SAMPLES_MAX, SAMPLE_FAMS, SAMPLE_NAMES = 2048, 24, 12
CATEGORY_ORDER = ("gemm", "attention", "moe", "communication", "custom",
                  "routing", "copy", "memset", "elementwise",
                  "normalization", "softmax_topk", "sync", "other")


def sample_figures(kernels, device, categories):
    """The figures tracked per step: categories with device time (in the
    category list's order), the 24 largest families with >= 0.5% of the
    kernel time, the 12 largest kernels with >= 1% (ties: by name)."""
    kernel_ns = sum(sum(d) for d in kernels.values())
    cats = {}
    for rec in device:
        c = rec[2] if rec[2] != "kernel" else categories.get(rec[4], "other")
        cats[c] = cats.get(c, 0) + rec[1]
    figs = [("category", c) for c in CATEGORY_ORDER if cats.get(c, 0) > 0]
    fams = {}
    for name, durs in kernels.items():
        fams[family(name)] = fams.get(family(name), 0) + sum(durs)

    def largest(totals, n, per, den):
        order = sorted(totals.items(), key=lambda kv: (-kv[1],
                                                       kv[0].encode()))
        return [k for k, v in order[:n] if v > 0 and v * den >= kernel_ns * per]
    figs += [("family", f) for f in largest(fams, SAMPLE_FAMS, 5, 1000)]
    figs += [("kernel", k) for k in largest(
        {n: sum(d) for n, d in kernels.items()}, SAMPLE_NAMES, 1, 100)]
    return figs


def sample_strides(labels, kinds):
    """{kind: stride}: every stride-th step of a real kind kept, the kind
    keeping most halved (ties: the kind seen first) until <= 2048."""
    count = {k: sum(1 for lab in labels if lab[2] == k) for k in kinds}
    stride = {k: 1 for k in kinds if count[k] and not k.startswith("dummy_")}
    kept = dict((k, count[k]) for k in stride)
    while sum(kept.values()) > SAMPLES_MAX:
        m = max(kinds, key=lambda k: (kept.get(k, 0), -kinds.index(k)))
        stride[m] *= 2
        kept[m] = -(-count[m] // stride[m])
    return stride


def step_samples(side, labels, kinds, device, calls, categories, kernels,
                 t0):
    """{(kind, ordinal): {"dur_ns", "start_ns", "warmup", "bs", "tok",
    "step", "values": {(figure, name): ns}}} of the kept real steps, and
    the figures: device records count for a GPU-side label they start
    in, for a CPU-side one when the latest call of their correlation
    before them started in it (the latest-started open real label)."""
    figs = sample_figures(kernels, device, categories)
    stride = sample_strides(labels, kinds)
    labs = sorted((lab for lab in labels if lab[2] in stride),
                  key=lambda x: (x[0], x[4]))
    by_kind, out = {}, {}
    for lab in labs:
        by_kind.setdefault(lab[2], []).append(lab)
    keep = []
    for kind, ls in by_kind.items():
        durs = [lab[1] for lab in ls]
        p50, cap, warm = pct(durs, 500), -(-len(durs) // 10), 0
        while warm < cap and durs[warm] > 2 * p50:
            warm += 1
        for i, lab in enumerate(ls):
            if i % stride[kind]:
                continue
            bs, _ = label_field(lab[3], "bs=")
            tok, _ = label_field(lab[3], "tok=")
            m = re.match(r"^ProfilerStep#(\d+)$", lab[3])
            out[(kind, i)] = {
                "start_ns": lab[0] - t0, "dur_ns": lab[1],
                "warmup": int(i < warm), "bs": bs, "tok": tok,
                "step": int(m.group(1)) if m else None,
                "values": {f: 0 for f in figs}}
            keep.append((lab, (kind, i)))
    all_labs = [(lab, None) for lab in labs]
    kept = {id(lab): key for lab, key in keep}
    idx = launch_index(calls)
    for rec in device:
        if side == "gpu":
            owners = [kept.get(id(lab)) for lab, _ in all_labs
                      if lab[0] <= rec[0] < lab[0] + lab[1]]
        else:
            start = launch_start(idx, rec)
            open_ = [lab for lab, _ in all_labs if start is not None and
                     lab[0] <= start < lab[0] + lab[1]]
            owners = [kept.get(id(open_[-1]))] if open_ else []
        c = rec[2] if rec[2] != "kernel" else categories.get(rec[4], "other")
        mine = [("category", c)]
        if rec[2] == "kernel":
            mine += [("family", family(rec[4])), ("kernel", rec[4])]
        for key in owners:
            if key is None:
                continue
            for f in mine:
                if f in out[key]["values"]:
                    out[key]["values"][f] += rec[1]
    return out, figs
