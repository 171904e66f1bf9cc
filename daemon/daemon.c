/*
 * The daemon's main loop: owns the libuv loop, the signal handlers, the
 * HTTP API and the capture runner, and the one bridge between them: HTTP
 * threads post wake-ups and cancel requests into a locked inbox and poke
 * the loop with uv_async_send(), which coalesces, so the loop drains the
 * whole inbox each time.
 */
#include "daemon/daemon.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

  pthread_mutex_t inbox_lock; /* guards the inbox below */
  int wake_pending;
  int64_t cancels[MAX_CANCELS];
  int ncancels;
};

/* HTTP thread: a capture or import was queued. */
static void hook_wake(void *ud)
{
  struct daemon *d = ud;

  pthread_mutex_lock(&d->inbox_lock);
  d->wake_pending = 1;
  pthread_mutex_unlock(&d->inbox_lock);
  uv_async_send(&d->inbox_async);
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

static void on_inbox(uv_async_t *h)
{
  struct daemon *d = h->data;
  int64_t cancels[MAX_CANCELS];
  int ncancels, wake;

  pthread_mutex_lock(&d->inbox_lock);
  wake = d->wake_pending;
  d->wake_pending = 0;
  ncancels = d->ncancels;
  memcpy(cancels, d->cancels, sizeof(cancels[0]) * (size_t)ncancels);
  d->ncancels = 0;
  pthread_mutex_unlock(&d->inbox_lock);

  if (d->stopping)
    return;
  for (int i = 0; i < ncancels; i++)
    cap_runner_cancel(d->runner, cancels[i]);
  if (wake)
    cap_runner_wake(d->runner);
}

static void on_closed(uv_handle_t *h)
{
  (void)h;
}

static void on_runner_down(void *ud)
{
  struct daemon *d = ud;

  uv_close((uv_handle_t *)&d->inbox_async, on_closed);
  uv_close((uv_handle_t *)&d->sigterm, on_closed);
  uv_close((uv_handle_t *)&d->sigint, on_closed);
}

/* The unit gives traced TimeoutStopSec (60 s) before SIGKILL. A stop is
 * normally done in seconds (children get SIGTERM, then SIGKILL after 5 s;
 * indexing stops at its next chunk); should anything hold it past this,
 * traced exits on its own, its state already in the store (every write is
 * a transaction, and a restart recovers what was running). */
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
  /* No new requests from here on; those in flight finish first. */
  api_stop(d->api);
  d->api = NULL;
  fleet_lab_stop(d->lab);
  d->lab = NULL;
  fleet_pub_stop(d->pub, NULL, NULL);
  cap_runner_shutdown(d->runner, on_runner_down, d);
}

/* Creates the folders and the schema before anything else opens the db. */
static int prepare_storage(const struct cfg *cfg, struct tr_err *err)
{
  char dir[4096];
  char *slash;
  struct store *st;
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
  rc = store_open(cfg->db, STORE_RW, &st, err);
  /* Before the runner recovers anything: a capture it ends is published
   * (or, without fleet_dsn, not) as any other. */
  if (rc == 0)
    rc = store_fleet_enable(st, cfg->fleet_dsn[0] != '\0', err);
  store_close(st);
  return rc;
}

/* The publisher holds one pool thread during a publish: the pool gets one
 * more than the runner asks for (daemon/recover.c), before libuv reads
 * the variable at its first uv_queue_work. */
static void size_pool_for_fleet(const struct cfg *cfg)
{
  char value[16];

  if (cfg->fleet_dsn[0] == '\0' || getenv("UV_THREADPOOL_SIZE") != NULL)
    return;
  snprintf(value, sizeof(value), "%d", cfg->index_jobs + 3);
  setenv("UV_THREADPOOL_SIZE", value, 0);
}

static int start(struct daemon *d, struct tr_err *err)
{
  struct api_hooks hooks = { hook_wake, hook_cancel, d, NULL };
  int rc;

  if ((rc = prepare_storage(d->cfg, err)) != 0)
    return rc;
  size_pool_for_fleet(d->cfg);
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
  if ((rc = api_start(d->cfg, &hooks, &d->api, err)) != 0)
    return rc;
  /* Work queued before a restart starts now. */
  cap_runner_wake(d->runner);
  return 0;
}

int daemon_run(const struct cfg *cfg)
{
  struct daemon d;
  struct tr_err err = { 0 };
  int rc;

  memset(&d, 0, sizeof(d));
  d.cfg = cfg;
  pthread_mutex_init(&d.inbox_lock, NULL);
  uv_loop_init(&d.loop);
  rc = start(&d, &err);
  if (rc != 0) {
    fprintf(stderr, "traced: %s\n", err.msg);
    api_stop(d.api);
    fleet_lab_stop(d.lab);
    fleet_pub_stop(d.pub, NULL, NULL);
    if (d.runner != NULL) {
      d.stopping = 1;
      cap_runner_shutdown(d.runner, on_runner_down, &d);
    }
  } else {
    fprintf(stderr, "traced: listening on %s\n", cfg->listen);
    tr_notify("READY=1");
  }
  uv_run(&d.loop, UV_RUN_DEFAULT);
  fleet_pub_free(d.pub);
  cap_runner_free(d.runner);
  uv_loop_close(&d.loop);
  pthread_mutex_destroy(&d.inbox_lock);
  return rc == 0 ? 0 : 1;
}
