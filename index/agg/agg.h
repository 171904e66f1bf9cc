/*
 * agg: the aggregation half of the indexer. It receives the reader's
 * struct idx_event records (index/read/event.h) one at a time, in file order,
 * and turns them into one rank's summary (the JSON of docs/API.md, "Rank
 * summary").
 *
 * Memory grows with the number of distinct kernel names, launch shapes and
 * runtime names, never with the number of events: the only per-event state
 * is a fixed buffer of time records, sorted and spilled to a temporary file
 * when full (agg_runs.c), merged in time order at the end (agg.c).
 *
 * Internal to index/. One struct idx_agg per file, one thread at a time.
 */
#ifndef IDX_AGG_H
#define IDX_AGG_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "common/summary.h"
#include "common/tr.h"
#include "index/read/event.h"
#include "index/read/format.h"
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
 * it was known, TR_ENOMEM (map unchanged) when memory ran out. key may be
 * NULL when len is 0 (an empty text), here and in agg_map_find(). */
int agg_map_intern(struct agg_map *m, const void *key, size_t len,
                   uint32_t *id);
/* 1 with *id when key is in the map, else 0 (the map is unchanged). */
int agg_map_find(const struct agg_map *m, const void *key, size_t len,
                 uint32_t *id);
void agg_map_free(struct agg_map *m);

/* Grows *arr (elements of size elem) so that index `need` is valid, new
 * elements zeroed. Returns 0 or TR_ENOMEM. */
int agg_grow(void *arr, size_t *cap, size_t need, size_t elem);

/* ---- work beside the caller's thread (agg_beside.c) ---- */

#define AGG_BESIDE_SLOTS 2 /* items handed over and not yet run, at most */

struct agg_beside {
  int (*run)(void *ud, void *item); /* owns the item */
  void *ud;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* an item came, one ran, or the end */
  void *items[AGG_BESIDE_SLOTS];
  unsigned first, n;
  int started, ending;
  int rc; /* the first failure of run() */
};

/* Starts b: each item handed over is run(ud, item), in order, on a thread
 * of b's own when thread is 1 (and one could be made), else at once by
 * agg_beside_put(). A zeroed b is an ended one. */
void agg_beside_start(struct agg_beside *b, int thread,
                      int (*run)(void *ud, void *item), void *ud);
/* Hands item over, waiting while AGG_BESIDE_SLOTS items wait already.
 * Returns the first failure of run() so far, or 0. */
int agg_beside_put(struct agg_beside *b, void *item);
/* Waits until every item has run and ends the thread; the first failure
 * of run(), or 0. */
int agg_beside_end(struct agg_beside *b);

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
/* The sample of rank `rank` (0-based, in sorted order) as its bucket value,
 * clamped to [min, max]; 0 for an empty histogram. */
int64_t agg_hist_rank(const struct agg_hist *h, uint64_t rank, int64_t min,
                      int64_t max);
/* Calls fn with each bucket that holds samples, in ascending order: its
 * values [low, high) and its count. 0 or TR_ENOMEM (fn not called). */
int agg_hist_each(const struct agg_hist *h,
                  void (*fn)(void *ud, int64_t low, int64_t high,
                             uint64_t count),
                  void *ud);
/* Adds every sample of src to dst. 0 or TR_ENOMEM (dst then holds part). */
int agg_hist_merge(struct agg_hist *dst, const struct agg_hist *src);
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
/* The value of key, in place (valid until the next put or removal), or
 * NULL. */
void *agg_corr_get(struct agg_corr *c, int64_t key);
/* Removes key; 1 when it was held. */
int agg_corr_remove(struct agg_corr *c, int64_t key);
/* Calls fn on every entry left, then empties the table. */
void agg_corr_drain(struct agg_corr *c, void (*fn)(void *ud, const void *val),
                    void *ud);
void agg_corr_free(struct agg_corr *c);

/* ---- temporary files, bounded together (agg_spill.c) ---- */

/* What a rank's temporary files may hold. Zero-initialised: in $TMPDIR
 * (else /tmp), bounded by the disk's free space alone. */
struct agg_spill {
  const char *dir;     /* folder of the files (borrowed); NULL: $TMPDIR */
  uint64_t max_bytes;  /* all the rank's files together; 0: no cap */
  uint64_t bytes;      /* written so far */
  uint64_t next_check; /* bytes at which the disk's free space is read */
  char why[256];       /* why the last refusal, for the rank's error */
};

/* The folder sp's files go to. */
const char *agg_spill_dir(const struct agg_spill *sp);
/* A new temporary file of sp, read-write, without a name. 0 or -errno
 * (why set). */
int agg_spill_open(struct agg_spill *sp, FILE **out);
/* Writes n bytes at f's position, counted against sp's caps: TR_ELIMIT
 * past max_bytes or the disk's reserve, TR_EIO (why set either way). */
int agg_spill_write(struct agg_spill *sp, FILE *f, const void *p, size_t n);
/* When rc is a failure and sp refused a write, err says why instead of
 * what the refusal made fail later ("time pass failed..."). */
void agg_spill_blame(const struct agg_spill *sp, int rc, struct tr_err *err);

/* ---- time records, sorted runs, merge (agg_runs.c) ---- */

/* Records sort by start, then type: labels first, so that a kernel
 * starting with its label is inside it; host calls last, so that a call
 * starting with a kernel did not issue it; then by aux, id and duration. */
enum agg_rec_type {
  AGG_REC_LABEL = 0,     /* GPU-side run label; id = step kind, aux = its
                            label number (agg_labels) */
  AGG_REC_LABEL_CPU = 1, /* CPU-side run label; same */
  AGG_REC_KERNEL = 2,    /* id = shape id; aux = correlation or -1 */
  AGG_REC_COPY = 3,      /* id = copy kind; aux = correlation or -1 */
  AGG_REC_MEMSET = 4,    /* id = AGG_COPY_MEMSET; aux = correlation or -1 */
  AGG_REC_CALL = 5       /* host runtime call; id = AGG_CALL_* bits, aux =
                            correlation or -1 */
};

#define AGG_CALL_SYNC                                                          \
  1u /* waits for the device (*Synchronize, blocking                           \
        copies) */

struct agg_rec {
  int64_t start_ns;
  int64_t dur_ns;
  int64_t aux;
  uint32_t type;
  uint32_t id;
};

/* A record of device work: a kernel, a copy or a memset. */
static inline int agg_rec_device(uint32_t type)
{
  return type == AGG_REC_KERNEL || type == AGG_REC_COPY ||
         type == AGG_REC_MEMSET;
}

struct agg_runs {
  struct agg_rec *buf; /* records not yet spilled */
  size_t n, cap;
  struct agg_spill *sp; /* where runs spill (borrowed) */
  FILE *spill;          /* file of sorted runs, NULL until needed */
  int unsorted;         /* buf is out of order (else no sort is needed) */
  struct agg_rec last;  /* the last record spilled */
  size_t window;        /* records an iterator holds of the spilled runs */
  struct agg_run {
    uint64_t first; /* index of its first record in the spill file */
    uint64_t n;
  } * runs;
  size_t nruns, runs_cap;
  int sealed;
};

/* cap: records held in memory before a sorted run is spilled (>= 2) to
 * a file of sp (borrowed, outlives r); window: records an iterator over
 * the spilled runs holds, all runs together (0: 64 Ki, 2 MB; a stream
 * read in order needs little). */
int agg_runs_init(struct agg_runs *r, size_t cap, struct agg_spill *sp);
void agg_runs_window(struct agg_runs *r, size_t window);
/* 0, a spill error, or TR_EINVAL once sealed. */
int agg_runs_add(struct agg_runs *r, const struct agg_rec *rec);
/* Ends input: sorts what is left (and, when runs spilled, frees the
 * buffer). Then any number of iterations. */
int agg_runs_seal(struct agg_runs *r);
void agg_runs_free(struct agg_runs *r);

struct agg_iter;
int agg_iter_open(struct agg_runs *r, struct agg_iter **out);
/* 1 with *rec filled in time order, 0 at the end, negative on I/O error. */
int agg_iter_next(struct agg_iter *it, struct agg_rec *rec);
/* Up to max next records into out, in time order: how many (0 at the end),
 * or negative on I/O error. A stream of one run is copied in bulk. */
int agg_iter_read(struct agg_iter *it, struct agg_rec *out, size_t max);
void agg_iter_close(struct agg_iter *it);

/* ---- names as kept: printable and bounded (agg_name.c) ---- */

/* Bytes of a name (kernel, host API, family) kept, and of a demangled
 * form (two to three times its mangled name); a longer one is cut and
 * ends in a hash of the whole. */
#define AGG_NAME_MAX      (8u << 10)
#define AGG_DEMANGLED_MAX (16u << 10)

enum { AGG_NAME_ESCAPED = 1u, AGG_NAME_CUT = 2u };

/* s as kept: control bytes written as JSON escapes, cut beyond max bytes
 * with a hash of the whole ("...#<16 hex>"). s itself when it needs
 * neither (the common case, no copy), else a view of buf (room for max +
 * 1 bytes). *what: AGG_NAME_* bits of what was done. */
struct idx_str agg_name_clean(struct idx_str s, size_t max, char *buf,
                              unsigned *what);
/* A malloc()ed NUL-terminated string (demangled form, family) bounded:
 * s itself, or, longer than max, a new string cut as agg_name_clean()
 * cuts (s freed, *cut counted); NULL when memory ran out (s freed). */
char *agg_name_bound(char *s, size_t max, uint64_t *cut);
/* p[0..n) with control bytes escaped into out, at most max bytes, cut on
 * a character or an escape; returns the bytes written, *taken the bytes
 * of p they hold. */
size_t agg_text_escape(const char *p, size_t n, char *out, size_t max,
                       size_t *taken);
int agg_has_control(const char *p, size_t n);
/* Looks s up in m, whose names are all kept as agg_name_clean() keeps
 * them (AGG_NAME_MAX): 1 with *id when m holds it; 0 when not, *s then
 * the name as it is to be kept (in *buf, malloc()ed at its first need with
 * AGG_NAME_MAX + 1 bytes, the caller frees it) and *what the AGG_NAME_*
 * bits of what was done; TR_ENOMEM. A name that needs no cleaning is
 * looked up once. */
int agg_name_find_kept(const struct agg_map *m, struct idx_str *s, char **buf,
                       unsigned *what, uint32_t *id);
/* FNV-1a, 64 bits. */
uint64_t agg_hash64(const void *p, size_t n);

/* ---- the cap on distinct names (agg_fold.c) ---- */

#define AGG_FOLD_RECENT       4096 /* hashes of names folded lately */
/* Host API names kept: a real trace calls a few dozen APIs; beyond, as
 * kernel names beyond max_kernel_names, they fold. */
#define AGG_MAX_RUNTIME_NAMES 1000

/* Bytes of the names of one map kept: beyond, as beyond the cap on their
 * number, new names fold (a real trace's names take a few hundred KB). */
#define AGG_NAME_BYTES (16u << 20)

struct agg_fold {        /* the names of one map beyond its cap */
  struct agg_spill *sp;  /* where the folded names' hashes spill */
  uint32_t cap;          /* names kept; a new name beyond folds */
  uint32_t id;           /* the fold row's id; UINT32_MAX: nothing folded */
  uint64_t bytes;        /* of the names kept */
  uint64_t cut, escaped; /* names kept that were cut, or escaped */
  int by_bytes;          /* a name folded for AGG_NAME_BYTES */
  char *buf;             /* agg_name_clean()'s, once a name needs it */
  uint64_t recent[AGG_FOLD_RECENT];
  struct agg_runs seen; /* hashes of the folded names */
  int seen_open;
  uint64_t events;   /* events folded */
  uint64_t distinct; /* distinct names folded (agg_fold_end) */
  char name[48];     /* the row's name, "(N more names)" */
};

void agg_fold_init(struct agg_fold *f, uint32_t cap, struct agg_spill *sp);
/* agg_map_intern() of s as kept (agg_name_clean()) into m, or, when m
 * holds f->cap names or AGG_NAME_BYTES of them and s is not one of them,
 * the fold row's id (count: s is counted among the folded names).
 * Returns like agg_map_intern(), or a spill error. */
int agg_fold_intern(struct agg_fold *f, struct agg_map *m, struct idx_str s,
                    int count, uint32_t *id);
/* End of events: counts the folded names and renames the fold row of m
 * "(N more names)" (m is then only read). 0 or an I/O error. */
int agg_fold_end(struct agg_fold *f, struct agg_map *m);
void agg_fold_free(struct agg_fold *f);

/* ---- the rank's vocabulary: what the passes name things by ---- */

#define AGG_NCATEGORIES 13 /* the fixed category list of rules.c */

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

/* Adds one sample to s (agg.c). */
void agg_stat_add(struct agg_stat *s, int64_t dur);

struct agg_kernel { /* by kernel name id */
  struct agg_stat s;
  int64_t first_ns, last_ns; /* absolute start of first and last call */
  struct agg_hist hist;
  int is_kernel; /* seen as a device kernel (names are also
                    interned from runtime launch events) */
  int comm;      /* agg_coll.c: 0 not known yet, 1 a collective, 2 not */
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

#define AGG_SIDE_CPU       0
#define AGG_SIDE_GPU       1
#define AGG_MAX_STEP_KINDS 64
#define AGG_KIND_MAX       64 /* bytes of a step kind's name */
#define AGG_SLOWEST        5  /* outlier steps kept per kind */
#define AGG_TOP            5  /* kernels listed per picked step */
#define AGG_BUCKETS        21 /* bs/tok: 1, 2, 3-4, ..., 2^20, more */

enum { AGG_DIM_BS, AGG_DIM_TOK, AGG_DIMS };

struct agg_pick { /* a step picked out (slowest, median); seq -1: none */
  int64_t start_ns, dur_ns, seq;
};

struct agg_top { /* a kernel of a picked step */
  uint32_t name, pad;
  uint64_t count;
  int64_t total_ns;
};

struct agg_bucket { /* the steps of a kind with bs (or tok) in a bucket */
  struct agg_stat s;
  uint64_t padded;
  struct agg_hist hist;
};

struct agg_step { /* by (side, step kind id) */
  struct agg_stat s;
  uint64_t padded;
  int64_t tokens, kernel_ns;
  struct agg_hist hist;
  struct agg_pick slow[AGG_SLOWEST]; /* slowest first */
  uint32_t nslow;
  struct agg_bucket *buckets; /* [AGG_DIMS][AGG_BUCKETS]; NULL: none */
  /* Set by the time pass, for the side the steps come from. */
  uint64_t warmup; /* leading steps dropped from the steady state */
  struct agg_stat steady;
  struct agg_hist steady_hist;
  struct agg_pick median;
  struct agg_top slow_top[AGG_SLOWEST][AGG_TOP], median_top[AGG_TOP];
  uint32_t nslow_top[AGG_SLOWEST], nmedian_top;
};

/* Run-label texts, spilled: label number -> text (agg_runs.c). */
#define AGG_LABEL_TEXT 256 /* bytes kept of a label (cut on a character) */

struct agg_labels {
  struct agg_spill *sp; /* where the texts spill (borrowed) */
  FILE *text, *index;   /* NULL until the first label */
  int64_t n;
  uint64_t bytes;
};

/* Idle time causes (agg_idle.c), in the order the summary lists them. */
enum agg_idle_cause {
  AGG_IDLE_HOST_LATE,
  AGG_IDLE_SYNC,
  AGG_IDLE_COLLECTIVE,
  AGG_IDLE_GRAPH,
  AGG_IDLE_BETWEEN_STEPS,
  AGG_IDLE_OTHER,
  AGG_IDLE_CAUSES
};

/* The name of an idle cause ("host_late", ...): a static string. */
const char *agg_idle_cause_name(int cause);

/* What the walk finds, handed one at a time in start order to the passes
 * that hear findings and then to idx_agg.on_finding when set (index/slice/
 * slice.c draws them as tracks): each run label of the step side
 * (agg_steps.c), and each idle stretch (agg_idle.c). */
enum agg_finding_what { AGG_FOUND_STEP, AGG_FOUND_IDLE };

struct agg_finding {
  enum agg_finding_what what;
  int64_t start_ns, end_ns;
  uint32_t kind;      /* STEP: its kind id (kinds_map) */
  int64_t label;      /* STEP: its label number (agg_labels_get) */
  int cause;          /* IDLE: the stretch's cause (AGG_IDLE_*) */
  int64_t between_ns; /* IDLE: its part outside every step label (counted
                         as between_steps, not as the cause) */
  int64_t corr;       /* IDLE: the correlation of the device record that
                         ended it, -1 */
  const int64_t *parts; /* IDLE: its ns by kind, [0] outside every step,
                           [k + 1] kind k (nparts of them) */
  uint32_t nparts;
};

/* What the critical path adds to a kernel's and a family's row (its end
 * writes them, agg_cpath_end()). */
struct agg_cols {
  int64_t critical_ns, calls, call_ns, call_p50, call_p99, queue_ns, queue_p50,
      queue_p99;
};
#define AGG_COLS_SET(r, c)                                                     \
  ((r).critical_ns = (c).critical_ns, (r).launch_calls = (c).calls,            \
   (r).launch_call_ns = (c).call_ns, (r).launch_call_p50_ns = (c).call_p50,    \
   (r).launch_call_p99_ns = (c).call_p99, (r).launch_queue_ns = (c).queue_ns,  \
   (r).launch_queue_p50_ns = (c).queue_p50,                                    \
   (r).launch_queue_p99_ns = (c).queue_p99)

/* ---- the passes ---- */

/*
 * The passes over a rank, one row each, in the order the driver (agg.c)
 * calls them; docs/ARCHITECTURE.md, "Adding a pass". A pass is a room's
 * state, struct agg_<name> (idx_agg's member <name>), and the hooks its
 * row names, which this header declares from the row (a hook the row
 * names and the room does not define does not link):
 *
 *   XX(name, classes, EVENT, SEAL, WALK, FOUND, END, HEAD)
 *
 *   new, free  int agg_<name>_new(a): makes a-><name>; every pass has them;
 *              void agg_<name>_free(a) undoes it (NULL is fine), in the
 *              reverse order
 *   classes    the event classes its event hook takes: AGG_CL() of enum
 *              idx_class; 0 without one
 *   EVENT      int agg_<name>_event(a, doc, ev, cls): one X event of its
 *              classes, in file order, after the passes above it
 *   SEAL       int agg_<name>_seal(a, err): the events are all read; in
 *              order, so a pass may read what the seals above it made
 *   WALK       int agg_<name>_walk(a, at): each time record in time order
 *              (struct agg_at), but the labels of a dropped kind; ALL:
 *              those too
 *   FOUND      void agg_<name>_found(a, f): each finding (agg_found())
 *   END        int agg_<name>_end(a, err): the walk is over; in the
 *              reverse order, so that a pass ends before the passes it
 *              heard from (the idle stretch at the span's end goes to
 *              the critical path's culprits before its walk ends)
 *   HEAD       void agg_<name>_head(a, r): its scalars and warnings of the
 *              rank summary, in order
 *
 * Each column is its word or _ (no such hook). The tables a pass makes are
 * rows of common/summary.h's TR_TABLE_MAP, each naming its rows function.
 * A pass never calls another: it reads the vocabulary of struct idx_agg
 * and the state of the passes above it, hears from the passes below it
 * through the walk's struct agg_at and the findings, and hands the rows
 * their columns through idx_agg (kcols, fcols).
 */
#define AGG_PASS_MAP(XX)                                                       \
  XX(device, AGG_CL(KERNEL) | AGG_CL(COPY) | AGG_CL(MEMSET) | AGG_CL(RUNTIME), \
     EVENT, SEAL, _, _, _, HEAD)                                               \
  XX(steps, AGG_CL(LABEL_CPU) | AGG_CL(LABEL_GPU), EVENT, SEAL, WALK, _, END,  \
     HEAD)                                                                     \
  XX(families, 0, _, SEAL, WALK, _, _, _)                                      \
  XX(samples, 0, _, SEAL, WALK, _, END, _)                                     \
  XX(decode, AGG_DECODE_CLASSES, EVENT, SEAL, _, _, END, HEAD)                 \
  XX(host,                                                                     \
     AGG_CL(CPU_OP) | AGG_CL(PYTHON) | AGG_CL(LABEL_CPU) | AGG_CL(RUNTIME),    \
     EVENT, _, _, _, _, HEAD)                                                  \
  XX(cpath, AGG_CL(KERNEL) | AGG_CL(COPY) | AGG_CL(MEMSET) | AGG_CL(SYNC),     \
     EVENT, SEAL, ALL, FOUND, END, HEAD)                                       \
  XX(coll, AGG_CL(KERNEL), EVENT, SEAL, WALK, _, END, HEAD)                    \
  XX(idle, 0, _, SEAL, WALK, _, END, HEAD)                                     \
  XX(timeline, 0, _, SEAL, WALK, _, END, HEAD)                                 \
  XX(phases, 0, _, SEAL, WALK, _, END, _)

#define AGG_CL(c) (1u << IDX_CLASS_##c)
/* Decode takes every class but the GPU-side labels and cuda_sync. */
#define AGG_DECODE_CLASSES                                                     \
  (AGG_CL(KERNEL) | AGG_CL(COPY) | AGG_CL(MEMSET) | AGG_CL(RUNTIME) |          \
   AGG_CL(LABEL_CPU) | AGG_CL(CPU_OP) | AGG_CL(PYTHON))

enum agg_pass_id {
#define XX(name, ...) AGG_PASS_##name,
  AGG_PASS_MAP(XX)
#undef XX
      AGG_NPASSES
};

/* What the walk tells each pass of a time record (agg.c's walk). */
struct agg_at {
  const struct agg_rec *r;
  int64_t busy_end; /* end of the union of device records before r (t0
                       before any) */
  int any;          /* a device record came before r */
  int dropped;      /* r is a label of the dropped kind (ALL walks only) */
  /* Word a pass leaves for the passes below it, about r. */
  int warmup;               /* steps: r is a label of a warm-up step */
  const int64_t *cover_end; /* steps: per step kind, the largest end of
                               its labels (of the step side) so far */
};

struct idx_agg;
struct agg_out;
struct agg_sum_rank;

/* The hooks' declarations, from the rows. */
#define AGG_HAS__        0
#define AGG_HAS_EVENT    1
#define AGG_HAS_SEAL     1
#define AGG_HAS_WALK     1
#define AGG_HAS_ALL      1
#define AGG_HAS_FOUND    1
#define AGG_HAS_END      1
#define AGG_HAS_HEAD     1
#define AGG_ALL__        0
#define AGG_ALL_WALK     0
#define AGG_ALL_ALL      1
#define AGG_IF_(c, ...)  AGG_IF__(c, __VA_ARGS__)
#define AGG_IF__(c, ...) AGG_IF_##c(__VA_ARGS__)
#define AGG_IF_0(...)
#define AGG_IF_1(...)     __VA_ARGS__
/* fn when the column says the pass has it, else NULL. */
#define AGG_HOOK(col, fn) AGG_IF_(AGG_HAS_##col, fn) AGG_IF_(AGG_NO_##col, NULL)
#define AGG_NO__          1
#define AGG_NO_EVENT      0
#define AGG_NO_SEAL       0
#define AGG_NO_WALK       0
#define AGG_NO_ALL        0
#define AGG_NO_FOUND      0
#define AGG_NO_END        0
#define AGG_NO_HEAD       0

#define AGG_PASS_DECL_(name, classes, event, seal, walk, found, end, head)     \
  struct agg_##name;                                                           \
  int agg_##name##_new(struct idx_agg *a);                                     \
  void agg_##name##_free(struct idx_agg *a);                                   \
  AGG_IF_(AGG_HAS_##event,                                                     \
          int agg_##name##_event(struct idx_agg *a, const struct idx_doc *doc, \
                                 const struct idx_event *ev,                   \
                                 enum idx_class cls);)                         \
  AGG_IF_(AGG_HAS_##seal,                                                      \
          int agg_##name##_seal(struct idx_agg *a, struct tr_err *err);)       \
  AGG_IF_(AGG_HAS_##walk,                                                      \
          int agg_##name##_walk(struct idx_agg *a, struct agg_at *at);)        \
  AGG_IF_(AGG_HAS_##found,                                                     \
          void agg_##name##_found(struct idx_agg *a,                           \
                                  const struct agg_finding *f);)               \
  AGG_IF_(AGG_HAS_##end,                                                       \
          int agg_##name##_end(struct idx_agg *a, struct tr_err *err);)        \
  AGG_IF_(AGG_HAS_##head,                                                      \
          void agg_##name##_head(struct idx_agg *a, struct agg_sum_rank *r);)
AGG_PASS_MAP(AGG_PASS_DECL_)
#undef AGG_PASS_DECL_

/* Hands f to the passes that hear findings, then to idx_agg.on_finding. */
void agg_found(struct idx_agg *a, const struct agg_finding *f);

/* ---- the aggregation of one rank ---- */

struct idx_agg {
  /* The driver's (agg.c). */
  const struct idx_rules *rules;
  uint64_t skipped;       /* events skipped here (X without ts/dur...) */
  int64_t t0_ns, tend_ns; /* earliest start, latest end; t0 > tend: none */
  int threads;            /* the summary's (agg_file_info.threads) */
  struct agg_spill spill; /* every temporary file of the rank */
  struct agg_runs runs;   /* the time records the walk takes */
  size_t rec_cap;         /* idx_agg_init()'s: records held before a spill */
  FILE *coll_out;         /* the collectives' side file (idx_options.
                             collectives_path; borrowed), NULL: none */
  char meta_device[256];  /* M metadata of pid 2 (mcTracer's device
                             name), used for mcTracer only */
  uint8_t by_class[IDX_CLASS_SYNC + 1][AGG_NPASSES + 1]; /* the passes each
                             class goes to, ending in AGG_NPASSES */
  /* What the device pass made of the event being read, for the passes
   * below it: its name id (a kernel's in names, a runtime call's in
   * rt_map, kept or folded) and a kernel's shape. */
  uint32_t ev_name, ev_shape;
  /* The walk's union of device records (agg_walk()): its end after the
   * last record, and its total. */
  int64_t busy_end, gpu_busy_ns;
  /* The columns the critical path adds to kernel and family rows, by
   * name and family id (NULL: none). */
  struct agg_cols *kcols, *fcols;
  const char *path; /* the file's, for messages (borrowed; agg_walk()) */
  /* Optional: the walk's findings (struct agg_finding). */
  void (*on_finding)(void *ud, const struct agg_finding *f);
  void *finding_ud;

  /* The vocabulary. Kernel names (device pass) and what each is (families
   * pass); launch shapes; host API names; step kinds, steps and their
   * labels' texts (steps pass). */
  struct agg_map names;
  struct agg_kernel *kernels;
  size_t kernels_cap;
  struct agg_fold kfold, rfold; /* kernel and host API names beyond the
                                   cap */
  struct agg_map shapes_map;
  struct agg_shape *shapes;
  size_t shapes_cap;
  struct agg_map rt_map;
  uint32_t shape_cap; /* distinct launch shapes and launch rows kept */
  int64_t kernel_ns;  /* every kernel's, the shares' denominator */
  uint32_t heavy;     /* name id of the kernel with the largest total,
                         UINT32_MAX: none (device pass's seal) */
  uint8_t *name_cat;  /* by name id: category index */
  uint32_t *name_family;
  struct agg_map fam_map;
  char **demangled;   /* by name id; NULL: not mangled or not demangled */
  uint64_t texts_cut; /* demangled forms and families cut (agg_name.c) */
  struct agg_map kinds_map; /* run-label kinds */
  struct agg_step step[2][AGG_MAX_STEP_KINDS];
  struct agg_labels labels;
  int step_side;   /* the side steps come from (AGG_SIDE_*) */
  uint32_t nkinds; /* step kinds tracked: min(kinds, AGG_MAX_STEP_KINDS) */
  uint32_t dropped_kind; /* ProfilerStep in a trace with run labels: its
                            label records are passed over; UINT32_MAX:
                            none */

  /* Each pass's own: a-><name>. */
#define AGG_PASS_MEMBER_(name, ...) struct agg_##name *name;
  AGG_PASS_MAP(AGG_PASS_MEMBER_)
#undef AGG_PASS_MEMBER_
};

/* rec_cap: time records held in memory before spilling (0: default; the
 * collectives' records, at most AGG_COLL_RECS of them). The
 * name cap, and the shape cap, start at IDX_MAX_KERNEL_NAMES. */
int idx_agg_init(struct idx_agg *a, const struct idx_rules *rules,
                 size_t rec_cap);
/* Sets the cap on distinct kernel (and host API) names, and on launch
 * shapes and rows; 0 keeps it. */
void idx_agg_cap_names(struct idx_agg *a, uint32_t cap);
/* An idx_event_cb: accounts one event. Returns 0 or a negative error. */
int idx_agg_event(void *ud, const struct idx_doc *doc,
                  const struct idx_event *ev);
void idx_agg_free(struct idx_agg *a);

/* A time record of ev of type and id; aux is the correlation (-1: none). */
int agg_record(struct idx_agg *a, const struct idx_event *ev,
               enum agg_rec_type type, uint32_t id, int64_t aux);
/* ev's correlation, or -1. */
int64_t agg_corr_of(const struct idx_event *ev);

/* What idx_agg_summary() needs besides the events. */
struct agg_file_info {
  const char *path;
  uint64_t file_bytes;
  int rank; /* idx_options.rank: >= 0 wins over the trace's */
  int threads; /* the file's (idx_options.threads): with 2 or more, the
                  summary's work runs on two (agg_beside.c) */
};

/* Ends the aggregation (every pass's seal, walk and end, agg.c) and hands
 * the rank summary to sink: its head, then its tables row by row
 * (agg_json.c). */
int idx_agg_rows(struct idx_agg *a, const struct idx_doc *doc,
                 const struct agg_file_info *info, const struct idx_sink *sink,
                 struct tr_err *err);
/* The walk of idx_agg_rows(): the passes' seals, the records in time
 * order (a->gpu_busy_ns, a->busy_end: the union of device records), the
 * passes' ends. */
int agg_walk(struct idx_agg *a, struct tr_err *err);
/* Every pass's scalars and warnings into r (its head hooks). */
void agg_heads(struct idx_agg *a, struct agg_sum_rank *r);

/* A sink that builds the whole summary as one document: t->doc, NULL
 * until the head came (then the caller json_decref()s it). */
struct agg_tree {
  json_t *doc;
};
void agg_tree_sink(struct agg_tree *t, struct idx_sink *out);
/* Ends t after the call that fed it returned rc: with 0, *out gets the
 * document (caller json_decref()s), else it is freed. Returns rc. */
int agg_tree_take(struct agg_tree *t, int rc, json_t **out);

/* idx_agg_rows() into one document, *out (caller json_decref()s). */
int idx_agg_summary(struct idx_agg *a, const struct idx_doc *doc,
                    const struct agg_file_info *info, json_t **out,
                    struct tr_err *err);

/* ---- run labels (agg_steps.c, agg_runs.c) ---- */

/* agg_labels (agg_runs.c): stores the text of a run label (borrowed,
 * copied up to AGG_LABEL_TEXT bytes) and gives its number in *seq. */
int agg_labels_add(struct agg_labels *l, const char *p, size_t n, int64_t *seq);
/* The text of label seq into buf, NUL-terminated; "" for an unknown seq.
 * 0 or TR_EIO. */
int agg_labels_get(struct agg_labels *l, int64_t seq, char *buf, size_t size);
void agg_labels_free(struct agg_labels *l);

/* 1 with *no when p[0..n) is "ProfilerStep#<N>", else 0. */
int agg_profiler_step_no(const char *p, size_t n, int64_t *no);
/* The length of a run label's kind, the name up to '[' (docs/ATOM.md's
 * kinds, propose_<drafter> by prefix), or 0 when the name is no run label
 * ("ProfilerStep#3", "capture_graph_bs_8", "decode_helper[x]"). */
size_t agg_label_kind(struct idx_str n);
/* The integer after `key` (e.g. "tok=") from byte `from` on, where key
 * starts a field (after '[', ' ' or ','); *second (may be NULL) gets the
 * number after a '/' (bs=117/128), or -1. The first number or -1. Fields
 * it is not asked for (ctx=, T=, sqsq= sqsk= sk= of ATOM's detailed
 * annotation) are passed over, never an error. */
int64_t agg_label_field(struct idx_str n, size_t from, const char *key,
                        int64_t *second);
/* The percentile p (per mille) of n samples in h: the sample of rank
 * ceil(p n / 1000) - 1, as agg_hist_rank() values it. */
int64_t agg_pct(const struct agg_hist *h, const struct agg_stat *s, int p);

/* Which step kind covers a time, as the labels of the step side arrive in
 * start order (agg_idle.c): kind k covers t while t is before the largest
 * end of its labels so far; of the kinds covering t, the one whose latest
 * label started last wins (ties: the kind seen first). */
struct agg_cover {
  int64_t start[AGG_MAX_STEP_KINDS]; /* the latest label's start */
  int64_t end[AGG_MAX_STEP_KINDS];   /* the largest end; INT64_MIN: none */
};
void agg_cover_init(struct agg_cover *c);
void agg_cover_label(struct agg_cover *c, uint32_t k, int64_t start,
                     int64_t end);
/* The covering kind of t among the first nk, or -1. */
int agg_cover_kind(const struct agg_cover *c, uint32_t nk, int64_t t);

/* ---- categories and families (rules.c, family.c, agg_family.c) ---- */

/* The index of a category id in the fixed list of rules.c, 0..
 * AGG_NCATEGORIES-1, and back. */
int agg_category_index(const char *category);
const char *agg_category_name(int index);

/* rules.c: the first family rule matching name (demangled), into *out;
 * 0 when none matches. */
enum agg_fam_action {
  AGG_FAM_KEEP,
  AGG_FAM_TILE,
  AGG_FAM_ORDINAL,
  AGG_FAM_ARG,
  AGG_FAM_AS
};

struct agg_family_rule {
  enum agg_fam_action action;
  int arg;        /* AGG_FAM_ARG: from 1 */
  const char *as; /* AGG_FAM_AS: borrowed from the rules */
};

int agg_family_rule(const struct idx_rules *rules, const char *name,
                    struct agg_family_rule *out);

/* family.c: idx_family() of name whose demangled form is demangled
 * (NULL: not mangled). A new string, or NULL when out of memory. */
char *agg_family_of(const struct idx_rules *rules, const char *name,
                    const char *demangled);

/* row["demangled"] = the demangled form of kernel name id, when it was
 * mangled (top-kernel lists show what the kernels table shows). */
void agg_set_demangled(const struct idx_agg *a, uint32_t id, json_t *row);

struct agg_family { /* by family id */
  struct agg_stat s;
  struct agg_hist hist;
  uint32_t kernels; /* distinct names */
  uint32_t top;     /* name id of its largest total */
};

/* The families pass (agg_family.c): its figures, which the samples pass
 * reads too. */
struct agg_families {
  struct agg_family *v; /* by family id (fam_map) */
  size_t cap;
  struct agg_map famstep_map; /* (family, kind) */
  struct agg_famstep *famsteps;
  size_t famsteps_cap;
};

/* ---- the device pass (agg_device.c) ---- */

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

/* Kernels, their launches and copies, and the host API calls, one event
 * at a time; what the samples pass reads too (the copies' time). */
struct agg_device {
  struct agg_map launches_map;
  struct agg_launch *launches;
  size_t launches_cap;
  /* Distinct shapes, and launch rows, kept (idx_agg.shape_cap: a trace
   * of one shape per launch must not grow the tables with its events);
   * beyond it a kernel of a new shape is counted without grid and block
   * (shapes_folded counts them), one of a new launch row without
   * registers and shared memory (launches_folded). */
  uint64_t shapes_folded, launches_folded;
  struct agg_named *runtime;
  size_t runtime_cap;
  struct agg_copy copies[AGG_COPY_KINDS];
  /* Launch join (ROCm): kernels waiting for their runtime launch event,
   * and runtime launch events waiting for their kernel, by correlation. */
  struct agg_corr k_pending, rt_pending;
  /* Copy join (ROCm 6.2): copies without bytes waiting for their runtime
   * call, and runtime calls' bytes waiting for their copy. */
  struct agg_corr c_pending, rtc_pending;
  uint64_t kernel_events;
  struct agg_row *krows; /* the kernel names in the kernels table's order */
  size_t nkrows;
};

/* ---- the summary's rows (agg_json.c) ---- */

/* Where a summary table's rows go: each table's writer hands its rows one
 * at a time to agg_out_row(), which gives them to the sink (index.h)
 * under the table's name and frees them. */
struct agg_out {
  const struct idx_sink *sink;
  const char *table; /* the TR_SUM_TABLES member being written */
  struct tr_err *err;
  int rc; /* the first failure; rows after it are dropped */
};

/* Hands row (taken: freed here; NULL: out of memory) to o's sink. */
void agg_out_row(struct agg_out *o, json_t *row);
/* Hands each row of rows (taken; NULL: out of memory) to o's sink: a
 * table made whole (the critical path's, bounded by the steps kept). */
void agg_out_array(struct agg_out *o, json_t *rows);

/* The rows of each table of the rank summary, one function per row of
 * common/summary.h's TR_TABLE_MAP (its rows column), declared here from
 * the map and defined by the pass that makes the table: a row whose
 * function is missing does not link. The summary calls them in the map's
 * order, o->table set to the row's name, once every pass has ended. */
#define AGG_ROWS_DECL_(name, rows)                                             \
  void rows(struct idx_agg *a, struct agg_out *o);
TR_SUM_WRITERS(AGG_ROWS_DECL_)
#undef AGG_ROWS_DECL_

/* A row to sort (agg_sorted_rows()): total descending, then name
 * ascending, then id. */
struct agg_row {
  int64_t total;
  const char *p;
  size_t n;
  uint32_t id;
};

/* The ids 0..n-1 for which fill() holds, filled by it, in agg_row order:
 * a new array (caller frees) of *nout, NULL when out of memory. */
struct agg_row *agg_sorted_rows(size_t n, size_t *nout,
                                int (*fill)(void *ud, uint32_t id,
                                            struct agg_row *r),
                                void *ud);

/* r's total and name (k's text, borrowed). */
void agg_row_set(struct agg_row *r, int64_t total, const struct agg_key *k);

/* total / den rounded half up to 6 decimals; 0 when either is <= 0. */
double agg_share(int64_t total, int64_t den);
/* floor(total / count), 0 without samples. */
int64_t agg_avg(const struct agg_stat *s);

/* Shared row helpers. agg_key_cmp: byte order, a prefix first. agg_order:
 * the ids 0..n-1 sorted by cmp (qsort_r's), a new array (caller frees),
 * NULL when out of memory. */
int agg_key_cmp(const struct agg_key *x, const struct agg_key *y);
uint32_t *agg_order(uint32_t n, int (*cmp)(const void *, const void *, void *),
                    const void *ud);
json_t *agg_json_xyz(const int64_t v[3], int present);
json_t *agg_json_strn(const char *p, size_t n);

#endif
