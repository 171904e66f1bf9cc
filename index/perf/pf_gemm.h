/*
 * The GEMM models' shared work formula (pf_gemm.c), for the models of
 * other files built on it. Internal to index/perf/.
 */
#ifndef IDX_PF_GEMM_H
#define IDX_PF_GEMM_H

#include "index/perf/pf_model.h"

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

#endif
