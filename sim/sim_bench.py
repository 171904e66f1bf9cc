"""A stand-in for `python -m atom.benchmarks.benchmark_serving` (ROCm/ATOM
ffdf3bb5, with backend_request_func.py): its option set (ATOM's
two-spelling parser; options of the dataset groups have one spelling
only; an unknown option is argparse's exit 2; the last value of a flag
wins), its random dataset, --num-warmups warm-ups of the first prompt,
with --profile a POST /start_profile after them and a POST /stop_profile
after the last request, its printed result table and its result JSON.

As ATOM's client:
  - the profile calls go through the completion request function, whose
    success needs a streamed chunk with "choices": a profile answer has
    none, so "Starting profiler..." / "Stopping profiler..." are printed
    and never "Profiler started" / "Profiler stopped";
  - every request has a 6-hour timeout (aiohttp's ClientTimeout there);
  - failed requests only shorten "completed": the JSON is written and the
    exit status is 0 even when the server died (strict_bench: exit 1 and
    no JSON instead).
The tokenizer is loaded as ATOM's bench loads it (get_tokenizer, then
chat_encoders.load_custom_message_encoder): the model (or --tokenizer)
must be a local folder with a tokenizer_config.json (a hub id would be
downloaded: the simulator refuses it, as transformers does offline);
its chat template is that file's chat_template, else chat_template.jinja;
one encoding/encoding_*.py is the model's encoder, several are refused
with ATOM's warning. --use-chat-template with neither raises transformers'
ValueError, and the bench dies with the traceback, as ATOM's does.
Threads stand in for asyncio + aiohttp; the prompt's words stand in for
tokens. Standard library only.
"""
import glob
import http.client
import json
import os
import random
import statistics
import sys
import time
import traceback
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simcommon as sc  # noqa: E402
from bench_args import parse_args  # noqa: E402
from bench_report import check_goodput, report, save_result  # noqa: E402

REQUEST_TIMEOUT_S = 6 * 60 * 60   # backend_request_func.AIOHTTP_TIMEOUT
SESSION_TIMEOUT_S = 5 * 60        # aiohttp's default, for /debug/mtp_stats
COMPLETIONS = ("vllm", "lmdeploy", "openai", "scalellm", "sglang")


class Output:
    """backend_request_func.RequestFuncOutput."""

    def __init__(self, prompt_len):
        self.generated_text = ""
        self.success = False
        self.latency = 0.0
        self.output_tokens = None
        self.ttft = 0.0
        self.itl = []
        self.prompt_len = prompt_len
        self.error = ""


def post_lines(url, payload):
    """(status, reason, body lines iterator, connection) of a JSON POST."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80,
                                      timeout=sc.real_s(REQUEST_TIMEOUT_S))
    conn.request("POST", u.path or "/", body=json.dumps(payload).encode(),
                 headers={"Content-Type": "application/json",
                          "Authorization": "Bearer %s"
                          % os.environ.get("OPENAI_API_KEY")})
    resp = conn.getresponse()
    return resp, conn


def request_completions(req):
    """async_request_openai_completions: success when a chunk with
    choices arrived; output tokens from the usage chunk."""
    assert req["api_url"].endswith(("completions", "profile")), \
        "OpenAI Completions API URL must end with 'completions' or 'profile'."
    payload = {"model": req["model_name"] or req["model"],
               "prompt": req["prompt"], "temperature": 0.0,
               "best_of": req["best_of"], "max_tokens": req["output_len"],
               "logprobs": req["logprobs"], "stream": True,
               "stream_options": {"include_usage": True}}
    if req["ignore_eos"]:
        payload["ignore_eos"] = True

    def on_data(out, data, state):
        choices = data.get("choices")
        if choices:
            state["text"] += choices[0].get("text") or ""
            return True
        if data.get("usage"):
            out.output_tokens = data["usage"].get("completion_tokens")
        return False
    return stream_request(req, payload, on_data, needs_chunk=True)


def request_chat(req):
    """async_request_openai_chat_completions: any 200 is a success."""
    assert req["api_url"].endswith("chat/completions"), \
        "OpenAI Chat Completions API URL must end with 'chat/completions'."
    payload = {"model": req["model_name"] or req["model"],
               "messages": [{"role": "user", "content": [
                   {"type": "text", "text": req["prompt"]}]}],
               "temperature": 0.0, "max_completion_tokens": req["output_len"],
               "stream": True, "stream_options": {"include_usage": True}}
    if req["ignore_eos"]:
        payload["ignore_eos"] = True

    def on_data(out, data, state):
        choices = data.get("choices")
        if choices:
            state["text"] += choices[0]["delta"].get("content") or ""
            return True
        if data.get("usage"):
            out.output_tokens = data["usage"].get("completion_tokens")
        return False
    return stream_request(req, payload, on_data, needs_chunk=False)


def stream_request(req, payload, on_data, needs_chunk):
    out = Output(req["prompt_len"])
    state = {"text": ""}
    t0 = time.perf_counter()
    last, first = t0, False
    try:
        resp, conn = post_lines(req["api_url"], payload)
        try:
            if resp.status != 200:
                out.error = resp.reason or ""
                return out
            for raw in resp:
                line = raw.strip()
                if not line:
                    continue
                chunk = line.decode("utf-8")
                if chunk.startswith("data: "):
                    chunk = chunk[6:]
                if chunk == "[DONE]":
                    continue
                now = time.perf_counter()
                if on_data(out, json.loads(chunk), state):
                    if not first:
                        first, out.ttft = True, now - t0
                    else:
                        out.itl.append(now - last)
                    last = now
        finally:
            conn.close()
        out.success = first or not needs_chunk
        if not out.success:
            out.error = ("Never received a valid chunk to calculate TTFT."
                         "This response will be marked as failed!")
        out.generated_text = state["text"]
        out.latency = last - t0
    except Exception:  # noqa: BLE001 - as ATOM: the traceback is the error
        out.error = traceback.format_exc()
    return out


def request_func(backend):
    if backend in COMPLETIONS:
        return request_completions
    if backend == "openai-chat":
        return request_chat
    raise NotImplementedError("backend %r is not simulated (sim/README.md)"
                              % backend)


def load_custom_message_encoder(model):
    """chat_encoders._load_encoder_from_dir (chat_encoders.py:38): the one
    <model>/encoding/encoding_*.py (its name: the simulator does not run
    it), None without, None and ATOM's warning with several."""
    enc_dir = os.path.join(model, "encoding")
    if not os.path.isdir(enc_dir):
        return None
    found = sorted(glob.glob(os.path.join(enc_dir, "encoding_*.py")))
    if len(found) > 1:
        sc.write_line(sys.stderr, "Multiple encoding_*.py found in %s, "
                      "refusing to guess: %s" % (
                          enc_dir, [os.path.basename(p) for p in found]))
        return None
    return os.path.basename(found[0]) if found else None


def apply_chat_template(tokenizer, encoder, text):
    """chat_encoders.apply_chat_template for one user message: the
    encoder, else the tokenizer's template (transformers raises without
    one)."""
    if encoder is not None:
        return "<%s> %s" % (encoder, text)
    if tokenizer["chat_template"] is None:
        raise ValueError(
            "Cannot use chat template functions because "
            "tokenizer.chat_template is not set and no template argument "
            "was passed! For information about writing templates and "
            "setting the tokenizer.chat_template attribute, please see the "
            "documentation at https://huggingface.co/docs/transformers/main/"
            "en/chat_templating")
    return "<|user|> %s <|assistant|>" % text


def sample_random_requests(args, template=None):
    """[(prompt, prompt_len, output_len)]: lengths drawn uniformly in
    [len * range_ratio, len] as ATOM's random dataset, a word per token;
    with `template` (a function of the text) the prompts are wrapped in
    the chat template, its words counted."""
    rng = random.Random(args.seed)
    if template is not None:
        template("a")     # ATOM formats a dummy message first

    def lens(n):
        lower = int(n * args.random_range_ratio)
        return [rng.randint(lower, n) for _ in range(args.num_prompts)]
    ins, outs = lens(args.random_input_len), lens(args.random_output_len)
    prefix = ["p"] * args.random_prefix_len
    reqs = [(" ".join(prefix + ["w%d" % rng.randrange(1000)
                                for _ in range(i)]), args.random_prefix_len
             + i, o) for i, o in zip(ins, outs)]
    if template is not None:
        reqs = [(template(p), len(template(p).split()), o)
                for p, _, o in reqs]
    header = "%s  Input/Output Length Statistics  %s" % ("-" * 19, "-" * 19)
    print(header)
    print(" input_lens : min=%-4d  max=%-4d  mean=%-7.2f  "
          "avg_token_mismatch=%-5.2f " % (
              min(r[1] for r in reqs), max(r[1] for r in reqs),
              statistics.fmean(r[1] for r in reqs), 0.0))
    print(" output_lens: min=%-4d  max=%-4d  mean=%-7.2f " % (
        min(r[2] for r in reqs), max(r[2] for r in reqs),
        statistics.fmean(r[2] for r in reqs)))
    print("-" * len(header), "\n")
    return reqs


def make_input(args, urls, prompt, prompt_len, output_len, api_url=None):
    return {"model": args.model, "model_name": args.served_model_name,
            "prompt": prompt, "api_url": api_url or urls["api"],
            "prompt_len": prompt_len, "output_len": output_len,
            "logprobs": args.logprobs, "best_of": args.best_of,
            "ignore_eos": args.ignore_eos}


def run_limited(fn, inputs, conc, gaps=None):
    """Every input at once (or `gaps` seconds apart), at most `conc` in
    flight (None: no limit), outputs in input order."""
    with ThreadPoolExecutor(max_workers=max(1, conc or len(inputs))) as ex:
        futures = []
        for i, item in enumerate(inputs):
            futures.append(ex.submit(fn, item))
            if gaps is not None and i + 1 < len(inputs):
                sc.sleep(gaps())
        return [f.result() for f in futures]


def benchmark(args, urls, reqs):
    """benchmark(): warm-ups, profiler start, main run, profiler stop.
    Returns (outputs, duration)."""
    fn = request_func(args.backend)
    print("Starting initial single prompt test run...")
    test = make_input(args, urls, *reqs[0])
    if args.num_warmups > 0:
        print("Warming up with %d requests..." % args.num_warmups)
        run_limited(fn, [test] * args.num_warmups, args.max_concurrency)
        print("Warmup completed.")
    if args.profile:
        print("Starting profiler...")
        if fn(dict(test, api_url=urls["base"] + "/start_profile")).success:
            print("Profiler started")
    dist = "Poisson process" if args.burstiness == 1.0 else \
        "Gamma distribution"
    print("Traffic request rate: %s" % args.request_rate)
    print("Burstiness factor: %s (%s)" % (args.burstiness, dist))
    print("Maximum request concurrency: %s" % args.max_concurrency)
    gaps = None
    if args.request_rate != float("inf"):
        theta = 1.0 / (args.request_rate * args.burstiness)
        gaps = lambda: random.gammavariate(args.burstiness, theta)  # noqa
    print("Starting main benchmark run...")
    t0 = time.perf_counter()
    outputs = run_limited(fn, [make_input(args, urls, *r) for r in reqs],
                          args.max_concurrency, gaps)
    duration = time.perf_counter() - t0
    if args.profile:
        print("Stopping profiler...")
        if fn(dict(test, api_url=urls["base"] + "/stop_profile")).success:
            print("Profiler stopped")
    return outputs, duration


def spec_stats(base):
    """get_spec_stats: GET /debug/mtp_stats; None unless 200 and
    enabled."""
    u = urllib.parse.urlsplit(base)
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80,
                                          timeout=sc.real_s(SESSION_TIMEOUT_S))
        try:
            conn.request("GET", "/debug/mtp_stats")
            resp = conn.getresponse()
            body = resp.read()
        finally:
            conn.close()
        if resp.status != 200:
            return None
        stats = json.loads(body)
    except Exception:  # noqa: BLE001 - as ATOM
        return None
    return stats if stats.get("enabled") else None


def main(argv):
    sc.record_call("benchmark_serving", argv)
    args = parse_args(argv)
    print(args)
    sys.stdout.flush()
    random.seed(args.seed)
    base = args.base_url or "http://%s:%d" % (args.host, args.port)
    urls = {"base": base, "api": base + args.endpoint}
    tokenizer = sc.get_tokenizer(args.tokenizer or args.model)
    encoder = load_custom_message_encoder(args.model)
    if args.dataset_name != "random":
        raise ValueError("Unknown dataset: %s" % args.dataset_name)
    reqs = sample_random_requests(args, (lambda text: apply_chat_template(
        tokenizer, encoder, text)) if args.use_chat_template else None)
    goodput = check_goodput(args)
    outputs, duration = benchmark(args, urls, reqs)
    result = report(args, reqs, outputs, duration, goodput,
                    spec_stats(base))
    failed = [o.error for o in outputs if not o.success]
    if failed and sc.fault_on("strict_bench"):
        print("ERROR: %d of %d requests failed; first: %s" % (
            len(failed), len(outputs), failed[0].strip().splitlines()[-1]
            if failed[0].strip() else "?"))
        return 1
    if args.save_result:
        save_result(args, result)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
