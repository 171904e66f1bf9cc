/*
 * Two sweeps compared (docs/SWEEPS.md): each done point of a judged
 * against the done point of b at the same concurrency, ISL and OSL, as
 * GET /captures/<id>/verdict?baseline= judges it (store/verdict.c), and
 * the fits both sweeps have side by side.
 */
#include <math.h>
#include <string.h>

#include "store/store_int.h"

#define CHANGES_MAX 5 /* a point's largest changes shown */

static bool same(json_t *p, json_t *q, const char *key)
{
  return json_equal(json_object_get(p, key), json_object_get(q, key));
}

static bool done(json_t *p)
{
  const char *status = json_string_value(json_object_get(p, "status"));

  return status != NULL && strcmp(status, "done") == 0;
}

/* b's done point at p's concurrency, ISL and OSL, or NULL. */
static json_t *match(json_t *points, json_t *p)
{
  size_t i;
  json_t *q;

  json_array_foreach(points, i, q) {
    if (done(q) && same(p, q, "conc") && same(p, q, "isl") && same(p, q, "osl"))
      return q;
  }
  return NULL;
}

/* One pair: the verdict of a's point against b's, its largest changes. */
static int pair(struct store *st, json_t *p, json_t *q, int threshold,
                json_t *out, struct tr_err *err)
{
  json_int_t a = json_integer_value(json_object_get(p, "capture"));
  json_int_t b = json_integer_value(json_object_get(q, "capture"));
  json_t *v = NULL, *changes = json_array(), *f;
  size_t i;
  int rc = store_verdict(st, a, b, threshold, &v, err);

  json_array_foreach(json_object_get(v, "figures"), i, f) {
    if (i < CHANGES_MAX)
      json_array_append(changes, f);
  }
  if (rc == 0)
    json_array_append_new(
        out,
        json_pack(
            "{s:O,s:O,s:O,s:I,s:I,s:O,s:O,s:O,s:o}", "conc",
            json_object_get(p, "conc"), "isl", json_object_get(p, "isl"), "osl",
            json_object_get(p, "osl"), "a_capture", a, "b_capture", b,
            "verdict", json_object_get(v, "verdict"), "a_output_throughput",
            json_object_get(p, "output_throughput"), "b_output_throughput",
            json_object_get(q, "output_throughput"), "changes", changes));
  else
    json_decref(changes);
  json_decref(v);
  return rc;
}

static int points_judged(struct store *st, json_t *pa, json_t *pb,
                         int threshold, json_t **out, struct tr_err *err)
{
  json_t *rows = json_array(), *p, *q;
  size_t i;
  int rc = 0;

  json_array_foreach(pa, i, p) {
    if (rc == 0 && done(p) && (q = match(pb, p)) != NULL)
      rc = pair(st, p, q, threshold, rows, err);
  }
  if (rc != 0) {
    json_decref(rows);
    return rc;
  }
  *out = rows;
  return 0;
}

static bool same_fit(json_t *r, json_t *s)
{
  return same(r, s, "isl") && same(r, s, "osl") && same(r, s, "figure") &&
         same(r, s, "name");
}

/* Every fit both have: its slope (and intercept) in each, and a's slope
 * over b's. */
static json_t *slopes(json_t *ra, json_t *rb)
{
  json_t *out = json_array(), *r, *s;
  size_t i, j;

  json_array_foreach(ra, i, r) {
    json_array_foreach(rb, j, s) {
      double x, y;

      if (!same_fit(r, s))
        continue;
      x = json_number_value(json_object_get(r, "b_ns_per_seq"));
      y = json_number_value(json_object_get(s, "b_ns_per_seq"));
      json_array_append_new(
          out,
          json_pack(
              "{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:o}", "isl",
              json_object_get(r, "isl"), "osl", json_object_get(r, "osl"),
              "figure", json_object_get(r, "figure"), "name",
              json_object_get(r, "name"), "a_a_ns", json_object_get(r, "a_ns"),
              "b_a_ns", json_object_get(s, "a_ns"), "a_b_ns_per_seq",
              json_object_get(r, "b_ns_per_seq"), "b_b_ns_per_seq",
              json_object_get(s, "b_ns_per_seq"), "ratio",
              store__sweep_num(y != 0 ? x / y : NAN, STORE__SWEEP_SHARE)));
    }
  }
  return out;
}

/* The comparison of two sweeps' scaling answers (borrowed): {points,
 * slopes}. */
static int compare(struct store *st, json_t *sa, json_t *sb, int threshold,
                   json_t **out, struct tr_err *err)
{
  json_t *points = NULL;
  int rc =
      points_judged(st, json_object_get(sa, "points"),
                    json_object_get(sb, "points"), threshold, &points, err);

  if (rc == 0)
    *out = json_pack(
        "{s:o,s:o}", "points", points, "slopes",
        slopes(json_object_get(sa, "rows"), json_object_get(sb, "rows")));
  return rc;
}

int store_sweep_compare(struct store *st, int64_t a, int64_t b,
                        const struct store_sweep_opts *o, json_t **out,
                        struct tr_err *err)
{
  json_t *sa = NULL, *sb = NULL, *cmp = NULL;
  int rc = a == b
               ? tr_err_set(err, TR_EINVAL, "to",
                            "to must be another sweep than %lld", (long long)a)
               : store_sweep_scaling(st, a, o->knee_pct, &sa, err);

  if (rc == 0 && (rc = store_sweep_scaling(st, b, o->knee_pct, &sb, err)) ==
                     TR_ENOTFOUND) {
    tr_err_clear(err);
    tr_err_set(err, rc, "to", "no sweep %lld", (long long)b);
  }
  if (rc == 0)
    rc = compare(st, sa, sb, o->threshold_pct, &cmp, err);
  if (rc == 0) {
    *out = json_pack("{s:I,s:I}", "a", (json_int_t)a, "b", (json_int_t)b);
    json_object_update_new(*out, cmp);
  }
  json_decref(sa);
  json_decref(sb);
  return rc;
}

int store_sweep_compare_of(struct store *st, json_t *a, json_t *b,
                           const struct store_sweep_opts *o, json_t **out,
                           struct tr_err *err)
{
  json_t *sa = NULL, *sb = NULL;
  int rc = store_sweep_scaling_of(st, a, o->knee_pct, &sa, err);

  if (rc == 0)
    rc = store_sweep_scaling_of(st, b, o->knee_pct, &sb, err);
  if (rc == 0)
    rc = compare(st, sa, sb, o->threshold_pct, out, err);
  json_decref(sa);
  json_decref(sb);
  return rc;
}
