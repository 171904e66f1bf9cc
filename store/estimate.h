/*
 * The statistics of the verdicts (store/figures.c, verdict.c): robust
 * estimates of a location with their standard errors, and the Student t
 * distribution their intervals are drawn from. docs/VERDICTS.md states
 * the method. Pure functions; any thread.
 */
#ifndef STORE_ESTIMATE_H
#define STORE_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>

#define EST_TRIM 0.2 /* the share trimmed from each end */

/* A location with its standard error and degrees of freedom; has_se false
 * when there are too few values to measure the error (se, df 0). */
struct est {
  size_t n;
  double loc, se, df;
  bool has_se;
};

/* The 20% trimmed mean of x[0..n) (sorted in place) and Yuen's standard
 * error: g = floor(0.2 n) values cut from each end, h = n - 2g kept;
 * se^2 = (n - 1) s_w^2 / (h (h - 1)) with s_w^2 the variance of the
 * winsorized values (each cut value replaced by the nearest kept one);
 * df = h - 1. has_se needs h >= 2. n 0: loc 0. */
void est_trimmed(double *x, size_t n, struct est *out);

/* The t such that P(|T| > t) = p for Student's T with df degrees of
 * freedom (df may be fractional; df > 1e7: the normal's), 0 < p < 1. */
double est_t_two_sided(double p, double df);

/* P(|T| > t) for Student's T with df degrees of freedom. */
double est_t_tail(double t, double df);

/* Welch-Satterthwaite: the degrees of freedom of a sum of independent
 * variance estimates v[i] with df[i] each (those with v 0 left out);
 * 0 when none. */
double est_satterthwaite(const double *v, const double *df, size_t n);

#endif
