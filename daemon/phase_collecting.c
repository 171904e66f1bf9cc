/*
 * COLLECTING, of a sweep's point once its window is exported: the files
 * the window added to the sweep's launch folder are moved into the
 * point's own trace folder (sweep.c: renames, the graph-capture traces
 * hard-linked), so that the next point's export meets the file rule of
 * one .gz per rank again and this point is indexed, sliced and deleted
 * as a capture of its own (docs/SWEEPS.md). Then INDEXING, or, when the
 * bench completed fewer prompts than it sent, the failure of a partial
 * workload with its traces kept in the point's folder.
 */
#include <stdlib.h>

#include "daemon/cap_int.h"

/* Renames within one file system take no time the trace's size decides. */
#define COLLECT_BUDGET_S 600

int phase_collecting_budget_s(const struct cap_job *job)
{
  (void)job;
  return COLLECT_BUDGET_S;
}

struct collect_work {
  struct cap_work super;
  int rc;
  struct tr_err err;
};

static void run_collect(struct cap_work *w)
{
  struct collect_work *cw = (struct collect_work *)w;

  cw->rc = cap_sweep_collect(w->job->export_dir, w->job->trace_dir, &cw->err);
}

static void on_collected(struct cap_work *w)
{
  struct collect_work *cw = (struct collect_work *)w;
  struct cap_job *job = w->job;

  job->collected = cw->rc == 0;
  if (job->ending != END_NONE)
    ;
  else if (cw->rc != 0)
    cap_fail(job, END_FAILED, NULL,
             "cannot move the point's traces out of the sweep's launch "
             "folder: %s",
             cw->err.msg);
  else if (job->bench.partial[0] != '\0')
    cap_export_fail_partial(job);
  else
    cap_enter(job, TR_PHASE_INDEXING, NULL);
  free(cw);
}

void phase_collecting_enter(struct cap_job *job)
{
  cap_job_queue_new(job, sizeof(struct collect_work), run_collect,
                    on_collected);
}
