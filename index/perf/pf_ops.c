/*
 * The op table (perf_int.h): every op with a model, by name, from the
 * families' tables; and the GEMMs traced adds, aten::linear and
 * aten::matmul, counted only where no modeled op ran inside them.
 */
#include <string.h>

#include "index/perf/perf_int.h"

#define DIMS  PF_DIMS
#define TYPES PF_TYPES

/* aten::linear: input (..., K), weight (N, K), a bias (N) when given: a
 * GEMM of M = the input's leading dimensions. */
static int linear(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct pf_shape x, w;
  struct pf_gemm g;
  const struct pv *dt[2] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 1) };

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &x) != 0 || x.n < 1 ||
      pf_shape(pf_arg(a, DIMS, 1), &w) != 0 || w.n != 2 || dt[1] == NULL)
    return -1;
  memset(&g, 0, sizeof(g));
  g.B = 1;
  g.K = x.d[x.n - 1];
  x.n--;
  g.M = (int64_t)pf_prod(&x);
  g.N = w.d[0];
  g.bias = pv_len(pf_arg(a, DIMS, 2)) > 0;
  g.dt0 = dt[0];
  g.b1 = g.b2 = g.bb = g.bo = pf_bpe(dt[0]);
  pp_int(o, "M", g.M);
  pp_int(o, "N", g.N);
  pp_int(o, "K", g.K);
  pp_bool(o, "bias", g.bias);
  pp_tuple(o, "dtype_A_B", dt, 2);
  pp_int(o, "B", 1);
  pf_gemm_finish(o, &g);
  return 0;
}

/* aten::matmul: A (..., M, K) x B (..., K, N), the batch dimensions
 * broadcast; a 1-D operand is a vector (M or N of 1). */
static int matmul(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct pf_shape x, y, bx, by;
  const struct pv *dt[2] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 1) };
  struct pf_gemm g;
  double batch = 1;
  int n;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &x) != 0 || x.n < 1 ||
      pf_shape(pf_arg(a, DIMS, 1), &y) != 0 || y.n < 1 || dt[1] == NULL)
    return -1;
  memset(&g, 0, sizeof(g));
  g.M = x.n >= 2 ? x.d[x.n - 2] : 1;
  g.K = x.d[x.n - 1];
  g.N = y.n >= 2 ? y.d[y.n - 1] : 1;
  if ((y.n >= 2 ? y.d[y.n - 2] : y.d[0]) != g.K)
    return -1;
  bx = x, by = y;
  bx.n = x.n > 2 ? x.n - 2 : 0;
  by.n = y.n > 2 ? y.n - 2 : 0;
  n = bx.n > by.n ? bx.n : by.n;
  for (int i = 0; i < n; i++) {
    int ix = i - (n - bx.n), iy = i - (n - by.n);
    int64_t p = ix >= 0 ? bx.d[ix] : 1, q = iy >= 0 ? by.d[iy] : 1;

    if (p != q && p != 1 && q != 1)
      return -1;
    batch *= (double)(p > q ? p : q);
  }
  g.B = batch;
  g.batched = 1;
  g.dt0 = dt[0];
  g.b1 = g.b2 = g.bb = g.bo = pf_bpe(dt[0]);
  pp_count(o, "B", batch);
  pp_int(o, "M", g.M);
  pp_int(o, "N", g.N);
  pp_int(o, "K", g.K);
  pp_bool(o, "bias", 0);
  pp_tuple(o, "dtype_A_B", dt, 2);
  pf_gemm_finish(o, &g);
  return 0;
}

static const struct pf_op own_ops[] = { { "aten::linear", linear, PF_OP_OUTER },
                                        { "aten::matmul", matmul, PF_OP_OUTER },
                                        { NULL, NULL, 0 } };

static const struct pf_op *const tables[] = { pf_gemm_ops, pf_attn_ops,
                                              pf_ew_ops,   pf_norm_ops,
                                              pf_conv_ops, own_ops };

const struct pf_op *pf_op_find(const char *name, size_t n)
{
  if (n == 0)
    return NULL; /* an op without a name (name may be NULL then) */
  for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
    for (const struct pf_op *op = tables[t]; op->name != NULL; op++)
      if (strncmp(op->name, name, n) == 0 && op->name[n] == '\0')
        return op;
  return NULL;
}
