/*
 * GET /captures/<id>/ranks/<r>/slice?start_ns=&end_ns=[&findings=]: the
 * events of a rank's raw trace that overlap a window, as a kineto JSON
 * document (index/slice.c says what it holds), streamed.
 *
 * A slice reads the whole trace (its events are in file order, not time
 * order), so it is made on a producer thread of its own, never on an MHD
 * worker and never on the loop: the thread runs idx_slice_under() at a
 * lower priority (as indexing does) and writes into a small ring; MHD
 * takes the answer from the ring through a callback response (chunked),
 * which copies what is there and returns. When the ring is empty the
 * callback suspends the connection (MHD_ALLOW_SUSPEND_RESUME) and the
 * producer resumes it when it has written more or ended; when the ring is
 * full the producer waits. So memory is the slicer's (as indexing's) plus
 * the ring, whatever the window, and a slow client only slows its own
 * producer.
 *
 * Lifetime: a job has two owners, its producer and its response; the last
 * to let go frees it. The response goes when MHD is done with the
 * connection (the client read all, went away, or the daemon stops): the
 * producer then sees `gone`, stops at its next event and touches the
 * connection never again. A failure after the 200 is sent cuts the
 * chunked answer short (MHD_CONTENT_READER_END_WITH_ERROR): the client
 * sees an incomplete transfer, never a complete-looking document.
 * Errors found before (no such rank, the file gone, swapped for a link,
 * or changed since it was indexed) are JSON errors as everywhere.
 *
 * Bounds: at most API_SLICES slices at once (429 beyond, field "slice");
 * the window is checked (start_ns < end_ns, both integers >= 0).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_int.h"
#include "common/file.h"
#include "index/index.h"

#define API_SLICES  2            /* slices at once */
#define SLICE_RING  (256u << 10) /* bytes between producer and MHD */
#define SLICE_NICE  10           /* the producer's priority, as indexing */
#define SLICE_BLOCK (64u << 10)  /* MHD's block size for the answer */

enum job_state { JOB_RUNNING, JOB_DONE, JOB_FAILED };

struct slice_job {
  struct api_slices *sl;
  char *root, *path;      /* the rank's file under the capture's folder */
  char *spill;            /* o.spill_dir: the state folder's */
  const char *rules_file; /* cfg's category_rules (borrowed) */
  char what[64];          /* "capture 3 rank 1", for the log */
  struct idx_slice_opts o;
  atomic_bool cancel;

  pthread_mutex_t lock; /* guards the rest */
  pthread_cond_t room;  /* the ring has room, or the job is gone */
  char ring[SLICE_RING];
  size_t head, len;     /* the bytes waiting: from head, len of them */
  enum job_state state; /* the producer's outcome */
  bool gone;            /* the response is freed: conn is no more */
  bool suspended;       /* the callback suspended conn */
  struct MHD_Connection *conn;
  int owners; /* the producer and the response */
  struct slice_job *next;
};

struct api_slices {
  pthread_mutex_t lock; /* guards the rest */
  pthread_cond_t ended; /* a producer ended */
  struct slice_job *jobs;
  int busy;      /* slices being made: API_SLICES at most */
  int running;   /* producer threads alive (busy ones and ending ones) */
  bool stopping; /* the daemon stops: no new slice, no new suspension */
};

/* ---- the jobs' lifetime ---- */

struct api_slices *api_slices_new(void)
{
  struct api_slices *sl = calloc(1, sizeof(*sl));

  if (sl == NULL)
    return NULL;
  pthread_mutex_init(&sl->lock, NULL);
  pthread_cond_init(&sl->ended, NULL);
  return sl;
}

static void job_free(struct slice_job *j)
{
  pthread_mutex_destroy(&j->lock);
  pthread_cond_destroy(&j->room);
  free(j->root);
  free(j->path);
  free(j->spill);
  free(j);
}

/* One owner lets go (job lock held; released here). Frees j when it was
 * the last. */
static void job_release(struct slice_job *j)
{
  bool last = --j->owners == 0;

  pthread_mutex_unlock(&j->lock);
  if (last)
    job_free(j);
}

/* Resumes a suspended connection (job lock held), unless it is gone. */
static void wake(struct slice_job *j)
{
  if (j->suspended && !j->gone) {
    j->suspended = false;
    MHD_resume_connection(j->conn);
  }
}

/* ---- the producer ---- */

/* idx_write_fn: into the ring, waiting for room. */
static int ring_write(void *ud, const char *p, size_t n)
{
  struct slice_job *j = ud;

  pthread_mutex_lock(&j->lock);
  while (n > 0) {
    size_t at, k, first;

    while (!j->gone && j->len == SLICE_RING)
      pthread_cond_wait(&j->room, &j->lock);
    if (j->gone)
      break;
    at = (j->head + j->len) % SLICE_RING;
    k = SLICE_RING - j->len < n ? SLICE_RING - j->len : n;
    first = SLICE_RING - at < k ? SLICE_RING - at : k;
    memcpy(j->ring + at, p, first);
    memcpy(j->ring, p + first, k - first);
    j->len += k;
    p += k;
    n -= k;
    wake(j);
  }
  pthread_mutex_unlock(&j->lock);
  return n == 0 ? 0 : TR_ECONFLICT;
}

static void *produce(void *arg)
{
  struct slice_job *j = arg;
  struct api_slices *sl = j->sl;
  struct idx_rules *rules = NULL;
  struct tr_err err = { 0 };
  int rc;

  (void)setpriority(PRIO_PROCESS, (id_t)gettid(), SLICE_NICE);
  /* The daemon's own rules (category_rules), read as the runner reads
   * them: the idle cause "collective" follows the categories. */
  rc = idx_rules_load(j->rules_file, &rules, &err);
  j->o.rules = rules;
  if (rc == 0)
    rc = idx_slice_under(j->root, j->path, &j->o, ring_write, j, NULL, &err);
  idx_rules_free(rules);
  if (rc != 0 && !atomic_load(&j->cancel))
    fprintf(stderr, "traced: slice of %s failed: %s\n", j->what, err.msg);
  /* The slot frees before the end is told: a client that has read the
   * whole answer finds it free. */
  pthread_mutex_lock(&sl->lock);
  sl->busy--;
  pthread_mutex_unlock(&sl->lock);
  pthread_mutex_lock(&j->lock);
  j->state = rc == 0 ? JOB_DONE : JOB_FAILED;
  wake(j);
  job_release(j);
  pthread_mutex_lock(&sl->lock);
  sl->running--;
  pthread_cond_broadcast(&sl->ended);
  pthread_mutex_unlock(&sl->lock);
  return NULL;
}

/* ---- MHD's side ---- */

/* MHD_ContentReaderCallback: what the ring holds; suspends the connection
 * while the producer has nothing yet. */
static ssize_t on_read(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct slice_job *j = cls;
  size_t k, first;
  ssize_t ret;

  (void)pos;
  pthread_mutex_lock(&j->lock);
  if (j->len > 0) {
    k = j->len < max ? j->len : max;
    first = SLICE_RING - j->head < k ? SLICE_RING - j->head : k;
    memcpy(buf, j->ring + j->head, first);
    memcpy(buf + first, j->ring, k - first);
    j->head = (j->head + k) % SLICE_RING;
    j->len -= k;
    pthread_cond_signal(&j->room);
    ret = (ssize_t)k;
  } else if (j->state == JOB_DONE) {
    ret = MHD_CONTENT_READER_END_OF_STREAM;
  } else if (j->state == JOB_FAILED || atomic_load(&j->cancel)) {
    ret = MHD_CONTENT_READER_END_WITH_ERROR;
  } else {
    /* Returning 0 is allowed only from a suspended connection. */
    j->suspended = true;
    MHD_suspend_connection(j->conn);
    ret = 0;
  }
  pthread_mutex_unlock(&j->lock);
  return ret;
}

/* MHD_ContentReaderFreeCallback: the response is done with. */
static void on_response_free(void *cls)
{
  struct slice_job *j = cls;
  struct api_slices *sl = j->sl;
  struct slice_job **p;

  pthread_mutex_lock(&sl->lock);
  for (p = &sl->jobs; *p != NULL && *p != j; p = &(*p)->next)
    ;
  if (*p != NULL)
    *p = j->next;
  pthread_mutex_unlock(&sl->lock);
  pthread_mutex_lock(&j->lock);
  j->gone = true;
  atomic_store(&j->cancel, true);
  pthread_cond_signal(&j->room);
  job_release(j);
}

void api_slices_cancel(struct api_slices *sl)
{
  if (sl == NULL)
    return;
  pthread_mutex_lock(&sl->lock);
  sl->stopping = true;
  for (struct slice_job *j = sl->jobs; j != NULL; j = j->next) {
    pthread_mutex_lock(&j->lock);
    atomic_store(&j->cancel, true);
    wake(j);
    pthread_cond_signal(&j->room);
    pthread_mutex_unlock(&j->lock);
  }
  pthread_mutex_unlock(&sl->lock);
}

void api_slices_free(struct api_slices *sl)
{
  if (sl == NULL)
    return;
  pthread_mutex_lock(&sl->lock);
  while (sl->running > 0)
    pthread_cond_wait(&sl->ended, &sl->lock);
  pthread_mutex_unlock(&sl->lock);
  pthread_mutex_destroy(&sl->lock);
  pthread_cond_destroy(&sl->ended);
  free(sl);
}

/* ---- the route ---- */

/* The window and the findings flag from the query into o. */
static int slice_query(struct api_req *r, struct idx_slice_opts *o,
                       struct tr_err *err)
{
  static const char *const names[] = { "start_ns", "end_ns", "findings", NULL };
  static const char *const bools[] = { "true", "false", NULL };
  const char *findings = "true";
  int64_t start = -1, end = -1;

  if (api_query_check(r, names, err) != 0 ||
      api_query_int(r, "start_ns", 0, INT64_MAX, &start, err) != 0 ||
      api_query_int(r, "end_ns", 0, INT64_MAX, &end, err) != 0 ||
      api_query_enum(r, "findings", bools, &findings, err) != 0)
    return TR_EINVAL;
  if (start < 0 || end < 0)
    return tr_err_set(err, TR_EINVAL, start < 0 ? "start_ns" : "end_ns",
                      "%s is required (ns from the rank's t0_ns)",
                      start < 0 ? "start_ns" : "end_ns");
  if (end <= start)
    return tr_err_set(err, TR_EINVAL, "end_ns",
                      "end_ns must be greater than start_ns");
  o->start_ns = start;
  o->end_ns = end;
  o->findings = strcmp(findings, "true") == 0;
  return 0;
}

/* The file a slice of rank r of capture cap reads, checked now so that a
 * refusal is a JSON error: under its folder, a regular file, the size it
 * had when indexed. Fills j's root, path and format. */
static enum MHD_Result check_file(struct api_req *r, json_t *cap,
                                  const struct store_trace *t,
                                  struct slice_job *j)
{
  struct tr_err err = { 0 };
  struct stat sb;
  int fd;

  j->root = api_files_root(r, cap);
  if (j->root == NULL)
    return api_reply_error(r, 403, "forbidden", "rank",
                           "the import's folder is no longer under any of "
                           "import_roots");
  if ((fd = tr_open_file(j->root, j->path, 0, &sb, &err)) < 0)
    return api_open_refused(r, &err, "rank", "the trace file of this rank");
  close(fd);
  if ((int64_t)sb.st_size != t->file_bytes)
    return api_reply_error(r, 409, "conflict", "rank",
                           "the trace file is %lld bytes, %lld when it was "
                           "indexed: it changed since",
                           (long long)sb.st_size, (long long)t->file_bytes);
  /* The format it was indexed as (an import may have forced it). */
  if (idx_format_parse(t->format, &j->o.format) != 0)
    j->o.format = IDX_FORMAT_AUTO;
  return MHD_YES;
}

/* Starts j's producer, counted; false when at the bound or stopping. */
static bool start_producer(struct api_slices *sl, struct slice_job *j)
{
  pthread_attr_t attr;
  pthread_t tid;
  bool ok = false;

  pthread_mutex_lock(&sl->lock);
  if (!sl->stopping && sl->busy < API_SLICES && pthread_attr_init(&attr) == 0) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    ok = pthread_create(&tid, &attr, produce, j) == 0;
    pthread_attr_destroy(&attr);
  }
  if (ok) {
    sl->busy++;
    sl->running++;
    j->next = sl->jobs;
    sl->jobs = j;
  }
  pthread_mutex_unlock(&sl->lock);
  return ok;
}

static struct slice_job *job_new(struct api_req *r, int64_t id, int64_t rank)
{
  struct slice_job *j = calloc(1, sizeof(*j));

  if (j == NULL)
    return NULL;
  pthread_mutex_init(&j->lock, NULL);
  pthread_cond_init(&j->room, NULL);
  atomic_init(&j->cancel, false);
  j->sl = r->api->slices;
  j->conn = r->conn;
  j->o.cancel = &j->cancel;
  j->o.max_kernel_names = (uint32_t)r->api->cfg->max_kernel_names;
  /* A slice reads and spills what indexing does, under the same caps. */
  j->spill = tr_state_dir(r->api->cfg->db, "spill");
  j->o.spill_dir = j->spill;
  j->o.max_inflated_bytes = (uint64_t)r->api->cfg->max_rank_inflated_bytes;
  j->o.max_spill_bytes = (uint64_t)r->api->cfg->max_rank_spill_bytes;
  j->rules_file = r->api->cfg->category_rules;
  snprintf(j->what, sizeof(j->what), "capture %lld rank %lld", (long long)id,
           (long long)rank);
  return j;
}

/* The 200 with the callback response; j's producer runs. */
static enum MHD_Result stream(struct api_req *r, struct slice_job *j,
                              int64_t id, int64_t rank)
{
  struct MHD_Response *resp;
  char disp[160];

  j->owners = 2; /* before the producer can let go */
  if (!start_producer(j->sl, j)) {
    job_free(j);
    return api_reply_error(r, 429, "busy", "slice",
                           "%d slices are being made: retry when one ends",
                           API_SLICES);
  }
  resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SLICE_BLOCK,
                                           on_read, j, on_response_free);
  if (resp == NULL) {
    on_response_free(j); /* the producer sees it gone and ends */
    return MHD_NO;
  }
  snprintf(disp, sizeof(disp),
           "attachment; filename=\"capture%lld-rank%lld-slice-%lld-%lld"
           ".json\"",
           (long long)id, (long long)rank, (long long)j->o.start_ns,
           (long long)j->o.end_ns);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          "application/json");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
  return api_reply(r, 200, resp);
}

enum MHD_Result api_get_slice(struct api_req *r)
{
  struct store_trace t = { NULL, 0, 0, 0, "" };
  struct idx_slice_opts o = { 0 };
  struct tr_err err = { 0 };
  struct slice_job *j = NULL;
  enum MHD_Result ret;
  struct store *st;
  json_t *cap = NULL;
  int64_t id, rank;

  if (api_path_id(r, &id, &err) != 0 ||
      api_parse_int(r->seg[3], "rank", 0, INT_MAX, &rank, &err) != 0 ||
      slice_query(r, &o, &err) != 0 ||
      (st = api_store(r, STORE_RO, &err)) == NULL ||
      api_capture_brief(st, id, &cap, &err) != 0 ||
      store_rank_trace(st, id, (int)rank, &t, &err) != 0) {
    json_decref(cap);
    return api_reply_err(r, &err);
  }
  if ((j = job_new(r, id, rank)) == NULL) {
    ret = MHD_NO;
  } else {
    j->o.start_ns = o.start_ns;
    j->o.end_ns = o.end_ns;
    j->o.findings = o.findings;
    j->o.t0_ns = t.t0_ns;
    j->path = t.path;
    t.path = NULL;
    ret = check_file(r, cap, &t, j);
    if (!r->answered)
      ret = stream(r, j, id, rank);
    else
      job_free(j);
  }
  json_decref(cap);
  free(t.path);
  return ret;
}
