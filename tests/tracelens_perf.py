"""TraceLens's per-op performance reports (its GEMM.csv, SDPA_fwd.csv, ...)
read for comparison with traced's op groups: the four pairs of
../shared/traces/perf_pairs, TraceLens's live answers for more shared
traces when it is at hand (live_pairs()), and the list of rows traced
counts otherwise (docs/PERF.md, "Where traced counts otherwise"), which
both perf tests hold. Standard library only (TraceLens runs in its own
interpreter)."""
import ast
import atexit
import csv
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import tracedtest

PAIRS_DIR = os.path.join(tracedtest.TRACES_DIR, "perf_pairs")
DOC = os.path.join(tracedtest.SRC_DIR, "docs", "PERF.md")

# Each pair's trace (../shared/traces/README.md, "Per-op performance
# pairs") and the capture traces TraceLens merged into its replays (None:
# none; "auto": the capture_traces/ folder beside it).
PAIR_TRACES = {
    "h100_qwen1.5-0.5b":
        ("tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", None),
    "mi300_resnet_act_ckpt":
        ("tracelens__mi300_resnet_act_checkpoint.json.gz", None),
    "xdit_flux.1_aiter_sage":
        ("tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz",
         "graph_pairs/xdit_flux.1_aiter_sage/capture_traces"),
    "sglang_qwen3-8b_decode":
        ("graph_pairs/sglang_decode/sglang_Qwen3-8B_decode.json.gz", "auto"),
}

# The other shared traces taken with record_shapes, which TraceLens is
# run on live (TRACELENS_DIR: its source tree; TRACELENS_PYTHON: an
# interpreter with pandas, by default this one).
LIVE_TRACES = {
    "live_mi250_minitoy":
        ("hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz", None),
    "live_torch_compile_triton":
        ("tracelens__torch_compile_triton_trace.json.gz", None),
}
PAIR_TRACES.update(LIVE_TRACES)
_LIVE = {}


def index_args(pair):
    """traced index's arguments for a pair's trace."""
    trace, caps = PAIR_TRACES[pair]
    caps = "none" if caps is None else caps if caps == "auto" else \
        os.path.join(tracedtest.TRACES_DIR, caps)
    return ["index", "--captures", caps,
            os.path.join(tracedtest.TRACES_DIR, trace)]

# The report's sheets that are no per-op table.
NOT_OPS = ("unified_perf_summary", "gpu_timeline", "ops_summary",
           "ops_summary_by_category", "ops_unique_args", "kernel_summary")

TOL_WORK = 1e-3   # gflops and data_moved_mb
TOL_RATE = 1e-2   # tflops_s_mean and tb_s_mean


def literal(text):
    """A CSV cell written by pandas from a Python value, as that value
    (tuples as lists); None for an empty cell or NaN."""
    if text is None or text == "" or text == "nan":
        return None
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return jsonish(v)


def jsonish(v):
    """Tuples to lists, recursively: the shape traced's JSON gives."""
    if isinstance(v, (list, tuple)):
        return [jsonish(x) for x in v]
    return v


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def rows(pair):
    """Every row of a pair's per-op sheets: dicts with sheet, name,
    params {name: value} (the row's own, NaN columns dropped), the first
    instance's args, gflops, data_moved_mb, tflops_s_mean, tb_s_mean,
    count, kernel_us_sum, num_kernels (None when the report did not
    group by it), recompute (likewise)."""
    out = []
    where = folder(pair)
    for f in sorted(os.listdir(where)):
        sheet = f[:-4]
        if not f.endswith(".csv") or sheet in NOT_OPS:
            continue
        with open(os.path.join(where, f), newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                if "GFLOPS_first" not in r:
                    break  # a sheet of kernels, not of op groups
                params = {k[7:]: literal(v) for k, v in r.items()
                          if k.startswith("param: ") and v not in ("", None)}
                out.append({
                    "pair": pair, "sheet": sheet, "name": r["name"],
                    "params": params,
                    "dims": literal(r.get("Input Dims_first")),
                    "types": literal(r.get("Input type_first")),
                    "strides": literal(r.get("Input Strides_first")),
                    "concrete": literal(r.get("Concrete Inputs_first")),
                    "gflops": number(r.get("GFLOPS_first")),
                    "data_moved_mb": number(r.get("Data Moved (MB)_first")),
                    "tflops_s_mean": number(r.get("TFLOPS/s_mean")),
                    "tb_s_mean": number(r.get("TB/s_mean")),
                    "count": int(r["name_count"]) if r.get("name_count") else None,
                    "kernel_us_sum": number(r.get("Kernel Time (µs)_sum")),
                    "num_kernels": r.get("num_kernels"),
                    "recompute": r.get("is_recompute"),
                })
    return out


def pairs():
    """The stored pairs, then the live ones."""
    return sorted(d for d in os.listdir(PAIRS_DIR)
                  if os.path.isdir(os.path.join(PAIRS_DIR, d))) + live_pairs()


def live_pairs():
    """LIVE_TRACES answered by TraceLens now, when TRACELENS_DIR names its
    tree; [] without it. A run that fails fails the caller."""
    src = os.environ.get("TRACELENS_DIR")
    if not src:
        return []
    py = os.environ.get("TRACELENS_PYTHON") or sys.executable
    for name, (trace, _) in sorted(LIVE_TRACES.items()):
        if name in _LIVE:
            continue
        top = tempfile.mkdtemp(prefix="tracelens_")
        atexit.register(shutil.rmtree, top, True)
        out = os.path.join(top, name)
        env = dict(os.environ, PYTHONPATH=src)
        subprocess.run([py, "-m", "TraceLens.Reporting.generate_perf_report_pytorch",
                        "--profile_json_path",
                        os.path.join(tracedtest.TRACES_DIR, trace),
                        "--output_csvs_dir", out], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _LIVE[name] = out
    return sorted(LIVE_TRACES)


def folder(pair):
    return _LIVE.get(pair) or os.path.join(PAIRS_DIR, pair)


def same_value(a, b):
    """Two parameter values alike: numbers within 1e-9 relative, lists
    element by element, anything else equal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y)
                                        for x, y in zip(a, b))
    return a == b


def same_params(tl, ours, ignore=("transpose",)):
    """TraceLens's row parameters (those it has) against traced's
    params object."""
    for k, v in tl.items():
        if k in ignore:
            continue
        # pandas writes None and a column another op of the sheet has
        # (NaN) alike: an absent parameter reads as either.
        if v is None and ours.get(k) is None:
            continue
        if k not in ours or not same_value(v, ours[k]):
            return False
    return True


def close(a, b, tol):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=tol, abs_tol=1e-12)


def row_key(r):
    """How the documented list names a row: pair, sheet, op and its
    parameters as TraceLens writes them (compact JSON, keys sorted)."""
    import json
    return (r["pair"], r["sheet"], r["name"],
            json.dumps(r["params"], sort_keys=True, separators=(",", ":")))


def documented():
    """docs/PERF.md's table of the rows traced counts otherwise: {(pair,
    sheet, op, params): reason}. Its rows: | pair | sheet | op |
    `params` | reason |."""
    out = {}
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    start = text.find("## Where traced counts otherwise")
    if start < 0:
        return out
    for line in text[start:].splitlines():
        m = re.match(r"^\| (\S+) \| (\S+) \| `([^`]+)` \| `([^`]*)` \| (.+) \|$",
                     line)
        if m:
            out[(m.group(1), m.group(2), m.group(3), m.group(4))] = m.group(5)
    return out
