/*
 * agg: the aggregation half of the indexer, the face of index/agg/. It
 * receives the reader's struct idx_event records (index/read/read.h) one at
 * a time, in file order, and turns them into one rank's summary (the JSON
 * of docs/API.md, "Rank summary") through its passes: the rank's
 * vocabulary, the pass table and the hooks it names, the summary's rows.
 *
 * Memory grows with the number of distinct kernel names, launch shapes and
 * runtime names, never with the number of events: the only per-event state
 * is a fixed buffer of time records, sorted and spilled to a temporary file
 * when full (index/kit/agg_runs.c), merged in time order by the walk
 * (agg.c).
 *
 * Internal to index/. One struct idx_agg per file, one thread at a time
 * (but the work its passes hand beside, index/kit/agg_beside.c).
 */
#ifndef IDX_AGG_H
#define IDX_AGG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/summary.h"
#include "common/tr.h"
#include "index/read/read.h"
#include "index/index.h"
#include "index/kit/kit.h"

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
 *   XX(name, STATE, classes, EVENT, SEAL, WALK, FOUND, END, HEAD)
 *
 *   STATE      int agg_<name>_new(a): makes a-><name>; void
 *              agg_<name>_free(a) undoes it (NULL is fine), in the
 *              reverse order; _: a pass of no state of its own (it reads
 *              the words of idx_agg the passes above it leave)
 *   classes    the event classes its event hook takes: AGG_CL() of enum
 *              idx_class; 0 without one
 *   EVENT      int agg_<name>_event(a, doc, ev, cls): one X event of its
 *              classes (or an instant, IDX_CLASS_INSTANT), in file order,
 *              after the passes above it
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
 * and the state of the passes above it (or the words they leave in
 * idx_agg, when it is a room the pass above includes: decode's for perf
 * and memory), hears from the passes below it through the walk's struct
 * agg_at and the findings, and hands the rows their columns through
 * idx_agg (kcols, fcols).
 */
#define AGG_PASS_MAP(XX)                                                       \
  XX(device, STATE,                                                            \
     AGG_CL(KERNEL) | AGG_CL(COPY) | AGG_CL(MEMSET) | AGG_CL(RUNTIME), EVENT,  \
     SEAL, _, _, _, HEAD)                                                      \
  XX(steps, STATE, AGG_CL(LABEL_CPU) | AGG_CL(LABEL_GPU), EVENT, SEAL, WALK,   \
     _, END, HEAD)                                                             \
  XX(families, STATE, 0, _, SEAL, WALK, _, _, _)                               \
  XX(samples, STATE, 0, _, SEAL, WALK, _, END, _)                              \
  XX(decode, STATE, AGG_DECODE_CLASSES, EVENT, SEAL, _, _, END, HEAD)          \
  XX(perf, STATE, 0, _, _, _, _, _, HEAD)                                      \
  XX(memory, _, 0, _, _, _, _, _, HEAD)                                        \
  XX(host, STATE,                                                              \
     AGG_CL(CPU_OP) | AGG_CL(PYTHON) | AGG_CL(LABEL_CPU) | AGG_CL(RUNTIME),    \
     EVENT, _, _, _, _, HEAD)                                                  \
  XX(cpath, STATE,                                                             \
     AGG_CL(KERNEL) | AGG_CL(COPY) | AGG_CL(MEMSET) | AGG_CL(SYNC), EVENT,     \
     SEAL, ALL, FOUND, END, HEAD)                                              \
  XX(coll, STATE, AGG_CL(KERNEL), EVENT, SEAL, WALK, _, END, HEAD)             \
  XX(idle, STATE, 0, _, SEAL, WALK, _, END, HEAD)                              \
  XX(timeline, STATE, 0, _, SEAL, WALK, _, END, HEAD)                          \
  XX(phases, STATE, 0, _, SEAL, WALK, _, END, _)

#define AGG_CL(c) (1u << IDX_CLASS_##c)
/* Decode takes every class but the GPU-side labels and cuda_sync, and
 * the instants, whose [memory] events its walk hands to the memory room
 * with the stacks it keeps (index/memory/memory.h). */
#define AGG_DECODE_CLASSES                                                     \
  (AGG_CL(KERNEL) | AGG_CL(COPY) | AGG_CL(MEMSET) | AGG_CL(RUNTIME) |          \
   AGG_CL(LABEL_CPU) | AGG_CL(CPU_OP) | AGG_CL(PYTHON) | AGG_CL(INSTANT))

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
struct pf_lib;
struct mem_lib;
struct agg_out;
struct agg_sum_rank;

/* The hooks' declarations, from the rows. */
#define AGG_HAS__        0
#define AGG_HAS_STATE    1
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
#define AGG_NO_STATE      0
#define AGG_NO_EVENT      0
#define AGG_NO_SEAL       0
#define AGG_NO_WALK       0
#define AGG_NO_ALL        0
#define AGG_NO_FOUND      0
#define AGG_NO_END        0
#define AGG_NO_HEAD       0

#define AGG_PASS_DECL_(name, state, classes, event, seal, walk, found, end,    \
                       head)                                                   \
  struct agg_##name;                                                           \
  AGG_IF_(AGG_HAS_##state, int agg_##name##_new(struct idx_agg *a);            \
          void agg_##name##_free(struct idx_agg *a);)                          \
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

/* A pass's event hook (the EVENT column of AGG_PASS_MAP). */
typedef int (*agg_event_fn)(struct idx_agg *a, const struct idx_doc *doc,
                            const struct idx_event *ev, enum idx_class cls);

struct idx_agg {
  /* The driver's (agg.c). */
  const struct idx_rules *rules;
  const char *gpu_roof;   /* idx_options.gpu_roof (borrowed) */
  const char *dev_name;   /* the summary's device (its head), NULL: none */
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
  /* The event hooks each class goes to, in the map's order, ending in
   * NULL: called straight from here for each of millions of events. */
  agg_event_fn by_class[IDX_NCLASSES][AGG_NPASSES + 1];
  /* What the device pass made of the event being read, for the passes
   * below it: its name id (a kernel's in names, a runtime call's in
   * rt_map, kept or folded) and a kernel's shape. */
  uint32_t ev_name, ev_shape;
  /* The driver's: the hash of the event's name (agg_ev_hash()), and
   * whether it is found yet. */
  uint64_t ev_hash;
  int ev_hashed;
  /* What the decode pass leaves at its seal for the passes below it, the
   * rooms it feeds (its walk, beside, fills them; they are whole once
   * its end has run): the op groups (index/perf/) and memory over time
   * (index/memory/); NULL: none. */
  const struct pf_lib *op_groups;
  struct mem_lib *mem;
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
#define AGG_PASS_MEMBER_(name, state, ...)                                     \
  AGG_IF_(AGG_HAS_##state, struct agg_##name *name;)
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

/* A 64-bit hash of name s, every byte (Python function names differ in a
 * line number in their middle: "torch/utils/_pytree.py(1308): tree_iter"),
 * the maps' own (agg_key_hash()); 0 for none. */
uint64_t agg_name_hash(struct idx_str s);
/* agg_name_hash() of the name of the event being read, found once
 * however many passes ask (idx_agg_event() forgets it at each event);
 * inline, since two or three passes ask for each of millions of events. */
static inline uint64_t agg_ev_hash(struct idx_agg *a,
                                   const struct idx_event *ev)
{
  if (!a->ev_hashed) {
    a->ev_hash = agg_name_hash(ev->name);
    a->ev_hashed = 1;
  }
  return a->ev_hash;
}

/* Ids of names met lately, by their agg_name_hash(), in a direct-mapped
 * table of AGG_SEEN slots (key 0: empty): most events repeat one of the
 * few thousand names a trace has, and a hit costs the hash, not an
 * interning map's probe and compare (two names of a trace sharing a hash
 * is a chance of 2^-64 a pair; test_index_agg holds names that differ by
 * their length apart; a trace that forges a pair only mislabels its own
 * events, as it could by naming them so). A pass keeps in one only what
 * its map would answer again alike, never a name folded beyond a cap. */
#define AGG_SEEN 4096
struct agg_seen {
  uint64_t key;
  uint32_t id, aux; /* the name's id; aux: the pass's own word */
};

static inline struct agg_seen *agg_seen_at(struct agg_seen *v, uint64_t key)
{
  return &v[(key >> 20) & (AGG_SEEN - 1)];
}

/* The slot of key in v holding it, or NULL (key 0: never). */
static inline const struct agg_seen *agg_seen_find(struct agg_seen *v,
                                                   uint64_t key)
{
  const struct agg_seen *s = agg_seen_at(v, key);

  return s->key == key && key != 0 ? s : NULL;
}

/* 1 with the id of key in v into *id, else 0. */
static inline int agg_seen_id(struct agg_seen *v, uint64_t key, uint32_t *id)
{
  const struct agg_seen *s = agg_seen_find(v, key);

  if (s != NULL)
    *id = s->id;
  return s != NULL;
}

static inline void agg_seen_put(struct agg_seen *v, uint64_t key, uint32_t id,
                                uint32_t aux)
{
  struct agg_seen *s = agg_seen_at(v, key);

  s->key = key;
  s->id = id;
  s->aux = aux;
}

/* agg_fold_intern() of name s of hash key (0: none known) through the
 * names met lately v, which keep no folded name. */
int agg_seen_fold_slow(struct agg_seen *v, uint64_t key, struct agg_fold *f,
                       struct agg_map *m, struct idx_str s, int count,
                       uint32_t *id);
/* Inline for the hit, nine in ten of a trace's events. */
static inline int agg_seen_fold(struct agg_seen *v, uint64_t key,
                                struct agg_fold *f, struct agg_map *m,
                                struct idx_str s, int count, uint32_t *id)
{
  if (agg_seen_id(v, key, id))
    return 0;
  return agg_seen_fold_slow(v, key, f, m, s, count, id);
}

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

/* ---- run labels (agg_steps.c) ---- */

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

/* ---- categories and families (rules.c, family.c, agg_family.c) ---- */

/* The index of a category id in the fixed list of rules.c, 0..
 * AGG_NCATEGORIES-1, and back. */
int agg_category_index(const char *category);
const char *agg_category_name(int index);

/* row["demangled"] = the demangled form of kernel name id, when it was
 * mangled (top-kernel lists show what the kernels table shows). */
void agg_set_demangled(const struct idx_agg *a, uint32_t id, json_t *row);

/* ---- the summary's rows as C structs (agg_sum.c) ---- */

/* The rank summary's rows as C structs, expanded from the one field list
 * of common/summary.h: the indexer fills a struct per row and
 * agg_sum_<row>_json() writes it, so every member is written under its one
 * name and with its one type.
 *
 * C types by TYPE: INT and AVG int64_t; INT_NULL struct agg_opt (set 0:
 * null); TEXT, TEXT_NULL and NAME struct agg_txt (bytes, not NUL-
 * terminated; p NULL: null for TEXT_NULL, "" otherwise); JSON and
 * JSON_NULL json_t * (the writer takes the reference; NULL: null); REAL,
 * SHARE and RATIO double; REAL_NULL double, NaN for null.
 */
struct agg_opt {
  int set;
  int64_t v;
};

struct agg_txt {
  const char *p;
  size_t n;
};

/* A NUL-terminated string as a struct agg_txt (NULL stays NULL). */
struct agg_txt agg_txt(const char *s);

#define AGG_CTYPE_INT       int64_t
#define AGG_CTYPE_AVG       int64_t
#define AGG_CTYPE_INT_NULL  struct agg_opt
#define AGG_CTYPE_TEXT      struct agg_txt
#define AGG_CTYPE_TEXT_NULL struct agg_txt
#define AGG_CTYPE_NAME      struct agg_txt
#define AGG_CTYPE_JSON      json_t *
#define AGG_CTYPE_JSON_NULL json_t *
#define AGG_CTYPE_SHARE     double
#define AGG_CTYPE_RATIO     double
#define AGG_CTYPE_PART      double
#define AGG_CTYPE_REAL      double
#define AGG_CTYPE_REAL_NULL double

#define AGG_SUM_MEMBER_(key, col, ty, all, since) AGG_CTYPE_##ty key;

struct agg_sum_rank {
  TR_SUM_RANK(AGG_SUM_MEMBER_)
};

/* struct agg_sum_kernel, ..._launch, ...: one per TR_SUM_TABLES row. */
#define AGG_SUM_STRUCT_(member, ROWS, row)                                     \
  struct agg_sum_##row {                                                       \
    ROWS(AGG_SUM_MEMBER_)                                                      \
  };
TR_SUM_TABLES(AGG_SUM_STRUCT_)
TR_CAP_TABLES(AGG_SUM_STRUCT_)
#undef AGG_SUM_STRUCT_

/* The JSON object of a row, members in the list's order; takes the
 * references of its JSON members. NULL when out of memory. */
json_t *agg_sum_rank_json(const struct agg_sum_rank *r);
#define AGG_SUM_DECL_(member, ROWS, row)                                       \
  json_t *agg_sum_##row##_json(const struct agg_sum_##row *r);
TR_SUM_TABLES(AGG_SUM_DECL_)
TR_CAP_TABLES(AGG_SUM_DECL_)
#undef AGG_SUM_DECL_

/* Sets an empty array per TR_SUM_TABLES row into the summary object o,
 * in the list's order: the tables a row goes to. */
void agg_sum_tables_new(json_t *o);

/* Compile-time reminder at each place that fills a row: a row added to the
 * list fails it until that place sets the new member. */
#define AGG_SUM_FILLS(ROWS, n)                                                 \
  _Static_assert(TR_SUM_COUNT(ROWS) == (n),                                    \
                 #ROWS " has a member this function does not fill")

/* ---- the summary's rows (agg_json.c) ---- */

/* Where a summary table's rows go: each table's writer hands its rows one
 * at a time to agg_out_row(), which gives them to the sink (index.h)
 * under the table's name and frees them. */
struct agg_out {
  const struct idx_sink *sink;
  const char *table; /* the TR_SUM_TABLES member being written */
  struct tr_err *err;
  int rc;             /* the first failure; rows after it are dropped */
  struct tr_buf text; /* a row's text, for a sink's on_text (agg_text.c) */
};

/* Hands row r of a table to o's sink: as its text when the sink takes
 * text (agg_text.c), else as agg_sum_<row>_json()'s object. r's JSON
 * members are taken. One per TR_SUM_TABLES row. */
#define AGG_OUT_DECL_(member, ROWS, row)                                       \
  void agg_out_##row(struct agg_out *o, const struct agg_sum_##row *r);
TR_SUM_TABLES(AGG_OUT_DECL_)
#undef AGG_OUT_DECL_

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
