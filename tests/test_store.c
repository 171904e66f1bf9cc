/*
 * store: schema and migrations, the capture lifecycle (insert, phases,
 * merges, list, cancel, delete).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/check.h"
#include "common/lifecycle.h"
#include "store/store_int.h"
#include "tests/test_store_util.h"

static struct tr_err err;

static struct store *open_rw(const char *path)
{
  struct store *st = NULL;

  tr_err_clear(&err);
  if (store_open(path, STORE_RW, &st, &err) != 0) {
    fprintf(stderr, "store_open: %s\n", err.msg);
    exit(1);
  }
  return st;
}

static void exec_sql(const char *path, const char *sql)
{
  sqlite3 *db;

  CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
  CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

/* The database traced makes, its WAL and shared memory are 0600 whatever
 * the umask: they hold every request. */
static void store_files_private(void)
{
  static const char *const suffix[] = { "", "-wal", "-shm" };
  char path[256], file[300];
  struct store *st;
  struct stat sb;
  mode_t old = umask(022);
  int64_t id;

  fx_db_path(path, sizeof(path));
  unlink(path);
  st = open_rw(path);
  CHECK_INT(store_capture_insert(st, "capture", "x", NULL, 0, &id, &err), 0);
  for (size_t i = 0; i < 3; i++) {
    snprintf(file, sizeof(file), "%s%s", path, suffix[i]);
    CHECK_INT(stat(file, &sb), 0);
    CHECK_INT(sb.st_mode & 0777, 0600);
  }
  store_close(st);
  umask(old);
}

/* sum() holds an integer sum at INT64_MAX (or INT64_MIN) where SQLite's
 * own would fail the query: the all-ranks sums of ranks whose own sums
 * are held so (docs/TRACE_FORMATS.md). Otherwise it is SQLite's. */
static void store_sum_saturates(void)
{
  static const struct {
    const char *sql;
    int type;
    int64_t i;
    double r;
  } asks[] = {
    { "SELECT sum(v) FROM (SELECT 9223372036854775807 AS v UNION ALL "
      "SELECT 1)",
      SQLITE_INTEGER, INT64_MAX, 0 },
    { "SELECT sum(v) FROM (SELECT -9223372036854775807 AS v UNION ALL "
      "SELECT -5)",
      SQLITE_INTEGER, INT64_MIN, 0 },
    { "SELECT sum(v) FROM (SELECT 2 AS v UNION ALL SELECT 3)", SQLITE_INTEGER,
      5, 0 },
    { "SELECT sum(v) FROM (SELECT 2 AS v UNION ALL SELECT 0.5)", SQLITE_FLOAT,
      0, 2.5 },
    { "SELECT sum(v) FROM (SELECT NULL AS v)", SQLITE_NULL, 0, 0 },
    { "SELECT sum(v) FROM (SELECT 1 AS v) WHERE v > 1", SQLITE_NULL, 0, 0 },
  };
  char path[256];
  struct store *st;
  sqlite3_stmt *s;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  for (size_t i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
    CHECK_INT(sqlite3_prepare_v2(st->db, asks[i].sql, -1, &s, NULL), SQLITE_OK);
    CHECK_INT(sqlite3_step(s), SQLITE_ROW);
    CHECK_INT(sqlite3_column_type(s, 0), asks[i].type);
    if (asks[i].type == SQLITE_INTEGER)
      CHECK_INT(sqlite3_column_int64(s, 0), asks[i].i);
    if (asks[i].type == SQLITE_FLOAT)
      CHECK(sqlite3_column_double(s, 0) == asks[i].r);
    sqlite3_finalize(s);
  }
  store_close(st);
}

static void store_migrates_empty_file(void)
{
  char path[256], one[64];
  struct store *st;
  FILE *f;
  json_t *cap;
  int64_t id;

  fx_db_path(path, sizeof(path));
  f = fopen(path, "w"); /* an empty file: user_version 0 */
  CHECK(f != NULL);
  fclose(f);
  st = open_rw(path);
  CHECK_INT(fx_count(path, "PRAGMA user_version", -1), store__schema_version);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM sqlite_master WHERE"
                     " type = 'table' AND name IN ('captures',"
                     " 'names', 'ranks', 'kernels', 'launches',"
                     " 'categories', 'memcpy', 'runtime', 'steps',"
                     " 'phases')",
                     -1),
            10);
  CHECK_INT(store_capture_insert(st, "capture", "x", NULL, 0, &id, &err), 0);
  store_close(st);
  /* Reopening migrates nothing and keeps the data. */
  st = open_rw(path);
  CHECK_INT(fx_count(path, "PRAGMA user_version", -1), store__schema_version);
  CHECK_INT(store_capture_get(st, id, &cap, &err), 0);
  CHECK_STR(json_string_value(json_object_get(cap, "label")), "x");
  json_decref(cap);
  store_close(st);
  /* WAL is persistent: a plain connection sees it. */
  {
    sqlite3 *db;
    sqlite3_stmt *s;

    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL),
              SQLITE_OK);
    CHECK_INT(sqlite3_step(s), SQLITE_ROW);
    snprintf(one, sizeof(one), "%s", sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    CHECK_STR(one, "wal");
  }
  fx_db_remove(path);
}

/* The migrated schema has a column for every stored member of the field
 * list (common/summary.h): the released steps wrote them out by hand, the
 * later ones expand the list. */
static void store_schema_has_every_field(void)
{
  char path[256], sql[256];
  struct store *st;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  for (size_t i = 0; i <= store__ntables; i++) {
    const struct store__table *t =
        i < store__ntables ? &store__tables[i] : NULL;
    const struct store__field *f = t ? t->f : store__rank_fields;
    size_t n = t ? t->n : store__rank_nfields;

    for (size_t j = 0; j < n; j++) {
      if (!store__field_stored(&f[j]))
        continue;
      snprintf(sql, sizeof(sql),
               "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'",
               t ? t->member : "ranks", f[j].col);
      if (fx_count(path, sql, -1) != 1)
        fprintf(stderr, "no column %s.%s\n", t ? t->member : "ranks", f[j].col);
      CHECK_INT(fx_count(path, sql, -1), 1);
    }
  }
  store_close(st);
  fx_db_remove(path);
}

/* A version 1 database (phase and status CHECKs, captures with ranks, the
 * newest capture deleted) migrates without losing a row, an id or the
 * AUTOINCREMENT counter, and takes words the old CHECKs did not know. */
static void store_migrates_v1_keeping_rows(void)
{
  char path[256], sql[512];
  struct store *st;
  int64_t id;

  fx_db_path(path, sizeof(path));
  exec_sql(path, store__migrations[0]);
  exec_sql(path, "PRAGMA user_version = 1");
  for (int i = 1; i <= 3; i++) {
    snprintf(sql, sizeof(sql),
             "INSERT INTO captures(kind, status, phase, created_at)"
             " VALUES('capture', 'done', 'done', %d);"
             "INSERT INTO ranks(capture_id, rank, status) VALUES(%d, 0,"
             " 'done');",
             i, i);
    exec_sql(path, sql);
  }
  exec_sql(path, "PRAGMA foreign_keys = ON; DELETE FROM captures WHERE id = 3");
  st = open_rw(path);
  CHECK_INT(fx_count(path, "PRAGMA user_version", -1), store__schema_version);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM captures", -1), 2);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM ranks", -1), 2);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM pragma_foreign_key_check", -1),
            0);
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &id, &err), 0);
  CHECK_INT(id, 4); /* 3 was handed out once: never again */
  exec_sql(path,
           "UPDATE captures SET phase = 'a_phase_of_tomorrow' WHERE id = 4");
  /* Deleting a capture still removes its ranks. */
  CHECK_INT(store_capture_delete(st, 1, &err), 0);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM ranks", -1), 1);
  store_close(st);
  fx_db_remove(path);
}

static void store_refuses_newer_schema(void)
{
  char path[256];
  struct store *st = NULL;

  fx_db_path(path, sizeof(path));
  store_close(open_rw(path));
  exec_sql(path, "PRAGMA user_version = 99");
  tr_err_clear(&err);
  CHECK_INT(store_open(path, STORE_RW, &st, &err), TR_EDB);
  CHECK(st == NULL);
  CHECK(strstr(err.msg, "newer") != NULL);
  tr_err_clear(&err);
  CHECK_INT(store_open(path, STORE_RO, &st, &err), TR_EDB);
  /* The refused database was not touched. */
  CHECK_INT(fx_count(path, "PRAGMA user_version", -1), 99);
  fx_db_remove(path);
}

static void store_ro_needs_migrated_db(void)
{
  char path[256];
  struct store *st = NULL, *ro = NULL;
  int64_t id;

  fx_db_path(path, sizeof(path));
  exec_sql(path, "CREATE TABLE t(x)"); /* version 0 */
  tr_err_clear(&err);
  CHECK_INT(store_open(path, STORE_RO, &ro, &err), TR_EDB);
  st = open_rw(path);
  CHECK_INT(store_open(path, STORE_RO, &ro, &err), 0);
  tr_err_clear(&err);
  CHECK(store_capture_insert(ro, "capture", NULL, NULL, 0, &id, &err) < 0);
  store_close(ro);
  store_close(st);
  fx_db_remove(path);
}

static int64_t col_ns(const char *path, const char *col, int64_t id)
{
  char sql[128];

  snprintf(sql, sizeof(sql),
           "SELECT coalesce(%s, -1) FROM captures WHERE id = ?1", col);
  return fx_count(path, sql, id);
}

static const char *str_of(json_t *o, const char *key)
{
  return json_string_value(json_object_get(o, key));
}

static void check_queue_position(struct store *st, int64_t id, int pos)
{
  json_t *cap;

  CHECK_INT(store_capture_get(st, id, &cap, &err), 0);
  if (pos > 0)
    CHECK_INT(fx_int(cap, "queue_position"), pos);
  else
    CHECK(json_is_null(json_object_get(cap, "queue_position")));
  json_decref(cap);
}

/* Inserts a queued capture and two more; checks the new row. */
static void insert_three(struct store *st, const char *path, int64_t *id1,
                         int64_t *id2)
{
  char buf[40];
  int64_t t0, t1, id3;
  json_t *cap;

  t0 = tr_now_ns();
  CHECK_INT(store_capture_insert(st, "capture", "first", NULL, 0, id1, &err),
            0);
  t1 = tr_now_ns();
  CHECK(col_ns(path, "created_at", *id1) >= t0);
  CHECK(col_ns(path, "created_at", *id1) <= t1);
  CHECK_INT(col_ns(path, "phase_started_at", *id1),
            col_ns(path, "created_at", *id1));
  CHECK_INT(col_ns(path, "started_at", *id1), -1);
  CHECK_INT(store_capture_get(st, *id1, &cap, &err), 0);
  CHECK_STR(str_of(cap, "status"), "queued");
  CHECK_STR(str_of(cap, "phase"), "queued");
  CHECK_STR(str_of(cap, "kind"), "capture");
  tr_rfc3339(col_ns(path, "created_at", *id1), buf, sizeof(buf));
  CHECK_STR(str_of(cap, "created_at"), buf);
  CHECK(json_is_null(json_object_get(cap, "started_at")));
  CHECK(json_is_null(json_object_get(cap, "error")));
  CHECK_INT(fx_int(json_object_get(cap, "progress"), "ranks_expected"), 0);
  CHECK_INT(json_array_size(json_object_get(cap, "ranks")), 0);
  json_decref(cap);

  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, id2, &err), 0);
  CHECK_INT(store_capture_insert(st, "import", NULL, NULL, 0, &id3, &err), 0);
  check_queue_position(st, *id1, 1);
  check_queue_position(st, *id2, 2);
  check_queue_position(st, id3, 1); /* imports queue on their own */
}

static void store_capture_lifecycle(void)
{
  char path[256], buf[40];
  struct store *st;
  int64_t id1, id2, t0, t1, started, stamp;
  json_t *cap;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  insert_three(st, path, &id1, &id2);

  t0 = tr_now_ns();
  CHECK_INT(store_capture_set_phase(st, id1, "running", "stopping", &err), 0);
  t1 = tr_now_ns();
  started = col_ns(path, "started_at", id1);
  CHECK(started >= t0 && started <= t1);
  CHECK_INT(col_ns(path, "phase_started_at", id1), started);
  check_queue_position(st, id1, 0);
  check_queue_position(st, id2, 1);

  usleep(2000);
  CHECK_INT(store_capture_set_phase(st, id1, "running", "launching", &err), 0);
  stamp = col_ns(path, "phase_started_at", id1);
  CHECK(stamp > started);
  CHECK_INT(col_ns(path, "started_at", id1), started);
  CHECK_INT(col_ns(path, "finished_at", id1), -1);

  /* Failing in the same phase keeps that phase's start. */
  t0 = tr_now_ns();
  CHECK_INT(store_capture_set_phase(st, id1, "failed", "launching", &err), 0);
  CHECK_INT(col_ns(path, "phase_started_at", id1), stamp);
  CHECK(col_ns(path, "finished_at", id1) >= t0);
  CHECK_INT(store_capture_get(st, id1, &cap, &err), 0);
  CHECK_STR(str_of(cap, "status"), "failed");
  tr_rfc3339(col_ns(path, "finished_at", id1), buf, sizeof(buf));
  CHECK_STR(str_of(cap, "finished_at"), buf);
  json_decref(cap);

  CHECK_INT(store_capture_set_phase(st, id2, "bogus", "queued", &err),
            TR_EINVAL);
  CHECK_STR(err.field, "status");
  tr_err_clear(&err);
  CHECK_INT(store_capture_set_phase(st, id2, "running", "nap", &err),
            TR_EINVAL);
  CHECK_STR(err.field, "phase");
  tr_err_clear(&err);
  CHECK_INT(store_capture_set_phase(st, 9999, "running", "launching", &err),
            TR_ENOTFOUND);
  tr_err_clear(&err);
  CHECK_INT(store_capture_get(st, 9999, &cap, &err), TR_ENOTFOUND);
  tr_err_clear(&err);
  store_close(st);
  fx_db_remove(path);
}

static void store_capture_merge_members(void)
{
  char path[256];
  struct store *st;
  json_t *cap, *obj, *progress;
  int64_t id;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  CHECK_INT(store_capture_insert(st, "import", "m", NULL, 0, &id, &err), 0);
  obj = json_pack("{s:i}", "ranks_expected", 8);
  CHECK_INT(store_capture_merge(st, id, "progress", obj, &err), 0);
  json_decref(obj);
  obj = json_pack("{s:i}", "ranks_indexed", 3);
  CHECK_INT(store_capture_merge(st, id, "progress", obj, &err), 0);
  json_decref(obj);
  obj = json_pack("{s:s,s:i,s:s}", "trace_dir", "/t/1", "id", 999, "status",
                  "hacked");
  CHECK_INT(store_capture_merge(st, id, "extra", obj, &err), 0);
  json_decref(obj);
  obj = json_pack("{s:s,s:s}", "phase", "indexing", "message", "boom");
  CHECK_INT(store_capture_merge(st, id, "error", obj, &err), 0);
  json_decref(obj);
  obj = json_pack("{s:f}", "throughput", 12.5);
  CHECK_INT(store_capture_merge(st, id, "bench", obj, &err), 0);
  CHECK_INT(store_capture_merge(st, id, "params", obj, &err), TR_EINVAL);
  CHECK_STR(err.field, "column");
  tr_err_clear(&err);
  CHECK_INT(store_capture_merge(st, 4242, "bench", obj, &err), TR_ENOTFOUND);
  tr_err_clear(&err);
  json_decref(obj);

  CHECK_INT(store_capture_get(st, id, &cap, &err), 0);
  progress = json_object_get(cap, "progress");
  CHECK_INT(fx_int(progress, "ranks_expected"), 8);
  CHECK_INT(fx_int(progress, "ranks_indexed"), 3);
  CHECK_INT(fx_int(progress, "bytes_total"), 0);
  CHECK_STR(str_of(cap, "trace_dir"), "/t/1");
  CHECK_INT(fx_int(cap, "id"), id); /* columns win */
  CHECK_STR(str_of(cap, "status"), "queued");
  CHECK(json_object_get(cap, "extra") == NULL);
  CHECK_STR(str_of(json_object_get(cap, "error"), "message"), "boom");
  CHECK(json_real_value(json_object_get(json_object_get(cap, "bench"),
                                        "throughput")) == 12.5);
  json_decref(cap);
  store_close(st);
  fx_db_remove(path);
}

/* One state write is all or nothing: a claim of a capture that is no
 * longer queued writes none of its merges, and a final capture takes no
 * write at all. */
static void store_capture_apply_all_or_nothing(void)
{
  char path[256];
  struct store *st;
  json_t *cap, *merges;
  struct store_apply a = { true, TR_STATUS_RUNNING, TR_PHASE_STOPPING, NULL,
                           NULL };
  int64_t id;
  bool was_queued;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &id, &err), 0);
  merges = json_pack("{s:{s:s}}", "extra", "trace_dir", "/t/x");
  a.merges = merges;
  CHECK_INT(store_capture_cancel_queued(st, id, &was_queued, &err), 0);
  CHECK(was_queued);
  CHECK_INT(store_capture_apply(st, id, &a, &err), TR_ECONFLICT);
  CHECK_STR(err.field, "status");
  tr_err_clear(&err);
  a.claim = false;
  a.status = a.phase = -1; /* a plain merge is refused too */
  CHECK_INT(store_capture_apply(st, id, &a, &err), TR_ECONFLICT);
  tr_err_clear(&err);
  CHECK_INT(store_capture_get(st, id, &cap, &err), 0);
  CHECK_STR(str_of(cap, "status"), "cancelled");
  CHECK_STR(str_of(cap, "phase"), "queued");
  CHECK(json_object_get(cap, "trace_dir") == NULL);
  json_decref(cap);

  /* A claim of a queued one writes merges, status and phase together. */
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &id, &err), 0);
  a.claim = true;
  a.status = TR_STATUS_RUNNING;
  a.phase = TR_PHASE_STOPPING;
  CHECK_INT(store_capture_apply(st, id, &a, &err), 0);
  CHECK_INT(store_capture_get(st, id, &cap, &err), 0);
  CHECK_STR(str_of(cap, "status"), "running");
  CHECK_STR(str_of(cap, "phase"), "stopping");
  CHECK_STR(str_of(cap, "trace_dir"), "/t/x");
  json_decref(cap);
  CHECK_INT(store_capture_apply(st, id, &a, &err), TR_ECONFLICT);
  tr_err_clear(&err);
  a.phase = TR_NPHASE;
  CHECK_INT(store_capture_apply(st, id, &a, &err), TR_EINVAL);
  CHECK_STR(err.field, "phase");
  tr_err_clear(&err);
  json_decref(merges);
  store_close(st);
  fx_db_remove(path);
}

static void check_list(struct store *st, struct store_list_filter f,
                       const int64_t *want, size_t n)
{
  json_t *list;

  CHECK_INT(store_capture_list(st, &f, &list, &err), 0);
  CHECK_INT(json_array_size(list), n);
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(list, i);

    CHECK_INT(fx_int(c, "id"), want[i]);
    CHECK(json_object_get(c, "ranks") == NULL);
    CHECK(json_object_get(c, "queue_position") != NULL);
  }
  json_decref(list);
}

static void store_capture_list_filters(void)
{
  static const char *const models[] = { "m/A", "m/B", "m/A", "m/A", "m/B" };
  static const char *const kinds[] = { "capture", "capture", "import",
                                       "capture", "capture" };
  struct store_list_filter f = { 0 };
  char path[256];
  struct store *st;
  int64_t c[5], *ids;
  size_t n;
  json_t *list;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  for (size_t i = 0; i < 5; i++) {
    json_t *p = json_pack("{s:s}", "model", models[i]);

    CHECK_INT(store_capture_insert(st, kinds[i], NULL, p, 0, &c[i], &err), 0);
    json_decref(p);
  }
  CHECK_INT(store_capture_set_phase(st, c[0], "done", "done", &err), 0);
  check_list(st, f, (int64_t[]){ c[4], c[3], c[2], c[1], c[0] }, 5);
  f.status = "queued";
  check_list(st, f, (int64_t[]){ c[4], c[3], c[2], c[1] }, 4);
  f.status = NULL;
  f.model = "m/A";
  check_list(st, f, (int64_t[]){ c[3], c[2], c[0] }, 3);
  f.model = "m/A' OR '1'='1";
  check_list(st, f, NULL, 0);
  f.model = NULL;
  f.kind = "import";
  check_list(st, f, (int64_t[]){ c[2] }, 1);
  f.kind = NULL;
  f.before = c[3];
  check_list(st, f, (int64_t[]){ c[2], c[1], c[0] }, 3);
  f.before = 0;
  f.limit = 2;
  check_list(st, f, (int64_t[]){ c[4], c[3] }, 2);
  f.limit = 0;
  f.status = "bogus";
  CHECK_INT(store_capture_list(st, &f, &list, &err), TR_EINVAL);
  CHECK_STR(err.field, "status");
  tr_err_clear(&err);

  CHECK_INT(store_capture_ids(st, "queued", "capture", &ids, &n, &err), 0);
  CHECK_INT(n, 3);
  CHECK_INT(ids[0], c[1]);
  CHECK_INT(ids[1], c[3]);
  CHECK_INT(ids[2], c[4]);
  free(ids);
  store_close(st);
  fx_db_remove(path);
}

struct race {
  const char *path;
  const int64_t *ids;
  size_t n;
  int won[64];
};

static void *cancel_all(void *arg)
{
  struct race *r = arg;
  struct store *st = open_rw(r->path);
  struct tr_err e = { 0 };

  for (size_t i = 0; i < r->n; i++) {
    bool was = false;

    CHECK_INT(store_capture_cancel_queued(st, r->ids[i], &was, &e), 0);
    r->won[i] = was;
  }
  store_close(st);
  return NULL;
}

static void store_cancel_queued_atomic(void)
{
  char path[256];
  struct store *st;
  struct race r1 = { 0 }, r2 = { 0 };
  pthread_t t1, t2;
  int64_t ids[64], running;
  bool was;
  json_t *cap;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  for (size_t i = 0; i < 64; i++)
    CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &ids[i], &err),
              0);
  CHECK_INT(store_capture_cancel_queued(st, ids[0], &was, &err), 0);
  CHECK(was);
  CHECK_INT(store_capture_get(st, ids[0], &cap, &err), 0);
  CHECK_STR(str_of(cap, "status"), "cancelled");
  CHECK(json_is_string(json_object_get(cap, "finished_at")));
  CHECK(str_of(json_object_get(cap, "error"), "message") != NULL);
  json_decref(cap);
  CHECK_INT(store_capture_cancel_queued(st, ids[0], &was, &err), 0);
  CHECK(!was);
  /* The runner, losing the race, must not take the cancelled row back. */
  CHECK_INT(store_capture_set_phase(st, ids[0], "running", "stopping", &err),
            TR_ECONFLICT);
  CHECK_STR(err.field, "status");
  tr_err_clear(&err);
  CHECK_INT(store_capture_get(st, ids[0], &cap, &err), 0);
  CHECK_STR(str_of(cap, "status"), "cancelled");
  json_decref(cap);
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &running, &err),
            0);
  CHECK_INT(store_capture_set_phase(st, running, "running", "launching", &err),
            0);
  CHECK_INT(store_capture_cancel_queued(st, running, &was, &err), 0);
  CHECK(!was);
  CHECK_INT(col_ns(path, "finished_at", running), -1);
  CHECK_INT(store_capture_cancel_queued(st, 7777, &was, &err), TR_ENOTFOUND);
  tr_err_clear(&err);

  /* Two threads, two connections, the same 63 queued ids: each id is won
   * exactly once. */
  r1 = (struct race){ .path = path, .ids = ids + 1, .n = 63 };
  r2 = r1;
  CHECK_INT(pthread_create(&t1, NULL, cancel_all, &r1), 0);
  CHECK_INT(pthread_create(&t2, NULL, cancel_all, &r2), 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  for (size_t i = 0; i < 63; i++)
    CHECK_INT(r1.won[i] + r2.won[i], 1);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM captures WHERE"
                     " status = 'cancelled'",
                     -1),
            64);
  store_close(st);
  fx_db_remove(path);
}

static const struct fx_kernel dk[] = {
  { "gemm_a", "gemm", 10, 1000, 50, 200, 100 },
  { "attn_b", "attention", 5, 700, 100, 200, 140 }
};
static const struct fx_step ds[] = { { "decode", 10, 500 } };
static const struct fx_rank dr[] = { { dk, 2, ds, 1, 40, 3 },
                                     { dk, 1, ds, 1, 50, 4 } };

static void store_delete_cascades(void)
{
  static const char *const tables[] = { "kernels", "launches", "categories",
                                        "memcpy",  "runtime",  "steps",
                                        "phases" };
  char path[256], sql[256];
  struct store *st;
  int64_t victim, other, keep[7];
  json_t *cap;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  victim = fx_capture(st, "m", 2, dr, 2);
  other = fx_capture(st, "m", 2, dr, 1);
  for (size_t i = 0; i < 7; i++) {
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM %s t JOIN ranks r ON r.id = t.rank_id"
             " WHERE r.capture_id = ?1",
             tables[i]);
    CHECK(fx_count(path, sql, victim) > 0);
    keep[i] = fx_count(path, sql, other);
    CHECK(keep[i] > 0);
  }
  CHECK_INT(store_capture_delete(st, victim, &err), 0);
  CHECK_INT(store_capture_get(st, victim, &cap, &err), TR_ENOTFOUND);
  tr_err_clear(&err);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM ranks WHERE"
                     " capture_id = ?1",
                     victim),
            0);
  for (size_t i = 0; i < 7; i++) {
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i]);
    CHECK_INT(fx_count(path, sql, -1), keep[i]);
  }
  CHECK_INT(store_capture_delete(st, victim, &err), TR_ENOTFOUND);
  tr_err_clear(&err);
  store_close(st);
  fx_db_remove(path);
}

/* A store__fill_fn keeping the rows whose j is even. */
static int fill_even(sqlite3_stmt *s, void *elem, void *ud)
{
  int64_t j = sqlite3_column_int64(s, 0);

  (void)ud;
  *(int64_t *)elem = j;
  return j % 2 == 0;
}

/* store__prep()/store__run() bind each conversion's type at its place;
 * store__step() and store__collect() read them back as SQLite stored
 * them. */
static void store_binds_by_conversion(void)
{
  char path[256];
  struct store *st;
  sqlite3_stmt *s;
  int64_t *v = NULL;
  void *got = NULL;
  size_t n = 9;

  fx_db_path(path, sizeof(path));
  st = open_rw(path);
  CHECK_INT(store__run(st, "t", "CREATE TABLE t(i, j, d, s)", &err, ""), 0);
  CHECK_INT(store__run(st, "t", "INSERT INTO t VALUES(?1, ?2, ?3, ?4)", &err,
                       "%d%ld%f%s", -7, INT64_MAX, 2.5, "x"),
            0);
  CHECK_INT(store__run(st, "t", "INSERT INTO t VALUES(?1, ?2, ?3, ?4)", &err,
                       "%d%ld", 1, (int64_t)4),
            0); /* ?3 and ?4 unbound: null */
  CHECK_INT(store__run(st, "t", "INSERT INTO t(s) VALUES(?1)", &err, "%s",
                       (const char *)NULL),
            0);
  CHECK_INT(store__prep(st,
                        "SELECT typeof(i), typeof(j), typeof(d), typeof(s),"
                        " i, j, d, s FROM t WHERE j = ?1",
                        &s, &err, "%ld", INT64_MAX),
            0);
  CHECK_INT(store__step(st, s, "t", &err), 1);
  CHECK_STR((const char *)sqlite3_column_text(s, 0), "integer");
  CHECK_STR((const char *)sqlite3_column_text(s, 1), "integer");
  CHECK_STR((const char *)sqlite3_column_text(s, 2), "real");
  CHECK_STR((const char *)sqlite3_column_text(s, 3), "text");
  CHECK_INT(sqlite3_column_int64(s, 4), -7);
  CHECK(sqlite3_column_int64(s, 5) == INT64_MAX);
  CHECK(sqlite3_column_double(s, 6) == 2.5);
  CHECK_STR((const char *)sqlite3_column_text(s, 7), "x");
  CHECK_INT(store__step(st, s, "t", &err), 0);
  store__done(s);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM t WHERE s IS NULL", -1), 2);
  /* A conversion it does not bind, text that is none, or more
   * conversions than parameters: TR_EDB, and the statement taken again
   * works. */
  CHECK_INT(store__run(st, "t", "INSERT INTO t(i) VALUES(?1)", &err, "%x", 1u),
            TR_EDB);
  tr_err_clear(&err);
  CHECK_INT(store__run(st, "t", "INSERT INTO t(i) VALUES(?1)", &err, "x"),
            TR_EDB);
  tr_err_clear(&err);
  CHECK_INT(
      store__run(st, "t", "INSERT INTO t(i) VALUES(?1)", &err, "%d%d", 1, 2),
      TR_EDB);
  tr_err_clear(&err);
  /* Past a '|', only the parameters the statement has: ?1 here. */
  CHECK_INT(store__run(st, "t", "INSERT INTO t(i) VALUES(?1)", &err, "%d|%d%s",
                       5, 6, "unread"),
            0);
  CHECK_INT(store__run(st, "t", "INSERT INTO t(i, j) VALUES(?1, ?2)", &err,
                       "|%d%ld", 8, (int64_t)9),
            0);
  CHECK_INT(
      fx_count(path, "SELECT count(*) FROM t WHERE i = 5 AND j IS NULL", -1),
      1);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM t WHERE i = 8 AND j = 9", -1),
            1);
  CHECK_INT(store__prep(st, "SELECT j FROM t WHERE j IS NOT NULL ORDER BY j",
                        &s, &err, ""),
            0);
  CHECK_INT(store__collect(st, s, sizeof(int64_t), fill_even, NULL, "t", &got,
                           &n, &err),
            0);
  v = got;
  CHECK_INT(n, 1); /* 4 kept; 9 and INT64_MAX are odd */
  CHECK_INT(v[0], 4);
  free(v);
  store_close(st);
  fx_db_remove(path);
}

int main(void)
{
  RUN(store_binds_by_conversion);
  RUN(store_files_private);
  RUN(store_sum_saturates);
  RUN(store_migrates_empty_file);
  RUN(store_migrates_v1_keeping_rows);
  RUN(store_schema_has_every_field);
  RUN(store_refuses_newer_schema);
  RUN(store_ro_needs_migrated_db);
  RUN(store_capture_lifecycle);
  RUN(store_capture_merge_members);
  RUN(store_capture_apply_all_or_nothing);
  RUN(store_capture_list_filters);
  RUN(store_cancel_queued_atomic);
  RUN(store_delete_cascades);
  return 0;
}
