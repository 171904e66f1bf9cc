/*
 * store_diff: rows, statuses, sort order, per-step normalisation and
 * warnings, every expected figure computed here from the inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "tests/check.h"
#include "tests/test_store_util.h"

static struct tr_err err;

static const struct fx_kernel a0k[] = {
  { "gemm_a", "gemm", 10, 1000, 50, 200, 100 },
  { "attn_b", "attention", 5, 700, 100, 200, 140 },
  { "only_a_k", "other", 2, 30, 10, 20, 15 },
  { "half_k", "elementwise", 1, 165, 165, 165, 165 }
};
static const struct fx_kernel a1k[] = {
  { "gemm_a", "gemm", 10, 1100, 60, 300, 110 },
  { "attn_b", "attention", 5, 600, 100, 180, 120 }
};
static const struct fx_kernel b0k[] = {
  { "gemm_a", "gemm", 10, 800, 50, 200, 80 },
  { "attn_b", "attention", 5, 900, 100, 200, 180 },
  { "only_b_k", "moe", 3, 90, 20, 40, 30 },
  { "half_k", "elementwise", 1, 165, 165, 165, 165 }
};
static const struct fx_kernel b1k[] = {
  { "gemm_a", "gemm", 10, 850, 60, 300, 85 },
  { "attn_b", "attention", 5, 950, 100, 180, 190 }
};
static const struct fx_step as[] = { { "decode", 100, 5000 },
                                     { "prefill", 10, 3000 } };
static const struct fx_step b0s[] = { { "decode", 50, 2000 },
                                      { "dummy_decode", 7, 70 },
                                      { "prefill", 5, 1000 } };
static const struct fx_step b1s[] = { { "decode", 60, 2400 },
                                      { "dummy_decode", 7, 70 },
                                      { "prefill", 5, 1000 } };
static const struct fx_rank A[] = { { a0k, 4, as, 2, 400, 7 },
                                    { a1k, 2, as, 2, 500, 9 } };
static const struct fx_rank B[] = { { b0k, 4, b0s, 3, 300, 7 },
                                    { b1k, 2, b1s, 3, 200, 9 } };
static const struct fx_rank NOLABELS[] = { { a0k, 4, NULL, 0, 400, 7 },
                                           { a1k, 2, NULL, 0, 500, 9 } };

static struct store *st;
static int64_t ida, idb, idc, idd;

enum by { BY_KERNEL, BY_CATEGORY, BY_STEP };

/* Count and total of key in run r (n ranks; rank -1: all) grouped by. */
static bool run_sum(const struct fx_rank *r, size_t n, int rank, enum by by,
                    const char *key, int64_t *count, int64_t *total)
{
  bool found = false;

  *count = *total = 0;
  for (size_t i = 0; i < n; i++) {
    if (rank >= 0 && (size_t)rank != i)
      continue;
    for (size_t k = 0; by != BY_STEP && k < r[i].nk; k++) {
      const char *x = by == BY_KERNEL ? r[i].k[k].name : r[i].k[k].category;

      if (strcmp(x, key) == 0) {
        found = true;
        *count += r[i].k[k].count;
        *total += r[i].k[k].total_ns;
      }
    }
    for (size_t k = 0; by == BY_STEP && k < r[i].ns; k++) {
      if (strcmp(r[i].s[k].kind, key) == 0) {
        found = true;
        *count += r[i].s[k].count;
        *total += r[i].s[k].total_ns;
      }
    }
    if (by == BY_CATEGORY && strcmp(key, "copy") == 0) {
      found = true;
      *count += 1;
      *total += r[i].memcpy_ns;
    }
  }
  return found;
}

/* prefill + decode of each rank; the largest (or rank's). */
static int64_t real_steps(const struct fx_rank *r, size_t n, int rank)
{
  int64_t best = 0;

  for (size_t i = 0; i < n; i++) {
    int64_t c = 0;

    for (size_t k = 0; k < r[i].ns; k++) {
      if (!strcmp(r[i].s[k].kind, "decode") ||
          !strcmp(r[i].s[k].kind, "prefill"))
        c += r[i].s[k].count;
    }
    if ((rank < 0 || (size_t)rank == i) && c > best)
      best = c;
  }
  return best;
}

/* Distinct kernel names over runs ra and rb (2 ranks each). */
static size_t union_names(const struct fx_rank *ra, const struct fx_rank *rb)
{
  const struct fx_rank *all[4] = { &ra[0], &ra[1], &rb[0], &rb[1] };
  size_t n = 0;

  for (size_t r = 0; r < 4; r++) {
    for (size_t k = 0; k < all[r]->nk; k++) {
      bool seen = false;

      for (size_t p = 0; p <= r && !seen; p++) {
        for (size_t j = 0; j < (p == r ? k : all[p]->nk) && !seen; j++)
          seen = strcmp(all[p]->k[j].name, all[r]->k[k].name) == 0;
      }
      n += !seen;
    }
  }
  return n;
}

static json_t *diff(int64_t a, int64_t b, struct store_diff_opts o)
{
  json_t *res = NULL;

  tr_err_clear(&err);
  if (store_diff(st, a, b, &o, &res, &err) != 0) {
    fprintf(stderr, "diff: %s (%s)\n", err.msg, err.field);
    exit(1);
  }
  return res;
}

/* Every row of rows against the inputs of runs ra/rb; sorted by |delta|
 * desc then key. steps_a/b: 0 for no normalisation. */
static void check_rows(json_t *rows, enum by by, const struct fx_rank *ra,
                       const struct fx_rank *rb, int rank, int64_t steps_a,
                       int64_t steps_b)
{
  const char *keyname = by == BY_KERNEL     ? "name"
                        : by == BY_CATEGORY ? "category"
                                            : "kind";
  int64_t prev = INT64_MAX;
  const char *prev_key = "";
  size_t i;
  json_t *row;

  json_array_foreach(rows, i, row) {
    const char *key = json_string_value(json_object_get(row, keyname));
    int64_t ac, at, bc, bt, delta;
    bool in_a = run_sum(ra, 2, rank, by, key, &ac, &at);
    bool in_b = run_sum(rb, 2, rank, by, key, &bc, &bt);
    json_t *pct = json_object_get(row, "delta_pct");

    if (steps_a > 0) {
      at = llround((double)at / (double)steps_a);
      bt = llround((double)bt / (double)steps_b);
    }
    delta = bt - at;
    CHECK(in_a || in_b);
    CHECK_STR(json_string_value(json_object_get(row, "status")),
              in_a && in_b ? "both"
              : in_a       ? "only_a"
                           : "only_b");
    CHECK_INT(fx_int(row, "a_count"), ac);
    CHECK_INT(fx_int(row, "b_count"), bc);
    CHECK_INT(fx_int(row, "a_total_ns"), at);
    CHECK_INT(fx_int(row, "b_total_ns"), bt);
    CHECK_INT(fx_int(row, "delta_ns"), delta);
    if (at == 0)
      CHECK(json_is_null(pct));
    else
      CHECK(fabs(json_real_value(pct) - (double)delta * 100 / (double)at) <=
            0.0005 + 1e-12); /* a percentage's 3 decimals */
    CHECK(llabs(delta) < prev ||
          (llabs(delta) == prev && strcmp(prev_key, key) < 0));
    prev = llabs(delta);
    prev_key = key;
  }
}

static json_t *warning(json_t *res, const char *code)
{
  return tr_row_find(json_object_get(res, "warnings"), "code", code);
}

static void store_diff_self(void)
{
  json_t *res = diff(ida, ida, (struct store_diff_opts){ .rank = -1 });
  json_t *rows = json_object_get(res, "rows"), *row;
  size_t i;

  CHECK_INT(json_array_size(rows), union_names(A, A));
  json_array_foreach(rows, i, row) {
    CHECK_INT(fx_int(row, "delta_ns"), 0);
    CHECK_STR(json_string_value(json_object_get(row, "status")), "both");
    CHECK_INT(fx_int(row, "a_total_ns"), fx_int(row, "b_total_ns"));
  }
  check_rows(rows, BY_KERNEL, A, A, -1, 0, 0);
  CHECK_INT(json_array_size(json_object_get(res, "warnings")), 0);
  json_decref(res);
}

static void store_diff_two_runs(void)
{
  json_t *res = diff(ida, idb, (struct store_diff_opts){ .rank = -1 });
  json_t *rows = json_object_get(res, "rows"), *lim, *cats;
  int64_t c, t;

  check_rows(rows, BY_KERNEL, A, B, -1, 0, 0);
  CHECK_STR(json_string_value(json_object_get(
                tr_row_find(rows, "name", "only_a_k"), "status")),
            "only_a");
  CHECK_STR(json_string_value(json_object_get(
                tr_row_find(rows, "name", "only_b_k"), "status")),
            "only_b");
  CHECK(json_is_null(
      json_object_get(tr_row_find(rows, "name", "only_b_k"), "delta_pct")));
  CHECK_INT(json_array_size(rows), union_names(A, B));
  /* categories: always there, the by=category rows. */
  cats = json_object_get(res, "categories");
  check_rows(cats, BY_CATEGORY, A, B, -1, 0, 0);
  CHECK(run_sum(A, 2, -1, BY_CATEGORY, "copy", &c, &t));
  CHECK_INT(fx_int(tr_row_find(cats, "category", "copy"), "a_total_ns"), t);
  lim = diff(ida, idb, (struct store_diff_opts){ .rank = -1, .limit = 2 });
  CHECK_INT(json_array_size(json_object_get(lim, "rows")), 2);
  for (size_t i = 0; i < 2; i++)
    CHECK(json_equal(json_array_get(json_object_get(lim, "rows"), i),
                     json_array_get(rows, i)));
  json_decref(lim);
  json_decref(res);
  /* One rank only. */
  res = diff(ida, idb, (struct store_diff_opts){ .rank = 1 });
  check_rows(json_object_get(res, "rows"), BY_KERNEL, A, B, 1, 0, 0);
  /* b1's names are a1's. */
  CHECK_INT(json_array_size(json_object_get(res, "rows")),
            sizeof(a1k) / sizeof(a1k[0]));
  json_decref(res);
}

static void store_diff_by_category_and_step(void)
{
  json_t *res =
      diff(ida, idb, (struct store_diff_opts){ .rank = -1, .by = "category" });

  check_rows(json_object_get(res, "rows"), BY_CATEGORY, A, B, -1, 0, 0);
  CHECK(json_equal(json_object_get(res, "rows"),
                   json_object_get(res, "categories")));
  json_decref(res);
  res = diff(ida, idb, (struct store_diff_opts){ .rank = -1, .by = "step" });
  check_rows(json_object_get(res, "rows"), BY_STEP, A, B, -1, 0, 0);
  CHECK_STR(
      json_string_value(json_object_get(
          tr_row_find(json_object_get(res, "rows"), "kind", "dummy_decode"),
          "status")),
      "only_b");
  CHECK_STR(json_string_value(json_object_get(res, "by")), "step");
  json_decref(res);
}

static void store_diff_per_step(void)
{
  int64_t sa = real_steps(A, 2, -1), sb = real_steps(B, 2, -1);
  json_t *res = diff(
      ida, idb, (struct store_diff_opts){ .rank = -1, .norm = "per_step" });
  json_t *half;
  int64_t c, t;

  CHECK(sa > 0 && sb > 0 && sa != sb);
  CHECK_INT(fx_int(res, "a_steps"), sa);
  CHECK_INT(fx_int(res, "b_steps"), sb);
  check_rows(json_object_get(res, "rows"), BY_KERNEL, A, B, -1, sa, sb);
  check_rows(json_object_get(res, "categories"), BY_CATEGORY, A, B, -1, sa, sb);
  /* half_k is an exact .5 per step in A: rounded away from zero. */
  run_sum(A, 2, -1, BY_KERNEL, "half_k", &c, &t);
  CHECK_INT((t * 10 / sa) % 10, 5);
  half = tr_row_find(json_object_get(res, "rows"), "name", "half_k");
  CHECK_INT(fx_int(half, "a_total_ns"), t / sa + 1);
  json_decref(res);
  /* rank 1: that rank's own step count. */
  res =
      diff(ida, idb, (struct store_diff_opts){ .rank = 1, .norm = "per_step" });
  check_rows(json_object_get(res, "rows"), BY_KERNEL, A, B, 1,
             real_steps(A, 2, 1), real_steps(B, 2, 1));
  json_decref(res);
}

static void check_fails(int64_t a, int64_t b, struct store_diff_opts o,
                        int code, const char *field)
{
  json_t *res = NULL;

  tr_err_clear(&err);
  CHECK_INT(store_diff(st, a, b, &o, &res, &err), code);
  CHECK_STR(err.field, field);
  CHECK(res == NULL);
}

static void store_diff_warnings_and_errors(void)
{
  json_t *res = diff(ida, idb, (struct store_diff_opts){ .rank = -1 });
  int64_t queued;

  /* A: tp 2 in params; B: no tp, 2 ranks: same TP. */
  CHECK(warning(res, "different_tp") == NULL);
  CHECK(strstr(json_string_value(
                   json_object_get(warning(res, "pre_taxonomy"), "message")),
               "a (capture") != NULL);
  CHECK(warning(res, "different_step_counts") != NULL);
  CHECK(warning(res, "different_step_kinds") != NULL);
  CHECK(warning(res, "no_labels") == NULL);
  json_decref(res);
  res = diff(ida, idd, (struct store_diff_opts){ .rank = -1 });
  CHECK(warning(res, "different_tp") != NULL);
  json_decref(res);
  res = diff(idc, ida, (struct store_diff_opts){ .rank = -1 });
  CHECK(strstr(json_string_value(
                   json_object_get(warning(res, "no_labels"), "message")),
               "a (capture") != NULL);
  CHECK(warning(res, "pre_taxonomy") == NULL);
  json_decref(res);

  check_fails(idc, ida,
              (struct store_diff_opts){ .rank = -1, .norm = "per_step" },
              TR_EINVAL, "norm");
  check_fails(ida, 999, (struct store_diff_opts){ .rank = -1 }, TR_ENOTFOUND,
              "b");
  check_fails(999, ida, (struct store_diff_opts){ .rank = -1 }, TR_ENOTFOUND,
              "a");
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &queued, &err),
            0);
  check_fails(ida, queued, (struct store_diff_opts){ .rank = -1 }, TR_ECONFLICT,
              "b");
  check_fails(ida, idb, (struct store_diff_opts){ .rank = -1, .by = "x;" },
              TR_EINVAL, "by");
  check_fails(ida, idb, (struct store_diff_opts){ .rank = -1, .norm = "x" },
              TR_EINVAL, "norm");
  check_fails(ida, idb, (struct store_diff_opts){ .rank = 5 }, TR_ENOTFOUND,
              "rank");
  check_fails(ida, idb, (struct store_diff_opts){ .rank = -1, .limit = -3 },
              TR_EINVAL, "limit");
}

int main(void)
{
  char path[256];

  fx_db_path(path, sizeof(path));
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  ida = fx_capture(st, "m/A", 2, A, 2);
  idb = fx_capture(st, "m/A", 0, B, 2);
  idc = fx_capture(st, "m/A", 2, NOLABELS, 2);
  idd = fx_capture(st, "m/A", 8, B, 2);
  RUN(store_diff_self);
  RUN(store_diff_two_runs);
  RUN(store_diff_by_category_and_step);
  RUN(store_diff_per_step);
  RUN(store_diff_warnings_and_errors);
  store_close(st);
  fx_db_remove(path);
  return 0;
}
