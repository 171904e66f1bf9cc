/*
 * api internals shared by the files of api/: the server, one request, the
 * route table, the reply helpers (respond.c), request validation
 * (validate.c) and the route handlers (routes_*.c).
 *
 * Threads: everything here runs on libmicrohttpd's worker threads. A
 * struct api_req belongs to the one thread serving its connection.
 * Handlers answer with exactly one api_reply*() call and return its
 * result; they never wait for the libuv loop (see api/README.md).
 */
#ifndef API_INT_H
#define API_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "api/api.h"
#include "common/perthread.h"
#include "store/store.h"

/* Request bodies above this are refused with 413. */
#define API_BODY_MAX  ((size_t)1 << 20)
/* A client still sending after this many bytes is answered at once (413)
 * and the connection closed; below it the body is drained first so that
 * the client, which writes its body before reading, sees the answer. */
#define API_DRAIN_MAX ((size_t)16 << 20)
#define API_THREADS   4
/* Each connection's memory in libmicrohttpd (its default is 32 KiB): a
 * streamed answer's chunks take what the request leaves of it, so twice
 * the default halves the chunks, sends, reads and wake-ups of a slice
 * (docs/BENCHMARKS.md, "Slices from access points"). MHD zeroes it all
 * between two requests of a connection: max_connections of them (512 by
 * default) hold 32 MB at most. */
#define API_CONN_MEMORY ((size_t)64 << 10)
/* The Content-Security-Policy of every answer (respond.c). */
#define API_CSP                                                                \
  "default-src 'none'; script-src 'self'; style-src 'self'; "                  \
  "style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " \
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

struct api_req;
struct api_cache;
struct api_fails;
struct api_conns;
struct api_slows;
struct api_slow_job;

/* The type of a route's query parameter; test_api_spec holds
 * api/openapi.yaml's schemas to them. */
enum api_ptype {
  API_P_INT,     /* decimal digits ("integer") */
  API_P_TEXT,    /* free text ("string") */
  API_P_ENUM,    /* one of values ("string" with that "enum") */
  API_P_CAPTURE, /* a capture's id ("integer"); with fleet_view also a
                    capture of the fleet, node:id or its UUID */
  API_P_SWEEP,   /* a sweep's id ("integer"); with fleet_view also a sweep
                    of the fleet, node:id */
};

/* A query parameter of a route. */
struct api_param {
  const char *name;
  enum api_ptype type;
  const char *const *values; /* API_P_ENUM: NULL-terminated */
};

/* A row of the route table (routes.c). A handler answers the request
 * with one api_reply*() call and returns its result. */
struct api_route {
  const char *tmpl; /* "/captures/{id}/kernels": matched segment by
                       segment ({...} matches one segment; {id} is a
                       capture's id, nothing else's) and used as the
                       metrics label */
  enum MHD_Result (*get)(struct api_req *r); /* GET and HEAD */
  enum MHD_Result (*post)(struct api_req *r);
  enum MHD_Result (*put)(struct api_req *r);
  enum MHD_Result (*del)(struct api_req *r);
  /* With fleet_view: a GET of a capture of the fleet (routes_fleet.c);
   * NULL: the route never names one. */
  enum MHD_Result (*lab)(struct api_req *r);
  /* GET's query parameters, ending with { NULL }; no other method takes
   * any. NULL: none read and none refused (the dashboard's files). */
  const struct api_param *params;
  const struct tr_table_row *table; /* a table route's row of TR_TABLE_MAP,
                                       whose parameters it takes */
};

/* Every route, in the order they are matched and counted (routes.c). */
extern const struct api_route api_routes[];
extern const size_t api_nroutes;

/* Route rt's query parameter name into *out (for a table route, as its
 * row of TR_TABLE_MAP gives it); false when rt takes none of that name. */
bool api_route_param(const struct api_route *rt, const char *name,
                     struct api_param *out);

/* Status codes counted per route in /metrics; others count as "other". */
#define API_CODES 15
extern const unsigned api_codes[API_CODES];

/* One MHD worker thread's store connections, opened on first use. */
struct api_thread {
  struct tr_perthread_item link;
  struct store *st[2]; /* [STORE_RW], [STORE_RO] */
};

struct api {
  struct MHD_Daemon *mhd;
  const struct cfg *cfg; /* borrowed until api_stop() */
  struct api_hooks hooks;
  int port;              /* the port listened on (the chosen one for port 0) */
  bool loopback;         /* listening on a loopback address */
  char *token;           /* the bearer token ("" when none): auth_token or
                            auth_token_file's, api_token_load() */
  char listen_host[280]; /* the Host header naming the listen address
                            ("127.0.0.1:7700", with the bound port) */
  struct tr_perthread threads; /* each one's struct api_thread */
  /* [route index + 1][code index]; row 0 counts unknown routes. */
  atomic_uint_least64_t *hits;
  struct api_cache *cache;
  struct api_conns *conns;   /* request deadlines (conns.c) */
  struct api_fails *fails;   /* addresses' recent 401s (guard.c) */
  struct api_slices *slices; /* slices being streamed (routes_slice.c) */
  struct api_slows *slows;   /* answers made off MHD's threads (slow.c) */
  pthread_mutex_t log_lock;  /* guards the three below (MHD's messages) */
  time_t log_second;
  unsigned log_count, log_dropped;
};

#define API_MAX_SEGS 6

/* One request: created on MHD's first call for it, freed when MHD reports
 * it completed (with everything it holds). */
struct api_req {
  struct api *api;
  struct MHD_Connection *conn;
  const struct api_route *route; /* NULL: no route matched */
  const char *method;            /* MHD's, valid for the request */
  char *url;                     /* decoded URL path */
  char *path;                    /* a copy of url, split in place */
  char *seg[API_MAX_SEGS];       /* path segments */
  int nseg;
  struct tr_buf body; /* request body, NUL-terminated (p NULL: none) */
  size_t seen;  /* body bytes received, kept or not */
  bool discard; /* refused on its headers: the body is never kept */
  bool held;    /* its 401 was held once (api_guard()) */
  bool answered;
  struct api_slow_job *slow; /* its answer made off MHD's threads
                                (slow.c), freed with it */
};

/* ---- server.c ---- */

/* This thread's store connection (mode STORE_RO or STORE_RW), opened on
 * first use and closed by api_stop(). NULL with err set on failure. */
struct store *api_store(struct api_req *r, int mode, struct tr_err *err);

/* Counts a response for /metrics. */
void api_count(struct api *api, const struct api_route *route, unsigned status);

/* GET /metrics (Prometheus text 0.0.4). */
enum MHD_Result api_get_metrics(struct api_req *r);

/* GET /healthz. */
enum MHD_Result api_get_healthz(struct api_req *r);
/* GET /settings: the settings the dashboard acts on. */
enum MHD_Result api_get_settings(struct api_req *r);

/* ---- guard.c: who may ask (Host, Origin, Sec-Fetch-Site, token) ---- */

/* True when the request may go on; else the refusal (403 naming the
 * header, 401) is replied and MHD's result is in *ret. ret NULL: only
 * judged (on the headers: nothing is replied or counted). A 401 to an
 * address that keeps getting them is held instead (api_conn_hold(): *ret
 * MHD_YES, nothing replied yet, r->held set) and replied when MHD calls
 * the handler again. */
bool api_guard(struct api_req *r, enum MHD_Result *ret);

/* The same for a POST's body: Content-Type application/json, else 415. */
bool api_guard_body(struct api_req *r, enum MHD_Result *ret);

/* The table of addresses and their recent 401s (guard.c); a 401 waits
 * at most max_ms (auth_retry_delay_ms; 0: never). */
struct api_fails *api_fails_new(int max_ms);
void api_fails_free(struct api_fails *f);

/* api->token from the configuration: auth_token, or the contents of
 * auth_token_file, refused (TR_EINVAL naming it) when group or others may
 * read it or it is not one printable word. Before listening. */
int api_token_load(struct api *api, struct tr_err *err);

/* ---- respond.c ---- */

/* Queues resp with status (adding the common headers), counts it, and
 * destroys resp. Every other reply helper ends here. NULL resp (out of
 * memory) returns MHD_NO: MHD drops the connection. */
enum MHD_Result api_reply(struct api_req *r, unsigned status,
                          struct MHD_Response *resp);

/* Replies obj as JSON. Takes ownership of obj. NULL obj (out of memory
 * while building it) drops the connection: MHD_NO. */
enum MHD_Result api_reply_json(struct api_req *r, unsigned status, json_t *obj);

/* Replies text (copied) with content type ctype. */
enum MHD_Result api_reply_text(struct api_req *r, unsigned status,
                               const char *ctype, const char *text, size_t len);

/* Starts a read whose answer may be kept: when the same request (path and
 * query) has a kept answer, replies it and returns NULL with MHD's result
 * in *ret; else returns this thread's read-only store and the cache epoch
 * for api_reply_keep() (NULL with an error replied when the store cannot
 * be opened). */
struct store *api_read_begin(struct api_req *r, uint64_t *epoch,
                             enum MHD_Result *ret);

/* Replies obj as JSON, 200, like api_reply_json(), and keeps the answer
 * for the same request when ids is not NULL: an answer that depends only
 * on captures ids[0] and ids[1], read while they were done, after
 * api_cache_epoch() gave epoch. */
enum MHD_Result api_reply_keep(struct api_req *r, json_t *obj,
                               const int64_t *ids, uint64_t epoch);

/* api_reply_keep() of an answer already written as JSON text: takes
 * body's bytes (body->p is NULL afterwards). */
enum MHD_Result api_reply_keep_text(struct api_req *r, struct tr_buf *body,
                                    const int64_t *ids, uint64_t epoch);

/* A kept answer made from the captures ids[0..n) for the same request
 * (the ids are part of its key: a lab view's sweep may gain points),
 * replied: true with MHD's result in *ret; false when there is none. */
bool api_kept_of(struct api_req *r, const int64_t *ids, size_t n,
                 enum MHD_Result *ret);

/* Replies obj (taken) as JSON 200, or with csv its array member as CSV
 * rows, and keeps it as api_kept_of() finds it when ids is not NULL: an
 * answer made only from the captures ids[0..n), read while each was
 * final, after api_cache_epoch() gave epoch. */
enum MHD_Result api_reply_rows_of(struct api_req *r, json_t *obj,
                                  const char *member, bool csv,
                                  const int64_t *ids, size_t n, uint64_t epoch);

/* A table route's answer: obj (an object with "rows") as api_reply_keep()
 * replies it, or, when csv, its rows as CSV (csv.c), kept the same way.
 * Takes ownership of obj. */
enum MHD_Result api_reply_table(struct api_req *r, json_t *obj, bool csv,
                                const int64_t *ids, uint64_t epoch);

/* Replies {"error":{"code","message","field"}} with status, for an error
 * the route finds itself; field may be NULL or "". */
enum MHD_Result api_reply_error(struct api_req *r, unsigned status,
                                const char *code, const char *field,
                                const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Replies a struct tr_err a callee filled (the store's, validation's),
 * its HTTP status derived from err->code (TR_EINVAL 400,
 * TR_ENOTFOUND 404, TR_ECONFLICT 409, TR_ELIMIT 413, TR_EAUTH 401,
 * TR_EBUSY 429, TR_ESTORAGE 507, else 500). */
enum MHD_Result api_reply_tr_err(struct api_req *r, const struct tr_err *err);

/* 405 naming the methods the route takes, with an Allow header. */
enum MHD_Result api_reply_method(struct api_req *r);

/* GET / and GET /<file>: the dashboard files compiled into the binary. */
enum MHD_Result api_get_asset(struct api_req *r);

/* True when name is one of the dashboard files ("" is index.html). */
bool api_asset_exists(const char *name);

/* ---- csv.c: the table routes' ?format=csv ---- */

/* The Content-Type of a CSV answer (RFC 4180, with its header line). */
#define API_CSV_TYPE "text/csv; charset=utf-8; header=present"

/* rows (an array of objects, borrowed) as RFC 4180 text in *text (caller
 * frees), *len bytes: the members as columns in the order first met,
 * nested values as their JSON text (csv.c says how). 0 or TR_ENOMEM. */
int api_csv_rows(json_t *rows, char **text, size_t *len);

/* ---- cache.c: answers about done captures ---- */

/* A cache of at most max_bytes (0: keeps nothing). NULL when out of
 * memory. Free with api_cache_free() (NULL is ok). */
struct api_cache *api_cache_new(size_t max_bytes);
void api_cache_free(struct api_cache *c);

/* The epoch to pass to api_cache_put(): read it before checking that the
 * captures are done. */
uint64_t api_cache_epoch(struct api_cache *c);

/* A new response holding a copy of key's answer, or NULL. */
struct MHD_Response *api_cache_get(struct api_cache *c, const char *key);

/* Keeps a copy of body, of type ctype (a static string), for key, as an
 * answer about the captures ids[0..nids) (copied), unless a drop happened
 * since epoch (the answer may be about a deleted capture) or the ceiling
 * forbids it. */
void api_cache_put(struct api_cache *c, uint64_t epoch, const char *key,
                   const int64_t *ids, size_t nids, const char *ctype,
                   const char *body, size_t len);

/* Forgets every answer about capture id (it is being deleted). */
void api_cache_drop(struct api_cache *c, int64_t id);

/* ---- slow.c: answers made off MHD's threads ---- */

/* What a slow answer's maker gave: rc 0 and out (owned by the request's
 * job), or the error. arg is the route's, as given to api_slow(). */
struct api_made {
  bool ready;
  int rc;
  json_t *out;
  struct tr_err err;
  void *arg;
};

/* Makes *out (new) of r with arg on the slow-answers thread; 0 or a
 * negative code with err set. r is borrowed for the call: its connection
 * is suspended meanwhile; api_store(r, ...) gives that thread's own
 * connection. */
typedef int (*api_slow_fn)(struct api_req *r, void *arg, json_t **out,
                           struct tr_err *err);

/* The thread, started (NULL when it cannot be). */
struct api_slows *api_slow_new(void);
/* Before MHD_stop_daemon(): the answers waiting are refused (429, traced
 * is stopping) and their connections resumed, the one being made ends,
 * the thread is joined; from then on api_slow() refuses at once. */
void api_slow_stop(struct api_slows *sl);
/* After it (stops first if need be); NULL is ok. */
void api_slow_free(struct api_slows *sl);
void api_slow_job_free(struct api_slow_job *j);

/* Hands r's answer to the slow-answers thread: fn(r, arg) makes it and
 * MHD calls r's route again, where api_slow_made() gives it. arg is
 * taken (arg_free, may be NULL, frees it with r). Returns MHD_YES with
 * the connection suspended, or replies 429 (busy) when API_SLOW_WAITING
 * answers wait already or traced stops. */
enum MHD_Result api_slow(struct api_req *r, api_slow_fn fn, void *arg,
                         void (*arg_free)(void *));

/* r's answer made by api_slow()'s fn, or NULL before that. */
const struct api_made *api_slow_made(struct api_req *r);

/* ---- conns.c: request deadlines ---- */

/* Starts the reaper that shuts down connections whose request is not
 * received request_timeout_s after it began. 0 or TR_ENOMEM. */
int api_conns_start(struct api *api, int request_timeout_s);

/* Stops it; after MHD_stop_daemon(). NULL conns is ok. */
void api_conns_stop(struct api *api);

/* MHD_OPTION_NOTIFY_CONNECTION: tracks each connection (cls: the api). */
void api_on_connection(void *cls, struct MHD_Connection *conn,
                       void **socket_context,
                       enum MHD_ConnectionNotificationCode toe);

/* The connection's request is fully received: its deadline stops. */
void api_conn_received(struct api *api, struct MHD_Connection *conn);

/* Its request was answered: the next one's clock starts now. */
void api_conn_next(struct api *api, struct MHD_Connection *conn);

/* Suspends the connection (its request fully received) for delay_ns: the
 * reaper resumes it then, and MHD calls the request's handler again. False
 * when it is not tracked: answer at once. */
bool api_conn_hold(struct api *api, struct MHD_Connection *conn,
                   int64_t delay_ns);

/* Resumes every held connection at once: before MHD_stop_daemon(), which
 * may not stop with one suspended. */
void api_conns_release(struct api *api);

/* ---- validate.c ---- */

/* Parses and checks a POST /captures body; *params gets the request with
 * every default filled in (caller decrefs). TR_EINVAL naming the member
 * ("body" when it is not a JSON object). */
int api_parse_capture(const struct cfg *cfg, const char *body, size_t len,
                      json_t **params, struct tr_err *err);

/* Parses a POST /imports body: *params gets {path, format, label?, and
 * the configuration members given} as sent (the path is not resolved
 * here); format is one of formats (NULL-terminated: api_hooks.formats). */
int api_parse_import(const char *const *formats, const char *body, size_t len,
                     json_t **params, struct tr_err *err);

/* POST /sweeps' body (docs/SWEEPS.md): the capture members, with conc a
 * ladder (an array) or scenario "ci" instead (atom/sweep.h). *params gets
 * the sweep's request (the members validated as the capture request of
 * its largest concurrency, conc the ladder, points [{isl, osl, conc[,
 * ratio]}], scenario), *points each point's capture request, each within
 * max_params_bytes. TR_EINVAL (TR_ELIMIT for a size) naming the member. */
int api_parse_sweep(const struct cfg *cfg, const char *body, size_t len,
                    json_t **params, json_t **points, struct tr_err *err);

/* True for the members of a capture's configuration an import may
 * declare (model, tp, isl, osl, conc, variant, more: POST /captures'
 * rules), so that its verdict has a baseline. */
bool api_import_config(const char *name);

/* A capture id or rank from text: decimal digits only, lo..hi. err names
 * field. */
int api_parse_int(const char *text, const char *field, int64_t lo, int64_t hi,
                  int64_t *out, struct tr_err *err);

/* TR_EINVAL naming the first query parameter that is not one of the
 * request's route (api_route_param()), or that is given twice. */
int api_query_check(struct api_req *r, struct tr_err *err);

/* Query parameter name as an integer lo..hi in *out; *out is left alone
 * when the parameter is absent. */
int api_query_int(struct api_req *r, const char *name, int64_t lo, int64_t hi,
                  int64_t *out, struct tr_err *err);

/* Query parameter name, one of the values the route's row gives it, in
 * *out (the row's string); *out is left alone when absent. */
int api_query_enum(struct api_req *r, const char *name, const char **out,
                   struct tr_err *err);

/* ?format=json|csv (absent: json) of a table route: *csv says which. */
int api_query_csv(struct api_req *r, bool *csv, struct tr_err *err);

/* Query parameter name as free text of at most max bytes without control
 * characters; *out is left alone when absent or empty. */
int api_query_str(struct api_req *r, const char *name, size_t max,
                  const char **out, struct tr_err *err);

/* The category ids of the taxonomy, NULL-terminated. */
extern const char *const api_categories[];
/* The capture statuses, NULL-terminated. */
extern const char *const api_statuses[];

/* ---- routes_captures.c ---- */

enum MHD_Result api_post_captures(struct api_req *r);
enum MHD_Result api_get_captures(struct api_req *r);
enum MHD_Result api_get_capture(struct api_req *r);
enum MHD_Result api_delete_capture(struct api_req *r);
enum MHD_Result api_post_imports(struct api_req *r);
enum MHD_Result api_get_trace(struct api_req *r);
enum MHD_Result api_get_logs(struct api_req *r);

/* The folder a capture's rank files lie under, as a new string (caller
 * frees): <trace_root>/<id> for a capture (cap: its object), the import
 * root holding an import's path (NULL when that root is no longer
 * configured). */
char *api_files_root(struct api_req *r, json_t *cap);

/* A file of a capture that cannot be served (err: tr_open_file()'s):
 * 404 when it is gone, 403 when it is no longer a regular file under the
 * capture's folder (a link or a FIFO swapped in): not a byte of whatever
 * it points at. field and what name it. */
enum MHD_Result api_open_refused(struct api_req *r, const struct tr_err *err,
                                 const char *field, const char *what);

/* The {id} segment of the path as a capture id; TR_EINVAL naming "id". */
int api_path_id(struct api_req *r, int64_t *id, struct tr_err *err);

/* The capture object of id without its ranks (one row: cheap), in *cap
 * (caller decrefs). TR_ENOTFOUND naming "id". */
int api_capture_brief(struct store *st, int64_t id, json_t **cap,
                      struct tr_err *err);

/* Moves the folder tr_capture_dir(trace_root, id, sub) (sub NULL,
 * "logs", or "sweeps" for a sweep's) into the trash (tr_trash_dir()):
 * one rename, so it is gone at once; the walk of its tree is the
 * daemon's (api_hooks.purge). 0 when gone. */
int api_to_trash(const struct cfg *cfg, const char *sub, int64_t id);

/* A deleted capture's kept answers dropped and its folders under
 * trace_root moved into the trash; false when some could not be. */
bool api_capture_gone(struct api_req *r, int64_t id);

/* DELETE's answer once id (a capture's or a sweep's) is deleted: 200
 * {"deleted": id}, with a warning when some of its files stayed (all
 * false); the daemon is asked to empty the trash. */
enum MHD_Result api_reply_deleted(struct api_req *r, int64_t id, bool all);

/* ---- sweeps (routes_sweeps.c, docs/SWEEPS.md) ---- */

enum MHD_Result api_post_sweeps(struct api_req *r);
enum MHD_Result api_get_sweeps(struct api_req *r);
enum MHD_Result api_get_sweep(struct api_req *r);
enum MHD_Result api_delete_sweep(struct api_req *r);
enum MHD_Result api_get_sweep_scaling(struct api_req *r);
enum MHD_Result api_get_sweep_compare(struct api_req *r);

/* The sweep of the path /sweeps/<id>/...: its id, or TR_EINVAL naming
 * "sweep". */
int api_path_sweep(struct api_req *r, int64_t *id, struct tr_err *err);

/* Answers obj (taken) as JSON 200, or with csv its array member as CSV
 * rows. */
enum MHD_Result api_reply_rows(struct api_req *r, json_t *obj,
                               const char *member, bool csv);

/* What a sweep's slow answer (its scaling, a comparison: api_slow()) is
 * made of, on a node or a lab view (routes_fleet.c), and how it is
 * replied. */
struct api_sweep_ask {
  int64_t id, to; /* the sweep, and compare's other one (the node's ids) */
  bool csv;
  struct store_sweep_opts o; /* the settings the answer is made with */
  json_t *ids, *to_ids; /* a lab view: their points' copies (capture ids) */
  json_t *names;        /* a lab view: copy id (text) -> the node's id */
  char node[64], to_node[64]; /* a lab view: their nodes */
  int64_t *keep;              /* kept: the captures it is made of */
  size_t nkeep;
  uint64_t epoch; /* the cache's, before the points were read */
};

/* A new ask of r's query (format; anything else refused) with the
 * cache's epoch, or NULL with the refusal replied in *ret. */
struct api_sweep_ask *api_sweep_ask(struct api_req *r, enum MHD_Result *ret);
void api_sweep_ask_free(void *arg);

/* A scaling's answer: the one kept when every point of points (the
 * sweep object's, taken) is final and it was kept, else made by make
 * off MHD's threads (api_slow()) and kept as made of the points'
 * captures when they are all final. Takes a. */
enum MHD_Result api_sweep_scaling_reply(struct api_req *r,
                                        struct api_sweep_ask *a, json_t *points,
                                        api_slow_fn make);

/* Replies r's slow answer (api_slow_made()): its error, or its JSON (its
 * member's rows as CSV with a->csv), kept as a->keep says. */
enum MHD_Result api_sweep_reply(struct api_req *r, const char *member);

/* ---- routes_slice.c: GET /captures/<id>/ranks/<r>/slice and
 * /captures/<id>/slice ---- */

/* The slices being streamed: a producer thread each. */
struct api_slices;

/* NULL when out of memory. */
struct api_slices *api_slices_new(void);
/* Before MHD_stop_daemon(): every slice is cancelled and its connection
 * resumed (MHD may not stop with a connection suspended). */
void api_slices_cancel(struct api_slices *sl);
/* After it: waits for every producer to end, and frees sl (NULL is ok). */
void api_slices_free(struct api_slices *sl);

enum MHD_Result api_get_slice(struct api_req *r);
/* GET /captures/<id>/slice: every rank's window in one timeline. */
enum MHD_Result api_get_capture_slice(struct api_req *r);

/* ---- routes_queries.c ---- */

/* The table routes (kernels, launches, ...); route->table says which. */
enum MHD_Result api_get_table(struct api_req *r);
enum MHD_Result api_get_diff(struct api_req *r);

/* A table route's query parameters (route->table's) into q, all but the
 * capture's id; *csv for ?format=csv. TR_EINVAL naming the parameter. */
int api_table_query(struct api_req *r, struct store_query *q, bool *csv,
                    struct tr_err *err);

/* /diff's parameters but a and b into o; *csv for ?format=csv. */
int api_diff_query(struct api_req *r, struct store_diff_opts *o, bool *csv,
                   struct tr_err *err);

/* ---- routes_fleet.c: the lab view (docs/FLEET.md) ---- */

/* True when the request names a capture of the fleet (node:id or a UUID)
 * where a capture goes, or a sweep of the fleet (node:id) where a sweep
 * goes: the path's {id} or {sweep}, or its API_P_CAPTURE or API_P_SWEEP
 * parameters. Only routes with a .lab answer do. */
bool api_fleet_wants(struct api_req *r);

/* Answers such a request from the lab view's copies (with fleet_view
 * only): the route's .lab for a GET, else 405. */
enum MHD_Result api_fleet_dispatch(struct api_req *r);

/* The .lab answers of the route table: a capture, a table, /diff, a
 * verdict from the copies; a raw file's 307 to the capture's node. */
enum MHD_Result api_lab_capture(struct api_req *r);
enum MHD_Result api_lab_table(struct api_req *r);
enum MHD_Result api_lab_diff(struct api_req *r);
enum MHD_Result api_lab_verdict(struct api_req *r);
enum MHD_Result api_lab_elsewhere(struct api_req *r);

enum MHD_Result api_get_fleet_captures(struct api_req *r);
enum MHD_Result api_get_fleet_nodes(struct api_req *r);
enum MHD_Result api_get_fleet_configs(struct api_req *r);
enum MHD_Result api_get_fleet_sweeps(struct api_req *r);
enum MHD_Result api_lab_sweep(struct api_req *r);
enum MHD_Result api_lab_sweep_scaling(struct api_req *r);
enum MHD_Result api_lab_sweep_compare(struct api_req *r);
enum MHD_Result api_get_fleet_trend(struct api_req *r);

/* ---- routes_results.c: verdicts and baselines ---- */

enum MHD_Result api_get_verdict(struct api_req *r);
enum MHD_Result api_put_baseline(struct api_req *r);
enum MHD_Result api_delete_baseline(struct api_req *r);

/* /metrics: done captures by verdict, each configuration's latest
 * regressed or not, webhook deliveries. */
void api_metrics_verdicts(FILE *f, struct store *st);

#endif
