/*
 * cap_http: the asynchronous HTTP client to the ATOM server: libcurl's multi
 * interface driven by the libuv loop (socket readiness through uv_poll,
 * curl's timeouts through a uv_timer). Never a blocking transfer.
 *
 * Loop thread only.
 */
#ifndef DAEMON_ATOM_HTTP_H
#define DAEMON_ATOM_HTTP_H

#include <stdbool.h>
#include <uv.h>

#include "common/tr.h"

struct cap_http;
struct cap_http_req;

/* The answer to one ATOM call: ok per the call's rule (see below); status
 * is the HTTP status or 0 when none came; msg says what went wrong, for a
 * person (borrowed for the callback's duration). */
typedef void (*cap_http_cb)(void *ud, bool ok, long status, const char *msg);

int cap_http_new(uv_loop_t *loop, struct cap_http **out, struct tr_err *err);

/* Cancels every request (no callbacks), closes the handles and frees;
 * done(ud) runs on the loop when all is closed. NULL h: done at once. */
void cap_http_close(struct cap_http *h, void (*done)(void *ud), void *ud);

/* GET http://host:port/v1/models. ok when the answer is 200 (docs/ATOM.md:
 * the readiness probe; /health gives false negatives under load). */
int cap_atom_models(struct cap_http *h, const char *host, int port,
                    long timeout_ms, cap_http_cb cb, void *ud,
                    struct cap_http_req **out);

/* POST /start_profile or /stop_profile (which: "start" or "stop"). ok when
 * the answer is 200 with "status": "success"; a 500's "detail" goes into
 * msg. */
int cap_atom_profile(struct cap_http *h, const char *host, int port,
                     const char *which, long timeout_ms, cap_http_cb cb,
                     void *ud, struct cap_http_req **out);

/* Drops a request in flight: its callback is never called. NULL is ok. */
void cap_http_cancel(struct cap_http_req *req);

#endif
