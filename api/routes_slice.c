/*
 * GET /captures/<id>/ranks/<r>/slice?start_ns=&end_ns=[&findings=]: the
 * events of a rank's raw trace that overlap a window, as a kineto JSON
 * document (index/slice/slice.c says what it holds), streamed. And
 * GET /captures/<id>/slice?start_ns=&end_ns=[&findings=]: every done
 * rank's window in one timeline (index/slice/slice_ranks.c), made by one
 * producer, rank after rank: one job, so one slot, one ring and one
 * client's floor and deadline for the whole answer, as below.
 *
 * A slice reads the whole trace (its events are in file order, not time
 * order), so it is never made on an MHD worker and never on the loop, and
 * never here: the daemon makes it in its pool (api_hooks.slice, with the
 * category rules it holds, at the indexer's lower priority), handing the
 * document to ring_write() into a small ring; MHD takes the answer from
 * the ring through a callback response (chunked), which copies what is
 * there and returns. When the ring is empty the callback suspends the
 * connection (MHD_ALLOW_SUSPEND_RESUME) and the producer resumes it when
 * it has written more or ended; when the ring is full the producer waits.
 * So memory is the slicer's (as indexing's) plus the ring, whatever the
 * window, and a slow client only slows its own producer.
 *
 * Lifetime: a job has two owners, its producer (the daemon's, until it
 * calls done) and its response; the last to let go frees it. The response goes
 * when MHD is done with the connection (the client read all, went away, or the
 * daemon stops): the producer then sees `gone`, stops at its next event and
 * touches the connection never again. A failure after the 200 is sent cuts the
 * chunked answer short (MHD_CONTENT_READER_END_WITH_ERROR): the client
 * sees an incomplete transfer, never a complete-looking document.
 * Errors found before (no such rank, the file gone, swapped for a link,
 * or changed since it was indexed) are JSON errors as everywhere.
 *
 * Bounds: at most API_SLICES slices at once (429 beyond, field "slice");
 * API_SLICE_RANKS ranks in one (413 beyond, field "rank"); the window is
 * checked (start_ns < end_ns, both integers >= 0). A slot
 * is not held by a client that does not read: while the producer waits
 * for room, a client that read less than slice_min_bytes_per_s over
 * slice_window_s (the producer having waited for it half that time at
 * least), or a slice older than slice_timeout_s, ends the slice (cut
 * short, as any failure after the 200) and frees its slot.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api_int.h"
#include "common/file.h"

#define SLICE_RING    (256u << 10) /* bytes between producer and MHD */
#define SLICE_BLOCK   (64u << 10)  /* MHD's block size for the answer */
#define SLICE_TICK_NS 250000000    /* a waiting producer looks at its client */

enum job_state { JOB_RUNNING, JOB_DONE, JOB_FAILED };

struct slice_job {
  struct api_slices *sl;
  char *root;               /* the capture's folder */
  char what[64];            /* "capture 3 rank 1", for the log */
  struct api_slice_req req; /* what the daemon is asked, pointing here */
  /* The ranks' files (paths owned), and req's ranks over them. */
  struct store_trace *traces;
  struct api_slice_rank *ranks;
  char **points; /* each rank's access points file (owned) */
  size_t nranks;
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
  /* Its client (slow_client()): ns on CLOCK_MONOTONIC. */
  int64_t started_ns, deadline_ns;      /* slice_timeout_s */
  int64_t window_ns, min_per_s;         /* slice_window_s, its floor */
  int64_t win_start_ns, win_blocked_ns; /* the window, the wait in it */
  uint64_t sent, win_sent;              /* bytes handed to MHD */
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
  if (j == NULL)
    return;
  pthread_mutex_destroy(&j->lock);
  pthread_cond_destroy(&j->room);
  free(j->root);
  for (size_t i = 0; i < j->nranks; i++) {
    free(j->traces[i].path);
    if (j->points != NULL)
      free(j->points[i]);
  }
  free(j->points);
  free(j->traces);
  free(j->ranks);
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

static int64_t mono_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether j's client has held it too long (job lock held): the slice is
 * older than slice_timeout_s, or over the last window, the producer
 * having waited for room at least half of it, the client read less than
 * slice_min_bytes_per_s. Says why on stderr. */
static bool slow_client(struct slice_job *j, int64_t now)
{
  int64_t elapsed = now - j->win_start_ns;
  uint64_t read = j->sent - j->win_sent;
  bool slow;

  if (now >= j->deadline_ns) {
    fprintf(stderr,
            "traced: slice of %s ended: it took longer than "
            "slice_timeout_s (%lld s)\n",
            j->what,
            (long long)((j->deadline_ns - j->started_ns) / 1000000000));
    return true;
  }
  if (elapsed < j->window_ns)
    return false;
  slow = j->min_per_s > 0 && j->win_blocked_ns * 2 >= elapsed &&
         (double)read * 1e9 < (double)j->min_per_s * (double)elapsed;
  j->win_start_ns = now;
  j->win_sent = j->sent;
  j->win_blocked_ns = 0;
  if (slow)
    fprintf(stderr,
            "traced: slice of %s ended: its client read %.0f bytes/s, "
            "below slice_min_bytes_per_s (%lld)\n",
            j->what, (double)read * 1e9 / (double)elapsed,
            (long long)j->min_per_s);
  return slow;
}

/* Waits for room in the ring (job lock held), a tick at a time, until
 * there is, the response is gone, or the client is too slow (then j is
 * cancelled). */
static void wait_for_room(struct slice_job *j)
{
  int64_t now = mono_ns();

  while (!j->gone && j->len == SLICE_RING && !atomic_load(&j->cancel)) {
    struct timespec until = { (now + SLICE_TICK_NS) / 1000000000,
                              (now + SLICE_TICK_NS) % 1000000000 };
    int64_t was = now;

    if (slow_client(j, now)) {
      atomic_store(&j->cancel, true);
      return;
    }
    pthread_cond_timedwait(&j->room, &j->lock, &until);
    now = mono_ns();
    j->win_blocked_ns += now - was;
  }
}

/* api_slice_req.write: into the ring, waiting for room. */
static int ring_write(void *ud, const char *p, size_t n)
{
  struct slice_job *j = ud;

  pthread_mutex_lock(&j->lock);
  if (slow_client(j, mono_ns()))
    atomic_store(&j->cancel, true);
  while (n > 0 && !atomic_load(&j->cancel)) {
    size_t at, k, first;

    wait_for_room(j);
    if (j->gone || atomic_load(&j->cancel))
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

/* api_slice_req.done: the producer lets go. */
static void produced(void *ud, int rc, const char *msg)
{
  struct slice_job *j = ud;
  struct api_slices *sl = j->sl;

  if (rc != 0 && !atomic_load(&j->cancel))
    fprintf(stderr, "traced: slice of %s failed: %s\n", j->what, msg);
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
    j->sent += k;
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

/* The window and the findings flag from the query into q; the window is
 * from t0 (what it is, for the message). */
static int slice_query(struct api_req *r, const char *t0,
                       struct api_slice_req *q, struct tr_err *err)
{
  const char *findings = "true";
  int64_t start = -1, end = -1;

  if (api_query_check(r, err) != 0 ||
      api_query_int(r, "start_ns", 0, INT64_MAX, &start, err) != 0 ||
      api_query_int(r, "end_ns", 0, INT64_MAX, &end, err) != 0 ||
      api_query_enum(r, "findings", &findings, err) != 0)
    return TR_EINVAL;
  if (start < 0 || end < 0)
    return tr_err_set(err, TR_EINVAL, start < 0 ? "start_ns" : "end_ns",
                      "%s is required (ns from %s)",
                      start < 0 ? "start_ns" : "end_ns", t0);
  if (end <= start)
    return tr_err_set(err, TR_EINVAL, "end_ns",
                      "end_ns must be greater than start_ns");
  q->start_ns = start;
  q->end_ns = end;
  q->findings = strcmp(findings, "true") == 0;
  return 0;
}

/* The folder a slice of capture cap reads under, into j->root; else the
 * refusal is answered. */
static enum MHD_Result check_root(struct api_req *r, json_t *cap,
                                  struct slice_job *j)
{
  j->root = api_files_root(r, cap);
  if (j->root == NULL)
    return api_reply_error(r, 403, "forbidden", "rank",
                           "the import's folder is no longer under any of "
                           "import_roots");
  return MHD_YES;
}

/* The file t of a rank a slice reads, checked now so that a refusal is a
 * JSON error: under j's root, a regular file, the size it had when
 * indexed. */
static enum MHD_Result check_file(struct api_req *r, const struct slice_job *j,
                                  const struct store_trace *t)
{
  struct tr_err err = { 0 };
  struct stat sb;
  int fd;

  if ((fd = tr_open_file(j->root, t->path, 0, &sb, &err)) < 0)
    return api_open_refused(r, &err, "rank", "the trace file of this rank");
  close(fd);
  if ((int64_t)sb.st_size != t->file_bytes)
    return api_reply_error(r, 409, "conflict", "rank",
                           "the trace file of rank %d is %lld bytes, %lld "
                           "when it was indexed: it changed since",
                           t->rank, (long long)sb.st_size,
                           (long long)t->file_bytes);
  return MHD_YES;
}

/* Hands j to the daemon, counted; false when at the bound or stopping. */
static bool start_producer(struct api *api, struct slice_job *j)
{
  struct api_slices *sl = api->slices;
  bool ok = false;

  pthread_mutex_lock(&sl->lock);
  if (!sl->stopping && sl->busy < API_SLICES && api->hooks.slice != NULL)
    ok = api->hooks.slice(api->hooks.ud, &j->req) == 0;
  if (ok) {
    sl->busy++;
    sl->running++;
    j->next = sl->jobs;
    sl->jobs = j;
  }
  pthread_mutex_unlock(&sl->lock);
  return ok;
}

/* The bytes a slice may have in flight in the kernel beyond the ring: the
 * floor above measures what MHD takes from the ring, and on loopback a
 * socket's send buffer grows to megabytes, which a client reading 256 KiB/s
 * drains for seconds while MHD takes nothing. Bounded, what MHD takes
 * follows what the client reads. */
#define SLICE_SNDBUF (128 * 1024)

static void bound_in_flight(struct MHD_Connection *conn)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  int size = SLICE_SNDBUF;

  if (ci != NULL)
    (void)setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &size,
                     sizeof(size));
}

/* A job for capture id's rank (-1: all ranks). */
static struct slice_job *job_new(struct api_req *r, int64_t id, int64_t rank)
{
  struct slice_job *j = calloc(1, sizeof(*j));
  const struct cfg *cfg = r->api->cfg;
  pthread_condattr_t attr;

  if (j == NULL)
    return NULL;
  pthread_mutex_init(&j->lock, NULL);
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&j->room, &attr);
  pthread_condattr_destroy(&attr);
  atomic_init(&j->cancel, false);
  j->started_ns = j->win_start_ns = mono_ns();
  j->deadline_ns = j->started_ns + (int64_t)cfg->slice_timeout_s * 1000000000;
  j->window_ns = (int64_t)cfg->slice_window_s * 1000000000;
  j->min_per_s = cfg->slice_min_bytes_per_s;
  j->sl = r->api->slices;
  j->conn = r->conn;
  bound_in_flight(j->conn);
  j->req.cancel = &j->cancel;
  j->req.write = ring_write;
  j->req.done = produced;
  j->req.ud = j;
  if (rank < 0)
    snprintf(j->what, sizeof(j->what), "capture %lld all ranks", (long long)id);
  else
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
  if (!start_producer(r->api, j)) {
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
  if (rank < 0)
    snprintf(disp, sizeof(disp),
             "attachment; filename=\"capture%lld-ranks-slice-%lld-%lld"
             ".json\"",
             (long long)id, (long long)j->req.start_ns,
             (long long)j->req.end_ns);
  else
    snprintf(disp, sizeof(disp),
             "attachment; filename=\"capture%lld-rank%lld-slice-%lld-%lld"
             ".json\"",
             (long long)id, (long long)rank, (long long)j->req.start_ns,
             (long long)j->req.end_ns);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          "application/json");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
  return api_reply(r, 200, resp);
}

/* j's files (a rank's, or every done rank's when rank < 0) into
 * j->traces. */
static int find_traces(struct store *st, int64_t id, int64_t rank,
                       struct slice_job *j, struct tr_err *err)
{
  size_t max = rank < 0 ? API_SLICE_RANKS : 1;
  int rc;

  if ((j->traces = calloc(max, sizeof(*j->traces))) == NULL ||
      (j->ranks = calloc(max, sizeof(*j->ranks))) == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  if (rank < 0)
    return store_rank_traces(st, id, j->traces, max, &j->nranks, err);
  rc = store_rank_trace(st, id, (int)rank, &j->traces[0], err);
  j->nranks = rc == 0;
  return rc;
}

/* Checks j's files (else the refusal is answered) and fills what the
 * daemon is asked: one rank's file, or every rank's (req.ranks) with the
 * window's t0 the earliest rank's. */
static enum MHD_Result take_traces(struct api_req *r, json_t *cap,
                                   struct slice_job *j, int64_t id, bool all)
{
  enum MHD_Result ret = check_root(r, cap, j);

  j->req.root = j->root;
  j->req.t0_ns = INT64_MAX;
  if (!r->answered && (j->points = calloc(j->nranks, sizeof(char *))) == NULL)
    return api_reply_error(r, 500, "no_memory", NULL,
                           "out of memory");
  for (size_t i = 0; i < j->nranks && !r->answered; i++) {
    const struct store_trace *t = &j->traces[i];

    ret = check_file(r, j, t);
    /* NULL when out of memory: the slice reads the whole file. */
    j->points[i] = tr_points_path(r->api->cfg->trace_root, id, t->rank, false);
    j->ranks[i] = (struct api_slice_rank){ t->path, t->format, t->rank,
                                           t->t0_ns, j->points[i] };
    if (t->t0_ns < j->req.t0_ns)
      j->req.t0_ns = t->t0_ns;
  }
  if (all) {
    j->req.ranks = j->ranks;
    j->req.nranks = j->nranks;
  } else {
    j->req.path = j->ranks[0].path;
    j->req.format = j->ranks[0].format;
    j->req.points = j->ranks[0].points;
  }
  return ret;
}

/* Either route: rank's slice, or when rank < 0 all ranks'. */
static enum MHD_Result get_slice(struct api_req *r, int64_t id, int64_t rank)
{
  struct api_slice_req q = { 0 };
  struct tr_err err = { 0 };
  struct slice_job *j = NULL;
  enum MHD_Result ret;
  struct store *st;
  json_t *cap = NULL;

  if (slice_query(r, rank < 0 ? "the capture's t0_ns" : "the rank's t0_ns", &q,
                  &err) != 0 ||
      (st = api_store(r, STORE_RO, &err)) == NULL ||
      api_capture_brief(st, id, &cap, &err) != 0 ||
      (j = job_new(r, id, rank)) == NULL ||
      find_traces(st, id, rank, j, &err) != 0) {
    job_free(j);
    json_decref(cap);
    return api_reply_tr_err(r, &err);
  }
  j->req.start_ns = q.start_ns;
  j->req.end_ns = q.end_ns;
  j->req.findings = q.findings;
  ret = take_traces(r, cap, j, id, rank < 0);
  if (!r->answered)
    ret = stream(r, j, id, rank);
  else
    job_free(j);
  json_decref(cap);
  return ret;
}

enum MHD_Result api_get_slice(struct api_req *r)
{
  struct tr_err err = { 0 };
  int64_t id, rank;

  if (api_path_id(r, &id, &err) != 0 ||
      api_parse_int(r->seg[3], "rank", 0, INT_MAX, &rank, &err) != 0)
    return api_reply_tr_err(r, &err);
  return get_slice(r, id, rank);
}

enum MHD_Result api_get_capture_slice(struct api_req *r)
{
  struct tr_err err = { 0 };
  int64_t id;

  if (api_path_id(r, &id, &err) != 0)
    return api_reply_tr_err(r, &err);
  return get_slice(r, id, -1);
}
