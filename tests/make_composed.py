"""Ranks the simulator composes of the real traces' forward passes
(sim/sim_compose.py), as the demo's capture exports them: 4 requests of
102-128 prompt tokens and 32 tokens out, a prefill and 31 decode steps,
the batch 4, then 3, then 1. Used by the tests that judge or cross-check
figures on them (test_verdict_traces.py, test_figures_agree.py)."""
import gzip
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import SRC_DIR, TRACES_DIR  # noqa: E402

sys.path.insert(0, os.path.join(SRC_DIR, "sim"))
import sim_compose  # noqa: E402
import sim_labels  # noqa: E402


class Args:
    """The server's options the labels read (ATOM's defaults)."""
    cudagraph_capture_sizes = "[]"
    enforce_eager = False
    method = None
    num_speculative_tokens = 0


def demo_steps(split=False):
    """The demo's steps; split: its prefill cut in two, as when a request
    arrives a step late."""
    ctx = [128, 120, 110, 102]
    steps = ([sim_labels.Step("prefill", ctx[:1]),
              sim_labels.Step("prefill", ctx[1:])] if split
             else [sim_labels.Step("prefill", ctx)])
    for i in range(31):
        ctx = [c + 1 for c in ctx]
        steps.append(sim_labels.Step("decode", ctx[:4 if i < 24 else
                                                 3 if i < 27 else 1]))
    return steps


def make_ranks(top, seed, ranks=1, split=False):
    """top/rank_<r>/d.pt.trace.json.gz for each rank of one engine, noise
    from seed; returns their paths."""
    win = sim_compose.Window(demo_steps(split), Args, seed, 0, ranks,
                             TRACES_DIR)
    paths = []
    for r in range(ranks):
        paths.append(os.path.join(top, "rank_%d" % r, "d.pt.trace.json.gz"))
        os.makedirs(os.path.dirname(paths[-1]), exist_ok=True)
        with gzip.open(paths[-1], "wt") as f:
            f.write(sim_compose.rank_text(win, r, ranks, False))
    return paths
