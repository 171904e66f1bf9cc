/*
 * A sweep's points (docs/SWEEPS.md). ATOM's CI resolves a variant's
 * scenarios in .github/scripts/catalog.py: the variant's "scenarios",
 * else the model's, else the file's "default_scenarios" (:148), each
 * scenario's "concurrency" list kept between the variant's conc_min and
 * conc_max (defaults 0 and 256, :65-68) and a scenario left with none
 * dropped (:152-156); its random_range_ratio defaults to 0.8 (:70).
 */
#include "atom/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atom/options.h"
#include "atom/request.h"
#include "common/lifecycle.h"

/* catalog.py's DEFAULT_CONC_MIN, DEFAULT_CONC_MAX and DEFAULT_RATIO. */
#define CI_CONC_MIN 0
#define CI_CONC_MAX 256
#define CI_RATIO    0.8

const char *const atom_sweep_scenarios[] = { "ci", NULL };

static int int_or(json_t *obj, const char *key, long long dflt)
{
  json_t *v = json_object_get(obj, key);

  return (int)(json_is_integer(v) ? json_integer_value(v) : dflt);
}

static void add_point(json_t *out, int isl, int osl, int conc, json_t *ratio)
{
  json_t *p = json_pack("{s:i,s:i,s:i}", "isl", isl, "osl", osl, "conc", conc);

  if (ratio != NULL)
    json_object_set(p, "ratio", ratio);
  json_array_append_new(out, p);
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;

  return (x > y) - (x < y);
}

/* The request's own ladder: each concurrency within conc's range of
 * TR_REQUEST_MAP, none twice, ascending. */
static int own_ladder(json_t *req, json_t *ladder, json_t *out,
                      struct tr_err *err)
{
  const struct tr_member *m = tr_member_find("conc");
  size_t n = json_array_size(ladder), i;
  int *v = calloc(n + 1, sizeof(*v));
  json_t *c;
  int rc = 0;

  if (v == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  json_array_foreach(ladder, i, c) {
    if (rc == 0 && (!json_is_integer(c) || json_integer_value(c) < m->lo ||
                    json_integer_value(c) > m->hi))
      rc = tr_err_set(err, TR_EINVAL, "conc",
                      "conc[%zu] must be an integer from %lld to %lld", i,
                      m->lo, m->hi);
    v[i] = (int)json_integer_value(c);
  }
  qsort(v, n, sizeof(*v), cmp_int);
  for (i = 1; rc == 0 && i < n; i++)
    if (v[i] == v[i - 1])
      rc = tr_err_set(err, TR_EINVAL, "conc", "conc gives %d twice", v[i]);
  for (i = 0; rc == 0 && i < n; i++)
    add_point(out, int_or(req, "isl", tr_member_find("isl")->dflt),
              int_or(req, "osl", tr_member_find("osl")->dflt), v[i], NULL);
  free(v);
  return rc;
}

/* One scenario of the preset, bounded by the variant's band, into out;
 * skipped when the request names another isl or osl. */
static void ci_scenario(json_t *req, json_t *sc, int lo, int hi, json_t *out)
{
  const struct tr_member *m = tr_member_find("conc");
  int isl = int_or(sc, "isl", 0), osl = int_or(sc, "osl", 0);
  json_t *ratio = json_object_get(sc, "random_range_ratio"), *c;
  json_t *dflt = json_real(CI_RATIO);
  size_t i;

  if (int_or(req, "isl", isl) != isl || int_or(req, "osl", osl) != osl ||
      isl < 1 || osl < 1) {
    json_decref(dflt);
    return;
  }
  json_array_foreach(json_object_get(sc, "concurrency"), i, c) {
    long long v = json_integer_value(c);

    if (json_is_integer(c) && v >= lo && v <= hi && v >= m->lo && v <= m->hi)
      add_point(out, isl, osl, (int)v, json_is_number(ratio) ? ratio : dflt);
  }
  json_decref(dflt);
}

/* "1024/1024, 8192/1024": the pairs of the scenarios, for a refusal. */
static void pairs_of(json_t *scenarios, char *buf, size_t size)
{
  size_t used = 0, i;
  json_t *sc;

  buf[0] = '\0';
  json_array_foreach(scenarios, i, sc) {
    if (used < size)
      used +=
          (size_t)snprintf(buf + used, size - used, "%s%d/%d", used ? ", " : "",
                           int_or(sc, "isl", 0), int_or(sc, "osl", 0));
  }
}

/* ATOM CI's scenarios of the request's model and variant. */
static int ci_ladder(const struct cfg *cfg, json_t *req, json_t *out,
                     struct tr_err *err)
{
  struct tr_preset pre = { 0 };
  char pairs[256];
  size_t i;
  json_t *sc;
  int lo, hi, rc = atom_request_preset(cfg, req, &pre, err);

  if (rc == 0)
    rc = tr_err_set(err, TR_EINVAL, "scenario",
                    "scenario \"ci\" takes ATOM CI's scenarios from the "
                    "model's entry in models.json, and %s has none",
                    json_string_value(json_object_get(req, "model")));
  if (rc < 0)
    return rc;
  lo = int_or(pre.variant, "conc_min", CI_CONC_MIN);
  hi = int_or(pre.variant, "conc_max", CI_CONC_MAX);
  json_array_foreach(pre.scenarios, i, sc)
    ci_scenario(req, sc, lo, hi, out);
  rc = 0;
  if (json_array_size(out) == 0) {
    pairs_of(pre.scenarios, pairs, sizeof(pairs));
    rc = tr_err_set(
        err, TR_EINVAL, json_object_get(req, "isl") ? "isl" : "scenario",
        "no scenario of %s's preset runs a concurrency between "
        "%d and %d at the ISL/OSL asked for (its pairs: %s)",
        pre.match ? pre.match : "the model", lo, hi, pairs[0] ? pairs : "none");
  }
  tr_preset_free(&pre);
  return rc;
}

int atom_sweep_points(const struct cfg *cfg, json_t *req, json_t **out,
                      struct tr_err *err)
{
  json_t *ladder = json_object_get(req, "conc");
  json_t *scenario = json_object_get(req, "scenario");
  json_t *points = json_array();
  int rc;

  if (ladder != NULL && scenario != NULL)
    rc = tr_err_set(err, TR_EINVAL, "scenario",
                    "give conc (a ladder) or scenario, not both");
  else if (scenario != NULL)
    rc = ci_ladder(cfg, req, points, err);
  else if (json_is_array(ladder) && json_array_size(ladder) > 0)
    rc = own_ladder(req, ladder, points, err);
  else
    rc = tr_err_set(err, TR_EINVAL, "conc",
                    "a sweep needs conc, a ladder of concurrencies "
                    "([4, 8, 16]), or scenario \"ci\"");
  if (rc == 0 && json_array_size(points) > (size_t)cfg->sweep_points_max)
    rc = tr_err_set(err, TR_EINVAL, scenario ? "scenario" : "conc",
                    "the sweep has %zu points; at most %d "
                    "(sweep_points_max)",
                    json_array_size(points), cfg->sweep_points_max);
  if (rc != 0) {
    json_decref(points);
    return rc;
  }
  *out = points;
  return 0;
}

json_t *atom_sweep_point(json_t *base, json_t *pt)
{
  json_t *p = json_deep_copy(base), *args, *w;
  json_t *ratio = json_object_get(pt, "ratio");
  char **words, text[32];
  size_t i, n = 0;

  if (p == NULL)
    return NULL;
  json_object_set(p, "isl", json_object_get(pt, "isl"));
  json_object_set(p, "osl", json_object_get(pt, "osl"));
  json_object_set(p, "conc", json_object_get(pt, "conc"));
  if (!json_is_number(ratio))
    return p;
  args = json_object_get(p, "bench_args");
  if (!json_is_array(args))
    json_object_set_new(p, "bench_args", args = json_array());
  words = calloc(json_array_size(args) + 1, sizeof(*words));
  if (words == NULL) {
    json_decref(p);
    return NULL;
  }
  json_array_foreach(args, i, w)
    words[n++] = (char *)json_string_value(w);
  if (!tr_atom_opt_given(TR_ATOM_BENCH, words, "--random-range-ratio")) {
    snprintf(text, sizeof(text), "%g", json_number_value(ratio));
    json_array_append_new(args, json_string("--random-range-ratio"));
    json_array_append_new(args, json_string(text));
  }
  free(words);
  return p;
}
