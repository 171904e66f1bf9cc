#include "atom/plan.h"

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

#include "atom/policy.h"
#include "atom/options.h"
#include "atom/chat_template.h"
#include "common/lifecycle.h"
#include "common/reals.h"
#include "atom/preset.h"

/* The start script's default of MAX_NUM_SEQS (start_atom_server.sh:18). */
#define SCRIPT_MAX_NUM_SEQS 256
/* ATOM's default -tp (arg_utils.py:112), which ATOM CI runs a preset
 * without config.tp at: it passes no -tp then (.github/scripts/
 * catalog.py:91). */
#define ATOM_DEFAULT_TP 1
/* The bench's default --seed (benchmark_serving.py:1092). */
#define ATOM_DEFAULT_SEED 0

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
  text = tr_json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
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

/* ---- flags, as ATOM's server parser reads them (atom/options.h) ---- */

static bool words_have_flag(char *const *words, const char *flag)
{
  return tr_atom_opt_given(TR_ATOM_SERVER, words, flag);
}

/* The integer value of the last occurrence of flag (argparse: the last
 * wins), or dflt. */
static int flag_int(char *const *words, const char *flag, int dflt)
{
  const char *v = tr_atom_opt_last(TR_ATOM_SERVER, words, flag);
  char *end = NULL;
  long n = v != NULL ? strtol(v, &end, 10) : 0;

  return v != NULL && end != v && n > 0 && n <= INT_MAX ? (int)n : dflt;
}

/* Appends preset words, but not a flag (with its value) that the request's
 * own words set: the request wins, and an argparse "append" option would
 * otherwise keep both. applied gets what was added. */
static void push_unless_given(struct words *w, enum tr_atom_prog prog,
                              char *const *preset, char *const *req,
                              json_t *applied)
{
  for (size_t i = 0; preset != NULL && preset[i] != NULL; i++) {
    const struct tr_atom_opt *o = tr_atom_is_option(preset[i])
                                      ? tr_atom_opt_find(prog, preset[i])
                                      : NULL;
    bool has_value = o != NULL && o->arity != TR_ARITY_NONE &&
                     preset[i + 1] != NULL &&
                     !tr_atom_is_option(preset[i + 1]) &&
                     strchr(preset[i], '=') == NULL;
    char name[96];

    if (o != NULL &&
        tr_atom_opt_given(prog, req, tr_atom_opt_name(o, name, sizeof(name)))) {
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

/* Every word the scripts pass on unquoted, the preset's too, as they
 * will get it: a JSON object or array has what the shell would split or
 * expand escaped inside its strings by cap_word_for_shell(), so only its
 * blanks are looked for (its brackets match no file of the empty working
 * folder); any other word passes the policy's rule (atom/policy.h). */
static int check_shell_safe(char *const *words, const char *what,
                            struct tr_err *err)
{
  for (; words != NULL && *words != NULL; words++) {
    if ((*words)[0] != '{' && (*words)[0] != '[') {
      if (atom_policy_shell_word(*words, what, err) != 0)
        return TR_EINVAL;
    } else if (strpbrk(*words, " \t\n") != NULL) {
      return tr_err_set(err, TR_EINVAL, what,
                        "%s: the word \"%.200s\" holds blanks and is not "
                        "JSON: ATOM's start script would split it",
                        what, *words);
    }
  }
  return 0;
}

/* ---- the plan ---- */

struct build {
  const struct cfg *cfg;
  json_t *params;
  const struct cap_dirs *dirs;
  struct tr_preset pre; /* pre.model NULL: no preset */
  struct cap_plan *p;
  json_t *preset_json;  /* extra.preset */
  char **preset_server; /* the preset's server words, config then variant */
  const char *file;     /* models.json, or NULL */
  char file_buf[4096];
};

/* --trust-remote-code, config.extra_args, variant.extra_args (ATOM CI's
 * order, .github/scripts/catalog.py:85-96), then the request's
 * server_args; every word made safe for the start script. */
static int server_words(struct build *b, struct words *out, struct tr_err *err)
{
  char **req = param_words(b->params, "server_args");
  json_t *applied = json_array();
  struct words raw = { 0 };
  int rc = 0;

  if (b->pre.model != NULL) {
    if (json_is_true(json_object_get(json_object_get(b->pre.model, "config"),
                                     "trust_remote_code")) &&
        !words_have_flag(req, "--trust-remote-code")) {
      push(&raw, "--trust-remote-code");
      json_array_append_new(applied, json_string("--trust-remote-code"));
    }
    push_unless_given(&raw, TR_ATOM_SERVER, b->preset_server, req, applied);
    json_object_set_new(b->preset_json, "args", applied);
  } else {
    json_decref(applied);
  }
  push_all(&raw, req);
  for (size_t i = 0; i < raw.n; i++) {
    char *safe = cap_word_for_shell(raw.v[i]);

    push(out, safe);
    free(safe);
  }
  rc = check_shell_safe(out->v, "server_args", err);
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

/* MAX_NUM_SEQS, which the start script passes as --max-num-seqs (its
 * default 256, start_atom_server.sh:18,87): a capture whose conc is above
 * it measures a queue, not the server. Unless the request sets it (env or
 * --max-num-seqs), or the preset's flags do (ATOM CI's own choice,
 * models.json), traced sets it to at least conc. extra.max_num_seqs says
 * what the server gets and why. */
static void max_num_seqs(struct build *b, char *const *server, json_t *env)
{
  const char *req_env = json_string_value(json_object_get(
      json_object_get(b->params, "env"), "MAX_NUM_SEQS"));
  char **req = param_words(b->params, "server_args");
  /* One launch serves a sweep's every point: it is made for the largest
   * (docs/SWEEPS.md). */
  int conc = b->dirs->conc_max > param_int(b->params, "conc")
                 ? b->dirs->conc_max
                 : param_int(b->params, "conc");
  int value;
  const char *source;
  char text[16];

  if (tr_atom_opt_given(TR_ATOM_SERVER, req, "--max-num-seqs")) {
    value = flag_int(server, "--max-num-seqs", 0);
    source = "the request's --max-num-seqs";
  } else if (req_env != NULL) {
    value = atoi(req_env);
    source = "the request's env MAX_NUM_SEQS";
  } else if (tr_atom_opt_given(TR_ATOM_SERVER, b->preset_server,
                               "--max-num-seqs")) {
    value = flag_int(server, "--max-num-seqs", 0);
    source = "the preset's --max-num-seqs (as ATOM CI runs it)";
  } else {
    value = conc > SCRIPT_MAX_NUM_SEQS ? conc : SCRIPT_MAX_NUM_SEQS;
    source = conc > SCRIPT_MAX_NUM_SEQS
                 ? "traced: conc, above the start script's default 256"
                 : "traced: the start script's default 256 (at least conc)";
    snprintf(text, sizeof(text), "%d", value);
    json_object_set_new(env, "MAX_NUM_SEQS", json_string(text));
  }
  json_object_set_new(
      b->p->extra, "max_num_seqs",
      json_pack("{s:i,s:s,s:b}", "value", value, "source", source, "queues",
                value > 0 && value < conc));
  free(req);
}

/* The server's environment additions: the request's, the preset's where
 * the request is silent (env_vars of the model and its variant, and
 * config.kv_cache_dtype as the start script's KV_CACHE_DTYPE),
 * MAX_NUM_SEQS, and ATOM_PROFILER_MORE from "more" (it belongs on the
 * server). */
static json_t *server_env(struct build *b, char *const *server)
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
  max_num_seqs(b, server, env);
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
                        char *const *extra)
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
}

/* --use-chat-template as ATOM decides it (atom/chat_template.h), for the
 * model launched; extra.chat_template records which rule decided. */
static int chat_template(struct build *b, char *const *req, char *const *var,
                         struct words *out, struct tr_err *err)
{
  enum tr_chat_given given = TR_CHAT_NOT_GIVEN;
  struct tr_chat_probe probe;
  struct tr_chat chat;
  int rc;

  if (tr_atom_opt_given(TR_ATOM_BENCH, req, "--use-chat-template"))
    given = TR_CHAT_REQUEST;
  else if (b->pre.model != NULL)
    given = tr_atom_opt_given(TR_ATOM_BENCH, var, "--use-chat-template")
                ? TR_CHAT_PRESET_ON
                : TR_CHAT_PRESET_OFF;
  if ((rc = tr_chat_probe(b->p->model, &probe, err)) != 0 ||
      (rc = tr_chat_decide(given, &probe, &chat, err)) != 0)
    return rc;
  if (chat.use && given == TR_CHAT_NOT_GIVEN)
    push(out, "--use-chat-template");
  json_object_set_new(b->p->extra, "use_chat_template", json_boolean(chat.use));
  json_object_set_new(b->p->extra, "chat_template_source",
                      json_string(chat.rule));
  json_object_set_new(b->p->extra, "chat_template",
                      json_pack("{s:b,s:s,s:s}", "use", chat.use, "rule",
                                chat.rule, "applies", chat.applies));
  return 0;
}

/* The bench's words: the request's bench_args, then the preset variant's
 * bench_args (ATOM CI passes them as they are), or --use-chat-template
 * where the model's template asks for it. */
static int bench_extra(struct build *b, struct words *out, struct tr_err *err)
{
  char **req = param_words(b->params, "bench_args"), **var = NULL;
  int rc = 0;

  push_all(out, req);
  if (b->pre.model != NULL) {
    json_t *applied = json_array();

    if ((var = preset_words(b->pre.variant, "bench_args", err)) == NULL)
      rc = err && err->code ? err->code : TR_ENOMEM;
    push_unless_given(out, TR_ATOM_BENCH, var, req, applied);
    json_object_set_new(b->preset_json, "bench_args", applied);
  }
  if (rc == 0)
    rc = chat_template(b, req, var, out, err);
  if (rc == 0)
    rc = check_shell_safe(out->v, "bench_args", err);
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

/* The folder of path (a file), made when missing. */
static int file_folder(const char *path, const char *key, json_t *made,
                       struct tr_err *err)
{
  char *dir = strdup(path), *slash;
  struct stat st;
  int rc = 0;

  if (dir == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
    *slash = '\0';
    if (stat(dir, &st) == 0)
      rc = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    else if ((rc = tr_mkdir_p(dir)) == 0 && made != NULL)
      json_array_append_new(made, json_string(dir));
    if (rc != 0)
      tr_err_set(err, rc, key,
                 "cannot make %s (the folder of %s, which ATOM writes "
                 "without making it): %s",
                 dir, key, strerror(-rc));
  }
  free(dir);
  return rc;
}

int cap_atom_folders(const struct cfg *cfg, json_t *made, struct tr_err *err)
{
  int rc = file_folder(cfg->server_log, "server_log", made, err);

  return rc != 0 ? rc : file_folder(cfg->bench_result, "bench_result", made,
                                    err);
}

/* The request's tp; else the preset's config.tp; else, with a preset,
 * ATOM's own default (a preset without config.tp runs so in ATOM CI);
 * else TR_DEFAULT_TP (the seed's). */
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
  if (b->pre.model != NULL) {
    b->p->tp = ATOM_DEFAULT_TP;
    return "atom_default";
  }
  b->p->tp = TR_DEFAULT_TP;
  return "default";
}

/* The preset's server words: config.extra_args, then variant.extra_args
 * (shell text, quotes parsed), into b->preset_server. */
static int preset_server_words(struct build *b, struct tr_err *err)
{
  char **cfg_w = preset_words(json_object_get(b->pre.model, "config"),
                              "extra_args", err);
  char **var_w = preset_words(b->pre.variant, "extra_args", err);
  struct words all = { 0 };
  int rc = 0;

  if (cfg_w == NULL || var_w == NULL)
    rc = err && err->code ? err->code : TR_ENOMEM;
  push_all(&all, cfg_w);
  push_all(&all, var_w);
  if (rc == 0 && all.oom)
    rc = tr_err_set(err, TR_ENOMEM, "", "out of memory");
  tr_words_free(cfg_w);
  tr_words_free(var_w);
  b->preset_server = all.v;
  return rc;
}

/* The preset (docs/ATOM.md, "Presets"): extra.preset says which entry and
 * variant applied, or why none did. */
static int find_preset(struct build *b, struct tr_err *err)
{
  const char *variant = param_str(b->params, "variant"), *why = NULL, *file;
  const char *model = param_str(b->params, "model");
  int rc = 0;

  file = tr_preset_file(b->cfg, b->file_buf, sizeof(b->file_buf), &why);
  b->file = file;
  if (file == NULL) {
    if (variant != NULL && variant[0] != '\0')
      return tr_err_set(err, TR_EINVAL, "variant",
                        "variant \"%s\" asked for, but there is no "
                        "models.json: %s",
                        variant, why);
  } else if ((rc = tr_preset_find(file, model, variant, &b->pre, err)) < 0) {
    return rc;
  }
  if (b->pre.model == NULL) {
    json_object_set_new(
        b->p->extra, "preset",
        json_pack("{s:b,s:s*,s:s}", "applied", false, "file", file, "why",
                  file == NULL ? why
                               : "no entry of the file has the model's last "
                                 "component as its path or display name"));
    return 0;
  }
  return preset_server_words(b, err);
}

/* extra.preset of a preset that applied: the file, the entry, the variant
 * and what they added (filled in as the argv is built). */
static void preset_extra(struct build *b)
{
  const char *label =
      json_string_value(json_object_get(b->pre.variant, "label"));

  b->preset_json =
      json_pack("{s:b,s:s,s:s,s:s,s:s}", "applied", true, "file", b->file,
                "match", b->pre.match, "variant", label ? label : "", "model",
                b->p->model);
  json_object_set_new(b->p->extra, "preset", b->preset_json);
}

/* The request judged again where it names files (atom/policy.h): a link
 * may have moved since the request was accepted. The model launched is
 * the one a variant names, beside the request's. */
static int judge_again(struct build *b, struct tr_err *err)
{
  bool trusts = json_is_true(json_object_get(
      json_object_get(b->pre.model, "config"), "trust_remote_code"));
  char *real = NULL;
  int rc;

  rc = atom_policy_model(b->cfg, b->p->model, "model", &real, err);
  if (rc == 0 && real != NULL)
    rc = atom_policy_folder(b->cfg, real, trusts, "model", err);
  free(real);
  if (rc == 0)
    rc = atom_policy_words(b->cfg, TR_ATOM_SERVER,
                           json_object_get(b->params, "server_args"),
                           "server_args", trusts, err);
  if (rc == 0)
    rc = atom_policy_words(b->cfg, TR_ATOM_BENCH,
                           json_object_get(b->params, "bench_args"),
                           "bench_args", false, err);
  if (rc == 0)
    rc = atom_policy_env(b->cfg, json_object_get(b->params, "env"), err);
  return rc;
}

/* DeepSeek-V4's --level 0 (atom/launch.h), after every other word of the
 * server; extra.level says what the server gets and why. */
static void compile_level(struct build *b, char *const *server,
                          struct words *start)
{
  struct tr_atom_level lv;

  tr_atom_level(b->p->model, b->pre.match, server, &lv);
  if (lv.add) {
    push(start, "--level");
    push(start, "0");
  }
  json_object_set_new(b->p->extra, "level",
                      json_pack("{s:i,s:b,s:s}", "value", lv.level, "added",
                                lv.add, "why", lv.why));
}

/* The preset's --draft-model hub id, launched from beside the model
 * (atom/launch.h); extra.preset.draft_model says which. */
static int draft_model(struct build *b, struct tr_err *err)
{
  json_t *note = json_object();
  int rc =
      tr_atom_draft_model(b->cfg, b->p->model, b->preset_server, note, err);

  if (json_object_size(note) > 0)
    json_object_set(b->preset_json, "draft_model", note);
  json_decref(note);
  return rc;
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
  b->p->pp_pcp = flag_int(server.v, "--pipeline-parallel-size", 1) *
                 flag_int(server.v, "--prefill-context-parallel-size", 1) *
                 (words_have_flag(server.v, "--enable-rapidserve") ? 2 : 1);
  b->p->ranks_argv = b->p->tp * b->p->pp_pcp *
                     flag_int(server.v, "--data-parallel-size", 1);
  b->p->fake_eplb = words_have_flag(server.v, "--fake-eplb");
  compile_level(b, server.v, start);
  env_obj = server_env(b, server.v);
  b->p->ngpus = tr_atom_launch_gpus(server.v, env_obj, b->p->ranks_argv,
                                    b->p->gpus, &b->p->gpu_util);
  tr_words_free(server.v);
  env_words(env_obj, env);
  b->p->profiler_timeout_s = profiler_timeout(b->cfg, env_obj);
  json_object_set_new(json_object_get(b->p->extra, "commands"), "start_env",
                      env_obj);
  return rc;
}

/* The seed the bench draws its prompts with: the request's --seed, else
 * the bench's default. */
static long long bench_seed(json_t *params)
{
  char **req = param_words(params, "bench_args");
  const char *v = tr_atom_opt_last(TR_ATOM_BENCH, req, "--seed");
  long long seed = v != NULL ? strtoll(v, NULL, 10) : ATOM_DEFAULT_SEED;

  free(req);
  return seed;
}

/* The bench runs: with profile_control bench one run whose --profile starts
 * the profiler after ATOM's CONC*2 warm-ups; with daemon a warm-up run of
 * the same CONC*2 requests, then (traced POSTs /start_profile) the profiled
 * run without warm-ups, so the trace holds the CONC*PROMPT_MULTIPLIER
 * prompts. The warm-up draws its prompts with another seed: with the
 * profiled run's own, ATOM's prefix cache would serve the profiled
 * prefills (the random dataset is a function of the seed,
 * benchmark_serving.py:186). argparse: the last --num-warmups and --seed
 * win over the script's and the request's. */
static int build_bench(struct build *b, struct words *warmup,
                       struct words *bench, struct tr_err *err)
{
  struct words extra = { 0 };
  int pm = param_int(b->params, "prompt_multiplier");
  bool daemon = b->cfg->profile_control == CFG_PROFILE_DAEMON;
  long long seed = bench_seed(b->params);
  int rc = bench_extra(b, &extra, err);

  if (rc == 0)
    rc = tr_atom_bench_backend(b->cfg, extra.v, err);
  bench_words(b, bench, pm, !daemon, extra.v);
  if (daemon) {
    bench_words(b, warmup, 2, false, extra.v);
    push(warmup, "--num-warmups");
    push(warmup, "0");
    push(warmup, "--seed");
    pushf(warmup, "%lld", seed + 1);
    push(bench, "--num-warmups");
    push(bench, "0");
    json_object_set_new(b->p->extra, "bench_seeds",
                        json_pack("{s:I,s:I}", "warmup", seed + 1, "profiled",
                                  seed));
  }
  tr_words_free(extra.v);
  return rc;
}

static json_t *gpu_list(const struct cap_plan *p)
{
  json_t *a = json_array();

  for (int i = 0; i < p->ngpus; i++)
    json_array_append_new(a, json_integer(p->gpus[i]));
  return a;
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

  if ((b->p->model = tr_preset_model_path(param_str(b->params, "model"),
                                          &b->pre)) == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  if (b->pre.model != NULL)
    preset_extra(b);
  tp_source = resolve_tp(b);
  push_script(&stop, b->cfg->stop_script);
  rc = judge_again(b, err);
  if (rc == 0 && b->pre.model != NULL)
    rc = draft_model(b, err);
  if (rc == 0)
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
      json_pack("{s:s,s:i,s:s,s:i,s:b,s:i,s:o,s:f}", "model", b->p->model, "tp",
                b->p->tp, "tp_source", tp_source, "ranks_argv",
                b->p->ranks_argv, "fake_eplb", b->p->fake_eplb,
                "profiler_timeout_s", b->p->profiler_timeout_s, "gpus",
                gpu_list(b->p), "gpu_memory_utilization", b->p->gpu_util));
  commands_extra(b->p);
  if (rc == 0 && (start.oom || env.oom || warmup.oom || bench.oom || stop.oom))
    rc = tr_err_set(err, TR_ENOMEM, "", "out of memory");
  return rc;
}

int atom_plan_build(const struct cfg *cfg, json_t *params,
                    const struct cap_dirs *dirs, struct cap_plan **out,
                    struct tr_err *err)
{
  struct build b = { .cfg = cfg, .params = params, .dirs = dirs };
  json_t *made = json_array();
  int rc;

  if ((b.p = calloc(1, sizeof(*b.p))) == NULL) {
    json_decref(made);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  b.p->extra = json_pack("{s:s,s:s,s:{},s:o}", "trace_dir", dirs->trace,
                         "log_dir", dirs->log, "commands", "atom_folders",
                         made);
  if ((rc = tr_mkdir_p(dirs->log)) != 0)
    rc = tr_err_set(err, rc, "", "cannot create %s: %s", dirs->log,
                    strerror(-rc));
  if (rc == 0)
    rc = dirs->joins ? tr_mkdir_p(dirs->trace)
                     : fresh_dir(dirs->trace, b.p->extra, err);
  if (rc == 0)
    rc = fresh_dir(dirs->work, b.p->extra, err);
  if (rc == 0)
    rc = cap_atom_folders(cfg, made, err);
  if (rc == 0)
    rc = find_preset(&b, err);
  if (rc == 0)
    rc = plan(&b, err);
  tr_preset_free(&b.pre);
  tr_words_free(b.preset_server);
  if (rc != 0) {
    atom_plan_free(b.p);
    return rc;
  }
  *out = b.p;
  return 0;
}

void atom_plan_free(struct cap_plan *p)
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
