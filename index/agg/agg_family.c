/*
 * Per kernel name, before the time pass: its category index, its demangled
 * form and its family (family.c); the families' figures (their names'
 * rows merged: counts, totals, histograms), and during the time pass each
 * family's kernel time inside each step kind's labels (the rule of
 * agg_steps.c: a kernel starting inside a label of the kind). Memory: one
 * entry per distinct name, family and (family, kind).
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg_int.h"

struct agg_famstep { /* kernels of a family inside a step kind's labels */
  uint32_t family, kind;
  struct agg_stat s;
};

static int family_add(struct idx_agg *a, uint32_t name, const char *fam)
{
  const struct agg_kernel *k = &a->kernels[name];
  struct agg_families *fs = a->families;
  struct agg_family *f;
  uint32_t id;
  int rc = agg_map_intern(&a->fam_map, fam, strlen(fam), &id);

  if (rc < 0 || agg_grow(&fs->v, &fs->cap, id, sizeof(*fs->v)) != 0)
    return TR_ENOMEM;
  f = &fs->v[id];
  if (f->kernels == 0 || k->s.min_ns < f->s.min_ns)
    f->s.min_ns = k->s.min_ns;
  if (f->kernels == 0 || k->s.max_ns > f->s.max_ns)
    f->s.max_ns = k->s.max_ns;
  /* Names come in id order: the first of the largest total wins. */
  if (f->kernels == 0 || k->s.total_ns > a->kernels[f->top].s.total_ns)
    f->top = name;
  f->kernels++;
  f->s.count += k->s.count;
  f->s.total_ns = tr_sat_add(f->s.total_ns, k->s.total_ns);
  a->name_family[name] = id;
  return agg_hist_merge(&f->hist, &k->hist);
}

/* Category, demangled form and family of name id (NUL-terminated copy in
 * buf). */
static int name_facts(struct idx_agg *a, uint32_t id, const char *name)
{
  char *fam;
  int rc;

  a->name_cat[id] = (uint8_t)agg_category_index(idx_category(a->rules, name));
  a->name_family[id] = UINT32_MAX;
  if (!a->kernels[id].is_kernel)
    return 0; /* a launch's args.kernel only */
  /* Both may be longer than the name (a demangled form two to three
   * times), so both are bounded as names are (agg_name.c). */
  a->demangled[id] =
      agg_name_bound(idx_demangle(name), AGG_DEMANGLED_MAX, &a->texts_cut);
  fam = agg_name_bound(agg_family_of(a->rules, name, a->demangled[id]),
                       AGG_NAME_MAX, &a->texts_cut);
  if (fam == NULL)
    return TR_ENOMEM;
  rc = family_add(a, id, fam);
  free(fam);
  return rc;
}

/* Categories, demangled names and families of the kernel names, before
 * the walk. */
int agg_families_seal(struct idx_agg *a, struct tr_err *err)
{
  uint32_t n = a->names.n;
  size_t cap = 256;
  char *buf = malloc(cap);
  int rc = 0;

  a->name_cat = calloc(n + 1, sizeof(*a->name_cat));
  a->name_family = calloc(n + 1, sizeof(*a->name_family));
  a->demangled = calloc(n + 1, sizeof(*a->demangled));
  if (buf == NULL || a->name_cat == NULL || a->name_family == NULL ||
      a->demangled == NULL)
    rc = TR_ENOMEM;
  for (uint32_t id = 0; rc == 0 && id < n; id++) {
    const struct agg_key *k = &a->names.keys[id];

    if (k->n + 1 > cap) {
      char *big = realloc(buf, k->n + 1);

      if (big == NULL) {
        rc = TR_ENOMEM;
        break;
      }
      buf = big;
      cap = k->n + 1;
    }
    memcpy(buf, k->p, k->n);
    buf[k->n] = '\0';
    rc = name_facts(a, id, buf);
  }
  free(buf);
  if (rc != 0)
    return tr_err_set(err, rc, "", "%s: out of memory", a->path);
  return 0;
}

/* A kernel of family f inside step kind k's labels. */
static int famstep_add(struct agg_families *fs, uint32_t f, uint32_t k,
                       int64_t dur)
{
  uint32_t key[2] = { f, k }, id;
  struct agg_famstep *x;
  int rc = agg_map_intern(&fs->famstep_map, key, sizeof(key), &id);

  if (rc < 0 || agg_grow(&fs->famsteps, &fs->famsteps_cap, id,
                         sizeof(*fs->famsteps)) != 0)
    return TR_ENOMEM;
  x = &fs->famsteps[id];
  x->family = f;
  x->kind = k;
  x->s.count++;
  x->s.total_ns = tr_sat_add(x->s.total_ns, dur);
  return 0;
}

/* Each GPU-side kernel's time for its family inside the labels of each
 * kind that cover its start (agg_at.cover_end, the steps pass's); a
 * family's time per step kind is GPU-side only (docs/ANALYSIS.md). */
int agg_families_walk(struct idx_agg *a, struct agg_at *at)
{
  const struct agg_rec *r = at->r;
  uint32_t fam;
  int rc;

  if (r->type != AGG_REC_KERNEL || a->step_side != AGG_SIDE_GPU)
    return 0;
  fam = a->name_family[a->shapes[r->id].name];
  for (uint32_t k = 0; fam != UINT32_MAX && k < a->nkinds; k++)
    if (r->start_ns < at->cover_end[k] &&
        (rc = famstep_add(a->families, fam, k, r->dur_ns)) != 0)
      return rc;
  return 0;
}

int agg_families_new(struct idx_agg *a)
{
  return (a->families = calloc(1, sizeof(*a->families))) == NULL ? TR_ENOMEM
                                                                 : 0;
}

/* Frees the pass's state and the vocabulary it made. */
void agg_families_free(struct idx_agg *a)
{
  struct agg_families *fs = a->families;

  for (uint32_t i = 0; a->demangled != NULL && i < a->names.n; i++)
    free(a->demangled[i]);
  for (uint32_t i = 0; fs != NULL && i < a->fam_map.n; i++)
    agg_hist_free(&fs->v[i].hist);
  free(a->demangled);
  free(a->name_cat);
  free(a->name_family);
  agg_map_free(&a->fam_map);
  if (fs == NULL)
    return;
  free(fs->v);
  free(fs->famsteps);
  agg_map_free(&fs->famstep_map);
  free(fs);
  a->families = NULL;
}

/* ---- the summary's tables ---- */

static struct agg_txt key_txt(const struct agg_key *k)
{
  struct agg_txt t = { k->p, k->n };

  return t;
}

/* Total descending, then family name. */
static int family_cmp(const void *x, const void *y, void *ud)
{
  const struct idx_agg *a = ud;
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
  int64_t ti = a->families->v[i].s.total_ns;
  int64_t tj = a->families->v[j].s.total_ns;

  if (ti != tj)
    return ti > tj ? -1 : 1;
  return agg_key_cmp(&a->fam_map.keys[i], &a->fam_map.keys[j]);
}

void agg_set_demangled(const struct idx_agg *a, uint32_t id, json_t *row)
{
  if (a->demangled != NULL && id < a->names.n && a->demangled[id] != NULL)
    json_object_set_new(row, "demangled", json_string(a->demangled[id]));
}

void agg_family_rows(struct idx_agg *a, struct agg_out *o)
{
  uint32_t n = a->fam_map.n, *order = agg_order(n, family_cmp, a);

  AGG_SUM_FILLS(TR_SUM_FAMILY, 19);
  static const struct agg_cols none;

  for (uint32_t i = 0; order != NULL && i < n; i++) {
    const struct agg_family *f = &a->families->v[order[i]];
    struct agg_sum_family r = {
      .family = key_txt(&a->fam_map.keys[order[i]]),
      .category = agg_txt(agg_category_name(a->name_cat[f->top])),
      .kernels = f->kernels,
      .count = (int64_t)f->s.count,
      .total_ns = f->s.total_ns,
      .avg_ns = agg_avg(&f->s),
      .min_ns = f->s.min_ns,
      .max_ns = f->s.max_ns,
      .p50_ns = agg_pct(&f->hist, &f->s, 500),
      .p99_ns = agg_pct(&f->hist, &f->s, 990),
      .share = agg_share(f->s.total_ns, a->kernel_ns),
    };

    AGG_COLS_SET(r, a->fcols != NULL ? a->fcols[order[i]] : none);
    agg_out_family(o, &r);
  }
  free(order);
}

/* Step kind name, then total descending, then family name. */
static int famstep_cmp(const void *x, const void *y, void *ud)
{
  const struct idx_agg *a = ud;
  const struct agg_famstep *p = &a->families->famsteps[*(const uint32_t *)x];
  const struct agg_famstep *q = &a->families->famsteps[*(const uint32_t *)y];
  int d = agg_key_cmp(&a->kinds_map.keys[p->kind], &a->kinds_map.keys[q->kind]);

  if (d != 0)
    return d;
  if (p->s.total_ns != q->s.total_ns)
    return p->s.total_ns > q->s.total_ns ? -1 : 1;
  return agg_key_cmp(&a->fam_map.keys[p->family], &a->fam_map.keys[q->family]);
}

void agg_family_step_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_families *fs = a->families;
  uint32_t n = fs->famstep_map.n, *order = agg_order(n, famstep_cmp, a);

  AGG_SUM_FILLS(TR_SUM_FAMILY_STEP, 6);
  for (uint32_t i = 0; order != NULL && i < n; i++) {
    const struct agg_famstep *x = &fs->famsteps[order[i]];
    int64_t steps = (int64_t)a->step[a->step_side][x->kind].s.count;
    struct agg_sum_family_step r = {
      .family = key_txt(&a->fam_map.keys[x->family]),
      .step = key_txt(&a->kinds_map.keys[x->kind]),
      .count = (int64_t)x->s.count,
      .total_ns = x->s.total_ns,
      .steps = steps,
      .per_step_ns = steps ? x->s.total_ns / steps : 0,
    };

    agg_out_family_step(o, &r);
  }
  free(order);
}
