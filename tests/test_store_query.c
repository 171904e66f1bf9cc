/*
 * store: rank summaries in, route rows out. Every expected figure is
 * computed here from the hand-written inputs below (loops, not literals
 * copied from output).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "tests/check.h"
#include "tests/test_store_util.h"

static struct tr_err err;

static const struct fx_kernel k0[] = {
  { "gemm_a", "gemm", 10, 1000, 50, 200, 100 },
  { "attn_b", "attention", 5, 700, 100, 200, 140 },
  { "weird%_name", "other", 2, 30, 10, 20, 15 }
};
static const struct fx_kernel k1[] = {
  { "gemm_a", "gemm", 10, 1300, 60, 300, 130 },
  { "attn_b", "attention", 5, 650, 100, 180, 130 },
  { "moe_c", "moe", 3, 90, 20, 40, 30 }
};
static const struct fx_kernel k2[] = { { "gemm_a", "gemm", 12, 900, 40, 150,
                                         75 },
                                       { "moe_c", "moe", 4, 120, 30, 50, 40 } };
static const struct fx_step st0[] = { { "decode", 100, 5000 },
                                      { "prefill", 10, 3000 } };
static const struct fx_step st2[] = { { "decode", 90, 4000 } };
static const struct fx_rank ranks[] = { { k0, 3, st0, 2, 400, 7 },
                                        { k1, 3, st0, 2, 500, 9 },
                                        { k2, 2, st2, 1, 300, 5 } };
enum { NRANKS = 3 };

static struct store *st;
static char path[256];
static int64_t cap;

static json_t *query(enum tr_table t, struct store_query q)
{
  json_t *rows = NULL;

  q.capture_id = cap;
  tr_err_clear(&err);
  if (store_table(st, t, &q, &rows, &err) != 0) {
    fprintf(stderr, "query: %s (%s)\n", err.msg, err.field);
    exit(1);
  }
  return rows;
}

static double share(int64_t num, int64_t den)
{
  return den > 0 ? round((double)num / (double)den * 1e6) / 1e6 : 0.0;
}

static int64_t rank_kernel_ns(size_t r)
{
  int64_t t = 0;

  for (size_t i = 0; i < ranks[r].nk; i++)
    t += ranks[r].k[i].total_ns;
  return t;
}

static void check_share(json_t *row, double want)
{
  CHECK(fabs(json_real_value(json_object_get(row, "share")) - want) < 1e-12);
}

static void store_kernels_per_rank(void)
{
  for (int r = 0; r < NRANKS; r++) {
    json_t *rows = query(TR_TABLE_kernels, (struct store_query){ .rank = r });

    CHECK_INT(json_array_size(rows), ranks[r].nk);
    for (size_t i = 0; i < ranks[r].nk; i++) {
      const struct fx_kernel *k = &ranks[r].k[i];
      json_t *row = tr_row_find(rows, "name", k->name);

      CHECK(row != NULL);
      CHECK_STR(json_string_value(json_object_get(row, "category")),
                k->category);
      CHECK_INT(fx_int(row, "count"), k->count);
      CHECK_INT(fx_int(row, "total_ns"), k->total_ns);
      CHECK_INT(fx_int(row, "avg_ns"), k->total_ns / k->count);
      CHECK_INT(fx_int(row, "min_ns"), k->min_ns);
      CHECK_INT(fx_int(row, "max_ns"), k->max_ns);
      CHECK_INT(fx_int(row, "median_ns"), k->median_ns);
      CHECK_INT(fx_int(row, "first_ns"), (int64_t)i * 10);
      CHECK_INT(fx_int(row, "last_ns"), (int64_t)i * 10 + 5);
      check_share(row, share(k->total_ns, rank_kernel_ns((size_t)r)));
      CHECK(json_object_get(row, "ranks") == NULL);
    }
    json_decref(rows);
  }
}

struct agg {
  int64_t count, total, min, max, slow_ns, fast_ns;
  int nranks, slow, fast;
};

/* The all-ranks figures of one kernel name, from the inputs. */
static struct agg expect(const char *name)
{
  struct agg a = { .min = INT64_MAX, .slow = -1, .fast = -1 };

  for (int r = 0; r < NRANKS; r++) {
    for (size_t i = 0; i < ranks[r].nk; i++) {
      const struct fx_kernel *k = &ranks[r].k[i];

      if (strcmp(k->name, name) != 0)
        continue;
      a.count += k->count;
      a.total += k->total_ns;
      a.min = k->min_ns < a.min ? k->min_ns : a.min;
      a.max = k->max_ns > a.max ? k->max_ns : a.max;
      a.nranks++;
      if (a.slow < 0 || k->total_ns > a.slow_ns) {
        a.slow = r;
        a.slow_ns = k->total_ns;
      }
      if (a.fast < 0 || k->total_ns < a.fast_ns) {
        a.fast = r;
        a.fast_ns = k->total_ns;
      }
    }
  }
  return a;
}

static bool matches(const struct fx_kernel *k, const char *q,
                    const char *category)
{
  return (q == NULL || strcasestr(k->name, q) != NULL) &&
         (category == NULL || strcmp(k->category, category) == 0);
}

/* Distinct kernel names of the inputs of rank (-1: all) matching q and
 * category (NULL: any). */
static size_t distinct_names(const char *q, const char *category, int rank)
{
  size_t n = 0;

  for (int r = 0; r < NRANKS; r++) {
    for (size_t i = 0; i < ranks[r].nk; i++) {
      bool seen = false;

      if ((rank >= 0 && r != rank) || !matches(&ranks[r].k[i], q, category))
        continue;
      for (int p = rank >= 0 ? rank : 0; p <= r && !seen; p++) {
        for (size_t j = 0; j < (p == r ? i : ranks[p].nk) && !seen; j++)
          seen = strcmp(ranks[p].k[j].name, ranks[r].k[i].name) == 0;
      }
      n += !seen;
    }
  }
  return n;
}

static void store_kernels_all_ranks(void)
{
  json_t *rows = query(TR_TABLE_kernels, (struct store_query){ .rank = -1 });
  int64_t kernel_ns = 0;
  size_t i;
  json_t *row;

  for (size_t r = 0; r < NRANKS; r++)
    kernel_ns += rank_kernel_ns(r);
  CHECK_INT(json_array_size(rows), distinct_names(NULL, NULL, -1));
  json_array_foreach(rows, i, row) {
    struct agg a = expect(json_string_value(json_object_get(row, "name")));

    CHECK(a.nranks > 0);
    CHECK_INT(fx_int(row, "count"), a.count);
    CHECK_INT(fx_int(row, "total_ns"), a.total);
    CHECK_INT(fx_int(row, "avg_ns"), a.total / a.count);
    CHECK_INT(fx_int(row, "min_ns"), a.min);
    CHECK_INT(fx_int(row, "max_ns"), a.max);
    CHECK_INT(fx_int(row, "ranks"), a.nranks);
    CHECK_INT(fx_int(row, "slowest_rank"), a.slow);
    CHECK_INT(fx_int(row, "slowest_rank_ns"), a.slow_ns);
    CHECK_INT(fx_int(row, "fastest_rank"), a.fast);
    CHECK_INT(fx_int(row, "fastest_rank_ns"), a.fast_ns);
    check_share(row, share(a.total, kernel_ns));
  }
  json_decref(rows);
}

static int64_t avg_of(json_t *row)
{
  return fx_int(row, "total_ns") / fx_int(row, "count");
}

static void check_sorted(json_t *rows, const char *sort)
{
  for (size_t i = 1; i < json_array_size(rows); i++) {
    json_t *p = json_array_get(rows, i - 1), *c = json_array_get(rows, i);
    int byname = strcmp(json_string_value(json_object_get(p, "name")),
                        json_string_value(json_object_get(c, "name")));
    int64_t pv = 0, cv = 0;

    if (strcmp(sort, "total") == 0) {
      pv = fx_int(p, "total_ns");
      cv = fx_int(c, "total_ns");
    } else if (strcmp(sort, "count") == 0) {
      pv = fx_int(p, "count");
      cv = fx_int(c, "count");
    } else if (strcmp(sort, "avg") == 0) {
      pv = avg_of(p);
      cv = avg_of(c);
    }
    CHECK(pv > cv || (pv == cv && byname < 0));
  }
}

static void store_kernels_sort_and_limit(void)
{
  static const char *const sorts[] = { "total", "count", "avg", "name" };

  for (int rank = -1; rank < NRANKS; rank++) {
    for (size_t s = 0; s < 4; s++) {
      struct store_query q = { .rank = rank, .sort = sorts[s] };
      json_t *all = query(TR_TABLE_kernels, q), *two;

      check_sorted(all, sorts[s]);
      q.limit = 2;
      two = query(TR_TABLE_kernels, q);
      CHECK_INT(json_array_size(two), 2);
      for (size_t i = 0; i < 2; i++)
        CHECK(json_equal(json_array_get(two, i), json_array_get(all, i)));
      json_decref(all);
      json_decref(two);
    }
  }
  /* Largest total first by default: the largest summed total. */
  {
    json_t *rows = query(TR_TABLE_kernels, (struct store_query){ .rank = -1 });

    CHECK_INT(fx_int(json_array_get(rows, 0), "total_ns"),
              expect("gemm_a").total);
    json_decref(rows);
  }
}

static size_t count_q(const char *q, const char *category, int rank)
{
  json_t *rows =
      query(TR_TABLE_kernels,
            (struct store_query){ .rank = rank, .q = q, .category = category });
  size_t n = json_array_size(rows);

  json_decref(rows);
  return n;
}

static void store_kernels_filters(void)
{
  static const char *const qs[] = { "GEMM",
                                    "_",
                                    "%",
                                    "%_",
                                    "B",
                                    "name",
                                    "'%_\" OR 1=1 --",
                                    "x'); DROP TABLE kernels; --",
                                    NULL };
  static const char *const cats[] = { "moe", "attention", "' OR 1=1 --", NULL };
  json_t *rows;

  for (int r = -1; r < NRANKS; r++) {
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
      for (size_t c = 0; c < sizeof(cats) / sizeof(cats[0]); c++) {
        CHECK_INT(count_q(qs[i], cats[c], r),
                  distinct_names(qs[i], cats[c], r));
      }
    }
  }
  /* The cases that matter, spelled out: literal % and _, no injection. */
  CHECK_INT(count_q("%", NULL, -1), 1);
  CHECK(distinct_names("_", NULL, -1) > 1);
  CHECK_INT(count_q("_", NULL, -1), distinct_names("_", NULL, -1));
  CHECK_INT(count_q("'%_\" OR 1=1 --", NULL, -1), 0);
  /* Still all there. */
  rows = query(TR_TABLE_kernels, (struct store_query){ .rank = -1 });
  CHECK_INT(json_array_size(rows), distinct_names(NULL, NULL, -1));
  json_decref(rows);
}

/* Categories of rank r from the inputs: kernels summed per category, plus
 * the copy row (fx_summary's rule). */
static void expect_category(int r, const char *cat, int64_t *count,
                            int64_t *total)
{
  if (strcmp(cat, "copy") == 0) {
    *count += 1;
    *total += ranks[r].memcpy_ns;
    return;
  }
  for (size_t i = 0; i < ranks[r].nk; i++) {
    if (strcmp(ranks[r].k[i].category, cat) == 0) {
      *count += ranks[r].k[i].count;
      *total += ranks[r].k[i].total_ns;
    }
  }
}

static void store_categories_rows(void)
{
  int64_t device_all = 0;
  size_t i;
  json_t *rows, *row;

  for (int r = 0; r < NRANKS; r++) {
    int64_t device = rank_kernel_ns((size_t)r) + ranks[r].memcpy_ns;

    device_all += device;
    rows = query(TR_TABLE_categories, (struct store_query){ .rank = r });
    json_array_foreach(rows, i, row) {
      int64_t count = 0, total = 0;

      expect_category(r, json_string_value(json_object_get(row, "category")),
                      &count, &total);
      CHECK(count > 0);
      CHECK_INT(fx_int(row, "count"), count);
      CHECK_INT(fx_int(row, "total_ns"), total);
      check_share(row, share(total, device));
    }
    json_decref(rows);
  }
  rows = query(TR_TABLE_categories, (struct store_query){ .rank = -1 });
  json_array_foreach(rows, i, row) {
    int64_t count = 0, total = 0, n = 0;

    for (int r = 0; r < NRANKS; r++) {
      int64_t before = count;

      expect_category(r, json_string_value(json_object_get(row, "category")),
                      &count, &total);
      n += count > before;
    }
    CHECK_INT(fx_int(row, "count"), count);
    CHECK_INT(fx_int(row, "total_ns"), total);
    CHECK_INT(fx_int(row, "ranks"), n);
    check_share(row, share(total, device_all));
    if (i > 0)
      CHECK(fx_int(json_array_get(rows, i - 1), "total_ns") >= total);
  }
  json_decref(rows);
}

static void store_small_tables_all_ranks(void)
{
  int64_t memcpy_total = 0, median_max = 0, decode = 0, decode_total = 0;
  json_t *rows, *row;

  for (int r = 0; r < NRANKS; r++) {
    memcpy_total += ranks[r].memcpy_ns;
    if (ranks[r].runtime_median_ns > median_max)
      median_max = ranks[r].runtime_median_ns;
    for (size_t i = 0; i < ranks[r].ns; i++) {
      if (strcmp(ranks[r].s[i].kind, "decode") == 0) {
        decode += ranks[r].s[i].count;
        decode_total += ranks[r].s[i].total_ns;
      }
    }
  }
  rows = query(TR_TABLE_memcpy, (struct store_query){ .rank = -1 });
  row = tr_row_find(rows, "kind", "HtoD");
  CHECK_INT(fx_int(row, "total_ns"), memcpy_total);
  CHECK_INT(fx_int(row, "count"), NRANKS);
  CHECK_INT(fx_int(row, "bytes"), NRANKS * 4096);
  CHECK_INT(fx_int(row, "max_bytes"), 4096);
  json_decref(rows);
  rows = query(TR_TABLE_runtime, (struct store_query){ .rank = -1 });
  row = tr_row_find(rows, "name", "hipLaunchKernel");
  CHECK_INT(fx_int(row, "median_ns"), median_max); /* max of medians */
  CHECK_INT(fx_int(row, "count"), NRANKS * 3);
  json_decref(rows);
  rows = query(TR_TABLE_runtime, (struct store_query){ .rank = 2 });
  CHECK_INT(fx_int(json_array_get(rows, 0), "median_ns"),
            ranks[2].runtime_median_ns);
  json_decref(rows);
  rows = query(TR_TABLE_steps, (struct store_query){ .rank = -1 });
  row = tr_row_find(rows, "kind", "decode");
  CHECK_INT(fx_int(row, "count"), decode);
  CHECK_INT(fx_int(row, "total_ns"), decode_total);
  CHECK_INT(fx_int(row, "avg_ns"), decode_total / decode);
  CHECK_INT(fx_int(row, "tokens"), decode * 4);
  CHECK_INT(fx_int(row, "ranks"), NRANKS);
  CHECK_STR(json_string_value(json_object_get(row, "source")), "gpu");
  CHECK_STR(json_string_value(json_object_get(json_array_get(rows, 0), "kind")),
            "decode");
  json_decref(rows);
}

static void store_launches_and_phases(void)
{
  json_t *rows, *row, *grid;
  size_t i;
  int64_t total = 0;

  rows =
      query(TR_TABLE_launches, (struct store_query){ .rank = 0, .q = "gemm" });
  CHECK_INT(json_array_size(rows), 1);
  row = json_array_get(rows, 0);
  grid = json_object_get(row, "grid");
  CHECK_INT(json_integer_value(json_array_get(grid, 0)), k0[0].count);
  CHECK_INT(json_array_size(json_object_get(row, "block")), 3);
  CHECK_INT(fx_int(row, "registers_per_thread"), 64);
  CHECK(json_is_null(json_object_get(row, "shared_bytes")));
  json_decref(rows);
  /* All ranks: grouped by shape; the summed total of a name over its
   * shapes is the name's summed total. */
  rows = query(TR_TABLE_launches, (struct store_query){ .rank = -1 });
  json_array_foreach(rows, i, row) {
    if (strcmp(json_string_value(json_object_get(row, "name")), "gemm_a"))
      continue;
    total += fx_int(row, "total_ns");
  }
  CHECK_INT(total, expect("gemm_a").total);
  json_decref(rows);

  rows = query(TR_TABLE_phases, (struct store_query){ .rank = -1 });
  CHECK_INT(json_array_size(rows), NRANKS);
  json_array_foreach(rows, i, row) {
    CHECK_INT(fx_int(row, "rank"), i);
    CHECK_INT(fx_int(row, "index"), 0);
    CHECK_INT(fx_int(row, "busy_ns"), rank_kernel_ns(i));
    CHECK_STR(
        json_string_value(json_object_get(
            json_array_get(json_object_get(row, "top_kernels"), 0), "name")),
        ranks[i].k[0].name);
    CHECK(json_is_array(json_object_get(row, "top_launches")));
  }
  json_decref(rows);
  rows = query(TR_TABLE_phases, (struct store_query){ .rank = 1 });
  CHECK_INT(json_array_size(rows), 1);
  CHECK_INT(fx_int(json_array_get(rows, 0), "end_ns"), rank_kernel_ns(1));
  json_decref(rows);
}

static void check_err(int rc, int code, const char *field)
{
  CHECK_INT(rc, code);
  CHECK_STR(err.field, field);
  CHECK(err.msg[0] != '\0');
  tr_err_clear(&err);
}

static void store_query_rejects_bad_args(void)
{
  struct store_query q = { .capture_id = cap, .rank = -1, .sort = "total;" };
  json_t *rows = NULL;

  tr_err_clear(&err);
  check_err(store_table(st, TR_TABLE_kernels, &q, &rows, &err), TR_EINVAL,
            "sort");
  q.sort = NULL;
  q.rank = -2;
  check_err(store_table(st, TR_TABLE_kernels, &q, &rows, &err), TR_EINVAL,
            "rank");
  q.rank = 0;
  q.limit = -1;
  check_err(store_table(st, TR_TABLE_runtime, &q, &rows, &err), TR_EINVAL,
            "limit");
  q.limit = 0;
  q.rank = NRANKS;
  check_err(store_table(st, TR_TABLE_steps, &q, &rows, &err), TR_ENOTFOUND,
            "rank");
  q.rank = 0;
  q.capture_id = cap + 100;
  check_err(store_table(st, TR_TABLE_phases, &q, &rows, &err), TR_ENOTFOUND,
            "id");
  CHECK(rows == NULL);
}

/* The done ranks' files for an all-ranks slice: in rank order, the failed
 * rank left out, bounded. */
static void check_rank_traces(int64_t id)
{
  struct store_trace t[NRANKS + 1];
  size_t n = 0;

  CHECK_INT(store_rank_traces(st, id, t, NRANKS + 1, &n, &err), 0);
  CHECK_INT(n, NRANKS);
  for (size_t i = 0; i < n; i++) {
    CHECK_INT(t[i].rank, (int)i);
    free(t[i].path);
  }
  check_err(store_rank_traces(st, id, t, NRANKS - 1, &n, &err), TR_ELIMIT,
            "rank");
  check_err(store_rank_traces(st, 424242, t, NRANKS, &n, &err), TR_ENOTFOUND,
            "id");
}
static void store_capture_get_ranks(void)
{
  json_t *c, *rs, *r0, *bad, *counts;
  char *file = NULL;

  CHECK_INT(store_rank_fail(st, cap, NRANKS, "rank_3",
                            "truncated gzip at byte 77", &err),
            0);
  CHECK_INT(store_capture_get(st, cap, &c, &err), 0);
  rs = json_object_get(c, "ranks");
  CHECK_INT(json_array_size(rs), NRANKS + 1);
  r0 = json_array_get(rs, 0);
  CHECK_INT(fx_int(r0, "rank"), 0);
  CHECK_STR(json_string_value(json_object_get(r0, "label")), "rank_0");
  CHECK_STR(json_string_value(json_object_get(r0, "status")), "done");
  CHECK_INT(fx_int(r0, "kernel_ns"), rank_kernel_ns(0));
  CHECK_INT(fx_int(r0, "distinct_kernels"), ranks[0].nk);
  CHECK_STR(json_string_value(json_object_get(r0, "device")),
            "AMD Instinct MI300X");
  CHECK(json_object_get(r0, "kernels") == NULL);
  CHECK(json_object_get(r0, "launches") == NULL);
  CHECK(json_object_get(r0, "error") == NULL);
  CHECK_INT(json_array_size(json_object_get(r0, "steps")), ranks[0].ns);
  CHECK(json_array_size(json_object_get(r0, "categories")) > 0);
  CHECK_INT(json_array_size(json_object_get(r0, "memcpy")), 1);
  bad = json_array_get(rs, NRANKS);
  CHECK_STR(json_string_value(json_object_get(bad, "status")), "failed");
  CHECK_STR(json_string_value(json_object_get(bad, "error")),
            "truncated gzip at byte 77");
  CHECK(json_object_get(bad, "kernel_ns") == NULL);

  CHECK_INT(store_rank_file(st, cap, 1, &file, &err), 0);
  CHECK_STR(file, "/traces/rank_1.pt.trace.json.gz");
  free(file);
  /* A failed rank keeps no path: nothing can serve its file. */
  CHECK(json_is_null(json_object_get(bad, "file")));
  check_err(store_rank_file(st, cap, NRANKS, &file, &err), TR_ENOTFOUND,
            "rank");
  json_decref(c);
  check_err(store_rank_file(st, cap, 42, &file, &err), TR_ENOTFOUND, "rank");
  check_rank_traces(cap);
  check_err(
      store_table(st, TR_TABLE_kernels,
                  &(struct store_query){ .capture_id = cap, .rank = NRANKS },
                  &c, &err),
      TR_ENOTFOUND, "rank");
  CHECK_INT(store_status_counts(st, &counts, &err), 0);
  CHECK_INT(fx_int(counts, "done"), 1);
  CHECK_INT(fx_int(counts, "queued"), 0);
  json_decref(counts);
}

/* A summary that breaks at row 1 of table key: dropping member of that
 * row. Inserting it must leave nothing of the rank behind. */
static void check_all_or_nothing(const char *key, const char *member)
{
  static const char *const tables[] = { "ranks",      "kernels", "launches",
                                        "categories", "memcpy",  "runtime",
                                        "steps",      "phases",  "names" };
  json_t *sum = fx_summary(7, &ranks[1]), *rows = NULL;
  json_t *arr = json_object_get(sum, key);
  int64_t before[9];
  char sql[64];

  if (json_array_size(arr) < 2)
    json_array_append(arr, json_array_get(arr, 0));
  json_object_del(json_array_get(arr, 1), member);
  for (size_t i = 0; i < 9; i++) {
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i]);
    before[i] = fx_count(path, sql, -1);
  }
  /* A name only this rank has: its interning must be undone too. */
  json_object_set_new(json_array_get(json_object_get(sum, "kernels"), 0),
                      "name", json_string("only_in_broken_rank"));
  CHECK_INT(store_rank_insert(st, cap, 7, "rank_7", sum, &err), TR_EINVAL);
  CHECK(strstr(err.msg, key) != NULL);
  CHECK(strstr(err.msg, member) != NULL);
  tr_err_clear(&err);
  for (size_t i = 0; i < 9; i++) {
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i]);
    CHECK_INT(fx_count(path, sql, -1), before[i]);
  }
  check_err(store_table(st, TR_TABLE_kernels,
                        &(struct store_query){ .capture_id = cap, .rank = 7 },
                        &rows, &err),
            TR_ENOTFOUND, "rank");
  json_decref(sum);
}

static void store_rank_insert_all_or_nothing(void)
{
  json_t *sum = fx_summary(8, &ranks[0]);

  check_all_or_nothing("kernels", "total_ns");
  check_all_or_nothing("phases", "top_kernels"); /* the last table */
  check_all_or_nothing("steps", "source");
  /* A scalar of the summary itself. */
  json_object_del(sum, "gpu_busy_ns");
  CHECK_INT(store_rank_insert(st, cap, 8, "rank_8", sum, &err), TR_EINVAL);
  CHECK(strstr(err.msg, "gpu_busy_ns") != NULL);
  tr_err_clear(&err);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM ranks WHERE rank = 8", -1), 0);
  json_decref(sum);
}

int main(void)
{
  fx_db_path(path, sizeof(path));
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  cap = fx_capture(st, "m/A", 3, ranks, NRANKS);
  RUN(store_kernels_per_rank);
  RUN(store_kernels_all_ranks);
  RUN(store_kernels_sort_and_limit);
  RUN(store_kernels_filters);
  RUN(store_categories_rows);
  RUN(store_small_tables_all_ranks);
  RUN(store_launches_and_phases);
  RUN(store_query_rejects_bad_args);
  RUN(store_rank_insert_all_or_nothing);
  RUN(store_capture_get_ranks);
  store_close(st);
  fx_db_remove(path);
  return 0;
}
