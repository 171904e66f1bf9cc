#!/usr/bin/env python3
"""Generated serving ranks for the verdicts' power and false-alarm rates
(docs/VERDICTS.md), stdlib only, fast enough for hundreds of captures:

    python3 make_serving.py OUTDIR NAME SEED [family=factor ...]

make_capture(outdir, name, seed, slow={family key: factor}, tp=1, ...):
one ATOM-like capture under outdir/name/rank_<r>/ of CONC requests served
together, as ATOM serves a benchmark's prompts (kineto JSON, ROCm names):

  - prefill steps first, a few requests each (prefill[bs= tok=], tok the
    prompts' tokens, ISL +-25% each), eager: each kernel launched by its
    own hipLaunchKernel;
  - then decode steps until the last request ends: every request has its
    own output length (OSL x uniform 0.3..1), so the batch ramps down from
    CONC to 1 (decode[bs=<real>/<graph> tok=<real>], graph sizes 1, 2, 4,
    8, 16, 24, 32...), each step a graph replay: one hipGraphLaunch, every
    kernel of the step on its correlation;
  - GPU-side and CPU-side labels, the CPU running ahead;
  - kernel times from a model of the batch (GEMMs, attention and MoE grow
    with bs or tok, the context grows with each step) times a per-step
    factor (clocks: lognormal, sd JITTER_STEP) and a per-kernel one
    (lognormal, sd JITTER_KERNEL); the first two decode steps 3x slower
    (warm-up); about one step in a hundred holds one kernel 4-12x slower
    (an outlier);
  - slow: the kernels of a family key (FAMILIES) take factor x their time
    in every step, the same build otherwise.

The seed draws everything random, the output lengths included: two seeds
are two runs of the same build; with bench, a seed of the benchmark's
own, two seeds are two runs of one benchmark (the same steps). Figures are never computed here: the
tests read them with traced and judge its verdicts.
"""
import gzip
import math
import os
import random
import sys

T0 = 7_000_000_000_000  # ns
JITTER_STEP = 0.02
JITTER_KERNEL = 0.03
OUTLIER_RATE = 0.01

# key: (kernel name, fixed ns, ns per batch row, ns per context row)
FAMILIES = {
    "gemm": ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_"
             "MI16x16x1_SN_LDSB1_AFC1_AFEM1", 9000, 90.0, 0.0),
    "attn": ("paged_attention_ll4mi_QKV_mfma16_kernel", 4000, 20.0, 0.012),
    "moe": ("fused_moe_kernel", 14000, 160.0, 0.0),
    "norm": ("rms_norm_kernel<c10::BFloat16>", 2000, 6.0, 0.0),
    "act": ("act_and_mul_kernel<c10::BFloat16>", 1500, 9.0, 0.0),
    "ar": ("cross_device_reduce_1stage<__hip_bfloat16, 2>", 5000, 12.0,
           0.0),
}
LAYER = ("norm", "gemm", "attn", "gemm", "ar", "norm", "moe", "act")
LAYERS = 3
GRAPH_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256)


def us(ns):
    return "%d.%03d" % (ns // 1000, ns % 1000)


class Rank:
    """One rank's events as JSON texts."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.ev = []
        self.corr = 1000

    def kernel(self, name, ts, dur, corr):
        self.ev.append(
            '{"ph":"X","cat":"kernel","name":"%s","pid":%d,"tid":0,'
            '"ts":%s,"dur":%s,"args":{"device":%d,"stream":0,'
            '"correlation":%d,"kind":"Dispatch Kernel","grid":[304,1,1],'
            '"block":[256,1,1]}}' % (name, 2 + self.rank, us(ts), us(dur),
                                     2 + self.rank, corr))

    def call(self, name, ts, dur, corr, kernel=None):
        extra = ',"kernel":"%s"' % kernel if kernel else ""
        self.ev.append(
            '{"ph":"X","cat":"cuda_runtime","name":"%s","pid":%d,"tid":%d,'
            '"ts":%s,"dur":%s,"args":{"correlation":%d%s}}' % (
                name, 900 + self.rank, 900 + self.rank, us(ts), us(dur),
                corr, extra))

    def label(self, text, ts, dur, cpu_ts):
        self.ev.append(
            '{"ph":"X","cat":"gpu_user_annotation","name":"%s","pid":%d,'
            '"tid":0,"ts":%s,"dur":%s}' % (text, 2 + self.rank, us(ts),
                                           us(dur)))
        self.ev.append(
            '{"ph":"X","cat":"user_annotation","name":"%s","pid":%d,'
            '"tid":%d,"ts":%s,"dur":%s}' % (text, 900 + self.rank,
                                            900 + self.rank, us(cpu_ts),
                                            us(max(dur // 3, 1000))))

    def write(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        head = ('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":'
                '"AMD Instinct MI300X"}],"distributedInfo":{"backend":"nccl",'
                '"rank":%d,"world_size":%d},"traceEvents":[' % (
                    self.rank, self.world))
        with gzip.open(path, "wt", compresslevel=1) as f:
            f.write(head)
            f.write(",\n".join(self.ev))
            f.write('],"traceName":"%s"}' % os.path.basename(path))


def kernel_ns(key, bs, ctx, slow):
    _, fixed, per_row, per_ctx = FAMILIES[key]
    return (fixed + per_row * bs + per_ctx * bs * ctx) * slow.get(key, 1.0)


def schedule(rng, conc, isl, osl):
    """[(kind, bs, tok, ctx)] of the capture: prefill chunks, then decode
    steps with the batch ramping down."""
    steps, prompts = [], [int(isl * rng.uniform(0.75, 1.25))
                          for _ in range(conc)]
    for i in range(0, conc, 4):
        chunk = prompts[i:i + 4]
        steps.append(("prefill", len(chunk), sum(chunk), sum(chunk)))
    outs = [max(2, int(osl * rng.uniform(0.3, 1.0))) for _ in range(conc)]
    for t in range(max(outs)):
        bs = sum(1 for o in outs if o > t)
        steps.append(("decode", bs, bs, isl + t))
    return steps


def step_kernels(kind, bs, tok, ctx, slow):
    """[(family key, base ns)] of one step (prefill scales with tok)."""
    rows = tok if kind == "prefill" else bs
    c = ctx / max(bs, 1) if kind == "decode" else ctx / max(bs, 1) / 2
    return [(k, kernel_ns(k, rows, c, slow)) for _ in range(LAYERS)
            for k in LAYER]


def graph_size(bs):
    return next(g for g in GRAPH_SIZES if g >= bs)


def make_capture(outdir, name, seed, slow=None, tp=1, conc=32, isl=512,
                 osl=192, bench=None):
    """A capture of tp ranks under outdir/name; returns its folder. bench:
    the benchmark's own seed (its prompts and output lengths: two runs of
    one benchmark with one seed run the same steps), else drawn from
    seed."""
    rng = random.Random(seed)
    slow = slow or {}
    ranks = [Rank(r, tp) for r in range(tp)]
    gpu = [T0 + 50 * r for r in range(tp)]
    decode = 0
    for kind, bs, tok, ctx in schedule(
            rng if bench is None else random.Random(bench), conc, isl, osl):
        ks = step_kernels(kind, bs, tok, ctx, slow)
        factor = math.exp(rng.gauss(0, JITTER_STEP))
        if kind == "decode":
            decode += 1
            factor *= 3.0 if decode <= 2 else 1.0
        outlier = rng.randrange(len(ks)) if rng.random() < OUTLIER_RATE \
            else -1
        stretch = rng.uniform(4, 12)
        if kind == "prefill":
            text = "prefill[bs=%d tok=%d]" % (bs, tok)
        else:
            text = "decode[bs=%d/%d tok=%d]" % (bs, graph_size(bs), bs)
        for r, rk in enumerate(ranks):
            start = gpu[r]
            cpu = start - 300_000
            t = start + 2000
            graph = rk.corr
            if kind == "decode":
                rk.call("hipGraphLaunch", cpu + 500, 4000, graph)
                rk.corr += 1
            for i, (key, base) in enumerate(ks):
                dur = base * factor * math.exp(rng.gauss(0, JITTER_KERNEL))
                dur = int(dur * (stretch if i == outlier else 1.0))
                if kind == "prefill":
                    corr = rk.corr
                    rk.corr += 1
                    rk.call("hipLaunchKernel", cpu + 500 + 5000 * i, 3000,
                            corr, FAMILIES[key][0])
                else:
                    corr = graph
                rk.kernel(FAMILIES[key][0], t, dur, corr)
                t += dur + 800 + rng.randrange(0, 400)
            rk.label(text, start, t + 1000 - start, cpu)
            gpu[r] = t + 1000 + 60_000 + rng.randrange(0, 20_000)
    top = os.path.join(outdir, name)
    for r, rk in enumerate(ranks):
        rk.write(os.path.join(top, "rank_%d" % r, "s.pt.trace.json.gz"))
    return top


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: make_serving.py OUTDIR NAME SEED [family=factor...]")
    sl = dict((kv.split("=")[0], float(kv.split("=")[1]))
              for kv in sys.argv[4:])
    print(make_capture(sys.argv[1], sys.argv[2], int(sys.argv[3]), sl))
