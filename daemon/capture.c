/*
 * The capture state machine: the manual workflow of ATOM's capture-trace
 * skill (stop, launch with the profiler, wait until ready, a short bench,
 * wait for the export, index), run on the libuv loop. This file holds the
 * transitions only; each phase's body is daemon/phase_<name>.c.
 *
 *   queued -> stopping -> launching -> waiting_ready -> benchmark
 *                                                          |
 *   done <- finishing <- indexing <- exporting <-----------+
 *   import:   queued -> indexing -> finishing -> done
 *   a sweep's point (docs/SWEEPS.md): exporting -> collecting -> indexing;
 *             joining its sweep's server: queued -> benchmark
 *   restart:  (running, trace folder complete) -> indexing -> finishing
 *             -> done
 *   any phase -> failed | cancelled | interrupted   (phase kept)
 *
 * Each row of TR_PHASE_MAP (common/lifecycle.h) says the phases it may be
 * entered from; cap_enter asserts it (SQLite's pager.c asserts its states
 * so), and the list below is that map.
 *
 * Transitions (each stores status, phase and phase_started_at first, in one
 * transaction with what the phase records, and enters the phase once that
 * is committed; cap_enter):
 *   QUEUED        -> STOPPING       picked from the queue (a claim: only
 *                                   while the row is still queued)
 *   QUEUED        -> INDEXING       an import, or a capture recovered with
 *                                   a complete trace folder
 *   QUEUED        -> BENCHMARK      a sweep's point whose sweep's server
 *                                   serves (sweep.c: its handle kept)
 *   STOPPING      -> LAUNCHING      the stop script exited 0
 *   LAUNCHING     -> WAITING_READY  the start script exited 0 (not proof
 *                                   of readiness, docs/ATOM.md)
 *   WAITING_READY -> BENCHMARK      GET /v1/models answered 200
 *   BENCHMARK     -> EXPORTING      the profiler is stopping: ATOM logs it,
 *                                   or the bench exited 0 with the
 *                                   profiler started (profile_control
 *                                   bench), or the profiled run exited 0
 *                                   (daemon: EXPORTING POSTs /stop_profile)
 *   EXPORTING     -> INDEXING       every expected rank has one .gz and no
 *                                   .json, and the bench (or /stop_profile)
 *                                   is over (a sweep's point: COLLECTING)
 *   COLLECTING    -> INDEXING       the window's files left the sweep's
 *                                   launch folder for the point's own
 *   INDEXING      -> FINISHING      every rank indexed
 *   FINISHING     -> DONE           the collectives matched, the all-ranks
 *                                   tables summed and the verdict made are
 *                                   stored (phase_finishing.c)
 *   any           -> failed/cancelled/interrupted [cap_fail]: timers stop,
 *                    children get SIGTERM then SIGKILL; after a failure or
 *                    cancel between launching and the profiler's stop the
 *                    stop script runs (the server is in an unknown state
 *                    and holds the GPUs), never while ranks export (it
 *                    would kill them mid-write). The GPU slot frees when the
 *                    stop script is done.
 *
 * The server's death is decided only from what cannot be slow (watch.c):
 * its process group gone, its port refusing connections, a fatal marker in
 * this launch's log. ATOM answers nothing at all while /stop_profile
 * exports rank 0 (docs/ATOM.md), for minutes: a hang is a deadline's job.
 *
 * Invariants (cap_invariants), while the job is not ending:
 *   every phase but QUEUED and DONE has its deadline armed;
 *   STOPPING:      no launcher; child is the stop script once spawned
 *   LAUNCHING:     no child, no bench
 *   WAITING_READY: launcher exited; no child, no bench
 *   BENCHMARK:     launcher exited; no child
 *   EXPORTING:     no child; a bench still running is the profiled one
 *   COLLECTING, INDEXING, FINISHING:  no child, no bench, no ATOM call
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "daemon/cap_int.h"

static const struct phase {
  const char *log; /* the log a failure quotes */
  unsigned from;   /* TR_FROM() of the phases it may be entered from */
  int (*budget_s)(const struct cap_job *job);
  void (*enter)(struct cap_job *job);
} phases[TR_NPHASE] = {
#define XX(e, name, log, from, server)                                         \
  [TR_PHASE_##e] = { log, from, phase_##name##_budget_s, phase_##name##_enter },
  TR_PHASE_MAP(XX)
#undef XX
};

void cap_invariants(const struct cap_job *job)
{
  int budget = phases[job->phase].budget_s(job);

  if (job->ending != END_NONE)
    return;
  assert(budget == 0 || uv_is_active((const uv_handle_t *)&job->deadline));
  switch (job->phase) {
  case TR_PHASE_STOPPING: assert(job->launcher == NULL); break;
  case TR_PHASE_LAUNCHING:
  case TR_PHASE_WAITING_READY:
    assert(job->child == NULL && job->bench.proc == NULL);
    break;
  case TR_PHASE_BENCHMARK:
  case TR_PHASE_EXPORTING:
    assert(job->child == NULL && !cap_proc_running(job->launcher));
    break;
  case TR_PHASE_COLLECTING:
  case TR_PHASE_INDEXING:
  case TR_PHASE_FINISHING:
    assert(job->child == NULL && job->bench.proc == NULL && job->http == NULL);
    break;
  default: break;
  }
  (void)budget;
}

const char *cap_log_path(const struct cap_job *job, const char *which,
                         char *buf, size_t size)
{
  snprintf(buf, size, "%s/%s.log", job->log_dir, which);
  return buf;
}

/* ---- deadlines ---- */

static void on_deadline(uv_timer_t *t)
{
  struct cap_job *job = t->data;

  cap_fail(job, END_FAILED, phases[job->phase].log,
           "the %s phase exceeded its deadline of %d s",
           tr_phase_name(job->phase), job->deadline_s);
}

void cap_arm_deadline(struct cap_job *job, int secs)
{
  /* A phase with a log to quote waits on ATOM's scripts or server, in
   * ATOM's time; the others (indexing, finishing) are traced's own work. */
  uint64_t ms = phases[job->phase].log != NULL ? cap_ms(job, secs)
                                               : (uint64_t)secs * 1000;

  job->deadline_s = secs;
  uv_timer_start(&job->deadline, on_deadline, ms, 0);
}

uint64_t cap_ms(const struct cap_job *job, int64_t secs)
{
  uint64_t ms = (uint64_t)secs * 1000 / (uint64_t)job->r->cfg->time_scale;

  return ms > 0 ? ms : 1;
}

int64_t cap_secs_since(const struct cap_job *job, int64_t since_ns)
{
  return (tr_now_ns() - since_ns) * job->r->cfg->time_scale / 1000000000;
}

/* ---- transitions ---- */

void cap_start(struct cap_job *job)
{
  assert(job->phase == TR_PHASE_QUEUED);
  phases[TR_PHASE_QUEUED].enter(job);
}

static void on_entered(struct cap_job *job)
{
  phases[job->phase].enter(job);
}

void cap_enter(struct cap_job *job, enum tr_phase to, json_t *merges)
{
  struct cap_write w = { to == TR_PHASE_DONE ? TR_STATUS_DONE
                                             : TR_STATUS_RUNNING,
                         to,
                         merges,
                         NULL,
                         on_entered,
                         false,
                         false,
                         false,
                         false };
  int budget;

  assert(phases[to].from & (1u << job->phase));
  cap_invariants(job);
  w.claim = job->phase == TR_PHASE_QUEUED && !job->recovered;
  /* What the old phase waited for is dropped: nothing of it acts after
   * this. A bench that exits meanwhile is seen by the next phase. */
  uv_timer_stop(&job->tick);
  uv_timer_stop(&job->deadline);
  cap_watch_stop(job);
  cap_http_cancel(job->http);
  job->http = NULL;
  job->bench.on_exit = NULL;
  job->phase = to;
  if (!job->is_import)
    cap_watch_mark_phase(job, to);
  if ((budget = phases[to].budget_s(job)) > 0)
    cap_arm_deadline(job, budget);
  cap_job_write(job, &w);
}

/* ---- processes ---- */

int cap_spawn(struct cap_job *job, char **argv, char **env, const char *which,
              int deadline_s, cap_proc_exit_cb cb, struct cap_proc **slot)
{
  struct cap_proc_opts o;
  struct tr_err err = { 0 };
  char path[4096];
  int rc;

  memset(&o, 0, sizeof(o));
  o.argv = (const char *const *)argv;
  o.env_add = (const char *const *)env;
  o.log_path = cap_log_path(job, which, path, sizeof(path));
  o.cwd = job->work_dir;
  o.mark = job->export_dir; /* a sweep's points: their sweep's folder */
  o.deadline_ms = cap_ms(job, deadline_s);
  o.on_exit = cb;
  o.ud = job;
  rc = cap_proc_spawn(job->r->loop, &o, slot, &err);
  if (rc != 0)
    cap_fail(job, END_FAILED, NULL, "cannot run the %s script: %s", which,
             err.msg);
  return rc;
}

static void fail_quoting(struct cap_job *job, const char *log, const char *fmt,
                         ...);

bool cap_script_ok(struct cap_job *job, const char *which, int64_t status,
                   int sig, bool timed_out, int limit)
{
  const char *what = strcmp(which, "launcher") == 0 ? "start" : which;

  if (job->ending != END_NONE)
    return false;
  if (status == 0 && sig == 0 && !timed_out)
    return true;
  if (timed_out)
    cap_fail(job, END_FAILED, which, "the %s script did not finish within %d s",
             what, limit);
  else if (sig != 0)
    cap_fail(job, END_FAILED, which, "the %s script was killed by signal %d",
             what, sig);
  else /* its own words say why: ATOM's bench a traceback, say */
    fail_quoting(job, which, "the %s script exited %lld", what,
                 (long long)status);
  return false;
}

/* ---- failure, cancel, interruption ---- */

static void on_cleanup_stop_exit(struct cap_proc *p, int64_t status, int sig,
                                 bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)p;
  if (status != 0 || sig != 0 || timed_out)
    fprintf(stderr,
            "traced: capture %lld: stop script after %s: exit %lld "
            "signal %d%s\n",
            (long long)job->id, tr_phase_name(job->phase), (long long)status,
            sig, timed_out ? " (timed out)" : "");
  cap_job_finish(job);
}

/* Whether the server must be stopped after a failure: it was launched,
 * and no rank is exporting (the stop script would kill it mid-write; the
 * next capture's stop script ends it instead). */
static bool must_stop_server(const struct cap_job *job)
{
  return !job->is_import && !job->r->stopping && job->plan != NULL &&
         tr_phase_server(job->phase, TR_HELD) &&
         job->scan.profilers_stopping == 0;
}

/* A sweep's point that joined the server and ended in BENCHMARK before
 * its plan was made (phase_benchmark.c makes it there): the server is
 * held as by any point, and only the plan has its stop script. */
static bool joined_without_plan(const struct cap_job *job)
{
  return !job->is_import && !job->r->stopping && job->joins &&
         job->plan == NULL && tr_phase_server(job->phase, TR_HELD);
}

static void stop_server(struct cap_job *job);

/* After the failure is stored: end the children; stop the server when it
 * may hold the GPUs in a bad state. A cancel while ranks export stops it
 * once their exports end (docs/API.md: DELETE stops the server). */
static void cleanup(struct cap_job *job)
{
  cap_proc_kill(job->bench.proc);
  cap_proc_kill(job->child);
  if (job->ending == END_CANCELLED && !job->r->stopping &&
      cap_export_running(job)) {
    cap_export_drain(job, stop_server);
    return;
  }
  if (joined_without_plan(job)) {
    cap_job_plan_to_stop(job, stop_server);
    return;
  }
  if (!must_stop_server(job)) {
    /* The server stays up (exporting, or never launched); a launcher
     * still running is ended. */
    if (cap_proc_running(job->launcher))
      cap_proc_kill(job->launcher);
    cap_job_finish(job);
    return;
  }
  stop_server(job);
}

static void stop_server(struct cap_job *job)
{
  cap_proc_kill(job->launcher);
  cap_proc_close(job->child);
  job->child = NULL;
  /* The server's group keeps its grace period (the launcher's slot) while
   * the stop script ends it the ATOM way. */
  if (cap_spawn(job, job->plan->stop_argv, NULL, "stop",
                job->r->cfg->stop_timeout_s, on_cleanup_stop_exit,
                &job->child) != 0)
    cap_job_finish(job);
}

static const enum tr_status end_status[] = {
  [END_FAILED] = TR_STATUS_FAILED,
  [END_CANCELLED] = TR_STATUS_CANCELLED,
  [END_INTERRUPTED] = TR_STATUS_INTERRUPTED,
};

static void fail(struct cap_job *job, enum cap_end how, const char *log,
                 bool quote, const char *fmt, va_list ap)
{
  struct cap_write w = { end_status[how], job->phase, NULL, NULL, cleanup, true,
                         false,           false,      quote };
  char msg[1024], path[4096];

  assert(how != END_NONE && how != END_SHUTDOWN);
  if (job->ending != END_NONE || job->finished)
    return;
  job->ending = how;
  cap_index_cancel(job);
  uv_timer_stop(&job->deadline);
  uv_timer_stop(&job->tick);
  uv_timer_stop(&job->progress_timer);
  cap_http_cancel(job->http);
  job->http = NULL;
  cap_watch_stop(job);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  tr_make_utf8(msg);
  fprintf(stderr, "traced: capture %lld: %s in %s: %s\n", (long long)job->id,
          tr_status_name(end_status[how]), tr_phase_name(job->phase), msg);
  w.merges = json_pack("{s:{s:s,s:s,s:n}}", "error", "phase",
                       tr_phase_name(job->phase), "message", msg, "log_tail");
  /* A sweep's point ends its sweep when there is no server to go on with
   * (docs/SWEEPS.md): it died, or it never came up. */
  w.ends_sweep = how == END_FAILED && job->sweep_id != 0 &&
                 (job->watch.died || tr_phase_server(job->phase, TR_LAUNCH));
  w.tail = log != NULL ? cap_log_path(job, log, path, sizeof(path)) : NULL;
  cap_job_write(job, &w);
}

void cap_fail(struct cap_job *job, enum cap_end how, const char *log,
              const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  fail(job, how, log, false, fmt, ap);
  va_end(ap);
}

/* cap_fail() whose message ends with its log's decisive line, as a
 * person reading the log would point at it (read on the pool). */
static void fail_quoting(struct cap_job *job, const char *log, const char *fmt,
                         ...)
{
  va_list ap;

  va_start(ap, fmt);
  fail(job, END_FAILED, log, true, fmt, ap);
  va_end(ap);
}
