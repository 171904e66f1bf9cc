/*
 * The op performance models (docs/PERF.md): for a CPU op with a model,
 * from its name and arguments (pf_val.h), the work one instance does
 * (FLOPs, bytes moved), the compute it runs on (matrix or vector, at a
 * precision), and its parameters, the group key. They follow TraceLens's
 * PerfModel (perf_model.py, extensions/) model by model, quirks and all:
 * docs/PERF.md lists where traced counts otherwise.
 *
 * The models are rows of one table (PF_OP_MAP, pf_ops.c): an op name, its
 * model function and the category it is reported under. Internal to
 * index/; any thread.
 */
#ifndef IDX_PF_MODEL_H
#define IDX_PF_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "index/perf/pf_val.h"

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

/* Python's -(-a // b): a / b rounded up (b != 0). */
int64_t pf_ceil_div(int64_t a, int64_t b);
/* Python's a // b: rounded down (b != 0). */
int64_t pf_floor_div(int64_t a, int64_t b);

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

#endif
