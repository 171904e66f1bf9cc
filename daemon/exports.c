/*
 * Ranks exporting their traces, what EXPORTING and the state machine both
 * need: the trace folder's scan in the pool (EXPORTING's polls, the
 * drain's looks), and the drain a cancel waits on while ranks may export
 * (capture.c): the server is stopped only once the exports end or the
 * export's deadline passes, never a rank killed mid-write (docs/ATOM.md);
 * and a partial workload's failure (EXPORTING, COLLECTING).
 */
#include <stdlib.h>

#include "daemon/cap_int.h"

#define DRAIN_TICK_MS 500 /* a drain looks at traced's shutdown this often */

/* ---- the trace folder ---- */

struct scan_work {
  struct cap_work super;
  struct cap_layout *layout;
  bool scan_log; /* the drain reads the log too (the watch does not run) */
  struct tr_err err;
  void (*done)(struct cap_job *job, struct cap_layout *l);
};

static void run_folder_scan(struct cap_work *w)
{
  struct scan_work *sw = (struct scan_work *)w;

  if (sw->scan_log)
    cap_scan_run(&w->job->scan);
  cap_layout_scan(w->job->export_dir, &sw->layout, &sw->err);
}

static void on_folder_scan(struct cap_work *w)
{
  struct scan_work *sw = (struct scan_work *)w;
  void (*done)(struct cap_job *, struct cap_layout *) = sw->done;
  struct cap_job *job = w->job;
  struct cap_layout *l = sw->layout;

  free(sw);
  done(job, l);
}

bool cap_export_scan(struct cap_job *job, bool scan_log,
                     void (*done)(struct cap_job *job, struct cap_layout *l))
{
  struct scan_work *sw = calloc(1, sizeof(*sw));

  if (sw == NULL)
    return false;
  sw->scan_log = scan_log;
  sw->done = done;
  cap_work_queue(job->r, job, &sw->super, run_folder_scan, on_folder_scan);
  return true;
}

/* ---- a cancel while ranks export ---- */

bool cap_export_running(const struct cap_job *job)
{
  return !job->is_import && job->plan != NULL &&
         (job->phase == TR_PHASE_EXPORTING ||
          (job->phase == TR_PHASE_BENCHMARK &&
           job->scan.profilers_stopping > 0));
}

static void on_drain_tick(uv_timer_t *t);

/* The exports ended: every rank that logged its stop logged its end, no
 * .json is left and nothing grew since the last look; or the server is
 * gone; or the export's deadline passed. */
static void on_drain_scan(struct cap_job *job, struct cap_layout *l)
{
  const struct cap_scan *s = &job->scan;
  int64_t took_s = cap_secs_since(job, job->export.started_ns);
  bool ended;

  job->export.busy = false;
  job->watch.scanning = false;
  ended = (l != NULL && l->orphan_json == 0 &&
           s->stops_completed >= s->profilers_stopping &&
           l->written == job->export.last_written) ||
          !cap_proc_group_alive(job->launcher) ||
          took_s >= job->r->cfg->export_max_s;
  if (l != NULL)
    job->export.last_written = l->written;
  cap_layout_free(l);
  job->export.next_look_ns =
      tr_now_ns() + (int64_t)cap_ms(job, job->r->cfg->export_poll_s) * 1000000;
  if (!job->finished && ended)
    job->export.drained(job);
  else if (!job->finished)
    uv_timer_start(&job->tick, on_drain_tick, DRAIN_TICK_MS, 0);
}

static void on_drain_tick(uv_timer_t *t)
{
  struct cap_job *job = t->data;

  /* traced stops: the server is left as it is (the next start's recovery
   * and the next capture's stop script deal with it). */
  if (job->r->stopping) {
    cap_job_finish(job);
    return;
  }
  if (tr_now_ns() < job->export.next_look_ns) {
    uv_timer_start(&job->tick, on_drain_tick, DRAIN_TICK_MS, 0);
    return;
  }
  /* One scan of the log at a time (logscan.h): a watch round's scan may
   * still be in the pool. */
  if (job->watch.scanning || !cap_export_scan(job, true, on_drain_scan)) {
    uv_timer_start(&job->tick, on_drain_tick, DRAIN_TICK_MS, 0);
    return;
  }
  job->watch.scanning = true;
  job->export.busy = true;
}

void cap_export_drain(struct cap_job *job, void (*then)(struct cap_job *job))
{
  job->export.drained = then;
  if (job->phase != TR_PHASE_EXPORTING)
    job->export.started_ns = tr_now_ns();
  job->export.last_written = UINT64_MAX;
  job->export.next_look_ns = 0;
  uv_timer_start(&job->tick, on_drain_tick, 0, 0);
}

/* ---- a partial workload ---- */

void cap_export_fail_partial(struct cap_job *job)
{
  const char *err = job->scan.first_error;

  cap_fail(job, END_FAILED, "bench",
           "%s; the server log's first error since the run began: %s; the "
           "traces are kept in %s (POST /imports can index them)",
           job->bench.partial, err[0] ? err : "(none)", job->trace_dir);
}
