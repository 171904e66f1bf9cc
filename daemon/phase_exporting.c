/*
 * EXPORTING: the profiler is stopping and every rank writes its trace
 * (docs/ATOM.md): X.pt.trace.json, then X.pt.trace.json.gz, then the .json
 * is removed and "Rank N: trace exported to PATH" is logged; on an error
 * both files go and "Rank N: failed to export trace to PATH" is logged;
 * when kineto itself raises, "Rank N: profiler stop failed" and no file.
 *
 * With profile_control daemon the phase POSTs /stop_profile, which answers
 * once rank 0 has exported; with bench the profiled run may still be
 * waiting on its own /stop_profile. Every export_poll_s the trace folder
 * is scanned (the file rule, .gz present and no .json, is the proof of
 * completion) and the server looked at: a failed export, a failed stop or
 * a dead worker fails the capture at once, naming the rank and quoting the
 * line. Complete and the run (or the call) over: INDEXING (a sweep's
 * point: COLLECTING), or, when the bench completed fewer prompts than it
 * sent, a failure that keeps the traces.
 *
 * The wait follows progress (docs/ATOM.md, "The export, and its budget"),
 * not ATOM's ATOM_PROFILER_TIMEOUT, which only bounds how long ATOM's
 * engine waits for rank 0 (engine_core_mgr.py:857): the ranks go on
 * exporting after it. Progress is change: the ranks' files grew, the
 * server log has new lines (a rank logged its end among them), or the
 * /stop_profile the export waits for (the bench's, or traced's) is still
 * unanswered within the server's ATOM_PROFILER_TIMEOUT. A rank that logged
 * "stopping profiler" and then nothing, its .json never growing, is not
 * progress: its exporter died. export_max_polls polls in a row without
 * progress fail the phase, naming the ranks whose .json was left, and so
 * does export_max_s in all.
 *
 * A cancel here stops the server only once the exports end (or that
 * deadline passes): cap_export_drain() (exports.c), never a rank killed
 * mid-write.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

int phase_exporting_budget_s(const struct cap_job *job)
{
  return job->r->cfg->export_max_s + 60;
}

/* The run or the /stop_profile call the export waits for is over. */
static bool waited_for(const struct cap_job *job)
{
  if (job->r->cfg->profile_control == CFG_PROFILE_DAEMON)
    return job->export.stop_answered;
  return job->bench.done && job->bench.note != NULL;
}

/* "... Rank 3: failed to export trace to ..." -> 3, or -1. */
static int rank_of(const char *line)
{
  const char *at = strstr(line, "Rank ");
  char *end = NULL;
  long n = at != NULL ? strtol(at + 5, &end, 10) : -1;

  return at != NULL && end != at + 5 && n >= 0 && n <= INT_MAX ? (int)n : -1;
}

/* The /stop_profile the export waits for has not answered, and ATOM's
 * engine still waits for rank 0 (ATOM_PROFILER_TIMEOUT from the export's
 * start, llm_engine.py:290-294). */
static bool stop_pending(const struct cap_job *job)
{
  int64_t took_s = cap_secs_since(job, job->export.started_ns);

  return !waited_for(job) && took_s < job->plan->profiler_timeout_s;
}

/* Whether this poll shows the export moving (see the top comment); takes
 * the poll's figures as the next one's reference. */
static bool moved(struct cap_job *job, const struct cap_layout *l)
{
  struct cap_export *e = &job->export;
  const struct cap_scan *s = &job->scan;
  bool yes = (l != NULL && l->written != e->last_written) ||
             s->traces_exported != e->last_exported ||
             s->stops_completed != e->last_completed ||
             s->bytes_seen != e->last_log_bytes || stop_pending(job);

  e->last_written = l != NULL ? l->written : e->last_written;
  e->last_exported = s->traces_exported;
  e->last_completed = s->stops_completed;
  e->last_log_bytes = s->bytes_seen;
  return yes;
}

/* The ranks whose exporter left its .json and went quiet, into out. */
static void orphans(const struct cap_layout *l, char *out, size_t size)
{
  size_t used = 0;

  out[0] = '\0';
  for (size_t i = 0; l != NULL && i < l->n && used + 1 < size; i++) {
    const struct cap_rank *r = &l->ranks[i];

    if (r->orphan_json > 0)
      used += (size_t)snprintf(
          out + used, size - used,
          "%s%s: its exporter left %s (%llu bytes), unchanged, never "
          "gzipped, and logged no end (it died or hangs mid-export)",
          used ? "; " : "", r->label,
          r->gz_count == 0 && r->file ? r->file : "a .json",
          (unsigned long long)r->written);
  }
}

static bool over_budget(struct cap_job *job, const struct cap_layout *l,
                        const char *problems)
{
  const struct cfg *c = job->r->cfg;
  int64_t took_s = cap_secs_since(job, job->export.started_ns);
  char left[1024];

  orphans(l, left, sizeof(left));
  if (took_s >= c->export_max_s)
    cap_fail(job, END_FAILED, "server",
             "the export is not complete after %lld s (export_max_s): %s",
             (long long)took_s, left[0] ? left : problems);
  else if (job->export.quiet_polls >= c->export_max_polls)
    cap_fail(job, END_FAILED, "server",
             "the export made no progress in %d polls %d s apart "
             "(export_max_polls): %s",
             job->export.quiet_polls, c->export_poll_s,
             left[0] ? left : problems);
  return job->ending != END_NONE;
}

static void on_folder_scan(struct cap_job *job, struct cap_layout *l)
{
  char problems[1024] = "cannot read the trace folder";
  bool complete;

  job->export.busy = false;
  if (job->ending != END_NONE || job->phase != TR_PHASE_EXPORTING) {
    cap_layout_free(l);
    return;
  }
  job->export.polls++;
  complete = l != NULL && cap_layout_complete(l, job->export.ranks_expected,
                                              problems, sizeof(problems));
  if (complete && waited_for(job)) {
    /* A sweep's point collects its files first (docs/SWEEPS.md): its
     * own folder is then scanned again. */
    if (job->sweep_id != 0) {
      cap_layout_free(l);
      cap_enter(job, TR_PHASE_COLLECTING, NULL);
    } else if (job->bench.partial[0] != '\0') {
      cap_layout_free(l);
      cap_export_fail_partial(job);
    } else {
      job->layout = l;
      cap_enter(job, TR_PHASE_INDEXING, NULL);
    }
    return;
  }
  job->export.quiet_polls = moved(job, l) ? 0 : job->export.quiet_polls + 1;
  cap_job_progress(job, json_pack("{s:i,s:i,s:i,s:i,s:i}", "ranks_exported",
                                  l ? l->exported : 0, "orphan_json",
                                  l ? l->orphan_json : 0, "export_polls",
                                  job->export.polls, "export_quiet_polls",
                                  job->export.quiet_polls, "exports_logged",
                                  job->scan.traces_exported));
  over_budget(job, l,
              complete ? "the bench is still waiting on /stop_profile"
                       : problems);
  cap_layout_free(l);
}

/* ---- the server ---- */

static void on_look(struct cap_job *job, const char *dead)
{
  const char *failed = job->scan.export_failed;
  const char *stop = job->scan.stop_failed;

  if (failed[0] != '\0')
    cap_fail(job, END_FAILED, "server",
             "rank %d failed to export its trace (ATOM removes both files): "
             "%s",
             rank_of(failed), failed);
  else if (stop[0] != '\0')
    cap_fail(job, END_FAILED, "server",
             "rank %d: the profiler's stop failed (kineto raised in its "
             "exit: no trace file will come): %s",
             rank_of(stop), stop);
  else if (dead != NULL)
    cap_fail(job, END_FAILED, "server", "the server died during the %s: %s",
             tr_phase_name(job->watch.dead_phase), dead);
}

static void on_tick(uv_timer_t *t)
{
  struct cap_job *job = t->data;

  cap_watch_tick(job, true, on_look);
  if (!job->export.busy)
    job->export.busy = cap_export_scan(job, false, on_folder_scan);
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
                         cap_ms(job, cap_profile_timeout_s(job, true)),
                         on_stop_profile, job, &job->http) != 0)
      cap_fail(job, END_FAILED, NULL, "cannot call ATOM's /stop_profile");
  } else if (job->bench.proc != NULL) {
    job->bench.on_exit = on_bench_exit;
  } else if (!job->bench.done) {
    on_bench_exit(job); /* it exited between the phases */
  }
}

void phase_exporting_enter(struct cap_job *job)
{
  uint64_t every_ms = cap_ms(job, job->r->cfg->export_poll_s);

  job->export.polls = job->export.quiet_polls = 0;
  job->export.started_ns = tr_now_ns();
  job->export.last_log_bytes = job->scan.bytes_seen;
  cap_job_progress(job, json_pack("{s:i,s:i,s:i,s:i}", "ranks_exported", 0,
                                  "orphan_json", 0, "export_polls", 0,
                                  "exports_logged", 0));
  wait_for_run(job);
  uv_timer_start(&job->tick, on_tick, 0, every_ms);
}
