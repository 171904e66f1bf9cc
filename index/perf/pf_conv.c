/*
 * Convolution models (perf_int.h): TraceLens's CONV classes (after
 * torch/utils/flop_counter.py), aten::convolution and
 * aten::convolution_backward, 1-D to 3-D, transposed or not.
 */
#include <string.h>

#include "index/perf/perf_int.h"

#define DIMS     PF_DIMS
#define TYPES    PF_TYPES
#define STRIDES  PF_STRIDES
#define CONCRETE PF_CONCRETE

struct conv {
  struct pf_shape x, w, out, stride, pad, dil, opad;
  int transposed;
  int64_t groups;
};

/* A stride, padding... list at Concrete Inputs[i] ("[1, 1]"; "" gives
 * dflt in every spatial dimension; one value is broadcast to all). */
static int tuple_arg(const struct pf_args *a, size_t i, int nd, int64_t dflt,
                     struct pf_shape *s)
{
  const struct pv *v = pf_arg(a, CONCRETE, i);

  if (v == NULL)
    return -1;
  if (pv_str_is(v, "")) {
    s->n = 0;
  } else if (pf_int_list(v, s) != 0 || s->n == 0) {
    return -1;
  }
  if (s->n == 0 || s->n == 1) {
    int64_t d = s->n ? s->d[0] : dflt;

    if (nd > PF_MAXDIM)
      return -1;
    for (int k = 0; k < nd; k++)
      s->d[k] = d;
    s->n = nd;
  }
  return 0;
}

/* Output extent i of CONV.get_output_shape(), from a trace's own numbers:
 * false when a step leaves int64_t, so that a forged shape gives no
 * figure rather than undefined behaviour. */
static bool out_extent(const struct conv *c, int i, int64_t *out)
{
  int64_t in = c->x.d[2 + i], k = c->w.d[2 + i], s = c->stride.d[i],
          p = c->pad.d[i], d = c->dil.d[i], a, b;
  double q;

  if (__builtin_mul_overflow(p, 2, &a) || __builtin_sub_overflow(k, 1, &b) ||
      __builtin_mul_overflow(d, b, &b))
    return false;
  if (c->transposed) /* (in - 1) s - 2 p + d (k - 1) + opad + 1 */
    return !(__builtin_sub_overflow(in, 1, out) ||
             __builtin_mul_overflow(*out, s, out) ||
             __builtin_sub_overflow(*out, a, out) ||
             __builtin_add_overflow(*out, b, out) ||
             __builtin_add_overflow(*out, c->opad.d[i], out) ||
             __builtin_add_overflow(*out, 1, out));
  /* int((in + 2 p - d (k - 1) - 1) / s) + 1, int() of a float quotient:
   * toward zero */
  if (s == 0 || __builtin_add_overflow(in, a, &a) ||
      __builtin_sub_overflow(a, b, &a) || __builtin_sub_overflow(a, 1, &a))
    return false;
  q = (double)a / (double)s;
  if (!(q > -9.0e18 && q < 9.0e18)) /* the cast and the + 1 stay defined */
    return false;
  *out = (int64_t)q + 1;
  return true;
}

/* CONV.get_output_shape. */
static int out_shape(struct conv *c)
{
  int nd = c->x.n - 2;

  if (nd < 0 || c->w.n < 2 || c->w.n - 2 < nd || c->stride.n < nd ||
      c->pad.n < nd || c->dil.n < nd || (c->transposed && c->opad.n < nd))
    return -1;
  c->out.n = c->x.n;
  c->out.d[0] = c->x.d[0];
  c->out.d[1] = c->transposed ? c->w.d[1] : c->w.d[0];
  for (int i = 0; i < nd; i++)
    if (!out_extent(c, i, &c->out.d[2 + i]))
      return -1;
  return 0;
}

/* CONV.flops_func: 2 prod(w[1:]) per output (input, transposed) element,
 * + one per output element for the bias. */
static double conv_flops(const struct pf_shape *x, const struct pf_shape *w,
                         const struct pf_shape *out, int bias, int transposed)
{
  struct pf_shape w1 = *w;

  w1.n = w->n - 1;
  memmove(w1.d, w->d + 1, (size_t)w1.n * sizeof(w1.d[0]));
  return (transposed ? pf_prod(x) : pf_prod(out)) * 2 * pf_prod(&w1) +
         (bias ? pf_prod(out) : 0);
}

static double conv_bytes(const struct pf_shape *x, const struct pf_shape *w,
                         const struct pf_shape *out, int bias, int bpe)
{
  return (pf_prod(x) + pf_prod(w) + (bias ? (double)out->d[1] : 0) +
          pf_prod(out)) *
         bpe;
}

/* CONV.t: the first two dimensions swapped. */
static struct pf_shape swap01(const struct pf_shape *s)
{
  struct pf_shape t = *s;

  t.d[0] = s->d[1];
  t.d[1] = s->d[0];
  return t;
}

/* The arguments both ops share, from Input Dims[ix], [ix + 1] and Concrete
 * Inputs[ic...]; the parameters written. */
static int conv_args(const struct pf_args *a, size_t ix, size_t ic,
                     struct conv *c, const struct pv *bias, struct pf_out *o)
{
  static const char *const nd_name[] = { "conv1d", "conv2d", "conv3d" };
  const struct pv *dt[2] = { pf_arg(a, TYPES, ix), pf_arg(a, TYPES, ix + 1) };
  int nd;

  memset(c, 0, sizeof(*c));
  if (pf_shape(pf_arg(a, DIMS, ix), &c->x) != 0 ||
      pf_shape(pf_arg(a, DIMS, ix + 1), &c->w) != 0 || dt[1] == NULL)
    return -1;
  nd = c->x.n - 2;
  if (tuple_arg(a, ic, nd, 1, &c->stride) != 0 ||
      tuple_arg(a, ic + 1, nd, 0, &c->pad) != 0 ||
      tuple_arg(a, ic + 2, nd, 1, &c->dil) != 0 ||
      (c->transposed = pf_eval_bool(pf_arg(a, CONCRETE, ic + 3))) < 0 ||
      tuple_arg(a, ic + 4, nd, 0, &c->opad) != 0 ||
      pf_int(pf_arg(a, CONCRETE, ic + 5), &c->groups) != 0 ||
      !pv_equal(dt[0], dt[1]) || nd < 1 || nd > 3)
    return -1;
  pp_text(o, "convNd", nd_name[nd - 1]);
  pp_shape(o, "input_shape", &c->x);
  pp_shape(o, "filter_shape", &c->w);
  pp_tuple(o, "dtype_input_weight", dt, 2);
  if (a->m[STRIDES] != NULL) {
    if (!pf_arg(a, STRIDES, ix + 1))
      return -1;
    pp_val(o, "input_stride", pf_arg(a, STRIDES, ix));
    pp_val(o, "weight_stride", pf_arg(a, STRIDES, ix + 1));
  } else {
    pp_null(o, "input_stride");
    pp_null(o, "weight_stride");
  }
  pp_val(o, "bias", bias);
  pp_shape(o, "stride", &c->stride);
  pp_shape(o, "padding", &c->pad);
  pp_shape(o, "dilation", &c->dil);
  pp_bool(o, "transposed_conv", c->transposed);
  pp_shape(o, "output_padding", &c->opad);
  pp_int(o, "groups", c->groups);
  o->maf = 'm';
  o->prec = pf_prec(dt[0]);
  return out_shape(c);
}

/* aten::convolution: input, weight at 0, 1; stride, padding, dilation,
 * transposed, output_padding, groups at Concrete Inputs 3-8. Its bias is
 * TraceLens's "three inputs" test, which a nine-argument call never
 * passes. */
static int conv_fwd(const char *name, const struct pf_args *a, struct pf_out *o)
{
  int bias = pv_len(a->m[DIMS]) == 3, bpe;
  struct pv bv = { .t = PV_BOOL, .b = (uint8_t)bias };
  struct conv c;

  (void)name;
  if (conv_args(a, 0, 3, &c, &bv, o) != 0)
    return -1;
  o->flops = conv_flops(&c.x, &c.w, &c.out, bias, c.transposed);
  bpe = pf_bpe(pf_arg(a, TYPES, 0));
  if (bpe)
    o->bytes = conv_bytes(&c.x, &c.w, &c.out, bias, bpe);
  o->category = "CONV_fwd";
  return 0;
}

/* aten::convolution_backward: grad_output, input, weight at 0-2,
 * bias_sizes at 3; the rest at Concrete Inputs 4-9. */
static int conv_bwd(const char *name, const struct pf_args *a, struct pf_out *o)
{
  const struct pv *bs = pf_arg(a, DIMS, 3);
  struct pv bf = { .t = PV_BOOL, .b = 0 }, bt = { .t = PV_BOOL, .b = 1 };
  /* Python's `len(d) > 3 and d[3] and len(d[3]) > 0`: the empty list
   * itself when d[3] is one. */
  const struct pv *bias = bs == NULL ? &bf : pf_truthy(bs) ? &bt : bs;
  int b = pf_truthy(bias), bpe;
  struct pf_shape tx, tw, tout;
  struct conv c;

  (void)name;
  if (conv_args(a, 1, 4, &c, bias, o) != 0)
    return -1;
  tx = swap01(&c.x);
  tw = swap01(&c.w);
  tout = swap01(&c.out);
  o->flops = conv_flops(&c.out, &c.w, &c.x, 0, !c.transposed) +
             (c.transposed ? conv_flops(&tout, &tx, &tw, 0, 0)
                           : conv_flops(&tx, &tout, &tw, 0, 0)) +
             (b ? pf_prod(&c.out) : 0);
  bpe = pf_bpe(pf_arg(a, TYPES, 1));
  if (bpe)
    o->bytes = conv_bytes(&c.out, &c.w, &c.x, 0, bpe) +
               conv_bytes(&c.out, &c.x, &c.w, 0, bpe) +
               (b ? pf_prod(&c.out) + (double)c.out.d[1] : 0);
  o->category = "CONV_bwd";
  return 0;
}

const struct pf_op pf_conv_ops[] = { { "aten::convolution", conv_fwd, 0 },
                                     { "aten::convolution_backward", conv_bwd,
                                       0 },
                                     { NULL, NULL, 0 } };
