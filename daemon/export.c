/*
 * The end of the BENCHMARK phase (profiler calls with profile_control
 * daemon, the bench's result file) and the EXPORTING phase: ATOM's export
 * is asynchronous (docs/ATOM.md: /stop_profile returns before the files
 * are written), so the trace folder is polled until every rank holds its
 * .gz and no .json, as the skill does, at most export_max_polls times.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/cap_int.h"

#define BENCH_RESULT_MAX (16 * 1024 * 1024)
/* File times come from a coarse clock (a jiffy behind ours at most). */
#define MTIME_SLACK_NS   (100 * 1000 * 1000LL)

static void enter_exporting(struct cap_job *job, json_t *bench, json_t *note);

static void fail_profile(struct cap_job *job, const char *msg)
{
  char path[4096];

  cap_fail(job, END_FAILED, cap_log_path(job, "server", path, sizeof(path)),
           "%s", msg);
}

static void read_bench(struct cap_job *job);

/* /start_profile before the bench, /stop_profile after it. */
static void on_profile(void *ud, bool ok, long status, const char *msg)
{
  struct cap_job *job = ud;

  (void)status;
  job->http = NULL;
  if (job->ending != END_NONE || job->phase != CAP_BENCHMARK)
    return;
  if (!ok)
    fail_profile(job, msg);
  else if (job->bench_end_ns == 0)
    cap_bench_run(job);
  else
    read_bench(job);
}

static void profile_call(struct cap_job *job, const char *which)
{
  const struct cfg *c = job->r->cfg;

  if (cap_atom_profile(job->r->http, c->atom_host, c->atom_port, which, 60000,
                       on_profile, job, &job->http) != 0)
    fail_profile(job, "cannot call ATOM's profiler route");
}

void cap_bench_start(struct cap_job *job)
{
  if (job->r->cfg->profile_control == CFG_PROFILE_DAEMON)
    profile_call(job, "start");
  else
    cap_bench_run(job);
}

/* ---- the bench's result file ---- */

struct bench_work {
  struct cap_work super;
  json_t *bench; /* the result, or NULL */
  json_t *note;  /* extra.bench_result: what was read and why */
};

/* ATOM's bench exits 0 even when requests failed (the server reset them):
 * a result with fewer completed than sent says so, for the person reading
 * the capture (the trace then holds a partial workload). */
static void note_short_run(struct bench_work *bw)
{
  json_t *done = json_object_get(bw->bench, "completed");
  json_t *sent = json_object_get(bw->bench, "num_prompts");
  char msg[128];

  if (!json_is_integer(done) || !json_is_integer(sent) ||
      json_integer_value(done) >= json_integer_value(sent))
    return;
  snprintf(msg, sizeof(msg), "the bench completed %lld of %lld prompts",
           (long long)json_integer_value(done),
           (long long)json_integer_value(sent));
  json_object_set_new(bw->note, "warning", json_string(msg));
}

/* Only a file written during this capture's bench window is its result:
 * one left by an earlier run is not. */
static void run_bench_read(struct cap_work *w)
{
  struct bench_work *bw = (struct bench_work *)w;
  const char *path = w->r->cfg->bench_result;
  struct cap_job *job = w->job;
  struct stat st;
  int64_t mtime;
  const char *why = NULL;

  if (stat(path, &st) != 0) {
    why = "no result file";
  } else {
    mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime < job->bench_start_ns - MTIME_SLACK_NS ||
        mtime > job->bench_end_ns + 1000000000LL)
      why = "the file was not written during this bench";
    else if (st.st_size > BENCH_RESULT_MAX)
      why = "the file is too large";
    else if ((bw->bench = json_load_file(path, 0, NULL)) == NULL)
      why = "the file is not JSON";
  }
  if (bw->bench != NULL && !json_is_object(bw->bench))
    bw->bench = json_pack("{s:o}", "result", bw->bench);
  bw->note = json_pack("{s:s,s:b}", "path", path, "used", why == NULL);
  if (why != NULL)
    json_object_set_new(bw->note, "reason", json_string(why));
  else
    note_short_run(bw);
}

static void on_bench_read_done(struct cap_work *w)
{
  struct bench_work *bw = (struct bench_work *)w;
  struct cap_job *job = w->job;

  if (job->ending == END_NONE)
    enter_exporting(job, bw->bench, bw->note);
  else {
    json_decref(bw->bench);
    json_decref(bw->note);
  }
  free(bw);
}

static void read_bench(struct cap_job *job)
{
  cap_job_queue_new(job, sizeof(struct bench_work), run_bench_read,
                    on_bench_read_done);
}

void cap_bench_exited(struct cap_job *job)
{
  if (job->r->cfg->profile_control == CFG_PROFILE_DAEMON)
    profile_call(job, "stop");
  else
    read_bench(job);
}

/* ---- EXPORTING ---- */

struct export_work {
  struct cap_work super;
  struct cap_layout *layout;
  struct tr_err err;
};

static void run_export_scan(struct cap_work *w)
{
  struct export_work *ew = (struct export_work *)w;

  cap_layout_scan(w->job->trace_dir, &ew->layout, &ew->err);
}

static void export_poll_failed(struct cap_job *job, const char *problems)
{
  const struct cfg *c = job->r->cfg;
  char path[4096];

  cap_fail(job, END_FAILED, cap_log_path(job, "server", path, sizeof(path)),
           "the export is not complete after %d polls %d s apart: %s",
           job->export_polls, c->export_poll_s, problems);
}

static void on_export_scan_done(struct cap_work *w)
{
  struct export_work *ew = (struct export_work *)w;
  struct cap_job *job = w->job;
  struct cap_layout *l = ew->layout;
  int tp = cap_param_int(job->params, "tp", 8);
  char problems[1024] = "cannot read the trace folder";

  free(ew);
  job->export_busy = false;
  if (job->ending != END_NONE || job->phase != CAP_EXPORTING) {
    cap_layout_free(l);
    return;
  }
  job->export_polls++;
  if (l != NULL && cap_layout_complete(l, tp, problems, sizeof(problems))) {
    job->layout = l;
    cap_enter_indexing(job);
    return;
  }
  cap_job_progress(job, json_pack("{s:i,s:i,s:i}", "ranks_exported",
                                  l ? l->exported : 0, "orphan_json",
                                  l ? l->orphan_json : 0, "export_polls",
                                  job->export_polls));
  cap_layout_free(l);
  if (job->export_polls >= job->r->cfg->export_max_polls)
    export_poll_failed(job, problems);
}

static void on_export_tick(uv_timer_t *t)
{
  struct cap_job *job = t->data;
  struct export_work *ew;

  if (job->export_busy || (ew = calloc(1, sizeof(*ew))) == NULL)
    return;
  job->export_busy = true;
  cap_work_queue(job->r, job, &ew->super, run_export_scan, on_export_scan_done);
}

static void act_exporting(struct cap_job *job)
{
  uint64_t every_ms = (uint64_t)job->r->cfg->export_poll_s * 1000;

  uv_timer_start(&job->tick, on_export_tick, every_ms, every_ms);
}

static void enter_exporting(struct cap_job *job, json_t *bench, json_t *note)
{
  json_t *merges = json_pack(
      "{s:{s:i,s:i,s:i,s:i},s:{s:o}}", "progress", "ranks_expected",
      cap_param_int(job->params, "tp", 8), "ranks_exported", 0, "orphan_json",
      0, "export_polls", 0, "extra", "bench_result", note);

  assert(job->phase == CAP_BENCHMARK);
  if (bench != NULL)
    json_object_set_new(merges, "bench", bench);
  cap_transition(job, CAP_EXPORTING, merges, act_exporting);
}
