/*
 * What a capture gets once its ranks are all indexed, before it is done:
 * its collectives matched across ranks (the capture's tables of
 * common/summary.h's TR_TABLE_MAP), its all-ranks tables summed (sums.c)
 * and its verdict (verdict.c), written in one transaction
 * (store_capture_finish()); and the SQL of the collective tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "common/summary.h"
#include "store/store_int.h"

#define ONE_TABLE_(member, ROWS, row) +1

/* ---- the finish ---- */

static int run_sql(struct store *st, const char *sql, int64_t id,
                   struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt_id(st, sql, id, 0, &s, err);

  if (rc < 0)
    return rc;
  rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(st, "results", err);
  store__done(s);
  return rc;
}

int store__results_drop(struct store *st, int64_t id, struct tr_err *err)
{
#define DROP(name, ROWS, row) "DELETE FROM " #name " WHERE capture_id = ?1",
  static const char *const drops[] = {
    "DELETE FROM capture_results WHERE capture_id = ?1",
    "DELETE FROM sum_rows WHERE capture_id = ?1",
    "DELETE FROM sum_texts WHERE capture_id = ?1",
    "DELETE FROM capture_figures WHERE capture_id = ?1", TR_CAP_TABLES(DROP)
  };
#undef DROP
  int rc = 0;

  for (size_t i = 0; rc == 0 && i < sizeof(drops) / sizeof(drops[0]); i++)
    rc = run_sql(st, drops[i], id, err);
  return rc;
}

/* The matching's tables; its scalars and warnings as the summary. */
static int write_collectives(struct store *st, int64_t id, json_t *coll,
                             json_t **summary, struct tr_err *err)
{
  /* idx_collectives_match()'s arrays, in TR_CAP_TABLES' order. */
  static const char *const rows_of[] = { "families", "steps", "instances",
                                         "timeline" };
  static const char *const scalars[] = { "t0_ns", "span_ns", "matched",
                                         "warnings" };
  int rc = 0;

  *summary = json_object();
  for (size_t i = 0; i < 4; i++) {
    json_t *v = json_object_get(coll, scalars[i]);

    if (v != NULL)
      json_object_set(*summary, scalars[i], v);
  }
  _Static_assert(sizeof(rows_of) / sizeof(rows_of[0]) ==
                     (0 TR_CAP_TABLES(ONE_TABLE_)),
                 "one array of the matching per capture table");
  for (size_t i = 0; rc == 0 && i < store__ncap_tables; i++) {
    json_t *rows = json_object_get(coll, rows_of[i]);

    if (rows != NULL)
      rc = store__insert_capture_rows(st, id, &store__cap_tables[i], rows, err);
  }
  return rc;
}

static int write_results(struct store *st, int64_t id, json_t *summary,
                         json_t *verdict, struct tr_err *err)
{
  char *coll = summary ? tr_json_dumps(summary, JSON_COMPACT) : NULL;
  char *text = tr_json_dumps(verdict, JSON_COMPACT);
  json_t *base = json_object_get(verdict, "baseline");
  int rc = text != NULL ? 0 : tr_err_set(err, TR_ENOMEM, "", "verdict");

  /* baseline_id stays null without a baseline. */
  if (rc == 0)
    rc = store__run(st, "results",
                    "INSERT INTO capture_results(capture_id, summed,"
                    " collectives, verdict, verdict_code, baseline_id)"
                    " VALUES(?1, 1, ?2, ?3, ?4, ?5)",
                    err, json_is_integer(base) ? "%ld%s%s%s%ld" : "%ld%s%s%s",
                    id, coll, text,
                    json_string_value(json_object_get(verdict, "verdict")),
                    (int64_t)json_integer_value(base));
  free(coll);
  free(text);
  return rc;
}

static int finish_in(struct store *st, int64_t id, const struct store_finish *f,
                     json_t **verdict, struct tr_err *err)
{
  json_t *summary = NULL;
  char status[16];
  int rc = store__capture_exists(st, id, status, err);

  if (rc == 0 && strcmp(status, "running") != 0)
    rc = tr_err_set(err, TR_ECONFLICT, "status",
                    "capture %lld is %s, not running", (long long)id, status);
  if (rc == 0)
    rc = store__results_drop(st, id, err);
  if (rc == 0 && f->collectives != NULL)
    rc = write_collectives(st, id, f->collectives, &summary, err);
  if (rc == 0)
    rc = store__sums_write(st, id, err);
  if (rc == 0)
    rc = store__figures_write(st, id, err);
  if (rc == 0)
    rc = store__verdict_finish(st, id, f->threshold_pct, verdict, err);
  if (rc == 0)
    rc = write_results(st, id, summary, *verdict, err);
  json_decref(summary);
  return rc;
}

int store_capture_finish(struct store *st, int64_t id,
                         const struct store_finish *f, json_t **verdict,
                         struct tr_err *err)
{
  json_t *v = NULL;
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc = store__wr_end(st, finish_in(st, id, f, &v, err), err);
  if (rc < 0) {
    json_decref(v);
    return rc;
  }
  *verdict = v;
  return 0;
}

/* ---- the collective routes ---- */

/* "SELECT <every field of t>" (or, grouped by rank, rank and the
 * figures summed) "FROM <t> t". */
static void select_of(const struct store__table *t, bool by_rank, char *buf,
                      size_t size)
{
  size_t len = 0;
  const char *sep = "";

  len = (size_t)snprintf(buf, size, "SELECT");
  for (size_t i = 0; i < t->n && len < size; i++) {
    const struct store__field *f = &t->f[i];

    if (by_rank && f->ty != F_INT)
      continue;
    len += (size_t)snprintf(buf + len, size - len, "%s", sep);
    if (by_rank && strcmp(f->key, "rank") != 0)
      len += (size_t)snprintf(buf + len, size - len, " sum(t.%s) AS \"%s\"",
                              f->col, f->key);
    else
      store__col_expr(buf, size, &len, f);
    sep = ",";
  }
  if (len < size)
    snprintf(buf + len, size - len, " FROM %s t", t->member);
}

struct coll_query {
  const char *table; /* of TR_CAP_TABLES */
  bool by_rank;
  const char *where, *order;
};

static int coll_rows(struct store *st, const void *ctx,
                     const struct store_query *q, json_t **out,
                     struct tr_err *err)
{
  const struct coll_query *c = ctx;
  const struct store__table *t = NULL;
  char sql[2048];
  size_t len;
  sqlite3_stmt *s;

  for (size_t i = 0; i < store__ncap_tables; i++)
    if (strcmp(store__cap_tables[i].member, c->table) == 0)
      t = &store__cap_tables[i];
  select_of(t, c->by_rank, sql, sizeof(sql));
  len = strlen(sql);
  snprintf(sql + len, sizeof(sql) - len,
           " WHERE t.capture_id = ?1 %s%s ORDER BY %s LIMIT ?5", c->where,
           c->by_rank ? " GROUP BY t.rank" : "", c->order);
  if (store__stmt_query(st, sql, q, &s, err) < 0)
    return TR_EDB;
  return store__rows(st, s, out, err);
}

#define RANK_WHERE   "AND (?2 < 0 OR t.rank = ?2)"
#define FAMILY_WHERE "AND (?6 IS NULL OR t.family = ?6)"

static const struct coll_query by_family = { "collective_families", false,
                                             RANK_WHERE " " FAMILY_WHERE,
                                             "t.family, t.rank" };
static const struct coll_query by_step = { "collective_steps", false,
                                           RANK_WHERE,
                                           "t.step IS NOT NULL, t.step,"
                                           " t.rank" };
static const struct coll_query by_rank = { "collective_families", true,
                                           RANK_WHERE " " FAMILY_WHERE,
                                           "t.rank" };

/* /collectives: rows per family and rank (by family, the default; q->family
 * filters), per step kind and rank (by step), or per rank summed (by
 * rank), each common/summary.h's TR_COLL_FIGURES; q->rank filters. */
static int coll_by_rows(struct store *st, const void *ctx,
                        const struct store_query *q, json_t **out,
                        struct tr_err *err)
{
  const struct coll_query *c = q->by == NULL || !strcmp(q->by, "family")
                                   ? &by_family
                               : !strcmp(q->by, "step") ? &by_step
                                                        : &by_rank;

  (void)ctx;
  return coll_rows(st, c, q, out, err);
}

const struct store__sql store__sql_collective_families = { coll_by_rows, NULL,
                                                           NULL, NULL };

/* /collectives/steps: /collectives?by=step. */
const struct store__sql store__sql_collective_steps = { coll_rows, &by_step,
                                                        NULL, NULL };

static int instances_check(const struct store_query *q, struct tr_err *err)
{
  if (q->rank >= 0)
    return tr_err_set(err, TR_EINVAL, "rank",
                      "an instance is every rank's: rank does not apply");
  return 0;
}

/* The kept instances, worst skew first (q->family filters, q->limit). */
static const struct coll_query instances = { "collective_instances", false,
                                             FAMILY_WHERE,
                                             "t.skew_ns DESC, t.start_ns,"
                                             " t.family, t.lane, t.idx" };
const struct store__sql store__sql_collective_instances = { coll_rows,
                                                            &instances,
                                                            instances_check,
                                                            NULL };

/* The rank x time bins, by bin and rank. */
static const struct coll_query timeline = { "collective_timeline", false,
                                            RANK_WHERE, "t.bin, t.rank" };
const struct store__sql store__sql_collective_timeline = { coll_rows, &timeline,
                                                           NULL, NULL };
