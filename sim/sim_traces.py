"""What the simulated ranks export: real kineto traces from
../shared/traces (or SIM_TRACE_FILE), rotated over the global ranks, each
with its top-level distributedInfo.rank set, ATOM's run labels of the
steps the rank ran while profiling added first in traceEvents (a trace
that carries labels already keeps its own; sim_labels.py), and every other
byte kept."""
import gzip
import json
import os
import threading

import sim_labels

# Rotated over the ranks (global rank r gets entry r % 4): ROCm traces.
DEFAULT_TRACES = (
    "tracelens__mi300_resnet_act_checkpoint.json.gz",
    "tracelens__mi210_gpu_only_trace.json.gz",
    "tracelens__torch_compile_triton_trace.json.gz",
    "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
)


def traces_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("SIM_TRACES_DIR") or os.path.normpath(
        os.path.join(here, "..", "..", "shared", "traces"))


def trace_sources():
    """SIM_TRACE_FILE (colon-separated, rotated over ranks) or the default
    rotation from SIM_TRACES_DIR."""
    files = os.environ.get("SIM_TRACE_FILE", "")
    if files:
        return [f for f in files.split(":") if f]
    return [os.path.join(traces_dir(), n) for n in DEFAULT_TRACES]


_cache = {}
_cache_lock = threading.Lock()


def source_text(path):
    """(JSON text of the trace, gunzipped when it is gzip; whether its top
    level has a distributedInfo object; the span labels go over, or None
    when it has labels already or no kernel), cached per path."""
    with _cache_lock:
        if path not in _cache:
            with open(path, "rb") as f:
                raw = f.read()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            text = raw.decode("utf-8")
            top = json.loads(text)
            has_info = isinstance(top, dict) and isinstance(
                top.get("distributedInfo"), dict)
            span = None if sim_labels.has_labels(top) else \
                sim_labels.kernel_span(top)
            _cache[path] = (text, has_info, span)
        return _cache[path]


def rank_trace(text, has_info, rank):
    """`text` with its top-level distributedInfo.rank set to `rank`. Every
    other byte is kept, so figures computed from the source trace hold for
    the exported one. The distributedInfo object itself is re-serialised
    (key order kept); when absent, {"rank": r} is inserted as the first key.
    A legacy bare-array trace has no place for it and is returned as is.
    Assumes the first '"distributedInfo"' in the text is the top-level key
    (kineto writes it before traceEvents)."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("{", start):
        return text
    if not has_info:
        return "%s\"distributedInfo\": {\"rank\": %d}, %s" % (
            text[:start + 1], rank, text[start + 1:])
    key = '"distributedInfo"'
    obj_at = text.index("{", text.index(key) + len(key))
    obj, end = json.JSONDecoder().raw_decode(text, obj_at)
    obj["rank"] = rank
    return text[:obj_at] + json.dumps(obj) + text[end:]


def global_rank_text(rank, labels=()):
    """The exported JSON of global rank `rank`, with the run labels."""
    sources = trace_sources()
    text, has_info, span = source_text(sources[rank % len(sources)])
    text = rank_trace(text, has_info, rank)
    if labels and span is not None:
        text = sim_labels.insert_events(
            text, sim_labels.annotation_text(list(labels), span))
    return text


def model_stem(model):
    """The file-name stem ATOM's worker uses (model_runner.start_profiler):
    the model's basename with every character that is not alphanumeric,
    '_', '-' or '.' made '_'; 'trace' when empty."""
    base = os.path.basename(model.rstrip("/"))
    safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in base)
    return safe or "trace"
