/*
 * The cap on distinct names (kernels, host API calls) per rank: a trace
 * can hold hundreds of thousands of made-up names, and every table row
 * costs memory here, in the JSON and in the database. Beyond the cap
 * (idx_options.max_kernel_names) a new name folds into one row, named
 * "(N more names)" at the end, whose figures are the folded events summed:
 * counts and totals still add up. N, the distinct names folded, is counted
 * exactly (up to 64-bit hash collisions) in bounded memory: the hashes go
 * to sorted runs on disk (agg_runs.c), a small table of recent hashes
 * keeping a name that repeats from being written again, and are counted
 * at the end.
 */
#include <stdio.h>
#include <string.h>

#include "index/agg.h"

#define SEEN_RECS 4096 /* hashes held before a run is spilled */

/* The fold row's key while indexing: 0xff is no UTF-8 byte, so no name of
 * a trace (the reader keeps only valid UTF-8) can be it. */
static const char fold_key[] = "\xff";

void agg_fold_init(struct agg_fold *f, uint32_t cap)
{
  memset(f, 0, sizeof(*f));
  f->cap = cap;
  f->id = UINT32_MAX;
}

/* FNV-1a, 64 bits: a collision would undercount N by one. */
static uint64_t hash64(const char *p, size_t n)
{
  uint64_t h = 14695981039346656037ull;

  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

static int remember(struct agg_fold *f, const char *p, size_t n)
{
  uint64_t h = hash64(p, n);
  uint64_t *slot = &f->recent[h & (AGG_FOLD_RECENT - 1)];
  struct agg_rec r = { (int64_t)h, 0, 0, 0, 0 };
  int rc;

  if (*slot == h && h != 0)
    return 0;
  *slot = h;
  if (!f->seen_open) {
    if ((rc = agg_runs_init(&f->seen, SEEN_RECS)) != 0)
      return rc;
    f->seen_open = 1;
  }
  return agg_runs_add(&f->seen, &r);
}

int agg_fold_intern(struct agg_fold *f, struct agg_map *m, struct idx_str s,
                    int count, uint32_t *id)
{
  const char *p = s.p ? s.p : "";
  size_t n = s.p ? s.n : 0;
  int rc;

  if (m->n < f->cap || agg_map_find(m, p, n, id))
    return agg_map_intern(m, p, n, id);
  f->events++;
  if (count && (rc = remember(f, p, n)) != 0)
    return rc;
  if (f->id != UINT32_MAX) {
    *id = f->id;
    return 0;
  }
  rc = agg_map_intern(m, fold_key, 1, &f->id);
  *id = f->id;
  return rc;
}

/* The distinct hashes of the runs, in their sorted order. */
static int count_distinct(struct agg_fold *f)
{
  struct agg_iter *it;
  struct agg_rec r;
  int64_t last = 0;
  int rc, any = 0;

  if ((rc = agg_runs_seal(&f->seen)) != 0 ||
      (rc = agg_iter_open(&f->seen, &it)) != 0)
    return rc;
  while ((rc = agg_iter_next(it, &r)) == 1) {
    if (!any || r.start_ns != last)
      f->distinct++;
    last = r.start_ns;
    any = 1;
  }
  agg_iter_close(it);
  return rc;
}

int agg_fold_end(struct agg_fold *f, struct agg_map *m)
{
  int rc;

  if (f->id == UINT32_MAX)
    return 0;
  if (f->seen_open && (rc = count_distinct(f)) != 0)
    return rc;
  snprintf(f->name, sizeof(f->name), "(%llu more names)",
           (unsigned long long)f->distinct);
  m->keys[f->id].p = f->name; /* no lookups after the event pass */
  m->keys[f->id].n = strlen(f->name);
  return 0;
}

void agg_fold_free(struct agg_fold *f)
{
  if (f->seen_open)
    agg_runs_free(&f->seen);
  f->seen_open = 0;
}
