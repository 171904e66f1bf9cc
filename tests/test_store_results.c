/*
 * A capture's finish (store/results.c, sums.c): the all-ranks tables
 * summed once and stored answer exactly what summing the ranks' rows
 * answers, for every table and every filter, sort and limit, as JSON and
 * as the text the route sends (store_table_text()); a rank stored again
 * drops them; a finish needs a running capture. Real traces indexed by
 * idx_file() are the ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "tests/check.h"
#include "tests/test_store_traces.h"
#include "tests/test_store_util.h"

static const char *const traces[] = {
  "torch113cpu__atom_run_labels.pt.trace.json.gz",
  "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
  "tracelens__vllm_decode_full_graph_execution.json.gz",
  "tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
  "tracelens__mi300_resnet_act_checkpoint.json.gz"
};
enum { NTRACES = sizeof(traces) / sizeof(traces[0]) };

/* A table as the routes ask for it over all ranks. */
struct ask {
  enum tr_table t;
  struct store_query q;
};

/* Every rank, no limit unless given. */
#define ALL(...)                                                               \
  {                                                                            \
    .rank = -1, __VA_ARGS__                                                    \
  }

static const struct ask asks[] = {
  { TR_TABLE_kernels, ALL(.limit = 0) },
  { TR_TABLE_kernels, ALL(.limit = 3) },
  { TR_TABLE_kernels, ALL(.limit = 100000, .sort = "total") },
  { TR_TABLE_kernels, ALL(.sort = "count") },
  { TR_TABLE_kernels, ALL(.sort = "avg", .limit = 7) },
  { TR_TABLE_kernels, ALL(.sort = "name") },
  { TR_TABLE_kernels, ALL(.q = "GEMM") },
  { TR_TABLE_kernels, ALL(.category = "elementwise") },
  { TR_TABLE_kernels, ALL(.family = "triton_poi_fused_add") },
  { TR_TABLE_launches, ALL(.limit = 0) },
  { TR_TABLE_launches, ALL(.q = "kernel", .limit = 5) },
  { TR_TABLE_categories, ALL(.limit = 0) },
  { TR_TABLE_memcpy, ALL(.limit = 0) },
  { TR_TABLE_runtime, ALL(.sort = "count") },
  { TR_TABLE_runtime, ALL(.q = "launch") },
  { TR_TABLE_steps, ALL(.limit = 0) },
  { TR_TABLE_step_buckets, ALL(.limit = 0) },
  { TR_TABLE_step_buckets, ALL(.kind = "decode") },
  { TR_TABLE_step_histogram, ALL(.kind = "prefill") },
  { TR_TABLE_families, ALL(.limit = 0) },
  { TR_TABLE_families, ALL(.q = "gemm", .sort = "count") },
  { TR_TABLE_families, ALL(.category = "gemm") },
  { TR_TABLE_family_steps, ALL(.limit = 0) },
  { TR_TABLE_idle, ALL(.limit = 0) },
  { TR_TABLE_idle, ALL(.by = "step") },
  { TR_TABLE_critical_kinds, ALL(.limit = 0) },
  { TR_TABLE_critical_kinds, ALL(.kind = "decode") },
  { TR_TABLE_kernel_paths, ALL(.limit = 0) },
  { TR_TABLE_kernel_paths, ALL(.q = "gemm", .kind = "decode", .limit = 5) },
  { TR_TABLE_family_paths, ALL(.limit = 0) },
  { TR_TABLE_family_paths, ALL(.q = "elementwise") },
  { TR_TABLE_idle_culprits, ALL(.limit = 0) },
  { TR_TABLE_idle_culprits, ALL(.kind = "decode") },
  { TR_TABLE_kernel_sequences, ALL(.limit = 0) },
  { TR_TABLE_kernel_sequences, ALL(.q = "gemm", .limit = 3) },
};
enum { NASKS = sizeof(asks) / sizeof(asks[0]) };

static char *answer(struct store *st, const struct ask *a, int64_t cap)
{
  struct store_query q = a->q;
  struct tr_err err = { 0 };
  json_t *rows = NULL;
  char *text;

  q.capture_id = cap;
  CHECK_INT(store_table(st, a->t, &q, &rows, &err), 0);
  text = tr_json_dumps(rows, JSON_COMPACT); /* as the routes write it */
  json_decref(rows);
  CHECK(text != NULL);
  return text;
}

static int64_t indexed_capture(struct store *st)
{
  struct tr_err err = { 0 };
  int64_t cap;

  CHECK_INT(store_capture_insert(st, "import", "sums", NULL, 0, &cap, &err), 0);
  fx_index_ranks(st, cap, traces, NTRACES);
  return cap;
}

static void finish(struct store *st, int64_t cap)
{
  struct store_finish f = { NULL, 5 };
  struct tr_err err = { 0 };
  json_t *v = NULL;

  CHECK_INT(store_capture_finish(st, cap, &f, &v, &err), 0);
  CHECK_STR(json_string_value(json_object_get(v, "verdict")), "incomparable");
  json_decref(v);
}

/* The text the route sends for a; 1 when there are no sums to send. */
static int text_of(struct store *st, const struct ask *a, int64_t cap,
                   char **out)
{
  struct store_query q = a->q;
  struct tr_buf b = { 0 };
  struct tr_err err = { 0 };
  int rc;

  q.capture_id = cap;
  rc = store_table_text(st, a->t, &q, &b, &err);
  *out = b.p;
  return rc;
}

static void store_sums_are_the_live_answer(void)
{
  struct tr_err err = { 0 };
  struct store *st = NULL;
  char path[256], *live[NASKS], *text;
  int64_t cap;

  fx_db_path(path, sizeof(path));
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  cap = indexed_capture(st);
  for (int i = 0; i < NASKS; i++) {
    live[i] = answer(st, &asks[i], cap);
    CHECK_INT(text_of(st, &asks[i], cap, &text), 1); /* not summed yet */
    free(text);
  }
  finish(st, cap);
  CHECK(fx_count(path, "SELECT count(*) FROM sum_rows WHERE capture_id = ?1",
                 cap) > 100);
  for (int i = 0; i < NASKS; i++) {
    char *summed = answer(st, &asks[i], cap);

    if (strcmp(summed, live[i]) != 0)
      fprintf(stderr, "%s #%d:\n live   %.300s\n summed %.300s\n",
              tr_tables[asks[i].t].name, i, live[i], summed);
    CHECK_STR(summed, live[i]);
    CHECK_INT(text_of(st, &asks[i], cap, &text), 1); /* running, not done */
    free(text);
    free(summed);
  }
  CHECK_INT(store_capture_set_phase(st, cap, "done", "done", &err), 0);
  for (int i = 0; i < NASKS; i++) {
    CHECK_INT(text_of(st, &asks[i], cap, &text), 0);
    CHECK_STR(text, live[i]);
    free(text);
    free(live[i]);
  }
  store_close(st);
  fx_db_remove(path);
}

static void store_finish_rules(void)
{
  struct store_query q = { .rank = -1, .limit = -1 };
  struct store_finish f = { NULL, 5 };
  struct tr_err err = { 0 };
  struct tr_buf b = { 0 };
  struct store *st = NULL;
  json_t *v = NULL, *sum = NULL;
  char path[256];
  int64_t cap;

  fx_db_path(path, sizeof(path));
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  cap = indexed_capture(st);
  finish(st, cap);
  /* A rank stored again: the sums and the verdict go. */
  q.capture_id = cap;
  CHECK_INT(store_table(st, TR_TABLE_kernels,
                        &(struct store_query){ .capture_id = cap, .rank = 0 },
                        &sum, &err),
            0);
  json_decref(sum);
  fx_index_rank(st, cap, 0, traces[0]);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM sum_rows WHERE capture_id = ?1",
                     cap),
            0);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM capture_results WHERE"
                     " capture_id = ?1",
                     cap),
            0);
  /* Bad asks are refused before anything is read. */
  CHECK_INT(store_table_text(st, TR_TABLE_kernels, &q, &b, &err), TR_EINVAL);
  CHECK_STR(err.field, "limit");
  tr_buf_free(&b);
  /* Only a running capture finishes. */
  CHECK_INT(store_capture_set_phase(st, cap, "failed", "indexing", &err), 0);
  tr_err_clear(&err);
  CHECK_INT(store_capture_finish(st, cap, &f, &v, &err), TR_ECONFLICT);
  CHECK_STR(err.field, "status");
  store_close(st);
  fx_db_remove(path);
}

int main(void)
{
  RUN(store_sums_are_the_live_answer);
  RUN(store_finish_rules);
  return 0;
}
