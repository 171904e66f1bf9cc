/*
 * The op groups' insides (perf.h), shared by perf_lib.c (protos, groups),
 * perf_inst.c (instances, replays) and perf_rows.c (the rows). Internal
 * to index/perf/.
 */
#ifndef IDX_PERF_INT_H
#define IDX_PERF_INT_H

#include "index/perf/perf.h"
#include "index/perf/pf_model.h"

#define PF_ARGS_BYTES (16u << 20) /* the protos' arguments text, all */
#define PF_ARG_TEXT   (64u << 10) /* an op's arguments text, at most */
#define PF_CACHE      4096        /* protos remembered by their hash */

/* An op and its arguments, as distinct pairs of a trace. */
struct pf_proto {
  const struct pf_op *op;
  const char *args; /* the members' text: "[dims]\0[types]\0..." */
  uint32_t args_n;
  uint32_t name;  /* in pf_lib.names */
  uint32_t group; /* its group (models that read no annotation);
                     PF_NONE: its arguments fit no model */
};

/* An op group: TraceLens's (op, parameters) row, traced's row of
 * op_perf. */
struct pf_group {
  uint32_t name;  /* in pf_lib.names */
  uint32_t proto; /* the proto of its first instance (its arguments) */
  uint32_t base;  /* the group it is a variant of (itself) */
  const char *category, *prec;
  char maf;
  uint8_t outer, recompute, gemm;
  double flops, bytes;
  /* over its instances */
  uint64_t count, timed, kernels, nested;
  int64_t ns, min_ns, max_ns;
  double inv_s; /* sum of 1 / busy seconds over the timed ones */
  struct agg_hist hist;
};

struct pf_inst {
  uint32_t proto;
  uint32_t pending; /* launches awaiting their records */
  uint32_t kernels;
  uint8_t used, flags, inner, in_heap;
  uint8_t trans; /* GEMM transposes from a kernel name (0: none yet) */
  int64_t end, label;
  int64_t busy, until; /* the union of the records' intervals so far */
};

struct pf_cinst { /* a capture trace's op instance */
  uint32_t proto, parent, graph;
  uint8_t flags, inner;
  int64_t end;
};

struct pf_racc { /* a capture instance's records in one replay */
  int64_t busy, until;
  uint32_t kernels;
  uint8_t trans;
};

struct pf_lib {
  uint32_t max_groups, max_protos;
  struct agg_map names;  /* op names */
  struct agg_map protos; /* op index + arguments text -> proto */
  struct pf_proto *proto;
  size_t proto_cap;
  uint64_t args_bytes;
  struct {
    uint64_t key;
    uint32_t id;
  } cache[PF_CACHE];
  struct agg_map groups; /* name + params + flags -> group */
  struct pf_group *group;
  size_t group_cap;
  struct agg_corr variants;  /* (group, transposes, recompute) -> group */
  struct agg_corr annotated; /* (proto, label) -> group */
  struct pf_op_of {          /* decode's frame name id -> its model */
    const struct pf_op *op;
    uint8_t known;
  } * op_of;
  size_t op_cap;
  /* instances */
  struct pf_inst *inst;
  uint32_t *free_ids;
  uint32_t nfree, ninst;
  struct pf_heap {
    int64_t end;
    uint32_t id;
  } * heap;
  size_t nheap, heap_cap;
  /* capture instances and the replay being made */
  struct pf_cinst *cinst;
  size_t ncinst, cinst_cap;
  struct agg_corr racc; /* cinst -> struct pf_racc */
  uint32_t *rlist;      /* the capture instances of the replay */
  size_t nrlist, rlist_cap;
  /* the step labels the annotated models read */
  int (*label_fn)(void *ud, int64_t label, char *buf, size_t size);
  void *label_ud;
  struct pf_args args; /* the parse at hand */
  /* what could not be kept, for the summary's warnings */
  uint64_t protos_folded, groups_folded, inst_lost, no_model;
};

/* perf_lib.c: the group of proto for an instance with flags, GEMM
 * transposes trans (0: none) and step label (the annotated models'):
 * PF_NONE when its arguments fit no model or the groups are at their
 * cap. 0 or TR_ENOMEM. */
int pf_group_of(struct pf_lib *lib, uint32_t proto, unsigned flags,
                uint8_t trans, int64_t label, uint32_t *group);

#endif
