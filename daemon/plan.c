/*
 * What a capture will run, decided before it runs (pool thread): the
 * argv of each ATOM script, the server's environment, and the ATOM
 * know-how of docs/ATOM.md that a person would otherwise forget:
 * PROMPT_MULTIPLIER 1, ATOM_PROFILER_MORE on the server (never the bench),
 * --use-chat-template when the model has a chat template, the per-model
 * presets of ATOM's models.json, and a fresh, empty trace folder.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cap_int.h"

struct words {
  char **v; /* NULL-terminated */
  size_t n, cap;
  bool oom;
};

static void push(struct words *w, const char *s)
{
  if (s == NULL)
    s = "";
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
  if ((w->v[w->n] = strdup(s)) == NULL) {
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

static void free_words(char **v)
{
  for (char **p = v; p != NULL && *p != NULL; p++)
    free(*p);
  free(v);
}

static json_t *words_json(char **v)
{
  json_t *a = json_array();

  for (char **p = v; p != NULL && *p != NULL; p++)
    json_array_append_new(a, json_string(*p));
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

/* The trace folder must start empty (docs/ATOM.md): a folder left by a
 * database that was reset is moved aside, never deleted. */
static int fresh_dir(const char *dir, char **moved, struct tr_err *err)
{
  struct stat st;
  int rc;

  if (stat(dir, &st) == 0 && !dir_empty(dir)) {
    if (asprintf(moved, "%s.old-%lld", dir, (long long)tr_now_ns()) < 0)
      return tr_err_set(err, TR_ENOMEM, "", "out of memory");
    if (rename(dir, *moved) != 0)
      return tr_err_set(err, -errno, "", "cannot move %s aside: %s", dir,
                        strerror(errno));
  }
  if ((rc = tr_mkdir_p(dir)) != 0)
    return tr_err_set(err, rc, "", "cannot create %s: %s", dir, strerror(-rc));
  return 0;
}

static const char *base_name(const char *path)
{
  size_t n = strlen(path);
  const char *slash;

  while (n > 1 && path[n - 1] == '/')
    n--;
  for (slash = path + n - 1; slash > path && slash[-1] != '/'; slash--)
    ;
  return slash;
}

/* Compares base names, ignoring trailing slashes. */
static bool same_base(const char *a, const char *b)
{
  const char *x = base_name(a), *y = base_name(b);
  size_t nx = strcspn(x, "/"), ny = strcspn(y, "/");

  return nx == ny && strncmp(x, y, nx) == 0;
}

/* The entry of models.json for model: its path equals the model's, or
 * has the same last component, or its name is that component. New
 * reference or NULL. */
static json_t *find_preset(const char *models_json, const char *model)
{
  json_t *doc = json_load_file(models_json, 0, NULL), *list, *entry, *hit;
  size_t i;

  if (doc == NULL)
    return NULL;
  list = json_is_array(doc) ? doc : json_object_get(doc, "models");
  hit = NULL;
  json_array_foreach(list, i, entry) {
    const char *path = json_string_value(json_object_get(entry, "path"));
    const char *name = json_string_value(json_object_get(entry, "name"));

    if ((path != NULL &&
         (strcmp(path, model) == 0 || same_base(path, model))) ||
        (name != NULL && same_base(name, model))) {
      hit = json_incref(entry);
      break;
    }
  }
  json_decref(doc);
  return hit;
}

/* A preset member at the entry or inside its "config". */
static json_t *preset_get(json_t *entry, const char *key)
{
  json_t *v = json_object_get(entry, key);

  return v ? v : json_object_get(json_object_get(entry, "config"), key);
}

/* True when the request's server_args already give flag (as `--flag` or
 * `--flag=value`). */
static bool has_flag(json_t *args, const char *word)
{
  size_t n = strcspn(word, "="), i;
  json_t *a;

  json_array_foreach(args, i, a) {
    const char *s = json_string_value(a);

    if (s != NULL && strncmp(s, word, n) == 0 && (s[n] == '\0' || s[n] == '='))
      return true;
  }
  return false;
}

/* Preset server args not already set by the request, as argv words. */
static void preset_args(json_t *entry, json_t *server_args, struct words *out,
                        json_t *applied)
{
  const char *text = json_string_value(preset_get(entry, "extra_args"));
  char *copy = text ? strdup(text) : NULL, *save = NULL;
  struct words w = { 0 };

  for (char *t = copy ? strtok_r(copy, " \t\n", &save) : NULL; t != NULL;
       t = strtok_r(NULL, " \t\n", &save))
    push(&w, t);
  for (size_t i = 0; i < w.n; i++) {
    bool has_value = w.v[i][0] == '-' && i + 1 < w.n && w.v[i + 1][0] != '-';
    bool skip = w.v[i][0] == '-' && has_flag(server_args, w.v[i]);

    for (size_t k = 0; k <= (size_t)has_value; k++) {
      if (!skip) {
        push(out, w.v[i + k]);
        json_array_append_new(applied, json_string(w.v[i + k]));
      }
    }
    i += has_value;
  }
  free_words(w.v);
  free(copy);
}

/* Preset env lines "K=V" into env unless the request set K. */
static void preset_env(json_t *entry, json_t *req_env, json_t *env,
                       json_t *applied)
{
  const char *text = json_string_value(preset_get(entry, "env_vars"));
  char *copy = text ? strdup(text) : NULL, *save = NULL;

  for (char *t = copy ? strtok_r(copy, "\n", &save) : NULL; t != NULL;
       t = strtok_r(NULL, "\n", &save)) {
    char *eq, *key = t + strspn(t, " \t");

    if ((eq = strchr(key, '=')) == NULL || eq == key)
      continue;
    *eq = '\0';
    if (json_object_get(req_env, key) != NULL)
      continue;
    json_object_set_new(env, key, json_string(eq + 1));
    json_object_set_new(applied, key, json_string(eq + 1));
  }
  free(copy);
}

/* Docs/ATOM.md: a non-null chat_template in tokenizer_config.json means
 * the bench needs --use-chat-template, or the workload is silently wrong. */
static bool has_chat_template(const char *model)
{
  char *path;
  json_t *doc, *t;
  bool yes;

  if (asprintf(&path, "%s/tokenizer_config.json", model) < 0)
    return false;
  doc = json_load_file(path, 0, NULL);
  free(path);
  t = json_object_get(doc, "chat_template");
  yes = t != NULL && !json_is_null(t);
  json_decref(doc);
  return yes;
}

int cap_param_int(json_t *params, const char *key, int dflt)
{
  json_t *v = json_object_get(params, key);

  return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static void push_strings(struct words *w, json_t *arr)
{
  size_t i;
  json_t *a;

  json_array_foreach(arr, i, a)
    if (json_is_string(a))
      push(w, json_string_value(a));
}

/* start: MODEL TP PORT --torch-profiler-dir DIR [preset] [server_args]. */
static void build_start(const struct cfg *cfg, json_t *params,
                        const char *trace_dir, json_t *preset, struct words *w,
                        json_t *extra)
{
  json_t *applied = json_object(), *args = json_array();

  push_script(w, cfg->start_script);
  push(w, json_string_value(json_object_get(params, "model")));
  pushf(w, "%lld", cap_param_int(params, "tp", 8));
  pushf(w, "%lld", cfg->atom_port);
  push(w, "--torch-profiler-dir");
  push(w, trace_dir);
  if (preset != NULL)
    preset_args(preset, json_object_get(params, "server_args"), w, args);
  push_strings(w, json_object_get(params, "server_args"));
  if (preset != NULL) {
    json_object_set_new(applied, "match",
                        json_incref(json_object_get(preset, "path")
                                        ? json_object_get(preset, "path")
                                        : json_object_get(preset, "name")));
    json_object_set_new(applied, "args", args);
    json_object_set_new(extra, "preset", applied);
  } else {
    json_decref(args);
    json_decref(applied);
    json_object_set_new(extra, "preset", json_null());
  }
}

/* The server's env additions: the request's, the preset's where the
 * request is silent, and ATOM_PROFILER_MORE from "more" (docs/ATOM.md:
 * it belongs on the server). */
static void build_env(json_t *params, json_t *preset, struct words *w,
                      json_t *extra)
{
  json_t *req_env = json_object_get(params, "env"), *env = json_object();
  json_t *applied = json_object(), *v;
  const char *key;
  char *kv;

  if (json_is_object(req_env))
    json_object_update(env, req_env);
  if (preset != NULL) {
    preset_env(preset, req_env, env, applied);
    json_object_set_new(json_object_get(extra, "preset"), "env", applied);
  } else {
    json_decref(applied);
  }
  json_object_set_new(
      env, "ATOM_PROFILER_MORE",
      json_string(json_is_true(json_object_get(params, "more")) ? "1" : "0"));
  json_object_foreach(env, key, v) {
    if (!json_is_string(v) ||
        asprintf(&kv, "%s=%s", key, json_string_value(v)) < 0)
      continue;
    push(w, kv);
    free(kv);
  }
  json_object_set_new(json_object_get(extra, "commands"), "start_env", env);
}

/* bench: MODEL PORT ISL OSL CONC PROMPT_MULTIPLIER PROFILE [bench_args].
 * PROFILE 1 lets the bench start/stop the profiler; with
 * profile_control=daemon traced does, around a bench run with PROFILE 0. */
static void build_bench(const struct cfg *cfg, json_t *params, struct words *w,
                        json_t *extra)
{
  json_t *bench_args = json_object_get(params, "bench_args");
  const char *model = json_string_value(json_object_get(params, "model"));
  bool chat = has_chat_template(model);

  push_script(w, cfg->bench_script);
  push(w, model);
  pushf(w, "%lld", cfg->atom_port);
  pushf(w, "%lld", cap_param_int(params, "isl", 1024));
  pushf(w, "%lld", cap_param_int(params, "osl", 1024));
  pushf(w, "%lld", cap_param_int(params, "conc", 64));
  pushf(w, "%lld", cap_param_int(params, "prompt_multiplier", 1));
  push(w, cfg->profile_control == CFG_PROFILE_DAEMON ? "0" : "1");
  push_strings(w, bench_args);
  if (chat && !has_flag(bench_args, "--use-chat-template"))
    push(w, "--use-chat-template");
  json_object_set_new(extra, "use_chat_template", json_boolean(chat));
}

void cap_plan_free(struct cap_plan *p)
{
  if (p == NULL)
    return;
  free_words(p->start_argv);
  free_words(p->start_env);
  free_words(p->bench_argv);
  free_words(p->stop_argv);
  json_decref(p->extra);
  free(p->moved_aside);
  free(p);
}

int cap_plan_build(const struct cfg *cfg, json_t *params, const char *trace_dir,
                   const char *log_dir, struct cap_plan **out,
                   struct tr_err *err)
{
  struct cap_plan *p = calloc(1, sizeof(*p));
  struct words start = { 0 }, env = { 0 }, bench = { 0 }, stop = { 0 };
  json_t *preset = NULL, *commands;
  int rc;

  if (p == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  if ((rc = tr_mkdir_p(log_dir)) != 0 ||
      (rc = fresh_dir(trace_dir, &p->moved_aside, err)) != 0) {
    cap_plan_free(p);
    return tr_err_set(err, rc, "", "cannot create %s: %s", log_dir,
                      strerror(-rc));
  }
  if (cfg->models_json[0] != '\0')
    preset = find_preset(cfg->models_json,
                         json_string_value(json_object_get(params, "model")));
  p->extra = json_pack("{s:s,s:s,s:{}}", "trace_dir", trace_dir, "log_dir",
                       log_dir, "commands");
  if (p->moved_aside != NULL)
    json_object_set_new(p->extra, "trace_dir_moved_aside",
                        json_string(p->moved_aside));
  commands = json_object_get(p->extra, "commands");
  push_script(&stop, cfg->stop_script);
  build_start(cfg, params, trace_dir, preset, &start, p->extra);
  build_env(params, preset, &env, p->extra);
  build_bench(cfg, params, &bench, p->extra);
  json_decref(preset);
  p->start_argv = start.v;
  p->start_env = env.v;
  p->bench_argv = bench.v;
  p->stop_argv = stop.v;
  json_object_set_new(commands, "stop", words_json(stop.v));
  json_object_set_new(commands, "start", words_json(start.v));
  json_object_set_new(commands, "bench", words_json(bench.v));
  if (start.oom || env.oom || bench.oom || stop.oom) {
    cap_plan_free(p);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  *out = p;
  return 0;
}
