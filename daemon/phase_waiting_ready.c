/*
 * WAITING_READY: traced's own ready gate, because the start script's exit
 * 0 proves nothing (docs/ATOM.md). Every ready_poll_s: GET /v1/models, and
 * a look at the server (watch.c: its log's fatal markers, its process
 * group; no connect probe, the port opens only once loaded).
 *
 * The wait follows progress (docs/ATOM.md, "Budgets"): a cold compile
 * takes many minutes (ATOM CI waits up to 45, atom_test.sh:88, and the
 * start script wipes ~/.cache/atom at every launch), so while this
 * launch's log grows the server is loading; ready_timeout_s without a new
 * log byte fails the phase, and so does ready_max_s in all.
 *
 * On 200 the ranks that will export are settled: /server_info's tp_size x
 * dp_size where the server has it (times the pipeline and prefill-context
 * sizes of the argv), else what the argv asks for; with --fake-eplb only
 * the workers of the devices there are export (atom/config.py:1543,
 * tp_world_size), and each made its rank folder when it started
 * (model_runner.py:656): the folders there are then the ranks.
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/cap_int.h"

#define INFO_TIMEOUT_MS 5000

int phase_waiting_ready_budget_s(const struct cap_job *job)
{
  /* The tick fails the phase with its own message first. */
  return job->r->cfg->ready_max_s + 30;
}

static void ready(struct cap_job *job, int expected, const char *source,
                  json_t *info)
{
  job->export.ranks_expected = expected;
  job->export.ranks_source = source;
  cap_enter(job, TR_PHASE_BENCHMARK,
            json_pack("{s:{s:i},s:{s:{s:i,s:s,s:O?}}}", "progress",
                      "ranks_expected", expected, "extra", "export_ranks",
                      "expected", expected, "source", source, "server_info",
                      info));
}

struct folders_work {
  struct cap_work super;
  json_t *info;
  int expected;       /* from /server_info or the argv, at most */
  const char *source; /* of expected */
  int folders;        /* rank folders made by the workers */
};

static void run_count(struct cap_work *w)
{
  struct folders_work *fw = (struct folders_work *)w;
  struct cap_layout *l = NULL;

  if (cap_layout_scan(w->job->export_dir, &l, NULL) == 0)
    fw->folders = (int)l->n;
  cap_layout_free(l);
}

static void on_count(struct cap_work *w)
{
  struct folders_work *fw = (struct folders_work *)w;
  struct cap_job *job = w->job;

  if (job->ending == END_NONE && fw->folders > 0 &&
      fw->folders < fw->expected)
    ready(job, fw->folders, "fake_eplb_folders", fw->info);
  else if (job->ending == END_NONE)
    ready(job, fw->expected, fw->source, fw->info);
  json_decref(fw->info);
  free(fw);
}

static void on_server_info(void *ud, const struct cap_http_answer *a)
{
  struct cap_job *job = ud;
  json_t *tp = json_object_get(a->doc, "tp_size");
  json_t *dp = json_object_get(a->doc, "dp_size");
  const char *source = "argv";
  int expected = job->plan->ranks_argv;
  struct folders_work *fw;

  job->http = NULL;
  if (a->ok && json_is_integer(tp) && json_is_integer(dp) &&
      json_integer_value(tp) > 0 && json_integer_value(dp) > 0 &&
      json_integer_value(tp) * json_integer_value(dp) < 65536) {
    expected = (int)(json_integer_value(tp) * json_integer_value(dp)) *
               job->plan->pp_pcp;
    source = "server_info";
  }
  /* /server_info gives the logical TP (tensor_parallel_size): with
   * --fake-eplb fewer workers may run. */
  if (!job->plan->fake_eplb ||
      (fw = calloc(1, sizeof(*fw))) == NULL) {
    ready(job, expected, source, a->ok ? a->doc : NULL);
    return;
  }
  fw->info = a->ok ? json_incref(a->doc) : NULL;
  fw->expected = expected;
  fw->source = source;
  cap_work_queue(job->r, job, &fw->super, run_count, on_count);
}

static void on_models(void *ud, const struct cap_http_answer *a)
{
  struct cap_job *job = ud;
  const struct cfg *c = job->r->cfg;

  job->http = NULL;
  if (!a->ok || job->ending != END_NONE)
    return;
  uv_timer_stop(&job->tick);
  cap_watch_stop(job);
  if (cap_atom_get(job->r->http, c->atom_host, c->atom_port, "/server_info",
                   INFO_TIMEOUT_MS, on_server_info, job, &job->http) != 0) {
    struct cap_http_answer none = { 0 };

    on_server_info(job, &none);
  }
}

/* A look at the server: dead, or its log grew (progress). */
static void on_look(struct cap_job *job, const char *dead)
{
  if (dead != NULL) {
    cap_fail(job, END_FAILED, "server", "the server died while loading: %s",
             dead);
    return;
  }
  if (job->scan.bytes_seen != job->ready.log_bytes) {
    job->ready.log_bytes = job->scan.bytes_seen;
    job->ready.progress_ns = tr_now_ns();
  }
}

static long poll_timeout_ms(const struct cap_job *job)
{
  long ms = job->r->cfg->ready_poll_s * 1000L;

  return ms < 1000 ? 1000 : ms > 10000 ? 10000 : ms;
}

static void on_tick(uv_timer_t *t)
{
  struct cap_job *job = t->data;
  const struct cfg *c = job->r->cfg;
  int64_t waited_s = cap_secs_since(job, job->ready_since_ns);
  int64_t quiet_s = cap_secs_since(job, job->ready.progress_ns);

  if (waited_s >= c->ready_max_s) {
    cap_fail(job, END_FAILED, "server",
             "server not ready after %d s (ready_max_s), though its log "
             "grew %lld s ago: GET /v1/models never answered 200",
             c->ready_max_s, (long long)quiet_s);
    return;
  }
  if (quiet_s >= c->ready_timeout_s) {
    cap_fail(job, END_FAILED, "server",
             "server not ready after %lld s, and its log silent for %d s "
             "(ready_timeout_s): GET /v1/models never answered 200 (the "
             "start script's exit 0 is not readiness)",
             (long long)waited_s, c->ready_timeout_s);
    return;
  }
  cap_watch_tick(job, false, on_look);
  if (job->http == NULL)
    cap_atom_get(job->r->http, c->atom_host, c->atom_port, "/v1/models",
                 poll_timeout_ms(job), on_models, job, &job->http);
}

void phase_waiting_ready_enter(struct cap_job *job)
{
  job->ready_since_ns = job->ready.progress_ns = tr_now_ns();
  job->ready.log_bytes = job->scan.bytes_seen;
  uv_timer_start(&job->tick, on_tick, 0, cap_ms(job, job->r->cfg->ready_poll_s));
}
