/*
 * Routes of captures and imports: queue (POST /captures, POST /imports),
 * list, get, cancel or delete, a rank's raw trace, a log's tail.
 *
 * Writes are short and done here, on the HTTP thread, through its own
 * read-write connection (the store serialises writers); the loop only
 * hears about them through the non-blocking hooks.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_int.h"
#include "common/file.h"
#include "common/lifecycle.h"
#include "common/stats.h"
#include "common/text.h"

#define LOG_TAIL_BYTES 65536

int api_path_id(struct api_req *r, int64_t *id, struct tr_err *err)
{
  return api_parse_int(r->seg[1], "id", 1, INT64_MAX, id, err);
}

int api_capture_brief(struct store *st, int64_t id, json_t **cap,
                      struct tr_err *err)
{
  /* The newest capture below id + 1 is id, if id exists. */
  struct store_list_filter f = { .before = id < INT64_MAX ? id + 1 : 0,
                                 .limit = 1 };
  json_t *list = NULL, *first;
  int rc = store_capture_list(st, &f, &list, err);

  first = json_array_get(list, 0);
  if (rc == 0 && json_integer_value(json_object_get(first, "id")) != id)
    rc = tr_err_set(err, TR_ENOTFOUND, "id", "no capture %lld", (long long)id);
  if (rc == 0)
    *cap = json_incref(first);
  json_decref(list);
  return rc;
}

/* A done capture's answers are final until it is deleted. */
static bool is_done(json_t *cap)
{
  const char *status = json_string_value(json_object_get(cap, "status"));

  return status != NULL && strcmp(status, "done") == 0;
}

/* Inserts the queued row, tells the loop, answers 202 with the capture
 * object. params and label (may be NULL) are borrowed. */
static enum MHD_Result queue(struct api_req *r, const char *kind,
                             const char *label, json_t *params)
{
  const struct api_hooks *hooks = &r->api->hooks;
  struct tr_err err = { 0 };
  struct store *st = api_store(r, STORE_RW, &err);
  json_t *cap = NULL;
  int64_t id;

  if (st == NULL ||
      store_capture_insert(st, kind, label, params, r->api->cfg->max_queued,
                           &id, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (hooks->wake != NULL)
    hooks->wake(hooks->ud);
  if (store_capture_get(st, id, &cap, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(r, 202, cap);
}

static const char *label_of(json_t *obj)
{
  const char *label = json_string_value(json_object_get(obj, "label"));

  return label != NULL && label[0] != '\0' ? label : NULL;
}

enum MHD_Result api_post_captures(struct api_req *r)
{
  struct tr_err err = { 0 };
  json_t *params;
  enum MHD_Result ret;

  if (api_query_check(r, &err) != 0 ||
      api_parse_capture(r->api->cfg, r->body.p ? r->body.p : "", r->body.n,
                        &params, &err) != 0)
    return api_reply_tr_err(r, &err);
  ret = queue(r, tr_kind_names[TR_KIND_CAPTURE], label_of(params), params);
  json_decref(params);
  return ret;
}

/* The absolute path with "." and ".." taken on its text ("a/b/../c" is
 * "a/c", whatever a or b are): what it names then never depends on a
 * folder outside the roots existing. NULL when out of memory. */
static char *normalize(const char *path)
{
  char *out = malloc(strlen(path) + 2);
  size_t n = 0;

  if (out == NULL)
    return NULL;
  for (const char *c = path; *c != '\0';) {
    const char *end = strchrnul(c, '/');
    size_t len = (size_t)(end - c);

    if (len == 2 && c[0] == '.' && c[1] == '.') {
      while (n > 0 && out[n - 1] != '/')
        n--;
      if (n > 0)
        n--;
    } else if (len > 0 && !(len == 1 && c[0] == '.')) {
      out[n++] = '/';
      memcpy(out + n, c, len);
      n += len;
    }
    c = *end == '/' ? end + 1 : end;
  }
  if (n == 0)
    out[n++] = '/';
  out[n] = '\0';
  return out;
}

/* Where a path that does not exist would be: its deepest existing folder
 * resolved, the rest as written. NULL when out of memory. */
static char *resolve_missing(const char *path)
{
  char *copy = strdup(path), *cut, *real = NULL, *out = NULL;

  while (copy != NULL && real == NULL && (cut = strrchr(copy, '/')) != NULL) {
    *cut = '\0';
    real = realpath(copy[0] != '\0' ? copy : "/", NULL);
  }
  if (real != NULL &&
      asprintf(&out, "%s%s%s", real, strcmp(real, "/") ? "/" : "",
               path + strlen(copy) + 1) < 0)
    out = NULL;
  free(real);
  free(copy);
  return out;
}

/* Whether real (resolved, under root) is a file or a folder traced can
 * read, opened as the indexer will: under root, no link followed. 0, or
 * -1 with the refusal replied (MHD's result in *ret). */
static int check_import(struct api_req *r, const char *root, const char *path,
                        const char *real, enum MHD_Result *ret)
{
  struct tr_err err = { 0 };
  struct stat st;
  int fd = tr_open_file(root, real, 0, &st, &err);

  if (fd == TR_EFORMAT && S_ISDIR(st.st_mode)) {
    tr_err_clear(&err);
    fd = tr_open_dir(root, real, NULL, &err);
  }
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  if (fd == -ELOOP || fd == -EACCES)
    *ret =
        api_reply_error(r, 403, "forbidden", "path", "%s: %s", path, err.msg);
  else
    *ret = api_reply_error(r, 400, "invalid", "path", "%s", err.msg);
  return -1;
}

/* The import's real path, resolved once and checked against import_roots.
 * The answer for a path outside the roots is the same whether it exists
 * or not (no existence oracle): ".." is taken on the text first, and a
 * missing path is judged by where its deepest existing folder lies. A
 * reply is made (and MHD_YES/NO stored in *ret) when it is refused. */
static char *import_path(struct api_req *r, const char *path,
                         enum MHD_Result *ret)
{
  const char *root = NULL;
  char *plain, *real = NULL;
  int missing = 0;

  if (path[0] != '/') {
    *ret = api_reply_error(r, 400, "invalid", "path", "path must be absolute");
    return NULL;
  }
  plain = normalize(path);
  if (plain != NULL && (real = realpath(plain, NULL)) == NULL) {
    missing = errno;
    real = resolve_missing(plain);
  }
  free(plain);
  if (real != NULL)
    root = tr_path_root(r->api->cfg->import_roots, real);
  if (real == NULL)
    *ret = api_reply_error(r, 500, "no_memory", NULL, "out of memory");
  else if (root == NULL)
    *ret = api_reply_error(r, 403, "forbidden", "path",
                           "%s is not under any of import_roots", path);
  else if (missing != 0)
    *ret = api_reply_error(r, 400, "invalid", "path", "%s: %s", path,
                           strerror(missing));
  else if (check_import(r, root, path, real, ret) == 0)
    return real;
  free(real);
  return NULL;
}

enum MHD_Result api_post_imports(struct api_req *r)
{
  const struct cfg *cfg = r->api->cfg;
  struct tr_err err = { 0 };
  enum MHD_Result ret = MHD_NO;
  json_t *req, *params;
  char *real;

  if (cfg->import_roots == NULL || cfg->import_roots[0] == NULL)
    return api_reply_error(r, 403, "forbidden", "path",
                           "imports are off: set import_roots (colon-"
                           "separated folders POST /imports may read) in "
                           "the configuration to enable them");
  if (api_query_check(r, &err) != 0 ||
      api_parse_import(r->api->hooks.formats, r->body.p ? r->body.p : "",
                       r->body.n, &req, &err) != 0)
    return api_reply_tr_err(r, &err);
  real = import_path(r, json_string_value(json_object_get(req, "path")), &ret);
  if (real != NULL) {
    const char *key;
    json_t *v;

    params = json_pack("{s:s, s:O}", "path", real, "format",
                       json_object_get(req, "format"));
    json_object_foreach(req, key, v) {
      if (params != NULL && api_import_config(key))
        json_object_set(params, key, v);
    }
    ret = params != NULL
              ? queue(r, tr_kind_names[TR_KIND_IMPORT], label_of(req), params)
              : api_reply_error(r, 500, "no_memory", NULL, "out of memory");
    json_decref(params);
    free(real);
  }
  json_decref(req);
  return ret;
}

/* The id to pass as before= for the page after list (limit asked): its
 * last id when the page is full, or cut short by max_response_bytes with
 * more behind it; NULL on the last page. */
static json_t *next_before(struct store *st, struct store_list_filter *f,
                           json_t *list, int64_t limit)
{
  json_t *last =
      json_object_get(json_array_get(list, json_array_size(list) - 1), "id");
  json_t *more = NULL;
  bool any;

  if (last == NULL || json_array_size(list) == (size_t)limit)
    return last;
  f->before = json_integer_value(last);
  f->limit = 1;
  any =
      store_capture_list(st, f, &more, NULL) == 0 && json_array_size(more) > 0;
  json_decref(more);
  return any ? last : NULL;
}

enum MHD_Result api_get_captures(struct api_req *r)
{
  const struct cfg *cfg = r->api->cfg;
  struct store_list_filter f = { 0 };
  struct tr_err err = { 0 };
  int64_t limit = cfg->list_limit, before = 0;
  json_t *list = NULL;
  struct store *st;

  if (api_query_check(r, &err) != 0 ||
      api_query_enum(r, "status", &f.status, &err) != 0 ||
      api_query_str(r, "model", 4096, &f.model, &err) != 0 ||
      api_query_enum(r, "kind", &f.kind, &err) != 0 ||
      api_query_int(r, "limit", 1, cfg->list_limit_max, &limit, &err) != 0 ||
      api_query_int(r, "before", 1, INT64_MAX, &before, &err) != 0)
    return api_reply_tr_err(r, &err);
  f.limit = (int)limit;
  f.before = before;
  /* The page stops early rather than build an answer too large to send. */
  f.max_bytes = (size_t)cfg->max_response_bytes / 2;
  st = api_store(r, STORE_RO, &err);
  if (st == NULL || store_capture_list(st, &f, &list, &err) != 0)
    return api_reply_tr_err(r, &err);
  for (size_t i = 0; i < json_array_size(list); i++)
    tr_stats_pending_apply(json_array_get(list, i));
  return api_reply_json(r, 200,
                        json_pack("{s:o, s:O?}", "captures", list,
                                  "next_before",
                                  next_before(st, &f, list, limit)));
}

enum MHD_Result api_get_capture(struct api_req *r)
{
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *cap = NULL;
  uint64_t epoch;
  int64_t id, ids[2];
  bool done;

  if (api_query_check(r, &err) != 0 || api_path_id(r, &id, &err) != 0)
    return api_reply_tr_err(r, &err);
  st = api_read_begin(r, &epoch, &ret);
  if (st == NULL)
    return ret;
  if (store_capture_get(st, id, &cap, &err) != 0)
    return api_reply_tr_err(r, &err);
  ids[0] = ids[1] = id;
  /* Kept only as stored (a final state the store refused is shown over
   * the row, never kept: common/stats.h). */
  done = is_done(cap);
  tr_stats_pending_apply(cap);
  return api_reply_keep(r, cap, done ? ids : NULL, epoch);
}

/* rename() takes a link as it is: a link to an import's originals is
 * moved, never followed. */
int api_to_trash(const struct cfg *cfg, const char *sub, int64_t id)
{
  char *path = tr_capture_dir(cfg->trace_root, id, sub);
  char *trash = tr_trash_dir(cfg->trace_root, 0, NULL);
  char *dest = tr_trash_dir(cfg->trace_root, id, sub);
  int rc = path && trash && dest ? tr_mkdir_p(trash) : -ENOMEM;

  if (rc == 0 && rename(path, dest) != 0 && errno != ENOENT)
    rc = -errno;
  free(path);
  free(trash);
  free(dest);
  return rc;
}

bool api_capture_gone(struct api_req *r, int64_t id)
{
  const struct cfg *cfg = r->api->cfg;

  /* After the delete: a kept answer filled meanwhile is refused. */
  api_cache_drop(r->api->cache, id);
  return api_to_trash(cfg, NULL, id) == 0 && api_to_trash(cfg, "logs", id) == 0;
}

enum MHD_Result api_reply_deleted(struct api_req *r, int64_t id, bool all)
{
  const struct api_hooks *hooks = &r->api->hooks;
  json_t *out = json_pack("{s:I}", "deleted", (json_int_t)id);

  if (!all)
    json_object_set_new(out, "warning",
                        json_string("some trace or log files could not be "
                                    "removed"));
  if (hooks->purge != NULL)
    hooks->purge(hooks->ud);
  return api_reply_json(r, 200, out);
}

/* Cancel a running one through the loop: answered at once (202), the
 * status changes when the runner has stopped it. If it has just finished,
 * 409: a cancel never becomes a delete. */
static enum MHD_Result cancel_running(struct api_req *r, int64_t id,
                                      json_t *cap)
{
  const struct api_hooks *hooks = &r->api->hooks;
  int rc = hooks->cancel != NULL ? hooks->cancel(hooks->ud, id) : TR_ENOTFOUND;

  if (rc == 0)
    return api_reply_json(r, 202, json_incref(cap));
  if (rc == TR_ENOTFOUND)
    return api_reply_error(r, 409, "conflict", "id",
                           "capture %lld is not the one the runner runs "
                           "now; it may have just finished: GET it and "
                           "retry",
                           (long long)id);
  return api_reply_error(r, 503, "busy", NULL,
                         "too many cancel requests pending; retry");
}

/* The store decides (store_capture_end()): cancel a queued capture,
 * delete a finished one, or leave a running one to the runner. */
enum MHD_Result api_delete_capture(struct api_req *r)
{
  struct tr_err err = { 0 };
  enum store_end what;
  enum MHD_Result ret;
  struct store *st;
  json_t *cap = NULL;
  int64_t id;

  if (api_query_check(r, &err) != 0 || api_path_id(r, &id, &err) != 0 ||
      (st = api_store(r, STORE_RW, &err)) == NULL ||
      store_capture_end(st, id, &what, &err) != 0)
    return api_reply_tr_err(r, &err);
  /* A capture deleted: the answers kept about it, then its files under
   * trace_root. */
  if (what == STORE_END_DELETED)
    return api_reply_deleted(r, id, api_capture_gone(r, id));
  if ((st = api_store(r, STORE_RO, &err)) == NULL ||
      store_capture_get(st, id, &cap, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (what == STORE_END_CANCELLED)
    return api_reply_json(r, 200, cap);
  ret = cancel_running(r, id, cap);
  json_decref(cap);
  return ret;
}

/* A file name for Content-Disposition: [A-Za-z0-9._-] only. */
static void safe_name(char *out, size_t size, const char *path)
{
  const char *base = strrchr(path, '/');
  size_t i = 0;

  for (base = base ? base + 1 : path; *base != '\0' && i + 1 < size;
       base++, i++) {
    unsigned char c = (unsigned char)*base;

    out[i] = (isalnum(c) || c == '.' || c == '_' || c == '-') ? (char)c : '_';
  }
  out[i] = '\0';
}

enum MHD_Result api_open_refused(struct api_req *r, const struct tr_err *err,
                                 const char *field, const char *what)
{
  if (err->code == -ENOENT)
    return api_reply_error(r, 404, "not_found", field, "%s is gone", what);
  return api_reply_error(r, 403, "forbidden", field, "%s: %s", what, err->msg);
}

/* Streams the file at path, opened under root (common/file.h): the
 * response owns the descriptor, so what is sent is what was checked. */
static enum MHD_Result send_file(struct api_req *r, const char *root,
                                 const char *path, const char *disposition_name)
{
  char disp[400], name[256];
  struct MHD_Response *resp;
  struct tr_err err = { 0 };
  struct stat sb;
  size_t len = strlen(path);
  bool gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
  int fd = tr_open_file(root, path, 0, &sb, &err);

  if (fd < 0)
    return api_open_refused(r, &err, "rank", "the trace file of this rank");
  resp = MHD_create_response_from_fd64((uint64_t)sb.st_size, fd);
  if (resp == NULL) {
    close(fd);
    return MHD_NO;
  }
  safe_name(name, sizeof(name), path);
  snprintf(disp, sizeof(disp), "attachment; filename=\"%s-%s\"",
           disposition_name, name);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          gz ? "application/gzip" : "application/json");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
  return api_reply(r, 200, resp);
}

char *api_files_root(struct api_req *r, json_t *cap)
{
  const char *kind = json_string_value(json_object_get(cap, "kind"));
  const char *path, *root;
  int64_t id = json_integer_value(json_object_get(cap, "id"));

  if (kind != NULL && strcmp(kind, tr_kind_names[TR_KIND_IMPORT]) == 0) {
    path = json_string_value(
        json_object_get(json_object_get(cap, "params"), "path"));
    root = path != NULL ? tr_path_root(r->api->cfg->import_roots, path) : NULL;
    return root != NULL ? strdup(root) : NULL;
  }
  return tr_capture_dir(r->api->cfg->trace_root, id, NULL);
}

enum MHD_Result api_get_trace(struct api_req *r)
{
  struct tr_err err = { 0 };
  char prefix[64], *root;
  struct store *st;
  char *path = NULL;
  json_t *cap = NULL;
  enum MHD_Result ret;
  int64_t id, rank;

  if (api_query_check(r, &err) != 0 || api_path_id(r, &id, &err) != 0 ||
      api_parse_int(r->seg[3], "rank", 0, INT_MAX, &rank, &err) != 0)
    return api_reply_tr_err(r, &err);
  st = api_store(r, STORE_RO, &err);
  if (st == NULL || api_capture_brief(st, id, &cap, &err) != 0 ||
      store_rank_file(st, id, (int)rank, &path, &err) != 0) {
    json_decref(cap);
    return api_reply_tr_err(r, &err);
  }
  root = api_files_root(r, cap);
  snprintf(prefix, sizeof(prefix), "capture%lld-rank%lld", (long long)id,
           (long long)rank);
  ret = root != NULL ? send_file(r, root, path, prefix)
                     : api_reply_error(r, 403, "forbidden", "rank",
                                       "the import's folder is no longer "
                                       "under any of import_roots");
  json_decref(cap);
  free(root);
  free(path);
  return ret;
}

/* Opens capture id's "which" log (logs/WHICH.log under its folder), as
 * tr_open_file() does: -1 with err set when it cannot, TR_EIO when the
 * fault is traced's own (no memory, a path past PATH_MAX). */
static int open_log(struct api_req *r, int64_t id, const char *which,
                    struct stat *sb, struct tr_err *err)
{
  char path[PATH_MAX], *dir;
  int n, fd = -1;

  if ((dir = tr_capture_dir(r->api->cfg->trace_root, id, "logs")) == NULL)
    return tr_err_set(err, TR_EIO, "", "out of memory");
  n = snprintf(path, sizeof(path), "%s/%s.log", dir, which);
  if (n < 0 || (size_t)n >= sizeof(path))
    tr_err_set(err, TR_EIO, "", "log path too long");
  else
    fd = tr_open_file(dir, path, 0, sb, err);
  free(dir);
  return fd;
}

/* Answers the tail of capture id's "which" log as text/plain, with its
 * full size in X-Log-Bytes; 404 naming "which" when there is no such log. */
static enum MHD_Result send_tail(struct api_req *r, int64_t id,
                                 const char *which)
{
  struct MHD_Response *resp = NULL;
  struct tr_err err = { 0 };
  char size_text[32], what[64];
  struct stat sb;
  char *buf = NULL;
  size_t len = 0;
  int fd = open_log(r, id, which, &sb, &err);

  if (fd < 0 && err.code == TR_EIO)
    return api_reply_error(r, 500, "system", NULL, "%s", err.msg);
  if (fd < 0) {
    snprintf(what, sizeof(what), "the %s log of capture %lld", which,
             (long long)id);
    return api_open_refused(r, &err, "which", what);
  }
  buf = tr_read_tail(fd, (uint64_t)sb.st_size, LOG_TAIL_BYTES, &len);
  close(fd);
  if (buf == NULL)
    buf = strdup(""); /* an empty log */
  if (buf != NULL)
    resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
  if (resp == NULL) {
    free(buf);
    return MHD_NO;
  }
  snprintf(size_text, sizeof(size_text), "%lld", (long long)sb.st_size);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          "text/plain; charset=utf-8");
  MHD_add_response_header(resp, "X-Log-Bytes", size_text);
  return api_reply(r, 200, resp);
}

enum MHD_Result api_get_logs(struct api_req *r)
{
  const char *which = "server";
  struct tr_err err = { 0 };
  struct store *st;
  json_t *cap = NULL;
  int64_t id;

  if (api_query_check(r, &err) != 0 || api_path_id(r, &id, &err) != 0 ||
      api_query_enum(r, "which", &which, &err) != 0 ||
      (st = api_store(r, STORE_RO, &err)) == NULL ||
      api_capture_brief(st, id, &cap, &err) != 0)
    return api_reply_tr_err(r, &err);
  json_decref(cap); /* it exists: its logs are where the runner puts them */
  return send_tail(r, id, which);
}
