/*
 * The capture runner: two FIFO queues read from the store, captures (one at
 * a time: one GPU server) and imports (one at a time, beside the capture:
 * they need no GPU), recovery after a crash, cancel and shutdown. The
 * phases themselves are capture.c's and phase_<name>.c's. Also the final
 * writes the store refused (a full disk), retried until it takes them.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

/* ---- jobs ---- */

static void on_job_handle_closed(uv_handle_t *h)
{
  struct cap_job *job = h->data;

  job->open_handles--;
  cap_job_release(job);
}

/* A sweep's point: the capture object's "sweep" (docs/SWEEPS.md). */
static void sweep_of(struct cap_job *job, json_t *sweep)
{
  job->sweep_id = json_integer_value(json_object_get(sweep, "id"));
  job->sweep_point = (int)json_integer_value(json_object_get(sweep, "point"));
  job->sweep_conc_max =
      (int)json_integer_value(json_object_get(sweep, "conc_max"));
}

/* Frees job and what it holds; each member may be NULL (a job_new() that
 * failed half-way). */
static void job_free(struct cap_job *job)
{
  atom_plan_free(job->plan);
  cap_layout_free(job->layout);
  json_decref(job->params);
  json_decref(job->stored_ranks);
  json_decref(job->bench.result);
  json_decref(job->bench.note);
  json_decref(job->verdict);
  free(job->trace_dir);
  free(job->log_dir);
  free(job->export_dir);
  free(job->work_dir);
  free(job->scan.copy);
  free(job->index.read);
  free(job->index.skip);
  free(job->index.works);
  free(job->index.failures);
  free(job);
}

static struct cap_job *job_new(struct cap_runner *r, int64_t id,
                               enum tr_kind kind, json_t *obj, bool recovered)
{
  struct cap_job *job = calloc(1, sizeof(*job));
  const char *root = r->cfg->trace_root;

  if (job == NULL)
    return NULL;
  job->r = r;
  job->id = id;
  job->kind = kind;
  job->is_import = kind == TR_KIND_IMPORT;
  job->recovered = recovered;
  job->phase = TR_PHASE_QUEUED;
  job->params = json_incref(json_object_get(obj, "params"));
  if (recovered)
    job->stored_ranks = json_incref(json_object_get(obj, "ranks"));
  sweep_of(job, json_object_get(obj, "sweep"));
  if ((job->trace_dir = tr_capture_dir(root, id, NULL)) == NULL ||
      (job->log_dir = tr_capture_dir(root, id, "logs")) == NULL ||
      (job->export_dir = job->sweep_id != 0
                             ? cap_sweep_launch_dir(root, job->sweep_id)
                             : strdup(job->trace_dir)) == NULL ||
      asprintf(&job->work_dir, "%s/work", job->log_dir) < 0 ||
      asprintf(&job->scan.copy, "%s/server.log", job->log_dir) < 0) {
    job_free(job);
    return NULL;
  }
  job->scan.src = r->cfg->server_log;
  job->scan.trace_dir = job->export_dir;
  uv_timer_init(r->loop, &job->deadline);
  uv_timer_init(r->loop, &job->tick);
  uv_timer_init(r->loop, &job->progress_timer);
  job->deadline.data = job->tick.data = job->progress_timer.data = job;
  job->open_handles = 3;
  r->jobs++;
  return job;
}

void cap_job_release(struct cap_job *job)
{
  struct cap_runner *r = job->r;

  if (!job->finished || job->works > 0 || job->open_handles > 0)
    return;
  assert(job->ops_head == NULL);
  job_free(job);
  r->jobs--;
  cap_runner_check_down(r);
}

static void run_final_scan(struct cap_work *w)
{
  cap_scan_run(&w->job->scan);
}

static void on_final_scan_done(struct cap_work *w)
{
  free(w);
}

void cap_job_finish(struct cap_job *job)
{
  struct cap_runner *r = job->r;
  struct cap_work *w;

  if (job->finished)
    return;
  job->finished = true;
  cap_index_cancel(job);
  if (r->queues[job->kind].job == job) {
    r->queues[job->kind].job = NULL;
    atomic_store(&r->queues[job->kind].id, 0);
  }
  cap_http_cancel(job->http);
  job->http = NULL;
  cap_watch_stop(job);
  /* A sweep's server may serve its next point (docs/SWEEPS.md). */
  cap_sweep_keep(job);
  /* A server left by a good capture stays up (the skill's way); groups
   * being killed get SIGKILL now. */
  cap_proc_close(job->child);
  cap_proc_close(job->launcher);
  cap_proc_close(job->bench.proc);
  job->child = job->launcher = job->bench.proc = NULL;
  uv_close((uv_handle_t *)&job->deadline, on_job_handle_closed);
  uv_close((uv_handle_t *)&job->tick, on_job_handle_closed);
  uv_close((uv_handle_t *)&job->progress_timer, on_job_handle_closed);
  /* The server log's last bytes of this launch go to its copy. */
  if (!job->is_import && tr_phase_server(job->phase, TR_LOGGED) &&
      !job->watch.scanning && (w = calloc(1, sizeof(*w))) != NULL) {
    job->watch.scanning = true;
    cap_work_queue(r, job, w, run_final_scan, on_final_scan_done);
  }
  cap_runner_pump(r);
}

/* ---- the queues ---- */

struct pick_work {
  struct cap_work super;
  enum tr_kind kind;
  int64_t id; /* 0: take the oldest queued */
  bool recovered;
  json_t *obj; /* the capture object, when found */
  struct tr_err err;
};

static void pick(struct cap_runner *r, enum tr_kind kind);

static void run_pick(struct cap_work *w)
{
  struct pick_work *pw = (struct pick_work *)w;
  struct store *st = cap_db_take(w->r, &pw->err);
  int64_t *ids = NULL;
  size_t n = 0;
  const char *status;

  if (st == NULL)
    return;
  if (pw->id == 0 &&
      store_capture_ids(st, "queued", tr_kind_names[pw->kind], &ids, &n,
                        &pw->err) == 0 &&
      n > 0)
    pw->id = ids[0];
  free(ids);
  if (pw->id != 0 && store_capture_get(st, pw->id, &pw->obj, &pw->err) == 0) {
    /* A queued one cancelled by the API since is not ours any more. */
    status = json_string_value(json_object_get(pw->obj, "status"));
    if (status == NULL ||
        strcmp(status, pw->recovered ? "running" : "queued") != 0) {
      json_decref(pw->obj);
      pw->obj = NULL;
    }
  }
  cap_db_give(w->r, st);
}

static void start_job(struct cap_runner *r, struct pick_work *pw)
{
  struct cap_job *job = job_new(r, pw->id, pw->kind, pw->obj, pw->recovered);

  if (job == NULL) {
    fprintf(stderr, "traced: out of memory starting %lld\n", (long long)pw->id);
    return;
  }
  r->queues[pw->kind].job = job;
  atomic_store(&r->queues[pw->kind].id, job->id);
  cap_sweep_join(job);
  cap_start(job);
}

static void on_pick_done(struct cap_work *w)
{
  struct pick_work *pw = (struct pick_work *)w;
  struct cap_runner *r = w->r;
  struct cap_queue *q = &r->queues[pw->kind];
  enum tr_kind kind = pw->kind;
  bool found = pw->obj != NULL;
  bool slot_free = q->job == NULL;

  if (!found && cap_store_refused(pw->err.code) && !pw->recovered &&
      cap_work_retry(w, true)) {
    /* The store cannot be read now: looked at again until it can, or
     * the queue would wait for the next request. */
    if (w->tries == 1)
      fprintf(stderr, "traced: reading the %s queue: %s (trying again)\n",
              tr_kind_names[kind], pw->err.msg);
    tr_err_clear(&pw->err);
    pw->id = 0;
    return;
  }
  q->picking = false;
  if (pw->err.code != 0)
    fprintf(stderr, "traced: reading the %s queue: %s\n", tr_kind_names[kind],
            pw->err.msg);
  if (pw->obj != NULL && slot_free && !r->stopping)
    start_job(r, pw);
  else if (pw->obj != NULL)
    fprintf(stderr, "traced: %s %lld left for later\n", tr_kind_names[kind],
            (long long)pw->id);
  json_decref(pw->obj);
  /* Look again: woken meanwhile, or a recovered id that was not usable. */
  if ((q->pick_again || (pw->recovered && !found)) && !r->stopping) {
    q->pick_again = false;
    pick(r, kind);
  }
  free(pw);
}

static void pick(struct cap_runner *r, enum tr_kind kind)
{
  struct cap_queue *q = &r->queues[kind];
  struct pick_work *pw;

  if (r->stopping || q->job != NULL)
    return;
  if (q->picking) {
    q->pick_again = true;
    return;
  }
  if ((pw = calloc(1, sizeof(*pw))) == NULL)
    return;
  pw->kind = kind;
  /* Work recovered after a restart goes first. */
  if (q->nrecover > 0) {
    pw->id = q->recover[0];
    pw->recovered = true;
    memmove(q->recover, q->recover + 1, --q->nrecover * sizeof(int64_t));
  }
  q->picking = true;
  q->pick_again = false;
  cap_work_queue(r, NULL, &pw->super, run_pick, on_pick_done);
}

void cap_runner_pump(struct cap_runner *r)
{
  for (int k = 0; k < TR_NKIND; k++)
    pick(r, (enum tr_kind)k);
  cap_index_pump(r);
}

void cap_runner_wake(struct cap_runner *r)
{
  cap_runner_pump(r);
}

bool cap_runner_running(const struct cap_runner *r, int64_t id)
{
  for (int k = 0; id != 0 && k < TR_NKIND; k++)
    if (atomic_load(&r->queues[k].id) == id)
      return true;
  return false;
}

int cap_runner_cancel(struct cap_runner *r, int64_t id)
{
  struct cap_job *job = NULL;

  for (int k = 0; k < TR_NKIND; k++)
    if (r->queues[k].job != NULL && r->queues[k].job->id == id)
      job = r->queues[k].job;
  if (job == NULL || job->ending != END_NONE)
    return TR_ENOTFOUND;
  cap_fail(job, END_CANCELLED, NULL, "cancelled by request during %s",
           tr_phase_name(job->phase));
  return 0;
}

/* ---- shutdown ---- */

static void on_http_closed(void *ud)
{
  struct cap_runner *r = ud;
  void (*down)(void *) = r->down;

  r->http = NULL;
  r->down = NULL;
  if (down != NULL)
    down(r->down_ud);
}

static void on_webhook_closed(void *ud)
{
  struct cap_runner *r = ud;

  r->webhook = NULL;
  cap_http_close(r->http, on_http_closed, r);
}

static void on_timer_closed(uv_handle_t *h)
{
  struct cap_runner *r = h->data;

  cap_webhook_close(r->webhook, on_webhook_closed, r);
}

void cap_runner_check_down(struct cap_runner *r)
{
  if (!r->stopping || r->jobs > 0 || r->works > 0 || r->http_closed)
    return;
  r->http_closed = true;
  uv_close((uv_handle_t *)&r->later_timer, on_timer_closed);
}

/* A job collecting, indexing or finishing when traced stops stays
 * "running" in the store: the next start collects and indexes it again
 * (recover()). Any other is interrupted now. */
static void stop_job(struct cap_job *job)
{
  if (job == NULL || job->ending != END_NONE)
    return;
  if (job->phase == TR_PHASE_COLLECTING || job->phase == TR_PHASE_INDEXING ||
      job->phase == TR_PHASE_FINISHING) {
    job->ending = END_SHUTDOWN;
    cap_index_cancel(job);
    if (job->index.running == 0)
      cap_job_finish(job);
    return;
  }
  cap_fail(job, END_INTERRUPTED, NULL, "traced stopped during %s",
           tr_phase_name(job->phase));
}

void cap_runner_shutdown(struct cap_runner *r, void (*done)(void *ud), void *ud)
{
  r->stopping = true;
  r->down = done;
  r->down_ud = ud;
  for (int k = 0; k < TR_NKIND; k++)
    stop_job(r->queues[k].job);
  cap_sweep_drop(r);
  /* A store that refuses is not waited for: what it refused is given up
   * (a job's final state too: the next start marks it interrupted). */
  cap_work_give_up(r);
  cap_runner_check_down(r);
}

int cap_runner_new(uv_loop_t *loop, const struct cfg *cfg,
                   struct cap_runner **out, struct tr_err *err)
{
  struct cap_runner *r = calloc(1, sizeof(*r));
  int rc;

  if (r == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  r->loop = loop;
  r->cfg = cfg;
  pthread_mutex_init(&r->db_lock, NULL);
  if ((rc = idx_rules_load(cfg->category_rules, &r->rules, err)) != 0 ||
      (rc = cap_recover(r, err)) != 0 ||
      (rc = cap_http_new(loop, &r->http, err)) != 0 ||
      (rc = cap_webhook_new(loop, r->http, cfg, &r->webhook)) != 0) {
    cap_runner_free(r);
    return rc;
  }
  uv_timer_init(loop, &r->later_timer);
  r->later_timer.data = r;
  cap_work_arm_later(r); /* what recover() could not write */
  *out = r;
  return 0;
}

void cap_runner_free(struct cap_runner *r)
{
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->ndbs; i++)
    store_close(r->dbs[i]);
  free(r->dbs);
  for (int k = 0; k < TR_NKIND; k++)
    free(r->queues[k].recover);
  idx_rules_free(r->rules);
  pthread_mutex_destroy(&r->db_lock);
  free(r);
}
