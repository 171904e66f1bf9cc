/*
 * kit: the toolbox of the indexer's passes (index/kit/README.md): maps that
 * intern byte strings into dense ids, histograms for medians and
 * percentiles, correlation tables, temporary files bounded together,
 * time records in sorted runs spilled to them and merged back in order,
 * names as kept (printable, bounded) and folded beyond a cap, texts by
 * number, and work handed to a thread beside the caller's.
 *
 * Memory of each grows with what it holds, never with a trace's events:
 * what grows with events spills (agg_runs.c). Internal to index/; each
 * object one thread at a time (agg_beside.c hands items between two).
 */
#ifndef IDX_KIT_H
#define IDX_KIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/tr.h"
#include "index/read/read.h"

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
/* The 64-bit hash of key[0..len) the maps place keys by (their slots keep
 * its low half); key may be NULL when len is 0. */
uint64_t agg_key_hash(const void *key, size_t len);

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

/* The home slot of correlation key among cap (a power of two), as the
 * correlation tables (here and decode's launch ring) place keys. */
static inline uint32_t agg_corr_home(uint32_t cap, int64_t key)
{
  uint64_t x = (uint64_t)key * 0x9E3779B97F4A7C15ull;

  return (uint32_t)(x >> 32) & (cap - 1);
}

/* Backward-shift removal keeps probe chains whole without tombstones:
 * whether the entry at slot j, whose home is home, may move into the hole
 * at i (its home is not cyclically within (i, j]). */
static inline int agg_corr_may_fill(uint32_t home, uint32_t i, uint32_t j)
{
  return (j > i && (home <= i || home > j)) ||
         (j < i && home <= i && home > j);
}
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
  /* idx_options.cancel (borrowed, may be NULL): a walk of spilled runs
   * looks at it before each block it reads and stops with TR_ECONFLICT,
   * as the reading does: those walks last seconds on a big rank. */
  const atomic_bool *cancel;
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

/* ---- integers packed in the bytes they need (agg_runs.c, host_py.c) ----
 *
 * A field is stored and loaded as a whole 8-byte word cut to its length,
 * so packing and unpacking cost no loop and no branch per byte: the
 * buffers keep 8 bytes writable and readable past what they hold. */

/* The bytes v needs: 1 to 8 (agg_width), 0 to 8 (agg_width0, 0 for 0). */
static inline unsigned agg_width(uint64_t v)
{
  return (unsigned)(71 - __builtin_clzll(v | 1)) / 8;
}

static inline unsigned agg_width0(uint64_t v)
{
  return v == 0 ? 0 : agg_width(v);
}

/* A signed value as an unsigned one small when the value is near 0 (-1:
 * 1, 1: 2), and back. */
static inline uint64_t agg_zigzag(int64_t v)
{
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t agg_unzigzag(uint64_t u)
{
  return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Stores v's w low bytes at p (8 bytes at p writable); the byte after. */
static inline unsigned char *agg_put_word(unsigned char *p, uint64_t v,
                                          unsigned w)
{
  memcpy(p, &v, 8);
  return p + w;
}

/* The w bytes at p (0 to 8; 8 bytes at p readable). */
static inline uint64_t agg_get_word(const unsigned char *p, unsigned w)
{
  uint64_t v;

  memcpy(&v, p, 8);
  return w == 0 ? 0 : v & (~0ull >> (64 - 8 * w));
}

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
  size_t window;        /* records an iterator reads of the spilled runs,
                           packed (about 12 bytes each) */
  struct agg_run {
    uint64_t off; /* its first packed byte in the spill file */
    uint64_t n;   /* its records */
    uint64_t bytes;
  } * runs;
  size_t nruns, runs_cap;
  int sealed;
};

/* cap: records held in memory before a sorted run is spilled (>= 2) to
 * a file of sp (borrowed, outlives r); window: records an iterator over
 * the spilled runs reads at a time, all runs together (0: 8 Ki, about
 * 96 KB packed; a stream read in order needs little). */
int agg_runs_init(struct agg_runs *r, size_t cap, struct agg_spill *sp);
void agg_runs_window(struct agg_runs *r, size_t window);
/* 0, a spill error, or TR_EINVAL once sealed. */
int agg_runs_add(struct agg_runs *r, const struct agg_rec *rec);
/* Ends input: sorts what is left (and, when runs spilled, frees the
 * buffer). Then any number of iterations. */
int agg_runs_seal(struct agg_runs *r);
/* The order records sort in: start, type, aux, id, dur. Inline: it runs
 * for every record sorted, added and merged. */
static inline int agg_rec_cmp(const struct agg_rec *a, const struct agg_rec *b)
{
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns ? -1 : 1;
  if (a->type != b->type)
    return a->type < b->type ? -1 : 1;
  /* Then the correlation (device records, calls) or the label number
   * (labels: file order), which tests can know, before the ids. */
  if (a->aux != b->aux)
    return a->aux < b->aux ? -1 : 1;
  if (a->id != b->id)
    return a->id < b->id ? -1 : 1;
  return (a->dur_ns > b->dur_ns) - (a->dur_ns < b->dur_ns);
}

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

/* Run-label texts, spilled: label number -> text (agg_runs.c). */
#define AGG_LABEL_TEXT 256 /* bytes kept of a label (cut on a character) */

struct agg_labels {
  struct agg_spill *sp; /* where the texts spill (borrowed) */
  FILE *text, *index;   /* NULL until the first label */
  int64_t n;
  uint64_t bytes;
};

/* agg_labels (agg_runs.c): stores the text of a run label (borrowed,
 * copied up to AGG_LABEL_TEXT bytes) and gives its number in *seq. */
int agg_labels_add(struct agg_labels *l, const char *p, size_t n, int64_t *seq);
/* The text of label seq into buf, NUL-terminated; "" for an unknown seq.
 * 0 or TR_EIO. */
int agg_labels_get(struct agg_labels *l, int64_t seq, char *buf, size_t size);
void agg_labels_free(struct agg_labels *l);

#endif
