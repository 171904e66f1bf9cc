/*
 * Real summaries for the store tests that need them (test_store_fleet.c,
 * test_store_results.c): traces of $TRACES_DIR indexed by idx_file() and
 * stored as the ranks of a capture. Linked with traced_index, unlike
 * test_store_util.c. Each fails the test on any error.
 */
#ifndef TEST_STORE_TRACES_H
#define TEST_STORE_TRACES_H

#include <stdint.h>

#include "store/store.h"

/* Stores the trace name (a file under $TRACES_DIR), indexed by idx_file(),
 * as rank r of capture cap. */
void fx_index_rank(struct store *st, int64_t cap, int r, const char *name);

/* Moves capture cap to running/indexing and stores traces[0..n) as its
 * ranks 0..n-1. */
void fx_index_ranks(struct store *st, int64_t cap, const char *const *traces,
                    int n);

#endif
