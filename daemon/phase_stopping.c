/*
 * STOPPING: the capture's plan is made (folders, argv, presets: plan.c, in
 * the pool: job_plan.c) and recorded; who holds GPU memory is asked
 * (gpu.c: a holder that is not ATOM's fails the capture here, before
 * ATOM's scripts could kill it); ATOM's stop script ends whatever server ran
 * before (its launch arguments must change: a profiler folder); the GPUs are
 * asked again, before the start script runs, also when the stop script
 * exited 1 for GPU memory still in use: memory held from outside a
 * container is not the capture's to free (gpu.c).
 */
#include "daemon/cap_int.h"

int phase_stopping_budget_s(const struct cap_job *job)
{
  /* The script's own limit and the checks' win. */
  return job->r->cfg->stop_timeout_s + 2 * cap_gpu_check_budget_s() + 10;
}

static void to_launching(struct cap_job *job)
{
  cap_enter(job, TR_PHASE_LAUNCHING, NULL);
}

static void on_stop_exit(struct cap_proc *p, int64_t status, int sig,
                         bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)p;
  cap_proc_close(job->child);
  job->child = NULL;
  /* Its exit 1 is GPU memory still in use after its force kill
   * (stop_atom_server.sh:82-86): the check says whose (gpu.c). */
  job->gpu.stop_failed =
      status == 1 && sig == 0 && !timed_out && job->ending == END_NONE;
  if (job->gpu.stop_failed || cap_script_ok(job, "stop", status, sig, timed_out,
                                            job->r->cfg->stop_timeout_s))
    cap_gpu_check(job, "gpu-before-start", to_launching);
}

static void run_stop_script(struct cap_job *job)
{
  cap_spawn(job, job->plan->stop_argv, NULL, "stop",
            job->r->cfg->stop_timeout_s, on_stop_exit, &job->child);
}

static void after_plan(struct cap_job *job)
{
  cap_gpu_check(job, "gpu-before-stop", run_stop_script);
}

void phase_stopping_enter(struct cap_job *job)
{
  cap_job_plan(job, after_plan);
}
