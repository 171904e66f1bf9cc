/*
 * Normalization and MoE models (perf_int.h). Norms: TraceLens's
 * Normalization classes (batch, layer, group, instance and RMS norm,
 * forward and backward) and the RMSNorm ops of its extensions; MoE: the
 * fused and two-stage aiter ops of moe_perf_model_extensions.py.
 */
#include <math.h>
#include <string.h>

#include "index/perf/perf_int.h"

#define DIMS     PF_DIMS
#define TYPES    PF_TYPES
#define STRIDES  PF_STRIDES
#define CONCRETE PF_CONCRETE

struct norm {
  struct pf_shape shape;
  double elems, chans;
  int bias, affine, training;
  int mask[3], nmask; /* output_mask (backward) */
  const struct pv *dt;
  int bpe;
};

/* The parameters every norm writes; the op's shape and dtype at index i. */
static int norm_head(const struct pf_args *a, size_t i, struct norm *n,
                     struct pf_out *o)
{
  const struct pv *dt[2];

  if (pf_shape(pf_arg(a, DIMS, i), &n->shape) != 0 ||
      (n->dt = pf_arg(a, TYPES, i)) == NULL || pf_arg(a, STRIDES, i) == NULL ||
      pf_arg(a, STRIDES, i)->t != PV_ARR)
    return -1;
  n->elems = pf_prod(&n->shape);
  n->bpe = pf_bpe(n->dt);
  dt[0] = n->dt;
  dt[1] = NULL;
  pp_shape(o, "op_shape", &n->shape);
  pp_tuple(o, "dtype_in_out", dt, 2);
  pp_val(o, "stride_input", pf_arg(a, STRIDES, i));
  pp_null(o, "stride_output");
  return 0;
}

/* Input Dims[i] is there and not null (TraceLens's "is not None"). */
static int present(const struct pf_args *a, size_t i, int *out)
{
  const struct pv *v = pf_arg(a, DIMS, i);

  if (v == NULL)
    return -1;
  *out = v->t != PV_NULL;
  return 0;
}

/* A Concrete Inputs list of ints: their product. */
static int list_prod(const struct pv *v, double *out)
{
  struct pf_shape s;

  if (pf_int_list(v, &s) != 0)
    return -1;
  *out = pf_prod(&s);
  return 0;
}

/* A Concrete Inputs list of bools ("[True, False, True]"). */
static int bool_list(const struct pv *v, int *out, int *n)
{
  size_t len;
  const char *s = pv_str(v, &len), *e;

  if (s == NULL)
    return -1;
  e = s + len;
  *n = 0;
  while (s < e) {
    if (e - s >= 4 && memcmp(s, "True", 4) == 0) {
      if (*n < 3)
        out[*n] = 1;
      (*n)++;
      s += 4;
    } else if (e - s >= 5 && memcmp(s, "False", 5) == 0) {
      if (*n < 3)
        out[*n] = 0;
      (*n)++;
      s += 5;
    } else {
      s++;
    }
  }
  return *n > 0 ? 0 : -1;
}

/* Normalization.flops_func and bytes_func (forward). */
static int norm_fwd(const struct norm *n, struct pf_out *o)
{
  double w =
      2 + (n->affine ? 1 + (n->bias ? 1 : 0) : 0) + (n->training ? 2 : 0);

  if (n->bpe == 0)
    return -1; /* TraceLens multiplies by None */
  o->flops = n->chans * 3 + (n->training ? n->elems * 3 : 0) + n->chans * 3 +
             2 * n->elems;
  o->bytes = n->elems * n->bpe * 2 + w * n->chans * n->bpe;
  o->category = "Normalization";
  return 0;
}

/* Normalization.flops_func_bwd and bytes_func_bwd. */
static int norm_bwd(const struct norm *n, struct pf_out *o)
{
  double epc = n->elems / n->chans, fpc, b;

  if (n->bpe == 0 || n->chans == 0)
    return -1;
  fpc = (n->training ? 0 : 3) + 4 * epc;
  if (n->mask[0]) {
    if (n->training)
      fpc += 5 * epc;
  } else {
    fpc += 2 * epc;
  }
  b = n->elems * n->bpe +
      n->elems * n->bpe * (n->mask[0] && n->training ? 2 : 1);
  if (n->training)
    b += n->chans * n->bpe;
  if (n->affine) {
    b += n->chans * n->bpe;
    if (n->training)
      b += n->chans * n->bpe * (n->bias ? 2 : 1);
  }
  o->flops = n->chans * fpc;
  o->bytes = b;
  o->category = "Normalization";
  return 0;
}

static void mask_param(struct pf_out *o, const struct norm *n)
{
  struct pv m[3], arr = { .t = PV_ARR, .n = (uint32_t)n->nmask, .a = m };

  for (int i = 0; i < n->nmask && i < 3; i++)
    m[i] = (struct pv){ .t = PV_BOOL, .b = (uint8_t)n->mask[i] };
  if (n->nmask > 3)
    arr.n = 3;
  pp_val(o, "output_mask", &arr);
}

static void params(const struct norm *n, struct pf_out *o, int mask)
{
  pp_count(o, "num_channels", n->chans);
  pp_bool(o, "has_bias", n->bias);
  pp_bool(o, "is_affine", n->affine);
  pp_bool(o, "is_training", n->training);
  if (mask)
    mask_param(o, n);
  o->maf = 'v';
  o->prec = pf_prec(n->dt);
}

/* batch_norm and its native/miopen/cudnn kin: input (N, C, ...) at 0,
 * weight at 2, training at Concrete Inputs 5 (any text is true). */
static int batch_norm(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  struct norm n;

  (void)name;
  memset(&n, 0, sizeof(n));
  if (norm_head(a, 0, &n, o) != 0 || n.shape.n < 2 ||
      present(a, 2, &n.affine) != 0 || pf_arg(a, CONCRETE, 5) == NULL)
    return -1;
  n.chans = (double)n.shape.d[1];
  n.bias = 1;
  n.training = pf_truthy(pf_arg(a, CONCRETE, 5));
  params(&n, o, 0);
  return norm_fwd(&n, o);
}

/* The batch norm backward ops: native's (grad_out, input, weight, ...)
 * with training at 7; miopen's and cudnn's (input, grad_out, weight...)
 * never training. */
static int batch_norm_bwd(const char *name, const struct pf_args *a,
                          struct pf_out *o)
{
  int vendor = strcmp(name, "aten::cudnn_batch_norm_backward") == 0 ||
               strcmp(name, "aten::miopen_batch_norm_backward") == 0;
  struct norm n;
  int has_out;

  memset(&n, 0, sizeof(n));
  if (norm_head(a, vendor ? 0 : 1, &n, o) != 0 || n.shape.n < 2 ||
      present(a, 0, &has_out) != 0 || present(a, 2, &n.affine) != 0)
    return -1;
  if (!vendor && pf_arg(a, CONCRETE, 7) == NULL)
    return -1;
  n.training = vendor ? 0 : pf_truthy(pf_arg(a, CONCRETE, 7));
  n.mask[0] = vendor ? 1 : has_out;
  n.nmask = 1;
  n.chans = (double)n.shape.d[1];
  n.bias = 1;
  params(&n, o, 1);
  return norm_bwd(&n, o);
}

/* layer_norm: input at 0, normalized_shape at Concrete Inputs 1, weight
 * and bias at 2 and 3. */
static int layer_norm(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  struct norm n;

  (void)name;
  memset(&n, 0, sizeof(n));
  if (norm_head(a, 0, &n, o) != 0 ||
      list_prod(pf_arg(a, CONCRETE, 1), &n.chans) != 0 ||
      present(a, 3, &n.bias) != 0 || present(a, 2, &n.affine) != 0)
    return -1;
  n.training = 1;
  params(&n, o, 0);
  return norm_fwd(&n, o);
}

/* layer_norm backward: input at 1, normalized_shape at Concrete Inputs 2,
 * the output mask at 7. */
static int layer_norm_bwd(const char *name, const struct pf_args *a,
                          struct pf_out *o)
{
  struct norm n;

  (void)name;
  memset(&n, 0, sizeof(n));
  if (norm_head(a, 1, &n, o) != 0 ||
      list_prod(pf_arg(a, CONCRETE, 2), &n.chans) != 0 ||
      bool_list(pf_arg(a, CONCRETE, 7), n.mask, &n.nmask) != 0 || n.nmask < 3)
    return -1;
  n.affine = n.mask[1];
  n.bias = n.mask[2];
  n.training = 1;
  params(&n, o, 1);
  return norm_bwd(&n, o);
}

/* group_norm (and aiter's _groupnorm_run) and instance_norm: input
 * (N, C, ...) at 0, weight at 2; instance norm's use_input_stats at 5. */
static int group_norm(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  int inst = strstr(name, "instance_norm") != NULL;
  struct norm n;

  memset(&n, 0, sizeof(n));
  if (norm_head(a, 0, &n, o) != 0 || n.shape.n < 2 ||
      present(a, 2, &n.affine) != 0 || (inst && pf_arg(a, CONCRETE, 5) == NULL))
    return -1;
  n.chans = (double)n.shape.d[1];
  n.bias = 1;
  n.training = inst ? pf_truthy(pf_arg(a, CONCRETE, 5)) : 1;
  params(&n, o, 0);
  return norm_fwd(&n, o);
}

/* group_norm backward: input at 1, weight at 5, groups at Concrete
 * Inputs 8 (the channels a group), the output mask at 9. */
static int group_norm_bwd(const char *name, const struct pf_args *a,
                          struct pf_out *o)
{
  struct norm n;
  int64_t groups;

  (void)name;
  memset(&n, 0, sizeof(n));
  if (norm_head(a, 1, &n, o) != 0 || n.shape.n < 2 ||
      present(a, 5, &n.affine) != 0 ||
      pf_int(pf_arg(a, CONCRETE, 8), &groups) != 0 || groups == 0 ||
      bool_list(pf_arg(a, CONCRETE, 9), n.mask, &n.nmask) != 0)
    return -1;
  n.chans = (double)n.shape.d[1] / (double)groups;
  n.bias = 1;
  n.training = 1;
  params(&n, o, 1);
  return norm_bwd(&n, o);
}

/* RMSNorm.flops and bytes: per row 2 C + 2 for the rsqrt, then the scale
 * (and the weight when affine) on every element. */
static int rms_fwd(const struct norm *n, struct pf_out *o)
{
  if (n->bpe == 0 || n->chans == 0)
    return -1;
  o->flops =
      n->elems / n->chans * (2 * n->chans + 2) + n->elems * (n->affine ? 2 : 1);
  o->bytes = n->elems * n->bpe * 2 + (n->affine ? n->chans * n->bpe : 0);
  return 0;
}

/* aten::_fused_rms_norm: input at 0, normalized_shape at Concrete Inputs
 * 1, weight at 2. */
static int rms_norm(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct norm n;

  (void)name;
  memset(&n, 0, sizeof(n));
  if (norm_head(a, 0, &n, o) != 0 || present(a, 2, &n.affine) != 0 ||
      list_prod(pf_arg(a, CONCRETE, 1), &n.chans) != 0)
    return -1;
  params(&n, o, 0);
  o->category = "Normalization";
  return rms_fwd(&n, o);
}

/* The RMS norm backward ops: input at 1, weight at 4, normalized_shape at
 * Concrete Inputs 2, the output mask at 5. */
static int rms_norm_bwd(const char *name, const struct pf_args *a,
                        struct pf_out *o)
{
  struct norm n;
  double f, nn;

  (void)name;
  memset(&n, 0, sizeof(n));
  if (norm_head(a, 1, &n, o) != 0 || present(a, 4, &n.affine) != 0 ||
      list_prod(pf_arg(a, CONCRETE, 2), &n.chans) != 0 ||
      bool_list(pf_arg(a, CONCRETE, 5), n.mask, &n.nmask) != 0 || n.nmask < 2 ||
      n.bpe == 0 || n.chans == 0)
    return -1;
  params(&n, o, 1);
  nn = n.elems / n.chans;
  f = (n.affine ? n.elems : 0) + n.elems;
  if (n.mask[0])
    f += 6 * n.elems;
  if (n.mask[1] && n.affine)
    f += n.elems + (nn > 1 ? n.elems : 0);
  o->flops = f;
  o->bytes = n.elems * n.bpe * 3 + (n.affine ? n.chans * n.bpe * 2 : 0);
  o->category = "Normalization";
  return 0;
}

/* ---- RMSNorm extensions (rmsnorm_perf_model_extensions.py) ---- */

/* aiter's and vLLM's RMSNorm ops: the input and the weight (its length
 * the channels) at their layout's indices; always affine. */
struct rms_layout {
  const char *name;
  size_t in, weight;
  int kind; /* 0 plain, 1 with residual add, 2 dynamic quant, 3 group
               quant (group size at Concrete Inputs grp), 4 add + group
               quant */
  size_t grp;
};

static const struct rms_layout rms_layouts[] = {
  { "aiter::rms_norm", 0, 1, 0, 0 },
  { "aiter::rmsnorm2d_fwd_ck", 0, 1, 0, 0 },
  { "aiter::rmsnorm", 1, 2, 0, 0 },
  { "aiter::rmsnorm2d_fwd_with_add_ck", 1, 4, 1, 0 },
  { "aiter::add_rmsnorm", 1, 4, 1, 0 },
  { "aiter::rmsnorm2d_fwd_with_dynamicquant_ck", 1, 3, 2, 0 },
  { "aiter::rmsnorm_quant", 1, 3, 3, 5 },
  { "vllm::rocm_aiter_rmsnorm_fp8_group_quant", 0, 1, 3, 3 },
  { "vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant", 0, 2, 4, 4 },
};

static int rms_ext(const char *name, const struct pf_args *a, struct pf_out *o)
{
  const struct rms_layout *l = NULL;
  struct pf_shape w;
  struct norm n;
  int64_t gs = 0, q;
  double m, groups;

  for (size_t i = 0; i < sizeof(rms_layouts) / sizeof(rms_layouts[0]); i++)
    if (strcmp(rms_layouts[i].name, name) == 0)
      l = &rms_layouts[i];
  memset(&n, 0, sizeof(n));
  if (l == NULL || norm_head(a, l->in, &n, o) != 0 ||
      pf_shape(pf_arg(a, DIMS, l->weight), &w) != 0 || w.n < 1)
    return -1;
  n.chans = (double)w.d[0];
  n.affine = 1;
  params(&n, o, 0);
  o->category = "RMSNorm_fwd";
  if (rms_fwd(&n, o) != 0)
    return -1;
  m = floor(n.elems / n.chans);
  if (l->kind == 1) { /* the add; read input, residual, weight; write two */
    o->flops += n.elems;
    o->bytes = 4 * n.elems * n.bpe + n.chans * n.bpe;
    return 0;
  }
  if (l->kind == 0)
    return 0;
  if (l->kind >= 3 && pf_int(pf_arg(a, CONCRETE, l->grp), &gs) != 0) {
    if (l->kind != 3 || strcmp(name, "aiter::rmsnorm_quant") != 0)
      return -1; /* int() of the vLLM ops' group size raises */
    gs = 0;
  }
  if (!(n.chans > -9.0e18 && n.chans < 9.0e18)) /* the casts stay defined */
    return -1;
  if (gs <= 0)
    gs = (int64_t)n.chans;
  if (l->kind == 2)
    groups = 1;
  else if (pf_ceil_div((int64_t)n.chans, gs, &q) != 0)
    return -1; /* a forged group size: the quotient leaves int64_t */
  else
    groups = (double)q;
  o->flops += (l->kind == 4 ? 3 : 2) * n.elems;
  o->bytes = n.elems * n.bpe + n.chans * n.bpe + n.elems + m * groups * 4 +
             (l->kind == 4 ? 2 * n.elems * n.bpe : 0);
  return 0;
}

/* ---- MoE (moe_perf_model_extensions.py) ---- */

/* The extensions' own dtype sizes (exact names), with a default. */
static double moe_bpe(const struct pv *dt, double dflt)
{
  static const struct {
    const char *name;
    double bpe;
  } map[] = { { "Float8_e4m3fn", 1 },
              { "Float8_e4m3fnuz", 1 },
              { "Float8_e5m2", 1 },
              { "Float8_e5m2fnuz", 1 },
              { "FP8", 1 },
              { "FP4", 0.5 },
              { "BFloat16", 2 },
              { "Float16", 2 },
              { "Half", 2 },
              { "Float32", 4 },
              { "Float", 4 },
              { "c10::BFloat16", 2 },
              { "c10::Float8_e4m3fn", 1 },
              { "c10::Float8_e4m3fnuz", 1 },
              { "c10::Float4_e2m1fn_x2", 0.5 },
              { "c10::Half", 2 },
              { "c10::Float", 4 } };

  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (pv_str_is(dt, map[i].name))
      return map[i].bpe;
  return dflt;
}

struct moe {
  int64_t tokens, hidden, inter, experts, topk;
  int gated; /* -1: not a parameter (the down projection) */
  const struct pv *din, *dw, *dout;
};

/* Whether w1's N dimension holds gate and up: 2 inter, false when 2 inter
 * leaves int64_t (no dimension can hold it then). */
static int moe_gated(int64_t w1n, int64_t inter)
{
  int64_t two;

  return !__builtin_mul_overflow(inter, 2, &two) && w1n == two;
}

static void moe_params(struct pf_out *o, const struct moe *m)
{
  pp_int(o, "num_tokens", m->tokens);
  pp_int(o, "hidden_dim", m->hidden);
  pp_int(o, "inter_dim", m->inter);
  pp_int(o, "num_experts", m->experts);
  pp_int(o, "topk", m->topk);
  if (m->gated >= 0)
    pp_bool(o, "gated", m->gated);
  pp_val(o, "input_dtype", m->din);
  pp_val(o, "weight_dtype", m->dw);
  if (m->dout != NULL)
    pp_val(o, "output_dtype", m->dout);
  o->maf = 'm';
  o->prec = pf_prec(m->din);
}

/* The experts a batch of M tokens touches, on average. */
static double e_active(const struct moe *m)
{
  double e = (double)m->experts;

  return e * (1 - pow((e - (double)m->topk) / e, (double)m->tokens));
}

/* The fused aiter MoE (FP8 block scale; g1u1): out (M, K) at 0, w1
 * (E, N or 2N, K) at 2, w2 (E, K, N) at 3, topk at Concrete Inputs 8. */
static int moe_fused(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  struct pf_shape out, w1, w2;
  double M, K, N, bi, bw, bo;
  struct moe m;
  int64_t mul;

  (void)name;
  memset(&m, 0, sizeof(m));
  if (pf_shape(pf_arg(a, DIMS, 0), &out) != 0 || out.n < 1 ||
      pf_shape(pf_arg(a, DIMS, 2), &w1) != 0 || w1.n != 3 ||
      pf_shape(pf_arg(a, DIMS, 3), &w2) != 0 || w2.n != 3 || w1.d[2] == 0 ||
      !pf_truthy(pf_arg(a, CONCRETE, 8)) ||
      pf_int(pf_arg(a, CONCRETE, 8), &m.topk) != 0 ||
      (m.dw = pf_arg(a, TYPES, 2)) == NULL)
    return -1;
  m.tokens = out.d[0];
  m.hidden = w2.d[1];
  if (pf_floor_div(m.hidden, w1.d[2], &mul) != 0 ||
      __builtin_mul_overflow(w2.d[2], mul, &m.inter))
    return -1;
  m.experts = w1.d[0];
  m.gated = moe_gated(w1.d[1], m.inter);
  m.dout = pf_arg(a, TYPES, 0);
  m.din = pf_arg(a, TYPES, 1);
  moe_params(o, &m);
  if (m.experts == 0)
    return -1;
  M = (double)m.tokens, K = (double)m.hidden, N = (double)m.inter;
  bi = moe_bpe(m.din, 1);
  bw = moe_bpe(m.dw, 1);
  bo = moe_bpe(m.dout, 2);
  o->flops = 2 * M * K * N * (double)m.topk * (m.gated ? 2 : 1) +
             2 * M * K * N * (double)m.topk + M * K * (2 * (double)m.topk - 1);
  o->bytes =
      M * K * bi + e_active(&m) * N * K * bw * (m.gated ? 3 : 2) + M * K * bo;
  o->category = "MoE_fused_fwd";
  if (pv_str_is(m.din, "fp8") || pv_str_is(m.din, "bf16"))
    o->prec = "fp8";
  return 0;
}

/* An up (gate + up) projection's work. */
static void moe_up(struct pf_out *o, const struct moe *m, double bi, double bw,
                   double bo)
{
  double M = (double)m->tokens, K = (double)m->hidden, N = (double)m->inter;
  double g = m->gated ? 2 : 1;

  o->flops = 2 * M * K * N * (double)m->topk * g;
  o->bytes =
      M * K * bi + e_active(m) * g * K * N * bw + M * N * (double)m->topk * bo;
  o->category = "MoE_unfused_fwd";
}

static void moe_down(struct pf_out *o, const struct moe *m, double bi,
                     double bw, double bo)
{
  double M = (double)m->tokens, K = (double)m->hidden, N = (double)m->inter;

  o->flops = 2 * M * N * K * (double)m->topk;
  o->bytes =
      M * N * (double)m->topk * bi + e_active(m) * N * K * bw + M * K * bo;
  o->category = "MoE_unfused_fwd";
}

/* aiter's CK-tile two-stage MoE: gemm1 x (M, K), w1 (E, N or 2N, K), y
 * (M, topk, N); gemm2 x (M, topk, N), w2 (E, K, N). */
static int moe_cktile(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  int up = strstr(name, "gemm1") != NULL;
  struct pf_shape x, w, y;
  struct moe m;

  memset(&m, 0, sizeof(m));
  if (pf_shape(pf_arg(a, DIMS, 0), &x) != 0 ||
      pf_shape(pf_arg(a, DIMS, 1), &w) != 0 || w.n != 3 ||
      (m.din = pf_arg(a, TYPES, 0)) == NULL ||
      (m.dw = pf_arg(a, TYPES, 1)) == NULL ||
      (m.dout = pf_arg(a, TYPES, 2)) == NULL)
    return -1;
  if (up) {
    if (x.n != 2 || pf_shape(pf_arg(a, DIMS, 2), &y) != 0 || y.n != 3)
      return -1;
    m.tokens = x.d[0], m.hidden = x.d[1];
    m.experts = w.d[0], m.topk = y.d[1], m.inter = y.d[2];
    m.gated = moe_gated(w.d[1], m.inter);
  } else {
    if (x.n != 3)
      return -1;
    m.tokens = x.d[0], m.topk = x.d[1], m.inter = x.d[2];
    m.experts = w.d[0], m.hidden = w.d[1];
    m.gated = -1;
  }
  moe_params(o, &m);
  if (m.experts == 0)
    return -1;
  if (up)
    moe_up(o, &m, moe_bpe(m.din, 2), moe_bpe(m.dw, 1), moe_bpe(m.dout, 2));
  else
    moe_down(o, &m, moe_bpe(m.din, 2), moe_bpe(m.dw, 1), moe_bpe(m.dout, 2));
  return 0;
}

/* aiter's CK MoE stages: stage1 x (M, K) at 0, w1 at 1, w2 (E, K, N) at
 * 2, out (M, topk, N) at 6; stage2 x (M, topk, N) at 0, w2 at 2; packed
 * int4 weights widen N (int4_war). */
static int moe_ck(const char *name, const struct pf_args *a, struct pf_out *o)
{
  int up = strstr(name, "stage1") != NULL;
  struct pf_shape x, w1, w2, out;
  struct moe m;
  double bi;
  int64_t mul;

  memset(&m, 0, sizeof(m));
  if (pf_shape(pf_arg(a, DIMS, 0), &x) != 0 ||
      pf_shape(pf_arg(a, DIMS, 1), &w1) != 0 ||
      pf_shape(pf_arg(a, DIMS, 2), &w2) != 0 || w2.n != 3 ||
      (m.din = pf_arg(a, TYPES, 0)) == NULL)
    return -1;
  m.experts = w2.d[0], m.hidden = w2.d[1], m.inter = w2.d[2];
  if (w1.n > 0 && w1.d[w1.n - 1] != 0) {
    if (pf_floor_div(m.hidden, w1.d[w1.n - 1], &mul) != 0 ||
        __builtin_mul_overflow(m.inter, mul, &m.inter))
      return -1;
  } else if (up || w1.n > 0) {
    return -1;
  }
  if (up) {
    if (x.n < 1 || w1.n < 2 || pf_shape(pf_arg(a, DIMS, 6), &out) != 0 ||
        out.n < 2 || (m.dw = pf_arg(a, TYPES, 1)) == NULL)
      return -1;
    m.tokens = x.d[0], m.topk = out.d[1];
    m.gated = moe_gated(w1.d[1], m.inter);
  } else {
    if (x.n != 3 || (m.dw = pf_arg(a, TYPES, 2)) == NULL)
      return -1;
    m.tokens = x.d[0], m.topk = x.d[1];
    m.gated = -1;
  }
  moe_params(o, &m);
  if (m.experts == 0)
    return -1;
  bi = moe_bpe(m.din, 2);
  if (up)
    moe_up(o, &m, bi, moe_bpe(m.dw, 1), bi);
  else
    moe_down(o, &m, bi, moe_bpe(m.dw, 1), bi);
  return 0;
}

const struct pf_op pf_norm_ops[] = {
  { "aten::batch_norm", batch_norm, 0 },
  { "aten::native_batch_norm", batch_norm, 0 },
  { "aten::miopen_batch_norm", batch_norm, 0 },
  { "aten::cudnn_batch_norm", batch_norm, 0 },
  { "aten::layer_norm", layer_norm, 0 },
  { "aten::native_layer_norm", layer_norm, 0 },
  { "aten::miopen_layer_norm", layer_norm, 0 },
  { "aten::cudnn_layer_norm", layer_norm, 0 },
  { "aten::group_norm", group_norm, 0 },
  { "aten::native_group_norm", group_norm, 0 },
  { "aten::miopen_group_norm", group_norm, 0 },
  { "aten::cudnn_group_norm", group_norm, 0 },
  { "aiter::_groupnorm_run", group_norm, 0 },
  { "aten::instance_norm", group_norm, 0 },
  { "aten::native_instance_norm", group_norm, 0 },
  { "aten::miopen_instance_norm", group_norm, 0 },
  { "aten::cudnn_instance_norm", group_norm, 0 },
  { "aten::_fused_rms_norm", rms_norm, 0 },
  { "aten::batch_norm_backward", batch_norm_bwd, 0 },
  { "aten::native_batch_norm_backward", batch_norm_bwd, 0 },
  { "aten::miopen_batch_norm_backward", batch_norm_bwd, 0 },
  { "aten::cudnn_batch_norm_backward", batch_norm_bwd, 0 },
  { "aten::layer_norm_backward", layer_norm_bwd, 0 },
  { "aten::native_layer_norm_backward", layer_norm_bwd, 0 },
  { "aten::miopen_layer_norm_backward", layer_norm_bwd, 0 },
  { "aten::cudnn_layer_norm_backward", layer_norm_bwd, 0 },
  { "aten::group_norm_backward", group_norm_bwd, 0 },
  { "aten::native_group_norm_backward", group_norm_bwd, 0 },
  { "aten::miopen_group_norm_backward", group_norm_bwd, 0 },
  { "aten::cudnn_group_norm_backward", group_norm_bwd, 0 },
  { "aten::rms_norm_backward", rms_norm_bwd, 0 },
  { "aten::native_rms_norm_backward", rms_norm_bwd, 0 },
  { "aten::miopen_rms_norm_backward", rms_norm_bwd, 0 },
  { "aten::cudnn_rms_norm_backward", rms_norm_bwd, 0 },
  { "aten::_fused_rms_norm_backward", rms_norm_bwd, 0 },
  { "aiter::rms_norm", rms_ext, 0 },
  { "aiter::rmsnorm2d_fwd_ck", rms_ext, 0 },
  { "aiter::rmsnorm", rms_ext, 0 },
  { "aiter::rmsnorm2d_fwd_with_add_ck", rms_ext, 0 },
  { "aiter::add_rmsnorm", rms_ext, 0 },
  { "aiter::rmsnorm2d_fwd_with_dynamicquant_ck", rms_ext, 0 },
  { "aiter::rmsnorm_quant", rms_ext, 0 },
  { "vllm::rocm_aiter_rmsnorm_fp8_group_quant", rms_ext, 0 },
  { "vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant", rms_ext, 0 },
  { "aiter::fmoe_fp8_blockscale_g1u1", moe_fused, 0 },
  { "aiter::fmoe_g1u1", moe_fused, 0 },
  { "aiter::moe_cktile2stages_gemm1_ck", moe_cktile, 0 },
  { "aiter::moe_cktile2stages_gemm2_ck", moe_cktile, 0 },
  { "aiter::ck_moe_stage1", moe_ck, 0 },
  { "aiter::ck_moe_stage2", moe_ck, 0 },
  { NULL, NULL, 0 }
};
