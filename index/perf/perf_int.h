/*
 * The perf room's insides (perf.h), its one internal header: an op's
 * arguments (pf_val.c), the op models (pf_*.c, one table in pf_ops.c)
 * and the op groups (perf_lib.c, perf_inst.c, perf_rows.c). Internal to
 * index/perf/ and its tests (tests/perf_eval.c runs the models alone).
 */
#ifndef IDX_PERF_INT_H
#define IDX_PERF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "index/perf/perf.h"
#include "index/read/read.h"

/* ---- an op's arguments (pf_val.c) ----
 *
 * The arguments of a CPU op as kineto writes them with record_shapes
 * (docs/PERF.md, "What an op's shapes say"): the members "Input Dims",
 * "Input type", "Input Strides", "Concrete Inputs" (and "Output type"
 * when a build writes it) of the event's args, each a JSON array, read
 * from the event's text into a small tree of values.
 *
 * Memory: a parse lives in a struct pf_args, a fixed arena (PF_VALS
 * values, PF_TEXT bytes of decoded strings): an op whose arguments need
 * more has no model (counted, never grown). Internal to index/; any
 * thread, one parse per struct at a time. */

enum pv_type { PV_NULL, PV_BOOL, PV_INT, PV_NUM, PV_STR, PV_ARR };

/* One JSON value. Arrays hold their elements in a run of n values. */
struct pv {
  uint8_t t;  /* enum pv_type */
  uint8_t b;  /* PV_BOOL */
  uint32_t n; /* PV_STR: bytes; PV_ARR: elements */
  union {
    int64_t i;          /* PV_INT */
    double d;           /* PV_NUM */
    const char *s;      /* PV_STR: decoded text, not NUL-terminated */
    const struct pv *a; /* PV_ARR: the elements */
  };
};

#define PF_VALS 4096  /* values of one op's arguments */
#define PF_TEXT 16384 /* bytes of their decoded strings */

/* The members of args a model reads. */
enum pf_member {
  PF_DIMS,     /* "Input Dims" */
  PF_TYPES,    /* "Input type" */
  PF_STRIDES,  /* "Input Strides" */
  PF_CONCRETE, /* "Concrete Inputs" */
  PF_OUT_TYPE, /* "Output type" */
  PF_MEMBERS
};

struct pf_args {
  const struct pv *m[PF_MEMBERS]; /* NULL: absent */
  /* The label of the step the instance ran in (an iteration annotation:
   * docs/PERF.md, "Inference attention"), for the models that read it;
   * NULL: none. */
  const char *annot;
  size_t annot_n;
  struct pv vals[PF_VALS];
  uint32_t nvals;
  char text[PF_TEXT];
  size_t ntext;
};

/* The spans of the members in the event text raw[0..n) (its '{' to its
 * '}'): 0, or -1 when the text has no args object or is not JSON. Spans
 * of members absent stay NULL. */
int pf_args_spans(const char *raw, size_t n, struct idx_span sp[PF_MEMBERS]);

/* Parses the spans into a (its values reset first): 0, or -1 when a
 * member is not JSON or outgrows the arena. */
int pf_args_parse(struct pf_args *a, const struct idx_span sp[PF_MEMBERS]);

/* ---- reading the values (NULL-safe: a missing value reads as none) ---- */

/* Element i of array v, or NULL. */
const struct pv *pv_at(const struct pv *v, size_t i);
/* The number of elements of array v (0 for anything else). */
size_t pv_len(const struct pv *v);
/* 1 when v is an array of integers (a shape), with their count. */
int pv_is_shape(const struct pv *v);
/* 1 when v is a string equal to s. */
int pv_str_is(const struct pv *v, const char *s);
/* 1 when a and b are the same value (Python's ==, for the scalars and
 * arrays an event holds). */
int pv_equal(const struct pv *a, const struct pv *b);
/* v's text (NULL for a non-string) and its length. */
const char *pv_str(const struct pv *v, size_t *n);

/* ---- the op models (pf_ops.c and the model files) ----
 *
 * The op performance models (docs/PERF.md): for a CPU op with a model,
 * from its name and arguments (pf_val.c), the work one instance does
 * (FLOPs, bytes moved), the compute it runs on (matrix or vector, at a
 * precision), and its parameters, the group key. They follow TraceLens's
 * PerfModel (perf_model.py, extensions/) model by model, quirks and all:
 * docs/PERF.md lists where traced counts otherwise.
 *
 * The models are rows of one table (PF_OP_MAP, pf_ops.c): an op name, its
 * model function and the category it is reported under. Internal to
 * index/; any thread. */

#define PF_PARAMS 2048 /* bytes of a group's parameters (JSON text) */
#define PF_MAXDIM 16   /* dimensions of a shape a model reads */

/* The parameters as one JSON object, written member by member in the
 * model's order: TraceLens's param_details. */
struct pf_params {
  char buf[PF_PARAMS];
  size_t n;
  int bad; /* outgrew buf: the model fails */
};

/* What a model says of one instance. */
struct pf_out {
  const char *category; /* TraceLens's report sheet (docs/PERF.md) */
  double flops;
  double bytes;     /* < 0: not known (a dtype without a size) */
  char maf;         /* 'm' matrix, 'v' vector, 0: no compute spec */
  const char *prec; /* "fp32", "bf16"...; NULL: none */
  struct pf_params p;
};

/* A model: 0 with *o filled, or -1 when the op's arguments do not fit it
 * (TraceLens raises: the instance has no row). */
typedef int (*pf_model_fn)(const char *name, const struct pf_args *a,
                           struct pf_out *o);

/* ---- what the models share (pf_common.c) ---- */

struct pf_shape {
  int n;
  int64_t d[PF_MAXDIM];
};

/* Element i of member m (NULL when absent). */
const struct pv *pf_arg(const struct pf_args *a, enum pf_member m, size_t i);
/* Shape of the integer array v into *s: 0, or -1 when v is none. */
int pf_shape(const struct pv *v, struct pf_shape *s);
/* The product of the dimensions (1 for none), as a double. */
double pf_prod(const struct pf_shape *s);
/* TraceLens's name2bpe (utils.py): bytes per element of a dtype name,
 * any case; 0: unknown (None). */
int pf_bpe(const struct pv *dtype);
int pf_bpe_text(const char *s, size_t n);
/* TraceLens's torch_dtype_map: "fp32", "bf16", "fp8"...; NULL. */
const char *pf_prec(const struct pv *dtype);
/* Python's bool() of a string (non-empty), and utils.parse_bool. */
int pf_truthy(const struct pv *v);
int pf_parse_bool(const struct pv *v);
/* Python's eval() of "True"/"False": 1, 0, or -1 (anything else). */
int pf_eval_bool(const struct pv *v);
/* A Concrete Inputs string read as a number (optional_float: "" and
 * "None" give dflt); -1 when it is text that is no number. */
int pf_float(const struct pv *v, double dflt, double *out);
/* An int() of a Concrete Inputs string; -1 when none. */
int pf_int(const struct pv *v, int64_t *out);
/* A Concrete Inputs list "[1, 2]" (or a bare "3") of integers. */
int pf_int_list(const struct pv *v, struct pf_shape *out);

/* Python's -(-a // b): a / b rounded up into *q; -1 (no quotient) when
 * b == 0 or the quotient leaves int64_t (a forged shape). */
int pf_ceil_div(int64_t a, int64_t b, int64_t *q);
/* Python's a // b: rounded down into *q; -1 as pf_ceil_div. */
int pf_floor_div(int64_t a, int64_t b, int64_t *q);

/* ---- the parameters writer ---- */

void pp_int(struct pf_out *o, const char *key, int64_t v);
void pp_num(struct pf_out *o, const char *key, double v);
/* A count computed as a double: an integer while it is one (Python's
 * int), else a number. */
void pp_count(struct pf_out *o, const char *key, double v);
void pp_bool(struct pf_out *o, const char *key, int v);
void pp_null(struct pf_out *o, const char *key);
void pp_text(struct pf_out *o, const char *key, const char *s);
/* Any value of the arguments as JSON (null for NULL). */
void pp_val(struct pf_out *o, const char *key, const struct pv *v);
void pp_shape(struct pf_out *o, const char *key, const struct pf_shape *s);
/* A tuple of argument values (strings, mostly): [v0, v1, ...]. */
void pp_tuple(struct pf_out *o, const char *key, const struct pv *const *v,
              size_t n);

/* ---- the table ---- */

struct pf_op {
  const char *name;
  pf_model_fn fn;
  unsigned flags; /* PF_OP_* */
};

/* An op traced models where TraceLens does not (aten::linear, matmul):
 * its instances count only when no op with a model ran inside them (the
 * mm or addmm it calls has the row then: docs/PERF.md). */
#define PF_OP_OUTER 1u
/* A model that reads the step's iteration annotation (pf_args.annot). */
#define PF_OP_ANNOT 2u

/* The model of op name[0..n), or NULL. */
const struct pf_op *pf_op_find(const char *name, size_t n);

/* The sequence-length aggregates of an iteration annotation s[0..n)
 * (pf_annot.c): c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk;
 * -1 when the label carries none. */
int pf_chunk_stats(const char *s, size_t n, int64_t out[8]);

/* The rows of the families' tables (NULL-terminated), for pf_ops.c. */
extern const struct pf_op pf_gemm_ops[], pf_attn_ops[], pf_ew_ops[],
    pf_norm_ops[], pf_conv_ops[];

/* Runs op's model on a: 0 with *o, or -1. */
int pf_model_run(const struct pf_op *op, const struct pf_args *a,
                 struct pf_out *o);

/* ---- the GEMM models' shared work formula (pf_gemm.c) ----
 *
 * The GEMM models' shared work formula (pf_gemm.c), for the models of
 * other files built on it. Internal to index/perf/. */

/* A GEMM: B batches of (M, K) x (K, N), each size in bytes an element
 * (0: not known). */
struct pf_gemm {
  double B;
  int64_t M, N, K;
  int bias, batched;
  double b1, b2, bb, bo; /* A, B, bias, output */
  const struct pv *dt0;  /* the dtype that names the precision */
};

/* The GEMM's FLOPs, bytes, category and compute spec into o. */
void pf_gemm_finish(struct pf_out *o, const struct pf_gemm *g);

/* ---- the op groups (perf_lib.c, perf_inst.c, perf_rows.c) ----
 *
 * The op groups' insides (perf.h), shared by perf_lib.c (protos, groups),
 * perf_inst.c (instances, replays) and perf_rows.c (the rows). Internal
 * to index/perf/. */

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
