/*
 * QUEUED: the job leaves the queue (runner.c picked it). A capture goes to
 * STOPPING; an import, or a capture whose complete trace folder survived a
 * restart, to INDEXING. Only the first move of a queued capture claims its
 * row (cap_enter): a cancel that won in the store ends the job there.
 */
#include "daemon/cap_int.h"

int phase_queued_budget_s(const struct cap_job *job)
{
  (void)job;
  return 0;
}

void phase_queued_enter(struct cap_job *job)
{
  if (job->is_import || job->recovered)
    cap_enter(job, TR_PHASE_INDEXING, NULL);
  else
    cap_enter(job, TR_PHASE_STOPPING,
              json_pack("{s:{s:s,s:s}}", "extra", "trace_dir", job->trace_dir,
                        "log_dir", job->log_dir));
}
