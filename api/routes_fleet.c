/*
 * The lab view's routes (docs/FLEET.md): the fleet's list, nodes,
 * configurations and trends (/fleet/...), and the capture routes of a
 * capture of the fleet, named node:id (or by its UUID) where an id goes:
 * /captures/<node:id>, its tables, its verdict against a baseline chosen
 * across the fleet, and /diff?a=<node:id>&b=<node:id> (a bare id is this
 * node's own, as everywhere); the sweeps of its published points,
 * /sweeps/<node:id> and their scaling (docs/SWEEPS.md). They answer from the
 * lab view's copies, with the store's own queries (fleet/lab.c says how
 * PostgreSQL is read); ids in the answers are the node's, each with its node
 * beside it. Raw traces, slices and logs stay on their node: a redirect to its
 * node_url.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_int.h"
#include "fleet/fleet.h"

#define TEXT_MAX  4096 /* bytes of a model path or a configuration */
#define NAME_MAX_ 128  /* bytes of a node or GPU name */

static struct fleet_lab *lab_of(struct api_req *r)
{
  return r->api->hooks.lab;
}

static const char *arg(struct api_req *r, const char *name)
{
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* True when text names a capture of the fleet. */
static bool of_fleet(const char *text)
{
  return text != NULL && fleet_ref_syntax(text);
}

bool api_fleet_wants(struct api_req *r)
{
  const struct api_route *rt = r->route;

  if (rt == NULL || rt->lab == NULL)
    return false;
  /* A capture's, or a sweep's (node:id: docs/SWEEPS.md). */
  if ((strstr(rt->tmpl, "{id}") != NULL ||
       strstr(rt->tmpl, "{sweep}") != NULL) &&
      r->nseg >= 2 && of_fleet(r->seg[1]))
    return true;
  for (const struct api_param *p = rt->params; p && p->name != NULL; p++)
    if ((p->type == API_P_CAPTURE || p->type == API_P_SWEEP) &&
        of_fleet(arg(r, p->name)))
      return true;
  return false;
}

/* PostgreSQL out of reach is 503: the copies made still answer. */
static enum MHD_Result reply_lab_err(struct api_req *r,
                                     const struct tr_err *err)
{
  if (err->code == TR_EIO)
    return api_reply_error(r, 503, "unavailable", err->field, "%s", err->msg);
  return api_reply_tr_err(r, err);
}

/* ref's copy and this thread's connection to the copies, or a reply. */
static struct store *lab_capture(struct api_req *r, const char *text,
                                 const char *field, struct store_fleet_ref *ref,
                                 enum MHD_Result *ret)
{
  struct tr_err err = { 0 };
  char local[96];
  struct store *st;

  /* A bare id beside a fleet's capture is this node's own. */
  if (!fleet_ref_syntax(text)) {
    snprintf(local, sizeof(local), "%s:%s", r->api->cfg->node_name, text);
    text = local;
  }
  if (fleet_lab_get(lab_of(r), text, field, ref, &err) != 0 ||
      (st = fleet_lab_store(lab_of(r), &err)) == NULL) {
    *ret = reply_lab_err(r, &err);
    return NULL;
  }
  return st;
}

/* The capture members naming ref as its node does: id (the node's), node,
 * uuid and node_url beside it. */
static void name_capture(json_t *obj, const struct store_fleet_ref *ref)
{
  json_object_set_new(obj, "id", json_integer(ref->id));
  json_object_set_new(obj, "node", json_string(ref->node));
  json_object_set_new(obj, "uuid", json_string(ref->uuid));
  json_object_set_new(obj, "node_url", json_string(ref->url));
}

/* obj[key] = ref's id, obj[key_node] = its node. */
static void name_member(json_t *obj, const char *key,
                        const struct store_fleet_ref *ref)
{
  char node_key[64];

  snprintf(node_key, sizeof(node_key), "%s_node", key);
  json_object_set_new(obj, key, json_integer(ref->id));
  json_object_set_new(obj, node_key, json_string(ref->node));
}

enum MHD_Result api_lab_capture(struct api_req *r)
{
  struct store_fleet_ref ref;
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *cap = NULL, *verdict;
  uint64_t epoch;

  if (api_query_check(r, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (api_read_begin(r, &epoch, &ret) == NULL ||
      (st = lab_capture(r, r->seg[1], "id", &ref, &ret)) == NULL)
    return ret;
  if (store_capture_get(st, ref.cache_id, &cap, &err) != 0)
    return api_reply_tr_err(r, &err);
  name_capture(cap, &ref);
  /* The node's own verdict names a baseline of that node. */
  verdict = json_object_get(cap, "verdict");
  if (json_is_object(verdict))
    json_object_set_new(verdict, "baseline_node", json_string(ref.node));
  return api_reply_keep(r, cap, (int64_t[2]){ ref.cache_id, ref.cache_id },
                        epoch);
}

enum MHD_Result api_lab_table(struct api_req *r)
{
  const struct tr_table_row *t = r->route->table;
  struct store_query q = { 0 };
  struct store_fleet_ref ref;
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *rows = NULL;
  uint64_t epoch;
  bool csv;

  if (api_table_query(r, &q, &csv, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (api_read_begin(r, &epoch, &ret) == NULL ||
      (st = lab_capture(r, r->seg[1], "id", &ref, &ret)) == NULL)
    return ret;
  q.capture_id = ref.cache_id;
  if (store_table(st, (enum tr_table)(t - tr_tables), &q, &rows, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_table(
      r,
      json_pack("{s:I, s:s, s:o, s:o}", "capture", (json_int_t)ref.id, "node",
                ref.node, "rank",
                q.rank < 0 ? json_null() : json_integer(q.rank), "rows", rows),
      csv, (int64_t[2]){ ref.cache_id, ref.cache_id }, epoch);
}

enum MHD_Result api_lab_diff(struct api_req *r)
{
  const char *a = arg(r, "a"), *b = arg(r, "b");
  struct store_fleet_ref ra, rb;
  struct store_diff_opts o;
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *out = NULL;
  uint64_t epoch;
  bool csv;

  if (api_diff_query(r, &o, &csv, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (a == NULL || b == NULL || !a[0] || !b[0])
    return api_reply_error(r, 400, "invalid", a == NULL || !a[0] ? "a" : "b",
                           "%s (a capture) is required",
                           a == NULL || !a[0] ? "a" : "b");
  if (api_read_begin(r, &epoch, &ret) == NULL ||
      lab_capture(r, a, "a", &ra, &ret) == NULL ||
      (st = lab_capture(r, b, "b", &rb, &ret)) == NULL)
    return ret;
  if (store_diff(st, ra.cache_id, rb.cache_id, &o, &out, &err) != 0)
    return api_reply_tr_err(r, &err);
  name_member(out, "a", &ra);
  name_member(out, "b", &rb);
  return api_reply_table(r, out, csv, (int64_t[2]){ ra.cache_id, rb.cache_id },
                         epoch);
}

/* The verdict against ?baseline=, else the newest done capture of its
 * configuration and GPU on any node before it; without one, its node's
 * own. Never kept: a newer baseline may come. */
enum MHD_Result api_lab_verdict(struct api_req *r)
{
  const char *asked = arg(r, "baseline");
  struct store_fleet_ref ra, rb;
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *out = NULL;
  int rc = 0;

  if (api_query_check(r, &err) != 0)
    return api_reply_tr_err(r, &err);
  if ((st = lab_capture(r, r->seg[1], "id", &ra, &ret)) == NULL)
    return ret;
  if (asked != NULL && asked[0] != '\0') {
    if (lab_capture(r, asked, "baseline", &rb, &ret) == NULL)
      return ret;
  } else if ((rc = fleet_lab_baseline(lab_of(r), &ra, &rb, &err)) < 0) {
    return reply_lab_err(r, &err);
  }
  if (rc == 0 && rb.cache_id == ra.cache_id)
    return api_reply_error(r, 400, "invalid", "baseline",
                           "baseline must be another capture than %s:%lld",
                           ra.node, (long long)ra.id);
  if (store_verdict(st, ra.cache_id, rc == 0 ? rb.cache_id : 0,
                    r->api->cfg->regression_threshold_pct, &out, &err) != 0)
    return api_reply_tr_err(r, &err);
  name_member(out, "capture", &ra);
  if (rc == 0) {
    name_member(out, "baseline", &rb);
    if (asked == NULL || asked[0] == '\0')
      json_object_set_new(out, "baseline_source", json_string("fleet"));
  } else if (json_is_integer(json_object_get(out, "baseline"))) {
    json_object_set_new(out, "baseline_node", json_string(ra.node));
  }
  return api_reply_json(r, 200, out);
}

/* ---- sweeps of the fleet (docs/SWEEPS.md) ---- */

/* The lab's copies of the published points of the sweep text names
 * ("node:id", the node's sweep id; a bare id is this node's own, as for a
 * capture), field naming it in errors: *ids their copies' ids, *names
 * each copy's id (as text) -> the node's capture id (added to *names when
 * not NULL already); or a reply. */
static struct store *lab_sweep(struct api_req *r, const char *text,
                               const char *field, char *node, int64_t *sid,
                               json_t **ids, json_t **names,
                               enum MHD_Result *ret)
{
  const char *colon = strrchr(text, ':');
  struct store_fleet_ref ref;
  struct tr_err err = { 0 };
  json_t *rows = NULL, *row;
  char ref_text[96], key[32];
  struct store *st;
  size_t i;
  int rc;

  if (colon != NULL
          ? colon == text || colon - text >= 64 ||
                api_parse_int(colon + 1, field, 1, INT64_MAX, sid, &err) != 0
          : api_parse_int(text, field, 1, INT64_MAX, sid, &err) != 0) {
    *ret = api_reply_error(r, 400, "invalid", field,
                           "%s: a sweep of the fleet is node:id", field);
    return NULL;
  }
  if (colon != NULL)
    snprintf(node, 64, "%.*s", (int)(colon - text), text);
  else
    snprintf(node, 64, "%s", r->api->cfg->node_name);
  if ((st = fleet_lab_store(lab_of(r), &err)) == NULL ||
      store_fleet_sweep_points(st, node, *sid, &rows, &err) != 0) {
    *ret = reply_lab_err(r, &err);
    return NULL;
  }
  *ids = json_array();
  if (*names == NULL)
    *names = json_object();
  rc = json_array_size(rows) > 0
           ? 0
           : tr_err_set(&err, TR_ENOTFOUND, field,
                        "no point of %s's sweep %lld is published", node,
                        (long long)*sid);
  json_array_foreach(rows, i, row) {
    snprintf(ref_text, sizeof(ref_text), "%s:%lld", node,
             (long long)json_integer_value(json_object_get(row, "id")));
    if (rc == 0 &&
        (rc = fleet_lab_get(lab_of(r), ref_text, field, &ref, &err)) == 0) {
      json_array_append_new(*ids, json_integer(ref.cache_id));
      snprintf(key, sizeof(key), "%lld", (long long)ref.cache_id);
      json_object_set_new(*names, key, json_integer(ref.id));
    }
  }
  json_decref(rows);
  if (rc != 0) {
    json_decref(*ids);
    *ids = NULL;
    *ret = reply_lab_err(r, &err);
    return NULL;
  }
  return st;
}

/* The points' member key (a copy's id) named as its node names it, with
 * key_node beside it. */
static void name_points(json_t *points, const char *key, json_t *names,
                        const char *node)
{
  char id[32], node_key[64];
  size_t i;
  json_t *p;

  snprintf(node_key, sizeof(node_key), "%s_node", key);
  json_array_foreach(points, i, p) {
    snprintf(id, sizeof(id), "%lld",
             (long long)json_integer_value(json_object_get(p, key)));
    json_object_set(p, key, json_object_get(names, id));
    json_object_set_new(p, node_key, json_string(node));
  }
}

/* A sweep of the fleet as its published points say it: they are final
 * (the node publishes a capture once it is), so done with one done, else
 * failed. */
enum MHD_Result api_lab_sweep(struct api_req *r)
{
  struct tr_err err = { 0 };
  json_t *ids, *names = NULL, *points = NULL, *p, *out;
  enum MHD_Result ret;
  struct store *st;
  char node[64];
  int64_t sid, done = 0;
  bool csv = false;
  size_t i;

  if (api_query_check(r, &err) != 0 || api_query_csv(r, &csv, &err) != 0)
    return api_reply_tr_err(r, &err);
  if ((st = lab_sweep(r, r->seg[1], "sweep", node, &sid, &ids, &names, &ret)) ==
      NULL) {
    json_decref(names);
    return ret;
  }
  if (store_sweep_points_of(st, ids, &points, &err) == 0)
    name_points(points, "capture", names, node);
  json_decref(ids);
  json_decref(names);
  if (points == NULL)
    return api_reply_tr_err(r, &err);
  json_array_foreach(points, i, p)
    done +=
        strcmp(json_string_value(json_object_get(p, "status")), "done") == 0;
  out =
      json_pack("{s:I,s:s,s:s,s:s,s:I,s:I,s:o}", "id", (json_int_t)sid, "node",
                node, "ref", r->seg[1], "status", done > 0 ? "done" : "failed",
                "points_total", (json_int_t)json_array_size(points),
                "points_done", (json_int_t)done, "points", points);
  return api_reply_rows(r, out, "points", csv);
}

static int make_lab_scaling(struct api_req *r, void *arg, json_t **out,
                            struct tr_err *err)
{
  const struct api_sweep_ask *a = arg;
  struct store *st = fleet_lab_store(lab_of(r), err);
  int rc = st == NULL
               ? err->code
               : store_sweep_scaling_of(st, a->ids, a->o.knee_pct, out, err);

  if (rc == 0) {
    name_points(json_object_get(*out, "points"), "capture", a->names, a->node);
    json_object_set_new(*out, "sweep", json_integer(a->id));
    json_object_set_new(*out, "node", json_string(a->node));
  }
  return rc;
}

/* The ask of a sweep of the fleet (the path's; with to, compare's other
 * one too), or NULL with the reply made. */
static struct api_sweep_ask *lab_ask(struct api_req *r, const char *to,
                                     enum MHD_Result *ret)
{
  struct api_sweep_ask *a = api_sweep_ask(r, ret);

  if (a == NULL)
    return NULL;
  if (lab_sweep(r, r->seg[1], "sweep", a->node, &a->id, &a->ids, &a->names,
                ret) == NULL ||
      (to != NULL && lab_sweep(r, to, "to", a->to_node, &a->to, &a->to_ids,
                               &a->names, ret) == NULL)) {
    api_sweep_ask_free(a);
    return NULL;
  }
  return a;
}

/* The node's figures of its published points; kept as any answer about
 * copies (all final), with the copies in its key: the node may publish
 * more points of the sweep. */
enum MHD_Result api_lab_sweep_scaling(struct api_req *r)
{
  struct api_sweep_ask *a;
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *points = NULL;

  if (api_slow_made(r) != NULL)
    return api_sweep_reply(r, "rows");
  if ((a = lab_ask(r, NULL, &ret)) == NULL)
    return ret;
  if ((st = fleet_lab_store(lab_of(r), &err)) == NULL ||
      store_sweep_points_of(st, a->ids, &points, &err) != 0) {
    api_sweep_ask_free(a);
    return api_reply_tr_err(r, &err);
  }
  return api_sweep_scaling_reply(r, a, points, make_lab_scaling);
}

static int make_lab_compare(struct api_req *r, void *arg, json_t **out,
                            struct tr_err *err)
{
  const struct api_sweep_ask *a = arg;
  struct store *st = fleet_lab_store(lab_of(r), err);
  int rc = st == NULL
               ? err->code
               : store_sweep_compare_of(st, a->ids, a->to_ids, &a->o, out, err);
  json_t *head;

  if (rc != 0)
    return rc;
  name_points(json_object_get(*out, "points"), "a_capture", a->names, a->node);
  name_points(json_object_get(*out, "points"), "b_capture", a->names,
              a->to_node);
  /* The node's members first, as its own answer has them. */
  head = json_pack("{s:I,s:s,s:I,s:s}", "a", (json_int_t)a->id, "a_node",
                   a->node, "b", (json_int_t)a->to, "b_node", a->to_node);
  json_object_update_new(head, *out);
  *out = head;
  return 0;
}

/* Two sweeps of the fleet (or of this node, by a bare id) compared as
 * their nodes compare theirs, from the copies; never kept (the verdicts
 * read their configurations' history, docs/VERDICTS.md). */
enum MHD_Result api_lab_sweep_compare(struct api_req *r)
{
  const char *to = arg(r, "to");
  struct api_sweep_ask *a;
  enum MHD_Result ret;

  if (api_slow_made(r) != NULL)
    return api_sweep_reply(r, "points");
  if (to == NULL || to[0] == '\0')
    return api_reply_error(r, 400, "invalid", "to",
                           "to (the sweep to compare with) is required");
  if ((a = lab_ask(r, to, &ret)) == NULL)
    return ret;
  if (a->id == a->to && strcmp(a->node, a->to_node) == 0) {
    ret = api_reply_error(r, 400, "invalid", "to",
                          "to must be another sweep than %s:%lld", a->node,
                          (long long)a->id);
    api_sweep_ask_free(a);
    return ret;
  }
  return api_slow(r, make_lab_compare, a, api_sweep_ask_free);
}

/* ---- raw traces stay on their node ---- */

static void put_escaped(struct tr_buf *b, const char *s)
{
  static const char hex[] = "0123456789ABCDEF";

  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;

    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
        (c >= 'A' && c <= 'Z') || strchr("-._~", c) != NULL) {
      tr_buf_put(b, s, 1);
    } else {
      char e[3] = { '%', hex[c >> 4], hex[c & 15] };

      tr_buf_put(b, e, 3);
    }
  }
}

static enum MHD_Result put_arg(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
  struct tr_buf *b = cls;

  (void)kind;
  tr_buf_put(b, strchr(b->p, '?') ? "&" : "?", 1);
  put_escaped(b, key);
  if (value != NULL) {
    tr_buf_put(b, "=", 1);
    put_escaped(b, value);
  }
  return MHD_YES;
}

/* 307 to the same route on the capture's node, under its own id. */
enum MHD_Result api_lab_elsewhere(struct api_req *r)
{
  struct store_fleet_ref ref;
  struct tr_buf loc = { .max = 8192 };
  struct MHD_Response *resp;
  enum MHD_Result ret;

  if (lab_capture(r, r->seg[1], "id", &ref, &ret) == NULL)
    return ret;
  /* Only where a node's URL may lead: nodes write their own row. */
  if (strncmp(ref.url, "http://", 7) != 0 &&
      strncmp(ref.url, "https://", 8) != 0)
    return api_reply_error(r, 404, "not_found", "id",
                           "%s:%lld's raw files stay on its node, whose URL "
                           "is not known",
                           ref.node, (long long)ref.id);
  tr_buf_printf(&loc, "%s/captures/%lld", ref.url, (long long)ref.id);
  for (int i = 2; i < r->nseg; i++) {
    tr_buf_put(&loc, "/", 1);
    put_escaped(&loc, r->seg[i]);
  }
  MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, put_arg, &loc);
  resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
  if (resp != NULL && !loc.failed)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc.p);
  ret = loc.failed ? api_reply_error(r, 500, "no_memory", NULL, "location")
                   : api_reply(r, 307, resp);
  if (loc.failed && resp != NULL)
    MHD_destroy_response(resp);
  tr_buf_free(&loc);
  return ret;
}

enum MHD_Result api_fleet_dispatch(struct api_req *r)
{
  if (strcmp(r->method, MHD_HTTP_METHOD_GET) != 0 &&
      strcmp(r->method, MHD_HTTP_METHOD_HEAD) != 0)
    return api_reply_error(r, 405, "method_not_allowed", "id",
                           "a capture of the fleet changes on its node only");
  return r->route->lab(r);
}

/* ---- /fleet/... ---- */

/* The lab view's copies, or a 404 reply when this is no lab view. */
static struct store *fleet_store(struct api_req *r, enum MHD_Result *ret)
{
  struct tr_err err = { 0 };
  struct store *st;

  if (lab_of(r) == NULL) {
    *ret = api_reply_error(r, 404, "not_found", NULL,
                           "this traced is not a lab view: set fleet_view "
                           "(docs/FLEET.md)");
    return NULL;
  }
  st = fleet_lab_store(lab_of(r), &err);
  if (st == NULL)
    *ret = api_reply_tr_err(r, &err);
  return st;
}

/* A date or time, RFC 3339 in UTC ("2026-01-31", "2026-01-31T08:00:00Z"),
 * as ns since the epoch; *out left alone when absent. */
static int query_time(struct api_req *r, const char *name, int64_t *out,
                      struct tr_err *err)
{
  const char *v = arg(r, name), *end = NULL;
  struct tm tm = { 0 };

  if (v == NULL || v[0] == '\0')
    return 0;
  end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
  if (end != NULL && strcmp(end, "Z") != 0)
    end = NULL;
  if (end == NULL) {
    memset(&tm, 0, sizeof(tm));
    end = strptime(v, "%Y-%m-%d", &tm);
    if (end != NULL && *end != '\0')
      end = NULL;
  }
  if (end == NULL)
    return tr_err_set(err, TR_EINVAL, name,
                      "%s must be a date (2026-01-31) or a UTC time "
                      "(2026-01-31T08:00:00Z)",
                      name);
  *out = (int64_t)timegm(&tm) * 1000000000;
  return 0;
}

/* ?before=<created_at ns>.<row>: the cursor of the page before. */
static int query_cursor(struct api_req *r, struct store_fleet_filter *f,
                        struct tr_err *err)
{
  const char *v = arg(r, "before");
  long long at, lid;
  int used = 0;

  if (v == NULL || v[0] == '\0')
    return 0;
  if (sscanf(v, "%lld.%lld%n", &at, &lid, &used) != 2 ||
      (size_t)used != strlen(v) || at < 0 || lid < 0)
    return tr_err_set(err, TR_EINVAL, "before",
                      "before must be a page's next_before");
  f->before_at = at;
  f->before_lid = lid;
  return 0;
}

enum MHD_Result api_get_fleet_captures(struct api_req *r)
{
  const struct cfg *cfg = r->api->cfg;
  struct store_fleet_filter f = { 0 };
  struct tr_buf out = { .max = (size_t)cfg->max_response_bytes };
  struct tr_err err = { 0 };
  int64_t limit = cfg->list_limit;
  enum MHD_Result ret;
  struct store *st;

  if (api_query_check(r, &err) != 0 ||
      api_query_str(r, "node", NAME_MAX_, &f.node, &err) != 0 ||
      api_query_str(r, "gpu", NAME_MAX_, &f.gpu, &err) != 0 ||
      api_query_str(r, "model", TEXT_MAX, &f.model, &err) != 0 ||
      api_query_str(r, "config", TEXT_MAX, &f.config, &err) != 0 ||
      api_query_enum(r, "status", &f.status, &err) != 0 ||
      api_query_enum(r, "kind", &f.kind, &err) != 0 ||
      query_time(r, "since", &f.since, &err) != 0 ||
      query_time(r, "until", &f.until, &err) != 0 ||
      api_query_int(r, "limit", 1, cfg->list_limit_max, &limit, &err) != 0 ||
      query_cursor(r, &f, &err) != 0)
    return api_reply_tr_err(r, &err);
  f.limit = (int)limit;
  if ((st = fleet_store(r, &ret)) == NULL)
    return ret;
  if (store_fleet_list(st, &f, &out, &err) != 0) {
    tr_buf_free(&out);
    return api_reply_tr_err(r, &err);
  }
  ret = api_reply_text(r, 200, "application/json", out.p, out.n);
  tr_buf_free(&out);
  return ret;
}

/* The rows fn reads from the lab view's mirror into *rows (a route
 * without parameters), or false with the reply made in *ret. */
static bool mirror_rows(struct api_req *r,
                        int (*fn)(struct store *, json_t **, struct tr_err *),
                        json_t **rows, enum MHD_Result *ret)
{
  struct tr_err err = { 0 };
  struct store *st;

  if (api_query_check(r, &err) != 0 || (st = fleet_store(r, ret)) == NULL ||
      fn(st, rows, &err) != 0) {
    if (err.code != 0)
      *ret = api_reply_tr_err(r, &err);
    return false;
  }
  return true;
}

enum MHD_Result api_get_fleet_nodes(struct api_req *r)
{
  enum MHD_Result ret;
  json_t *rows = NULL;

  if (!mirror_rows(r, store_fleet_nodes, &rows, &ret))
    return ret;
  return api_reply_json(
      r, 200,
      json_pack("{s:s,s:o}", "node", r->api->cfg->node_name, "nodes", rows));
}

enum MHD_Result api_get_fleet_sweeps(struct api_req *r)
{
  struct tr_err err = { 0 };
  int64_t limit = r->api->cfg->list_limit;
  enum MHD_Result ret;
  struct store *st;
  json_t *rows = NULL;

  if (api_query_check(r, &err) != 0 ||
      api_query_int(r, "limit", 1, r->api->cfg->list_limit_max, &limit, &err) !=
          0)
    return api_reply_tr_err(r, &err);
  if ((st = fleet_store(r, &ret)) == NULL)
    return ret;
  if (store_fleet_sweeps(st, (int)limit, &rows, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(r, 200, json_pack("{s:o}", "sweeps", rows));
}

enum MHD_Result api_get_fleet_configs(struct api_req *r)
{
  enum MHD_Result ret;
  json_t *rows = NULL;

  if (!mirror_rows(r, store_fleet_configs, &rows, &ret))
    return ret;
  return api_reply_json(r, 200, json_pack("{s:o}", "configs", rows));
}

enum MHD_Result api_get_fleet_trend(struct api_req *r)
{
  const char *config = NULL, *gpu = NULL;
  struct tr_err err = { 0 };
  int64_t limit = 1000;
  enum MHD_Result ret;
  struct store *st;
  json_t *out = NULL;

  if (api_query_check(r, &err) != 0 ||
      api_query_str(r, "config", TEXT_MAX, &config, &err) != 0 ||
      api_query_str(r, "gpu", NAME_MAX_, &gpu, &err) != 0 ||
      api_query_int(r, "limit", 1, 10000, &limit, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (config == NULL)
    return api_reply_error(r, 400, "invalid", "config",
                           "config (a configuration of /fleet/configs) is "
                           "required");
  if ((st = fleet_store(r, &ret)) == NULL)
    return ret;
  if (store_fleet_trend(st, config, gpu, (int)limit, &out, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(
      r, 200,
      json_pack("{s:s,s:s?,s:o}", "config", config, "gpu", gpu, "points", out));
}
