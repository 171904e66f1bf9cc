/*
 * BENCHMARK: the short run that the trace holds (docs/ATOM.md).
 *
 * profile_control bench: one run of the bench script with PROFILE 1.
 * ATOM's client runs its CONC*2 warm-ups, POSTs /start_profile, sends the
 * CONC*PROMPT_MULTIPLIER prompts and POSTs /stop_profile, which answers
 * only once rank 0 has exported. The phase ends as soon as the server log
 * says the profiler is stopping (the export has begun; EXPORTING waits for
 * the rest of the run), or when the run exits 0 with the profiler started.
 *
 * profile_control daemon, in steps: WARMUP (a run of the same CONC*2
 * requests with another seed, not traced), PROFILE_START (traced POSTs
 * /start_profile; the server answers nothing meanwhile; ATOM answers
 * success even when no rank started, so the log is checked), RUN (the
 * profiled run, without warm-ups), then EXPORTING, which POSTs
 * /stop_profile. What of the profiled window is not the workload (the
 * run's own start-up and wrap-up) is measured (extra.profile_window).
 *
 * A sweep's point that joins its sweep's server comes here from QUEUED:
 * its plan is made first (job_plan.c), and the server log's end noted.
 *
 * A look at the server every few seconds (watch.c). ATOM's client exits 0
 * even when the server died under it, when /start_profile failed, and
 * when requests failed: after the run the server's life, the profiler's
 * "Rank N: profiler started" lines and the result's completed count are
 * checked. Errors of the server log count from the profiled run's start.
 */
#include <stdio.h>

#include "daemon/cap_int.h"

static const char *const step_names[] = {
  [CAP_STEP_WARMUP] = "warmup",
  [CAP_STEP_PROFILE_START] = "profile_start",
  [CAP_STEP_RUN] = "run",
};

static bool daemon_mode(const struct cap_job *job)
{
  return job->r->cfg->profile_control == CFG_PROFILE_DAEMON;
}

int phase_benchmark_budget_s(const struct cap_job *job)
{
  int run = job->r->cfg->bench_timeout_s + 10; /* its own limit wins */

  if (!daemon_mode(job))
    return run + 60;
  return 2 * run + cap_profile_timeout_s(job, false) + 60;
}

static void set_step(struct cap_job *job, enum cap_step step)
{
  job->bench.step = step;
  cap_job_progress(job, json_pack("{s:s}", "bench_step", step_names[step]));
}

static void fail_dead(struct cap_job *job, const char *dead)
{
  cap_fail(job, END_FAILED, "server", "the server died during the %s: %s",
           tr_phase_name(job->watch.dead_phase), dead);
}

/* ---- the end of a run ---- */

/* The profiler must have started: ATOM's client says nothing when
 * /start_profile failed, ATOM's /start_profile answers success even when
 * no rank started (api_server.py:1978), and no file would ever come. */
static bool profiler_started(struct cap_job *job)
{
  const struct cap_scan *s = &job->scan;

  if (s->start_failed[0] != '\0')
    cap_fail(job, END_FAILED, "server",
             "the profiler never started: the server log says: %s",
             s->start_failed);
  else if (s->profilers_started == 0)
    cap_fail(job, END_FAILED, "server",
             "the profiler never started: no rank logged \"profiler "
             "started\" (is --torch-profiler-dir reaching the server?)");
  return job->ending == END_NONE;
}

static void start_step(struct cap_job *job, enum cap_step step);

static void on_result(struct cap_job *job)
{
  cap_enter(job, TR_PHASE_EXPORTING, cap_bench_merges(job));
}

/* A look after a run that exited 0. */
static void on_after_run(struct cap_job *job, const char *dead)
{
  if (dead != NULL) {
    fail_dead(job, dead);
  } else if (job->bench.step == CAP_STEP_WARMUP) {
    start_step(job, CAP_STEP_PROFILE_START);
  } else if (daemon_mode(job) || profiler_started(job)) {
    job->bench.done = true;
    cap_bench_read(job, on_result);
  }
}

static void on_run_exit(struct cap_job *job)
{
  const struct cap_bench *b = &job->bench;

  if (cap_script_ok(job, "bench", b->status, b->sig, b->timed_out,
                    job->r->cfg->bench_timeout_s))
    cap_watch_fresh(job, true, on_after_run);
}

/* ---- during a run ---- */

static void on_look(struct cap_job *job, const char *dead)
{
  /* The run has exited and its result is being read (on the work pool):
   * on_result() enters the next phase, a look entering it first would
   * have it entered twice. */
  if (job->bench.done)
    return;
  /* A death is reported with the phase its cause belongs to (a fatal
   * marker's line may have been written before the profiler stopped).
   * Once the profiler is stopping the ranks export: the run goes on,
   * waiting on its /stop_profile. */
  if (dead != NULL && tr_phase_server(job->watch.dead_phase, TR_HELD))
    fail_dead(job, dead);
  else if (!daemon_mode(job) && job->scan.profilers_stopping > 0)
    cap_enter(job, TR_PHASE_EXPORTING, NULL);
  else if (dead != NULL)
    fail_dead(job, dead);
}

static void on_tick(uv_timer_t *t)
{
  cap_watch_tick(t->data, true, on_look);
}

/* ---- the steps ---- */

/* A fresh look after /start_profile answered: rank 0 logs "profiler
 * started" before it answers (model_runner.py:1099). */
static void on_started_look(struct cap_job *job, const char *dead)
{
  if (dead != NULL)
    fail_dead(job, dead);
  else if (profiler_started(job))
    start_step(job, CAP_STEP_RUN);
}

static void on_profile_started(void *ud, const struct cap_http_answer *a)
{
  struct cap_job *job = ud;

  job->http = NULL;
  if (!a->ok) {
    cap_fail(job, END_FAILED, "server", "%s", a->msg);
    return;
  }
  job->bench.profile_started_ns = tr_now_ns();
  cap_watch_fresh(job, true, on_started_look);
}

static void start_step(struct cap_job *job, enum cap_step step)
{
  const struct cfg *c = job->r->cfg;

  set_step(job, step);
  switch (step) {
  case CAP_STEP_WARMUP: cap_bench_start(job, job->plan->warmup_argv); break;
  case CAP_STEP_RUN:
    cap_watch_errors_from(job, cap_watch_log_size(job));
    cap_bench_start(job, job->plan->bench_argv);
    break;
  case CAP_STEP_PROFILE_START:
    if (cap_atom_profile(job->r->http, c->atom_host, c->atom_port, "start",
                         cap_ms(job, cap_profile_timeout_s(job, false)),
                         on_profile_started, job, &job->http) != 0)
      cap_fail(job, END_FAILED, NULL, "cannot call ATOM's /start_profile");
    break;
  }
}

static void begin(struct cap_job *job)
{
  int every_s = job->r->cfg->ready_poll_s;

  every_s = every_s < 1 ? 1 : every_s > 5 ? 5 : every_s;
  job->watch.refusals = 0;
  job->bench.on_exit = on_run_exit;
  uv_timer_start(&job->tick, on_tick, cap_ms(job, every_s),
                 cap_ms(job, every_s));
  start_step(job, daemon_mode(job) ? CAP_STEP_WARMUP : CAP_STEP_RUN);
}

/* A sweep's point joining a server already up: only the log's lines from
 * now on are its own (its profiler's, its exports, its errors). */
static void joined(struct cap_job *job)
{
  cap_watch_snapshot(job, begin);
}

void phase_benchmark_enter(struct cap_job *job)
{
  if (job->plan == NULL)
    cap_job_plan(job, joined);
  else
    begin(job);
}
