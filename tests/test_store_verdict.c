/*
 * The verdicts' statistics (store/estimate.c) against closed forms and
 * hand-computed values, and a capture's figures by stratum (store/
 * figures.c) from hand-written step samples of two ranks: the ranks'
 * steps merged (figures summed, the slower rank's time), warm-up steps
 * left out, the bs buckets, and ranks whose steps differ estimated alone
 * and summed; the steps one by one, as a verdict pairs them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store/estimate.h"
#include "store/store_int.h"
#include "test_store_util.h"

#define CHECK_NEAR(a, b, tol)                                                  \
  do {                                                                         \
    double a_ = (a), b_ = (b);                                                 \
    if (!(fabs(a_ - b_) <= (tol))) {                                           \
      fprintf(stderr, "%s:%d: %s ~ %s failed: %.12g != %.12g\n", __FILE__,     \
              __LINE__, #a, #b, a_, b_);                                       \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Student's t: df 1 is Cauchy's, t = tan(pi (1 - p) / 2); df 2 has
 * P(|T| > t) = 1 - t / sqrt(2 + t^2); larger df against printed tables
 * (Abramowitz and Stegun, table 26.10), fractional df through the tail. */
static void estimate_t_quantiles(void)
{
  static const double ps[] = { 0.2, 0.05, 0.01, 1e-3, 1e-4 };

  for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
    double p = ps[i], q = 1 - p;

    CHECK_NEAR(est_t_two_sided(p, 1), tan(M_PI * q / 2),
               1e-8 * tan(M_PI * q / 2));
    CHECK_NEAR(est_t_two_sided(p, 2), sqrt(2 * q * q / (1 - q * q)),
               1e-8 * sqrt(2 * q * q / (1 - q * q)));
  }
  CHECK_NEAR(est_t_two_sided(0.05, 10), 2.228138852, 1e-8);
  CHECK_NEAR(est_t_two_sided(0.01, 30), 2.749995652, 1e-8);
  CHECK_NEAR(est_t_two_sided(0.001, 5), 6.868826626, 1e-7);
  CHECK_NEAR(est_t_two_sided(0.05, 1e9), 1.959963985, 1e-8);
  CHECK_NEAR(est_t_two_sided(0.002, 120), 3.160, 5e-4); /* 3 decimals */
  for (double df = 1.5; df < 200; df *= 1.7)
    CHECK_NEAR(est_t_tail(est_t_two_sided(0.00125, df), df), 0.00125, 1e-10);
}

/* 20% trimmed mean and Yuen's standard error by hand: 1..9 and an
 * outlier 1000; g = 2 cut from each end, the winsorized values 3,3,3,4,
 * 5,6,7,8,8,8 (mean 5.5, sum of squares 42.5), se = sqrt(42.5 / (6 x 5)),
 * df = 5. */
static void estimate_trimmed(void)
{
  double x[] = { 7, 1000, 2, 9, 4, 1, 6, 3, 8, 5 }, one[] = { 42 };
  double two[] = { 10, 14 };
  struct est e;

  est_trimmed(x, 10, &e);
  CHECK_INT(e.n, 10);
  CHECK_NEAR(e.loc, 5.5, 1e-12);
  CHECK_NEAR(e.se, sqrt(42.5 / 30.0), 1e-12);
  CHECK_NEAR(e.df, 5, 0);
  CHECK(e.has_se);
  est_trimmed(one, 1, &e);
  CHECK(!e.has_se && e.loc == 42 && e.n == 1);
  est_trimmed(two, 2, &e); /* nothing cut: the mean and sd / sqrt(2) */
  CHECK_NEAR(e.loc, 12, 0);
  CHECK_NEAR(e.se, 2, 1e-12);
  CHECK_NEAR(e.df, 1, 0);
  CHECK_NEAR(est_satterthwaite((double[]){ 1, 1 }, (double[]){ 4, 4 }, 2), 8,
             1e-12);
}

/* ---- figures ---- */

static const struct fx_kernel kern[] = {
  { "fused_moe_kernel", "moe", 24, 2400000, 1000, 1000000, 100000 },
};

/* Rank r's steps: 12 decode steps, bs 8 for ordinals 0..9 (0 and 1 warm
 * up) and bs 40 for 10..11; the MoE family's time (r + 1) x (1000 +
 * ordinal), its duration 5000 + ordinal (+ 100 on rank 1). skip: rank
 * 1 has no ordinal 11 (its steps differ: estimated alone). */
static json_t *samples(int r, bool skip)
{
  json_t *rows = json_array();

  for (int i = 0; i < 12; i++) {
    int64_t moe = (r + 1) * (1000 + i);

    if (skip && r == 1 && i == 11)
      continue;
    json_array_append_new(
        rows,
        json_pack("{s:s,s:i,s:n,s:i,s:i,s:I,s:I,s:i,s:[I,I]}", "kind", "decode",
                  "ordinal", i, "step", "bs", i < 10 ? 8 : 40, "tok",
                  i < 10 ? 8 : 40, "start_ns", (json_int_t)i * 10000, "dur_ns",
                  (json_int_t)(5000 + i + 100 * r), "warmup", i < 2, "values",
                  (json_int_t)moe, (json_int_t)moe));
  }
  return rows;
}

static int64_t capture_of(struct store *st, bool skip)
{
  struct fx_rank r = { kern, 1, NULL, 0, 0, 100 };
  struct store_finish f = { NULL, 5 };
  struct tr_err err = { 0 };
  json_t *v = NULL;
  int64_t cap;

  CHECK_INT(store_capture_insert(st, "import", "f", NULL, 0, &cap, &err), 0);
  CHECK_INT(store_capture_set_phase(st, cap, "running", "indexing", &err), 0);
  for (int i = 0; i < 2; i++) {
    json_t *sum = fx_summary(i, &r);

    json_object_set_new(sum, "sample_figures",
                        json_pack("[{s:i,s:s,s:s},{s:i,s:s,s:s}]", "index", 0,
                                  "figure", "category", "name", "moe", "index",
                                  1, "figure", "family", "name",
                                  "fused_moe_kernel"));
    json_object_set_new(sum, "step_samples", samples(i, skip));
    CHECK_INT(store_rank_insert(st, cap, i, "r", sum, &err), 0);
    json_decref(sum);
  }
  CHECK_INT(store_capture_finish(st, cap, &f, &v, &err), 0);
  json_decref(v);
  return cap;
}

/* A new database (its path into db) holding capture_of(skip). */
static int64_t fresh_capture(char *db, size_t size, struct store **st,
                             bool skip)
{
  struct tr_err err = { 0 };

  fx_db_path(db, size);
  CHECK_INT(store_open(db, STORE_RW, st, &err), 0);
  return capture_of(*st, skip);
}

/* The se of the trimmed mean of one bs=8 stratum's MoE times at
 * k x (1000 + ordinal), ordinals 2..9 (samples(): past the warm-ups). */
static double bs8_se(double k)
{
  double x[8];
  struct est e;

  for (int i = 0; i < 8; i++)
    x[i] = k * (1002 + i);
  est_trimmed(x, 8, &e);
  return e.se;
}

/* loc, se (-1: NULL), n of a capture_figures row. */
static void row(const char *db, int64_t cap, const char *figure,
                const char *stratum, double *loc, double *se, int64_t *n)
{
  sqlite3 *h;
  sqlite3_stmt *s;

  CHECK_INT(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  CHECK_INT(sqlite3_prepare_v2(h,
                               "SELECT loc, se, n FROM capture_figures WHERE"
                               " capture_id = ?1 AND figure = ?2 AND"
                               " stratum = ?3",
                               -1, &s, NULL),
            SQLITE_OK);
  sqlite3_bind_int64(s, 1, cap);
  sqlite3_bind_text(s, 2, figure, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, stratum, -1, SQLITE_STATIC);
  CHECK_INT(sqlite3_step(s), SQLITE_ROW);
  *loc = sqlite3_column_double(s, 0);
  *se = sqlite3_column_type(s, 1) == SQLITE_NULL ? -1
                                                 : sqlite3_column_double(s, 1);
  *n = sqlite3_column_int64(s, 2);
  sqlite3_finalize(s);
  sqlite3_close(h);
}

/* Merged: step i's MoE time is 3 (1000 + i); bs 8 keeps ordinals 2..9
 * (n 8, g 1: the trimmed mean of 3 x 1003..1008 = 3 x 1005.5), bs 33-40
 * ordinals 10, 11 (nothing cut: 3 x 1010.5, se 3 x 0.5); the step time
 * the slower rank's, 5100 + i; no stratum pools other batch sizes. */
static void figures_merged(void)
{
  char db[256];
  struct store *st;
  double loc, se;
  int64_t n, cap;

  cap = fresh_capture(db, sizeof(db), &st, false);
  row(db, cap, "family", "decode bs=8", &loc, &se, &n);
  CHECK_INT(n, 8);
  CHECK_NEAR(loc, 3 * 1005.5, 1e-9);
  CHECK_NEAR(se, bs8_se(3), 1e-9); /* the ranks' times summed: 3 x */
  row(db, cap, "family", "decode bs=33-40", &loc, &se, &n);
  CHECK_INT(n, 2);
  CHECK_NEAR(loc, 3 * 1010.5, 1e-9);
  CHECK_NEAR(se, 3 * 0.5, 1e-9);
  row(db, cap, "step", "decode bs=33-40", &loc, &se, &n);
  CHECK_NEAR(loc, 5110.5, 1e-9);
  CHECK_INT(fx_count(db,
                     "SELECT count(*) FROM capture_figures WHERE"
                     " capture_id = ?1",
                     cap),
            3 * 2); /* step, category, family x bs=8, bs=33-40 */
  store_close(st);
  fx_db_remove(db);
}

/* The steps one by one, the ranks merged: 12 steps, step i's MoE time
 * 3 (1000 + i), its time the slower rank's (5100 + i), 0 and 1 warm-ups.
 * Two captures of those steps line up: paired, warm-ups too (12 pairs,
 * each ln 1 = 0; the step time of kind decode too). Ranks whose steps
 * differ have none to pair. */
static void steps_paired(void)
{
  char db[256];
  struct store *st;
  struct tr_err err = { 0 };
  struct store__steps a, b, c;
  double l[16];
  int64_t one = fresh_capture(db, sizeof(db), &st, false);
  int64_t two = capture_of(st, false), odd = capture_of(st, true);

  CHECK_INT(store__rd_begin(st, &err), 0);
  CHECK_INT(store__steps_load(st, one, &a, &err), 0);
  CHECK_INT(store__steps_load(st, two, &b, &err), 0);
  CHECK_INT(store__steps_load(st, odd, &c, &err), 0);
  CHECK_INT(store__rd_end(st, 0, &err), 0);
  CHECK_INT(a.n, 12);
  CHECK_INT(c.n, 0);
  for (size_t i = 0; i < a.n; i++) {
    CHECK_INT(a.v[i].dur, 5100 + (int64_t)i);
    CHECK_NEAR(a.v[i].vals[1], 3.0 * (1000 + (double)i), 0);
    CHECK(a.v[i].warmup == (i < 2));
  }
  CHECK(store__steps_line_up(&a, &b) && !store__steps_line_up(&a, &c));
  CHECK_INT(store__steps_pairs(&a, &b, "family", "fused_moe_kernel", l), 12);
  CHECK_NEAR(l[0], 0, 0);
  CHECK_INT(store__steps_pairs(&a, &b, "step", "decode", l), 12);
  CHECK_INT(store__steps_pairs(&a, &b, "step", "prefill", l), 0);
  CHECK_INT(store__steps_pairs(&a, &b, "family", "nothing", l), 0);
  b.v[5].bs = 9; /* another batch: no longer the same steps */
  CHECK(!store__steps_line_up(&a, &b));
  store__steps_free(&a);
  store__steps_free(&b);
  store__steps_free(&c);
  store_close(st);
  fx_db_remove(db);
}

/* Ranks whose steps differ: each estimated alone, the figure summed (the
 * variances added), the step time the slower rank's. */
static void figures_alone(void)
{
  char db[256];
  struct store *st;
  double loc, se;
  int64_t n, cap;

  cap = fresh_capture(db, sizeof(db), &st, true);
  row(db, cap, "family", "decode bs=8", &loc, &se, &n);
  CHECK_NEAR(loc, 3 * 1005.5, 1e-9);
  CHECK_NEAR(se, hypot(bs8_se(1), bs8_se(2)), 1e-9); /* rank 0's, rank 1's */
  row(db, cap, "step", "decode bs=33-40", &loc, &se, &n);
  CHECK_INT(n, 1); /* rank 1's one step there, the slower */
  CHECK_NEAR(loc, 5110, 1e-9);
  CHECK(se < 0);
  store_close(st);
  fx_db_remove(db);
}

int main(void)
{
  RUN(estimate_t_quantiles);
  RUN(estimate_trimmed);
  RUN(figures_merged);
  RUN(figures_alone);
  RUN(steps_paired);
  return 0;
}
