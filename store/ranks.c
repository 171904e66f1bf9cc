/*
 * Ranks: storing a rank summary (docs/API.md, "Rank summary") with all its
 * tables in one transaction, failed ranks, and the ranks' short form for
 * the capture object. The summary is mapped to columns by the field list
 * (common/summary.h, store/fields.c), which drives both the INSERT text
 * and the checks of each value.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "store/store_int.h"

/* A summary table as inserted: the head columns the caller binds, then one
 * parameter per stored member. */
struct table {
  const char *key;       /* the summary member holding the rows */
  const char *name;      /* SQL table */
  const char *head_cols; /* leading columns, bound ?1.. by the caller */
  const char *head_vals;
  int nhead; /* parameters used by head_vals */
  const struct store__field *f;
  size_t n;
};

#define NF(a) (sizeof(a) / sizeof((a)[0]))

static struct table rank_table(void)
{
  struct table t = { NULL,
                     "ranks",
                     "capture_id, rank, label, status",
                     "?1, ?2, ?3, 'done'",
                     3,
                     store__rank_fields,
                     store__rank_nfields };

  return t;
}

static struct table child_table(const struct store__table *c)
{
  struct table t = { c->member, c->member, "rank_id", "?1", 1, c->f, c->n };

  return t;
}

/* "INSERT INTO t(head, cols...) VALUES(head, ?k...)" from the table: one
 * parameter per stored member, in order. */
static void insert_sql(const struct table *t, char *buf, size_t size)
{
  size_t len =
      (size_t)snprintf(buf, size, "INSERT INTO %s(%s", t->name, t->head_cols);
  int k = t->nhead;

  for (size_t i = 0; i < t->n && len < size; i++)
    if (store__field_stored(&t->f[i]))
      len += (size_t)snprintf(buf + len, size - len, ", %s", t->f[i].col);
  if (len < size)
    len += (size_t)snprintf(buf + len, size - len, ") VALUES(%s", t->head_vals);
  for (size_t i = 0; i < t->n && len < size; i++)
    if (store__field_stored(&t->f[i]))
      len += (size_t)snprintf(buf + len, size - len, ", ?%d", ++k);
  if (len < size)
    snprintf(buf + len, size - len, ")");
}

int store__intern(struct store *st, const char *name, int64_t *id,
                  uint64_t *bytes, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(st, "SELECT id FROM names WHERE name = ?1", &s, err,
                       "%s", name);

  if (rc < 0)
    return rc;
  rc = store__step(st, s, "names", err);
  if (rc == 1)
    *id = sqlite3_column_int64(s, 0);
  store__done(s);
  if (rc != 0)
    return rc == 1 ? 0 : rc;
  rc = store__run(st, "names", "INSERT INTO names(name) VALUES(?1)", err, "%s",
                  name);
  if (rc == 0) {
    *id = sqlite3_last_insert_rowid(st->db);
    if (bytes != NULL)
      *bytes += 2 * strlen(name);
  }
  return rc;
}

static int bad_value(const char *where, const struct store__field *f,
                     struct tr_err *err)
{
  static const char *const want[] = {
    [F_INT] = "an integer",      [F_INT_NULL] = "an integer or null",
    [F_TEXT] = "a string",       [F_TEXT_NULL] = "a string or null",
    [F_NAME] = "a string",       [F_JSON] = "present",
    [F_JSON_NULL] = "any value", [F_REAL] = "a number",
    [F_REAL_NULL] = "a number or null", [F_AVG] = "an integer",
    [F_SHARE] = "a number",      [F_RATIO] = "a number",
    [F_PART] = "a number"
  };

  return tr_err_set(err, TR_EINVAL, "summary",
                    "rank summary: %s%s%s: missing or not %s", where,
                    *where ? "." : "", f->key, want[f->ty]);
}

/* Binds f's value from obj at parameter i, adding the bytes it stores to
 * *bytes: 0, a TR_E* code, or a positive SQLite code from the bind. */
static int bind_field(struct store *st, sqlite3_stmt *s, int i,
                      const struct store__field *f, json_t *obj,
                      const char *where, uint64_t *bytes, struct tr_err *err)
{
  json_t *v = json_object_get(obj, f->key);
  bool absent = v == NULL || json_is_null(v);
  int64_t id = 0;
  char *text;
  int rc;

  if (absent && (f->ty == F_INT_NULL || f->ty == F_TEXT_NULL ||
                 f->ty == F_JSON_NULL || f->ty == F_REAL_NULL))
    return sqlite3_bind_null(s, i);
  switch (f->ty) {
  case F_INT:
  case F_INT_NULL:
    if (!json_is_integer(v))
      return bad_value(where, f, err);
    *bytes += sizeof(int64_t);
    return sqlite3_bind_int64(s, i, json_integer_value(v));
  case F_REAL:
  case F_REAL_NULL:
    if (!json_is_number(v))
      return bad_value(where, f, err);
    *bytes += sizeof(double);
    return sqlite3_bind_double(s, i, json_number_value(v));
  case F_TEXT:
  case F_TEXT_NULL:
    if (!json_is_string(v))
      return bad_value(where, f, err);
    *bytes += json_string_length(v);
    return sqlite3_bind_text(s, i, json_string_value(v), -1, SQLITE_TRANSIENT);
  case F_NAME:
    if (!json_is_string(v))
      return bad_value(where, f, err);
    rc = store__intern(st, json_string_value(v), &id, bytes, err);
    *bytes += sizeof(int64_t);
    return rc < 0 ? rc : sqlite3_bind_int64(s, i, id);
  default:
    if (v == NULL)
      return bad_value(where, f, err);
    text = tr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
      return tr_err_set(err, TR_ENOMEM, "summary", "%s", f->key);
    *bytes += strlen(text);
    return sqlite3_bind_text(s, i, text, -1, free);
  }
}

/* Binds every field of t from obj after the head parameters the caller
 * bound, and runs the INSERT; the bytes it stores go to *bytes. */
static int insert_row(struct store *st, sqlite3_stmt *s, const struct table *t,
                      json_t *obj, const char *where, uint64_t *bytes,
                      struct tr_err *err)
{
  int rc = 0, k = t->nhead;

  if (!json_is_object(obj))
    rc = tr_err_set(err, TR_EINVAL, "summary",
                    "rank summary: %s: not an object", where);
  for (size_t i = 0; i < t->n && rc == 0; i++) {
    if (!store__field_stored(&t->f[i]))
      continue;
    rc = bind_field(st, s, ++k, &t->f[i], obj, where, bytes, err);
    if (rc > 0)
      rc = store__db_err(st, "bind", err);
  }
  if (rc == 0 && sqlite3_step(s) != SQLITE_DONE)
    rc = store__db_err(st, where, err);
  store__done(s);
  return rc;
}

/* Inserts obj as the i-th row of t, its head ?1 = head_id. */
static int insert_child(struct store *st, int64_t head_id,
                        const struct table *t, size_t i, json_t *obj,
                        uint64_t *bytes, struct tr_err *err)
{
  char sql[2048], where[64];
  sqlite3_stmt *s;
  int rc;

  insert_sql(t, sql, sizeof(sql));
  rc = store__prep(st, sql, &s, err, "%ld", head_id);
  if (rc < 0)
    return rc;
  snprintf(where, sizeof(where), "%s[%zu]", t->key, i);
  return insert_row(st, s, t, obj, where, bytes, err);
}

/* The array member of the summary holding t's rows. */
static json_t *rows_of(json_t *summary, const char *key, struct tr_err *err)
{
  json_t *rows = json_object_get(summary, key);

  if (!json_is_array(rows))
    tr_err_set(err, TR_EINVAL, "summary",
               "rank summary: %s: missing or not an array", key);
  return json_is_array(rows) ? rows : NULL;
}

int store__insert_capture_rows(struct store *st, int64_t capture_id,
                               const struct store__table *c, json_t *rows,
                               struct tr_err *err)
{
  struct table t = { c->member, c->member, "capture_id", "?1", 1, c->f, c->n };
  uint64_t bytes = 0;
  json_t *row;
  size_t i;
  int rc = 0;

  if (!json_is_array(rows))
    return tr_err_set(err, TR_EINVAL, "summary",
                      "rank summary: %s: missing or not an array", t.key);
  json_array_foreach(rows, i, row) {
    if (rc == 0)
      rc = insert_child(st, capture_id, &t, i, row, &bytes, err);
  }
  return rc;
}

/* Removes an earlier attempt at the same rank (a re-index replaces it). */
static int delete_rank(struct store *st, int64_t capture_id, int rank,
                       struct tr_err *err)
{
  return store__run(st, "rank",
                    "DELETE FROM ranks WHERE capture_id = ?1 AND rank = ?2",
                    err, "%ld%d", capture_id, rank);
}

/* ---- a rank stored as it is made ---- */

struct store_rank_writer {
  struct store *st;
  int64_t rank_id;
  uint64_t bytes, max_bytes; /* stored so far; the cap (0: none) */
  size_t *nrows;             /* rows so far, by store__tables index */
};

static int insert_head(struct store_rank_writer *w, int64_t capture_id,
                       int rank, const char *label, json_t *head,
                       struct tr_err *err)
{
  struct table t = rank_table();
  char sql[2048];
  sqlite3_stmt *s;
  int rc = delete_rank(w->st, capture_id, rank, err);

  /* What was made of the ranks before is no longer true. */
  if (rc == 0)
    rc = store__results_drop(w->st, capture_id, err);
  insert_sql(&t, sql, sizeof(sql));
  if (rc == 0)
    rc = store__prep(w->st, sql, &s, err, "%ld%d%s", capture_id, rank, label);
  if (rc < 0)
    return rc;
  rc = insert_row(w->st, s, &t, head, "", &w->bytes, err);
  w->rank_id = sqlite3_last_insert_rowid(w->st->db);
  return rc;
}

int store_rank_open(struct store *st, int64_t capture_id, int rank,
                    const char *label, json_t *head, uint64_t max_bytes,
                    struct store_rank_writer **out, struct tr_err *err)
{
  struct store_rank_writer *w;
  int rc;

  if (rank < 0)
    return tr_err_set(err, TR_EINVAL, "rank", "rank must be >= 0");
  if (!json_is_object(head))
    return tr_err_set(err, TR_EINVAL, "summary", "rank summary: not an object");
  w = calloc(1, sizeof(*w));
  if (w == NULL ||
      (w->nrows = calloc(store__ntables, sizeof(size_t))) == NULL) {
    free(w);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  w->st = st;
  w->max_bytes = max_bytes;
  if ((rc = store__wr_begin(st, err)) != 0) {
    free(w->nrows);
    free(w);
    return rc;
  }
  rc = store__capture_exists(st, capture_id, NULL, err);
  if (rc == 0)
    rc = insert_head(w, capture_id, rank, label, head, err);
  if (rc != 0)
    return store_rank_close(w, rc, err);
  *out = w;
  return 0;
}

int store_rank_row(struct store_rank_writer *w, const char *table, json_t *row,
                   struct tr_err *err)
{
  const struct store__table *c = store__table(table);
  struct table t;
  size_t i;
  int rc;

  if (c == NULL)
    return tr_err_set(err, TR_EINVAL, "summary", "rank summary: no table %s",
                      table);
  t = child_table(c);
  i = w->nrows[c - store__tables]++;
  rc = insert_child(w->st, w->rank_id, &t, i, row, &w->bytes, err);
  if (rc == 0 && w->max_bytes > 0 && w->bytes > w->max_bytes)
    rc = tr_err_set(err, TR_ELIMIT, "",
                    "the rank's summary would add more than "
                    "max_rank_db_bytes (%llu bytes) to the database "
                    "(%s, row %zu): refused",
                    (unsigned long long)w->max_bytes, table, i);
  return rc;
}

int store_rank_close(struct store_rank_writer *w, int rc, struct tr_err *err)
{
  if (w == NULL)
    return rc;
  rc = store__wr_end(w->st, rc, err);
  free(w->nrows);
  free(w);
  return rc;
}

int store_rank_insert(struct store *st, int64_t capture_id, int rank,
                      const char *label, json_t *summary, struct tr_err *err)
{
  struct store_rank_writer *w = NULL;
  json_t *rows, *row;
  size_t i;
  int rc = store_rank_open(st, capture_id, rank, label, summary, 0, &w, err);

  for (size_t k = 0; rc == 0 && k < store__ntables; k++) {
    const char *key = store__tables[k].member;

    if ((rows = rows_of(summary, key, err)) == NULL)
      rc = TR_EINVAL;
    json_array_foreach(rows, i, row) {
      if (rc == 0)
        rc = store_rank_row(w, key, row, err);
    }
  }
  return store_rank_close(w, rc, err);
}

int store_rank_fail(struct store *st, int64_t capture_id, int rank,
                    const char *label, const char *message, struct tr_err *err)
{
  int rc;

  if (rank < 0)
    return tr_err_set(err, TR_EINVAL, "rank", "rank must be >= 0");
  rc = store__wr_begin(st, err);
  if (rc < 0)
    return rc;
  rc = store__capture_exists(st, capture_id, NULL, err);
  if (rc == 0)
    rc = delete_rank(st, capture_id, rank, err);
  if (rc == 0)
    rc = store__results_drop(st, capture_id, err);
  if (rc == 0)
    rc = store__run(st, "rank",
                    "INSERT INTO ranks(capture_id, rank, label, status,"
                    " error) VALUES(?1, ?2, ?3, 'failed', ?4)",
                    err, "%ld%d%s%s", capture_id, rank, label,
                    message ? message : "indexing failed");
  return store__wr_end(st, rc, err);
}

/* The columns a store_trace is read from, and the row read into t
 * (t->path NULL when out of memory). */
#define TRACE_COLUMNS "file, t0_ns, span_ns, file_bytes, format, rank"

static void read_trace(sqlite3_stmt *s, struct store_trace *t)
{
  const char *format = (const char *)sqlite3_column_text(s, 4);

  t->path = strdup((const char *)sqlite3_column_text(s, 0));
  t->t0_ns = sqlite3_column_int64(s, 1);
  t->span_ns = sqlite3_column_int64(s, 2);
  t->file_bytes = sqlite3_column_int64(s, 3);
  snprintf(t->format, sizeof(t->format), "%s", format ? format : "");
  t->rank = sqlite3_column_int(s, 5);
}

int store_rank_trace(struct store *st, int64_t capture_id, int rank,
                     struct store_trace *out, struct tr_err *err)
{
  struct store_trace t = { NULL, 0, 0, 0, "", 0 };
  sqlite3_stmt *s;
  int rc = store__first(st,
                        "SELECT " TRACE_COLUMNS
                        " FROM ranks WHERE capture_id = ?1 AND rank = ?2"
                        " AND status = 'done'",
                        capture_id, rank, "rank file", &s, err);

  if (rc == 1) {
    read_trace(s, &t);
    rc = t.path ? 0 : tr_err_set(err, TR_ENOMEM, "", "path");
  }
  store__done(s);
  if (rc == 0 && t.path == NULL) {
    rc = store__capture_exists(st, capture_id, NULL, err);
    if (rc == 0)
      rc = tr_err_set(err, TR_ENOTFOUND, "rank",
                      "capture %lld has no trace file for rank %d",
                      (long long)capture_id, rank);
  }
  if (rc == 0)
    *out = t;
  return rc;
}

int store_rank_traces(struct store *st, int64_t capture_id,
                      struct store_trace *out, size_t max, size_t *n,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  size_t got = 0;
  /* One row past max says there are more. */
  int rc = store__stmt_id(
      st,
      "SELECT " TRACE_COLUMNS " FROM ranks WHERE capture_id = ?1"
      " AND status = 'done' ORDER BY rank LIMIT ?2",
      capture_id, max < INT_MAX ? (int)max + 1 : INT_MAX, &s, err);

  if (rc < 0)
    return rc;
  while (got < max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    read_trace(s, &out[got]);
    if (out[got++].path == NULL)
      break;
  }
  if (got > 0 && out[got - 1].path == NULL)
    rc = tr_err_set(err, TR_ENOMEM, "", "path");
  else if (got == max && sqlite3_step(s) == SQLITE_ROW)
    rc = tr_err_set(err, TR_ELIMIT, "rank",
                    "capture %lld has more than %zu done ranks",
                    (long long)capture_id, max);
  else
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE
             ? 0
             : store__db_err(st, "ranks", err);
  store__done(s);
  if (rc == 0 && got == 0 &&
      (rc = store__capture_exists(st, capture_id, NULL, err)) == 0)
    rc = tr_err_set(err, TR_ENOTFOUND, "id", "capture %lld has no done rank",
                    (long long)capture_id);
  for (size_t i = 0; rc != 0 && i < got; i++)
    free(out[i].path);
  if (rc == 0)
    *n = got;
  return rc;
}

int store_rank_file(struct store *st, int64_t capture_id, int rank, char **path,
                    struct tr_err *err)
{
  struct store_trace t;
  int rc = store_rank_trace(st, capture_id, rank, &t, err);

  if (rc == 0)
    *path = t.path;
  return rc;
}

/* One rank of the capture object: a failed rank says only what failed;
 * a done one is its summary without the long tables. */
static int short_form(struct store *st, int64_t id, json_t *r,
                      struct tr_err *err)
{
  static const char *const failed_keys[] = { "rank", "label", "file", "status",
                                             "error" };
  static const enum tr_table small[] = { TR_TABLE_categories, TR_TABLE_memcpy,
                                         TR_TABLE_steps };
  int rank = (int)json_integer_value(json_object_get(r, "rank"));
  const char *key;
  json_t *v, *rows;
  void *tmp;
  int rc = 0;

  if (strcmp(json_string_value(json_object_get(r, "status")), "failed")) {
    json_object_del(r, "error");
    for (size_t i = 0; i < NF(small) && rc == 0; i++) {
      rows = NULL;
      rc = store__rank_table(st, id, rank, small[i], &rows, err);
      if (rc == 0)
        json_object_set_new(r, tr_tables[small[i]].name, rows);
    }
    return rc;
  }
  json_object_foreach_safe(r, tmp, key, v) {
    size_t i = 0;

    while (i < NF(failed_keys) && strcmp(key, failed_keys[i]) != 0)
      i++;
    if (i == NF(failed_keys))
      json_object_del(r, key);
  }
  return 0;
}

int store__capture_ranks(struct store *st, int64_t id, json_t **out,
                         struct tr_err *err)
{
  char sql[2048];
  size_t len, i;
  json_t *rows = NULL, *r;
  int rc;

  len = (size_t)snprintf(sql, sizeof(sql), "SELECT rank, label, status, error");
  for (i = 0; i < store__rank_nfields && len < sizeof(sql); i++) {
    const struct store__field *f = &store__rank_fields[i];
    bool json = f->ty == F_JSON || f->ty == F_JSON_NULL;

    len += (size_t)snprintf(sql + len, sizeof(sql) - len, ", %s%s%s%s", f->col,
                            json ? " AS " : "", json ? f->key : "",
                            json ? "_json" : "");
  }
  if (len < sizeof(sql))
    snprintf(sql + len, sizeof(sql) - len,
             " FROM ranks WHERE capture_id = ?1 ORDER BY rank");
  rc = store__rows_id(st, sql, id, 0, &rows, err);
  if (rc < 0)
    return rc;
  json_array_foreach(rows, i, r) {
    if (rc == 0)
      rc = short_form(st, id, r, err);
  }
  if (rc < 0) {
    json_decref(rows);
    return rc;
  }
  *out = rows;
  return 0;
}
