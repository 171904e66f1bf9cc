/*
 * Connections: open (pragmas, migrations), the statement cache, the
 * process-wide write lock, transactions, and the row-to-JSON helper every
 * query uses.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "store/store_int.h"

/* One writer at a time across every connection of the process: a thread
 * waiting here sleeps instead of spinning in SQLite's busy handler, and
 * BEGIN IMMEDIATE under it never meets SQLITE_BUSY from our own writers
 * (busy_timeout still covers another process, e.g. the sqlite3 shell). */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

enum { BUSY_TIMEOUT_MS = 10000 };

/* SQLITE_FULL and SQLITE_IOERR on a read-write connection: the store
 * cannot take writes now. The one place every writer's failure passes,
 * so GET /healthz hears of the daemon's writes too. */
static bool refuses_writes(struct store *st)
{
  int code = sqlite3_extended_errcode(st->db) & 0xff;

  return st->mode == STORE_RW && (code == SQLITE_FULL || code == SQLITE_IOERR);
}

int store__db_err(struct store *st, const char *what, struct tr_err *err)
{
  char reason[256];

  if (st == NULL || st->db == NULL)
    return tr_err_set(err, TR_EDB, "", "%s: no database", what);
  if (!refuses_writes(st))
    return tr_err_set(err, TR_EDB, "", "%s: %s", what, sqlite3_errmsg(st->db));
  snprintf(reason, sizeof(reason),
           "the database refuses writes: %s (%s): free space on its disk",
           sqlite3_errmsg(st->db), sqlite3_db_filename(st->db, "main"));
  tr_stats_store_refused(reason);
  return tr_err_set(err, TR_ESTORAGE, "", "%s: %s", what, reason);
}

int store__stmt(struct store *st, const char *sql, sqlite3_stmt **out,
                struct tr_err *err)
{
  struct stmt_slot *slot; /* the new cache entry */
  sqlite3_stmt *stmt;

  for (size_t i = 0; i < st->ncache; i++) {
    if (strcmp(st->cache[i].sql, sql) == 0) {
      *out = st->cache[i].stmt;
      return 0;
    }
  }
  if (st->ncache == st->capcache) {
    size_t cap = st->capcache ? st->capcache * 2 : 32;
    struct stmt_slot *c = realloc(st->cache, cap * sizeof(*c));

    if (c == NULL)
      return tr_err_set(err, TR_ENOMEM, "", "statement cache");
    st->cache = c;
    st->capcache = cap;
  }
  if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt,
                         NULL) != SQLITE_OK)
    return store__db_err(st, "prepare", err);
  slot = &st->cache[st->ncache];
  slot->sql = strdup(sql);
  if (slot->sql == NULL) {
    sqlite3_finalize(stmt);
    return tr_err_set(err, TR_ENOMEM, "", "statement cache");
  }
  slot->stmt = stmt;
  st->ncache++;
  *out = stmt;
  return 0;
}

void store__done(sqlite3_stmt *s)
{
  if (s == NULL)
    return;
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
}

static int exec(struct store *st, const char *sql, struct tr_err *err)
{
  if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return store__db_err(st, sql, err);
  return 0;
}

int store__wr_begin(struct store *st, struct tr_err *err)
{
  int rc;

  if (st->mode != STORE_RW)
    return tr_err_set(err, TR_EDB, "", "write on a read-only connection");
  pthread_mutex_lock(&write_lock);
  rc = exec(st, "BEGIN IMMEDIATE", err);
  if (rc < 0)
    pthread_mutex_unlock(&write_lock);
  return rc;
}

int store__wr_end(struct store *st, int rc, struct tr_err *err)
{
  if (rc == 0)
    rc = exec(st, "COMMIT", err);
  if (rc == 0)
    tr_stats_store_accepted();
  if (rc < 0 && !sqlite3_get_autocommit(st->db))
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  pthread_mutex_unlock(&write_lock);
  return rc;
}

int store__rd_begin(struct store *st, struct tr_err *err)
{
  return exec(st, "BEGIN", err);
}

int store__rd_end(struct store *st, int rc, struct tr_err *err)
{
  /* COMMIT of a read transaction only ends the snapshot; ROLLBACK after a
   * failed statement does the same. */
  if (rc == 0)
    rc = exec(st, "COMMIT", err);
  if (rc < 0 && !sqlite3_get_autocommit(st->db))
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

int store__bind_text(sqlite3_stmt *stmt, int i, const char *s)
{
  if (s == NULL)
    return sqlite3_bind_null(stmt, i);
  return sqlite3_bind_text(stmt, i, s, -1, SQLITE_TRANSIENT);
}

json_t *store__col_json(sqlite3_stmt *stmt, int col)
{
  const char *text = (const char *)sqlite3_column_text(stmt, col);
  json_t *v;

  if (text == NULL)
    return json_null();
  v = json_loads(text, JSON_DECODE_ANY, NULL);
  /* Only we write these columns; text that does not parse is kept as a
   * string rather than lost. */
  return v ? v : json_string(text);
}

static json_t *col_value(sqlite3_stmt *stmt, int col)
{
  switch (sqlite3_column_type(stmt, col)) {
  case SQLITE_INTEGER: return json_integer(sqlite3_column_int64(stmt, col));
  case SQLITE_FLOAT: return json_real(sqlite3_column_double(stmt, col));
  case SQLITE_NULL: return json_null();
  default:
    return json_stringn((const char *)sqlite3_column_text(stmt, col),
                        (size_t)sqlite3_column_bytes(stmt, col));
  }
}

static json_t *row_object(sqlite3_stmt *stmt)
{
  json_t *row = json_object();
  int ncol = sqlite3_column_count(stmt);

  for (int c = 0; c < ncol && row != NULL; c++) {
    const char *name = sqlite3_column_name(stmt, c);
    size_t len = strlen(name);

    if (len > 5 && strcmp(name + len - 5, "_json") == 0)
      json_object_setn_new(row, name, len - 5, store__col_json(stmt, c));
    else
      json_object_set_new(row, name, col_value(stmt, c));
  }
  return row;
}

/* The bytes of the row's text and blob columns. */
static size_t row_bytes(sqlite3_stmt *stmt)
{
  size_t n = 0;

  for (int c = sqlite3_column_count(stmt) - 1; c >= 0; c--)
    n += (size_t)sqlite3_column_bytes(stmt, c);
  return n;
}

int store__rows_max(struct store *st, sqlite3_stmt *stmt, size_t max_bytes,
                    json_t **out, struct tr_err *err)
{
  json_t *arr = *out ? *out : json_array();
  size_t used = 0;
  int rc = 0, s = SQLITE_DONE;

  if (arr == NULL)
    rc = tr_err_set(err, TR_ENOMEM, "", "rows");
  while (rc == 0 && (s = sqlite3_step(stmt)) == SQLITE_ROW) {
    used += row_bytes(stmt);
    if (max_bytes > 0 && used > max_bytes && json_array_size(arr) > 0) {
      s = SQLITE_DONE; /* the budget is spent: the rest stays unread */
      break;
    }
    if (json_array_append_new(arr, row_object(stmt)) < 0)
      rc = tr_err_set(err, TR_ENOMEM, "", "rows");
  }
  if (rc == 0 && s != SQLITE_DONE)
    rc = store__db_err(st, "query", err);
  store__done(stmt);
  if (rc < 0 && *out == NULL)
    json_decref(arr);
  else if (rc == 0)
    *out = arr;
  return rc;
}

int store__rows(struct store *st, sqlite3_stmt *stmt, json_t **out,
                struct tr_err *err)
{
  return store__rows_max(st, stmt, 0, out, err);
}

int store__check_enum(const char *s, const char *const *allowed,
                      const char *field, struct tr_err *err)
{
  if (s == NULL)
    return 0;
  for (size_t i = 0; allowed[i] != NULL; i++) {
    if (strcmp(s, allowed[i]) == 0)
      return 0;
  }
  return tr_err_set(err, TR_EINVAL, field, "%s: unknown value", field);
}

static int user_version(struct store *st, int *out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st, "PRAGMA user_version", &s, err);

  if (rc < 0)
    return rc;
  if (sqlite3_step(s) == SQLITE_ROW)
    *out = sqlite3_column_int(s, 0);
  else
    rc = store__db_err(st, "user_version", err);
  store__done(s);
  return rc;
}

static int check_not_newer(int have, struct tr_err *err)
{
  if (have > store__schema_version)
    return tr_err_set(err, TR_EDB, "db",
                      "database schema version %d is newer than this "
                      "traced understands (%d): refusing to open it",
                      have, store__schema_version);
  return 0;
}

static int migrate_steps(struct store *st, struct tr_err *err);

/* Applies the missing migration steps, one transaction each. The version
 * is read again inside each transaction: another connection may have
 * migrated meanwhile. Foreign keys are off meanwhile (the pragma is a no-op
 * inside a transaction): a step that rebuilds a table drops the old one. */
static int migrate(struct store *st, struct tr_err *err)
{
  int rc = exec(st, "PRAGMA foreign_keys = OFF", err);

  if (rc == 0)
    rc = migrate_steps(st, err);
  if (exec(st, "PRAGMA foreign_keys = ON", err) != 0 && rc == 0)
    rc = TR_EDB;
  return rc;
}

static int migrate_steps(struct store *st, struct tr_err *err)
{
  for (int step = 0; step < store__schema_version; step++) {
    char sql[64];
    int have = 0;
    int rc = store__wr_begin(st, err);

    if (rc < 0)
      return rc;
    rc = user_version(st, &have, err);
    if (rc == 0)
      rc = check_not_newer(have, err);
    if (rc == 0 && have == step) {
      snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", step + 1);
      rc = exec(st, store__migrations[step], err);
      if (rc == 0)
        rc = exec(st, sql, err);
    }
    rc = store__wr_end(st, rc, err);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int configure(struct store *st, struct tr_err *err)
{
  char sql[64];
  int have = 0;
  int rc;

  snprintf(sql, sizeof(sql), "PRAGMA busy_timeout = %d", BUSY_TIMEOUT_MS);
  rc = exec(st, sql, err);
  if (rc == 0)
    rc = exec(st, "PRAGMA foreign_keys = ON", err);
  if (rc == 0 && st->mode == STORE_RW)
    rc = exec(st, "PRAGMA journal_mode = WAL", err);
  if (rc == 0)
    rc = exec(st, "PRAGMA synchronous = NORMAL", err);
  if (rc == 0)
    rc = user_version(st, &have, err);
  if (rc == 0)
    rc = check_not_newer(have, err);
  if (rc == 0 && st->mode == STORE_RW)
    rc = migrate(st, err);
  else if (rc == 0 && have != store__schema_version)
    rc = tr_err_set(err, TR_EDB, "db",
                    "database schema version %d, expected %d: open it "
                    "read-write once to migrate",
                    have, store__schema_version);
  return rc;
}

int store_open(const char *path, int mode, struct store **out,
               struct tr_err *err)
{
  int flags = SQLITE_OPEN_NOMUTEX |
              (mode == STORE_RO ? SQLITE_OPEN_READONLY
                                : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  struct store *st = calloc(1, sizeof(*st));
  int rc;

  if (st == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "store");
  st->mode = mode == STORE_RO ? STORE_RO : STORE_RW;
  if (sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK) {
    rc = tr_err_set(err, TR_EDB, "db", "%s: %s", path,
                    st->db ? sqlite3_errmsg(st->db) : "cannot open");
    store_close(st);
    return rc;
  }
  sqlite3_extended_result_codes(st->db, 1);
  rc = configure(st, err);
  if (rc < 0) {
    store_close(st);
    return rc;
  }
  *out = st;
  return 0;
}

void store_close(struct store *st)
{
  if (st == NULL)
    return;
  for (size_t i = 0; i < st->ncache; i++) {
    sqlite3_finalize(st->cache[i].stmt);
    free(st->cache[i].sql);
  }
  free(st->cache);
  sqlite3_close(st->db);
  free(st);
}

int store__no_capture(int64_t id, struct tr_err *err)
{
  return tr_err_set(err, TR_ENOTFOUND, "id", "no capture %lld", (long long)id);
}

int store__stmt_id(struct store *st, const char *sql, int64_t id, int rank,
                   sqlite3_stmt **out, struct tr_err *err)
{
  int rc = store__stmt(st, sql, out, err);

  if (rc < 0)
    return rc;
  sqlite3_bind_int64(*out, 1, id);
  if (sqlite3_bind_parameter_count(*out) >= 2)
    sqlite3_bind_int(*out, 2, rank);
  return 0;
}

int store__step_capture(struct store *st, sqlite3_stmt *s, int64_t id,
                        struct tr_err *err)
{
  int rc = sqlite3_step(s);

  if (rc == SQLITE_ROW)
    return 0;
  if (rc == SQLITE_DONE)
    return store__no_capture(id, err);
  return store__db_err(st, "capture", err);
}

int store__capture_exists(struct store *st, int64_t id, char *status,
                          struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt_id(st, "SELECT status FROM captures WHERE id = ?1", id,
                          0, &s, err);

  if (rc < 0)
    return rc;
  rc = store__step_capture(st, s, id, err);
  if (rc == 0 && status != NULL)
    snprintf(status, 16, "%s", (const char *)sqlite3_column_text(s, 0));
  store__done(s);
  return rc;
}
