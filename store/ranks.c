/*
 * Ranks: storing a rank summary (docs/API.md, "Rank summary") with all its
 * tables in one transaction, failed ranks, and the ranks' short form for
 * the capture object. The summary is mapped to columns by the field list
 * (common/summary.h, store/fields.c), which drives both the INSERT text
 * and the checks of each value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The id of name in names, adding it when new. */
static int intern(struct store *st, const char *name, int64_t *id,
                  struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st, "SELECT id FROM names WHERE name = ?1", &s, err);

  if (rc < 0)
    return rc;
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    *id = sqlite3_column_int64(s, 0);
  store__done(s);
  if (rc == SQLITE_ROW)
    return 0;
  if (rc != SQLITE_DONE)
    return store__db_err(st, "names", err);
  rc = store__stmt(st, "INSERT INTO names(name) VALUES(?1)", &s, err);
  if (rc < 0)
    return rc;
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(st, "names", err);
  store__done(s);
  if (rc == 0)
    *id = sqlite3_last_insert_rowid(st->db);
  return rc;
}

static int bad_value(const char *where, const struct store__field *f,
                     struct tr_err *err)
{
  static const char *const want[] = {
    [F_INT] = "an integer",      [F_INT_NULL] = "an integer or null",
    [F_TEXT] = "a string",       [F_TEXT_NULL] = "a string or null",
    [F_NAME] = "a string",       [F_JSON] = "present",
    [F_JSON_NULL] = "any value", [F_AVG] = "an integer",
    [F_SHARE] = "a number",      [F_RATIO] = "a number"
  };

  return tr_err_set(err, TR_EINVAL, "summary",
                    "rank summary: %s%s%s: missing or not %s", where,
                    *where ? "." : "", f->key, want[f->ty]);
}

/* Binds f's value from obj at parameter i: 0, a TR_E* code, or a positive
 * SQLite code from the bind. */
static int bind_field(struct store *st, sqlite3_stmt *s, int i,
                      const struct store__field *f, json_t *obj,
                      const char *where, struct tr_err *err)
{
  json_t *v = json_object_get(obj, f->key);
  bool absent = v == NULL || json_is_null(v);
  int64_t id = 0;
  char *text;
  int rc;

  if (absent &&
      (f->ty == F_INT_NULL || f->ty == F_TEXT_NULL || f->ty == F_JSON_NULL))
    return sqlite3_bind_null(s, i);
  switch (f->ty) {
  case F_INT:
  case F_INT_NULL:
    if (!json_is_integer(v))
      return bad_value(where, f, err);
    return sqlite3_bind_int64(s, i, json_integer_value(v));
  case F_TEXT:
  case F_TEXT_NULL:
    if (!json_is_string(v))
      return bad_value(where, f, err);
    return sqlite3_bind_text(s, i, json_string_value(v), -1, SQLITE_TRANSIENT);
  case F_NAME:
    if (!json_is_string(v))
      return bad_value(where, f, err);
    rc = intern(st, json_string_value(v), &id, err);
    return rc < 0 ? rc : sqlite3_bind_int64(s, i, id);
  default:
    if (v == NULL)
      return bad_value(where, f, err);
    text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
      return tr_err_set(err, TR_ENOMEM, "summary", "%s", f->key);
    return sqlite3_bind_text(s, i, text, -1, free);
  }
}

/* Binds every field of t from obj after the head parameters the caller
 * bound, and runs the INSERT. */
static int insert_row(struct store *st, sqlite3_stmt *s, const struct table *t,
                      json_t *obj, const char *where, struct tr_err *err)
{
  int rc = 0, k = t->nhead;

  if (!json_is_object(obj))
    rc = tr_err_set(err, TR_EINVAL, "summary",
                    "rank summary: %s: not an object", where);
  for (size_t i = 0; i < t->n && rc == 0; i++) {
    if (!store__field_stored(&t->f[i]))
      continue;
    rc = bind_field(st, s, ++k, &t->f[i], obj, where, err);
    if (rc > 0)
      rc = store__db_err(st, "bind", err);
  }
  if (rc == 0 && sqlite3_step(s) != SQLITE_DONE)
    rc = store__db_err(st, where, err);
  store__done(s);
  return rc;
}

/* Inserts every row of the array rows into t, its head ?1 = head_id. */
static int insert_rows(struct store *st, int64_t head_id, const struct table *t,
                       json_t *rows, struct tr_err *err)
{
  char sql[2048], where[64];
  json_t *row;
  sqlite3_stmt *s;
  size_t i;
  int rc = 0;

  if (!json_is_array(rows))
    return tr_err_set(err, TR_EINVAL, "summary",
                      "rank summary: %s: missing or not an array", t->key);
  insert_sql(t, sql, sizeof(sql));
  json_array_foreach(rows, i, row) {
    rc = store__stmt(st, sql, &s, err);
    if (rc < 0)
      break;
    sqlite3_bind_int64(s, 1, head_id);
    snprintf(where, sizeof(where), "%s[%zu]", t->key, i);
    rc = insert_row(st, s, t, row, where, err);
    if (rc < 0)
      break;
  }
  return rc;
}

static int insert_children(struct store *st, int64_t rank_id,
                           const struct table *t, json_t *summary,
                           struct tr_err *err)
{
  return insert_rows(st, rank_id, t, json_object_get(summary, t->key), err);
}

int store__insert_capture_rows(struct store *st, int64_t capture_id,
                               const struct store__table *c, json_t *rows,
                               struct tr_err *err)
{
  struct table t = { c->member, c->member, "capture_id", "?1", 1, c->f, c->n };

  return insert_rows(st, capture_id, &t, rows, err);
}

/* Removes an earlier attempt at the same rank (a re-index replaces it). */
static int delete_rank(struct store *st, int64_t capture_id, int rank,
                       struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt_id(st,
                          "DELETE FROM ranks WHERE capture_id = ?1 AND"
                          " rank = ?2",
                          capture_id, rank, &s, err);

  if (rc < 0)
    return rc;
  rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(st, "rank", err);
  store__done(s);
  return rc;
}

static int insert_summary(struct store *st, int64_t capture_id, int rank,
                          const char *label, json_t *summary,
                          struct tr_err *err)
{
  struct table head = rank_table();
  char sql[2048];
  sqlite3_stmt *s;
  int64_t rank_id;
  int rc = delete_rank(st, capture_id, rank, err);

  /* What was made of the ranks before is no longer true. */
  if (rc == 0)
    rc = store__results_drop(st, capture_id, err);
  insert_sql(&head, sql, sizeof(sql));
  if (rc == 0)
    rc = store__stmt(st, sql, &s, err);
  if (rc < 0)
    return rc;
  sqlite3_bind_int64(s, 1, capture_id);
  sqlite3_bind_int(s, 2, rank);
  store__bind_text(s, 3, label);
  rc = insert_row(st, s, &head, summary, "", err);
  rank_id = sqlite3_last_insert_rowid(st->db);
  for (size_t i = 0; i < store__ntables && rc == 0; i++) {
    struct table t = child_table(&store__tables[i]);

    rc = insert_children(st, rank_id, &t, summary, err);
  }
  return rc;
}

int store_rank_insert(struct store *st, int64_t capture_id, int rank,
                      const char *label, json_t *summary, struct tr_err *err)
{
  int rc;

  if (rank < 0)
    return tr_err_set(err, TR_EINVAL, "rank", "rank must be >= 0");
  if (!json_is_object(summary))
    return tr_err_set(err, TR_EINVAL, "summary", "rank summary: not an object");
  rc = store__wr_begin(st, err);
  if (rc < 0)
    return rc;
  rc = store__capture_exists(st, capture_id, NULL, err);
  if (rc == 0)
    rc = insert_summary(st, capture_id, rank, label, summary, err);
  return store__wr_end(st, rc, err);
}

int store_rank_fail(struct store *st, int64_t capture_id, int rank,
                    const char *label, const char *message, struct tr_err *err)
{
  sqlite3_stmt *s;
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
    rc = store__stmt(st,
                     "INSERT INTO ranks(capture_id, rank, label, status,"
                     " error) VALUES(?1, ?2, ?3, 'failed', ?4)",
                     &s, err);
  if (rc == 0) {
    sqlite3_bind_int64(s, 1, capture_id);
    sqlite3_bind_int(s, 2, rank);
    store__bind_text(s, 3, label);
    store__bind_text(s, 4, message ? message : "indexing failed");
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(st, "rank", err);
    store__done(s);
  }
  return store__wr_end(st, rc, err);
}

int store_rank_trace(struct store *st, int64_t capture_id, int rank,
                     struct store_trace *out, struct tr_err *err)
{
  struct store_trace t = { NULL, 0, 0, 0, "" };
  const char *format;
  sqlite3_stmt *s;
  int rc = store__stmt_id(st,
                          "SELECT file, t0_ns, span_ns, file_bytes, format"
                          " FROM ranks WHERE capture_id = ?1 AND rank = ?2"
                          " AND status = 'done'",
                          capture_id, rank, &s, err);

  if (rc < 0)
    return rc;
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    t.path = strdup((const char *)sqlite3_column_text(s, 0));
    t.t0_ns = sqlite3_column_int64(s, 1);
    t.span_ns = sqlite3_column_int64(s, 2);
    t.file_bytes = sqlite3_column_int64(s, 3);
    format = (const char *)sqlite3_column_text(s, 4);
    snprintf(t.format, sizeof(t.format), "%s", format ? format : "");
    rc = t.path ? 0 : tr_err_set(err, TR_ENOMEM, "", "path");
  } else {
    rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "rank file", err);
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
  sqlite3_stmt *s;
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
  rc = store__stmt_id(st, sql, id, 0, &s, err);
  if (rc < 0)
    return rc;
  rc = store__rows(st, s, &rows, err);
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
