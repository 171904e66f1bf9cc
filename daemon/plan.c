#include "daemon/plan.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "common/lifecycle.h"
#include "common/preset.h"

#define TOKENIZER_MAX ((size_t)8 << 20) /* tokenizer_config.json ceiling */

struct words {
  char **v; /* NULL-terminated */
  size_t n, cap;
  bool oom;
};

static void push(struct words *w, const char *s)
{
  if (w->n + 1 >= w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 16;
    char **grown = realloc(w->v, cap * sizeof(*grown));

    if (grown == NULL) {
      w->oom = true;
      return;
    }
    w->v = grown;
    w->cap = cap;
  }
  if ((w->v[w->n] = strdup(s ? s : "")) == NULL) {
    w->oom = true;
    return;
  }
  w->v[++w->n] = NULL;
}

static void pushf(struct words *w, const char *fmt, long long v)
{
  char buf[32];

  snprintf(buf, sizeof(buf), fmt, v);
  push(w, buf);
}

static void push_all(struct words *w, char *const *v)
{
  for (; v != NULL && *v != NULL; v++)
    push(w, *v);
}

json_t *cap_words_json(char *const *words)
{
  json_t *a = json_array();

  for (; words != NULL && *words != NULL; words++)
    json_array_append_new(a, json_string(*words));
  return a;
}

/* ATOM's scripts are run as the skill runs them (`bash script.sh`) when
 * they are not executable, else directly (argv[0] the script). */
static void push_script(struct words *w, const char *path)
{
  if (access(path, X_OK) != 0)
    push(w, "/bin/bash");
  push(w, path);
}

/* ---- words that survive start_atom_server.sh ---- */

/* docs/ATOM.md: the start script expands EXTRA_ARGS unquoted, so each word
 * is split again at blanks and glob-expanded. A compact JSON document has
 * blanks only inside strings, where \uXXXX means the same to json.loads;
 * glob characters there are escaped too. The brackets of arrays stay: the
 * scripts run in an empty folder, where such a pattern matches nothing. */
char *cap_word_for_shell(const char *word)
{
  json_t *doc;
  char *text, *out;
  bool in_str = false, esc = false;
  size_t n = 0;

  if (word[0] != '{' && word[0] != '[')
    return strdup(word);
  doc = json_loads(word, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
  if (doc == NULL)
    return strdup(word);
  text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(doc);
  if (text == NULL || (out = malloc(6 * strlen(text) + 1)) == NULL) {
    free(text);
    return NULL;
  }
  for (const char *p = text; *p != '\0'; p++) {
    if (in_str && !esc && strchr(" *?[]", *p) != NULL)
      n += (size_t)snprintf(out + n, 7, "\\u%04x", (unsigned char)*p);
    else
      out[n++] = *p;
    if (in_str && !esc && *p == '"')
      in_str = false;
    else if (!in_str && *p == '"')
      in_str = true;
    esc = in_str && !esc && *p == '\\';
  }
  out[n] = '\0';
  free(text);
  return out;
}

/* ---- flags ---- */

/* ATOM's short spellings of the flags read here (arg_utils.py). */
static const char *const aliases[][2] = {
  { "tp", "tensor-parallel-size" },
  { "pp", "pipeline-parallel-size" },
  { "pcp", "prefill-context-parallel-size" },
  { "dp", "data-parallel-size" },
  { "dcp", "decode-context-parallel-size" },
};

/* The flag a word names, as ATOM's parser sees it: dashes stripped, up to
 * '=', '_' as '-', short spellings as long ones; "" for a value word. */
static void flag_of(const char *word, char *buf, size_t size)
{
  size_t n = 0;

  buf[0] = '\0';
  if (word[0] != '-' || isdigit((unsigned char)word[1]))
    return;
  word += word[1] == '-' ? 2 : 1;
  for (; *word != '\0' && *word != '=' && n + 1 < size; word++)
    buf[n++] = *word == '_' ? '-' : *word;
  buf[n] = '\0';
  for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
    if (strcmp(buf, aliases[i][0]) == 0)
      snprintf(buf, size, "%s", aliases[i][1]);
}

static bool is_flag(const char *word)
{
  char f[128];

  flag_of(word, f, sizeof(f));
  return f[0] != '\0';
}

static bool words_have_flag(char *const *words, const char *flag)
{
  char f[128];

  for (; words != NULL && *words != NULL; words++) {
    flag_of(*words, f, sizeof(f));
    if (f[0] != '\0' && strcmp(f, flag) == 0)
      return true;
  }
  return false;
}

/* The integer value of the last occurrence of flag (argparse: the last
 * wins), or dflt. */
static int flag_int(char *const *words, const char *flag, int dflt)
{
  char f[128];
  int v = dflt;
  long n;

  for (size_t i = 0; words != NULL && words[i] != NULL; i++) {
    const char *eq = strchr(words[i], '=');
    const char *val = eq ? eq + 1 : words[i + 1];

    flag_of(words[i], f, sizeof(f));
    if (f[0] == '\0' || strcmp(f, flag) != 0 || val == NULL)
      continue;
    n = strtol(val, NULL, 10);
    v = n > 0 && n <= INT_MAX ? (int)n : v;
  }
  return v;
}

/* Appends preset words, but not a flag (with its value) that the request's
 * own words set: the request wins, and an argparse "append" option would
 * otherwise keep both. applied gets what was added. */
static void push_unless_given(struct words *w, char *const *preset,
                              char *const *req, json_t *applied)
{
  char f[128];

  for (size_t i = 0; preset != NULL && preset[i] != NULL; i++) {
    bool has_value = preset[i + 1] != NULL && !is_flag(preset[i + 1]) &&
                     strchr(preset[i], '=') == NULL;

    flag_of(preset[i], f, sizeof(f));
    if (f[0] != '\0' && words_have_flag(req, f)) {
      i += has_value;
      continue;
    }
    push(w, preset[i]);
    json_array_append_new(applied, json_string(preset[i]));
  }
}

/* ---- the request and the preset ---- */

static const char *param_str(json_t *params, const char *key)
{
  return json_string_value(json_object_get(params, key));
}

static int param_int(json_t *params, const char *key)
{
  json_t *v = json_object_get(params, key);
  const struct tr_member *m = tr_member_find(key);

  return json_is_integer(v) ? (int)json_integer_value(v)
                            : (int)(m ? m->dflt : 0);
}

/* The request's words of key ("server_args"), as a NULL-terminated array
 * of borrowed strings (only the array is allocated). */
static char **param_words(json_t *params, const char *key)
{
  json_t *arr = json_object_get(params, key), *v;
  char **out = calloc(json_array_size(arr) + 1, sizeof(*out));
  size_t i, n = 0;

  json_array_foreach(arr, i, v) {
    if (out != NULL && json_is_string(v))
      out[n++] = (char *)json_string_value(v);
  }
  return out;
}

/* The words of a shell-text member of the preset's variant or config. */
static char **preset_words(json_t *obj, const char *key, struct tr_err *err)
{
  return tr_shell_words(json_string_value(json_object_get(obj, key)), key, err);
}

/* A word that still holds blanks after cap_word_for_shell() cannot reach
 * the server intact. */
static int check_shell_safe(char *const *words, const char *what,
                            struct tr_err *err)
{
  for (; words != NULL && *words != NULL; words++)
    if (strpbrk(*words, " \t\n") != NULL)
      return tr_err_set(err, TR_EINVAL, what,
                        "%s: the word \"%.200s\" holds blanks and is not "
                        "JSON: ATOM's start script would split it",
                        what, *words);
  return 0;
}

/* The model path launched: a variant with its own "path" names another
 * checkpoint, which sits beside the model asked for. New string. */
static char *model_path(const char *model, const struct tr_preset *pre)
{
  const char *vpath = json_string_value(json_object_get(pre->variant, "path"));
  const char *slash = strrchr(model, '/'), *vbase;
  char *out;

  if (vpath == NULL)
    return strdup(model);
  vbase = strrchr(vpath, '/') ? strrchr(vpath, '/') + 1 : vpath;
  if (slash == NULL)
    return strdup(vbase);
  if (asprintf(&out, "%.*s/%s", (int)(slash - model), model, vbase) < 0)
    return NULL;
  return out;
}

/* ---- the chat template ---- */

/* A file of the model folder exists as a regular file (a model folder is
 * the client's: opened under it, no link followed, nothing waited on). */
static bool model_file(const char *model, const char *name)
{
  int fd = tr_open_file(model, name, 0, NULL, NULL);

  if (fd < 0)
    return false;
  close(fd);
  return true;
}

static bool has_encoder_module(const char *model)
{
  int fd = tr_open_dir(model, "encoding", NULL, NULL);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *e;
  bool yes = false;

  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return false;
  }
  while (!yes && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);

    yes = strncmp(e->d_name, "encoding_", 9) == 0 && n > 12 &&
          strcmp(e->d_name + n - 3, ".py") == 0;
  }
  closedir(d);
  return yes;
}

/* docs/ATOM.md: the server applies <model>/encoding/encoding_*.py when
 * present, else the tokenizer's template (a non-null chat_template in
 * tokenizer_config.json, or chat_template.jinja). *why names the source. */
static int chat_template(const char *model, bool *yes, const char **why,
                         struct tr_err *err)
{
  char *text = NULL;
  json_t *doc, *t;
  int rc;

  *yes = true;
  if ((*why = "encoding/encoding_*.py", has_encoder_module(model)))
    return 0;
  if ((*why = "chat_template.jinja", model_file(model, *why)))
    return 0;
  *yes = false;
  *why = "none";
  rc = tr_read_file(model, "tokenizer_config.json", TOKENIZER_MAX, &text, NULL,
                    err);
  if (rc == -ENOENT || rc == -ENOTDIR) {
    tr_err_clear(err);
    return 0;
  }
  if (rc < 0)
    return rc;
  doc = json_loads(text, 0, NULL);
  free(text);
  t = json_object_get(doc, "chat_template");
  if (t != NULL && !json_is_null(t)) {
    *yes = true;
    *why = "tokenizer_config.json";
  }
  json_decref(doc);
  return 0;
}

/* ---- the plan ---- */

struct build {
  const struct cfg *cfg;
  json_t *params;
  const struct cap_dirs *dirs;
  struct tr_preset pre; /* pre.model NULL: no preset */
  struct cap_plan *p;
  json_t *preset_json; /* extra.preset */
};

/* --trust-remote-code, config.extra_args, variant.extra_args (ATOM CI's
 * order, .github/scripts/catalog.py), then the request's server_args;
 * every word made safe for the start script. */
static int server_words(struct build *b, struct words *out, struct tr_err *err)
{
  char **req = param_words(b->params, "server_args");
  char **cfg_w = NULL, **var_w = NULL;
  json_t *applied = json_array();
  struct words raw = { 0 };
  int rc = 0;

  if (b->pre.model != NULL) {
    if (json_is_true(json_object_get(json_object_get(b->pre.model, "config"),
                                     "trust_remote_code")) &&
        !words_have_flag(req, "trust-remote-code")) {
      push(&raw, "--trust-remote-code");
      json_array_append_new(applied, json_string("--trust-remote-code"));
    }
    cfg_w = preset_words(json_object_get(b->pre.model, "config"), "extra_args",
                         err);
    var_w = preset_words(b->pre.variant, "extra_args", err);
    if (cfg_w == NULL || var_w == NULL)
      rc = err && err->code ? err->code : TR_ENOMEM;
    push_unless_given(&raw, cfg_w, req, applied);
    push_unless_given(&raw, var_w, req, applied);
    json_object_set_new(b->preset_json, "args", applied);
  } else {
    json_decref(applied);
  }
  push_all(&raw, req);
  for (size_t i = 0; rc == 0 && i < raw.n; i++) {
    char *safe = cap_word_for_shell(raw.v[i]);

    push(out, safe);
    free(safe);
  }
  if (rc == 0)
    rc = check_shell_safe(out->v, "server_args", err);
  tr_words_free(cfg_w);
  tr_words_free(var_w);
  tr_words_free(raw.v);
  free(req);
  return rc;
}

static void put_env(json_t *env, json_t *req_env, json_t *applied,
                    const char *key, const char *value)
{
  if (json_object_get(req_env, key) != NULL)
    return; /* the request wins */
  json_object_set_new(env, key, json_string(value));
  json_object_set_new(applied, key, json_string(value));
}

/* "K=V" lines of a preset's env_vars into env. */
static void preset_env_lines(json_t *obj, json_t *env, json_t *req_env,
                             json_t *applied)
{
  const char *text = json_string_value(json_object_get(obj, "env_vars"));
  char *copy = text ? strdup(text) : NULL, *save = NULL;

  for (char *t = copy ? strtok_r(copy, "\n", &save) : NULL; t != NULL;
       t = strtok_r(NULL, "\n", &save)) {
    char *eq, *key = t + strspn(t, " \t");

    if ((eq = strchr(key, '=')) == NULL || eq == key)
      continue;
    *eq = '\0';
    put_env(env, req_env, applied, key, eq + 1);
  }
  free(copy);
}

/* The server's environment additions: the request's, the preset's where
 * the request is silent (env_vars of the model and its variant, and
 * config.kv_cache_dtype as the start script's KV_CACHE_DTYPE), and
 * ATOM_PROFILER_MORE from "more" (it belongs on the server). */
static json_t *server_env(struct build *b)
{
  json_t *req_env = json_object_get(b->params, "env");
  json_t *env = json_object(), *applied = json_object();
  const char *dtype;

  json_object_update(env, req_env);
  if (b->pre.model != NULL) {
    preset_env_lines(b->pre.model, env, req_env, applied);
    preset_env_lines(b->pre.variant, env, req_env, applied);
    if ((dtype = tr_preset_config_str(&b->pre, "kv_cache_dtype")) != NULL)
      put_env(env, req_env, applied, "KV_CACHE_DTYPE", dtype);
    json_object_set_new(b->preset_json, "env", applied);
  } else {
    json_decref(applied);
  }
  json_object_set_new(
      env, "ATOM_PROFILER_MORE",
      json_string(json_is_true(json_object_get(b->params, "more")) ? "1"
                                                                   : "0"));
  return env;
}

static void env_words(json_t *env, struct words *w)
{
  const char *key;
  json_t *v;
  char *kv;

  json_object_foreach(env, key, v) {
    if (json_is_string(v) &&
        asprintf(&kv, "%s=%s", key, json_string_value(v)) >= 0) {
      push(w, kv);
      free(kv);
    }
  }
}

/* ATOM_PROFILER_TIMEOUT as the server will see it: its env additions,
 * else traced's environment (the scripts inherit it), else the config. */
static int profiler_timeout(const struct cfg *cfg, json_t *env)
{
  const char *v =
      json_string_value(json_object_get(env, "ATOM_PROFILER_TIMEOUT"));
  double s;

  if (v == NULL)
    v = getenv("ATOM_PROFILER_TIMEOUT");
  s = v != NULL ? strtod(v, NULL) : 0;
  return s >= 1 && s < 1e6 ? (int)(s + 0.999) : cfg->profiler_timeout_s;
}

/* MODEL PORT ISL OSL CONC PROMPT_MULTIPLIER PROFILE [bench words]. */
static void bench_words(struct build *b, struct words *w, int pm, bool profile,
                        char *const *extra, bool no_warmups)
{
  push_script(w, b->cfg->bench_script);
  push(w, b->p->model);
  pushf(w, "%lld", b->cfg->atom_port);
  pushf(w, "%lld", param_int(b->params, "isl"));
  pushf(w, "%lld", param_int(b->params, "osl"));
  pushf(w, "%lld", param_int(b->params, "conc"));
  pushf(w, "%lld", pm);
  push(w, profile ? "1" : "0");
  push_all(w, extra);
  /* argparse: the last value wins over the script's --num-warmups. */
  if (no_warmups) {
    push(w, "--num-warmups");
    push(w, "0");
  }
}

/* The bench's words: the request's bench_args, then the preset variant's
 * bench_args, or without a preset --use-chat-template when the model has
 * a template (docs/ATOM.md: a workload without it is silently wrong). */
static int bench_extra(struct build *b, struct words *out, struct tr_err *err)
{
  char **req = param_words(b->params, "bench_args"), **var = NULL;
  const char *why = "preset";
  bool chat = false;
  int rc = 0;

  push_all(out, req);
  if (b->pre.model != NULL) {
    json_t *applied = json_array();

    var = preset_words(b->pre.variant, "bench_args", err);
    if (var == NULL)
      rc = err && err->code ? err->code : TR_ENOMEM;
    push_unless_given(out, var, req, applied);
    json_object_set_new(b->preset_json, "bench_args", applied);
  } else if ((rc = chat_template(b->p->model, &chat, &why, err)) == 0 && chat &&
             !words_have_flag(out->v, "use-chat-template")) {
    push(out, "--use-chat-template");
  }
  chat = chat || words_have_flag(out->v, "use-chat-template");
  json_object_set_new(b->p->extra, "use_chat_template", json_boolean(chat));
  json_object_set_new(b->p->extra, "chat_template_source", json_string(why));
  tr_words_free(var);
  free(req);
  return rc;
}

static bool dir_empty(const char *path)
{
  DIR *d = opendir(path);
  struct dirent *e;
  bool empty = true;

  if (d == NULL)
    return true;
  while (empty && (e = readdir(d)) != NULL)
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  closedir(d);
  return empty;
}

/* A folder that must start empty (docs/ATOM.md: the trace folder; the
 * scripts' working folder): one left by a database that was reset is
 * moved aside, never deleted. */
static int fresh_dir(const char *dir, json_t *extra, struct tr_err *err)
{
  char *moved;
  int rc;

  if (!dir_empty(dir)) {
    if (asprintf(&moved, "%s.old-%lld", dir, (long long)tr_now_ns()) < 0)
      return tr_err_set(err, TR_ENOMEM, "", "out of memory");
    rc = rename(dir, moved) == 0 ? 0 : -errno;
    if (rc == 0)
      json_object_set_new(extra, "moved_aside", json_string(moved));
    free(moved);
    if (rc != 0)
      return tr_err_set(err, rc, "", "cannot move %s aside: %s", dir,
                        strerror(-rc));
  }
  if ((rc = tr_mkdir_p(dir)) != 0)
    return tr_err_set(err, rc, "", "cannot create %s: %s", dir, strerror(-rc));
  return 0;
}

/* The request's tp, else the preset's config.tp, else TR_DEFAULT_TP. */
static const char *resolve_tp(struct build *b)
{
  json_t *ptp = json_object_get(json_object_get(b->pre.model, "config"), "tp");

  if (json_is_integer(json_object_get(b->params, "tp"))) {
    b->p->tp = param_int(b->params, "tp");
    return "request";
  }
  if (json_is_integer(ptp) && json_integer_value(ptp) >= 1 &&
      json_integer_value(ptp) <= 1024) {
    b->p->tp = (int)json_integer_value(ptp);
    return "preset";
  }
  b->p->tp = TR_DEFAULT_TP;
  return "default";
}

static int find_preset(struct build *b, struct tr_err *err)
{
  const char *variant = param_str(b->params, "variant");
  int rc;

  if (b->cfg->models_json[0] == '\0') {
    if (variant != NULL && variant[0] != '\0')
      return tr_err_set(err, TR_EINVAL, "variant",
                        "variant \"%s\" asked for, but models_json is not "
                        "set",
                        variant);
    return 0;
  }
  rc = tr_preset_find(b->cfg->models_json, param_str(b->params, "model"),
                      variant, &b->pre, err);
  return rc < 0 ? rc : 0;
}

/* extra.preset: what matched and what it added (null: no preset). */
static void preset_extra(struct build *b)
{
  const char *label =
      json_string_value(json_object_get(b->pre.variant, "label"));

  if (b->pre.model == NULL) {
    json_object_set_new(b->p->extra, "preset", json_null());
    return;
  }
  b->preset_json = json_pack("{s:s,s:s,s:s}", "match", b->pre.match, "variant",
                             label ? label : "", "model", b->p->model);
  json_object_set_new(b->p->extra, "preset", b->preset_json);
}

static int build_start(struct build *b, struct words *start, struct words *env,
                       struct tr_err *err)
{
  struct words server = { 0 };
  json_t *env_obj;
  int rc;

  push_script(start, b->cfg->start_script);
  push(start, b->p->model);
  pushf(start, "%lld", b->p->tp);
  pushf(start, "%lld", b->cfg->atom_port);
  push(start, "--torch-profiler-dir");
  push(start, b->dirs->trace);
  /* ATOM then profiles each graph capture into rank_N/capture_traces/,
   * which decode's matching reads (docs/DECODE.md). */
  if (json_is_true(json_object_get(b->params, "mark_trace")))
    push(start, "--mark-trace");
  rc = server_words(b, &server, err);
  push_all(start, server.v);
  /* A disaggregated server (--enable-rapidserve) exports each rank in a
   * prefill/ and a decode/ half (docs/ATOM.md). */
  b->p->pp_pcp = flag_int(server.v, "pipeline-parallel-size", 1) *
                 flag_int(server.v, "prefill-context-parallel-size", 1) *
                 (words_have_flag(server.v, "enable-rapidserve") ? 2 : 1);
  b->p->ranks_argv =
      b->p->tp * b->p->pp_pcp * flag_int(server.v, "data-parallel-size", 1);
  tr_words_free(server.v);
  env_obj = server_env(b);
  env_words(env_obj, env);
  b->p->profiler_timeout_s = profiler_timeout(b->cfg, env_obj);
  json_object_set_new(json_object_get(b->p->extra, "commands"), "start_env",
                      env_obj);
  return rc;
}

/* The bench runs: with profile_control bench one run whose --profile starts
 * the profiler after ATOM's CONC*2 warm-ups; with daemon a warm-up run of
 * the same CONC*2 requests, then (traced POSTs /start_profile) the profiled
 * run without warm-ups, so the trace holds the CONC*PROMPT_MULTIPLIER
 * prompts and nothing else. */
static int build_bench(struct build *b, struct words *warmup,
                       struct words *bench, struct tr_err *err)
{
  struct words extra = { 0 };
  int pm = param_int(b->params, "prompt_multiplier");
  bool daemon = b->cfg->profile_control == CFG_PROFILE_DAEMON;
  int rc = bench_extra(b, &extra, err);

  if (daemon)
    bench_words(b, warmup, 2, false, extra.v, true);
  bench_words(b, bench, pm, !daemon, extra.v, daemon);
  tr_words_free(extra.v);
  return rc;
}

static void commands_extra(struct cap_plan *p)
{
  json_t *c = json_object_get(p->extra, "commands");

  json_object_set_new(c, "stop", cap_words_json(p->stop_argv));
  json_object_set_new(c, "start", cap_words_json(p->start_argv));
  json_object_set_new(c, "bench", cap_words_json(p->bench_argv));
  if (p->warmup_argv != NULL)
    json_object_set_new(c, "warmup", cap_words_json(p->warmup_argv));
}

static int plan(struct build *b, struct tr_err *err)
{
  struct words start = { 0 }, env = { 0 }, warmup = { 0 }, bench = { 0 },
               stop = { 0 };
  const char *tp_source;
  int rc;

  if ((b->p->model = model_path(param_str(b->params, "model"), &b->pre)) ==
      NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  preset_extra(b);
  tp_source = resolve_tp(b);
  push_script(&stop, b->cfg->stop_script);
  rc = build_start(b, &start, &env, err);
  if (rc == 0)
    rc = build_bench(b, &warmup, &bench, err);
  b->p->start_argv = start.v;
  b->p->start_env = env.v;
  b->p->warmup_argv = warmup.v;
  b->p->bench_argv = bench.v;
  b->p->stop_argv = stop.v;
  json_object_set_new(
      b->p->extra, "launch",
      json_pack("{s:s,s:i,s:s,s:i,s:i}", "model", b->p->model, "tp", b->p->tp,
                "tp_source", tp_source, "ranks_argv", b->p->ranks_argv,
                "profiler_timeout_s", b->p->profiler_timeout_s));
  commands_extra(b->p);
  if (rc == 0 && (start.oom || env.oom || warmup.oom || bench.oom || stop.oom))
    rc = tr_err_set(err, TR_ENOMEM, "", "out of memory");
  return rc;
}

int cap_plan_build(const struct cfg *cfg, json_t *params,
                   const struct cap_dirs *dirs, struct cap_plan **out,
                   struct tr_err *err)
{
  struct build b = { cfg, params, dirs, { 0 }, NULL, NULL };
  int rc;

  if ((b.p = calloc(1, sizeof(*b.p))) == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  b.p->extra = json_pack("{s:s,s:s,s:{}}", "trace_dir", dirs->trace, "log_dir",
                         dirs->log, "commands");
  if ((rc = tr_mkdir_p(dirs->log)) != 0)
    rc = tr_err_set(err, rc, "", "cannot create %s: %s", dirs->log,
                    strerror(-rc));
  if (rc == 0)
    rc = fresh_dir(dirs->trace, b.p->extra, err);
  if (rc == 0)
    rc = fresh_dir(dirs->work, b.p->extra, err);
  if (rc == 0)
    rc = find_preset(&b, err);
  if (rc == 0)
    rc = plan(&b, err);
  tr_preset_free(&b.pre);
  if (rc != 0) {
    cap_plan_free(b.p);
    return rc;
  }
  *out = b.p;
  return 0;
}

void cap_plan_free(struct cap_plan *p)
{
  if (p == NULL)
    return;
  tr_words_free(p->start_argv);
  tr_words_free(p->start_env);
  tr_words_free(p->warmup_argv);
  tr_words_free(p->bench_argv);
  tr_words_free(p->stop_argv);
  free(p->model);
  json_decref(p->extra);
  free(p);
}
