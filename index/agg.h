/*
 * agg: the aggregation half of the indexer. It receives the reader's
 * struct idx_event records (index/event.h) one at a time, in file order,
 * and turns them into one rank's summary (the JSON of docs/API.md, "Rank
 * summary").
 *
 * Memory grows with the number of distinct kernel names, launch shapes and
 * runtime names, never with the number of events: the only per-event state
 * is a fixed buffer of time records, sorted and spilled to a temporary file
 * when full (agg_runs.c), merged in time order at the end (agg_time.c).
 *
 * Internal to index/. One struct idx_agg per file, one thread at a time.
 */
#ifndef IDX_AGG_H
#define IDX_AGG_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "common/tr.h"
#include "index/event.h"
#include "index/index.h"

/* ---- interning map: byte string -> dense id (agg_map.c) ---- */

/* Keys are copied once into an arena, so a name seen a million times costs
 * one copy. Ids are dense (0, 1, 2...) so that callers keep their values
 * in plain arrays indexed by id. */
struct agg_map {
  uint64_t *slots; /* (hash32 << 32) | (id + 1); 0 = empty */
  size_t cap;      /* power of two */
  uint32_t n;      /* ids handed out */
  struct agg_key {
    const char *p;
    size_t n;
  } * keys; /* by id */
  size_t keys_cap;
  struct agg_chunk *arena;
};

/* Finds key or adds it. *id receives its id. Returns 1 when added, 0 when
 * it was known, TR_ENOMEM (map unchanged) when memory ran out. */
int agg_map_intern(struct agg_map *m, const void *key, size_t len,
                   uint32_t *id);
void agg_map_free(struct agg_map *m);

/* Grows *arr (elements of size elem) so that index `need` is valid, new
 * elements zeroed. Returns 0 or TR_ENOMEM. */
int agg_grow(void *arr, size_t *cap, size_t need, size_t elem);

/* ---- log-linear histogram for medians (agg_map.c) ---- */

/* Durations below 1024 ns are kept exactly; above, each power of two is
 * split into 512 buckets and a bucket reports its midpoint, so a median
 * is within 1/1024 of a true sample value (relative). Sparse: memory grows
 * with the distinct buckets used (at most ~27k per name), not with
 * events. */
struct agg_hist {
  uint32_t *keys; /* bucket + 1; 0 = empty */
  uint64_t *counts;
  uint32_t cap, n;
};

int agg_hist_add(struct agg_hist *h, int64_t v);
/* The lower median (the sample of rank (count-1)/2 in sorted order) as its
 * bucket value, clamped to [min, max]; 0 for an empty histogram. */
int64_t agg_hist_median(const struct agg_hist *h, uint64_t count, int64_t min,
                        int64_t max);
void agg_hist_free(struct agg_hist *h);

/* ---- correlation table with removal (agg_map.c) ---- */

/* int64 key -> fixed-size value, linear probing with backward-shift
 * removal; holds at most `max` entries (then agg_corr_put fails with
 * TR_ELIMIT and the caller falls back, see agg.c). */
struct agg_corr {
  int64_t *keys;
  unsigned char *vals;
  unsigned char *used;
  size_t vsize;
  uint32_t cap, n, max;
};

int agg_corr_init(struct agg_corr *c, size_t vsize, uint32_t max);
/* Adds key -> val. TR_ECONFLICT when key is held already (graph kernels
 * share one correlation), TR_ELIMIT when full; the table is unchanged. */
int agg_corr_put(struct agg_corr *c, int64_t key, const void *val);
/* Copies the value into out and removes the entry. 1 found, 0 not. */
int agg_corr_take(struct agg_corr *c, int64_t key, void *out);
/* Calls fn on every entry left, then empties the table. */
void agg_corr_drain(struct agg_corr *c, void (*fn)(void *ud, const void *val),
                    void *ud);
void agg_corr_free(struct agg_corr *c);

/* ---- time records, sorted runs, merge (agg_runs.c) ---- */

enum agg_rec_type { /* sort order at equal start: labels first, so a
                       kernel starting with its label is inside it */
                    AGG_REC_LABEL = 0,  /* GPU-side run label; id = step kind */
                    AGG_REC_KERNEL = 1, /* id = shape id */
                    AGG_REC_COPY = 2,   /* id = copy kind */
                    AGG_REC_MEMSET = 3
};

struct agg_rec {
  int64_t start_ns;
  int64_t dur_ns;
  uint32_t type;
  uint32_t id;
};

struct agg_runs {
  struct agg_rec *buf; /* records not yet spilled */
  size_t n, cap;
  FILE *spill; /* tmpfile() of sorted runs, NULL until needed */
  struct agg_run {
    uint64_t first; /* index of its first record in the spill file */
    uint64_t n;
  } * runs;
  size_t nruns, runs_cap;
  int sealed;
};

/* cap: records held in memory before a sorted run is spilled (>= 2). */
int agg_runs_init(struct agg_runs *r, size_t cap);
int agg_runs_add(struct agg_runs *r, const struct agg_rec *rec);
/* Ends input: sorts what is left. Then any number of iterations. */
int agg_runs_seal(struct agg_runs *r);
void agg_runs_free(struct agg_runs *r);

struct agg_iter;
int agg_iter_open(struct agg_runs *r, struct agg_iter **out);
/* 1 with *rec filled in time order, 0 at the end, negative on I/O error. */
int agg_iter_next(struct agg_iter *it, struct agg_rec *rec);
void agg_iter_close(struct agg_iter *it);

/* ---- the aggregation (agg.c) ---- */

enum agg_copy_kind {
  AGG_COPY_HTOD,
  AGG_COPY_DTOH,
  AGG_COPY_DTOD,
  AGG_COPY_HTOH,
  AGG_COPY_PTOP,
  AGG_COPY_OTHER,
  AGG_COPY_MEMSET,
  AGG_COPY_KINDS
};

struct agg_stat { /* the figures every table row shares */
  uint64_t count;
  int64_t total_ns, min_ns, max_ns;
};

struct agg_kernel { /* by kernel name id */
  struct agg_stat s;
  int64_t first_ns, last_ns; /* absolute start of first and last call */
  struct agg_hist hist;
  int is_kernel; /* seen as a device kernel (names are also
                    interned from runtime launch events) */
};

struct agg_shape { /* by shape id: (name, grid, block) */
  uint32_t name;
  uint32_t has; /* IDX_HAS_GRID | IDX_HAS_BLOCK */
  int64_t grid[3], block[3];
  /* What runtime launch events said about this shape, for kernels whose
   * own launch event was never matched by correlation. */
  uint32_t rt_has; /* IDX_HAS_REGS | IDX_HAS_SHMEM */
  int rt_seen;     /* a launch of this shape was seen */
  int rt_conflict; /* launches of this shape disagreed */
  int64_t rt_regs, rt_shmem;
  struct agg_stat unresolved; /* kernels waiting for that fallback */
};

struct agg_launch { /* by launch id: (shape, registers, shared) */
  uint32_t shape;
  uint32_t has; /* IDX_HAS_REGS | IDX_HAS_SHMEM */
  int64_t regs, shmem;
  struct agg_stat s;
};

struct agg_named { /* runtime API rows, by runtime name id */
  struct agg_stat s;
  struct agg_hist hist;
};

struct agg_copy {
  struct agg_stat s;
  int64_t bytes, max_bytes;
};

#define AGG_SIDE_CPU       0
#define AGG_SIDE_GPU       1
#define AGG_MAX_STEP_KINDS 64

struct agg_step { /* by (side, step kind id) */
  uint64_t count, padded;
  int64_t total_ns, tokens, kernel_ns;
};

struct idx_agg {
  const struct idx_rules *rules;
  uint64_t skipped;       /* events skipped here (X without ts/dur...) */
  int64_t t0_ns, tend_ns; /* earliest start, latest end; t0 > tend: none */

  struct agg_map names; /* kernel names */
  struct agg_kernel *kernels;
  size_t kernels_cap;
  struct agg_map shapes_map;
  struct agg_shape *shapes;
  size_t shapes_cap;
  struct agg_map launches_map;
  struct agg_launch *launches;
  size_t launches_cap;
  struct agg_map rt_map; /* runtime API names */
  struct agg_named *runtime;
  size_t runtime_cap;
  struct agg_map kinds_map; /* run-label kinds */
  struct agg_step steps[2][AGG_MAX_STEP_KINDS];
  struct agg_copy copies[AGG_COPY_KINDS];

  /* Launch join (ROCm): kernels waiting for their runtime launch event,
   * and runtime launch events waiting for their kernel, by correlation. */
  struct agg_corr k_pending, rt_pending;
  /* Copy join (ROCm 6.2): copies without bytes waiting for their runtime
   * call, and runtime calls' bytes waiting for their copy. */
  struct agg_corr c_pending, rtc_pending;

  uint64_t kernel_events;
  int64_t kernel_ns;
  char device[256]; /* M metadata of pid 2 (mcTracer's device
                       name), used for mcTracer only */

  struct agg_runs runs;
};

/* rec_cap: time records held in memory before spilling (0: default). */
int idx_agg_init(struct idx_agg *a, const struct idx_rules *rules,
                 size_t rec_cap);
/* An idx_event_cb: accounts one event. Returns 0 or a negative error. */
int idx_agg_event(void *ud, const struct idx_doc *doc,
                  const struct idx_event *ev);
void idx_agg_free(struct idx_agg *a);

/* End of events: kernels still waiting for a launch event take the shape
 * fallback (see agg.c). Returns 0 or TR_ENOMEM. */
int idx_agg_resolve(struct idx_agg *a);

/* What idx_agg_summary() needs besides the events. */
struct agg_file_info {
  const char *path;
  uint64_t file_bytes;
  int rank; /* idx_options.rank: >= 0 wins over the trace's */
};

/* Ends the aggregation (time-ordered pass included) and builds the rank
 * summary into *out (caller json_decref()s). agg_json.c. */
int idx_agg_summary(struct idx_agg *a, const struct idx_doc *doc,
                    const struct agg_file_info *info, json_t **out,
                    struct tr_err *err);

/* ---- the time-ordered pass (agg_time.c) ---- */

struct agg_time_out {
  int64_t gpu_busy_ns;
  json_t *phases; /* new array */
};

/* Walks the records in time order twice: union of device intervals, step
 * kernel time (written into a->steps[AGG_SIDE_GPU][k].kernel_ns), and the
 * phases. heavy: name id of the kernel with the largest total, or
 * UINT32_MAX. */
int agg_time_pass(struct idx_agg *a, uint32_t heavy, struct agg_time_out *out,
                  struct tr_err *err);

/* The index of a category id in the fixed list of rules.c, 0..
 * AGG_NCATEGORIES-1, and back. */
#define AGG_NCATEGORIES 13
int agg_category_index(const char *category);
const char *agg_category_name(int index);

/* Shared row helpers (agg_json.c). */
json_t *agg_json_xyz(const int64_t v[3], int present);
json_t *agg_json_strn(const char *p, size_t n);

#endif
