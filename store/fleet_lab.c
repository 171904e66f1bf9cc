/*
 * A lab view's copy of the fleet (docs/FLEET.md), in a database file of
 * its own: the index of every node's captures, followed from PostgreSQL
 * (fleet_index, fleet_nodes, fleet_follow: schema.c, version 7), and the
 * captures asked for, copied in as captures of this file so that every
 * query of the store answers them exactly as their node answers its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "store/store_int.h"

/* ---- copying a published capture in ---- */

/* A rank's number and its id here. */
struct rank_ids {
  int64_t *num, *id;
  size_t n, cap;
};

static int rank_put(struct rank_ids *m, int64_t num, int64_t id)
{
  if (m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 16;
    int64_t *a = realloc(m->num, cap * sizeof(*a));
    int64_t *b = a ? realloc(m->id, cap * sizeof(*b)) : NULL;

    if (a != NULL)
      m->num = a;
    if (b == NULL)
      return TR_ENOMEM;
    m->id = b;
    m->cap = cap;
  }
  m->num[m->n] = num;
  m->id[m->n++] = id;
  return 0;
}

static bool rank_get(const struct rank_ids *m, int64_t num, int64_t *id)
{
  for (size_t i = 0; i < m->n; i++)
    if (m->num[i] == num) {
      *id = m->id[i];
      return true;
    }
  return false;
}

static int unhex(char c)
{
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Binds a {"$hex": ...} value (fleet_out.c's text_value()) as the bytes
 * it stands for. */
static int bind_hex(sqlite3_stmt *s, int i, const char *hex, bool blob)
{
  size_t n = strlen(hex) / 2;
  char *bytes = malloc(n + 1);

  if (bytes == NULL)
    return SQLITE_NOMEM;
  for (size_t k = 0; k < n; k++) {
    int hi = unhex(hex[2 * k]), lo = unhex(hex[2 * k + 1]);

    bytes[k] = (char)((hi < 0 ? 0 : hi) << 4 | (lo < 0 ? 0 : lo));
  }
  return blob ? sqlite3_bind_blob(s, i, bytes, (int)n, free)
              : sqlite3_bind_text(s, i, bytes, (int)n, free);
}

static int bind_value(struct store *st, sqlite3_stmt *s, int i,
                      const struct store__col *c, json_t *v, struct tr_err *err)
{
  const char *hex = json_string_value(json_object_get(v, "$hex"));
  int64_t id;
  int rc;

  if (c->name_ref && json_is_string(v)) {
    rc = store__intern(st, json_string_value(v), &id, NULL, err);
    return rc < 0 ? rc : sqlite3_bind_int64(s, i, id);
  }
  if (json_is_integer(v))
    return sqlite3_bind_int64(s, i, json_integer_value(v));
  if (json_is_real(v))
    return sqlite3_bind_double(s, i, json_real_value(v));
  if (json_is_string(v))
    return sqlite3_bind_text(s, i, json_string_value(v),
                             (int)json_string_length(v), SQLITE_TRANSIENT);
  if (hex != NULL)
    return bind_hex(s, i, hex, c->blob);
  return sqlite3_bind_null(s, i);
}

/* Where a copied row hangs: its foreign key column fk gets id. */
struct hang_to {
  const char *fk;
  int64_t id;
  const struct rank_ids *ranks; /* set: fk holds a rank's number, mapped */
};

/* INSERTs row into table (its columns cols) with the columns this build
 * has, the hanging column set by h. */
static int insert_row(struct store *st, const char *table,
                      const struct store__col *cols, size_t ncols, json_t *row,
                      const struct hang_to *h, struct tr_err *err)
{
  struct tr_buf sql = { 0 }, vals = { 0 };
  sqlite3_stmt *s = NULL;
  int rc = 0, k = 0;

  tr_buf_printf(&sql, "INSERT INTO \"%s\"(", table);
  for (size_t i = 0; i < ncols; i++) {
    bool fk = strcmp(cols[i].name, h->fk) == 0;

    if (!fk && json_object_get(row, cols[i].name) == NULL)
      continue;
    tr_buf_printf(&sql, "%s\"%s\"", k ? ", " : "", cols[i].name);
    tr_buf_printf(&vals, "%s?%d", k ? ", " : "", k + 1);
    k++;
  }
  tr_buf_printf(&sql, ") VALUES(%s)", vals.p ? vals.p : "");
  if (sql.failed || vals.failed)
    rc = tr_err_set(err, TR_ENOMEM, "", "fleet copy");
  if (rc == 0)
    rc = store__stmt(st, sql.p, &s, err);
  k = 0;
  for (size_t i = 0; rc == 0 && i < ncols; i++) {
    json_t *v = json_object_get(row, cols[i].name);
    int64_t id = h->id;

    if (strcmp(cols[i].name, h->fk) == 0) {
      if (h->ranks != NULL && !rank_get(h->ranks, json_integer_value(v), &id))
        rc = tr_err_set(err, TR_EINVAL, "tables",
                        "%s: a row of rank %lld, which has no row", table,
                        (long long)json_integer_value(v));
      else
        rc = sqlite3_bind_int64(s, ++k, id);
    } else if (v != NULL) {
      rc = bind_value(st, s, ++k, &cols[i], v, err);
    }
    if (rc > 0)
      rc = store__db_err(st, "fleet copy", err);
  }
  if (rc == 0 && sqlite3_step(s) != SQLITE_DONE)
    rc = store__db_err(st, table, err);
  store__done(s);
  tr_buf_free(&sql);
  tr_buf_free(&vals);
  return rc;
}

/* Every row of rows into table, hanging as h says. */
static int insert_rows(struct store *st, const char *table, json_t *rows,
                       const struct hang_to *h, struct rank_ids *ranks,
                       struct tr_err *err)
{
  struct store__col *cols = NULL;
  size_t ncols = 0, i;
  json_t *row;
  int rc = store__columns(st, table, &cols, &ncols, err);

  if (rc == 0 && !json_is_array(rows))
    rc = tr_err_set(err, TR_EINVAL, "tables", "%s: not an array", table);
  json_array_foreach(rows, i, row) {
    if (rc != 0)
      break;
    rc = json_is_object(row) ? insert_row(st, table, cols, ncols, row, h, err)
                             : tr_err_set(err, TR_EINVAL, "tables",
                                          "%s: a row is not an object", table);
    if (rc == 0 && ranks != NULL)
      rc = rank_put(ranks, json_integer_value(json_object_get(row, "rank")),
                    sqlite3_last_insert_rowid(st->db)) == 0
               ? 0
               : tr_err_set(err, TR_ENOMEM, "", "fleet copy");
  }
  free(cols);
  return rc;
}

/* The capture's own row, under a new id; *id gets it. */
static int insert_capture(struct store *st, json_t *tables, int64_t *id,
                          struct tr_err *err)
{
  json_t *row =
      json_deep_copy(json_array_get(json_object_get(tables, "captures"), 0));
  const struct hang_to h = { "", 0, NULL };
  json_t *rows = json_array();
  int rc = row != NULL && rows != NULL
               ? 0
               : tr_err_set(err, TR_EINVAL, "tables", "no captures row");

  if (rc == 0) {
    json_object_del(row, "id");
    json_array_append(rows, row);
    rc = insert_rows(st, "captures", rows, &h, NULL, err);
  }
  if (rc == 0)
    *id = sqlite3_last_insert_rowid(st->db);
  json_decref(row);
  json_decref(rows);
  return rc;
}

/* Ranks, then every table this build publishes too. */
static int insert_tables(struct store *st, int64_t id, json_t *tables,
                         struct tr_err *err)
{
  struct rank_ids ranks = { 0 };
  const struct hang_to by_capture = { "capture_id", id, NULL };
  struct store__hang *hs = NULL;
  size_t n = 0;
  int rc = insert_rows(st, "ranks", json_object_get(tables, "ranks"),
                       &by_capture, &ranks, err);

  if (rc == 0)
    rc = store__fleet_tables(st, &hs, &n, err);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const struct hang_to h = { hs[i].fk, id, hs[i].rank ? &ranks : NULL };
    json_t *rows = json_object_get(tables, hs[i].table);

    if (rows != NULL)
      rc = insert_rows(st, hs[i].table, rows, &h, NULL, err);
  }
  free(hs);
  free(ranks.num);
  free(ranks.id);
  return rc;
}

/* The index row of (node, uuid): 0 with its lid and cache_id (0: none),
 * TR_ENOTFOUND without one. */
static int index_row(struct store *st, const char *node, const char *uuid,
                     int64_t *lid, int64_t *cache_id, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(st,
                       "SELECT lid, coalesce(cache_id, 0) FROM fleet_index"
                       " WHERE node = ?1 AND uuid = ?2",
                       &s, err, "%s%s", node, uuid);

  if (rc < 0)
    return rc;
  rc = store__step(st, s, "fleet index", err);
  if (rc == 1) {
    *lid = sqlite3_column_int64(s, 0);
    *cache_id = sqlite3_column_int64(s, 1);
  }
  store__done(s);
  return rc == 1   ? 0
         : rc == 0 ? tr_err_set(err, TR_ENOTFOUND, "id", "%s has no capture %s",
                                node, uuid)
                   : rc;
}

static int import_in(struct store *st, const char *node, const char *uuid,
                     json_t *tables, int64_t bytes, int64_t *cache_id,
                     struct tr_err *err)
{
  int64_t lid = 0, id = 0;
  int rc = index_row(st, node, uuid, &lid, cache_id, err);

  if (rc < 0 || *cache_id > 0)
    return rc;
  rc = insert_capture(st, tables, &id, err);
  if (rc == 0)
    rc = insert_tables(st, id, tables, err);
  if (rc == 0)
    rc = store__sums_write(st, id, err);
  if (rc == 0)
    rc = store__run(st, "fleet",
                    "UPDATE fleet_index SET cache_id = ?2, cache_bytes = ?3"
                    " WHERE lid = ?1",
                    err, "%ld%ld%ld", lid, id, bytes);
  if (rc == 0)
    *cache_id = id;
  return rc;
}

int store_fleet_import(struct store *st, const char *node, const char *uuid,
                       json_t *tables, int64_t bytes, int64_t *cache_id,
                       struct tr_err *err)
{
  int64_t id = 0;
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc = store__wr_end(st, import_in(st, node, uuid, tables, bytes, &id, err),
                     err);
  if (rc == 0)
    *cache_id = id;
  return rc;
}

/* ---- following the fleet's changes ---- */

int store_fleet_follow_get(struct store *st, char *fleet, int64_t *seq,
                           struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st, "SELECT fleet, seq FROM fleet_follow WHERE id = 1",
                       &s, err);

  if (rc < 0)
    return rc;
  fleet[0] = '\0';
  *seq = 0;
  rc = store__step(st, s, "fleet follow", err);
  if (rc == 1) {
    snprintf(fleet, 64, "%s", sqlite3_column_text(s, 0));
    *seq = sqlite3_column_int64(s, 1);
  }
  store__done(s);
  return rc < 0 ? rc : 0;
}

/* Ids in a growing array (caller frees). */
struct ids {
  int64_t *v;
  size_t n, cap;
};

static int ids_put(struct ids *a, int64_t id, struct tr_err *err)
{
  if (a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 16;
    int64_t *grown = realloc(a->v, cap * sizeof(*grown));

    if (grown == NULL)
      return tr_err_set(err, TR_ENOMEM, "", "fleet");
    a->v = grown;
    a->cap = cap;
  }
  a->v[a->n++] = id;
  return 0;
}

/* Steps s, collecting its first column's ids into out. */
static int collect_ids(struct store *st, sqlite3_stmt *s, struct ids *out,
                       struct tr_err *err)
{
  int rc;

  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    if (ids_put(out, sqlite3_column_int64(s, 0), err) != 0) {
      store__done(s);
      return TR_ENOMEM;
    }
  rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "fleet", err);
  store__done(s);
  return rc;
}

/* Removes the copied capture id (its rows cascade). */
static int uncopy(struct store *st, int64_t id, struct tr_err *err)
{
  return store__run(st, "fleet", "DELETE FROM captures WHERE id = ?1", err,
                    "%ld", id);
}

/* Another fleet than the one followed: nothing of the old one stays. */
static int forget_all(struct store *st, struct ids *drop, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st,
                       "SELECT cache_id FROM fleet_index"
                       " WHERE cache_id IS NOT NULL",
                       &s, err);

  if (rc == 0)
    rc = collect_ids(st, s, drop, err);
  for (size_t i = 0; rc == 0 && i < drop->n; i++)
    rc = uncopy(st, drop->v[i], err);
  if (rc == 0)
    rc = store__run(st, "fleet", "DELETE FROM fleet_index", err, "");
  if (rc == 0)
    rc = store__run(st, "fleet", "DELETE FROM fleet_nodes", err, "");
  return rc;
}

/* The copies whose node:id answers go stale when r arrives or leaves:
 * its own, and those of the other captures of its node and id. */
static int stale_copies(struct store *st, const struct store_fleet_row *r,
                        struct ids *drop, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(st,
                       "SELECT cache_id FROM fleet_index WHERE node = ?1"
                       " AND id = ?2 AND cache_id IS NOT NULL",
                       &s, err, "%s%ld", r->node, r->id);

  if (rc < 0)
    return rc;
  return collect_ids(st, s, drop, err);
}

static int remove_row(struct store *st, const struct store_fleet_row *r,
                      struct tr_err *err)
{
  int64_t lid = 0, cache_id = 0;
  int rc = index_row(st, r->node, r->uuid, &lid, &cache_id, err);

  if (rc == TR_ENOTFOUND) {
    tr_err_clear(err);
    return 0; /* never seen here */
  }
  if (rc == 0 && cache_id > 0)
    rc = uncopy(st, cache_id, err);
  if (rc == 0)
    rc = store__run(st, "fleet", "DELETE FROM fleet_index WHERE lid = ?1", err,
                    "%ld", lid);
  return rc;
}

/* JSON text (PostgreSQL writes jsonb with blanks) bound compact, as the
 * list writes it out (put_listed()); NULL stays NULL. */
static void bind_compact(sqlite3_stmt *s, int i, const char *text)
{
  json_t *v = text != NULL ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
  char *compact =
      v != NULL ? tr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

  if (compact != NULL)
    sqlite3_bind_text(s, i, compact, -1, free);
  else
    store__bind_text(s, i, text);
  json_decref(v);
}

static int upsert_row(struct store *st, const struct store_fleet_row *r,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(
      st,
      "INSERT INTO fleet_index(node, uuid, id, seq, kind, status, label,"
      " model, config, gpu, created_at, finished_at, verdict, figures, brief)"
      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
      " ?15) ON CONFLICT(node, uuid) DO UPDATE SET seq = excluded.seq",
      &s, err, "%s%s%ld%ld%s%s%s%s%s%s%ld%ld%s", r->node, r->uuid, r->id,
      r->seq, r->kind, r->status, r->label, r->model, r->config, r->gpu,
      r->created_at, r->finished_at, r->verdict);

  if (rc < 0)
    return rc;
  bind_compact(s, 14, r->figures);
  bind_compact(s, 15, r->brief ? r->brief : "{}");
  rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(st, "fleet", err);
  store__done(s);
  return rc;
}

static int set_followed(struct store *st, const char *fleet, int64_t seq,
                        struct tr_err *err)
{
  return store__run(st, "fleet",
                    "INSERT OR REPLACE INTO fleet_follow(id, fleet, seq)"
                    " VALUES(1, ?1, ?2)",
                    err, "%s%ld", fleet, seq);
}

static int apply_in(struct store *st, const char *fleet, int64_t seq,
                    const struct store_fleet_row *rows, size_t n,
                    struct ids *drop, struct tr_err *err)
{
  char followed[64];
  int64_t had = 0;
  int rc = store_fleet_follow_get(st, followed, &had, err);

  if (rc == 0 && followed[0] != '\0' && strcmp(followed, fleet) != 0)
    rc = forget_all(st, drop, err);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rc = stale_copies(st, &rows[i], drop, err);
    if (rc == 0)
      rc = rows[i].deleted ? remove_row(st, &rows[i], err)
                           : upsert_row(st, &rows[i], err);
  }
  if (rc == 0)
    rc = set_followed(st, fleet, seq, err);
  return rc;
}

int store_fleet_apply(struct store *st, const char *fleet, int64_t seq,
                      const struct store_fleet_row *rows, size_t n,
                      int64_t **drop, size_t *ndrop, struct tr_err *err)
{
  struct ids gone = { 0 };
  int rc = store__wr_begin(st, err);

  if (rc == 0)
    rc = store__wr_end(st, apply_in(st, fleet, seq, rows, n, &gone, err), err);
  if (rc < 0) {
    free(gone.v);
    return rc;
  }
  *drop = gone.v;
  *ndrop = gone.n;
  return 0;
}

int store_fleet_nodes_set(struct store *st, json_t *nodes, struct tr_err *err)
{
  size_t i;
  json_t *n;
  int rc = store__wr_begin(st, err);

  if (rc == 0)
    rc = store__run(st, "fleet", "DELETE FROM fleet_nodes", err, "");
  json_array_foreach(nodes, i, n) {
    if (rc != 0)
      break;
    rc = store__run(st, "fleet",
                    "INSERT OR REPLACE INTO fleet_nodes(node, url,"
                    " traced_version, seen_at) VALUES(?1, ?2, ?3, ?4)",
                    err, "%s%s%s%ld",
                    json_string_value(json_object_get(n, "node")),
                    json_string_value(json_object_get(n, "url")),
                    json_string_value(json_object_get(n, "traced_version")),
                    (int64_t)json_integer_value(json_object_get(n, "seen_at")));
  }
  return store__wr_end(st, rc, err);
}

/* Every copy here, oldest first: its index row, id and bytes. */
static int copies(struct store *st, struct ids *lids, struct ids *ids,
                  struct ids *bytes, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st,
                       "SELECT lid, cache_id, coalesce(cache_bytes, 0)"
                       " FROM fleet_index WHERE cache_id IS NOT NULL"
                       " ORDER BY cache_id",
                       &s, err);

  while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW)
    rc = ids_put(lids, sqlite3_column_int64(s, 0), err) ||
                 ids_put(ids, sqlite3_column_int64(s, 1), err) ||
                 ids_put(bytes, sqlite3_column_int64(s, 2), err)
             ? TR_ENOMEM
             : 0;
  if (rc == SQLITE_DONE)
    rc = 0;
  else if (rc > 0)
    rc = store__db_err(st, "fleet", err);
  store__done(s);
  return rc;
}

int store_fleet_evict(struct store *st, int64_t max_bytes, int64_t **drop,
                      size_t *ndrop, struct tr_err *err)
{
  struct ids lids = { 0 }, ids = { 0 }, bytes = { 0 };
  int64_t total = 0;
  size_t k = 0;
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc = copies(st, &lids, &ids, &bytes, err);
  for (size_t i = 0; rc == 0 && i < bytes.n; i++)
    total += bytes.v[i];
  for (; rc == 0 && k < ids.n && total > max_bytes; k++) {
    total -= bytes.v[k];
    rc = uncopy(st, ids.v[k], err);
    if (rc == 0)
      rc = store__run(st, "fleet",
                      "UPDATE fleet_index SET cache_id = NULL,"
                      " cache_bytes = NULL WHERE lid = ?1",
                      err, "%ld", lids.v[k]);
  }
  rc = store__wr_end(st, rc, err);
  free(lids.v);
  free(bytes.v);
  if (rc < 0) {
    free(ids.v);
    return rc;
  }
  *drop = ids.v;
  *ndrop = k;
  return 0;
}

/* ---- reading the index ---- */

/* The name a capture of the index goes by: node:id when it is the newest
 * of its node and id, else its uuid. */
#define REF_OF(i)                                                              \
  "CASE WHEN " i ".seq = (SELECT max(j.seq) FROM fleet_index j"                \
  " WHERE j.node = " i ".node AND j.id = " i ".id) THEN " i                    \
  ".node || ':' || " i ".id ELSE " i ".uuid END"

#define REF_COLUMNS                                                            \
  "SELECT node, uuid, id, coalesce(cache_id, 0), coalesce(finished_at, 0),"    \
  " status, config, gpu, (SELECT n.url FROM fleet_nodes n"                     \
  "  WHERE n.node = fleet_index.node) FROM fleet_index "

static int ref_row(struct store *st, sqlite3_stmt *s,
                   struct store_fleet_ref *out, struct tr_err *err)
{
  int rc = store__step(st, s, "fleet index", err);

  if (rc == 1) {
    snprintf(out->node, sizeof(out->node), "%s", sqlite3_column_text(s, 0));
    snprintf(out->uuid, sizeof(out->uuid), "%s", sqlite3_column_text(s, 1));
    out->id = sqlite3_column_int64(s, 2);
    out->cache_id = sqlite3_column_int64(s, 3);
    out->finished_at = sqlite3_column_int64(s, 4);
    snprintf(out->status, sizeof(out->status), "%s", sqlite3_column_text(s, 5));
    snprintf(out->config, sizeof(out->config), "%s",
             sqlite3_column_type(s, 6) == SQLITE_NULL
                 ? ""
                 : (const char *)sqlite3_column_text(s, 6));
    snprintf(out->gpu, sizeof(out->gpu), "%s",
             sqlite3_column_type(s, 7) == SQLITE_NULL
                 ? ""
                 : (const char *)sqlite3_column_text(s, 7));
    snprintf(out->url, sizeof(out->url), "%s",
             sqlite3_column_type(s, 8) == SQLITE_NULL
                 ? ""
                 : (const char *)sqlite3_column_text(s, 8));
  }
  store__done(s);
  return rc < 0 ? rc : rc == 0; /* 1: none */
}

int store_fleet_resolve(struct store *st, const char *node, int64_t id,
                        const char *uuid, struct store_fleet_ref *out,
                        struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = uuid != NULL ? store__prep(st, REF_COLUMNS "WHERE uuid = ?1 LIMIT 1",
                                      &s, err, "%s", uuid)
                        : store__prep(st,
                                      REF_COLUMNS "WHERE node = ?1 AND id = ?2"
                                                  " ORDER BY seq DESC LIMIT 1",
                                      &s, err, "%s%ld", node, id);

  if (rc < 0)
    return rc;
  rc = ref_row(st, s, out, err);
  if (rc == 1)
    rc = uuid != NULL ? tr_err_set(err, TR_ENOTFOUND, "id",
                                   "the fleet has no capture %s", uuid)
                      : tr_err_set(err, TR_ENOTFOUND, "id",
                                   "the fleet has no capture %s:%lld", node,
                                   (long long)id);
  return rc;
}

int store_fleet_baseline(struct store *st, const struct store_fleet_ref *ref,
                         struct store_fleet_ref *out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc;

  if (ref->config[0] == '\0')
    return 1;
  rc = store__prep(st,
                   REF_COLUMNS "WHERE config = ?1 AND coalesce(gpu, '') = ?2"
                               " AND status = 'done' AND uuid != ?3"
                               " AND finished_at < ?4"
                               " ORDER BY finished_at DESC, lid DESC LIMIT 1",
                   &s, err, "%s%s%s%ld", ref->config, ref->gpu, ref->uuid,
                   ref->finished_at);
  if (rc < 0)
    return rc;
  return ref_row(st, s, out, err);
}

/* Column c as JSON: null, its text as it is when it holds JSON text
 * (json), else its text as a string. */
static void put_col(struct tr_buf *b, sqlite3_stmt *s, int c, bool json)
{
  /* The type first: reading the text may convert the value. */
  bool null = sqlite3_column_type(s, c) == SQLITE_NULL;
  const char *text = (const char *)sqlite3_column_text(s, c);
  size_t n = (size_t)sqlite3_column_bytes(s, c);

  if (null)
    tr_buf_put(b, "null", 4);
  else if (json)
    tr_buf_put(b, text, n);
  else
    store__put_string(b, text, n);
}

/* One row of the list: its brief (compact JSON, stored so by
 * store_fleet_apply()) with the fleet's members put in before its
 * closing brace: written, never parsed. */
static void put_listed(struct tr_buf *b, sqlite3_stmt *s)
{
  /* The members from column 3 on, and whether each holds JSON text. */
  static const struct {
    const char *key;
    bool json;
  } members[] = { { "node", false },    { "ref", false },   { "uuid", false },
                  { "gpu", false },     { "config", true }, { "figures", true },
                  { "node_url", false } };
  const char *brief = (const char *)sqlite3_column_text(s, 2);
  size_t n = (size_t)sqlite3_column_bytes(s, 2);

  while (n > 0 && brief[n - 1] != '}')
    n--;
  tr_buf_put(b, brief, n > 0 ? n - 1 : 0);
  tr_buf_put(b, n > 2 ? "," : "", n > 2 ? 1 : 0);
  for (int k = 0; k < (int)(sizeof(members) / sizeof(members[0])); k++) {
    tr_buf_printf(b, "%s\"%s\":", k ? "," : "", members[k].key);
    put_col(b, s, 3 + k, members[k].json);
  }
  tr_buf_put(b, "}", 1);
}

int store_fleet_list(struct store *st, const struct store_fleet_filter *f,
                     struct tr_buf *out, struct tr_err *err)
{
  int limit = f->limit > 0 ? f->limit : 50, n = 0;
  int64_t last_at = 0, last_lid = 0;
  sqlite3_stmt *s;
  int rc = store__prep(
      st,
      "SELECT i.lid, i.created_at, i.brief, i.node, " REF_OF(
          "i") ","
               " i.uuid, i.gpu, i.config, i.figures,"
               " (SELECT n.url FROM fleet_nodes n WHERE n.node = i.node)"
               " FROM fleet_index i"
               " WHERE (?1 IS NULL OR i.node = ?1) AND (?2 IS NULL OR i.gpu = "
               "?2)"
               " AND (?3 IS NULL OR i.model = ?3) AND (?4 IS NULL OR i.config "
               "= ?4)"
               " AND (?5 IS NULL OR i.status = ?5) AND (?6 IS NULL OR i.kind = "
               "?6)"
               " AND (?7 = 0 OR i.created_at >= ?7) AND (?8 = 0 OR "
               "i.created_at < ?8)"
               " AND (?9 = 0 OR i.created_at < ?9 OR"
               "  (i.created_at = ?9 AND i.lid < ?10))"
               " ORDER BY i.created_at DESC, i.lid DESC LIMIT ?11",
      &s, err, "%s%s%s%s%s%s%ld%ld%ld%ld%d", f->node, f->gpu, f->model,
      f->config, f->status, f->kind, f->since, f->until, f->before_at,
      f->before_lid, limit);

  if (rc < 0)
    return rc;
  tr_buf_put(out, "{\"captures\":[", 13);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (n++ > 0)
      tr_buf_put(out, ",", 1);
    put_listed(out, s);
    last_lid = sqlite3_column_int64(s, 0);
    last_at = sqlite3_column_int64(s, 1);
  }
  rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "fleet list", err);
  store__done(s);
  if (n == limit)
    tr_buf_printf(out, "],\"next_before\":\"%lld.%lld\"}", (long long)last_at,
                  (long long)last_lid);
  else
    tr_buf_printf(out, "],\"next_before\":null}");
  if (rc == 0 && out->failed)
    rc = tr_err_set(err, out->failed, "limit", "the list is too large");
  return rc;
}

/* finished_at (ns) members as RFC 3339. */
static void stamp(json_t *rows, const char *key)
{
  json_t *row;
  size_t i;

  json_array_foreach(rows, i, row) {
    json_t *t = json_object_get(row, key);
    char buf[40];

    if (json_is_integer(t) && json_integer_value(t) > 0) {
      tr_rfc3339(json_integer_value(t), buf, sizeof(buf));
      json_object_set_new(row, key, json_string(buf));
    } else if (t != NULL) {
      json_object_set_new(row, key, json_null());
    }
  }
}

int store_fleet_trend(struct store *st, const char *config, const char *gpu,
                      int limit, json_t **out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc =
      store__prep(st,
                  "SELECT i.node, i.id, " REF_OF(
                      "i") " AS ref, i.gpu,"
                           " i.finished_at, i.verdict,"
                           " i.figures AS figures_json FROM fleet_index i"
                           " WHERE i.config = ?1 AND (?2 IS NULL OR i.gpu = ?2)"
                           " AND i.status = 'done'"
                           " ORDER BY i.finished_at, i.lid LIMIT ?3",
                  &s, err, "%s%s%d", config, gpu, limit);

  if (rc < 0)
    return rc;
  *out = NULL;
  rc = store__rows(st, s, out, err);
  if (rc == 0)
    stamp(*out, "finished_at");
  return rc;
}

/* The rows of sql (no parameters), its column stamp made RFC 3339. */
static int stamped_rows(struct store *st, const char *sql,
                        const char *stamp_key, json_t **out, struct tr_err *err)
{
  int rc = store__rows_of(st, sql, out, err);

  if (rc == 0)
    stamp(*out, stamp_key);
  return rc;
}

int store_fleet_configs(struct store *st, json_t **out, struct tr_err *err)
{
  return stamped_rows(st,
                      "SELECT config AS key, config AS config_json, gpu,"
                      " max(model) AS model, count(*) AS captures,"
                      " count(DISTINCT node) AS nodes,"
                      " max(finished_at) AS latest FROM fleet_index"
                      " WHERE status = 'done' AND config IS NOT NULL"
                      " GROUP BY config, gpu ORDER BY latest DESC LIMIT 1000",
                      "latest", out, err);
}

int store_fleet_nodes(struct store *st, json_t **out, struct tr_err *err)
{
  return stamped_rows(st,
                      "SELECT n.node, n.url, n.traced_version, n.seen_at,"
                      " (SELECT count(*) FROM fleet_index i"
                      "  WHERE i.node = n.node) AS captures"
                      " FROM fleet_nodes n ORDER BY n.node",
                      "seen_at", out, err);
}
