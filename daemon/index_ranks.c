/*
 * Ranks indexed in the pool, what INDEXING, FINISHING and the runner need:
 * each rank's trace goes through idx_file_sink() into store_rank_open()
 * and its rows in one pool job with its own store connection, at most
 * index_jobs ranks at once over all jobs (cap_index_pump(): INDEXING
 * hands its ranks out, the runner looks again when it looks at its
 * queues), so that the pool (UV_THREADPOOL_SIZE = index_jobs + 2 +
 * API_SLICES, see daemon.c) always has a thread for the state writes. A
 * rank that fails is recorded with store_rank_fail() and the others are
 * kept; each rank in calls job->index.rank_done. Each rank's indexer
 * stops on a flag of its own, which the loop sets when the job ends
 * (cap_index_cancel()) or the rank outlasts rank_index_timeout_s
 * (cap_index_deadlines(): it fails naming the setting). Also each rank's
 * collectives' file (FINISHING matches them) and the deadline of reading
 * the traces (INDEXING's and FINISHING's).
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/stats.h"
#include "common/text.h"
#include "daemon/cap_int.h"

#define FAILURES_MAX   4096 /* bytes of failure text kept */
#define TRACE_BUDGET_S 600  /* and a second per MiB */

int cap_trace_budget_s(const struct cap_job *job)
{
  return TRACE_BUDGET_S + (int)(job->layout->bytes_total >> 20);
}

/* How long one rank's indexing may take (docs/API.md). */
static uint64_t rank_timeout_ms(const struct cap_job *job)
{
  return (uint64_t)job->r->cfg->rank_index_timeout_s * 1000;
}

/* The import's format (validated by the API), else detected. */
static enum idx_format index_format(const struct cap_job *job)
{
  const char *f = json_string_value(json_object_get(job->params, "format"));
  enum idx_format format = IDX_FORMAT_AUTO;

  if (f != NULL)
    idx_format_parse(f, &format);
  return format;
}

void cap_index_failure(struct cap_job *job, const char *fmt, ...)
{
  size_t used = job->index.failures ? strlen(job->index.failures) : 0;
  char *grown;
  va_list ap;

  if (used >= FAILURES_MAX)
    return;
  grown = realloc(job->index.failures, FAILURES_MAX + 1);
  if (grown == NULL)
    return;
  job->index.failures = grown;
  if (used > 0) {
    snprintf(grown + used, FAILURES_MAX + 1 - used, "; ");
    used += 2;
  }
  va_start(ap, fmt);
  vsnprintf(grown + used, FAILURES_MAX + 1 - used, fmt, ap);
  va_end(ap);
}

uint64_t cap_index_bytes_read(const struct cap_job *job)
{
  uint64_t sum = 0;

  for (size_t i = 0; i < job->layout->n; i++)
    sum += atomic_load(&job->index.read[i]);
  return sum;
}

char *cap_coll_path(const struct cap_job *job, size_t rank, bool make)
{
  char *dir = NULL, *path = NULL;

  if (asprintf(&dir, "%s/collectives", job->log_dir) < 0)
    return NULL;
  if ((!make || tr_mkdir_p(dir) == 0) &&
      asprintf(&path, "%s/rank_%zu.bin", dir, rank) < 0)
    path = NULL;
  free(dir);
  return path;
}

/* ---- one rank, in the pool ---- */

struct rank_work {
  struct cap_work super;
  size_t i; /* rank number in the capture */
  int rc;
  bool cancelled;
  char msg[CAP_MSG_MAX];
  /* The indexer's flag (idx_options.cancel), set from the loop: by its
   * job's end (cap_index_cancel()) or, with late first, by its deadline
   * (cap_index_deadlines()). */
  atomic_bool stop, late;
  uint64_t due_ms; /* loop time past which it is late */
};

static void on_idx_progress(void *ud, uint64_t file_bytes_read)
{
  atomic_store((_Atomic uint64_t *)ud, file_bytes_read);
}

/* The rank's summary goes to the store as it is made (idx_file_sink()):
 * the transaction begins with the head and ends after the last row, so no
 * whole summary is ever held in memory. */
struct rank_store {
  struct rank_work *rw;
  struct store *st;
  struct store_rank_writer *w; /* NULL until the head came */
};

static int on_head(void *ud, json_t *head, struct tr_err *err)
{
  struct rank_store *rs = ud;
  struct cap_job *job = rs->rw->super.job;
  const struct cfg *cfg = rs->rw->super.r->cfg;

  return store_rank_open(rs->st, job->id, (int)rs->rw->i,
                         job->layout->ranks[rs->rw->i].label, head,
                         (uint64_t)cfg->max_rank_db_bytes, &rs->w, err);
}

static int on_row(void *ud, const char *table, json_t *row, struct tr_err *err)
{
  struct rank_store *rs = ud;

  return store_rank_row(rs->w, table, row, err);
}

/* The store refused the rank's rows (a full disk, an I/O error of the
 * database): no failure of the rank, which is indexed again until they
 * are taken (on_rank_done), the capture waiting in indexing. */
static bool store_refused(const struct rank_work *rw)
{
  return rw->rc == TR_ESTORAGE && !rw->cancelled;
}

/* Ends the rank's transaction: committed when it was indexed and not
 * cancelled; a rank that failed is recorded as failed. */
static void store_end(struct rank_work *rw, struct rank_store *rs)
{
  struct cap_job *job = rw->super.job;
  const struct cap_rank *rk = &job->layout->ranks[rw->i];
  struct tr_err err = { 0 };
  int rc = rw->rc != 0 ? rw->rc : rw->cancelled ? TR_ECONFLICT : 0;

  rc = store_rank_close(rs->w, rc, &err);
  if (rw->rc == 0 && rc != 0 && !rw->cancelled) {
    rw->rc = rc;
    snprintf(rw->msg, sizeof(rw->msg), "cannot store: %s", err.msg);
  }
  if (rw->rc != 0 && !rw->cancelled && !store_refused(rw))
    store_rank_fail(rs->st, job->id, (int)rw->i, rk->label, rw->msg, NULL);
}

/* The threads one rank's indexing may keep busy (idx_options.threads):
 * the cores shared among the ranks that run at once, so that a single
 * import inflates on one core while it parses on the other, and eight
 * ranks on two index_jobs do not oversubscribe the machine. */
static int rank_threads(const struct cap_job *job)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t at_once = (size_t)job->r->cfg->index_jobs;

  if (job->layout->n < at_once)
    at_once = job->layout->n;
  if (cores < 1 || at_once < 1 || cores / (long)at_once < 1)
    return 1;
  return (int)(cores / (long)at_once);
}

/* Indexes the rank into the store: rw->rc and rw->msg say how it went. */
static void index_rank(struct rank_work *rw, struct idx_options *o,
                       struct rank_store *rs)
{
  struct cap_job *job = rw->super.job;
  const struct cap_rank *rk = &job->layout->ranks[rw->i];
  struct idx_sink sink = { on_head, on_row, rs, NULL };
  struct tr_err err = { 0 };
  char *coll = cap_coll_path(job, rw->i, true);
  /* Where its slices start reading (index/read/read.h, docs/SLICES.md). */
  char *points =
      tr_points_path(job->r->cfg->trace_root, job->id, (int64_t)rw->i, true);

  o->collectives_path = coll;
  o->points_path = points;
  if (coll == NULL || points == NULL) {
    rw->rc = TR_ENOMEM;
    snprintf(rw->msg, sizeof(rw->msg), "cannot make %s/%s", job->log_dir,
             coll == NULL ? "collectives" : "points");
  } else if (rk->file == NULL) {
    rw->rc = TR_ENOTFOUND;
    snprintf(rw->msg, sizeof(rw->msg), "no trace file in %s", rk->label);
  } else if ((rw->rc = idx_file_sink(job->layout->root, rk->file, o, &sink,
                                     &err)) != 0) {
    snprintf(rw->msg, sizeof(rw->msg), "%s", err.msg);
  }
  tr_make_utf8(rw->msg);
  free(coll);
  free(points);
}

/* The rank was stopped by its deadline: a failure naming the setting
 * (docs/API.md). */
static void late_failure(struct rank_work *rw)
{
  rw->rc = TR_ELIMIT;
  snprintf(rw->msg, sizeof(rw->msg),
           "indexing took longer than rank_index_timeout_s (%d s): stopped",
           rw->super.r->cfg->rank_index_timeout_s);
}

static void run_rank(struct cap_work *w)
{
  struct rank_work *rw = (struct rank_work *)w;
  struct cap_job *job = w->job;
  const struct cap_rank *rk = &job->layout->ranks[rw->i];
  /* The state folder's (daemon.c makes it); NULL: $TMPDIR, capped alike. */
  char *spill = tr_state_dir(w->r->cfg->db, "spill");
  struct idx_options o = {
    .format = index_format(job),
    .rules = w->r->rules,
    .rank = (int)rw->i,
    .on_progress = on_idx_progress,
    .ud = (void *)&job->index.read[rw->i],
    .cancel = &rw->stop,
    .max_kernel_names = (uint32_t)w->r->cfg->max_kernel_names,
    .gpu_roof = w->r->cfg->gpu_roof,
    .threads = rank_threads(job),
    .max_inflated_bytes = (uint64_t)w->r->cfg->max_rank_inflated_bytes,
    .max_spill_bytes = (uint64_t)w->r->cfg->max_rank_spill_bytes,
    .spill_dir = spill,
    .captures = rk->caps, /* its capture traces (docs/DECODE.md) */
    .ncaptures = rk->ncaps,
  };
  struct rank_store rs = { rw, NULL, NULL };
  struct tr_err err = { 0 };
  int64_t t0 = tr_now_ns();
  int nice = cap_nice_lower();

  rw->rc = 0; /* a rank tried again starts afresh */
  rw->msg[0] = '\0';
  if ((rs.st = cap_db_take(w->r, &err)) == NULL) {
    rw->rc = err.code ? err.code : TR_EDB;
    snprintf(rw->msg, sizeof(rw->msg), "cannot store: %s", err.msg);
  } else {
    index_rank(rw, &o, &rs);
  }
  rw->cancelled = atomic_load(&rw->stop) && !atomic_load(&rw->late);
  if (atomic_load(&rw->late) && rw->rc != 0)
    late_failure(rw); /* whatever the stop made the indexer say */
  if (rs.st != NULL)
    store_end(rw, &rs);
  if (!rw->cancelled) {
    atomic_fetch_add(
        rw->rc == 0 ? &tr_stats.ranks_indexed : &tr_stats.ranks_failed, 1);
    atomic_fetch_add(&tr_stats.index_bytes, rk->bytes);
    atomic_fetch_add(&tr_stats.index_ns, (uint64_t)(tr_now_ns() - t0));
  }
  /* What the rank's aggregation and its store connection's page cache
   * freed goes back to the system now: else each pool thread's malloc
   * arena keeps its high-water mark resident, and the capture's finish
   * (other threads, other arenas) adds to it. */
  store_release_memory(rs.st);
  cap_db_give(w->r, rs.st);
  malloc_trim(0);
  free(spill);
  cap_nice_restore(nice);
}

static void on_rank_done(struct cap_work *w)
{
  struct rank_work *rw = (struct rank_work *)w;
  struct cap_job *job = w->job;
  const struct cap_rank *rk = &job->layout->ranks[rw->i];

  if (store_refused(rw) && job->ending == END_NONE && cap_work_retry(w, true)) {
    if (w->tries == 1)
      fprintf(stderr, "traced: capture %lld: rank %zu: %s (trying again)\n",
              (long long)job->id, rw->i, rw->msg);
    rw->due_ms = w->due_ms + rank_timeout_ms(job); /* its time anew */
    return; /* still running: the same rank later (run_rank anew) */
  }
  job->index.works[rw->i] = NULL;
  w->r->index_running--;
  job->index.running--;
  if (!rw->cancelled) {
    atomic_store(&job->index.read[rw->i], rk->bytes);
    if (rw->rc == 0)
      job->index.indexed++;
    else {
      job->index.failed++;
      cap_index_failure(job, "rank %zu (%s): %s", rw->i, rk->label, rw->msg);
    }
  }
  if (job->ending == END_NONE && !job->finished) {
    job->index.rank_done(job);
  } else if (job->ending == END_SHUTDOWN && job->index.running == 0) {
    cap_job_finish(job);
  }
  free(rw);
  cap_index_pump(job->r);
}

void cap_index_cancel(struct cap_job *job)
{
  for (size_t i = 0; job->index.works != NULL && i < job->layout->n; i++)
    if (job->index.works[i] != NULL)
      atomic_store(&job->index.works[i]->stop, true);
}

void cap_index_deadlines(struct cap_job *job)
{
  uint64_t now = uv_now(job->r->loop);
  struct rank_work *rw;

  for (size_t i = 0; job->index.works != NULL && i < job->layout->n; i++) {
    if ((rw = job->index.works[i]) == NULL || atomic_load(&rw->stop) ||
        now < rw->due_ms)
      continue;
    fprintf(stderr,
            "traced: capture %lld: rank %zu: past rank_index_timeout_s "
            "(%d s): stopping it\n",
            (long long)job->id, i, job->r->cfg->rank_index_timeout_s);
    atomic_store(&rw->late, true); /* before stop: the worker reads both */
    atomic_store(&rw->stop, true);
  }
}

/* Starts the job's next rank; false when it has none to start. */
static bool take_rank(struct cap_job *job)
{
  struct rank_work *rw;

  if (job == NULL || job->ending != END_NONE || job->finished ||
      job->phase != TR_PHASE_INDEXING || job->index.read == NULL)
    return false;
  while (job->index.next_rank < job->layout->n &&
         job->index.skip[job->index.next_rank])
    job->index.next_rank++;
  if (job->index.next_rank >= job->layout->n ||
      (rw = calloc(1, sizeof(*rw))) == NULL)
    return false;
  rw->i = job->index.next_rank++;
  rw->due_ms = uv_now(job->r->loop) + rank_timeout_ms(job);
  job->index.works[rw->i] = rw;
  job->index.running++;
  job->r->index_running++;
  cap_work_queue(job->r, job, &rw->super, run_rank, on_rank_done);
  return true;
}

void cap_index_pump(struct cap_runner *r)
{
  int k = 0, idle = 0;

  /* Take from each kind's job in turn: none starves. */
  while (r->index_running < r->cfg->index_jobs && idle < TR_NKIND) {
    idle = take_rank(r->queues[k].job) ? 0 : idle + 1;
    k = (k + 1) % TR_NKIND;
  }
}
