/*
 * Routes of sweeps (docs/SWEEPS.md): queue one (POST /sweeps: its points
 * are queued captures), list, get, cancel or delete. As for captures, the
 * writes are short and made here; the loop hears of them through the
 * hooks (a wake, a cancel of the point running).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "common/lifecycle.h"

int api_path_sweep(struct api_req *r, int64_t *id, struct tr_err *err)
{
  return api_parse_int(r->seg[1], "sweep", 1, INT64_MAX, id, err);
}

enum MHD_Result api_reply_rows(struct api_req *r, json_t *obj,
                               const char *member, bool csv)
{
  return api_reply_rows_of(r, obj, member, csv, NULL, 0, 0);
}

enum MHD_Result api_post_sweeps(struct api_req *r)
{
  const struct api_hooks *hooks = &r->api->hooks;
  struct tr_err err = { 0 };
  json_t *params = NULL, *points = NULL, *sweep = NULL;
  const char *label;
  struct store *st = NULL;
  int64_t id = 0;
  int rc;

  rc = api_query_check(r, &err);
  if (rc == 0)
    rc = api_parse_sweep(r->api->cfg, r->body.p ? r->body.p : "", r->body.n,
                         &params, &points, &err);
  label = json_string_value(json_object_get(params, "label"));
  if (rc == 0 && (st = api_store(r, STORE_RW, &err)) == NULL)
    rc = err.code;
  if (rc == 0)
    rc = store_sweep_insert(st, label && label[0] ? label : NULL, params,
                            points, r->api->cfg->max_queued, &id, &err);
  json_decref(params);
  json_decref(points);
  if (rc != 0)
    return api_reply_tr_err(r, &err);
  if (hooks->wake != NULL)
    hooks->wake(hooks->ud);
  if (store_sweep_get(st, id, &sweep, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(r, 202, sweep);
}

enum MHD_Result api_get_sweeps(struct api_req *r)
{
  const struct cfg *cfg = r->api->cfg;
  struct store_list_filter f = { 0 };
  struct tr_err err = { 0 };
  int64_t limit = cfg->list_limit, before = 0;
  json_t *list = NULL, *last;
  struct store *st;
  bool csv = false;

  if (api_query_check(r, &err) != 0 ||
      api_query_enum(r, "status", &f.status, &err) != 0 ||
      api_query_int(r, "limit", 1, cfg->list_limit_max, &limit, &err) != 0 ||
      api_query_int(r, "before", 1, INT64_MAX, &before, &err) != 0 ||
      api_query_csv(r, &csv, &err) != 0)
    return api_reply_tr_err(r, &err);
  f.limit = (int)limit;
  f.before = before;
  f.max_bytes = (size_t)cfg->max_response_bytes / 2;
  st = api_store(r, STORE_RO, &err);
  if (st == NULL || store_sweep_list(st, &f, &list, &err) != 0)
    return api_reply_tr_err(r, &err);
  /* A full page may have more behind it: its last id pages on. */
  last = json_array_size(list) == (size_t)limit
             ? json_object_get(json_array_get(list, (size_t)limit - 1), "id")
             : NULL;
  return api_reply_rows(
      r, json_pack("{s:o, s:O?}", "sweeps", list, "next_before", last),
      "sweeps", csv);
}

enum MHD_Result api_get_sweep(struct api_req *r)
{
  struct tr_err err = { 0 };
  struct store *st;
  json_t *sweep = NULL;
  bool csv = false;
  int64_t id;

  if (api_query_check(r, &err) != 0 || api_path_sweep(r, &id, &err) != 0 ||
      api_query_csv(r, &csv, &err) != 0 ||
      (st = api_store(r, STORE_RO, &err)) == NULL ||
      store_sweep_get(st, id, &sweep, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_rows(r, sweep, "points", csv);
}

/* The answer to a finished sweep deleted: its points go as deleted
 * captures, its launch folder to the trash (the answer says whether all
 * their files could); e's ids are spent. */
static enum MHD_Result sweep_gone(struct api_req *r, int64_t id,
                                  struct store_sweep_end *e)
{
  bool all = api_to_trash(r->api->cfg, "sweeps", id) == 0;

  for (size_t i = 0; i < e->n; i++)
    all = api_capture_gone(r, e->ids[i]) && all;
  free(e->ids);
  return api_reply_deleted(r, id, all);
}

/* The store decides (store_sweep_end()): a finished sweep is deleted, any
 * other cancelled with its queued points, and its running point is
 * cancelled by the runner (it may have just finished: then the sweep
 * settled already). */
enum MHD_Result api_delete_sweep(struct api_req *r)
{
  const struct api_hooks *hooks = &r->api->hooks;
  struct store_sweep_end e = { 0 };
  struct tr_err err = { 0 };
  struct store *st;
  json_t *sweep = NULL;
  int64_t id;

  if (api_query_check(r, &err) != 0 || api_path_sweep(r, &id, &err) != 0 ||
      (st = api_store(r, STORE_RW, &err)) == NULL ||
      store_sweep_end(st, id, &e, &err) != 0)
    return api_reply_tr_err(r, &err);
  if (e.deleted)
    return sweep_gone(r, id, &e);
  for (size_t i = 0; i < e.n && hooks->cancel != NULL; i++)
    hooks->cancel(hooks->ud, e.ids[i]);
  free(e.ids);
  if ((st = api_store(r, STORE_RO, &err)) == NULL ||
      store_sweep_get(st, id, &sweep, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(r, e.n > 0 ? 202 : 200, sweep);
}

/* ---- the slow answers: scaling and compare (api/slow.c) ---- */

void api_sweep_ask_free(void *arg)
{
  struct api_sweep_ask *a = arg;

  if (a == NULL)
    return;
  json_decref(a->ids);
  json_decref(a->to_ids);
  json_decref(a->names);
  free(a->keep);
  free(a);
}

struct api_sweep_ask *api_sweep_ask(struct api_req *r, enum MHD_Result *ret)
{
  struct api_sweep_ask *a = calloc(1, sizeof(*a));
  struct tr_err err = { 0 };

  if (a == NULL) {
    *ret = api_reply_error(r, 500, "no_memory", NULL, "out of memory");
    return NULL;
  }
  if (api_query_check(r, &err) != 0 || api_query_csv(r, &a->csv, &err) != 0) {
    *ret = api_reply_tr_err(r, &err);
    api_sweep_ask_free(a);
    return NULL;
  }
  a->o = (struct store_sweep_opts){ r->api->cfg->sweep_knee_pct,
                                    r->api->cfg->regression_threshold_pct };
  a->epoch = api_cache_epoch(r->api->cache);
  return a;
}

/* When every point of points (the sweep object's) is final, the answer
 * is to be kept as made of their captures (a->keep): true when one is
 * kept already, replied in *ret. */
static bool kept_answer(struct api_req *r, struct api_sweep_ask *a,
                        json_t *points, enum MHD_Result *ret)
{
  size_t i, n = json_array_size(points);
  json_t *p;

  free(a->keep);
  a->keep = calloc(n ? n : 1, sizeof(*a->keep));
  a->nkeep = 0;
  json_array_foreach(points, i, p) {
    int status =
        tr_status_parse(json_string_value(json_object_get(p, "status")));

    if (a->keep == NULL || !tr_status_final(status)) {
      free(a->keep);
      a->keep = NULL;
      return false;
    }
    a->keep[a->nkeep++] = json_integer_value(json_object_get(p, "capture"));
  }
  return api_kept_of(r, a->keep, a->nkeep, ret);
}

enum MHD_Result api_sweep_scaling_reply(struct api_req *r,
                                        struct api_sweep_ask *a, json_t *points,
                                        api_slow_fn make)
{
  enum MHD_Result ret;
  bool kept = kept_answer(r, a, points, &ret);

  json_decref(points);
  if (!kept)
    return api_slow(r, make, a, api_sweep_ask_free);
  api_sweep_ask_free(a);
  return ret;
}

enum MHD_Result api_sweep_reply(struct api_req *r, const char *member)
{
  const struct api_made *m = api_slow_made(r);
  const struct api_sweep_ask *a = m->arg;

  if (m->rc != 0)
    return api_reply_tr_err(r, &m->err);
  return api_reply_rows_of(r, json_incref(m->out), member, a->csv, a->keep,
                           a->nkeep, a->epoch);
}

static int make_scaling(struct api_req *r, void *arg, json_t **out,
                        struct tr_err *err)
{
  const struct api_sweep_ask *a = arg;
  struct store *st = api_store(r, STORE_RO, err);

  return st == NULL ? err->code
                    : store_sweep_scaling(st, a->id, a->o.knee_pct, out, err);
}

/* A done sweep's scaling never changes (docs/SWEEPS.md): once every
 * point is final, the answer is kept, dropped when one of them is
 * deleted. */
enum MHD_Result api_get_sweep_scaling(struct api_req *r)
{
  struct api_sweep_ask *a;
  struct tr_err err = { 0 };
  enum MHD_Result ret;
  struct store *st;
  json_t *sweep = NULL, *points;

  if (api_slow_made(r) != NULL)
    return api_sweep_reply(r, "rows");
  if ((a = api_sweep_ask(r, &ret)) == NULL)
    return ret;
  if (api_path_sweep(r, &a->id, &err) != 0 ||
      (st = api_store(r, STORE_RO, &err)) == NULL ||
      store_sweep_get(st, a->id, &sweep, &err) != 0) {
    api_sweep_ask_free(a);
    return api_reply_tr_err(r, &err);
  }
  points = json_incref(json_object_get(sweep, "points"));
  json_decref(sweep);
  return api_sweep_scaling_reply(r, a, points, make_scaling);
}

static int make_compare(struct api_req *r, void *arg, json_t **out,
                        struct tr_err *err)
{
  const struct api_sweep_ask *a = arg;
  struct store *st = api_store(r, STORE_RO, err);

  return st == NULL ? err->code
                    : store_sweep_compare(st, a->id, a->to, &a->o, out, err);
}

/* Never kept: a point's verdict reads the history of its configuration
 * (docs/VERDICTS.md), which other captures change. */
enum MHD_Result api_get_sweep_compare(struct api_req *r)
{
  struct api_sweep_ask *a;
  struct tr_err err = { 0 };
  enum MHD_Result ret;

  if (api_slow_made(r) != NULL)
    return api_sweep_reply(r, "points");
  if ((a = api_sweep_ask(r, &ret)) == NULL)
    return ret;
  if (api_path_sweep(r, &a->id, &err) != 0 ||
      api_query_int(r, "to", 1, INT64_MAX, &a->to, &err) != 0) {
    api_sweep_ask_free(a);
    return api_reply_tr_err(r, &err);
  }
  if (a->to == 0) {
    api_sweep_ask_free(a);
    return api_reply_error(r, 400, "invalid", "to",
                           "to (the sweep to compare with) is required");
  }
  return api_slow(r, make_compare, a, api_sweep_ask_free);
}
