/*
 * The read-only query routes: a capture's tables, one route per row of
 * common/summary.h's TR_TABLE_MAP (GET /captures/<id>/<route>), and /diff.
 * The SQL is the store's; this file checks the parameters the map gives
 * the table and shapes the envelope {"capture": id, "rank": N|null,
 * "rows": [...]} (api/openapi.yaml).
 */
#include <limits.h>
#include <string.h>

#include "api/api_int.h"

#define Q_MAX      256  /* bytes of a name substring, or a family */
#define KIND_MAX   64   /* bytes of a step kind */
#define MODULE_MAX 2048 /* bytes of a module path (index/decode/dec_tab.c) */
#define STEP_MAX   32   /* bytes of a step: an index, median or slowest */

/* Reads the parameters every table route may take, once the route's row
 * has refused the ones it does not. A table without a limit parameter is
 * bounded by design (a timeline's buckets, idle causes): it answers
 * whole. */
int api_table_query(struct api_req *r, struct store_query *q, bool *csv,
                    struct tr_err *err)
{
  const struct cfg *cfg = r->api->cfg;
  const struct tr_table_row *t = r->route->table;
  int64_t rank = -1, buckets = 0, on_path = 0;
  int64_t limit = !(t->params & TR_P(LIMIT)) ? 0
                  : t->flags & TR_T_GROWS    ? cfg->table_limit
                                             : cfg->table_limit_max;

  if (api_query_check(r, err) != 0 ||
      api_query_int(r, "rank", 0, INT_MAX, &rank, err) != 0 ||
      api_query_str(r, "q", Q_MAX, &q->q, err) != 0 ||
      api_query_enum(r, "category", &q->category, err) != 0 ||
      api_query_enum(r, "sort", &q->sort, err) != 0 ||
      api_query_int(r, "limit", 1, cfg->table_limit_max, &limit, err) != 0 ||
      api_query_str(r, "family", Q_MAX, &q->family, err) != 0 ||
      api_query_str(r, "kind", KIND_MAX, &q->kind, err) != 0 ||
      api_query_str(r, "module", MODULE_MAX, &q->module, err) != 0 ||
      api_query_enum(r, "by", &q->by, err) != 0 ||
      api_query_int(r, "buckets", 1, TR_TIMELINE_BUCKETS, &buckets, err) != 0 ||
      api_query_str(r, "step", STEP_MAX, &q->step, err) != 0 ||
      api_query_int(r, "on_path", 0, 1, &on_path, err) != 0 ||
      api_query_csv(r, csv, err) != 0)
    return TR_EINVAL;
  q->rank = (int)rank;
  q->limit = (int)limit;
  q->buckets = (int)buckets;
  q->on_path = on_path != 0;
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

/* A done capture's all-ranks table from its sums, as text: 1 when it has
 * none or CSV is asked for (the caller answers from the store's rows),
 * else the reply's result in *ret. */
static int reply_summed(struct api_req *r, struct store *st,
                        const struct store_query *q, bool csv, uint64_t epoch,
                        enum MHD_Result *ret)
{
  const struct tr_table_row *t = r->route->table;
  struct tr_buf body = { .max = (size_t)r->api->cfg->max_response_bytes };
  int64_t ids[2] = { q->capture_id, q->capture_id };
  struct tr_err err = { 0 };
  int rc;

  if (!(t->flags & TR_T_SUMMED) || q->rank >= 0 || csv || q->on_path)
    return 1;
  tr_buf_printf(&body, "{\"capture\":%lld,\"rank\":null,\"rows\":",
                (long long)q->capture_id);
  rc = store_table_text(st, (enum tr_table)(t - tr_tables), q, &body, &err);
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
    *ret = api_reply_tr_err(r, &err);
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

  if (api_table_query(r, &q, &csv, &err) != 0 ||
      api_path_id(r, &q.capture_id, &err) != 0)
    return api_reply_tr_err(r, &err);
  st = api_read_begin(r, &epoch, &ret);
  if (st == NULL || reply_summed(r, st, &q, csv, epoch, &ret) == 0)
    return ret;
  done = capture_done(st, q.capture_id);
  if (store_table(st, (enum tr_table)(r->route->table - tr_tables), &q, &rows,
                  &err) != 0)
    return api_reply_tr_err(r, &err);
  ids[0] = ids[1] = q.capture_id;
  return api_reply_table(
      r,
      json_pack("{s:I, s:o, s:o}", "capture", (json_int_t)q.capture_id, "rank",
                q.rank < 0 ? json_null() : json_integer(q.rank), "rows", rows),
      csv, done ? ids : NULL, epoch);
}

int api_diff_query(struct api_req *r, struct store_diff_opts *o, bool *csv,
                   struct tr_err *err)
{
  const struct cfg *cfg = r->api->cfg;
  int64_t rank = -1, limit = cfg->table_limit;

  o->by = tr_diff_bys[0];
  o->norm = "none";
  o->kind = NULL;
  if (api_query_check(r, err) != 0 || api_query_csv(r, csv, err) != 0 ||
      api_query_int(r, "rank", 0, INT_MAX, &rank, err) != 0 ||
      api_query_enum(r, "by", &o->by, err) != 0 ||
      api_query_enum(r, "norm", &o->norm, err) != 0 ||
      api_query_int(r, "limit", 1, cfg->table_limit_max, &limit, err) != 0 ||
      api_query_str(r, "kind", KIND_MAX, &o->kind, err) != 0)
    return TR_EINVAL;
  if (o->kind != NULL && *o->kind == '\0')
    o->kind = NULL;
  o->rank = (int)rank;
  o->limit = (int)limit;
  return 0;
}

enum MHD_Result api_get_diff(struct api_req *r)
{
  struct store_diff_opts o;
  struct tr_err err = { 0 };
  int64_t a = 0, b = 0;
  enum MHD_Result ret;
  struct store *st;
  json_t *out = NULL;
  uint64_t epoch;
  bool csv;

  if (api_diff_query(r, &o, &csv, &err) != 0 ||
      api_query_int(r, "a", 1, INT64_MAX, &a, &err) != 0 ||
      api_query_int(r, "b", 1, INT64_MAX, &b, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (a == 0 || b == 0)
    return api_reply_error(r, 400, "invalid", a == 0 ? "a" : "b",
                           "%s (a capture id) is required", a == 0 ? "a" : "b");
  st = api_read_begin(r, &epoch, &ret);
  if (st == NULL)
    return ret;
  /* store_diff() answers only for two done captures (else it names "a"
   * or "b"): a diff is always final. */
  if (store_diff(st, a, b, &o, &out, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_table(r, out, csv, (int64_t[2]){ a, b }, epoch);
}
