/*
 * Sweeps (docs/SWEEPS.md): the parent record, its points (queued
 * captures tied to it by sweep_points), the sweep object, listing, cancel
 * and delete, and the status a sweep settles to in the transaction that
 * makes one of its points final.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lifecycle.h"
#include "common/reals.h"
#include "store/store_int.h"

/* The columns of the sweep object (timestamps turned to RFC 3339 by
 * finish_sweep()); the points' statuses counted. */
#define SWEEP_SELECT                                                           \
  "SELECT s.id, s.label, s.params AS params_json, s.status, s.created_at,"     \
  " s.started_at, s.finished_at, s.error AS error_json,"                       \
  " (SELECT count(*) FROM sweep_points p WHERE p.sweep_id = s.id)"             \
  "  AS points_total,"                                                         \
  " (SELECT count(*) FROM sweep_points p JOIN captures c"                      \
  "  ON c.id = p.capture_id WHERE p.sweep_id = s.id AND c.status = 'done')"    \
  "  AS points_done"                                                           \
  " FROM sweeps s "

/* A point of the sweep object: where it stands and the bench's figures. */
/* clang-format off */
#define BENCH_COL(key) ", json_extract(c.bench, '$." #key "') AS " #key
#define POINTS_SELECT                                                          \
  "SELECT p.point, p.capture_id AS capture, p.conc, p.isl, p.osl,"             \
  " c.status, c.phase, json_extract(c.error, '$.message') AS error"            \
  STORE__SWEEP_BENCH(BENCH_COL)                                                \
  " FROM sweep_points p JOIN captures c ON c.id = p.capture_id WHERE "
/* clang-format on */

static int no_sweep(struct store *st, int64_t id, struct tr_err *err)
{
  (void)st;
  return tr_err_set(err, TR_ENOTFOUND, "sweep", "no sweep %lld", (long long)id);
}

/* ---- insert ---- */

static int insert_sweep(struct store *st, const char *label, json_t *params,
                        int64_t *id, struct tr_err *err)
{
  char *text = tr_json_dumps(params, JSON_COMPACT);
  int rc = text != NULL ? store__run(st, "write",
                                     "INSERT INTO sweeps(label, params,"
                                     " status, created_at)"
                                     " VALUES(?1, ?2, 'queued', ?3)",
                                     err, "%s%s%ld", label, text, tr_now_ns())
                        : tr_err_set(err, TR_ENOMEM, "params", "params");

  if (rc == 0)
    *id = sqlite3_last_insert_rowid(st->db);
  free(text);
  return rc;
}

/* The integer member key of a point's params (0 when absent). */
static int64_t param_int(json_t *params, const char *key)
{
  return json_integer_value(json_object_get(params, key));
}

static int insert_point(struct store *st, int64_t sweep, int point,
                        const char *label, json_t *params, struct tr_err *err)
{
  int64_t capture;
  int rc = store__capture_row(st, tr_kind_names[TR_KIND_CAPTURE], label, params,
                              &capture, err);

  if (rc == 0)
    rc = store__run(st, "write",
                    "INSERT INTO sweep_points(capture_id, sweep_id, point,"
                    " conc, isl, osl) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                    err, "%ld%ld%d%ld%ld%ld", capture, sweep, point,
                    param_int(params, "conc"), param_int(params, "isl"),
                    param_int(params, "osl"));
  return rc;
}

int store_sweep_insert(struct store *st, const char *label, json_t *params,
                       json_t *points, int max_queued, int64_t *id,
                       struct tr_err *err)
{
  int64_t sweep = 0;
  size_t i;
  json_t *p;
  int rc;

  if (!json_is_array(points) || json_array_size(points) == 0)
    return tr_err_set(err, TR_EINVAL, "points", "a sweep needs points");
  rc = store__wr_begin(st, err);
  if (rc < 0)
    return rc;
  rc = store__check_queue(st, max_queued, (int)json_array_size(points), err);
  if (rc == 0)
    rc = insert_sweep(st, label, params, &sweep, err);
  json_array_foreach(points, i, p) {
    if (rc == 0)
      rc = insert_point(st, sweep, (int)i, label, p, err);
  }
  rc = store__wr_end(st, rc, err);
  if (rc == 0)
    *id = sweep;
  return rc;
}

/* ---- the sweep object ---- */

int store_sweep_points(struct store *st, int64_t id, json_t **out,
                       struct tr_err *err)
{
  return store__rows_id(st, POINTS_SELECT "p.sweep_id = ?1 ORDER BY p.point",
                        id, 0, out, err);
}

int store_sweep_points_of(struct store *st, json_t *ids, json_t **out,
                          struct tr_err *err)
{
  char *text = json_dumps(ids, JSON_COMPACT);
  sqlite3_stmt *s;
  int rc = text != NULL
               ? store__prep(st,
                             POINTS_SELECT "p.capture_id IN (SELECT value"
                                           " FROM json_each(?1))"
                                           " ORDER BY p.point",
                             &s, err, "%s", text)
               : tr_err_set(err, TR_ENOMEM, "", "out of memory");

  *out = NULL;
  if (rc == 0)
    rc = store__rows(st, s, out, err);
  free(text);
  return rc;
}

int store_sweep_get(struct store *st, int64_t id, json_t **out,
                    struct tr_err *err)
{
  static const struct store__record sweep = { SWEEP_SELECT "WHERE s.id = ?1",
                                              "points", store_sweep_points,
                                              store__stamps, no_sweep };

  return store__record_get(st, &sweep, id, out, err);
}

int store_sweep_list(struct store *st, const struct store_list_filter *f,
                     json_t **out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = 0;

  if (f->status != NULL && tr_status_parse(f->status) < 0)
    rc = tr_err_set(err, TR_EINVAL, "status", "status: unknown value");
  if (rc == 0)
    rc = store__prep(st,
                     SWEEP_SELECT "WHERE (?1 IS NULL OR s.status = ?1)"
                                  " AND (?2 = 0 OR s.id < ?2)"
                                  " ORDER BY s.id DESC LIMIT ?3",
                     &s, err, "%s%ld%d", f->status, f->before,
                     f->limit > 0 ? f->limit : 50);
  if (rc < 0)
    return rc;
  return store__page(st, s, f->max_bytes, store__stamps, out, err);
}

/* ---- settling, inside a capture's write ---- */

/* The sweep of capture id and the point it is (0 and -1: none). */
static int sweep_of(struct store *st, int64_t id, int64_t *sweep, int *point,
                    struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__first(st,
                        "SELECT sweep_id, point FROM sweep_points"
                        " WHERE capture_id = ?1",
                        id, 0, "sweep", &s, err);

  *sweep = 0;
  *point = -1;
  if (rc == 1) {
    *sweep = sqlite3_column_int64(s, 0);
    *point = sqlite3_column_int(s, 1);
  }
  store__done(s);
  return rc < 0 ? rc : 0;
}

/* Runs sql with ?1 = sweep, ?2 = now, and where sql has them ?3 = text
 * (may be NULL) and ?4 = point. */
static int sweep_write(struct store *st, const char *sql, int64_t sweep,
                       const char *text, int point, struct tr_err *err)
{
  return store__run(st, "write", sql, err, "%ld%ld|%s%d", sweep, tr_now_ns(),
                    text, point);
}

/* Its queued points cancelled, with why. */
static int cancel_points(struct store *st, int64_t sweep, const char *why,
                         struct tr_err *err)
{
  return sweep_write(st,
                     "UPDATE captures SET status = 'cancelled',"
                     " finished_at = ?2, error = json_object('phase', phase,"
                     " 'message', ?3, 'log_tail', NULL)"
                     " WHERE status = 'queued' AND id IN (SELECT capture_id"
                     " FROM sweep_points WHERE sweep_id = ?1)",
                     sweep, why, 0, err);
}

int store__sweep_claim(struct store *st, int64_t capture, struct tr_err *err)
{
  int64_t sweep;
  int point, rc = sweep_of(st, capture, &sweep, &point, err);

  if (rc != 0 || sweep == 0)
    return rc;
  return sweep_write(st,
                     "UPDATE sweeps SET status = 'running', started_at ="
                     " coalesce(started_at, ?2) WHERE id = ?1"
                     " AND status = 'queued'",
                     sweep, NULL, 0, err);
}

/* The server died under point: the sweep ends, failed; its queued points
 * are cancelled. */
static int end_sweep(struct store *st, int64_t sweep, int point,
                     const char *why, struct tr_err *err)
{
  char msg[1200];
  int rc;

  snprintf(msg, sizeof(msg), "the sweep ended at point %d: %s", point, why);
  rc = cancel_points(st, sweep, msg, err);
  if (rc == 0)
    rc = sweep_write(st,
                     "UPDATE sweeps SET status = 'failed', finished_at = ?2,"
                     " error = json_object('message', ?3, 'point', ?4)"
                     " WHERE id = ?1 AND status NOT IN " STORE__FINAL,
                     sweep, msg, point, err);
  return rc;
}

int store__sweep_settle(struct store *st, int64_t capture, const char *ends,
                        struct tr_err *err)
{
  int64_t sweep;
  int point, rc = sweep_of(st, capture, &sweep, &point, err);

  if (rc != 0 || sweep == 0)
    return rc;
  if (ends != NULL)
    rc = end_sweep(st, sweep, point, ends, err);
  /* Once no point waits or runs: done with a point done, else failed. */
  if (rc == 0)
    rc = sweep_write(
        st,
        "UPDATE sweeps SET finished_at = ?2, status = CASE WHEN EXISTS"
        " (SELECT 1 FROM sweep_points p JOIN captures c ON c.id ="
        " p.capture_id WHERE p.sweep_id = ?1 AND c.status = 'done')"
        " THEN 'done' ELSE 'failed' END"
        " WHERE id = ?1 AND status NOT IN " STORE__FINAL " AND NOT EXISTS"
        " (SELECT 1 FROM sweep_points p JOIN captures c ON c.id ="
        " p.capture_id WHERE p.sweep_id = ?1"
        " AND c.status IN ('queued', 'running'))",
        sweep, NULL, 0, err);
  return rc;
}

/* ---- cancel and delete ---- */

/* The sweep's status, inside the caller's transaction. */
static int sweep_status(struct store *st, int64_t id, int *status,
                        struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__first(st, "SELECT status FROM sweeps WHERE id = ?1", id, 0,
                        "sweep", &s, err);

  if (rc == 1)
    *status = tr_status_parse((const char *)sqlite3_column_text(s, 0));
  store__done(s);
  return rc == 1 ? 0 : rc == 0 ? no_sweep(st, id, err) : rc;
}

/* The ids of its points (with status running: only those). */
static int point_ids(struct store *st, int64_t sweep, bool running,
                     int64_t **ids, size_t *n, struct tr_err *err)
{
  sqlite3_stmt *s;
  int64_t *v = NULL;
  size_t len = 0;
  int rc = store__stmt_id(st,
                          "SELECT p.capture_id FROM sweep_points p JOIN"
                          " captures c ON c.id = p.capture_id"
                          " WHERE p.sweep_id = ?1 AND (?2 = 0 OR"
                          " c.status = 'running') ORDER BY p.point",
                          sweep, running, &s, err);

  while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    int64_t *grown = realloc(v, (len + 1) * sizeof(*v));

    rc = 0;
    if (grown == NULL) {
      rc = tr_err_set(err, TR_ENOMEM, "", "out of memory");
      break;
    }
    v = grown;
    v[len++] = sqlite3_column_int64(s, 0);
  }
  if (rc == SQLITE_DONE)
    rc = 0;
  else if (rc > 0)
    rc = store__db_err(st, "sweep points", err);
  store__done(s);
  if (rc != 0) {
    free(v);
    return rc;
  }
  *ids = v;
  *n = len;
  return 0;
}

static int cancel_sweep(struct store *st, int64_t id, struct tr_err *err)
{
  int rc = cancel_points(st, id, "the sweep was cancelled", err);

  if (rc == 0)
    rc = sweep_write(st,
                     "UPDATE sweeps SET status = 'cancelled',"
                     " finished_at = ?2, error = json_object('message',"
                     " 'cancelled by request', 'point', NULL) WHERE id = ?1",
                     id, NULL, 0, err);
  return rc;
}

static int delete_sweep(struct store *st, int64_t id, const int64_t *ids,
                        size_t n, struct tr_err *err)
{
  int rc = 0;

  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = store__run(st, "write", "DELETE FROM captures WHERE id = ?1", err,
                    "%ld", ids[i]);
  if (rc == 0)
    rc = store__run(st, "write", "DELETE FROM sweeps WHERE id = ?1", err, "%ld",
                    id);
  return rc;
}

int store_sweep_end(struct store *st, int64_t id, struct store_sweep_end *out,
                    struct tr_err *err)
{
  int status = -1;
  int rc = store__wr_begin(st, err);

  memset(out, 0, sizeof(*out));
  if (rc < 0)
    return rc;
  rc = sweep_status(st, id, &status, err);
  if (rc == 0)
    rc = point_ids(st, id, !tr_status_final(status), &out->ids, &out->n, err);
  if (rc == 0 && tr_status_final(status))
    rc = delete_sweep(st, id, out->ids, out->n, err);
  else if (rc == 0)
    rc = cancel_sweep(st, id, err);
  rc = store__wr_end(st, rc, err);
  if (rc != 0) {
    free(out->ids);
    memset(out, 0, sizeof(*out));
    return rc;
  }
  out->deleted = tr_status_final(status);
  return 0;
}
