/*
 * Elementwise and reduction models (perf_int.h): TraceLens's unary and
 * binary elementwise ops (one FLOP an output element, every operand read
 * and the output written once), the padding and upsampling copies, the
 * reductions, and the activations, RoPE and KV-cache writes of its
 * extensions. All run on the vector units.
 */
#include <string.h>

#include "index/perf/perf_int.h"

#define DIMS     PF_DIMS
#define TYPES    PF_TYPES
#define STRIDES  PF_STRIDES
#define CONCRETE PF_CONCRETE

/* tuple(Input Strides[i]): -1 when the event has none there (KeyError,
 * IndexError). */
static int stride_of(struct pf_out *o, const char *key, const struct pf_args *a,
                     size_t i)
{
  const struct pv *v = pf_arg(a, STRIDES, i);

  if (v == NULL || v->t != PV_ARR)
    return -1;
  pp_val(o, key, v);
  return 0;
}

/* The out= tensor's strides at i when the call gave one; null when not. */
static int out_stride(struct pf_out *o, const struct pf_args *a, size_t i,
                      int given)
{
  if (!given) {
    pp_null(o, "stride_output");
    return 0;
  }
  return stride_of(o, "stride_output", a, i);
}

static void unary_done(struct pf_out *o, double in, double out,
                       const struct pv *din, const struct pv *dout)
{
  int bi = pf_bpe(din), bo = dout ? pf_bpe(dout) : bi;

  o->flops = out;
  if (bi && bo)
    o->bytes = in * bi + out * bo;
  o->category = "UnaryElementwise";
  o->maf = 'v';
  o->prec = pf_prec(din);
}

/* aten's unary ops: the operand at 0, an out= tensor at 1 when given. */
static int unary(const char *name, const struct pf_args *a, struct pf_out *o)
{
  const struct pv *d1 = pf_arg(a, DIMS, 1), *dt[2] = { pf_arg(a, TYPES, 0) };
  struct pf_shape s;
  double n;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &s) != 0 || dt[0] == NULL)
    return -1;
  pp_shape(o, "op_shape", &s);
  dt[1] = pf_truthy(d1) ? pf_arg(a, TYPES, 1) : NULL;
  if (pf_truthy(d1) && dt[1] == NULL)
    return -1;
  pp_tuple(o, "dtype_in_out", dt, 2);
  if (stride_of(o, "stride_input", a, 0) != 0 ||
      out_stride(o, a, 1, pf_truthy(d1)) != 0)
    return -1;
  n = pf_prod(&s);
  unary_done(o, n, n, dt[0], dt[1]);
  return 0;
}

/* The padding and nearest upsampling copies: read the input, write the
 * output, whose shape Concrete Inputs[1] gives. */
static int pad_upsample(const char *name, const struct pf_args *a,
                        struct pf_out *o)
{
  const struct pv *dt[2] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 0) };
  int pad = strstr(name, "replication_pad") != NULL;
  struct pf_shape in, out, arg;

  if (pf_shape(pf_arg(a, DIMS, 0), &in) != 0 || dt[0] == NULL ||
      pf_int_list(pf_arg(a, CONCRETE, 1), &arg) != 0)
    return -1;
  out = in;
  if (pad) {
    for (int i = 0; i < arg.n / 2; i++) {
      int d = in.n - 1 - i;

      if (d < 0)
        return -1;
      if (__builtin_add_overflow(out.d[d], arg.d[2 * i], &out.d[d]) ||
          __builtin_add_overflow(out.d[d], arg.d[2 * i + 1], &out.d[d]))
        return -1; /* a forged padding */
    }
  } else {
    if (in.n < 2 || 2 + arg.n > PF_MAXDIM)
      return -1;
    out.n = 2 + arg.n;
    memcpy(out.d + 2, arg.d, (size_t)arg.n * sizeof(arg.d[0]));
  }
  pp_shape(o, "input_shape", &in);
  pp_shape(o, "output_shape", &out);
  if (pad)
    pp_shape(o, "padding", &arg);
  pp_shape(o, "op_shape", &out);
  pp_tuple(o, "dtype_in_out", dt, 2);
  if (stride_of(o, "stride_input", a, 0) != 0)
    return -1;
  pp_null(o, "stride_output");
  unary_done(o, pf_prod(&in), pf_prod(&out), dt[0], dt[1]);
  return 0;
}

/* The broadcast of two shapes into *out; -1 when they do not broadcast. */
static int broadcast(const struct pf_shape *x, const struct pf_shape *y,
                     struct pf_shape *out)
{
  int n = x->n > y->n ? x->n : y->n;

  out->n = n;
  for (int i = 0; i < n; i++) {
    int ix = i - (n - x->n), iy = i - (n - y->n);
    int64_t a = ix >= 0 ? x->d[ix] : 1, b = iy >= 0 ? y->d[iy] : 1;

    if (a != b && a != 1 && b != 1)
      return -1;
    out->d[i] = a > b ? a : b;
  }
  return 0;
}

/* aten's binary ops (and Liger's SiLU-mul): operands at 0 and 1, an out=
 * tensor at 2 when given (liger: none); the output's size, when not
 * given, the larger of two tensors' or the first's. */
static int binary(const char *name, const struct pf_args *a, struct pf_out *o)
{
  int liger = strcmp(name, "LigerSiLUMulFunction") == 0;
  const struct pv *d2 = liger ? NULL : pf_arg(a, DIMS, 2);
  const struct pv *dt[3] = { pf_arg(a, TYPES, 0), pf_arg(a, TYPES, 1), NULL };
  struct pf_shape x, y, out;
  int b1, b2, bo;

  if (pf_shape(pf_arg(a, DIMS, 0), &x) != 0 ||
      pf_shape(pf_arg(a, DIMS, 1), &y) != 0 || dt[1] == NULL)
    return -1;
  if (pf_truthy(d2) && (dt[2] = pf_arg(a, TYPES, 2)) == NULL)
    return -1;
  pp_shape(o, "shape_in1", &x);
  pp_shape(o, "shape_in2", &y);
  pp_tuple(o, "dtype_in1_in2_out", dt, 3);
  if (stride_of(o, "stride_input1", a, 0) != 0 ||
      stride_of(o, "stride_input2", a, 1) != 0 ||
      out_stride(o, a, 2, pf_truthy(d2)) != 0)
    return -1;
  if (broadcast(&x, &y, &out) != 0)
    return -1;
  b1 = pf_bpe(dt[0]);
  b2 = pf_bpe(dt[1]);
  if (dt[2] != NULL)
    bo = pf_bpe(dt[2]);
  else if (b1 && b2)
    bo = x.n > 0 && y.n > 0 ? (b1 > b2 ? b1 : b2) : b1;
  else
    bo = 0;
  o->flops = pf_prod(&out);
  if (b1 && b2 && bo)
    o->bytes = pf_prod(&x) * b1 + pf_prod(&y) * b2 + pf_prod(&out) * bo;
  o->category = "BinaryElementwise";
  o->maf = 'v';
  o->prec = pf_prec(dt[0]);
  return 0;
}

/* The dimensions a reduction reduces over, as aten_reduce reads them from
 * Concrete Inputs[1:]: the last bool is keepdim, the last int or list of
 * ints before it the dimensions. kineto writes every concrete input as a
 * string, which that reading skips: the output is then one element. */
static int reduce_dims(const struct pf_args *a, struct pf_shape *dim,
                       int *keepdim)
{
  const struct pv *c = a->m[CONCRETE];
  size_t n = pv_len(c), kidx = SIZE_MAX;

  *keepdim = 0;
  dim->n = -1;
  if (n < 2)
    return 0;
  for (size_t i = n; i-- > 1;)
    if (c->a[i].t == PV_BOOL) {
      *keepdim = c->a[i].b;
      kidx = i;
      break;
    }
  for (size_t i = n; i-- > 1;) {
    const struct pv *v = &c->a[i];

    if (i == kidx || v->t == PV_NULL || v->t == PV_STR)
      continue;
    if (v->t == PV_ARR) {
      if (pf_shape(v, dim) != 0)
        continue; /* print, go on: TraceLens's except */
      return 0;
    }
    if (v->t == PV_INT) {
      dim->n = 1;
      dim->d[0] = v->i;
      return 0;
    }
  }
  return 0;
}

/* The output's elements: the shape with each dimension of dim (from the
 * largest down, negative ones counted from the end) set to 1 (keepdim)
 * or taken out, as aten_reduce does it (a dimension named twice goes
 * twice). */
static double reduced(const struct pf_shape *in, const struct pf_shape *dim,
                      int keepdim)
{
  int64_t d[PF_MAXDIM], order[PF_MAXDIM];
  struct pf_shape s = *in;
  double n = 1;

  for (int i = 0; i < dim->n; i++)
    d[i] = dim->d[i] >= 0 ? dim->d[i] : in->n + dim->d[i];
  for (int i = 0; i < dim->n; i++)
    order[i] = d[i];
  for (int i = 1; /* sorted(dim, reverse=True) */ i < dim->n; i++)
    for (int j = i; j > 0 && order[j] > order[j - 1]; j--) {
      int64_t t = order[j];

      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 0; i < dim->n; i++) {
    int64_t k = order[i];

    if (k < 0 || k >= s.n)
      continue;
    if (keepdim) {
      s.d[k] = 1;
    } else {
      memmove(&s.d[k], &s.d[k + 1], (size_t)(s.n - k - 1) * sizeof(s.d[0]));
      s.n--;
    }
  }
  for (int i = 0; i < s.n; i++)
    n *= (double)s.d[i];
  return n;
}

/* aten's reductions: the input read, the output (one element, the input's
 * count for cumsum/cumprod, else by dim and keepdim) written. */
static int reduce(const char *name, const struct pf_args *a, struct pf_out *o)
{
  const struct pv *out_t = pf_arg(a, PF_OUT_TYPE, 0);
  const struct pv *dt[2] = { pf_arg(a, TYPES, 0), NULL };
  struct pf_shape in, dim;
  double nin, nout = 1;
  int keepdim, bi, bo;
  const char *kind = strstr(name, "mean")   ? "mean"
                     : strstr(name, "max")  ? "max"
                     : strstr(name, "min")  ? "min"
                     : strstr(name, "norm") ? "norm"
                                            : "sum";

  if (pv_len(a->m[DIMS]) == 0 || pf_shape(pf_arg(a, DIMS, 0), &in) != 0)
    return -1;
  dt[1] = out_t != NULL && out_t->t != PV_NULL ? out_t : NULL;
  nin = pf_prod(&in);
  reduce_dims(a, &dim, &keepdim);
  if (strstr(name, "cumsum") || strstr(name, "cumprod"))
    nout = nin;
  else if (dim.n > 0)
    nout = reduced(&in, &dim, keepdim);
  pp_count(o, "num_input_elems", nin);
  pp_count(o, "num_output_elems", nout);
  pp_tuple(o, "dtype_in_out", dt, 2);
  pp_text(o, "reduce_type", kind);
  bi = pf_bpe(dt[0]);
  bo = dt[1] != NULL ? pf_bpe(dt[1]) : bi;
  o->flops = nin;
  if (bi && bo)
    o->bytes = nin * bi + nout * bo;
  o->category = "Reduce_fwd";
  o->maf = 'v';
  o->prec = pf_prec(dt[0]);
  return 0;
}

/* ---- extensions: activations, RoPE, KV cache ---- */

/* The gated activations (silu_and_mul and kin): out at 0, the gate and up
 * halves at 1; FLOPs per output element by kind. */
static int gated(const char *name, const struct pf_args *a, struct pf_out *o)
{
  const struct pv *dt[2] = { pf_arg(a, TYPES, 1), pf_arg(a, TYPES, 0) };
  double per = strstr(name, "gelu_tanh") ? 10 : strstr(name, "gelu") ? 8 : 5;
  struct pf_shape s;
  int bi, bo;
  double n;

  if (pf_shape(pf_arg(a, DIMS, 0), &s) != 0 || dt[0] == NULL)
    return -1;
  pp_shape(o, "op_shape", &s);
  pp_tuple(o, "dtype_in_out", dt, 2);
  if (stride_of(o, "stride_input", a, 1) != 0 ||
      stride_of(o, "stride_output", a, 0) != 0)
    return -1;
  n = pf_prod(&s);
  bi = pf_bpe(dt[0]);
  bo = pf_bpe(dt[1]);
  if (bi == 0 || bo == 0)
    return -1; /* TraceLens multiplies by None */
  o->flops = per * n;
  o->bytes = 2 * n * bi + n * bo;
  o->category = "UnaryElementwise";
  o->maf = 'v';
  o->prec = pf_prec(dt[0]);
  return 0;
}

static void rope_done(struct pf_out *o, double n, const struct pv *dt)
{
  int b = pf_bpe(dt);

  pp_count(o, "num_elements", n);
  o->flops = 3 * n;
  o->bytes = 2 * n * (b ? b : 2);
  o->category = "RoPE_fwd";
  o->maf = 'v';
  o->prec = pf_prec(dt);
}

/* TransformerEngine's FusedRoPEFunc: t (seq, batch, heads, head_dim). */
static int fused_rope(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  struct pf_shape t;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &t) != 0 || t.n < 4)
    return -1;
  pp_int(o, "seq_len", t.d[0]);
  pp_int(o, "batch", t.d[1]);
  pp_int(o, "heads", t.d[2]);
  pp_int(o, "head_dim", t.d[3]);
  rope_done(o, pf_prod(&t), pf_arg(a, TYPES, 0));
  return 0;
}

/* sgl_kernel's rotary_embedding: positions, query, key, _, cos_sin_cache;
 * the rotated part of each head (rot_dim, the cache's second dimension)
 * of the query and key heads. */
static int sgl_rope(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct pf_shape q, k, cache;
  int64_t head, rot, hq, hk;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 1), &q) != 0 || q.n < 2 ||
      pf_shape(pf_arg(a, DIMS, 2), &k) != 0 || k.n < 2 ||
      pf_arg(a, TYPES, 1) == NULL)
    return -1;
  head = q.d[q.n - 1];
  if (pf_truthy(pf_arg(a, CONCRETE, 3)) &&
      pf_int(pf_arg(a, CONCRETE, 3), &head) != 0)
    return -1;
  rot = head;
  if (pf_shape(pf_arg(a, DIMS, 4), &cache) == 0 && cache.n > 1)
    rot = cache.d[1];
  if (pf_floor_div(q.d[1], head, &hq) != 0 ||
      pf_floor_div(k.d[1], head, &hk) != 0 ||
      __builtin_add_overflow(hq, hk, &hq))
    return -1; /* no head size, or forged head counts */
  rope_done(o, (double)q.d[0] * (double)hq * (double)rot, pf_arg(a, TYPES, 1));
  return 0;
}

/* aiter's rope_cached_positions_2c_fwd_impl: the inputs x and y at 2, 3. */
static int aiter_rope(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  struct pf_shape x, y;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 2), &x) != 0 ||
      pf_shape(pf_arg(a, DIMS, 3), &y) != 0)
    return -1;
  pp_shape(o, "x_shape", &x);
  pp_shape(o, "y_shape", &y);
  rope_done(o, pf_prod(&x) + pf_prod(&y), pf_arg(a, TYPES, 0));
  return 0;
}

/* sglang::store_cache: K and V rows copied into the paged cache, two
 * reads and two writes of k's size; no FLOPs. */
static int store_cache(const char *name, const struct pf_args *a,
                       struct pf_out *o)
{
  const struct pv *dt = pf_arg(a, TYPES, 0);
  struct pf_shape k;
  int b;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &k) != 0 || dt == NULL)
    return -1;
  pp_shape(o, "op_shape", &k);
  pp_count(o, "nelems", pf_prod(&k));
  pp_val(o, "dtype", dt);
  b = pf_bpe(dt);
  o->flops = 0;
  o->bytes = 4 * pf_prod(&k) * (b ? b : 2);
  o->category = "InferenceAttention_fwd";
  o->maf = 'v';
  o->prec = pf_prec(dt);
  return 0;
}

const struct pf_op pf_ew_ops[] = {
  { "aten::copy", unary, 0 },
  { "aten::copy_", unary, 0 },
  { "aten::clamp_min", unary, 0 },
  { "aten::clamp_min_", unary, 0 },
  { "aten::clamp_max", unary, 0 },
  { "aten::clamp_max_", unary, 0 },
  { "aten::sigmoid", unary, 0 },
  { "aten::rsqrt", unary, 0 },
  { "aten::silu", unary, 0 },
  { "aten::neg", unary, 0 },
  { "aten::pow", unary, 0 },
  { "aten::replication_pad1d", pad_upsample, 0 },
  { "aten::replication_pad2d", pad_upsample, 0 },
  { "aten::replication_pad3d", pad_upsample, 0 },
  { "aten::upsample_nearest1d", pad_upsample, 0 },
  { "aten::upsample_nearest2d", pad_upsample, 0 },
  { "aten::upsample_nearest3d", pad_upsample, 0 },
  { "aten::div", binary, 0 },
  { "aten::div_", binary, 0 },
  { "aten::mul", binary, 0 },
  { "aten::mul_", binary, 0 },
  { "aten::add", binary, 0 },
  { "aten::add_", binary, 0 },
  { "aten::sigmoid_backward", binary, 0 },
  { "aten::threshold_backward", binary, 0 },
  { "LigerSiLUMulFunction", binary, 0 },
  { "aten::sum", reduce, 0 },
  { "aten::mean", reduce, 0 },
  { "aten::max", reduce, 0 },
  { "aten::min", reduce, 0 },
  { "aten::norm", reduce, 0 },
  { "aten::linalg_norm", reduce, 0 },
  { "aten::std", reduce, 0 },
  { "aten::var", reduce, 0 },
  { "aten::logsumexp", reduce, 0 },
  { "aten::cumsum", reduce, 0 },
  { "aten::cumprod", reduce, 0 },
  { "aten::amin", reduce, 0 },
  { "aten::amax", reduce, 0 },
  { "aiter::silu_and_mul", gated, 0 },
  { "_C::silu_and_mul", gated, 0 },
  { "sgl_kernel::silu_and_mul", gated, 0 },
  { "aiter::gelu_and_mul", gated, 0 },
  { "aiter::gelu_tanh_and_mul", gated, 0 },
  { "FusedRoPEFunc", fused_rope, 0 },
  { "sgl_kernel::rotary_embedding", sgl_rope, 0 },
  { "aiter::rope_cached_positions_2c_fwd_impl", aiter_rope, 0 },
  { "sglang::store_cache", store_cache, 0 },
  { NULL, NULL, 0 }
};
