/*
 * cap_http: the asynchronous HTTP client to the ATOM server (and the
 * verdicts' webhook): libcurl's multi interface driven by the libuv loop
 * (socket readiness through uv_poll, curl's timeouts through a uv_timer). Never
 * a blocking transfer.
 *
 * Loop thread only.
 */
#ifndef DAEMON_ATOM_HTTP_H
#define DAEMON_ATOM_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "common/tr.h"

struct cap_http;
struct cap_http_req;

/* The answer to one ATOM call, borrowed for the callback's duration. */
struct cap_http_answer {
  bool ok;         /* per the call's rule (see below) */
  bool refused;    /* nothing listens at host:port: connection refused */
  long status;     /* the HTTP status, 0 when none came */
  const char *msg; /* what happened, for a person */
  json_t *doc;     /* the body when it is JSON, else NULL */
};

typedef void (*cap_http_cb)(void *ud, const struct cap_http_answer *a);

int cap_http_new(uv_loop_t *loop, struct cap_http **out, struct tr_err *err);

/* Cancels every request (no callbacks), closes the handles and frees;
 * done(ud) runs on the loop when all is closed. NULL h: done at once. */
void cap_http_close(struct cap_http *h, void (*done)(void *ud), void *ud);

/* GET http://host:port<path> ("/v1/models", "/server_info"). ok when the
 * answer is 200 (docs/ATOM.md: /v1/models is the readiness probe). */
int cap_atom_get(struct cap_http *h, const char *host, int port,
                 const char *path, long timeout_ms, cap_http_cb cb, void *ud,
                 struct cap_http_req **out);

/* POST /start_profile or /stop_profile (which: "start" or "stop"). ok when
 * the answer is 200 with "status": "success"; a 500's "detail" goes into
 * msg. ATOM answers /stop_profile only once rank 0 has exported: give it
 * minutes. */
int cap_atom_profile(struct cap_http *h, const char *host, int port,
                     const char *which, long timeout_ms, cap_http_cb cb,
                     void *ud, struct cap_http_req **out);

/* A TCP connect to host:port and nothing more: ok when it connects. A
 * server busy in a blocking call (ATOM's /stop_profile) still connects: its
 * kernel accepts into the listen backlog; refused means nobody listens. */
int cap_atom_probe(struct cap_http *h, const char *host, int port,
                   long timeout_ms, cap_http_cb cb, void *ud,
                   struct cap_http_req **out);

/* POST body (a NUL-terminated JSON text, copied) to url (http or https,
 * from the configuration: webhook_url) with Content-Type
 * application/json. ok when the answer is 2xx; a redirect is not
 * followed (a failure, said in msg). timeout_ms bounds the whole
 * transfer. */
int cap_http_post_json(struct cap_http *h, const char *url, const char *body,
                       long timeout_ms, cap_http_cb cb, void *ud,
                       struct cap_http_req **out);

/* Drops a request in flight: its callback is never called. NULL is ok. */
void cap_http_cancel(struct cap_http_req *req);

#endif
