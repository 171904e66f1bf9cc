/*
 * EXPORTING: the profiler is stopping and every rank writes its trace
 * (docs/ATOM.md): X.pt.trace.json, then X.pt.trace.json.gz, then the .json
 * is removed and "Rank N: trace exported to PATH" is logged; on an error
 * both files go and "Rank N: failed to export trace to PATH" is logged.
 *
 * With profile_control daemon the phase POSTs /stop_profile, which answers
 * once rank 0 has exported; with bench the profiled run may still be
 * waiting on its own /stop_profile. Every export_poll_s the trace folder
 * is scanned (the file rule, .gz present and no .json, is the proof of
 * completion) and the server looked at: a failed export or a dead worker
 * fails the capture at once, naming the rank and quoting the line.
 * Complete and the run (or the call) over: INDEXING.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

int phase_exporting_budget_s(const struct cap_job *job)
{
  const struct cfg *c = job->r->cfg;

  return c->export_poll_s * (c->export_max_polls + 1) + 60;
}

/* The run or the /stop_profile call the export waits for is over. */
static bool waited_for(const struct cap_job *job)
{
  if (job->r->cfg->profile_control == CFG_PROFILE_DAEMON)
    return job->export.stop_answered;
  return job->bench.done && job->bench.note != NULL;
}

/* ---- the trace folder ---- */

struct scan_work {
  struct cap_work super;
  struct cap_layout *layout;
  struct tr_err err;
};

static void run_folder_scan(struct cap_work *w)
{
  struct scan_work *sw = (struct scan_work *)w;

  cap_layout_scan(w->job->trace_dir, &sw->layout, &sw->err);
}

static void poll_failed(struct cap_job *job, const char *problems)
{
  const struct cfg *c = job->r->cfg;

  cap_fail(job, END_FAILED, "server",
           "the export is not complete after %d polls %d s apart: %s",
           job->export.polls, c->export_poll_s, problems);
}

static void on_folder_scan(struct cap_work *w)
{
  struct scan_work *sw = (struct scan_work *)w;
  struct cap_job *job = w->job;
  struct cap_layout *l = sw->layout;
  char problems[1024] = "cannot read the trace folder";
  bool complete;

  free(sw);
  job->export.busy = false;
  if (job->ending != END_NONE || job->phase != TR_PHASE_EXPORTING) {
    cap_layout_free(l);
    return;
  }
  job->export.polls++;
  complete = l != NULL && cap_layout_complete(l, job->export.ranks_expected,
                                              problems, sizeof(problems));
  if (complete && waited_for(job)) {
    job->layout = l;
    cap_enter(job, TR_PHASE_INDEXING, NULL);
    return;
  }
  cap_job_progress(job, json_pack("{s:i,s:i,s:i,s:i}", "ranks_exported",
                                  l ? l->exported : 0, "orphan_json",
                                  l ? l->orphan_json : 0, "export_polls",
                                  job->export.polls, "exports_logged",
                                  job->scan.traces_exported));
  cap_layout_free(l);
  if (job->export.polls >= job->r->cfg->export_max_polls)
    poll_failed(job, complete ? "the bench is still waiting on "
                                "/stop_profile"
                              : problems);
}

/* ---- the server ---- */

/* "... Rank 3: failed to export trace to ..." -> 3, or -1. */
static int rank_of(const char *line)
{
  const char *at = strstr(line, "Rank ");
  char *end = NULL;
  long n = at != NULL ? strtol(at + 5, &end, 10) : -1;

  return at != NULL && end != at + 5 && n >= 0 && n <= INT_MAX ? (int)n : -1;
}

static void on_look(struct cap_job *job, const char *dead)
{
  const char *failed = job->scan.export_failed;

  if (failed[0] != '\0')
    cap_fail(job, END_FAILED, "server",
             "rank %d failed to export its trace (ATOM removes both files): "
             "%s",
             rank_of(failed), failed);
  else if (dead != NULL)
    cap_fail(job, END_FAILED, "server", "the server died during the export: %s",
             dead);
}

static void on_tick(uv_timer_t *t)
{
  struct cap_job *job = t->data;
  struct scan_work *sw;

  cap_watch_tick(job, true, on_look);
  if (job->export.busy || (sw = calloc(1, sizeof(*sw))) == NULL)
    return;
  job->export.busy = true;
  cap_work_queue(job->r, job, &sw->super, run_folder_scan, on_folder_scan);
}

/* ---- what the export waits for ---- */

static void on_result(struct cap_job *job)
{
  cap_job_merge(job, cap_bench_merges(job));
}

static void on_bench_exit(struct cap_job *job)
{
  const struct cap_bench *b = &job->bench;

  if (!cap_script_ok(job, "bench", b->status, b->sig, b->timed_out,
                     job->r->cfg->bench_timeout_s))
    return;
  job->bench.done = true;
  cap_bench_read(job, on_result);
}

/* ATOM answers 500 when its broadcast timed out (ATOM_PROFILER_TIMEOUT):
 * ranks may still be exporting, and their files will say. */
static void on_stop_profile(void *ud, const struct cap_http_answer *a)
{
  struct cap_job *job = ud;

  job->http = NULL;
  if (!a->ok && (a->status != 500 || strstr(a->msg, "imed out") == NULL)) {
    cap_fail(job, END_FAILED, "server", "%s", a->msg);
    return;
  }
  job->export.stop_answered = true;
  if (!a->ok)
    cap_job_merge(job, json_pack("{s:{s:s}}", "extra", "stop_profile", a->msg));
}

static void wait_for_run(struct cap_job *job)
{
  const struct cfg *c = job->r->cfg;

  if (c->profile_control == CFG_PROFILE_DAEMON) {
    if (cap_atom_profile(job->r->http, c->atom_host, c->atom_port, "stop",
                         cap_profile_timeout_ms(job), on_stop_profile, job,
                         &job->http) != 0)
      cap_fail(job, END_FAILED, NULL, "cannot call ATOM's /stop_profile");
  } else if (job->bench.proc != NULL) {
    job->bench.on_exit = on_bench_exit;
  } else if (!job->bench.done) {
    on_bench_exit(job); /* it exited between the phases */
  }
}

void phase_exporting_enter(struct cap_job *job)
{
  uint64_t every_ms = (uint64_t)job->r->cfg->export_poll_s * 1000;

  job->export.polls = 0;
  cap_job_progress(job, json_pack("{s:i,s:i,s:i,s:i}", "ranks_exported", 0,
                                  "orphan_json", 0, "export_polls", 0,
                                  "exports_logged", 0));
  wait_for_run(job);
  uv_timer_start(&job->tick, on_tick, 0, every_ms);
}
