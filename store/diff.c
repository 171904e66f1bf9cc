/*
 * GET /diff: two captures compared by kernel, category, run-label step
 * kind or kernel family (index/agg/family.c: the same GEMM at another tile is
 * one family, so it is matched instead of shown as only_a + only_b), or by
 * what launched the kernels (docs/DECODE.md: module path, layer, op; of
 * one step kind with ?kind=), with per-category totals and warnings about
 * what makes the two hard to compare.
 *
 * Normalisation (norm=per_step): a run's real step count is its number of
 * "prefill" plus "decode" steps (exactly those kinds), or of profiler
 * steps in a trace without run labels (ProfilerStep, index/agg/agg.c). With
 * ?rank=N it is that rank's count; over all ranks it is the largest per-rank
 * count, since every rank of a run executes the same steps (and a rank that
 * recorded no labels must not shrink it). Each run's summed total_ns is
 * divided by its own count and rounded half away from zero to an integer
 * ns; counts stay raw launch counts (a_steps/b_steps are returned so that
 * a client can divide them too). By module, layer or op of one step kind
 * (?kind=), the count is that kind's steps (decode_steps, the largest
 * per-rank count over all ranks).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "common/reals.h"
#include "store/store_int.h"

/* What each ?by= reads (common/summary.h's TR_DIFF_BY_MAP): its rows'
 * key member, the key and count expressions over its table x (joined),
 * and whether it is a decode table. */
static const struct by_spec {
  const char *by, *keyname, *key, *count, *total, *table, *join;
  bool decode, rates;
} by_specs[] = {
#define XX(by, table, key, key_sql, join, count, total, decode, rates)         \
  { #by, #key, key_sql, "x." #count, "x." #total, #table, join, decode, rates },
  TR_DIFF_BY_MAP(XX)
#undef XX
};

#define NBYS (sizeof(by_specs) / sizeof(by_specs[0]))

/* The row of by, a value tr_diff_bys holds (the last when none). */
static const struct by_spec *spec_of(const char *by)
{
  size_t i = 0;

  while (i + 1 < NBYS && strcmp(by_specs[i].by, by) != 0)
    i++;
  return &by_specs[i];
}
static const char *const norms[] = { "none", "per_step", NULL };

#define side store__side

struct drow {
  char *key;
  bool in_a, in_b;
  int64_t ac, at, bc, bt, delta;
  double rate[2][2]; /* by=perf: each side's TFLOPS/s, TB/s; NaN: none */
};

/* Per key of one run: ?1 or ?3 the capture, ?2 the rank or -1, ?4 the
 * step kind of a decode table or NULL. */
static void side_sql(const char *by, const char *param, char *buf, size_t size)
{
  const struct by_spec *b = spec_of(by);

  /* The rates' means over the timed instances, as ops/perf gives them
   * (store/perf.c). */
  const char *rates =
      b->rates ? ", max(x.flops) * sum(x.inv_s) / sum(x.timed) / 1e12 AS f,"
                 " max(x.bytes) * sum(x.inv_s) / sum(x.timed) / 1e12 AS m"
               : ", NULL AS f, NULL AS m";

  snprintf(buf, size,
           "SELECT %s AS key, sum(%s) AS c, sum(%s) AS t%s"
           " FROM ranks r JOIN %s x ON x.rank_id = r.id%s"
           " WHERE r.capture_id = %s AND r.status = 'done'"
           " AND (?2 < 0 OR r.rank = ?2)%s GROUP BY 1",
           b->key, b->count, b->total, rates, b->table, b->join, param,
           b->decode ? " AND (?4 IS NULL OR x.step = ?4)" : "");
}

/* total / steps rounded half away from zero (totals are never negative,
 * so half up): floor((2 total + steps) / (2 steps)), without doubling a
 * total that may be held at INT64_MAX (docs/TRACE_FORMATS.md). */
static int64_t per_step(int64_t total, int64_t steps)
{
  int64_t rest = total % steps;

  return total / steps + (rest >= steps - rest);
}

static int cmp_drow(const void *x, const void *y)
{
  const struct drow *a = x, *b = y;
  int64_t da = llabs(a->delta), db = llabs(b->delta);

  if (da != db)
    return da > db ? -1 : 1;
  return strcmp(a->key, b->key);
}

static json_t *real_or_null(double v)
{
  return isnan(v) ? json_null() : json_real(v);
}

/* by=perf: each side's achieved rates and the TFLOPS/s change (3
 * decimals, as delta_pct). */
static void rates_json(json_t *o, const struct drow *d)
{
  double a = d->rate[0][0], b = d->rate[1][0];

  json_object_set_new(o, "a_tflops_s", real_or_null(a));
  json_object_set_new(o, "b_tflops_s", real_or_null(b));
  json_object_set_new(o, "a_tb_s", real_or_null(d->rate[0][1]));
  json_object_set_new(o, "b_tb_s", real_or_null(d->rate[1][1]));
  json_object_set_new(o, "tflops_delta_pct",
                      real_or_null(a > 0 && !isnan(b)
                                       ? tr_round((b - a) * 100.0 / a, 3)
                                       : NAN));
}

static json_t *drow_json(const struct drow *d, const struct by_spec *b)
{
  json_t *o = json_object(), *key;

  if (b->decode && d->key[0] == '\0')
    key = json_null();
  else if (strcmp(b->keyname, "layer") == 0)
    key = json_integer(strtoll(d->key, NULL, 10));
  else
    key = json_string(d->key);
  json_object_set_new(o, b->keyname, key);
  json_object_set_new(o, "a_count", json_integer(d->ac));
  json_object_set_new(o, "b_count", json_integer(d->bc));
  json_object_set_new(o, "a_total_ns", json_integer(d->at));
  json_object_set_new(o, "b_total_ns", json_integer(d->bt));
  json_object_set_new(o, "delta_ns", json_integer(d->delta));
  json_object_set_new(
      o, "delta_pct",
      d->at ? json_real(tr_round((double)d->delta * 100.0 / (double)d->at, 3))
            : json_null());
  json_object_set_new(o, "status",
                      json_string(d->in_a && d->in_b ? "both"
                                  : d->in_a          ? "only_a"
                                                     : "only_b"));
  if (b->rates)
    rates_json(o, d);
  return o;
}

static void free_drows(struct drow *rows, size_t n)
{
  for (size_t i = 0; rows != NULL && i < n; i++)
    free(rows[i].key);
  free(rows);
}

/* Reads the FULL JOIN of both runs' per-key totals into *rows. */
static int read_drows(struct store *st, const char *by, const struct side *a,
                      const struct side *b, int rank, const char *kind,
                      struct drow **rows, size_t *n, struct tr_err *err)
{
  char sql[3072], sa[1024], sb[1024];
  struct drow *arr = NULL;
  size_t len = 0, cap = 0;
  sqlite3_stmt *s;
  int rc;

  side_sql(by, "?1", sa, sizeof(sa));
  side_sql(by, "?3", sb, sizeof(sb));
  snprintf(sql, sizeof(sql),
           "WITH a AS (%s), b AS (%s) SELECT coalesce(a.key, b.key),"
           " a.c, a.t, b.c, b.t, a.f, a.m, b.f, b.m"
           " FROM a FULL JOIN b ON a.key = b.key",
           sa, sb);
  rc = store__prep(st, sql, &s, err, "%ld%d%ld|%s", a->id, rank, b->id, kind);
  if (rc < 0)
    return rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    struct drow *d;

    if (len == cap) {
      d = realloc(arr, (cap ? cap * 2 : 64) * sizeof(*arr));
      if (d == NULL)
        break;
      arr = d;
      cap = cap ? cap * 2 : 64;
    }
    d = &arr[len];
    d->key = strdup((const char *)sqlite3_column_text(s, 0));
    if (d->key == NULL)
      break;
    len++;
    d->in_a = sqlite3_column_type(s, 1) != SQLITE_NULL;
    d->in_b = sqlite3_column_type(s, 3) != SQLITE_NULL;
    d->ac = sqlite3_column_int64(s, 1);
    d->at = sqlite3_column_int64(s, 2);
    d->bc = sqlite3_column_int64(s, 3);
    d->bt = sqlite3_column_int64(s, 4);
    for (int k = 0; k < 4; k++)
      d->rate[k / 2][k % 2] = sqlite3_column_type(s, 5 + k) == SQLITE_NULL
                                  ? NAN
                                  : sqlite3_column_double(s, 5 + k);
  }
  if (rc == SQLITE_ROW)
    rc = tr_err_set(err, TR_ENOMEM, "", "diff rows");
  else
    rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "diff", err);
  store__done(s);
  if (rc < 0) {
    free_drows(arr, len);
    return rc;
  }
  *rows = arr;
  *n = len;
  return 0;
}

int store__diff_rows(struct store *st, const char *by, bool norm,
                     const struct side *a, const struct side *b, int rank,
                     const char *kind, int limit, json_t **out,
                     struct tr_err *err)
{
  const struct by_spec *spec = spec_of(by);
  struct drow *rows = NULL;
  size_t n = 0;
  int rc = read_drows(st, by, a, b, rank, spec->decode ? kind : NULL, &rows, &n,
                      err);

  if (rc < 0)
    return rc;
  for (size_t i = 0; i < n; i++) {
    if (norm) {
      rows[i].at = per_step(rows[i].at, a->real_steps);
      rows[i].bt = per_step(rows[i].bt, b->real_steps);
    }
    rows[i].delta = rows[i].bt - rows[i].at;
  }
  if (n > 1) /* rows is NULL when there are none */
    qsort(rows, n, sizeof(*rows), cmp_drow);
  *out = json_array();
  for (size_t i = 0; i < n && (limit <= 0 || i < (size_t)limit); i++)
    json_array_append_new(*out, drow_json(&rows[i], spec));
  free_drows(rows, n);
  return 0;
}

/* Its name, then TR_ENOTFOUND / TR_ECONFLICT naming side->field unless the
 * capture exists and is done; then its TP and device. */
static int side_capture(struct store *st, struct side *sd, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc;

  store__capture_name(st, sd->id, sd->name);
  rc = store__prep(st,
                   "SELECT c.status, json_extract(c.params, '$.tp'),"
                   " (SELECT count(*) FROM ranks WHERE capture_id = c.id"
                   "  AND status = 'done'),"
                   " (SELECT min(device) FROM ranks WHERE capture_id = c.id"
                   "  AND status = 'done') FROM captures c WHERE c.id = ?1",
                   &s, err, "%ld", sd->id);

  if (rc < 0)
    return rc;
  rc = store__step(st, s, "diff", err);
  if (rc == 0) {
    rc = tr_err_set(err, TR_ENOTFOUND, sd->field, "%s: no capture %s",
                    sd->field, sd->name);
  } else if (rc == 1 && !sd->finishing &&
             strcmp((const char *)sqlite3_column_text(s, 0), "done")) {
    rc = tr_err_set(err, TR_ECONFLICT, sd->field,
                    "%s: capture %s is %s, not done", sd->field, sd->name,
                    sqlite3_column_text(s, 0));
  } else if (rc == 1) {
    rc = 0;
    sd->tp = sqlite3_column_type(s, 1) == SQLITE_INTEGER
                 ? sqlite3_column_int64(s, 1)
                 : sqlite3_column_int64(s, 2);
    snprintf(sd->device, sizeof(sd->device), "%s",
             sqlite3_column_type(s, 3) == SQLITE_NULL
                 ? ""
                 : (const char *)sqlite3_column_text(s, 3));
  }
  store__done(s);
  return rc;
}

/* Steps s, the one row of a real step count, into sd->real_steps; s is
 * done. */
static int real_steps_of(struct store *st, sqlite3_stmt *s, struct side *sd,
                         struct tr_err *err)
{
  int rc = 0;

  if (sqlite3_step(s) == SQLITE_ROW)
    sd->real_steps = sqlite3_column_int64(s, 0);
  else
    rc = store__db_err(st, "diff steps", err);
  store__done(s);
  return rc;
}

/* The run's step kinds and real step count, under the rank filter. */
static int side_steps(struct store *st, struct side *sd, int rank,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  size_t len = 0;
  int rc = store__stmt_id(
      st,
      "SELECT DISTINCT s.kind FROM ranks r JOIN steps s"
      " ON s.rank_id = r.id WHERE r.capture_id = ?1 AND r.status = 'done'"
      " AND (?2 < 0 OR r.rank = ?2) ORDER BY s.kind",
      sd->id, rank, &s, err);

  if (rc < 0)
    return rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *kind = (const char *)sqlite3_column_text(s, 0);
    bool dummy = strncmp(kind, "dummy_", 6) == 0;

    sd->has_steps = true;
    sd->has_decode |= !dummy && strstr(kind, "decode") != NULL;
    sd->has_dummy |= dummy;
    if (len < sizeof(sd->kinds))
      len += (size_t)snprintf(sd->kinds + len, sizeof(sd->kinds) - len, "%s%s",
                              len ? ", " : "", kind);
  }
  rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "diff steps", err);
  store__done(s);
  if (rc < 0)
    return rc;
  rc =
      store__stmt_id(st,
                     "SELECT coalesce(max(c), 0) FROM (SELECT sum(s.count) AS c"
                     " FROM ranks r JOIN steps s ON s.rank_id = r.id"
                     " WHERE r.capture_id = ?1 AND r.status = 'done'"
                     " AND (?2 < 0 OR r.rank = ?2)"
                     " AND s.kind IN ('prefill', 'decode', 'ProfilerStep')"
                     " GROUP BY r.id)",
                     sd->id, rank, &s, err);
  if (rc < 0)
    return rc;
  return real_steps_of(st, s, sd, err);
}

#define warn tr_note

/* A run whose labels predate dummy_* kinds counts dummy steps as decode:
 * warn only when the other run shows the taxonomy (it has dummy_* kinds)
 * and this one has decode labels but none of them. */
static void warn_taxonomy(json_t *w, const struct side *x, const struct side *y)
{
  if (x->has_decode && !x->has_dummy && y->has_dummy)
    warn(w, "pre_taxonomy",
         "%s (capture %s) has decode labels but no dummy_* labels while "
         "%s has them: it may predate the run-label taxonomy and count "
         "dummy steps as decode, so step counts may not compare",
         x->field, x->name, y->field);
}

json_t *store__side_warnings(const struct side *a, const struct side *b)
{
  json_t *w = json_array();
  const struct side *sides[2] = { a, b };

  if (a->tp != b->tp)
    warn(w, "different_tp", "different TP: a has %lld, b has %lld",
         (long long)a->tp, (long long)b->tp);
  if (*a->device && *b->device && strcmp(a->device, b->device) != 0)
    warn(w, "different_device", "different devices: a %s, b %s", a->device,
         b->device);
  for (int i = 0; i < 2; i++) {
    if (!sides[i]->has_steps)
      warn(w, "no_labels",
           "%s (capture %s) has no run labels (no steps): step counts "
           "and per-step figures are unknown",
           sides[i]->field, sides[i]->name);
  }
  if (a->has_steps && b->has_steps && strcmp(a->kinds, b->kinds) != 0)
    warn(w, "different_step_kinds", "different step kinds: a [%s], b [%s]",
         a->kinds, b->kinds);
  if (a->has_steps && b->has_steps && a->real_steps != b->real_steps)
    warn(w, "different_step_counts",
         "different real step counts (prefill + decode): a %lld, b %lld",
         (long long)a->real_steps, (long long)b->real_steps);
  warn_taxonomy(w, a, b);
  warn_taxonomy(w, b, a);
  return w;
}

static int check_opts(const struct store_diff_opts *o, struct tr_err *err)
{
  int rc = store__check_enum(o->by, tr_diff_bys, "by", err);

  if (rc == 0)
    rc = store__check_enum(o->norm, norms, "norm", err);
  if (rc == 0 && o->rank < -1)
    rc = tr_err_set(err, TR_EINVAL, "rank", "rank must be >= 0");
  if (rc == 0 && o->limit < 0)
    rc = tr_err_set(err, TR_EINVAL, "limit", "limit must be >= 0");
  if (rc == 0 && o->kind != NULL &&
      !spec_of(o->by ? o->by : tr_diff_bys[0])->decode)
    rc = tr_err_set(err, TR_EINVAL, "kind",
                    "kind applies to by=module, layer or op");
  return rc;
}

/* With ?kind=, the steps per_step divides by: that kind's, the largest
 * per-rank count (decode_steps). */
static int kind_steps(struct store *st, struct side *sd, int rank,
                      const char *kind, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc =
      store__prep(st,
                  "SELECT coalesce(max(c), 0) FROM (SELECT sum(s.steps) AS c"
                  " FROM ranks r JOIN decode_steps s ON s.rank_id = r.id"
                  " WHERE r.capture_id = ?1 AND r.status = 'done'"
                  " AND (?2 < 0 OR r.rank = ?2) AND s.step = ?3 GROUP BY r.id)",
                  &s, err, "%ld%d%s", sd->id, rank, kind);

  if (rc < 0)
    return rc;
  return real_steps_of(st, s, sd, err);
}

int store__side_load(struct store *st, struct side *sd, int rank,
                     struct tr_err *err)
{
  int rc = side_capture(st, sd, err);

  if (rc == 0 && rank >= 0)
    rc = store__rank_exists(st, sd->id, rank, err);
  if (rc == 0)
    rc = side_steps(st, sd, rank, err);
  return rc;
}

static int load_side(struct store *st, struct side *sd, int rank, bool norm,
                     const char *kind, struct tr_err *err)
{
  int rc = store__side_load(st, sd, rank, err);

  if (rc == 0 && kind != NULL)
    rc = kind_steps(st, sd, rank, kind, err);
  if (rc == 0 && norm && sd->real_steps == 0)
    rc = tr_err_set(err, TR_EINVAL, "norm",
                    "norm=per_step: %s (capture %s) has no %s%s to count "
                    "steps by",
                    sd->field, sd->name,
                    kind ? kind
                         : "prefill or "
                           "decode",
                    kind ? " steps" : " run labels");
  return rc;
}

static int diff_in_txn(struct store *st, struct side *a, struct side *b,
                       const struct store_diff_opts *o, json_t *res,
                       struct tr_err *err)
{
  const char *by = o->by ? o->by : tr_diff_bys[0];
  bool norm = o->norm && strcmp(o->norm, "per_step") == 0;
  json_t *rows = NULL, *cats = NULL;
  int rc = load_side(st, a, o->rank, norm, o->kind, err);

  if (rc == 0)
    rc = load_side(st, b, o->rank, norm, o->kind, err);
  if (rc == 0)
    rc = store__diff_rows(st, by, norm, a, b, o->rank, o->kind, o->limit, &rows,
                          err);
  if (rc == 0)
    rc = store__diff_rows(st, "category", norm, a, b, o->rank, NULL, 0, &cats,
                          err);
  if (rc < 0) {
    json_decref(rows);
    return rc;
  }
  json_object_set_new(res, "by", json_string(by));
  if (o->kind != NULL)
    json_object_set_new(res, "kind", json_string(o->kind));
  json_object_set_new(res, "norm", json_string(norm ? "per_step" : "none"));
  json_object_set_new(res, "rank",
                      o->rank < 0 ? json_null() : json_integer(o->rank));
  json_object_set_new(res, "a_steps", json_integer(a->real_steps));
  json_object_set_new(res, "b_steps", json_integer(b->real_steps));
  json_object_set_new(res, "rows", rows);
  json_object_set_new(res, "categories", cats);
  json_object_set_new(res, "warnings", store__side_warnings(a, b));
  return 0;
}

int store_diff(struct store *st, int64_t a, int64_t b,
               const struct store_diff_opts *o, json_t **out,
               struct tr_err *err)
{
  struct side sa = { .id = a, .field = "a" }, sb = { .id = b, .field = "b" };
  json_t *res;
  int rc = check_opts(o, err);

  if (rc == 0)
    rc = store__rd_begin(st, err);
  if (rc < 0)
    return rc;
  res = json_pack("{s:I,s:I}", "a", (json_int_t)a, "b", (json_int_t)b);
  rc = diff_in_txn(st, &sa, &sb, o, res, err);
  rc = store__rd_end(st, rc, err);
  if (rc < 0) {
    json_decref(res);
    return rc;
  }
  *out = res;
  return 0;
}
