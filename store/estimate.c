/*
 * Trimmed means with Yuen's standard error (Yuen 1974, as Wilcox,
 * "Introduction to Robust Estimation and Hypothesis Testing", 3.3 and
 * 5.3, gives them) and Student's t through the regularized incomplete beta
 * function, evaluated by its continued fraction with the modified Lentz
 * method (Press et al., "Numerical Recipes", 6.4 and 5.2).
 */
#include <math.h>
#include <stdlib.h>

#include "store/estimate.h"

static int cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;

  return (a > b) - (a < b);
}

void est_trimmed(double *x, size_t n, struct est *out)
{
  size_t g = (size_t)floor(EST_TRIM * (double)n), h = n - 2 * g, i;
  double sum = 0, wsum = 0, wvar = 0;

  *out = (struct est){ .n = n };
  if (n == 0)
    return;
  qsort(x, n, sizeof(*x), cmp_double);
  for (i = g; i < n - g; i++)
    sum += x[i];
  out->loc = sum / (double)h;
  if (h < 2)
    return;
  for (i = 0; i < n; i++)
    wsum += x[i < g ? g : i >= n - g ? n - g - 1 : i];
  for (i = 0; i < n; i++) {
    double d = x[i < g ? g : i >= n - g ? n - g - 1 : i] - wsum / (double)n;

    wvar += d * d;
  }
  /* (n - 1) s_w^2 is the winsorized sum of squares itself. */
  out->se = sqrt(wvar / ((double)h * (double)(h - 1)));
  out->df = (double)(h - 1);
  out->has_se = true;
}

/* The continued fraction of the incomplete beta function I_x(a, b). */
static double beta_cf(double a, double b, double x)
{
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1), h;

  d = 1 / (fabs(d) < tiny ? tiny : d);
  h = d;
  for (int m = 1; m <= 500; m++) {
    double m2 = 2.0 * m, del;
    double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));

    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (fabs(d) < tiny ? tiny : d);
    c = fabs(c) < tiny ? tiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (fabs(d) < tiny ? tiny : d);
    c = fabs(c) < tiny ? tiny : c;
    del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-15)
      break;
  }
  return h;
}

/* The regularized incomplete beta function I_x(a, b). */
static double beta_inc(double a, double b, double x)
{
  double front;

  if (x <= 0)
    return 0;
  if (x >= 1)
    return 1;
  front =
      exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
  /* The fraction converges fast for x < (a + 1) / (a + b + 2); beyond,
   * the symmetry I_x(a, b) = 1 - I_{1-x}(b, a). */
  if (x < (a + 1) / (a + b + 2))
    return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double est_t_tail(double t, double df)
{
  t = fabs(t);
  if (df > 1e7)
    return erfc(t / sqrt(2.0));
  return beta_inc(df / 2, 0.5, df / (df + t * t));
}

double est_t_two_sided(double p, double df)
{
  double lo = 0, hi = 1;

  while (est_t_tail(hi, df) > p && hi < 1e12)
    hi *= 2;
  /* The tail falls as t grows: bisect to a relative 1e-12. */
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    double mid = (lo + hi) / 2;

    if (est_t_tail(mid, df) > p)
      lo = mid;
    else
      hi = mid;
  }
  return (lo + hi) / 2;
}

double est_satterthwaite(const double *v, const double *df, size_t n)
{
  double num = 0, den = 0;

  for (size_t i = 0; i < n; i++) {
    if (v[i] <= 0 || df[i] <= 0)
      continue;
    num += v[i];
    den += v[i] * v[i] / df[i];
  }
  return den > 0 ? num * num / den : 0;
}
