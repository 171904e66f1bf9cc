#!/usr/bin/env python3
"""Deterministic fixtures for the indexer tests (stdlib only).

    python3 make_fixtures.py OUTDIR      # writes the files, prints nothing

or, from a test, `expected = make_fixtures.generate(outdir)`: the files are
written and the figures they were built with are returned. Those figures
come from the generator's own bookkeeping (what it placed where), never from
traced or ref_index, so tests can hold both to them.

(a) atom/: an ATOM TP=2 capture laid out as ATOM writes it
    (atom/rank_<r>/<model>_ts_<YYYYmmdd_HHMMSS>_<ms>.pt.trace.json.gz): ROCm
    kineto with CPU user_annotation and GPU gpu_user_annotation run labels
    (prefill, decode padded and not, dummy_decode, dummy_eager_decode,
    eager_decode, propose_eagle, propose_dspark, draft_kv, dspark_sched,
    some with ATOM_ENABLE_DETAILED_ANNOTATION's sqsq= sqsk= sk=), kernels with
    grid/block only and
    shared memory on hipLaunchKernel (written before the kernel, and every
    fourth one after it), decode graph replays (hipGraphLaunch: one
    correlation, many kernels), copies and memsets, events out of time
    order.
(e) labels_<generation>_<side>/: one rank each of both run-label
    generations (the seed's newer ATOM above; ATOM ffdf3bb5's draft[i/k bs=],
    dspark[bs= T=], dspark_ctx_kv[bs= tok=], dspark_sched[bs=], with
    capture_graph_bs_8 and decode_helper[...] that are no steps), with the
    labels on the GPU side too (gpu) or on the CPU side only (cpu).
(f) idle/idle_causes.pt.trace.json.gz: a ROCm rank built to hold every idle
    cause (host_late, sync, collective, graph_replay, between_steps, other)
    inside decode and prefill steps, a first decode step slow enough to be
    warm-up, and kernel names of every family rule (Tensile tiles, Triton
    ordinals, nvjet tiles, mangled CK and ck_tile kernels).
(b) mctracer/tracer_out-39991.json: the seed 003 timeline in small: pid
    lanes 1/2/3, co_id, kernel_kernel and kernel_kernel_1 at the seed's
    shapes, registers 192/150, dynamic shared 32768/16384, memcpy
    DTOD/HTOD/DTOH with bytes, mcLaunchKernel/mcMemcpyAsync host calls,
    warm-up, two steady shapes and an idle gap between them.
(d) legacy/legacy_2021.pt.trace.json: PyTorch 1.8/1.9 kineto (Kernel,
    Memcpy, Memset, Runtime, Operator, "external id", string tids, integer
    microseconds, zero-duration kernels).
(c) bad/: malformed variants of a real trace (cut at several offsets, gzip
    and plain), not JSON, empty, no traceEvents, traceEvents not an array,
    deep nesting; and odd.json, a valid trace whose odd events must be
    counted as skipped ("bytes": "128" is not odd).
"""
import gzip
import json
import os
import random
import re
import sys

MODEL = "DeepSeek-V4-Pro"
STAMP = "20261129_101500_123"
US_RE = re.compile(r'"@us:(-?\d+)"')


def us(ns):
    """A kineto microsecond value with three decimals, exact: written as a
    placeholder string and turned into a JSON number by dumps()."""
    return "@us:%d" % ns


def dumps(obj):
    def lit(m):
        ns = int(m.group(1))
        return "%d.%03d" % (ns // 1000, ns % 1000)
    return US_RE.sub(lit, json.dumps(obj))


# ---------------------------------------------------------------- (a) ATOM

# key: (name, grid, block, shared memory, base duration ns)
KERNELS = {
    "gemm": ("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8", [304, 1, 1],
             [256, 1, 1], 16384, 12000),
    "attn": ("paged_attention_ll4mi_QKV_mfma16_kernel", [64, 8, 1],
             [256, 1, 1], 8192, 9000),
    "gattn": ("paged_attention_ll4mi_QKV_mfma16_kernel", [64, 16, 1],
              [256, 1, 1], 8192, 9500),   # only ever in graph replays
    "moe": ("fused_moe_kernel", [1024, 1, 1], [128, 1, 1], 32768, 20000),
    "norm": ("rms_norm_kernel<c10::BFloat16>", [128, 1, 1], [256, 1, 1], 0,
             3000),
    "ar": ("cross_device_reduce_1stage<__hip_bfloat16, 2>", [80, 1, 1],
           [512, 1, 1], 0, 7000),
    "tri": ("triton_poi_fused_add_0", [512, 1, 1], [128, 1, 1], 0, 2500),
}

# (label, kernels, graph replay): the seed skill's newer ATOM (000_*,
# "record_function tag format"), detailed annotation fields on some labels
SCHEDULE = [
    ("prefill[bs=2 tok=1024 ctx=[512, 512] sqsq=524288 sqsk=524288 sk=1024]",
     ["norm", "gemm", "attn", "moe", "ar", "gemm"], False),
    ("decode[bs=117/128 tok=117 d=117 spec=1 graph]",
     ["norm", "gemm", "gattn", "moe", "gemm"], True),
    ("decode[bs=32 tok=32 d=32 sqsq=32 sqsk=40960 sk=40960]",
     ["norm", "gemm", "attn", "moe"], False),
    ("dummy_decode[bs=1 tok=1 d=1]", ["gemm", "ar"], False),
    ("dummy_eager_decode[bs=1 tok=1 ctx=[1]]", ["gemm"], False),
    ("eager_decode[bs=3 tok=3 ctx=[10, 11, 12]]",
     ["norm", "gemm", "attn", "moe"], False),
    ("propose_eagle[1/3 tok=16 bs=16/16 graph]", ["tri", "gemm"], False),
    ("propose_dspark[bs=6/8 T=4 graph]", ["tri", "gemm"], False),
    ("draft_kv[bs=16 tok=16]", ["tri"], False),
    ("dspark_sched[bs=6]", ["tri"], False),
]
# The same work as ATOM ffdf3bb5 labels it: draft[i/k bs=]
# (atom/spec_decode/eagle_proposer.py), dspark[bs= T=], dspark_ctx_kv[bs=
# tok=], dspark_sched[bs=] (dspark_proposer.py); capture_graph_bs_N and a
# bracketed name of no known kind are not steps.
SCHEDULE_FFDF3BB5 = [
    ("prefill[bs=4 tok=2048 ctx=[1, 2, 3]...+1]",
     ["norm", "gemm", "attn", "moe", "ar", "gemm"], False),
    ("decode[bs=60/64 tok=60 d=60 spec=3 sqsq=60 sqsk=61440 sk=61440]",
     ["norm", "gemm", "gattn", "moe", "gemm"], True),
    ("draft[0/3 bs=60]", ["tri", "gemm"], False),
    ("draft[1/3 bs=60]", ["tri"], False),
    ("draft[2/3 bs=60]", ["tri"], False),
    ("dspark_ctx_kv[bs=8 tok=512]", ["tri"], False),
    ("dspark[bs=8 T=4]", ["tri", "gemm"], False),
    ("dspark_sched[bs=8]", ["tri"], False),
    ("capture_graph_bs_8", ["gemm"], False),
    ("decode_helper[bs=8]", ["tri"], False),
    ("dummy_decode[bs=1 tok=1 d=1]", ["gemm", "ar"], False),
]
ROUNDS = 3


class Rank:
    """One rank's kineto trace under construction, and its bookkeeping."""

    def __init__(self, rank, schedule=None, gpu_labels=True):
        self.rank = rank
        self.schedule = schedule or SCHEDULE
        self.gpu_labels = gpu_labels   # else CPU-side labels only
        self.rng = random.Random(100 + rank)
        self.cpu, self.gpu, self.labels, self.late = [], [], [], []
        self.corr = 1000
        self.cpu_t = 5_000_000_000_000 + rank * 7_000
        self.gpu_t = self.cpu_t + 2_000_000
        self.exp = {"kernels": {}, "launches": {}, "steps": {},
                    "memcpy": {}, "runtime": {}, "gpu_busy_ns": 0}
        self.times = []   # (start, end) of every event but "M"

    def ev(self, lst, **kw):
        self.times.append((kw["ts"], kw["ts"] + kw.get("dur", 0)))
        e = dict(kw)
        e["ts"] = us(e["ts"])
        if "dur" in e:
            e["dur"] = us(e["dur"])
        lst.append(e)

    def runtime(self, name, ts, dur, args, after_kernel=False):
        self.ev(self.late if after_kernel else self.cpu, ph="X",
                cat="cuda_runtime", name=name, pid=700 + self.rank, tid=700,
                ts=ts, dur=dur, args=args)
        row = self.exp["runtime"].setdefault(name, [0, 0])
        row[0] += 1
        row[1] += dur

    def kernel(self, key, corr):
        """Places a kernel at the GPU clock; returns its duration."""
        name, grid, block, shm, base = KERNELS[key]
        dur = base + self.rng.randrange(0, 900)
        self.ev(self.gpu, ph="X", cat="kernel", name=name, pid=2 + self.rank,
                tid=0, ts=self.gpu_t, dur=dur,
                args={"device": 2 + self.rank, "stream": 0,
                      "correlation": corr, "kind": "Dispatch Kernel",
                      "grid": grid, "block": block})
        self.ev(self.cpu, ph="f", cat="ac2g", name="ac2g", id=corr, bp="e",
                pid=2 + self.rank, tid=0, ts=self.gpu_t)
        self.gpu.extend(self.late)   # launches written after their kernel
        self.late = []
        k = self.exp["kernels"].setdefault(name, [0, 0])
        k[0] += 1
        k[1] += dur
        # Graph-only shapes have no launch event anywhere: null shared.
        lk = (name, tuple(grid), tuple(block), None,
              None if key == "gattn" else shm)
        row = self.exp["launches"].setdefault(lk, [0, 0])
        row[0] += 1
        row[1] += dur
        self.exp["gpu_busy_ns"] += dur
        self.gpu_t += dur + 1000
        return dur

    def launch(self, key, offset):
        """A hipLaunchKernel for a new correlation; every fourth one is
        written after its kernel."""
        name, grid, block, shm, _ = KERNELS[key]
        self.corr += 1
        self.runtime("hipLaunchKernel", self.cpu_t + offset, 5000,
                     {"External id": self.corr, "kernel": name, "cid": 107,
                      "correlation": self.corr, "grid": grid,
                      "block": block, "shared memory": shm},
                     after_kernel=self.corr % 4 == 0)

    def step(self, label, keys, graph):
        kind = label.split("[")[0]
        gpu_start, kernel_ns = self.gpu_t, 0
        if graph:
            self.corr += 1
            self.runtime("hipGraphLaunch", self.cpu_t + 1000, 30000,
                         {"cid": 215, "correlation": self.corr})
        for i, key in enumerate(keys):
            if not graph:
                self.launch(key, 1000 + i * 6000)
            kernel_ns += self.kernel(key, self.corr)
        cpu_dur = 4000 + len(keys) * 6000
        self.ev(self.cpu, ph="X", cat="user_annotation", name=label,
                pid=700 + self.rank, tid=700, ts=self.cpu_t, dur=cpu_dur)
        gpu_dur = self.gpu_t + 2000 - gpu_start
        if self.gpu_labels:
            self.ev(self.labels, ph="X", cat="gpu_user_annotation",
                    name=label, pid=2 + self.rank, tid=0, ts=gpu_start,
                    dur=gpu_dur)
        if "[" in label and kind in STEP_KINDS:
            self.count_step(kind, label, gpu_dur if self.gpu_labels
                            else cpu_dur, kernel_ns)
        self.cpu_t += cpu_dur + 4000
        self.gpu_t += 2000 + 50000   # idle between steps

    def count_step(self, kind, label, dur, kernel_ns):
        m = re.search(r"tok=(\d+)", label)
        bs = re.search(r"bs=(\d+)(?:/(\d+))?", label)
        st = self.exp["steps"].setdefault(kind, {
            "count": 0, "total_ns": 0, "tokens": 0, "padded": 0,
            "kernel_ns": 0, "source": "gpu" if self.gpu_labels else "cpu"})
        st["count"] += 1
        st["total_ns"] += dur
        st["tokens"] += int(m.group(1)) if m else 0
        st["padded"] += int(bool(bs.group(2)) and
                            int(bs.group(2)) > int(bs.group(1)))
        st["kernel_ns"] += kernel_ns if self.gpu_labels else 0

    def copies(self):
        """Between rounds: an unlabelled kernel, two copies, a memset."""
        self.launch("tri", 500)
        self.kernel("tri", self.corr)
        for name, cat, kind, nbytes in (
                ("Memcpy HtoD (Host -> Device)", "gpu_memcpy", "HtoD",
                 4096 + self.rank),
                ("Memcpy DtoD (Device -> Device)", "gpu_memcpy", "DtoD",
                 "128"),
                ("Memset (Device)", "gpu_memset", "memset", 256)):
            self.corr += 1
            dur = 1500 + self.rng.randrange(0, 500)
            self.runtime("hipMemcpyWithStream", self.cpu_t + 700, 9000,
                         {"correlation": self.corr, "size": 64})
            self.ev(self.gpu, ph="X", cat=cat, name=name, pid=2 + self.rank,
                    tid=1, ts=self.gpu_t, dur=dur,
                    args={"device": 2 + self.rank, "stream": 1,
                          "correlation": self.corr, "kind": kind,
                          "bytes": nbytes, "memory bandwidth (GB/s)": 1.5})
            c = self.exp["memcpy"].setdefault(kind, {
                "count": 0, "total_ns": 0, "bytes": 0, "max_bytes": 0})
            c["count"] += 1
            c["total_ns"] += dur
            c["bytes"] += int(nbytes)
            c["max_bytes"] = max(c["max_bytes"], int(nbytes))
            self.exp["gpu_busy_ns"] += dur
            self.gpu_t += dur + 3000
        self.cpu_t += 20000
        self.gpu_t += 40000

    def document(self, path):
        start = self.cpu_t - 1000
        for _ in range(ROUNDS):
            for label, keys, graph in self.schedule:
                self.step(label, keys, graph)
            self.copies()
        end = max(self.gpu_t, self.cpu_t)
        for cat in ("user_annotation", "gpu_user_annotation"):
            self.ev(self.labels, ph="X", cat=cat, name="ProfilerStep#7",
                    pid=700, tid=700, ts=start, dur=end - start)
        self.ev(self.labels, ph="i", cat="cpu_instant_event", s="t",
                name="Record Window End", pid=700, tid=700, ts=end + 10)
        meta = [{"ph": "M", "name": "process_name", "pid": 2 + self.rank,
                 "tid": 0, "ts": 0, "args": {"name": "GPU %d" % self.rank}}]
        half = len(self.gpu) // 2
        # kineto writes CPU spans, then device activity: never time order.
        events = (meta + self.cpu + self.gpu[half:] + self.gpu[:half] +
                  self.labels[::-1])
        t0 = min(s for s, _ in self.times)
        exp = dict(self.exp, path=path, rank=self.rank, events=len(events),
                   t0_ns=t0, span_ns=max(e for _, e in self.times) - t0,
                   device="AMD Instinct MI300X", format="kineto")
        return {"schemaVersion": 1,
                "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X",
                                      "totalGlobalMem": 206141652992}],
                "distributedInfo": {"backend": "nccl", "rank": self.rank,
                                    "world_size": 2},
                "traceEvents": events, "traceName": path}, exp


# The kinds the generator counts as steps (docs/ATOM.md): its own list.
STEP_KINDS = {"prefill", "decode", "eager_decode", "dummy_decode",
              "dummy_eager_decode", "dummy_prefill", "draft", "dspark",
              "dspark_ctx_kv", "dspark_sched", "draft_kv", "propose_eagle",
              "propose_dspark"}


def make_atom(outdir, folder="atom", ranks=2, schedule=None,
              gpu_labels=True):
    """An ATOM capture of `ranks` ranks; returns the expectations per
    rank."""
    out = []
    for rank in range(ranks):
        d = os.path.join(outdir, folder, "rank_%d" % rank)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "%s_ts_%s.pt.trace.json.gz" % (MODEL, STAMP))
        doc, exp = Rank(rank, schedule, gpu_labels).document(path)
        with gzip.open(path, "wb") as f:
            f.write(dumps(doc).encode())
        out.append(exp)
    return out


def make_generations(outdir):
    """Both run-label generations, each with its labels on the GPU side
    (gpu_user_annotation, which wins) and on the CPU side only
    (user_annotation): {name: [expectations of its one rank]}."""
    out = {}
    for gen, schedule in (("seed", SCHEDULE),
                          ("ffdf3bb5", SCHEDULE_FFDF3BB5)):
        for side, gpu in (("gpu", True), ("cpu", False)):
            name = "labels_%s_%s" % (gen, side)
            out[name] = make_atom(outdir, name, 1, schedule, gpu)
    return out


# ------------------------------------------------------------- (b) mcTracer

MS = 1_000_000
SEC = 1_000_000_000
KK = "kernel_kernel"
KK1 = "kernel_kernel_1"
AUX = [  # (name, grid, registers, dynamic shared)
    ("void at::native::vectorized_elementwise_kernel<4, "
     "at::native::FillFunctor<float> >", [1024, 1, 1], 32, 0),
    ("mcblas_hgemm_128x128_nn", [96, 1, 1], 128, 65536),
    ("void at::native::_scatter_gather_elementwise_kernel<128, 4>",
     [240, 1, 1], 40, 0),
]


class McTrace:
    """The seed 003 timeline in small, with its bookkeeping."""

    def __init__(self):
        self.rng = random.Random(3)
        self.events = [{"name": "process_name", "ph": "M", "pid": 2,
                        "args": {"name": "C500"}},
                       {"name": "process_name", "ph": "M", "pid": 1,
                        "args": {"name": "python3"}}]
        self.co = 90
        self.end = 0
        self.launches, self.copies, self.host = {}, {}, {}
        self.kernels = {}
        self.phases = []       # [cause, start, end, kernel events, top]

    def x(self, pid, name, ts, dur, args=None):
        e = {"name": name, "ph": "X", "pid": pid, "tid": 7 + pid, "ts": ts,
             "dur": dur}
        if args is not None:
            e["args"] = args
        self.events.append(e)
        self.end = max(self.end, ts + dur)
        if pid == 1:
            h = self.host.setdefault(name, [0, 0, 0])
            h[0] += 1
            h[1] += dur
            h[2] = max(h[2], dur)

    def kernel(self, name, ts, dur, grid, regs, shared):
        self.co += 1
        self.x(1, "mcLaunchKernel", ts - 9000, 4870, {"co_id": self.co})
        self.events.append({"name": "launch", "ph": "s", "pid": 1,
                            "tid": 8, "ts": ts - 9000, "id": self.co})
        self.events.append({"name": "launch", "ph": "f", "pid": 2,
                            "tid": 9, "ts": ts, "id": self.co, "bp": "e"})
        self.x(2, name, ts, dur, {"co_id": self.co, "grid": grid,
                                  "block": [128, 1, 1],
                                  "registers_per_thread": regs,
                                  "dynamic_shared": shared,
                                  "static_shared": 0})
        key = (name, tuple(grid), (128, 1, 1), regs, shared)
        row = self.launches.setdefault(key, [0, 0])
        row[0] += 1
        row[1] += dur
        k = self.kernels.setdefault(name, [0, 0])
        k[0] += 1
        k[1] += dur
        self.in_phase(ts + dur, 1)
        top = self.phases[-1][4].setdefault((name, tuple(grid)), [0, 0])
        top[0] += 1
        top[1] += dur
        return ts + dur

    def in_phase(self, end, kernels):
        ph = self.phases[-1]
        ph[2] = max(ph[2], end)
        ph[3] += kernels

    def copy(self, name, kind, ts, dur, nbytes):
        """A device copy (pid 3) and its host call, which lasts longer:
        host time includes queueing (seed 003, section 8)."""
        self.co += 1
        self.x(1, "mcMemcpyAsync", ts - 20000, dur + 2 * MS,
               {"co_id": self.co})
        args = {"co_id": self.co}
        if nbytes is not None:
            args["bytes"] = nbytes
        self.x(3, name, ts, dur, args)
        c = self.copies.setdefault(kind, {"count": 0, "total_ns": 0,
                                          "bytes": 0, "max_bytes": 0})
        c["count"] += 1
        c["total_ns"] += dur
        c["bytes"] += nbytes or 0
        c["max_bytes"] = max(c["max_bytes"], nbytes or 0)
        self.in_phase(ts + dur, 0)

    def aux(self, i, ts):
        name, grid, regs, shared = AUX[i % 3]
        dur = (20000, 80000, 40000)[i % 3] + self.rng.randrange(0, 3000)
        self.x(1, "mcGetDevice", ts - 30000, 180 + i % 5)
        return self.kernel(name, ts, dur, grid, regs, shared)

    def jitter(self, ns):
        return int(ns * (1 + self.rng.uniform(-0.02, 0.02)))

    def pair(self, ts, shape, dur, shape1, dur1):
        """kernel_kernel then kernel_kernel_1 at the seed's resources."""
        end = self.kernel(KK, ts, self.jitter(dur), [shape[0], shape[1], 1],
                          192, 32768)
        return self.kernel(KK1, end + 50000, self.jitter(dur1),
                           [shape1[0], shape1[1], 1], 150, 16384)

    def phase(self, cause, start):
        self.phases.append([cause, start, start, 0, {}])


    def init_and_warmup(self):
        self.x(1, "mcGetDevice", 0, 180)
        self.x(1, "mcModuleLoad", 1000, 251_400_000)
        self.phase("start", 300 * MS)
        for i in range(271):            # 0.3 s .. 13.8 s: initialisation
            end = self.aux(i, 300 * MS + i * 50 * MS)
            if i % 10 == 0:
                self.copy("memcpy HTOD(pinned,device)", "HtoD", end + 1000,
                          2000 + (i % 7) * 100, 8 + i * 30)
            if i % 30 == 0:
                self.memset(end + 5000)
        self.phase("gap", 14_290 * MS)  # warm-up / functional case
        end = self.pair(14_290 * MS, (520, 32), 63_350_000, (520, 56),
                        23_560_000)
        self.copy("memcpy DTOH(device,pinned)", "DtoH", end + 1000, 1500, 8)
        for j in range(28):
            self.aux(j, 14_400 * MS + j * 40 * MS)
        self.phase("gap", 20_760 * MS)  # another small case
        self.pair(20_760 * MS, (260, 16), 7_920_000, (260, 28), 3_180_000)
        for j in range(145):            # host-side work, no idle gap
            self.aux(j, 20_780 * MS + j * 40 * MS)

    def memset(self, ts):
        self.co += 1
        self.x(3, "memset(device)", ts, 1500, {"co_id": self.co})
        c = self.copies.setdefault("memset", {"count": 0, "total_ns": 0,
                                              "bytes": 0, "max_bytes": 0})
        c["count"] += 1
        c["total_ns"] += 1500
        self.in_phase(ts + 1500, 0)

    def steady(self):
        self.phase("shape", 26_570 * MS)   # big shape, 110 rounds
        for r in range(110):
            end = self.pair(26_570 * MS + r * 380 * MS, (2056, 32),
                            253_990_000, (2056, 56), 94_720_000)
            self.copy("memcpy DTOD(device,device)", "DtoD", end + 50000,
                      147_000 + r * 10,
                      1_879_048_192 if r == 50 else 80_000_000 + r * 1000)
            self.x(1, "mcStreamSynchronize", end + 400_000, 1890)
        # 68.4 s .. 74.5 s: idle (case switch, checks), then small shape
        self.phase("gap", 74_520 * MS)
        for r in range(110):
            end = self.pair(74_520 * MS + r * 51_800_000, (1028, 16),
                            31_000_000, (1028, 28), 12_050_000)
            self.copy("memcpy DTOH(device,pageable)", "DtoH", end + 50000,
                      33_000, 64)
        self.x(1, "mcDeviceSynchronize", 80_300 * MS, 366_880_000)

    def expected(self, path):
        phases = []
        for cause, start, end, kernels, tops in self.phases:
            (name, grid), (count, total) = max(tops.items(),
                                               key=lambda kv: kv[1][1])
            phases.append({"cause": cause, "start_ns": start, "end_ns": end,
                           "kernel_events": kernels,
                           "top_launch": [name, list(grid), count, total]})
        busy = sum(v[1] for v in self.kernels.values()) + sum(
            c["total_ns"] for c in self.copies.values())
        return {"path": path, "format": "mctracer", "device": "C500",
                "rank": None, "events": len(self.events), "t0_ns": 0,
                "span_ns": self.end, "kernels": self.kernels,
                "launches": self.launches, "memcpy": self.copies,
                "runtime": self.host, "gpu_busy_ns": busy, "phases": phases}


def make_mctracer(outdir):
    d = os.path.join(outdir, "mctracer")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "tracer_out-39991.json")
    t = McTrace()
    t.init_and_warmup()
    t.steady()
    with open(path, "w") as f:
        json.dump({"traceEvents": t.events}, f)
    return t.expected(path)


# ------------------------------------------------------ (d) legacy kineto

LEGACY_KERNELS = [  # (name, grid, block, registers, shared, durations us)
    ("volta_sgemm_128x64_nn", [4, 2, 1], [256, 1, 1], 128, 16384,
     [31, 29, 0, 30]),
    ("void at::native::vectorized_elementwise_kernel<4, "
     "at::native::AddFunctor<float> >", [80, 1, 1], [128, 1, 1], 16, 0,
     [3, 0, 4]),
]
LEGACY_COPIES = [  # (category, name, kind, bytes, duration us)
    ("Memcpy", "Memcpy HtoD (Pageable -> Device)", "HtoD", 4096, 5),
    ("Memcpy", "Memcpy DtoH (Device -> Pageable)", "DtoH", 64, 2),
    ("Memset", "Memset (Device)", "memset", 1024, 1),
]


def make_legacy(outdir):
    """A PyTorch 1.8/1.9 (2021) kineto trace: categories Kernel, Memcpy,
    Memset, Runtime, Operator, "external id" in lower case, string thread
    ids ("stream 7"), integer microseconds, zero-duration kernels, no
    deviceProperties. Returns its expectations."""
    exp = {"kernels": {}, "launches": {}, "memcpy": {}, "runtime": {},
           "gpu_busy_ns": 0, "format": "kineto", "device": None,
           "rank": None}
    events = [{"name": "thread_name", "ph": "M", "pid": 0,
               "tid": "stream 7", "args": {"name": "stream 7"}}]
    cpu_t, gpu_t, corr = 1_000_000, 1_000_200, 0

    def cpu(cat, name, dur, args):
        nonlocal cpu_t
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 4242,
                       "tid": "4242", "ts": cpu_t, "dur": dur,
                       "args": args})
        cpu_t += dur + 2

    def gpu(cat, name, dur, args):
        nonlocal gpu_t
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 0,
                       "tid": "stream 7", "ts": gpu_t, "dur": dur,
                       "args": dict(args, device=0, stream=7, context=1,
                                    correlation=corr,
                                    **{"external id": corr})})
        exp["gpu_busy_ns"] += dur * 1000
        gpu_t += dur + 10

    def runtime(name, dur):
        cpu("Runtime", name, dur, {"cbid": 211, "correlation": corr,
                                   "external id": corr})
        row = exp["runtime"].setdefault(name, [0, 0])
        row[0] += 1
        row[1] += dur * 1000

    for name, grid, block, regs, shm, durs in LEGACY_KERNELS:
        for dur in durs:
            corr += 1
            cpu("Operator", "aten::add", 20, {"external id": corr})
            runtime("cudaLaunchKernel", 6)
            gpu("Kernel", name, dur, {
                "queued": 0, "registers per thread": regs,
                "shared memory": shm, "blocks per SM": 0.5,
                "warps per SM": 4, "grid": grid, "block": block,
                "theoretical occupancy %": 25})
            k = exp["kernels"].setdefault(name, [0, 0])
            k[0] += 1
            k[1] += dur * 1000
            lk = (name, tuple(grid), tuple(block), regs, shm)
            row = exp["launches"].setdefault(lk, [0, 0])
            row[0] += 1
            row[1] += dur * 1000
    for cat, name, kind, nbytes, dur in LEGACY_COPIES:
        corr += 1
        runtime("cudaMemcpyAsync" if cat == "Memcpy" else "cudaMemsetAsync",
                9)
        gpu(cat, name, dur, {"bytes": nbytes,
                             "memory bandwidth (GB/s)": 1.25})
        c = exp["memcpy"].setdefault(kind, {"count": 0, "total_ns": 0,
                                            "bytes": 0, "max_bytes": 0})
        c["count"] += 1
        c["total_ns"] += dur * 1000
        c["bytes"] += nbytes
        c["max_bytes"] = max(c["max_bytes"], nbytes)
    events.append({"ph": "s", "cat": "async", "name": "launch", "id": 1,
                   "pid": 4242, "tid": "4242", "ts": 1_000_000})
    timed = [e for e in events if e["ph"] != "M"]
    exp["t0_ns"] = min(e["ts"] for e in timed) * 1000
    exp["span_ns"] = max(e["ts"] + e.get("dur", 0)
                         for e in timed) * 1000 - exp["t0_ns"]
    exp["events"] = len(events)
    d = os.path.join(outdir, "legacy")
    os.makedirs(d, exist_ok=True)
    exp["path"] = os.path.join(d, "legacy_2021.pt.trace.json")
    with open(exp["path"], "w") as f:
        json.dump({"schemaVersion": 1, "traceEvents": events}, f)
    return exp


# ------------------------------------------------------------ (c) malformed

BASE_TRACE = "tracelens__torch_compile_triton_trace.json.gz"


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def make_bad(outdir, traces_dir):
    """Files that must fail (exit 1): {path: why}; and odd.json, which must
    index with its odd events counted: (path, expectations)."""
    d = os.path.join(outdir, "bad")
    os.makedirs(d, exist_ok=True)
    with gzip.open(os.path.join(traces_dir, BASE_TRACE), "rb") as f:
        plain = f.read()
    packed = gzip.compress(plain, mtime=0)
    fail = {}
    for pct in (1, 10, 50, 90, 99):
        cut = len(plain) * pct // 100
        fail[write(os.path.join(d, "cut_%d.json" % pct), plain[:cut])] = \
            "plain JSON cut at %d%%" % pct
        fail[write(os.path.join(d, "cutjson_%d.json.gz" % pct),
                   gzip.compress(plain[:cut], mtime=0))] = \
            "gzip of JSON cut at %d%%" % pct
    for pct in (20, 50, 90, 99):
        fail[write(os.path.join(d, "cutgz_%d.json.gz" % pct),
                   packed[:len(packed) * pct // 100])] = \
            "gzip stream cut at %d%%" % pct
    fail[write(os.path.join(d, "notjson.json"), b"this is not JSON\n")] = \
        "not JSON"
    fail[write(os.path.join(d, "empty.json"), b"")] = "empty"
    fail[write(os.path.join(d, "empty.json.gz"),
               gzip.compress(b"", mtime=0))] = "empty gzip"
    fail[write(os.path.join(d, "no_events.json"),
               b'{"schemaVersion": 1, "traceName": "x"}')] = \
        "no traceEvents"
    fail[write(os.path.join(d, "events_object.json"),
               b'{"traceEvents": {"ph": "X"}}')] = "traceEvents not array"
    deep = b'{"traceEvents": [{"ph": "X", "args": ' + b"[" * 5000 + \
        b"]" * 5000 + b"}]}"
    fail[write(os.path.join(d, "deep.json"), deep)] = "deep nesting"
    return fail, make_odd(d)


def make_odd(d):
    """A valid document with odd elements: each is skipped and counted;
    bytes written as a string still count."""
    good = ('{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
            '"ts": 10.5, "dur": 2.25, "args": {"grid": [1, 1, 1], '
            '"block": [64, 1, 1], "registers per thread": 16, '
            '"shared memory": 0, "correlation": 1}}')
    copy = ('{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD '
            '(Device -> Device)", "pid": 0, "tid": 7, "ts": 20, "dur": 1, '
            '"args": {"bytes": "128"}}')
    odd = [b"42", b'"a string"', b"null",
           b'{"ph": "X", "cat": "kernel", "name": "bad\xff\xfeutf8", '
           b'"ts": 1, "dur": 1}',
           b'{"ph": "X", "cat": "kernel", "name": "k", "ts": "abc", '
           b'"dur": 1}',
           b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -5}',
           b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 3}']
    body = b", ".join([good.encode(), copy.encode()] + odd)
    path = write(os.path.join(d, "odd.json"),
                 b'{"traceEvents": [' + body + b'], "traceName": "odd"}')
    return path, {"events": 9, "skipped_events": 7, "kernel_events": 1,
                  "kernel_ns": 2250, "memcpy_count": 1, "memcpy_bytes": 128,
                  "t0_ns": 10500, "span_ns": 10500}


# ------------------------------------------------- (f) idle causes, names

# Kernel names and the family each must get (docs: index/agg/family.c): Tensile
# at two tiles, Triton ordinals, nvjet tiles, mangled CK kernels at two
# template instances, ck_tile's kentry<1, X> (family X), an anonymous
# namespace, and a collective.
NAMED = {
    "gemm_a": ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_"
               "MI16x16x1_SN_LDSB1_GRVWA8", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_"
               "SAV_UserArgs"),
    "gemm_b": ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x256x64_"
               "MI32x32x8_SN_LDSB0_GRVWA4", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_"
               "SAV_UserArgs"),
    "tri_0": ("triton_poi_fused_add_0", "triton_poi_fused_add"),
    "tri_1": ("triton_poi_fused_add_1", "triton_poi_fused_add"),
    "nccl": ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
             "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"),
    "ck_256": ("_ZN2ck13kernel_gemm_vILi256EEEvPKfPf", "ck::kernel_gemm_v"),
    "ck_128": ("_ZN2ck13kernel_gemm_vILi128EEEvPKfPf", "ck::kernel_gemm_v"),
    "norm": ("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdIfEEEEvv",
             "ck_tile::Rmsnorm2dFwd"),
    "tgemm": ("_ZN7ck_tile6kentryILi1ENS_10GemmKernelIfEEEEvv",
              "ck_tile::GemmKernel"),
    "fill": ("_ZN2at6native12_GLOBAL__N_111fill_kernelIfEEvPf",
             "at::native::(anonymous namespace)::fill_kernel"),
    "jet_a": ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NTN", "nvjet_tst"),
    "jet_b": ("nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NTN", "nvjet_tst"),
}
IDLE_T0 = 9_000_000_000


class IdleTrace:
    """A ROCm kineto rank built to hold each idle cause, with the figures
    it was built with: idle ns per (step kind or None, cause)."""

    def __init__(self):
        self.cpu, self.gpu, self.corr = [], [], 500
        self.idle = {}
        self.kernels = {}
        self.t = IDLE_T0 + 10_000   # the device clock

    def call(self, name, ts, dur, corr=None, **args):
        a = dict(args)
        if corr is not None:
            a["correlation"] = corr
        self.cpu.append({"ph": "X", "cat": "cuda_runtime", "name": name,
                         "pid": 800, "tid": 800, "ts": us(ts),
                         "dur": us(dur), "args": a})

    def kernel(self, key, ts, dur, corr, stream=0):
        name = NAMED[key][0]
        self.gpu.append({"ph": "X", "cat": "kernel", "name": name,
                         "pid": 4, "tid": stream, "ts": us(ts),
                         "dur": us(dur),
                         "args": {"device": 4, "stream": stream,
                                  "correlation": corr, "grid": [64, 1, 1],
                                  "block": [256, 1, 1]}})
        self.kernels.setdefault(name, []).append(dur)
        self.t = ts + dur

    def launch(self, key, at, gap, dur=8000):
        """A kernel `gap` ns after the device went idle (self.t), its
        hipLaunchKernel starting at `at` (absolute)."""
        self.corr += 1
        self.call("hipLaunchKernel", at, 1500, self.corr,
                  kernel=NAMED[key][0], **{"shared memory": 0})
        self.kernel(key, self.t + gap, dur, self.corr)

    def gap(self, kind, cause, ns):
        k = (kind, cause)
        self.idle[k] = self.idle.get(k, 0) + ns

    def label(self, name, start, end):
        for cat, pid in (("user_annotation", 800), ("gpu_user_annotation",
                                                    4)):
            self.cpu.append({"ph": "X", "cat": cat, "name": name, "pid": pid,
                             "tid": 800 if pid == 800 else 0,
                             "ts": us(start), "dur": us(end - start)})

    def decode(self, i, slow):
        """One decode step: every cause inside it, then a graph replay."""
        s = self.t
        early = s - 9000          # calls issued before the device idled
        self.launch("gemm_a" if i % 2 else "gemm_b", early, 0,
                    200000 if slow else 10000)
        self.launch("tri_0", early + 1, 3000)           # queued: other
        self.gap("decode", "other", 3000)
        self.launch("tri_1", self.t + 1000, 4000)       # host_late
        self.gap("decode", "host_late", 4000)
        self.corr += 1
        self.call("hipDeviceSynchronize", self.t - 2000, 2500, self.corr)
        self.launch("ck_256" if i % 2 else "ck_128", self.t + 1000, 5000)
        self.gap("decode", "sync", 5000)
        self.launch("nccl", early + 2, 6000)            # collective
        self.gap("decode", "collective", 6000)
        self.corr += 1
        self.call("hipGraphLaunch", early + 3, 3000, self.corr)
        g = self.corr
        for key, gap in (("jet_a", 2000), ("jet_b", 700), ("jet_a", 800)):
            self.kernel(key, self.t + gap, 4000, g)
        self.gap("decode", "other", 2000)               # queued replay
        self.gap("decode", "graph_replay", 1500)
        self.label("decode[bs=%d tok=%d d=%d]" % (i + 1, i + 1, i + 1), s,
                   self.t + 1000)
        return self.t + 1000

    def prefill(self, end_decode):
        """Between steps, then a prefill whose first kernel the host
        issued late: its stretch starts inside the decode label."""
        last = self.t
        s = end_decode + 20000
        self.launch("norm", last + 500, s + 2000 - last)
        self.gap("decode", "host_late", end_decode - last)
        self.gap(None, "between_steps", 20000)
        self.gap("prefill", "host_late", 2000)
        self.launch("tgemm", last + 600, 0)
        self.launch("fill", last + 700, 1000)
        self.gap("prefill", "other", 1000)
        self.label("prefill[bs=2 tok=512 ctx=[256, 256]]", s, self.t)
        return self.t

    def document(self, path):
        self.call("hipGetDevice", IDLE_T0, 100)
        self.gap(None, "between_steps", self.t - IDLE_T0)
        end = None
        for i in range(12):
            end = self.decode(i, i == 0)
            end = self.prefill(end)
            self.t = end + 0   # the next decode starts where this ended
            self.gap(None, "between_steps", 0)
        tend = self.t + 30000
        self.gap(None, "between_steps", 30000)
        self.cpu.append({"ph": "X", "cat": "user_annotation",
                         "name": "ProfilerStep#1", "pid": 800, "tid": 800,
                         "ts": us(IDLE_T0), "dur": us(tend - IDLE_T0)})
        busy = sum(sum(v) for v in self.kernels.values())
        exp = {"path": path, "idle": {k: v for k, v in self.idle.items()
                                      if v},
               "span_ns": tend - IDLE_T0, "gpu_busy_ns": busy,
               "families": {NAMED[k][0]: NAMED[k][1] for k in NAMED},
               "warmup": {"decode": 1, "prefill": 0}}
        return {"schemaVersion": 1, "deviceProperties": [
            {"id": 0, "name": "AMD Instinct MI300X"}],
            "traceEvents": self.cpu + self.gpu[::-1]}, exp


def make_idle(outdir):
    d = os.path.join(outdir, "idle")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "idle_causes.pt.trace.json.gz")
    doc, exp = IdleTrace().document(path)
    with gzip.open(path, "wb") as f:
        f.write(dumps(doc).encode())
    return exp


def generate(outdir, traces_dir=None):
    """Writes every fixture under outdir; returns {"atom": [per rank],
    "mctracer": {...}, "legacy": {...}, "fail": {path: why}, "odd": (path,
    {...}), "generations": {name: [per rank]}}."""
    traces_dir = traces_dir or os.environ.get(
        "TRACES_DIR", os.path.join(os.path.dirname(__file__), "..", "..",
                                   "shared", "traces"))
    fail, odd = make_bad(outdir, traces_dir)
    return {"atom": make_atom(outdir), "mctracer": make_mctracer(outdir),
            "legacy": make_legacy(outdir), "fail": fail, "odd": odd,
            "generations": make_generations(outdir),
            "idle": make_idle(outdir)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTDIR")
    generate(sys.argv[1])
