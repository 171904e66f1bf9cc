#!/usr/bin/env python3
"""Generated multi-rank traces for the collectives and the verdicts
(docs/ANALYSIS.md), stdlib only:

    python3 make_collectives.py OUTDIR     # writes tp4/ and verdict sets

make_tp4(outdir): a TP=4 ATOM-like capture (tp4/rank_<r>/...gz), ROCm
kineto with GPU and CPU run labels (prefill, decode), compute kernels on
stream 0 and three collective families:
  - ncclDevKernel_AllReduce_Sum_bf16_RING_LL on stream 0 after each GEMM:
    every rank arrives when its own GEMM ends and all leave together a
    transfer after the last arrival; rank 2's GEMM is 15% slower, so it is
    the straggler that holds the others back (STRAGGLER);
  - cross_device_reduce_1stage<__hip_bfloat16, 4> (AITER's custom
    all-reduce) on stream 1, with a Triton kernel on stream 0 overlapping
    part of it (exposed time less than its duration), and rank 3 running one
    more of it at the end than the others (UNEQUAL_RANK: matched to the
    shorter sequence, with a warning);
  - ncclDevKernel_AllGather_RING_LL between steps, outside every label
    (step null).
make_verdict_set(outdir, name, ...): a TP=2 capture of 4 prefill and 40
decode steps whose kernel durations are a base times seeded jitter (+-1%),
times a slowdown for one family, with the labels of one taxonomy: the
verdicts' regressed / within noise / incomparable sets.

Figures are never computed here: tests/ref_collectives.py reads the files
its own way, and traced must agree with it.
"""
import gzip
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import dumps, us  # noqa: E402

T0 = 6_000_000_000_000   # ns: the GPU clock at the first step
STRAGGLER = 2
UNEQUAL_RANK = 3
NCCL_AR = ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, "
           "unsigned long, ncclWork*)")
NCCL_AG = ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, "
           "ncclWork*)")
CUSTOM_AR = "cross_device_reduce_1stage<__hip_bfloat16, 4>"
COMPUTE = {   # name, base ns
    "norm": ("rms_norm_kernel<c10::BFloat16>", 3000),
    "gemm": ("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8", 12000),
    "attn": ("paged_attention_ll4mi_QKV_mfma16_kernel", 9000),
    "moe": ("fused_moe_kernel", 20000),
    "tri": ("triton_poi_fused_add_0", 2500),
}


class Trace:
    """One rank's events under construction."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.gpu, self.cpu = [], []

    def kernel(self, name, ts, dur, stream):
        self.gpu.append({
            "ph": "X", "cat": "kernel", "name": name, "pid": 2 + self.rank,
            "tid": stream, "ts": us(ts), "dur": us(dur),
            "args": {"device": 2 + self.rank, "stream": stream,
                     "kind": "Dispatch Kernel", "grid": [64, 1, 1],
                     "block": [256, 1, 1]}})

    def label(self, name, ts, dur):
        self.gpu.append({"ph": "X", "cat": "gpu_user_annotation",
                         "name": name, "pid": 2 + self.rank, "tid": 0,
                         "ts": us(ts), "dur": us(dur)})
        # The CPU side runs ahead of the device, as it does.
        self.cpu.append({"ph": "X", "cat": "user_annotation", "name": name,
                         "pid": 700 + self.rank, "tid": 700,
                         "ts": us(ts - 400_000), "dur": us(dur // 2)})

    def write(self, path):
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}],
               "distributedInfo": {"backend": "nccl", "rank": self.rank,
                                   "world_size": self.world},
               "traceEvents": ([{"ph": "M", "name": "process_name",
                                 "pid": 2 + self.rank, "tid": 0,
                                 "args": {"name": "GPU %d" % self.rank}}] +
                               self.cpu + self.gpu[::-1]),
               "traceName": path}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with gzip.open(path, "wb") as f:
            f.write(dumps(doc).encode())


class Group:
    """Ranks that run one schedule together: a cursor per rank on stream
    0, and collectives that end a transfer after the last arrival."""

    def __init__(self, world, seed):
        self.traces = [Trace(r, world) for r in range(world)]
        self.rng = random.Random(seed)
        self.cur = [T0 + 37 * r for r in range(world)]

    def compute(self, key, scale=None):
        name, base = COMPUTE[key]
        for r, t in enumerate(self.traces):
            f = (scale or {}).get(r, 1.0)
            dur = int(base * f * (1 + self.rng.uniform(-0.01, 0.01)))
            t.kernel(name, self.cur[r], dur, 0)
            self.cur[r] += dur + 800 + self.rng.randrange(0, 200)

    def collective(self, name, transfer, stream=0, overlap=None, ranks=None):
        """Each rank starts at its cursor; all end a transfer after the
        last start (+ a few ns each). overlap: a compute kernel key run on
        stream 0 while the collective runs on `stream`."""
        ranks = range(len(self.traces)) if ranks is None else ranks
        last = max(self.cur[r] for r in ranks)
        for r in ranks:
            start = self.cur[r]
            end = last + transfer + self.rng.randrange(0, 300)
            self.traces[r].kernel(name, start, end - start, stream)
            if overlap is not None:
                oname, base = COMPUTE[overlap]
                odur = base + self.rng.randrange(0, 500)
                self.traces[r].kernel(oname, start + 300, odur, 0)
                end = max(end, start + 300 + odur)
            self.cur[r] = end + 600 + self.rng.randrange(0, 100)

    def step(self, label, body):
        starts = list(self.cur)
        body()
        for r, t in enumerate(self.traces):
            t.label(label, starts[r] - 500, self.cur[r] + 500 - starts[r])
            self.cur[r] += 40_000 + self.rng.randrange(0, 2000)


def make_tp4(outdir, steps=24):
    """The TP=4 set; returns the rank files in rank order."""
    g = Group(4, seed=4)

    def body():
        g.compute("norm")
        g.compute("gemm", scale={STRAGGLER: 1.15})
        g.collective(NCCL_AR, 6000)
        g.compute("attn")
        g.collective(CUSTOM_AR, 5000, stream=1, overlap="tri")
        g.compute("moe")
        g.compute("gemm", scale={STRAGGLER: 1.15})
        g.collective(NCCL_AR, 6000)
    for s in range(steps):
        kind = "prefill" if s < 2 else "decode"
        g.step("%s[bs=%d tok=%d]" % (kind, 8, 1024 if s < 2 else 8), body)
        if s % 5 == 4:
            g.collective(NCCL_AG, 4000)
            for r in range(4):
                g.cur[r] += 20_000
    g.collective(CUSTOM_AR, 5000, stream=1, ranks=[UNEQUAL_RANK])
    paths = []
    for r, t in enumerate(g.traces):
        path = os.path.join(outdir, "tp4", "rank_%d" % r,
                            "gen_ts_20261201_101500_%03d.pt.trace.json.gz" % r)
        t.write(path)
        paths.append(path)
    return paths


def make_many(outdir, n=20000):
    """TP=2, n all-reduces a rank, each after a short kernel: more
    collectives than a rank's index holds in memory (index/agg/agg.c's
    AGG_COLL_RECS), so that their records spill in sorted runs."""
    g = Group(2, seed=7)
    for i in range(n):
        g.compute("tri", scale={1: 1.0 + (i % 7) * 0.05})
        g.collective(NCCL_AR, 1000)
    paths = []
    for r, t in enumerate(g.traces):
        path = os.path.join(outdir, "many", "rank_%d" % r, "m.pt.trace.json.gz")
        t.write(path)
        paths.append(path)
    return paths


# ------------------------------------------------------------ verdicts

# The two taxonomies of speculative-decoding labels (docs/ATOM.md): the
# seed's ATOM names a draft step propose_eagle[...], ffdf3bb5 draft[...].
TAXONOMIES = {"new": "propose_eagle[1/3 tok=8 bs=8/8 graph]",
              "ffdf3bb5": "draft[0/3 bs=8]"}


def make_verdict_set(outdir, name, seed, slow=None, taxonomy="new",
                     decode=40, prefill=4):
    """A TP=2 capture under outdir/name; slow: {compute key: factor}."""
    g = Group(2, seed=seed)
    slow = slow or {}

    def body(keys):
        def run():
            for k in keys:
                g.compute(k, scale={0: slow.get(k, 1.0), 1: slow.get(k, 1.0)})
            g.collective(NCCL_AR, 6000)
        return run
    for _ in range(prefill):
        g.step("prefill[bs=4 tok=2048]", body(["norm", "gemm", "attn",
                                               "moe", "gemm"]))
    for _ in range(decode):
        g.step("decode[bs=8 tok=8]", body(["norm", "gemm", "attn", "moe"]))
        g.step(TAXONOMIES[taxonomy], body(["tri", "gemm"]))
    top = os.path.join(outdir, name)
    for r, t in enumerate(g.traces):
        t.write(os.path.join(top, "rank_%d" % r, "v.pt.trace.json.gz"))
    return top


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_collectives.py OUTDIR")
    make_tp4(sys.argv[1])
    make_verdict_set(sys.argv[1], "verdict_base", 1)
