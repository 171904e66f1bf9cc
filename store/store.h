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

#include "common/summary.h"
#include "common/tr.h"

struct store;

enum { STORE_RW = 0, STORE_RO = 1 };

/* Opens (creating and migrating with PRAGMA user_version when STORE_RW) the
 * database at path: WAL, foreign keys on, busy timeout, synchronous NORMAL.
 * TR_EDB (field "db") when the file is not a database, when its schema is
 * newer than this build's (never touched then), or, for STORE_RO, when it
 * has not been migrated yet. Caller closes with store_close(). */
int store_open(const char *path, int mode, struct store **out,
               struct tr_err *err);
void store_close(struct store *st);

/* Frees what the connection's page cache holds unused (after a big
 * write, before the connection waits in a pool). NULL is fine. */
void store_release_memory(struct store *st);

/* ---- captures ---- */

/* A new capture row, status "queued", phase "queued", progress with every
 * member 0. kind: "capture" or "import" (else TR_EINVAL, field "kind").
 * params: the validated request (borrowed; stored as text; NULL: {}).
 * label may be NULL. max_queued (0: no bound): TR_EBUSY (field "queue")
 * when that many captures and imports are queued already, counted in the
 * same transaction. Ids are never reused, even after a delete. */
int store_capture_insert(struct store *st, const char *kind, const char *label,
                         json_t *params, int max_queued, int64_t *id,
                         struct tr_err *err);

/* One state write of a capture, made in one transaction (see
 * store_capture_apply). */
struct store_apply {
  bool claim;     /* only while the capture is still "queued" */
  int status;     /* enum tr_status (common/lifecycle.h), -1: kept */
  int phase;      /* enum tr_phase, -1: kept */
  json_t *merges; /* {column: object} merged in as store_capture_merge()
                     does; borrowed; NULL: none */
  const char *sweep_ends; /* with a final status of a sweep's point: the
                             sweep ends here, for this reason (the server
                             died: docs/SWEEPS.md); NULL: it goes on */
};

/*
 * Applies a to capture id in one write transaction: the claim check, the
 * merges, then status/phase, stamping phase_started_at when the phase
 * changes (started_at on the first move to "running", finished_at on the
 * first final status). Either all of it is written or none. TR_ECONFLICT
 * (field "status") when the capture already has a final status (a final
 * status is never left and a final capture never changes: a cancel that
 * won a race with the runner stays) or, with claim, is no longer queued;
 * TR_EINVAL naming "status", "phase", "merges" or the column for a bad
 * value; TR_ENOTFOUND for an unknown id.
 */
int store_capture_apply(struct store *st, int64_t id,
                        const struct store_apply *a, struct tr_err *err);

/* store_capture_apply() of a status and a phase by name (both required). */
int store_capture_set_phase(struct store *st, int64_t id, const char *status,
                            const char *phase, struct tr_err *err);

/* store_capture_apply() of one merge: the members of obj (borrowed) go into
 * the capture's JSON column `column`: "progress", "bench", "extra"
 * (trace_dir, log_dir, argv used, use_chat_template...), or "error" (phase,
 * message, log_tail); a member of obj replaces the one of the same name
 * (json_object_update()). TR_EINVAL (field "column") for another column. */
int store_capture_merge(struct store *st, int64_t id, const char *column,
                        json_t *obj, struct tr_err *err);

/* The capture object of docs/API.md: id, kind, label, params, status, phase,
 * timestamps (RFC 3339 or null), progress, error (null until merged), bench
 * (null until merged), queue_position (1-based FIFO place among queued
 * captures of the same kind; null when not queued), extra's members (the
 * columns win a name clash), and ranks by rank number: a done rank is its
 * summary without its long tables (all but categories, memcpy and
 * steps: they have their own routes), "rank" being the
 * capture's rank number, "trace_rank" the summary's own, plus "label" and
 * "status"; a failed one is {rank, label, file, status "failed", error}.
 * One read snapshot. TR_ENOTFOUND (field "id") when no such id. */
int store_capture_get(struct store *st, int64_t id, json_t **out,
                      struct tr_err *err);

struct store_list_filter {
  const char *status; /* NULL: any */
  const char *model;  /* NULL: any; matches params.model */
  const char *kind;   /* NULL: any */
  int64_t before;     /* 0: none; else ids < before */
  int limit;          /* 0: 50 */
  size_t max_bytes;   /* 0: none; else the page ends before the rows' text
                         passes it (at least one row): a short page then
                         has more after it */
};

/* Capture objects (without ranks), newest first. TR_EINVAL naming the
 * field for an unknown status or kind or a negative limit/before. */
int store_capture_list(struct store *st, const struct store_list_filter *f,
                       json_t **out, struct tr_err *err);

/* Ids with the given status, oldest first (the queue order). Caller frees
 * *ids with free(). */
int store_capture_ids(struct store *st, const char *status, const char *kind,
                      int64_t **ids, size_t *n, struct tr_err *err);

/* Deletes the capture and everything of it (ranks, tables). The files are
 * the caller's to remove. */
int store_capture_delete(struct store *st, int64_t id, struct tr_err *err);

/* What store_capture_end() did. */
enum store_end {
  STORE_END_CANCELLED, /* it was queued: now cancelled */
  STORE_END_DELETED,   /* it was finished: deleted (the files are the
                          caller's to remove) */
  STORE_END_RUNNING    /* it runs: nothing changed; cancel it through the
                          runner */
};

/* DELETE /captures/<id>, decided in one write transaction from the status
 * it finds: a queued capture is cancelled, a finished one deleted, a
 * running one left alone (*what says which). A cancel racing the
 * capture's end therefore never deletes it: the status is read once,
 * where the decision is made. TR_ENOTFOUND for an unknown id. */
int store_capture_end(struct store *st, int64_t id, enum store_end *what,
                      struct tr_err *err);

/* ---- sweeps (docs/SWEEPS.md) ---- */

/* A new sweep, status "queued", with label (may be NULL) and params (its
 * validated request, borrowed), and its points: one queued capture of
 * each element of points (a capture request, borrowed), point i, tied to
 * it by sweep_points, all in one transaction. TR_EBUSY (field "queue")
 * when max_queued (> 0) would be passed by them. */
int store_sweep_insert(struct store *st, const char *label, json_t *params,
                       json_t *points, int max_queued, int64_t *id,
                       struct tr_err *err);

/* The sweep object (docs/API.md): id, label, params, status, created_at,
 * started_at, finished_at (RFC 3339 or null), error ({message, point} or
 * null), points_total, points_done, and points: [{point, capture, conc,
 * isl, osl, status, phase, error (its message or null), and the bench's
 * figures (store_int.h's STORE__SWEEP_BENCH; null until it has them)}]
 * by point. One
 * read snapshot. TR_ENOTFOUND (field "sweep"). */
int store_sweep_get(struct store *st, int64_t id, json_t **out,
                    struct tr_err *err);

/* The points of sweep id as store_sweep_get() gives them (an empty array
 * for an unknown id), inside the caller's snapshot if any. */
int store_sweep_points(struct store *st, int64_t id, json_t **out,
                       struct tr_err *err);

/* The same of the points that are the captures ids (a JSON array of
 * capture ids, borrowed: a lab view's copies of a sweep's points), by
 * point. */
int store_sweep_points_of(struct store *st, json_t *ids, json_t **out,
                          struct tr_err *err);

/* Sweep objects without points, newest first: f's status, before, limit
 * and max_bytes (its model and kind are not read). */
int store_sweep_list(struct store *st, const struct store_list_filter *f,
                     json_t **out, struct tr_err *err);

/* GET /sweeps/<id>/scaling (docs/SWEEPS.md, "What scales"): {sweep,
 * knee_pct, points (store_sweep_points()'s, each done one with
 * decode_samples, bs_mean and launch_bound_share), scenarios [{isl, osl,
 * knee ({conc, gain_pct, next_conc} or null), stops_scaling [{name,
 * share_lo, share_hi, growth}], crossover_bs, launch_bound_at_min,
 * launch_bound_at_max}], rows [{isl, osl, figure (step, idle, category,
 * family, path), name, n, bs_min, bs_max, a_ns, b_ns_per_seq, r2,
 * se_b_ns, rmse_ns, break_bs, a1_ns, b1_ns_per_seq, a2_ns, b2_ns_per_seq,
 * r2_piecewise, by_bs: its samples by batch size [[bs, n, mean_ns]]}]},
 * from the done points' rows in one read snapshot.
 * knee_pct: sweep_knee_pct. TR_ENOTFOUND (field "sweep"). */
int store_sweep_scaling(struct store *st, int64_t id, int knee_pct,
                        json_t **out, struct tr_err *err);
/* The same of the points that are the captures ids (as
 * store_sweep_points_of()), without "sweep". */
int store_sweep_scaling_of(struct store *st, json_t *ids, int knee_pct,
                           json_t **out, struct tr_err *err);

/* The settings sweeps' answers are made with. */
struct store_sweep_opts {
  int knee_pct;      /* sweep_knee_pct */
  int threshold_pct; /* regression_threshold_pct, for the points' verdicts */
};

/* GET /sweeps/<a>/compare?to=<b> (docs/SWEEPS.md, "Two sweeps compared"):
 * {a, b, points [{conc, isl, osl, a_capture, b_capture, verdict (a's
 * point against b's, as store_verdict() judges it), a_output_throughput,
 * b_output_throughput, changes (its verdict's largest figures, at most
 * 5)}] for each done point of a that b has done at the same concurrency,
 * ISL and OSL; slopes [{isl, osl, figure, name, a_a_ns, b_a_ns,
 * a_b_ns_per_seq, b_b_ns_per_seq, ratio (a's slope over b's, null when
 * b's is 0 or null)}] for each fit both have}. TR_ENOTFOUND naming
 * "sweep" or "to"; TR_EINVAL naming "to" for a itself. */
int store_sweep_compare(struct store *st, int64_t a, int64_t b,
                        const struct store_sweep_opts *o, json_t **out,
                        struct tr_err *err);
/* The same of two sets of points, each the captures of a JSON array of
 * capture ids (borrowed: a lab view's copies of two sweeps' points, as
 * store_sweep_scaling_of() reads them), without "a" and "b". */
int store_sweep_compare_of(struct store *st, json_t *a, json_t *b,
                           const struct store_sweep_opts *o, json_t **out,
                           struct tr_err *err);

/* What store_sweep_end() did, and to which points. */
struct store_sweep_end {
  bool deleted; /* it was finished: deleted with its points (their files
                   are the caller's to remove); else it is now cancelled
                   with its queued points */
  int64_t *ids; /* deleted: its points' capture ids; cancelled: the point
                   still running (the runner cancels it); caller frees */
  size_t n;
};

/* DELETE /sweeps/<id>, decided in one write transaction from the status it
 * finds. TR_ENOTFOUND (field "sweep") for an unknown id. */
int store_sweep_end(struct store *st, int64_t id, struct store_sweep_end *out,
                    struct tr_err *err);

/* Atomically: if the capture is still "queued", marks it "cancelled"
 * (finished_at stamped, error {phase, message}) and sets *was_queued;
 * otherwise changes nothing and sets it false. Lets the HTTP side cancel
 * without racing the runner. TR_ENOTFOUND for an unknown id. */
int store_capture_cancel_queued(struct store *st, int64_t id, bool *was_queued,
                                struct tr_err *err);

/* ---- ranks ---- */

/* Stores one rank's summary (the JSON of idx_file(), borrowed) with all its
 * tables in one transaction: either all of it is visible, or none. rank is
 * the rank number within the capture, label its folder ("rank_3",
 * "dp1_tp3", "prefill/rank_0") or file name. A rank stored before under
 * the same number (or failed) is replaced. TR_EINVAL (field "summary",
 * the message naming e.g. "kernels[3].total_ns") when a member of the
 * summary contract is missing or of the wrong type; TR_ENOTFOUND for an
 * unknown capture. */
int store_rank_insert(struct store *st, int64_t capture_id, int rank,
                      const char *label, json_t *summary, struct tr_err *err);

/* A rank's summary stored as the indexer makes it (index.h's
 * idx_file_sink()), row by row, in one write transaction held from
 * store_rank_open() to store_rank_close() (the process-wide write lock
 * with it: open it when the summary's head is ready, not before the
 * indexing). Either all of it is visible, or none. */
struct store_rank_writer;

/* Begins rank `rank` of the capture: replaces an earlier row of that rank
 * and inserts head (the summary's scalars, borrowed; a whole summary does
 * too). The summary may add at most max_bytes (0: no cap) to the
 * database, counted as the bytes of the values stored (text and JSON as
 * stored, 8 per integer, a new name twice: its row and its index);
 * beyond, store_rank_row() fails with TR_ELIMIT naming max_rank_db_bytes.
 * On failure nothing is stored and *out is untouched. */
int store_rank_open(struct store *st, int64_t capture_id, int rank,
                    const char *label, json_t *head, uint64_t max_bytes,
                    struct store_rank_writer **out, struct tr_err *err);

/* Stores row (borrowed) in table (a summary member: "kernels"...). Errors
 * as store_rank_insert()'s; after one, close with it. */
int store_rank_row(struct store_rank_writer *w, const char *table, json_t *row,
                   struct tr_err *err);

/* Commits when rc is 0, else rolls back; frees w. Returns the outcome
 * (rc, or the commit's failure). w NULL: returns rc. */
int store_rank_close(struct store_rank_writer *w, int rc, struct tr_err *err);

/* Records that a rank could not be indexed (message for a person).
 * Replaces an earlier row of the same rank. A failed rank keeps no path
 * (the file may be what made it fail, a link or a FIFO, and
 * nothing may serve it later). */
int store_rank_fail(struct store *st, int64_t capture_id, int rank,
                    const char *label, const char *message, struct tr_err *err);

/* The trace file of a done rank, for GET /captures/<id>/ranks/<r>/trace
 * (the caller opens it under the capture's root, common/file.h). Caller
 * frees *path. TR_ENOTFOUND, field "id" or "rank". */
int store_rank_file(struct store *st, int64_t capture_id, int rank, char **path,
                    struct tr_err *err);

/* store_rank_file() with what a slice of it needs (GET /captures/<id>/
 * ranks/<r>/slice): the summary's t0_ns, span_ns, file_bytes and format.
 * The caller frees out->path. Same errors. */
struct store_trace {
  char *path;
  int64_t t0_ns, span_ns, file_bytes;
  char format[16]; /* "kineto", "mctracer" */
  int rank;
};
int store_rank_trace(struct store *st, int64_t capture_id, int rank,
                     struct store_trace *out, struct tr_err *err);
/* store_rank_trace() of every done rank of the capture, in rank order,
 * into out[0..*n) (caller frees each path; none on failure). TR_ELIMIT
 * (field "rank") when it has more than max; TR_ENOTFOUND (field "id")
 * when no such capture or no done rank. */
int store_rank_traces(struct store *st, int64_t capture_id,
                      struct store_trace *out, size_t max, size_t *n,
                      struct tr_err *err);

/* ---- queries behind the routes ---- */

struct store_query {
  int64_t capture_id;
  int rank;             /* -1: all ranks summed (kernels gains "ranks",
                           "slowest_rank", "slowest_rank_ns",
                           "fastest_rank", "fastest_rank_ns") */
  const char *q;        /* name substring, ASCII case-insensitive, taken
                           literally (% and _ too); NULL or "": any.
                           kernels, launches, runtime */
  const char *category; /* NULL or "": any. kernels, categories */
  const char *sort;     /* total|count|avg|name, ties by name; NULL:
                           total. kernels, launches, runtime (the others
                           keep their order: categories and memcpy total
                           desc, steps by kind, phases by rank, index) */
  int limit;            /* 0: no limit */
  const char *family;   /* NULL or "": any; else exactly. kernels */
  const char *kind;     /* NULL or "": any; else exactly: the step kind of
                           steps/buckets, steps/outliers, families/steps */
  const char *module;   /* NULL or "": any; else exactly: the module of
                           decode/layer_modules, op_modules, kernels */
  const char *by;       /* idle: "cause" (NULL) or "step" */
  const char *step;     /* critical_path, critical_path/steps: NULL or
                           "": any; a step index, "median" or "slowest"
                           (of each kind, or of kind) */
  bool on_path;         /* kernels, families: only those on a critical
                           path (critical_ns > 0), read from the ranks'
                           rows (the sums keep every row) */
  int buckets;          /* timeline: rows wanted per rank, 1..4096 (0:
                           256) */
};

/*
 * GET /captures/<id>/<route> of table t (common/summary.h's TR_TABLE_MAP):
 * a JSON array of rows in *out as docs/API.md describes each table (avg_ns
 * = total_ns / count floored; share rounded to 6 decimals). With rank -1
 * the rows are summed over the done ranks (count, total_ns, bytes, tokens
 * summed; min_ns the least, max_ns/max_bytes the largest; avg_ns and share
 * recomputed from the sums; "ranks" = on how many ranks the row appears;
 * a median or percentile the largest of the ranks'), or are every rank's,
 * each with its "rank", for the tables that do not sum (phases,
 * step_outliers, timeline); a done capture answers from the sums stored at
 * its finish, which are these rows exactly. Each table's own rules are
 * beside its SQL (store/queries.c, analysis.c, results.c). TR_EINVAL
 * (field "rank", "sort", "limit", "by", "buckets") for a bad value,
 * TR_ENOTFOUND (field "id" or "rank") when the capture or the indexed rank
 * does not exist. One read snapshot.
 */
int store_table(struct store *st, enum tr_table t, const struct store_query *q,
                json_t **out, struct tr_err *err);

struct store_diff_opts {
  int rank;         /* -1: all ranks summed */
  const char *by;   /* one of tr_diff_bys (common/summary.h); NULL: the
                       first, kernel */
  const char *kind; /* NULL: every step kind; else (module, layer, op
                       only) that kind, per_step by its steps */
  const char *norm; /* none|per_step; NULL: none */
  int limit;        /* 0: no limit */
};

/* GET /diff: {"a", "b", "by", "norm", "rank" (null: all), "a_steps",
 * "b_steps", "rows", "categories", "warnings"}. rows: {name|category|kind|
 * family, a_count, b_count, a_total_ns, b_total_ns, delta_ns (b - a),
 * delta_pct (delta / a_total * 100, null when a_total is 0), status
 * both|only_a|only_b}, sorted by |delta_ns| desc then key, at most
 * limit. categories: the by=category rows, always, never limited.
 * a_steps/b_steps: each run's real step count (prefill + decode; the
 * largest per-rank count, or the rank's). norm=per_step divides each
 * run's total_ns by its real step count, rounded half away from zero to
 * integer ns; counts stay raw.
 * warnings: [{code, message}], codes different_tp (params.tp, else the
 * number of ranks), different_device, no_labels (a run without steps),
 * different_step_kinds, different_step_counts, pre_taxonomy (a run with
 * decode labels and no dummy_* kind while the other has dummy_* kinds).
 * Errors: TR_EINVAL naming "by", "norm", "rank", "limit" (norm=per_step on
 * a run without prefill/decode steps: "norm"); TR_ENOTFOUND naming "a" or
 * "b" (or "rank"); TR_ECONFLICT naming "a" or "b" when not done. */
int store_diff(struct store *st, int64_t a, int64_t b,
               const struct store_diff_opts *o, json_t **out,
               struct tr_err *err);

/* ---- across ranks and runs (docs/ANALYSIS.md) ---- */

/* What store_capture_finish() writes besides the sums and the verdict. */
struct store_finish {
  json_t *collectives; /* idx_collectives_match()'s answer (borrowed), or
                          {"warnings": [...]} alone; NULL: none */
  int threshold_pct;   /* regression_threshold_pct */
};

/*
 * Capture id's ranks are all indexed (it runs, not done yet): stores in
 * one write transaction its collective tables (collectives), every
 * all-ranks table summed (store/sums.c: later all-ranks reads answer
 * from them) and its verdict against its baseline (store/verdict.c),
 * replacing what an earlier finish stored; the capture object then has
 * "collectives" (t0_ns, span_ns, matched, warnings) and "verdict"
 * ({verdict, baseline}). *verdict gets the verdict (caller decrefs; see
 * store_verdict()). TR_ECONFLICT (field "status") unless the capture
 * runs. Call before the write that makes it done.
 */
int store_capture_finish(struct store *st, int64_t id,
                         const struct store_finish *f, json_t **verdict,
                         struct tr_err *err);

/* A done capture's all-ranks table t (q->rank -1; a table with
 * TR_T_SUMMED) for q as the JSON text of its rows array, "[{...},...]",
 * appended to out: the bytes store_table() would answer, read from the
 * sums without building them. 1 when it has no sums, is not done or q
 * asks for one rank (ask store_table()), 0, or TR_EINVAL naming "limit",
 * "sort" or "by". An answer past out->max leaves out->failed TR_ELIMIT
 * (and returns 0). One read snapshot. */
int store_table_text(struct store *st, enum tr_table t,
                     const struct store_query *q, struct tr_buf *out,
                     struct tr_err *err);

/*
 * GET /captures/<id>/verdict: with baseline 0 the verdict stored at its
 * finish (made now for a capture done before verdicts existed), else the
 * comparison with capture baseline (any done capture or import). Answer:
 * {capture, baseline (null: none), baseline_source (pinned, latest,
 * asked, absent), verdict (regressed, improved, unchanged, incomparable),
 * reasons [{code, message}], threshold_pct, step_noise_pct, compared,
 * changes [{figure (step_p50, step_p99, category, family), name,
 * baseline, value (ns; null: absent there), delta_pct, band_pct, change}]
 * largest first, pinned (whether id is its configuration's baseline)}.
 * TR_ECONFLICT (field "id") unless id is done, naming "baseline" for a
 * baseline not done; TR_ENOTFOUND naming "id" or "baseline"; TR_EINVAL
 * naming "baseline" for id itself.
 */
int store_verdict(struct store *st, int64_t id, int64_t baseline, int threshold,
                  json_t **out, struct tr_err *err);

/* PUT (pin true) or DELETE /captures/<id>/baseline: id becomes (stops
 * being) the baseline of its configuration, replacing an earlier pin.
 * *out: {capture, pinned}. TR_ECONFLICT (field "id") to pin a capture
 * that is not done. */
int store_baseline_set(struct store *st, int64_t id, bool pin, json_t **out,
                       struct tr_err *err);

/* For /metrics: {"counts": {verdict: n} over done captures, "latest":
 * [{config [model, tp, isl, osl, conc, variant, more], verdict, capture}]
 * each configuration's latest verdict, newest first, at most 100}. */
int store_verdict_metrics(struct store *st, json_t **out, struct tr_err *err);

/* Counts of captures by status, for /metrics: {"queued": n, ...}, every
 * status present (0 when none). */
int store_status_counts(struct store *st, json_t **out, struct tr_err *err);

/* ---- the fleet (docs/FLEET.md): a node's outbox ---- */

/* Whether this database publishes to the fleet (fleet_dsn set): from now
 * on, a capture reaching a final status is put in the outbox by the same
 * transaction (a trigger, store/schema.c). Deletes of captures that have
 * a fleet identity are put there whatever this says. */
int store_fleet_enable(struct store *st, bool on, struct tr_err *err);

/* One row of the outbox: publish capture_id (its uuid), or delete it. */
struct store_outbox_item {
  int64_t seq;
  int64_t capture_id;
  char uuid[40];
  bool del;
  int64_t queued_ms; /* when it entered the outbox, ms since the epoch */
  int tries;         /* publishes of it PostgreSQL refused so far */
};

/* The row to send next: fewest tries first, then oldest (a capture
 * PostgreSQL keeps refusing does not hold the others back). 1 when the
 * outbox is empty, 0 with *it. */
int store_outbox_next(struct store *st, struct store_outbox_item *it,
                      struct tr_err *err);

/* Row seq was sent (or is not ours to send any more): removed. */
int store_outbox_done(struct store *st, int64_t seq, struct tr_err *err);

/* PostgreSQL refused row seq: tries + 1 and why (cut to 500 bytes). */
int store_outbox_failed(struct store *st, int64_t seq, const char *why,
                        struct tr_err *err);

/* The outbox's length and its oldest row's queued_ms (0 when empty). */
int store_outbox_stats(struct store *st, int64_t *length, int64_t *oldest_ms,
                       struct tr_err *err);

/* Backfill: up to max final captures that have no fleet identity yet (done
 * before fleet_dsn was set, or while it was not) get one and a publish
 * row, oldest first; *added says how many. */
int store_outbox_backfill(struct store *st, int max, int *added,
                          struct tr_err *err);

/*
 * What a node publishes of capture id (final), read in one snapshot:
 * {"brief": the capture object without its ranks (GET /captures' form),
 *  "config": its configuration as the verdicts compare it (JSON text of
 *  [model, tp, isl, osl, conc, variant, more]; null without a model),
 *  "gpu": its ranks' device names (", " between distinct ones; null),
 *  "figures": {"decode_p50_ns", "step_ns", "real_steps", "families":
 *   [{family, per_step_ns}] (the 5 largest per real step)},
 *  "store_version": this store's schema version}
 * and in tables, each as the JSON text of an array of its rows (written
 * from SQLite without making each a jansson value: a capture has hundreds
 * of thousands), every table whose rows hang off the capture (a
 * foreign key to captures(id) or ranks(id), found in the schema: a table
 * added later is published without a change here), the capture's own row
 * as
 * "captures", its ranks as "ranks"; each row is {column: value} with the
 * ids that only mean something in this file taken out: no capture_id,
 * ranks without id, rank_id holding the rank's number, a reference to
 * names(id) holding the name. A text that is not UTF-8 or holds a NUL, and
 * a blob, are {"$hex": "..."}. Left out: the node's own choices
 * (baselines) and what is made again from the rows (sum_rows, sum_texts:
 * store_fleet_import() sums again). TR_ENOTFOUND naming "id"; TR_ECONFLICT
 * unless it is final. Caller decrefs *out and store_fleet_tables_free()s
 * tables (zeroed before), also after an error.
 */
struct store_fleet_tables {
  struct tr_buf text; /* the tables' rows, each NUL-terminated */
  struct {
    char name[128];
    size_t at; /* its rows: text.p + at */
  } * t;
  size_t n, cap;
};
int store_fleet_export(struct store *st, int64_t id, json_t **out,
                       struct store_fleet_tables *tables, struct tr_err *err);
void store_fleet_tables_free(struct store_fleet_tables *t);

/* ---- the fleet: a lab view's copy of it (its own database file) ---- */

/* Copies a published capture's tables (store_fleet_export()'s "tables",
 * borrowed) into this database as a new capture (its own id, answered by
 * every query above as the node answers its own) and sums it again, in
 * one write transaction; the index row of (node, uuid) then names it
 * (cache_id, with bytes). When that row names one already (another thread
 * was first), nothing is copied. *cache_id gets the capture's id here.
 * Tables and columns this build does not have are left out. TR_ENOTFOUND
 * when (node, uuid) is not in the index (deleted meanwhile); TR_EINVAL
 * naming "tables" for rows that do not fit. */
int store_fleet_import(struct store *st, const char *node, const char *uuid,
                       json_t *tables, int64_t bytes, int64_t *cache_id,
                       struct tr_err *err);

/* What the lab view follows of the fleet (fleet_follow): the fleet's id
 * (*fleet, 64 bytes, "" when none yet) and the last change seq applied. */
int store_fleet_follow_get(struct store *st, char *fleet, int64_t *seq,
                           struct tr_err *err);

/* The index row of a capture as PostgreSQL lists it (fleet.captures:
 * node, uuid, id, seq, deleted, kind, status, label, model, config, gpu,
 * created_at and finished_at in ns, verdict, figures, brief). */
struct store_fleet_row {
  const char *node, *uuid;
  int64_t id, seq;
  bool deleted;
  const char *kind, *status, *label, *model, *config, *gpu, *verdict;
  int64_t created_at, finished_at;
  const char *figures, *brief; /* JSON texts */
};

/*
 * Applies changes (in seq order) to the index in one write transaction,
 * and records seq as followed of fleet: a row replaces the one of its
 * (node, uuid), a deleted one removes it and its copied capture. When
 * fleet differs from the one followed so far (another PostgreSQL), the
 * index and every copied capture are emptied first. *drop gets the ids of
 * the copied captures whose answers are stale now (deleted, or their
 * node:id now names a newer capture), *ndrop how many (caller frees).
 */
int store_fleet_apply(struct store *st, const char *fleet, int64_t seq,
                      const struct store_fleet_row *rows, size_t n,
                      int64_t **drop, size_t *ndrop, struct tr_err *err);

/* Replaces the nodes (a JSON array of {node, url, traced_version,
 * seen_at (ns)}, borrowed). */
int store_fleet_nodes_set(struct store *st, json_t *nodes, struct tr_err *err);

/* A capture of the index: by node and id (the newest of that node and id:
 * a node whose database was made anew counts its ids again), or by uuid
 * (node NULL). */
struct store_fleet_ref {
  char node[64];
  char uuid[40];
  int64_t id;
  int64_t cache_id; /* 0: not copied here yet */
  int64_t finished_at;
  char status[16];
  char config[512], gpu[128];
  char url[512]; /* its node's node_url ("" when not known) */
};
int store_fleet_resolve(struct store *st, const char *node, int64_t id,
                        const char *uuid, struct store_fleet_ref *out,
                        struct tr_err *err);

/* The newest other done capture of ref's configuration and GPU, on any
 * node, finished before it: 1 when there is none, 0 with *out. */
int store_fleet_baseline(struct store *st, const struct store_fleet_ref *ref,
                         struct store_fleet_ref *out, struct tr_err *err);

/* While the copied captures take more than max_bytes, the oldest copied
 * one is dropped (its index row stays: it is copied again when asked
 * for); *drop as store_fleet_apply(). */
int store_fleet_evict(struct store *st, int64_t max_bytes, int64_t **drop,
                      size_t *ndrop, struct tr_err *err);

struct store_fleet_filter {
  const char *node, *gpu, *model, *config, *status, *kind;
  int64_t since, until;          /* created_at in ns, [since, until); 0: open */
  int64_t before_at, before_lid; /* the page's cursor; 0: first page */
  int limit;                     /* 1.. */
};

/* GET /fleet/captures, appended to out as JSON text: {"captures": [the
 * brief of each, with node, ref, uuid, gpu, config, figures, node_url],
 * "next_before": cursor text or null}, newest first (created_at). */
int store_fleet_list(struct store *st, const struct store_fleet_filter *f,
                     struct tr_buf *out, struct tr_err *err);

/* GET /fleet/trend: the done captures of config and gpu (NULL: any),
 * oldest first, at most limit: [{node, id, ref, finished_at, figures}]. */
int store_fleet_trend(struct store *st, const char *config, const char *gpu,
                      int limit, json_t **out, struct tr_err *err);

/* GET /fleet/configs: [{config, gpu, model, captures, nodes, latest}],
 * latest first. */
int store_fleet_configs(struct store *st, json_t **out, struct tr_err *err);

/* GET /fleet/sweeps (store/fleet_sweeps.c): the sweeps of the fleet's
 * published points, newest first, at most limit: [{ref (node:id), node,
 * id (the node's sweep id), model, points_published, points_done, conc
 * (the published points' concurrencies), created_at, finished_at (ns)}]. */
int store_fleet_sweeps(struct store *st, int limit, json_t **out,
                       struct tr_err *err);
/* The node's ids of the published points of node's sweep, by point:
 * [{id}]. */
int store_fleet_sweep_points(struct store *st, const char *node, int64_t sweep,
                             json_t **out, struct tr_err *err);

/* GET /fleet/nodes: [{node, url, traced_version, seen_at, captures}]. */
int store_fleet_nodes(struct store *st, json_t **out, struct tr_err *err);

#endif
