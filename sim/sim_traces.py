"""What the simulated ranks export. By default each rank's trace is made
of real forward passes, one per step its engine ran while profiling
(sim_compose.py: decode and prefill steps from the vLLM forward of
../shared/traces, ATOM's run labels over each). With
SIM_TRACE_FILE, the given real kineto traces instead, rotated over the
global ranks, each with its top-level distributedInfo.rank set, ATOM's run
labels of the steps laid over its kernels (a trace that carries labels
already keeps its own; sim_labels.py), and every other byte kept."""
import gzip
import json
import os
import threading

import sim_compose
import sim_labels

def traces_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("SIM_TRACES_DIR") or os.path.normpath(
        os.path.join(here, "..", "..", "shared", "traces"))


def trace_sources():
    """SIM_TRACE_FILE (colon-separated, rotated over ranks), or none: the
    ranks are composed (sim_compose.py)."""
    return [f for f in os.environ.get("SIM_TRACE_FILE", "").split(":") if f]


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


def global_rank_text(rank, window):
    """The exported JSON of global rank `rank` for an engine's profiled
    window (sim_compose.Window)."""
    sources = trace_sources()
    if not sources:
        return sim_compose.rank_text(
            window, rank, window.ranks,
            os.environ.get("ATOM_PROFILER_MORE", "0") == "1")
    text, has_info, span = source_text(sources[rank % len(sources)])
    text = rank_trace(text, has_info, rank)
    names = [name for _, _, name in window.passes]
    if names and span is not None:
        text = sim_labels.insert_events(
            text, sim_labels.annotation_text(names, span))
    return text


def model_stem(model):
    """The file-name stem ATOM's worker uses (model_runner.start_profiler):
    the model's basename with every character that is not alphanumeric,
    '_', '-' or '.' made '_'; 'trace' when empty."""
    base = os.path.basename(model.rstrip("/"))
    safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in base)
    return safe or "trace"
