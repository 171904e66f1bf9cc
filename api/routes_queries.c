/*
 * The read-only query routes: a capture's tables (kernels, launches,
 * categories, steps, memcpy, runtime, phases, and the analysis:
 * steps/buckets, steps/outliers, idle, timeline, families, families/steps)
 * and /diff. The SQL is the store's; this file checks the parameters and
 * shapes the envelope {"capture": id, "rank": N|null, "rows": [...]}
 * (api/openapi.yaml).
 */
#include <limits.h>
#include <string.h>

#include "api/api_int.h"

struct api_table {
  int (*query)(struct store *st, const struct store_query *q, json_t **out,
               struct tr_err *err);
  const char *const *params; /* the query parameters it takes */
  bool grows; /* rows grow with the trace (one per name): the default limit
                 is table_limit; the others are bounded by the taxonomy or
                 64 phases a rank, and default to table_limit_max */
};

/* A table's query parameters: docs/API.md's, plus limit everywhere and
 * sort where rows have a name (the store orders the others itself), and
 * format (json or csv) on every table. */
/* clang-format off */
#define TABLE_PARAMS(...) { __VA_ARGS__, "format", NULL }
/* clang-format on */

static const char *const kernel_params[] =
    TABLE_PARAMS("rank", "q", "category", "sort", "limit", "family");
static const char *const named_params[] =
    TABLE_PARAMS("rank", "q", "sort", "limit");
static const char *const rank_params[] = TABLE_PARAMS("rank", "limit");
static const char *const kind_params[] = TABLE_PARAMS("rank", "kind", "limit");
static const char *const family_params[] =
    TABLE_PARAMS("rank", "q", "category", "sort", "limit");
static const char *const famstep_params[] =
    TABLE_PARAMS("rank", "q", "kind", "limit");
static const char *const idle_params[] = TABLE_PARAMS("rank", "by");
static const char *const timeline_params[] = TABLE_PARAMS("rank", "buckets");
static const char *const coll_params[] =
    TABLE_PARAMS("rank", "by", "family", "limit");
static const char *const instance_params[] = TABLE_PARAMS("family", "limit");
static const char *const rank_only_params[] = TABLE_PARAMS("rank");

const struct api_table api_table_kernels = { store_kernels, kernel_params,
                                             true };
const struct api_table api_table_launches = { store_launches, named_params,
                                              true };
const struct api_table api_table_categories = { store_categories, rank_params,
                                                false };
const struct api_table api_table_steps = { store_steps, rank_params, false };
const struct api_table api_table_memcpy = { store_memcpy, rank_params, false };
const struct api_table api_table_runtime = { store_runtime, named_params,
                                             true };
const struct api_table api_table_phases = { store_phases, rank_params, false };
const struct api_table api_table_step_buckets = { store_step_buckets,
                                                  kind_params, false };
const struct api_table api_table_step_outliers = { store_step_outliers,
                                                   kind_params, false };
const struct api_table api_table_step_histogram = { store_step_histogram,
                                                    kind_params, false };
const struct api_table api_table_idle = { store_idle, idle_params, false };
const struct api_table api_table_timeline = { store_timeline, timeline_params,
                                              false };
const struct api_table api_table_families = { store_families, family_params,
                                              true };
const struct api_table api_table_family_steps = { store_family_steps,
                                                  famstep_params, true };
/* Collectives across ranks (issue 10). */
const struct api_table api_table_collectives = { store_collectives, coll_params,
                                                 false };
const struct api_table api_table_collective_instances = {
  store_collective_instances, instance_params, true
};
const struct api_table api_table_collective_timeline = {
  store_collective_timeline, rank_only_params, false
};

/* The tables whose all-ranks answer a done capture keeps summed (store/
 * sums.c): sent as stored, without building the JSON again. */
static const struct {
  const struct api_table *t;
  const char *sum;
} summed[] = {
  { &api_table_kernels, "kernels" },
  { &api_table_launches, "launches" },
  { &api_table_categories, "categories" },
  { &api_table_steps, "steps" },
  { &api_table_memcpy, "memcpy" },
  { &api_table_runtime, "runtime" },
  { &api_table_step_buckets, "step_buckets" },
  { &api_table_step_histogram, "step_histogram" },
  { &api_table_families, "families" },
  { &api_table_family_steps, "family_steps" },
};

#define Q_MAX    256 /* bytes of a name substring, or a family */
#define KIND_MAX 64  /* bytes of a step kind */

/* A table without a limit parameter is bounded by design (a timeline's
 * buckets, idle causes): it answers whole. */
static bool takes_limit(const struct api_table *t)
{
  for (const char *const *p = t->params; *p != NULL; p++)
    if (strcmp(*p, "limit") == 0)
      return true;
  return false;
}

/* Reads the parameters every table route may take; the route's list has
 * already refused the ones it does not. */
static int table_query(struct api_req *r, struct store_query *q, bool *csv,
                       struct tr_err *err)
{
  static const char *const sorts[] = { "total", "count", "avg", "name", NULL };
  static const char *const bys[] = { "cause", "step", "family", "rank", NULL };
  const struct cfg *cfg = r->api->cfg;
  const struct api_table *t = r->route->table;
  int64_t id = 0, rank = -1, buckets = 0;
  int64_t limit = !takes_limit(t) ? 0
                  : t->grows      ? cfg->table_limit
                                  : cfg->table_limit_max;

  if (api_query_check(r, r->route->table->params, err) != 0 ||
      api_path_id(r, &id, err) != 0 ||
      api_query_int(r, "rank", 0, INT_MAX, &rank, err) != 0 ||
      api_query_str(r, "q", Q_MAX, &q->q, err) != 0 ||
      api_query_enum(r, "category", api_categories, &q->category, err) != 0 ||
      api_query_enum(r, "sort", sorts, &q->sort, err) != 0 ||
      api_query_int(r, "limit", 1, cfg->table_limit_max, &limit, err) != 0 ||
      api_query_str(r, "family", Q_MAX, &q->family, err) != 0 ||
      api_query_str(r, "kind", KIND_MAX, &q->kind, err) != 0 ||
      api_query_enum(r, "by", bys, &q->by, err) != 0 ||
      api_query_int(r, "buckets", 1, 4096, &buckets, err) != 0 ||
      api_query_csv(r, csv, err) != 0)
    return TR_EINVAL;
  q->capture_id = id;
  q->rank = (int)rank;
  q->limit = (int)limit;
  q->buckets = (int)buckets;
  return 0;
}

/* True when capture id is done: its tables are final. */
static bool capture_done(struct store *st, int64_t id)
{
  json_t *cap = NULL;
  const char *status = api_capture_brief(st, id, &cap, NULL) == 0
                           ? json_string_value(json_object_get(cap, "status"))
                           : NULL;
  bool done = status != NULL && strcmp(status, "done") == 0;

  json_decref(cap);
  return done;
}

/* The summed table the route reads over all ranks, or NULL. */
static const char *summed_name(const struct api_table *t)
{
  for (size_t i = 0; i < sizeof(summed) / sizeof(summed[0]); i++)
    if (summed[i].t == t)
      return summed[i].sum;
  return NULL;
}

/* A done capture's all-ranks table from its sums, as text: 1 when it has
 * none or CSV is asked for (the caller answers from the store's rows),
 * else the reply's result in *ret. */
static int reply_summed(struct api_req *r, struct store *st,
                        const struct store_query *q, bool csv, uint64_t epoch,
                        enum MHD_Result *ret)
{
  const char *tbl = summed_name(r->route->table);
  struct tr_buf body = { .max = (size_t)r->api->cfg->max_response_bytes };
  int64_t ids[2] = { q->capture_id, q->capture_id };
  struct tr_err err = { 0 };
  int rc;

  if (tbl == NULL || q->rank >= 0 || csv)
    return 1;
  tr_buf_printf(&body, "{\"capture\":%lld,\"rank\":null,\"rows\":",
                (long long)q->capture_id);
  rc = store_table_text(st, tbl, q, &body, &err);
  tr_buf_put(&body, "}", 1);
  if (rc == 0 && body.failed == TR_ELIMIT)
    *ret = api_reply_error(r, 413, "too_large", "limit",
                           "the answer would be more than "
                           "max_response_bytes (%d): ask for fewer rows "
                           "(limit) or one rank",
                           r->api->cfg->max_response_bytes);
  else if (rc == 0 && body.failed)
    *ret = api_reply_error(r, 500, "no_memory", NULL, "out of memory");
  else if (rc == 0)
    *ret = api_reply_keep_text(r, &body, ids, epoch);
  else if (rc < 0)
    *ret = api_reply_err(r, &err);
  tr_buf_free(&body);
  return rc == 1 ? 1 : 0;
}

enum MHD_Result api_get_table(struct api_req *r)
{
  struct store_query q = { 0 };
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *rows = NULL;
  uint64_t epoch;
  int64_t ids[2];
  bool done, csv;

  if (table_query(r, &q, &csv, &err) != 0)
    return api_reply_err(r, &err);
  st = api_read_begin(r, &epoch, &ret);
  if (st == NULL || reply_summed(r, st, &q, csv, epoch, &ret) == 0)
    return ret;
  done = capture_done(st, q.capture_id);
  if (r->route->table->query(st, &q, &rows, &err) != 0)
    return api_reply_err(r, &err);
  ids[0] = ids[1] = q.capture_id;
  return api_reply_table(
      r,
      json_pack("{s:I, s:o, s:o}", "capture", (json_int_t)q.capture_id, "rank",
                q.rank < 0 ? json_null() : json_integer(q.rank), "rows", rows),
      csv, done ? ids : NULL, epoch);
}

enum MHD_Result api_get_diff(struct api_req *r)
{
  static const char *const names[] = { "a",    "b",     "rank",   "by",
                                       "norm", "limit", "format", NULL };
  static const char *const bys[] = { "kernel", "category", "step", "family",
                                     NULL };
  static const char *const norms[] = { "none", "per_step", NULL };
  struct store_diff_opts o = { .by = "kernel", .norm = "none" };
  const struct cfg *cfg = r->api->cfg;
  struct tr_err err = { 0 };
  int64_t a = 0, b = 0, rank = -1, limit = cfg->table_limit;
  enum MHD_Result ret;
  struct store *st;
  json_t *out = NULL;
  uint64_t epoch;
  bool csv;

  if (api_query_check(r, names, &err) != 0 ||
      api_query_csv(r, &csv, &err) != 0 ||
      api_query_int(r, "a", 1, INT64_MAX, &a, &err) != 0 ||
      api_query_int(r, "b", 1, INT64_MAX, &b, &err) != 0 ||
      api_query_int(r, "rank", 0, INT_MAX, &rank, &err) != 0 ||
      api_query_enum(r, "by", bys, &o.by, &err) != 0 ||
      api_query_enum(r, "norm", norms, &o.norm, &err) != 0 ||
      api_query_int(r, "limit", 1, cfg->table_limit_max, &limit, &err) != 0)
    return api_reply_err(r, &err);
  if (a == 0 || b == 0)
    return api_reply_error(r, 400, "invalid", a == 0 ? "a" : "b",
                           "%s (a capture id) is required", a == 0 ? "a" : "b");
  o.rank = (int)rank;
  o.limit = (int)limit;
  st = api_read_begin(r, &epoch, &ret);
  if (st == NULL)
    return ret;
  /* store_diff() answers only for two done captures (else it names "a"
   * or "b"): a diff is always final. */
  if (store_diff(st, a, b, &o, &out, &err) != 0)
    return api_reply_err(r, &err);
  return api_reply_table(r, out, csv, (int64_t[2]){ a, b }, epoch);
}
