/*
 * The settings' rows (config.h's CFG_SETTINGS) as a table that drives the
 * defaults, the file, the command line, `traced --help` and the checks;
 * the checks themselves; and the env deny policy capture requests are
 * judged by.
 */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/net.h"
#include "common/roof.h"

enum type { T_STR, T_INT, T_BYTES, T_LIST, T_ENUM };

struct setting {
  const char *name;
  enum type type;
  size_t offset;
  int lo, hi;                /* T_INT */
  const char *seps;          /* T_LIST */
  const char *const *values; /* T_ENUM, NULL-terminated */
  const char *dflt;          /* as text; NULL: none */
  int (*check)(struct cfg *cfg, const struct setting *s, struct tr_err *err);
  const char *help;
};

static int check_listen(struct cfg *cfg, const struct setting *s,
                        struct tr_err *err);
static int check_auth(struct cfg *cfg, const struct setting *s,
                      struct tr_err *err);
static int default_script(struct cfg *cfg, const struct setting *s,
                          struct tr_err *err);
static int default_jobs(struct cfg *cfg, const struct setting *s,
                        struct tr_err *err);
static int check_url(struct cfg *cfg, const struct setting *s,
                     struct tr_err *err);
static int check_ui_url(struct cfg *cfg, const struct setting *s,
                        struct tr_err *err);
static int check_gpu_roof(struct cfg *cfg, const struct setting *s,
                          struct tr_err *err);
static int default_node_name(struct cfg *cfg, const struct setting *s,
                             struct tr_err *err);
static int default_node_url(struct cfg *cfg, const struct setting *s,
                            struct tr_err *err);
static int check_fleet_view(struct cfg *cfg, const struct setting *s,
                            struct tr_err *err);
static int check_list_limit(struct cfg *cfg, const struct setting *s,
                            struct tr_err *err);
static int check_table_limit(struct cfg *cfg, const struct setting *s,
                             struct tr_err *err);
static int resolve_roots(struct cfg *cfg, const struct setting *s,
                         struct tr_err *err);

/* The rows' stop and start deadlines are the scripts' computed ones. */
_Static_assert(CFG_STOP_TIMEOUT_S == 316, "stop_timeout_s's row default");
_Static_assert(CFG_LAUNCH_TIMEOUT_S == 883, "launch_timeout_s's row default");

/* clang-format off */
#define ROW_STR()     .type = T_STR
#define ROW_INT(l, h) .type = T_INT, .lo = (l), .hi = (h)
#define ROW_BYTES()   .type = T_BYTES
#define ROW_LIST(s)   .type = T_LIST, .seps = (s)
#define ROW_ENUM(...)                                                          \
  .type = T_ENUM, .values = (const char *const[]){ __VA_ARGS__, NULL }
#define ROW(n, TYPE, d, c, h)                                                  \
  { .name = #n, ROW_##TYPE, .offset = offsetof(struct cfg, n), .dflt = (d),    \
    .check = (c), .help = (h) },
/* clang-format on */

static const struct setting settings[] = { CFG_SETTINGS(ROW) };

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

/* ---- values ---- */

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

static void *slot(struct cfg *cfg, const struct setting *s)
{
  return (char *)cfg + s->offset;
}

static int set_int(const struct setting *s, int *dst, const char *value,
                   struct tr_err *err)
{
  char *end;
  long v;

  errno = 0;
  v = strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < s->lo || v > s->hi)
    return tr_err_set(err, TR_EINVAL, s->name,
                      "%s must be an integer from %d to %d", s->name, s->lo,
                      s->hi);
  *dst = (int)v;
  return 0;
}

/* A byte count: digits, then K, M, G or T (powers of 1024) or nothing;
 * at least 1 MiB (a cap below cannot hold a real rank's figures). */
static int set_bytes(const struct setting *s, int64_t *dst, const char *value,
                     struct tr_err *err)
{
  static const char units[] = "KMGT";
  const char *u;
  char *end;
  long long v;

  errno = 0;
  v = strtoll(value, &end, 10);
  if (errno == 0 && end != value && *end != '\0' && end[1] == '\0' &&
      (u = strchr(units, *end)) != NULL) {
    int shift = 10 * (int)(u - units + 1);

    if (v < 0 || v > (INT64_MAX >> shift))
      errno = ERANGE;
    else
      v *= (long long)1 << shift;
    end++;
  }
  if (errno != 0 || end == value || *end != '\0' || v < (1 << 20))
    return tr_err_set(err, TR_EINVAL, s->name,
                      "%s must be a byte count of at least 1M (digits, then "
                      "K, M, G or T)",
                      s->name);
  *dst = v;
  return 0;
}

/* v as set_bytes() reads it back: the largest unit that divides it. */
static void bytes_text(int64_t v, char *buf, size_t size)
{
  static const char units[] = "TGMK";
  int i;

  for (i = 0; units[i] != '\0'; i++)
    if (v != 0 && v % ((int64_t)1 << (10 * (4 - i))) == 0)
      break;
  if (units[i] == '\0')
    snprintf(buf, size, "%lld", (long long)v);
  else
    snprintf(buf, size, "%lld%c", (long long)(v >> (10 * (4 - i))), units[i]);
}

static int set_enum(const struct setting *s, int *dst, const char *value,
                    struct tr_err *err)
{
  char words[128] = "";

  for (int i = 0; s->values[i] != NULL; i++) {
    if (strcmp(value, s->values[i]) == 0) {
      *dst = i;
      return 0;
    }
    snprintf(words + strlen(words), sizeof(words) - strlen(words), "%s%s",
             i > 0 ? (s->values[i + 1] ? ", " : " or ") : "", s->values[i]);
  }
  return tr_err_set(err, TR_EINVAL, s->name, "%s must be %s", s->name, words);
}

/* Sets s from text: the value is never repeated in an error (a value in
 * the wrong place may be a secret). */
static int set_value(struct cfg *cfg, const struct setting *s,
                     const char *value, struct tr_err *err)
{
  void *dst = slot(cfg, s);

  switch (s->type) {
  case T_STR:
    free(*(char **)dst);
    *(char **)dst = strdup(value);
    return *(char **)dst ? 0 : tr_err_set(err, TR_ENOMEM, s->name, "no memory");
  case T_INT: return set_int(s, dst, value, err);
  case T_BYTES: return set_bytes(s, dst, value, err);
  case T_LIST:
    free_list(*(char ***)dst);
    *(char ***)dst = split(value, s->seps);
    return *(char ***)dst ? 0
                          : tr_err_set(err, TR_ENOMEM, s->name, "no memory");
  case T_ENUM: return set_enum(s, dst, value, err);
  }
  return 0;
}

/* The row of name, dashes read as underscores; NULL when none. */
static const struct setting *find(const char *name)
{
  char norm[64];
  size_t i;

  for (i = 0; name[i] != '\0' && i + 1 < sizeof(norm); i++)
    norm[i] = name[i] == '-' ? '_' : name[i];
  norm[i] = '\0';
  if (name[i] != '\0')
    return NULL;
  for (i = 0; i < NSETTINGS; i++)
    if (strcmp(settings[i].name, norm) == 0)
      return &settings[i];
  return NULL;
}

void cfg_defaults(struct cfg *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  for (size_t i = 0; i < NSETTINGS; i++)
    if (settings[i].dflt != NULL)
      set_value(cfg, &settings[i], settings[i].dflt, NULL);
}

int cfg_set(struct cfg *cfg, const char *key, const char *value,
            struct tr_err *err)
{
  const struct setting *s = find(key);

  if (s == NULL)
    return tr_err_set(err, TR_EINVAL, "config",
                      "unknown configuration key %.*s", (int)strcspn(key, "="),
                      key);
  return set_value(cfg, s, value, err);
}

const char *const cfg_names[] = {
#define NAME(n, TYPE, d, c, h) #n,
  CFG_SETTINGS(NAME)
#undef NAME
      NULL
};

int cfg_text(const struct cfg *cfg, const char *name, char *buf, size_t size)
{
  const struct setting *s = find(name);
  const void *v;
  size_t len = 0;

  if (s == NULL || size == 0)
    return TR_EINVAL;
  v = (const char *)cfg + s->offset;
  buf[0] = '\0';
  switch (s->type) {
  case T_STR: snprintf(buf, size, "%s", *(char *const *)v); break;
  case T_INT: snprintf(buf, size, "%d", *(const int *)v); break;
  case T_BYTES: bytes_text(*(const int64_t *)v, buf, size); break;
  case T_ENUM: snprintf(buf, size, "%s", s->values[*(const int *)v]); break;
  case T_LIST:
    for (size_t i = 0; (*(char **const *)v)[i] != NULL && len < size; i++)
      len += (size_t)snprintf(buf + len, size - len, "%.*s%s", i > 0, s->seps,
                              (*(char **const *)v)[i]);
    break;
  }
  return 0;
}

void cfg_usage(FILE *out, const struct cfg *cfg)
{
  char value[256], option[64];

  for (size_t i = 0; i < NSETTINGS; i++) {
    const struct setting *s = &settings[i];

    cfg_text(cfg, s->name, value, sizeof(value));
    snprintf(option, sizeof(option), "%s", s->name);
    for (char *c = option; *c != '\0'; c++)
      *c = *c == '_' ? '-' : *c;
    fprintf(out, "  --%-28s %s", option, s->help);
    if (value[0] != '\0')
      fprintf(out, " [%s]", value);
    fputc('\n', out);
  }
}

/* s's values: its type and bounds, as docs/API.md's table says them. */
static void markdown_values(FILE *out, const struct setting *s)
{
  switch (s->type) {
  case T_STR: fputs("text", out); break;
  case T_INT: fprintf(out, "integer, %d to %d", s->lo, s->hi); break;
  case T_BYTES:
    fputs("bytes (digits, then K, M, G or T), at least 1M", out);
    break;
  case T_LIST:
    fputs("words split at", out);
    for (const char *c = s->seps; *c != '\0'; c++)
      fprintf(out, "%s`%c`", c == s->seps ? " " : " or ", *c);
    break;
  case T_ENUM:
    for (const char *const *v = s->values; *v != NULL; v++)
      fprintf(out, "%s`%s`", v == s->values ? "" : " or ", *v);
    break;
  }
}

/* text in a cell of a Markdown table: '|' and '<' (a tag's start)
 * escaped. */
static void markdown_text(FILE *out, const char *text)
{
  for (const char *c = text; *c != '\0'; c++) {
    if (*c == '|' || *c == '<')
      fputc('\\', out);
    fputc(*c, out);
  }
}

void cfg_markdown(FILE *out)
{
  fputs("| key | values | default | what it does |\n|---|---|---|---|\n", out);
  for (size_t i = 0; i < NSETTINGS; i++) {
    const struct setting *s = &settings[i];

    fprintf(out, "| `%s` | ", s->name);
    markdown_values(out, s);
    if (s->dflt == NULL)
      fputs(" | derived | ", out);
    else if (s->dflt[0] == '\0')
      fputs(" | empty | ", out);
    else
      fprintf(out, " | `%s` | ", s->dflt);
    markdown_text(out, s->help);
    fputs(" |\n", out);
  }
}

void cfg_free(struct cfg *cfg)
{
  if (cfg == NULL)
    return;
  for (size_t i = 0; i < NSETTINGS; i++) {
    if (settings[i].type == T_STR)
      free(*(char **)slot(cfg, &settings[i]));
    else if (settings[i].type == T_LIST)
      free_list(*(char ***)slot(cfg, &settings[i]));
  }
  memset(cfg, 0, sizeof(*cfg));
}

/* ---- the file ---- */

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

/* ---- the checks, run once every value is read ---- */

int cfg_finish(struct cfg *cfg, struct tr_err *err)
{
  for (size_t i = 0; i < NSETTINGS; i++)
    if (settings[i].check != NULL &&
        settings[i].check(cfg, &settings[i], err) != 0)
      return TR_EINVAL;
  return 0;
}

/* Port 0 asks the kernel for a free port (tests use it). */
static int check_listen(struct cfg *cfg, const struct setting *s,
                        struct tr_err *err)
{
  const char *colon = strrchr(cfg->listen, ':');
  char *end = NULL;
  long port = colon != NULL ? strtol(colon + 1, &end, 10) : -1;

  if (colon == NULL || colon == cfg->listen || end == colon + 1 ||
      *end != '\0' || port < 0 || port > 65535)
    return tr_err_set(err, TR_EINVAL, s->name, "listen must be address:port");
  return 0;
}

/* A listen address others may reach needs a token; the token comes from
 * one place. The file is read, and its mode checked, where the token is
 * used (api/guard.c). */
static int check_auth(struct cfg *cfg, const struct setting *s,
                      struct tr_err *err)
{
  if (cfg->auth_token[0] != '\0' && cfg->auth_token_file[0] != '\0')
    return tr_err_set(err, TR_EINVAL, "auth_token_file",
                      "set auth_token or auth_token_file, not both");
  if (!tr_listen_loopback(cfg->listen) && cfg->auth_token[0] == '\0' &&
      cfg->auth_token_file[0] == '\0')
    return tr_err_set(err, TR_EINVAL, s->name,
                      "auth_token is required when listen (%s) is not a "
                      "loopback address",
                      cfg->listen);
  return 0;
}

/* start_script, bench_script, stop_script: ATOM's name in atom_scripts
 * unless set. */
static int default_script(struct cfg *cfg, const struct setting *s,
                          struct tr_err *err)
{
  static const char *const names[][2] = {
    { "start_script", "start_atom_server.sh" },
    { "bench_script", "run_benchmark.sh" },
    { "stop_script", "stop_atom_server.sh" },
  };
  char **path = slot(cfg, s);
  char *derived;

  for (size_t i = 0; **path == '\0' && i < 3; i++) {
    if (strcmp(s->name, names[i][0]) != 0)
      continue;
    if (asprintf(&derived, "%s/%s", cfg->atom_scripts, names[i][1]) < 0)
      return tr_err_set(err, TR_ENOMEM, s->name, "no memory");
    free(*path);
    *path = derived;
  }
  return 0;
}

static int default_jobs(struct cfg *cfg, const struct setting *s,
                        struct tr_err *err)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  (void)s;
  (void)err;
  if (cfg->index_jobs == 0)
    cfg->index_jobs = cores < 1 ? 1 : cores > 256 ? 256 : (int)cores;
  return 0;
}

/* A URL handed to libcurl or to a browser as it is: empty, or http:// or
 * https:// then printable characters without blanks, at most 2048 bytes. */
static int check_url(struct cfg *cfg, const struct setting *s,
                     struct tr_err *err)
{
  const char *url = *(char **)slot(cfg, s);
  bool ok = url[0] == '\0' || strncmp(url, "http://", 7) == 0 ||
            strncmp(url, "https://", 8) == 0;

  for (const char *c = url; ok && *c != '\0'; c++)
    ok = isgraph((unsigned char)*c);
  if (!ok || strlen(url) > 2048)
    return tr_err_set(err, TR_EINVAL, s->name,
                      "%s must be an http:// or https:// URL "
                      "without blanks, of at most 2048 bytes",
                      s->name);
  return 0;
}

/* gpu_roof: empty (each rank's GPU by its deviceProperties name), a row
 * of the roof table or a roof by hand (common/roof.h). */
static int check_gpu_roof(struct cfg *cfg, const struct setting *s,
                          struct tr_err *err)
{
  const char *v = *(char **)slot(cfg, s);
  struct tr_roof roof;

  if (v[0] == '\0')
    return 0;
  return tr_roof_parse(v, &roof, err);
}

/* perfetto_ui_url: the page the dashboard opens and posts a slice to
 * (docs/API.md, "Slices"). A check_url() URL whose bytes are all ones
 * RFC 3986 allows in a URL, so that no quote or bracket of it ever meets
 * the dashboard's markup. */
static int check_ui_url(struct cfg *cfg, const struct setting *s,
                        struct tr_err *err)
{
  const char *url = *(char **)slot(cfg, s);
  int rc = check_url(cfg, s, err);

  if (rc == 0 && strpbrk(url, "\"<>\\^`{|}") != NULL)
    return tr_err_set(err, TR_EINVAL, s->name,
                      "%s holds a byte a URL may not (\"<>\\^`{|})", s->name);
  return rc;
}

/* node_name (docs/FLEET.md) is a node's name in the fleet and its
 * PostgreSQL role's, so it is what a role name and a URL segment can both
 * be: 1 to 63 of [A-Za-z0-9._-]; by default the host name. */
static int default_node_name(struct cfg *cfg, const struct setting *s,
                             struct tr_err *err)
{
  char host[256] = "";
  size_t n;

  if (cfg->node_name[0] == '\0') {
    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    free(cfg->node_name);
    cfg->node_name = strdup(host[0] ? host : "localhost");
    if (cfg->node_name == NULL)
      return tr_err_set(err, TR_ENOMEM, s->name, "no memory");
  }
  n = strlen(cfg->node_name);
  if (n > 63 || strspn(cfg->node_name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "abcdefghijklmnopqrstuvwxyz"
                                       "0123456789._-") != n)
    return tr_err_set(err, TR_EINVAL, s->name,
                      "node_name must be 1 to 63 letters, digits, '.', '_' "
                      "or '-'");
  return 0;
}

/* node_url: by default http://<listen>. */
static int default_node_url(struct cfg *cfg, const struct setting *s,
                            struct tr_err *err)
{
  if (cfg->node_url[0] == '\0') {
    free(cfg->node_url);
    if (asprintf(&cfg->node_url, "http://%s", cfg->listen) < 0) {
      cfg->node_url = NULL;
      return tr_err_set(err, TR_ENOMEM, s->name, "no memory");
    }
  }
  return check_url(cfg, s, err);
}

/* A lab view reads the fleet's PostgreSQL. (That fleet_dsn holds no
 * password is checked by fleet/, where libpq parses it.) */
static int check_fleet_view(struct cfg *cfg, const struct setting *s,
                            struct tr_err *err)
{
  if (cfg->fleet_view && cfg->fleet_dsn[0] == '\0')
    return tr_err_set(err, TR_EINVAL, s->name, "fleet_view needs fleet_dsn");
  return 0;
}

/* A default limit (setting name) above the largest one (the row s, which
 * runs the check): the error names the default. */
static int limit_in_max(const char *name, int limit, const struct setting *s,
                        int max, struct tr_err *err)
{
  if (limit > max)
    return tr_err_set(err, TR_EINVAL, name, "%s (%d) is above %s (%d)", name,
                      limit, s->name, max);
  return 0;
}

static int check_list_limit(struct cfg *cfg, const struct setting *s,
                            struct tr_err *err)
{
  return limit_in_max("list_limit", cfg->list_limit, s, cfg->list_limit_max,
                      err);
}

static int check_table_limit(struct cfg *cfg, const struct setting *s,
                             struct tr_err *err)
{
  return limit_in_max("table_limit", cfg->table_limit, s, cfg->table_limit_max,
                      err);
}

/* Import and model roots are compared with real paths
 * (api/routes_captures.c, atom/policy.c): resolve them once here (a root
 * that does not exist yet stays as written). */
static int resolve_roots(struct cfg *cfg, const struct setting *s,
                         struct tr_err *err)
{
  char **roots = *(char ***)slot(cfg, s);

  (void)err;
  for (char **p = roots; p != NULL && *p != NULL; p++) {
    char *real = realpath(*p, NULL);

    if (real != NULL) {
      free(*p);
      *p = real;
    }
  }
  return 0;
}
