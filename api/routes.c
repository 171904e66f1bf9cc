/*
 * The route table (Redis's commands.def): one row per route with its
 * template, its handler per method, the lab view's answer and its query
 * parameters with their types. server.c matches, dispatches and counts
 * from it, validate.c refuses the parameters a row does not name and
 * reads enums' values from it, and test_api_spec holds api/openapi.yaml
 * to it both ways. docs/ARCHITECTURE.md says what adding a route touches.
 */
#include <string.h>

#include "api/api_int.h"
#include "common/lifecycle.h"

/* A route's query parameters, of the types of enum api_ptype. */
/* clang-format off */
#define PARAMS(...)        ((const struct api_param[]){ __VA_ARGS__, { 0 } })
#define NONE               ((const struct api_param[]){ { 0 } })
#define INT(name)          { name, API_P_INT, NULL }
#define TEXT(name)         { name, API_P_TEXT, NULL }
#define ENUM(name, values) { name, API_P_ENUM, values }
#define CAPTURE(name)      { name, API_P_CAPTURE, NULL }
#define SWEEP(name)        { name, API_P_SWEEP, NULL }
/* clang-format on */

static const char *const formats[] = { "json", "csv", NULL };
static const char *const logs[] = { "server", "bench", "launcher",
                                    "stop",   "gpu",   NULL };
static const char *const bools[] = { "true", "false", NULL };
static const char *const norms[] = { "none", "per_step", NULL };
/* A slice's window, from t0, and whether traced's findings come with it. */
static const struct api_param slice_params[] = {
  INT("start_ns"), INT("end_ns"), ENUM("findings", bools), { 0 }
};

/* Every route, in the order they are matched: a template's {...} segment
 * matches any one segment, so "/{file}" comes last. With fleet_view, a
 * route with .lab answers a GET of a capture or a sweep of the fleet
 * (docs/FLEET.md) named by its path's {id} or {sweep}, or by its
 * API_P_CAPTURE or API_P_SWEEP parameters, with .lab; any other method is
 * 405 (routes_fleet.c).
 * .params are GET's (and HEAD's); no POST, PUT or DELETE takes any. */
const struct api_route api_routes[] = {
  { "/healthz", .get = api_get_healthz, .params = NONE },
  { "/metrics", .get = api_get_metrics, .params = NONE },
  { "/settings", .get = api_get_settings, .params = NONE },
  { "/captures", .get = api_get_captures, .post = api_post_captures,
    .params =
        PARAMS(ENUM("status", api_statuses), TEXT("model"),
               ENUM("kind", tr_kind_names), INT("limit"), INT("before")) },
  { "/imports", .post = api_post_imports, .params = NONE },
  /* Sweeps (routes_sweeps.c, docs/SWEEPS.md): a parent record of
   * captures; {sweep} is a sweep's id. */
  { "/sweeps", .get = api_get_sweeps, .post = api_post_sweeps,
    .params = PARAMS(ENUM("status", api_statuses), INT("limit"), INT("before"),
                     ENUM("format", formats)) },
  { "/sweeps/{sweep}", .get = api_get_sweep, .del = api_delete_sweep,
    .lab = api_lab_sweep, .params = PARAMS(ENUM("format", formats)) },
  { "/sweeps/{sweep}/scaling", .get = api_get_sweep_scaling,
    .lab = api_lab_sweep_scaling, .params = PARAMS(ENUM("format", formats)) },
  { "/sweeps/{sweep}/compare", .get = api_get_sweep_compare,
    .lab = api_lab_sweep_compare,
    .params = PARAMS(SWEEP("to"), ENUM("format", formats)) },
  { "/diff", .get = api_get_diff, .lab = api_lab_diff,
    .params = PARAMS(CAPTURE("a"), CAPTURE("b"), INT("rank"),
                     ENUM("by", tr_diff_bys), ENUM("norm", norms), INT("limit"),
                     TEXT("kind"), ENUM("format", formats)) },
  { "/captures/{id}", .get = api_get_capture, .del = api_delete_capture,
    .lab = api_lab_capture, .params = NONE },
/* Each table of common/summary.h's TR_TABLE_MAP (routes_queries.c), its
 * parameters the row's (api_route_param()). */
#define XX(scope, name, ROWS, row, route, ...)                                 \
  { "/captures/{id}/" route, .get = api_get_table, .lab = api_lab_table,       \
    .table = &tr_tables[TR_TABLE_##name] },
  TR_TABLE_MAP(XX)
#undef XX
  /* Across runs (routes_results.c). */
  { "/captures/{id}/verdict", .get = api_get_verdict, .lab = api_lab_verdict,
    .params = PARAMS(CAPTURE("baseline")) },
  /* A capture of the fleet is pinned on its node only. */
  { "/captures/{id}/baseline", .put = api_put_baseline,
    .del = api_delete_baseline, .lab = api_reply_method, .params = NONE },
  /* Raw files stay on their node: the lab view redirects there. */
  { "/captures/{id}/ranks/{r}/trace", .get = api_get_trace,
    .lab = api_lab_elsewhere, .params = NONE },
  { "/captures/{id}/ranks/{r}/slice", .get = api_get_slice,
    .lab = api_lab_elsewhere, .params = slice_params },
  { "/captures/{id}/slice", .get = api_get_capture_slice,
    .lab = api_lab_elsewhere, .params = slice_params },
  { "/captures/{id}/logs", .get = api_get_logs, .lab = api_lab_elsewhere,
    .params = PARAMS(ENUM("which", logs)) },
  /* The lab view's own (routes_fleet.c). */
  { "/fleet/captures", .get = api_get_fleet_captures,
    .params =
        PARAMS(TEXT("node"), TEXT("gpu"), TEXT("model"), TEXT("config"),
               ENUM("status", api_statuses), ENUM("kind", tr_kind_names),
               TEXT("since"), TEXT("until"), INT("limit"), TEXT("before")) },
  { "/fleet/nodes", .get = api_get_fleet_nodes, .params = NONE },
  { "/fleet/sweeps", .get = api_get_fleet_sweeps,
    .params = PARAMS(INT("limit")) },
  { "/fleet/configs", .get = api_get_fleet_configs, .params = NONE },
  { "/fleet/trend", .get = api_get_fleet_trend,
    .params = PARAMS(TEXT("config"), TEXT("gpu"), INT("limit")) },
  /* The dashboard's files read no parameter and refuse none: NULL. */
  { "/", .get = api_get_asset },
  /* Last: any other single segment is a dashboard file or nothing. */
  { "/{file}", .get = api_get_asset },
};

const size_t api_nroutes = sizeof(api_routes) / sizeof(api_routes[0]);

/* The type of each of TR_PARAM_MAP's parameters, and an enum's values:
 * by's are each table's own (its row's by). */
static bool table_param(const struct tr_table_row *t, const char *name,
                        struct api_param *out)
{
  static const enum api_ptype types[TR_NPARAMS] = {
#define XX(e, name, type) [TR_PARAM_##e] = API_P_##type,
    TR_PARAM_MAP(XX)
#undef XX
  };
  int p = 0;

  if ((t->flags & TR_T_CSV) && strcmp(name, "format") == 0) {
    *out = (struct api_param){ "format", API_P_ENUM, formats };
    return true;
  }
  while (p < TR_NPARAMS && strcmp(tr_param_names[p], name) != 0)
    p++;
  if (p == TR_NPARAMS || !(t->params & (1u << p)))
    return false;
  *out = (struct api_param){ tr_param_names[p], types[p], NULL };
  if (p == TR_PARAM_BY)
    out->values = t->by;
  else if (p == TR_PARAM_CATEGORY)
    out->values = t->flags & TR_T_OPCAT ? tr_op_categories : api_categories;
  else if (p == TR_PARAM_SORT)
    out->values = tr_sorts;
  return true;
}

bool api_route_param(const struct api_route *rt, const char *name,
                     struct api_param *out)
{
  if (rt->table != NULL)
    return table_param(rt->table, name, out);
  for (const struct api_param *p = rt->params; p && p->name != NULL; p++)
    if (strcmp(p->name, name) == 0) {
      *out = *p;
      return true;
    }
  return false;
}
