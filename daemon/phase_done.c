/*
 * DONE: every rank is indexed, the capture's results are stored
 * (phase_finishing.c)
 * and the status "done" is stored (cap_enter writes it with the phase).
 * Its verdict goes to the webhook (webhook.c: it outlives the job), and
 * the job ends; a server left by a good capture stays up, as the
 * capture-trace skill leaves it.
 */
#include "daemon/cap_int.h"

/* What the webhook receives. */
static json_t *webhook_body(const struct cap_job *job)
{
  return json_pack("{s:s,s:I,s:s,s:O,s:O}", "event", "capture_done", "capture",
                   (json_int_t)job->id, "kind",
                   job->is_import ? "import" : "capture", "params", job->params,
                   "verdict", job->verdict);
}

int phase_done_budget_s(const struct cap_job *job)
{
  (void)job;
  return 0;
}

void phase_done_enter(struct cap_job *job)
{
  uv_timer_stop(&job->progress_timer);
  if (job->verdict != NULL)
    cap_webhook_send(job->r->webhook, job->id, webhook_body(job));
  cap_job_finish(job);
}
