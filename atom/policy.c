#include "atom/policy.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"

/* ---- paths under model_roots ---- */

/* A path with a ".." component, or "." ones, is refused before anything
 * is resolved: the answer does not depend on what exists. */
static bool climbs(const char *path)
{
  for (const char *p = path; *p != '\0';) {
    size_t n = strcspn(p, "/");

    if ((n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
      return true;
    p += n;
    p += *p == '/';
  }
  return false;
}

/* realpath() of path, or of its deepest existing folder with the rest
 * appended (a file the server will write does not exist yet; the part
 * that does not exist holds no link). New string or NULL. */
static char *resolve(const char *path)
{
  char *copy = strdup(path), *real = NULL, *out = NULL;
  size_t n = copy != NULL ? strlen(copy) : 0;
  const char *rest;

  while (copy != NULL && (real = realpath(copy, NULL)) == NULL && n > 1 &&
         (errno == ENOENT || errno == ENOTDIR)) {
    while (n > 1 && copy[n - 1] != '/')
      n--;
    n -= n > 1; /* the slash, unless it is the root */
    copy[n] = '\0';
  }
  rest = path + n;
  if (real != NULL && strcmp(real, "/") == 0 && rest[0] == '/')
    rest++; /* "/" + "/x": one slash */
  if (real != NULL && asprintf(&out, "%s%s", real, rest) < 0)
    out = NULL;
  free(real);
  free(copy);
  return out;
}

int atom_policy_path(const struct cfg *cfg, const char *path, const char *field,
                     char **resolved, struct tr_err *err)
{
  char *real;

  if (path[0] != '/' || climbs(path))
    return tr_err_set(err, TR_EINVAL, field,
                      "%s: \"%.200s\" must be an absolute path without "
                      "\".\" or \"..\"",
                      field, path);
  /* One answer whatever the path resolves to: traced resolves it as root,
   * and the target of a link inside a folder only root may read is no
   * business of the client's (imports answer the same way). */
  if ((real = resolve(path)) == NULL ||
      tr_path_root(cfg->model_roots, real) == NULL) {
    free(real);
    return tr_err_set(err, TR_EINVAL, field,
                      "%s: \"%.200s\" is outside model_roots once its "
                      "links are resolved",
                      field, path);
  }
  if (resolved != NULL)
    *resolved = real;
  else
    free(real);
  return 0;
}

/* A Hugging Face id: "name" or "org/name", each part of letters, digits,
 * '.', '_' and '-', not starting with '.'. */
static bool hub_id(const char *v)
{
  int slashes = 0;
  bool start = true;

  for (const char *p = v; *p != '\0'; p++) {
    if (*p == '/') {
      if (start || ++slashes > 1)
        return false;
      start = true;
      continue;
    }
    if (!(isalnum((unsigned char)*p) || strchr("._-", *p) != NULL) ||
        (start && *p == '.'))
      return false;
    start = false;
  }
  return !start;
}

int atom_policy_model(const struct cfg *cfg, const char *model,
                      const char *field, char **resolved, struct tr_err *err)
{
  *resolved = NULL;
  if (model[0] == '/')
    return atom_policy_path(cfg, model, field, resolved, err);
  if (!hub_id(model))
    return tr_err_set(err, TR_EINVAL, field,
                      "%s: \"%.200s\" is neither an absolute path nor a "
                      "Hugging Face id",
                      field, model);
  if (!cfg->allow_hub_ids)
    return tr_err_set(err, TR_EINVAL, field,
                      "%s: \"%.200s\" is a Hugging Face id, which the server "
                      "would download and load: refused unless "
                      "allow_hub_ids = true (models.json presets may name "
                      "them)",
                      field, model);
  return 0;
}

/* ---- words a script expands unquoted ---- */

/* docs/ATOM.md, "Scripts": start_atom_server.sh and run_benchmark.sh pass
 * their extra words on as $EXTRA_ARGS unquoted, so bash splits each word
 * again at blanks and expands it as a pattern when it holds '*', '?' or
 * '[' (a backslash too in bash 5.0; and on bash <= 5.1 ".?" matches ".."):
 * "<root>/u/[t]" would become whatever "<root>/u/t" is linked to. These
 * are refused in every server and bench word, never split or expanded.
 * Control characters would forge lines of the logs the scripts echo the
 * words into. Quotes, '$' and the like are left alone: the shell does not
 * look at them again in the result of an expansion. */
static const char shell_special[] = " \t\n*?[\\";

/* The first character of word the rule above refuses, or NULL. */
static const char *shell_unsafe(const char *word)
{
  for (const char *p = word; *p != '\0'; p++)
    if (strchr(shell_special, *p) != NULL || iscntrl((unsigned char)*p))
      return p;
  return NULL;
}

int atom_policy_shell_word(const char *word, const char *item,
                           struct tr_err *err)
{
  const char *p = shell_unsafe(word);
  const char *what, *would;

  if (p == NULL)
    return 0;
  if (*p == ' ' || *p == '\t' || *p == '\n') {
    what = *p == '\n' ? "a line break" : "a blank";
    would = "split into several words";
  } else if (iscntrl((unsigned char)*p)) {
    what = "a control character";
    would = "write into their logs as it is";
  } else {
    what = *p == '\\' ? "a backslash" : "a glob character";
    would = "expand as a pattern of file names";
  }
  return tr_err_set(err, TR_EINVAL, item,
                    "%s: \"%.200s\" holds %s (\"%c\"), which ATOM's "
                    "scripts would %s: they pass their extra words on "
                    "unquoted",
                    item, word, what, iscntrl((unsigned char)*p) ? '?' : *p,
                    would);
}

/* ---- values of options ---- */

static bool int_text(const char *v)
{
  const char *p = v + (v[0] == '-' || v[0] == '+');

  if (*p == '\0')
    return false;
  for (; *p != '\0'; p++)
    if (!isdigit((unsigned char)*p) && *p != '_')
      return false;
  return true;
}

/* Python's float(): a decimal or exponent number, inf, nan. */
static bool float_text(const char *v)
{
  char *end;

  if (v[0] == '\0' || isspace((unsigned char)v[0]))
    return false;
  strtod(v, &end);
  return *end == '\0';
}

static int bad_value(const char *item, const char *opt, const char *value,
                     const char *want, struct tr_err *err)
{
  return tr_err_set(err, TR_EINVAL, item, "%s: %s takes %s, not \"%.200s\"",
                    item, opt, want, value);
}

/* --chat-template: ATOM reads a file when the value names one
 * (api_server.py:2088), else takes it as the template itself. A value
 * with a '/' is taken as a path. */
static int check_template(const struct cfg *cfg, const char *item,
                          const char *value, struct tr_err *err)
{
  if (strchr(value, '/') == NULL)
    return 0;
  return atom_policy_path(cfg, value, item, NULL, err);
}

/* trusts: the preset sets --trust-remote-code (a model folder's
 * auto_map: atom_policy_folder()). */
static int check_value(const struct cfg *cfg, const struct tr_atom_opt *o,
                       const char *opt, const char *item, const char *value,
                       bool trusts, struct tr_err *err)
{
  json_t *doc;
  char *real = NULL;
  int rc = 0;

  switch (o->value) {
  case TR_VAL_INT:
    return int_text(value) ? 0 : bad_value(item, opt, value, "an integer",
                                           err);
  case TR_VAL_FLOAT:
    return float_text(value) ? 0 : bad_value(item, opt, value, "a number",
                                             err);
  case TR_VAL_CHOICE:
    return tr_atom_opt_choice(o, value)
               ? 0
               : tr_err_set(err, TR_EINVAL, item,
                            "%s: %s takes one of %s, not \"%.200s\"", item,
                            opt, o->choices, value);
  case TR_VAL_JSON:
    if ((doc = json_loads(value, JSON_DECODE_ANY, NULL)) == NULL)
      return bad_value(item, opt, value, "a JSON document", err);
    json_decref(doc);
    return 0;
  case TR_VAL_PATH: return atom_policy_path(cfg, value, item, NULL, err);
  case TR_VAL_MODEL:
    rc = atom_policy_model(cfg, value, item, &real, err);
    if (rc == 0 && real != NULL)
      rc = atom_policy_folder(cfg, real, trusts, item, err);
    free(real);
    return rc;
  case TR_VAL_TEMPLATE: return check_template(cfg, item, value, err);
  default: return 0;
  }
}

/* An option traced does not let a request give, with why. */
static int refused(const struct cfg *cfg, const struct tr_atom_opt *o,
                   const char *opt, const char *item, bool preset_trusts,
                   struct tr_err *err)
{
  switch (o->value) {
  case TR_VAL_OWN:
  case TR_VAL_ADDRESS:
    return tr_err_set(err, TR_EINVAL, item,
                      "%s: %s may not be given in a request: %s", item, opt,
                      o->why);
  case TR_VAL_MULTINODE:
    return tr_err_set(err, TR_EINVAL, item,
                      "%s: %s is not supported: %s; traced drives one "
                      "server on one node (docs/ATOM.md)",
                      item, opt, o->why);
  case TR_VAL_TRUST:
    if (preset_trusts || cfg->allow_trust_remote_code)
      return 0;
    return tr_err_set(err, TR_EINVAL, item,
                      "%s: --trust-remote-code runs the model folder's own "
                      "Python code as the server's user: only where the "
                      "models.json preset sets it, or with "
                      "allow_trust_remote_code = true",
                      item);
  default: return 0;
  }
}

/* One option word at words[*i] (and its values, advancing *i). */
static int check_option(const struct cfg *cfg, enum tr_atom_prog prog,
                        json_t *words, size_t *i, const char *member,
                        bool preset_trusts, struct tr_err *err)
{
  const char *word = json_string_value(json_array_get(words, *i));
  const char *eq = strchr(word, '='), *next;
  const struct tr_atom_opt *o = tr_atom_opt_find(prog, word);
  char item[64], opt[96];
  int rc;

  snprintf(item, sizeof(item), "%s[%zu]", member, *i);
  snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(word, "="), word);
  if (o == NULL)
    return tr_err_set(err, TR_EINVAL, item,
                      "%s: \"%.100s\" is not an option of ATOM's %s (%s); "
                      "options are given by their full name",
                      item, opt, prog == TR_ATOM_SERVER ? "server" : "bench",
                      prog == TR_ATOM_SERVER
                          ? "atom/model_engine/arg_utils.py, api_server.py"
                          : "atom/benchmarks/benchmark_serving.py");
  if ((rc = refused(cfg, o, opt, item, preset_trusts, err)) != 0 ||
      (rc = atom_policy_shell_word(word, item, err)) != 0)
    return rc;
  if (o->arity == TR_ARITY_NONE)
    return eq == NULL ? 0
                      : tr_err_set(err, TR_EINVAL, item,
                                   "%s: %s takes no value", item, opt);
  if (eq != NULL)
    return check_value(cfg, o, opt, item, eq + 1, preset_trusts, err);
  /* Values follow: one, an optional one, or every word up to the next
   * option (argparse never takes an option word as a value). */
  do {
    next = json_string_value(json_array_get(words, *i + 1));
    if (next == NULL || tr_atom_is_option(next)) {
      if (o->arity == TR_ARITY_ONE)
        return tr_err_set(err, TR_EINVAL, item, "%s: %s needs a value", item,
                          opt);
      return 0;
    }
    ++*i;
    snprintf(item, sizeof(item), "%s[%zu]", member, *i);
    /* A JSON object or array reaches the script with its blanks and glob
     * characters escaped inside its strings (cap_word_for_shell()); the
     * brackets of its arrays can match only files of the scripts' working
     * folder, made empty for each capture and root's alone (plan.c). */
    if (!(o->value == TR_VAL_JSON && (next[0] == '{' || next[0] == '[')) &&
        (rc = atom_policy_shell_word(next, item, err)) != 0)
      return rc;
    if ((rc = check_value(cfg, o, opt, item, next, preset_trusts, err)) != 0)
      return rc;
  } while (o->arity == TR_ARITY_MANY);
  return 0;
}

int atom_policy_words(const struct cfg *cfg, enum tr_atom_prog prog,
                      json_t *words, const char *member, bool preset_trusts,
                      struct tr_err *err)
{
  char item[64];
  int rc;

  for (size_t i = 0; i < json_array_size(words); i++) {
    const char *word = json_string_value(json_array_get(words, i));

    if (!tr_atom_is_option(word)) {
      snprintf(item, sizeof(item), "%s[%zu]", member, i);
      return tr_err_set(err, TR_EINVAL, item,
                        "%s: \"%.100s\" is a value without its option (ATOM "
                        "takes no positional arguments)",
                        item, word);
    }
    if ((rc = check_option(cfg, prog, words, &i, member, preset_trusts,
                           err)) != 0)
      return rc;
  }
  return 0;
}

/* ---- env ---- */

/* Names no request may set, whatever env_allow says (the second guard):
 * each loads code into the server (run as root), points it at an address,
 * or names a folder or file the older rule refuses outright. From ATOM
 * (atom/utils/envs.py: ATOM_TORCH_PROFILER_DIR moves where the server
 * writes, ATOM_RTL_TRACE_DIR, ATOM_*_DUMP_DIR, ATOM_DEBUG_TOPK_PATH,
 * ATOM_KV_EVENTS_ENDPOINT, ATOM_DP_MASTER_IP/PORT, ATOM_PROCESS_NAME_PREFIX
 * renames the processes its scripts find by name), ROCm (HSA_TOOLS_LIB,
 * ROCP_TOOL_LIBRARIES, AITER_ASM_DIR's kernels, AMD_COMGR_REDIRECT_LOGS,
 * AMD_LOG_LEVEL_FILE, MIOPEN_USER_DB_PATH) and RCCL/NCCL (NCCL_NET_PLUGIN,
 * NCCL_TUNER_PLUGIN, NCCL_PROFILER_PLUGIN, NCCL_ENV_PLUGIN,
 * NCCL_DEBUG_FILE, NCCL_TOPO_FILE, NCCL_GRAPH_DUMP_FILE, NCCL_COMM_ID: the
 * rendezvous address). fnmatch(3) patterns. */
static const struct {
  const char *pattern;
  const char *why;
} env_deny[] = {
  { "LD_*", "it steers the dynamic loader" },
  { "*PRELOAD*", "it preloads code" },
  { "*_LIB", "it names a library to load" },
  { "*_LIBS", "it names libraries to load" },
  { "*_LIBRARY*", "it names libraries to load" },
  { "*_PLUGIN*", "it loads a plugin" },
  { "HSA_TOOLS_*", "HSA loads its tool libraries into every process" },
  { "ROCP_*", "rocprofiler loads tool libraries from it" },
  { "ROCPROFILER_*", "rocprofiler loads tool libraries from it" },
  { "AMD_COMGR_*", "the code-object compiler writes files from it" },
  { "PYTHON*", "Python runs or imports code from it" },
  { "*_PATH", "it names a file or a search path" },
  { "*_PATHS", "it names search paths" },
  { "*_DIR", "it names a folder the server reads or writes" },
  { "*_DIRS", "it names folders the server reads or writes" },
  { "*_FILE", "it names a file the server reads or writes" },
  { "*_HOME", "code is loaded from under it" },
  { "*_ROOT", "code is loaded from under it" },
  { "*_ENDPOINT", "it names an address the server connects to or binds" },
  { "*_ADDR", "it names an address" },
  { "*_IP", "it names an address" },
  { "*_PORT", "it names a port" },
  { "*_HOST", "it names a host" },
  { "*_URL", "it names an address" },
  { "*_URI", "it names an address" },
  { "NCCL_COMM_ID", "it names the address of the collectives' rendezvous" },
  /* PyTorch (torch/serialization.py, docs/source/
   * miscellaneous_environment_variables.rst): torch.load unpickles, and so
   * runs, whatever a checkpoint holds; the autoload imports every
   * installed backend extension; TorchInductor's remote caches unpickle
   * what a Redis serves; RTLD_GLOBAL lets torch's libraries take symbols
   * from whatever was loaded before them. */
  { "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD",
    "torch.load would unpickle, and so run, whatever a checkpoint holds" },
  { "TORCH_DEVICE_BACKEND_AUTOLOAD",
    "import torch imports every installed backend extension by it" },
  { "*REMOTE_CACHE*", "it unpickles what a remote cache serves" },
  { "TORCH_USE_RTLD_GLOBAL", "it steers how torch's libraries are loaded" },
  { "*TRUST_REMOTE_CODE*", "it lets a model folder's own Python run" },
  { "*UNSAFE*", "it turns a safety off" },
  /* bash, which runs ATOM's scripts: BASH_ENV and ENV name a file it
   * sources, BASHOPTS and SHELLOPTS set its options (globbing, xtrace with
   * PS4's command substitutions), IFS and GLOBIGNORE change how it splits
   * and expands; HOME: the start script empties ~/.cache/atom
   * (start_atom_server.sh:58); PATH: where the scripts find python, curl
   * and rocm-smi; TMPDIR: where Python and ATOM make their temporary files
   * and sockets. */
  { "BASH*", "bash runs, reads or is set up by it" },
  { "ENV", "bash sources the file it names" },
  { "SHELLOPTS", "it sets the options of the shell that runs ATOM's "
                 "scripts" },
  { "PS4", "the shell expands it for every traced command" },
  { "IFS", "it changes how the shell splits words" },
  { "GLOBIGNORE", "it changes how the shell expands patterns" },
  { "*PATH", "it names a search path" },
  { "HOME", "ATOM's start script empties ~/.cache/atom under it" },
  { "TMPDIR", "Python and ATOM make their temporary files and sockets in "
              "it" },
  { "ATOM_PROCESS_NAME_PREFIX",
    "it renames ATOM's processes, which its scripts find by name" },
};

/* Names a request may set, but only to a path under model_roots: each
 * names a file or folder the server reads or writes (PyTorch's
 * TORCH_LOGS_OUT, TORCH_TRACE, PYTORCH_TUNABLEOP_FILENAME, AITER's tuned
 * GEMM tables AITER_CONFIG_*). */
static const char *const env_paths[] = { "*_FILENAME", "*_OUT", "*_TRACE",
                                         "AITER_CONFIG_*" };

/* ATOM reads these to make one server a rank of a deployment over several
 * nodes (atom/config.py:901-913, .github/scripts/atomesh/
 * pd_server_atom.sh). */
static const char *const env_multinode[] = {
  "ATOM_DP_SIZE", "ATOM_DP_RANK", "ATOM_DP_RANK_LOCAL", "ATOM_DP_MASTER_IP",
  "ATOM_DP_MASTER_PORT", "ATOM_DP_BASE_PORT"
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const char *api_env_denied(const char *name, const char **pattern)
{
  for (size_t i = 0; i < N(env_deny); i++)
    if (fnmatch(env_deny[i].pattern, name, 0) == 0) {
      if (pattern != NULL)
        *pattern = env_deny[i].pattern;
      return env_deny[i].why;
    }
  return NULL;
}

/* env_allow: an entry ending in '_' or '*' is a prefix, any other an
 * exact name. */
static bool env_allowed(const struct cfg *cfg, const char *name)
{
  for (char **p = cfg->env_allow; p != NULL && *p != NULL; p++) {
    size_t n = strlen(*p);

    if (n > 0 && (*p)[n - 1] == '*' ? strncmp(name, *p, n - 1) == 0
        : n > 0 && (*p)[n - 1] == '_' ? strncmp(name, *p, n) == 0
                                      : strcmp(name, *p) == 0)
      return true;
  }
  return false;
}

static bool env_name_ok(const char *name)
{
  if (!isalpha((unsigned char)name[0]) && name[0] != '_')
    return false;
  for (const char *p = name + 1; *p != '\0'; p++)
    if (!isalnum((unsigned char)*p) && *p != '_')
      return false;
  return true;
}

static bool matches_any(const char *const *patterns, size_t n,
                        const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (fnmatch(patterns[i], name, 0) == 0)
      return true;
  return false;
}

static int check_env_name(const struct cfg *cfg, const char *name,
                          const char *field, struct tr_err *err)
{
  const char *why, *pattern;

  if (!env_name_ok(name))
    return tr_err_set(err, TR_EINVAL, field,
                      "%s: a variable name is [A-Za-z_][A-Za-z0-9_]*", field);
  /* traced sets it from "more", whose rule must not be side-stepped. */
  if (strcmp(name, "ATOM_PROFILER_MORE") == 0)
    return tr_err_set(err, TR_EINVAL, field,
                      "ATOM_PROFILER_MORE is set by traced: use \"more\"");
  if (matches_any(env_multinode, N(env_multinode), name))
    return tr_err_set(err, TR_EINVAL, field,
                      "%s is not supported: it makes the server one rank of "
                      "a deployment over several nodes; traced drives one "
                      "server on one node (docs/ATOM.md)",
                      name);
  if ((why = api_env_denied(name, &pattern)) != NULL)
    return tr_err_set(err, TR_EINVAL, field,
                      "%s may never be set: it matches %s (%s); no "
                      "env_allow admits it",
                      name, pattern, why);
  if (!env_allowed(cfg, name))
    return tr_err_set(err, TR_EINVAL, field,
                      "%s may not be set: env takes only the names and "
                      "prefixes of env_allow",
                      name);
  return 0;
}

/* The variables start_atom_server.sh passes to the server as words of
 * its own (lines 17-19 and 85-88: --kv_cache_dtype "$KV_CACHE_DTYPE",
 * --max-num-seqs "$MAX_NUM_SEQS", --gpu-memory-utilization
 * "$GPU_MEM_UTIL"): each value is judged as the word it becomes. The
 * script quotes them, as ATOM's scripts quote every variable they read
 * (run_benchmark.sh:81 RANDOM_RANGE_RATIO too): no env value reaches a
 * script unquoted, and the shell's rule holds for these all the same. */
static const struct {
  const char *name, *option;
} env_words[] = {
  { "KV_CACHE_DTYPE", "--kv_cache_dtype" },
  { "MAX_NUM_SEQS", "--max-num-seqs" },
  { "GPU_MEM_UTIL", "--gpu-memory-utilization" },
};

static int check_env_word(const struct cfg *cfg, const char *name,
                          const char *value, const char *field,
                          struct tr_err *err)
{
  for (size_t i = 0; i < N(env_words); i++) {
    const struct tr_atom_opt *o;
    int rc;

    if (strcmp(name, env_words[i].name) != 0)
      continue;
    o = tr_atom_opt_find(TR_ATOM_SERVER, env_words[i].option);
    if ((rc = atom_policy_shell_word(value, field, err)) != 0)
      return rc;
    return o != NULL ? check_value(cfg, o, env_words[i].option, field, value,
                                   false, err)
                     : 0;
  }
  return 0;
}

int atom_policy_env(const struct cfg *cfg, json_t *env, struct tr_err *err)
{
  char field[80];
  const char *name;
  json_t *val;
  int rc;

  json_object_foreach(env, name, val) {
    const char *v = json_string_value(val);

    snprintf(field, sizeof(field), "env.%.70s", name);
    if ((rc = check_env_name(cfg, name, field, err)) != 0)
      return rc;
    /* The start script prints the environment into the server log
     * (start_atom_server.sh:78): a line break would forge log lines. */
    for (const char *p = v; p != NULL && *p != '\0'; p++)
      if (iscntrl((unsigned char)*p))
        return tr_err_set(err, TR_EINVAL, field,
                          "%s must not contain control characters", field);
    if (v != NULL && matches_any(env_paths, N(env_paths), name) &&
        (rc = atom_policy_path(cfg, v, field, NULL, err)) != 0)
      return rc;
    if (v != NULL && (rc = check_env_word(cfg, name, v, field, err)) != 0)
      return rc;
  }
  return 0;
}
