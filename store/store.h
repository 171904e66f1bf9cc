/*
 * store: traced's SQLite database: captures (and imports, which are
 * captures of kind "import"), their ranks and each rank's summary tables,
 * and the queries behind the HTTP routes (docs/API.md).
 *
 * Threads: a struct store is one SQLite connection, used by one thread at a
 * time. Open one per thread: the loop, each worker, each HTTP thread.
 * Every call blocks on disk I/O: never call from the libuv loop thread
 * except the one-row writes documented as short. Writes from all threads of
 * the process are serialised by a process-wide mutex (BEGIN IMMEDIATE under
 * it), so writers never see SQLITE_BUSY from each other; readers use WAL
 * snapshots and never wait for writers.
 *
 * JSON: every query answers with new jansson objects (caller decrefs),
 * shaped and named exactly as docs/API.md. Durations are integer ns.
 */
#ifndef STORE_H
#define STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/tr.h"

struct store;

enum { STORE_RW = 0, STORE_RO = 1 };

/* Opens (creating and migrating with PRAGMA user_version when STORE_RW) the
 * database at path: WAL, foreign keys on, busy timeout. Caller closes with
 * store_close(). */
int store_open(const char *path, int mode, struct store **out,
               struct tr_err *err);
void store_close(struct store *st);

/* ---- captures ---- */

/* A new capture row, status "queued", phase "queued". kind: "capture" or
 * "import". params: the validated request (borrowed; stored as text).
 * label may be NULL. */
int store_capture_insert(struct store *st, const char *kind,
                         const char *label, json_t *params, int64_t *id,
                         struct tr_err *err);

/* Moves a capture to status/phase and stamps phase_started_at (and
 * started_at on the first move to "running", finished_at on a final
 * status: done, failed, cancelled, interrupted). One short transaction. */
int store_capture_set_phase(struct store *st, int64_t id, const char *status,
                            const char *phase, struct tr_err *err);

/* Merges the members of obj into the capture's JSON column `column`:
 * "progress", "bench", "extra" (trace_dir, log_dir, argv used,
 * use_chat_template...), or "error" (phase, message, log_tail). */
int store_capture_merge(struct store *st, int64_t id, const char *column,
                        json_t *obj, struct tr_err *err);

/* The capture object of docs/API.md: id, kind, label, params, status, phase,
 * timestamps (RFC 3339), progress, error, bench, queue_position (queued
 * ones), extra's members, and ranks (rank summaries without the long tables
 * kernels/launches/runtime/phases). TR_ENOTFOUND when no such id. */
int store_capture_get(struct store *st, int64_t id, json_t **out,
                      struct tr_err *err);

struct store_list_filter {
  const char *status;   /* NULL: any */
  const char *model;    /* NULL: any; matches params.model */
  const char *kind;     /* NULL: any */
  int64_t before;       /* 0: none; else ids < before */
  int limit;            /* 0: 50 */
};

/* Capture objects (without ranks), newest first. */
int store_capture_list(struct store *st, const struct store_list_filter *f,
                       json_t **out, struct tr_err *err);

/* Ids with the given status, oldest first (the queue order). Caller frees
 * *ids with free(). */
int store_capture_ids(struct store *st, const char *status, const char *kind,
                      int64_t **ids, size_t *n, struct tr_err *err);

/* Deletes the capture and everything of it (ranks, tables). The files are
 * the caller's to remove. */
int store_capture_delete(struct store *st, int64_t id, struct tr_err *err);

/* Atomically: if the capture is still "queued", marks it "cancelled" and
 * sets *was_queued. Lets the HTTP side cancel without racing the runner. */
int store_capture_cancel_queued(struct store *st, int64_t id,
                                bool *was_queued, struct tr_err *err);

/* ---- ranks ---- */

/* Stores one rank's summary (the JSON of idx_file(), borrowed) with all its
 * tables in one transaction: either all of it is visible, or none. rank is
 * the rank number within the capture, label its folder ("rank_3",
 * "dp1_tp3", "prefill/rank_0") or file name. */
int store_rank_insert(struct store *st, int64_t capture_id, int rank,
                      const char *label, json_t *summary, struct tr_err *err);

/* Records that a rank could not be indexed (message for a person). */
int store_rank_fail(struct store *st, int64_t capture_id, int rank,
                    const char *label, const char *file, const char *message,
                    struct tr_err *err);

/* The trace file of a rank, for GET /captures/<id>/ranks/<r>/trace. Caller
 * frees *path. */
int store_rank_file(struct store *st, int64_t capture_id, int rank,
                    char **path, struct tr_err *err);

/* ---- queries behind the routes ---- */

struct store_query {
  int64_t capture_id;
  int rank;              /* -1: all ranks summed (kernels gains "ranks",
                            "slowest_rank", "slowest_rank_ns",
                            "fastest_rank", "fastest_rank_ns") */
  const char *q;         /* name substring, or NULL */
  const char *category;  /* or NULL */
  const char *sort;      /* total|count|avg|name; NULL: total */
  int limit;             /* 0: no limit */
};

/* Each answers a JSON array of rows as in docs/API.md. TR_ENOTFOUND when
 * the capture (or the rank) does not exist. */
int store_kernels(struct store *st, const struct store_query *q,
                  json_t **out, struct tr_err *err);
int store_launches(struct store *st, const struct store_query *q,
                   json_t **out, struct tr_err *err);
int store_categories(struct store *st, const struct store_query *q,
                     json_t **out, struct tr_err *err);
int store_steps(struct store *st, const struct store_query *q,
                json_t **out, struct tr_err *err);
int store_memcpy(struct store *st, const struct store_query *q,
                 json_t **out, struct tr_err *err);
int store_runtime(struct store *st, const struct store_query *q,
                  json_t **out, struct tr_err *err);
int store_phases(struct store *st, const struct store_query *q,
                 json_t **out, struct tr_err *err);

struct store_diff_opts {
  int rank;              /* -1: all ranks summed */
  const char *by;        /* kernel|category|step; NULL: kernel */
  const char *norm;      /* none|per_step; NULL: none */
  int limit;             /* 0: no limit */
};

/* GET /diff: {"a":..,"b":..,"by":..,"norm":..,"rows":[...],"categories":
 * [...],"warnings":[...]} as in docs/API.md. */
int store_diff(struct store *st, int64_t a, int64_t b,
               const struct store_diff_opts *o, json_t **out,
               struct tr_err *err);

/* Counts of captures by status, for /metrics: {"queued": n, ...}. */
int store_status_counts(struct store *st, json_t **out, struct tr_err *err);

#endif
