/*
 * The figures of single steps, what the verdicts measure noise from
 * (store/figures.c): for real steps (not dummy_*) of the step side, each
 * step's duration, its label's bs and tok (or ProfilerStep's N), whether
 * the steady state leaves it out as warm-up (agg_steps.c's rule), and the
 * device time of each tracked figure in it.
 *
 * Which steps: per kind every stride-th in start order (ordinal % stride
 * == 0). The strides are powers of two chosen from the kinds' step counts
 * before the time pass (the kind keeping most steps has its stride
 * doubled until at most AGG_SAMPLES_MAX steps are kept), so ranks with the
 * same steps keep the same ones and the store can match them across ranks.
 *
 * Which figures: every category with device time, the AGG_SAMPLE_FAMS
 * largest families with at least 0.5% of the kernel time and the
 * AGG_SAMPLE_NAMES largest kernels with at least 1% (ties: by name).
 *
 * Which device records count for a step: under GPU-side labels, those
 * that start inside the label, [start, end) (agg_steps.c's rule: nested
 * labels each count them); under CPU-side labels (the host's, and
 * ProfilerStep's), those whose host call (same correlation) started inside
 * the label, the latest-started of the open ones: a graph replay's kernels
 * share their launch's correlation, so they count for the step that
 * launched the graph. Calls are kept by correlation in a table of
 * CORR_SLOTS entries indexed by its low bits, a newer call taking a slot
 * over: a kernel that runs CORR_SLOTS launches after its own counts for no
 * step (the table is the bound; no trace we know comes near it).
 *
 * Memory: AGG_SAMPLES_MAX x (a sample and its values), at most 2048 x
 * (56 + 49 x 8) bytes, and for CPU-side steps the correlation table (1
 * MB), whatever the trace's size.
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg_int.h"

#define CORR_SLOTS    (1u << 16)
#define FAM_PER_MILLE 5 /* a family tracked: at least 0.5% of kernel ns */
#define KERNEL_PER_C  1 /* a kernel tracked: at least 1% */

#define AGG_SAMPLES_MAX  2048 /* steps kept per rank, every kind together */
#define AGG_SAMPLE_FAMS  24   /* families tracked, the largest */
#define AGG_SAMPLE_NAMES 12   /* kernels tracked, the largest */
#define AGG_SAMPLE_FIGS  (AGG_NCATEGORIES + AGG_SAMPLE_FAMS + AGG_SAMPLE_NAMES)

static const char *const fig_names[] = { "category", "family", "kernel" };

enum agg_fig_type { AGG_FIG_CATEGORY, AGG_FIG_FAMILY, AGG_FIG_KERNEL };

struct agg_sample { /* one step kept; -1: not in its label */
  uint32_t kind, warmup;
  int64_t ordinal; /* its place among its kind's steps, in start order */
  int64_t start_ns, dur_ns, bs, tok, step;
};

struct agg_samples_walk;

/* The pass's state: the steps kept and the figures tracked. */
struct agg_samples {
  uint32_t nfig;
  uint8_t fig_type[AGG_SAMPLE_FIGS]; /* enum agg_fig_type */
  uint32_t fig_id[AGG_SAMPLE_FIGS];  /* category index, family, name id */
  /* Per kind: every stride-th step is kept (ordinal % stride == 0), in
   * slots base .. base + count / stride; stride 0: the kind is not kept
   * (a dummy_* kind, or no steps). */
  uint32_t stride[AGG_MAX_STEP_KINDS], base[AGG_MAX_STEP_KINDS];
  uint32_t nslots;
  struct agg_sample *v; /* [nslots]; kind UINT32_MAX: the step never came */
  int64_t *vals;        /* [nslots][nfig] */
  struct agg_samples_walk *walk; /* NULL: none, or nothing kept */
};

static int is_real_kind(const struct idx_agg *a, uint32_t k)
{
  const struct agg_key *key = &a->kinds_map.keys[k];

  return !(key->n >= 6 && memcmp(key->p, "dummy_", 6) == 0);
}

/* The strides and slots of the kinds kept (see the top). */
static uint32_t choose_strides(struct idx_agg *a)
{
  struct agg_samples *s = a->samples;
  uint64_t count[AGG_MAX_STEP_KINDS], kept[AGG_MAX_STEP_KINDS], total = 0;
  uint32_t k, n = 0;

  for (k = 0; k < a->nkinds; k++) {
    count[k] = a->step[a->step_side][k].s.count;
    s->stride[k] = count[k] > 0 && is_real_kind(a, k);
    kept[k] = s->stride[k] ? count[k] : 0;
    total += kept[k];
  }
  while (total > AGG_SAMPLES_MAX) {
    uint32_t m = 0;

    for (k = 1; k < a->nkinds; k++)
      if (kept[k] > kept[m])
        m = k;
    s->stride[m] *= 2;
    total -= kept[m];
    kept[m] = (count[m] + s->stride[m] - 1) / s->stride[m];
    total += kept[m];
  }
  for (k = 0; k < a->nkinds; k++) {
    s->base[k] = n;
    n += (uint32_t)kept[k];
  }
  return n;
}

/* Ids 0..n-1 with positive totals, largest first (ties: by name). */
struct by_total {
  const struct idx_agg *a;
  const int64_t *total;
  const struct agg_map *names;
};

static int total_cmp(const void *x, const void *y, void *ud)
{
  const struct by_total *c = ud;
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;

  if (c->total[i] != c->total[j])
    return c->total[i] > c->total[j] ? -1 : 1;
  return agg_key_cmp(&c->names->keys[i], &c->names->keys[j]);
}

static void add_fig(struct agg_samples *s, enum agg_fig_type t, uint32_t id)
{
  s->fig_type[s->nfig] = (uint8_t)t;
  s->fig_id[s->nfig++] = id;
}

/* The n largest of total[0..count) holding at least per/den of all. */
static int add_largest(struct idx_agg *a, enum agg_fig_type t,
                       const int64_t *total, uint32_t count,
                       const struct agg_map *names, uint32_t n, int64_t per,
                       int64_t den)
{
  struct by_total c = { a, total, names };
  uint32_t *order = agg_order(count, total_cmp, &c), i;

  if (order == NULL && count > 0)
    return TR_ENOMEM;
  for (i = 0; i < count && i < n; i++) {
    int64_t v = total[order[i]];

    /* Products of sums near INT64_MAX (saturated) need 128 bits. */
    if (v <= 0 || (__int128)v * den < (__int128)a->kernel_ns * per)
      break;
    add_fig(a->samples, t, order[i]);
  }
  free(order);
  return 0;
}

static int choose_figures(struct idx_agg *a)
{
  int64_t cats[AGG_NCATEGORIES] = { 0 }, *tot;
  uint32_t n = a->names.n, nf = a->fam_map.n, i;
  int rc;

  for (i = 0; i < n; i++)
    if (a->kernels[i].is_kernel)
      cats[a->name_cat[i]] =
          tr_sat_add(cats[a->name_cat[i]], a->kernels[i].s.total_ns);
  for (i = 0; i < AGG_COPY_KINDS; i++) {
    int64_t *c =
        &cats[agg_category_index(i == AGG_COPY_MEMSET ? "memset" : "copy")];

    *c = tr_sat_add(*c, a->device->copies[i].s.total_ns);
  }
  for (i = 0; i < AGG_NCATEGORIES; i++)
    if (cats[i] > 0)
      add_fig(a->samples, AGG_FIG_CATEGORY, i);
  if ((tot = calloc((n > nf ? n : nf) + 1, sizeof(*tot))) == NULL)
    return TR_ENOMEM;
  for (i = 0; i < nf; i++)
    tot[i] = a->families->v[i].s.total_ns;
  rc = add_largest(a, AGG_FIG_FAMILY, tot, nf, &a->fam_map, AGG_SAMPLE_FAMS,
                   FAM_PER_MILLE, 1000);
  for (i = 0; i < n; i++)
    tot[i] = a->kernels[i].is_kernel && i != a->kfold.id
                 ? a->kernels[i].s.total_ns
                 : 0;
  if (rc == 0)
    rc = add_largest(a, AGG_FIG_KERNEL, tot, n, &a->names, AGG_SAMPLE_NAMES,
                     KERNEL_PER_C, 100);
  free(tot);
  return rc;
}

/* The steps kept and the figures tracked, chosen from the event pass's
 * totals, before the walk. 0 or TR_ENOMEM. */
static int init_slots(struct idx_agg *a)
{
  struct agg_samples *s = a->samples;
  uint32_t n = choose_strides(a);

  if (n == 0)
    return 0;
  if (choose_figures(a) != 0)
    return TR_ENOMEM;
  s->v = calloc(n, sizeof(*s->v));
  s->vals = calloc((size_t)n * (s->nfig ? s->nfig : 1), sizeof(*s->vals));
  if (s->v == NULL || s->vals == NULL)
    return TR_ENOMEM;
  s->nslots = n;
  for (uint32_t i = 0; i < n; i++)
    s->v[i].kind = UINT32_MAX;
  return 0;
}

/* ---- the time pass ---- */

struct open_label {
  int64_t end;
  int32_t slot; /* -1: a real step not kept */
};

struct corr_slot {
  int64_t corr; /* -1: empty */
  int32_t slot;
};

struct agg_samples_walk {
  struct idx_agg *a;
  uint32_t label_type;
  uint64_t seen[AGG_MAX_STEP_KINDS]; /* steps of each kind so far */
  int32_t cat_fig[AGG_NCATEGORIES];  /* figure of each category, or -1 */
  int32_t *fam_fig, *name_fig;       /* by family id, name id; -1 */
  int copy_cat, memset_cat;
  struct open_label *open; /* in start order */
  size_t nopen, cap;
  struct corr_slot *corr; /* CPU-side steps only */
};

static int walk_maps(struct agg_samples_walk *w)
{
  const struct agg_samples *s = w->a->samples;
  uint32_t nf = w->a->fam_map.n, nn = w->a->names.n;

  w->fam_fig = malloc((nf + 1) * sizeof(*w->fam_fig));
  w->name_fig = malloc((nn + 1) * sizeof(*w->name_fig));
  if (w->fam_fig == NULL || w->name_fig == NULL)
    return TR_ENOMEM;
  memset(w->cat_fig, 0xff, sizeof(w->cat_fig));
  memset(w->fam_fig, 0xff, (nf + 1) * sizeof(*w->fam_fig));
  memset(w->name_fig, 0xff, (nn + 1) * sizeof(*w->name_fig));
  for (uint32_t i = 0; i < s->nfig; i++) {
    int32_t *to = s->fig_type[i] == AGG_FIG_CATEGORY ? w->cat_fig
                  : s->fig_type[i] == AGG_FIG_FAMILY ? w->fam_fig
                                                     : w->name_fig;

    to[s->fig_id[i]] = (int32_t)i;
  }
  return 0;
}

static void walk_free(struct agg_samples_walk *w);

static int walk_new(struct idx_agg *a, struct agg_samples_walk **out)
{
  struct agg_samples_walk *w;

  *out = NULL;
  if (a->samples->nslots == 0)
    return 0; /* nothing kept: the walk is a no-op */
  if ((w = calloc(1, sizeof(*w))) == NULL)
    return TR_ENOMEM;
  w->a = a;
  w->label_type =
      a->step_side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU;
  w->copy_cat = agg_category_index("copy");
  w->memset_cat = agg_category_index("memset");
  if (a->step_side == AGG_SIDE_CPU) {
    w->corr = malloc(CORR_SLOTS * sizeof(*w->corr));
    if (w->corr != NULL)
      for (uint32_t i = 0; i < CORR_SLOTS; i++)
        w->corr[i].corr = -1;
  }
  if ((a->step_side == AGG_SIDE_CPU && w->corr == NULL) || walk_maps(w) != 0) {
    walk_free(w);
    return TR_ENOMEM;
  }
  *out = w;
  return 0;
}

/* A kept step's label fields, from its text (agg_labels). */
static void label_fields(struct idx_agg *a, uint32_t kind, int64_t seq,
                         struct agg_sample *smp)
{
  char text[AGG_LABEL_TEXT + 1];
  size_t klen = a->kinds_map.keys[kind].n;
  struct idx_str t;

  smp->bs = smp->tok = smp->step = -1;
  if (agg_labels_get(&a->labels, seq, text, sizeof(text)) != 0)
    return; /* the spill failed: the step keeps its figures */
  t.p = text;
  t.n = strlen(text);
  if (agg_profiler_step_no(t.p, t.n, &smp->step))
    return;
  if (t.n > klen) {
    smp->bs = agg_label_field(t, klen + 1, "bs=", NULL);
    smp->tok = agg_label_field(t, klen + 1, "tok=", NULL);
  }
}

static int on_label(struct agg_samples_walk *w, const struct agg_rec *r,
                    int warmup)
{
  struct agg_samples *s = w->a->samples;
  uint64_t ord = w->seen[r->id]++;
  struct open_label o = { r->start_ns + r->dur_ns, -1 };

  if (s->stride[r->id] == 0)
    return 0;
  if (ord % s->stride[r->id] == 0) {
    struct agg_sample *smp;

    o.slot = (int32_t)(s->base[r->id] + ord / s->stride[r->id]);
    smp = &s->v[o.slot];
    smp->kind = r->id;
    smp->warmup = warmup != 0;
    smp->ordinal = (int64_t)ord;
    smp->start_ns = r->start_ns - w->a->t0_ns;
    smp->dur_ns = r->dur_ns;
    label_fields(w->a, r->id, r->aux, smp);
  }
  if (agg_grow(&w->open, &w->cap, w->nopen, sizeof(*w->open)) != 0)
    return TR_ENOMEM;
  w->open[w->nopen++] = o;
  return 0;
}

/* The figures of a device record: up to three (category, family, kernel). */
static int figs_of(const struct agg_samples_walk *w, const struct agg_rec *r,
                   int32_t figs[3])
{
  int n = 0, cat = r->type == AGG_REC_COPY     ? w->copy_cat
                   : r->type == AGG_REC_MEMSET ? w->memset_cat
                                               : -1;
  uint32_t name;

  if (cat < 0) {
    name = w->a->shapes[r->id].name;
    cat = w->a->name_cat[name];
    if (w->a->name_family[name] != UINT32_MAX &&
        w->fam_fig[w->a->name_family[name]] >= 0)
      figs[n++] = w->fam_fig[w->a->name_family[name]];
    if (w->name_fig[name] >= 0)
      figs[n++] = w->name_fig[name];
  }
  if (w->cat_fig[cat] >= 0)
    figs[n++] = w->cat_fig[cat];
  return n;
}

static void add_to(struct agg_samples_walk *w, int32_t slot,
                   const int32_t *figs, int n, int64_t dur)
{
  int64_t *vals = w->a->samples->vals + (size_t)slot * w->a->samples->nfig;

  for (int i = 0; i < n; i++)
    vals[figs[i]] = tr_sat_add(vals[figs[i]], dur);
}

static void on_device(struct agg_samples_walk *w, const struct agg_rec *r)
{
  int32_t figs[3];
  int n = figs_of(w, r, figs);

  if (n == 0)
    return;
  if (w->corr == NULL) {
    for (size_t i = 0; i < w->nopen; i++)
      if (w->open[i].slot >= 0)
        add_to(w, w->open[i].slot, figs, n, r->dur_ns);
  } else if (r->aux >= 0) {
    const struct corr_slot *c = &w->corr[r->aux & (CORR_SLOTS - 1)];

    if (c->corr == r->aux && c->slot >= 0)
      add_to(w, c->slot, figs, n, r->dur_ns);
  }
}

static int walk_rec(struct agg_samples_walk *w, const struct agg_rec *r,
                    int warmup)
{
  size_t i, n = 0;

  if (w == NULL)
    return 0;
  for (i = 0; i < w->nopen; i++) /* labels ended: [start, end) */
    if (w->open[i].end > r->start_ns)
      w->open[n++] = w->open[i];
  w->nopen = n;
  if (r->type == w->label_type && r->id < w->a->nkinds)
    return on_label(w, r, warmup);
  if (r->type == AGG_REC_CALL && w->corr != NULL && r->aux >= 0) {
    struct corr_slot c = { r->aux, w->nopen ? w->open[w->nopen - 1].slot : -1 };

    w->corr[r->aux & (CORR_SLOTS - 1)] = c;
  } else if (r->type == AGG_REC_KERNEL || r->type == AGG_REC_COPY ||
             r->type == AGG_REC_MEMSET) {
    on_device(w, r);
  }
  return 0;
}

static void walk_free(struct agg_samples_walk *w)
{
  if (w == NULL)
    return;
  free(w->fam_fig);
  free(w->name_fig);
  free(w->open);
  free(w->corr);
  free(w);
}

/* ---- the pass's hooks ---- */

int agg_samples_new(struct idx_agg *a)
{
  return (a->samples = calloc(1, sizeof(*a->samples))) == NULL ? TR_ENOMEM : 0;
}

void agg_samples_free(struct idx_agg *a)
{
  if (a->samples == NULL)
    return;
  walk_free(a->samples->walk);
  free(a->samples->v);
  free(a->samples->vals);
  free(a->samples);
  a->samples = NULL;
}

int agg_samples_seal(struct idx_agg *a, struct tr_err *err)
{
  if (init_slots(a) != 0)
    return tr_err_set(err, TR_ENOMEM, "", "%s: out of memory", a->path);
  return walk_new(a, &a->samples->walk);
}

/* warmup: a label of a warm-up step (agg_at.warmup, the steps pass's). */
int agg_samples_walk(struct idx_agg *a, struct agg_at *at)
{
  return walk_rec(a->samples->walk, at->r, at->warmup);
}

int agg_samples_end(struct idx_agg *a, struct tr_err *err)
{
  (void)err;
  walk_free(a->samples->walk);
  a->samples->walk = NULL;
  return 0;
}

/* ---- the summary's tables ---- */

static struct agg_txt fig_name(const struct idx_agg *a, uint32_t i)
{
  const struct agg_samples *s = a->samples;
  const struct agg_key *k;

  if (s->fig_type[i] == AGG_FIG_CATEGORY)
    return agg_txt(agg_category_name((int)s->fig_id[i]));
  k = s->fig_type[i] == AGG_FIG_FAMILY ? &a->fam_map.keys[s->fig_id[i]]
                                       : &a->names.keys[s->fig_id[i]];
  return (struct agg_txt){ k->p, k->n };
}

void agg_sample_figure_rows(struct idx_agg *a, struct agg_out *o)
{
  AGG_SUM_FILLS(TR_SUM_SAMPLE_FIGURE, 3);
  for (uint32_t i = 0; a->samples->nslots > 0 && i < a->samples->nfig; i++) {
    struct agg_sum_sample_figure r = {
      .index = i,
      .figure = agg_txt(fig_names[a->samples->fig_type[i]]),
      .name = fig_name(a, i),
    };

    agg_out_sample_figure(o, &r);
  }
}

static struct agg_opt opt_of(int64_t v)
{
  return (struct agg_opt){ v >= 0, v };
}

static int kind_name_cmp(const void *x, const void *y, void *ud)
{
  const struct agg_map *m = ud;

  return agg_key_cmp(&m->keys[*(const uint32_t *)x],
                     &m->keys[*(const uint32_t *)y]);
}

/* Rows by kind name, then ordinal (a kind's slots are in ordinal order). */
void agg_step_sample_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_samples *s = a->samples;
  uint32_t *kinds = agg_order(a->nkinds, kind_name_cmp, &a->kinds_map);

  AGG_SUM_FILLS(TR_SUM_STEP_SAMPLE, 9);
  for (uint32_t i = 0; kinds != NULL && s->nslots > 0 && i < a->nkinds; i++) {
    uint32_t k = kinds[i];
    uint32_t end = k + 1 < a->nkinds ? s->base[k + 1] : s->nslots;

    for (uint32_t j = s->base[k]; s->stride[k] && j < end; j++) {
      const struct agg_sample *smp = &s->v[j];
      const struct agg_key *key = &a->kinds_map.keys[k];
      json_t *vals = json_array();
      struct agg_sum_step_sample r;

      if (smp->kind != k) {
        json_decref(vals);
        continue;
      }
      for (uint32_t f = 0; f < s->nfig; f++)
        json_array_append_new(
            vals, json_integer((json_int_t)s->vals[(size_t)j * s->nfig + f]));
      r = (struct agg_sum_step_sample){
        .kind = { key->p, key->n },
        .ordinal = smp->ordinal,
        .step = opt_of(smp->step),
        .bs = opt_of(smp->bs),
        .tok = opt_of(smp->tok),
        .start_ns = smp->start_ns,
        .dur_ns = smp->dur_ns,
        .warmup = smp->warmup,
        .values = vals,
      };
      agg_out_step_sample(o, &r);
    }
  }
  free(kinds);
}
