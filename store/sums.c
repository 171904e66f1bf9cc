/*
 * A capture's all-ranks tables summed once: when its ranks are all
 * indexed, the all-ranks answer of each table with TR_T_SUMMED
 * (common/summary.h's TR_TABLE_MAP) is stored row by row in sum_rows
 * (schema step 5), one sum per value of its ?by=, so that an all-ranks
 * request reads a few rows in order instead of grouping every rank's rows
 * again. A row is kept as the JSON text of the live query's row (the
 * table's SQL), in that query's order (seq), beside the members its
 * filters and sorts read (the map's key and kind): an answer made of them
 * is the live answer, byte for byte, and the route can send the text as
 * it is (store_table_text()).
 *
 * A rank stored again drops its capture's sums (ranks.c): they never
 * outlive the rows they were made from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "store/store_int.h"

/* A table's sum: one per value of its ?by= (tr_table.by). */
struct sum_tbl {
  enum tr_table t;
  const struct tr_table_row *tt;
  const char *by; /* the by it answers, or NULL */
  char name[64];  /* sum_rows.tbl: the table's name, then _<by> for
                     every by but the first */
};

/* The sum of t answering by (checked: NULL or one of t's), into *out. */
static void sum_of(enum tr_table t, const char *by, struct sum_tbl *out)
{
  const struct tr_table_row *tt = &tr_tables[t];

  out->t = t;
  out->tt = tt;
  out->by = by;
  if (by != NULL && tt->by != NULL && strcmp(by, tt->by[0]) != 0)
    snprintf(out->name, sizeof(out->name), "%s_%s", tt->name, by);
  else
    snprintf(out->name, sizeof(out->name), "%s", tt->name);
}

/* ---- writing ---- */

static void bind_member(sqlite3_stmt *s, int i, json_t *row, const char *key)
{
  json_t *v = key != NULL ? json_object_get(row, key) : NULL;

  if (json_is_string(v))
    sqlite3_bind_text(s, i, json_string_value(v), -1, SQLITE_TRANSIENT);
  else if (json_is_integer(v))
    sqlite3_bind_int64(s, i, json_integer_value(v));
  else
    sqlite3_bind_null(s, i);
}

/* One table's sums being written: each row goes to sum_rows as it comes,
 * and its text to the whole answer's. */
struct sum_writer {
  struct store *st;
  int64_t id;
  const struct sum_tbl *t;
  size_t seq;
  struct tr_buf text, ends; /* the answer, where each row ends in it */
};

static int insert_sum(struct sum_writer *w, json_t *row, const char *text,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(w->st,
                       "INSERT INTO sum_rows(capture_id, tbl, seq, name,"
                       " category, family, kind, count, total_ns, avg_ns, row)"
                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                       &s, err, "%ld%s%ld", w->id, w->t->name, (int64_t)w->seq);

  if (rc < 0)
    return rc;
  bind_member(s, 4, row, w->t->tt->key);
  bind_member(s, 5, row, "category");
  bind_member(s, 6, row, "family");
  bind_member(s, 7, row, w->t->tt->kind);
  bind_member(s, 8, row, "count");
  bind_member(s, 9, row, "total_ns");
  bind_member(s, 10, row, "avg_ns");
  sqlite3_bind_text(s, 11, text, -1, SQLITE_STATIC);
  rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(w->st, "sums", err);
  store__done(s);
  return rc;
}

/* A store__row_fn: one row of the live answer, in its order. */
static int put_row(void *ud, json_t *row, struct tr_err *err)
{
  struct sum_writer *w = ud;
  char *one = tr_json_dumps(row, JSON_COMPACT);
  uint32_t end;
  int rc;

  if (one == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "sums");
  rc = insert_sum(w, row, one, err);
  if (w->seq++ > 0)
    tr_buf_put(&w->text, ",", 1);
  tr_buf_put(&w->text, one, strlen(one));
  end = (uint32_t)w->text.n;
  tr_buf_put(&w->ends, (const char *)&end, sizeof(end));
  free(one);
  return rc;
}

/* The whole answer as one text, and where each row ends in it. */
static int insert_text(struct sum_writer *w, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc;

  tr_buf_put(&w->text, "]", 1);
  tr_buf_put(&w->ends, "", 0);
  rc = w->text.failed || w->ends.failed || w->text.n > UINT32_MAX
           ? tr_err_set(err, TR_ENOMEM, "", "sums")
           : store__stmt(w->st,
                         "INSERT INTO sum_texts(capture_id, tbl, rows, ends)"
                         " VALUES(?1, ?2, ?3, ?4)",
                         &s, err);
  if (rc == 0) {
    sqlite3_bind_int64(s, 1, w->id);
    sqlite3_bind_text(s, 2, w->t->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, w->text.p, (int)w->text.n, SQLITE_STATIC);
    sqlite3_bind_blob(s, 4, w->ends.p, (int)w->ends.n, SQLITE_STATIC);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(w->st, "sums", err);
    store__done(s);
  }
  return rc;
}

/* The rows stream from the live query to the store, one at a time: a
 * table of ten thousand kernels is never held as JSON. */
static int write_table(struct store *st, int64_t id, const struct sum_tbl *t,
                       struct tr_err *err)
{
  struct store_query q = { .capture_id = id, .rank = -1, .by = t->by };
  struct sum_writer w = { st, id, t, 0, { 0 }, { 0 } };
  int rc;

  tr_buf_put(&w.text, "[", 1);
  rc = store__table_live_each(st, t->t, &q, put_row, &w, err);
  if (rc == 0)
    rc = insert_text(&w, err);
  tr_buf_free(&w.text);
  tr_buf_free(&w.ends);
  return rc;
}

int store__sums_write(struct store *st, int64_t id, struct tr_err *err)
{
  struct sum_tbl sum;
  int rc = 0;

  for (int t = 0; rc == 0 && t < TR_NTABLES; t++) {
    const char *const *by = tr_tables[t].by;

    if (!(tr_tables[t].flags & TR_T_SUMMED))
      continue;
    do {
      sum_of(t, by != NULL ? *by : NULL, &sum);
      rc = write_table(st, id, &sum, err);
    } while (rc == 0 && by != NULL && *++by != NULL);
  }
  return rc;
}

/* ---- reading ---- */

/* Whether ?sort= orders t's rows (else they keep the query's order). */
static bool sorts(const struct sum_tbl *t)
{
  return (t->tt->params & TR_P(SORT)) != 0;
}

/* The statement of t's rows for q (bound), ordered as the live query. */
static int rows_stmt(struct store *st, const struct sum_tbl *t,
                     const struct store_query *q, sqlite3_stmt **out,
                     struct tr_err *err)
{
  static const char *const orders[][2] = {
    { "total", "seq" },
    { "count", "count DESC, name, seq" },
    { "avg", "avg_ns DESC, name, seq" },
    { "name", "name, seq" },
  };
  const char *order = "seq";
  char sql[512];

  for (size_t i = 0; sorts(t) && q->sort && i < 4; i++)
    if (strcmp(q->sort, orders[i][0]) == 0)
      order = orders[i][1];
  snprintf(sql, sizeof(sql),
           "SELECT row FROM sum_rows WHERE capture_id = ?1 AND tbl = ?2"
           " AND (?3 IS NULL OR instr(lower(name), lower(?3)) > 0)"
           " AND (?4 IS NULL OR category = ?4) AND (?6 IS NULL OR family = ?6)"
           " AND (?7 IS NULL OR kind = ?7)"
           " AND (?8 IS NULL OR json_extract(row, '$.module') = ?8)"
           " ORDER BY %s LIMIT ?5",
           order);
  if (store__prep(st, sql, out, err, "%ld%s%s%s%d%s%s%s", q->capture_id,
                  t->name, t->tt->key && q->q && *q->q ? q->q : NULL,
                  q->category && *q->category ? q->category : NULL,
                  q->limit > 0 ? q->limit : -1,
                  q->family && *q->family ? q->family : NULL,
                  t->tt->kind && q->kind && *q->kind ? q->kind : NULL,
                  q->module && *q->module ? q->module : NULL) < 0)
    return TR_EDB;
  return 0;
}

/* 1 unless capture id has its sums (and, with done, is done). */
static int summed(struct store *st, int64_t id, bool done, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__first(st,
                        "SELECT c.status = 'done' FROM capture_results r"
                        " JOIN captures c ON c.id = r.capture_id"
                        " WHERE r.capture_id = ?1 AND r.summed = 1",
                        id, 0, "sums", &s, err);

  if (rc == 1)
    rc = !done || sqlite3_column_int(s, 0) ? 0 : 1;
  else if (rc == 0)
    rc = 1;
  store__done(s);
  return rc;
}

/* Steps s to its end: each row's text parsed into *out (a new array), or
 * (text) appended to buf between [ and ]. Gives s back. */
static int collect(struct store *st, sqlite3_stmt *s, json_t **out,
                   struct tr_buf *buf, struct tr_err *err)
{
  json_t *rows = out != NULL ? json_array() : NULL;
  int rc = 0, n = 0, step;

  if (buf != NULL)
    tr_buf_put(buf, "[", 1);
  while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW) {
    if (buf != NULL) {
      if (n++ > 0)
        tr_buf_put(buf, ",", 1);
      tr_buf_put(buf, (const char *)sqlite3_column_text(s, 0),
                 (size_t)sqlite3_column_bytes(s, 0));
    } else if (json_array_append_new(rows, store__col_json(s, 0)) != 0) {
      rc = tr_err_set(err, TR_ENOMEM, "", "rows");
    }
  }
  if (rc == 0 && step != SQLITE_DONE)
    rc = store__db_err(st, "sums", err);
  store__done(s);
  if (buf != NULL && rc == 0)
    tr_buf_put(buf, "]", 1);
  if (rc == 0 && buf != NULL && buf->failed == TR_ENOMEM)
    rc = tr_err_set(err, TR_ENOMEM, "", "rows");
  if (out != NULL && rc == 0)
    *out = rows;
  else
    json_decref(rows);
  return rc;
}

int store__sum_rows(struct store *st, enum tr_table t,
                    const struct store_query *q, json_t **out,
                    struct tr_err *err)
{
  struct sum_tbl sum;
  sqlite3_stmt *s;
  int rc = tr_tables[t].flags & TR_T_SUMMED
               ? summed(st, q->capture_id, false, err)
               : 1;

  sum_of(t, q->by, &sum);
  if (rc == 0)
    rc = rows_stmt(st, &sum, q, &s, err);
  return rc == 0 ? collect(st, s, out, NULL, err) : rc;
}

/* The answer without filters in the table's own order: a prefix of its
 * whole text, the first limit rows. */
static bool whole_text(const struct sum_tbl *t, const struct store_query *q)
{
  return (!t->tt->key || !q->q || !*q->q) && (!q->category || !*q->category) &&
         (!q->family || !*q->family) &&
         (!t->tt->kind || !q->kind || !*q->kind) &&
         (!q->module || !*q->module) &&
         (!sorts(t) || !q->sort || strcmp(q->sort, "total") == 0);
}

static int text_prefix(struct store *st, const struct sum_tbl *t,
                       const struct store_query *q, struct tr_buf *out,
                       struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(st,
                       "SELECT rows, ends FROM sum_texts"
                       " WHERE capture_id = ?1 AND tbl = ?2",
                       &s, err, "%ld%s", q->capture_id, t->name);
  const char *text;
  size_t n, len, whole;
  uint32_t end;

  if (rc < 0)
    return rc;
  if ((rc = sqlite3_step(s)) != SQLITE_ROW) {
    rc = rc == SQLITE_DONE ? 1 : store__db_err(st, "sums", err);
    store__done(s);
    return rc;
  }
  text = (const char *)sqlite3_column_text(s, 0);
  len = whole = (size_t)sqlite3_column_bytes(s, 0);
  n = (size_t)sqlite3_column_bytes(s, 1) / sizeof(end);
  if (q->limit > 0 && (size_t)q->limit < n) {
    memcpy(&end,
           (const char *)sqlite3_column_blob(s, 1) +
               (size_t)(q->limit - 1) * sizeof(end),
           sizeof(end));
    len = end;
  }
  /* Room for what is sent, not the whole text: a prefix within
   * max_response_bytes must not fail for the rows it leaves out. */
  tr_buf_reserve(out, len + 2); /* "]" and the caller's "}" after */
  tr_buf_put(out, text, len);
  if (len < whole)
    tr_buf_put(out, "]", 1);
  store__done(s);
  return out->failed == TR_ENOMEM ? tr_err_set(err, TR_ENOMEM, "", "rows") : 0;
}

int store_table_text(struct store *st, enum tr_table table,
                     const struct store_query *q, struct tr_buf *out,
                     struct tr_err *err)
{
  struct sum_tbl sum, *t = &sum;
  sqlite3_stmt *s;
  int rc = store__table_check(table, q, err);

  if (rc < 0 || !(tr_tables[table].flags & TR_T_SUMMED) || q->rank >= 0)
    return rc < 0 ? rc : 1;
  sum_of(table, q->by, &sum);
  if ((rc = store__rd_begin(st, err)) < 0)
    return rc;
  rc = summed(st, q->capture_id, true, err);
  if (rc == 0 && whole_text(t, q))
    rc = text_prefix(st, t, q, out, err);
  else if (rc == 0 && (rc = rows_stmt(st, t, q, &s, err)) == 0)
    rc = collect(st, s, NULL, out, err);
  return rc == 1 ? store__rd_end(st, 0, err) == 0 ? 1 : TR_EDB
                 : store__rd_end(st, rc, err);
}
