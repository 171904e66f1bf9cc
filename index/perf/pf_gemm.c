/*
 * GEMM models (perf_int.h): TraceLens's perf_model.py GEMM classes and the
 * GEMMs of its extensions (perf_model_extensions.py), each reading its op's
 * argument layout. Work: 2 M N K FLOPs (+ M N for a bias) per batch;
 * bytes: A, B and the output once (+ N bias elements), each at its
 * dtype's size, or none when a size is unknown.
 */
#include <string.h>

#include "index/perf/perf_int.h"

#define DIMS     PF_DIMS
#define TYPES    PF_TYPES
#define STRIDES  PF_STRIDES
#define CONCRETE PF_CONCRETE

static int ready(struct pf_out *o, struct pf_gemm *g);
static int gemm_lowp(const struct pf_args *a, int fp4, size_t ta, size_t tb,
                     size_t tsa, size_t tsb, struct pf_gemm *g,
                     struct pf_out *o);

static const struct pv bf16_lit = { .t = PV_STR,
                                    .n = 13,
                                    .s = "c10::bfloat16" };
static const struct pv empty_lit = { .t = PV_STR, .n = 0, .s = "" };

/* A 2-D shape's two dimensions (more dimensions are allowed, as Python's
 * indexing allows them); -1 when it has fewer. */
static int dim2(const struct pv *v, int64_t *a, int64_t *b)
{
  struct pf_shape s;

  if (pf_shape(v, &s) != 0 || s.n < 2)
    return -1;
  *a = s.d[0];
  *b = s.d[1];
  return 0;
}

/* The GEMM's work into o (GEMM.flops_func, bytes_func), for B batches
 * when batched. */
void pf_gemm_finish(struct pf_out *o, const struct pf_gemm *g)
{
  double m = (double)g->M, n = (double)g->N, k = (double)g->K;
  double per = g->batched ? g->B : 1;

  o->flops = per * (2 * m * n * k + (g->bias ? m * n : 0));
  if (g->b1 > 0 && g->b2 > 0 && g->bb > 0 && g->bo > 0)
    o->bytes = per * (m * k * g->b1 + k * n * g->b2 + m * n * g->bo +
                      (g->bias ? n : 0) * g->bb);
  o->maf = 'm';
  o->category = "GEMM";
  if (o->prec == NULL)
    o->prec = pf_prec(g->dt0);
}

/* Member m's elements [from, to) as a tuple; fewer when there are fewer
 * (Python's slice). */
static void slice(struct pf_out *o, const char *key, const struct pf_args *a,
                  enum pf_member m, size_t from, size_t to)
{
  const struct pv *v[8];
  size_t n = 0;

  for (size_t i = from; i < to && i - from < 8 && pf_arg(a, m, i); i++)
    v[n++] = pf_arg(a, m, i);
  pp_tuple(o, key, v, n);
}

/* tuple(Input Strides[i]), or None when the event has no strides;
 * -1 when it has them but not that one (TraceLens raises). */
static int stride(struct pf_out *o, const char *key, const struct pf_args *a,
                  size_t i)
{
  if (a->m[STRIDES] == NULL) {
    pp_null(o, key);
    return 0;
  }
  if (pf_arg(a, STRIDES, i) == NULL || pf_arg(a, STRIDES, i)->t != PV_ARR)
    return -1;
  pp_val(o, key, pf_arg(a, STRIDES, i));
  return 0;
}

/* The usual layout: A at index ia (M, K), B at ib (K, N), dtypes and
 * strides at the same indices. aten::mm, addmm, _scaled_mm, tev2. */
static int plain(const struct pf_args *a, size_t ia, size_t ib, int bias,
                 struct pf_gemm *g, struct pf_out *o)
{
  int64_t k2;

  memset(g, 0, sizeof(*g));
  if (dim2(pf_arg(a, DIMS, ia), &g->M, &g->K) != 0 ||
      dim2(pf_arg(a, DIMS, ib), &k2, &g->N) != 0)
    return -1;
  g->B = 1;
  g->bias = bias;
  g->dt0 = pf_arg(a, TYPES, ia);
  pp_int(o, "M", g->M);
  pp_int(o, "N", g->N);
  pp_int(o, "K", g->K);
  pp_bool(o, "bias", bias);
  if (stride(o, "stride_A", a, ia) != 0 || stride(o, "stride_B", a, ib) != 0)
    return -1;
  slice(o, "dtype_A_B", a, TYPES, ia, ia + 2);
  return 0;
}

/* The first dimension of the shape at Input Dims[i]. */
static int first_dim(const struct pf_args *a, size_t i, int64_t *d)
{
  struct pf_shape s;

  if (pf_shape(pf_arg(a, DIMS, i), &s) != 0 || s.n < 1)
    return -1;
  *d = s.d[0];
  return 0;
}

/* All four sizes from the first dtype (aten::mm, addmm, bmm, baddbmm). */
static void one_bpe(struct pf_gemm *g)
{
  g->b1 = g->b2 = g->bb = g->bo = pf_bpe(g->dt0);
}

static int aten_mm(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct pf_gemm g;
  int addmm = strcmp(name, "aten::addmm") == 0;

  if (plain(a, addmm ? 1 : 0, addmm ? 2 : 1, addmm, &g, o) != 0)
    return -1;
  pp_int(o, "B", 1);
  one_bpe(&g);
  return ready(o, &g);
}

/* aten::_scaled_mm (and the ops sharing its model): fp8 inputs give a
 * 16-bit output; the sizes of A and B must be known. */
static int scaled_mm(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  struct pf_gemm g;
  int ba, bb;

  (void)name;
  if (plain(a, 0, 1, pv_len(a->m[DIMS]) == 3, &g, o) != 0)
    return -1;
  pp_int(o, "B", 1);
  ba = pf_bpe(pf_arg(a, TYPES, 0));
  bb = pf_bpe(pf_arg(a, TYPES, 1));
  if (ba == 0 || bb == 0)
    return -1;
  g.b1 = g.b2 = g.bb = ba;
  g.bo = ba == 1 ? 2 : ba == 2 || ba == 4 ? ba : 0;
  return ready(o, &g);
}

/* aten::bmm and aten::baddbmm: A (B, M, K), B (B, K, N). */
static int aten_bmm(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct pf_shape sa, sb;
  struct pf_gemm g;
  int badd = strcmp(name, "aten::baddbmm") == 0;
  size_t ia = badd ? 1 : 0;

  memset(&g, 0, sizeof(g));
  if (pf_shape(pf_arg(a, DIMS, ia), &sa) != 0 || sa.n != 3 ||
      pf_shape(pf_arg(a, DIMS, ia + 1), &sb) != 0 || sb.n != 3)
    return -1;
  g.B = (double)sa.d[0];
  g.M = sa.d[1];
  g.K = sa.d[2];
  g.N = sb.d[2];
  g.bias = badd;
  g.batched = 1;
  g.dt0 = pf_arg(a, TYPES, ia);
  pp_int(o, "B", sa.d[0]);
  pp_int(o, "M", g.M);
  pp_int(o, "N", g.N);
  pp_int(o, "K", g.K);
  pp_bool(o, "bias", badd);
  if (stride(o, "stride_A", a, ia) != 0 ||
      stride(o, "stride_B", a, ia + 1) != 0)
    return -1;
  slice(o, "dtype_A_B", a, TYPES, ia, ia + 2);
  one_bpe(&g);
  return ready(o, &g);
}

/* vllm::gemm_with_dynamic_quant: the first two 2-D tensors are x (M, K)
 * and the weight (N, K packed). */
static int vllm_dynq(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  const struct pv *sh[2] = { NULL, NULL };
  struct pf_gemm g;
  int64_t m, k, n, k2;

  (void)name;
  for (size_t i = 0, f = 0; f < 2 && i < pv_len(a->m[DIMS]); i++)
    if (pv_len(pf_arg(a, DIMS, i)) == 2)
      sh[f++] = pf_arg(a, DIMS, i);
  for (int f = 0; f < 2; f++)
    if (sh[f] == NULL)
      sh[f] = pf_arg(a, DIMS, (size_t)f);
  if (pv_len(a->m[TYPES]) < 2 || pv_len(sh[0]) != 2 || pv_len(sh[1]) != 2 ||
      dim2(sh[0], &m, &k) != 0 || dim2(sh[1], &n, &k2) != 0)
    return -1;
  memset(&g, 0, sizeof(g));
  g.B = 1, g.M = m, g.N = n, g.K = k;
  g.dt0 = pf_arg(a, TYPES, 0);
  pp_int(o, "M", m);
  pp_int(o, "N", n);
  pp_int(o, "K", k);
  pp_bool(o, "bias", 0);
  if (stride(o, "stride_A", a, 0) != 0 || stride(o, "stride_B", a, 1) != 0)
    return -1;
  slice(o, "dtype_A_B", a, TYPES, 0, 2);
  pp_int(o, "B", 1);
  one_bpe(&g);
  return ready(o, &g);
}

/* The low-precision GEMMs' head: B, with A at 0 and B at ib; the strides
 * of both, or none when the event has not both (TraceLens's except). */
static void lowp_head(const struct pf_args *a, int64_t m, int64_t n, int64_t k,
                      size_t ib, struct pf_gemm *g, struct pf_out *o)
{
  const struct pv *sa = pf_arg(a, STRIDES, 0), *sb = pf_arg(a, STRIDES, ib);

  memset(g, 0, sizeof(*g));
  g->B = 1, g->M = m, g->N = n, g->K = k;
  g->dt0 = pf_arg(a, TYPES, 0);
  pp_int(o, "M", m);
  pp_int(o, "N", n);
  pp_int(o, "K", k);
  pp_bool(o, "bias", 0);
  pp_val(o, "stride_A", sa && sb ? sa : NULL);
  pp_val(o, "stride_B", sa && sb ? sb : NULL);
}

/* hipBLASLt's fp8 and fp4 GEMMs (primus_turbo): A at 0, B at 2, the
 * transposes in Concrete Inputs 5-7 (transC swaps A and B); fp4 packs
 * two values a byte along K and adds its E8M0 block scales. */
static int hipblaslt(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  const struct pv *A = pf_arg(a, DIMS, 0), *B = pf_arg(a, DIMS, 2), *t;
  int fp4 = strstr(name, "fp4") != NULL;
  int ta = pf_parse_bool(pf_arg(a, CONCRETE, 5));
  int tb = pf_parse_bool(pf_arg(a, CONCRETE, 6));
  int64_t a0, a1, b0, b1, k;
  struct pf_gemm g;

  if (pf_parse_bool(pf_arg(a, CONCRETE, 7))) { /* transC: C++'s swap */
    int was_a = ta;

    t = A, A = B, B = t;
    ta = !tb;
    tb = !was_a;
  }
  if (dim2(A, &a0, &a1) != 0 || dim2(B, &b0, &b1) != 0 ||
      pf_arg(a, TYPES, 2) == NULL ||
      __builtin_mul_overflow(ta ? a0 : a1, fp4 ? 2 : 1, &k))
    return -1;
  lowp_head(a, ta ? a1 : a0, tb ? b0 : b1, k, 2, &g, o);
  return gemm_lowp(a, fp4, 0, 2, 1, 3, &g, o);
}

/* aiter::gemm_a4w4 (and its leaf _gemm_a4w4_asm): MXFP4 in the NT layout
 * only, A (M, K/2) at 0, B (N, K/2) at 1, scales at 2 and 3. */
static int aiter_a4w4(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  int64_t a0, a1, b0, b1;
  struct pf_gemm g;

  (void)name;
  if (dim2(pf_arg(a, DIMS, 0), &a0, &a1) != 0 ||
      dim2(pf_arg(a, DIMS, 1), &b0, &b1) != 0 || pf_arg(a, TYPES, 1) == NULL ||
      __builtin_mul_overflow(a1, 2, &a1))
    return -1;
  lowp_head(a, a0, b0, a1, 1, &g, o);
  return gemm_lowp(a, 1, 0, 1, 2, 3, &g, o);
}

static int gemm_lowp(const struct pf_args *a, int fp4, size_t ta, size_t tb,
                     size_t tsa, size_t tsb, struct pf_gemm *g,
                     struct pf_out *o)
{
  const struct pv *dt[2] = { pf_arg(a, TYPES, ta), pf_arg(a, TYPES, tb) };
  int ba = pf_bpe(dt[0]), bb = pf_bpe(dt[1]);
  double m = (double)g->M, n = (double)g->N;
  int64_t spr; /* MXFP4: a scale per 32 elements */
  int sa, sb;

  pp_tuple(o, "dtype_A_B", dt, 2);
  pp_val(o, "dtype_scaleA", pf_arg(a, TYPES, tsa));
  pp_val(o, "dtype_scaleB", pf_arg(a, TYPES, tsb));
  pp_int(o, "B", 1);
  if (ba == 0 || bb == 0)
    return -1;
  if (!fp4) {
    g->b1 = g->bb = ba;
    g->b2 = bb;
    g->bo = ba == 1 ? 2 : ba;
    return ready(o, g);
  }
  if (__builtin_add_overflow(g->K, 31, &spr))
    return -1; /* a forged K */
  spr /= 32;
  pf_gemm_finish(o, g);
  sa = pf_bpe(pf_arg(a, TYPES, tsa));
  sb = pf_bpe(pf_arg(a, TYPES, tsb));
  /* Packed operands, their E8M0 block scales, a 16-bit output. */
  o->bytes = m * (double)(g->K / 2) * ba + n * (double)(g->K / 2) * bb +
             m * (double)spr * (sa ? sa : 1) + n * (double)spr * (sb ? sb : 1) +
             m * n * 2;
  return 0;
}

static int ready(struct pf_out *o, struct pf_gemm *g)
{
  pf_gemm_finish(o, g);
  return 0;
}

/* tex_ts::te_gemm_ts (TransformerEngine): A at 0, B at 5, output at 10;
 * transposes at Concrete Inputs 4 and 9, the bias at 14. */
static int te_gemm(const char *name, const struct pf_args *a, struct pf_out *o)
{
  int ta = pv_str_is(pf_arg(a, CONCRETE, 4), "1");
  int tb = pv_str_is(pf_arg(a, CONCRETE, 9), "1");
  const struct pv *dt[4] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 5),
                             pf_arg(a, TYPES, 10), pf_arg(a, TYPES, 18) };
  int64_t a0, a1, b0, b1;
  struct pf_gemm g;

  (void)name;
  if (pv_len(a->m[DIMS]) < 11 || pf_arg(a, CONCRETE, 14) == NULL ||
      dt[3] == NULL || dim2(pf_arg(a, DIMS, 0), &a0, &a1) != 0 ||
      dim2(pf_arg(a, DIMS, 5), &b0, &b1) != 0)
    return -1;
  memset(&g, 0, sizeof(g));
  g.B = 1;
  g.M = ta ? a0 : a1;
  g.K = ta ? a1 : a0;
  g.N = tb ? b1 : b0;
  g.bias = !pv_str_is(pf_arg(a, CONCRETE, 14), "");
  g.dt0 = dt[0];
  pp_int(o, "M", g.M);
  pp_int(o, "N", g.N);
  pp_int(o, "K", g.K);
  pp_bool(o, "bias", g.bias);
  if (stride(o, "stride_A", a, 0) != 0 || stride(o, "stride_B", a, 5) != 0)
    return -1;
  pp_tuple(o, "dtype_A_B", dt, 4);
  pp_int(o, "B", 1);
  g.b1 = pf_bpe(dt[0]);
  g.b2 = pf_bpe(dt[1]);
  g.bo = pf_bpe(dt[2]);
  g.bb = pf_bpe(dt[3]);
  return ready(o, &g);
}

/* ---- extensions (perf_model_extensions.py) ---- */

/* The aiter/SGLang/vLLM GEMMs with x (M, K) and w (N, K): their output
 * dtype is named by dt_out (NULL: bf16). */
static void nk_gemm(const struct pf_args *a, struct pf_gemm *g, int64_t m,
                    int64_t n, int64_t k, int bias, const struct pv *dt_out,
                    struct pf_out *o)
{
  const struct pv *dt[3] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 1),
                             dt_out ? dt_out : &bf16_lit };

  memset(g, 0, sizeof(*g));
  g->B = 1, g->M = m, g->N = n, g->K = k, g->bias = bias;
  g->dt0 = dt[0];
  pp_int(o, "B", 1);
  pp_int(o, "M", m);
  pp_int(o, "N", n);
  pp_int(o, "K", k);
  pp_bool(o, "bias", bias);
  pp_tuple(o, "dtype_A_B", dt, 3);
  g->b1 = pf_bpe(dt[0]);
  g->b2 = pf_bpe(dt[1]);
  g->bo = g->bb = pf_bpe(dt[2]);
}

/* The extensions' GEMMs read a missing dtype as "" (no size). */
static const struct pv *type_or(const struct pf_args *a, size_t i,
                                const struct pv *dflt)
{
  const struct pv *t = pf_arg(a, TYPES, i);

  return t ? t : dflt;
}

/* A block size, -(-dim // scale_dim): null where the scale's dimension
 * is 0 (TraceLens's guard); -1 where the quotient leaves int64_t (a
 * forged shape). */
static int block(struct pf_out *o, const char *key, int64_t dim, int64_t sd)
{
  int64_t q;

  if (sd == 0) {
    pp_null(o, key);
    return 0;
  }
  if (pf_ceil_div(dim, sd, &q) != 0)
    return -1;
  pp_int(o, key, q);
  return 0;
}

/* gemm_a8w8_blockscale and the many ops that share it: x (M, K) int8 or
 * fp8, w (N, K), a bf16 output; the block sizes from the scales' shapes. */
static int a8w8_blockscale(const char *name, const struct pf_args *a,
                           struct pf_out *o)
{
  const struct pv *dt[3] = { type_or(a, 0, &empty_lit),
                             type_or(a, 1, &empty_lit), &bf16_lit };
  struct pf_shape xs, ws, os;
  int64_t m, k, n;
  struct pf_gemm g;

  (void)name;
  if (dim2(pf_arg(a, DIMS, 0), &m, &k) != 0 || first_dim(a, 1, &n) != 0)
    return -1;
  memset(&g, 0, sizeof(g));
  g.B = 1, g.M = m, g.N = n, g.K = k;
  g.dt0 = dt[0];
  pp_int(o, "B", 1);
  pp_int(o, "M", m);
  pp_int(o, "N", n);
  pp_int(o, "K", k);
  pp_bool(o, "bias", 0);
  pp_tuple(o, "dtype_A_B", dt, 3);
  if (pv_len(a->m[PF_DIMS]) > 3) {
    if (pf_shape(pf_arg(a, DIMS, 2), &xs) != 0 ||
        pf_shape(pf_arg(a, DIMS, 3), &ws) != 0)
      return -1;
    pp_text(o, "quant_scheme", "a8w8_blockscale");
    pp_text(o, "quant_granularity", "per_block");
    if (block(o, "block_k", k, xs.n > 0 ? xs.d[xs.n - 1] : 0) != 0 ||
        block(o, "block_n", n, ws.n > 0 ? ws.d[0] : 0) != 0)
      return -1;
    if (pf_arg(a, TYPES, 2))
      pp_val(o, "scale_dtype", pf_arg(a, TYPES, 2));
    else
      pp_text(o, "scale_dtype", "float32");
  }
  os.n = 2;
  os.d[0] = m;
  os.d[1] = n;
  pp_shape(o, "output_shape", &os);
  pp_text(o, "output_dtype", "c10::bfloat16");
  g.b1 = pf_bpe(dt[0]);
  g.b2 = pf_bpe(dt[1]);
  g.bo = g.bb = pf_bpe(dt[2]);
  return ready(o, &g);
}

/* vllm::rocm_unquantized_gemm: x (M, K), w (N, K), bias (N) at 2. */
static int vllm_unquant(const char *name, const struct pf_args *a,
                        struct pf_out *o)
{
  const struct pv *dt[3] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 1),
                             type_or(a, 2, &empty_lit) };
  int bias = pv_len(pf_arg(a, DIMS, 2)) > 0;
  int64_t m, k, n;
  struct pf_gemm g;

  (void)name;
  if (dim2(pf_arg(a, DIMS, 0), &m, &k) != 0 || first_dim(a, 1, &n) != 0 ||
      dt[1] == NULL)
    return -1;
  memset(&g, 0, sizeof(g));
  g.B = 1, g.M = m, g.N = n, g.K = k, g.bias = bias;
  g.dt0 = dt[0];
  pp_int(o, "M", m);
  pp_int(o, "N", n);
  pp_int(o, "K", k);
  pp_bool(o, "bias", bias);
  pp_tuple(o, "dtype_A_B", dt, 3);
  pp_int(o, "B", 1);
  g.b1 = pf_bpe(dt[0]);
  g.b2 = pf_bpe(dt[1]);
  g.bo = g.bb = pf_bpe(bias ? dt[2] : dt[1]);
  return ready(o, &g);
}

/* aiter's 16-bit GEMMs: gemm_a16w16 (output as the input), its atomic
 * split-K variant (output dtype at 3) and the asm one (output at 2). */
static int a16w16(const char *name, const struct pf_args *a, struct pf_out *o)
{
  const struct pv *out = pf_arg(a, TYPES, 0);
  int64_t m, k, n;
  struct pf_gemm g;
  int bias = 0;

  if (dim2(pf_arg(a, DIMS, 0), &m, &k) != 0 || first_dim(a, 1, &n) != 0 ||
      pf_arg(a, TYPES, 1) == NULL)
    return -1;
  if (strcmp(name, "aiter::gemm_a16w16") == 0) {
    bias = pv_len(pf_arg(a, DIMS, 2)) > 0;
  } else if (strcmp(name, "aiter::_gemm_a16w16_asm") == 0) {
    if (pf_bpe(pf_arg(a, TYPES, 2)) != 0)
      out = pf_arg(a, TYPES, 2);
  } else {
    out = pf_arg(a, TYPES, 3);
  }
  nk_gemm(a, &g, m, n, k, bias, out, o);
  return ready(o, &g);
}

/* aiter::gemm_afp4wfp4_: both operands fp4, packed along K. */
static int afp4wfp4(const char *name, const struct pf_args *a, struct pf_out *o)
{
  int64_t m, k, n;
  struct pf_gemm g;

  (void)name;
  if (dim2(pf_arg(a, DIMS, 0), &m, &k) != 0 || first_dim(a, 1, &n) != 0 ||
      pf_arg(a, TYPES, 1) == NULL || __builtin_mul_overflow(k, 2, &k))
    return -1;
  nk_gemm(a, &g, m, n, k, 0, NULL, o);
  g.b1 = g.b2 = 0.5; /* fp4 packed */
  o->prec = "fp4";   /* the storage dtype may read as fp8 */
  return ready(o, &g);
}

/* The batched GEMMs' parameters (TraceLens's extensions write B first),
 * the output bf16. */
static void batched_params(const struct pf_args *a, const struct pf_gemm *g,
                           int64_t b, struct pf_out *o)
{
  const struct pv *dt[3] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 1),
                             &bf16_lit };

  o->p.n = 0;
  pp_int(o, "B", b);
  pp_int(o, "M", g->M);
  pp_int(o, "N", g->N);
  pp_int(o, "K", g->K);
  pp_bool(o, "bias", 0);
  pp_tuple(o, "dtype_A_B", dt, 3);
}

/* aiter::batched_gemm_a16wfp4_: x (B, M, K) 16-bit, w (B, N, K/2) fp4. */
static int batched_a16wfp4(const char *name, const struct pf_args *a,
                           struct pf_out *o)
{
  struct pf_shape x, w;
  struct pf_gemm g;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &x) != 0 || x.n < 3 ||
      pf_shape(pf_arg(a, DIMS, 1), &w) != 0 || w.n < 2 ||
      pf_arg(a, TYPES, 1) == NULL)
    return -1;
  nk_gemm(a, &g, x.d[1], w.d[1], x.d[2], 0, NULL, o);
  g.B = (double)x.d[0];
  g.batched = 1;
  batched_params(a, &g, x.d[0], o);
  g.b2 = 0.5; /* fp4: half a byte an element */
  o->prec = "fp4";
  return ready(o, &g);
}

/* The batched a8w8 GEMM of SGLang: x (B, M, K) or (M, B, K), w (B, N, K). */
static int batched_a8w8(const char *name, const struct pf_args *a,
                        struct pf_out *o)
{
  struct pf_shape x, w;
  struct pf_gemm g;
  int64_t b, m;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &x) != 0 || x.n < 3 ||
      pf_shape(pf_arg(a, DIMS, 1), &w) != 0 || w.n < 2 ||
      pf_arg(a, TYPES, 1) == NULL)
    return -1;
  b = w.d[0];
  m = x.d[0] == b ? x.d[1] : x.d[0];
  nk_gemm(a, &g, m, w.d[1], x.d[2], 0, NULL, o);
  g.B = (double)b;
  g.batched = 1;
  batched_params(a, &g, b, o);
  o->prec = pf_prec(pf_arg(a, TYPES, 1));
  return ready(o, &g);
}

const struct pf_op pf_gemm_ops[] = {
  { "aten::mm", aten_mm, 0 },
  { "aten::addmm", aten_mm, 0 },
  { "aten::_scaled_mm", scaled_mm, 0 },
  { "trtllm::cublas_scaled_mm", scaled_mm, 0 },
  { "bitsandbytes::int8_linear_matmul", scaled_mm, 0 },
  { "aten::bmm", aten_bmm, 0 },
  { "aten::baddbmm", aten_bmm, 0 },
  { "tex_ts::te_gemm_ts", te_gemm, 0 },
  { "vllm::gemm_with_dynamic_quant", vllm_dynq, 0 },
  { "primus_turbo_cpp_extension::hipblaslt_gemm_fp8", hipblaslt, 0 },
  { "primus_turbo::hipblaslt_gemm_fp8", hipblaslt, 0 },
  { "primus_turbo_cpp_extension::hipblaslt_gemm_fp4", hipblaslt, 0 },
  { "primus_turbo::hipblaslt_gemm_fp4", hipblaslt, 0 },
  { "aiter::gemm_a4w4", aiter_a4w4, 0 },
  { "aiter::_gemm_a4w4_asm", aiter_a4w4, 0 },
  { "sglang_profiler::fp8_utils_gemm_a8w8_blockscale", a8w8_blockscale, 0 },
  { "sglang_profiler::gemm_a8w8_blockscale_gemm_a8w8_blockscale",
    a8w8_blockscale, 0 },
  { "vllm::rocm_aiter_triton_gemm_a8w8_blockscale", a8w8_blockscale, 0 },
  { "aiter::gemm_a8w8_blockscale_ck", a8w8_blockscale, 0 },
  { "aiter::gemm_a8w8_blockscale_cktile", a8w8_blockscale, 0 },
  { "aiter::gemm_a8w8_blockscale_bpreshuffle_ck", a8w8_blockscale, 0 },
  { "aiter::gemm_a8w8_blockscale_bpreshuffle_cktile", a8w8_blockscale, 0 },
  { "aiter::flatmm_a8w8_blockscale_asm", a8w8_blockscale, 0 },
  { "aiter::gfx950_a8w8_blockscale_asm", a8w8_blockscale, 0 },
  { "aiter::gemm_a8w8_ck", a8w8_blockscale, 0 },
  { "aiter::gemm_a8w8_bpreshuffle_ck", a8w8_blockscale, 0 },
  { "aiter::gemm_a8w8_bpreshuffle", a8w8_blockscale, 0 },
  { "vllm::_rocm_aiter_preshuffled_per_token_w8a8_gemm", a8w8_blockscale, 0 },
  { "aiter::_gemm_a8w8_blockscale_bpreshuffle_asm", a8w8_blockscale, 0 },
  { "vllm::rocm_unquantized_gemm", vllm_unquant, 0 },
  { "aiter::gemm_a16w16", a16w16, 0 },
  { "aiter::gemm_a16w16_atomic_", a16w16, 0 },
  { "aiter::_gemm_a16w16_asm", a16w16, 0 },
  { "sglang_profiler::gemm_kernels_flydsl_hgemm", a16w16, 0 },
  { "aiter::gemm_afp4wfp4_", afp4wfp4, 0 },
  { "aiter::batched_gemm_a16wfp4_", batched_a16wfp4, 0 },
  { "sglang_profiler::batched_gemm_a8w8_a_per_token_group_prequant_w_per_"
    "batched_tensor_quant_batched_gemm_a8w8_a_per_token_group_prequant_w_"
    "per_batched_tensor_quant",
    batched_a8w8, 0 },
  { NULL, NULL, 0 }
};
