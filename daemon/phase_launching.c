/*
 * LAUNCHING: the server log's end is recorded (only what comes after
 * belongs to this launch), then ATOM's start script launches the server
 * with the profiler folder. Its exit 0 is not readiness (docs/ATOM.md:
 * after its 120 tries it exits 0 with the server still loading). A script
 * that fails is reported with its own last lines: before "Server started
 * in background" (start_atom_server.sh:94) it stopped under `set -euo
 * pipefail` before the server started (a rocm-smi that is missing, a log
 * folder that is not there), after it the server died: the capture then
 * quotes what the server log says decided it (watch.c, cap_watch_cause():
 * the fatal marker, a traceback's exception, the first error), and the
 * log is copied into logs/<id>/server.log before the next launch truncates
 * ATOM's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

#define TAIL_BYTES 4096
#define TAIL_LINES 4
/* Bytes of the dead launch's server log read at most: what a load writes
 * before it dies (its copy is logs/<id>/server.log). */
#define LOG_READ_MAX ((uint64_t)64 << 20)

int phase_launching_budget_s(const struct cap_job *job)
{
  return job->r->cfg->launch_timeout_s + 10;
}

struct tail_work {
  struct cap_work super;
  bool started;            /* the script started the server */
  char lines[TAIL_BYTES];  /* its last lines, " | " between them */
};

/* The last TAIL_LINES non-empty lines of text, joined into out. */
static void last_lines(char *text, char *out, size_t size)
{
  char *line[TAIL_LINES] = { 0 }, *save = NULL;
  size_t n = 0, used = 0;

  for (char *l = strtok_r(text, "\n", &save); l != NULL;
       l = strtok_r(NULL, "\n", &save))
    if (l[strspn(l, " \t\r")] != '\0')
      line[n++ % TAIL_LINES] = l;
  out[0] = '\0';
  for (size_t i = n > TAIL_LINES ? n - TAIL_LINES : 0; i < n && used < size;
       i++)
    used += (size_t)snprintf(out + used, size - used, "%s%s",
                             used ? " | " : "", line[i % TAIL_LINES]);
}

static void run_tail(struct cap_work *w)
{
  struct tail_work *tw = (struct tail_work *)w;
  char path[4096], *text;

  text = cap_read_tail(cap_log_path(w->job, "launcher", path, sizeof(path)),
                       TAIL_BYTES);
  tw->started =
      text != NULL && strstr(text, "Server started in background") != NULL;
  if (text != NULL)
    last_lines(text, tw->lines, sizeof(tw->lines));
  free(text);
  /* The server's own log, to its end: it is dead or never started. */
  for (uint64_t from = w->job->scan.bytes_seen;
       w->job->scan.bytes_seen - from < LOG_READ_MAX;) {
    uint64_t before = w->job->scan.bytes_seen;

    cap_scan_run(&w->job->scan);
    if (w->job->scan.bytes_seen == before)
      break;
  }
}

static void on_tail(struct cap_work *w)
{
  struct tail_work *tw = (struct tail_work *)w;
  struct cap_job *job = w->job;
  long long status = (long long)job->launch_exit;
  char cause[CAP_SCAN_LINE + 256];

  job->watch.scanning = false;
  cap_watch_cause(job, cause, sizeof(cause));
  if (job->ending != END_NONE)
    ;
  else if (!tw->started)
    cap_fail(job, END_FAILED, "launcher",
             "the start script exited %lld before starting the server; its "
             "last lines: %s%s",
             status, tw->lines[0] ? tw->lines : "(none)",
             cap_rocm_smi_on_path() ? ""
                                    : " (rocm-smi is not on traced's PATH: "
                                      "ATOM's script stops at its first "
                                      "rocm-smi call)");
  else
    cap_fail(job, END_FAILED, "server",
             "the server died while loading: %s (the start script exited "
             "%lld; its last lines: %s)",
             cause, status, tw->lines);
  free(tw);
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
    /* The scan is the pool's until on_tail() (logscan.h); no look of the
     * server runs in this phase. */
    job->watch.scanning = true;
    cap_job_queue_new(job, sizeof(struct tail_work), run_tail, on_tail);
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
