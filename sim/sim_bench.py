"""A stand-in for `python -m atom.benchmarks.benchmark_serving` (ROCm/ATOM)
with the options run_benchmark.sh passes: warm-ups, optional
/start_profile, CONC-limited streamed completions, /stop_profile, the
metrics table, and the result JSON with benchmark_serving's keys.

As the real client, when requests fail it still writes the JSON (with
"completed" short of "num_prompts") and exits 0; the strict_bench switch
makes it exit 1 and write nothing instead.
Standard library only.
"""
import argparse
import datetime
import http.client
import json
import math
import os
import statistics
import sys
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simcommon as sc  # noqa: E402

REQUEST_TIMEOUT_S = 6 * 60 * 60  # aiohttp's timeout in benchmark_serving


def parse_args(argv):
    """benchmark_serving's options; an unknown one is an argparse error
    (exit 2), as with the real client."""
    p = argparse.ArgumentParser(prog="benchmark_serving.py")
    add = p.add_argument
    add("--backend", default="vllm")
    add("--base-url", default=None)
    add("--host", default="127.0.0.1")
    add("--port", type=int, default=8000)
    add("--endpoint", default="/v1/completions")
    add("--dataset-name", default="sharegpt", choices=["random"])
    add("--dataset-path", default=None)
    add("--max-concurrency", type=int, default=None)
    add("--model", required=True)
    add("--tokenizer", default=None)
    add("--best-of", type=int, default=1)
    add("--use-beam-search", action="store_true")
    add("--num-prompts", type=int, default=1000)
    add("--logprobs", type=int, default=None)
    add("--request-rate", type=float, default=float("inf"))
    add("--burstiness", type=float, default=1.0)
    add("--seed", type=int, default=0)
    add("--trust-remote-code", action="store_true")
    add("--disable-tqdm", action="store_true")
    add("--profile", action="store_true")
    add("--save-result", action="store_true")
    add("--save-detailed", action="store_true")
    add("--metadata", nargs="*")
    add("--result-dir", default=None)
    add("--result-filename", default=None)
    add("--ignore-eos", action="store_true")
    add("--percentile-metrics", default="ttft,tpot,itl")
    add("--metric-percentiles", default="99")
    add("--goodput", nargs="+")
    add("--random-input-len", type=int, default=1024)
    add("--random-output-len", type=int, default=128)
    add("--random-range-ratio", type=float, default=1.0)
    add("--random-prefix-len", type=int, default=0)
    add("--use-chat-template", action="store_true")
    add("--tokenizer-mode", default="auto")
    add("--served-model-name", default=None)
    add("--lora-modules", nargs="+", default=None)
    add("--num-warmups", type=int, default=1)
    return p.parse_args(argv)


class Output:
    def __init__(self, prompt_len):
        self.prompt_len = prompt_len
        self.success = False
        self.ttft = 0.0
        self.latency = 0.0
        self.itl = []
        self.output_tokens = 0
        self.generated_text = ""
        self.error = ""


def post(url, payload, timeout):
    """(status, response) of a JSON POST; the caller reads and closes."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80,
                                      timeout=timeout)
    body = json.dumps(payload).encode()
    conn.request("POST", u.path or "/", body=body,
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp, conn


def stream_request(url, model, prompt, prompt_len, output_len):
    """One streamed completion, timed as benchmark_serving's vllm backend
    does: ttft to the first token, itl between tokens."""
    out = Output(prompt_len)
    payload = {"model": model, "prompt": prompt, "max_tokens": output_len,
               "temperature": 0.0, "stream": True, "ignore_eos": True}
    t0 = time.perf_counter()
    last = t0
    try:
        resp, conn = post(url, payload, REQUEST_TIMEOUT_S)
        try:
            if resp.status != 200:
                out.error = "HTTP %d: %s" % (resp.status, resp.read()[:200])
                return out
            for raw in resp:
                line = raw.strip()
                if not line.startswith(b"data: "):
                    continue
                data = line[6:]
                if data == b"[DONE]":
                    break
                chunk = json.loads(data)
                now = time.perf_counter()
                if out.output_tokens == 0:
                    out.ttft = now - t0
                else:
                    out.itl.append(now - last)
                last = now
                out.output_tokens += 1
                out.generated_text += chunk["choices"][0].get("text", "")
        finally:
            conn.close()
        out.latency = time.perf_counter() - t0
        out.success = out.output_tokens > 0
        if not out.success:
            out.error = "stream ended without a token"
    except (OSError, ValueError, KeyError, IndexError,
            http.client.HTTPException) as e:
        out.error = "%s: %s" % (type(e).__name__, e)
    return out


def profile_call(base_url, route):
    """POST /start_profile or /stop_profile; True on HTTP 200."""
    try:
        resp, conn = post(base_url + route, {}, 60)
        try:
            resp.read()
            return resp.status == 200
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return False


def percentile(values, p):
    """numpy.percentile's default (linear interpolation)."""
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats_ms(values, percentiles):
    v = values or [0.0]
    out = {"mean": statistics.fmean(v) * 1000,
           "median": statistics.median(v) * 1000,
           "std": statistics.pstdev(v) * 1000}
    out["p"] = [(p, percentile(v, p) * 1000) for p in percentiles]
    return out


def run_all(fn, items, conc):
    with ThreadPoolExecutor(max_workers=max(1, conc or len(items))) as ex:
        return list(ex.map(fn, items))


def fmt_row(label, value, digits=2):
    if isinstance(value, float):
        return "{:<40} {:<10.{d}f}".format(label, value, d=digits)
    return "{:<40} {:<10}".format(label, value)


def metrics(args, outputs, duration):
    ok = [o for o in outputs if o.success]
    total_in = sum(o.prompt_len for o in ok)
    total_out = sum(o.output_tokens for o in ok)
    tpots = [(o.latency - o.ttft) / (o.output_tokens - 1)
             for o in ok if o.output_tokens > 1]
    itls = [x for o in ok for x in o.itl]
    e2els = [o.latency for o in ok]
    pcts = [float(p) for p in args.metric_percentiles.split(",")]
    return {
        "duration": duration,
        "completed": len(ok),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration,
        "request_goodput:": None,
        "output_throughput": total_out / duration,
        "total_token_throughput": (total_in + total_out) / duration,
        "concurrency": sum(e2els) / duration,
        "accept_length": None,
        "acceptance_rate": None,
    }, {"ttft": stats_ms([o.ttft for o in ok], pcts),
        "tpot": stats_ms(tpots, pcts), "itl": stats_ms(itls, pcts),
        "e2el": stats_ms(e2els, pcts)}


def report(args, result, per_metric):
    """Prints benchmark_serving's table and adds the per-metric keys
    (mean_ttft_ms, p99_itl_ms ...) to `result`."""
    print("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    print(fmt_row("Successful requests:", result["completed"]))
    print(fmt_row("Benchmark duration (s):", result["duration"]))
    print(fmt_row("Total input tokens:", result["total_input_tokens"]))
    print(fmt_row("Total generated tokens:", result["total_output_tokens"]))
    print(fmt_row("Request throughput (req/s):",
                  result["request_throughput"]))
    print(fmt_row("Output token throughput (tok/s):",
                  result["output_throughput"]))
    print(fmt_row("Total Token throughput (tok/s):",
                  result["total_token_throughput"]))
    print(fmt_row("Concurrency:", result["concurrency"]))
    names = {"ttft": ("TTFT", "Time to First Token"),
             "tpot": ("TPOT", "Time per Output Token (excl. 1st token)"),
             "itl": ("ITL", "Inter-token Latency"),
             "e2el": ("E2EL", "End-to-end Latency")}
    for key in args.percentile_metrics.split(","):
        if key not in names:
            continue
        short, header = names[key]
        m = per_metric[key]
        print("{s:{c}^{n}}".format(s=header, n=50, c="-"))
        print(fmt_row("Mean %s (ms):" % short, m["mean"]))
        print(fmt_row("Median %s (ms):" % short, m["median"]))
        for stat in ("mean", "median", "std"):
            result["%s_%s_ms" % (stat, key)] = m[stat]
        for p, value in m["p"]:
            word = str(int(p)) if int(p) == p else str(p)
            print(fmt_row("P%s %s (ms):" % (word, short), value))
            result["p%s_%s_ms" % (word, key)] = value
    print("=" * 50)


def benchmark(args):
    """Warm-ups, profiler start, the main run, profiler stop; returns the
    outputs and the main run's duration."""
    base = args.base_url or "http://%s:%d" % (args.host, args.port)
    url = base + args.endpoint
    isl, osl = args.random_input_len, args.random_output_len
    prompt = " ".join(["hi"] * max(1, isl))

    def one(_):
        return stream_request(url, args.model, prompt, isl, osl)

    print("Starting initial single prompt test run...")
    if args.num_warmups > 0:
        print("Warming up with %d requests..." % args.num_warmups)
        run_all(one, range(args.num_warmups), args.max_concurrency)
        print("Warmup completed.")
    if args.profile:
        print("Starting profiler...")
        if profile_call(base, "/start_profile"):
            print("Profiler started")
    print("Traffic request rate: %s" % args.request_rate)
    print("Burstiness factor: %s (Poisson process)" % args.burstiness)
    print("Maximum request concurrency: %s" % args.max_concurrency)
    print("Starting main benchmark run...")
    t0 = time.perf_counter()
    outputs = run_all(one, range(args.num_prompts), args.max_concurrency)
    duration = max(time.perf_counter() - t0, 1e-9)
    if args.profile:
        print("Stopping profiler...")
        if profile_call(base, "/stop_profile"):
            print("Profiler stopped")
    return outputs, duration


def result_json(args, result):
    doc = {"date": datetime.datetime.now().strftime("%Y%m%d-%H%M%S"),
           "backend": args.backend, "model_id": args.model,
           "tokenizer_id": args.tokenizer or args.model,
           "best_of": args.best_of, "num_prompts": args.num_prompts}
    for item in args.metadata or []:
        k, _, v = item.partition("=")
        doc[k.strip()] = v.strip()
    doc["request_rate"] = (args.request_rate
                           if args.request_rate < float("inf") else "inf")
    doc["burstiness"] = args.burstiness
    doc["max_concurrency"] = args.max_concurrency
    doc.update(result)
    return doc


def main(argv):
    sc.record_call("benchmark_serving", argv)
    args = parse_args(argv)
    print(args)
    sys.stdout.flush()
    outputs, duration = benchmark(args)
    result, per_metric = metrics(args, outputs, duration)
    report(args, result, per_metric)
    failed = [o.error for o in outputs if not o.success]
    if failed and sc.fault_on("strict_bench"):
        print("ERROR: %d of %d requests failed; first: %s" % (
            len(failed), len(outputs), failed[0]))
        return 1
    if args.save_result:
        name = args.result_filename or "%s-%sqps-%s.json" % (
            args.backend, args.request_rate,
            os.path.basename(args.model.rstrip("/")))
        if args.result_dir:
            name = os.path.join(args.result_dir, name)
        with open(name, "w", encoding="utf-8") as f:
            json.dump(result_json(args, result), f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
