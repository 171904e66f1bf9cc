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
 * cpu_ops, then its python_functions, then its runtime calls; index/decode/dec_walk.c
 * sorts them through agg_runs). Internal to index/; one thread at a time.
 */
#ifndef IDX_HOSTSTACK_H
#define IDX_HOSTSTACK_H

#include <stdint.h>

#include "index/agg/agg.h"

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
