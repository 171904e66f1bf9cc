/*
 * WAITING_READY: traced's own ready gate, because the start script's exit
 * 0 proves nothing (docs/ATOM.md). Every ready_poll_s: GET /v1/models, and
 * a look at the server (watch.c: its log's fatal markers, its process
 * group; no connect probe, the port opens only once loaded). On 200 the
 * ranks that will export are settled: /server_info's tp_size x dp_size
 * where the server has it (times the pipeline and prefill-context sizes of
 * the argv), else what the argv asks for.
 */
#include <stdio.h>

#include "daemon/cap_int.h"

#define INFO_TIMEOUT_MS 5000

int phase_waiting_ready_budget_s(const struct cap_job *job)
{
  /* The tick fails the phase with its own message first. */
  return job->r->cfg->ready_timeout_s + 30;
}

static void on_server_info(void *ud, const struct cap_http_answer *a)
{
  struct cap_job *job = ud;
  json_t *tp = json_object_get(a->doc, "tp_size");
  json_t *dp = json_object_get(a->doc, "dp_size");
  const char *source = "argv";
  int expected = job->plan->ranks_argv;

  job->http = NULL;
  if (a->ok && json_is_integer(tp) && json_is_integer(dp) &&
      json_integer_value(tp) > 0 && json_integer_value(dp) > 0 &&
      json_integer_value(tp) * json_integer_value(dp) < 65536) {
    expected = (int)(json_integer_value(tp) * json_integer_value(dp)) *
               job->plan->pp_pcp;
    source = "server_info";
  }
  job->export.ranks_expected = expected;
  job->export.ranks_source = source;
  cap_enter(job, TR_PHASE_BENCHMARK,
            json_pack("{s:{s:i},s:{s:{s:i,s:s,s:O?}}}", "progress",
                      "ranks_expected", expected, "extra", "export_ranks",
                      "expected", expected, "source", source, "server_info",
                      a->ok ? a->doc : NULL));
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

static void on_look(struct cap_job *job, const char *dead)
{
  if (dead != NULL)
    cap_fail(job, END_FAILED, "server", "the server died while loading: %s",
             dead);
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
  int64_t waited_s = (tr_now_ns() - job->ready_since_ns) / 1000000000;

  if (waited_s >= c->ready_timeout_s) {
    cap_fail(job, END_FAILED, "server",
             "server not ready after %d s: GET /v1/models never answered "
             "200 (ready_timeout_s; the start script's exit 0 is not "
             "readiness)",
             c->ready_timeout_s);
    return;
  }
  cap_watch_tick(job, false, on_look);
  if (job->http == NULL)
    cap_atom_get(job->r->http, c->atom_host, c->atom_port, "/v1/models",
                 poll_timeout_ms(job), on_models, job, &job->http);
}

void phase_waiting_ready_enter(struct cap_job *job)
{
  job->ready_since_ns = tr_now_ns();
  uv_timer_start(&job->tick, on_tick, 0,
                 (uint64_t)job->r->cfg->ready_poll_s * 1000);
}
