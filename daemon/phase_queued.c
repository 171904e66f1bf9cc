/*
 * QUEUED: the job leaves the queue (runner.c picked it). A capture goes to
 * STOPPING; an import, or a capture whose complete trace folder survived a
 * restart, to INDEXING; a sweep's point whose server serves (sweep.c) to
 * BENCHMARK, with the ranks its export expects (docs/SWEEPS.md). Only the
 * first move of a queued capture claims its row (cap_enter): a cancel
 * that won in the store ends the job there.
 */
#include "daemon/cap_int.h"

int phase_queued_budget_s(const struct cap_job *job)
{
  (void)job;
  return 0;
}

void phase_queued_enter(struct cap_job *job)
{
  int n = job->export.ranks_expected;

  if (job->is_import || job->recovered)
    cap_enter(job, TR_PHASE_INDEXING, NULL);
  else if (job->joins)
    cap_enter(job, TR_PHASE_BENCHMARK,
              json_pack("{s:{s:s,s:s,s:s,s:{s:i,s:s}},s:{s:i}}", "extra",
                        "trace_dir", job->trace_dir, "log_dir", job->log_dir,
                        "launch_dir", job->export_dir, "export_ranks",
                        "expected", n, "source", job->export.ranks_source,
                        "progress", "ranks_expected", n));
  else
    cap_enter(job, TR_PHASE_STOPPING,
              json_pack("{s:{s:s,s:s}}", "extra", "trace_dir", job->trace_dir,
                        "log_dir", job->log_dir));
}
