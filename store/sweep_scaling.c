/*
 * What scales across a sweep's points (docs/SWEEPS.md, "What scales, from
 * the points"): made from the done points' stored rows, so that a lab
 * view makes the same figures from its copies.
 *
 * Samples: each rank's kept decode steps (step_samples of kinds decode
 * and eager_decode, warm-up left out, with a label's bs), the device time
 * of every figure the rank tracks in them (sample_figures), and the steps'
 * critical paths (critical_steps, at most PATHS_PER_RANK a rank: every
 * stride-th). They are kept by batch size as counts, means and sums of
 * squared deviations (Welford's), from which every fit is exact: the
 * least squares over the samples themselves, and over any run of batch
 * sizes for the piecewise fits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lifecycle.h"
#include "common/reals.h"
#include "store/store_int.h"

#define PATHS_PER_RANK 4096 /* critical paths read per rank, at most */
#define VALS_MAX       256  /* values of a sample read, at most */
#define STOPS_MAX      10   /* families in "what stops scaling" */

/* The samples of one batch size. */
struct grp {
  int64_t x, n;
  double mean, m2;
};

/* One figure's samples, by batch size ascending. */
struct series {
  char *figure, *name;
  struct grp *g;
  size_t n, cap;
};

/* A scenario's figures. */
struct scen {
  int64_t isl, osl;
  struct series *s;
  size_t n, cap;
};

struct scaling {
  struct scen *sc;
  size_t n;
};

/* The sums of a fit over groups [lo, hi) of a series. */
struct sums {
  double n, x, y, sxx, sxy, syy;
};

struct fit {
  bool ok; /* at least two batch sizes */
  double a, b, sse, syy, se_b;
  int64_t n;
};

/* ---- the precision of its figures ---- */

json_t *store__sweep_num(double v, enum store__sweep_unit unit)
{
  static const int decimals[] = {
#define XX(unit, places) [STORE__SWEEP_##unit] = places,
    STORE__SWEEP_UNITS(XX)
#undef XX
  };

  if (!isfinite(v))
    return json_null();
  /* A whole number of ns as an integer: written as a real, 6528160.0
   * would read 6.52816e+06 (common/reals.h). */
  if (unit == STORE__SWEEP_NS)
    return json_integer((json_int_t)llround(v));
  return json_real(tr_round(v, decimals[unit]));
}

/* The short names of the units, for the rows below. */
static json_t *fig_ns(double v)
{
  return store__sweep_num(v, STORE__SWEEP_NS);
}

static json_t *fig_slope(double v)
{
  return store__sweep_num(v, STORE__SWEEP_SLOPE);
}

static json_t *fig_share(double v)
{
  return store__sweep_num(v, STORE__SWEEP_SHARE);
}

/* ---- gathering ---- */

static void grp_add(struct grp *g, double y)
{
  double d = y - g->mean;

  g->n++;
  g->mean += d / (double)g->n;
  g->m2 += d * (y - g->mean);
}

static int series_add(struct series *s, int64_t x, double y)
{
  size_t lo = 0, hi = s->n;

  while (lo < hi) {
    size_t mid = (lo + hi) / 2;

    if (s->g[mid].x < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == s->n || s->g[lo].x != x) {
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 16;
      struct grp *g = realloc(s->g, cap * sizeof(*g));

      if (g == NULL)
        return TR_ENOMEM;
      s->g = g;
      s->cap = cap;
    }
    memmove(&s->g[lo + 1], &s->g[lo], (s->n - lo) * sizeof(*s->g));
    s->g[lo] = (struct grp){ x, 0, 0, 0 };
    s->n++;
  }
  grp_add(&s->g[lo], y);
  return 0;
}

static struct series *series_of(struct scen *sc, const char *figure,
                                const char *name)
{
  struct series *s;

  for (size_t i = 0; i < sc->n; i++)
    if (strcmp(sc->s[i].figure, figure) == 0 &&
        strcmp(sc->s[i].name, name) == 0)
      return &sc->s[i];
  if (sc->n == sc->cap) {
    size_t cap = sc->cap ? 2 * sc->cap : 32;

    if ((s = realloc(sc->s, cap * sizeof(*s))) == NULL)
      return NULL;
    sc->s = s;
    sc->cap = cap;
  }
  s = &sc->s[sc->n];
  *s = (struct series){ strdup(figure), strdup(name), NULL, 0, 0 };
  if (s->figure == NULL || s->name == NULL) {
    free(s->figure);
    free(s->name);
    return NULL;
  }
  sc->n++;
  return s;
}

static struct scen *scen_of(struct scaling *sg, int64_t isl, int64_t osl)
{
  struct scen *sc;

  for (size_t i = 0; i < sg->n; i++)
    if (sg->sc[i].isl == isl && sg->sc[i].osl == osl)
      return &sg->sc[i];
  if ((sc = realloc(sg->sc, (sg->n + 1) * sizeof(*sc))) == NULL)
    return NULL;
  sg->sc = sc;
  sc = &sg->sc[sg->n++];
  *sc = (struct scen){ isl, osl, NULL, 0, 0 };
  return sc;
}

static void scaling_free(struct scaling *sg)
{
  for (size_t i = 0; i < sg->n; i++) {
    for (size_t j = 0; j < sg->sc[i].n; j++) {
      free(sg->sc[i].s[j].figure);
      free(sg->sc[i].s[j].name);
      free(sg->sc[i].s[j].g);
    }
    free(sg->sc[i].s);
  }
  free(sg->sc);
}

/* ---- reading a point's ranks ---- */

/* The integers of a stored values array ("[1,2,3]": the indexer writes
 * plain decimal integers), at most max. By hand: strtoll()'s locale and
 * base handling was a third of the answer's time over 10 million
 * values. */
static size_t parse_vals(const char *t, int64_t *v, size_t max)
{
  size_t n = 0;

  while (t != NULL && *t != '\0' && n < max) {
    bool neg = *t == '-';
    int64_t x = 0;

    if (neg)
      t++;
    if (*t < '0' || *t > '9') {
      t += *t != '\0';
      continue;
    }
    while (*t >= '0' && *t <= '9')
      x = x * 10 + (*t++ - '0');
    v[n++] = neg ? -x : x;
  }
  return n;
}

/* What a point adds to its summary row. */
struct point_sums {
  int64_t samples, bs_sum, paths, launch_bound;
};

/* A rank's tracked figures, each with its series in the scenario (an
 * index into sc->s: the series are all made before the rank's samples
 * are read, so none moves meanwhile; -1: a kernel, not fitted). */
struct rank_figs {
  char **figure, **name;
  size_t n;
  long at[VALS_MAX];
  bool category[VALS_MAX];
  long step, idle;
};

static void figs_free(struct rank_figs *f)
{
  for (size_t i = 0; i < f->n; i++) {
    free(f->figure[i]);
    free(f->name[i]);
  }
  free(f->figure);
  free(f->name);
}

static long series_at(struct scen *sc, const char *figure, const char *name)
{
  struct series *s = series_of(sc, figure, name);

  return s != NULL ? (long)(s - sc->s) : -2;
}

/* Each figure's series, made where missing; TR_ENOMEM when one cannot
 * be. */
static int figs_resolve(struct scen *sc, struct rank_figs *f)
{
  f->step = series_at(sc, "step", "decode");
  f->idle = series_at(sc, "idle", "decode");
  for (size_t i = 0; i < f->n; i++) {
    f->category[i] = strcmp(f->figure[i], "category") == 0;
    f->at[i] = strcmp(f->figure[i], "kernel") == 0
                   ? -1
                   : series_at(sc, f->figure[i], f->name[i]);
    if (f->at[i] == -2)
      return TR_ENOMEM;
  }
  return f->step < 0 || f->idle < 0 ? TR_ENOMEM : 0;
}

/* The rank's tracked figures by index. */
static int rank_figs(struct store *st, int64_t rank_id, struct rank_figs *f,
                     struct tr_err *err)
{
  sqlite3_stmt *s = NULL;
  int rc = store__stmt_id(st,
                          "SELECT figure, name FROM sample_figures"
                          " WHERE rank_id = ?1 ORDER BY idx",
                          rank_id, 0, &s, err);

  while (rc == 0 && sqlite3_step(s) == SQLITE_ROW && f->n < VALS_MAX) {
    char **fg = realloc(f->figure, (f->n + 1) * sizeof(*fg));
    char **nm = fg ? realloc(f->name, (f->n + 1) * sizeof(*nm)) : NULL;

    if (fg != NULL)
      f->figure = fg;
    if (nm == NULL) {
      rc = tr_err_set(err, TR_ENOMEM, "", "scaling: out of memory");
      break;
    }
    f->name = nm;
    f->figure[f->n] = strdup((const char *)sqlite3_column_text(s, 0));
    f->name[f->n] = strdup((const char *)sqlite3_column_text(s, 1));
    f->n++;
  }
  store__done(s);
  return rc;
}

/* One decode step: its duration, each category and family, and the time
 * its device records do not cover (idle: the step less its categories'
 * device time, at least 0). */
static int add_sample(struct scen *sc, const struct rank_figs *f, int64_t bs,
                      int64_t dur, const int64_t *v, size_t nv)
{
  int64_t busy = 0;
  int rc = series_add(&sc->s[f->step], bs, (double)dur);

  for (size_t i = 0; rc == 0 && i < nv && i < f->n; i++) {
    if (f->at[i] < 0)
      continue;
    if (f->category[i])
      busy += v[i];
    rc = series_add(&sc->s[f->at[i]], bs, (double)v[i]);
  }
  if (rc == 0)
    rc = series_add(&sc->s[f->idle], bs, (double)(dur > busy ? dur - busy : 0));
  return rc;
}

static int rank_samples(struct store *st, int64_t rank_id, struct scen *sc,
                        struct point_sums *ps, struct tr_err *err)
{
  struct rank_figs f = { 0 };
  int64_t v[VALS_MAX];
  sqlite3_stmt *s = NULL;
  int rc = rank_figs(st, rank_id, &f, err);

  if (rc == 0)
    rc = figs_resolve(sc, &f);
  if (rc == 0)
    rc = store__stmt_id(st,
                        "SELECT bs, dur_ns, vals FROM step_samples"
                        " WHERE rank_id = ?1 AND kind IN ('decode',"
                        " 'eager_decode') AND bs IS NOT NULL AND warmup = 0"
                        " ORDER BY kind, ordinal",
                        rank_id, 0, &s, err);
  while (rc == 0 && sqlite3_step(s) == SQLITE_ROW) {
    int64_t bs = sqlite3_column_int64(s, 0);
    size_t nv =
        parse_vals((const char *)sqlite3_column_text(s, 2), v, VALS_MAX);

    rc = add_sample(sc, &f, bs, sqlite3_column_int64(s, 1), v, nv);
    ps->samples++;
    ps->bs_sum += bs;
  }
  store__done(s);
  figs_free(&f);
  return rc == TR_ENOMEM ? tr_err_set(err, rc, "", "scaling: out of memory")
                         : rc;
}

/* The real batch size of a run label ("decode[bs=5/8 ..." is 5), or -1. */
static int64_t label_bs(const char *label)
{
  const char *at = label != NULL ? strstr(label, "bs=") : NULL;
  char *end;
  long long v = at != NULL ? strtoll(at + 3, &end, 10) : -1;

  return at != NULL && end != at + 3 && v > 0 ? v : -1;
}

/* The decode steps' critical paths: the host's part (its CPU ops and the
 * launch delays) and the device's, against the batch. */
static int rank_paths(struct store *st, int64_t rank_id, struct scen *sc,
                      struct point_sums *ps, struct tr_err *err)
{
  sqlite3_stmt *s = NULL;
  int64_t count = 0, stride;
  long h = -1, d = -1;
  int rc = store__stmt_id(st,
                          "SELECT count(*) FROM critical_steps WHERE"
                          " rank_id = ?1 AND step IN ('decode',"
                          " 'eager_decode') AND status = 'ok'",
                          rank_id, 0, &s, err);

  if (rc == 0 && sqlite3_step(s) == SQLITE_ROW)
    count = sqlite3_column_int64(s, 0);
  if (rc == 0)
    store__done(s);
  stride = count / PATHS_PER_RANK + 1;
  if (rc == 0)
    rc = store__stmt_id(st,
                        "SELECT label, cpu_ns + launch_ns, gpu_ns FROM"
                        " critical_steps WHERE rank_id = ?1 AND step IN"
                        " ('decode', 'eager_decode') AND status = 'ok'"
                        " AND idx % ?2 = 0 ORDER BY idx",
                        rank_id, (int)stride, &s, err);
  if (rc == 0 && ((h = series_at(sc, "path", "host")) < 0 ||
                  (d = series_at(sc, "path", "device")) < 0))
    rc = TR_ENOMEM;
  while (rc == 0 && sqlite3_step(s) == SQLITE_ROW) {
    int64_t bs = label_bs((const char *)sqlite3_column_text(s, 0));
    int64_t host = sqlite3_column_int64(s, 1), dev = sqlite3_column_int64(s, 2);

    if (bs < 0)
      continue;
    rc = series_add(&sc->s[h], bs, (double)host);
    if (rc == 0)
      rc = series_add(&sc->s[d], bs, (double)dev);
    ps->paths++;
    ps->launch_bound += host > dev;
  }
  store__done(s);
  return rc == TR_ENOMEM ? tr_err_set(err, rc, "", "scaling: out of memory")
                         : rc;
}

/* A done point's ranks into its scenario; its summary into pt. */
static int load_point(struct store *st, struct scaling *sg, json_t *pt,
                      struct tr_err *err)
{
  struct scen *sc = scen_of(sg, json_integer_value(json_object_get(pt, "isl")),
                            json_integer_value(json_object_get(pt, "osl")));
  struct point_sums ps = { 0 };
  json_t *ranks = NULL, *r;
  sqlite3_stmt *s;
  size_t i;
  int rc =
      sc != NULL
          ? store__stmt_id(st,
                           "SELECT id FROM ranks WHERE capture_id = ?1 AND"
                           " status = 'done' ORDER BY rank",
                           json_integer_value(json_object_get(pt, "capture")),
                           0, &s, err)
          : tr_err_set(err, TR_ENOMEM, "", "out of memory");

  if (rc == 0)
    rc = store__rows(st, s, &ranks, err);
  json_array_foreach(ranks, i, r) {
    int64_t id = json_integer_value(json_object_get(r, "id"));

    if (rc == 0)
      rc = rank_samples(st, id, sc, &ps, err);
    if (rc == 0)
      rc = rank_paths(st, id, sc, &ps, err);
  }
  json_decref(ranks);
  json_object_set_new(pt, "decode_samples", json_integer(ps.samples));
  json_object_set_new(
      pt, "bs_mean",
      store__sweep_num(ps.samples ? (double)ps.bs_sum / (double)ps.samples
                                  : NAN,
                       STORE__SWEEP_BS));
  json_object_set_new(
      pt, "launch_bound_share",
      fig_share(ps.paths ? (double)ps.launch_bound / (double)ps.paths : NAN));
  return rc;
}

/* ---- fitting ---- */

/* The least squares of groups [lo, hi): centred sums (the groups' own
 * spread is their m2), so that nothing cancels at large times. */
static struct fit fit_range(const struct series *s, size_t lo, size_t hi)
{
  struct sums t = { 0 };
  struct fit f = { 0 };
  double mx, my;

  for (size_t i = lo; i < hi; i++) {
    t.n += (double)s->g[i].n;
    t.x += (double)s->g[i].n * (double)s->g[i].x;
    t.y += (double)s->g[i].n * s->g[i].mean;
  }
  if (t.n == 0)
    return f;
  mx = t.x / t.n;
  my = t.y / t.n;
  for (size_t i = lo; i < hi; i++) {
    double n = (double)s->g[i].n, dx = (double)s->g[i].x - mx;
    double dy = s->g[i].mean - my;

    t.sxx += n * dx * dx;
    t.sxy += n * dx * dy;
    t.syy += s->g[i].m2 + n * dy * dy;
  }
  f.n = (int64_t)t.n;
  f.syy = t.syy;
  f.ok = hi - lo >= 2 && t.sxx > 0;
  f.b = f.ok ? t.sxy / t.sxx : 0;
  f.a = my - f.b * mx;
  f.sse = f.ok ? t.syy - f.b * t.sxy : t.syy;
  f.sse = f.sse > 0 ? f.sse : 0;
  f.se_b = f.ok && t.n > 2 ? sqrt(f.sse / (t.n - 2) / t.sxx) : NAN;
  return f;
}

/* The fit of a + b x + d max(0, x - c) over every sample: two lines
 * meeting at c (a hinge), from the groups' centred sums. ok false when the
 * hinge is not identified (too few batch sizes on a side). */
static struct fit hinge_at(const struct series *s, int64_t c, double *d)
{
  struct fit f = { 0 };
  double n = 0, mx = 0, mh = 0, my = 0, sxx = 0, sxh = 0, shh = 0, sxy = 0,
         shy = 0, syy = 0, det;

  for (size_t i = 0; i < s->n; i++) {
    double w = (double)s->g[i].n, x = (double)s->g[i].x;

    n += w;
    mx += w * x;
    mh += w * (x > (double)c ? x - (double)c : 0);
    my += w * s->g[i].mean;
  }
  mx /= n;
  mh /= n;
  my /= n;
  for (size_t i = 0; i < s->n; i++) {
    double w = (double)s->g[i].n, dx = (double)s->g[i].x - mx;
    double dh =
        ((double)s->g[i].x > (double)c ? (double)(s->g[i].x - c) : 0) - mh;
    double dy = s->g[i].mean - my;

    sxx += w * dx * dx;
    sxh += w * dx * dh;
    shh += w * dh * dh;
    sxy += w * dx * dy;
    shy += w * dh * dy;
    syy += s->g[i].m2 + w * dy * dy;
  }
  det = sxx * shh - sxh * sxh;
  f.ok = det > 1e-9 * sxx * shh;
  f.b = f.ok ? (sxy * shh - shy * sxh) / det : 0;
  *d = f.ok ? (sxx * shy - sxh * sxy) / det : 0;
  f.a = my - f.b * mx - *d * mh;
  f.sse = syy - f.b * sxy - *d * shy;
  f.sse = f.sse > 0 ? f.sse : 0;
  f.syy = syy;
  f.n = (int64_t)n;
  return f;
}

/* Where one line does not hold: the hinge (two lines meeting at a batch
 * size sampled, at least two batch sizes on each side) that leaves the
 * least residual, kept when that is at most half the line's; NULL
 * otherwise. */
static json_t *piecewise(const struct series *s, const struct fit *line)
{
  struct fit best = { 0 }, h;
  double d, best_d = 0;
  int64_t at = 0;

  for (size_t k = 1; k + 2 < s->n; k++) {
    h = hinge_at(s, s->g[k].x, &d);
    if (h.ok && (at == 0 || h.sse < best.sse)) {
      best = h;
      best_d = d;
      at = s->g[k].x;
    }
  }
  if (at == 0 || !(line->sse > 0) || best.sse > line->sse / 2)
    return NULL;
  return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o}", "break_bs", (json_int_t)at,
                   "a1_ns", fig_ns(best.a), "b1_ns_per_seq", fig_slope(best.b),
                   "a2_ns", fig_ns(best.a - best_d * (double)at),
                   "b2_ns_per_seq", fig_slope(best.b + best_d), "r2_piecewise",
                   fig_share(line->syy > 0 ? 1 - best.sse / line->syy : NAN));
}

/* The samples a fit is made of, by batch size: [[bs, n, mean_ns]]. */
static json_t *by_bs(const struct series *s)
{
  json_t *out = json_array();

  for (size_t i = 0; i < s->n; i++)
    json_array_append_new(out, json_pack("[I,I,o]", (json_int_t)s->g[i].x,
                                         (json_int_t)s->g[i].n,
                                         fig_ns(s->g[i].mean)));
  return out;
}

/* One row of the scaling table. */
static json_t *fit_row(const struct scen *sc, const struct series *s)
{
  struct fit f = fit_range(s, 0, s->n);
  json_t *pw = f.ok ? piecewise(s, &f) : NULL;
  json_t *row = json_pack(
      "{s:I,s:I,s:s,s:s,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "isl",
      (json_int_t)sc->isl, "osl", (json_int_t)sc->osl, "figure", s->figure,
      "name", s->name, "n", (json_int_t)f.n, "bs_min", (json_int_t)s->g[0].x,
      "bs_max", (json_int_t)s->g[s->n - 1].x, "a_ns", fig_ns(f.a),
      "b_ns_per_seq", fig_slope(f.ok ? f.b : NAN), "r2",
      fig_share(f.ok && f.syy > 0 ? 1 - f.sse / f.syy : NAN), "se_b_ns",
      fig_slope(f.se_b), "rmse_ns",
      fig_ns(f.n > 2 && f.ok ? sqrt(f.sse / (double)(f.n - 2)) : NAN));

  json_t *rest = pw != NULL ? pw
                            : json_pack("{s:n,s:n,s:n,s:n,s:n,s:n}", "break_bs",
                                        "a1_ns", "b1_ns_per_seq", "a2_ns",
                                        "b2_ns_per_seq", "r2_piecewise");

  json_object_update_missing(row, rest);
  json_decref(rest);
  json_object_set_new(row, "by_bs", by_bs(s));
  return row;
}

static double fit_at(const struct fit *f, double x)
{
  return f->a + f->b * x;
}

/* ---- what stops scaling ---- */

static const struct series *find(const struct scen *sc, const char *figure,
                                 const char *name)
{
  for (size_t i = 0; i < sc->n; i++)
    if (sc->s[i].n > 0 && strcmp(sc->s[i].figure, figure) == 0 &&
        strcmp(sc->s[i].name, name) == 0)
      return &sc->s[i];
  return NULL;
}

static int by_growth(const void *x, const void *y)
{
  double a = json_real_value(json_object_get(*(json_t *const *)x, "growth"));
  double b = json_real_value(json_object_get(*(json_t *const *)y, "growth"));

  return (a < b) - (a > b);
}

/* The families whose share of the step (their fit over the step's, at the
 * smallest and the largest batch) grows most, largest first. */
static json_t *stops_scaling(const struct scen *sc, const struct series *step)
{
  struct fit fs = fit_range(step, 0, step->n);
  double lo = (double)step->g[0].x, hi = (double)step->g[step->n - 1].x;
  json_t *all = json_array(), *out = json_array();
  size_t n = 0;

  for (size_t i = 0; fs.ok && i < sc->n; i++) {
    struct fit f;
    double s_lo, s_hi;

    if (strcmp(sc->s[i].figure, "family") != 0 || sc->s[i].n == 0 ||
        !(f = fit_range(&sc->s[i], 0, sc->s[i].n)).ok || fit_at(&fs, lo) <= 0 ||
        fit_at(&fs, hi) <= 0)
      continue;
    s_lo = fit_at(&f, lo) / fit_at(&fs, lo);
    s_hi = fit_at(&f, hi) / fit_at(&fs, hi);
    json_array_append_new(
        all, json_pack("{s:s,s:o,s:o,s:o}", "name", sc->s[i].name, "share_lo",
                       fig_share(s_lo), "share_hi", fig_share(s_hi), "growth",
                       fig_share(s_hi - s_lo)));
  }
  json_t **v = calloc(json_array_size(all) + 1, sizeof(*v));

  for (size_t i = 0; v != NULL && i < json_array_size(all); i++)
    v[n++] = json_array_get(all, i);
  if (v != NULL)
    qsort(v, n, sizeof(*v), by_growth);
  for (size_t i = 0; v != NULL && i < n && i < STOPS_MAX; i++)
    json_array_append(out, v[i]);
  free(v);
  json_decref(all);
  return out;
}

/* Where the decode step's critical path crosses from the host's side
 * (launch-bound) to the device's (compute-bound): the batch size where
 * the two fits meet, within the range sampled; null otherwise. */
static json_t *crossover(const struct scen *sc)
{
  const struct series *h = find(sc, "path", "host");
  const struct series *d = find(sc, "path", "device");
  struct fit fh, fd;
  double lo, hi, x;

  if (h == NULL || d == NULL)
    return json_pack("{s:n,s:n,s:n}", "crossover_bs", "launch_bound_at_min",
                     "launch_bound_at_max");
  fh = fit_range(h, 0, h->n);
  fd = fit_range(d, 0, d->n);
  lo = (double)h->g[0].x;
  hi = (double)h->g[h->n - 1].x;
  x = fh.ok && fd.ok && fd.b != fh.b ? (fh.a - fd.a) / (fd.b - fh.b) : NAN;
  return json_pack(
      "{s:o,s:b,s:b}", "crossover_bs",
      store__sweep_num(x >= lo && x <= hi ? x : NAN, STORE__SWEEP_BS),
      "launch_bound_at_min", fit_at(&fh, lo) > fit_at(&fd, lo),
      "launch_bound_at_max", fit_at(&fh, hi) > fit_at(&fd, hi));
}

/* ---- the curve and its knee ---- */

/* The last concurrency whose next point gains at least pct% of output
 * throughput per doubling, when a later point gains less; null while it
 * still scales at the largest. */
static json_t *knee(json_t *points, const struct scen *sc, int pct)
{
  json_t *prev = NULL, *p;
  size_t i;

  json_array_foreach(points, i, p) {
    double t = json_number_value(json_object_get(p, "output_throughput"));

    if (json_integer_value(json_object_get(p, "isl")) != sc->isl ||
        json_integer_value(json_object_get(p, "osl")) != sc->osl || !(t > 0) ||
        strcmp(json_string_value(json_object_get(p, "status")), "done") != 0)
      continue;
    if (prev != NULL) {
      double t0 = json_number_value(json_object_get(prev, "output_throughput"));
      double c0 = (double)json_integer_value(json_object_get(prev, "conc"));
      double c1 = (double)json_integer_value(json_object_get(p, "conc"));
      double gain = pow(t / t0, 1 / log2(c1 / c0)) - 1;

      if (gain * 100 < pct)
        return json_pack("{s:O,s:o,s:O}", "conc", json_object_get(prev, "conc"),
                         "gain_pct",
                         store__sweep_num(gain * 100, STORE__SWEEP_PCT),
                         "next_conc", json_object_get(p, "conc"));
    }
    prev = p;
  }
  return json_null();
}

/* ---- the answer ---- */

static json_t *scenario_json(const struct scen *sc, json_t *points, int pct)
{
  const struct series *step = find(sc, "step", "decode");
  json_t *out = json_pack("{s:I,s:I,s:o}", "isl", (json_int_t)sc->isl, "osl",
                          (json_int_t)sc->osl, "knee", knee(points, sc, pct));

  json_object_set_new(out, "stops_scaling",
                      step != NULL ? stops_scaling(sc, step) : json_array());
  json_object_update_new(out, crossover(sc));
  return out;
}

/* The answer of points (taken), inside the caller's read snapshot. */
static int scaling_of(struct store *st, json_t *points, int knee_pct,
                      json_t **out, struct tr_err *err)
{
  struct scaling sg = { 0 };
  json_t *rows = json_array(), *scens = json_array(), *p;
  size_t i;
  int rc = 0;

  json_array_foreach(points, i, p) {
    if (rc == 0 &&
        strcmp(json_string_value(json_object_get(p, "status")), "done") == 0)
      rc = load_point(st, &sg, p, err);
  }
  for (size_t k = 0; rc == 0 && k < sg.n; k++) {
    for (size_t j = 0; j < sg.sc[k].n; j++)
      if (sg.sc[k].s[j].n > 0) /* made for a rank without such samples */
        json_array_append_new(rows, fit_row(&sg.sc[k], &sg.sc[k].s[j]));
    json_array_append_new(scens, scenario_json(&sg.sc[k], points, knee_pct));
  }
  scaling_free(&sg);
  if (rc != 0) {
    json_decref(points);
    json_decref(rows);
    json_decref(scens);
    return rc;
  }
  *out = json_pack("{s:i,s:o,s:o,s:o}", "knee_pct", knee_pct, "points", points,
                   "scenarios", scens, "rows", rows);
  return 0;
}

/* The answer of points (taken) when got, how reading them went, is 0;
 * ends the caller's read snapshot. */
static int scaling_in(struct store *st, int got, json_t *points, int knee_pct,
                      json_t **out, struct tr_err *err)
{
  if (got == 0)
    got = scaling_of(st, points, knee_pct, out, err);
  else
    json_decref(points);
  return store__rd_end(st, got, err);
}

int store_sweep_scaling(struct store *st, int64_t id, int knee_pct,
                        json_t **out, struct tr_err *err)
{
  json_t *points = NULL, *p = NULL;
  int rc = store__rd_begin(st, err);

  if (rc == 0)
    rc = store__row_id(st, "SELECT id FROM sweeps WHERE id = ?1", id, &p, err);
  if (rc == 0 && p == NULL)
    rc = tr_err_set(err, TR_ENOTFOUND, "sweep", "no sweep %lld", (long long)id);
  json_decref(p);
  if (rc == 0)
    rc = store_sweep_points(st, id, &points, err);
  rc = scaling_in(st, rc, points, knee_pct, out, err);
  if (rc == 0)
    json_object_set_new(*out, "sweep", json_integer(id));
  return rc;
}

int store_sweep_scaling_of(struct store *st, json_t *ids, int knee_pct,
                           json_t **out, struct tr_err *err)
{
  json_t *points = NULL;
  int rc = store__rd_begin(st, err);

  if (rc == 0)
    rc = store_sweep_points_of(st, ids, &points, err);
  return scaling_in(st, rc, points, knee_pct, out, err);
}
