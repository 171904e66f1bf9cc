/*
 * Request validation: POST bodies (strict: unknown members, wrong types and
 * out-of-range values are refused, naming the member) and query
 * parameters. Nothing a client sends reaches the store or an argv without
 * passing through here; what a capture request may ask of ATOM is judged
 * by atom/request.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "atom/request.h"
#include "atom/sweep.h"
#include "common/lifecycle.h"

#define MODEL_MAX     4096
#define LABEL_MAX     1024
#define ARGS_MAX      256  /* words in server_args / bench_args */
#define ARG_MAX       4096 /* bytes in one word */
#define ENV_MAX       256  /* variables in env */
#define ENV_VALUE_MAX 65536
#define PATH_MAX_LEN  4096

const char *const api_categories[] = { "gemm",         "attention",
                                       "moe",          "communication",
                                       "custom",       "routing",
                                       "copy",         "memset",
                                       "elementwise",  "normalization",
                                       "softmax_topk", "sync",
                                       "other",        NULL };

const char *const api_statuses[] = {
#define XX(e, name, final) #name,
  TR_STATUS_MAP(XX)
#undef XX
      NULL
};

/* ---- body members ---- */

/* A string member of at most max bytes without control characters unless
 * ctrl_ok. NUL never gets here: json_loadb() refuses "\u0000" unless
 * given JSON_ALLOW_NUL, which we never pass. */
static int check_string(json_t *v, const char *field, size_t max, bool ctrl_ok,
                        struct tr_err *err)
{
  const char *s;
  size_t len;

  if (!json_is_string(v))
    return tr_err_set(err, TR_EINVAL, field, "%s must be a string", field);
  s = json_string_value(v);
  len = json_string_length(v);
  if (len > max)
    return tr_err_set(err, TR_EINVAL, field,
                      "%s is %zu bytes long; at most %zu", field, len, max);
  for (size_t i = 0; !ctrl_ok && i < len; i++)
    if (iscntrl((unsigned char)s[i]))
      return tr_err_set(err, TR_EINVAL, field,
                        "%s must not contain control characters", field);
  return 0;
}

static int check_int(json_t *v, const char *field, json_int_t lo, json_int_t hi,
                     struct tr_err *err)
{
  if (!json_is_integer(v))
    return tr_err_set(err, TR_EINVAL, field, "%s must be an integer", field);
  if (json_integer_value(v) < lo || json_integer_value(v) > hi)
    return tr_err_set(
        err, TR_EINVAL, field, "%s must be from %lld to %lld, not %lld", field,
        (long long)lo, (long long)hi, (long long)json_integer_value(v));
  return 0;
}

/* An array of argv words: each a separate word, never seen by a shell. */
static int check_words(json_t *v, const char *field, struct tr_err *err)
{
  char item[64];
  size_t i;
  json_t *w;

  if (!json_is_array(v))
    return tr_err_set(err, TR_EINVAL, field, "%s must be an array of strings",
                      field);
  if (json_array_size(v) > ARGS_MAX)
    return tr_err_set(err, TR_EINVAL, field, "%s has more than %d words", field,
                      ARGS_MAX);
  json_array_foreach(v, i, w) {
    snprintf(item, sizeof(item), "%s[%zu]", field, i);
    if (check_string(w, item, ARG_MAX, false, err) != 0)
      return TR_EINVAL;
  }
  return 0;
}

/* The server's environment, its shape: an object of at most ENV_MAX
 * strings (the names and values: atom/policy.c). */
static int check_env(json_t *v, struct tr_err *err)
{
  char field[80];
  const char *name;
  json_t *val;

  if (!json_is_object(v))
    return tr_err_set(err, TR_EINVAL, "env",
                      "env must be an object of strings");
  if (json_object_size(v) > ENV_MAX)
    return tr_err_set(err, TR_EINVAL, "env", "env has more than %d variables",
                      ENV_MAX);
  json_object_foreach(v, name, val) {
    snprintf(field, sizeof(field), "env.%.70s", name);
    if (check_string(val, field, ENV_VALUE_MAX, true, err) != 0)
      return TR_EINVAL;
  }
  return 0;
}

static int check_model(json_t *v, struct tr_err *err)
{
  if (check_string(v, "model", MODEL_MAX, false, err) != 0)
    return TR_EINVAL;
  if (json_string_length(v) == 0)
    return tr_err_set(err, TR_EINVAL, "model", "model must not be empty");
  /* It becomes an argv word of the scripts: never an option. */
  if (json_string_value(v)[0] == '-')
    return tr_err_set(err, TR_EINVAL, "model", "model must not start with '-'");
  return 0;
}

static int check_member(const struct tr_member *m, json_t *v,
                        struct tr_err *err)
{
  switch (m->type) {
  case TR_M_MODEL: return check_model(v, err);
  case TR_M_INT: return check_int(v, m->name, m->lo, m->hi, err);
  case TR_M_BOOL:
    if (!json_is_boolean(v))
      return tr_err_set(err, TR_EINVAL, m->name, "%s must be true or false",
                        m->name);
    return 0;
  case TR_M_WORDS:
    if (check_words(v, m->name, err) != 0)
      return TR_EINVAL;
    return atom_request_words(v, m->name, err);
  case TR_M_ENV: return check_env(v, err);
  case TR_M_TEXT: return check_string(v, m->name, LABEL_MAX, false, err);
  }
  return 0;
}

/* What a request that omits m gets; NULL: it stays absent (model is
 * required, text members and tp have no default). */
static json_t *member_default(const struct tr_member *m)
{
  switch (m->type) {
  case TR_M_INT: return m->dflt != 0 ? json_integer(m->dflt) : NULL;
  case TR_M_BOOL: return json_false();
  case TR_M_WORDS: return json_array();
  case TR_M_ENV: return json_object();
  default: return NULL;
  }
}

/* "model, tp, ...": the members, for an error message. */
static void member_list(char *buf, size_t size)
{
  size_t used = 0;

  buf[0] = '\0';
  for (unsigned i = 0; i < tr_members_n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                             tr_members[i].name);
}

/* The body as a JSON object; "body" names the fault otherwise. */
static int load_object(const char *body, size_t len, json_t **out,
                       struct tr_err *err)
{
  json_error_t jerr;
  json_t *obj;

  obj = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
  if (obj == NULL)
    return tr_err_set(err, TR_EINVAL, "body",
                      "the body is not valid JSON: %s (line %d, column %d)",
                      jerr.text, jerr.line, jerr.column);
  if (!json_is_object(obj)) {
    json_decref(obj);
    return tr_err_set(err, TR_EINVAL, "body", "the body must be a JSON object");
  }
  *out = obj;
  return 0;
}

/* Checks every member present and fills in the defaults. */
static int check_capture(json_t *obj, struct tr_err *err)
{
  char names[256];
  const char *name;
  json_t *v;

  json_object_foreach(obj, name, v) {
    const struct tr_member *m = tr_member_find(name);

    if (m == NULL) {
      member_list(names, sizeof(names));
      return tr_err_set(err, TR_EINVAL, name,
                        "unknown member \"%s\" (members: %s)", name, names);
    }
    if (check_member(m, v, err) != 0)
      return TR_EINVAL;
  }
  if (json_object_get(obj, "model") == NULL)
    return tr_err_set(err, TR_EINVAL, "model", "model is required");
  for (unsigned i = 0; i < tr_members_n; i++) {
    json_t *d;

    if (json_object_get(obj, tr_members[i].name) != NULL)
      continue;
    d = member_default(&tr_members[i]);
    if (d != NULL && json_object_set_new(obj, tr_members[i].name, d) != 0)
      return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  return 0;
}

/* The request as it will be stored, at most max_params_bytes: each
 * capture row keeps it, and every list of captures carries it. */
static int check_size(const struct cfg *cfg, json_t *obj, struct tr_err *err)
{
  size_t n = json_dumpb(obj, NULL, 0, JSON_COMPACT);

  if (n > (size_t)cfg->max_params_bytes)
    return tr_err_set(err, TR_ELIMIT, "body",
                      "the request is %zu bytes once validated; at most %d "
                      "(max_params_bytes)",
                      n, cfg->max_params_bytes);
  return 0;
}

/* A capture request: its members, its defaults, ATOM's judgement, its
 * size. */
static int judge_capture(const struct cfg *cfg, json_t *obj, struct tr_err *err)
{
  int rc = check_capture(obj, err);

  if (rc == 0)
    rc = atom_request_judge(cfg, obj, err);
  if (rc == 0)
    rc = check_size(cfg, obj, err);
  return rc;
}

int api_parse_capture(const struct cfg *cfg, const char *body, size_t len,
                      json_t **params, struct tr_err *err)
{
  json_t *obj;
  int rc;

  if (load_object(body, len, &obj, err) != 0)
    return TR_EINVAL;
  rc = judge_capture(cfg, obj, err);
  if (rc != 0) {
    json_decref(obj);
    return rc;
  }
  *params = obj;
  return 0;
}

static bool in(const char *word, const char *const *list)
{
  for (size_t i = 0; list[i] != NULL; i++)
    if (strcmp(word, list[i]) == 0)
      return true;
  return false;
}

/* "a, b, c" of a NULL-terminated list, into buf. */
static const char *one_of(const char *const *list, char *buf, size_t size)
{
  size_t n = 0;

  buf[0] = '\0';
  for (size_t i = 0; list[i] != NULL && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s", i == 0 ? "" : ", ",
                          list[i]);
  return buf;
}

/* A sweep's request without its ladder, validated as the capture request
 * of its largest concurrency (that is the one the server is launched for:
 * docs/SWEEPS.md). */
static int sweep_capture(const struct cfg *cfg, json_t *obj, json_t *points,
                         json_t **out, struct tr_err *err)
{
  json_t *cap = json_deep_copy(obj), *pt, *first = json_array_get(points, 0);
  json_int_t most = 0;
  size_t i;
  int rc;

  if (cap == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  json_object_del(cap, "scenario");
  json_array_foreach(points, i, pt) {
    json_int_t c = json_integer_value(json_object_get(pt, "conc"));

    most = c > most ? c : most;
  }
  json_object_set_new(cap, "conc", json_integer(most));
  if (json_object_get(cap, "isl") == NULL)
    json_object_set(cap, "isl", json_object_get(first, "isl"));
  if (json_object_get(cap, "osl") == NULL)
    json_object_set(cap, "osl", json_object_get(first, "osl"));
  rc = judge_capture(cfg, cap, err);
  if (rc != 0) {
    json_decref(cap);
    return rc;
  }
  *out = cap;
  return 0;
}

/* Each point's capture request, each within max_params_bytes. */
static int sweep_points(const struct cfg *cfg, json_t *cap, json_t *points,
                        json_t **out, struct tr_err *err)
{
  json_t *list = json_array(), *pt, *one;
  size_t i;
  int rc = 0;

  json_array_foreach(points, i, pt) {
    if (rc == 0 && (one = atom_sweep_point(cap, pt)) == NULL)
      rc = tr_err_set(err, TR_ENOMEM, "", "out of memory");
    else if (rc == 0 && (rc = check_size(cfg, one, err)) == 0)
      json_array_append(list, one);
    if (rc == 0)
      json_decref(one);
  }
  if (rc != 0) {
    json_decref(list);
    return rc;
  }
  *out = list;
  return 0;
}

int api_parse_sweep(const struct cfg *cfg, const char *body, size_t len,
                    json_t **params, json_t **points, struct tr_err *err)
{
  json_t *obj, *ladder = NULL, *cap = NULL, *scenario, *pt;
  char names[64];
  size_t i;
  int rc;

  if (load_object(body, len, &obj, err) != 0)
    return TR_EINVAL;
  scenario = json_object_get(obj, "scenario");
  if (scenario != NULL &&
      (!json_is_string(scenario) ||
       !in(json_string_value(scenario), atom_sweep_scenarios)))
    rc = tr_err_set(err, TR_EINVAL, "scenario", "scenario must be one of %s",
                    one_of(atom_sweep_scenarios, names, sizeof(names)));
  else if (json_object_get(obj, "conc") != NULL &&
           !json_is_array(json_object_get(obj, "conc")))
    rc = tr_err_set(err, TR_EINVAL, "conc",
                    "conc must be an array of concurrencies (a ladder)");
  else
    rc = atom_sweep_points(cfg, obj, &ladder, err);
  if (rc == 0)
    rc = sweep_capture(cfg, obj, ladder, &cap, err);
  if (rc == 0)
    rc = sweep_points(cfg, cap, ladder, points, err);
  if (rc == 0) {
    /* The sweep's own request: the points' common members, its ladder,
     * its scenario. */
    json_t *concs = json_array();

    json_array_foreach(ladder, i, pt)
      json_array_append(concs, json_object_get(pt, "conc"));
    json_object_set_new(cap, "conc", concs);
    json_object_set(cap, "points", ladder);
    if (scenario != NULL)
      json_object_set(cap, "scenario", scenario);
    *params = json_incref(cap);
  }
  json_decref(cap);
  json_decref(ladder);
  json_decref(obj);
  return rc;
}

bool api_import_config(const char *name)
{
  static const char *const config[] = { "model", "tp",      "isl", "osl",
                                        "conc",  "variant", "more" };

  for (size_t i = 0; i < sizeof(config) / sizeof(config[0]); i++)
    if (strcmp(name, config[i]) == 0)
      return true;
  return false;
}

int api_parse_import(const char *const *formats, const char *body, size_t len,
                     json_t **params, struct tr_err *err)
{
  char names[128];
  const char *name, *fmt;
  json_t *obj, *v;
  int rc = 0;

  if (load_object(body, len, &obj, err) != 0)
    return TR_EINVAL;
  json_object_foreach(obj, name, v) {
    if (strcmp(name, "path") == 0)
      rc = check_string(v, name, PATH_MAX_LEN, false, err);
    else if (strcmp(name, "label") == 0)
      rc = check_string(v, name, LABEL_MAX, false, err);
    else if (strcmp(name, "format") == 0)
      rc = check_string(v, name, 16, false, err);
    else if (api_import_config(name))
      rc = check_member(tr_member_find(name), v, err);
    else
      rc = tr_err_set(err, TR_EINVAL, name,
                      "unknown member \"%s\" (members: path, label, "
                      "format, and the configuration it was run with: "
                      "model, tp, isl, osl, conc, variant, more)",
                      name);
    if (rc != 0)
      break;
  }
  if (rc == 0 && json_object_get(obj, "path") == NULL)
    rc = tr_err_set(err, TR_EINVAL, "path", "path is required");
  fmt = json_string_value(json_object_get(obj, "format"));
  if (rc == 0 && fmt != NULL && !in(fmt, formats))
    rc = tr_err_set(err, TR_EINVAL, "format", "format must be one of %s",
                    one_of(formats, names, sizeof(names)));
  if (rc == 0 && fmt == NULL &&
      json_object_set_new(obj, "format", json_string("auto")) != 0)
    rc = tr_err_set(err, TR_ENOMEM, "", "out of memory");
  if (rc != 0) {
    json_decref(obj);
    return rc;
  }
  *params = obj;
  return 0;
}

/* ---- numbers and query parameters ---- */

int api_parse_int(const char *text, const char *field, int64_t lo, int64_t hi,
                  int64_t *out, struct tr_err *err)
{
  long long v;
  char *end;

  /* Digits only: strtoll alone would take " 7", "+7" and "-0". */
  for (const char *p = text; p != NULL && *p != '\0'; p++)
    if (!isdigit((unsigned char)*p))
      text = NULL;
  if (text != NULL && text[0] != '\0') {
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno == 0 && *end == '\0' && v >= lo && v <= hi) {
      *out = v;
      return 0;
    }
  }
  return tr_err_set(err, TR_EINVAL, field,
                    "%s must be an integer from %lld to %lld", field,
                    (long long)lo, (long long)hi);
}

struct arg_scan {
  const struct api_route *route;
  const char *bad; /* first bad parameter */
  const char *why;
  const char *seen[16]; /* names met so far, to catch repeats */
  size_t nseen;
};

static enum MHD_Result on_arg(void *cls, enum MHD_ValueKind kind,
                              const char *key, size_t key_size,
                              const char *value, size_t value_size)
{
  struct arg_scan *s = cls;
  struct api_param p;

  (void)kind;
  if (!api_route_param(s->route, key, &p) || strlen(key) != key_size)
    s->why = "is not a parameter of this route";
  else if (value != NULL && strlen(value) != value_size)
    s->why = "must not contain NUL";
  for (size_t i = 0; s->why == NULL && i < s->nseen; i++)
    if (strcmp(s->seen[i], key) == 0)
      s->why = "is given twice";
  if (s->why != NULL) {
    s->bad = key;
    return MHD_NO;
  }
  if (s->nseen < sizeof(s->seen) / sizeof(s->seen[0]))
    s->seen[s->nseen++] = key;
  return MHD_YES;
}

int api_query_check(struct api_req *r, struct tr_err *err)
{
  struct arg_scan s = { .route = r->route };

  MHD_get_connection_values_n(r->conn, MHD_GET_ARGUMENT_KIND, on_arg, &s);
  if (s.bad != NULL)
    return tr_err_set(err, TR_EINVAL, s.bad, "query parameter \"%s\" %s", s.bad,
                      s.why);
  return 0;
}

/* True when the query has parameter name; *v gets its value ("" for a
 * bare "?name"). */
static bool query_value(struct api_req *r, const char *name, const char **v)
{
  if (!MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, name,
                                     strlen(name), v, NULL))
    return false;
  if (*v == NULL)
    *v = "";
  return true;
}

int api_query_int(struct api_req *r, const char *name, int64_t lo, int64_t hi,
                  int64_t *out, struct tr_err *err)
{
  const char *v;

  if (!query_value(r, name, &v))
    return 0;
  return api_parse_int(v, name, lo, hi, out, err);
}

int api_query_enum(struct api_req *r, const char *name, const char **out,
                   struct tr_err *err)
{
  char list[256] = "";
  struct api_param p;
  const char *v;

  if (!query_value(r, name, &v) || !api_route_param(r->route, name, &p) ||
      p.values == NULL)
    return 0;
  for (const char *const *e = p.values; *e != NULL; e++) {
    if (strcmp(*e, v) == 0) {
      *out = *e;
      return 0;
    }
    strncat(list, e == p.values ? "" : ", ", sizeof(list) - strlen(list) - 1);
    strncat(list, *e, sizeof(list) - strlen(list) - 1);
  }
  return tr_err_set(err, TR_EINVAL, name, "%s must be one of %s", name, list);
}

int api_query_csv(struct api_req *r, bool *csv, struct tr_err *err)
{
  const char *format = "json";
  int rc = api_query_enum(r, "format", &format, err);

  *csv = rc == 0 && strcmp(format, "csv") == 0;
  return rc;
}

int api_query_str(struct api_req *r, const char *name, size_t max,
                  const char **out, struct tr_err *err)
{
  const char *v;

  if (!query_value(r, name, &v) || v[0] == '\0')
    return 0;
  if (strlen(v) > max)
    return tr_err_set(err, TR_EINVAL, name, "%s is longer than %zu bytes", name,
                      max);
  for (const char *p = v; *p != '\0'; p++)
    if (iscntrl((unsigned char)*p))
      return tr_err_set(err, TR_EINVAL, name,
                        "%s must not contain control characters", name);
  *out = v;
  return 0;
}
