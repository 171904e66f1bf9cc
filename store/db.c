/*
 * Connections: open (pragmas, migrations), the statement cache, the
 * process-wide write lock, transactions, and the row-to-JSON helper every
 * query uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/stats.h"
#include "store/store_int.h"

/* One writer at a time across every connection of the process: a thread
 * waiting here sleeps instead of spinning in SQLite's busy handler, and
 * BEGIN IMMEDIATE under it never meets SQLITE_BUSY from our own writers
 * (busy_timeout still covers another process, e.g. the sqlite3 shell). */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

enum { BUSY_TIMEOUT_MS = 10000 };

#define READ_ONLY                                                              \
  "it is read-only (file mode, immutable flag or a read-only mount): make "    \
  "it writable"

/* True when the database file or its WAL may not be written: an
 * immutable flag (EPERM), a read-only mount (EROFS), a mode (EACCES). A
 * write that failed so leaves SQLite an I/O error, its errno often lost
 * in the rollback after it: the files say. */
static bool files_read_only(struct store *st)
{
  const char *db = sqlite3_db_filename(st->db, "main");
  char wal[4096];

  if (db == NULL || *db == '\0')
    return false;
  snprintf(wal, sizeof(wal), "%s-wal", db);
  return (access(db, W_OK) != 0 && errno != ENOENT) ||
         (access(wal, W_OK) != 0 && errno != ENOENT);
}

/* Why a read-write connection's store cannot take writes now, from the
 * last failure (SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR, SQLITE_PERM:
 * a full disk, a read-only or immutable file, a file system remounted
 * read-only), as a person should read it; NULL for any other failure. */
static const char *refusal(struct store *st)
{
  int code = sqlite3_extended_errcode(st->db) & 0xff;
  int sys = sqlite3_system_errno(st->db);

  if (st->mode != STORE_RW)
    return NULL;
  if (code == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT)
    return "its disk is full: free space on it";
  if (code == SQLITE_READONLY || code == SQLITE_PERM || sys == EROFS ||
      sys == EPERM || sys == EACCES ||
      ((code == SQLITE_IOERR || code == SQLITE_CANTOPEN) &&
       files_read_only(st)))
    return READ_ONLY;
  if (code == SQLITE_IOERR)
    return "its disk fails writes (I/O error)";
  return NULL;
}

/* Records that the store refuses writes (GET /healthz and /metrics say
 * so until a write succeeds again) and returns TR_ESTORAGE. detail: what
 * SQLite said. */
static int refused(struct store *st, const char *what, const char *detail,
                   const char *why, struct tr_err *err)
{
  char reason[384];

  snprintf(reason, sizeof(reason), "the database refuses writes: %s (%s): %s",
           detail, sqlite3_db_filename(st->db, "main"), why);
  tr_stats_store_refused(reason);
  return tr_err_set(err, TR_ESTORAGE, "", "%s: %s", what, reason);
}

int store__db_err(struct store *st, const char *what, struct tr_err *err)
{
  int sys = st != NULL && st->db != NULL ? sqlite3_system_errno(st->db) : 0;
  const char *why;
  char detail[160];

  if (st == NULL || st->db == NULL)
    return tr_err_set(err, TR_EDB, "", "%s: no database", what);
  if ((why = refusal(st)) == NULL)
    return tr_err_set(err, TR_EDB, "", "%s: %s", what, sqlite3_errmsg(st->db));
  snprintf(detail, sizeof(detail), "%s%s%s", sqlite3_errmsg(st->db),
           sys != 0 ? ", the system says: " : "",
           sys != 0 ? strerror(sys) : "");
  return refused(st, what, detail, why, err);
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

/* "%ld" is int64_t's conversion only where int64_t is long (LP64, every
 * target the tree builds for): elsewhere this fails the build rather than
 * a conversion reading the wrong width. */
_Static_assert(_Generic((int64_t)0, long : 1, default : 0),
               "store__exec()'s \"%ld\" needs int64_t to be long");

/* Binds parameter i of s to the next argument of ap by the conversion at
 * *types, moved past it (store__exec()). */
static int bind_one(sqlite3_stmt *s, int i, const char **types, va_list *ap)
{
  const char *c = *types + 1; /* past the '%' */

  *types = c + 1;
  switch (*c) {
  case 'd': return sqlite3_bind_int(s, i, va_arg(*ap, int));
  case 'f': return sqlite3_bind_double(s, i, va_arg(*ap, double));
  case 's': return store__bind_text(s, i, va_arg(*ap, const char *));
  case 'l':
    *types = c + 2;
    if (c[1] == 'd')
      return sqlite3_bind_int64(s, i, va_arg(*ap, int64_t));
    return SQLITE_MISUSE;
  default: return SQLITE_MISUSE;
  }
}

/* Binds ?1.. of s from ap as types says (store__exec()). */
static int bind_args(sqlite3_stmt *s, const char *types, va_list *ap)
{
  int n = sqlite3_bind_parameter_count(s), i = 1, rc = SQLITE_OK;
  bool some = false; /* past a '|': only the parameters s has */

  while (rc == SQLITE_OK && *types != '\0') {
    if (*types == '|') {
      some = true;
      types++;
      continue;
    }
    if (*types != '%')
      return SQLITE_MISUSE;
    if (some && i > n)
      break; /* nor has it a later one */
    rc = bind_one(s, i++, &types, ap);
  }
  return rc;
}

int store__exec(struct store *st, const char *what, const char *sql,
                sqlite3_stmt **out, struct tr_err *err, const char *types, ...)
{
  sqlite3_stmt *s;
  va_list ap;
  int rc = store__stmt(st, sql, &s, err);

  if (rc < 0)
    return rc;
  va_start(ap, types);
  rc = bind_args(s, types, &ap);
  va_end(ap);
  if (rc != SQLITE_OK) {
    store__done(s);
    return tr_err_set(err, TR_EDB, "", "bind %s to %s", types, sql);
  }
  if (out != NULL) {
    *out = s;
    return 0;
  }
  rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(st, what, err);
  store__done(s);
  return rc;
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

/* Opens st's database again in place: 0 when the new connection takes
 * writes (the old one is closed), else st is left as it was. */
static int reopen(struct store *st)
{
  const char *name = sqlite3_db_filename(st->db, "main");
  char *path = name != NULL ? strdup(name) : NULL;
  struct store *fresh = NULL, old;
  int rc = path != NULL ? store_open(path, STORE_RW, &fresh, NULL) : TR_ENOMEM;

  free(path);
  if (rc == 0 && sqlite3_db_readonly(fresh->db, "main") != 0)
    rc = TR_ESTORAGE;
  if (rc == 0) {
    old = *st;
    *st = *fresh;
    *fresh = old;
  }
  store_close(fresh);
  return rc;
}

/* A read-write connection that SQLite opened read-only (the file was not
 * writable then) stays read-only: opened again when a write comes, it
 * takes writes as soon as the file does. TR_ESTORAGE while it does not. */
static int writable(struct store *st, struct tr_err *err)
{
  if (sqlite3_db_readonly(st->db, "main") != 1 || reopen(st) == 0)
    return 0;
  return refused(st, "write", "opened read-only", READ_ONLY, err);
}

int store__wr_begin(struct store *st, struct tr_err *err)
{
  int rc;

  if (st->mode != STORE_RW)
    return tr_err_set(err, TR_EDB, "", "write on a read-only connection");
  if ((rc = writable(st, err)) != 0)
    return rc;
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

int store__rows_id(struct store *st, const char *sql, int64_t id, int rank,
                   json_t **out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt_id(st, sql, id, rank, &s, err);

  *out = NULL;
  return rc < 0 ? rc : store__rows(st, s, out, err);
}

int store__record_get(struct store *st, const struct store__record *r,
                      int64_t id, json_t **out, struct tr_err *err)
{
  json_t *rec = NULL, *children = NULL;
  int rc = store__rd_begin(st, err);

  if (rc == 0)
    rc = store__row_id(st, r->sql, id, &rec, err);
  if (rc == 0 && rec == NULL)
    rc = r->missing(st, id, err);
  if (rc == 0)
    rc = r->children(st, id, &children, err);
  rc = store__rd_end(st, rc, err);
  if (rc != 0) {
    json_decref(rec);
    json_decref(children);
    return rc;
  }
  r->finish(rec);
  json_object_set_new(rec, r->member, children);
  *out = rec;
  return 0;
}

int store__row_id(struct store *st, const char *sql, int64_t id, json_t **out,
                  struct tr_err *err)
{
  json_t *rows = NULL;
  int rc = store__rows_id(st, sql, id, 0, &rows, err);

  *out = rc == 0 ? json_incref(json_array_get(rows, 0)) : NULL;
  json_decref(rows);
  return rc;
}

void store__stamps(json_t *obj)
{
  static const char *const stamps[] = { "created_at", "started_at",
                                        "finished_at", "phase_started_at" };

  for (size_t i = 0; i < sizeof(stamps) / sizeof(stamps[0]); i++) {
    json_t *t = json_object_get(obj, stamps[i]);
    char buf[40];

    if (json_is_integer(t)) {
      tr_rfc3339(json_integer_value(t), buf, sizeof(buf));
      json_object_set_new(obj, stamps[i], json_string(buf));
    }
  }
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

int store__collect(struct store *st, sqlite3_stmt *s, size_t size,
                   store__fill_fn fill, void *ud, const char *what, void **out,
                   size_t *n, struct tr_err *err)
{
  char *v = NULL; /* grows by doubling */
  size_t cap = 0;
  int rc = 0, step = SQLITE_DONE;

  *n = 0;
  while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW) {
    if (*n == cap) {
      char *grown = realloc(v, (cap = cap ? 2 * cap : 32) * size);

      if (grown == NULL) {
        rc = TR_ENOMEM;
        break;
      }
      v = grown;
    }
    rc = fill(s, v + *n * size, ud);
    if (rc != 0) /* kept, or begun: the caller frees what it holds */
      (*n)++;
    rc = rc < 0 ? rc : 0;
  }
  if (rc == 0 && step != SQLITE_DONE)
    rc = store__db_err(st, what, err);
  else if (rc == TR_ENOMEM)
    rc = tr_err_set(err, rc, "", "%s: out of memory", what);
  store__done(s);
  *out = v;
  return rc;
}

int store__collect_id(struct store *st, const char *sql, int64_t id,
                      size_t size, store__fill_fn fill, void *ud,
                      const char *what, void **out, size_t *n,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt_id(st, sql, id, 0, &s, err);

  *out = NULL;
  *n = 0;
  return rc < 0 ? rc : store__collect(st, s, size, fill, ud, what, out, n, err);
}

int store__page(struct store *st, sqlite3_stmt *s, size_t max_bytes,
                void (*finish)(json_t *row), json_t **out, struct tr_err *err)
{
  json_t *rows = NULL, *v;
  size_t i;
  int rc = store__rows_max(st, s, max_bytes, &rows, err);

  if (rc < 0)
    return rc;
  json_array_foreach(rows, i, v)
    finish(v);
  *out = rows;
  return 0;
}

int store__rows_of(struct store *st, const char *sql, json_t **out,
                   struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt(st, sql, &s, err);

  *out = NULL;
  return rc < 0 ? rc : store__rows(st, s, out, err);
}

int store__rows(struct store *st, sqlite3_stmt *stmt, json_t **out,
                struct tr_err *err)
{
  return store__rows_max(st, stmt, 0, out, err);
}

int store__rows_each(struct store *st, sqlite3_stmt *stmt, store__row_fn fn,
                     void *ud, struct tr_err *err)
{
  int rc = 0, s = SQLITE_DONE;
  json_t *row;

  while (rc == 0 && (s = sqlite3_step(stmt)) == SQLITE_ROW) {
    row = row_object(stmt);
    rc =
        row != NULL ? fn(ud, row, err) : tr_err_set(err, TR_ENOMEM, "", "rows");
    json_decref(row);
  }
  if (rc == 0 && s != SQLITE_DONE)
    rc = store__db_err(st, "query", err);
  store__done(stmt);
  return rc;
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

/* sum() as SQLite's own, except that an integer sum that would overflow
 * is held at INT64_MAX or INT64_MIN instead of failing the query ("integer
 * overflow"): a rank's sums are held so already (docs/TRACE_FORMATS.md),
 * and the all-ranks tables add them up. Not a window function (none of
 * our queries uses sum() OVER). */
struct sat_sum {
  int64_t i;
  double r;
  bool any, real;
};

static void sum_step(sqlite3_context *c, int n, sqlite3_value **v)
{
  struct sat_sum *s = sqlite3_aggregate_context(c, sizeof(*s));
  int type = sqlite3_value_numeric_type(v[0]);

  (void)n;
  if (s == NULL || type == SQLITE_NULL)
    return;
  s->any = true;
  if (type == SQLITE_INTEGER && !s->real) {
    s->i = tr_sat_add(s->i, sqlite3_value_int64(v[0]));
    return;
  }
  if (!s->real)
    s->r = (double)s->i;
  s->real = true;
  s->r += sqlite3_value_double(v[0]);
}

static void sum_final(sqlite3_context *c)
{
  struct sat_sum *s = sqlite3_aggregate_context(c, 0);

  if (s == NULL || !s->any)
    sqlite3_result_null(c);
  else if (s->real)
    sqlite3_result_double(c, s->r);
  else
    sqlite3_result_int64(c, s->i);
}

static int configure(struct store *st, struct tr_err *err)
{
  char sql[64];
  int have = 0;
  int rc;

  if (sqlite3_create_function_v2(st->db, "sum", 1,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                                 sum_step, sum_final, NULL) != SQLITE_OK)
    return store__db_err(st, "sum()", err);
  snprintf(sql, sizeof(sql), "PRAGMA busy_timeout = %d", BUSY_TIMEOUT_MS);
  rc = exec(st, sql, err);
  if (rc == 0)
    rc = exec(st, "PRAGMA foreign_keys = ON", err);
  if (rc == 0 && st->mode == STORE_RW)
    rc = exec(st, "PRAGMA journal_mode = WAL", err);
  /* The WAL grows to the largest transaction (a rank's summary, up to
   * max_rank_db_bytes) and stays that size: back to 64 MiB once it is
   * checkpointed. */
  if (rc == 0 && st->mode == STORE_RW)
    rc = exec(st, "PRAGMA journal_size_limit = 67108864", err);
  if (rc == 0)
    rc = exec(st, "PRAGMA synchronous = NORMAL", err);
  if (rc == 0)
    rc = user_version(st, &have, err);
  if (rc == 0)
    rc = check_not_newer(have, err);
  /* Up to date: no write, so a read-only file opens (and the daemon serves
   * reads, degraded) instead of failing an empty transaction. */
  if (rc == 0 && st->mode == STORE_RW && have != store__schema_version &&
      sqlite3_db_readonly(st->db, "main") == 1)
    rc = tr_err_set(err, TR_ESTORAGE, "db",
                    "database schema version %d, expected %d: it must be "
                    "migrated, but %s",
                    have, store__schema_version, READ_ONLY);
  else if (rc == 0 && st->mode == STORE_RW && have != store__schema_version)
    rc = migrate(st, err);
  else if (rc == 0 && have != store__schema_version)
    rc = tr_err_set(err, TR_EDB, "db",
                    "database schema version %d, expected %d: open it "
                    "read-write once to migrate",
                    have, store__schema_version);
  return rc;
}

/* A database traced makes is 0600: it holds every request (their env
 * among them), and SQLite makes its WAL and shared-memory files with the
 * database file's mode. One that exists keeps its mode. */
static void create_private(const char *path)
{
  int fd;

  if (path[0] == '\0' || strcmp(path, ":memory:") == 0 ||
      strncmp(path, "file:", 5) == 0)
    return; /* SQLite's own: in memory, a URI */
  fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0)
    close(fd);
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
  if (st->mode == STORE_RW)
    create_private(path);
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
  /* SQLite opens a file it may not write read-only, silently: the store
   * is degraded from the start (GET /healthz says why). */
  if (st->mode == STORE_RW && sqlite3_db_readonly(st->db, "main") == 1)
    refused(st, "open", "opened read-only", READ_ONLY, NULL);
  *out = st;
  return 0;
}

void store_release_memory(struct store *st)
{
  if (st != NULL)
    sqlite3_db_release_memory(st->db);
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

const char *store__capture_name(struct store *st, int64_t id, char *buf)
{
  sqlite3_stmt *s = NULL;

  snprintf(buf, STORE_NAME_MAX, "%lld", (long long)id);
  if (store__stmt_id(st, "SELECT node, id FROM fleet_index WHERE cache_id = ?1",
                     id, 0, &s, NULL) == 0 &&
      sqlite3_step(s) == SQLITE_ROW)
    snprintf(buf, STORE_NAME_MAX, "%s:%lld", sqlite3_column_text(s, 0),
             (long long)sqlite3_column_int64(s, 1));
  store__done(s);
  return buf;
}

int store__no_capture(struct store *st, int64_t id, struct tr_err *err)
{
  char name[STORE_NAME_MAX];

  return tr_err_set(err, TR_ENOTFOUND, "id", "no capture %s",
                    store__capture_name(st, id, name));
}

int store__stmt_id(struct store *st, const char *sql, int64_t id, int rank,
                   sqlite3_stmt **out, struct tr_err *err)
{
  return store__prep(st, sql, out, err, "|%ld%d", id, rank);
}

int store__step(struct store *st, sqlite3_stmt *s, const char *what,
                struct tr_err *err)
{
  int rc = sqlite3_step(s);

  return rc == SQLITE_ROW    ? 1
         : rc == SQLITE_DONE ? 0
                             : store__db_err(st, what, err);
}

int store__first(struct store *st, const char *sql, int64_t id, int rank,
                 const char *what, sqlite3_stmt **out, struct tr_err *err)
{
  int rc = store__stmt_id(st, sql, id, rank, out, err);

  if (rc < 0) {
    *out = NULL;
    return rc;
  }
  return store__step(st, *out, what, err);
}

int store__step_capture(struct store *st, sqlite3_stmt *s, int64_t id,
                        struct tr_err *err)
{
  int rc = store__step(st, s, "capture", err);

  return rc == 0 ? store__no_capture(st, id, err) : rc == 1 ? 0 : rc;
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
