#include "atom/options.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SW(n, both)          { n, both, TR_ARITY_NONE, TR_VAL_NONE, NULL, NULL }
#define VAL(n, both, kind)   { n, both, TR_ARITY_ONE, TR_VAL_##kind, NULL, NULL }
#define CHOICE(n, both, c)   { n, both, TR_ARITY_ONE, TR_VAL_CHOICE, c, NULL }
#define OPTCHOICE(n, c)      { n, true, TR_ARITY_OPTIONAL, TR_VAL_CHOICE, c, NULL }
#define MANY(n)              { n, true, TR_ARITY_MANY, TR_VAL_TEXT, NULL, NULL }
#define DENY(n, both, kind, why)                                               \
  { n, both, TR_ARITY_ONE, TR_VAL_##kind, NULL, why }

/* EngineArgs.add_cli_args (atom/model_engine/arg_utils.py:90-540), in its
 * order, then the API server's own (api_server.py:2014-2070). The two
 * BooleanOptionalAction options list their --no- forms: argparse derives
 * them from each spelling. */
static const struct tr_atom_opt server_opts[] = {
  DENY("--model", true, OWN, "traced passes the request's model"),
  VAL("--served-model-name", true, TEXT),
  { "--trust-remote-code", true, TR_ARITY_NONE, TR_VAL_TRUST, NULL, NULL },
  DENY("--tensor-parallel-size|-tp", true, OWN,
       "traced passes the capture's tp (the request's \"tp\")"),
  VAL("--pipeline-parallel-size|-pp", true, INT),
  VAL("--prefill-context-parallel-size|-pcp", true, INT),
  VAL("--data-parallel-size|-dp", true, INT),
  VAL("--decode-context-parallel-size|-dcp", true, INT),
  SW("--enforce-eager", true),
  SW("--enable_prefix_caching|--no-enable_prefix_caching|"
     "--enable-prefix-caching|--no-enable-prefix-caching",
     false),
  DENY("--port", true, ADDRESS, "it is the port the engine binds"),
  CHOICE("--kv_cache_dtype", true, "bf16|fp8"),
  CHOICE("--index-cache-dtype|--index_cache_dtype", true, "bf16|fp8|fp4"),
  VAL("--block-size", true, INT),
  VAL("--max-model-len", true, INT),
  VAL("--cudagraph-capture-sizes", true, TEXT),
  VAL("--level", true, INT),
  CHOICE("--cudagraph-mode", true,
         "NONE|PIECEWISE|FULL|FULL_AND_PIECEWISE|AF_PIECEWISE"),
  OPTCHOICE("--load_dummy", "empty|zero|xavier"),
  SW("--enable-expert-parallel", true),
  SW("--fake-eplb", true),
  DENY("--torch-profiler-dir", true, OWN,
       "traced gives each capture its own trace folder"),
  SW("--enable-dp-attention", true),
  CHOICE("--dp-load-balance", true, "round_robin|least_requests|least_tokens"),
  OPTCHOICE("--enable-tbo", "prefill|all"),
  OPTCHOICE("--all2all-backend", "high-throughput|low-latency"),
  CHOICE("--moe-backend", true, "standard|mega"),
  CHOICE("--method", true, "mtp|eagle3|dspark"),
  VAL("--num-speculative-tokens", true, INT),
  VAL("--draft-model", true, MODEL),
  VAL("--spec-decode-acceptance-length", true, FLOAT),
  VAL("--spec-decode-acceptance-rate", true, FLOAT),
  VAL("--max-num-batched-tokens", true, INT),
  VAL("--long-prefill-token-threshold", true, INT),
  VAL("--attn-prefill-chunk-size", true, INT),
  VAL("--state-checkpoint-interval-tokens", true, INT),
  SW("--enable_chunked_prefill|--no-enable_chunked_prefill|"
     "--enable-chunked-prefill|--no-enable-chunked-prefill",
     false),
  VAL("--max-num-seqs", true, INT),
  VAL("--gpu-memory-utilization", true, FLOAT),
  DENY("--kv-transfer-config", true, MULTINODE,
       "it couples this server with another one (prefill/decode "
       "disaggregation: addresses of other nodes)"),
  VAL("--scheduler-delay-factor", true, FLOAT),
  { "--mark-trace", true, TR_ARITY_NONE, TR_VAL_OWN, NULL,
    "ask for it with \"mark_trace\": true (its capture traces are then "
    "read)" },
  SW("--enable-rapidserve", true),
  VAL("--disagg-prefill-max-num-seqs", true, INT),
  SW("--disagg-constrained", true),
  VAL("--online_quant_config", true, JSON),
  VAL("--hf-overrides", true, JSON),
  VAL("--dspark-config", true, JSON),
  VAL("--dcp-config", false, JSON),
  SW("--eplb-enable|--enable-eplb", false),
  VAL("--eplb-config", false, JSON),
  DENY("--host", true, ADDRESS, "it is the address the server binds"),
  DENY("--server-port", true, OWN, "traced's atom_port is where it polls"),
  VAL("--timeout-keep-alive", true, INT),
  SW("--disable-uvicorn-access-log", true),
  VAL("--chat-template", true, TEMPLATE),
  VAL("--default-chat-template-kwargs", true, JSON),
  VAL("--request-log", true, PATH),
};

/* benchmark_serving.py:983-1295. The dataset groups' options (sonnet,
 * sharegpt, random, hf) go through argparse's own add_argument: one
 * spelling. --trust-remote-code is a plain switch here: run_benchmark.sh
 * passes it on every run already (scripts/run_benchmark.sh:84). */
static const struct tr_atom_opt bench_opts[] = {
  CHOICE("--backend", true,
         "tgi|vllm|lmdeploy|deepspeed-mii|openai|openai-chat|tensorrt-llm|"
         "scalellm|sglang"),
  DENY("--base-url", true, ADDRESS, "it names the address the bench sends to"),
  DENY("--host", true, ADDRESS, "it names the host the bench sends to"),
  DENY("--port", true, ADDRESS, "it names the port the bench sends to"),
  /* Appended to the base URL (benchmark_serving.py:1135): a free value
   * such as "@host:port/..." would make any host the target. */
  CHOICE("--endpoint", true,
         "/v1/completions|/v1/chat/completions|/generate_stream"),
  CHOICE("--dataset-name", true, "random"),
  VAL("--dataset-path", true, PATH),
  DENY("--max-concurrency", true, OWN, "traced passes the request's conc"),
  DENY("--model", true, OWN, "traced passes the request's model"),
  VAL("--tokenizer", true, MODEL),
  VAL("--best-of", true, INT),
  SW("--use-beam-search", true),
  DENY("--num-prompts", true, OWN,
       "traced passes conc x the request's prompt_multiplier"),
  VAL("--logprobs", true, INT),
  VAL("--request-rate", true, FLOAT),
  VAL("--burstiness", true, FLOAT),
  VAL("--seed", true, INT),
  SW("--trust-remote-code", true),
  SW("--disable-tqdm", true),
  DENY("--profile", true, OWN, "traced's profile_control decides"),
  SW("--save-result", true),
  SW("--save-detailed", true),
  MANY("--metadata"),
  DENY("--result-dir", true, OWN,
       "traced reads the bench's result from bench_result"),
  DENY("--result-filename", true, OWN,
       "traced reads the bench's result from bench_result"),
  SW("--ignore-eos", true),
  VAL("--percentile-metrics", true, TEXT),
  VAL("--metric-percentiles", true, TEXT),
  MANY("--goodput"),
  VAL("--sonnet-input-len", false, INT),
  VAL("--sonnet-output-len", false, INT),
  VAL("--sonnet-prefix-len", false, INT),
  VAL("--sharegpt-output-len", false, INT),
  DENY("--random-input-len", false, OWN, "traced passes the request's isl"),
  DENY("--random-output-len", false, OWN, "traced passes the request's osl"),
  VAL("--random-range-ratio", false, FLOAT),
  VAL("--random-prefix-len", false, INT),
  SW("--use-chat-template", false),
  VAL("--hf-subset", false, TEXT),
  VAL("--hf-split", false, TEXT),
  VAL("--hf-output-len", false, INT),
  CHOICE("--tokenizer-mode", true, "auto|slow|mistral|custom"),
  VAL("--served-model-name", true, TEXT),
  MANY("--lora-modules"),
  VAL("--num-warmups", true, INT),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* True when name (n bytes) is one of the '|'-separated words of list,
 * or, with both, equals one of them with '-' and '_' swapped as
 * FlexibleArgumentParser adds them (each long name's all-dash and
 * all-underscore forms). */
static bool in_list(const char *list, const char *name, size_t n, bool both)
{
  const char *p = list;

  while (*p != '\0') {
    size_t len = strcspn(p, "|");
    bool eq = len == n && memcmp(p, name, n) == 0;

    if (!eq && both && len == n && n > 2 && p[0] == '-' && p[1] == '-') {
      bool dash = true, under = true;

      for (size_t i = 2; i < n; i++) {
        char want = p[i] == '_' ? '-' : p[i];
        char alt = p[i] == '-' ? '_' : p[i];

        dash = dash && name[i] == want;
        under = under && name[i] == alt;
      }
      eq = (dash || under) && memcmp(name, "--", 2) == 0;
    }
    if (eq)
      return true;
    p += len;
    if (*p == '|')
      p++;
  }
  return false;
}

const struct tr_atom_opt *tr_atom_opt_find(enum tr_atom_prog prog,
                                           const char *word)
{
  const struct tr_atom_opt *t = prog == TR_ATOM_SERVER ? server_opts
                                                       : bench_opts;
  size_t n = prog == TR_ATOM_SERVER ? N(server_opts) : N(bench_opts);
  size_t len = strcspn(word, "=");

  if (word[0] != '-')
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (in_list(t[i].names, word, len, t[i].both))
      return &t[i];
  return NULL;
}

const char *tr_atom_opt_name(const struct tr_atom_opt *o, char *buf,
                             size_t size)
{
  snprintf(buf, size, "%.*s", (int)strcspn(o->names, "|"), o->names);
  return buf;
}

bool tr_atom_is_option(const char *word)
{
  char *end;

  if (word[0] != '-' || word[1] == '\0')
    return false;
  /* argparse: a word that looks like a negative number is a value while
   * the parser has no option that does (ATOM's have none). */
  strtod(word, &end);
  return *end != '\0' || !(isdigit((unsigned char)word[1]) || word[1] == '.');
}

bool tr_atom_opt_choice(const struct tr_atom_opt *o, const char *value)
{
  return o->choices != NULL &&
         in_list(o->choices, value, strlen(value), false);
}

/* The value of argv[*i] when it is option o: "--x=v" or "--x v"; advances
 * *i past the value word. NULL when o takes none or it is missing. */
static const char *value_at(const struct tr_atom_opt *o, char *const *argv,
                            size_t *i)
{
  const char *eq = strchr(argv[*i], '=');

  if (eq != NULL)
    return eq + 1;
  if (o->arity == TR_ARITY_NONE || argv[*i + 1] == NULL ||
      tr_atom_is_option(argv[*i + 1]))
    return NULL;
  return argv[++*i];
}

const char *tr_atom_opt_last(enum tr_atom_prog prog, char *const *argv,
                             const char *canonical)
{
  const struct tr_atom_opt *want = tr_atom_opt_find(prog, canonical);
  const char *v = NULL;

  for (size_t i = 0; want != NULL && argv != NULL && argv[i] != NULL; i++) {
    const struct tr_atom_opt *o = tr_atom_is_option(argv[i])
                                      ? tr_atom_opt_find(prog, argv[i])
                                      : NULL;
    const char *val;

    if (o == NULL)
      continue;
    val = value_at(o, argv, &i);
    if (o == want)
      v = val;
  }
  return v;
}

bool tr_atom_opt_given(enum tr_atom_prog prog, char *const *argv,
                       const char *canonical)
{
  const struct tr_atom_opt *want = tr_atom_opt_find(prog, canonical);

  for (size_t i = 0; want != NULL && argv != NULL && argv[i] != NULL; i++)
    if (tr_atom_is_option(argv[i]) && tr_atom_opt_find(prog, argv[i]) == want)
      return true;
  return false;
}
