/*
 * Runs of ATOM's bench script (run_benchmark.sh) and its result file. The
 * phase that waits for a run sets job->bench.on_exit: BENCHMARK for the
 * warm-up and the profiled run, EXPORTING when the profiled run is still
 * waiting on its /stop_profile as the export starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "daemon/cap_int.h"

#define RESULT_MAX     (16 * 1024 * 1024)
/* File times come from a coarse clock (a jiffy behind ours at most). */
#define MTIME_SLACK_NS (100 * 1000 * 1000LL)

static void on_exit_cb(struct cap_proc *p, int64_t status, int sig,
                       bool timed_out, void *ud)
{
  struct cap_job *job = ud;
  struct cap_bench *b = &job->bench;

  cap_proc_close(p);
  b->proc = NULL;
  b->end_ns = tr_now_ns();
  b->status = status;
  b->sig = sig;
  b->timed_out = timed_out;
  if (b->on_exit != NULL)
    b->on_exit(job);
}

struct folders_work {
  struct cap_work super;
  char **argv;
  struct tr_err err;
};

/* ATOM's bench writes its log and result under a folder it never makes
 * (run_benchmark.sh:24,75): made again before every run. */
static void run_folders(struct cap_work *w)
{
  struct folders_work *fw = (struct folders_work *)w;

  cap_atom_folders(w->r->cfg, NULL, &fw->err);
}

static void on_folders(struct cap_work *w)
{
  struct folders_work *fw = (struct folders_work *)w;
  struct cap_job *job = w->job;
  struct cap_bench *b = &job->bench;

  if (job->ending == END_NONE && fw->err.code != 0)
    cap_fail(job, END_FAILED, NULL, "%s", fw->err.msg);
  else if (job->ending == END_NONE) {
    b->start_ns = tr_now_ns();
    b->end_ns = 0;
    cap_spawn(job, fw->argv, NULL, "bench", job->r->cfg->bench_timeout_s,
              on_exit_cb, &b->proc);
  }
  free(fw);
}

void cap_bench_start(struct cap_job *job, char **argv)
{
  struct folders_work *fw = cap_job_work_new(job, sizeof(*fw));

  if (fw == NULL)
    return;
  fw->argv = argv;
  cap_work_queue(job->r, job, &fw->super, run_folders, on_folders);
}

/* ---- the result file ---- */

struct result_work {
  struct cap_work super;
  void (*then)(struct cap_job *job);
  json_t *result; /* or NULL */
  json_t *note;   /* what was read and why */
};

/* ATOM's bench exits 0 even when requests failed (the server reset them);
 * ATOM CI rejects a result whose completed is not num_prompts
 * (.github/workflows/benchmark-tmpl.yml:232-238), and so does traced: the
 * trace holds a partial workload (docs/ATOM.md, "A partial workload"). */
static void note_short_run(json_t *result, json_t *note)
{
  json_t *done = json_object_get(result, "completed");
  json_t *sent = json_object_get(result, "num_prompts");
  char msg[160];

  if (!json_is_integer(done) || !json_is_integer(sent) ||
      json_integer_value(done) == json_integer_value(sent))
    return;
  snprintf(msg, sizeof(msg),
           "the bench completed %lld of %lld prompts (ATOM CI rejects such "
           "a run)",
           (long long)json_integer_value(done),
           (long long)json_integer_value(sent));
  json_object_set_new(note, "partial", json_string(msg));
}

/* Why the file at path is not this run's result, or NULL when it is
 * (*out then holds it). Only a file written during the run counts: one
 * left by an earlier run is not. */
static const char *read_result(const char *path, const struct cap_bench *b,
                               json_t **out)
{
  struct stat st;
  int fd = tr_open_file(NULL, path, RESULT_MAX, &st, NULL);
  int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  const char *why = NULL;

  if (fd == -ENOENT)
    return "no result file";
  if (fd < 0)
    return "not a regular file of at most 16 MiB";
  if (mtime < b->start_ns - MTIME_SLACK_NS || mtime > b->end_ns + 1000000000LL)
    why = "the file was not written during this bench";
  else if ((*out = json_loadfd(fd, 0, NULL)) == NULL)
    why = "the file is not JSON";
  close(fd);
  return why;
}

static void run_read(struct cap_work *w)
{
  struct result_work *rw = (struct result_work *)w;
  const char *path = w->r->cfg->bench_result;
  const char *why = read_result(path, &w->job->bench, &rw->result);

  if (rw->result != NULL && !json_is_object(rw->result))
    rw->result = json_pack("{s:o}", "result", rw->result);
  rw->note = json_pack("{s:s,s:b}", "path", path, "used", why == NULL);
  if (why != NULL)
    json_object_set_new(rw->note, "reason", json_string(why));
  else
    note_short_run(rw->result, rw->note);
}

static void on_read_done(struct cap_work *w)
{
  struct result_work *rw = (struct result_work *)w;
  struct cap_job *job = w->job;

  const char *partial =
      json_string_value(json_object_get(rw->note, "partial"));

  json_decref(job->bench.result);
  json_decref(job->bench.note);
  job->bench.result = rw->result;
  job->bench.note = rw->note;
  snprintf(job->bench.partial, sizeof(job->bench.partial), "%s",
           partial != NULL ? partial : "");
  if (job->ending == END_NONE)
    rw->then(job);
  free(rw);
}

void cap_bench_read(struct cap_job *job, void (*then)(struct cap_job *))
{
  struct result_work *rw = cap_job_work_new(job, sizeof(*rw));

  if (rw == NULL)
    return;
  rw->then = then;
  cap_work_queue(job->r, job, &rw->super, run_read, on_read_done);
}

/* profile_control daemon: how much of the profiled window was not the
 * workload (docs/ATOM.md, "Daemon mode"): from /start_profile's answer to
 * the run's exit, less the bench's own duration of its requests. */
static json_t *profile_window(const struct cap_bench *b)
{
  json_t *d = json_object_get(b->result, "duration");
  double run_s, dur_s;

  if (b->profile_started_ns == 0 || !json_is_number(d))
    return NULL;
  run_s = (double)(b->end_ns - b->profile_started_ns) / 1e9;
  dur_s = json_number_value(d);
  return json_pack("{s:f,s:f,s:f}", "profiled_run_s", run_s,
                   "requests_s", dur_s, "not_workload_s", run_s - dur_s);
}

json_t *cap_bench_merges(struct cap_job *job)
{
  json_t *m = json_pack("{s:{s:O?}}", "extra", "bench_result", job->bench.note);
  json_t *window = profile_window(&job->bench);

  if (job->bench.result != NULL)
    json_object_set(m, "bench", job->bench.result);
  if (window != NULL)
    json_object_set_new(json_object_get(m, "extra"), "profile_window", window);
  return m;
}

/* ATOM's broadcast of a utility command waits for each engine's answer
 * this long unless told otherwise (engine_core_mgr.py:857-858), which
 * /start_profile never is (llm_engine.py:286-287). */
#define ATOM_BROADCAST_TIMEOUT_S 300

/* The profiler calls wait for ATOM's broadcast to every engine: the start
 * its fixed 300 s, the stop ATOM_PROFILER_TIMEOUT (llm_engine.py:290-294;
 * docs/ATOM.md): give them that and a margin. */
int cap_profile_timeout_s(const struct cap_job *job, bool stop)
{
  int s = stop ? job->plan->profiler_timeout_s : ATOM_BROADCAST_TIMEOUT_S;

  return s + 60;
}
