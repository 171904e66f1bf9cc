/*
 * The roof: a GPU's peak dense rates by its vendor's datasheet
 * (docs/PERF.md, "The roof", names each source), one row each in
 * TR_ROOF_MAP, and a roof given by hand (the gpu_roof setting) for a GPU
 * not in the table. The indexer picks a rank's row from the trace's
 * deviceProperties name; the rows' figures go into the rank summary, so
 * the store and the dashboard read them there. Any thread; nothing
 * blocks.
 */
#ifndef TR_ROOF_H
#define TR_ROOF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/tr.h"

/* The precisions a roof has a peak for, in this order. */
#define TR_ROOF_PRECS(XX)                                                      \
  XX(FP64, "fp64")                                                             \
  XX(FP32, "fp32")                                                             \
  XX(TF32, "tf32")                                                             \
  XX(FP16, "fp16")                                                             \
  XX(BF16, "bf16")                                                             \
  XX(FP8, "fp8")                                                               \
  XX(FP4, "fp4")

enum tr_prec {
#define XX(e, s) TR_PREC_##e,
  TR_ROOF_PRECS(XX)
#undef XX
      TR_PRECS
};

struct tr_roof {
  char name[64];
  double matrix[TR_PRECS];   /* dense TFLOPS of the matrix units; 0: none */
  double vec_fp32, vec_fp64; /* the vector units' (elementwise ops') */
  double tb_s;               /* HBM bandwidth, TB/s */
  const char *source;        /* the datasheet; NULL: given by hand */
};

/* The table's row whose pattern the deviceProperties name holds (any
 * case; "NVIDIA H100 80GB HBM3" is the H100 SXM) into *out: 1, or 0 when
 * none does. */
int tr_roof_of_device(const char *device, struct tr_roof *out);

/* The roof of the setting gpu_roof: a row's name ("MI300X"), or a roof by
 * hand, "<name>:tb_s=<TB/s>,<precision>=<TFLOPS>,..." (precisions as
 * TR_ROOF_PRECS, vec_fp32, vec_fp64). 0, or TR_EINVAL with err. */
int tr_roof_parse(const char *setting, struct tr_roof *out, struct tr_err *err);

/* A rank's roof: the setting's when given, else the device's; 0 when
 * neither gives one. */
int tr_roof_pick(const char *setting, const char *device, struct tr_roof *out);

/* The peak TFLOPS of an op running on maf ('m' matrix, 'v' vector) at
 * precision prec ("bf16"...) on r; 0 when r has none. */
double tr_roof_peak(const struct tr_roof *r, char maf, const char *prec);

/* The table's rows, for the docs and the API: n into *n. */
const struct tr_roof *tr_roof_rows(size_t *n);

#endif
