/*
 * The critical path of each step and what hangs off it
 * (docs/CRITICAL_PATH.md): per step the longest path through its CPU ops,
 * launch calls, kernels, copies and synchronisation as Holistic Trace
 * Analysis builds it, with its breakdown; per kernel and family, their
 * time on the path, the steps they are on it and their slack; who kept the
 * device waiting (the culprits of host_late and sync idle stretches);
 * launch cost per kernel; and the kernel sequences of each step kind.
 *
 * Files: cpath.c (the event pass, the walk in time order, steps opening
 * and closing), cpath_step.c (one step's graph and its longest path),
 * cpath_stats.c (the figures summed over steps, and the summary tables).
 * The host side (CPU ops by thread, their stacks) is index/host/host.c.
 *
 * The pass (agg.h's AGG_PASS_MAP): its event hook takes the device records
 * and cuda_sync events, its walk every time record, its found hook the
 * idle stretches (culprits), its end the steps left open.
 *
 * Memory: the event pass adds a time record per device event and per host
 * event (spilled, agg_runs.c); the time pass holds the events of the
 * steps still open (at most CP_OPEN_STEPS, at most max_events events
 * between them: a step that would pass it is counted as too big and not
 * analysed) and tables that grow with distinct names. Internal to index/.
 */
#ifndef IDX_CPATH_H
#define IDX_CPATH_H

#include <jansson.h>
#include <stdint.h>

#include "index/agg/agg.h"
#include "index/read/read.h"

/* What bounds a stretch of the path (its segments' colour). */
enum cp_bound {
  CP_CPU,    /* a CPU op or runtime call */
  CP_GPU,    /* a kernel, copy or memset that is no collective */
  CP_COMM,   /* a collective kernel (rules.c's communication) */
  CP_LAUNCH, /* launch call start to kernel start, the stream idle */
  CP_GAP,    /* one kernel's end to the next's start on a stream */
  CP_SYNC,   /* waiting in a synchronisation (weight 0 in the length) */
  CP_IDLE,   /* host time between top-level ops (weight 0) */
  CP_BOUNDS
};

const char *cp_bound_name(int b);

/* The default of max_events: events the open steps may hold between
 * them (64 bytes each). */
#define CP_MAX_EVENTS   65536
#define CP_OPEN_STEPS   8 /* steps open at once; beyond, the oldest closes */
#define CP_KEEP_STEPS   65536 /* per-step rows kept per rank */
#define CP_SEQ_MIN      2
#define CP_SEQ_MAX      8
#define CP_SEQ_KEEP     16384 /* distinct kernel sequences counted */
#define CP_SEQ_SLOTS    (2 * CP_SEQ_KEEP) /* the table's slots, at most */
#define CP_MAX_KINDS    (AGG_MAX_STEP_KINDS + 2) /* run-label kinds, ... */
#define CP_NO_ROW       UINT32_MAX
#define CP_NO_KIND      UINT32_MAX /* cp_stats_kind(): no room for one more */
#define CP_SEQ_TOP      10   /* sequences listed per kind and length */
#define CP_MEDIAN_SEQ   2048 /* runs of kernels listed of a median step */
#define CP_SEGMENTS     2048 /* segments kept of a picked step */
#define CP_QUEUE_POINTS 1024

/* A stretch of one step's critical path. */
struct cp_segment {
  int64_t from_ns, to_ns; /* absolute */
  int64_t weight_ns;      /* its part of the path length */
  uint32_t name;          /* what: by kind */
  uint16_t lane;          /* host thread or device lane */
  uint8_t bound;          /* enum cp_bound */
  uint8_t what;           /* CP_WHAT_* */
  uint32_t count;         /* events merged into it */
};

enum { CP_WHAT_HOST, CP_WHAT_RT, CP_WHAT_KERNEL, CP_WHAT_COPY, CP_WHAT_NONE };

/* A culprit's kind: enum agg_host_kind (host.h), or one of these. */
enum { CP_CULPRIT_NONE = 4 /* nothing ran */, CP_CULPRIT_UNKNOWN = 5 };

/* One step's figures. */
struct cp_steprow {
  int64_t index;            /* the step's number on the rank, in start order */
  uint32_t kind, label;     /* label: its host name id */
  int64_t start_ns, end_ns; /* the window, absolute: the label's start
                               to the later of its end and the end of
                               the last event the step holds (the path
                               never leaves it) */
  int64_t step_ns;          /* the step's time as /steps counts it: its
                               records' span under GPU-side labels, else
                               its label's duration */
  int64_t length_ns;        /* the critical path's length */
  int64_t bound_ns[CP_BOUNDS];
  int64_t path_from, path_to; /* the path's first and last node times */
  int64_t events, kernels, kernels_on_path;
  int64_t queue_max, queue_area; /* launches waiting: max, ns x depth */
  int64_t extent_ns;             /* the span queue_area is over */
  int status;                    /* CP_STEP_* */
};

enum { CP_STEP_OK, CP_STEP_TOO_BIG, CP_STEP_CYCLE };

/* A picked step (the median or the slowest of a kind): its row and what
 * the dashboard draws. */
struct cp_pick {
  int set;
  struct cp_steprow row;
  struct cp_segment *segs;
  uint32_t nsegs;
  struct cp_seqitem { /* its kernels in start order, a run of one name
                        as one item */
    uint32_t name, count;
    int64_t dur_ns;
  } * seq;
  uint32_t nseq;
  struct cp_qpoint { /* launches waiting from this time on */
    int64_t t_ns;
    int64_t depth;
  } * queue;
  uint32_t nqueue;
};

struct cp_kind { /* per step kind */
  uint64_t steps, analyzed, too_big, cycles;
  int64_t window_ns;
  struct agg_stat length;
  struct agg_hist length_hist;
  int64_t bound_ns[CP_BOUNDS];
  int64_t kernels, on_path;
  int64_t queue_max, queue_area, extent_ns;
  int64_t p50_ns; /* the step time (/steps' p50) the median is nearest */
  struct cp_pick median, slowest;
  struct cp_pick runner; /* the slowest but one: the slowest shown when
                            the slowest is the median (cp_slowest) */
};

/* A kind's slowest step as shown: never its median when it has two or
 * more analysed steps. */
const struct cp_pick *cp_slowest(const struct cp_kind *k);

struct cp_path_row { /* per (kernel name or family, kind) */
  uint32_t key, kind;
  uint64_t steps, steps_on, instances, on_path;
  int64_t critical_ns;
  struct agg_stat slack;
  struct agg_hist slack_hist;
  int64_t last_step, last_step_on; /* the step counted last, -1 none */
};

struct cp_launch_row { /* launch cost of a kernel name */
  struct agg_stat call, queue;
  struct agg_hist call_hist, queue_hist;
};

struct cp_culprit { /* per (kind, cause, culprit) */
  uint32_t kind;    /* 0: no step kind; k + 1: idx_agg.kinds_map id k */
  uint32_t cause;   /* AGG_IDLE_HOST_LATE or AGG_IDLE_SYNC */
  uint32_t name;    /* by what */
  uint32_t what;    /* its enum agg_host_kind, or CP_CULPRIT_* */
  struct agg_stat s;
  struct agg_hist hist;
};

struct cp_seq {  /* a kernel sequence (families) of a kind */
  uint64_t hash; /* 0: an empty slot */
  uint32_t kind, n;
  uint32_t fam[CP_SEQ_MAX];
  uint64_t count;
  int64_t total_ns;
};

/* The event-pass state and the time pass's results, in struct idx_agg. */
struct agg_cpath {
  struct agg_runs dev;  /* device records and cuda_sync events */
  struct agg_map lanes; /* (device, stream) -> lane */
  int64_t last_lane[2]; /* the last lane asked for, and its id */
  uint16_t last_lane_id;
  uint64_t syncs;      /* cuda_sync events seen */
  uint32_t max_events; /* per step */

  /* Results. */
  int source;           /* CP_SOURCE_*: where the steps came from */
  struct agg_map kinds; /* step kind names -> cp_kind */
  struct cp_kind *kind;
  size_t kind_cap;
  /* Per (kernel name, kind) and (family, kind): rows, and per kind the
   * row of each name or family (CP_NO_ROW: none yet). */
  struct cp_paths {
    struct cp_path_row *rows;
    size_t n, cap;
    uint32_t *row_of[CP_MAX_KINDS];
  } paths, fpaths;
  /* Kernel sequences: an open-addressing table of seq_slots (a power of
   * two, up to CP_SEQ_SLOTS), grown while at most half full. */
  struct cp_seq *seqs;
  uint32_t nseqs, seq_slots;
  int64_t *critical_ns;         /* by kernel name id: time on paths */
  int64_t *fam_critical_ns;     /* by family id */
  struct cp_launch_row *launch; /* by kernel name id */
  size_t nlaunch;
  struct cp_launch_row *fam_launch; /* by family, once asked */
  size_t nfam_launch;
  struct agg_map culprit_map;
  struct cp_culprit *culprits;
  size_t culprits_cap;
  uint64_t seq_dropped;
  struct cp_steprow *steps; /* the first CP_KEEP_STEPS */
  size_t nsteps, steps_cap;
  uint64_t steps_total, forced, lost_launches;
  struct agg_cpath_walk *walk; /* between the pass's seal and end */
};

enum { CP_SOURCE_LABELS, CP_SOURCE_PSTEPS, CP_SOURCE_SPAN };

/* Lane id's "device/stream" into buf. */
void agg_cpath_lane_name(const struct agg_cpath *c, uint16_t lane, char *buf,
                         size_t size);

/* ---- cpath_step.c: one step ---- */

/* An event of a step. */
struct cp_ev {
  int64_t start, end;
  int64_t corr;        /* runtime call and device events: correlation */
  int64_t launch_next; /* device: the next launch on its lane after its
                          own (the FIFO successor's), INT64_MAX: none */
  int64_t wait_corr;   /* sync: the awaited cudaEventRecord's, -1 */
  uint32_t name;       /* host name, runtime name, kernel name or copy
                          kind */
  uint32_t pname;      /* host: its call-stack parent's name */
  uint32_t launch;     /* device: its launch call in the step */
  uint16_t lane;       /* host thread, or device lane */
  uint16_t wait_lane;  /* sync: the stream it waits on, UINT16_MAX */
  uint8_t kind;        /* CP_EV_* */
  uint8_t pwhat;       /* host: its parent's CP_WHAT_*, CP_WHAT_NONE */
  uint8_t flags;       /* CP_F_* */
  uint8_t sync;        /* sync: CP_SYNC_* */
};

enum {
  CP_EV_OP, /* CPU op (a node) */
  CP_EV_RT, /* runtime call (a node) */
  CP_EV_KERNEL,
  CP_EV_COPY,
  CP_EV_MEMSET,
  CP_EV_SYNC /* a cuda_sync event (no node) */
};

/* A device record: a kernel, a copy or a memset. */
static inline int cp_is_record(const struct cp_ev *e)
{
  return e->kind == CP_EV_KERNEL || e->kind == CP_EV_COPY ||
         e->kind == CP_EV_MEMSET;
}

enum {
  CP_F_BLOCKING = 1, /* a call that waits for the device */
  CP_F_LAUNCHY = 2,  /* a call that may launch device work */
  CP_F_FIRST = 4,    /* device: the first record of its correlation */
  CP_F_QFREE = 8,    /* device: every earlier launch on its lane had
                        started at its launch (HTA: queue length 1) */
  CP_F_COMM = 16     /* kernel: a collective */
};

enum { CP_SYNC_EVENT, CP_SYNC_WAIT, CP_SYNC_CONTEXT, CP_SYNC_STREAM };

/* Buffers one step's analysis takes from the one before: a step's arrays
 * are megabytes, and fresh ones would be page-faulted in (and zeroed) for
 * every step; these grow to the largest step and stay. */
enum cp_buf {
  CP_B_EDGES,
  CP_B_BELOW,
  CP_B_CALLKEY,
  CP_B_CALLVAL,
  CP_B_ENTRY,
  CP_B_LAUNCHES,
  CP_B_RECAT,
  CP_B_RECS,
  CP_B_FILL,
  CP_B_BLOCKING,
  CP_B_KSYNC,
  CP_B_INDEG,
  CP_B_FIRST,
  CP_B_OUT,
  CP_B_TOPO,
  CP_B_FWD,
  CP_B_BWD,
  CP_B_PRED,
  CP_B_PATH,
  CP_B_SEGS,
  CP_B_ONPATH,
  CP_B_SLACK,
  CP_B_QUEUE,
  CP_B_FAM,
  CP_B_DUR,
  CP_BUFS
};

struct cp_scratch {
  void *p[CP_BUFS];
  size_t cap[CP_BUFS]; /* bytes */
};

/* Buffer b with room for bytes (its contents kept when it grows; zeroed
 * up to bytes when zero), or NULL when out of memory. */
void *cp_scratch(struct cp_scratch *s, enum cp_buf b, size_t bytes, int zero);
void cp_scratch_free(struct cp_scratch *s);

/* What one step's analysis gives back; its arrays are the scratch's. */
struct cp_result {
  struct cp_steprow row;
  uint8_t *on_path; /* by event: its own edge is on the path */
  int64_t *slack;   /* by event (device events) */
  struct cp_segment *segs;
  uint32_t nsegs;
};

/* The critical path of the events ev[0..n) of one step (host events in
 * start order, device events in HTA's order: records by start, sync
 * events by end), with inferred sync edges from blocking calls when
 * infer_sync (a trace without cuda_sync events). Fills res, its arrays
 * sc's (valid until sc is used again). 0, or TR_ENOMEM. */
int cp_step_analyse(const struct cp_ev *ev, uint32_t n, int infer_sync,
                    struct cp_scratch *sc, struct cp_result *res);

/* ---- cpath_stats.c: figures over the steps, and the tables ---- */

/* Sums a closed step into c: kind k, its events and analysis. */
struct cp_stepdata {
  uint32_t kind;
  const struct cp_ev *ev;
  uint32_t n;
  const struct cp_result *res;
  struct cp_scratch *sc;
};
int cp_stats_step(struct idx_agg *a, const struct cp_stepdata *sd);
/* A kernel's launch cost: call duration and the wait from the call's end
 * to the kernel's start. */
int cp_stats_launch(struct idx_agg *a, uint32_t name, int64_t call_ns,
                    int64_t queue_ns);
int cp_stats_culprit(struct idx_agg *a, uint32_t kind, int cause, uint32_t name,
                     uint32_t what, int64_t idle_ns);
/* The kind id of a step kind name (interned), CP_NO_KIND once there are
 * CP_MAX_KINDS. */
int cp_stats_kind(struct idx_agg *a, const char *p, size_t n, uint32_t *id);
void cp_paths_free(struct cp_paths *p);

/* The columns the critical path adds to the kernels' and the families'
 * rows into idx_agg's kcols and fcols (cpath_json.c). 0 or TR_ENOMEM. */
int cp_cols_publish(struct idx_agg *a);

/* The summary's warnings about the critical path. Its tables are the
 * cp_*_rows() of common/summary.h's TR_TABLE_MAP (cpath_json.c). */
json_t *agg_cpath_warnings(const struct idx_agg *a);

#endif
