/*
 * LAUNCHING: the server log's end is recorded (only what comes after
 * belongs to this launch), then ATOM's start script launches the server
 * with the profiler folder. Its exit 0 is not readiness (docs/ATOM.md: after
 * its 120 tries it exits 0 with the server still loading); its exit 1
 * before it wrote the log is ATOM's script stopping at its first rocm-smi
 * call (`set -euo pipefail`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/cap_int.h"

int phase_launching_budget_s(const struct cap_job *job)
{
  return job->r->cfg->launch_timeout_s + 10;
}

/* True when an executable rocm-smi is on traced's PATH, which the scripts
 * inherit. */
static bool rocm_smi_on_path(void)
{
  const char *path = getenv("PATH");
  char *copy = strdup(path ? path : ""), *save = NULL, file[4096];
  bool found = false;

  for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
       d = strtok_r(NULL, ":", &save)) {
    snprintf(file, sizeof(file), "%s/rocm-smi", d);
    found = access(file, X_OK) == 0;
  }
  free(copy);
  return found;
}

/* The start script failed: say so, and when it never wrote the server log,
 * what ATOM's script does first. */
static void on_failed_scan(struct cap_job *job, const char *dead)
{
  int64_t status = job->launch_exit;

  (void)dead;
  if (job->scan.bytes_seen == 0)
    cap_fail(job, END_FAILED, "launcher",
             "start script failed before starting the server (exit %lld, "
             "the server log untouched): is rocm-smi on PATH? (%s on "
             "traced's PATH)",
             (long long)status, rocm_smi_on_path() ? "it is" : "it is not");
  else
    cap_fail(job, END_FAILED, "launcher", "the start script exited %lld",
             (long long)status);
}

static void on_launcher_exit(struct cap_proc *p, int64_t status, int sig,
                             bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)p;
  /* The launcher stays open: the server it started lives in its group. */
  if (job->ending != END_NONE)
    return;
  if (status != 0 && sig == 0 && !timed_out) {
    job->launch_exit = status;
    cap_watch_fresh(job, false, on_failed_scan);
  } else if (cap_script_ok(job, "launcher", status, sig, timed_out,
                           job->r->cfg->launch_timeout_s)) {
    cap_enter(job, TR_PHASE_WAITING_READY, NULL);
  }
}

static void launch(struct cap_job *job)
{
  cap_spawn(job, job->plan->start_argv, job->plan->start_env, "launcher",
            job->r->cfg->launch_timeout_s, on_launcher_exit, &job->launcher);
}

void phase_launching_enter(struct cap_job *job)
{
  cap_watch_snapshot(job, launch);
}
