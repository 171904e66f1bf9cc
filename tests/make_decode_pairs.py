#!/usr/bin/env python3
"""A generated ATOM-style profile folder with graph capture traces
(docs/DECODE.md), as ATOM writes it with --torch-profiler-dir DIR
--mark-trace (atom/model_engine/model_runner.py: start_capture_profiler,
_capture_trace_tag; module tags from atom/utils/decorators.py's
mark_trace, whose record_function names are the modules' prefixes):

  DIR/rank_R/<model>_ts_<date>_<ms>.pt.trace.json.gz     the run trace
  DIR/rank_R/capture_traces/bs_8_q_1_rankR.json.gz       FULL: one graph
  DIR/rank_R/capture_traces/bs_16_q_1_rankR.json.gz      PIECEWISE: five
      graphs, the attention of each layer eager between them

A 4-layer model (module tags model.layers.<i>.*, cpu_ops under them,
hipLaunchKernel with args.kernel). A capture trace holds the warm-up
forward (eager, ignored) and the capture windows (hipStreamBeginCapture ..
hipStreamEndCapture). The run trace holds one eager prefill step, six FULL
decode steps (decode[bs=5/8 ...]: one hipGraphLaunch and an eager argmax),
four PIECEWISE ones (decode[bs=12/16 ...]: five graph launches with eager
attention between). In the run trace layer SLOW_LAYER's kernels take 3x
their time. Two replays lost a kernel: one the lm_head GEMM (one way to
place the rest: matched short), one of the two identical elementwise
kernels of layer 1's MLP (two ways: left unmatched).

make(out, ranks) writes the folder and returns its facts (also written to
out/facts.json): per rank the run trace, the capture traces and the counts
the test expects. Run as a script: make_decode_pairs.py OUT [RANKS].
"""
import gzip
import json
import os
import random
import sys

LAYERS = 4
SLOW_LAYER = 2
EPOCH_NS = 4_909_914_216_204_635  # ns, like a real trace's ts
MODEL = "Qwen3-4L"

GEMM = "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT%s_MI16x16x1_SN_LDSB1"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, "
               "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
               "c10::BFloat16, at::native::binary_internal::MulFunctor<float>"
               " > >(int, at::native::BinaryFunctor<c10::BFloat16, "
               "c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
               "MulFunctor<float> >, std::array<char*, 3ul>)")
RMSNORM = "void aiter::rmsnorm_kernel<__hip_bfloat16, 128, 8>(...)"

# (module tag suffix, op, kernel, base ns) of one layer, in launch order.
LAYER_LAUNCHES = [
    ("input_layernorm", "aiter::rmsnorm", RMSNORM, 1500),
    ("self_attn.qkv_proj", "aten::mm", GEMM % "64x64x64", 9000),
    ("self_attn.attn", "aiter::paged_attention",
     "paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, 16, 128>",
     12000),
    ("self_attn.o_proj", "aten::mm", GEMM % "64x64x32", 5000),
    ("post_attention_layernorm", "aiter::add_rmsnorm",
     "void aiter::add_rmsnorm_kernel<__hip_bfloat16, 128, 8>(...)", 1800),
    ("mlp.gate_up_proj", "aten::mm", GEMM % "128x128x64", 15000),
    ("mlp.act_fn", "aten::silu", ELEMENTWISE, 1200),
    ("mlp.act_fn", "aten::mul", ELEMENTWISE, 1100),
    ("mlp.down_proj", "aten::mm", GEMM % "64x128x64", 11000),
]
HEAD = [("model.embed_tokens", "aten::embedding",
         "void at::native::indexSelectLargeIndex<c10::BFloat16, long>(...)",
         2000)]
TAIL = [("model.norm", "aiter::rmsnorm", RMSNORM, 1500),
        ("lm_head", "aten::mm", GEMM % "256x128x64", 30000)]
SAMPLER = ("sampler", "aten::argmax",
           "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<"
           "float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >",
           3000)
ATTN = 2  # index of the attention launch in a layer
# The GEMMs' shapes as record_shapes writes them (M tokens by K, the
# weight K by N seen transposed), so that the op groups (docs/PERF.md)
# have rows: by the module tag's last part.
TOKENS = 32
MM_SHAPES = {"qkv_proj": (1024, 1536), "o_proj": (1024, 1024),
             "gate_up_proj": (1024, 6144), "down_proj": (3072, 1024),
             "lm_head": (1024, 151936)}


def shapes(tag, op):
    """An op's record_shapes arguments, or None."""
    kn = MM_SHAPES.get(tag.rsplit(".", 1)[-1]) if op == "aten::mm" else None
    if kn is None:
        return None
    k, n = kn
    return {"Input Dims": [[TOKENS, k], [k, n]],
            "Input type": ["c10::BFloat16", "c10::BFloat16"],
            "Input Strides": [[k, 1], [1, k]], "Concrete Inputs": ["", ""]}


def forward():
    """[(tag, op, kernel, base ns, layer or None)] of one forward."""
    out = [h + (None,) for h in HEAD]
    for i in range(LAYERS):
        for mod, op, k, ns in LAYER_LAUNCHES:
            out.append(("model.layers.%d.%s" % (i, mod), op, k, ns, i))
    return out + [t + (None,) for t in TAIL]


def pieces(fwd):
    """PIECEWISE: the forward cut around each layer's attention, which
    runs eager: [piece launches...], with the eager attention between."""
    out, cur = [], []
    for x in fwd:
        if x[0].endswith("self_attn.attn"):
            out.append(cur)
            out.append(x)
            cur = []
        else:
            cur.append(x)
    out.append(cur)
    return out


def us(ns):
    """Microseconds with three decimals, exactly (kineto's way)."""
    return "%d.%03d" % divmod(ns, 1000)


class Trace:
    """Events of one file on one CPU thread and one GPU stream."""

    def __init__(self, rank, corr_base):
        self.rank = rank
        self.ev = []
        self.cpu = EPOCH_NS + rank * 1_000_000
        self.gpu = self.cpu
        self.corr = corr_base
        self.ext = corr_base
        self.pid = self.tid = 4000 + rank
        self.dev = 2 + rank

    def x(self, cat, name, ts, dur, pid=None, tid=None, args=None):
        e = {"ph": "X", "cat": cat, "name": name,
             "pid": self.pid if pid is None else pid,
             "tid": self.tid if tid is None else tid,
             "ts": us(ts), "dur": us(dur)}
        if args:
            e["args"] = args
        self.ev.append(e)
        return e

    def launch(self, kernel, ns, runtime="hipLaunchKernel", emit=True):
        """A launch call now and, when emit, its kernel on the GPU."""
        self.corr += 1
        self.ext += 1
        t = self.cpu
        self.x("cuda_runtime", runtime, t, 4_000, args={
            "External id": self.ext, "kernel": kernel, "correlation":
            self.corr, "grid": [64, 1, 1], "block": [256, 1, 1],
            "shared memory": 0})
        self.cpu += 5_000
        if emit:
            self.gpu = max(self.gpu, t + 20_000)
            self.x("kernel", kernel, self.gpu, ns, self.dev, 1, {
                "device": self.dev, "stream": 1, "correlation": self.corr,
                "kind": "Dispatch Kernel"})
            self.gpu += ns + 300
        return self.corr

    def under(self, tag, op, fn):
        """fn() under the module tag and the op, their spans around it."""
        start = self.cpu
        self.cpu += 1_000
        fn()
        self.cpu += 1_000
        self.x("user_annotation", tag, start, self.cpu - start)
        self.x("cpu_op", op, start + 500, self.cpu - start - 1_000,
               args=dict({"External id": self.ext}, **(shapes(tag, op) or {})))
        self.cpu += 500

    def eager(self, x, scale, emit=True):
        tag, op, kernel, ns, _ = x
        self.under(tag, op, lambda: self.launch(kernel, int(ns * scale),
                                                emit=emit))

    def doc(self):
        return {"schemaVersion": 1,
                "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}],
                "distributedInfo": {"backend": "nccl", "rank": self.rank,
                                    "world_size": 2},
                "traceEvents": self.ev, "traceName": "generated"}


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)


def capture_window(t, launches):
    """One graph: hipStreamBeginCapture, the launches it records (their
    kernels not run), hipStreamEndCapture."""
    t.x("cuda_runtime", "hipStreamBeginCapture", t.cpu, 3_000,
        args={"correlation": t.corr})
    t.cpu += 4_000
    for x in launches:
        t.eager(x, 1.0, emit=False)
    t.x("cuda_runtime", "hipStreamEndCapture", t.cpu, 5_000,
        args={"correlation": t.corr})
    t.cpu += 6_000


def capture_file(rank, bs, piecewise):
    """A capture trace: the warm-up forward, then the capture windows."""
    t = Trace(rank, 10_000 * (bs + 1))
    fwd = forward()
    for x in fwd:                 # warm-up: eager, with kernels
        t.eager(x, 1.0)
    t.cpu += 50_000
    if not piecewise:
        start = t.cpu
        capture_window(t, fwd)
        t.x("user_annotation", "capture_graph_bs_%d" % bs, start,
            t.cpu - start)
        return t.doc()
    for p in pieces(fwd):         # per-piece self-capture, attention eager
        if isinstance(p, tuple):
            t.eager(p, 1.0)
            continue
        capture_window(t, p)
    return t.doc()


def scale_of(x, rng, slow):
    """A kernel's time factor in the run trace: layer `slow` 3x, jitter."""
    return (3.0 if x[4] == slow else 1.0) * rng.uniform(0.9, 1.1)


def replay(t, launches, rng, slow, drop=None):
    """One graph launch and its replayed kernels (one correlation)."""
    t.corr += 1
    corr = t.corr
    t.x("cuda_runtime", "hipGraphLaunch", t.cpu, 30_000,
        args={"External id": t.ext, "correlation": corr})
    t.cpu += 32_000
    t.gpu = max(t.gpu, t.cpu)
    for i, x in enumerate(launches):
        ns = int(x[3] * scale_of(x, rng, slow))
        if i != drop:
            t.x("kernel", x[2], t.gpu, ns, t.dev, 1, {
                "device": t.dev, "stream": 1, "correlation": corr,
                "kind": "Dispatch Task"})
        t.gpu += ns + 200


def step(t, label, body):
    """A step label around body() on the CPU and its projection on the
    GPU, as ATOM's run labels are (docs/ATOM.md)."""
    start, g0 = t.cpu, max(t.gpu, t.cpu)
    t.cpu += 2_000
    body()
    t.cpu += 2_000
    t.x("user_annotation", label, start, t.cpu - start)
    t.x("gpu_user_annotation", label, g0, max(t.gpu, t.cpu) - g0, t.dev, 1)
    t.cpu = max(t.cpu, t.gpu) + 40_000    # the host syncs on the sample


def run_file(rank, rng, slow):
    t = Trace(rank, 1_000_000)
    fwd = forward()
    facts = {"replays": 0, "short": 0, "unmatched": 0, "missing": 0}

    def prefill():
        for x in fwd:
            t.eager(x, scale_of(x, rng, slow) * 4)
        t.eager(SAMPLER + (None,), 1.0)

    step(t, "prefill[bs=2 tok=64 ctx=[32, 32]]", prefill)
    lm_head = len(fwd) - 1
    mul_l1 = [i for i, x in enumerate(fwd)
              if x[0] == "model.layers.1.mlp.act_fn" and x[1] == "aten::mul"][0]
    for n in range(6):
        drop = {3: lm_head, 5: mul_l1}.get(n)

        def full(drop=drop):
            replay(t, fwd, rng, slow, drop)
            t.eager(SAMPLER + (None,), 1.0)

        step(t, "decode[bs=5/8 tok=5 d=5]", full)
        facts["replays"] += 1
        facts["short"] += drop == lm_head
        facts["missing"] += drop == lm_head
        facts["unmatched"] += drop == mul_l1
    for n in range(4):
        def piecewise():
            for p in pieces(fwd):
                if isinstance(p, tuple):
                    t.eager(p, scale_of(p, rng, slow))
                else:
                    replay(t, p, rng, slow)
                    facts["replays"] += 1
            t.eager(SAMPLER + (None,), 1.0)

        step(t, "decode[bs=12/16 tok=12 d=12]", piecewise)
    return t.doc(), facts


def make(out, ranks=2, seed=18, slow=SLOW_LAYER):
    """The folder for `ranks` ranks whose layer `slow` is 3x slower."""
    rng = random.Random(seed)
    facts = {"slow_layer": slow, "layers": LAYERS, "ranks": []}
    for r in range(ranks):
        folder = os.path.join(out, "rank_%d" % r)
        run = os.path.join(folder, "%s_ts_20260901_120000_%03d.pt.trace."
                           "json.gz" % (MODEL, r))
        caps = []
        for bs, piecewise in ((8, False), (16, True)):
            path = os.path.join(folder, "capture_traces",
                                "bs_%d_q_1_rank%d.json.gz" % (bs, r))
            write(path, capture_file(r, bs, piecewise))
            caps.append((path, bs, 1, "AUTO"))
        doc, f = run_file(r, rng, slow)
        write(run, doc)
        f.update({"run": run, "captures": caps,
                  "graphs": 1 + len([p for p in pieces(forward())
                                     if not isinstance(p, tuple)])})
        facts["ranks"].append(f)
    with open(os.path.join(out, "facts.json"), "w") as fp:
        json.dump(facts, fp, indent=1)
    return facts


if __name__ == "__main__":
    make(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
