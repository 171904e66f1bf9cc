#!/usr/bin/env python3
"""Generated kineto traces for the critical path (tests/test_cpath_*.py).

Each trace is written by a small builder that knows its own schedule, so
the tests can state what the path must be from the generator's numbers:

- multistream(seed): ProfilerStep#N iterations on one CPU thread, work on
  two CUDA streams tied by events (cudaEventRecord, cudaStreamWaitEvent and
  kineto's cuda_sync "Stream Wait Event"), a copy waited for with
  cudaStreamSynchronize ("Stream Sync"), cudaEventSynchronize ("Event
  Sync") and a cudaDeviceSynchronize ("Context Sync") at the end;
  durations, launch delays and CPU work drawn from the seed (integer
  microseconds, as HTA's own test traces have them). Gaps between steps
  leave the device idle, so no launch of a step waits behind another's.
- atom_rank(): an ATOM-style decode rank: CPU run labels decode[bs= tok=]
  (and their GPU projections), a Python _prepare_inputs that runs long in
  every other step while the device waits, a two-stream attention (the
  side stream waits for the QKV kernel through an event, the main stream
  waits for the side one before the output projection), a CUDA graph
  replay of the MLP, and the sampled tokens copied back and synchronised.
- many_kinds(): more run-label kinds than traced keeps, one step each.

`python3 make_cpath.py DIR` writes them all into DIR.
"""
import gzip
import json
import os
import random
import sys

PID, TID = 4242, 4242  # the host process and its main thread


class Builder:
    """kineto events at integer-microsecond times (ns: three decimals)."""

    def __init__(self, ns=False):
        self.ev, self.corr, self.ns = [], 100, ns
        self.facts = {}

    def t(self, v):
        return round(v / 1000.0, 3) if self.ns else v

    def x(self, cat, name, ts, dur, pid=PID, tid=TID, **args):
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid,
                        "tid": tid, "ts": self.t(ts), "dur": self.t(dur),
                        "args": args})

    def next_corr(self):
        self.corr += 1
        return self.corr

    def call(self, name, ts, dur, tid=TID):
        corr = self.next_corr()
        self.x("cuda_runtime", name, ts, dur, tid=tid, correlation=corr,
               **{"External id": corr})
        return corr

    def device(self, cat, name, ts, dur, stream, corr):
        self.x(cat, name, ts, dur, pid=0, tid=stream, device=0,
               stream=stream, correlation=corr, **{"External id": corr})

    def sync(self, kind, ts, dur, stream, corr, wait_stream=None,
             record_corr=None):
        args = {"cuda_sync_kind": kind, "stream": stream,
                "correlation": corr, "device": 0,
                "External id": corr}
        if wait_stream is not None:
            args["wait_on_stream"] = wait_stream
            args["wait_on_cuda_event_record_corr_id"] = record_corr
        self.x("cuda_sync", kind, ts, dur, pid=0,
               tid=stream if stream >= 0 else -1, **args)

    def write(self, path):
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "NVIDIA A100"}],
               "distributedInfo": {"rank": 0, "world_size": 1},
               "traceEvents": self.ev}
        with gzip.open(path, "wt") as f:
            json.dump(doc, f)
        with open(path + ".facts.json", "w") as f:
            json.dump(self.facts, f)
        return path


def multistream(seed, steps=4, ns=False):
    """Iterations of two-stream work with every kind of sync (see the
    module's comment). facts: per step its window and kernels. ns: each
    time moved by under a microsecond (kineto's three decimals), as a
    real trace has them."""
    rnd = random.Random(seed)
    b = Builder()
    t = 1000
    b.facts["steps"] = []
    for i in range(steps):
        s0 = t
        cpu = t + rnd.randint(5, 40)
        dev7 = cpu  # when stream 7 can start the next kernel
        marks = []

        def launch(name, stream, ready, dur, api="cudaLaunchKernel",
                   cat="kernel"):
            nonlocal cpu
            call_dur = rnd.randint(3, 12)
            corr = b.call(api, cpu, call_dur)
            start = max(cpu + rnd.randint(2, 9), ready)
            b.device(cat, name, start, dur, stream, corr)
            cpu += call_dur + rnd.randint(1, 30)
            marks.append((name, start, start + dur, stream))
            return corr, start + dur

        def op(name, dur):
            nonlocal cpu
            b.x("cpu_op", name, cpu, dur)
            cpu += dur + rnd.randint(1, 10)

        op("aten::empty", rnd.randint(5, 60))
        _, k1_end = launch("gemm_qkv_kernel", 7, dev7, rnd.randint(20, 300))
        rec = b.call("cudaEventRecord", cpu, 4)
        cpu += 6
        wait = b.call("cudaStreamWaitEvent", cpu, 3)
        b.sync("Stream Wait Event", cpu + 2, 1, 20, wait, 7, rec)
        cpu += 5
        side_start = max(cpu + 4, k1_end)
        _, side_end = launch("rope_side_kernel", 20, side_start,
                             rnd.randint(10, 400))
        _, attn_end = launch("attention_kernel", 7, k1_end,
                             rnd.randint(10, 400))
        rec2 = b.call("cudaEventRecord", cpu, 4)
        cpu += 6
        wait2 = b.call("cudaStreamWaitEvent", cpu, 3)
        b.sync("Stream Wait Event", cpu + 2, 1, 7, wait2, 20, rec2)
        cpu += 5
        if rnd.random() < 0.5:
            op("aten::slow_host_op", rnd.randint(100, 800))
        _, out_end = launch("gemm_out_kernel", 7, max(attn_end, side_end),
                            rnd.randint(20, 200))
        _, copy_end = launch("Memcpy DtoH (Device -> Pinned)", 7, out_end,
                             rnd.randint(2, 20), api="cudaMemcpyAsync",
                             cat="gpu_memcpy")
        ss = b.call("cudaStreamSynchronize", cpu, max(copy_end - cpu, 0) + 5)
        b.sync("Stream Sync", cpu + 1, max(copy_end - cpu, 0) + 3, 7, ss)
        cpu = max(cpu, copy_end) + 8
        _, e_end = launch("norm_kernel", 20, cpu, rnd.randint(5, 60))
        rec3 = b.call("cudaEventRecord", cpu, 3)
        cpu += 5
        es = b.call("cudaEventSynchronize", cpu, max(e_end - cpu, 0) + 4)
        b.sync("Event Sync", cpu + 1, max(e_end - cpu, 0) + 2, -1, es, 20,
               rec3)
        cpu = max(cpu, e_end) + 6
        if i == steps - 1:
            ds = b.call("cudaDeviceSynchronize", cpu, 10)
            b.sync("Context Sync", cpu + 2, 6, -1, ds)
            cpu += 12
        end = cpu + rnd.randint(5, 20)
        b.x("user_annotation", "ProfilerStep#%d" % i, s0, end - s0)
        b.facts["steps"].append({"start": s0, "end": end, "kernels": marks})
        t = end + rnd.randint(200, 2000)
    for e in b.ev if ns else ():
        shift = rnd.randint(0, 999)
        e["ts"] = round(e["ts"] + shift / 1000.0, 3)
        e["dur"] = round(max(e["dur"] + (rnd.randint(0, 999) - shift)
                             / 1000.0, 0.001), 3)
    return b


def atom_rank(steps=8):
    """An ATOM-style decode rank (see the module's comment): each step's
    run label wraps its _prepare_inputs and its launches; the device runs
    a step's kernels for about 0.8 ms, so a fast _prepare_inputs (0.15 ms)
    launches the next step behind it, and a slow one (2.1 ms, every other
    step) leaves the device waiting. facts: the idle time the slow ones
    cause, and per step the side stream's kernel and the attention it runs
    beside (its slack must be their ends' difference)."""
    b = Builder(ns=True)
    t = 10000000  # ns
    b.facts = {"steps": [], "prepare_idle_ns": 0, "slow_steps": 0}
    gpu_end = t
    for i in range(steps):
        slow = i % 2 == 1
        prep = 2100000 if slow else 150000
        s0 = t
        b.x("python_function", "atom/model_engine/model_runner.py(812): "
            "run_model", s0, prep + 200000)
        b.x("python_function", "atom/model_engine/model_runner.py(655): "
            "_prepare_inputs", s0 + 1000, prep)
        b.x("cpu_op", "aten::to", s0 + 2000, 20000)
        cpu = s0 + 1000 + prep + 3000
        ks = []

        def launch(name, stream, ready, dur, api="cudaLaunchKernel",
                   cat="kernel", corr=None):
            nonlocal cpu
            if corr is None:
                corr = b.call(api, cpu, 6000)
                cpu += 9000
            start = max(ready, cpu - 1000)
            b.device(cat, name, start, dur, stream, corr)
            ks.append((name, start, start + dur, stream))
            return start + dur

        def wait_event(stream, on):
            """An event recorded on stream on, then stream waiting on it."""
            nonlocal cpu
            rec = b.call("cudaEventRecord", cpu, 3000)
            cpu += 4000
            wait = b.call("cudaStreamWaitEvent", cpu, 3000)
            b.sync("Stream Wait Event", cpu + 1000, 1000, stream, wait, on,
                   rec)
            cpu += 4000

        k1 = launch("gemm_qkv_kernel", 7, gpu_end, 120000)
        wait_event(20, 7)
        side = launch("kv_cache_write_kernel", 20, k1, 40000)
        attn = launch("paged_attention_kernel", 7, k1, 260000)
        wait_event(7, 20)
        out = launch("gemm_out_kernel", 7, max(attn, side), 90000)
        graph = b.call("cudaGraphLaunch", cpu, 12000)
        cpu += 15000
        g = out
        for name, dur in (("mlp_gate_up_gemm", 150000),
                          ("silu_mul_kernel", 20000),
                          ("mlp_down_gemm", 140000),
                          ("rmsnorm_kernel", 15000)):
            g = launch(name, 7, g, dur, corr=graph)
        copy = launch("Memcpy DtoH (Device -> Pinned)", 7, g, 8000,
                      api="cudaMemcpyAsync", cat="gpu_memcpy")
        if i == steps - 1:
            ss = b.call("cudaStreamSynchronize", cpu, copy - cpu + 4000)
            b.sync("Stream Sync", cpu + 1000, copy - cpu + 2000, 7, ss)
            cpu = copy + 5000
        a1 = cpu + 2000
        b.x("user_annotation", "decode[bs=8/8 tok=8 p=0 d=8 spec=0]", s0,
            a1 - s0)
        b.facts["steps"].append({"start": s0, "end": a1, "side": ks[1],
                                 "attention": ks[2], "slow": slow})
        if slow and ks[0][1] > gpu_end:
            b.facts["prepare_idle_ns"] += ks[0][1] - gpu_end
            b.facts["slow_steps"] += 1
        gpu_end = copy
        t = a1 + 30000
    return b


def threaded(b):
    """b with a second thread's Python functions written before the first
    thread's events, newest first: out of kineto's order, so the compact
    stream's out-of-order path (index/host/host_py.c) is taken."""
    first = min(e["ts"] for e in b.ev)
    last = max(e["ts"] + e["dur"] for e in b.ev)
    extra, t = [], first
    while t < last:
        extra.append({"ph": "X", "cat": "python_function",
                      "name": "threading.py(1016): _bootstrap_inner",
                      "pid": PID, "tid": PID + 1, "ts": t, "dur": 700,
                      "args": {}})
        t += 1500
    b.ev = extra[::-1] + b.ev
    return b


def many_kinds(kinds=100):
    """One step of each of `kinds` run-label kinds (propose_k<i>[...]),
    more than traced keeps (AGG_MAX_STEP_KINDS, 64): a kernel launched in
    each; facts["kept"] the kinds kept, the first 64 in file order."""
    b, t = Builder(), 1000
    for i in range(kinds):
        b.x("user_annotation", "propose_k%d[bs=1 tok=1]" % i, t, 50)
        corr = b.call("cudaLaunchKernel", t + 1, 5)
        b.device("kernel", "kern_%d" % (i % 3), t + 10, 20, 7, corr)
        t += 100
    b.facts["kept"] = ["propose_k%d" % i for i in range(min(kinds, 64))]
    return b


def generate(folder):
    """Writes every generated trace into folder; their paths."""
    os.makedirs(folder, exist_ok=True)
    out = [multistream(seed).write(os.path.join(
        folder, "multistream_%d.json.gz" % seed)) for seed in (1, 2, 3, 4)]
    out.append(multistream(5, ns=True).write(
        os.path.join(folder, "multistream_ns.json.gz")))
    out.append(atom_rank().write(os.path.join(folder, "atom_rank.json.gz")))
    out.append(threaded(atom_rank()).write(
        os.path.join(folder, "atom_rank_threads.json.gz")))
    return out


if __name__ == "__main__":
    for p in generate(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(p)
