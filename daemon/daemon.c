/*
 * The daemon's main loop: owns the libuv loop, the signal handlers, the
 * HTTP API and the capture runner, and the one bridge between them: HTTP
 * threads post wake-ups, cancel requests, slices to make and trash to
 * empty into a locked inbox and poke the loop with uv_async_send(), which
 * coalesces, so the loop drains the whole inbox each time.
 */
#include "daemon/daemon.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "api/api.h"
#include "daemon/notify.h"
#include "daemon/runner.h"
#include "fleet/fleet.h"
#include "store/store.h"

#define MAX_CANCELS 64

struct daemon {
  uv_loop_t loop;
  uv_async_t inbox_async;
  uv_signal_t sigterm, sigint;
  const struct cfg *cfg;
  struct api *api;
  struct cap_runner *runner;
  struct fleet_pub *pub; /* fleet_dsn: the outbox's publisher */
  struct fleet_lab *lab; /* fleet_view: the lab view's reader */
  int stopping;
  bool handles; /* inbox_async, sigterm, sigint initialised (start()) */

  pthread_mutex_t inbox_lock; /* guards the inbox below */
  int wake_pending;
  int purge_pending;
  int64_t cancels[MAX_CANCELS];
  int ncancels;
  const struct api_slice_req *slices[API_SLICES];
  int nslices;
  bool closed;            /* stopping: the inbox takes no more slices */
  const char *formats[8]; /* the trace formats, for POST /imports */
};

/* HTTP thread: raises flag, one of the inbox's, and wakes the loop. */
static void raise_flag(struct daemon *d, int *flag)
{
  pthread_mutex_lock(&d->inbox_lock);
  *flag = 1;
  pthread_mutex_unlock(&d->inbox_lock);
  uv_async_send(&d->inbox_async);
}

/* HTTP thread: a capture or import was queued. */
static void hook_wake(void *ud)
{
  struct daemon *d = ud;

  raise_flag(d, &d->wake_pending);
}

/* HTTP thread: cancel the running capture or import id. The check
 * against the running ids is advisory (the loop checks again); it lets the
 * HTTP side answer 404 for a capture that is not running. */
static int hook_cancel(void *ud, int64_t id)
{
  struct daemon *d = ud;
  int rc = 0;

  if (!cap_runner_running(d->runner, id))
    return TR_ENOTFOUND;
  pthread_mutex_lock(&d->inbox_lock);
  if (d->ncancels < MAX_CANCELS)
    d->cancels[d->ncancels++] = id;
  else
    rc = TR_ELIMIT;
  pthread_mutex_unlock(&d->inbox_lock);
  uv_async_send(&d->inbox_async);
  return rc;
}

/* HTTP thread: a slice to make. The API makes API_SLICES at most, so the
 * inbox always has room; a stopping daemon takes none. */
static int hook_slice(void *ud, const struct api_slice_req *req)
{
  struct daemon *d = ud;
  int rc = 0;

  pthread_mutex_lock(&d->inbox_lock);
  if (d->closed || d->nslices == API_SLICES)
    rc = TR_EBUSY;
  else
    d->slices[d->nslices++] = req;
  pthread_mutex_unlock(&d->inbox_lock);
  if (rc == 0)
    uv_async_send(&d->inbox_async);
  return rc;
}

/* HTTP thread: a deleted capture's folders are in the trash. */
static void hook_purge(void *ud)
{
  struct daemon *d = ud;

  raise_flag(d, &d->purge_pending);
}

/* The slices waiting in the inbox, taken out of it (closing it when
 * close). */
static int take_slices(struct daemon *d, const struct api_slice_req **out,
                       bool close)
{
  int n;

  pthread_mutex_lock(&d->inbox_lock);
  n = d->nslices;
  memcpy(out, d->slices, sizeof(out[0]) * (size_t)n);
  d->nslices = 0;
  d->closed |= close;
  pthread_mutex_unlock(&d->inbox_lock);
  return n;
}

static void on_inbox(uv_async_t *h)
{
  struct daemon *d = h->data;
  const struct api_slice_req *slices[API_SLICES];
  int64_t cancels[MAX_CANCELS];
  int ncancels, nslices, wake, purge;

  nslices = take_slices(d, slices, false);
  pthread_mutex_lock(&d->inbox_lock);
  wake = d->wake_pending;
  purge = d->purge_pending;
  d->wake_pending = d->purge_pending = 0;
  ncancels = d->ncancels;
  memcpy(cancels, d->cancels, sizeof(cancels[0]) * (size_t)ncancels);
  d->ncancels = 0;
  pthread_mutex_unlock(&d->inbox_lock);

  for (int i = 0; i < nslices; i++)
    cap_runner_slice(d->runner, slices[i]);
  if (d->stopping)
    return;
  for (int i = 0; i < ncancels; i++)
    cap_runner_cancel(d->runner, cancels[i]);
  if (wake)
    cap_runner_wake(d->runner);
  if (purge)
    cap_runner_purge(d->runner);
}

static void on_closed(uv_handle_t *h)
{
  (void)h;
}

static void on_runner_down(void *ud)
{
  struct daemon *d = ud;

  /* A start that failed before them (a bad fleet_dsn) has none to
   * close: libuv aborts on a handle never initialised. */
  if (!d->handles)
    return;
  uv_close((uv_handle_t *)&d->inbox_async, on_closed);
  uv_close((uv_handle_t *)&d->sigterm, on_closed);
  uv_close((uv_handle_t *)&d->sigint, on_closed);
}

/* The unit gives traced TimeoutStopSec (60 s) before SIGKILL. A stop is
 * normally done in seconds (children get SIGTERM, then SIGKILL after 5 s;
 * indexing stops at its next chunk, event or block of its walk); should
 * anything hold it past this (an indexer that loops between two looks at
 * its flag), traced exits on its own, its state already in the store
 * (every write is a transaction, and a restart recovers what was
 * running). */
#define STOP_DEADLINE_S 45
#define STRINGIFY(x)    #x
#define TEXT_OF(x)      STRINGIFY(x)

static void on_stop_deadline(int sig)
{
  static const char msg[] =
      "traced: not stopped after " TEXT_OF(STOP_DEADLINE_S) " s: exiting\n";

  (void)sig;
  if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
    /* nothing more to say */
  }
  _exit(1);
}

/* No new requests from here on; those in flight finish first. api_stop()
 * waits for the slices being made, which the pool ends at once (they are
 * cancelled); those still in the inbox never reach the pool: they end
 * here. */
static void stop_api(struct daemon *d)
{
  const struct api_slice_req *slices[API_SLICES];
  int n = take_slices(d, slices, true);

  for (int i = 0; i < n; i++)
    slices[i]->done(slices[i]->ud, TR_EBUSY, "traced is stopping");
  api_stop(d->api);
  d->api = NULL;
  fleet_lab_stop(d->lab);
  d->lab = NULL;
  fleet_pub_stop(d->pub, NULL, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
  struct daemon *d = h->data;

  if (d->stopping)
    return;
  fprintf(stderr, "traced: signal %d, stopping\n", signum);
  d->stopping = 1;
  signal(SIGALRM, on_stop_deadline);
  alarm(STOP_DEADLINE_S);
  tr_notify("STOPPING=1");
  stop_api(d);
  cap_runner_shutdown(d->runner, on_runner_down, d);
}

/* The folder ranks spill their temporary records to: in the state folder
 * beside the database (index/kit/agg_spill.c), private to traced. */
static int make_spill_dir(const struct cfg *cfg, struct tr_err *err)
{
  char *dir = tr_state_dir(cfg->db, "spill");
  int rc = dir != NULL ? tr_mkdir_p(dir) : TR_ENOMEM;

  if (rc == 0 && chmod(dir, 0700) != 0)
    rc = -errno;
  if (rc != 0)
    tr_err_set(err, rc, "db", "cannot create the spill folder %s: %s",
               dir ? dir : "",
               rc == TR_ENOMEM ? "out of memory" : strerror(-rc));
  free(dir);
  return rc;
}

/* Creates the folders and the schema before anything else opens the db. */
static int prepare_storage(const struct cfg *cfg, struct tr_err *err)
{
  struct tr_err fleet_err = { 0 };
  char dir[4096];
  char *slash;
  struct store *st = NULL;
  int rc;

  snprintf(dir, sizeof(dir), "%s", cfg->db);
  slash = strrchr(dir, '/');
  if (slash != NULL && slash != dir) {
    *slash = '\0';
    if ((rc = tr_mkdir_p(dir)) != 0)
      return tr_err_set(err, rc, "db", "cannot create %s: %s", dir,
                        strerror(-rc));
  }
  if ((rc = tr_mkdir_p(cfg->trace_root)) != 0)
    return tr_err_set(err, rc, "trace_root", "cannot create %s: %s",
                      cfg->trace_root, strerror(-rc));
  if ((rc = make_spill_dir(cfg, err)) != 0)
    return rc;
  rc = store_open(cfg->db, STORE_RW, &st, err);
  /* Before the runner recovers anything: a capture it ends is published
   * (or, without fleet_dsn, not) as any other. A store that refuses the
   * write (read-only, a full disk) starts degraded all the same
   * (docs/SECURITY.md): the flag stays as it was, said on stderr. */
  if (rc == 0 &&
      store_fleet_enable(st, cfg->fleet_dsn[0] != '\0', &fleet_err) != 0)
    fprintf(stderr, "traced: fleet: publishing left as it was: %s\n",
            fleet_err.msg);
  store_close(st);
  return rc;
}

/* Index workers and slices (a slow client holds its producer) must never
 * hold every pool thread: the state writes and log scans need one, and
 * the fleet's publisher holds one during a publish (fleet/publish.c). libuv
 * reads the variable once, at its first uv_queue_work: before the runner
 * recovers anything. */
static void size_thread_pool(const struct cfg *cfg)
{
  char value[16];

  if (getenv("UV_THREADPOOL_SIZE") != NULL)
    return;
  snprintf(value, sizeof(value), "%d",
           cfg->index_jobs + 2 + API_SLICES + (cfg->fleet_dsn[0] != '\0'));
  setenv("UV_THREADPOOL_SIZE", value, 0);
}

static int start(struct daemon *d, struct tr_err *err)
{
  struct api_hooks hooks = { hook_wake,  hook_cancel, hook_slice,
                             hook_purge, d->formats,  d, NULL };
  int rc;

  cap_runner_formats(d->formats, sizeof(d->formats) / sizeof(d->formats[0]));

  if ((rc = prepare_storage(d->cfg, err)) != 0)
    return rc;
  size_thread_pool(d->cfg);
  if ((rc = cap_runner_new(&d->loop, d->cfg, &d->runner, err)) != 0)
    return rc;
  if (d->cfg->fleet_dsn[0] != '\0' &&
      (rc = fleet_pub_start(&d->loop, d->cfg, &d->pub, err)) != 0)
    return rc;
  if (d->cfg->fleet_view &&
      (rc = fleet_lab_start(d->cfg, &d->lab, err)) != 0)
    return rc;
  hooks.lab = d->lab;
  uv_async_init(&d->loop, &d->inbox_async, on_inbox);
  d->inbox_async.data = d;
  uv_signal_init(&d->loop, &d->sigterm);
  uv_signal_init(&d->loop, &d->sigint);
  d->sigterm.data = d->sigint.data = d;
  uv_signal_start(&d->sigterm, on_signal, SIGTERM);
  uv_signal_start(&d->sigint, on_signal, SIGINT);
  d->handles = true;
  if ((rc = api_start(d->cfg, &hooks, &d->api, err)) != 0)
    return rc;
  /* Work queued before a restart starts now, and what a stop left in the
   * trash goes. */
  cap_runner_wake(d->runner);
  cap_runner_purge(d->runner);
  return 0;
}

int daemon_run(const struct cfg *cfg)
{
  struct daemon d;
  struct tr_err err = { 0 };
  int rc;

  /* The daemon's memory should follow what it holds. With glibc's
   * dynamic thresholds, one big block freed (a summary table's text)
   * raises the size below which freed memory stays resident, per thread
   * arena, to tens of MB; fixed at 1 MiB, bigger blocks come from mmap
   * and go back when freed, and free space at a heap's top goes back
   * beyond 1 MiB. */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
  memset(&d, 0, sizeof(d));
  d.cfg = cfg;
  pthread_mutex_init(&d.inbox_lock, NULL);
  uv_loop_init(&d.loop);
  rc = start(&d, &err);
  if (rc != 0) {
    fprintf(stderr, "traced: %s\n", err.msg);
    stop_api(&d);
    if (d.runner != NULL) {
      d.stopping = 1;
      cap_runner_shutdown(d.runner, on_runner_down, &d);
    }
  } else {
    fprintf(stderr, "traced: listening on %s\n", cfg->listen);
    tr_notify("READY=1");
    daemon_python_log(&d.loop);
  }
  uv_run(&d.loop, UV_RUN_DEFAULT);
  fleet_pub_free(d.pub);
  cap_runner_free(d.runner);
  uv_loop_close(&d.loop);
  pthread_mutex_destroy(&d.inbox_lock);
  return rc == 0 ? 0 : 1;
}
