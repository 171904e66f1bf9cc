/*
 * store with real summaries: a few real traces from $TRACES_DIR indexed by
 * idx_file(), stored as the ranks of one capture, then read back through
 * the route queries: every row of every table of each summary must come
 * back with every member equal, and the all-ranks kernel rows must be the
 * sums of the summaries'.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "index/index.h"
#include "tests/check.h"
#include "tests/test_store_util.h"

static const char *const traces[] = {
  "torch113cpu__atom_run_labels.pt.trace.json.gz",
  "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
  "tracelens__vllm_decode_full_graph_execution.json.gz",
  "hta__alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
  "tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
  "tracelens__mi300_resnet_act_checkpoint.json.gz"
};
enum { NTRACES = sizeof(traces) / sizeof(traces[0]) };

struct table {
  const char *key;
  enum tr_table t;
  const char *id[5]; /* members that identify a row */
};

static const struct table tables[] = {
  { "kernels", TR_TABLE_kernels, { "name" } },
  { "launches",
    TR_TABLE_launches,
    { "name", "grid", "block", "registers_per_thread", "shared_bytes" } },
  { "categories", TR_TABLE_categories, { "category" } },
  { "memcpy", TR_TABLE_memcpy, { "kind" } },
  { "runtime", TR_TABLE_runtime, { "name" } },
  { "steps", TR_TABLE_steps, { "kind" } },
  { "phases", TR_TABLE_phases, { "index" } }
};

static bool same_id(const struct table *t, json_t *a, json_t *b)
{
  for (size_t i = 0; i < 5 && t->id[i] != NULL; i++) {
    json_t *x = json_object_get(a, t->id[i]), *y = json_object_get(b, t->id[i]);

    if (x == NULL || y == NULL || !json_equal(x, y))
      return false;
  }
  return true;
}

/* want is in got: objects member by member (got may have more), arrays
 * element by element, reals within 1e-9, the rest equal. */
static bool near(json_t *want, json_t *got)
{
  const char *key;
  json_t *v;
  size_t i;

  if (json_is_real(want) && json_is_real(got))
    return fabs(json_real_value(want) - json_real_value(got)) < 1e-9;
  if (json_is_object(want) && json_is_object(got)) {
    json_object_foreach(want, key, v) {
      if (!near(v, json_object_get(got, key)))
        return false;
    }
    return true;
  }
  if (json_is_array(want) && json_is_array(got)) {
    if (json_array_size(want) != json_array_size(got))
      return false;
    json_array_foreach(want, i, v) {
      if (!near(v, json_array_get(got, i)))
        return false;
    }
    return true;
  }
  return got != NULL && json_equal(want, got);
}

static void check_members(const char *what, json_t *want, json_t *got)
{
  if (!near(want, got)) {
    char *a = json_dumps(want, JSON_COMPACT), *b = json_dumps(got, 0);

    fprintf(stderr, "%s differs\n want %.2000s\n got  %.2000s\n", what, a,
            b ? b : "(none)");
    exit(1);
  }
}

static void check_table(struct store *st, int64_t cap, int rank,
                        const struct table *t, json_t *summary)
{
  struct store_query q = { .capture_id = cap, .rank = rank };
  json_t *want = json_object_get(summary, t->key), *got = NULL, *w;
  struct tr_err err = { 0 };
  size_t i;

  CHECK_INT(store_table(st, t->t, &q, &got, &err), 0);
  CHECK_INT(json_array_size(got), json_array_size(want));
  json_array_foreach(want, i, w) {
    json_t *g = NULL;

    for (size_t j = 0; j < json_array_size(got) && g == NULL; j++) {
      if (same_id(t, w, json_array_get(got, j)))
        g = json_array_get(got, j);
    }
    CHECK(g != NULL);
    check_members(t->key, w, g);
  }
  json_decref(got);
}

/* Summed over the summaries, for one kernel name. */
static void check_sums(struct store *st, int64_t cap, json_t **sums)
{
  struct store_query q = { .capture_id = cap, .rank = -1 };
  struct tr_err err = { 0 };
  json_t *rows = NULL, *row;
  size_t i;

  CHECK_INT(store_table(st, TR_TABLE_kernels, &q, &rows, &err), 0);
  CHECK(json_array_size(rows) > 0);
  json_array_foreach(rows, i, row) {
    const char *name = json_string_value(json_object_get(row, "name"));
    int64_t count = 0, total = 0, nranks = 0;

    for (size_t r = 0; r < NTRACES; r++) {
      json_t *k =
          tr_row_find(json_object_get(sums[r], "kernels"), "name", name);

      if (k != NULL) {
        count += fx_int(k, "count");
        total += fx_int(k, "total_ns");
        nranks++;
      }
    }
    CHECK_INT(fx_int(row, "count"), count);
    CHECK_INT(fx_int(row, "total_ns"), total);
    CHECK_INT(fx_int(row, "ranks"), nranks);
  }
  json_decref(rows);
}

static void store_real_summaries_round_trip(void)
{
  const char *dir = getenv("TRACES_DIR");
  struct idx_options opt = { .format = IDX_FORMAT_AUTO, .rank = -1 };
  struct tr_err err = { 0 };
  json_t *sums[NTRACES], *cap_obj;
  struct store *st = NULL;
  char path[256], file[1024];
  int64_t cap;

  CHECK(dir != NULL);
  fx_db_path(path, sizeof(path));
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  CHECK_INT(store_capture_insert(st, "import", "real", NULL, 0, &cap, &err), 0);
  for (int r = 0; r < NTRACES; r++) {
    snprintf(file, sizeof(file), "%s/%s", dir, traces[r]);
    if (idx_file(file, &opt, &sums[r], &err) != 0) {
      fprintf(stderr, "idx_file %s: %s\n", file, err.msg);
      exit(1);
    }
    fprintf(stderr, "   %s: %zu kernels, %zu launches, %zu steps\n", traces[r],
            json_array_size(json_object_get(sums[r], "kernels")),
            json_array_size(json_object_get(sums[r], "launches")),
            json_array_size(json_object_get(sums[r], "steps")));
    if (store_rank_insert(st, cap, r, traces[r], sums[r], &err) != 0) {
      fprintf(stderr, "store %s: %s\n", traces[r], err.msg);
      exit(1);
    }
  }
  for (int r = 0; r < NTRACES; r++) {
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
      check_table(st, cap, r, &tables[t], sums[r]);
  }
  check_sums(st, cap, sums);
  /* The capture object's ranks: the summaries without the long tables. */
  CHECK_INT(store_capture_get(st, cap, &cap_obj, &err), 0);
  for (int r = 0; r < NTRACES; r++) {
    json_t *want = json_deep_copy(sums[r]);
    json_t *got = json_array_get(json_object_get(cap_obj, "ranks"), (size_t)r);

    json_object_set_new(want, "trace_rank",
                        json_incref(json_object_get(want, "rank")));
    json_object_set_new(want, "rank", json_integer(r));
    /* The short form: every table but categories, memcpy and steps goes
     * (kernels, launches, runtime, phases and the analysis' tables). */
    {
      const char *key;
      json_t *v;
      void *tmp;

      json_object_foreach_safe(want, tmp, key, v) {
        if (json_is_array(v) && strcmp(key, "categories") != 0 &&
            strcmp(key, "memcpy") != 0 && strcmp(key, "steps") != 0)
          json_object_del(want, key);
      }
    }
    check_members("ranks", want, got);
    json_decref(want);
    json_decref(sums[r]);
  }
  json_decref(cap_obj);
  store_close(st);
  fx_db_remove(path);
}

int main(void)
{
  RUN(store_real_summaries_round_trip);
  return 0;
}
