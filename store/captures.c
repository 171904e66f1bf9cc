/*
 * Capture rows: insert, phase moves, JSON merges, the capture object of
 * docs/API.md, listing, cancel and delete, and /metrics counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "common/lifecycle.h"
#include "store/store_int.h"

static const char *const json_columns[] = { "progress", "bench", "extra",
                                            "error", NULL };

/* What the dashboard reads before the runner reports anything. */
static const char initial_progress[] =
    "{\"ranks_expected\":0,\"ranks_exported\":0,\"orphan_json\":0,"
    "\"ranks_indexed\":0,\"bytes_indexed\":0,\"bytes_total\":0,"
    "\"export_polls\":0}";

/* The capture object's columns; queue_position is the FIFO place among
 * queued captures of the same kind (the runner takes them oldest first). */
#define CAPTURE_SELECT                                                         \
  "SELECT c.id, c.kind, c.label, c.params AS params_json, c.status,"           \
  " c.phase, c.created_at, c.started_at, c.finished_at,"                       \
  " c.phase_started_at,"                                                       \
  " CASE WHEN c.status = 'queued' THEN (SELECT count(*) FROM captures q"       \
  "  WHERE q.status = 'queued' AND q.kind = c.kind AND q.id <= c.id)"          \
  " END AS queue_position,"                                                    \
  " c.progress AS progress_json, c.error AS error_json,"                       \
  " c.bench AS bench_json, c.extra AS extra_json,"                             \
  " cr.collectives AS collectives_json,"                                       \
  " CASE WHEN cr.verdict_code IS NOT NULL THEN json_object('verdict',"         \
  "  cr.verdict_code, 'baseline', cr.baseline_id) END AS verdict_json,"        \
  " CASE WHEN sp.sweep_id IS NOT NULL THEN json_object('id', sp.sweep_id,"     \
  "  'point', sp.point, 'conc', sp.conc, 'conc_max', (SELECT max(q.conc)"      \
  "  FROM sweep_points q WHERE q.sweep_id = sp.sweep_id)) END AS sweep_json"   \
  " FROM captures c LEFT JOIN capture_results cr ON cr.capture_id = c.id"      \
  " LEFT JOIN sweep_points sp ON sp.capture_id = c.id "

/* A status filter: NULL (any) or a status of the vocabulary. */
static int check_status(const char *status, struct tr_err *err)
{
  if (status != NULL && tr_status_parse(status) < 0)
    return tr_err_set(err, TR_EINVAL, "status", "status: unknown value");
  return 0;
}

int store__check_queue(struct store *st, int max_queued, int adding,
                       struct tr_err *err)
{
  sqlite3_stmt *s;
  int64_t queued = 0;
  int rc;

  if (max_queued <= 0)
    return 0;
  rc = store__stmt(st, "SELECT count(*) FROM captures WHERE status = 'queued'",
                   &s, err);
  if (rc < 0)
    return rc;
  if (sqlite3_step(s) == SQLITE_ROW)
    queued = sqlite3_column_int64(s, 0);
  else
    rc = store__db_err(st, "queue", err);
  store__done(s);
  if (rc == 0 && queued + adding > max_queued)
    rc = tr_err_set(err, TR_EBUSY, "queue",
                    "%lld captures and imports are queued already, and %d "
                    "more would pass max_queued (%d): retry when some have "
                    "run, or cancel some",
                    (long long)queued, adding, max_queued);
  return rc;
}

int store__capture_row(struct store *st, const char *kind, const char *label,
                       json_t *params, int64_t *id, struct tr_err *err)
{
  char *text = params ? tr_json_dumps(params, JSON_COMPACT) : strdup("{}");
  int rc = store__check_enum(kind, tr_kind_names, "kind", err);

  if (text == NULL)
    return tr_err_set(err, TR_ENOMEM, "params", "params");
  if (rc == 0)
    rc = store__run(st, "write",
                    "INSERT INTO captures(kind, label, params, status,"
                    " phase, created_at, phase_started_at, progress)"
                    " VALUES(?1, ?2, ?3, 'queued', 'queued', ?4, ?4, ?5)",
                    err, "%s%s%s%ld%s", kind, label, text, tr_now_ns(),
                    initial_progress);
  if (rc == 0)
    *id = sqlite3_last_insert_rowid(st->db);
  free(text);
  return rc;
}

int store_capture_insert(struct store *st, const char *kind, const char *label,
                         json_t *params, int max_queued, int64_t *id,
                         struct tr_err *err)
{
  int rc;

  if (kind == NULL)
    return tr_err_set(err, TR_EINVAL, "kind", "kind missing");
  rc = store__check_enum(kind, tr_kind_names, "kind", err);
  if (rc == 0)
    rc = store__wr_begin(st, err);
  if (rc < 0)
    return rc;
  rc = store__check_queue(st, max_queued, 1, err);
  if (rc == 0)
    rc = store__capture_row(st, kind, label, params, id, err);
  return store__wr_end(st, rc, err);
}

static int changed_or_missing(struct store *st, int64_t id, int rc,
                              struct tr_err *err)
{
  if (rc == 0 && sqlite3_changes(st->db) == 0)
    rc = store__no_capture(st, id, err);
  return rc;
}

/* The status of capture id, inside the caller's transaction. */
static int read_status(struct store *st, int64_t id, int *status,
                       struct tr_err *err)
{
  char name[16];
  int rc = store__capture_exists(st, id, name, err);

  if (rc == 0)
    *status = tr_status_parse(name);
  return rc;
}

/* Moves the row to status/phase (either may be -1: kept), stamping
 * phase_started_at when the phase changes, started_at on the first move
 * to running, finished_at on the first final status. SET expressions see
 * the old row. */
static int write_phase(struct store *st, int64_t id, int status, int phase,
                       bool final, struct tr_err *err)
{
  int rc = store__run(
      st, "write",
      "UPDATE captures SET status = coalesce(?2, status),"
      " phase = coalesce(?3, phase),"
      " phase_started_at = CASE WHEN ?3 IS NULL OR (phase = ?3 AND"
      "  phase_started_at IS NOT NULL) THEN phase_started_at ELSE ?4 END,"
      " started_at = CASE WHEN ?2 = 'running' AND started_at IS NULL"
      "  THEN ?4 ELSE started_at END,"
      " finished_at = CASE WHEN ?5 AND finished_at IS NULL THEN ?4"
      "  ELSE finished_at END"
      " WHERE id = ?1",
      err, "%ld%s%s%ld%d", id, status >= 0 ? tr_status_name(status) : NULL,
      phase >= 0 ? tr_phase_name(phase) : NULL, tr_now_ns(), final);

  return changed_or_missing(st, id, rc, err);
}

static int read_json_column(struct store *st, int64_t id, const char *column,
                            json_t **out, struct tr_err *err);
static int write_json_column(struct store *st, int64_t id, const char *column,
                             json_t *v, struct tr_err *err);

/* Merges obj's members into column, inside the caller's transaction. */
static int merge_column(struct store *st, int64_t id, const char *column,
                        json_t *obj, struct tr_err *err)
{
  json_t *cur = NULL; /* the column's object, members replaced by obj's */
  int rc = store__check_enum(column, json_columns, "column", err);

  if (rc == 0 && !json_is_object(obj))
    rc = tr_err_set(err, TR_EINVAL, column, "%s: not an object", column);
  if (rc == 0)
    rc = read_json_column(st, id, column, &cur, err);
  if (rc == 0 && json_object_update(cur, obj) < 0)
    rc = tr_err_set(err, TR_ENOMEM, column, "%s", column);
  if (rc == 0)
    rc = write_json_column(st, id, column, cur, err);
  json_decref(cur);
  return rc;
}

static int check_apply(const struct store_apply *a, struct tr_err *err)
{
  if (a->status >= TR_NSTATUS || a->status < -1)
    return tr_err_set(err, TR_EINVAL, "status", "status: unknown value");
  if (a->phase >= TR_NPHASE || a->phase < -1)
    return tr_err_set(err, TR_EINVAL, "phase", "phase: unknown value");
  if (a->merges != NULL && !json_is_object(a->merges))
    return tr_err_set(err, TR_EINVAL, "merges", "merges: not an object");
  return 0;
}

int store_capture_apply(struct store *st, int64_t id,
                        const struct store_apply *a, struct tr_err *err)
{
  const char *column;
  json_t *obj;
  int now = -1;
  int rc = check_apply(a, err);

  if (rc == 0)
    rc = store__wr_begin(st, err);
  if (rc < 0)
    return rc;
  rc = read_status(st, id, &now, err);
  /* A final status is never left, and a final capture never changes (its
   * answers are cached); a claim holds only while the row is queued (the
   * API cancels queued captures in the store itself). */
  if (rc == 0 && tr_status_final(now))
    rc = tr_err_set(err, TR_ECONFLICT, "status", "capture %lld is already %s",
                    (long long)id, tr_status_name(now));
  if (rc == 0 && a->claim && now != TR_STATUS_QUEUED)
    rc = tr_err_set(err, TR_ECONFLICT, "status",
                    "capture %lld is no longer queued", (long long)id);
  json_object_foreach(a->merges, column, obj) {
    if (rc == 0)
      rc = merge_column(st, id, column, obj, err);
  }
  if (rc == 0 && (a->status >= 0 || a->phase >= 0))
    rc = write_phase(st, id, a->status, a->phase,
                     a->status >= 0 && tr_status_final(a->status), err);
  /* A sweep's status moves with its points (docs/SWEEPS.md), in the same
   * transaction. */
  if (rc == 0 && a->claim)
    rc = store__sweep_claim(st, id, err);
  if (rc == 0 && a->status >= 0 && tr_status_final(a->status))
    rc = store__sweep_settle(st, id, a->sweep_ends, err);
  return store__wr_end(st, rc, err);
}

int store_capture_set_phase(struct store *st, int64_t id, const char *status,
                            const char *phase, struct tr_err *err)
{
  struct store_apply a = { false, tr_status_parse(status),
                           tr_phase_parse(phase), NULL, NULL };

  if (a.status < 0)
    return tr_err_set(err, TR_EINVAL, "status", "status: unknown value");
  if (a.phase < 0)
    return tr_err_set(err, TR_EINVAL, "phase", "phase: unknown value");
  return store_capture_apply(st, id, &a, err);
}

/* Reads column (one of json_columns) of capture id as an object. */
static int read_json_column(struct store *st, int64_t id, const char *column,
                            json_t **out, struct tr_err *err)
{
  char sql[96];
  sqlite3_stmt *s;
  json_t *v;
  int rc;

  snprintf(sql, sizeof(sql), "SELECT %s FROM captures WHERE id = ?1", column);
  rc = store__stmt_id(st, sql, id, 0, &s, err);
  if (rc < 0)
    return rc;
  rc = store__step_capture(st, s, id, err);
  if (rc == 0) {
    v = store__col_json(s, 0);
    *out = json_is_object(v) ? json_incref(v) : json_object();
    json_decref(v);
  }
  store__done(s);
  return rc;
}

static int write_json_column(struct store *st, int64_t id, const char *column,
                             json_t *v, struct tr_err *err)
{
  char sql[96];
  char *text = tr_json_dumps(v, JSON_COMPACT);
  int rc;

  if (text == NULL)
    return tr_err_set(err, TR_ENOMEM, column, "%s", column);
  snprintf(sql, sizeof(sql), "UPDATE captures SET %s = ?2 WHERE id = ?1",
           column);
  rc = store__run(st, "write", sql, err, "%ld%s", id, text);
  free(text);
  return rc;
}

int store_capture_merge(struct store *st, int64_t id, const char *column,
                        json_t *obj, struct tr_err *err)
{
  json_t *merges = json_object();
  struct store_apply a = { false, -1, -1, merges, NULL };
  int rc;

  if (column == NULL) {
    json_decref(merges);
    return tr_err_set(err, TR_EINVAL, "column", "column missing");
  }
  json_object_set(merges, column, obj);
  rc = store_capture_apply(st, id, &a, err);
  json_decref(merges);
  return rc;
}

/* Turns the generic row of CAPTURE_SELECT into the capture object:
 * timestamps to RFC 3339, extra's members lifted to the top level (the
 * columns win over an extra member of the same name). */
static void finish_capture(json_t *obj)
{
  json_t *extra = json_incref(json_object_get(obj, "extra"));
  const char *key;
  json_t *v;

  store__stamps(obj);
  json_object_del(obj, "extra");
  json_object_foreach(extra, key, v) {
    if (json_object_get(obj, key) == NULL)
      json_object_set(obj, key, v);
  }
  json_decref(extra);
}

int store_capture_get(struct store *st, int64_t id, json_t **out,
                      struct tr_err *err)
{
  static const struct store__record capture = {
    CAPTURE_SELECT "WHERE c.id = ?1", "ranks", store__capture_ranks,
    finish_capture, store__no_capture
  };

  return store__record_get(st, &capture, id, out, err);
}

int store_capture_list(struct store *st, const struct store_list_filter *f,
                       json_t **out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = check_status(f->status, err);

  if (rc == 0)
    rc = store__check_enum(f->kind, tr_kind_names, "kind", err);
  if (rc == 0 && (f->limit < 0 || f->before < 0))
    rc = tr_err_set(err, TR_EINVAL, f->limit < 0 ? "limit" : "before",
                    "must not be negative");
  if (rc == 0)
    rc = store__prep(st,
                     CAPTURE_SELECT "WHERE (?1 IS NULL OR c.status = ?1)"
                                    " AND (?2 IS NULL OR"
                                    "  json_extract(c.params, '$.model') = ?2)"
                                    " AND (?3 IS NULL OR c.kind = ?3)"
                                    " AND (?4 = 0 OR c.id < ?4)"
                                    " ORDER BY c.id DESC LIMIT ?5",
                     &s, err, "%s%s%s%ld%d", f->status, f->model, f->kind,
                     f->before, f->limit > 0 ? f->limit : 50);
  if (rc < 0)
    return rc;
  return store__page(st, s, f->max_bytes, finish_capture, out, err);
}

/* A store__fill_fn: the row's id. */
static int fill_id(sqlite3_stmt *s, void *elem, void *ud)
{
  (void)ud;
  *(int64_t *)elem = sqlite3_column_int64(s, 0);
  return 1;
}

int store_capture_ids(struct store *st, const char *status, const char *kind,
                      int64_t **ids, size_t *n, struct tr_err *err)
{
  void *v = NULL;
  sqlite3_stmt *s;
  int rc = check_status(status, err);

  if (rc == 0)
    rc = store__check_enum(kind, tr_kind_names, "kind", err);
  if (rc == 0)
    rc = store__prep(st,
                     "SELECT id FROM captures WHERE (?1 IS NULL OR"
                     " status = ?1) AND (?2 IS NULL OR kind = ?2)"
                     " ORDER BY id",
                     &s, err, "%s%s", status, kind);
  if (rc == 0)
    rc = store__collect(st, s, sizeof(**ids), fill_id, NULL, "ids", &v, n, err);
  if (rc < 0)
    free(v);
  else
    *ids = v;
  return rc;
}

/* Deletes the row (its ranks and tables go with it). Inside the caller's
 * write transaction. */
static int delete_row(struct store *st, int64_t id, struct tr_err *err)
{
  int rc = store__run(st, "write", "DELETE FROM captures WHERE id = ?1", err,
                      "%ld", id);

  return changed_or_missing(st, id, rc, err);
}

/* Marks the row cancelled if it is still queued; *changed says whether it
 * was. Inside the caller's write transaction. The status test is in the
 * WHERE clause of the one UPDATE: whoever (runner or HTTP thread) writes
 * first wins, the other sees 0 rows. */
static int cancel_if_queued(struct store *st, int64_t id, bool *changed,
                            struct tr_err *err)
{
  int rc = store__run(st, "write",
                      "UPDATE captures SET status = 'cancelled',"
                      " finished_at = ?2, error = json_object('phase', phase,"
                      " 'message', 'cancelled before it started',"
                      " 'log_tail', NULL)"
                      " WHERE id = ?1 AND status = 'queued'",
                      err, "%ld%ld", id, tr_now_ns());

  *changed = rc == 0 && sqlite3_changes(st->db) > 0;
  if (*changed)
    rc = store__sweep_settle(st, id, NULL, err);
  return rc;
}

int store_capture_delete(struct store *st, int64_t id, struct tr_err *err)
{
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  return store__wr_end(st, delete_row(st, id, err), err);
}

int store_capture_cancel_queued(struct store *st, int64_t id, bool *was_queued,
                                struct tr_err *err)
{
  bool changed = false; /* our UPDATE found it queued */
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc = cancel_if_queued(st, id, &changed, err);
  if (rc == 0 && !changed)
    rc = store__capture_exists(st, id, NULL, err);
  rc = store__wr_end(st, rc, err);
  if (rc == 0)
    *was_queued = changed;
  return rc;
}

int store_capture_end(struct store *st, int64_t id, enum store_end *what,
                      struct tr_err *err)
{
  bool changed = false;
  int status = -1;
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc = cancel_if_queued(st, id, &changed, err);
  if (rc == 0 && !changed)
    rc = read_status(st, id, &status, err);
  if (rc == 0 && !changed && tr_status_final(status))
    rc = delete_row(st, id, err);
  rc = store__wr_end(st, rc, err);
  if (rc == 0)
    *what = changed                   ? STORE_END_CANCELLED
            : tr_status_final(status) ? STORE_END_DELETED
                                      : STORE_END_RUNNING;
  return rc;
}

int store_status_counts(struct store *st, json_t **out, struct tr_err *err)
{
  json_t *counts = json_object();
  sqlite3_stmt *s;
  int rc;

  for (int i = 0; i < TR_NSTATUS; i++)
    json_object_set_new(counts, tr_status_name(i), json_integer(0));
  rc = store__stmt(st, "SELECT status, count(*) FROM captures GROUP BY status",
                   &s, err);
  if (rc < 0) {
    json_decref(counts);
    return rc;
  }
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_object_set_new(counts, (const char *)sqlite3_column_text(s, 0),
                        json_integer(sqlite3_column_int64(s, 1)));
  rc = rc == SQLITE_DONE ? 0 : store__db_err(st, "status counts", err);
  store__done(s);
  if (rc < 0) {
    json_decref(counts);
    return rc;
  }
  *out = counts;
  return 0;
}
