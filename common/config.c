#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_ENV_ALLOW                                                      \
  "ATOM_ AITER_ HSA_ HIP_ AMD_ V4_ NCCL_ RCCL_ MIOPEN_ TORCH_ PYTORCH_"

enum key_type { K_STR, K_INT, K_LIST_COLON, K_LIST_SPACE, K_PROFILE };

struct key {
  const char *name;
  enum key_type type;
  size_t offset;
  int min, max; /* for K_INT */
};

#define STR(f)                                                                 \
  {                                                                            \
#f, K_STR, offsetof(struct cfg, f), 0, 0                                   \
  }
#define INT(f, lo, hi)                                                         \
  {                                                                            \
#f, K_INT, offsetof(struct cfg, f), lo, hi                                 \
  }

/* Every key of docs/API.md, and ours; one table drives file and argv. */
static const struct key keys[] = {
  STR(listen),
  STR(db),
  STR(trace_root),
  STR(atom_scripts),
  STR(start_script),
  STR(bench_script),
  STR(stop_script),
  INT(atom_port, 1, 65535),
  STR(atom_host),
  STR(server_log),
  STR(bench_result),
  INT(ready_timeout_s, 1, 86400),
  INT(ready_poll_s, 1, 3600),
  INT(bench_timeout_s, 1, 86400 * 7),
  INT(export_poll_s, 1, 3600),
  INT(export_max_polls, 1, 100000),
  { "profile_control", K_PROFILE, offsetof(struct cfg, profile_control), 0, 0 },
  { "import_roots", K_LIST_COLON, offsetof(struct cfg, import_roots), 0, 0 },
  STR(auth_token),
  INT(index_jobs, 1, 256),
  { "env_allow", K_LIST_SPACE, offsetof(struct cfg, env_allow), 0, 0 },
  STR(models_json),
  STR(category_rules),
  INT(max_kernel_names, 100, 10000000),
  INT(stop_timeout_s, 1, 86400),
  INT(launch_timeout_s, 1, 86400),
  INT(profiler_timeout_s, 1, 86400),
};

static char **split(const char *text, const char *seps)
{
  size_t n = 0, cap = 4;
  char **list = calloc(cap + 1, sizeof(*list));
  char *copy = strdup(text), *save = NULL;

  if (list == NULL || copy == NULL) {
    free(list);
    free(copy);
    return NULL;
  }
  for (char *t = strtok_r(copy, seps, &save); t != NULL;
       t = strtok_r(NULL, seps, &save)) {
    if (n == cap) {
      char **grown = realloc(list, (2 * cap + 1) * sizeof(*list));
      if (grown == NULL)
        break;
      list = grown;
      cap *= 2;
    }
    list[n++] = strdup(t);
    list[n] = NULL;
  }
  free(copy);
  return list;
}

static void free_list(char **list)
{
  for (char **p = list; p != NULL && *p != NULL; p++)
    free(*p);
  free(list);
}

void cfg_defaults(struct cfg *cfg)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  memset(cfg, 0, sizeof(*cfg));
  cfg->listen = strdup("127.0.0.1:7700");
  cfg->db = strdup("/var/lib/traced/traced.db");
  cfg->trace_root = strdup("/var/lib/traced/traces");
  cfg->atom_scripts = strdup("/app/ATOM/scripts");
  cfg->start_script = strdup("");
  cfg->bench_script = strdup("");
  cfg->stop_script = strdup("");
  cfg->atom_port = 8000;
  cfg->atom_host = strdup("127.0.0.1");
  cfg->server_log = strdup("/app/logs_claude/atom_server.log");
  cfg->bench_result = strdup("/app/logs_claude/benchmark.json");
  cfg->ready_timeout_s = 900;
  cfg->ready_poll_s = 5;
  cfg->bench_timeout_s = 3600;
  cfg->export_poll_s = 10;
  cfg->export_max_polls = 60;
  cfg->profile_control = CFG_PROFILE_BENCH;
  cfg->import_roots = split("", ":");
  cfg->auth_token = strdup("");
  cfg->index_jobs = cores > 0 ? (int)cores : 1;
  cfg->env_allow = split(DEFAULT_ENV_ALLOW, " ");
  cfg->models_json = strdup("");
  cfg->category_rules = strdup("");
  cfg->max_kernel_names = CFG_MAX_KERNEL_NAMES;
  cfg->stop_timeout_s = 120;
  cfg->launch_timeout_s = 300;
  cfg->profiler_timeout_s = 300;
}

static const struct key *find_key(const char *name)
{
  char norm[64];
  size_t i;

  for (i = 0; name[i] != '\0' && i + 1 < sizeof(norm); i++)
    norm[i] = name[i] == '-' ? '_' : name[i];
  norm[i] = '\0';
  for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    if (strcmp(keys[i].name, norm) == 0)
      return &keys[i];
  return NULL;
}

static int set_int(const struct key *k, int *dst, const char *value,
                   struct tr_err *err)
{
  char *end;
  long v;

  errno = 0;
  v = strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < k->min || v > k->max)
    return tr_err_set(err, TR_EINVAL, k->name,
                      "%s must be an integer from %d to %d, not \"%s\"",
                      k->name, k->min, k->max, value);
  *dst = (int)v;
  return 0;
}

int cfg_set(struct cfg *cfg, const char *key, const char *value,
            struct tr_err *err)
{
  const struct key *k = find_key(key);
  void *dst;

  if (k == NULL)
    return tr_err_set(err, TR_EINVAL, key, "unknown configuration key %s", key);
  dst = (char *)cfg + k->offset;
  switch (k->type) {
  case K_STR:
    free(*(char **)dst);
    *(char **)dst = strdup(value);
    return 0;
  case K_INT: return set_int(k, dst, value, err);
  case K_LIST_COLON:
  case K_LIST_SPACE:
    free_list(*(char ***)dst);
    *(char ***)dst = split(value, k->type == K_LIST_COLON ? ":" : " ,");
    return 0;
  case K_PROFILE:
    if (strcmp(value, "bench") == 0)
      cfg->profile_control = CFG_PROFILE_BENCH;
    else if (strcmp(value, "daemon") == 0)
      cfg->profile_control = CFG_PROFILE_DAEMON;
    else
      return tr_err_set(err, TR_EINVAL, k->name,
                        "profile_control must be bench or daemon, not \"%s\"",
                        value);
    return 0;
  }
  return 0;
}

static char *trim(char *s)
{
  char *end;

  while (isspace((unsigned char)*s))
    s++;
  end = s + strlen(s);
  while (end > s && isspace((unsigned char)end[-1]))
    *--end = '\0';
  return s;
}

int cfg_load_file(struct cfg *cfg, const char *path, struct tr_err *err)
{
  FILE *f = fopen(path, "r");
  char line[4096];
  int lineno = 0, rc = 0;

  if (f == NULL)
    return tr_err_set(err, -errno, "config", "cannot open %s: %s", path,
                      strerror(errno));
  while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
    char *hash = strchr(line, '#'), *eq, *key;

    lineno++;
    if (hash != NULL)
      *hash = '\0';
    key = trim(line);
    if (*key == '\0')
      continue;
    eq = strchr(key, '=');
    if (eq == NULL) {
      rc = tr_err_set(err, TR_EINVAL, "config", "%s:%d: expected key = value",
                      path, lineno);
      break;
    }
    *eq = '\0';
    rc = cfg_set(cfg, trim(key), trim(eq + 1), err);
    if (rc != 0 && err != NULL)
      snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg),
               " (%s:%d)", path, lineno);
  }
  fclose(f);
  return rc;
}

static void derive_script(char **slot, const char *dir, const char *name)
{
  char *path;

  if (**slot != '\0')
    return;
  if (asprintf(&path, "%s/%s", dir, name) < 0)
    return;
  free(*slot);
  *slot = path;
}

static bool listen_is_loopback(const char *listen)
{
  return strncmp(listen, "127.", 4) == 0 ||
         strncmp(listen, "localhost:", 10) == 0 ||
         strncmp(listen, "[::1]:", 6) == 0;
}

/* Import roots are compared with real paths: resolve them once here (a
 * root that does not exist yet stays as written). */
static void resolve_roots(char **roots)
{
  for (char **p = roots; p != NULL && *p != NULL; p++) {
    char *real = realpath(*p, NULL);

    if (real != NULL) {
      free(*p);
      *p = real;
    }
  }
}

int cfg_finish(struct cfg *cfg, struct tr_err *err)
{
  const char *colon = strrchr(cfg->listen, ':');
  char *end = NULL;
  long port = colon != NULL ? strtol(colon + 1, &end, 10) : -1;

  /* Port 0 asks the kernel for a free port (tests use it). */
  if (colon == NULL || colon == cfg->listen || end == colon + 1 ||
      *end != '\0' || port < 0 || port > 65535)
    return tr_err_set(err, TR_EINVAL, "listen",
                      "listen must be address:port, not \"%s\"", cfg->listen);
  if (!listen_is_loopback(cfg->listen) && cfg->auth_token[0] == '\0')
    return tr_err_set(err, TR_EINVAL, "auth_token",
                      "auth_token is required when listen (%s) is not a "
                      "loopback address",
                      cfg->listen);
  resolve_roots(cfg->import_roots);
  derive_script(&cfg->start_script, cfg->atom_scripts, "start_atom_server.sh");
  derive_script(&cfg->bench_script, cfg->atom_scripts, "run_benchmark.sh");
  derive_script(&cfg->stop_script, cfg->atom_scripts, "stop_atom_server.sh");
  return 0;
}

bool cfg_env_allowed(const struct cfg *cfg, const char *name)
{
  for (char **p = cfg->env_allow; p != NULL && *p != NULL; p++)
    if (strncmp(name, *p, strlen(*p)) == 0)
      return true;
  return false;
}

bool cfg_import_allowed(const struct cfg *cfg, const char *real)
{
  for (char **p = cfg->import_roots; p != NULL && *p != NULL; p++) {
    size_t n = strlen(*p);

    while (n > 1 && (*p)[n - 1] == '/')
      n--;
    if (strncmp(real, *p, n) == 0 && (real[n] == '\0' || real[n] == '/'))
      return true;
  }
  return false;
}

void cfg_free(struct cfg *cfg)
{
  size_t i;

  if (cfg == NULL)
    return;
  for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    void *slot = (char *)cfg + keys[i].offset;

    if (keys[i].type == K_STR)
      free(*(char **)slot);
    else if (keys[i].type == K_LIST_COLON || keys[i].type == K_LIST_SPACE)
      free_list(*(char ***)slot);
  }
  memset(cfg, 0, sizeof(*cfg));
}
