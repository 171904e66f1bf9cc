/*
 * Helpers for the store tests: a temporary database, and rank summaries
 * built from small hand-written inputs (never from index/), so that every
 * expected figure is computed in the test from the same inputs.
 */
#ifndef TEST_STORE_UTIL_H
#define TEST_STORE_UTIL_H

#include <jansson.h>
#include <sqlite3.h>

#include "store/store.h"

struct fx_kernel {
  const char *name;
  const char *category;
  int64_t count, total_ns, min_ns, max_ns, median_ns;
};

struct fx_step {
  const char *kind;
  int64_t count, total_ns;
};

/* One rank's inputs. Every kernel gets one launch row (grid [count,1,1]);
 * the rank has one memcpy kind ("HtoD", memcpy_ns), one runtime call
 * ("hipLaunchKernel", median runtime_median_ns) and one phase. */
struct fx_rank {
  const struct fx_kernel *k;
  size_t nk;
  const struct fx_step *s;
  size_t ns;
  int64_t memcpy_ns;
  int64_t runtime_median_ns;
};

/* A fresh database path in a new temporary folder; fx_db_remove() deletes
 * the files and the folder. */
void fx_db_path(char *buf, size_t size);
void fx_db_remove(const char *path);

/* The rank summary of docs/API.md for r: scalars are computed from the rows
 * (kernel_ns = sum of kernel totals, device_ns = kernel_ns + memcpy_ns,
 * categories = kernels summed per category plus "copy"). The critical
 * path (test_store_util.c's critical_rows()): the even-indexed kernels are
 * on it for half their time (critical_ns); per step kind one step, index
 * its place, the median and slowest of its kind. */
json_t *fx_summary(int rank, const struct fx_rank *r);

/* A done capture (kind "capture", params {"model":model,"tp":tp}, tp 0:
 * no tp) with ranks 0..n-1 inserted from r. */
int64_t fx_capture(struct store *st, const char *model, int tp,
                   const struct fx_rank *r, size_t n);

/* SELECT count(*) ... with one integer parameter (or none when p < 0). */
int64_t fx_count(const char *path, const char *sql, int64_t p);

/* Integer member of obj (fails the test when absent). */
int64_t fx_int(json_t *obj, const char *key);

#endif
