/*
 * api: the HTTP server (libmicrohttpd) for every route of docs/API.md.
 * Design: api/README.md. MHD's own threads answer requests; they read
 * through read-only SQLite connections of their own and do short writes
 * (queueing a capture) themselves; whatever needs the libuv loop (starting
 * queued work, cancelling a running capture) goes through the hooks, which
 * the daemon implements with uv_async_send() and which never block.
 */
#ifndef API_H
#define API_H

#include <stdint.h>

#include "common/config.h"
#include "common/tr.h"

struct api_hooks {
  /* A capture or import was queued: the runner should look at the queue.
   * Called from an HTTP thread; must not block. */
  void (*wake)(void *ud);
  /* Cancel the running capture id (its processes end, the server is
   * stopped, status becomes "cancelled"). Called from an HTTP thread; must
   * not block: the loop does the work later. TR_ENOTFOUND when id is not
   * the running one. */
  int (*cancel)(void *ud, int64_t id);
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
