#include "tests/test_store_traces.h"

#include <stdio.h>
#include <stdlib.h>

#include "index/index.h"
#include "tests/check.h"

void fx_index_rank(struct store *st, int64_t cap, int r, const char *name)
{
  const char *dir = getenv("TRACES_DIR");
  struct idx_options opt = { .format = IDX_FORMAT_AUTO, .rank = -1 };
  struct tr_err err = { 0 };
  json_t *sum = NULL;
  char file[1024];

  CHECK(dir != NULL);
  snprintf(file, sizeof(file), "%s/%s", dir, name);
  CHECK_INT(idx_file(file, &opt, &sum, &err), 0);
  CHECK_INT(store_rank_insert(st, cap, r, name, sum, &err), 0);
  json_decref(sum);
}

void fx_index_ranks(struct store *st, int64_t cap, const char *const *traces,
                    int n)
{
  struct tr_err err = { 0 };

  CHECK_INT(store_capture_set_phase(st, cap, "running", "indexing", &err), 0);
  for (int r = 0; r < n; r++)
    fx_index_rank(st, cap, r, traces[r]);
}
