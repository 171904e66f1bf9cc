/*
 * cap_runner: runs queued captures and imports, one capture at a time (one
 * GPU server) and imports beside it, on the libuv loop. Loop thread only,
 * except where a function says otherwise.
 */
#ifndef DAEMON_RUNNER_H
#define DAEMON_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/config.h"
#include "common/tr.h"

struct cap_runner;
struct api_slice_req;

/* Creates the runner and recovers what a previous run left: captures found
 * running become "interrupted" (or are indexed, when their trace folder is
 * complete). cfg and loop are borrowed for the runner's life. */
int cap_runner_new(uv_loop_t *loop, const struct cfg *cfg,
                   struct cap_runner **out, struct tr_err *err);

/* Looks at the queue and starts what can start. */
void cap_runner_wake(struct cap_runner *r);

/* True when id is the capture or the import running now. Any thread. */
bool cap_runner_running(const struct cap_runner *r, int64_t id);

/* Cancels the running capture (or import) id: ends its process groups,
 * runs the stop script, marks it cancelled. TR_ENOTFOUND when id is not
 * running. */
int cap_runner_cancel(struct cap_runner *r, int64_t id);

/* Makes req (api/api.h) in the pool with the runner's category rules; its
 * done() is called from the pool thread, also when it cannot be made. */
void cap_runner_slice(struct cap_runner *r, const struct api_slice_req *req);

/* Empties the trash of deleted captures (tr_trash_dir()) in the pool. */
void cap_runner_purge(struct cap_runner *r);

/* The trace formats ("auto", "kineto", ...) into list, NULL-terminated
 * (n entries of room). Static strings. */
void cap_runner_formats(const char **list, size_t n);

/* Stops taking work, ends children and closes handles; calls done(ud) on
 * the loop when everything is closed. */
void cap_runner_shutdown(struct cap_runner *r, void (*done)(void *ud),
                         void *ud);

/* Frees after shutdown completed. NULL is ok. */
void cap_runner_free(struct cap_runner *r);

#endif
