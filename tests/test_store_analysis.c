/*
 * store: the analysis tables out (idle by cause, the re-binned timeline,
 * families, kernels of a family, /diff by family, the critical path).
 * Every expected figure is computed here from the hand-written inputs
 * (test_store_util.c makes the summaries: idle split 1/3 host_late, the
 * rest sync; two timeline buckets; a kernel's family is its name up to
 * '#'; the even-indexed kernels on the critical path for half their
 * time).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "tests/check.h"
#include "tests/test_store_util.h"

static struct tr_err err;

/* The same GEMM at two tiles on rank 0, at a third in run b. */
static const struct fx_kernel ka[] = {
  { "gemm#128x128", "gemm", 10, 1000, 50, 200, 100 },
  { "gemm#64x256", "gemm", 4, 600, 100, 200, 150 },
  { "norm", "normalization", 6, 120, 10, 30, 20 }
};
static const struct fx_kernel kb[] = {
  { "gemm#256x64", "gemm", 12, 1500, 80, 180, 120 },
  { "norm", "normalization", 6, 110, 10, 25, 18 }
};
static const struct fx_step steps[] = { { "decode", 10, 5000 } };
static const struct fx_rank ra[] = { { ka, 3, steps, 1, 400, 7 },
                                     { kb, 2, steps, 1, 300, 5 } };
static const struct fx_rank rb[] = { { kb, 2, steps, 1, 350, 5 } };

static json_t *query(struct store *st, enum tr_table t, struct store_query q)
{
  json_t *rows = NULL;

  tr_err_clear(&err);
  if (store_table(st, t, &q, &rows, &err) != 0) {
    fprintf(stderr, "query: %s (%s)\n", err.msg, err.field);
    exit(1);
  }
  return rows;
}

static int64_t device_ns(const struct fx_rank *r)
{
  int64_t ns = r->memcpy_ns;

  for (size_t i = 0; i < r->nk; i++)
    ns += r->k[i].total_ns;
  return ns;
}

static int64_t idle_of(const struct fx_rank *r)
{
  return 1000000 - device_ns(r); /* the fixtures' span is 1 ms */
}

static void check_share(json_t *row, int64_t num, int64_t den)
{
  double got = json_real_value(json_object_get(row, "share"));

  CHECK(fabs(got - round((double)num / (double)den * 1e6) / 1e6) < 1e-12);
}

static void store_idle_sums(struct store *st, int64_t cap)
{
  int64_t total = idle_of(&ra[0]) + idle_of(&ra[1]);
  int64_t late = idle_of(&ra[0]) / 3 + idle_of(&ra[1]) / 3;
  json_t *rows = query(st, TR_TABLE_idle,
                       (struct store_query){ .capture_id = cap, .rank = 1 });
  json_t *late_row = tr_row_find(rows, "cause", "host_late");

  CHECK_INT(json_array_size(rows), 2);
  CHECK_INT(fx_int(late_row, "idle_ns"), idle_of(&ra[1]) / 3);
  CHECK_INT(fx_int(tr_row_find(rows, "cause", "sync"), "idle_ns"),
            idle_of(&ra[1]) - idle_of(&ra[1]) / 3);
  check_share(late_row, idle_of(&ra[1]) / 3, idle_of(&ra[1]));
  CHECK(json_object_get(late_row, "ranks") == NULL);
  json_decref(rows);
  rows = query(st, TR_TABLE_idle,
               (struct store_query){ .capture_id = cap, .rank = -1 });
  late_row = tr_row_find(rows, "cause", "host_late");
  CHECK_INT(fx_int(late_row, "idle_ns"), late);
  CHECK_INT(fx_int(late_row, "ranks"), 2);
  check_share(late_row, late, total);
  /* Largest first. */
  CHECK_STR(
      json_string_value(json_object_get(json_array_get(rows, 0), "cause")),
      "sync");
  json_decref(rows);
  rows =
      query(st, TR_TABLE_idle,
            (struct store_query){ .capture_id = cap, .rank = 0, .by = "step" });
  CHECK_INT(json_array_size(rows), 2);
  CHECK(json_is_null(json_object_get(json_array_get(rows, 0), "step")));
  json_decref(rows);
  CHECK_INT(store_table(st, TR_TABLE_idle,
                        &(struct store_query){
                            .capture_id = cap, .rank = -1, .by = "kind" },
                        &rows, &err),
            TR_EINVAL);
  CHECK_STR(err.field, "by");
}

/* Two stored buckets per rank: re-binned into one they sum to busy. */
static void store_timeline_rebins(struct store *st, int64_t cap)
{
  json_t *rows =
      query(st, TR_TABLE_timeline,
            (struct store_query){ .capture_id = cap, .rank = 0, .buckets = 1 });
  json_t *row = json_array_get(rows, 0);

  CHECK_INT(json_array_size(rows), 1);
  CHECK_INT(fx_int(row, "busy_ns"), device_ns(&ra[0]));
  CHECK_INT(fx_int(json_object_get(row, "by_category"), "gemm"),
            device_ns(&ra[0]));
  CHECK_INT(fx_int(row, "start_ns"), 0);
  CHECK_INT(fx_int(row, "end_ns"), 1000000);
  CHECK(json_is_null(json_object_get(row, "step")));
  CHECK(json_object_get(row, "rank") == NULL);
  json_decref(rows);
  rows = query(st, TR_TABLE_timeline,
               (struct store_query){ .capture_id = cap, .rank = -1 });
  CHECK_INT(json_array_size(rows), 4); /* as stored: 2 per rank */
  CHECK_INT(fx_int(json_array_get(rows, 2), "rank"), 1);
  CHECK_INT(fx_int(json_array_get(rows, 2), "busy_ns") +
                fx_int(json_array_get(rows, 3), "busy_ns"),
            device_ns(&ra[1]));
  json_decref(rows);
  CHECK_INT(store_table(st, TR_TABLE_timeline,
                        &(struct store_query){
                            .capture_id = cap, .rank = -1, .buckets = 5000 },
                        &rows, &err),
            TR_EINVAL);
  CHECK_STR(err.field, "buckets");
}

/* Families sum their names; kernels?family= gives exactly its names. */
static void store_families_rows(struct store *st, int64_t cap)
{
  json_t *rows = query(st, TR_TABLE_families,
                       (struct store_query){ .capture_id = cap, .rank = 0 });
  json_t *gemm = tr_row_find(rows, "family", "gemm");

  CHECK_INT(json_array_size(rows), 2);
  CHECK_INT(fx_int(gemm, "kernels"), 2);
  CHECK_INT(fx_int(gemm, "count"), 14);
  CHECK_INT(fx_int(gemm, "total_ns"), 1600);
  CHECK_INT(fx_int(gemm, "avg_ns"), 1600 / 14);
  check_share(gemm, 1600, 1720);
  json_decref(rows);
  rows = query(st, TR_TABLE_families,
               (struct store_query){ .capture_id = cap, .rank = -1 });
  gemm = tr_row_find(rows, "family", "gemm");
  CHECK_INT(fx_int(gemm, "total_ns"), 1600 + 1500);
  CHECK_INT(fx_int(gemm, "ranks"), 2);
  CHECK_INT(fx_int(gemm, "kernels"), 2); /* the most of one rank */
  json_decref(rows);
  rows = query(
      st, TR_TABLE_kernels,
      (struct store_query){ .capture_id = cap, .rank = -1, .family = "gemm" });
  CHECK_INT(json_array_size(rows), 3);
  CHECK(tr_row_find(rows, "name", "norm") == NULL);
  json_decref(rows);
}

/* By kernel the tiles are only_a/only_b; by family they are one row. */
static void store_diff_by_family(struct store *st, int64_t a, int64_t b)
{
  struct store_diff_opts o = { .rank = 0, .by = "kernel" };
  json_t *out = NULL, *row;

  CHECK_INT(store_diff(st, a, b, &o, &out, &err), 0);
  CHECK_STR(
      json_string_value(json_object_get(
          tr_row_find(json_object_get(out, "rows"), "name", "gemm#64x256"),
          "status")),
      "only_a");
  json_decref(out);
  o.by = "family";
  CHECK_INT(store_diff(st, a, b, &o, &out, &err), 0);
  row = tr_row_find(json_object_get(out, "rows"), "family", "gemm");
  CHECK_STR(json_string_value(json_object_get(row, "status")), "both");
  CHECK_INT(fx_int(row, "a_total_ns"), 1600);
  CHECK_INT(fx_int(row, "b_total_ns"), 1500);
  CHECK_INT(fx_int(row, "delta_ns"), -100);
  json_decref(out);
}

/* The critical path tables (test_store_util.c's critical_rows()): on_path
 * keeps the kernels on a path, on one rank and over all; a step is picked
 * by index or role; the per-kind rows and culprits sum over ranks. */
static void store_critical_rows(struct store *st, int64_t cap)
{
  json_t *rows = query(
      st, TR_TABLE_kernels,
      (struct store_query){ .capture_id = cap, .rank = 0, .on_path = true });

  CHECK_INT(json_array_size(rows), 2); /* ka[0] and ka[2] */
  CHECK_INT(fx_int(tr_row_find(rows, "name", "norm"), "critical_ns"), 120 / 2);
  CHECK(tr_row_find(rows, "name", "gemm#64x256") == NULL);
  json_decref(rows);
  rows = query(
      st, TR_TABLE_kernels,
      (struct store_query){ .capture_id = cap, .rank = -1, .on_path = true });
  CHECK_INT(json_array_size(rows), 3); /* and gemm#256x64 of rank 1 */
  /* On rank 0's path, not rank 1's: both ranks' rows summed. */
  CHECK_INT(fx_int(tr_row_find(rows, "name", "norm"), "critical_ns"), 120 / 2);
  CHECK_INT(fx_int(tr_row_find(rows, "name", "norm"), "total_ns"), 120 + 110);
  CHECK_INT(fx_int(tr_row_find(rows, "name", "norm"), "ranks"), 2);
  CHECK_INT(fx_int(tr_row_find(rows, "name", "gemm#256x64"), "critical_ns"),
            1500 / 2);
  json_decref(rows);
  rows = query(
      st, TR_TABLE_families,
      (struct store_query){ .capture_id = cap, .rank = -1, .on_path = true });
  CHECK_INT(fx_int(tr_row_find(rows, "family", "gemm"), "critical_ns"),
            1000 / 2 + 1500 / 2);
  json_decref(rows);
  rows = query(st, TR_TABLE_critical_kinds,
               (struct store_query){ .capture_id = cap, .rank = -1 });
  CHECK_INT(json_array_size(rows), 1);
  CHECK_INT(fx_int(json_array_get(rows, 0), "length_ns"), 2 * 5000 * 3 / 4);
  CHECK_INT(fx_int(json_array_get(rows, 0), "kernels_on_path"), 10 + 6 + 12);
  CHECK_INT(fx_int(json_array_get(rows, 0), "ranks"), 2);
  json_decref(rows);
  rows = query(
      st, TR_TABLE_critical_segments,
      (struct store_query){ .capture_id = cap, .rank = 1, .step = "median" });
  CHECK_INT(json_array_size(rows), 2);
  CHECK_STR(json_string_value(json_object_get(json_array_get(rows, 1), "what")),
            "gemm#256x64");
  CHECK_STR(json_string_value(json_object_get(json_array_get(rows, 1), "kind")),
            "kernel");
  json_decref(rows);
  rows =
      query(st, TR_TABLE_critical_segments,
            (struct store_query){
                .capture_id = cap, .rank = -1, .step = "0", .kind = "decode" });
  CHECK_INT(json_array_size(rows), 4); /* two stretches a rank */
  CHECK_INT(fx_int(json_array_get(rows, 3), "rank"), 1);
  json_decref(rows);
  rows =
      query(st, TR_TABLE_critical_steps,
            (struct store_query){ .capture_id = cap, .rank = 0, .step = "1" });
  CHECK_INT(json_array_size(rows), 0);
  json_decref(rows);
  rows = query(st, TR_TABLE_idle_culprits,
               (struct store_query){ .capture_id = cap, .rank = -1 });
  CHECK_INT(fx_int(tr_row_find(rows, "culprit", "_prepare_inputs"), "idle_ns"),
            idle_of(&ra[0]) / 3 + idle_of(&ra[1]) / 3);
  json_decref(rows);
  rows =
      query(st, TR_TABLE_kernel_sequences,
            (struct store_query){ .capture_id = cap, .rank = -1, .q = "NORM" });
  CHECK_INT(json_array_size(rows), 1);
  CHECK_STR(
      json_string_value(json_object_get(json_array_get(rows, 0), "sequence")),
      "gemm > norm");
  json_decref(rows);
  CHECK_INT(store_table(st, TR_TABLE_critical_segments,
                        &(struct store_query){
                            .capture_id = cap, .rank = 0, .step = "fastest" },
                        &rows, &err),
            TR_EINVAL);
  CHECK_STR(err.field, "step");
}

/* By sequence: the step kind and families of a sequence match. */
static void store_diff_by_sequence(struct store *st, int64_t a, int64_t b)
{
  struct store_diff_opts o = { .rank = 0, .by = "sequence" };
  json_t *out = NULL, *row;

  CHECK_INT(store_diff(st, a, b, &o, &out, &err), 0);
  row = tr_row_find(json_object_get(out, "rows"), "sequence",
                    "decode: gemm > gemm");
  CHECK_STR(json_string_value(json_object_get(row, "status")), "only_a");
  row = tr_row_find(json_object_get(out, "rows"), "sequence",
                    "decode: gemm > norm");
  CHECK_STR(json_string_value(json_object_get(row, "status")), "only_b");
  CHECK_INT(fx_int(row, "b_count"), 10);
  json_decref(out);
}

int main(void)
{
  struct store *st = NULL;
  char path[256];
  int64_t a, b;

  fx_db_path(path, sizeof(path));
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  a = fx_capture(st, "m", 2, ra, 2);
  b = fx_capture(st, "m", 1, rb, 1);
  fprintf(stderr, "-- store_idle_sums\n");
  store_idle_sums(st, a);
  fprintf(stderr, "-- store_timeline_rebins\n");
  store_timeline_rebins(st, a);
  fprintf(stderr, "-- store_families_rows\n");
  store_families_rows(st, a);
  fprintf(stderr, "-- store_diff_by_family\n");
  store_diff_by_family(st, a, b);
  fprintf(stderr, "-- store_critical_rows\n");
  store_critical_rows(st, a);
  fprintf(stderr, "-- store_diff_by_sequence\n");
  store_diff_by_sequence(st, a, b);
  store_close(st);
  fx_db_remove(path);
  return 0;
}
