"""The command line of ATOM's server, as ATOM `ffdf3bb5` declares it:
EngineArgs.add_cli_args (atom/model_engine/arg_utils.py) then the API
server's own options (atom/entrypoints/openai/api_server.py main), in the
same order, with the same option strings, types, choices and nargs, so
that argparse accepts, refuses and words its errors as ATOM's does:
unknown words and bad values exit 2 with 'usage: ...' and
'openai_server.py: error: ...'. The help texts are the sim's own.

Then the checks ATOM makes while it builds the engine (arg_utils
_get_engine_kwargs, config.Config.__post_init__, llm_engine.LLMEngine,
engine_core_mgr.CoreManager): they raise, and the server dies with a
traceback and exit status 1, as ATOM's does.
"""
import argparse
import ast
import json
import os

from simcommon import FlexibleArgumentParser

PROG = "openai_server.py"   # argparse's prog under python -m
DP_LB = ["round_robin", "least_requests", "least_tokens"]
CUDAGRAPH_MODES = ["NONE", "PIECEWISE", "FULL", "FULL_AND_PIECEWISE",
                   "AF_PIECEWISE"]
# Keys of the JSON configs ATOM turns into dataclasses (config.py
# DSparkConfig, EPLBConfig, DCPConfig): any other key raises.
JSON_CONFIG_KEYS = {
    "dspark_config": ("--dspark-config", (
        "confidence_schedule", "disable_sps_calib", "q_buckets", "ragged",
        "ragged_graph_sizes")),
    "eplb_config": ("--eplb-config", (
        "load_window_size", "num_redundant_experts", "p2p_batch_chunk_size",
        "placement_policy", "rebalance_balancedness_agg",
        "rebalance_interval", "rebalance_layers_per_chunk",
        "rebalance_min_balancedness")),
    "dcp_config": ("--dcp-config", ("interleave_size",)),
}


def _engine_options(p):
    """EngineArgs.add_cli_args, option by option in ATOM's order."""
    add = p.add_argument
    add("--model", type=str, default="Qwen/Qwen3-0.6B",
        help="model folder or hub id")
    add("--served-model-name", type=str, default=None,
        help="name the API reports (default: --model)")
    add("--trust-remote-code", action="store_true")
    for names, what in ((("--tensor-parallel-size", "-tp"), "tensor"),
                        (("--pipeline-parallel-size", "-pp"), "pipeline"),
                        (("--prefill-context-parallel-size", "-pcp"),
                         "prefill context"),
                        (("--data-parallel-size", "-dp"), "data"),
                        (("--decode-context-parallel-size", "-dcp"),
                         "decode context")):
        add(*names, type=int, default=1, help=what + " parallel size")
    add("--enforce-eager", action="store_true")
    add("--enable_prefix_caching", action=argparse.BooleanOptionalAction,
        default=True)
    add("--port", type=int, default=8006, help="engine internal port")
    add("--kv_cache_dtype", choices=["bf16", "fp8"], type=str,
        default="bf16")
    add("--index-cache-dtype", "--index_cache_dtype",
        choices=["bf16", "fp8", "fp4"], type=str, default=None)
    add("--block-size", type=int, default=16)
    add("--max-model-len", type=int, default=None)
    add("--cudagraph-capture-sizes", type=str,
        default="[1,2,4,8,16,32,48,64,128,256,512]")
    add("--level", type=int, default=3)
    add("--cudagraph-mode", type=str, default="FULL",
        choices=CUDAGRAPH_MODES)
    add("--load_dummy", nargs="?", const="empty", default=None,
        choices=["empty", "zero", "xavier"])
    add("--enable-expert-parallel", action="store_true")
    add("--fake-eplb", action="store_true")
    add("--torch-profiler-dir", type=str, default=None)
    add("--enable-dp-attention", action="store_true")
    add("--dp-load-balance", type=str, default="least_requests",
        choices=DP_LB)
    add("--enable-tbo", nargs="?", const="prefill", default=None,
        choices=["prefill", "all"])
    add("--all2all-backend", nargs="?", const="high-throughput",
        default=None, choices=["high-throughput", "low-latency"])
    add("--moe-backend", type=str, default="standard",
        choices=["standard", "mega"])
    add("--method", type=str, default=None,
        choices=["mtp", "eagle3", "dspark"])
    _engine_options_2(p)


def _engine_options_2(p):
    add = p.add_argument
    add("--num-speculative-tokens", type=int, default=1)
    add("--draft-model", type=str, default=None)
    add("--spec-decode-acceptance-length", type=float, default=None)
    add("--spec-decode-acceptance-rate", type=float, default=None)
    add("--max-num-batched-tokens", type=int, default=16384)
    add("--long-prefill-token-threshold", type=int, default=0)
    add("--attn-prefill-chunk-size", type=int, default=16384)
    add("--state-checkpoint-interval-tokens", type=int, default=8192)
    add("--enable_chunked_prefill", action=argparse.BooleanOptionalAction,
        default=True)
    add("--max-num-seqs", type=int, default=512)
    add("--gpu-memory-utilization", type=float, default=0.9)
    add("--kv-transfer-config", type=str, default="{}")
    add("--scheduler-delay-factor", type=float, default=0.0)
    add("--mark-trace", action="store_true")
    add("--enable-rapidserve", action="store_true")
    add("--disagg-prefill-max-num-seqs", type=int, default=None)
    add("--disagg-constrained", action="store_true")
    # type=json.loads itself: argparse then words a bad value as ATOM's
    # does, "invalid loads value: '...'".
    add("--online_quant_config", type=json.loads, default=None)
    add("--hf-overrides", type=json.loads, default=None)
    add("--dspark-config", type=json.loads, default=None)
    dcp = p.add_argument_group("DCP options")
    dcp.add_argument("--dcp-config", type=json.loads, default=None)
    eplb = p.add_argument_group("EPLB options")
    eplb.add_argument("--eplb-enable", "--enable-eplb", action="store_true")
    eplb.add_argument("--eplb-config", type=json.loads, default=None)


def _server_options(p):
    """The API server's own options, after the engine's."""
    add = p.add_argument
    add("--host", type=str, default="0.0.0.0")
    add("--server-port", type=int, default=8000)
    add("--timeout-keep-alive", type=int, default=5)
    add("--disable-uvicorn-access-log", action="store_true")
    add("--chat-template", type=str, default=None)
    add("--default-chat-template-kwargs", type=str, default=None)
    add("--request-log", type=str, default=None)


def parser():
    p = FlexibleArgumentParser(prog=PROG,
                               description="ATOM OpenAI API Server (sim)")
    _engine_options(p)
    _server_options(p)
    return p


def parse(argv):
    """The parsed namespace; argparse's exit 2 on any unknown word, bad
    choice, bad number or bad JSON."""
    return parser().parse_args(argv)


# ---- the checks made while the engine is built ----

def check_json_configs(args):
    """DSparkConfig/EPLBConfig/DCPConfig.from_dict: unknown keys raise
    ValueError; a JSON value that is no object fails in set()."""
    for dest, (flag, keys) in JSON_CONFIG_KEYS.items():
        cfg = getattr(args, dest) or {}
        unknown = set(cfg) - set(keys)
        if unknown:
            raise ValueError("Unknown %s key(s): %s. Supported keys: %s"
                             % (flag, sorted(unknown), sorted(keys)))
    for dest in ("online_quant_config", "hf_overrides"):
        value = getattr(args, dest)
        if value is not None and not isinstance(value, dict):
            raise TypeError("%s must be a JSON object, got %s"
                            % (dest, type(value).__name__))


def check_speculative(args):
    if args.method and args.num_speculative_tokens > 0:
        if args.method == "eagle3" and not args.draft_model:
            raise ValueError("--draft-model is required when --method "
                             "eagle3.")
        if args.draft_model and args.method == "mtp":
            raise ValueError("--draft-model is not supported with --method "
                             "mtp: the MTP draft is loaded from the target "
                             "checkpoint.")
        check_draft_model(args.draft_model)
        # DSpark's ceiling comes from the draft checkpoint: not checked.
        n = args.num_speculative_tokens
        if args.method != "dspark" and n > 4:
            raise ValueError("num_speculative_tokens must be between 1 and "
                             "4, got %d." % n)


def check_draft_model(draft):
    """SpeculativeConfig reads the draft's config (config.py:1150,
    get_hf_config: PretrainedConfig.get_config_dict): a folder, else a
    Hugging Face id that transformers downloads, which the sim never can
    (as ATOM offline)."""
    if not draft or os.path.isdir(draft):
        return
    if draft.startswith(("/", ".")):
        raise OSError("Incorrect path_or_model_id: '%s'. Please provide "
                      "either the path to a local folder or the repo_id of "
                      "a model on the Hub." % draft)
    raise OSError("We couldn't connect to 'https://huggingface.co' to load "
                  "this file, couldn't find it in the cached files and it "
                  "looks like %s is not the path to a directory containing "
                  "a file named config.json.\nCheckout your internet "
                  "connection or see how to run the library in offline mode "
                  "at 'https://huggingface.co/docs/transformers/"
                  "installation#offline-mode'." % draft)


def check_parallel(args):
    """Config.__post_init__, LLMEngine and CoreManager."""
    if args.moe_backend == "mega" and not args.enable_expert_parallel:
        raise ValueError("moe_backend='mega' requires expert parallelism; "
                         "pass --enable-expert-parallel.")
    assert 1 <= args.tensor_parallel_size <= 8
    dcp = args.decode_context_parallel_size
    if dcp > 1:
        assert args.tensor_parallel_size % dcp == 0, (
            "tp_size (%d) must be divisible by dcp_size (%d)"
            % (args.tensor_parallel_size, dcp))
    assert 1 <= args.pipeline_parallel_size
    if args.enable_dp_attention and args.pipeline_parallel_size > 1:
        raise ValueError("--enable-dp-attention and pipeline-parallel "
                         "(pp>1) cannot be used together.")
    if args.prefill_context_parallel_size > 1 and args.enable_dp_attention:
        raise ValueError("prefill_context_parallel_size > 1 (-pcp) combined "
                         "with --enable-dp-attention is not supported yet")
    if not args.enable_dp_attention:
        assert not (args.pipeline_parallel_size > 1 and
                    args.data_parallel_size > 1), (
            "Pipeline parallel combined with data parallel is not "
            "supported yet.")
    for name in ("tensor_parallel_size", "pipeline_parallel_size",
                 "prefill_context_parallel_size", "data_parallel_size"):
        assert getattr(args, name) >= 1, "%s must be >= 1" % name


def check_engine_args(args):
    """Raises where ATOM's engine construction raises."""
    try:
        ast.literal_eval(args.cudagraph_capture_sizes)
    except (ValueError, SyntaxError) as e:
        raise ValueError("Error parsing size list: %s"
                         % args.cudagraph_capture_sizes) from e
    check_speculative(args)
    check_json_configs(args)
    check_parallel(args)
    try:
        json.loads(args.kv_transfer_config)
    except json.JSONDecodeError:
        ast.literal_eval(args.kv_transfer_config)
    if args.torch_profiler_dir is not None:
        os.makedirs(args.torch_profiler_dir, exist_ok=True)
        assert os.path.isdir(args.torch_profiler_dir), (
            "torch_profiler_dir %s is not a valid directory"
            % args.torch_profiler_dir)


def needs_remote_code(model):
    """A local model folder whose config or tokenizer maps custom classes
    (auto_map): transformers refuses it without --trust-remote-code."""
    for name in ("config.json", "tokenizer_config.json"):
        try:
            with open(os.path.join(model, name)) as f:
                if "auto_map" in json.load(f):
                    return True
        except (OSError, ValueError, TypeError):
            continue
    return False
