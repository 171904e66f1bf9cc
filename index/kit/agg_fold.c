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
#include <stdlib.h>
#include <string.h>

#include "index/kit/kit.h"

#define SEEN_RECS 4096 /* hashes held before a run is spilled */

/* The fold row's key while indexing: 0xff is no UTF-8 byte, so no name of
 * a trace (the reader keeps only valid UTF-8) can be it. */
static const char fold_key[] = "\xff";

void agg_fold_init(struct agg_fold *f, uint32_t cap, struct agg_spill *sp)
{
  memset(f, 0, sizeof(*f));
  f->sp = sp;
  f->cap = cap;
  f->id = UINT32_MAX;
}

/* A collision of the 64-bit hashes would undercount N by one. */
static int remember(struct agg_fold *f, const char *p, size_t n)
{
  uint64_t h = agg_hash64(p, n);
  uint64_t *slot = &f->recent[h & (AGG_FOLD_RECENT - 1)];
  struct agg_rec r = { (int64_t)h, 0, 0, 0, 0 };
  int rc;

  if (*slot == h && h != 0)
    return 0;
  *slot = h;
  if (!f->seen_open) {
    if ((rc = agg_runs_init(&f->seen, SEEN_RECS, f->sp)) != 0)
      return rc;
    f->seen_open = 1;
  }
  return agg_runs_add(&f->seen, &r);
}

int agg_fold_intern(struct agg_fold *f, struct agg_map *m, struct idx_str s,
                    int count, uint32_t *id)
{
  unsigned what = 0;
  int rc;

  if (s.p == NULL) {
    s.p = "";
    s.n = 0;
  }
  if ((rc = agg_name_find_kept(m, &s, &f->buf, &what, id)) != 0)
    return rc < 0 ? rc : 0;
  if (m->n < f->cap && f->bytes + s.n <= AGG_NAME_BYTES) {
    rc = agg_map_intern(m, s.p, s.n, id);
    if (rc == 1) {
      f->bytes += s.n;
      f->cut += (what & AGG_NAME_CUT) != 0;
      f->escaped += (what & AGG_NAME_ESCAPED) != 0;
    }
    return rc;
  }
  f->events++;
  f->by_bytes |= m->n < f->cap;
  if (count && (rc = remember(f, s.p, s.n)) != 0)
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
  free(f->buf);
  f->buf = NULL;
  if (f->seen_open)
    agg_runs_free(&f->seen);
  f->seen_open = 0;
}
