/*
 * The route table (api/routes.c), the table of tables (common/summary.h's
 * TR_TABLE_MAP) and api/openapi.yaml tell one story: every route is in the
 * spec with the methods it takes and no other, every path of the spec is
 * a route, every route's query parameters are its operation's, with their
 * types and an enum's values, and no other, and every table's route
 * declares what the map gives it (format with CSV, the limit default of a
 * table whose rows grow or not, the default of by) and CSV answers where
 * the map says so. The spec is JSON (YAML 1.2's subset), read with
 * jansson. And no route reads a trace: nothing of api/ includes index/.
 */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "tests/check.h"

static json_t *spec;

static json_t *load_spec(void)
{
  const char *dir = getenv("SRC_DIR");
  char path[1024];
  json_error_t e;
  json_t *s;

  snprintf(path, sizeof(path), "%s/api/openapi.yaml", dir ? dir : ".");
  s = json_load_file(path, 0, &e);
  if (s == NULL) {
    fprintf(stderr, "%s:%d: %s\n", path, e.line, e.text);
    exit(1);
  }
  return s;
}

/* node with its "$ref" followed (#/components/...). */
static json_t *deref(json_t *node)
{
  const char *ref = json_string_value(json_object_get(node, "$ref"));
  char part[128];
  json_t *at = spec;

  if (ref == NULL)
    return node;
  CHECK(strncmp(ref, "#/", 2) == 0);
  for (const char *p = ref + 2; *p != '\0';) {
    size_t n = strcspn(p, "/");

    CHECK(n < sizeof(part));
    memcpy(part, p, n);
    part[n] = '\0';
    at = json_object_get(at, part);
    CHECK(at != NULL);
    p += n + (p[n] == '/');
  }
  return at;
}

static json_t *path_item(const char *tmpl)
{
  return json_object_get(json_object_get(spec, "paths"), tmpl);
}

/* The query parameter name of op, or NULL; *ref gets its "$ref". */
static json_t *query_param(json_t *op, const char *name, const char **ref)
{
  size_t i;
  json_t *p;

  json_array_foreach(json_object_get(op, "parameters"), i, p) {
    json_t *d = deref(p);

    if (strcmp(json_string_value(json_object_get(d, "in")), "query") == 0 &&
        strcmp(json_string_value(json_object_get(d, "name")), name) == 0) {
      if (ref != NULL)
        *ref = json_string_value(json_object_get(p, "$ref"));
      return d;
    }
  }
  return NULL;
}

/* Each route is in the spec with the methods it takes, and only those. */
static void api_spec_routes_are_paths(void)
{
  for (size_t i = 0; i < api_nroutes; i++) {
    const struct api_route *rt = &api_routes[i];
    json_t *item = path_item(rt->tmpl);
    const char *method;
    json_t *op;

    if (item == NULL)
      fprintf(stderr, "route %s is not in api/openapi.yaml\n", rt->tmpl);
    CHECK(item != NULL);
    CHECK((json_object_get(item, "get") != NULL) == (rt->get != NULL));
    CHECK((json_object_get(item, "post") != NULL) == (rt->post != NULL));
    CHECK((json_object_get(item, "delete") != NULL) == (rt->del != NULL));
    CHECK((json_object_get(item, "put") != NULL) == (rt->put != NULL));
    json_object_foreach(item, method, op) {
      CHECK(strcmp(method, "parameters") == 0 || strcmp(method, "get") == 0 ||
            strcmp(method, "post") == 0 || strcmp(method, "delete") == 0 ||
            strcmp(method, "put") == 0);
    }
  }
}

/* Each path of the spec is a route. */
static void api_spec_paths_are_routes(void)
{
  const char *tmpl;
  json_t *item;

  json_object_foreach(json_object_get(spec, "paths"), tmpl, item) {
    size_t i = 0;

    while (i < api_nroutes && strcmp(api_routes[i].tmpl, tmpl) != 0)
      i++;
    if (i == api_nroutes)
      fprintf(stderr, "api/openapi.yaml's %s is no route\n", tmpl);
    CHECK(i < api_nroutes);
  }
}

/* The route of table t, from api/routes.c's table. */
static const struct api_route *table_route(int t)
{
  for (size_t i = 0; i < api_nroutes; i++)
    if (api_routes[i].table == &tr_tables[t])
      return &api_routes[i];
  return NULL;
}

static void check_by(const struct tr_table_row *tt, json_t *op)
{
  json_t *by = query_param(op, "by", NULL), *schema, *v;
  size_t i;

  CHECK((by != NULL) == (tt->by != NULL));
  if (by == NULL)
    return;
  schema = deref(json_object_get(by, "schema"));
  json_array_foreach(json_object_get(schema, "enum"), i, v) {
    CHECK(tt->by[i] != NULL);
    CHECK_STR(json_string_value(v), tt->by[i]);
  }
  CHECK(tt->by[json_array_size(json_object_get(schema, "enum"))] == NULL);
  CHECK_STR(json_string_value(json_object_get(schema, "default")), tt->by[0]);
}

/* What the map says of a table, the spec says of its route. */
static void check_table(int t)
{
  static const char *const statuses[] = { "200", "400", "401", "403",
                                          "404", "405", "413", "500" };
  const struct tr_table_row *tt = &tr_tables[t];
  const struct api_route *rt = table_route(t);
  char tmpl[256];
  const char *ref = NULL;
  json_t *op, *p, *content;
  size_t i, n = 0;

  fprintf(stderr, "   %s\n", tt->name);
  snprintf(tmpl, sizeof(tmpl), "/captures/{id}/%s", tt->route);
  CHECK(rt != NULL);
  CHECK_STR(rt->tmpl, tmpl);
  CHECK(rt->get == api_get_table);
  op = json_object_get(path_item(tmpl), "get");
  CHECK(op != NULL);
  for (int q = 0; q < TR_NPARAMS; q++) {
    bool takes = (tt->params & (1u << q)) != 0;

    if ((query_param(op, tr_param_names[q], NULL) != NULL) != takes)
      fprintf(stderr, "%s: %s %s in api/openapi.yaml\n", tmpl,
              tr_param_names[q], takes ? "missing" : "undeclared");
    CHECK((query_param(op, tr_param_names[q], NULL) != NULL) == takes);
    n += takes;
  }
  CHECK((query_param(op, "format", NULL) != NULL) ==
        ((tt->flags & TR_T_CSV) != 0));
  n += (tt->flags & TR_T_CSV) != 0;
  json_array_foreach(json_object_get(op, "parameters"), i, p) {
    CHECK_STR(json_string_value(json_object_get(deref(p), "in")), "query");
  }
  CHECK_INT(json_array_size(json_object_get(op, "parameters")), n);
  if (query_param(op, "limit", &ref) != NULL)
    CHECK_STR(ref, tt->flags & TR_T_GROWS
                       ? "#/components/parameters/limit"
                       : "#/components/parameters/limit_bounded");
  check_by(tt, op);
  /* What every table route may answer (api_statuses walks them). */
  for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
    if (json_object_get(json_object_get(op, "responses"), statuses[i]) == NULL)
      fprintf(stderr, "%s: status %s undeclared\n", tmpl, statuses[i]);
    CHECK(json_object_get(json_object_get(op, "responses"), statuses[i]));
  }
  content = json_object_get(
      json_object_get(json_object_get(op, "responses"), "200"), "content");
  CHECK((json_object_get(content, "text/csv") != NULL) ==
        ((tt->flags & TR_T_CSV) != 0));
  CHECK(json_object_get(content, "application/json") != NULL);
}

static void api_spec_tables_are_the_map(void)
{
  size_t routes = 0;

  for (int t = 0; t < TR_NTABLES; t++)
    check_table(t);
  for (size_t i = 0; i < api_nroutes; i++)
    routes += api_routes[i].get == api_get_table;
  CHECK_INT(routes, TR_NTABLES);
}

/* The query parameters op declares, by name, each with its schema. */
static json_t *declared(json_t *op)
{
  json_t *out = json_object(), *p;
  size_t i;

  json_array_foreach(json_object_get(op, "parameters"), i, p) {
    json_t *d = deref(p);

    if (strcmp(json_string_value(json_object_get(d, "in")), "query") == 0)
      json_object_set(out, json_string_value(json_object_get(d, "name")),
                      deref(json_object_get(d, "schema")));
  }
  return out;
}

/* schema is what the spec says of a parameter of type p: an enum's
 * values in their order; an integer may be bounded by an enum too. */
static void check_type(const char *tmpl, const struct api_param *p,
                       json_t *schema)
{
  static const char *const types[] = { [API_P_INT] = "integer",
                                       [API_P_TEXT] = "string",
                                       [API_P_ENUM] = "string",
                                       [API_P_CAPTURE] = "integer",
                                       [API_P_SWEEP] = "integer" };
  json_t *values = json_object_get(schema, "enum"), *v;
  bool strings = p->type == API_P_TEXT || p->type == API_P_ENUM;
  size_t i;

  if (schema == NULL ||
      strcmp(json_string_value(json_object_get(schema, "type")),
             types[p->type]) != 0 ||
      (strings && (values != NULL) != (p->type == API_P_ENUM)))
    fprintf(stderr, "%s: %s %s in api/openapi.yaml\n", tmpl, p->name,
            schema == NULL ? "missing" : "of another type");
  CHECK(schema != NULL);
  CHECK_STR(json_string_value(json_object_get(schema, "type")), types[p->type]);
  CHECK(!strings || (values != NULL) == (p->type == API_P_ENUM));
  if (p->type != API_P_ENUM)
    return;
  json_array_foreach(values, i, v) {
    CHECK(p->values[i] != NULL);
    CHECK_STR(json_string_value(v), p->values[i]);
  }
  CHECK(p->values[json_array_size(values)] == NULL);
}

/* Each query parameter of rt, as api_route_param() gives it, is declared
 * by its GET with its type, and each one declared is one of rt's; no
 * other method takes any. */
static void check_params(const struct api_route *rt)
{
  json_t *item = path_item(rt->tmpl), *spec_params, *schema, *op;
  const char *name, *method;
  struct api_param p;
  size_t n = 0;

  json_object_foreach(item, method, op) {
    if (strcmp(method, "get") != 0) {
      spec_params = declared(op);
      CHECK_INT(json_object_size(spec_params), 0);
      json_decref(spec_params);
    }
  }
  spec_params = declared(json_object_get(item, "get"));
  json_object_foreach(spec_params, name, schema) {
    if (!api_route_param(rt, name, &p))
      fprintf(stderr, "%s: %s is no parameter of the route\n", rt->tmpl, name);
    CHECK(api_route_param(rt, name, &p));
    check_type(rt->tmpl, &p, schema);
  }
  for (int q = 0; rt->table != NULL && q <= TR_NPARAMS; q++) {
    const char *tp = q < TR_NPARAMS ? tr_param_names[q] : "format";

    if (api_route_param(rt, tp, &p)) {
      check_type(rt->tmpl, &p, json_object_get(spec_params, tp));
      n++;
    }
  }
  for (const struct api_param *e = rt->params; e && e->name != NULL; e++, n++)
    check_type(rt->tmpl, e, json_object_get(spec_params, e->name));
  CHECK_INT(json_object_size(spec_params), n);
  json_decref(spec_params);
}

/* Every route's parameters are its operations' in the spec; a route that
 * names a capture or a sweep says what the lab view answers for it. */
static void api_spec_params_are_the_rows(void)
{
  for (size_t i = 0; i < api_nroutes; i++) {
    const struct api_route *rt = &api_routes[i];
    bool names_one =
        strstr(rt->tmpl, "{id}") != NULL || strstr(rt->tmpl, "{sweep}") != NULL;

    for (const struct api_param *e = rt->params; e && e->name; e++)
      names_one |= e->type == API_P_CAPTURE || e->type == API_P_SWEEP;
    if (names_one && rt->lab == NULL)
      fprintf(stderr,
              "%s names a capture or a sweep: what does the lab view "
              "answer?\n",
              rt->tmpl);
    CHECK(!names_one || rt->lab != NULL);
    check_params(rt);
  }
}

/* The two limit parameters' defaults are the configuration's defaults. */
static void api_spec_limit_defaults(void)
{
  json_t *params =
      json_object_get(json_object_get(spec, "components"), "parameters");
  struct cfg cfg;

  cfg_defaults(&cfg);
  CHECK_INT(json_integer_value(json_object_get(
                json_object_get(json_object_get(params, "limit"), "schema"),
                "default")),
            cfg.table_limit);
  CHECK_INT(
      json_integer_value(json_object_get(
          json_object_get(json_object_get(params, "limit_bounded"), "schema"),
          "default")),
      cfg.table_limit_max);
  cfg_free(&cfg);
}

/* The files of folder (under SRC_DIR) that include what: none but those
 * named in allowed (NULL-terminated). Returns the files read. */
static size_t check_includes(const char *folder, const char *what,
                             const char *const *allowed)
{
  const char *src = getenv("SRC_DIR");
  char dir[1024], path[1280], line[1024], inc[128];
  struct dirent *e;
  size_t files = 0;
  DIR *d;

  snprintf(dir, sizeof(dir), "%s/%s", src ? src : ".", folder);
  snprintf(inc, sizeof(inc), "#include \"%s", what);
  CHECK((d = opendir(dir)) != NULL);
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name), k = 0;
    FILE *f;

    if (n < 3 || (strcmp(e->d_name + n - 2, ".c") != 0 &&
                  strcmp(e->d_name + n - 2, ".h") != 0))
      continue;
    while (allowed[k] != NULL && strcmp(allowed[k], e->d_name) != 0)
      k++;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    CHECK((f = fopen(path, "r")) != NULL);
    while (allowed[k] == NULL && fgets(line, sizeof(line), f) != NULL) {
      if (strstr(line, inc) != NULL)
        fprintf(stderr, "%s includes %s\n", path, what);
      CHECK(strstr(line, inc) == NULL);
    }
    fclose(f);
    files++;
  }
  closedir(d);
  return files;
}

/* Routes never read traces: no file of api/ includes index/ (the daemon
 * makes slices and walks trees for the API, api/api.h's hooks). And api/
 * is HTTP only: what traced knows of ATOM is atom/'s, which includes
 * neither api/ nor daemon/; of the daemon, only the API's wiring
 * (daemon.c: its start and hooks; serve.c: the hooks' pool work)
 * includes api/, and its public header alone. */
static void api_spec_includes(void)
{
  static const char *const none[] = { NULL };
  static const char *const wiring[] = { "daemon.c", "serve.c", NULL };

  CHECK(check_includes("api", "index/", none) > 10);
  CHECK(check_includes("atom", "api/", none) > 5);
  CHECK(check_includes("atom", "daemon/", none) > 5);
  CHECK(check_includes("daemon", "api/", wiring) > 10);
  CHECK(check_includes("daemon", "api/api_int.h", none) > 10);
}

int main(void)
{
  spec = load_spec();
  RUN(api_spec_includes);
  RUN(api_spec_routes_are_paths);
  RUN(api_spec_paths_are_routes);
  RUN(api_spec_tables_are_the_map);
  RUN(api_spec_params_are_the_rows);
  RUN(api_spec_limit_defaults);
  json_decref(spec);
  return 0;
}
