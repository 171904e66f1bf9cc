/*
 * Attention models (perf_int.h): TraceLens's SDPA classes (perf_model.py:
 * SDPA, flash attention forward and backward, varlen, the aten SDPA
 * kernels, aiter's MHA ops) and the inference attention of its extensions
 * (attention_perf_model_extensions.py), whose sequence lengths come from
 * the step's iteration annotation.
 *
 * Forward FLOPs: 2 N_Q N_KV (d_qk + d_v) per batch and head, halved when
 * causal; bytes: Q, K, V read and O written once, at 2 bytes an element
 * (TraceLens's default, whatever the dtype).
 */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "index/perf/perf_int.h"

#define DIMS     PF_DIMS
#define TYPES    PF_TYPES
#define STRIDES  PF_STRIDES
#define CONCRETE PF_CONCRETE

struct sdpa {
  int64_t B, NQ, HQ, NKV, HKV, dqk, dv;
};

/* extract_sdpa_cfg: q, k, v at iq.. with their dimensions in order (b,
 * h, n, d) at idx (idx[0] < 0: varlen, no batch, B 1); -1 when they
 * disagree as TraceLens refuses. */
static int cfg(const struct pf_args *a, size_t iq, const int idx[4],
               struct sdpa *s)
{
  struct pf_shape sh[3];
  int64_t v[3][4];

  for (int t = 0; t < 3; t++) {
    if (pf_shape(pf_arg(a, DIMS, iq + (size_t)t), &sh[t]) != 0)
      return -1;
    for (int j = 0; j < 4; j++) {
      if (idx[j] < 0) {
        v[t][j] = 1;
        continue;
      }
      if (idx[j] >= sh[t].n)
        return -1;
      v[t][j] = sh[t].d[idx[j]];
    }
  }
  if ((idx[0] >= 0 && (v[0][0] != v[1][0] || v[0][0] != v[2][0])) ||
      v[1][1] != v[2][1] || v[1][2] != v[2][2] || v[0][3] != v[1][3])
    return -1;
  s->B = v[0][0];
  s->HQ = v[0][1];
  s->NQ = v[0][2];
  s->HKV = v[1][1];
  s->NKV = v[1][2];
  s->dqk = v[0][3];
  s->dv = v[2][3];
  return 0;
}

static const int BNHD[4] = { 0, 2, 1, 3 }; /* (B, N, H, d) tensors */
static const int BHND[4] = { 0, 1, 2, 3 }; /* (B, H, N, d) */
static const int NHD[4] = { -1, 1, 0, 2 }; /* varlen (T, H, d) */

/* SDPA.flops_func; -1 when causal with N_Q != N_KV (TraceLens raises). */
static int flops_fwd(const struct sdpa *s, double nq, double nkv, int causal,
                     double *out)
{
  double f = (double)s->B * s->HQ * 2 * nq * nkv * (double)s->dqk +
             (double)s->B * s->HQ * 2 * nq * (double)s->dv * nkv;

  if (causal && nq != nkv)
    return -1;
  *out = causal ? f / 2 : f;
  return 0;
}

/* SDPA.flops_bwd_func: recompute, dV, dP, dQ, dK, and the GQA sums. */
static int flops_bwd(const struct sdpa *s, double nq, double nkv, int causal,
                     int flash, double *out)
{
  double b = (double)s->B, h = (double)s->HQ, f = 0;
  double g;
  int64_t q;

  if (pf_floor_div(s->HQ, s->HKV, &q) != 0)
    return -1;
  g = (double)q - 1;
  if (flash)
    f += b * h * 2 * nq * nkv * (double)s->dqk;
  f += b * h * 2 * nkv * nq * (double)s->dv + b * nkv * (double)s->dv * g;
  f += b * h * 2 * nq * nkv * (double)s->dv;
  f += b * h * 2 * nq * nkv * (double)s->dqk;
  f += b * h * 2 * nkv * nq * (double)s->dqk + b * nkv * (double)s->dqk * g;
  if (causal && nq != nkv)
    return -1;
  *out = causal ? f / 2 : f;
  return 0;
}

static double bytes_fwd(const struct sdpa *s, double bpe)
{
  double b = (double)s->B;

  return (b * s->NQ * s->HQ * s->dqk + b * s->NKV * s->HKV * s->dqk +
          b * s->NKV * s->HKV * s->dv + b * s->NQ * s->HQ * s->dv) *
         bpe;
}

static double bytes_bwd(const struct sdpa *s, double bpe)
{
  double b = (double)s->B;

  return (2 * b * s->NQ * s->HQ * s->dqk + 2 * b * s->NKV * s->HKV * s->dqk +
          2 * b * s->NKV * s->HKV * s->dv + b * s->NQ * s->HQ * s->dv) *
         bpe;
}

static void sdpa_params(struct pf_out *o, const struct sdpa *s)
{
  pp_int(o, "B", s->B);
  pp_int(o, "N_Q", s->NQ);
  pp_int(o, "H_Q", s->HQ);
  pp_int(o, "N_KV", s->NKV);
  pp_int(o, "H_KV", s->HKV);
  pp_int(o, "d_h_qk", s->dqk);
  pp_int(o, "d_h_v", s->dv);
}

/* The three strides of q, k, v (Input Strides must be there). */
static int qkv_strides(struct pf_out *o, const struct pf_args *a, size_t iq)
{
  static const char *const key[3] = { "q_stride", "k_stride", "v_stride" };

  for (size_t t = 0; t < 3; t++) {
    const struct pv *v = pf_arg(a, STRIDES, iq + t);

    if (v == NULL || v->t != PV_ARR)
      return -1;
    pp_val(o, key[t], v);
  }
  return 0;
}

static void types2(struct pf_out *o, const struct pf_args *a, size_t from)
{
  const struct pv *t[2] = { NULL, NULL };
  size_t n = 0;

  for (size_t i = from; i < from + 2 && pf_arg(a, TYPES, i); i++)
    t[n++] = pf_arg(a, TYPES, i);
  pp_tuple(o, "dtype_A_B", t, n);
  o->prec = n > 0 ? pf_prec(t[0]) : NULL;
}

/* The parameters of flash attention's own ops: the shapes, the strides of
 * q, k, v from Input iq, dropout, causal, the first two dtypes. */
static int flash_params(struct pf_out *o, const struct pf_args *a,
                        const struct sdpa *s, size_t iq, double dropout,
                        int causal)
{
  sdpa_params(o, s);
  if (qkv_strides(o, a, iq) != 0)
    return -1;
  pp_num(o, "dropout", dropout);
  pp_bool(o, "causal", causal);
  pp_bool(o, "flash_impl", 1);
  types2(o, a, 0);
  return 0;
}

/* A causal flag as the aten and aiter classes read it: "true" in any case
 * (an absent or "None" one is false); -1 when the argument is missing. */
static int causal_text(const struct pv *v)
{
  size_t n;
  const char *s = pv_str(v, &n);
  char low[8];

  if (s == NULL)
    return -1;
  if (n != 4)
    return 0;
  for (size_t i = 0; i < 4; i++)
    low[i] = (char)tolower((unsigned char)s[i]);
  return memcmp(low, "true", 4) == 0;
}

/* The usual ending of a forward SDPA model. */
static int fwd_done(struct pf_out *o, const struct sdpa *s, int causal)
{
  o->category = "SDPA_fwd";
  o->maf = 'm';
  o->bytes = bytes_fwd(s, 2);
  return flops_fwd(s, (double)s->NQ, (double)s->NKV, causal, &o->flops);
}

static int bwd_done(struct pf_out *o, const struct sdpa *s, int causal,
                    double bpe)
{
  o->category = "SDPA_bwd";
  o->maf = 'm';
  if (bpe <= 0)
    return -1;
  o->bytes = bytes_bwd(s, bpe);
  return flops_bwd(s, (double)s->NQ, (double)s->NKV, causal, 1, &o->flops);
}

/* FlashAttnFunc, flash_attn::_flash_attn_forward: q, k, v (B, N, H, d);
 * dropout at Concrete Inputs 3, causal (eval) at 5. */
static int flash_fwd(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  struct sdpa s;
  double dropout;
  int causal;

  (void)name;
  if (cfg(a, 0, BNHD, &s) != 0 ||
      pf_float(pf_arg(a, CONCRETE, 3), NAN, &dropout) != 0 || isnan(dropout) ||
      (causal = pf_eval_bool(pf_arg(a, CONCRETE, 5))) < 0)
    return -1;
  if (flash_params(o, a, &s, 0, dropout, causal) != 0)
    return -1;
  return fwd_done(o, &s, causal);
}

/* flash_attn::_flash_attn_backward: dout, q, k, v; dropout at 8, causal
 * at 10 (absent: true); bytes at the dtype's size. */
static int flash_bwd(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  const struct pv *d = pf_arg(a, CONCRETE, 8), *c = pf_arg(a, CONCRETE, 10);
  double dropout = 0;
  struct sdpa s;
  int causal = 1;

  (void)name;
  if (cfg(a, 1, BNHD, &s) != 0)
    return -1;
  if (pf_truthy(d) && (pf_float(d, 0, &dropout) != 0))
    return -1;
  if (pf_truthy(c) && (causal = pf_eval_bool(c)) < 0)
    return -1;
  if (flash_params(o, a, &s, 1, dropout, causal) != 0)
    return -1;
  return bwd_done(o, &s, causal, pf_bpe(pf_arg(a, TYPES, 0)));
}

/* The varlen pair: q, k, v (T, H, d), cu_seqlens at ic, ic + 1; max
 * sequence lengths, dropout and causal at Concrete Inputs im... */
struct varlen {
  int64_t nsq, nskv;
  double mq, mkv, dropout;
  int causal;
};

static int varlen_args(const struct pf_args *a, size_t iq, size_t ic, size_t im,
                       struct sdpa *s, struct varlen *v, struct pf_out *o)
{
  struct pf_shape cq, ck;

  if (cfg(a, iq, NHD, s) != 0 || pf_shape(pf_arg(a, DIMS, ic), &cq) != 0 ||
      cq.n < 1 || pf_shape(pf_arg(a, DIMS, ic + 1), &ck) != 0 || ck.n < 1 ||
      pf_float(pf_arg(a, CONCRETE, im), NAN, &v->mq) != 0 ||
      pf_float(pf_arg(a, CONCRETE, im + 1), NAN, &v->mkv) != 0 ||
      pf_float(pf_arg(a, CONCRETE, im + 2), NAN, &v->dropout) != 0 ||
      isnan(v->mq) || isnan(v->mkv) || isnan(v->dropout) ||
      (v->causal = pf_eval_bool(pf_arg(a, CONCRETE, im + 4))) < 0)
    return -1;
  if (__builtin_sub_overflow(cq.d[0], 1, &v->nsq) ||
      __builtin_sub_overflow(ck.d[0], 1, &v->nskv) ||
      flash_params(o, a, s, iq, v->dropout, v->causal) != 0)
    return -1;
  pp_int(o, "num_seqs_q", v->nsq);
  pp_int(o, "num_seqs_kv", v->nskv);
  pp_num(o, "max_seqlen_q", v->mq);
  pp_num(o, "max_seqlen_kv", v->mkv);
  return 0;
}

/* The varlen FLOPs: the longest sequence, and the others taken alike
 * (TraceLens's lower bound; // of floats floors). */
static int varlen_flops(const struct sdpa *s, const struct varlen *v, int bwd,
                        double *out)
{
  double f, g = 0;
  int rc = bwd ? flops_bwd(s, v->mq, v->mkv, v->causal, 1, &f)
               : flops_fwd(s, v->mq, v->mkv, v->causal, &f);

  if (rc != 0)
    return -1;
  if (v->nsq > 1) {
    double nq, nkv;

    if (v->nskv == 1)
      return -1; /* ZeroDivisionError */
    nq = floor(((double)s->NQ - v->mq) / (double)(v->nsq - 1));
    nkv = floor(((double)s->NKV - v->mkv) / (double)(v->nskv - 1));
    rc = bwd ? flops_bwd(s, nq, nkv, v->causal, 1, &g)
             : flops_fwd(s, nq, nkv, v->causal, &g);
    if (rc != 0)
      return -1;
  }
  *out = f + (v->nsq > 1 ? (double)(v->nsq - 1) * g : 0);
  return 0;
}

/* The varlen pair: forward with q at 0, cu_seqlens at 3 and Concrete
 * Inputs from 5; backward with dout first, at 1, 9 and 11. */
static int varlen(const char *name, const struct pf_args *a, struct pf_out *o)
{
  int bwd = strstr(name, "_backward") != NULL;
  struct varlen v;
  struct sdpa s;

  if (varlen_args(a, bwd, bwd ? 9 : 3, bwd ? 11 : 5, &s, &v, o) != 0)
    return -1;
  o->category = bwd ? "SDPA_bwd" : "SDPA_fwd";
  o->maf = 'm';
  o->bytes = bwd ? bytes_bwd(&s, 2) : bytes_fwd(&s, 2);
  return varlen_flops(&s, &v, bwd, &o->flops);
}

/* The aten SDPA kernels, (B, H, N, d): dropout and causal at Concrete
 * Inputs (5, 6) for cudnn and efficient, (3, 4) for flash. */
static int aten_sdpa(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  int flash = strstr(name, "_flash_") != NULL;
  size_t id = flash ? 3 : 5;
  double dropout;
  struct sdpa s;
  int causal;

  if (cfg(a, 0, BHND, &s) != 0 ||
      pf_float(pf_arg(a, CONCRETE, id), 0, &dropout) != 0 ||
      (causal = causal_text(pf_arg(a, CONCRETE, id + 1))) < 0)
    return -1;
  sdpa_params(o, &s);
  pp_num(o, "dropout", dropout);
  pp_bool(o, "causal", causal);
  pp_bool(o, "flash_impl", flash);
  types2(o, a, 0);
  return fwd_done(o, &s, causal);
}

/* aiter's and FlashAttention 3's ops, (B, N, H, d), no dtype in their
 * parameters: q at iq, dropout and causal at Concrete Inputs. */
struct aiter_op {
  const char *name;
  size_t iq, idrop, icausal; /* idrop SIZE_MAX: dropout 0 */
  int bwd;
};

static const struct aiter_op aiter_ops[] = {
  { "aiter::_flash_attn_forward", 0, 3, 5, 0 },
  { "aiter::_flash_attn_backward", 0, 10, 12, 1 },
  { "flash_attn_3::fwd", 0, SIZE_MAX, 24, 0 },
  { "aiter::wrapper_fmha_v3_fwd", 1, 4, 6, 0 },
  { "aiter::wrapper_fmha_v3_bwd", 1, 7, 9, 1 },
  { "aiter::mha_fwd", 0, 3, 5, 0 },
  { "aiter::fmha_v3_fwd", 0, 3, 5, 0 },
  { "aiter::mha_bwd", 1, 6, 8, 1 },
};

static int aiter_attn(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  const struct aiter_op *op = NULL;
  double dropout = 0;
  struct sdpa s;
  int causal;

  for (size_t i = 0; i < sizeof(aiter_ops) / sizeof(aiter_ops[0]); i++)
    if (strcmp(aiter_ops[i].name, name) == 0)
      op = &aiter_ops[i];
  if (op == NULL || cfg(a, op->iq, BNHD, &s) != 0 ||
      (op->idrop != SIZE_MAX &&
       pf_float(pf_arg(a, CONCRETE, op->idrop), 0, &dropout) != 0) ||
      (causal = causal_text(pf_arg(a, CONCRETE, op->icausal))) < 0)
    return -1;
  sdpa_params(o, &s);
  pp_num(o, "dropout", dropout);
  pp_bool(o, "causal", causal);
  pp_bool(o, "flash_impl", 1);
  if (op->bwd)
    return bwd_done(o, &s, causal, 2);
  return fwd_done(o, &s, causal);
}

/* EvoformerAttention: Q (Batch, N_seq, N_res, Head, Dim), the MSA depth
 * folded into the batch; never causal. */
static int evoformer(const char *name, const struct pf_args *a,
                     struct pf_out *o)
{
  const struct pv *dt = pf_arg(a, TYPES, 0);
  struct pf_shape q;
  struct sdpa s;

  (void)name;
  if (pf_shape(pf_arg(a, DIMS, 0), &q) != 0 || q.n != 5 ||
      __builtin_mul_overflow(q.d[0], q.d[1], &s.B))
    return -1;
  s.NQ = s.NKV = q.d[2];
  s.HQ = s.HKV = q.d[3];
  s.dqk = s.dv = q.d[4];
  sdpa_params(o, &s);
  pp_bool(o, "causal", 0);
  pp_bool(o, "flash_impl", 0);
  pp_tuple(o, "dtype_A_B", &dt, 1);
  o->prec = pf_prec(dt);
  return fwd_done(o, &s, 0);
}

/* ---- inference attention (attention_perf_model_extensions.py) ---- */

/* The sq/sk aggregates an iteration annotation carries
 * (annotation_utils.py's chunk_stats): context c_*, generation g_*. */
struct chunk {
  int64_t c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk;
};

static int chunk_of(const struct pf_args *a, struct chunk *c)
{
  int64_t v[8];

  if (a->annot == NULL || pf_chunk_stats(a->annot, a->annot_n, v) != 0)
    return -1;
  c->c_sq = v[0], c->c_sk = v[1], c->c_sqsq = v[2], c->c_sqsk = v[3];
  c->g_sq = v[4], c->g_sk = v[5], c->g_sqsq = v[6], c->g_sqsk = v[7];
  return 0;
}

struct infer {
  struct sdpa s;
  struct chunk c;
  const struct pv *dtq, *dtkv; /* dtkv NULL: not among the parameters */
  int64_t window;              /* < 0: not among the parameters */
};

static void infer_params(struct pf_out *o, const struct infer *x)
{
  static const char *const ck[8] = { "c_sq", "c_sk", "c_sqsq", "c_sqsk",
                                     "g_sq", "g_sk", "g_sqsq", "g_sqsk" };
  const int64_t *cv = &x->c.c_sq;

  pp_int(o, "B", 1);
  pp_int(o, "N_Q", x->s.NQ);
  pp_int(o, "H_Q", x->s.HQ);
  pp_int(o, "H_V", x->s.HKV);
  pp_int(o, "H_K", x->s.HKV);
  pp_int(o, "N_KV", x->s.NKV);
  pp_int(o, "H_KV", x->s.HKV);
  pp_int(o, "d_h_qk", x->s.dqk);
  pp_int(o, "d_h_v", x->s.dv);
  pp_num(o, "dropout", 0);
  pp_bool(o, "causal", 0);
  pp_bool(o, "flash_impl", 1);
  for (int i = 0; i < 8; i++)
    pp_int(o, ck[i], cv[i]);
  pp_val(o, "dtype_Q", x->dtq);
  if (x->dtkv != NULL)
    pp_val(o, "dtype_KV", x->dtkv);
  if (x->window >= 0)
    pp_int(o, "sliding_window", x->window);
}

/* InferenceAttention.flops and bytes: context (causal within the chunk)
 * and generation, the generation's KV capped to a sliding window. */
static int infer_done(struct pf_out *o, const struct infer *x)
{
  const struct chunk *c = &x->c;
  double h = (double)x->s.HQ, hkv = (double)x->s.HKV, dq = (double)x->s.dqk;
  double dv = (double)x->s.dv, gsk = (double)c->g_sk, gsqsk = (double)c->g_sqsk;
  int bq = pf_bpe(x->dtq), bkv;

  infer_params(o, x);
  if (c->c_sq == 0 && c->g_sq == 0)
    return -1;
  if (x->window > 0 && c->g_sq != 0) {
    double cap = (double)c->g_sq * (double)x->window;

    gsqsk = gsqsk < cap ? gsqsk : cap;
    gsk = gsk < cap ? gsk : cap;
  }
  bq = bq ? bq : 2;
  bkv = x->dtkv ? pf_bpe(x->dtkv) : 0;
  bkv = bkv ? bkv : bq;
  o->flops = h * 2 * (double)c->c_sqsk * (dq + dv) -
             h * (double)c->c_sqsq * (dq + dv) + h * 2 * gsqsk * (dq + dv);
  o->bytes = ((double)c->c_sq * (h * dq + h * dv + hkv * dq + hkv * dv) +
              (double)c->g_sq * (h * dq + h * dv + hkv * dq + hkv * dv)) *
                 bq +
             (((double)c->c_sk - (double)c->c_sq) * hkv * (dq + dv) +
              (gsk - (double)c->g_sq) * hkv * (dq + dv)) *
                 bkv;
  o->category = "InferenceAttention_fwd";
  o->maf = 'm';
  o->prec = pf_prec(x->dtq);
  return 0;
}

/* The base layout (vLLM's unified attention, aiter's varlen and batch
 * prefill): q (N_Q, H_Q, d), k (..., N_KV, H_KV, d_v); d_v from v's last
 * dimension for those that say so. */
static int infer_base(const char *name, const struct pf_args *a,
                      struct pf_out *o)
{
  struct pf_shape q, k, v;
  struct infer x;

  memset(&x, 0, sizeof(x));
  x.window = -1;
  if (chunk_of(a, &x.c) != 0 || pf_shape(pf_arg(a, DIMS, 0), &q) != 0 ||
      q.n != 3 || pf_shape(pf_arg(a, DIMS, 1), &k) != 0 || k.n < 3 ||
      (x.dtq = pf_arg(a, TYPES, 0)) == NULL)
    return -1;
  x.s.NQ = q.d[0], x.s.HQ = q.d[1], x.s.dqk = q.d[2];
  x.s.NKV = k.d[k.n - 3], x.s.HKV = k.d[k.n - 2], x.s.dv = k.d[k.n - 1];
  x.dtkv = pf_arg(a, TYPES, 1) ? pf_arg(a, TYPES, 1) : x.dtq;
  if ((strcmp(name, "aiter::fmha_v3_varlen_fwd") == 0 ||
       strcmp(name, "aiter::mha_batch_prefill") == 0) &&
      pf_shape(pf_arg(a, DIMS, 2), &v) == 0 && v.n >= 1)
    x.s.dv = v.d[v.n - 1];
  return infer_done(o, &x);
}

/* SGLang's paged_attention_ragged: q (N_Q, H_Q, d) at 2, the paged K and V
 * caches at 3 and 4. */
static int paged_ragged(const char *name, const struct pf_args *a,
                        struct pf_out *o)
{
  struct pf_shape q, k, v;
  struct infer x;

  (void)name;
  memset(&x, 0, sizeof(x));
  x.window = -1;
  if (chunk_of(a, &x.c) != 0 || pf_shape(pf_arg(a, DIMS, 2), &q) != 0 ||
      q.n != 3 || pf_shape(pf_arg(a, DIMS, 3), &k) != 0 || k.n < 2 ||
      pf_shape(pf_arg(a, DIMS, 4), &v) != 0 || v.n < 1 ||
      (x.dtq = pf_arg(a, TYPES, 2)) == NULL)
    return -1;
  x.s.NQ = q.d[0], x.s.HQ = q.d[1], x.s.dqk = q.d[2];
  x.s.HKV = k.d[k.n - 2];
  x.s.dv = v.d[v.n - 1];
  x.s.NKV = x.c.c_sk + x.c.g_sk;
  return infer_done(o, &x);
}

/* aiter's pa_decode_gluon: decode only (the context aggregates zeroed),
 * an fp8 KV cache at 2, its sliding window at Concrete Inputs 19. */
static int pa_gluon(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct pf_shape q, kc;
  struct infer x;
  int64_t w;

  (void)name;
  memset(&x, 0, sizeof(x));
  if (chunk_of(a, &x.c) != 0 || pf_shape(pf_arg(a, DIMS, 0), &q) != 0 ||
      q.n < 3 || pf_shape(pf_arg(a, DIMS, 2), &kc) != 0 || kc.n < 2 ||
      (x.dtq = pf_arg(a, TYPES, 0)) == NULL)
    return -1;
  x.c.c_sq = x.c.c_sk = x.c.c_sqsq = x.c.c_sqsk = 0;
  x.s.NQ = q.d[0], x.s.HQ = q.d[1], x.s.dqk = x.s.dv = q.d[2];
  x.s.HKV = kc.d[1];
  x.s.NKV = x.c.g_sk;
  x.dtkv = pf_arg(a, TYPES, 2) ? pf_arg(a, TYPES, 2) : x.dtq;
  x.window = pf_int(pf_arg(a, CONCRETE, 19), &w) == 0 ? w : 0;
  return infer_done(o, &x);
}

/* vLLM's gdn_attention_core (Gated Delta Network): a recurrent state per
 * value head, 7 d_v d_k FLOPs a token and head; no KV cache. */
static int gdn(const char *name, const struct pf_args *a, struct pf_out *o)
{
  struct pf_shape m, b, out;
  int64_t tokens, hv, dv, hk, dk;
  struct chunk c;

  (void)name;
  if (chunk_of(a, &c) != 0 || pf_shape(pf_arg(a, DIMS, 0), &m) != 0 ||
      m.n < 2 || pf_shape(pf_arg(a, DIMS, 1), &b) != 0 || b.n < 2 ||
      pf_shape(pf_arg(a, DIMS, 3), &out) != 0 || out.n < 3 ||
      pf_arg(a, TYPES, 0) == NULL)
    return -1;
  hv = b.d[1];
  dv = out.d[2];
  /* (m[1] - hv dv) // 2 // hk, none when a step leaves int64_t */
  if (pf_floor_div(hv, 2, &hk) != 0 || hk == 0 ||
      __builtin_mul_overflow(hv, dv, &dk) ||
      __builtin_sub_overflow(m.d[1], dk, &dk) ||
      pf_floor_div(dk, 2, &dk) != 0 || pf_floor_div(dk, hk, &dk) != 0)
    return -1;
  tokens = c.c_sq + c.g_sq;
  pp_int(o, "B", 1);
  pp_int(o, "N_Q", tokens);
  pp_int(o, "H_Q", hk);
  pp_int(o, "N_KV", 0);
  pp_int(o, "H_KV", hk);
  pp_int(o, "H_V", hv);
  pp_int(o, "H_K", hk);
  pp_int(o, "d_h_qk", dk);
  pp_int(o, "d_h_v", dv);
  pp_int(o, "c_sq", c.c_sq);
  pp_int(o, "c_sk", c.c_sq);
  pp_int(o, "c_sqsq", 0);
  pp_int(o, "c_sqsk", 0);
  pp_int(o, "g_sq", c.g_sq);
  pp_int(o, "g_sk", c.g_sq);
  pp_int(o, "g_sqsq", 0);
  pp_int(o, "g_sqsk", 0);
  pp_val(o, "dtype_Q", pf_arg(a, TYPES, 0));
  if (tokens == 0)
    return -1;
  o->flops = (double)tokens * (double)hv * 7 * (double)dv * (double)dk;
  o->bytes = (double)tokens * (double)hv * (double)(dk + 2 * dv + 2) * 2;
  o->category = "InferenceAttention_fwd";
  o->maf = 'm';
  o->prec = pf_prec(pf_arg(a, TYPES, 0));
  return 0;
}

const struct pf_op pf_attn_ops[] = {
  { "FlashAttnFunc", flash_fwd, 0 },
  { "flash_attn::_flash_attn_forward", flash_fwd, 0 },
  { "flash_attn::_flash_attn_backward", flash_bwd, 0 },
  { "flash_attn::_flash_attn_varlen_forward", varlen, 0 },
  { "flash_attn::_flash_attn_varlen_backward", varlen, 0 },
  { "aten::_scaled_dot_product_cudnn_attention", aten_sdpa, 0 },
  { "aten::_scaled_dot_product_efficient_attention", aten_sdpa, 0 },
  { "aten::_scaled_dot_product_flash_attention", aten_sdpa, 0 },
  { "aiter::_flash_attn_forward", aiter_attn, 0 },
  { "aiter::_flash_attn_backward", aiter_attn, 0 },
  { "flash_attn_3::fwd", aiter_attn, 0 },
  { "aiter::wrapper_fmha_v3_fwd", aiter_attn, 0 },
  { "aiter::wrapper_fmha_v3_bwd", aiter_attn, 0 },
  { "aiter::mha_fwd", aiter_attn, 0 },
  { "aiter::fmha_v3_fwd", aiter_attn, 0 },
  { "aiter::mha_bwd", aiter_attn, 0 },
  { "EvoformerAttention", evoformer, 0 },
  { "vllm::unified_attention_with_output", infer_base, PF_OP_ANNOT },
  { "aiter::mha_varlen_fwd", infer_base, PF_OP_ANNOT },
  { "aiter::fmha_v3_varlen_fwd", infer_base, PF_OP_ANNOT },
  { "aiter::mha_batch_prefill", infer_base, PF_OP_ANNOT },
  { "sglang_profiler::attention_paged_attention_ragged", paged_ragged,
    PF_OP_ANNOT },
  { "aiter::pa_decode_gluon", pa_gluon, PF_OP_ANNOT },
  { "vllm::gdn_attention_core", gdn, PF_OP_ANNOT },
  { "aiter::linear_attention_with_output_base", gdn, PF_OP_ANNOT },
  { NULL, NULL, 0 }
};
