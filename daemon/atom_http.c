/*
 * libcurl multi on libuv: curl tells us which sockets to watch
 * (CURLMOPT_SOCKETFUNCTION -> uv_poll) and when to call it back
 * (CURLMOPT_TIMERFUNCTION -> uv_timer); we tell curl what happened with
 * curl_multi_socket_action() and collect finished transfers with
 * curl_multi_info_read(). Connections are not reused (loopback, a few
 * calls a second at most), so every socket ends with its transfer.
 */
#include "daemon/atom_http.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY_MAX (64 * 1024) /* ATOM's answers are a few hundred bytes */

struct sock_ctx {
  uv_poll_t poll;
  curl_socket_t fd;
  struct cap_http *h;
  struct sock_ctx *next; /* in h->socks */
};

struct cap_http_req {
  struct cap_http *h;
  CURL *easy;
  struct cap_http_req *next; /* in h->reqs */
  enum { RULE_GET, RULE_PROFILE, RULE_CONNECT, RULE_POST } rule;
  char what[64];              /* "GET /v1/models", for messages */
  struct curl_slist *headers; /* RULE_POST's */
  char body[BODY_MAX + 1];
  size_t len;
  char errbuf[CURL_ERROR_SIZE];
  cap_http_cb cb;
  void *ud;
};

struct cap_http {
  uv_loop_t *loop;
  CURLM *multi;
  uv_timer_t timer;
  struct cap_http_req *reqs;
  struct sock_ctx *socks;
  int open_handles; /* timer + polls still to close */
  void (*done)(void *ud);
  void *done_ud;
};

static void on_handle_closed(uv_handle_t *handle)
{
  struct cap_http *h = handle->data;

  if (handle != (uv_handle_t *)&h->timer)
    free(handle); /* the poll is the first member of sock_ctx */
  if (--h->open_handles == 0 && h->done != NULL) {
    void (*done)(void *) = h->done;
    void *ud = h->done_ud;

    free(h);
    curl_global_cleanup();
    done(ud);
  }
}

static void unlink_sock(struct cap_http *h, struct sock_ctx *c)
{
  for (struct sock_ctx **p = &h->socks; *p != NULL; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      return;
    }
}

static void unlink_req(struct cap_http *h, struct cap_http_req *req)
{
  for (struct cap_http_req **p = &h->reqs; *p != NULL; p = &(*p)->next)
    if (*p == req) {
      *p = req->next;
      return;
    }
}

static void free_req(struct cap_http_req *req)
{
  unlink_req(req->h, req);
  curl_multi_remove_handle(req->h->multi, req->easy);
  curl_easy_cleanup(req->easy);
  curl_slist_free_all(req->headers);
  free(req);
}

/* What the call's rule makes of the answer, into a (a->msg is msg). The
 * body is capped at BODY_MAX, so parsing it here on the loop costs
 * microseconds. */
static void judge(struct cap_http_req *req, CURLcode rc, long status,
                  struct cap_http_answer *a, char *msg, size_t size)
{
  const char *st, *detail;

  a->status = status;
  a->msg = msg;
  a->refused = rc == CURLE_COULDNT_CONNECT;
  if (rc != CURLE_OK) {
    snprintf(msg, size, "%s failed: %s", req->what,
             req->errbuf[0] ? req->errbuf : curl_easy_strerror(rc));
    return;
  }
  req->body[req->len] = '\0';
  a->doc = json_loadb(req->body, req->len, 0, NULL);
  switch (req->rule) {
  case RULE_CONNECT:
    a->ok = true;
    snprintf(msg, size, "%s: connected", req->what);
    return;
  case RULE_GET:
    a->ok = status == 200;
    snprintf(msg, size, "%s answered %ld", req->what, status);
    return;
  case RULE_POST:
    a->ok = status >= 200 && status < 300;
    snprintf(msg, size, "%s answered %ld%s", req->what, status,
             status >= 300 && status < 400 ? " (redirects are not followed)"
                                           : "");
    return;
  case RULE_PROFILE:
    st = json_string_value(json_object_get(a->doc, "status"));
    detail = json_string_value(json_object_get(a->doc, "detail"));
    a->ok = status == 200 && st != NULL && strcmp(st, "success") == 0;
    if (a->ok)
      snprintf(msg, size, "%s: %s", req->what, st);
    else
      snprintf(msg, size, "%s answered %ld: %.300s", req->what, status,
               detail ? detail : req->body);
    return;
  }
}

static void check_done(struct cap_http *h)
{
  CURLMsg *m;
  int pending;

  while ((m = curl_multi_info_read(h->multi, &pending)) != NULL) {
    struct cap_http_req *req = NULL;
    struct cap_http_answer a = { 0 };
    long status = 0;
    char msg[512];
    cap_http_cb cb;
    void *ud;

    if (m->msg != CURLMSG_DONE)
      continue;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&req);
    curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
    judge(req, m->data.result, status, &a, msg, sizeof(msg));
    /* Free before the callback: it may start the next request. */
    cb = req->cb;
    ud = req->ud;
    free_req(req);
    cb(ud, &a);
    json_decref(a.doc);
  }
}

static void on_poll(uv_poll_t *poll, int status, int events)
{
  struct sock_ctx *c = (struct sock_ctx *)poll;
  int flags = 0, running;

  if (status < 0)
    flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE)
    flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE)
    flags |= CURL_CSELECT_OUT;
  curl_multi_socket_action(c->h->multi, c->fd, flags, &running);
  check_done(c->h);
}

static void on_timeout(uv_timer_t *t)
{
  struct cap_http *h = t->data;
  int running;

  curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  check_done(h);
}

static void close_sock(struct cap_http *h, struct sock_ctx *c)
{
  unlink_sock(h, c);
  uv_poll_stop(&c->poll);
  uv_close((uv_handle_t *)&c->poll, on_handle_closed);
}

static int on_socket(CURL *e, curl_socket_t s, int action, void *userp,
                     void *socketp)
{
  struct cap_http *h = userp;
  struct sock_ctx *c = socketp;
  int events = 0;

  (void)e;
  if (action == CURL_POLL_REMOVE) {
    if (c != NULL) {
      curl_multi_assign(h->multi, s, NULL);
      close_sock(h, c);
    }
    return 0;
  }
  if (c == NULL) {
    c = calloc(1, sizeof(*c));
    if (c == NULL || uv_poll_init_socket(h->loop, &c->poll, s) != 0) {
      free(c);
      return -1;
    }
    c->fd = s;
    c->h = h;
    c->poll.data = h;
    c->next = h->socks;
    h->socks = c;
    h->open_handles++;
    curl_multi_assign(h->multi, s, c);
  }
  if (action & CURL_POLL_IN)
    events |= UV_READABLE;
  if (action & CURL_POLL_OUT)
    events |= UV_WRITABLE;
  uv_poll_start(&c->poll, events, on_poll);
  return 0;
}

static int on_timer_fn(CURLM *multi, long timeout_ms, void *userp)
{
  struct cap_http *h = userp;

  (void)multi;
  if (timeout_ms < 0)
    uv_timer_stop(&h->timer);
  else
    uv_timer_start(&h->timer, on_timeout, (uint64_t)timeout_ms, 0);
  return 0;
}

int cap_http_new(uv_loop_t *loop, struct cap_http **out, struct tr_err *err)
{
  struct cap_http *h = calloc(1, sizeof(*h));

  if (h == NULL || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    free(h);
    return tr_err_set(err, TR_ENOMEM, "", "cannot start libcurl");
  }
  h->loop = loop;
  h->multi = curl_multi_init();
  if (h->multi == NULL) {
    free(h);
    curl_global_cleanup();
    return tr_err_set(err, TR_ENOMEM, "", "cannot start libcurl");
  }
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer_fn);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
  uv_timer_init(loop, &h->timer);
  h->timer.data = h;
  h->open_handles = 1;
  *out = h;
  return 0;
}

void cap_http_close(struct cap_http *h, void (*done)(void *ud), void *ud)
{
  if (h == NULL) {
    done(ud);
    return;
  }
  while (h->reqs != NULL)
    free_req(h->reqs);
  curl_multi_cleanup(h->multi);
  h->multi = NULL;
  while (h->socks != NULL)
    close_sock(h, h->socks);
  h->done = done;
  h->done_ud = ud;
  uv_close((uv_handle_t *)&h->timer, on_handle_closed);
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
  struct cap_http_req *req = ud;
  size_t len = size * n, room = BODY_MAX - req->len;

  /* Past the ceiling the rest is dropped, not an error. */
  memcpy(req->body + req->len, data, len < room ? len : room);
  req->len += len < room ? len : room;
  return len;
}

/* A POST of a JSON body (CURLOPT_COPYPOSTFIELDS, set by the caller) to a
 * URL from the configuration: http(s) only, no redirect followed (a 3xx
 * is a failure), no proxy from the environment. */
static void post_options(struct cap_http_req *req)
{
  req->headers = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(req->easy, CURLOPT_HTTPHEADER, req->headers);
  curl_easy_setopt(req->easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(req->easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(req->easy, CURLOPT_USERAGENT, "traced");
}

static int start(struct cap_http *h, const char *url, long timeout_ms,
                 struct cap_http_req *req, struct tr_err *err)
{
  if (req->easy == NULL)
    req->easy = curl_easy_init();
  if (req->easy == NULL) {
    free(req);
    return tr_err_set(err, TR_ENOMEM, "", "cannot start libcurl");
  }
  req->h = h;
  curl_easy_setopt(req->easy, CURLOPT_URL, url);
  curl_easy_setopt(req->easy, CURLOPT_PRIVATE, req);
  curl_easy_setopt(req->easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(req->easy, CURLOPT_WRITEDATA, req);
  curl_easy_setopt(req->easy, CURLOPT_ERRORBUFFER, req->errbuf);
  curl_easy_setopt(req->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(req->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(req->easy, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(req->easy, CURLOPT_PROXY, "");
  if (req->rule == RULE_CONNECT)
    curl_easy_setopt(req->easy, CURLOPT_CONNECT_ONLY, 1L);
  if (req->rule == RULE_PROFILE) {
    curl_easy_setopt(req->easy, CURLOPT_POST, 1L);
    curl_easy_setopt(req->easy, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(req->easy, CURLOPT_POSTFIELDSIZE, 0L);
  }
  if (req->rule == RULE_POST)
    post_options(req);
  if (curl_multi_add_handle(h->multi, req->easy) != CURLM_OK) {
    curl_easy_cleanup(req->easy);
    curl_slist_free_all(req->headers);
    free(req);
    return tr_err_set(err, TR_ENOMEM, "", "cannot start a transfer");
  }
  req->next = h->reqs;
  h->reqs = req;
  return 0;
}

static int request(struct cap_http *h, const char *host, int port, int rule,
                   const char *path, long timeout_ms, cap_http_cb cb, void *ud,
                   struct cap_http_req **out)
{
  static const char *const methods[] = { "GET", "POST", "connect to" };
  struct cap_http_req *req = calloc(1, sizeof(*req));
  char url[512];
  int rc;

  if (req == NULL)
    return TR_ENOMEM;
  snprintf(url, sizeof(url), "http://%s:%d%s", host, port, path);
  snprintf(req->what, sizeof(req->what), "%s %.48s", methods[rule],
           rule == RULE_CONNECT ? url + 7 : path);
  req->rule = rule;
  req->cb = cb;
  req->ud = ud;
  rc = start(h, url, timeout_ms, req, NULL);
  if (rc == 0 && out != NULL)
    *out = req;
  return rc;
}

int cap_atom_get(struct cap_http *h, const char *host, int port,
                 const char *path, long timeout_ms, cap_http_cb cb, void *ud,
                 struct cap_http_req **out)
{
  return request(h, host, port, RULE_GET, path, timeout_ms, cb, ud, out);
}

int cap_atom_profile(struct cap_http *h, const char *host, int port,
                     const char *which, long timeout_ms, cap_http_cb cb,
                     void *ud, struct cap_http_req **out)
{
  const char *path =
      strcmp(which, "start") == 0 ? "/start_profile" : "/stop_profile";

  return request(h, host, port, RULE_PROFILE, path, timeout_ms, cb, ud, out);
}

int cap_atom_probe(struct cap_http *h, const char *host, int port,
                   long timeout_ms, cap_http_cb cb, void *ud,
                   struct cap_http_req **out)
{
  return request(h, host, port, RULE_CONNECT, "", timeout_ms, cb, ud, out);
}

int cap_http_post_json(struct cap_http *h, const char *url, const char *body,
                       long timeout_ms, cap_http_cb cb, void *ud,
                       struct cap_http_req **out)
{
  struct cap_http_req *req = calloc(1, sizeof(*req));
  int rc;

  if (req == NULL)
    return TR_ENOMEM;
  snprintf(req->what, sizeof(req->what), "POST %.58s", url);
  req->rule = RULE_POST;
  req->cb = cb;
  req->ud = ud;
  req->easy = curl_easy_init();
  if (req->easy == NULL) {
    free(req);
    return TR_ENOMEM;
  }
  curl_easy_setopt(req->easy, CURLOPT_COPYPOSTFIELDS, body);
  curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  /* start() takes the handle made here. */
  rc = start(h, url, timeout_ms, req, NULL);
  if (rc == 0 && out != NULL)
    *out = req;
  return rc;
}

void cap_http_cancel(struct cap_http_req *req)
{
  if (req != NULL)
    free_req(req);
}
