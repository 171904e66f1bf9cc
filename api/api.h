/*
 * api: the HTTP server (libmicrohttpd) for every route of docs/API.md.
 * Design: api/README.md. MHD's own threads answer requests; they read
 * through read-only SQLite connections of their own and do short writes
 * (queueing a capture) themselves; whatever needs the libuv loop or its
 * pool (starting queued work, cancelling a running capture, slicing a
 * trace, removing a deleted capture's files) goes through the hooks,
 * which the daemon implements with uv_async_send() and which never block.
 * No route reads a trace itself.
 */
#ifndef API_H
#define API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "common/tr.h"

/* Slices made at once, at most (429 beyond): the daemon keeps a pool
 * thread for each. An all-ranks slice is one. */
#define API_SLICES      2
/* Ranks in one all-ranks slice, at most (413 beyond). */
#define API_SLICE_RANKS 256

/*
 * A slice for the daemon to make (GET /captures/<id>/ranks/<r>/slice):
 * the kineto document of the events of the trace at path (opened under
 * root) that overlap [t0_ns + start_ns, t0_ns + end_ns), with traced's
 * findings when asked, handed to write() piece by piece (it may block
 * while the client reads; non-zero: stop), made with the category rules
 * the daemon holds. done() is called once, last, from the thread that
 * made it (rc 0, or the error and a message); the request is borrowed
 * until then. cancel, set by the API, stops it at its next event.
 *
 * With nranks > 0 (GET /captures/<id>/slice) it is every rank's window in
 * one timeline instead (index.h's idx_slice_ranks(): t0_ns the capture's,
 * ranks[i] the rank files); path and format are then not used.
 */
struct api_slice_rank {
  const char *path;
  const char *format; /* as the rank was indexed */
  int rank;
  int64_t t0_ns;
  const char *points; /* its access points (tr_points_path()), or NULL */
};

struct api_slice_req {
  const char *root, *path;
  const char *format; /* as the rank was indexed ("kineto", "mctracer") */
  const char *points; /* the rank's access points, or NULL */
  int64_t t0_ns, start_ns, end_ns;
  bool findings;
  const struct api_slice_rank *ranks; /* all ranks: nranks of them */
  size_t nranks;
  const atomic_bool *cancel;
  int (*write)(void *ud, const char *p, size_t n);
  void (*done)(void *ud, int rc, const char *msg);
  void *ud;
};

struct api_hooks {
  /* A capture or import was queued: the runner should look at the queue.
   * Called from an HTTP thread; must not block. */
  void (*wake)(void *ud);
  /* Cancel the running capture id (its processes end, the server is
   * stopped, status becomes "cancelled"). Called from an HTTP thread; must
   * not block: the loop does the work later. TR_ENOTFOUND when id is not
   * the running one. */
  int (*cancel)(void *ud, int64_t id);
  /* Make the slice req (above) off the HTTP threads. Called from an HTTP
   * thread; must not block. 0 when taken (done() will be called), else
   * the daemon cannot take it now (it stops: TR_EBUSY) and never calls
   * done(). */
  int (*slice)(void *ud, const struct api_slice_req *req);
  /* A deleted capture's folders were moved into the trash (tr_trash_dir):
   * empty it. Called from an HTTP thread; must not block. */
  void (*purge)(void *ud);
  /* The trace formats POST /imports may name ("auto" first),
   * NULL-terminated; borrowed until api_stop(). */
  const char *const *formats;
  void *ud;
  /* fleet_view: the lab view's reader (fleet/fleet.h), borrowed until
   * api_stop(); NULL: the fleet's read routes answer 404. */
  struct fleet_lab *lab;
};

struct api;

/* Starts listening on cfg->listen. cfg and hooks are borrowed until
 * api_stop(). */
int api_start(const struct cfg *cfg, const struct api_hooks *hooks,
              struct api **out, struct tr_err *err);

/* Stops accepting, finishes the requests in flight, frees. NULL is ok. */
void api_stop(struct api *api);

#endif
