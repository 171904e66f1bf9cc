/*
 * A node's side of the fleet (docs/FLEET.md): the outbox the schema's
 * triggers fill (schema.c, version 7), its backfill, and what is
 * published of a capture: every row of it, found through the schema's
 * foreign keys rather than listed, so that a table added to the store is
 * published as it is (docs/ARCHITECTURE.md, "Adding a table").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lifecycle.h"
#include "common/text.h"
#include "common/reals.h"
#include "store/store_int.h"

int store_fleet_enable(struct store *st, bool on, struct tr_err *err)
{
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc =
      store__run(st, "fleet", "UPDATE fleet_node SET enabled = ?1 WHERE id = 1",
                 err, "%d", on);
  return store__wr_end(st, rc, err);
}

/* ---- the outbox ---- */

int store_outbox_next(struct store *st, struct store_outbox_item *it,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st,
                       "SELECT seq, capture_id, uuid, op = 'delete',"
                       " queued_ms, tries FROM fleet_outbox"
                       " ORDER BY tries, seq LIMIT 1",
                       &s, err);

  if (rc < 0)
    return rc;
  rc = store__step(st, s, "outbox", err);
  if (rc == 1) {
    it->seq = sqlite3_column_int64(s, 0);
    it->capture_id = sqlite3_column_int64(s, 1);
    snprintf(it->uuid, sizeof(it->uuid), "%s", sqlite3_column_text(s, 2));
    it->del = sqlite3_column_int(s, 3) != 0;
    it->queued_ms = sqlite3_column_int64(s, 4);
    it->tries = sqlite3_column_int(s, 5);
  }
  store__done(s);
  return rc < 0 ? rc : rc == 0; /* 1: none */
}

/* One write statement with ?1 = seq and, where sql has it, ?2 = text. */
static int outbox_write(struct store *st, const char *sql, int64_t seq,
                        const char *text, struct tr_err *err)
{
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc = store__run(st, "outbox", sql, err, "%ld|%s", seq, text);
  return store__wr_end(st, rc, err);
}

int store_outbox_done(struct store *st, int64_t seq, struct tr_err *err)
{
  return outbox_write(st, "DELETE FROM fleet_outbox WHERE seq = ?1", seq, NULL,
                      err);
}

int store_outbox_failed(struct store *st, int64_t seq, const char *why,
                        struct tr_err *err)
{
  return outbox_write(st,
                      "UPDATE fleet_outbox SET tries = tries + 1,"
                      " last_error = substr(?2, 1, 500) WHERE seq = ?1",
                      seq, why, err);
}

int store_outbox_stats(struct store *st, int64_t *length, int64_t *oldest_ms,
                       struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st,
                       "SELECT count(*), coalesce(min(queued_ms), 0)"
                       " FROM fleet_outbox",
                       &s, err);

  if (rc < 0)
    return rc;
  if (sqlite3_step(s) == SQLITE_ROW) {
    *length = sqlite3_column_int64(s, 0);
    *oldest_ms = sqlite3_column_int64(s, 1);
  } else {
    rc = store__db_err(st, "outbox", err);
  }
  store__done(s);
  return rc;
}

/* Gives capture id a fleet identity and a publish row. */
static int backfill_one(struct store *st, int64_t id, struct tr_err *err)
{
  static const char *const sqls[] = {
    "INSERT OR IGNORE INTO fleet_ids(capture_id, uuid)"
    " VALUES(?1, " STORE__UUID ")",
    "INSERT OR IGNORE INTO fleet_outbox(capture_id, uuid, op, queued_ms)"
    " SELECT capture_id, uuid, 'publish', " STORE__NOW_MS
    " FROM fleet_ids WHERE capture_id = ?1",
  };
  int rc = 0;

  for (size_t i = 0; rc == 0 && i < 2; i++)
    rc = store__run(st, "outbox", sqls[i], err, "%ld", id);
  return rc;
}

int store_outbox_backfill(struct store *st, int max, int *added,
                          struct tr_err *err)
{
  int64_t ids[256];
  int n = 0;
  sqlite3_stmt *s;
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  if (max > 256)
    max = 256;
  rc = store__prep(st,
                   "SELECT c.id FROM captures c WHERE c.status IN " STORE__FINAL
                   " AND NOT EXISTS (SELECT 1 FROM fleet_ids f"
                   "  WHERE f.capture_id = c.id) ORDER BY c.id LIMIT ?1",
                   &s, err, "%d", max);
  if (rc == 0) {
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
      ids[n++] = sqlite3_column_int64(s, 0);
    rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "outbox", err);
    store__done(s);
  }
  for (int i = 0; rc == 0 && i < n; i++)
    rc = backfill_one(st, ids[i], err);
  rc = store__wr_end(st, rc, err);
  if (rc == 0)
    *added = n;
  return rc;
}

/* ---- what is published of a capture ---- */

/* Tables that hang off captures but are not published: the node's own
 * pins, and the sums, which the lab view makes again from the rows. */
static bool kept_home(const char *table)
{
  static const char *const home[] = { "baselines", "sum_rows", "sum_texts",
                                      "captures", "ranks" };

  if (strncmp(table, "fleet_", 6) == 0)
    return true;
  for (size_t i = 0; i < sizeof(home) / sizeof(home[0]); i++)
    if (strcmp(table, home[i]) == 0)
      return true;
  return false;
}

/* Appends "name" to b, an SQL identifier of this store's schema. */
static void put_ident(struct tr_buf *b, const char *name)
{
  tr_buf_printf(b, "\"%s\"", name);
}

/* ---- rows as JSON text, written straight from SQLite: a capture's rows
 * are hundreds of thousands of values (4096 timeline buckets a rank), too
 * many to make each a jansson value first ---- */

void store__put_string(struct tr_buf *b, const char *s, size_t n)
{
  static const char hex[] = "0123456789abcdef";
  size_t run = 0;

  tr_buf_put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];

    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    tr_buf_put(b, s + run, i - run);
    run = i + 1;
    if (c == '"' || c == '\\') {
      char e[2] = { '\\', (char)c };

      tr_buf_put(b, e, 2);
    } else {
      char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

      tr_buf_put(b, e, 6);
    }
  }
  tr_buf_put(b, s + run, n - run);
  tr_buf_put(b, "\"", 1);
}

/* {"$hex": "..."}: the bytes of a blob, or of a text that JSON (and
 * PostgreSQL) cannot hold as a string (not UTF-8, or with a NUL). */
static void put_hex(struct tr_buf *b, const void *p, size_t n)
{
  static const char digits[] = "0123456789abcdef";
  const unsigned char *u = p;

  tr_buf_put(b, "{\"$hex\":\"", 9);
  tr_buf_reserve(b, 2 * n + 2);
  for (size_t i = 0; i < n; i++) {
    char two[2] = { digits[u[i] >> 4], digits[u[i] & 15] };

    tr_buf_put(b, two, 2);
  }
  tr_buf_put(b, "\"}", 2);
}

static void put_value(struct tr_buf *b, sqlite3_stmt *s, int c)
{
  char real[TR_REAL_TEXT];
  const char *p;
  double d;
  size_t n;

  switch (sqlite3_column_type(s, c)) {
  case SQLITE_INTEGER:
    tr_buf_printf(b, "%lld", (long long)sqlite3_column_int64(s, c));
    break;
  case SQLITE_FLOAT:
    d = sqlite3_column_double(s, c);
    if (d == d && d - d == 0) /* finite: JSON has no NaN or inf */
      tr_buf_put(b, real, tr_real_text(d, real, sizeof(real)));
    else
      tr_buf_put(b, "null", 4);
    break;
  case SQLITE_NULL: tr_buf_put(b, "null", 4); break;
  case SQLITE_BLOB:
    put_hex(b, sqlite3_column_blob(s, c), (size_t)sqlite3_column_bytes(s, c));
    break;
  default:
    p = (const char *)sqlite3_column_text(s, c);
    n = (size_t)sqlite3_column_bytes(s, c);
    if (memchr(p, '\0', n) == NULL && tr_utf8_valid(p, n))
      store__put_string(b, p, n);
    else
      put_hex(b, p, n);
  }
}

/* Steps s (?1 bound): its rows as a JSON array of {column: value}. */
static int put_rows(struct store *st, sqlite3_stmt *s, struct tr_buf *b,
                    struct tr_err *err)
{
  int ncol = sqlite3_column_count(s), rc;
  bool first = true;

  tr_buf_put(b, "[", 1);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    tr_buf_put(b, first ? "{" : ",{", first ? 1 : 2);
    first = false;
    for (int c = 0; c < ncol; c++) {
      const char *name = sqlite3_column_name(s, c);

      if (c > 0)
        tr_buf_put(b, ",", 1);
      store__put_string(b, name, strlen(name));
      tr_buf_put(b, ":", 1);
      put_value(b, s, c);
    }
    tr_buf_put(b, "}", 1);
  }
  tr_buf_put(b, "]", 1);
  rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "fleet export", err);
  store__done(s);
  if (rc == 0 && b->failed)
    rc = tr_err_set(err, b->failed, "", "fleet export: %s",
                    b->failed == TR_ENOMEM ? "out of memory" : "too large");
  return rc;
}

/* A store__fill_fn: a table published with a capture, as
 * store__fleet_tables() selects it (but those kept home). */
static int fill_hang(sqlite3_stmt *s, void *elem, void *ud)
{
  struct store__hang *h = elem;
  const char *name = (const char *)sqlite3_column_text(s, 0);

  (void)ud;
  if (kept_home(name))
    return 0;
  snprintf(h->table, sizeof(h->table), "%s", name);
  snprintf(h->fk, sizeof(h->fk), "%s", sqlite3_column_text(s, 1));
  h->rank = sqlite3_column_int(s, 2) != 0;
  return 1;
}

int store__fleet_tables(struct store *st, struct store__hang **out, size_t *n,
                        struct tr_err *err)
{
  void *v = NULL;
  sqlite3_stmt *s;
  int rc = store__stmt(st,
                       "SELECT m.name, f.\"from\", f.\"table\" = 'ranks'"
                       " FROM sqlite_schema m,"
                       " pragma_foreign_key_list(m.name) f"
                       " WHERE m.type = 'table'"
                       " AND f.\"table\" IN ('captures', 'ranks')"
                       " ORDER BY m.name",
                       &s, err);

  *n = 0;
  if (rc == 0)
    rc = store__collect(st, s, sizeof(**out), fill_hang, NULL, "fleet tables",
                        &v, n, err);
  if (rc < 0)
    free(v);
  else
    *out = v;
  return rc;
}

/* A store__fill_fn: a column, as store__columns() selects it. */
static int fill_col(sqlite3_stmt *s, void *elem, void *ud)
{
  struct store__col *c = elem;

  (void)ud;
  snprintf(c->name, sizeof(c->name), "%s", sqlite3_column_text(s, 0));
  c->name_ref = sqlite3_column_int(s, 1) != 0;
  c->blob = sqlite3_column_int(s, 2) != 0;
  return 1;
}

int store__columns(struct store *st, const char *table, struct store__col **out,
                   size_t *n, struct tr_err *err)
{
  void *v = NULL;
  sqlite3_stmt *s;
  int rc = store__prep(st,
                       "SELECT i.name, (SELECT f.\"table\" FROM"
                       "  pragma_foreign_key_list(?1) f WHERE f.\"from\" ="
                       "  i.name AND f.\"table\" = 'names') IS NOT NULL,"
                       " upper(i.type) LIKE '%BLOB%'"
                       " FROM pragma_table_info(?1) i ORDER BY i.cid",
                       &s, err, "%s", table);

  *n = 0;
  if (rc == 0)
    rc = store__collect(st, s, sizeof(**out), fill_col, NULL, "columns", &v, n,
                        err);
  if (rc < 0)
    free(v);
  else
    *out = v;
  return rc;
}

/* "SELECT <its columns, ids made portable> FROM table t ... WHERE <it is
 * capture ?1's>" into b. */
static int select_of(struct store *st, const struct store__hang *h,
                     struct tr_buf *b, struct tr_err *err)
{
  const char *sep = "SELECT ";
  struct store__col *cols = NULL;
  size_t ncols;
  int rc = store__columns(st, h->table, &cols, &ncols, err);

  if (rc < 0)
    return rc;
  for (size_t i = 0; i < ncols; i++) {
    const char *col = cols[i].name;
    bool name_ref = cols[i].name_ref;
    bool is_fk = strcmp(col, h->fk) == 0;

    /* The capture's id is implied; a rank's own id means nothing
     * elsewhere (its rows name it by the rank's number). */
    if ((is_fk && !h->rank) ||
        (strcmp(h->table, "ranks") == 0 && strcmp(col, "id") == 0))
      continue;
    tr_buf_printf(b, "%s", sep);
    sep = ", ";
    if (is_fk) {
      tr_buf_printf(b, "r.rank AS ");
    } else if (name_ref) {
      tr_buf_printf(b, "(SELECT n.name FROM names n WHERE n.id = t.");
      put_ident(b, col);
      tr_buf_printf(b, ") AS ");
    } else {
      tr_buf_printf(b, "t.");
    }
    put_ident(b, col);
  }
  free(cols);
  tr_buf_printf(b, " FROM ");
  put_ident(b, h->table);
  tr_buf_printf(b, " t");
  if (h->rank) {
    tr_buf_printf(b, " JOIN ranks r ON r.id = t.");
    put_ident(b, h->fk);
    tr_buf_printf(b, " WHERE r.capture_id = ?1");
  } else {
    tr_buf_printf(b, " WHERE t.");
    put_ident(b, h->fk);
    tr_buf_printf(b, " = ?1");
  }
  return b->failed ? tr_err_set(err, b->failed, "", "fleet export") : 0;
}

void store_fleet_tables_free(struct store_fleet_tables *t)
{
  if (t == NULL)
    return;
  tr_buf_free(&t->text);
  free(t->t);
  memset(t, 0, sizeof(*t));
}

/* The rows of one statement text (?1 = id) as table name's. */
static int export_sql(struct store *st, const char *sql, int64_t id,
                      const char *name, struct store_fleet_tables *out,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc;

  if (out->n == out->cap) {
    size_t cap = out->cap ? 2 * out->cap : 32;
    void *grown = realloc(out->t, cap * sizeof(*out->t));

    if (grown == NULL)
      return tr_err_set(err, TR_ENOMEM, "", "fleet export");
    out->t = grown;
    out->cap = cap;
  }
  rc = store__stmt_id(st, sql, id, 0, &s, err);
  if (rc < 0)
    return rc;
  snprintf(out->t[out->n].name, sizeof(out->t[out->n].name), "%s", name);
  out->t[out->n].at = out->text.n;
  rc = put_rows(st, s, &out->text, err);
  tr_buf_put(&out->text, "", 1); /* its NUL: each is a C string */
  if (rc == 0)
    out->n++;
  return rc;
}

/* The capture's own row, its ranks, every table hanging off it. */
static int export_tables(struct store *st, int64_t id,
                         struct store_fleet_tables *out, struct tr_err *err)
{
  const struct store__hang ranks = { "ranks", "capture_id", false };
  struct store__hang *hs = NULL;
  size_t n = 0;
  int rc = export_sql(st, "SELECT * FROM captures WHERE id = ?1", id,
                      "captures", out, err);

  if (rc == 0)
    rc = store__fleet_tables(st, &hs, &n, err);
  for (size_t i = 0; rc == 0 && i <= n; i++) {
    const struct store__hang *h = i < n ? &hs[i] : &ranks;
    struct tr_buf sql = { 0 };

    rc = select_of(st, h, &sql, err);
    if (rc == 0)
      rc = export_sql(st, sql.p, id, h->table, out, err);
    tr_buf_free(&sql);
  }
  free(hs);
  return rc;
}

/* ---- the figures the lab's trend draws ---- */

#define TOP_FAMILIES 5

/* All ranks' rows of table t: the sums, else the live query. */
static int all_ranks(struct store *st, enum tr_table t, int64_t id,
                     json_t **out, struct tr_err *err)
{
  struct store_query q = { .capture_id = id, .rank = -1 };
  int rc = store__sum_rows(st, t, &q, out, err);

  return rc == 1 ? store__table_live(st, t, &q, out, err) : rc;
}

static int64_t member(json_t *row, const char *key)
{
  return json_integer_value(json_object_get(row, key));
}

/* A real step kind: not a dummy_* one (as the verdicts count). */
static bool is_real(const char *kind)
{
  return kind != NULL && strncmp(kind, "dummy_", 6) != 0;
}

/* n / d rounded half away from zero, as /diff's norm=per_step. */
static int64_t per(int64_t n, int64_t d)
{
  return n >= 0 ? (2 * n + d) / (2 * d) : -((-2 * n + d) / (2 * d));
}

/* decode_p50_ns (the steady p50 of decode, the slowest rank's), step_ns
 * (the mean real step) and the families taking the most per real step. */
static json_t *figures_of(json_t *steps, json_t *fams, int64_t real_steps)
{
  json_t *out = json_pack("{s:n,s:n,s:I,s:[]}", "decode_p50_ns", "step_ns",
                          "real_steps", (json_int_t)real_steps, "families");
  json_t *row, *top = json_object_get(out, "families");
  int64_t total = 0, count = 0;
  size_t i;

  json_array_foreach(steps, i, row) {
    const char *kind = json_string_value(json_object_get(row, "kind"));

    if (kind != NULL && strcmp(kind, "decode") == 0)
      json_object_set_new(out, "decode_p50_ns",
                          json_integer(member(row, "steady_count") > 0
                                           ? member(row, "steady_p50_ns")
                                           : member(row, "p50_ns")));
    if (is_real(kind)) {
      total += member(row, "total_ns");
      count += member(row, "count");
    }
  }
  if (count > 0)
    json_object_set_new(out, "step_ns", json_integer(per(total, count)));
  json_array_foreach(fams, i, row) {
    if (i == TOP_FAMILIES)
      break;
    json_array_append_new(
        top, json_pack(
                 "{s:O,s:I,s:o}", "family", json_object_get(row, "family"),
                 "total_ns", (json_int_t)member(row, "total_ns"), "per_step_ns",
                 real_steps > 0
                     ? json_integer(per(member(row, "total_ns"), real_steps))
                     : json_null()));
  }
  return out;
}

/* The figures of a done capture; null for one that is not. */
static int figures(struct store *st, int64_t id, json_t *out,
                   struct tr_err *err)
{
  struct store__side sd = { .id = id, .field = "id" };
  json_t *steps = NULL, *fams = NULL;
  int rc = store__side_load(st, &sd, -1, err);

  if (rc == TR_ECONFLICT || rc == TR_ENOTFOUND) {
    tr_err_clear(err);
    return json_object_set_new(out, "figures", json_null()) ? TR_ENOMEM : 0;
  }
  if (rc == 0)
    rc = all_ranks(st, TR_TABLE_steps, id, &steps, err);
  if (rc == 0)
    rc = all_ranks(st, TR_TABLE_families, id, &fams, err);
  if (rc == 0)
    json_object_set_new(out, "figures", figures_of(steps, fams, sd.real_steps));
  json_decref(steps);
  json_decref(fams);
  return rc;
}

/* out[key] = the text the statement (?1 = id) selects, or null. */
static int text_of(struct store *st, const char *sql, int64_t id,
                   const char *key, json_t *out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__first(st, sql, id, 0, "fleet export", &s, err);
  const char *text;

  if (rc < 0)
    return rc;
  text = rc == 1 ? (const char *)sqlite3_column_text(s, 0) : NULL;
  json_object_set_new(out, key, text ? json_string(text) : json_null());
  store__done(s);
  return rc < 0 ? rc : 0;
}

static int export_in(struct store *st, int64_t id, json_t *out,
                     struct store_fleet_tables *tables, struct tr_err *err)
{
  char status[16];
  int rc = store__capture_exists(st, id, status, err);

  if (rc == 0 && !tr_status_final(tr_status_parse(status)))
    rc = tr_err_set(err, TR_ECONFLICT, "id",
                    "capture %lld is %s: only a final capture is published",
                    (long long)id, status);
  if (rc == 0)
    rc = export_tables(st, id, tables, err);
  if (rc == 0)
    rc = text_of(st,
                 "SELECT CASE WHEN json_extract(c.params, '$.model')"
                 " IS NOT NULL THEN " STORE__CONFIG_OF(
                     "c") " END"
                          " FROM captures c WHERE c.id = ?1",
                 id, "config", out, err);
  if (rc == 0)
    rc = text_of(st,
                 "SELECT group_concat(device, ', ') FROM (SELECT DISTINCT"
                 " device FROM ranks WHERE capture_id = ?1 AND"
                 " status = 'done' AND device IS NOT NULL ORDER BY device)",
                 id, "gpu", out, err);
  if (rc == 0)
    rc = figures(st, id, out, err);
  return rc;
}

int store_fleet_export(struct store *st, int64_t id, json_t **out,
                       struct store_fleet_tables *tables, struct tr_err *err)
{
  json_t *obj = json_pack("{s:i}", "store_version", store__schema_version);
  json_t *brief = NULL;
  int rc = obj != NULL ? store_capture_get(st, id, &brief, err)
                       : tr_err_set(err, TR_ENOMEM, "", "fleet export");

  if (rc == 0) {
    json_object_del(brief, "ranks");
    json_object_set_new(obj, "brief", brief);
    rc = store__rd_begin(st, err);
    if (rc == 0)
      rc = store__rd_end(st, export_in(st, id, obj, tables, err), err);
  }
  if (rc < 0) {
    json_decref(obj);
    return rc;
  }
  *out = obj;
  return 0;
}
