/*
 * Thread-pool plumbing of the runner: every blocking call (SQLite, file
 * reads) runs in uv_queue_work; the loop only routes. A job's state writes
 * go through one FIFO and run one at a time, so they commit in the order
 * the state machine made them; a transition acts only after its phase is
 * committed (then-callbacks). A write the store refuses is retried; the
 * final write of a job that cannot be made is left to the runner, which
 * tries it until the store takes it (a full disk must not hold the GPU).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "common/text.h"
#include "daemon/cap_int.h"

static void after_work(uv_work_t *req, int status)
{
  struct cap_work *w = req->data;
  struct cap_runner *r = w->r;
  struct cap_job *job = w->job;

  (void)status; /* never cancelled: uv_cancel is not used */
  r->works--;
  if (job != NULL)
    job->works--;
  w->done(w);
  if (job != NULL && job->finished)
    cap_job_release(job); /* frees once nothing refers to it */
  cap_runner_check_down(r);
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

void cap_job_queue_new(struct cap_job *job, size_t size,
                       void (*run)(struct cap_work *),
                       void (*done)(struct cap_work *))
{
  struct cap_work *w = calloc(1, size);

  if (w == NULL)
    cap_fail(job, END_FAILED, NULL, "out of memory");
  else
    cap_work_queue(job->r, job, w, run, done);
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

/* A write the store refuses (a full disk, an I/O error) is tried again
 * this many times, WRITE_BACKOFF_MS, doubling, apart (a pool thread waits:
 * never the loop). */
#define WRITE_TRIES      6
#define WRITE_BACKOFF_MS 100

struct cap_op {
  struct cap_work super;
  struct cap_op *next;
  struct cap_write w; /* w.tail copied into tail */
  char *tail;
  int rc;
  struct tr_err err;
};

static void start_next_op(struct cap_job *job);

/* Errors worth a retry: the store, not the request. */
static bool retryable(int rc)
{
  return rc == TR_ESTORAGE || rc == TR_EDB || rc == TR_EIO || rc == -ENOSPC ||
         rc == -EIO;
}

static int apply(struct cap_runner *r, int64_t id, const struct store_apply *a,
                 struct tr_err *err)
{
  unsigned delay_ms = WRITE_BACKOFF_MS;
  int rc = 0;

  for (int i = 0; i < WRITE_TRIES; i++, delay_ms *= 2) {
    struct store *st = cap_db_take(r, err);

    if (st != NULL) {
      tr_err_clear(err);
      rc = store_capture_apply(st, id, a, err);
      cap_db_give(r, st);
    } else {
      rc = err->code ? err->code : TR_EDB;
    }
    if (!retryable(rc))
      return rc;
    usleep(delay_ms * 1000);
  }
  return rc;
}

static void run_op(struct cap_work *w)
{
  struct cap_op *op = (struct cap_op *)w;
  struct store_apply a = { op->w.claim, op->w.status, op->w.phase,
                           op->w.merges };

  if (op->tail != NULL) {
    char *tail = cap_read_tail(op->tail, 4096);

    json_object_set_new(json_object_get(op->w.merges, "error"), "log_tail",
                        tail ? json_string(tail) : json_null());
    free(tail);
  }
  op->rc = apply(w->r, w->job->id, &a, &op->err);
}

/* The store would not take a write. A final one becomes the runner's to
 * retry (the job ends now: its GPU slot must not wait for a disk); any
 * other fails the job, which comes back here with its final write. */
static void write_refused(struct cap_job *job, struct cap_op *op)
{
  fprintf(stderr, "traced: capture %lld: state write failed: %s\n",
          (long long)job->id, op->err.msg);
  if (op->w.status >= 0 && tr_status_final(op->w.status)) {
    json_t *error = json_object_get(op->w.merges, "error");

    cap_runner_orphan(job->r, job->id, op->w.status,
                      error ? json_incref(error) : NULL);
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
  bool written = op->rc == 0;

  job->op_busy = false;
  job->ops_head = op->next;
  if (job->ops_head == NULL)
    job->ops_tail = NULL;
  if (op->w.claim && op->rc == TR_ECONFLICT && job->ending == END_NONE) {
    fprintf(stderr, "traced: capture %lld was cancelled before it started\n",
            (long long)job->id);
    job->ending = END_CANCELLED;
    cap_job_finish(job);
  } else if (retryable(op->rc)) {
    write_refused(job, op);
    written = op->w.always;
  } else if (op->rc != 0) {
    fprintf(stderr, "traced: capture %lld: state write: %s\n",
            (long long)job->id, op->err.msg);
  }
  if (written && op->w.then != NULL &&
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
  struct cap_write w = { -1, -1, merges, NULL, NULL, false, false };

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

#define ORPHAN_RETRY_MS 5000

struct cap_orphan {
  struct cap_orphan *next;
  int64_t id;
  int status;
  json_t *error; /* or NULL */
  bool written;
};

struct orphan_work {
  struct cap_work super;
  struct cap_orphan *list; /* taken from the runner for the attempt */
};

static void run_orphans(struct cap_work *w)
{
  struct orphan_work *ow = (struct orphan_work *)w;

  for (struct cap_orphan *o = ow->list; o != NULL; o = o->next) {
    json_t *merges = o->error ? json_pack("{s:O}", "error", o->error) : NULL;
    struct store_apply a = { false, o->status, -1, merges };
    struct tr_err err = { 0 };
    struct store *st = cap_db_take(w->r, &err);
    int rc = st != NULL ? store_capture_apply(st, o->id, &a, &err) : TR_EDB;

    cap_db_give(w->r, st);
    /* Written, or no longer ours to write (deleted, ended otherwise). */
    o->written = !retryable(rc);
    json_decref(merges);
  }
}

static void orphan_free(struct cap_orphan *o)
{
  json_decref(o->error);
  free(o);
}

static void on_orphans_done(struct cap_work *w)
{
  struct orphan_work *ow = (struct orphan_work *)w;
  struct cap_runner *r = w->r;
  struct cap_orphan *o, *next;

  for (o = ow->list; o != NULL; o = next) {
    next = o->next;
    if (o->written) {
      fprintf(stderr, "traced: capture %lld: final state written at last\n",
              (long long)o->id);
      orphan_free(o);
    } else {
      o->next = r->orphans;
      r->orphans = o;
    }
  }
  free(ow);
  if (r->orphans == NULL)
    uv_timer_stop(&r->orphan_timer);
}

static void on_orphan_timer(uv_timer_t *t)
{
  struct cap_runner *r = t->data;
  struct orphan_work *ow;

  if (r->orphans == NULL || (ow = calloc(1, sizeof(*ow))) == NULL)
    return;
  ow->list = r->orphans;
  r->orphans = NULL;
  cap_work_queue(r, NULL, &ow->super, run_orphans, on_orphans_done);
}

void cap_runner_orphan(struct cap_runner *r, int64_t id, int status,
                       json_t *error)
{
  struct cap_orphan *o = calloc(1, sizeof(*o));

  if (o == NULL) {
    json_decref(error);
    return;
  }
  o->id = id;
  o->status = status;
  o->error = error;
  o->next = r->orphans;
  r->orphans = o;
  cap_runner_orphans_arm(r);
}

void cap_runner_orphans_arm(struct cap_runner *r)
{
  /* The timer's loop is set once it is initialised (after recover()). */
  if (r->orphans != NULL && r->orphan_timer.loop != NULL &&
      !uv_is_active((uv_handle_t *)&r->orphan_timer))
    uv_timer_start(&r->orphan_timer, on_orphan_timer, ORPHAN_RETRY_MS,
                   ORPHAN_RETRY_MS);
}

void cap_runner_orphans_free(struct cap_runner *r)
{
  struct cap_orphan *o, *next;

  for (o = r->orphans; o != NULL; o = next) {
    next = o->next;
    fprintf(stderr,
            "traced: capture %lld: its final state was never written "
            "(the next start marks it interrupted)\n",
            (long long)o->id);
    orphan_free(o);
  }
  r->orphans = NULL;
}
