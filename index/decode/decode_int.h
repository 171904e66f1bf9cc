/*
 * The decode unit's insides (decode.h): the capture library, the records
 * of a file, the walk's state and the tables. Shared by dec_event.c (the
 * event pass), dec_walk.c (the time-ordered walk), dec_ring.c (its
 * launches), dec_match.c (replay against graph), dec_tab.c (the tables)
 * and dec_files.c (capture trace names). Internal to index/.
 */
#ifndef IDX_DECODE_INT_H
#define IDX_DECODE_INT_H

#include "index/decode/decode.h"
#include "index/host/host.h"
#include "index/memory/memory.h"
#include "index/perf/perf.h"

#define DEC_NONE      UINT32_MAX /* no module, op or name */
#define DEC_NO_LAYER  (-1)
#define DEC_MAX_KINDS AGG_MAX_STEP_KINDS
#define DEC_CORR_MASK ((INT64_C(1) << 48) - 1)

/* ---- the capture library (one per rank) ---- */

/* What a capture launch launched: a kernel (its name when the launch
 * event says it: ROCm's args.kernel), a copy or a memset. */
enum dec_cls { DEC_KERNEL, DEC_COPY, DEC_MEMSET };

struct dec_launch { /* one launch recorded into a graph */
  uint32_t node;    /* its host stack (hs_trie) */
  uint32_t name;    /* device name id; DEC_NONE: not said */
  uint32_t cinst;   /* the innermost modeled op instance above it
                       (index/perf/perf.h); PF_NONE: none */
  uint8_t cls;      /* enum dec_cls */
  uint8_t first;    /* first launch of its op instance */
};

struct dec_graph {
  uint32_t file;  /* index in dec_lib.files */
  uint32_t root;  /* its place among the file's graphs */
  uint32_t first; /* its first launch in dec_lib.launches */
  uint32_t n;     /* launches */
  /* Its modeled op instances (index/perf/perf.h): capture instances
   * [cinst_first, cinst_end) of it whose frames end by win_end, the end
   * of its capture window (TraceLens's capture root). */
  uint32_t cinst_first, cinst_end;
  int64_t win_end;
};

struct dec_capfile {
  char *path;
  int64_t bs, q;
  enum idx_graph_mode mode; /* settled by dec_end: FULL or PIECEWISE */
  uint32_t first, n;        /* its graphs in dec_lib.graphs */
};

/* Launches kept in the library, all graphs together: beyond, a graph is
 * dropped (counted) rather than the memory grown. */
#define DEC_MAX_LAUNCHES (1u << 21)

struct dec_lib {
  struct hs_trie trie;
  struct pf_lib *perf; /* the op groups (index/perf/perf.h) */
  struct agg_map names; /* device names: kernels, copies, memsets */
  char *name_buf;        /* a name cleaned as the kernels table keeps it */
  uint32_t max_names;
  struct agg_spill *sp; /* where the files' records spill (borrowed) */
  uint64_t names_folded;
  struct dec_launch *launches;
  size_t nlaunches, launches_cap;
  struct dec_graph *graphs;
  size_t ngraphs, graphs_cap;
  struct dec_capfile *files;
  size_t nfiles, files_cap;
  uint64_t graphs_dropped; /* beyond DEC_MAX_LAUNCHES, or unreadable */
  uint64_t capture_files_failed;
  /* Python frame names judged source frames or not (hs_py_source(), by
   * name: a trace repeats its frames), at most max_names * 4 of them;
   * beyond, a new name is no source frame */
  struct agg_map py_names;
  uint8_t *py_kind; /* by id: the kind + 1 (1: none) */
  size_t py_kind_cap;
  uint64_t py_folded; /* frames of names past the cap: not judged */
  /* Names met lately, by their hash (agg.h's agg_seen): a Python
   * function's frame (id: its trie name, aux: its kind; 0: no frame), an
   * op's trie name, a device record's name; one block, py_seen's. */
  struct agg_seen *py_seen, *op_seen, *dev_seen;
};

/* A device name's id; beyond max_names new names are DEC_NONE (they can
 * match nothing and are named "(more names)" in the tables). */
int dec_name(struct dec_lib *lib, const char *p, size_t n, uint32_t *id);

/* ---- a file's records (dec_event.c), sorted by agg_runs ---- */

/* Record types, in the order they sort at one time stamp: frames and
 * steps before the launches they contain, a window's close before a
 * launch at its end (outside), its open before one at its start
 * (inside), device records last. */
enum dec_rtype {
  DR_FRAME = 0,    /* id: frame name; aux: lane; dur */
  DR_STEP = 1,     /* id: step descriptor; aux: lane << 40 | label seq */
  DR_WINCLOSE = 2, /* capture window ends; aux: lane; id: 1 fallback */
  DR_WINOPEN = 3,  /* capture window starts; aux: lane; id: 1 fallback */
  DR_LAUNCH = 4,   /* id: lane; aux: correlation; dur: name | cls << 32 */
  DR_GRAPH = 5,    /* a graph launch; id: lane; aux: correlation */
  DR_DEVICE = 6,   /* id: device name; aux: stream lane << 48 | corr;
                      type bits 8..: enum dec_cls */
  /* A [memory] event (run traces: index/memory/), two records that sort
   * in this order at its time, joined by its thread (id: its lane): */
  DR_MEM = 7,       /* aux: Addr; dur: Bytes */
  DR_MEM_TOTALS = 8 /* aux: Total Reserved; dur: Total Allocated; type
                       bits 8..: its device (mem_device()) */
};

/* The streams of a file's records, one per block of events kineto
 * writes in start order (index/host/host.h): CPU ops with the
 * annotations, Python functions, runtime calls, device records and
 * [memory] events. Each stays one sorted run, never sorted, and the walk
 * merges the few of them (records sort in one total order: the merge is
 * the order one stream of them all would have). */
enum dec_stream { DS_HOST, DS_PY, DS_RT, DS_DEV, DS_MEM, DEC_STREAMS };

/* What a step label says (dec_event.c parses ATOM's run labels and the
 * iteration annotations of vLLM and SGLang). */
struct dec_desc {
  uint32_t kind; /* in dec_file.kinds */
  uint32_t pad;
  int64_t bs;       /* real batch size, -1 */
  int64_t graph_bs; /* batch size of the graph it replays, -1 */
  int64_t tok;      /* tokens, -1 */
};

/* Per step kind (dec_walk.c's first pass over the step labels): its
 * steps' label durations. */
struct dec_kind {
  struct agg_stat dur;
  struct agg_hist hist;
};

/* ---- the tables (dec_tab.c) ---- */

enum dec_tag {          /* the tables' keys (a, b of struct dec_key) */
               T_MOD,   /* module */
               T_LAYER, /* layer + 1 (0: none) */
               T_OP,    /* op name */
               T_LM,    /* layer + 1, module */
               T_OM,    /* op name, module */
               T_KERN,  /* module, device name */
               T_SRC,   /* source frame name, module */
               T_TAGS
};

struct dec_key {
  uint32_t tag, kind; /* kind: DEC_MAX_KINDS for outside every step */
  uint32_t a, b;
};

struct dec_ent {
  struct dec_key key;
  uint64_t kernels;   /* device records */
  uint64_t instances; /* op instances (T_OP, T_OM) */
  int64_t ns;         /* their durations */
  int64_t subtree_ns; /* T_OP: every kernel under the op */
  uint64_t steps;     /* steps of the kind it took time in */
  struct agg_stat st; /* its time per step, over those steps */
  struct agg_hist hist;
};

/* What a stack means (docs/DECODE.md, "Identity"), derived once a node. */
struct dec_ident {
  int done;
  uint32_t op;           /* innermost op frame's name; DEC_NONE */
  uint32_t module;       /* collapsed module path id; DEC_NONE */
  int32_t layer;         /* DEC_NO_LAYER */
  uint32_t src;          /* source frame's name (HS_SRC, HS_SRC_PKG:
                            dec_tab.c); DEC_NONE */
  uint32_t ops_at, nops; /* the distinct op names on the stack, in
                            dec_tab.opsv */
};

/* A kernel of the median step. */
struct dec_mk {
  uint32_t node, name;
  uint64_t kernels;
  int64_t ns;
};

struct dec_median {
  int have;
  int64_t dist, start, dur, seq;
  struct dec_mk *v;
  size_t n;
};

struct dec_tab {
  struct agg_map ents; /* struct dec_key -> id */
  struct dec_ent *ent;
  size_t ent_cap;
  struct agg_map mods;     /* collapsed module paths */
  struct dec_ident *ident; /* by node */
  size_t ident_cap;
  uint32_t *opsv;
  size_t nopsv, opsv_cap;
  uint64_t steps[DEC_MAX_KINDS]; /* closed steps per kind */
  /* Per kind (last: outside steps): device records, their time, and the
   * time of those with an op. */
  uint64_t kind_kernels[DEC_MAX_KINDS + 1];
  int64_t kind_ns[DEC_MAX_KINDS + 1];
  int64_t kind_attr_ns[DEC_MAX_KINDS + 1];
  struct dec_median median[DEC_MAX_KINDS];
  struct agg_corr scratch; /* a step's sums by entry id */
};

/* ---- completeness (docs/DECODE.md, "Completeness") ---- */

enum dec_reason {               /* why a replay was left unmatched */
                  R_NO_CAPTURE, /* the rank has no capture trace */
                  R_NO_GRAPH, /* no captured graph of its batch size (or piece)
                               */
                  R_COUNT,    /* its kernel count fits no candidate graph */
                  R_NAMES, /* a candidate of its count launched other kernels */
                  R_REASONS
};

struct dec_complete {
  uint64_t devices; /* device records */
  int64_t device_ns;
  uint64_t replays, replay_kernels;
  int64_t replay_ns;
  uint64_t matched, short_matched; /* short: fewer kernels than launches,
                                      one way to place them */
  uint64_t missing_launches;       /* capture launches no kernel took */
  int64_t short_ns;
  uint64_t unmatched[R_REASONS];
  int64_t unmatched_ns[R_REASONS];
  uint64_t unmatched_kernels;
  uint64_t empty_graphs; /* graph launches without a device record */
  uint64_t no_launch;    /* device records whose launch was not seen */
  int64_t no_launch_ns;
  uint64_t no_op; /* attributed, but no op above the launch */
  int64_t no_op_ns;
  uint64_t late;          /* records after their step was closed */
  uint64_t steps_forced;  /* steps closed while still waiting */
  uint64_t launches_lost; /* launches dropped from the bounded table */
};

/* ---- a file ---- */

struct dec_file {
  struct dec_lib *lib;
  enum dec_mode mode;
  const struct idx_capture *cap; /* DEC_CAPTURE: its description */
  uint32_t file;                 /* DEC_CAPTURE: index in lib->files */
  struct agg_runs runs[DEC_STREAMS]; /* merged in the walk */
  struct agg_runs step_runs; /* the DR_STEP records again, alone */
  uint64_t *nested;          /* bit seq: a label inside another one of
                                its thread, not a step of its own */
  struct hs_lanes lanes;     /* thread ids of the event pass */
  struct agg_map stream_ids; /* (device, stream) -> stream lane */
  /* The last thread and stream looked up: consecutive events share them,
   * so most lookups cost a compare. */
  struct {
    int64_t pid, tid;
    uint32_t lane;
    int valid;
  } last_lane;
  struct {
    int64_t key[2];
    uint32_t lane;
    int valid;
  } last_stream;
  struct agg_map rt_names; /* runtime call names -> rt_class[id] */
  uint8_t *rt_class;
  size_t rt_class_cap;
  struct agg_map kinds; /* step kind names */
  struct dec_kind kind[DEC_MAX_KINDS];
  struct agg_map descs;     /* struct dec_desc -> id */
  struct agg_labels labels; /* step label texts by seq */
  uint64_t begins;          /* StreamBeginCapture calls seen */
  uint64_t skipped;         /* step labels beyond the kinds */
  struct dec_tab tab;
  struct dec_complete c;
  struct mem_lib *mem; /* DEC_RUN: memory over time (index/memory/) */
  int ended;
};

/* dec_event.c */
const struct dec_desc *dec_desc_of(const struct dec_file *d, uint32_t id);
/* The lane (thread) of an event's pid and tid. 0 or TR_ENOMEM. */
int dec_lane_of(struct dec_file *d, const struct idx_event *ev,
                uint32_t *lane);

/* dec_mem.c: a [memory] event (profile_memory: index/memory/memory.h) of a run
 * trace, taken for the walk; other events and capture traces' are
 * ignored. 0 or TR_ENOMEM. */
int dec_memory(struct dec_file *d, const struct idx_event *ev);
/* The rank's span, before dec_end(): the memory timeline's grid. */
void dec_span(struct dec_file *d, int64_t t0_ns, int64_t tend_ns);

/* dec_json.c: the texts of the memory room's ids (decode's names of ops,
 * modules and step kinds), for the rows (index/memory/memory.h). */
void dec_mem_names(struct dec_file *d, struct mem_names *out);

/* dec_walk.c: 1 for a pass-through op frame ("execute"): the op above a
 * launch is looked for past it. */
int dec_through(const struct hs_trie *t, uint32_t name);

/* dec_mem.c: a [memory] event's records in the walk (parts: the first
 * records of one time stamp by thread; DR_MEM_TOTALS: the event is whole,
 * at node of its thread's stack with step kind kind open there, MEM_NONE:
 * none). 0 or TR_ENOMEM. */
int dec_mem_part(struct agg_corr *parts, const struct agg_rec *r);
int dec_mem_end(struct dec_file *d, struct agg_corr *parts,
                const struct agg_rec *r, uint32_t node, uint32_t kind);
/* The walk's table of parts, freed with agg_corr_free(). */
int dec_mem_parts_init(struct agg_corr *parts);

/* dec_walk.c: the walk over d's sealed records (dec_end). */
int dec_walk(struct dec_file *d);

/* dec_match.c */
struct dec_rk {    /* a kernel of a replay */
  uint32_t name;   /* device name id */
  uint32_t stream; /* stream lane */
  uint8_t cls;     /* enum dec_cls */
  int64_t start, dur;
};

/* The candidate graphs of a graph launch: the piece-th graph launch of a
 * step whose label says desc (NULL: no step), best first, at most max
 * into out; returns how many. */
size_t dec_candidates(const struct dec_file *d, const struct dec_desc *desc,
                      uint32_t piece, uint32_t *out, size_t max);

struct dec_match {
  uint32_t graph; /* DEC_NONE: unmatched */
  int is_short;   /* fewer kernels than launches, placed one way only */
  enum dec_reason reason;
  uint32_t *at; /* kernel i took launch at[i] of the graph (caller's
                   buffer of n entries) */
};

/* Matches the n > 0 kernels k (time order) against the candidates: the
 * first that takes them all exactly, else the first that takes them as a
 * subsequence in one way only (one stream). */
void dec_match_replay(const struct dec_lib *lib, const uint32_t *cand,
                      size_t ncand, const struct dec_rk *k, size_t n,
                      struct dec_match *m);

/* dec_ring.c: the walk's launches in arrival order, at most max of them
 * (then the oldest goes), each record of vsize bytes found by its
 * correlation through an index of places in the ring. */
struct dec_ring {
  int64_t *corr;       /* by place: the launch's correlation */
  unsigned char *vals; /* by place: its record */
  size_t vsize;
  uint32_t max, head, len; /* the ring: len places from head */
  uint32_t *ix;            /* open addressing: place + 1; 0 empty */
  uint32_t cap, n;         /* its slots, the places indexed */
};
int dec_ring_init(struct dec_ring *r, size_t vsize, uint32_t max);
/* The record of the launch indexed under corr, in place (valid until its
 * place is taken again), or NULL. */
void *dec_ring_get(const struct dec_ring *r, int64_t corr);
/* Takes corr out of the index; its record stays, unreachable. */
void dec_ring_unindex(struct dec_ring *r, int64_t corr);
/* The correlation of the oldest launch when the ring is full, else NULL:
 * the caller unindexes it before the next push drops it. */
const int64_t *dec_ring_oldest(const struct dec_ring *r);
/* Adds a launch under corr, indexed by it (the caller has unindexed
 * corr); drops the oldest when full. 0 or TR_ENOMEM (nothing changed). */
int dec_ring_push(struct dec_ring *r, int64_t corr, const void *val);
void dec_ring_free(struct dec_ring *r);

/* dec_json.c: the reasons' names in the summary. */
extern const char *const dec_reason_names[R_REASONS];

/* dec_tab.c */
int dec_tab_init(struct dec_tab *t);
void dec_tab_free(struct dec_tab *t);
/* A closed step's kernels (fine: (node << 32 | name) -> struct dec_fine)
 * into the tables of kind k (DEC_MAX_KINDS: outside steps, no per-step
 * figures). */
struct dec_fine {
  uint64_t kernels, instances;
  int64_t ns;
};
int dec_tab_step(struct dec_file *d, uint32_t kind, struct agg_corr *fine,
                 int64_t start, int64_t dur, int64_t seq);
/* The identity of a node (cached). NULL when out of memory. */
const struct dec_ident *dec_ident_of(struct dec_file *d, uint32_t node);

#endif
