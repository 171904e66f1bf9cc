/*
 * A capture's figures by stratum (capture_figures, schema step 6): what a
 * verdict compares and what the history of a configuration is made of
 * (verdict.c). Made once at the finish from the ranks' single steps
 * (step_samples, index/agg/agg_samples.c); docs/VERDICTS.md states the method.
 *
 * Figures: each real kind's step time ("step", the kind), and each
 * category, family and kernel every rank tracked, as its device time in a
 * step.
 *
 * Ranks: a kind whose kept steps are the same on every rank (ordinals,
 * bs, tok and profiler step alike: the ranks of one TP group run the same
 * steps) is one set of steps: a step's figure is its ranks' sum, its time
 * the slowest rank's. Otherwise each rank is estimated alone and the
 * estimates combined: sums of locations with the variances added
 * (independence assumed), the step time the slowest rank's.
 *
 * Strata: the steady steps (warm-up left out) of a kind, by its batch
 * size: "tok" where its labels carry tok= beyond bs= (prefill, and
 * speculative decode's several tokens a sequence), else "bs", else one
 * stratum; buckets exact up to 4, then four to a power of two (5, 6, 7,
 * 8, 9-10, ..., 33-40, 41-48, ...); profiler steps are a stratum each
 * ("step=N"), compared pair by pair (verdict.c).
 *
 * In each stratum: the steps counted (n), the 20% trimmed mean and Yuen's
 * standard error with h - 1 degrees of freedom (store/estimate.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/estimate.h"
#include "store/store_int.h"

struct fig { /* a figure tracked by every rank */
  char *type, *name;
};

struct smp { /* one kept step of one rank, or of the ranks merged */
  char *kind;
  int64_t ordinal, step, bs, tok, dur;
  int warmup;
  double *vals; /* [nfig] by the common figures' index */
  int stratum;  /* index into the kind's strata; -1: warm-up */
};

struct rank_set {
  struct smp *v;
  size_t n;
};

struct capset {
  struct fig *figs;
  size_t nfig;
  struct rank_set *r;
  size_t nranks;
};

/* ---- loading ---- */

static void capset_free(struct capset *c)
{
  for (size_t i = 0; i < c->nfig; i++) {
    free(c->figs[i].type);
    free(c->figs[i].name);
  }
  for (size_t r = 0; r < c->nranks; r++) {
    for (size_t i = 0; i < c->r[r].n; i++) {
      free(c->r[r].v[i].kind);
      free(c->r[r].v[i].vals);
    }
    free(c->r[r].v);
  }
  free(c->figs);
  free(c->r);
}

static char *col_dup(sqlite3_stmt *s, int i)
{
  const char *t = (const char *)sqlite3_column_text(s, i);

  return strdup(t ? t : "");
}

static bool fig_eq(json_t *row, const char *type, const char *name)
{
  return strcmp(json_string_value(json_object_get(row, "figure")), type) == 0 &&
         strcmp(json_string_value(json_object_get(row, "name")), name) == 0;
}

/* The figures every rank tracks (rank 0's order); map[r][i]: rank r's
 * figure i in them, or -1. */
static int common_figs(struct capset *c, json_t **figs, int **map)
{
  size_t n0 = json_array_size(figs[0]);

  c->figs = calloc(n0 + 1, sizeof(*c->figs));
  if (c->figs == NULL)
    return TR_ENOMEM;
  for (size_t i = 0; i < n0; i++) {
    json_t *f = json_array_get(figs[0], i);
    const char *type = json_string_value(json_object_get(f, "figure"));
    const char *name = json_string_value(json_object_get(f, "name"));
    bool everywhere = true;

    for (size_t r = 1; everywhere && r < c->nranks; r++) {
      bool found = false;

      for (size_t j = 0; !found && j < json_array_size(figs[r]); j++)
        if (fig_eq(json_array_get(figs[r], j), type, name)) {
          found = true;
          map[r][j] = (int)c->nfig;
        }
      everywhere = found;
    }
    if (!everywhere)
      continue;
    map[0][i] = (int)c->nfig;
    c->figs[c->nfig].type = strdup(type);
    c->figs[c->nfig++].name = strdup(name);
  }
  return 0;
}

static int64_t col_opt(sqlite3_stmt *s, int i)
{
  return sqlite3_column_type(s, i) == SQLITE_NULL ? -1
                                                  : sqlite3_column_int64(s, i);
}

/* What fill_smp() makes a rank's step row with. */
struct smp_ctx {
  const int *map; /* the rank's figure index -> the common one, or -1 */
  size_t nfig;
};

/* A store__fill_fn: a step of a rank, its values in common order. */
static int fill_smp(sqlite3_stmt *s, void *elem, void *ud)
{
  const struct smp_ctx *cx = ud;
  json_t *vals = store__col_json(s, 7);
  struct smp *x = elem;
  int rc = 1;

  *x = (struct smp){ col_dup(s, 0),
                     sqlite3_column_int64(s, 1),
                     col_opt(s, 2),
                     col_opt(s, 3),
                     col_opt(s, 4),
                     sqlite3_column_int64(s, 5),
                     sqlite3_column_int(s, 6),
                     calloc(cx->nfig + 1, sizeof(double)),
                     -1 };
  if (x->kind == NULL || x->vals == NULL)
    rc = TR_ENOMEM;
  for (size_t i = 0; rc == 1 && i < json_array_size(vals); i++)
    if (cx->map[i] >= 0)
      x->vals[cx->map[i]] = (double)json_integer_value(json_array_get(vals, i));
  json_decref(vals);
  return rc;
}

/* Rank r's steps, by kind and ordinal, their values in common order. */
static int rank_steps(struct store *st, int64_t rank_id, struct capset *c,
                      size_t r, const int *map, struct tr_err *err)
{
  struct smp_ctx cx = { map, c->nfig };
  void *v = NULL;
  int rc = store__collect_id(st,
                             "SELECT kind, ordinal, step, bs, tok, dur_ns,"
                             " warmup, vals FROM step_samples WHERE"
                             " rank_id = ?1 ORDER BY kind, ordinal",
                             rank_id, sizeof(struct smp), fill_smp, &cx,
                             "figures", &v, &c->r[r].n, err);

  c->r[r].v = v; /* capset_free() frees it, on error too */
  return rc;
}

static int capset_load(struct store *st, int64_t id, struct capset *c,
                       struct tr_err *err)
{
  json_t *ids = NULL, **figs = NULL;
  int **map = NULL, rc = store__rows_id(st,
                                        "SELECT id FROM ranks WHERE"
                                        " capture_id = ?1 AND status = 'done'"
                                        " ORDER BY rank",
                                        id, 0, &ids, err);

  memset(c, 0, sizeof(*c));
  c->nranks = json_array_size(ids);
  if (rc == 0 && c->nranks > 0) {
    figs = calloc(c->nranks, sizeof(*figs));
    map = calloc(c->nranks, sizeof(*map));
    c->r = calloc(c->nranks, sizeof(*c->r));
    rc = figs && map && c->r ? 0 : TR_ENOMEM;
  }
  for (size_t r = 0; rc == 0 && r < c->nranks; r++) {
    int64_t rid =
        json_integer_value(json_object_get(json_array_get(ids, r), "id"));

    /* The rank's tracked figures, [{figure, name}] by index. */
    rc = store__rows_id(st,
                        "SELECT figure, name FROM sample_figures"
                        " WHERE rank_id = ?1 ORDER BY idx",
                        rid, 0, &figs[r], err);
    if (rc == 0 &&
        (map[r] = malloc((json_array_size(figs[r]) + 1) * sizeof(int))) == NULL)
      rc = TR_ENOMEM;
    for (size_t j = 0; rc == 0 && j <= json_array_size(figs[r]); j++)
      map[r][j] = -1;
  }
  if (rc == 0 && c->nranks > 0)
    rc = common_figs(c, figs, map);
  for (size_t r = 0; rc == 0 && r < c->nranks; r++)
    rc = rank_steps(
        st, json_integer_value(json_object_get(json_array_get(ids, r), "id")),
        c, r, map[r], err);
  for (size_t r = 0; figs && map && r < c->nranks; r++) {
    json_decref(figs[r]);
    free(map[r]);
  }
  free(figs);
  free(map);
  json_decref(ids);
  c->nranks = c->r ? c->nranks : 0;
  return rc == TR_ENOMEM ? tr_err_set(err, rc, "", "figures: out of memory")
                         : rc;
}

/* ---- strata ---- */

/* The bucket [lo, hi] of v >= 1: exact to 4, then four to a power of 2. */
static void bucket_of(int64_t v, int64_t *lo, int64_t *hi)
{
  int e;
  int64_t w, k;

  if (v <= 4) {
    *lo = *hi = v;
    return;
  }
  e = 63 - __builtin_clzll((uint64_t)(v - 1)); /* 2^e < v <= 2^(e+1) */
  w = (int64_t)1 << (e - 2);
  k = (v - ((int64_t)1 << e) - 1) / w;
  *lo = ((int64_t)1 << e) + k * w + 1;
  *hi = *lo + w - 1;
}

enum dim { DIM_ONE, DIM_BS, DIM_TOK, DIM_STEP };

static enum dim kind_dim(const struct smp *const *v, size_t n)
{
  enum dim d = DIM_ONE;

  for (size_t i = 0; i < n; i++) {
    if (v[i]->step >= 0)
      return DIM_STEP;
    if (v[i]->tok >= 1 && (v[i]->bs < 1 || v[i]->tok > v[i]->bs))
      d = DIM_TOK;
    else if (v[i]->bs >= 1 && d == DIM_ONE)
      d = DIM_BS;
  }
  return d;
}

static void stratum_name(const struct smp *x, enum dim d, char *buf,
                         size_t size)
{
  int64_t v = d == DIM_TOK ? x->tok : x->bs, lo, hi;

  if (d == DIM_STEP) {
    snprintf(buf, size, "%s step=%" PRId64, x->kind, x->step);
  } else if (d == DIM_ONE || v < 1) {
    snprintf(buf, size, "%s", x->kind);
  } else {
    bucket_of(v, &lo, &hi);
    if (lo == hi)
      snprintf(buf, size, "%s %s=%" PRId64, x->kind,
               d == DIM_TOK ? "tok" : "bs", lo);
    else
      snprintf(buf, size, "%s %s=%" PRId64 "-%" PRId64, x->kind,
               d == DIM_TOK ? "tok" : "bs", lo, hi);
  }
}

/* ---- one kind ---- */

/* The steps of one kind: a group per rank, or one of the ranks merged. */
struct kind_work {
  const struct capset *c;
  const char *kind;
  struct smp **g; /* g[k]: group k's steps */
  size_t *gn, ngroups;
  struct smp *merged; /* owned when the ranks were merged */
  char **strata;      /* distinct stratum names */
  size_t nstrata;
  enum dim dim;
  double *buf; /* values of one stratum of one group */
};

static bool same_step(const struct smp *a, const struct smp *b)
{
  return a->ordinal == b->ordinal && a->step == b->step && a->bs == b->bs &&
         a->tok == b->tok;
}

/* Merges the ranks' steps of the kind when they are the same steps. */
static int try_merge(struct kind_work *w)
{
  size_t n = w->gn[0];

  for (size_t r = 1; r < w->ngroups; r++) {
    if (w->gn[r] != n)
      return 0;
    for (size_t i = 0; i < n; i++)
      if (!same_step(&w->g[0][i], &w->g[r][i]))
        return 0;
  }
  if (w->ngroups < 2)
    return 0;
  if ((w->merged = calloc(n + 1, sizeof(*w->merged))) == NULL)
    return TR_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    struct smp *m = &w->merged[i];

    *m = w->g[0][i];
    if ((m->vals = calloc(w->c->nfig + 1, sizeof(double))) == NULL)
      return TR_ENOMEM;
    for (size_t r = 0; r < w->ngroups; r++) {
      const struct smp *x = &w->g[r][i];

      m->dur = x->dur > m->dur ? x->dur : m->dur;
      m->warmup |= x->warmup;
      for (size_t f = 0; f < w->c->nfig; f++)
        m->vals[f] += x->vals[f];
    }
  }
  w->g[0] = w->merged;
  w->ngroups = 1;
  return 0;
}

static int stratum_index(struct kind_work *w, const char *name)
{
  size_t i;
  char **v;

  for (i = 0; i < w->nstrata; i++)
    if (strcmp(w->strata[i], name) == 0)
      return (int)i;
  if ((v = realloc(w->strata, (i + 1) * sizeof(*v))) == NULL)
    return TR_ENOMEM;
  w->strata = v;
  if ((w->strata[i] = strdup(name)) == NULL)
    return TR_ENOMEM;
  w->nstrata++;
  return (int)i;
}

static int assign_strata(struct kind_work *w)
{
  size_t total = 0, k = 0;
  const struct smp **all;
  enum dim d;
  char name[256];

  for (size_t g = 0; g < w->ngroups; g++)
    total += w->gn[g];
  if ((all = calloc(total + 1, sizeof(*all))) == NULL)
    return TR_ENOMEM;
  for (size_t g = 0; g < w->ngroups; g++)
    for (size_t i = 0; i < w->gn[g]; i++)
      all[k++] = &w->g[g][i];
  d = w->dim = kind_dim((const struct smp *const *)all, total);
  free(all);
  for (size_t g = 0; g < w->ngroups; g++)
    for (size_t i = 0; i < w->gn[g]; i++) {
      struct smp *x = &w->g[g][i];
      int s;

      if (x->warmup)
        continue;
      stratum_name(x, d, name, sizeof(name));
      if ((s = stratum_index(w, name)) < 0)
        return s;
      x->stratum = s;
    }
  return 0;
}

/* The estimate of figure f (-1: the step time) in stratum s of group g. */
static void group_est(struct kind_work *w, size_t g, int f, int s,
                      struct est *out)
{
  size_t n = 0;

  for (size_t i = 0; i < w->gn[g]; i++)
    if (w->g[g][i].stratum == s)
      w->buf[n++] = f < 0 ? (double)w->g[g][i].dur : w->g[g][i].vals[f];
  est_trimmed(w->buf, n, out);
}

/* The groups' estimates as one: summed (f >= 0, the variances added and
 * Welch-Satterthwaite's degrees of freedom) or the slowest rank's (the
 * step time); false when a group has no step there. */
static bool combine(struct kind_work *w, int f, int s, struct est *out)
{
  double num = 0, den = 0;

  for (size_t g = 0; g < w->ngroups; g++) {
    struct est e;

    group_est(w, g, f, s, &e);
    if (e.n == 0)
      return false;
    if (g == 0 || (f < 0 && e.loc > out->loc)) {
      if (g == 0 || f < 0)
        *out = e;
    } else if (f >= 0) {
      out->loc += e.loc;
      out->se = sqrt(out->se * out->se + e.se * e.se);
      out->n = e.n < out->n ? e.n : out->n;
      out->has_se &= e.has_se;
    }
    if (f >= 0 && e.has_se && e.se > 0) {
      num += e.se * e.se;
      den += e.se * e.se * e.se * e.se / e.df;
    }
  }
  if (f >= 0 && w->ngroups > 1)
    out->df = den > 0 ? num * num / den : out->df;
  return true;
}

static int write_row(struct store *st, int64_t id, const char *type,
                     const char *name, const char *stratum, const struct est *e,
                     struct tr_err *err)
{
  /* se and df stay null without a standard error. */
  return store__run(st, "figures",
                    "INSERT INTO capture_figures(capture_id, figure, name,"
                    " stratum, n, loc, se, df)"
                    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    err, e->has_se ? "%ld%s%s%s%ld%f%f%f" : "%ld%s%s%s%ld%f",
                    id, type, name, stratum, (int64_t)e->n, e->loc, e->se,
                    e->df);
}

/* Each figure in each stratum. Steps of another batch size did other
 * work: no stratum pools them (a verdict compares like with like). */
static int write_kind(struct store *st, int64_t id, struct kind_work *w,
                      struct tr_err *err)
{
  int rc = 0;

  for (int f = -1; rc == 0 && f < (int)w->c->nfig; f++)
    for (int s = 0; rc == 0 && s < (int)w->nstrata; s++) {
      struct est e;

      if (combine(w, f, s, &e))
        rc = write_row(st, id, f < 0 ? "step" : w->c->figs[f].type,
                       f < 0 ? w->kind : w->c->figs[f].name, w->strata[s], &e,
                       err);
    }
  return rc;
}

static void kind_work_free(struct kind_work *w)
{
  for (size_t i = 0; w->merged && i < w->gn[0]; i++)
    free(w->merged[i].vals);
  for (size_t i = 0; i < w->nstrata; i++)
    free(w->strata[i]);
  free(w->merged);
  free(w->strata);
  free(w->g);
  free(w->gn);
  free(w->buf);
}

/* The kind of rank 0's step at *at (its run of that kind) on every rank. */
static int one_kind(struct store *st, int64_t id, const struct capset *c,
                    const char *kind, struct tr_err *err)
{
  struct kind_work w = { .c = c, .kind = kind };
  size_t most = 0;
  int rc = 0;

  w.g = calloc(c->nranks, sizeof(*w.g));
  w.gn = calloc(c->nranks, sizeof(*w.gn));
  if (w.g == NULL || w.gn == NULL)
    rc = TR_ENOMEM;
  for (size_t r = 0; rc == 0 && r < c->nranks; r++) {
    size_t i = 0;

    while (i < c->r[r].n && strcmp(c->r[r].v[i].kind, kind) != 0)
      i++;
    w.g[r] = c->r[r].v + i;
    while (i + w.gn[r] < c->r[r].n &&
           strcmp(c->r[r].v[i + w.gn[r]].kind, kind) == 0)
      w.gn[r]++;
    most = w.gn[r] > most ? w.gn[r] : most;
  }
  w.ngroups = c->nranks;
  if (rc == 0)
    rc = try_merge(&w);
  if (rc == 0 && (w.buf = calloc(most + 1, sizeof(double))) == NULL)
    rc = TR_ENOMEM;
  if (rc == 0)
    rc = assign_strata(&w);
  if (rc == 0)
    rc = write_kind(st, id, &w, err);
  kind_work_free(&w);
  return rc == TR_ENOMEM ? tr_err_set(err, rc, "", "figures: out of memory")
                         : rc;
}

int store__figures_write(struct store *st, int64_t id, struct tr_err *err)
{
  struct capset c;
  int rc = capset_load(st, id, &c, err);

  /* Rank 0 names the kinds (every kind is on every rank of a TP group; a
   * kind missing on a rank leaves that rank's group empty: no estimate). */
  for (size_t i = 0; rc == 0 && c.nranks > 0 && i < c.r[0].n; i++)
    if (i == 0 || strcmp(c.r[0].v[i].kind, c.r[0].v[i - 1].kind) != 0)
      rc = one_kind(st, id, &c, c.r[0].v[i].kind, err);
  capset_free(&c);
  return rc;
}

/* ---- the steps one by one ---- */

void store__steps_free(struct store__steps *s)
{
  for (size_t i = 0; i < s->nfig; i++) {
    free(s->type[i]);
    free(s->name[i]);
  }
  for (size_t i = 0; i < s->n; i++) {
    free(s->v[i].kind);
    free(s->v[i].vals);
  }
  free(s->type);
  free(s->name);
  free(s->v);
  memset(s, 0, sizeof(*s));
}

/* Whether every rank kept the same steps as rank 0 (same_step, same
 * kinds): the ranks of one TP group. */
static bool ranks_agree(const struct capset *c)
{
  for (size_t r = 1; r < c->nranks; r++) {
    if (c->r[r].n != c->r[0].n)
      return false;
    for (size_t i = 0; i < c->r[0].n; i++)
      if (!same_step(&c->r[0].v[i], &c->r[r].v[i]) ||
          strcmp(c->r[0].v[i].kind, c->r[r].v[i].kind) != 0)
        return false;
  }
  return true;
}

/* The ranks' steps merged into out (the ranks agree). */
static int steps_merge(struct capset *c, struct store__steps *out)
{
  size_t n = c->r[0].n;

  out->type = calloc(c->nfig + 1, sizeof(*out->type));
  out->name = calloc(c->nfig + 1, sizeof(*out->name));
  out->v = calloc(n + 1, sizeof(*out->v));
  if (out->type == NULL || out->name == NULL || out->v == NULL)
    return TR_ENOMEM;
  for (; out->nfig < c->nfig; out->nfig++) { /* taken from c */
    out->type[out->nfig] = c->figs[out->nfig].type;
    out->name[out->nfig] = c->figs[out->nfig].name;
    c->figs[out->nfig].type = c->figs[out->nfig].name = NULL;
  }
  for (; out->n < n; out->n++) {
    const struct smp *x = &c->r[0].v[out->n];
    struct store__step *m = &out->v[out->n];

    *m = (struct store__step){ .kind = strdup(x->kind),
                               .ordinal = x->ordinal,
                               .step = x->step,
                               .bs = x->bs,
                               .tok = x->tok,
                               .vals = calloc(c->nfig + 1, sizeof(double)) };
    if (m->kind == NULL || m->vals == NULL) {
      out->n++;
      return TR_ENOMEM;
    }
    for (size_t r = 0; r < c->nranks; r++) {
      const struct smp *y = &c->r[r].v[out->n];

      m->dur = y->dur > m->dur ? y->dur : m->dur;
      m->warmup |= y->warmup != 0;
      for (size_t f = 0; f < c->nfig; f++)
        m->vals[f] += y->vals[f];
    }
  }
  return 0;
}

int store__steps_load(struct store *st, int64_t id, struct store__steps *out,
                      struct tr_err *err)
{
  struct capset c;
  int rc = capset_load(st, id, &c, err);

  memset(out, 0, sizeof(*out));
  if (rc == 0 && c.nranks > 0 && ranks_agree(&c))
    rc = steps_merge(&c, out);
  capset_free(&c);
  if (rc < 0)
    store__steps_free(out);
  return rc == TR_ENOMEM ? tr_err_set(err, rc, "", "figures: out of memory")
                         : rc;
}

bool store__steps_line_up(const struct store__steps *a,
                          const struct store__steps *b)
{
  if (a->n == 0 || a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++) {
    const struct store__step *x = &a->v[i], *y = &b->v[i];

    if (strcmp(x->kind, y->kind) != 0 || x->ordinal != y->ordinal ||
        x->step != y->step || x->bs != y->bs || x->tok != y->tok)
      return false;
  }
  return true;
}

/* The index of figure (type, name) in s; -1: not tracked. */
static long fig_index(const struct store__steps *s, const char *type,
                      const char *name)
{
  for (size_t i = 0; i < s->nfig; i++)
    if (strcmp(s->type[i], type) == 0 && strcmp(s->name[i], name) == 0)
      return (long)i;
  return -1;
}

size_t store__steps_pairs(const struct store__steps *a,
                          const struct store__steps *b, const char *stat,
                          const char *name, double *l)
{
  bool time = strcmp(stat, "step") == 0;
  long fa = time ? -1 : fig_index(a, stat, name);
  long fb = time ? -1 : fig_index(b, stat, name);
  size_t m = 0;

  if (!time && (fa < 0 || fb < 0))
    return 0;
  for (size_t i = 0; i < a->n; i++) {
    const struct store__step *x = &a->v[i], *y = &b->v[i];
    double va = time ? (double)x->dur : x->vals[fa];
    double vb = time ? (double)y->dur : y->vals[fb];

    if ((time && strcmp(x->kind, name) != 0) || va <= 0 || vb <= 0)
      continue;
    l[m++] = log(vb / va);
  }
  return m;
}

/* ---- reading ---- */

void store__figstats_free(struct store__figstats *fs)
{
  for (size_t i = 0; i < fs->n; i++) {
    free(fs->v[i].figure);
    free(fs->v[i].name);
    free(fs->v[i].stratum);
  }
  free(fs->v);
  memset(fs, 0, sizeof(*fs));
}

/* A store__fill_fn: a capture_figures row. */
static int fill_figstat(sqlite3_stmt *s, void *elem, void *ud)
{
  struct store__figstat *x = elem;

  (void)ud;
  x->figure = col_dup(s, 0);
  x->name = col_dup(s, 1);
  x->stratum = col_dup(s, 2);
  x->e = (struct est){ (size_t)sqlite3_column_int64(s, 3),
                       sqlite3_column_double(s, 4), sqlite3_column_double(s, 5),
                       sqlite3_column_double(s, 6),
                       sqlite3_column_type(s, 5) != SQLITE_NULL };
  return 1;
}

int store__figstats_load(struct store *st, int64_t id,
                         struct store__figstats *out, struct tr_err *err)
{
  void *v = NULL;
  int rc = store__collect_id(st,
                             "SELECT figure, name, stratum, n, loc, se, df"
                             " FROM capture_figures WHERE capture_id = ?1"
                             " ORDER BY figure, name, stratum",
                             id, sizeof(*out->v), fill_figstat, NULL, "figures",
                             &v, &out->n, err);

  out->v = v;
  if (rc < 0)
    store__figstats_free(out);
  return rc;
}
