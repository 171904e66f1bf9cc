/*
 * The verdict's figures judged (verdict.c gathers them): each figure's
 * difference between the baseline (a) and this capture (b) from its own
 * samples (capture_figures, figures.c), widened by the run-to-run spread
 * of its configuration's earlier captures, against max(threshold, its
 * noise band). docs/VERDICTS.md states the method; in short:
 *
 *   steps    when the two captures' steps line up (the same kinds,
 *            batch sizes and tokens in the same order: two runs of one
 *            benchmark with one seed), the figure step by step: l =
 *            ln(b / a) per step, D their 20% trimmed mean, its Yuen
 *            standard error, h - 1 degrees of freedom (at least
 *            MIN_PAIRS pairs; fewer: judged against the threshold);
 *   strata   else a figure's strata present on both sides with at least
 *            MIN_STEPS steps each (none: with at least 2, fewer degrees
 *            of freedom); weight w = n_a n_b / (n_a + n_b);
 *            R = sum w loc (20% trimmed means); D = ln(R_b / R_a);
 *            var D = sum w^2 se_b^2 / R_b^2 + sum w^2 se_a^2 / R_a^2,
 *            degrees of freedom by Welch-Satterthwaite;
 *   paired   profiler steps (a stratum each, "step=N"): l = ln(b / a) per
 *            step present on both sides; D their 20% trimmed mean, its
 *            Yuen standard error, h - 1 degrees of freedom;
 *   history  each earlier capture c of the configuration compared with a
 *            the same way (d_c, with its own variance v_c); with at least
 *            MIN_HISTORY of them, tau^2 = max(0, var(d_c) - mean(v_c))
 *            (the method of moments), adding 2 tau^2 to var D (both runs
 *            carry a run effect), with n - 1 degrees of freedom;
 *   decision q = Student's t quantile at two-sided ALPHA / m (m figures
 *            judged: Bonferroni), U = sqrt(var D); the interval
 *            exp(D -+ q U) - 1; regressed when it lies above 0 and the
 *            change exp(D) - 1 exceeds the threshold (improved: below 0,
 *            beyond minus the threshold). A figure without a measured
 *            noise (fewer steps) is judged on its per-step values against
 *            the threshold, or the history's band when there is one: its
 *            strata present on both sides, whatever their steps, weighed
 *            as above. A figure with no steps of the same work on both
 *            sides is not judged: steps as cut are no measure of work.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "store/store_int.h"
#include "store/verdict_int.h"

#define MIN_STEPS   8
#define MIN_PAIRS   3
#define MIN_HISTORY 3
#define ALPHA       0.05
#define MAX_BUCKETS 12 /* buckets listed with a change */
#define PAIR_PSTEP  1  /* pairs: profiler steps by their numbers */
#define PAIR_ORDER  2  /* pairs: steps that line up, in order */

/* ---- one comparison ---- */

struct cmp {
  bool measured;
  int paired; /* 0, PAIR_PSTEP (profiler steps by number), PAIR_ORDER */
  double d, var_a, var_b, df;
  size_t strata;
  json_t *buckets; /* [{stratum, n_baseline, n_value, baseline_ns,
                      value_ns}], largest weight first; NULL: not asked */
};

/* The rows of (figure, name) in fs: [*lo, *hi). */
static void range_of(const struct store__figstats *fs, const char *figure,
                     const char *name, size_t *lo, size_t *hi)
{
  size_t i = 0;

  while (i < fs->n && (strcmp(fs->v[i].figure, figure) != 0 ||
                       strcmp(fs->v[i].name, name) != 0))
    i++;
  *lo = i;
  while (i < fs->n && strcmp(fs->v[i].figure, figure) == 0 &&
         strcmp(fs->v[i].name, name) == 0)
    i++;
  *hi = i;
}

static bool is_pair(const char *stratum)
{
  return strstr(stratum, " step=") != NULL;
}

static int cmp_bucket(const void *x, const void *y)
{
  json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
  double wa = json_real_value(json_object_get(a, "weight"));
  double wb = json_real_value(json_object_get(b, "weight"));

  return (wa < wb) - (wa > wb);
}

/* The buckets compared, largest weight first, at most MAX_BUCKETS. */
static json_t *top_buckets(json_t *all)
{
  size_t n = json_array_size(all);
  json_t **v = calloc(n + 1, sizeof(*v)), *out = json_array();

  for (size_t i = 0; v != NULL && i < n; i++)
    v[i] = json_array_get(all, i);
  if (v != NULL)
    qsort(v, n, sizeof(*v), cmp_bucket);
  for (size_t i = 0; v != NULL && i < n && i < MAX_BUCKETS; i++) {
    json_t *b = json_deep_copy(v[i]);

    json_object_del(b, "weight");
    json_array_append_new(out, b);
  }
  free(v);
  json_decref(all);
  return out;
}

/* Advances *i and *j (both sorted by stratum) to the next stratum both
 * have; false when there is none. */
static bool next_match(const struct store__figstat *a, size_t na,
                       const struct store__figstat *b, size_t nb, size_t *i,
                       size_t *j)
{
  while (*i < na && *j < nb) {
    int o = strcmp(a[*i].stratum, b[*j].stratum);

    if (o == 0)
      return true;
    if (o < 0)
      ++*i;
    else
      ++*j;
  }
  return false;
}

static void note_bucket(json_t *all, const struct store__figstat *x,
                        const struct store__figstat *y, double w)
{
  if (all != NULL)
    json_array_append_new(
        all, json_pack("{s:s,s:I,s:I,s:I,s:I,s:f}", "stratum", x->stratum,
                       "n_baseline", (json_int_t)x->e.n, "n_value",
                       (json_int_t)y->e.n, "baseline_ns",
                       (json_int_t)llround(x->e.loc), "value_ns",
                       (json_int_t)llround(y->e.loc), "weight", w));
}

/* Strata compared side by side (both sorted by stratum): those with at
 * least min steps on both sides, and (se) a standard error on both, which
 * measures the noise; without (se false) every stratum both sides have,
 * judged without it. */
static void by_strata(const struct store__figstat *a, size_t na,
                      const struct store__figstat *b, size_t nb, size_t min,
                      bool se, struct cmp *c)
{
  double ra = 0, rb = 0, va = 0, vb = 0, den_a = 0, den_b = 0;
  size_t i = 0, j = 0;

  for (; next_match(a, na, b, nb, &i, &j); i++, j++) {
    const struct est *x = &a[i].e, *y = &b[j].e;
    double w, ca, cb;

    if (is_pair(a[i].stratum) || x->n < min || y->n < min ||
        (se && (!x->has_se || !y->has_se)) ||
        (x->loc <= 0 && y->loc <= 0)) /* none there: nothing to compare */
      continue;
    w = (double)x->n * (double)y->n / (double)(x->n + y->n);
    ra += w * x->loc;
    rb += w * y->loc;
    c->strata++;
    note_bucket(c->buckets, &a[i], &b[j], w);
    if (!se)
      continue;
    ca = w * w * x->se * x->se;
    cb = w * w * y->se * y->se;
    va += ca;
    vb += cb;
    den_a += ca * ca / x->df;
    den_b += cb * cb / y->df;
  }
  if (c->strata == 0 || ra <= 0 || rb <= 0) {
    c->strata = 0;
    return;
  }
  c->measured = se;
  c->d = log(rb / ra);
  c->var_a = va / (ra * ra);
  c->var_b = vb / (rb * rb);
  /* Satterthwaite over the per-stratum terms, each scaled by 1/R^2. */
  den_a /= ra * ra * ra * ra;
  den_b /= rb * rb * rb * rb;
  c->df = den_a + den_b > 0
              ? (c->var_a + c->var_b) * (c->var_a + c->var_b) / (den_a + den_b)
              : 1e9;
}

/* The paired differences l[0..m) (sorted in place) as the comparison. */
static void pairs_of(double *l, size_t m, int how, struct cmp *c)
{
  struct est e;

  if (m == 0)
    return;
  c->paired = how;
  c->strata = m;
  est_trimmed(l, m, &e);
  c->d = e.loc;
  /* Two pairs give a standard error on one degree of freedom: its t
   * quantile at ALPHA / m is in the hundreds, no band at all. */
  c->measured = e.has_se && m >= MIN_PAIRS;
  c->var_b = e.se * e.se; /* the pairs' spread holds both sides' noise */
  c->df = e.df;
}

/* Profiler steps compared pair by pair, by their numbers. */
static void by_pairs(const struct store__figstat *a, size_t na,
                     const struct store__figstat *b, size_t nb, struct cmp *c)
{
  double *l = calloc(na + 1, sizeof(*l));
  size_t i = 0, j = 0, m = 0;

  for (; l != NULL && next_match(a, na, b, nb, &i, &j); i++, j++)
    if (is_pair(a[i].stratum) && a[i].e.loc > 0 && b[j].e.loc > 0) {
      l[m++] = log(b[j].e.loc / a[i].e.loc);
      note_bucket(c->buckets, &a[i], &b[j], 1.0);
    }
  pairs_of(l, m, PAIR_PSTEP, c);
  free(l);
}

/* Steps that line up compared pair by pair, in order. */
static void by_steps(const struct store__steps *a, const struct store__steps *b,
                     const char *figure, const char *name, struct cmp *c)
{
  double *l = calloc(a->n + 1, sizeof(*l));

  if (l != NULL)
    pairs_of(l, store__steps_pairs(a, b, figure, name, l), PAIR_ORDER, c);
  free(l);
}

/* Figure (figure, name) of b against a: step by step when their steps
 * line up (sa, sb: NULL when they do not), else by strata. */
static void compare(const struct store__figstats *fa,
                    const struct store__figstats *fb,
                    const struct store__steps *sa,
                    const struct store__steps *sb, const char *figure,
                    const char *name, bool buckets, struct cmp *c)
{
  size_t la, ha, lb, hb;

  *c = (struct cmp){ .buckets = buckets ? json_array() : NULL };
  range_of(fa, figure, name, &la, &ha);
  range_of(fb, figure, name, &lb, &hb);
  if (sa != NULL && sb != NULL)
    by_steps(sa, sb, figure, name, c);
  if (c->paired == 0 && la < ha && is_pair(fa->v[la].stratum))
    by_pairs(fa->v + la, ha - la, fb->v + lb, hb - lb, c);
  else if (c->paired == 0)
    by_strata(fa->v + la, ha - la, fb->v + lb, hb - lb, MIN_STEPS, true, c);
  /* Too few steps for a bucket: the strata with a noise of their own
   * (fewer degrees of freedom: a wider band), else like for like alone. */
  for (int few = 0; few < 2 && c->strata == 0 && c->paired == 0; few++) {
    json_decref(c->buckets);
    c->buckets = buckets ? json_array() : NULL;
    by_strata(fa->v + la, ha - la, fb->v + lb, hb - lb, few ? 1 : 2, !few, c);
  }
  if (c->buckets != NULL)
    c->buckets = top_buckets(c->buckets);
}

/* ---- the history ---- */

/* tau^2 of the figure among the earlier captures, and how many counted. */
static double history_tau2(const struct store__judge *j, const char *figure,
                           const char *name, bool measured, size_t *used)
{
  double sum = 0, sq = 0, v = 0;
  size_t n = 0;

  for (size_t h = 0; h < j->nhist; h++) {
    struct cmp c;

    compare(j->a, &j->hist[h], j->sa, j->hist_lined[h] ? &j->shist[h] : NULL,
            figure, name, false, &c);
    /* An unmeasured figure still has a spread of single pairs. */
    if (c.strata == 0 || (measured && !c.measured))
      continue;
    sum += c.d;
    sq += c.d * c.d;
    v += c.var_b;
    n++;
  }
  *used = n;
  if (n < MIN_HISTORY)
    return 0;
  sq = (sq - sum * sum / (double)n) / (double)(n - 1);
  return fmax(0.0, sq - v / (double)n);
}

/* ---- judging ---- */

static double pct_of(double logratio)
{
  return 100.0 * expm1(logratio);
}

static double round3(double x) /* a percentage's 3 decimals */
{
  return tr_round(x, 3);
}

/* Measures f: its comparison, and the history's widening. */
static void measure(const struct store__judge *j, struct store__vfig *f)
{
  struct cmp c;
  size_t used = 0;

  compare(j->a, j->b, j->lined ? j->sa : NULL, j->lined ? j->sb : NULL, f->stat,
          f->name, true, &c);
  f->buckets = c.buckets;
  f->strata = c.strata;
  f->paired = c.paired;
  f->measured = c.measured;
  f->judged = c.strata > 0;
  f->d = f->judged ? c.d : 0;
  f->var = c.measured ? c.var_a + c.var_b : 0;
  f->df = c.measured ? c.df : 0;
  f->tau2 = j->nhist > 0 && f->judged
                ? history_tau2(j, f->stat, f->name, c.measured, &used)
                : 0;
  f->history = used >= MIN_HISTORY ? used : 0;
  if (f->history > 0) {
    double h = 2 * f->tau2, df_h = (double)f->history - 1;
    double den =
        (f->var > 0 ? f->var * f->var / f->df : 0) + (h > 0 ? h * h / df_h : 0);

    f->df = den > 0 ? (f->var + h) * (f->var + h) / den : 1e9;
    f->var += h;
  }
}

static const char *band_source(const struct store__vfig *f)
{
  if (!f->judged)
    return "none";
  if (f->var <= 0)
    return f->history ? "history" : "threshold";
  if (f->history)
    return f->measured ? "steps+history" : "history";
  return f->paired ? "pairs" : "steps";
}

static void band_note(const struct store__vfig *f, double noise, int threshold,
                      char *buf, size_t size)
{
  const char *what = f->paired == PAIR_ORDER ? "steps paired in order"
                     : f->paired
                         ? (f->strata == 1 ? "profiler step" : "profiler steps")
                     : f->strata == 1 ? "bucket"
                                      : "buckets";
  char band[32];

  if (noise < 0.01)
    snprintf(band, sizeof(band), "band <0.01%%");
  else
    snprintf(band, sizeof(band), "band %.3g%%", noise);
  if (!f->judged)
    snprintf(buf, size,
             "not judged: no steps of the same work (kind and batch size) "
             "on both sides");
  else if (f->var <= 0 && f->history)
    snprintf(buf, size,
             "%s from %zu earlier captures (no spread of its own: too few "
             "steps)",
             band, f->history);
  else if (f->var <= 0)
    snprintf(buf, size,
             "band %d%% (the threshold): too few steps to measure its "
             "noise%s",
             threshold,
             f->history ? ""
                        : ", and no earlier captures of this configuration");
  else if (f->history)
    snprintf(buf, size,
             "%s from the spread of its steps (%zu %s) and from %zu earlier "
             "captures",
             band, f->strata, what, f->history);
  else
    snprintf(buf, size, "%s from the spread of its steps (%zu %s)", band,
             f->strata, what);
}

/* Decides f among m judged figures; true when it is a change. */
static bool decide(struct store__vfig *f, size_t m, int threshold)
{
  double u = sqrt(f->var);
  double q = u > 0 ? est_t_two_sided(ALPHA / (double)(m ? m : 1), f->df) : 0;
  double lo = f->d - q * u, hi = f->d + q * u;

  f->quantile = q;
  f->diff_pct = pct_of(f->d);
  f->lo_pct = pct_of(lo);
  f->hi_pct = pct_of(hi);
  f->noise_pct = pct_of(q * u);
  if (f->a < 0 || f->b < 0) /* only on one side: a change of unknown size */
    f->change = f->a < 0 ? 1 : -1;
  else if (lo > 0 && f->diff_pct > threshold)
    f->change = 1;
  else if (hi < 0 && f->diff_pct < -threshold)
    f->change = -1;
  else
    f->change = 0;
  return f->change != 0;
}

static json_t *ns_or_null(double v)
{
  return v >= 0 ? json_integer((json_int_t)llround(v)) : json_null();
}

const char *store__vfig_method(const struct store__vfig *f)
{
  return !f->judged                ? "none"
         : f->paired == PAIR_ORDER ? "paired_steps"
         : f->paired               ? "pairs"
         : f->measured             ? "buckets"
                                   : "per_step";
}

json_t *store__vfig_json(const struct store__vfig *f, int threshold, bool full)
{
  bool known = f->a > 0 && f->b >= 0;
  double band = fmax(f->noise_pct, (double)threshold);
  char note[256];
  json_t *o = json_pack(
      "{s:s,s:s,s:o,s:o,s:o,s:f,s:s}", "figure", f->figure, "name", f->name,
      "baseline", ns_or_null(f->a), "value", ns_or_null(f->b), "delta_pct",
      known ? json_real(round3((f->b - f->a) * 100.0 / f->a)) : json_null(),
      "band_pct", round3(band), "change",
      f->change > 0   ? "regressed"
      : f->change < 0 ? "improved"
                      : "unchanged");

  if (f->a < 0 || f->b < 0)
    return o;
  band_note(f, f->noise_pct, threshold, note, sizeof(note));
  json_object_set_new(o, "diff_pct",
                      f->judged ? json_real(round3(f->diff_pct)) : json_null());
  json_object_set_new(
      o, "ci_pct",
      f->judged ? json_pack("[f,f]", round3(f->lo_pct), round3(f->hi_pct))
                : json_null());
  json_object_set_new(o, "noise_pct",
                      f->judged ? json_real(round3(f->noise_pct))
                                : json_null());
  json_object_set_new(o, "band_source", json_string(band_source(f)));
  json_object_set_new(o, "band_note", json_string(note));
  if (!full)
    return o;
  json_object_set_new(o, "method", json_string(store__vfig_method(f)));
  json_object_set_new(o, "quantile", json_real(round3(f->quantile)));
  json_object_set_new(o, "history_captures",
                      json_integer((json_int_t)f->history));
  json_object_set_new(o, "buckets_compared",
                      json_integer((json_int_t)f->strata));
  json_object_set_new(o, "buckets", json_incref(f->buckets));
  return o;
}

size_t store__judge_run(const struct store__judge *j, struct store__vfig *v,
                        size_t n)
{
  size_t changes = 0;

  for (size_t i = 0; i < n; i++)
    if (v[i].a >= 0 && v[i].b >= 0)
      measure(j, &v[i]);
  for (size_t i = 0; i < n; i++)
    changes += decide(&v[i], n, j->threshold);
  return changes;
}
