"""--mark-trace: the graph capture traces ATOM writes at start-up
(atom/model_engine/model_runner.py: start_capture_profiler and the
capture loop of capture_cudagraph): with --torch-profiler-dir, each rank
profiles every graph capture into
<dir>/rank_<r>/capture_traces/bs_<bs>_q_<max_q_len>_rank<r>.json.gz and
logs "Saved capture trace for bs_<bs>_q_<q> to <file>".

The simulator derives both sides from a real graph-capture pair of
../shared/traces/graph_pairs (SIM_GRAPH_PAIR, default sglang_decode): a
rank's capture traces are the pair's (execution_details.json names them
and their batch size; the q bucket is 1, decode's), its distributedInfo
.rank set to the rank, and its run trace is the pair's run trace, whose
graph replays those captures recorded (atom_sim_server sets
SIM_TRACE_FILE to it). So a capture end to end yields the decode
breakdown of a real model."""
import gzip
import json
import logging
import os

import simcommon as sc
import sim_traces

log = logging.getLogger("atom")


def pair_dir():
    return os.environ.get("SIM_GRAPH_PAIR") or os.path.join(
        sim_traces.traces_dir(), "graph_pairs", "sglang_decode")


def pair_run_trace():
    """The pair's run trace: the one trace file of its folder."""
    folder = pair_dir()
    names = sorted(n for n in os.listdir(folder)
                   if n.endswith((".json.gz", ".json")))
    if len(names) != 1:
        raise RuntimeError("SIM_GRAPH_PAIR %s: expected one run trace, found "
                           "%s" % (folder, names))
    return os.path.join(folder, names[0])


def pair_captures():
    """[(file, batch size)] of the pair's capture_traces."""
    folder = os.path.join(pair_dir(), "capture_traces")
    with open(os.path.join(folder, "execution_details.json")) as f:
        return [(os.path.join(folder, e["file"]), int(e["batch_size"]))
                for e in json.load(f)]


def write(rank_dir, rank):
    """The capture profiler of rank `rank` (its folder rank_dir): one file
    per captured batch size, each window's export timed as
    SIM_CAPTURE_EXPORT_S (ATOM: the profiler's step and gzip of a window)."""
    out_dir = os.path.join(rank_dir, "capture_traces")
    os.makedirs(out_dir, exist_ok=True)
    for src, bs in pair_captures():
        tag = "bs_%d_q_1" % bs
        source = sim_traces.source_text(src)
        text, has_info = source[0], source[1]
        out = os.path.join(out_dir, "%s_rank%d.json.gz" % (tag, rank))
        sc.sleep(sc.env_float("SIM_CAPTURE_EXPORT_S", 0.1))
        with gzip.open(out, "wt", compresslevel=6) as g:
            g.write(sim_traces.rank_trace(text, has_info, rank))
        log.info("Saved capture trace for %s to %s", tag, out)
