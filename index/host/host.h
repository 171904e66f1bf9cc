/*
 * What ran on the host threads: CPU ops, user annotations (record_function
 * labels), Python functions and runtime/driver calls, per thread, in time
 * order. The event pass hands each such event to agg_host_event(); the
 * time pass reads them back merged in start order (agg_host_next()) and
 * keeps, per thread, the stack of events running at the current time
 * (struct agg_host_stacks), so that "what was this thread doing at time t"
 * (the innermost event covering t, and the ones above it) is a lookup.
 *
 * Users: the critical path (index/cpath*.c: the CPU ops and runtime calls
 * of a step, each with its call-stack parent) and the idle culprits (the
 * innermost event on the launching thread when the device went idle).
 *
 * Memory: kineto writes each class of host event sorted by start (cpu_op
 * and user_annotation, python_function, cuda_runtime each in one sorted
 * block), so each class is its own stream of time records (agg_runs.c)
 * and stays one sorted run: a record costs 32 bytes of spill file, no
 * sort, and the read back is a three-way merge. The stacks hold what runs
 * at one time: their depth, per thread, not the events.
 *
 * Then the host stacks decode reads (hoststack.c, at the end). Internal to
 * index/. One struct agg_host per file, one thread at a time.
 */
#ifndef IDX_HOST_H
#define IDX_HOST_H

#include <stdint.h>

#include "index/agg/agg.h"

/* What a host event is. */
enum agg_host_kind {
  AGG_HOST_OP,    /* cpu_op (and a bare-array trace's uncategorised X) */
  AGG_HOST_ANNOT, /* user_annotation: record_function labels */
  AGG_HOST_PY,    /* python_function */
  AGG_HOST_RT,    /* cuda_runtime, cuda_driver, mcTracer's runtime lane */
  AGG_HOST_KINDS
};

/* Bits of agg_host_ev.flags. */
enum {
  AGG_HOST_BLOCKING = 1, /* a call that waits for the device (cpath.c) */
  AGG_HOST_LABEL = 2,    /* an ATOM run label (agg.c's label kinds) */
  AGG_HOST_PSTEP = 4     /* a profiler step: ProfilerStep#N */
};

/* One host event as the time pass hands it. */
struct agg_host_ev {
  int64_t start_ns, dur_ns;
  int64_t corr;    /* AGG_HOST_RT: the call's correlation, else -1 */
  uint32_t name;   /* AGG_HOST_RT: an id of idx_agg.rt_map, else of the
                      host names (agg_host_name()) */
  uint16_t thread; /* dense thread index (agg_host_thread_key()) */
  uint8_t kind;    /* enum agg_host_kind */
  uint8_t flags;   /* AGG_HOST_* */
};

/* Threads kept apart; the events of threads beyond are not tracked (the
 * summary counts them in host_events_dropped). */
#define AGG_HOST_THREADS 4096
/* Distinct op, annotation and Python function names kept; beyond, they
 * fold into one name (agg_fold.c). */
#define AGG_HOST_NAMES   65536

enum { AGG_HOST_STREAM_OP, AGG_HOST_STREAM_RT, AGG_HOST_STREAMS };

/* The Python functions, compact (host_py.c). */
struct agg_pystream {
  struct agg_spill *sp; /* where blocks spill (borrowed) */
  FILE *f;            /* spill file of its blocks, NULL until one */
  unsigned char *buf; /* the block being filled */
  size_t len;         /* its bytes used */
  uint64_t blocks;    /* blocks in f */
  int64_t last_start; /* of the last event in order */
  uint16_t last_thread; /* of the last event in order */
  int any;
  struct agg_runs late; /* events out of order */
};

struct agg_host {
  struct agg_runs runs[AGG_HOST_STREAMS];
  struct agg_pystream py;
  struct agg_map names; /* op, annotation and Python function names */
  struct agg_fold fold;
  struct agg_seen *cache; /* names seen lately (AGG_SEEN slots) */
  struct agg_map threads;     /* (pid, tid) -> index */
  int64_t last_pid, last_tid; /* the thread of the last event, cached */
  uint32_t last_thread;
  int have_last;
  uint64_t seq; /* events taken, for ties in file order */
  uint64_t events[AGG_HOST_KINDS];
  uint64_t dropped; /* events of threads beyond AGG_HOST_THREADS */
  /* Profiler steps (ProfilerStep#N on the host): the critical path's
   * steps where a trace has no run labels. */
  struct agg_stat psteps;
  struct agg_hist pstep_hist;
};

/* The pass (agg.h's AGG_PASS_MAP): its event hook takes the CPU ops,
 * annotations (the host's run labels too), Python functions and runtime
 * calls, each an X event with ts and dur. */

/* The text of host name id (not AGG_HOST_RT's), borrowed from h. */
const struct agg_key *agg_host_name(const struct agg_host *h, uint32_t id);

/* The (pid, tid) text of thread index t, as "pid/tid", into buf. */
void agg_host_thread_name(const struct agg_host *h, uint16_t t, char *buf,
                          size_t size);

/* ---- the time pass ---- */

/* The host events in start order, in two merges: the CPU ops, annotations
 * and runtime calls (agg_host_pop(): longer first on equal starts, so
 * that a parent comes before its child; ops before calls, then file
 * order), and the Python functions apart (agg_host_py_pop()), which a
 * reader may take lazily: there are ten of them to one op. */
struct agg_host_iter;
struct agg_host_stacks;
int agg_host_open(struct agg_host *h, struct agg_host_iter **out);
/* Takes the next op, annotation or call when it starts at or before
 * limit: 1 with *ev (valid until the next call), 0 when there is none
 * such, or an I/O error. */
int agg_host_pop(struct agg_host_iter *it, int64_t limit,
                 const struct agg_host_ev **ev);
/* Brings the Python functions up to time t onto st: those still running
 * at t are pushed on their threads' stacks; those over by t are passed,
 * for a reader whose questions come in time order (none later can be
 * about them). 0 or an error. */
int agg_host_py_advance(struct agg_host_iter *it, int64_t t,
                        struct agg_host_stacks *st);
void agg_host_close(struct agg_host_iter *it);

/* Per thread, the events running at the current time: pushed in start
 * order; an event leaves its thread's stack once time passes its end. */
#define AGG_HOST_DEPTH 256 /* frames kept per thread; deeper ones pass */

struct agg_host_frame {
  struct agg_host_ev ev;
  uint32_t user; /* the caller's own number for the event */
};

struct agg_host_stacks {
  struct agg_host_frame *frames; /* [AGG_HOST_THREADS][AGG_HOST_DEPTH],
                                    allocated a thread at a time */
  struct agg_host_frame **by_thread;
  uint16_t depth[AGG_HOST_THREADS];
  uint16_t active[AGG_HOST_THREADS]; /* threads with a frame, for sweeps */
  uint32_t nactive;
};

int agg_host_stacks_init(struct agg_host_stacks *s);
void agg_host_stacks_free(struct agg_host_stacks *s);
/* Pushes ev (user: the caller's number for it) on its thread after
 * popping the frames that ended by its start. *parent: the frame under it
 * (NULL: none). 0 or TR_ENOMEM. */
int agg_host_stacks_push(struct agg_host_stacks *s,
                         const struct agg_host_ev *ev, uint32_t user,
                         const struct agg_host_frame **parent);
/* The innermost frame of thread t running at t_ns (start <= t_ns < end)
 * whose flags have none of skip, or NULL; pops the frames that ended by
 * t_ns (times asked must not go back). */
const struct agg_host_frame *agg_host_stacks_top(struct agg_host_stacks *s,
                                                 uint16_t t, int64_t t_ns,
                                                 uint32_t skip);

/* ---- host stacks for decode (hoststack.c) ---- */

/*
 * Host stacks: which CPU frames sit above a point of a thread's time line
 * (docs/DECODE.md, "Host stacks"). A frame is an X event of the host side
 * that names what the code was doing: a cpu_op (the op), a user_annotation
 * or a python_function "nn.Module: ..." (a module). On one thread frames
 * nest by time, so the stack at time t is every frame of that thread with
 * start <= t < end, outermost (earliest start, then longest) first.
 *
 * Two parts:
 *   - struct hs_trie: every distinct stack as a node of a trie of frames
 *     (parent node, frame name), so memory grows with the distinct stacks
 *     of a trace, never with its events. Nodes are dense ids; node 0 is the
 *     empty stack. Shared by the files of one rank (a capture trace and
 *     its run trace name the same stacks with the same nodes).
 *   - struct hs_lanes: the open frames of each thread (a lane) of one
 *     file, fed in time order: hs_lanes_push() a frame at its start,
 *     hs_lanes_top() the node of the stack at a time.
 *
 * The caller orders the frames (the trace does not: kineto writes its
 * cpu_ops, then its python_functions, then its runtime calls;
 * index/decode/dec_walk.c sorts them through agg_runs). Internal to index/; one
 * thread at a time.
 */
/* A frame's kind: the first byte of its interned name. */
enum hs_kind {
  HS_OP = 'o',     /* cpu_op (legacy "Operator") */
  HS_MODULE = 'm', /* python_function "nn.Module: <Class>_<n>" */
  HS_ANNOT = 'a',  /* a user_annotation that tags a module */
  HS_RECOMP = 'r', /* python_function torch.utils.checkpoint's
                      recompute_fn: activation checkpointing recomputes
                      what runs under it (docs/PERF.md) */
  HS_SRC = 's',    /* python_function of the model's code at an absolute
                      path: a source line (hs_py_source()) */
  HS_SRC_PKG = 'p' /* one at a path relative to an installed package's
                      root, which may be the model's or a library's */
};

/* pysource.c: the kind of the python_function frame text p[0..n)
 * ("<file>(<line>): <function>") when it is the model's own code, outside
 * torch and its kin, the standard library and site-packages
 * (docs/DECODE.md, "Sources"): HS_SRC or HS_SRC_PKG; else 0. */
int hs_py_source(const char *p, size_t n);

#define HS_ROOT     0u         /* the empty stack */
#define HS_NO_NAME  UINT32_MAX /* no frame name */
#define HS_MAX_NODE (1u << 16) /* default cap on distinct stacks */

struct hs_node {
  uint32_t parent; /* HS_ROOT for a frame at the bottom */
  uint32_t name;   /* frame name id (hs_trie_name) */
  uint32_t depth;  /* frames on the stack, 1 for a bottom frame */
};

#define HS_CACHE 4096 /* (parent, name) -> node lookups remembered */

struct hs_trie {
  struct agg_map names; /* kind byte + frame text -> name id */
  struct agg_map keys;  /* (parent, name) -> node id - 1 */
  struct hs_cached {    /* direct-mapped: a push is a probe, mostly */
    uint32_t parent, name, node;
  } cache[HS_CACHE];
  struct hs_node *nodes;
  size_t nodes_cap;
  uint32_t nnodes;    /* node 0 included */
  uint32_t max_nodes; /* beyond: a frame adds no node (folded) */
  uint64_t folded;    /* frames left out beyond max_nodes */
};

/* An empty trie holding at most max_nodes stacks (0: HS_MAX_NODE). */
int hs_trie_init(struct hs_trie *t, uint32_t max_nodes);
void hs_trie_free(struct hs_trie *t);

/* The id of frame text p[0..n) of kind into *id (interned once). 0 or
 * TR_ENOMEM. */
int hs_trie_name(struct hs_trie *t, enum hs_kind kind, const char *p, size_t n,
                 uint32_t *id);

/* A frame name's kind and text (borrowed, valid while t lives). */
enum hs_kind hs_trie_kind(const struct hs_trie *t, uint32_t name);
const char *hs_trie_text(const struct hs_trie *t, uint32_t name, size_t *n);

/* The node of stack `parent` with frame `name` on top into *node. Beyond
 * max_nodes a new stack is not added: *node is parent and the frame is
 * counted in t->folded. 0 or TR_ENOMEM. */
int hs_trie_child(struct hs_trie *t, uint32_t parent, uint32_t name,
                  uint32_t *node);

static inline const struct hs_node *hs_trie_node(const struct hs_trie *t,
                                                 uint32_t node)
{
  return &t->nodes[node];
}

/* One open frame of a lane. */
struct hs_open {
  int64_t start, end;
  uint32_t name;
  uint32_t node; /* the stack up to and with this frame */
  int launched;  /* a launch was seen under it (op instances) */
  uint32_t user; /* the caller's number for the frame (decode: its op
                    instance, index/perf/perf.h) */
};

struct hs_lane {
  struct hs_open *v;
  uint32_t n, cap;
  int ill; /* a frame outlasts the one below it: an end may be found
              below the top */
};

struct hs_lanes {
  struct agg_map ids; /* thread key -> lane id */
  struct hs_lane *lane;
  size_t lane_cap;
  uint32_t max_depth; /* deeper frames are counted, not kept */
  uint64_t too_deep;
};

#define HS_MAX_DEPTH 256

int hs_lanes_init(struct hs_lanes *l);
void hs_lanes_free(struct hs_lanes *l);

/* The lane of a thread: its numeric pid and tid, or their text (legacy
 * "CPU functions", "stream 7": pass p NULL for a numeric one). 0 or
 * TR_ENOMEM. */
int hs_lanes_id(struct hs_lanes *l, int64_t pid, int64_t tid, const char *ps,
                size_t pn, const char *ts, size_t tn, uint32_t *lane);

/* Frames whose end is at or before t leave the lane's stack. */
void hs_lanes_advance(struct hs_lanes *l, struct hs_trie *t, uint32_t lane,
                      int64_t t_ns);

/* A frame [start, end) starts on the lane; frames are pushed in start
 * order (after hs_lanes_advance(start)). It goes above every open frame
 * that contains it, below an open frame of the same start that ends
 * earlier, or of the same span that goes inside it (hoststack.c: the
 * nesting of equal starts); user is the caller's number for it. A frame
 * past max_depth is counted, not kept (hs_lanes_full() says so before).
 * 0 or TR_ENOMEM. */
int hs_lanes_push(struct hs_lanes *l, struct hs_trie *t, uint32_t lane,
                  int64_t start, int64_t end, uint32_t name, uint32_t user);

/* 1 when the lane holds max_depth frames: a push now is not kept. */
static inline int hs_lanes_full(const struct hs_lanes *l, uint32_t lane)
{
  return l->lane[lane].n >= l->max_depth;
}

/* The node of the lane's stack now (HS_ROOT: empty). */
uint32_t hs_lanes_top(const struct hs_lanes *l, uint32_t lane);

/* A launch under the lane's stack now: 1 when it is the first launch
 * under the innermost op frame (the op instance's first), else 0; marks
 * it. through(t, name) says which op frames to look past (pass-through
 * ops); NULL: none. */
int hs_lanes_first_launch(struct hs_lanes *l, const struct hs_trie *t,
                          uint32_t lane,
                          int (*through)(const struct hs_trie *, uint32_t));

#endif
