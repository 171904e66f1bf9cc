"""The options of ATOM's benchmark_serving (atom/benchmarks/
benchmark_serving.py, ffdf3bb5), in its order, with its types, choices
and nargs, on ATOM's two-spelling parser. As there, the options of the
dataset groups (sonnet, sharegpt, random, hf) are added through
argparse's own add_argument and have one spelling only: --random_input_len
is an unknown option. The help texts are the sim's own."""
from simcommon import FlexibleArgumentParser

BACKENDS = ["tgi", "vllm", "lmdeploy", "deepspeed-mii", "openai",
            "openai-chat", "tensorrt-llm", "scalellm", "sglang"]


def _options(p):
    add = p.add_argument
    add("--backend", type=str, default="vllm", choices=BACKENDS)
    add("--base-url", type=str, default=None)
    add("--host", type=str, default="127.0.0.1")
    add("--port", type=int, default=8000)
    add("--endpoint", type=str, default="/v1/completions")
    add("--dataset-name", type=str, default="sharegpt", choices=["random"])
    add("--dataset-path", type=str, default=None)
    add("--max-concurrency", type=int, default=None)
    add("--model", type=str, required=True)
    add("--tokenizer", type=str)
    add("--best-of", type=int, default=1)
    add("--use-beam-search", action="store_true")
    add("--num-prompts", type=int, default=1000)
    add("--logprobs", type=int, default=None)
    add("--request-rate", type=float, default=float("inf"))
    add("--burstiness", type=float, default=1.0)
    add("--seed", type=int, default=0)
    add("--trust-remote-code", action="store_true")
    add("--disable-tqdm", action="store_true")
    add("--profile", action="store_true",
        help="POST /start_profile after the warm-ups, /stop_profile after "
             "the last request")
    add("--save-result", action="store_true")
    add("--save-detailed", action="store_true", default=False)
    add("--metadata", metavar="KEY=VALUE", nargs="*")
    add("--result-dir", type=str, default=None)
    add("--result-filename", type=str, default=None)
    add("--ignore-eos", action="store_true")
    add("--percentile-metrics", type=str, default="ttft,tpot,itl")
    add("--metric-percentiles", type=str, default="99")
    add("--goodput", nargs="+", required=False)


def _groups(p):
    sonnet = p.add_argument_group("sonnet dataset options")
    sonnet.add_argument("--sonnet-input-len", type=int, default=550)
    sonnet.add_argument("--sonnet-output-len", type=int, default=150)
    sonnet.add_argument("--sonnet-prefix-len", type=int, default=200)
    sharegpt = p.add_argument_group("sharegpt dataset options")
    sharegpt.add_argument("--sharegpt-output-len", type=int, default=None)
    rnd = p.add_argument_group("random dataset options")
    rnd.add_argument("--random-input-len", type=int, default=1024)
    rnd.add_argument("--random-output-len", type=int, default=128)
    rnd.add_argument("--random-range-ratio", type=float, default=1.0)
    rnd.add_argument("--random-prefix-len", type=int, default=0)
    rnd.add_argument("--use-chat-template", action="store_true")
    hf = p.add_argument_group("hf dataset options")
    hf.add_argument("--hf-subset", type=str, default=None)
    hf.add_argument("--hf-split", type=str, default=None)
    hf.add_argument("--hf-output-len", type=int, default=None)
    p.add_argument("--tokenizer-mode", type=str, default="auto",
                   choices=["auto", "slow", "mistral", "custom"])
    p.add_argument("--served-model-name", type=str, default=None)
    p.add_argument("--lora-modules", nargs="+", default=None)
    p.add_argument("--num-warmups", type=int, default=1)


def parse_args(argv):
    p = FlexibleArgumentParser(
        prog="benchmark_serving.py",
        description="Benchmark the online serving throughput (sim).")
    _options(p)
    _groups(p)
    return p.parse_args(argv)
