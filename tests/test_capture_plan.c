/*
 * atom/plan.c and atom/preset.c: the argv traced gives ATOM's scripts.
 * Presets from a models.json shaped like ATOM CI's (tests/data/
 * atom_models.json): the preset's TP when the request has none, its
 * trust_remote_code and shell-text extra_args (a quoted JSON value), the
 * variants and their checkpoint, bench args and env; words made to survive
 * the start script's re-splitting; the chat template found without a
 * preset; FIFOs and giant files in a model folder refused, not waited on.
 * What traced foresees of a launch (atom/launch.c): DeepSeek-V4's --level
 * 0 (by its preset, by its config.json, never over a request's --level or
 * a piecewise CUDA-graph mode); a preset's --draft-model hub id launched
 * from the folder beside the model, or refused naming it; the bench
 * backends that can start the profiler; the GPUs a launch takes; and the
 * pkill patterns of a script in the forms ATOM's scripts write them.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/lifecycle.h"
#include "atom/launch.h"
#include "atom/preset.h"
#include "atom/plan.h"
#include "atom/scripts.h"

static char root[64];
static struct cfg cfg;

static void setup(void)
{
  struct tr_err err = { 0 };
  char models[512];

  snprintf(root, sizeof(root), "/tmp/test_capture_plan.XXXXXX");
  CHECK(mkdtemp(root) != NULL);
  cfg_defaults(&cfg);
  CHECK_INT(cfg_set(&cfg, "atom_scripts", "/atom/scripts", &err), 0);
  snprintf(models, sizeof(models), "%s/tests/data/atom_models.json",
           getenv("SRC_DIR") ? getenv("SRC_DIR") : ".");
  CHECK_INT(cfg_set(&cfg, "models_json", models, &err), 0);
  CHECK_INT(cfg_set(&cfg, "atom_port", "8123", &err), 0);
  snprintf(models, sizeof(models), "/data:/models:%s", root);
  CHECK_INT(cfg_set(&cfg, "model_roots", models, &err), 0);
  snprintf(models, sizeof(models), "%s/logs_claude/atom_server.log", root);
  CHECK_INT(cfg_set(&cfg, "server_log", models, &err), 0);
  snprintf(models, sizeof(models), "%s/results/benchmark.json", root);
  CHECK_INT(cfg_set(&cfg, "bench_result", models, &err), 0);
  CHECK_INT(cfg_finish(&cfg, &err), 0);
}

static int n_plans;

/* Builds the plan of the request body (JSON text) in fresh folders. */
static int build(const char *body, struct cap_plan **out, struct tr_err *err)
{
  char trace[128], log[128], work[128];
  struct cap_dirs dirs = { trace, log, work, false, 0 };
  json_t *params = json_loads(body, 0, NULL);
  int rc;

  CHECK(params != NULL);
  n_plans++;
  snprintf(trace, sizeof(trace), "%s/traces/%d", root, n_plans);
  snprintf(log, sizeof(log), "%s/logs/%d", root, n_plans);
  snprintf(work, sizeof(work), "%s/logs/%d/work", root, n_plans);
  tr_err_clear(err);
  rc = atom_plan_build(&cfg, params, &dirs, out, err);
  json_decref(params);
  return rc;
}

/* The words after the script (the scripts of the test are not
 * executable: traced runs them with /bin/bash, as the skill does). */
static char *const *args_of(char *const *argv)
{
  return argv + (strcmp(argv[0], "/bin/bash") == 0 ? 2 : 1);
}

/* The script's words from index from on, joined by single blanks. */
static char *join(char *const *argv, size_t from)
{
  argv = args_of(argv);
  size_t n = 1;
  char *out;

  for (size_t i = from; argv[i] != NULL; i++)
    n += strlen(argv[i]) + 1;
  out = calloc(1, n);
  for (size_t i = from; argv[i] != NULL; i++) {
    if (i > from)
      strcat(out, " ");
    strcat(out, argv[i]);
  }
  return out;
}

static bool has_env(const struct cap_plan *p, const char *kv)
{
  for (char *const *e = p->start_env; *e != NULL; e++)
    if (strcmp(*e, kv) == 0)
      return true;
  return false;
}

static const char *extra_str(const struct cap_plan *p, const char *obj,
                             const char *key)
{
  return json_string_value(
      json_object_get(json_object_get(p->extra, obj), key));
}

/* A JSON word comes out compact, with no blank and no glob character left
 * in its strings, and decodes to the same document. */
static void plan_words_for_shell(void)
{
  const char *in = "{\"a\": \"x y\", \"b\": [\"*.gate\", \"[0-9]?\", 1],"
                   " \"c\": \"q\\\"uote\"}";
  char *out = cap_word_for_shell(in);
  json_t *a = json_loads(in, 0, NULL), *b = json_loads(out, 0, NULL);

  CHECK_STR(out, "{\"a\":\"x\\u0020y\",\"b\":[\"\\u002a.gate\",\"\\u005b0-"
                 "9\\u005d\\u003f\",1],\"c\":\"q\\\"uote\"}");
  CHECK(strpbrk(out, " \t\n") == NULL);
  CHECK(b != NULL && json_equal(a, b));
  json_decref(a);
  json_decref(b);
  free(out);
  out = cap_word_for_shell("--not-json");
  CHECK_STR(out, "--not-json");
  free(out);
  out = cap_word_for_shell("{broken");
  CHECK_STR(out, "{broken");
  free(out);
}

static void preset_shell_words(void)
{
  struct tr_err err = { 0 };
  char **w = tr_shell_words("--a '{\"x\": 1}'  \"b c\\\"\" d\\ e '' \"\"",
                            "extra_args", &err);

  CHECK(w != NULL);
  CHECK_STR(w[0], "--a");
  CHECK_STR(w[1], "{\"x\": 1}");
  CHECK_STR(w[2], "b c\"");
  CHECK_STR(w[3], "d e");
  CHECK_STR(w[4], "");
  CHECK_STR(w[5], "");
  CHECK(w[6] == NULL);
  tr_words_free(w);
  CHECK(tr_shell_words("--a '{\"x\"", "extra_args", &err) == NULL);
  CHECK_STR(err.field, "extra_args");
  CHECK(strstr(err.msg, "unbalanced") != NULL);
}

/* GLM-5.2-FP8 without a tp: the preset's 4, its env, its kv_cache_dtype as
 * KV_CACHE_DTYPE, its quoted JSON option as one compact word. */
static void plan_preset_glm(void)
{
  struct cap_plan *p = NULL;
  struct tr_err err;
  char *args;

  CHECK_INT(build("{\"model\":\"/data/GLM-5.2-FP8\",\"isl\":128,\"osl\":32,"
                  "\"conc\":4,\"prompt_multiplier\":1,\"more\":false}",
                  &p, &err),
            0);
  CHECK_STR(args_of(p->start_argv)[0], "/data/GLM-5.2-FP8");
  CHECK_STR(args_of(p->start_argv)[1], "4");
  CHECK_STR(args_of(p->start_argv)[2], "8123");
  CHECK_STR(args_of(p->start_argv)[3], "--torch-profiler-dir");
  args = join(p->start_argv, 5);
  CHECK_STR(args, "--no-enable_prefix_caching --online_quant_config "
                  "{\"global_quant_config\":\"ptpc_fp8\",\"layer_quant_config"
                  "\":{\"model.layers.\\u002a.mlp.experts\":\"mxfp8\"},"
                  "\"exclude_layer\":[\"lm_head\",\"model.embed_tokens\","
                  "\"\\u002a.mlp.gate\"]}");
  free(args);
  CHECK(has_env(p, "AITER_QUICK_REDUCE_QUANTIZATION=INT4"));
  CHECK(has_env(p, "KV_CACHE_DTYPE=fp8"));
  CHECK(has_env(p, "ATOM_PROFILER_MORE=0"));
  /* conc 4: the start script's default 256, said in the plan. */
  CHECK(has_env(p, "MAX_NUM_SEQS=256"));
  CHECK_INT(p->tp, 4);
  CHECK_STR(extra_str(p, "launch", "tp_source"), "preset");
  CHECK_STR(extra_str(p, "preset", "match"), "zai-org/GLM-5.2-FP8");
  /* The base variant has no bench_args: no --use-chat-template. */
  args = join(p->bench_argv, 0);
  CHECK_STR(args, "/data/GLM-5.2-FP8 8123 128 32 4 1 1");
  free(args);
  CHECK(p->warmup_argv == NULL);
  atom_plan_free(p);
}

/* The MTP3 variant adds its server flags and its bench's chat template;
 * the request's tp and server_args win over the preset's. */
static void plan_variant_and_overrides(void)
{
  struct cap_plan *p = NULL;
  struct tr_err err;
  char *args;

  CHECK_INT(build("{\"model\":\"/data/GLM-5.2-FP8\",\"tp\":8,\"variant\":"
                  "\"MTP3\",\"server_args\":[\"--online-quant-config\","
                  "\"{\\\"global_quant_config\\\": \\\"fp8\\\"}\"],"
                  "\"conc\":4}",
                  &p, &err),
            0);
  CHECK_STR(args_of(p->start_argv)[1], "8");
  CHECK_STR(extra_str(p, "launch", "tp_source"), "request");
  args = join(p->start_argv, 5);
  CHECK_STR(args, "--no-enable_prefix_caching --method mtp "
                  "--num-speculative-tokens 3 --online-quant-config "
                  "{\"global_quant_config\":\"fp8\"}");
  free(args);
  CHECK_STR(args_of(p->bench_argv)[7], "--use-chat-template");
  CHECK(json_is_true(json_object_get(p->extra, "use_chat_template")));
  CHECK_STR(extra_str(p, "preset", "variant"), "MTP3");
  atom_plan_free(p);

  /* A variant that does not exist names those that do. */
  CHECK_INT(build("{\"model\":\"/data/GLM-5.2-FP8\",\"variant\":\"EAGLE9\"}",
                  &p, &err),
            TR_EINVAL);
  CHECK_STR(err.field, "variant");
  CHECK(strstr(err.msg, "\"\", \"MTP3\"") != NULL);
}

/* Kimi: trust_remote_code becomes --trust-remote-code, first. */
static void plan_trust_remote_code(void)
{
  struct cap_plan *p = NULL;
  struct tr_err err;

  CHECK_INT(build("{\"model\":\"/models/Kimi-K2.7-Code-MXFP4/\"}", &p, &err),
            0);
  CHECK_STR(args_of(p->start_argv)[5], "--trust-remote-code");
  CHECK_STR(args_of(p->start_argv)[6], "--gpu-memory-utilization");
  CHECK_INT(p->tp, 4);
  atom_plan_free(p);
}

/* A variant with its own checkpoint launches that one, from beside the
 * model asked for; an entry without tp and no request tp: 8. */
static void plan_variant_path_and_default_tp(void)
{
  struct cap_plan *p = NULL;
  struct tr_err err;

  CHECK_INT(build("{\"model\":\"/data/DeepSeek-V4-Pro\",\"variant\":"
                  "\"DPA DSpark\"}",
                  &p, &err),
            0);
  CHECK_STR(args_of(p->start_argv)[0], "/data/DeepSeek-V4-Pro-DSpark");
  CHECK_STR(p->model, "/data/DeepSeek-V4-Pro-DSpark");
  CHECK_INT(p->tp, 8);
  atom_plan_free(p);
  /* A preset without config.tp runs at ATOM's own default, as ATOM CI
   * runs it; a model without a preset at the seed's 8. */
  CHECK_INT(build("{\"model\":\"/data/gpt-oss-120b\"}", &p, &err), 0);
  CHECK_INT(p->tp, 1);
  CHECK_STR(extra_str(p, "launch", "tp_source"), "atom_default");
  atom_plan_free(p);
  CHECK_INT(build("{\"model\":\"/data/No-Preset\"}", &p, &err), 0);
  CHECK_INT(p->tp, TR_DEFAULT_TP);
  CHECK_STR(extra_str(p, "launch", "tp_source"), "default");
  CHECK(json_is_false(
      json_object_get(json_object_get(p->extra, "preset"), "applied")));
  atom_plan_free(p);
}

/* Ranks asked for: tp x dp x pp x pcp, in any spelling. */
static void plan_ranks_from_argv(void)
{
  struct cap_plan *p = NULL;
  struct tr_err err;

  CHECK_INT(build("{\"model\":\"/data/M\",\"tp\":2,\"server_args\":[\"-pcp\","
                  "\"2\",\"--pipeline_parallel_size=3\"]}",
                  &p, &err),
            0);
  CHECK_INT(p->ranks_argv, 12);
  CHECK_INT(p->pp_pcp, 6);
  atom_plan_free(p);
}

/* A word with blanks that is not JSON cannot reach ATOM's server, nor one
 * the shell would expand as a pattern (judged again when the capture
 * starts); a JSON value keeps its arrays. */
static void plan_refuses_split_words(void)
{
  static const char *const bad[][2] = {
    { "two words", "a blank" }, { "m[12]", "glob character" },
    { "m?", "glob character" }, { "m*", "glob character" },
    { "a\\\\b", "backslash" },
  };
  struct cap_plan *p = NULL;
  struct tr_err err;
  char body[256];

  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    snprintf(body, sizeof(body),
             "{\"model\":\"/data/M\",\"server_args\":["
             "\"--served-model-name\",\"%s\"]}",
             bad[i][0]);
    CHECK_INT(build(body, &p, &err), TR_EINVAL);
    CHECK_STR(err.field, "server_args[1]");
    CHECK(strstr(err.msg, bad[i][1]) != NULL);
  }
  CHECK_INT(build("{\"model\":\"/data/M\",\"server_args\":["
                  "\"--hf-overrides\",\"[1,{\\\"a\\\":\\\"x*\\\"}]\"]}",
                  &p, &err),
            0);
  CHECK_STR(args_of(p->start_argv)[6], "[1,{\"a\":\"x\\u002a\"}]");
  atom_plan_free(p);
}

/* profile_control daemon: a warm-up run of CONC*2 requests, then the
 * profiled run without warm-ups and without --profile. */
static void plan_daemon_runs(void)
{
  struct cap_plan *p = NULL;
  struct tr_err err = { 0 };
  char *args;

  CHECK_INT(cfg_set(&cfg, "profile_control", "daemon", &err), 0);
  CHECK_INT(build("{\"model\":\"/data/M\",\"tp\":1,\"conc\":8,\"isl\":1,"
                  "\"osl\":2,\"prompt_multiplier\":3}",
                  &p, &err),
            0);
  args = join(p->warmup_argv, 0);
  CHECK_STR(args, "/data/M 8123 1 2 8 2 0 --num-warmups 0 --seed 1");
  free(args);
  args = join(p->bench_argv, 0);
  CHECK_STR(args, "/data/M 8123 1 2 8 3 0 --num-warmups 0");
  free(args);
  atom_plan_free(p);
  CHECK_INT(cfg_set(&cfg, "profile_control", "bench", &err), 0);
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");

  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* Without a preset, the model's own template decides --use-chat-template;
 * a FIFO or a giant tokenizer_config.json is refused at once. */
static void plan_chat_template(void)
{
  char model[128], file[192], body[256];
  struct cap_plan *p = NULL;
  struct tr_err err;
  int fd;

  snprintf(model, sizeof(model), "%s/Plain-Model", root);
  CHECK_INT(mkdir(model, 0755), 0);
  snprintf(file, sizeof(file), "%s/tokenizer_config.json", model);
  write_file(file, "{\"chat_template\": null}");
  snprintf(body, sizeof(body), "{\"model\":\"%s\",\"tp\":1}", model);
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(json_is_false(json_object_get(p->extra, "use_chat_template")));
  atom_plan_free(p);
  snprintf(file, sizeof(file), "%s/chat_template.jinja", model);
  write_file(file, "{{ messages }}");
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(json_is_true(json_object_get(p->extra, "use_chat_template")));
  CHECK_STR(
      json_string_value(json_object_get(p->extra, "chat_template_source")),
      "the model's chat_template.jinja");
  atom_plan_free(p);
  unlink(file);
  snprintf(file, sizeof(file), "%s/tokenizer_config.json", model);
  unlink(file);
  CHECK_INT(mkfifo(file, 0644), 0);
  /* A FIFO, a file too big: the request's model is refused (400). */
  CHECK_INT(build(body, &p, &err), TR_EINVAL);
  CHECK_STR(err.field, "model");
  CHECK(strstr(err.msg, "not a regular file") != NULL);
  unlink(file);
  fd = open(file, O_WRONLY | O_CREAT, 0644);
  CHECK(fd >= 0 && ftruncate(fd, (off_t)9 << 20) == 0);
  close(fd);
  CHECK_INT(build(body, &p, &err), TR_EINVAL);
  CHECK(strstr(err.msg, "tokenizer_config.json") != NULL);
}

/* The folders ATOM writes to and never makes are made with the plan
 * (start_atom_server.sh's log, run_benchmark.sh's result), and said. */
static void plan_makes_atom_folders(void)
{
  struct cap_plan *p = NULL;
  struct tr_err err;
  struct stat st;
  char dir[128];
  json_t *made;

  snprintf(dir, sizeof(dir), "%s/logs_claude", root);
  rmdir(dir);
  snprintf(dir, sizeof(dir), "%s/results", root);
  rmdir(dir);
  CHECK_INT(build("{\"model\":\"/data/M\",\"tp\":1}", &p, &err), 0);
  made = json_object_get(p->extra, "atom_folders");
  CHECK_INT((int)json_array_size(made), 2);
  snprintf(dir, sizeof(dir), "%s/logs_claude", root);
  CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
  CHECK_STR(json_string_value(json_array_get(made, 0)), dir);
  snprintf(dir, sizeof(dir), "%s/results", root);
  CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
  atom_plan_free(p);
  CHECK_INT(build("{\"model\":\"/data/M\",\"tp\":1}", &p, &err), 0);
  CHECK_INT((int)json_array_size(json_object_get(p->extra, "atom_folders")),
            0);
  atom_plan_free(p);
}

/* Several encoding/encoding_*.py: ATOM refuses to choose and uses the
 * tokenizer's template; without one the bench would crash. */
static void plan_several_encoders(void)
{
  char model[128], file[192], body[256];
  struct cap_plan *p = NULL;
  struct tr_err err;

  snprintf(model, sizeof(model), "%s/Two-Encoders", root);
  CHECK_INT(mkdir(model, 0755), 0);
  snprintf(file, sizeof(file), "%s/encoding", model);
  CHECK_INT(mkdir(file, 0755), 0);
  snprintf(file, sizeof(file), "%s/encoding/encoding_a.py", model);
  write_file(file, "");
  snprintf(file, sizeof(file), "%s/encoding/encoding_b.py", model);
  write_file(file, "");
  snprintf(file, sizeof(file), "%s/tokenizer_config.json", model);
  write_file(file, "{\"chat_template\": null}");
  snprintf(body, sizeof(body), "{\"model\":\"%s\",\"tp\":1}", model);
  CHECK_INT(build(body, &p, &err), TR_EINVAL);
  CHECK_STR(err.field, "model");
  CHECK(strstr(err.msg, "refuses to choose") != NULL);
  write_file(file, "{\"chat_template\": \"{{ m }}\"}");
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(json_is_true(json_object_get(p->extra, "use_chat_template")));
  CHECK(strstr(json_string_value(json_object_get(
                   json_object_get(p->extra, "chat_template"), "applies")),
               "tokenizer_config.json") != NULL);
  atom_plan_free(p);
}

/* ---- what traced foresees of a launch (atom/launch.c) and the pkill
 * patterns of ATOM's scripts (atom/scripts.c), with ATOM's own models.json
 * (tests/data/atom/models.json, a verbatim copy) ---- */

static void use_models(const char *rel)
{
  struct tr_err err = { 0 };
  char path[512];

  snprintf(path, sizeof(path), "%s/tests/data/%s",
           getenv("SRC_DIR") ? getenv("SRC_DIR") : ".", rel);
  CHECK_INT(cfg_set(&cfg, "models_json", path, &err), 0);
}

/* A model folder under root, with a tokenizer_config.json and (if given)
 * a config.json; its path into out. */
static const char *model(const char *name, const char *config, char *out,
                         size_t size)
{
  char file[512];

  snprintf(out, size, "%s/%s", root, name);
  mkdir(out, 0755);
  snprintf(file, sizeof(file), "%s/tokenizer_config.json", out);
  write_file(file, "{\"chat_template\": \"{{ m }}\"}");
  if (config != NULL) {
    snprintf(file, sizeof(file), "%s/config.json", out);
    write_file(file, config);
  }
  return out;
}

/* The words after the script's, joined by blanks. */
static char *start_words(const struct cap_plan *p)
{
  static char buf[4096];
  size_t used = 0;

  buf[0] = '\0';
  for (char *const *w = p->start_argv + 4; *w != NULL; w++)
    used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
                             used ? " " : "", *w);
  return buf;
}

static json_t *extra(const struct cap_plan *p, const char *key)
{
  return json_object_get(p->extra, key);
}

/* The V4 preset and a V4 checkpoint get --level 0, last; a request's
 * --level and a piecewise CUDA-graph mode keep theirs. */
static void launch_v4_level(void)
{
  use_models("atom/models.json");
  char m[256], body[512];
  struct cap_plan *p = NULL;
  struct tr_err err;

  snprintf(body, sizeof(body), "{\"model\":\"%s\",\"tp\":8}",
           model("DeepSeek-V4-Pro", NULL, m, sizeof(m)));
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(strstr(start_words(p), "--no-enable_prefix_caching --level 0") != NULL);
  CHECK_INT(json_integer_value(json_object_get(extra(p, "level"), "value")), 0);
  CHECK(strstr(json_string_value(json_object_get(extra(p, "level"), "why")),
               "deepseek-ai/DeepSeek-V4-Pro") != NULL);
  atom_plan_free(p);
  snprintf(body, sizeof(body),
           "{\"model\":\"%s\",\"tp\":8,\"server_args\":[\"--level\",\"3\"]}",
           m);
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(strstr(start_words(p), "--level 0") == NULL);
  CHECK(json_is_false(json_object_get(extra(p, "level"), "added")));
  atom_plan_free(p);
  /* DSpark's checkpoint: --cudagraph-mode PIECEWISE needs level 3. */
  model("DeepSeek-V4-Pro-DSpark", NULL, m, sizeof(m));
  snprintf(body, sizeof(body),
           "{\"model\":\"%s/DeepSeek-V4-Pro\",\"variant\":\"DPA DSpark\"}",
           root);
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(strstr(start_words(p), "--level") == NULL);
  CHECK(strstr(json_string_value(json_object_get(extra(p, "level"), "why")),
               "PIECEWISE") != NULL);
  atom_plan_free(p);
  /* No preset, a V4 architecture in config.json. */
  snprintf(body, sizeof(body), "{\"model\":\"%s\",\"tp\":2}",
           model("My-Finetune",
                 "{\"architectures\": "
                 "[\"DeepseekV4ForCausalLM\"]}",
                 m, sizeof(m)));
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(strstr(start_words(p), "--level 0") != NULL);
  CHECK(strstr(json_string_value(json_object_get(extra(p, "level"), "why")),
               "config.json: DeepseekV4ForCausalLM") != NULL);
  atom_plan_free(p);
  snprintf(body, sizeof(body), "{\"model\":\"%s\",\"tp\":2}",
           model("Plain", "{\"architectures\": [\"LlamaForCausalLM\"]}", m,
                 sizeof(m)));
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(strstr(start_words(p), "--level") == NULL);
  atom_plan_free(p);
}

/* Kimi-K3's DSpark names --draft-model Inferact/Kimi-K3-DSpark: the
 * folder beside the model is launched, or the request is refused naming
 * it (hub ids allowed: passed on). */
static void launch_draft_model(void)
{
  char m[256], d[256], body[512];
  struct cap_plan *p = NULL;
  struct tr_err err;
  struct tr_preset pre = { 0 };
  json_t *params;

  snprintf(body, sizeof(body), "{\"model\":\"%s\",\"variant\":\"DSpark\"}",
           model("Kimi-K3", NULL, m, sizeof(m)));
  CHECK_INT(build(body, &p, &err), TR_EINVAL);
  CHECK_STR(err.field, "variant");
  snprintf(d, sizeof(d), "no folder %s/Kimi-K3-DSpark", root);
  CHECK(strstr(err.msg, d) != NULL);
  CHECK(strstr(err.msg, "Inferact/Kimi-K3-DSpark") != NULL);
  /* The API refuses it the same way, before anything is queued. */
  params = json_loads(body, 0, NULL);
  CHECK_INT(tr_preset_find(cfg.models_json, m, "DSpark", &pre, &err), 1);
  CHECK_INT(tr_atom_request_check(&cfg, &pre, params, m, &err), TR_EINVAL);
  CHECK_STR(err.field, "variant");
  model("Kimi-K3-DSpark", NULL, d, sizeof(d));
  CHECK_INT(tr_atom_request_check(&cfg, &pre, params, m, &err), 0);
  tr_preset_free(&pre);
  json_decref(params);
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(strstr(start_words(p), d) != NULL);
  CHECK(strstr(start_words(p), "Inferact") == NULL);
  CHECK_STR(
      json_string_value(json_object_get(
          json_object_get(extra(p, "preset"), "draft_model"), "launched")),
      d);
  atom_plan_free(p);
  /* MiniMax's EAGLE3, with hub ids allowed and no folder: passed on. */
  cfg.allow_hub_ids = 1;
  snprintf(body, sizeof(body), "{\"model\":\"%s\",\"variant\":\"EAGLE3\"}",
           model("MiniMax-M3-MXFP8", NULL, m, sizeof(m)));
  CHECK_INT(build(body, &p, &err), 0);
  CHECK(strstr(start_words(p), "--draft-model Inferact/MiniMax-M3-EAGLE3") !=
        NULL);
  atom_plan_free(p);
  cfg.allow_hub_ids = 0;
}

/* With the bench starting the profiler, only the completions backends. */
static void launch_bench_backend(void)
{
  char *chat[] = { "--seed", "1", "--backend", "openai-chat", NULL };
  char *tgi[] = { "--backend=tgi", NULL };
  char *sglang[] = { "--backend", "openai-chat", "--backend=sglang", NULL };
  struct tr_err err = { 0 };

  CHECK_INT(tr_atom_bench_backend(&cfg, chat, &err), TR_EINVAL);
  CHECK_STR(err.field, "bench_args");
  CHECK(strstr(err.msg, "openai-chat") != NULL);
  CHECK(strstr(err.msg, "backend_request_func.py:338") != NULL);
  tr_err_clear(&err);
  CHECK_INT(tr_atom_bench_backend(&cfg, tgi, &err), TR_EINVAL);
  CHECK(strstr(err.msg, "generate_stream") != NULL);
  CHECK_INT(tr_atom_bench_backend(&cfg, sglang, &err), 0);
  cfg.profile_control = CFG_PROFILE_DAEMON;
  CHECK_INT(tr_atom_bench_backend(&cfg, chat, &err), 0);
  cfg.profile_control = CFG_PROFILE_BENCH;
}

/* The GPUs: 0..N-1, or HIP_VISIBLE_DEVICES'; the share asked. */
static void launch_gpus(void)
{
  char *words[] = { "--gpu-memory-utilization", "0.8", NULL };
  char *none[] = { NULL };
  json_t *env = json_pack("{s:s}", "HIP_VISIBLE_DEVICES", "4, 6,7");
  int gpus[TR_ATOM_GPUS_MAX];
  double util;

  CHECK_INT(tr_atom_launch_gpus(none, NULL, 3, gpus, &util), 3);
  CHECK_INT(gpus[2], 2);
  CHECK(util == TR_ATOM_GPU_MEM_UTIL);
  CHECK_INT(tr_atom_launch_gpus(words, env, 2, gpus, &util), 2);
  CHECK_INT(gpus[0], 4);
  CHECK_INT(gpus[1], 6);
  CHECK(util == 0.8);
  json_object_set_new(env, "GPU_MEM_UTIL", json_string("0.5"));
  CHECK_INT(tr_atom_launch_gpus(none, env, 8, gpus, &util), 3);
  CHECK(util == 0.5);
  json_decref(env);
}

/* The pkill patterns, in the forms of ATOM's start and stop scripts: a
 * literal, an array walked by a for loop, pgrep left out, comments and
 * strings that only mention pkill left out. */
static void scripts_kill_patterns(void)
{
  const char *text =
      "#!/bin/bash\n"
      "# pkill -f 'not.in.a.comment'\n"
      "pkill -f 'atom.entrypoints' 2>/dev/null || true\n"
      "echo \"pkill -f 'not.a.command'\"\n"
      "pkill -9 -f \"multiprocessing.spawn\" 2>/dev/null || true\n"
      "PATTERNS=(\n"
      "    'atom.entrypoints'   # again\n"
      "    'lm_eval'\n"
      ")\n"
      "count() { n=$(pgrep -f \"$pat\" 2>/dev/null | wc -l); }\n"
      "for pat in \"${PATTERNS[@]}\"; do\n"
      "    pkill -TERM -f \"$pat\" 2>/dev/null || true\n"
      "done\n"
      "pkill python3\n"
      "pkill -f \"$nowhere\"\n";
  struct tr_kill_patterns p = { 0 };

  CHECK_INT(tr_kill_patterns_parse(text, &p), 0);
  CHECK_INT((int)p.n, 4);
  CHECK_STR(p.v[0].pattern, "atom.entrypoints");
  CHECK_INT(p.v[0].line, 3);
  CHECK_STR(p.v[1].pattern, "multiprocessing.spawn");
  CHECK_STR(p.v[2].pattern, "lm_eval");
  CHECK_INT(p.v[2].full, 1);
  CHECK_INT(p.v[2].line, 12);
  CHECK_STR(p.v[3].pattern, "python3");
  CHECK_INT(p.v[3].full, 0);
  CHECK(strstr(p.unresolved, "$nowhere") != NULL);
  tr_kill_patterns_free(&p);
}

int main(void)
{
  char cmd[128];

  setup();
  RUN(plan_words_for_shell);
  RUN(preset_shell_words);
  RUN(plan_preset_glm);
  RUN(plan_variant_and_overrides);
  RUN(plan_trust_remote_code);
  RUN(plan_variant_path_and_default_tp);
  RUN(plan_ranks_from_argv);
  RUN(plan_refuses_split_words);
  RUN(plan_daemon_runs);
  RUN(plan_chat_template);
  RUN(plan_makes_atom_folders);
  RUN(plan_several_encoders);
  RUN(launch_v4_level);
  RUN(launch_draft_model);
  RUN(launch_bench_backend);
  RUN(launch_gpus);
  RUN(scripts_kill_patterns);
  cfg_free(&cfg);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
  CHECK(system(cmd) == 0);
  return 0;
}
