/*
 * Between verdict.c (the figures of a verdict gathered, the answer) and
 * judge.c (each figure judged from its own samples and its history).
 * Internal to store/.
 */
#ifndef STORE_VERDICT_INT_H
#define STORE_VERDICT_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/store_int.h"

/* One figure of a verdict. verdict.c sets figure, stat, name, a and b;
 * judge.c the rest. */
struct store__vfig {
  const char *figure; /* step_p50, category, family, kernel */
  const char *stat;   /* its capture_figures figure (step, category...) */
  const char *name;   /* borrowed from the side's rows */
  double a, b;        /* shown: ns per step (step_p50: the steady p50) of
                         the baseline and this one; -1: absent there */
  bool judged;        /* steps of the same work on both sides */
  bool measured;      /* its noise measured */
  int paired;         /* 0, or how its steps were paired (judge.c) */
  size_t strata, history;
  double d, var, df, tau2; /* ln(b / a) and its variance */
  double quantile, diff_pct, lo_pct, hi_pct, noise_pct;
  int change;      /* 1 regressed, -1 improved, 0 not a change */
  json_t *buckets; /* owned; NULL: none */
};

struct store__judge {
  const struct store__figstats *a, *b; /* baseline, this one */
  const struct store__steps *sa, *sb;  /* their steps one by one */
  bool lined;                          /* sa and sb line up */
  const struct store__figstats *hist;  /* earlier captures of the
                                          configuration */
  const struct store__steps *shist;    /* their steps */
  const bool *hist_lined;              /* each lines up with sa */
  size_t nhist;
  int threshold; /* percent */
};

/* Judges v[0..n): measures each figure present on both sides, then
 * decides all of them with n figures judged. Returns the changes. */
size_t store__judge_run(const struct store__judge *j, struct store__vfig *v,
                        size_t n);

/* How f was judged: paired_steps (its steps line up), pairs (profiler
 * steps by number), buckets, per_step (too few steps for its noise) or
 * none (no steps of the same work on both sides). */
const char *store__vfig_method(const struct store__vfig *f);

/* The figure as the verdict lists it (a change: full, with its method and
 * buckets; else the short form of the verdict's figures). */
json_t *store__vfig_json(const struct store__vfig *f, int threshold, bool full);

#endif
