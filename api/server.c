/*
 * The HTTP server: libmicrohttpd with its own pool of worker threads,
 * routing and dispatch by the route table (routes.c), each worker's store
 * connections, and the request counters of /metrics. Design: README.md.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/api_int.h"
#include "common/net.h"
#include "common/stats.h"
#include "fleet/fleet.h"

/* The last entry, 0, stands for any other code. */
const unsigned api_codes[API_CODES] = { 200, 202, 400, 401, 403, 404, 405, 409,
                                        413, 415, 429, 500, 503, 507, 0 };

/* ---- routing ---- */

/* True when the path segments match tmpl, whose "{...}" segments match
 * any non-empty segment. */
static bool route_match(const char *tmpl, char *const *seg, int nseg)
{
  const char *t = tmpl + 1;
  int i = 0;

  while (*t != '\0') {
    const char *end = strchrnul(t, '/');
    size_t n = (size_t)(end - t);

    if (i >= nseg || seg[i][0] == '\0')
      return false;
    if (t[0] != '{' && (strlen(seg[i]) != n || memcmp(seg[i], t, n) != 0))
      return false;
    i++;
    t = *end != '\0' ? end + 1 : end;
  }
  return i == nseg;
}

/* Splits r->path in place and finds its route (NULL: none). */
static void route_find(struct api_req *r)
{
  char *p = r->path + (r->path[0] == '/');

  r->nseg = 0;
  while (*p != '\0') {
    char *slash = strchr(p, '/');

    if (r->nseg == API_MAX_SEGS)
      return; /* deeper than any route */
    r->seg[r->nseg++] = p;
    if (slash == NULL)
      break;
    *slash = '\0';
    p = slash + 1;
    if (*p == '\0' && r->nseg < API_MAX_SEGS)
      r->seg[r->nseg++] = p; /* a trailing slash: an empty segment */
  }
  for (size_t i = 0; i < api_nroutes; i++)
    if (route_match(api_routes[i].tmpl, r->seg, r->nseg)) {
      r->route = &api_routes[i];
      return;
    }
}

/* ---- requests ---- */

static void req_free(struct api_req *r)
{
  if (r == NULL)
    return;
  api_slow_job_free(r->slow);
  tr_buf_free(&r->body);
  free(r->url);
  free(r->path);
  free(r);
}

static struct api_req *req_new(struct api *api, struct MHD_Connection *conn,
                               const char *url, const char *method)
{
  struct api_req *r = calloc(1, sizeof(*r));

  if (r == NULL)
    return NULL;
  r->api = api;
  r->conn = conn;
  r->method = method;
  r->url = strdup(url);
  r->path = strdup(url);
  if (r->url == NULL || r->path == NULL) {
    req_free(r);
    return NULL;
  }
  route_find(r);
  return r;
}

static enum MHD_Result dispatch(struct api_req *r);

/* Keeps body bytes up to API_BODY_MAX (one more byte marks "too big"),
 * counting the rest; a request refused on its headers keeps none. Past
 * API_DRAIN_MAX it is answered at once. */
static enum MHD_Result take_body(struct api_req *r, const char *data, size_t n)
{
  size_t room, keep;

  r->seen += n;
  if (r->seen > API_DRAIN_MAX)
    return r->discard ? dispatch(r)
                      : api_reply_error(r, 413, "too_large", "body",
                                        "the body is larger than %zu bytes",
                                        API_BODY_MAX);
  if (r->discard || r->body.n > API_BODY_MAX)
    return MHD_YES;
  room = API_BODY_MAX + 1 - r->body.n;
  keep = n < room ? n : room;
  tr_buf_put(&r->body, data, keep);
  return r->body.failed ? MHD_NO : MHD_YES;
}

/* The route's handler for the request's method, or NULL. */
static enum MHD_Result (*handler_of(const struct api_req *r))(struct api_req *)
{
  const struct api_route *rt = r->route;

  if (rt == NULL)
    return NULL;
  if (strcmp(r->method, MHD_HTTP_METHOD_GET) == 0 ||
      strcmp(r->method, MHD_HTTP_METHOD_HEAD) == 0)
    return rt->get;
  if (strcmp(r->method, MHD_HTTP_METHOD_POST) == 0)
    return rt->post;
  if (strcmp(r->method, MHD_HTTP_METHOD_DELETE) == 0)
    return rt->del;
  if (strcmp(r->method, MHD_HTTP_METHOD_PUT) == 0)
    return rt->put;
  return NULL;
}

/* The body the headers announce is larger than any route takes. */
static bool declared_too_large(struct api_req *r)
{
  const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_CONTENT_LENGTH);

  return v != NULL && strtoull(v, NULL, 10) > API_BODY_MAX;
}

/* A lab view's capture of the fleet (routes_fleet.c); elsewhere such an
 * id is refused by the route as it always was. */
static bool for_the_fleet(struct api_req *r)
{
  return r->api->hooks.lab != NULL && api_fleet_wants(r);
}

/* Whether dispatch() refuses the request whatever its body holds: the
 * same checks in the same order, on the headers alone, nothing replied. */
static bool refused_on_headers(struct api_req *r)
{
  return !api_guard(r, NULL) || r->route == NULL || declared_too_large(r) ||
         (!for_the_fleet(r) &&
          (handler_of(r) == NULL || !api_guard_body(r, NULL)));
}

static enum MHD_Result dispatch(struct api_req *r)
{
  enum MHD_Result (*h)(struct api_req *);
  enum MHD_Result ret;

  if (!api_guard(r, &ret))
    return ret;
  if (r->route == NULL)
    return api_reply_error(r, 404, "not_found", NULL, "no route %s", r->url);
  if (r->body.n > API_BODY_MAX || declared_too_large(r))
    return api_reply_error(r, 413, "too_large", "body",
                           "the body is larger than %zu bytes", API_BODY_MAX);
  if (for_the_fleet(r))
    return api_fleet_dispatch(r);
  if ((h = handler_of(r)) == NULL)
    return api_reply_method(r);
  if (!api_guard_body(r, &ret))
    return ret;
  return h(r);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn,
                                 const char *url, const char *method,
                                 const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
  struct api_req *r = *con_cls;

  (void)version;
  if (r == NULL) {
    /* Headers only: the body, if any, comes in the next calls. Who may
     * ask, and what, is judged now (docs/SECURITY.md): a refused
     * request's body is discarded as it arrives, never kept nor parsed,
     * and the refusal answered once it is in (a client that writes its
     * body before it reads sees the answer; past API_DRAIN_MAX it is
     * answered at once). */
    r = req_new(cls, conn, url, method);
    *con_cls = r;
    if (r != NULL)
      r->discard = refused_on_headers(r);
    return r != NULL ? MHD_YES : MHD_NO;
  }
  if (*upload_size > 0) {
    size_t n = *upload_size;

    *upload_size = 0;
    return r->answered ? MHD_YES : take_body(r, upload, n);
  }
  /* The whole request is in: its deadline (conns.c) no longer runs. */
  api_conn_received(r->api, conn);
  if (r->answered)
    return MHD_YES;
  return dispatch(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
  (void)why;
  req_free(*con_cls);
  *con_cls = NULL;
  /* A kept-alive connection's next request starts its clock now. */
  api_conn_next(cls, conn);
}

/* MHD's messages, at most LOG_PER_SECOND a second: a flood of refused
 * connections must not flood the journal too. */
#define LOG_PER_SECOND 10

static void on_log(void *cls, const char *fmt, va_list ap)
{
  struct api *api = cls;
  time_t now = time(NULL);

  pthread_mutex_lock(&api->log_lock);
  if (now != api->log_second) {
    if (api->log_dropped > 0)
      fprintf(stderr, "traced: http: %u more messages in that second\n",
              api->log_dropped);
    api->log_second = now;
    api->log_count = api->log_dropped = 0;
  }
  if (api->log_count++ < LOG_PER_SECOND) {
    fputs("traced: http: ", stderr);
    vfprintf(stderr, fmt, ap);
  } else {
    api->log_dropped++;
  }
  pthread_mutex_unlock(&api->log_lock);
}

/* 200 while the daemon serves, "degraded" with the reason while the store
 * refuses writes: reads still answer, and a restart would not free the
 * disk, so a liveness probe must not restart it; monitoring alerts on the
 * status (or on traced_store_degraded in /metrics). */
/* The captures whose final state waits for the store (common/stats.h),
 * after reason's own text. */
static void add_pending(char *reason, size_t size)
{
  char ids[512];
  size_t n = tr_stats_pending_text(ids, sizeof(ids)), used = strlen(reason);

  if (n > 0 && used < size)
    snprintf(reason + used, size - used,
             "%s%zu final state%s not yet stored, shown as traced holds "
             "%s: %s",
             used > 0 ? "; " : "", n, n == 1 ? "" : "s", n == 1 ? "it" : "them",
             ids);
}

enum MHD_Result api_get_healthz(struct api_req *r)
{
  struct tr_err err = { 0 };
  char reason[1280] = "";

  if (api_query_check(r, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (!tr_stats_store_degraded(reason, sizeof(reason)))
    reason[0] = '\0';
  add_pending(reason, sizeof(reason));
  if (reason[0] != '\0' ||
      fleet_degraded(r->api->cfg, reason, sizeof(reason))) {
    json_t *why = json_string(reason); /* NULL: not UTF-8 (a path's bytes) */

    return api_reply_json(
        r, 200,
        json_pack("{s:s, s:o}", "status", "degraded", "reason",
                  why != NULL ? why
                              : json_string("the database refuses writes")));
  }
  return api_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* The settings the dashboard acts on (docs/API.md). */
enum MHD_Result api_get_settings(struct api_req *r)
{
  struct tr_err err = { 0 };

  if (api_query_check(r, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(
      r, 200,
      json_pack("{s:s}", "perfetto_ui_url", r->api->cfg->perfetto_ui_url));
}

/* ---- per-thread store connections ---- */

struct store *api_store(struct api_req *r, int mode, struct tr_err *err)
{
  struct api *api = r->api;
  struct api_thread *t = tr_perthread_get(&api->threads, sizeof(*t), err);

  if (t == NULL)
    return NULL;
  if (t->st[mode] == NULL &&
      store_open(api->cfg->db, mode, &t->st[mode], err) != 0) {
    t->st[mode] = NULL;
    return NULL;
  }
  return t->st[mode];
}

/* ---- metrics ---- */

void api_count(struct api *api, const struct api_route *route, unsigned status)
{
  size_t row = route != NULL ? (size_t)(route - api_routes) + 1 : 0;
  size_t col = 0;

  while (col < API_CODES - 1 && api_codes[col] != status)
    col++;
  atomic_fetch_add_explicit(&api->hits[row * API_CODES + col], 1,
                            memory_order_relaxed);
}

static void metrics_captures(FILE *f, json_t *counts)
{
  fputs("# HELP traced_captures Captures and imports by status.\n"
        "# TYPE traced_captures gauge\n",
        f);
  for (const char *const *s = api_statuses; *s != NULL; s++)
    fprintf(f, "traced_captures{status=\"%s\"} %lld\n", *s,
            (long long)json_integer_value(json_object_get(counts, *s)));
  fprintf(f,
          "# HELP traced_queue_length Captures and imports waiting.\n"
          "# TYPE traced_queue_length gauge\n"
          "traced_queue_length %lld\n",
          (long long)json_integer_value(json_object_get(counts, "queued")));
}

static void metrics_index(FILE *f)
{
  uint64_t ns = atomic_load(&tr_stats.index_ns);

  fprintf(f,
          "# HELP traced_index_bytes_total Trace bytes indexed.\n"
          "# TYPE traced_index_bytes_total counter\n"
          "traced_index_bytes_total %llu\n"
          "# HELP traced_index_seconds_total Time spent indexing.\n"
          "# TYPE traced_index_seconds_total counter\n"
          "traced_index_seconds_total %llu.%09llu\n"
          "# HELP traced_ranks_indexed_total Ranks indexed.\n"
          "# TYPE traced_ranks_indexed_total counter\n"
          "traced_ranks_indexed_total %llu\n"
          "# HELP traced_ranks_failed_total Ranks that failed to index.\n"
          "# TYPE traced_ranks_failed_total counter\n"
          "traced_ranks_failed_total %llu\n"
          "# HELP traced_store_degraded 1 while the database refuses "
          "writes (disk full, I/O error).\n"
          "# TYPE traced_store_degraded gauge\n"
          "traced_store_degraded %d\n",
          (unsigned long long)atomic_load(&tr_stats.index_bytes),
          (unsigned long long)(ns / 1000000000),
          (unsigned long long)(ns % 1000000000),
          (unsigned long long)atomic_load(&tr_stats.ranks_indexed),
          (unsigned long long)atomic_load(&tr_stats.ranks_failed),
          tr_stats_store_degraded(NULL, 0) ? 1 : 0);
}

static void metrics_http(FILE *f, struct api *api)
{
  fputs("# HELP traced_http_requests_total HTTP requests answered, by "
        "route template and status code.\n"
        "# TYPE traced_http_requests_total counter\n",
        f);
  for (size_t row = 0; row <= api_nroutes; row++)
    for (size_t col = 0; col < API_CODES; col++) {
      uint64_t n = atomic_load(&api->hits[row * API_CODES + col]);
      char code[16] = "other";

      if (n == 0)
        continue;
      if (api_codes[col] != 0)
        snprintf(code, sizeof(code), "%u", api_codes[col]);
      fprintf(f,
              "traced_http_requests_total{route=\"%s\",code=\"%s\"} "
              "%llu\n",
              row == 0 ? "other" : api_routes[row - 1].tmpl, code,
              (unsigned long long)n);
    }
}

enum MHD_Result api_get_metrics(struct api_req *r)
{
  struct tr_err err = { 0 };
  struct store *st;
  json_t *counts = NULL;
  char *text = NULL;
  size_t len = 0;
  enum MHD_Result ret;
  FILE *f;

  if (api_query_check(r, &err) != 0)
    return api_reply_tr_err(r, &err);
  st = api_store(r, STORE_RO, &err);
  if (st == NULL || store_status_counts(st, &counts, &err) != 0)
    return api_reply_tr_err(r, &err);
  f = open_memstream(&text, &len);
  if (f == NULL) {
    json_decref(counts);
    return api_reply_error(r, 500, "no_memory", NULL, "out of memory");
  }
  metrics_captures(f, counts);
  metrics_index(f);
  api_metrics_verdicts(f, st);
  fleet_metrics(r->api->cfg, f);
  metrics_http(f, r->api);
  fclose(f);
  json_decref(counts);
  ret = api_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text,
                       len);
  free(text);
  return ret;
}

/* ---- start and stop ---- */

/* Descriptors traced needs besides its connections: the database's, the
 * indexer's files, the children's pipes and logs. */
#define FDS_BESIDE 256

/* Raises the soft descriptor limit towards want (systemd's default is
 * 1024 soft, far more hard): every connection MHD accepts takes one, also
 * those it refuses at once for the limits. */
static void raise_fd_limit(rlim_t want)
{
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
    return;
  rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
    fprintf(stderr,
            "traced: only %llu file descriptors: max_connections (%llu) "
            "needs %llu\n",
            (unsigned long long)rl.rlim_cur,
            (unsigned long long)(want - FDS_BESIDE), (unsigned long long)want);
}

/* The port a bound socket got (the chosen one when asked for port 0). */
static int port_of(int fd)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);

  if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
    return 0;
  if (ss.ss_family == AF_INET6)
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Binds and listens on "host:port" ("[::1]:port" for IPv6). */
static int listen_on(const char *addr, int *port, struct tr_err *err)
{
  struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
                            .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
  struct addrinfo *res = NULL, *ai;
  char host[256];
  const char *colon = strrchr(addr, ':');
  size_t hlen;
  int fd = -1, rc, one = 1;

  hlen = colon != NULL ? (size_t)(colon - addr) : sizeof(host);
  if (hlen >= sizeof(host))
    return tr_err_set(err, TR_EINVAL, "listen",
                      "listen must be host:port, not \"%s\"", addr);
  memcpy(host, addr, hlen);
  host[hlen] = '\0';
  if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
    memmove(host, host + 1, hlen - 2);
    host[hlen - 2] = '\0';
  }
  rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
  if (rc != 0)
    return tr_err_set(err, TR_EINVAL, "listen", "listen %s: %s", addr,
                      gai_strerror(rc));
  rc = -EADDRNOTAVAIL;
  for (ai = res; ai != NULL; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                ai->ai_protocol);
    if (fd < 0) {
      rc = -errno;
      continue;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 511) == 0)
      break;
    rc = -errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0)
    return tr_err_set(err, rc, "listen", "cannot listen on %s: %s", addr,
                      strerror(-rc));
  *port = port_of(fd);
  return fd;
}

/* The Host header a client gives for the listen address: its host part
 * as written (brackets kept) with the bound port. */
static void listen_host(struct api *api, const char *listen)
{
  const char *colon = strrchr(listen, ':');
  int n = colon != NULL ? (int)(colon - listen) : (int)strlen(listen);

  snprintf(api->listen_host, sizeof(api->listen_host), "%.*s:%d", n, listen,
           api->port);
}

static void forget_copy(void *cache, int64_t id)
{
  api_cache_drop(cache, id);
}

int api_start(const struct cfg *cfg, const struct api_hooks *hooks,
              struct api **out, struct tr_err *err)
{
  struct api *api = calloc(1, sizeof(*api));
  int fd, rc;

  if (api == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  api->cfg = cfg;
  api->hooks = *hooks;
  api->loopback = tr_listen_loopback(cfg->listen);
  api->hits = calloc((api_nroutes + 1) * API_CODES, sizeof(*api->hits));
  api->cache = api_cache_new((size_t)cfg->answer_cache_mb << 20);
  api->slices = api_slices_new();
  api->slows = api_slow_new();
  api->fails = api_fails_new(cfg->auth_retry_delay_ms);
  if (api->hits == NULL || api->cache == NULL || api->slices == NULL ||
      api->slows == NULL || api->fails == NULL ||
      tr_perthread_init(&api->threads) != 0) {
    free(api->hits);
    api_cache_free(api->cache);
    api_slices_free(api->slices);
    api_slow_free(api->slows);
    api_fails_free(api->fails);
    free(api);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  pthread_mutex_init(&api->log_lock, NULL);
  if ((rc = api_token_load(api, err)) != 0) {
    api_stop(api);
    return rc;
  }
  raise_fd_limit((rlim_t)cfg->max_connections + FDS_BESIDE);
  fd = listen_on(cfg->listen, &api->port, err);
  if (fd < 0) {
    api_stop(api);
    return fd;
  }
  listen_host(api, cfg->listen);
  /* The lab view's copies that change drop their kept answers. */
  if (hooks->lab != NULL)
    fleet_lab_on_drop(hooks->lab, forget_copy, api->cache);
  if (api_conns_start(api, cfg->request_timeout_s) != 0) {
    close(fd);
    api_stop(api);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  /* MHD owns fd from here on, and closes it when stopped. Its workers
   * poll(), level-triggered: with epoll (MHD_USE_AUTO on Linux) the
   * libmicrohttpd of Debian 12 (0.9.75) left connections whose client
   * sent a body faster than it was read, then closed, unread in
   * CLOSE-WAIT, every worker idle in epoll_wait(), until conns.c's
   * request deadline; 512 of them held every slot and a new client
   * waited in the listen queue (docs/SECURITY.md, security_bodies). */
  api->mhd = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
          MHD_ALLOW_SUSPEND_RESUME, /* slices: routes_slice.c */
      0, NULL, NULL, on_access, api, MHD_OPTION_EXTERNAL_LOGGER, on_log,
      api, /* first: MHD says so */
      MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
      (unsigned)API_THREADS, MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
      MHD_OPTION_NOTIFY_CONNECTION, api_on_connection, api,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, API_CONN_MEMORY,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout_s,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      (unsigned)cfg->max_connections_per_client, MHD_OPTION_END);
  if (api->mhd == NULL) {
    close(fd);
    api_stop(api);
    return tr_err_set(err, TR_EIO, "listen",
                      "libmicrohttpd could not start on %s", cfg->listen);
  }
  *out = api;
  return 0;
}

void api_stop(struct api *api)
{
  struct api_thread *t;

  if (api == NULL)
    return;
  /* MHD may not stop with a connection suspended: slices resume theirs,
   * held 401s are answered now, slow answers waiting are refused and the
   * one being made ends (its thread uses a store connection of
   * api->threads: joined before they close). */
  api_slices_cancel(api->slices);
  api_conns_release(api);
  api_slow_stop(api->slows);
  /* Joins the workers: no thread uses a store connection after this. */
  if (api->mhd != NULL)
    MHD_stop_daemon(api->mhd);
  api_conns_stop(api);
  api_slices_free(api->slices);
  api_slow_free(api->slows);
  while ((t = tr_perthread_pop(&api->threads)) != NULL) {
    store_close(t->st[STORE_RW]);
    store_close(t->st[STORE_RO]);
    free(t);
  }
  tr_perthread_destroy(&api->threads);
  pthread_mutex_destroy(&api->log_lock);
  if (api->hooks.lab != NULL)
    fleet_lab_on_drop(api->hooks.lab, NULL, NULL);
  api_cache_free(api->cache);
  api_fails_free(api->fails);
  free(api->hits);
  free(api->token);
  free(api);
}
