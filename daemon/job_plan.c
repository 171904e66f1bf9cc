/*
 * The job's plan (atom/plan.h), made in the pool before the job runs an
 * ATOM script: STOPPING makes it for a capture, and for a sweep's point
 * that launches the sweep's server; BENCHMARK makes it for a point that
 * joins a server already up (docs/SWEEPS.md). The server exports into the
 * job's export_dir: its own trace folder, or the sweep's launch folder,
 * which only the launching point makes fresh.
 */
#include <stdlib.h>

#include "daemon/cap_int.h"

struct plan_work {
  struct cap_work super;
  struct cap_plan *plan;
  void (*then)(struct cap_job *job);
  struct tr_err err;
};

static void run_plan(struct cap_work *w)
{
  struct plan_work *pw = (struct plan_work *)w;
  struct cap_job *job = w->job;
  struct cap_dirs dirs = { job->export_dir, job->log_dir, job->work_dir,
                           job->joins, job->sweep_conc_max };

  atom_plan_build(w->r->cfg, job->params, &dirs, &pw->plan, &pw->err);
}

/* What the capture records of its plan: the traces are its own folder's
 * (a point's leave the launch folder in COLLECTING). */
static json_t *plan_extra(const struct cap_job *job)
{
  json_t *extra = json_deep_copy(job->plan->extra);

  json_object_set_new(extra, "trace_dir", json_string(job->trace_dir));
  if (job->sweep_id != 0)
    json_object_set_new(extra, "launch_dir", json_string(job->export_dir));
  return json_pack("{s:o}", "extra", extra);
}

/* A plan for the stop script of an ended job: kept, never recorded (the
 * job's state is final). */
static void on_stop_plan_done(struct cap_work *w)
{
  struct plan_work *pw = (struct plan_work *)w;
  struct cap_job *job = w->job;
  void (*then)(struct cap_job *) = pw->then;

  if (job->plan == NULL) {
    job->plan = pw->plan;
    pw->plan = NULL;
  }
  atom_plan_free(pw->plan);
  free(pw);
  /* traced stopping leaves the server as a drain does (exports.c). */
  if (job->plan == NULL || job->r->stopping)
    cap_job_finish(job);
  else
    then(job);
}

static void on_plan_done(struct cap_work *w)
{
  struct plan_work *pw = (struct plan_work *)w;
  struct cap_job *job = w->job;
  void (*then)(struct cap_job *) = pw->then;

  if (job->ending != END_NONE || pw->plan == NULL) {
    if (job->ending == END_NONE)
      cap_fail(job, END_FAILED, NULL, "cannot prepare the capture: %s",
               pw->err.msg);
    atom_plan_free(pw->plan);
    free(pw);
    return;
  }
  job->plan = pw->plan;
  free(pw);
  cap_job_merge(job, plan_extra(job));
  then(job);
}

/* False when the work could not be made (the job failed, if it had not
 * ended). */
static bool queue_plan(struct cap_job *job, void (*then)(struct cap_job *job),
                       void (*done)(struct cap_work *w))
{
  struct plan_work *pw = cap_job_work_new(job, sizeof(*pw));

  if (pw == NULL)
    return false;
  pw->then = then;
  cap_work_queue(job->r, job, &pw->super, run_plan, done);
  return true;
}

void cap_job_plan(struct cap_job *job, void (*then)(struct cap_job *job))
{
  (void)queue_plan(job, then, on_plan_done);
}

void cap_job_plan_to_stop(struct cap_job *job,
                          void (*then)(struct cap_job *job))
{
  if (!queue_plan(job, then, on_stop_plan_done))
    cap_job_finish(job);
}
