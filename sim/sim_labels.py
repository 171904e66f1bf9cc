"""ATOM's run labels (record_function names, docs/ATOM.md "record_function
labels") for the steps a simulated engine ran while its profiler was on,
and their placement in an exported trace.

ATOM ffdf3bb5 names a forward pass with build_run_label
(atom/model_engine/run_labels.py): prefill[bs= tok= ctx=], decode[bs=
tok= p= d= spec=] (bs=<real>/<graph> when the CUDA graph is padded),
eager_decode[bs= tok= ctx=] above the largest captured graph (or with
--enforce-eager), dummy_decode[...] for a DP rank kept in step with its
peers; ctx is "[a, b, c]...+N" beyond five sequences. Its drafters add
draft[i/k bs=] (eagle_proposer.py:308) and dspark[bs= T=],
dspark_ctx_kv[bs= tok=], dspark_sched[bs=] (dspark_proposer.py). The
seed skill's newer ATOM renames the drafts propose_eagle[i/k tok= bs=]
and propose_dspark[bs= T=], and dspark_ctx_kv draft_kv: SIM_LABELS=seed
writes that generation (default ffdf3bb5, as ATOM ships).

Each label becomes a CPU user_annotation and a GPU gpu_user_annotation
event: over a step's own forward pass in a composed rank (sim_compose.py),
or, in a trace given by SIM_TRACE_FILE, laid one after another over the
span of its GPU kernels, so every end-to-end test indexes steps.
"""
import json
import os

# --cudagraph-capture-sizes' default (arg_utils.py:192).
GRAPH_SIZES = [1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 512]
MAX_STEPS = 4096          # steps kept per engine and window


class Step:
    """One forward pass: kind prefill, decode or dummy; bs sequences of
    tok tokens in all, ctx their context lengths."""

    def __init__(self, kind, ctx):
        self.kind = kind
        self.ctx = list(ctx)
        self.bs = len(self.ctx)
        self.tok = sum(self.ctx) if kind == "prefill" else self.bs


def graph_sizes(args):
    try:
        sizes = sorted(int(x) for x in json.loads(
            args.cudagraph_capture_sizes))
    except (ValueError, TypeError):
        sizes = []
    return sizes or GRAPH_SIZES


def ctx_text(ctx):
    if len(ctx) == 1:
        return str(ctx[0])
    if len(ctx) <= 5:
        return "[%s]" % ", ".join(map(str, ctx))
    return "[%s]...+%d" % (", ".join(map(str, ctx[:3])), len(ctx) - 3)


def forward_label(step, args):
    """build_run_label for one step."""
    if step.kind == "prefill":
        return "prefill[bs=%d tok=%d ctx=%s]" % (step.bs, step.tok,
                                                 ctx_text(step.ctx))
    sizes = graph_sizes(args)
    spec = args.num_speculative_tokens if args.method else 0
    if args.enforce_eager or step.bs > sizes[-1]:
        kind = "dummy_eager_decode" if step.kind == "dummy" else \
            "eager_decode"
        return "%s[bs=%d tok=%d ctx=%s]" % (kind, step.bs, step.tok,
                                            ctx_text(step.ctx))
    graph = min(s for s in sizes if s >= step.bs)
    kind = "dummy_decode" if step.kind == "dummy" else "decode"
    bs = "%d/%d" % (step.bs, graph) if graph > step.bs else str(step.bs)
    return "%s[bs=%s tok=%d d=%d%s]" % (kind, bs, step.tok, step.bs,
                                       " spec=%d" % spec if spec else "")


def draft_labels(step, args, generation):
    """The drafter's passes after a real decode."""
    if step.kind != "decode" or not args.method:
        return []
    k, bs = args.num_speculative_tokens, step.bs
    if args.method == "dspark":
        if generation == "seed":
            return ["propose_dspark[bs=%d/%d T=%d graph]" % (bs, bs, k),
                    "draft_kv[bs=%d tok=%d]" % (bs, bs * (k + 1)),
                    "dspark_sched[bs=%d]" % bs]
        return ["dspark[bs=%d T=%d]" % (bs, k),
                "dspark_ctx_kv[bs=%d tok=%d]" % (bs, bs * (k + 1)),
                "dspark_sched[bs=%d]" % bs]
    if generation == "seed":
        # Step 0 runs the whole token stream and cannot pad.
        return ["propose_eagle[%d/%d tok=%d bs=%d%s]" % (
            i, k, bs * (k + 1) if i == 0 else bs, bs,
            "" if i == 0 else "/%d graph" % bs) for i in range(k)]
    return ["draft[%d/%d bs=%d]" % (i, k, bs) for i in range(k)]


def passes(steps, args):
    """Every pass of the steps, in order: (kind, step, label) for a
    forward, (kind, None, label) for a drafter's pass after it."""
    generation = os.environ.get("SIM_LABELS", "ffdf3bb5")
    out = []
    for step in steps:
        out.append((step.kind, step, forward_label(step, args)))
        out += [(step.kind, None, name)
                for name in draft_labels(step, args, generation)]
    return out


def kernel_span(doc):
    """(first kernel start, last kernel end, pid, tid of the first kernel,
    pid, tid of a CPU op) in µs, or None without GPU kernels."""
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    first = last = None
    gpu = cpu = None
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0))
        except (KeyError, TypeError, ValueError):
            continue
        if e.get("cat") == "kernel":
            if first is None or ts < first:
                first = ts
                gpu = (e.get("pid", 0), e.get("tid", 0))
            last = max(last or ts + dur, ts + dur)
        elif cpu is None and e.get("cat") in ("cpu_op", "python_function"):
            cpu = (e.get("pid", 0), e.get("tid", 0))
    if first is None:
        return None
    return first, last, gpu, cpu or gpu


def has_labels(doc):
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return any(isinstance(e, dict) and
               e.get("cat") in ("user_annotation", "gpu_user_annotation") and
               "[" in str(e.get("name", "")) for e in events)


def annotation_text(names, span):
    """The label events, as kineto writes them, laid one after another
    over the kernels' span: ", "-joined JSON objects."""
    first, last, gpu, cpu = span
    width = (last - first) / len(names)
    out = []
    for i, name in enumerate(names):
        ts, dur = first + i * width, max(width * 0.98, 0.001)
        for cat, (pid, tid) in (("user_annotation", cpu),
                                ("gpu_user_annotation", gpu)):
            out.append(json.dumps({"ph": "X", "cat": cat, "name": name,
                                   "pid": pid, "tid": tid,
                                   "ts": float("%.3f" % ts),
                                   "dur": float("%.3f" % dur),
                                   "args": {"External id": 0}}))
    return ", ".join(out)


def insert_events(text, events):
    """`text` (a kineto JSON document) with `events` (JSON object text)
    first in its traceEvents array; every other byte kept."""
    if not events:
        return text
    key = text.find('"traceEvents"')
    at = text.find("[", key if key >= 0 else 0)
    if at < 0:
        return text
    rest = text[at + 1:].lstrip()
    sep = "" if rest.startswith("]") else ", "
    return text[:at + 1] + events + sep + text[at + 1:]
