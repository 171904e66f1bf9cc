#include "atom/launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "atom/options.h"
#include "atom/policy.h"
#include "common/file.h"

/* A model folder's config.json: a few KB; read bounded, as the bench's
 * files are (atom/chat_template.c). */
#define CONFIG_MAX ((size_t)8 << 20)

/* ---- DeepSeek-V4's level ---- */

/* The seed's skill: "V4-Pro Inductor + autotune hits a cluster_dims bug on
 * AMD - pass --level 0". ATOM ffdf3bb5 patches Triton's metadata for it
 * (atom/utils/compiler_inferface.py:64-153); traced follows the skill,
 * which describes the ATOM people run. */
const char *tr_atom_level_fix(void)
{
  return "DeepSeek-V4 under Inductor's autotune hits the cluster_dims bug: "
         "pass --level 0 in server_args (traced adds it to V4 models unless "
         "the request sets --level)";
}

/* The architecture of a DeepSeek-V4 checkpoint in its config.json
 * (model_runner.py:105 maps DeepseekV4ForCausalLM; its NextN and DSpark
 * drafts share the prefix, config.py:1198), into arch; false otherwise. */
static bool v4_architecture(const char *model, char *arch, size_t size)
{
  char *text = NULL;
  json_t *doc, *a;
  size_t i;
  bool yes = false;

  if (tr_read_file(model, "config.json", CONFIG_MAX, &text, NULL, NULL) < 0)
    return false;
  doc = json_loads(text, 0, NULL);
  free(text);
  json_array_foreach(json_object_get(doc, "architectures"), i, a) {
    const char *s = json_string_value(a);

    if (!yes && s != NULL && strncmp(s, "DeepseekV4", 10) == 0) {
      snprintf(arch, size, "%.120s", s);
      yes = true;
    }
  }
  json_decref(doc);
  return yes;
}

/* A preset of DeepSeek-V4: its hub id's last component starts so
 * (models.json: deepseek-ai/DeepSeek-V4-Pro and its DSpark checkpoint). */
static bool v4_preset(const char *path)
{
  const char *base = path != NULL ? strrchr(path, '/') : NULL;

  base = base != NULL ? base + 1 : path;
  return base != NULL && strncasecmp(base, "DeepSeek-V4", 11) == 0;
}

/* CUDA-graph modes that capture piecewise, which needs --level 3
 * (arg_utils.py:199-207: "PIECEWISE = per-piece cudagraph with attention
 * eager (requires --level 3)"; config.py:1781 splits only at level 3). */
static bool piecewise_mode(const char *mode)
{
  return mode != NULL && strstr(mode, "PIECEWISE") != NULL;
}

void tr_atom_level(const char *model, const char *preset_path,
                   char *const *words, struct tr_atom_level *out)
{
  const char *given = tr_atom_opt_last(TR_ATOM_SERVER, words, "--level");
  const char *mode =
      tr_atom_opt_last(TR_ATOM_SERVER, words, "--cudagraph-mode");
  char arch[128], v4[200];

  memset(out, 0, sizeof(*out));
  out->level = given != NULL ? atoi(given) : TR_ATOM_LEVEL_DEFAULT;
  if (v4_preset(preset_path))
    snprintf(v4, sizeof(v4), "a DeepSeek-V4 preset (%s)", preset_path);
  else if (v4_architecture(model, arch, sizeof(arch)))
    snprintf(v4, sizeof(v4), "a DeepSeek-V4 checkpoint (config.json: %s)",
             arch);
  else
    v4[0] = '\0';
  if (given != NULL)
    snprintf(out->why, sizeof(out->why), "server_args set --level %s", given);
  else if (v4[0] == '\0')
    snprintf(out->why, sizeof(out->why), "ATOM's default");
  else if (piecewise_mode(mode))
    snprintf(out->why, sizeof(out->why),
             "%s, but --cudagraph-mode %s needs --level 3 (arg_utils.py:203): "
             "ATOM's default kept, the cluster_dims bug may hit",
             v4, mode);
  else {
    out->add = true;
    out->level = 0;
    snprintf(out->why, sizeof(out->why),
             "%s: Inductor's autotune hits the cluster_dims bug at ATOM's "
             "default --level 3 (the seed's skill: pass --level 0)",
             v4);
  }
}

/* ---- a preset's draft model ---- */

/* The value of the --draft-model word at words[i] ("--draft-model X" or
 * "--draft-model=X", either spelling): its index in words and, for the
 * "=" form, the offset of the value; -1 when words[i] is not that option. */
static int draft_value(char **words, size_t i, size_t *at)
{
  const struct tr_atom_opt *o = tr_atom_is_option(words[i])
                                    ? tr_atom_opt_find(TR_ATOM_SERVER, words[i])
                                    : NULL;
  char name[64];
  const char *eq;

  if (o == NULL ||
      strcmp(tr_atom_opt_name(o, name, sizeof(name)), "--draft-model") != 0)
    return -1;
  if ((eq = strchr(words[i], '=')) != NULL) {
    *at = (size_t)(eq + 1 - words[i]);
    return (int)i;
  }
  *at = 0;
  return words[i + 1] != NULL ? (int)i + 1 : -1;
}

/* The folder of id's last component beside model, a new string. */
static char *beside(const char *model, const char *id)
{
  const char *slash = strrchr(model, '/'), *base = strrchr(id, '/');
  char *out;

  base = base != NULL ? base + 1 : id;
  if (asprintf(&out, "%.*s/%s", slash ? (int)(slash - model) : 1,
               slash ? model : ".", base) < 0)
    return NULL;
  return out;
}

/* Replaces words[k]'s value (from offset at) by folder. */
static int replace_value(char **words, int k, size_t at, const char *folder)
{
  char *w;

  if (asprintf(&w, "%.*s%s", (int)at, words[k], folder) < 0)
    return TR_ENOMEM;
  free(words[k]);
  words[k] = w;
  return 0;
}

static int map_one(const struct cfg *cfg, const char *model, char **words,
                   int k, size_t at, json_t *note, struct tr_err *err)
{
  const char *id = words[k] + at;
  char *folder = beside(model, id);
  int fd, rc = 0;

  if (folder == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  json_object_set_new(note, "preset", json_string(id));
  fd = tr_open_dir(NULL, folder, NULL, NULL);
  if (fd >= 0) {
    close(fd);
    rc = atom_policy_path(cfg, folder, "variant", NULL, err);
    if (rc == 0) {
      json_object_set_new(note, "launched", json_string(folder));
      json_object_set_new(note, "why",
                          json_string("the folder beside the "
                                      "model"));
      rc = replace_value(words, k, at, folder);
    }
  } else if (cfg->allow_hub_ids) {
    json_object_set_new(note, "launched", json_string(id));
    json_object_set_new(note, "why",
                        json_string("no folder beside the model: ATOM "
                                    "downloads it (allow_hub_ids)"));
  } else {
    rc = tr_err_set(err, TR_EINVAL, "variant",
                    "the preset's --draft-model %s is a Hugging Face id, "
                    "which ATOM would download (offline: fails); traced "
                    "launches the folder of that name beside the model, "
                    "and there is no folder %s: put the checkpoint there, "
                    "or set allow_hub_ids = true",
                    id, folder);
  }
  free(folder);
  return rc;
}

int tr_atom_draft_model(const struct cfg *cfg, const char *model, char **words,
                        json_t *note, struct tr_err *err)
{
  json_t *scratch = note != NULL ? note : json_object();
  int rc = 0;

  for (size_t i = 0; rc == 0 && words != NULL && words[i] != NULL; i++) {
    size_t at = 0;
    int k = draft_value(words, i, &at);

    if (k >= 0 && words[k][at] != '/' && words[k][at] != '\0')
      rc = map_one(cfg, model, words, k, at, scratch, err);
  }
  if (scratch != note)
    json_decref(scratch);
  return rc;
}

/* ---- the bench's backend ---- */

/* The backends whose request function is async_request_openai_completions,
 * the one that accepts an URL ending in "profile"
 * (backend_request_func.py:234-241, the map at :475-485). */
static const char *const completions[] = { "vllm", "lmdeploy", "openai",
                                           "scalellm", "sglang" };

/* Why backend's request function cannot start the profiler. */
static const char *why_not(const char *backend)
{
  if (strcmp(backend, "openai-chat") == 0)
    return "its request function asserts a URL ending in "
           "'chat/completions' (backend_request_func.py:338-341): the bench "
           "crashes at /start_profile, after its warm-ups";
  if (strcmp(backend, "deepspeed-mii") == 0)
    return "its request function reads a 'text' member that ATOM's answers "
           "lack (backend_request_func.py:188-231): every request fails";
  return "its request function asserts a URL ending in 'generate_stream' "
         "(backend_request_func.py:53,126): the bench crashes at "
         "/start_profile, after its warm-ups";
}

int tr_atom_bench_backend(const struct cfg *cfg, char *const *words,
                          struct tr_err *err)
{
  const char *b = tr_atom_opt_last(TR_ATOM_BENCH, words, "--backend");

  if (b == NULL || cfg->profile_control != CFG_PROFILE_BENCH)
    return 0;
  for (size_t i = 0; i < sizeof(completions) / sizeof(*completions); i++)
    if (strcmp(b, completions[i]) == 0)
      return 0;
  return tr_err_set(err, TR_EINVAL, "bench_args",
                    "bench_args: --backend %s cannot start ATOM's profiler: "
                    "with profile_control = bench the bench POSTs "
                    "/start_profile through the backend's request function "
                    "(benchmark_serving.py:541-556), and %s; the completions "
                    "backends (vllm, openai, lmdeploy, scalellm, sglang) "
                    "can, or set profile_control = daemon (traced starts "
                    "the profiler)",
                    b, why_not(b));
}

/* ---- the GPUs a launch takes ---- */

static const char *env_value(json_t *env, const char *name)
{
  const char *v = json_string_value(json_object_get(env, name));

  return v != NULL ? v : getenv(name);
}

int tr_atom_launch_gpus(char *const *words, json_t *env, int workers, int *gpus,
                        double *util)
{
  static const char *const visible[] = { "HIP_VISIBLE_DEVICES",
                                         "ROCR_VISIBLE_DEVICES",
                                         "CUDA_VISIBLE_DEVICES" };
  const char *u =
      tr_atom_opt_last(TR_ATOM_SERVER, words, "--gpu-memory-utilization");
  const char *list = NULL;
  int n = 0;

  if (u == NULL)
    u = env_value(env, "GPU_MEM_UTIL");
  *util = u != NULL ? strtod(u, NULL) : TR_ATOM_GPU_MEM_UTIL;
  if (!(*util > 0 && *util <= 1))
    *util = TR_ATOM_GPU_MEM_UTIL;
  for (size_t i = 0; list == NULL && i < 3; i++)
    list = env_value(env, visible[i]);
  if (workers > TR_ATOM_GPUS_MAX)
    workers = TR_ATOM_GPUS_MAX;
  for (const char *p = list; p != NULL && *p != '\0' && n < workers;) {
    char *end;
    long g = strtol(p, &end, 10);

    if (end == p)
      break;
    if (g >= 0 && g < 4096)
      gpus[n++] = (int)g;
    p = end + strspn(end, ", ");
  }
  for (int g = 0; list == NULL && g < workers; g++)
    gpus[n++] = g;
  return n;
}

/* ---- a request, judged before it is queued ---- */

/* The request's words of member as a NULL-terminated array borrowing its
 * strings, with the preset variant's shell-text key words appended (owned
 * in *own). */
static char **request_words(json_t *params, const char *member, json_t *variant,
                            const char *key, char ***own)
{
  json_t *arr = json_object_get(params, member), *v;
  size_t i, n = 0, m;
  char **out;

  *own = tr_shell_words(json_string_value(json_object_get(variant, key)), key,
                        NULL);
  for (m = 0; *own != NULL && (*own)[m] != NULL; m++)
    ;
  if ((out = calloc(json_array_size(arr) + m + 1, sizeof(*out))) == NULL)
    return NULL;
  json_array_foreach(arr, i, v) {
    if (json_is_string(v))
      out[n++] = (char *)json_string_value(v);
  }
  for (i = 0; i < m; i++)
    out[n++] = (*own)[i];
  return out;
}

int tr_atom_request_check(const struct cfg *cfg, const struct tr_preset *pre,
                          json_t *params, const char *model, struct tr_err *err)
{
  char **own = NULL, **bench = request_words(params, "bench_args", pre->variant,
                                             "bench_args", &own);
  char **cfg_w = NULL, **var_w = NULL;
  int rc = bench != NULL ? tr_atom_bench_backend(cfg, bench, err)
                         : tr_err_set(err, TR_ENOMEM, "", "out of memory");

  free(bench);
  tr_words_free(own);
  if (rc != 0 || pre->model == NULL || model == NULL)
    return rc;
  cfg_w =
      tr_shell_words(tr_preset_config_str(pre, "extra_args"), "variant", NULL);
  var_w = tr_shell_words(
      json_string_value(json_object_get(pre->variant, "extra_args")), "variant",
      NULL);
  rc = tr_atom_draft_model(cfg, model, cfg_w, NULL, err);
  if (rc == 0)
    rc = tr_atom_draft_model(cfg, model, var_w, NULL, err);
  tr_words_free(cfg_w);
  tr_words_free(var_w);
  return rc;
}
