/*
 * The op groups as the rank summary's op_perf rows and scalars (perf.h),
 * put against the rank's roof (common/roof.h): the gpu_roof setting's,
 * else the one the trace's deviceProperties name picks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/perf/perf_int.h"

/* Member m of proto p's arguments as JSON (null when the op has none). */
static json_t *member(const struct pf_proto *p, int m)
{
  const char *s = p->args, *e = p->args + p->args_n, *z = NULL;

  for (int k = 0; k <= m && s < e; k++) {
    z = memchr(s, '\0', (size_t)(e - s));
    if (z == NULL)
      return json_null();
    if (k < m)
      s = z + 1;
  }
  if (z == NULL || z == s)
    return json_null();
  json_t *v = json_loadb(s, (size_t)(z - s), JSON_DECODE_ANY, NULL);

  return v ? v : json_null();
}

static json_t *roof_json(const struct tr_roof *r)
{
  static const char *const names[TR_PRECS] = {
#define XX(e, s) s,
    TR_ROOF_PRECS(XX)
#undef XX
  };
  json_t *m = json_object();

  for (int p = 0; p < TR_PRECS; p++)
    if (r->matrix[p] > 0)
      json_object_set_new(m, names[p], json_real(r->matrix[p]));
  return json_pack("{s:s, s:s?, s:o, s:f, s:f, s:f}", "name", r->name, "source",
                   r->source, "matrix", m, "vec_fp32", r->vec_fp32, "vec_fp64",
                   r->vec_fp64, "tb_s", r->tb_s);
}

static void group_row(const struct pf_lib *lib, const struct pf_group *g,
                      uint32_t id, const struct tr_roof *roof, int have_roof,
                      struct agg_out *o)
{
  const struct pf_proto *p = &lib->proto[g->proto];
  const struct agg_key *nk = &lib->names.keys[g->name];
  const struct agg_key *gk = &lib->groups.keys[id];
  const char *params = memchr(gk->p, '\0', gk->n) + 1;
  struct agg_sum_op_perf r;
  char spec[32];
  double peak;

  AGG_SUM_FILLS(TR_SUM_OP_PERF, 22);
  snprintf(spec, sizeof(spec), "%s_%s", g->maf == 'm' ? "matrix" : "vector",
           g->prec ? g->prec : "");
  r.op = (struct agg_txt){ nk->p, nk->n };
  r.category = agg_txt(g->category);
  r.params = (struct agg_txt){ params, gk->n - (size_t)(params - gk->p) - 2 };
  r.recompute = g->recompute;
  r.input_dims = member(p, PF_DIMS);
  r.input_types = member(p, PF_TYPES);
  r.input_strides = member(p, PF_STRIDES);
  r.concrete_inputs = member(p, PF_CONCRETE);
  r.compute_spec = g->maf && g->prec ? agg_txt(spec) : agg_txt(NULL);
  r.count = (int64_t)g->count;
  r.timed = (int64_t)g->timed;
  r.kernels = (int64_t)g->kernels;
  r.nested = (int64_t)g->nested;
  r.flops = g->flops;
  r.bytes = g->bytes >= 0 ? g->bytes : NAN;
  r.kernel_ns = g->ns;
  r.kernel_min_ns = g->count ? g->min_ns : 0;
  r.kernel_max_ns = g->max_ns;
  r.kernel_p50_ns =
      agg_hist_median(&g->hist, g->count, r.kernel_min_ns, g->max_ns);
  r.inv_s = g->inv_s;
  peak = have_roof ? tr_roof_peak(roof, g->maf, g->prec) : 0;
  r.peak_tflops = peak > 0 ? peak : NAN;
  r.peak_tb_s = have_roof && roof->tb_s > 0 ? roof->tb_s : NAN;
  agg_out_op_perf(o, &r);
}

/* The pass (perf.h): decode above it fills the groups (idx_agg.op_groups). */

int agg_perf_new(struct idx_agg *a)
{
  return (a->perf = calloc(1, sizeof(*a->perf))) == NULL ? TR_ENOMEM : 0;
}

void agg_perf_free(struct idx_agg *a)
{
  free(a->perf);
  a->perf = NULL;
}

void agg_perf_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  const struct pf_lib *lib = a->op_groups;
  struct agg_perf *p = a->perf;
  uint64_t n = 0;

  p->have_roof = tr_roof_pick(a->gpu_roof, a->dev_name, &p->roof);
  r->gpu_roof = lib && p->have_roof ? roof_json(&p->roof) : NULL;
  for (uint32_t g = 0; lib != NULL && g < lib->groups.n; g++)
    n += lib->group[g].count;
  r->op_instances = (int64_t)n;
  r->op_unmodeled = lib ? (int64_t)lib->no_model : 0;
  r->op_instances_lost =
      lib ? (int64_t)(lib->inst_lost + lib->protos_folded + lib->groups_folded)
          : 0;
}

void pf_op_perf_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct pf_lib *lib = a->op_groups;

  for (uint32_t g = 0; lib != NULL && g < lib->groups.n && o->rc == 0; g++)
    if (lib->group[g].count > 0)
      group_row(lib, &lib->group[g], g, &a->perf->roof, a->perf->have_roof, o);
}
