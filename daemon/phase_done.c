/*
 * DONE: every rank is indexed and the status "done" is stored (cap_enter
 * writes it with the phase). The job ends; a server left by a good capture
 * stays up, as the capture-trace skill leaves it.
 */
#include "daemon/cap_int.h"

int phase_done_budget_s(const struct cap_job *job)
{
  (void)job;
  return 0;
}

void phase_done_enter(struct cap_job *job)
{
  uv_timer_stop(&job->progress_timer);
  cap_job_finish(job);
}
