/*
 * Thread-pool plumbing of the runner: every blocking call (SQLite, file
 * reads) runs in uv_queue_work; the loop only routes. A job's state writes
 * go through one FIFO and run one at a time, so they commit in the order
 * the state machine made them; a transition acts only after its phase is
 * committed (then-callbacks).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cap_int.h"

struct cap_op {
  struct cap_work super;
  struct cap_op *next;
  const char *status, *phase; /* static strings, or NULL */
  json_t *merges;             /* column -> object; owned */
  char *tail_path;
  void (*then)(struct cap_job *job);
  bool always;
  bool claim; /* only if the row is still "queued" */
  int rc;
  struct tr_err err;
};

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

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0: no
 * overlong forms, no surrogates, nothing past U+10FFFF (as jansson). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
  static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
  size_t len = s[0] < 0x80             ? 1
               : (s[0] & 0xE0) == 0xC0 ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
  uint32_t cp;

  if (len <= 1)
    return len;
  if (len > n)
    return 0;
  cp = s[0] & (0x7F >> len);
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[k] & 0x3F);
  }
  if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

void cap_make_utf8(char *text)
{
  unsigned char *s = (unsigned char *)text;
  size_t n = strlen(text), i = 0;

  while (i < n) {
    size_t len = utf8_len(s + i, n - i);

    if (len == 0 || (len == 1 && s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')) {
      s[i++] = '?';
      continue;
    }
    i += len;
  }
}

char *cap_read_tail(const char *path, size_t max_bytes)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  char *buf, *start;
  ssize_t n;
  off_t from;

  if (fd < 0)
    return NULL;
  if (fstat(fd, &st) != 0 || (buf = malloc(max_bytes + 1)) == NULL) {
    close(fd);
    return NULL;
  }
  from = st.st_size > (off_t)max_bytes ? st.st_size - (off_t)max_bytes : 0;
  n = pread(fd, buf, max_bytes, from);
  close(fd);
  if (n <= 0) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  start = buf;
  /* Start at a line when the tail was cut. */
  if (from > 0 && (start = memchr(buf, '\n', (size_t)n)) != NULL)
    start++;
  else
    start = buf;
  memmove(buf, start, (size_t)(buf + n - start) + 1);
  cap_make_utf8(buf);
  return buf;
}

/* ---- ordered state writes ---- */

static void start_next_op(struct cap_job *job);

static void run_op(struct cap_work *w)
{
  struct cap_op *op = (struct cap_op *)w;
  struct cap_job *job = w->job;
  struct store *st = cap_db_take(w->r, &op->err);
  struct store_apply a = { op->claim, tr_status_parse(op->status),
                           tr_phase_parse(op->phase), op->merges };

  if (st == NULL) {
    op->rc = op->err.code;
    return;
  }
  if (op->tail_path != NULL) {
    char *tail = cap_read_tail(op->tail_path, 4096);

    json_object_set_new(json_object_get(op->merges, "error"), "log_tail",
                        tail ? json_string(tail) : json_null());
    free(tail);
  }
  op->rc = store_capture_apply(st, job->id, &a, &op->err);
  cap_db_give(w->r, st);
}

static void on_op_done(struct cap_work *w)
{
  struct cap_op *op = (struct cap_op *)w;
  struct cap_job *job = w->job;

  if (op->rc != 0)
    fprintf(stderr, "traced: capture %lld: state write failed: %s\n",
            (long long)job->id, op->err.msg);
  job->op_busy = false;
  job->ops_head = op->next;
  if (job->ops_head == NULL)
    job->ops_tail = NULL;
  if (op->claim && op->rc == TR_ECONFLICT && job->ending == END_NONE) {
    fprintf(stderr,
            "traced: capture %lld was cancelled before it "
            "started\n",
            (long long)job->id);
    job->ending = END_CANCELLED;
    cap_job_finish(job);
  }
  if (op->then != NULL && (op->always || job->ending == END_NONE))
    op->then(job);
  json_decref(op->merges);
  free(op->tail_path);
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

static struct cap_op *queue_op(struct cap_job *job, const char *status,
                               const char *phase, json_t *merges,
                               const char *tail_path,
                               void (*then)(struct cap_job *job), bool always)
{
  struct cap_op *op = calloc(1, sizeof(*op));

  if (op == NULL) {
    json_decref(merges);
    fprintf(stderr, "traced: capture %lld: out of memory\n",
            (long long)job->id);
    return NULL;
  }
  op->status = status;
  op->phase = phase;
  op->merges = merges ? merges : json_object();
  op->tail_path = tail_path ? strdup(tail_path) : NULL;
  op->then = then;
  op->always = always;
  if (job->ops_tail != NULL)
    job->ops_tail->next = op;
  else
    job->ops_head = op;
  job->ops_tail = op;
  return op;
}

void cap_job_write(struct cap_job *job, const char *status, const char *phase,
                   json_t *merges, const char *tail_path,
                   void (*then)(struct cap_job *job), bool always)
{
  queue_op(job, status, phase, merges, tail_path, then, always);
  start_next_op(job);
}

void cap_job_claim(struct cap_job *job, const char *phase, json_t *merges,
                   void (*then)(struct cap_job *job))
{
  struct cap_op *op =
      queue_op(job, "running", phase, merges, NULL, then, false);

  if (op != NULL)
    op->claim = true;
  start_next_op(job);
}

void cap_job_progress(struct cap_job *job, json_t *obj)
{
  struct cap_op *tail = job->ops_tail;

  /* A queued (not yet running) plain progress write takes the update. */
  if (tail != NULL && tail != job->ops_head && tail->phase == NULL &&
      tail->then == NULL && json_object_size(tail->merges) == 1 &&
      json_object_get(tail->merges, "progress") != NULL) {
    json_object_update(json_object_get(tail->merges, "progress"), obj);
    json_decref(obj);
    return;
  }
  cap_job_write(job, NULL, NULL, json_pack("{s:o}", "progress", obj), NULL,
                NULL, false);
}
