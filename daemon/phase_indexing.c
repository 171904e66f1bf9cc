/*
 * INDEXING, of captures and imports: the trace folder (or an import's
 * path) is scanned, then its ranks are handed to the pool (index_ranks.c:
 * each in one pool job with its own store connection, at most index_jobs
 * at once over all jobs). A rank that fails is recorded and the others
 * are kept. All indexed: FINISHING.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

/* The trace folder or file this job indexes. */
static const char *index_path(const struct cap_job *job)
{
  if (job->is_import)
    return json_string_value(json_object_get(job->params, "path"));
  return job->trace_dir;
}

/* Before the folder is scanned its size is not known: an hour for the
 * scan, re-armed with cap_trace_budget_s() once it is (begin()). */
#define SCAN_BUDGET_S 3600

int phase_indexing_budget_s(const struct cap_job *job)
{
  (void)job;
  return SCAN_BUDGET_S;
}

/* Every rank is in: FINISHING, or a failure naming the ranks that are
 * not. */
static void check_complete(struct cap_job *job)
{
  if (job->ending != END_NONE || job->phase != TR_PHASE_INDEXING ||
      job->index.running > 0 || job->index.next_rank < job->layout->n)
    return;
  if (job->index.failed > 0)
    cap_fail(job, END_FAILED, NULL,
             "%d of %zu ranks could not be indexed (the others are kept): "
             "%s",
             job->index.failed, job->layout->n, job->index.failures);
  else
    cap_enter(job, TR_PHASE_FINISHING,
              json_pack("{s:{s:i,s:I}}", "progress", "ranks_indexed",
                        job->index.indexed, "bytes_indexed",
                        (json_int_t)cap_index_bytes_read(job)));
}

/* A rank is in (index_ranks.c): its progress, then the phase's end when
 * it was the last. */
static void on_rank_in(struct cap_job *job)
{
  job->index.bytes_reported = cap_index_bytes_read(job);
  cap_job_progress(job, json_pack("{s:i,s:I}", "ranks_indexed",
                                  job->index.indexed, "bytes_indexed",
                                  (json_int_t)job->index.bytes_reported));
  check_complete(job);
}

static void on_progress_tick(uv_timer_t *t)
{
  struct cap_job *job = t->data;
  uint64_t now = cap_index_bytes_read(job);

  cap_index_deadlines(job);
  if (now == job->index.bytes_reported)
    return;
  job->index.bytes_reported = now;
  cap_job_progress(job, json_pack("{s:I}", "bytes_indexed", (json_int_t)now));
}

/* After a restart: ranks stored before it are not indexed again. */
static void skip_stored(struct cap_job *job)
{
  size_t i, k;
  json_t *stored;

  json_array_foreach(job->stored_ranks, k, stored) {
    const char *label = json_string_value(json_object_get(stored, "label"));
    const char *status = json_string_value(json_object_get(stored, "status"));

    for (i = 0; label != NULL && i < job->layout->n; i++) {
      if (strcmp(job->layout->ranks[i].label, label) != 0)
        continue;
      job->index.skip[i] = true;
      atomic_store(&job->index.read[i], job->layout->ranks[i].bytes);
      if (status != NULL && strcmp(status, "done") == 0) {
        job->index.indexed++;
      } else {
        job->index.failed++;
        cap_index_failure(job, "rank %zu (%s): failed before the restart", i,
                          label);
      }
    }
  }
}

static void begin(struct cap_job *job)
{
  const struct cap_layout *l = job->layout;

  job->index.rank_done = on_rank_in;
  job->index.read = calloc(l->n ? l->n : 1, sizeof(*job->index.read));
  job->index.skip = calloc(l->n ? l->n : 1, sizeof(*job->index.skip));
  job->index.works = calloc(l->n ? l->n : 1, sizeof(*job->index.works));
  if (job->index.read == NULL || job->index.skip == NULL ||
      job->index.works == NULL) {
    cap_fail(job, END_FAILED, NULL, "out of memory");
    return;
  }
  skip_stored(job);
  cap_arm_deadline(job, cap_trace_budget_s(job));
  job->index.bytes_reported = cap_index_bytes_read(job);
  cap_job_progress(job, json_pack("{s:i,s:i,s:i,s:I,s:i,s:I}", "ranks_expected",
                                  (int)l->n, "ranks_exported", l->exported,
                                  "orphan_json", l->orphan_json, "bytes_total",
                                  (json_int_t)l->bytes_total, "ranks_indexed",
                                  job->index.indexed, "bytes_indexed",
                                  (json_int_t)job->index.bytes_reported));
  uv_timer_start(&job->progress_timer, on_progress_tick, 1000, 1000);
  cap_index_pump(job->r);
  check_complete(job);
}

struct layout_work {
  struct cap_work super;
  struct cap_layout *layout;
  struct tr_err err;
};

static void run_layout(struct cap_work *w)
{
  struct layout_work *lw = (struct layout_work *)w;
  const char *path = index_path(w->job);

  if (path == NULL)
    tr_err_set(&lw->err, TR_EINVAL, "path", "no path to index");
  else
    cap_layout_scan(path, &lw->layout, &lw->err);
}

static void on_layout_done(struct cap_work *w)
{
  struct layout_work *lw = (struct layout_work *)w;
  struct cap_job *job = w->job;
  struct cap_layout *l = lw->layout;

  if (job->ending != END_NONE) {
    cap_layout_free(l);
  } else if (l == NULL) {
    cap_fail(job, END_FAILED, NULL, "%s", lw->err.msg);
  } else if (l->n == 0) {
    cap_layout_free(l);
    cap_fail(job, END_FAILED, NULL, "no trace files in %s", index_path(job));
  } else {
    job->layout = l;
    begin(job);
  }
  free(lw);
}

void phase_indexing_enter(struct cap_job *job)
{
  if (job->layout != NULL)
    begin(job);
  else
    cap_job_queue_new(job, sizeof(struct layout_work), run_layout,
                      on_layout_done);
}
