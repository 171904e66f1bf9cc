/*
 * store under threads: a read-only connection reading while another thread
 * stores large ranks sees each rank whole or not at all and never
 * SQLITE_BUSY; concurrent writers on their own connections never fail.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/test_store_util.h"

enum { NKERNELS = 20000, NRANKS = 3, NPHASES = 300 };

static char path[256];
static int64_t cap, other;
static struct fx_kernel kernels[NKERNELS];
static char names[NKERNELS][16];
static atomic_int writers_done;

static void *insert_ranks(void *arg)
{
  struct fx_rank r = { kernels, NKERNELS, NULL, 0, 100, 5 };
  struct store *st = NULL;
  struct tr_err err = { 0 };

  (void)arg;
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  for (int i = 0; i < NRANKS; i++) {
    json_t *sum = fx_summary(i, &r);
    int64_t t0 = tr_now_ns();

    if (store_rank_insert(st, cap, i, "rank", sum, &err) != 0) {
      fprintf(stderr, "insert: %s\n", err.msg);
      exit(1);
    }
    fprintf(stderr, "   rank %d: %d kernels + launches stored in %lld ms\n", i,
            NKERNELS, (long long)((tr_now_ns() - t0) / 1000000));
    json_decref(sum);
  }
  store_close(st);
  atomic_fetch_add(&writers_done, 1);
  return NULL;
}

/* Short writes on another capture from another connection, meanwhile. */
static void *small_writes(void *arg)
{
  static const char *const phases[] = { "launching", "waiting_ready",
                                        "benchmark" };
  struct store *st = NULL;
  struct tr_err err = { 0 };

  (void)arg;
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  for (int i = 0; i < NPHASES; i++) {
    json_t *p = json_pack("{s:i}", "export_polls", i);

    CHECK_INT(
        store_capture_set_phase(st, other, "running", phases[i % 3], &err), 0);
    CHECK_INT(store_capture_merge(st, other, "progress", p, &err), 0);
    json_decref(p);
  }
  store_close(st);
  atomic_fetch_add(&writers_done, 1);
  return NULL;
}

/* One look at the capture: every rank whole or absent. Returns how many
 * ranks were visible. */
static int64_t look(struct store *ro)
{
  struct store_query q = { .capture_id = cap, .rank = -1 };
  struct tr_err err = { 0 };
  json_t *rows = NULL, *row;
  int64_t visible;
  size_t i;
  int rc;

  CHECK_INT(store_table(ro, TR_TABLE_kernels, &q, &rows, &err), 0);
  if (json_array_size(rows) == 0) {
    json_decref(rows);
    return 0;
  }
  CHECK_INT(json_array_size(rows), NKERNELS);
  visible = fx_int(json_array_get(rows, 0), "ranks");
  json_array_foreach(rows, i, row) {
    long k =
        strtol(json_string_value(json_object_get(row, "name")) + 2, NULL, 10);

    CHECK_INT(fx_int(row, "ranks"), visible);
    CHECK_INT(fx_int(row, "count"), visible * kernels[k].count);
    CHECK_INT(fx_int(row, "total_ns"), visible * kernels[k].total_ns);
  }
  json_decref(rows);
  for (int r = 0; r < NRANKS; r++) {
    q.rank = r;
    rows = NULL;
    rc = store_table(ro, TR_TABLE_kernels, &q, &rows, &err);
    CHECK(rc == 0 || rc == TR_ENOTFOUND);
    if (rc == 0)
      CHECK_INT(json_array_size(rows), NKERNELS);
    tr_err_clear(&err);
    json_decref(rows);
  }
  return visible;
}

static void store_reader_sees_whole_ranks(void)
{
  struct store *ro = NULL, *st = NULL;
  struct tr_err err = { 0 };
  pthread_t w1, w2;
  int64_t seen_mask = 0, prev = 0;
  int looks = 0;

  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  CHECK_INT(store_capture_insert(st, "import", NULL, NULL, 0, &cap, &err), 0);
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &other, &err),
            0);
  CHECK_INT(store_open(path, STORE_RO, &ro, &err), 0);
  CHECK_INT(pthread_create(&w1, NULL, insert_ranks, NULL), 0);
  CHECK_INT(pthread_create(&w2, NULL, small_writes, NULL), 0);
  while (atomic_load(&writers_done) < 2) {
    int64_t v = look(ro);

    CHECK(v >= prev); /* snapshots only move forward */
    prev = v;
    seen_mask |= (int64_t)1 << v;
    looks++;
  }
  pthread_join(w1, NULL);
  pthread_join(w2, NULL);
  CHECK_INT(look(ro), NRANKS);
  fprintf(stderr, "   %d looks while writing, rank counts seen mask %#llx\n",
          looks, (long long)seen_mask);
  CHECK(looks > 1);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM kernels", -1),
            NRANKS * NKERNELS);
  store_close(ro);
  store_close(st);
}

int main(void)
{
  for (int i = 0; i < NKERNELS; i++) {
    snprintf(names[i], sizeof(names[i]), "k_%05d", i);
    kernels[i] = (struct fx_kernel){ names[i], "gemm",   i % 7 + 1, 1000 + i,
                                     1,        1000 + i, 500 };
  }
  fx_db_path(path, sizeof(path));
  RUN(store_reader_sees_whole_ranks);
  fx_db_remove(path);
  return 0;
}
