/*
 * Thread-pool plumbing of the runner: every blocking call (SQLite, file
 * reads) runs in uv_queue_work; the loop only routes. A job's state writes
 * go through one FIFO and run one at a time, so they commit in the order
 * the state machine made them; a transition acts only after its phase is
 * committed (then-callbacks).
 *
 * A store that refuses (a full disk, an I/O error) has one rule, here:
 * the refused work is queued again from the loop after a delay (no pool
 * thread ever sleeps), RETRIES times at most, never once traced stops. A
 * claim still refused then leaves the capture queued (nothing of it ran);
 * any other state write fails the job; a final one is the runner's, tried
 * until the store takes it (a full disk must not hold the GPU), with its
 * status and its phase.
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "common/stats.h"
#include "common/text.h"
#include "daemon/cap_int.h"

/* w is done with (run, or given up while it waited for a retry). */
static void work_done(struct cap_work *w)
{
  struct cap_runner *r = w->r;
  struct cap_job *job = w->job;

  r->works--;
  if (job != NULL)
    job->works--;
  w->done(w);
  if (job != NULL && job->finished)
    cap_job_release(job); /* frees once nothing refers to it */
  cap_runner_check_down(r);
}

static void after_work(uv_work_t *req, int status)
{
  (void)status; /* never cancelled: uv_cancel is not used */
  work_done(req->data);
}

static void run_work(uv_work_t *req)
{
  struct cap_work *w = req->data;

  w->run(w);
}

void cap_work_queue(struct cap_runner *r, struct cap_job *job,
                    struct cap_work *w, void (*run)(struct cap_work *),
                    void (*done)(struct cap_work *))
{
  w->r = r;
  w->job = job;
  w->run = run;
  w->done = done;
  w->req.data = w;
  r->works++;
  if (job != NULL)
    job->works++;
  /* uv_queue_work fails only for a NULL callback. */
  uv_queue_work(r->loop, &w->req, run_work, after_work);
}

void *cap_job_work_new(struct cap_job *job, size_t size)
{
  void *w = calloc(1, size);

  if (w == NULL)
    cap_fail(job, END_FAILED, NULL, "out of memory");
  return w;
}

void cap_job_queue_new(struct cap_job *job, size_t size,
                       void (*run)(struct cap_work *),
                       void (*done)(struct cap_work *))
{
  struct cap_work *w = cap_job_work_new(job, size);

  if (w != NULL)
    cap_work_queue(job->r, job, w, run, done);
}

/* ---- a store that refuses ---- */

#define RETRIES      6    /* tries after the first */
#define RETRY_MS     100  /* the first delay, doubling */
#define RETRY_MAX_MS 5000 /* the delay of the work tried until it is taken */

bool cap_store_refused(int rc)
{
  return rc == TR_ESTORAGE || rc == TR_EDB || rc == TR_EIO || rc == -ENOSPC ||
         rc == -EIO;
}

static void on_later(uv_timer_t *t)
{
  struct cap_runner *r = t->data;
  uint64_t now = uv_now(r->loop);
  struct cap_work **p = &r->later;

  while (*p != NULL) {
    struct cap_work *w = *p;

    if (w->due_ms > now) {
      p = &w->later;
      continue;
    }
    *p = w->later;
    uv_queue_work(r->loop, &w->req, run_work, after_work);
  }
  cap_work_arm_later(r);
}

/* The timer at the first work due. */
void cap_work_arm_later(struct cap_runner *r)
{
  uint64_t first = UINT64_MAX, now = uv_now(r->loop);

  if (r->later_timer.loop == NULL)
    return; /* recover() runs before the timer exists: armed after it */

  for (struct cap_work *w = r->later; w != NULL; w = w->later)
    first = w->due_ms < first ? w->due_ms : first;
  if (first == UINT64_MAX)
    uv_timer_stop(&r->later_timer);
  else
    uv_timer_start(&r->later_timer, on_later, first > now ? first - now : 0, 0);
}

bool cap_work_retry(struct cap_work *w, bool until_taken)
{
  struct cap_runner *r = w->r;
  uint64_t delay = RETRY_MS;

  if (r->stopping || (!until_taken && w->tries >= RETRIES))
    return false;
  for (int i = 0; i < w->tries && delay < RETRY_MAX_MS; i++)
    delay *= 2;
  w->tries++;
  w->due_ms = uv_now(r->loop) + (delay < RETRY_MAX_MS ? delay : RETRY_MAX_MS);
  /* Still the job's work: the job and the runner wait for it. */
  r->works++;
  if (w->job != NULL)
    w->job->works++;
  w->later = r->later;
  r->later = w;
  cap_work_arm_later(r);
  return true;
}

void cap_work_give_up(struct cap_runner *r)
{
  struct cap_work *w;

  uv_timer_stop(&r->later_timer);
  while ((w = r->later) != NULL) {
    r->later = w->later;
    work_done(w); /* its done() retries no more: r->stopping */
  }
}

struct store *cap_db_take(struct cap_runner *r, struct tr_err *err)
{
  struct store *st = NULL;

  pthread_mutex_lock(&r->db_lock);
  if (r->ndbs > 0)
    st = r->dbs[--r->ndbs];
  pthread_mutex_unlock(&r->db_lock);
  if (st == NULL && store_open(r->cfg->db, STORE_RW, &st, err) != 0)
    return NULL;
  return st;
}

void cap_db_give(struct cap_runner *r, struct store *st)
{
  if (st == NULL)
    return;
  pthread_mutex_lock(&r->db_lock);
  if (r->ndbs == r->dbs_cap) {
    size_t cap = r->dbs_cap ? 2 * r->dbs_cap : 8;
    struct store **grown = realloc(r->dbs, cap * sizeof(*grown));

    if (grown != NULL) {
      r->dbs = grown;
      r->dbs_cap = cap;
    }
  }
  if (r->ndbs < r->dbs_cap) {
    r->dbs[r->ndbs++] = st;
    st = NULL;
  }
  pthread_mutex_unlock(&r->db_lock);
  store_close(st);
}

/* Reading traces (indexing, slices) yields the CPU to the HTTP threads and
 * the loop: on a small box a GB of trace otherwise pushes read latency up
 * (measured by bench/bench_api.sh). On Linux setpriority(PRIO_PROCESS,
 * tid) applies to one thread, and the inflate thread idx_file() starts
 * inherits it. The pool thread gets its priority back afterwards where
 * allowed (root). */
#define INDEX_NICE 10

int cap_nice_lower(void)
{
  int old;

  errno = 0;
  old = getpriority(PRIO_PROCESS, (id_t)gettid());
  if (errno != 0)
    old = 0;
  (void)setpriority(PRIO_PROCESS, (id_t)gettid(), INDEX_NICE);
  return old;
}

void cap_nice_restore(int old)
{
  (void)setpriority(PRIO_PROCESS, (id_t)gettid(), old);
}

/* ---- log tails ---- */

char *cap_read_tail(const char *path, size_t max_bytes)
{
  struct stat st;
  int fd = tr_open_file(NULL, path, 0, &st, NULL);
  char *tail = NULL;

  if (fd < 0)
    return NULL;
  tail = tr_read_tail(fd, (uint64_t)st.st_size, max_bytes, NULL);
  close(fd);
  if (tail != NULL)
    tr_make_utf8(tail);
  return tail;
}

/* ---- ordered state writes ---- */

#define TAIL_BYTES 4096 /* of a log, quoted by a failure */
/* Of a log, read for its decisive line: a traceback's frames run long. */
#define QUOTE_BYTES (64 << 10)

struct cap_op {
  struct cap_work super;
  struct cap_op *next;
  struct cap_write w; /* w.tail copied into tail */
  char *tail;
  int rc;
  struct tr_err err;
};

static void start_next_op(struct cap_job *job);

/* Pool: "<message>: <the log's decisive line>" into the error's
 * message (a log that says nothing leaves it as it was). */
static void quote_decisive(json_t *error, const char *path)
{
  char *text = cap_read_tail(path, QUOTE_BYTES), line[CAP_SCAN_LINE];
  const char *msg = json_string_value(json_object_get(error, "message"));
  char both[1024 + CAP_SCAN_LINE];

  if (text != NULL && msg != NULL) {
    cap_log_decisive(text, line);
    snprintf(both, sizeof(both), "%s: %s", msg, line);
    tr_make_utf8(both); /* the line may end mid-character */
    if (line[0] != '\0')
      json_object_set_new(error, "message", json_string(both));
  }
  free(text);
}

static void run_op(struct cap_work *w)
{
  struct cap_op *op = (struct cap_op *)w;
  struct store_apply a;
  struct store *st;

  if (op->tail != NULL) {
    json_t *error = json_object_get(op->w.merges, "error");
    char *tail = cap_read_tail(op->tail, TAIL_BYTES);

    if (op->w.quote) /* once: a write the store refused runs again */
      quote_decisive(error, op->tail);
    op->w.quote = false;
    json_object_set_new(error, "log_tail",
                        tail ? json_string(tail) : json_null());
    free(tail);
  }
  a = (struct store_apply){
    op->w.claim, op->w.status, op->w.phase, op->w.merges,
    op->w.ends_sweep ? json_string_value(json_object_get(
                           json_object_get(op->w.merges, "error"), "message"))
                     : NULL
  };
  tr_err_clear(&op->err);
  st = cap_db_take(w->r, &op->err);
  op->rc = st != NULL     ? store_capture_apply(st, w->job->id, &a, &op->err)
           : op->err.code ? op->err.code
                          : TR_EDB;
  cap_db_give(w->r, st);
}

/* The store would not take a write, tried again as the rule says. A claim
 * leaves the capture queued: the job ends, the runner takes it again. A
 * final one becomes the runner's to retry (the job ends now: its GPU slot
 * must not wait for a disk); any other fails the job, which comes back
 * here with its final write. */
static void write_refused(struct cap_job *job, struct cap_op *op)
{
  fprintf(stderr, "traced: capture %lld: state write failed: %s\n",
          (long long)job->id, op->err.msg);
  if (op->w.claim && job->ending == END_NONE) {
    job->ending = END_REQUEUED;
    cap_job_finish(job);
  } else if (op->w.status >= 0 && tr_status_final(op->w.status)) {
    json_t *error = json_object_get(op->w.merges, "error");

    cap_runner_orphan(job->r, job->id, op->w.status, op->w.phase,
                      error ? json_incref(error) : NULL);
    /* DONE's write: the job ends without acting on it (its webhook). */
    if (!op->w.always)
      cap_job_finish(job);
  } else if (job->ending == END_NONE) {
    cap_fail(job, END_FAILED, NULL,
             "the store refuses writes (%s): the capture cannot go on",
             op->err.msg);
  }
}

static void on_op_done(struct cap_work *w)
{
  struct cap_op *op = (struct cap_op *)w;
  struct cap_job *job = w->job;

  if (cap_store_refused(op->rc) && cap_work_retry(w, false))
    return; /* the same write later: the FIFO waits for it */
  job->op_busy = false;
  job->ops_head = op->next;
  if (job->ops_head == NULL)
    job->ops_tail = NULL;
  if (op->w.claim && op->rc == TR_ECONFLICT && job->ending == END_NONE) {
    fprintf(stderr, "traced: capture %lld was cancelled before it started\n",
            (long long)job->id);
    job->ending = END_CANCELLED;
    cap_job_finish(job);
  } else if (cap_store_refused(op->rc)) {
    write_refused(job, op);
  } else if (op->rc != 0) {
    fprintf(stderr, "traced: capture %lld: state write: %s\n",
            (long long)job->id, op->err.msg);
  }
  /* What must follow a write whatever became of it (the end of a failed
   * job: its children, its slot) follows it. */
  if ((op->rc == 0 || op->w.always) && op->w.then != NULL &&
      (op->w.always || job->ending == END_NONE))
    op->w.then(job);
  json_decref(op->w.merges);
  free(op->tail);
  free(op);
  start_next_op(job);
}

static void start_next_op(struct cap_job *job)
{
  if (job->op_busy || job->ops_head == NULL)
    return;
  job->op_busy = true;
  cap_work_queue(job->r, job, &job->ops_head->super, run_op, on_op_done);
}

void cap_job_write(struct cap_job *job, const struct cap_write *w)
{
  struct cap_op *op = calloc(1, sizeof(*op));

  if (op == NULL || (w->tail != NULL && (op->tail = strdup(w->tail)) == NULL)) {
    json_decref(w->merges);
    free(op);
    fprintf(stderr, "traced: capture %lld: out of memory\n",
            (long long)job->id);
    return;
  }
  op->w = *w;
  op->w.merges = w->merges ? w->merges : json_object();
  op->w.tail = NULL;
  if (job->ops_tail != NULL)
    job->ops_tail->next = op;
  else
    job->ops_head = op;
  job->ops_tail = op;
  start_next_op(job);
}

void cap_job_merge(struct cap_job *job, json_t *merges)
{
  struct cap_write w = {
    -1, -1, merges, NULL, NULL, false, false, false, false
  };

  cap_job_write(job, &w);
}

void cap_job_progress(struct cap_job *job, json_t *obj)
{
  struct cap_op *tail = job->ops_tail;

  /* A queued (not yet running) plain progress write takes the update. */
  if (tail != NULL && tail != job->ops_head && tail->w.phase < 0 &&
      tail->w.status < 0 && tail->w.then == NULL &&
      json_object_size(tail->w.merges) == 1 &&
      json_object_get(tail->w.merges, "progress") != NULL) {
    json_object_update(json_object_get(tail->w.merges, "progress"), obj);
    json_decref(obj);
    return;
  }
  cap_job_merge(job, json_pack("{s:o}", "progress", obj));
}

/* ---- final writes the store refused ---- */

struct orphan_work {
  struct cap_work super;
  int64_t id;
  int status, phase;
  json_t *error; /* or NULL */
  int rc;
};

static void run_orphan(struct cap_work *w)
{
  struct orphan_work *ow = (struct orphan_work *)w;
  json_t *merges = ow->error ? json_pack("{s:O}", "error", ow->error) : NULL;
  struct store_apply a = { false, ow->status, ow->phase, merges, NULL };
  struct tr_err err = { 0 };
  struct store *st = cap_db_take(w->r, &err);

  ow->rc = st != NULL ? store_capture_apply(st, ow->id, &a, &err) : TR_EDB;
  cap_db_give(w->r, st);
  json_decref(merges);
}

/* Written, or no longer ours to write (deleted, ended otherwise), or
 * traced stops: the next start marks it interrupted. */
static void orphan_end(struct orphan_work *ow)
{
  tr_stats_pending_drop(ow->id);
  if (cap_store_refused(ow->rc))
    fprintf(stderr,
            "traced: capture %lld: its final state was never written "
            "(the next start marks it interrupted)\n",
            (long long)ow->id);
  else
    fprintf(stderr, "traced: capture %lld: final state written at last\n",
            (long long)ow->id);
  json_decref(ow->error);
  free(ow);
}

/* The queue may have waited for the store too: it is looked at again. */
static void on_orphan_done(struct cap_work *w)
{
  struct orphan_work *ow = (struct orphan_work *)w;
  struct cap_runner *r = w->r;

  if (cap_store_refused(ow->rc) && cap_work_retry(w, true))
    return;
  orphan_end(ow);
  cap_runner_pump(r);
}

void cap_runner_orphan(struct cap_runner *r, int64_t id, int status, int phase,
                       json_t *error)
{
  struct orphan_work *ow = calloc(1, sizeof(*ow));

  if (ow == NULL) {
    json_decref(error);
    return;
  }
  ow->id = id;
  ow->status = status;
  ow->phase = phase;
  ow->error = error;
  /* Shown as traced holds it until it is written (common/stats.h). */
  tr_stats_pending_put(id, tr_status_name(status),
                       phase >= 0 ? tr_phase_name(phase) : NULL, error);
  ow->rc = TR_ESTORAGE; /* the store refused it just now */
  ow->super.r = r;
  ow->super.run = run_orphan;
  ow->super.done = on_orphan_done;
  ow->super.req.data = &ow->super;
  if (!cap_work_retry(&ow->super, true))
    orphan_end(ow);
}
