#include "common/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"

#define DEFAULT_ENV_ALLOW                                                      \
  "ATOM_ AITER_ HSA_ HIP_ AMD_ V4_ NCCL_ RCCL_ MIOPEN_ TORCH_ PYTORCH_"

enum key_type { K_STR, K_INT, K_LIST_COLON, K_LIST_SPACE, K_PROFILE, K_BOOL };

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
  STR(auth_token_file),
  { "allowed_hosts", K_LIST_SPACE, offsetof(struct cfg, allowed_hosts), 0, 0 },
  INT(index_jobs, 1, 256),
  { "env_allow", K_LIST_SPACE, offsetof(struct cfg, env_allow), 0, 0 },
  STR(models_json),
  STR(category_rules),
  INT(max_queued, 1, 1000000),
  INT(max_params_bytes, 1024, 16 << 20),
  INT(list_limit, 1, 1000000),
  INT(list_limit_max, 1, 1000000),
  INT(table_limit, 1, 1000000),
  INT(table_limit_max, 1, 1000000),
  INT(max_response_bytes, 65536, 1 << 30),
  INT(max_connections, 16, 1000000),
  INT(max_connections_per_client, 1, 1000000),
  INT(request_timeout_s, 1, 3600),
  INT(idle_timeout_s, 1, 86400),
  INT(max_kernel_names, 100, 10000000),
  INT(stop_timeout_s, 1, 86400),
  INT(launch_timeout_s, 1, 86400),
  INT(profiler_timeout_s, 1, 86400),
  INT(answer_cache_mb, 0, 65536),
  INT(regression_threshold_pct, 0, 1000),
  STR(webhook_url),
  INT(webhook_timeout_s, 1, 600),
  INT(webhook_retries, 0, 10),
  STR(fleet_dsn),
  STR(node_name),
  STR(node_url),
  { "fleet_view", K_BOOL, offsetof(struct cfg, fleet_view), 0, 0 },
  INT(fleet_outbox_max_age_s, 1, 86400 * 30),
  INT(fleet_backfill_per_s, 1, 100000),
  INT(fleet_timeout_s, 1, 3600),
  INT(fleet_read_timeout_ms, 100, 600000),
  INT(fleet_cache_mb, 1, 1 << 20),
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
  cfg->auth_token_file = strdup("");
  cfg->allowed_hosts = split("", " ");
  cfg->index_jobs = cores > 0 ? (int)cores : 1;
  cfg->env_allow = split(DEFAULT_ENV_ALLOW, " ");
  cfg->models_json = strdup("");
  cfg->category_rules = strdup("");
  cfg->max_queued = 256;
  cfg->max_params_bytes = 64 << 10;
  cfg->list_limit = 50;
  cfg->list_limit_max = 500;
  cfg->table_limit = 100;
  cfg->table_limit_max = 1000;
  cfg->max_response_bytes = 16 << 20;
  cfg->max_connections = 512;
  cfg->max_connections_per_client = 64;
  cfg->request_timeout_s = 10;
  cfg->idle_timeout_s = 60;
  cfg->max_kernel_names = CFG_MAX_KERNEL_NAMES;
  cfg->stop_timeout_s = 120;
  cfg->launch_timeout_s = 300;
  cfg->profiler_timeout_s = 300;
  cfg->answer_cache_mb = 64;
  cfg->regression_threshold_pct = 5;
  cfg->webhook_url = strdup("");
  cfg->webhook_timeout_s = 10;
  cfg->webhook_retries = 3;
  cfg->fleet_dsn = strdup("");
  cfg->node_name = strdup("");
  cfg->node_url = strdup("");
  cfg->fleet_outbox_max_age_s = 600;
  cfg->fleet_backfill_per_s = 20;
  cfg->fleet_timeout_s = 30;
  cfg->fleet_read_timeout_ms = 5000;
  cfg->fleet_cache_mb = 2048;
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
  case K_BOOL:
    if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
      return tr_err_set(err, TR_EINVAL, k->name,
                        "%s must be true or false, not \"%s\"", k->name,
                        value);
    *(bool *)dst = strcmp(value, "true") == 0;
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

bool cfg_address_loopback(const char *addr)
{
  struct addrinfo hints = { .ai_flags = AI_NUMERICHOST };
  struct addrinfo *res = NULL;
  bool yes = false;

  if (getaddrinfo(addr, NULL, &hints, &res) != 0)
    return false;
  if (res->ai_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)res->ai_addr;

    yes = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  } else if (res->ai_family == AF_INET6) {
    const struct in6_addr *a =
        &((const struct sockaddr_in6 *)res->ai_addr)->sin6_addr;

    yes = IN6_IS_ADDR_LOOPBACK(a) ||
          (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
  }
  freeaddrinfo(res);
  return yes;
}

/* The host of listen: a numeric loopback address, or the name
 * "localhost"; a name that merely starts like one (127.1.nip.io) is not. */
bool cfg_listen_loopback(const struct cfg *cfg)
{
  const char *listen = cfg->listen, *colon = strrchr(listen, ':');
  size_t n = colon != NULL ? (size_t)(colon - listen) : strlen(listen);
  char host[256];

  if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
    listen++;
    n -= 2;
  }
  if (n >= sizeof(host))
    return false;
  memcpy(host, listen, n);
  host[n] = '\0';
  return strcmp(host, "localhost") == 0 || cfg_address_loopback(host);
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

/* auth_token_file: the token from a file only root reads (mode without
 * group or other bits), so that it is in no command line (ps) and in no
 * configuration file others may read. Trailing whitespace is dropped; the
 * token itself is printable, without spaces. */
static int read_token_file(struct cfg *cfg, struct tr_err *err)
{
  const char *path = cfg->auth_token_file;
  struct stat st;
  char *text = NULL;
  size_t len = 0;
  bool ok;

  if (path[0] == '\0')
    return 0;
  if (cfg->auth_token[0] != '\0')
    return tr_err_set(err, TR_EINVAL, "auth_token_file",
                      "set auth_token or auth_token_file, not both");
  if (stat(path, &st) == 0 && (st.st_mode & 0077) != 0)
    return tr_err_set(err, TR_EINVAL, "auth_token_file",
                      "%s may be read or written by others (mode %04o): "
                      "chmod 600 it",
                      path, (unsigned)(st.st_mode & 07777));
  if (tr_read_file(NULL, path, 4096, &text, &len, err) != 0)
    return TR_EINVAL;
  while (len > 0 && isspace((unsigned char)text[len - 1]))
    text[--len] = '\0';
  ok = len > 0;
  for (size_t i = 0; ok && i < len; i++)
    ok = isgraph((unsigned char)text[i]);
  if (!ok) {
    free(text);
    return tr_err_set(err, TR_EINVAL, "auth_token_file",
                      "%s: the token must be one word of printable characters",
                      path);
  }
  free(cfg->auth_token);
  cfg->auth_token = text;
  return 0;
}

void cfg_hide_args(int argc, char **argv)
{
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--auth-token") == 0 ||
        strcmp(argv[i], "--auth_token") == 0)
      memset(argv[i + 1], '*', strlen(argv[i + 1]));
}

/* An http:// or https:// URL of printable characters without blanks, of
 * at most 2048 bytes, or empty: 0, else -1. */
static int check_url(const char *url)
{
  bool ok = url[0] == '\0' || strncmp(url, "http://", 7) == 0 ||
            strncmp(url, "https://", 8) == 0;

  for (const char *c = url; ok && *c != '\0'; c++)
    ok = isgraph((unsigned char)*c);
  return ok && strlen(url) <= 2048 ? 0 : -1;
}

/* webhook_url: it is handed to libcurl as it is. */
static int check_webhook(const char *url, struct tr_err *err)
{
  if (check_url(url) != 0)
    return tr_err_set(err, TR_EINVAL, "webhook_url",
                      "webhook_url must be an http:// or https:// URL "
                      "without blanks, of at most 2048 bytes");
  return 0;
}

/* The fleet's settings: node_name (default: the host name) is a node's
 * name in the fleet and its PostgreSQL role's (docs/FLEET.md), so it is
 * what a role name and a URL segment can both be: 1 to 63 of [A-Za-z0-9
 * ._-]; node_url defaults to http://<listen>; a lab view needs the DSN.
 * That fleet_dsn holds no password is checked by fleet/ (libpq parses
 * it). */
static int check_fleet(struct cfg *cfg, struct tr_err *err)
{
  char host[256] = "";
  size_t n;

  if (cfg->node_name[0] == '\0') {
    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    free(cfg->node_name);
    cfg->node_name = strdup(host[0] ? host : "localhost");
  }
  n = strlen(cfg->node_name);
  if (n > 63 || strspn(cfg->node_name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "abcdefghijklmnopqrstuvwxyz"
                                       "0123456789._-") != n)
    return tr_err_set(err, TR_EINVAL, "node_name",
                      "node_name must be 1 to 63 letters, digits, '.', '_' "
                      "or '-', not \"%s\"",
                      cfg->node_name);
  if (cfg->node_url[0] == '\0') {
    free(cfg->node_url);
    if (asprintf(&cfg->node_url, "http://%s", cfg->listen) < 0)
      cfg->node_url = strdup("");
  }
  if (check_url(cfg->node_url) != 0)
    return tr_err_set(err, TR_EINVAL, "node_url",
                      "node_url must be an http:// or https:// URL "
                      "without blanks, of at most 2048 bytes");
  if (cfg->fleet_view && cfg->fleet_dsn[0] == '\0')
    return tr_err_set(err, TR_EINVAL, "fleet_view",
                      "fleet_view needs fleet_dsn");
  return 0;
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
  if (read_token_file(cfg, err) != 0)
    return TR_EINVAL;
  if (!cfg_listen_loopback(cfg) && cfg->auth_token[0] == '\0')
    return tr_err_set(err, TR_EINVAL, "auth_token",
                      "auth_token is required when listen (%s) is not a "
                      "loopback address",
                      cfg->listen);
  if (cfg->list_limit > cfg->list_limit_max)
    return tr_err_set(err, TR_EINVAL, "list_limit",
                      "list_limit (%d) is above list_limit_max (%d)",
                      cfg->list_limit, cfg->list_limit_max);
  if (cfg->table_limit > cfg->table_limit_max)
    return tr_err_set(err, TR_EINVAL, "table_limit",
                      "table_limit (%d) is above table_limit_max (%d)",
                      cfg->table_limit, cfg->table_limit_max);
  if (check_webhook(cfg->webhook_url, err) != 0)
    return TR_EINVAL;
  if (check_fleet(cfg, err) != 0)
    return TR_EINVAL;
  resolve_roots(cfg->import_roots);
  derive_script(&cfg->start_script, cfg->atom_scripts, "start_atom_server.sh");
  derive_script(&cfg->bench_script, cfg->atom_scripts, "run_benchmark.sh");
  derive_script(&cfg->stop_script, cfg->atom_scripts, "stop_atom_server.sh");
  return 0;
}

/* Names no request may set, whatever env_allow says (issue 12): each loads
 * code into the server (run as root), or points it at a file, folder or
 * address of the client's choice. From ATOM (atom/utils/envs.py:
 * ATOM_TORCH_PROFILER_DIR moves where the server writes, ATOM_RTL_TRACE_DIR
 * wraps the launch in `rtl trace`, ATOM_*_DUMP_DIR, ATOM_DEBUG_TOPK_PATH,
 * ATOM_KV_EVENTS_ENDPOINT), ROCm (HSA_TOOLS_LIB, ROCP_TOOL_LIBRARIES,
 * AITER_ASM_DIR's kernels, AMD_COMGR_REDIRECT_LOGS, AMD_LOG_LEVEL_FILE,
 * MIOPEN_USER_DB_PATH) and RCCL/NCCL (NCCL_NET_PLUGIN, NCCL_TUNER_PLUGIN,
 * NCCL_PROFILER_PLUGIN, NCCL_ENV_PLUGIN, NCCL_DEBUG_FILE, NCCL_TOPO_FILE,
 * NCCL_GRAPH_DUMP_FILE). fnmatch(3) patterns. */
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
};

const char *cfg_env_denied(const char *name, const char **pattern)
{
  for (size_t i = 0; i < sizeof(env_deny) / sizeof(env_deny[0]); i++)
    if (fnmatch(env_deny[i].pattern, name, 0) == 0) {
      if (pattern != NULL)
        *pattern = env_deny[i].pattern;
      return env_deny[i].why;
    }
  return NULL;
}

bool cfg_env_allowed(const struct cfg *cfg, const char *name)
{
  if (cfg_env_denied(name, NULL) != NULL)
    return false;
  for (char **p = cfg->env_allow; p != NULL && *p != NULL; p++)
    if (strncmp(name, *p, strlen(*p)) == 0)
      return true;
  return false;
}

const char *cfg_import_root(const struct cfg *cfg, const char *real)
{
  for (char **p = cfg->import_roots; p != NULL && *p != NULL; p++) {
    size_t n = strlen(*p);

    while (n > 1 && (*p)[n - 1] == '/')
      n--;
    if (n == 1 && (*p)[0] == '/')
      return real[0] == '/' ? *p : NULL;
    if (strncmp(real, *p, n) == 0 && (real[n] == '\0' || real[n] == '/'))
      return *p;
  }
  return NULL;
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
