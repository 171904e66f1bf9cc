/*
 * Replies: JSON bodies, the error shape of docs/API.md, plain text, the
 * dashboard files, and the one place where a response is queued and
 * counted for /metrics.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "api/api_int.h"
#include "common/lifecycle.h"
#include "common/web_assets.h"

enum MHD_Result api_reply(struct api_req *r, unsigned status,
                          struct MHD_Response *resp)
{
  enum MHD_Result ret;

  if (resp == NULL)
    return MHD_NO; /* out of memory: MHD drops the connection */
  /* Answers depend on live state: never from a cache. */
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  /* The dashboard's own scripts and styles only (style-src-attr: its bars
   * are sized by style attributes), in no frame, an answer opened as a
   * page included; another origin may not embed an answer (CORP). The
   * headers that matter to pages alone: api_get_asset(). */
  MHD_add_response_header(resp, "Content-Security-Policy", API_CSP);
  MHD_add_response_header(resp, "Cross-Origin-Resource-Policy", "same-origin");
  if (status == 401)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Bearer realm=\"traced\"");
  ret = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  r->answered = true;
  api_count(r->api, r->route, status);
  return ret;
}

enum MHD_Result api_reply_text(struct api_req *r, unsigned status,
                               const char *ctype, const char *text, size_t len)
{
  struct MHD_Response *resp;

  resp =
      MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
  if (resp != NULL)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  return api_reply(r, status, resp);
}

/* A response holding text[0..len) of type ctype. Takes ownership of text
 * (NULL is ok). NULL when out of memory. */
static struct MHD_Response *text_response(char *text, size_t len,
                                          const char *ctype)
{
  struct MHD_Response *resp;

  if (text == NULL)
    return NULL;
  /* jansson allocates with malloc() (we never change its allocator), and
   * so does open_memstream(): MHD may free() the text. */
  resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (resp == NULL) {
    free(text);
    return NULL;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  return resp;
}

/* A response holding text, JSON from tr_json_dumps(). Takes ownership of
 * text (NULL is ok). NULL when out of memory. */
static struct MHD_Response *json_text_response(char *text)
{
  return text_response(text, text != NULL ? strlen(text) : 0,
                       "application/json");
}

/* A response holding obj as compact JSON. Takes ownership of obj. NULL
 * when out of memory. */
static struct MHD_Response *json_response(json_t *obj)
{
  char *text = obj != NULL ? tr_json_dumps(obj, JSON_COMPACT) : NULL;

  json_decref(obj);
  return json_text_response(text);
}

/* True (and the refusal replied, MHD's result in *ret) when an answer of
 * len bytes, text, is longer than max_response_bytes. Frees text then. */
static bool too_large(struct api_req *r, char *text, size_t len,
                      enum MHD_Result *ret)
{
  int max = r->api->cfg->max_response_bytes;

  if (len <= (size_t)max)
    return false;
  free(text);
  *ret = api_reply_error(r, 413, "too_large", "limit",
                         "the answer would be %zu bytes, more than "
                         "max_response_bytes (%d): ask for fewer rows "
                         "(limit) or one rank",
                         len, max);
  return true;
}

enum MHD_Result api_reply_json(struct api_req *r, unsigned status, json_t *obj)
{
  char *text = obj != NULL ? tr_json_dumps(obj, JSON_COMPACT) : NULL;
  enum MHD_Result ret;

  json_decref(obj);
  if (too_large(r, text, text != NULL ? strlen(text) : 0, &ret))
    return ret;
  /* Out of memory: api_reply() drops the connection. */
  return api_reply(r, status, json_text_response(text));
}

/* ---- kept answers (cache.c) ---- */

#define KEY_MAX 8192

struct key_buf {
  char *p;     /* where the next parameter goes */
  size_t left; /* bytes left, the NUL included; 0: did not fit */
};

static enum MHD_Result on_key_arg(void *cls, enum MHD_ValueKind kind,
                                  const char *key, const char *value)
{
  struct key_buf *kb = cls;
  int n;

  (void)kind;
  /* Control characters as separators: no validated value holds one, so
   * two different queries never make the same key. */
  n = snprintf(kb->p, kb->left, "%s\x1f%s\x1e", key, value ? value : "");
  if (n < 0 || (size_t)n >= kb->left) {
    kb->left = 0;
    return MHD_NO;
  }
  kb->p += n;
  kb->left -= (size_t)n;
  return MHD_YES;
}

/* The request's path and query parameters (validated by then: known
 * names, values without control characters) as the cache key. False when
 * they do not fit in size. */
static bool request_key(struct api_req *r, char *buf, size_t size)
{
  int n = snprintf(buf, size, "%s?", r->url);
  struct key_buf kb = { buf + n, size - (size_t)n };

  if (n < 0 || (size_t)n >= size)
    return false;
  MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, on_key_arg, &kb);
  return kb.left > 0;
}

struct store *api_read_begin(struct api_req *r, uint64_t *epoch,
                             enum MHD_Result *ret)
{
  struct tr_err err = { 0 };
  char key[KEY_MAX];
  struct MHD_Response *resp;
  struct store *st;

  resp = request_key(r, key, sizeof(key)) ? api_cache_get(r->api->cache, key)
                                          : NULL;
  if (resp != NULL) {
    *ret = api_reply(r, 200, resp);
    return NULL;
  }
  /* Before the caller reads whether the capture is done. */
  *epoch = api_cache_epoch(r->api->cache);
  st = api_store(r, STORE_RO, &err);
  if (st == NULL)
    *ret = api_reply_tr_err(r, &err);
  return st;
}

/* What a kept answer depends on (api_reply_keep(), api_reply_rows_of()):
 * the captures ids[0..n) (ids NULL: not kept), after epoch; with in_key
 * the ids end its key. */
struct keep {
  const int64_t *ids;
  size_t n;
  uint64_t epoch;
  bool in_key;
};

/* request_key(), then with k->in_key the ids (after a separator no
 * query holds). */
static bool keep_key(struct api_req *r, const struct keep *k, char *buf,
                     size_t size)
{
  size_t used;

  if (!request_key(r, buf, size))
    return false;
  used = strlen(buf);
  for (size_t i = 0; k->in_key && i < k->n; i++) {
    int n = snprintf(buf + used, size - used, "\x1d%lld", (long long)k->ids[i]);

    if (n < 0 || (size_t)n >= size - used)
      return false;
    used += (size_t)n;
  }
  return true;
}

/* Replies text[0..len) (taken) of type ctype, 200, kept as k says. */
static enum MHD_Result reply_kept(struct api_req *r, char *text, size_t len,
                                  const char *ctype, const struct keep *k)
{
  char key[KEY_MAX];
  enum MHD_Result ret;

  if (text == NULL)
    return MHD_NO; /* out of memory: MHD drops the connection */
  if (too_large(r, text, len, &ret))
    return ret;
  if (k->ids != NULL && keep_key(r, k, key, sizeof(key)))
    api_cache_put(r->api->cache, k->epoch, key, k->ids, k->n, ctype, text, len);
  return api_reply(r, 200, text_response(text, len, ctype));
}

/* obj (taken) as JSON, kept as k says. */
static enum MHD_Result reply_json_kept(struct api_req *r, json_t *obj,
                                       const struct keep *k)
{
  char *text = obj != NULL ? tr_json_dumps(obj, JSON_COMPACT) : NULL;

  json_decref(obj);
  return reply_kept(r, text, text != NULL ? strlen(text) : 0,
                    "application/json", k);
}

enum MHD_Result api_reply_keep(struct api_req *r, json_t *obj,
                               const int64_t *ids, uint64_t epoch)
{
  return reply_json_kept(r, obj, &(struct keep){ ids, 2, epoch, false });
}

bool api_kept_of(struct api_req *r, const int64_t *ids, size_t n,
                 enum MHD_Result *ret)
{
  struct keep k = { ids, n, 0, true };
  struct MHD_Response *resp;
  char key[KEY_MAX];

  resp = keep_key(r, &k, key, sizeof(key)) ? api_cache_get(r->api->cache, key)
                                           : NULL;
  if (resp != NULL)
    *ret = api_reply(r, 200, resp);
  return resp != NULL;
}

/* The rows of obj's member (obj taken) as CSV, kept as k says. */
static enum MHD_Result reply_csv_kept(struct api_req *r, json_t *obj,
                                      const char *member, const struct keep *k)
{
  char *text = NULL;
  size_t len = 0;
  int rc = obj != NULL ? api_csv_rows(json_object_get(obj, member), &text, &len)
                       : TR_ENOMEM;

  json_decref(obj);
  return reply_kept(r, rc == 0 ? text : NULL, len, API_CSV_TYPE, k);
}

enum MHD_Result api_reply_rows_of(struct api_req *r, json_t *obj,
                                  const char *member, bool csv,
                                  const int64_t *ids, size_t n, uint64_t epoch)
{
  struct keep k = { ids, n, epoch, true };

  return csv ? reply_csv_kept(r, obj, member, &k) : reply_json_kept(r, obj, &k);
}

enum MHD_Result api_reply_table(struct api_req *r, json_t *obj, bool csv,
                                const int64_t *ids, uint64_t epoch)
{
  struct keep k = { ids, 2, epoch, false };

  return csv ? reply_csv_kept(r, obj, "rows", &k) : reply_json_kept(r, obj, &k);
}

enum MHD_Result api_reply_keep_text(struct api_req *r, struct tr_buf *body,
                                    const int64_t *ids, uint64_t epoch)
{
  char *text = body->p; /* NUL-terminated: the response takes it */
  size_t len = body->n;

  body->p = NULL;
  body->n = body->cap = 0;
  return reply_kept(r, text, len, "application/json",
                    &(struct keep){ ids, 2, epoch, false });
}

enum MHD_Result api_reply_error(struct api_req *r, unsigned status,
                                const char *code, const char *field,
                                const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  json_t *obj;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  obj = json_pack(
      "{s:{s:s, s:s, s:o}}", "error", "code", code, "message", msg, "field",
      field != NULL && field[0] != '\0' ? json_string(field) : json_null());
  if (obj == NULL) {
    /* The message was not UTF-8 (it quotes a client's bytes): say so
     * rather than fail the reply. */
    obj = json_pack("{s:{s:s, s:s, s:n}}", "error", "code", code, "message",
                    "(message not valid UTF-8)", "field");
  }
  if (obj == NULL)
    return MHD_NO;
  return api_reply_json(r, status, obj);
}

/* The HTTP status that carries a traced error code. */
static unsigned http_status(int code)
{
  switch (code) {
  case TR_EINVAL:
  case TR_EFORMAT: return 400;
  case TR_EAUTH: return 401;
  case TR_ENOTFOUND: return 404;
  case TR_ECONFLICT: return 409;
  case TR_ELIMIT: return 413;
  case TR_EBUSY: return 429;
  case TR_ESTORAGE: return 507;
  default: return 500;
  }
}

enum MHD_Result api_reply_tr_err(struct api_req *r, const struct tr_err *err)
{
  int code = err->code != 0 ? err->code : TR_EIO;

  return api_reply_error(r, http_status(code), tr_strerror(code), err->field,
                         "%s",
                         err->msg[0] != '\0' ? err->msg : "internal error");
}

enum MHD_Result api_reply_method(struct api_req *r)
{
  const struct api_route *rt = r->route;
  char allow[40] = "";
  struct MHD_Response *resp;

  snprintf(allow, sizeof(allow), "%s%s%s%s", rt->get ? "GET, " : "",
           rt->post ? "POST, " : "", rt->put ? "PUT, " : "",
           rt->del ? "DELETE, " : "");
  allow[strlen(allow) - 2] = '\0'; /* every route takes one method */
  resp = json_response(json_pack(
      "{s:{s:s, s:s++, s:n}}", "error", "code", "method_not_allowed", "message",
      r->method, " is not allowed here; allowed: ", allow, "field"));
  if (resp != NULL)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
  return api_reply(r, 405, resp);
}

/* ---- the dashboard ---- */

/* lifecycle.js: the words of common/lifecycle.h for the dashboard, so that
 * its lists of statuses and phases are the daemon's. Made once. */
static struct tr_web_asset lifecycle_js = { "lifecycle.js", NULL, 0 };
static pthread_once_t lifecycle_once = PTHREAD_ONCE_INIT;

static void js_list(FILE *f, const char *var, int n, const char *(*name)(int),
                    bool (*keep)(int))
{
  const char *sep = "";

  fprintf(f, "const %s = [", var);
  for (int i = 0; i < n; i++) {
    if (keep == NULL || keep(i)) {
      fprintf(f, "%s'%s'", sep, name(i));
      sep = ", ";
    }
  }
  fputs("];\n", f);
}

static const char *status_name(int i)
{
  return tr_status_name((enum tr_status)i);
}

static const char *phase_name(int i)
{
  return tr_phase_name((enum tr_phase)i);
}

static bool status_final(int i)
{
  return tr_status_final((enum tr_status)i);
}

static void make_lifecycle(void)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);

  if (f == NULL)
    return;
  fputs("/* Made by traced from common/lifecycle.h. */\n'use strict';\n", f);
  js_list(f, "STATUSES", TR_NSTATUS, status_name, NULL);
  js_list(f, "FINAL", TR_NSTATUS, status_name, status_final);
  js_list(f, "PHASES", TR_NPHASE, phase_name, NULL);
  if (fclose(f) != 0) {
    free(text);
    return;
  }
  lifecycle_js.bytes = (const unsigned char *)text; /* kept for the process */
  lifecycle_js.len = len;
}

static const struct tr_web_asset *find_asset(const char *name)
{
  if (strcmp(name, lifecycle_js.name) == 0) {
    pthread_once(&lifecycle_once, make_lifecycle);
    return lifecycle_js.bytes != NULL ? &lifecycle_js : NULL;
  }
  if (name[0] == '\0')
    name = "index.html";
  for (const struct tr_web_asset *a = tr_web_assets; a->name != NULL; a++)
    if (strcmp(a->name, name) == 0)
      return a;
  return NULL;
}

bool api_asset_exists(const char *name)
{
  return find_asset(name) != NULL;
}

static const char *asset_type(const char *name)
{
  static const char *const types[][2] = {
    { ".html", "text/html; charset=utf-8" },
    { ".js", "text/javascript; charset=utf-8" },
    { ".css", "text/css; charset=utf-8" },
    { ".json", "application/json" },
    { ".svg", "image/svg+xml" },
    { ".png", "image/png" },
    { ".ico", "image/x-icon" },
    { ".txt", "text/plain; charset=utf-8" },
  };
  const char *dot = strrchr(name, '.');

  for (size_t i = 0; dot != NULL && i < sizeof(types) / sizeof(types[0]); i++)
    if (strcmp(dot, types[i][0]) == 0)
      return types[i][1];
  return "application/octet-stream";
}

enum MHD_Result api_get_asset(struct api_req *r)
{
  const char *name = r->nseg == 0 ? "" : r->seg[0];
  const struct tr_web_asset *a = find_asset(name);
  struct MHD_Response *resp;

  if (a == NULL)
    return api_reply_error(r, 404, "not_found", NULL, "no route %s", r->url);
  /* The table is static for the life of the process. */
  resp = MHD_create_response_from_buffer(a->len, (void *)a->bytes,
                                         MHD_RESPMEM_PERSISTENT);
  if (resp != NULL) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            asset_type(a->name));
    /* A page: no referrer to the sites it links to, no frame (for
     * browsers without frame-ancestors), no window shared with another
     * origin's but for the windows it opens itself: "open in Perfetto"
     * posts a slice to the Perfetto UI it opened (perfetto_ui_url), which
     * needs the handle window.open() gave. */
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Cross-Origin-Opener-Policy",
                            "same-origin-allow-popups");
  }
  return api_reply(r, 200, resp);
}
