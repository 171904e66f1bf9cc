"""benchmark_serving's figures (calculate_metrics), its printed result
table and its result JSON, keys and order as ATOM's. Percentiles are
numpy.percentile's default (linear); an empty list counts as [0], as
ATOM's `np.mean(x or 0)`."""
import argparse
import collections
import datetime
import json
import math
import os
import statistics
import warnings

METRICS = (("ttft", "TTFT", "Time to First Token"),
           ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
           ("itl", "ITL", "Inter-token Latency"),
           ("e2el", "E2EL", "End-to-end Latency"))


def percentile(values, p):
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats_ms(values, percentiles):
    v = values or [0.0]
    return {"mean": statistics.fmean(v) * 1000,
            "median": statistics.median(v) * 1000,
            "std": statistics.pstdev(v) * 1000,
            "p": [(p, percentile(v, p) * 1000) for p in percentiles]}


def check_goodput(args):
    """KEY:VALUE service level objectives (ttft, tpot, e2el in ms)."""
    slo = {}
    for pair in args.goodput or []:
        try:
            name, value = pair.split(":")
            slo[name] = float(value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(
                "Invalid format found for service level objectives. "
                'Specify service level objectives for goodput as '
                '"KEY:VALUE" pairs, where the key is a metric name, and the '
                "value is a number in milliseconds.") from err
    for name, value in slo.items():
        if name not in ("ttft", "tpot", "e2el"):
            raise ValueError("Invalid metric name found, %s: %s." % (
                name, value))
        if value < 0:
            raise ValueError("Invalid value found, %s: %s." % (name, value))
    return slo


def calculate(reqs, outputs, duration, goodput):
    """(figures, per-metric stats input, output lens) as
    calculate_metrics."""
    lens, tpots, all_tpots, itls, ttfts, e2els = [], [], [], [], [], []
    total_in = completed = good = 0
    for i, o in enumerate(outputs):
        if not o.success:
            lens.append(0)
            continue
        n = o.output_tokens
        if n is None:
            n = len(o.generated_text.split())
        lens.append(n)
        total_in += reqs[i][1]
        tpot = (o.latency - o.ttft) / (n - 1) if n > 1 else 0
        if n > 1:
            tpots.append(tpot)
        all_tpots.append(tpot)
        itls += o.itl
        ttfts.append(o.ttft)
        e2els.append(o.latency)
        completed += 1
    for t, tp, e in zip(ttfts, all_tpots, e2els):
        got = {"ttft": t, "tpot": tp, "e2el": e}
        if goodput and all(got[k] * 1000 <= v for k, v in goodput.items()):
            good += 1
    if completed == 0:
        warnings.warn("All requests failed. This is likely due to a "
                      "misconfiguration on the benchmark arguments.",
                      stacklevel=2)
    out = sum(lens)
    figures = {"completed": completed, "total_input": total_in,
               "total_output": out, "request_throughput": completed /
               duration, "request_goodput": good / duration,
               "output_throughput": out / duration,
               "total_token_throughput": (total_in + out) / duration,
               "concurrency": sum(e2els) / duration}
    return figures, {"ttft": ttfts, "tpot": tpots, "itl": itls,
                     "e2el": e2els}, lens


def failure_reason(error):
    lines = [ln.strip() for ln in (error or "").strip().splitlines()
             if ln.strip()]
    return lines[-1][:110] if lines else "unknown (no error recorded)"


def row(label, value, fmt="{:<10}"):
    print(("{:<40} " + fmt).format(label, value))


def print_head(fig, outputs, duration, goodput, spec):
    print("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    row("Successful requests:", fig["completed"])
    failures = collections.Counter(failure_reason(o.error) for o in outputs
                                   if not o.success)
    if failures:
        row("FAILED requests:", sum(failures.values()))
        for reason, count in failures.most_common(5):
            print("%4s%-8d %s" % ("", count, reason))
    row("Benchmark duration (s):", duration, "{:<10.2f}")
    row("Total input tokens:", fig["total_input"])
    row("Total generated tokens:", fig["total_output"])
    row("Request throughput (req/s):", fig["request_throughput"],
        "{:<10.2f}")
    if goodput:
        row("Request goodput (req/s):", fig["request_goodput"], "{:<10.2f}")
    row("Output token throughput (tok/s):", fig["output_throughput"],
        "{:<10.2f}")
    row("Total Token throughput (tok/s):", fig["total_token_throughput"],
        "{:<10.2f}")
    row("Concurrency:", fig["concurrency"], "{:<10.2f}")
    if spec and spec.get("average_tokens_per_forward"):
        row("Accept length:", spec["average_tokens_per_forward"],
            "{:<10.2f}")
    if spec and spec.get("acceptance_rate") is not None:
        row("Acceptance rate (%):", spec["acceptance_rate"] * 100,
            "{:<10.2f}")


def report(args, reqs, outputs, duration, goodput, spec):
    """Prints the table; returns benchmark()'s result dict."""
    fig, series, lens = calculate(reqs, outputs, duration, goodput)
    print_head(fig, outputs, duration, goodput, spec)
    result = {
        "duration": duration, "completed": fig["completed"],
        "total_input_tokens": fig["total_input"],
        "total_output_tokens": fig["total_output"],
        "request_throughput": fig["request_throughput"],
        "request_goodput:": fig["request_goodput"] if goodput else None,
        "output_throughput": fig["output_throughput"],
        "total_token_throughput": fig["total_token_throughput"],
        "concurrency": fig["concurrency"],
        "accept_length": (spec or {}).get("average_tokens_per_forward"),
        "acceptance_rate": (spec or {}).get("acceptance_rate"),
        "input_lens": [o.prompt_len for o in outputs], "output_lens": lens,
        "ttfts": [o.ttft for o in outputs], "itls": [o.itl for o in outputs],
        "generated_texts": [o.generated_text for o in outputs],
        "errors": [o.error for o in outputs]}
    pcts = [float(p) for p in args.metric_percentiles.split(",")]
    wanted = args.percentile_metrics.split(",")
    for key, short, header in METRICS:
        if key not in wanted:
            continue
        m = stats_ms(series[key], pcts)
        print("{s:{c}^{n}}".format(s=header, n=50, c="-"))
        row("Mean %s (ms):" % short, m["mean"], "{:<10.2f}")
        row("Median %s (ms):" % short, m["median"], "{:<10.2f}")
        for stat in ("mean", "median", "std"):
            result["%s_%s_ms" % (stat, key)] = m[stat]
        for p, value in m["p"]:
            word = str(int(p)) if int(p) == p else str(p)
            row("P%s %s (ms):" % (word, short), value, "{:<10.2f}")
            result["p%s_%s_ms" % (word, key)] = value
    print("=" * 50)
    return result


DETAILED = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts",
            "errors")


def save_result(args, result):
    """The result JSON: setup, metadata, traffic, then the result; the
    per-request lists only with --save-detailed."""
    stamp = datetime.datetime.now(datetime.timezone.utc).astimezone() \
        .strftime("%Y%m%d-%H%M%S")
    doc = {"date": stamp, "backend": args.backend, "model_id": args.model,
           "tokenizer_id": args.tokenizer or args.model,
           "best_of": args.best_of, "num_prompts": args.num_prompts}
    for item in args.metadata or []:
        if "=" not in item:
            raise ValueError("Invalid metadata format. Please use "
                             "KEY=VALUE format.")
        k, v = item.split("=")[:2]
        doc[k.strip()] = v.strip()
    doc["request_rate"] = (args.request_rate
                           if args.request_rate < float("inf") else "inf")
    doc["burstiness"] = args.burstiness
    doc["max_concurrency"] = args.max_concurrency
    doc.update(result)
    if not args.save_detailed:
        for key in DETAILED:
            doc.pop(key, None)
    conc = ("-concurrency%d" % args.max_concurrency
            if args.max_concurrency is not None else "")
    name = args.result_filename or "%s-%sqps%s-%s-%s.json" % (
        args.backend, args.request_rate, conc,
        args.model.split("/")[-1], stamp)
    if args.result_dir:
        name = os.path.join(args.result_dir, name)
    with open(name, "w", encoding="utf-8") as f:
        json.dump(doc, f)
