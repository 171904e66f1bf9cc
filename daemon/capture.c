/*
 * The capture state machine: the manual workflow of ATOM's capture-trace
 * skill (stop, launch with the profiler, wait until ready, short bench,
 * wait for the export, index), run on the libuv loop.
 *
 *   queued -> stopping -> launching -> waiting_ready -> benchmark
 *                                                          |
 *             done <- indexing <- exporting <--------------+
 *   import:   queued -> indexing -> done
 *   restart:  (running, trace folder complete) -> indexing -> done
 *   any phase -> failed | cancelled | interrupted   (phase kept)
 *
 * Transitions (each stores status/phase/phase_started_at first, then acts
 * in the then-callback of that write):
 *   QUEUED        -> STOPPING      [cap_enter_stopping]  picked from queue
 *   STOPPING      -> LAUNCHING     [enter_launching]     stop script exit 0
 *   LAUNCHING     -> WAITING_READY [enter_waiting_ready] start script exit 0
 *                                  (docs/ATOM.md: not proof of readiness)
 *   WAITING_READY -> BENCHMARK     [enter_benchmark]     /v1/models 200
 *   BENCHMARK     -> EXPORTING     [enter_exporting]     bench exit 0, the
 *                                  server still answers (ATOM's bench exits
 *                                  0 when the server died under it), and
 *                                  /stop_profile ok with profile_control
 *                                  daemon
 *   EXPORTING     -> INDEXING      [cap_enter_indexing]  every rank has one
 *                                  .gz and no .json
 *   QUEUED (import), any (restart) -> INDEXING [cap_enter_indexing]
 *   INDEXING      -> DONE          [cap_enter_done]      all ranks indexed
 *   any           -> failed/cancelled/interrupted [cap_fail]: timers
 *                    stop, children get SIGTERM then SIGKILL, and after a
 *                    failure or cancel between launching and exporting the
 *                    stop script runs (the skill leaves the server up after
 *                    a good capture; after a bad one it is in an unknown
 *                    state and holds the GPUs). The GPU slot frees when the
 *                    stop script is done.
 *
 * Invariants (cap_invariants), while the job is not ending:
 *   every phase but QUEUED and DONE has its deadline timer armed;
 *   STOPPING:      no launcher; child is the stop script once spawned
 *   LAUNCHING:     no child; the launcher runs once spawned
 *   WAITING_READY: launcher exited; no child; tick polls /v1/models
 *   BENCHMARK:     launcher exited; child is the bench once spawned
 *   EXPORTING:     no child; tick polls the trace folder
 *   INDEXING:      no child, no ATOM call
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

#define LIVENESS_FAILURES 3 /* failed /v1/models in a row = dead */

const char *cap_phase_name(enum cap_phase p)
{
  return tr_phase_name((enum tr_phase)p);
}

void cap_invariants(const struct cap_job *job)
{
  if (job->ending != END_NONE)
    return;
  assert(job->phase == CAP_QUEUED || job->phase == CAP_DONE ||
         uv_is_active((const uv_handle_t *)&job->deadline));
  switch (job->phase) {
  case CAP_STOPPING: assert(job->launcher == NULL); break;
  case CAP_LAUNCHING: assert(job->child == NULL); break;
  case CAP_WAITING_READY:
  case CAP_BENCHMARK: assert(!cap_proc_running(job->launcher)); break;
  case CAP_EXPORTING:
  case CAP_INDEXING: assert(job->child == NULL); break;
  default: break;
  }
}

/* Path of one of the capture's logs (launcher, server, bench, stop). */
const char *cap_log_path(const struct cap_job *job, const char *which,
                         char *buf, size_t size)
{
  snprintf(buf, size, "%s/%s.log", job->log_dir, which);
  return buf;
}

/* The log a failure in the current phase quotes. */
static const char *phase_log(const struct cap_job *job)
{
  switch (job->phase) {
  case CAP_STOPPING: return "stop";
  case CAP_LAUNCHING: return "launcher";
  case CAP_BENCHMARK: return "bench";
  case CAP_WAITING_READY:
  case CAP_EXPORTING: return "server";
  default: return NULL;
  }
}

/* The phase's time budget in seconds. Process phases get 10 s more than
 * the process's own deadline, so that its clearer message wins. */
static int phase_budget_s(const struct cap_job *job)
{
  const struct cfg *c = job->r->cfg;

  switch (job->phase) {
  case CAP_STOPPING: return c->stop_timeout_s + 10;
  case CAP_LAUNCHING: return c->launch_timeout_s + 10;
  case CAP_WAITING_READY: return c->ready_timeout_s;
  case CAP_BENCHMARK: return c->bench_timeout_s + 70;
  case CAP_EXPORTING: return c->export_poll_s * (c->export_max_polls + 1) + 60;
  default: return 3600; /* indexing: re-armed once the size is known */
  }
}

static void on_deadline(uv_timer_t *t)
{
  struct cap_job *job = t->data;
  const struct cfg *c = job->r->cfg;
  char path[4096];
  const char *which = phase_log(job);

  if (job->phase == CAP_WAITING_READY)
    cap_fail(job, END_FAILED, cap_log_path(job, "server", path, sizeof(path)),
             "server not ready after %d s: GET /v1/models never answered "
             "200 (ready_timeout_s; the start script's exit 0 is not "
             "readiness)",
             c->ready_timeout_s);
  else
    cap_fail(job, END_FAILED,
             which ? cap_log_path(job, which, path, sizeof(path)) : NULL,
             "the %s phase exceeded its deadline of %d s",
             cap_phase_name(job->phase), job->deadline_s);
}

void cap_arm_deadline(struct cap_job *job, int secs)
{
  job->deadline_s = secs;
  uv_timer_start(&job->deadline, on_deadline, (uint64_t)secs * 1000, 0);
}

/* Moves to phase `to`: stores it (status running), and calls act once it
 * is committed. The old phase's polling stops here. */
void cap_transition(struct cap_job *job, enum cap_phase to, json_t *merges,
                    void (*act)(struct cap_job *))
{
  bool first = job->phase == CAP_QUEUED && !job->recovered;

  cap_invariants(job);
  uv_timer_stop(&job->tick);
  job->phase = to;
  cap_arm_deadline(job, phase_budget_s(job));
  if (first)
    cap_job_claim(job, cap_phase_name(to), merges, act);
  else
    cap_job_write(job, "running", cap_phase_name(to), merges, NULL, act, false);
}

/* A script that ended badly (exit code, signal, or its deadline) fails
 * the job; the message names the script and how it ended, the log tail
 * is its own log. */
/* An ATOM script ended: true when it succeeded and the job goes on; a
 * failure fails the job here, naming the script and how it ended. */
static bool script_ok(struct cap_job *job, const char *which, int64_t status,
                      int sig, bool timed_out, int limit)
{
  char path[4096];
  const char *what = strcmp(which, "launcher") == 0 ? "start" : which;

  if (job->ending != END_NONE)
    return false;
  if (status == 0 && sig == 0 && !timed_out)
    return true;
  if (timed_out)
    cap_fail(job, END_FAILED, cap_log_path(job, which, path, sizeof(path)),
             "the %s script did not finish within %d s", what, limit);
  else if (sig != 0)
    cap_fail(job, END_FAILED, cap_log_path(job, which, path, sizeof(path)),
             "the %s script was killed by signal %d", what, sig);
  else
    cap_fail(job, END_FAILED, cap_log_path(job, which, path, sizeof(path)),
             "the %s script exited %lld", what, (long long)status);
  return false;
}

static int spawn(struct cap_job *job, char **argv, char **env,
                 const char *which, int deadline_s, cap_proc_exit_cb cb,
                 struct cap_proc **slot)
{
  struct cap_proc_opts o;
  struct tr_err err = { 0 };
  char path[4096];
  int rc;

  memset(&o, 0, sizeof(o));
  o.argv = (const char *const *)argv;
  o.env_add = (const char *const *)env;
  o.log_path = cap_log_path(job, which, path, sizeof(path));
  o.deadline_s = deadline_s;
  o.on_exit = cb;
  o.ud = job;
  rc = cap_proc_spawn(job->r->loop, &o, slot, &err);
  if (rc != 0)
    cap_fail(job, END_FAILED, NULL, "cannot run the %s script: %s", which,
             err.msg);
  return rc;
}

/* ---- the server log scan, in the pool ---- */

static void run_scan(struct cap_work *w)
{
  cap_scan_run(&w->job->scan);
}

static void on_scan_done(struct cap_work *w)
{
  struct cap_job *job = w->job;
  char path[4096];

  free(w);
  job->scan_busy = false;
  if (job->ending != END_NONE || job->finished || job->scan.marker == NULL)
    return;
  cap_fail(job, END_FAILED, cap_log_path(job, "server", path, sizeof(path)),
           "server log shows the fatal marker \"%s\" during %s: %s",
           job->scan.marker, cap_phase_name(job->phase), job->scan.line);
}

void cap_queue_scan(struct cap_job *job)
{
  struct cap_work *w;

  if (job->scan_busy || (w = calloc(1, sizeof(*w))) == NULL)
    return;
  job->scan_busy = true;
  cap_work_queue(job->r, job, w, run_scan, on_scan_done);
}

/* ---- STOPPING ---- */

struct plan_work {
  struct cap_work super;
  struct cap_plan *plan;
  struct tr_err err;
};

static void enter_launching(struct cap_job *job);

static void on_stop_exit(struct cap_proc *p, int64_t status, int sig,
                         bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)p;
  cap_proc_close(job->child);
  job->child = NULL;
  if (script_ok(job, "stop", status, sig, timed_out,
                job->r->cfg->stop_timeout_s))
    enter_launching(job);
}

static void run_plan(struct cap_work *w)
{
  struct plan_work *pw = (struct plan_work *)w;
  struct cap_job *job = w->job;

  cap_plan_build(w->r->cfg, job->params, job->trace_dir, job->log_dir,
                 &pw->plan, &pw->err);
}

static void on_plan_done(struct cap_work *w)
{
  struct plan_work *pw = (struct plan_work *)w;
  struct cap_job *job = w->job;

  if (job->ending != END_NONE || pw->plan == NULL) {
    if (job->ending == END_NONE)
      cap_fail(job, END_FAILED, NULL, "cannot prepare the capture: %s",
               pw->err.msg);
    cap_plan_free(pw->plan);
    free(pw);
    return;
  }
  job->plan = pw->plan;
  free(pw);
  cap_job_write(job, NULL, NULL, json_pack("{s:O}", "extra", job->plan->extra),
                NULL, NULL, false);
  spawn(job, job->plan->stop_argv, NULL, "stop", job->r->cfg->stop_timeout_s,
        on_stop_exit, &job->child);
}

static void act_stopping(struct cap_job *job)
{
  cap_job_queue_new(job, sizeof(struct plan_work), run_plan, on_plan_done);
}

void cap_enter_stopping(struct cap_job *job)
{
  assert(job->phase == CAP_QUEUED && !job->is_import);
  cap_transition(job, CAP_STOPPING,
                 json_pack("{s:{s:s,s:s}}", "extra", "trace_dir",
                           job->trace_dir, "log_dir", job->log_dir),
                 act_stopping);
}

/* ---- LAUNCHING ---- */

static void enter_waiting_ready(struct cap_job *job);

static void on_launcher_exit(struct cap_proc *p, int64_t status, int sig,
                             bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)p;
  /* The launcher stays open: the server it started lives in its group. */
  if (script_ok(job, "launcher", status, sig, timed_out,
                job->r->cfg->launch_timeout_s))
    enter_waiting_ready(job);
}

static void run_snapshot(struct cap_work *w)
{
  cap_scan_snapshot(&w->job->scan);
}

static void on_snapshot_done(struct cap_work *w)
{
  struct cap_job *job = w->job;

  free(w);
  job->scan_busy = false;
  if (job->ending != END_NONE)
    return;
  spawn(job, job->plan->start_argv, job->plan->start_env, "launcher",
        job->r->cfg->launch_timeout_s, on_launcher_exit, &job->launcher);
}

/* The server log's size is taken before the launch: only what comes after
 * belongs to this capture. */
static void act_launching(struct cap_job *job)
{
  job->scan_busy = true;
  cap_job_queue_new(job, sizeof(struct cap_work), run_snapshot,
                    on_snapshot_done);
}

static void enter_launching(struct cap_job *job)
{
  assert(job->phase == CAP_STOPPING);
  cap_transition(job, CAP_LAUNCHING, NULL, act_launching);
}

/* ---- WAITING_READY ---- */

static void enter_benchmark(struct cap_job *job);

static void on_models_ready(void *ud, bool ok, long status, const char *msg)
{
  struct cap_job *job = ud;

  (void)status;
  (void)msg;
  job->http = NULL;
  if (ok && job->ending == END_NONE && job->phase == CAP_WAITING_READY)
    enter_benchmark(job);
}

static long poll_timeout_ms(const struct cap_job *job)
{
  long ms = job->r->cfg->ready_poll_s * 1000L;

  return ms < 1000 ? 1000 : ms > 10000 ? 10000 : ms;
}

/* One look at the server, on the ready and the bench ticks: its log's new
 * bytes (fatal markers), and GET /v1/models unless one is under way. */
static void look_at_server(struct cap_job *job, cap_http_cb cb)
{
  const struct cfg *c = job->r->cfg;

  cap_queue_scan(job);
  if (job->http == NULL)
    cap_atom_models(job->r->http, c->atom_host, c->atom_port,
                    poll_timeout_ms(job), cb, job, &job->http);
}

static void on_ready_tick(uv_timer_t *t)
{
  look_at_server(t->data, on_models_ready);
}

static void act_waiting_ready(struct cap_job *job)
{
  uv_timer_start(&job->tick, on_ready_tick, 0,
                 (uint64_t)job->r->cfg->ready_poll_s * 1000);
}

static void enter_waiting_ready(struct cap_job *job)
{
  assert(job->phase == CAP_LAUNCHING);
  cap_transition(job, CAP_WAITING_READY, NULL, act_waiting_ready);
}

/* ---- BENCHMARK ---- */

static void on_alive(void *ud, bool ok, long status, const char *msg)
{
  struct cap_job *job = ud;
  char path[4096];

  (void)status;
  job->http = NULL;
  if (job->ending != END_NONE || job->phase != CAP_BENCHMARK)
    return;
  if (ok) {
    job->live_failures = 0;
    return;
  }
  if (++job->live_failures >= LIVENESS_FAILURES)
    cap_fail(job, END_FAILED, cap_log_path(job, "server", path, sizeof(path)),
             "the server stopped answering during the bench: %d checks in "
             "a row failed (%s)",
             job->live_failures, msg);
}

/* During the bench: the server log's new bytes, and the server's life
 * (GET /v1/models; LIVENESS_FAILURES failures in a row mean it died). */
static void on_bench_tick(uv_timer_t *t)
{
  look_at_server(t->data, on_alive);
}

static void on_alive_after_bench(void *ud, bool ok, long status,
                                 const char *msg)
{
  struct cap_job *job = ud;
  char path[4096];

  (void)status;
  job->http = NULL;
  if (job->ending != END_NONE || job->phase != CAP_BENCHMARK)
    return;
  if (ok)
    cap_bench_exited(job);
  else
    cap_fail(job, END_FAILED, cap_log_path(job, "server", path, sizeof(path)),
             "the server died during the bench: the bench exited 0 but "
             "the server no longer answers (%s)",
             msg);
}

static void on_bench_exit(struct cap_proc *p, int64_t status, int sig,
                          bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)p;
  cap_proc_close(job->child);
  job->child = NULL;
  job->bench_end_ns = tr_now_ns();
  if (!script_ok(job, "bench", status, sig, timed_out,
                 job->r->cfg->bench_timeout_s))
    return;
  uv_timer_stop(&job->tick);
  cap_http_cancel(job->http);
  job->http = NULL;
  /* ATOM's bench client exits 0 even when the server died under it (its
   * failed requests only shorten "completed"): ask the server once more
   * before trusting the run. */
  cap_atom_models(job->r->http, job->r->cfg->atom_host, job->r->cfg->atom_port,
                  poll_timeout_ms(job), on_alive_after_bench, job, &job->http);
}

/* Runs the bench (PROFILE in its argv per profile_control, see plan.c). */
void cap_bench_run(struct cap_job *job)
{
  job->bench_start_ns = tr_now_ns();
  spawn(job, job->plan->bench_argv, NULL, "bench", job->r->cfg->bench_timeout_s,
        on_bench_exit, &job->child);
}

static void act_benchmark(struct cap_job *job)
{
  int every_s = job->r->cfg->ready_poll_s;

  every_s = every_s < 1 ? 1 : every_s > 5 ? 5 : every_s;
  job->live_failures = 0;
  uv_timer_start(&job->tick, on_bench_tick, (uint64_t)every_s * 1000,
                 (uint64_t)every_s * 1000);
  cap_bench_start(job);
}

static void enter_benchmark(struct cap_job *job)
{
  assert(job->phase == CAP_WAITING_READY);
  cap_transition(job, CAP_BENCHMARK, NULL, act_benchmark);
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
            (long long)job->id, cap_phase_name(job->phase), (long long)status,
            sig, timed_out ? " (timed out)" : "");
  cap_job_finish(job);
}

/* After the failure is stored: end the children; stop the server when it
 * may hold the GPUs in a bad state. */
static void cleanup(struct cap_job *job)
{
  struct cap_proc *stopper = NULL;
  bool stop = !job->is_import && !job->r->stopping &&
              job->phase >= CAP_LAUNCHING && job->phase <= CAP_EXPORTING &&
              job->plan != NULL;

  cap_proc_kill(job->child);
  cap_proc_kill(job->launcher);
  if (!stop) {
    cap_job_finish(job);
    return;
  }
  if (spawn(job, job->plan->stop_argv, NULL, "stop",
            job->r->cfg->stop_timeout_s, on_cleanup_stop_exit, &stopper) != 0) {
    cap_job_finish(job);
    return;
  }
  /* The stop script takes the child's slot: a bench still running gets
   * its SIGKILL now; the server's group keeps its grace period (the
   * launcher's slot) while the stop script ends it the ATOM way. */
  cap_proc_close(job->child);
  job->child = stopper;
}

void cap_fail(struct cap_job *job, enum cap_end how, const char *tail_path,
              const char *fmt, ...)
{
  static const char *const status[] = {
    [END_FAILED] = "failed",
    [END_CANCELLED] = "cancelled",
    [END_INTERRUPTED] = "interrupted",
  };
  char msg[1024];
  va_list ap;

  assert(how != END_NONE && how != END_SHUTDOWN);
  if (job->ending != END_NONE || job->finished)
    return;
  job->ending = how;
  job->cancel = true;
  uv_timer_stop(&job->deadline);
  uv_timer_stop(&job->tick);
  uv_timer_stop(&job->progress_timer);
  cap_http_cancel(job->http);
  job->http = NULL;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cap_make_utf8(msg);
  fprintf(stderr, "traced: capture %lld: %s in %s: %s\n", (long long)job->id,
          status[how], cap_phase_name(job->phase), msg);
  cap_job_write(job, status[how], cap_phase_name(job->phase),
                json_pack("{s:{s:s,s:s,s:n}}", "error", "phase",
                          cap_phase_name(job->phase), "message", msg,
                          "log_tail"),
                tail_path, cleanup, true);
}
