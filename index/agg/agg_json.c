/*
 * The rank summary as JSON: the exact field list and orders of the data
 * contract (docs/API.md, "Rank summary"). Durations and
 * timestamps are integer ns, first/last/start/end relative to t0; avg is
 * floor(total / count); share is total / denominator rounded half up to 6
 * decimals (0 when the denominator is 0).
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"
#include "index/agg/agg_sum.h"
#include "index/cpath/cpath.h"
#include "index/decode/decode.h"
#include "index/read/format.h"
#include "index/host/host.h"

static const char *const copy_kind_names[AGG_COPY_KINDS] = {
  "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other", "memset"
};

/* A row to sort: total descending, then name ascending, then id. */
struct agg_row { /* (agg.h) */
  int64_t total;
  const char *p;
  size_t n;
  uint32_t id;
};

static int row_cmp(const void *x, const void *y)
{
  const struct agg_row *a = x, *b = y;
  size_t n = a->n < b->n ? a->n : b->n;
  int d;

  if (a->total != b->total)
    return a->total > b->total ? -1 : 1;
  d = n ? memcmp(a->p, b->p, n) : 0;
  if (d != 0)
    return d;
  if (a->n != b->n)
    return a->n < b->n ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

int agg_key_cmp(const struct agg_key *x, const struct agg_key *y)
{
  size_t n = x->n < y->n ? x->n : y->n;
  int d = n ? memcmp(x->p, y->p, n) : 0;

  return d ? d : (x->n > y->n) - (x->n < y->n);
}

uint32_t *agg_order(uint32_t n, int (*cmp)(const void *, const void *, void *),
                    const void *ud)
{
  uint32_t *order = malloc((n + 1) * sizeof(*order));

  for (uint32_t i = 0; order != NULL && i < n; i++)
    order[i] = i;
  if (order != NULL)
    qsort_r(order, n, sizeof(*order), cmp, (void *)ud);
  return order;
}

json_t *agg_json_strn(const char *p, size_t n)
{
  json_t *s = json_stringn_nocheck(p ? p : "", p ? n : 0);

  return s ? s : json_string("");
}

json_t *agg_json_xyz(const int64_t v[3], int present)
{
  if (!present)
    return json_null();
  return json_pack("[III]", (json_int_t)v[0], (json_int_t)v[1],
                   (json_int_t)v[2]);
}

double agg_share(int64_t total, int64_t den)
{
  unsigned __int128 q;

  if (den <= 0 || total <= 0)
    return 0.0;
  q = ((unsigned __int128)total * 2000000u + (uint64_t)den) /
      ((unsigned __int128)den * 2u);
  return (double)q / 1e6;
}

static int64_t avg(const struct agg_stat *s)
{
  return s->count ? s->total_ns / (int64_t)s->count : 0;
}

static struct agg_opt opt(int set, int64_t v)
{
  struct agg_opt o = { set, v };

  return o;
}

static const struct agg_key *key_of(const struct agg_map *m, uint32_t id)
{
  return &m->keys[id];
}

/* Sorted row order of the n ids for which keep() holds. Caller frees. */
static struct agg_row *
sorted_rows(size_t n, size_t *nout,
            int (*fill)(void *ud, uint32_t id, struct agg_row *r), void *ud)
{
  struct agg_row *rows = malloc((n ? n : 1) * sizeof(*rows));
  size_t i, k = 0;

  if (rows == NULL)
    return NULL;
  for (i = 0; i < n; i++) {
    rows[k].id = (uint32_t)i;
    if (fill(ud, (uint32_t)i, &rows[k]))
      k++;
  }
  qsort(rows, k, sizeof(*rows), row_cmp);
  *nout = k;
  return rows;
}

static void row_set(struct agg_row *r, int64_t total, const struct agg_key *k)
{
  r->total = total;
  r->p = k->p;
  r->n = k->n;
}

static int fill_kernel(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  row_set(r, a->kernels[id].s.total_ns, key_of(&a->names, id));
  return a->kernels[id].is_kernel;
}

/* Each kernel's category's count and total into a->cats. */
static void kernel_cats(struct idx_agg *a)
{
  for (size_t i = 0; i < a->nkrows; i++) {
    const struct agg_kernel *k = &a->kernels[a->krows[i].id];
    struct agg_stat *c = &a->cats[a->name_cat[a->krows[i].id]];

    c->count += k->s.count;
    c->total_ns += k->s.total_ns;
  }
}

void agg_kernel_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_row *rows = a->krows;
  size_t i;

  AGG_SUM_FILLS(TR_SUM_KERNEL, 21);
  for (i = 0; i < a->nkrows; i++) {
    uint32_t id = rows[i].id, fam = a->name_family[id];
    const struct agg_kernel *k = &a->kernels[id];
    struct agg_sum_kernel r = {
      .name = { rows[i].p, rows[i].n },
      .category = agg_txt(agg_category_name(a->name_cat[id])),
      .count = (int64_t)k->s.count,
      .total_ns = k->s.total_ns,
      .avg_ns = avg(&k->s),
      .min_ns = k->s.min_ns,
      .max_ns = k->s.max_ns,
      .median_ns =
          agg_hist_median(&k->hist, k->s.count, k->s.min_ns, k->s.max_ns),
      .share = agg_share(k->s.total_ns, a->kernel_ns),
      .first_ns = k->first_ns - a->t0_ns,
      .last_ns = k->last_ns - a->t0_ns,
      .family = { a->fam_map.keys[fam].p, a->fam_map.keys[fam].n },
      .demangled = agg_txt(a->demangled[id]),
    };

    CP_COLS_SET(r, agg_cpath_kernel_cols(a, id));
    agg_out_row(o, agg_sum_kernel_json(&r));
  }
}

static int fill_launch(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  row_set(r, a->launches[id].s.total_ns,
          key_of(&a->names, a->shapes[a->launches[id].shape].name));
  return a->launches[id].s.count > 0;
}

void agg_launch_rows(struct idx_agg *a, struct agg_out *o)
{
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_LAUNCH, 10);
  rows = sorted_rows(a->launches_map.n, &n, fill_launch, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_launch *l = &a->launches[rows[i].id];
    const struct agg_shape *s = &a->shapes[l->shape];
    struct agg_sum_launch r = {
      .name = { rows[i].p, rows[i].n },
      .grid = agg_json_xyz(s->grid, s->has & IDX_HAS_GRID),
      .block = agg_json_xyz(s->block, s->has & IDX_HAS_BLOCK),
      .registers_per_thread = opt(l->has & IDX_HAS_REGS, l->regs),
      .shared_bytes = opt(l->has & IDX_HAS_SHMEM, l->shmem),
      .count = (int64_t)l->s.count,
      .total_ns = l->s.total_ns,
      .avg_ns = avg(&l->s),
      .min_ns = l->s.min_ns,
      .max_ns = l->s.max_ns,
    };

    agg_out_row(o, agg_sum_launch_json(&r));
  }
  free(rows);
}

static int fill_runtime(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  row_set(r, a->runtime[id].s.total_ns, key_of(&a->rt_map, id));
  return 1;
}

/* The runtime rows' count and total summed into *sum. */
static void runtime_sum(const struct idx_agg *a, struct agg_stat *sum)
{
  for (uint32_t i = 0; i < a->rt_map.n; i++) {
    sum->count += a->runtime[i].s.count;
    sum->total_ns += a->runtime[i].s.total_ns;
  }
}

void agg_runtime_rows(struct idx_agg *a, struct agg_out *o)
{
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_RUNTIME, 6);
  rows = sorted_rows(a->rt_map.n, &n, fill_runtime, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_named *rt = &a->runtime[rows[i].id];
    struct agg_sum_runtime r = {
      .name = { rows[i].p, rows[i].n },
      .count = (int64_t)rt->s.count,
      .total_ns = rt->s.total_ns,
      .avg_ns = avg(&rt->s),
      .median_ns =
          agg_hist_median(&rt->hist, rt->s.count, rt->s.min_ns, rt->s.max_ns),
      .max_ns = rt->s.max_ns,
    };

    agg_out_row(o, agg_sum_runtime_json(&r));
  }
  free(rows);
}

static int fill_copy(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  r->total = a->copies[id].s.total_ns;
  r->p = copy_kind_names[id];
  r->n = strlen(r->p);
  return a->copies[id].s.count > 0;
}

void agg_memcpy_rows(struct idx_agg *a, struct agg_out *o)
{
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_MEMCPY, 5);
  rows = sorted_rows(AGG_COPY_KINDS, &n, fill_copy, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_copy *c = &a->copies[rows[i].id];
    struct agg_sum_memcpy r = {
      .kind = { rows[i].p, rows[i].n },
      .count = (int64_t)c->s.count,
      .total_ns = c->s.total_ns,
      .bytes = c->bytes,
      .max_bytes = c->max_bytes,
    };

    agg_out_row(o, agg_sum_memcpy_json(&r));
  }
  free(rows);
}

struct cat_ctx {
  const struct agg_stat *cats;
};

static int fill_cat(void *ud, uint32_t id, struct agg_row *r)
{
  const struct cat_ctx *c = ud;

  r->total = c->cats[id].total_ns;
  r->p = agg_category_name((int)id);
  r->n = strlen(r->p);
  return c->cats[id].count > 0;
}

/* device_ns, the categories' denominator: kernels, copies and memsets. */
static int64_t device_ns_of(const struct idx_agg *a)
{
  int64_t ns = a->kernel_ns;
  int i;

  for (i = 0; i < AGG_COPY_KINDS; i++)
    ns += a->copies[i].s.total_ns;
  return ns;
}

void agg_category_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_stat *cats = a->cats;
  struct cat_ctx ctx = { cats };
  int64_t device_ns = device_ns_of(a);
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_CATEGORY, 4);
  rows = sorted_rows(AGG_NCATEGORIES, &n, fill_cat, &ctx);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_stat *c = &cats[rows[i].id];
    struct agg_sum_category r = {
      .category = { rows[i].p, rows[i].n },
      .count = (int64_t)c->count,
      .total_ns = c->total_ns,
      .share = agg_share(c->total_ns, device_ns),
    };

    agg_out_row(o, agg_sum_category_json(&r));
  }
  free(rows);
}

static int fill_step(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  row_set(r, 0, key_of(&a->kinds_map, id)); /* by kind name only */
  return a->steps[a->step_side][id].s.count > 0;
}

/* ProfilerStep steps (agg.c) count only in a trace without run labels:
 * where ATOM labels its steps, the profiler's own step (if any) would wrap
 * them. */
static void drop_profiler_steps(struct idx_agg *a)
{
  uint32_t ps;
  int others = 0;

  if (!agg_map_find(&a->kinds_map, "ProfilerStep", 12, &ps) ||
      ps >= a->nkinds)
    return;
  for (uint32_t k = 0; k < a->nkinds; k++)
    others |= k != ps && (a->steps[AGG_SIDE_CPU][k].s.count > 0 ||
                          a->steps[AGG_SIDE_GPU][k].s.count > 0);
  if (!others)
    return;
  agg_step_free(&a->steps[AGG_SIDE_CPU][ps]);
  memset(&a->steps[AGG_SIDE_CPU][ps], 0, sizeof(a->steps[AGG_SIDE_CPU][ps]));
  a->dropped_kind = ps;
}

/* Steps come from the GPU-side labels when the trace has any, else from
 * the CPU side (docs/ATOM.md): one trace never mixes the two. */
static void choose_step_side(struct idx_agg *a)
{
  a->nkinds =
      a->kinds_map.n < AGG_MAX_STEP_KINDS ? a->kinds_map.n : AGG_MAX_STEP_KINDS;
  drop_profiler_steps(a);
  a->step_side = AGG_SIDE_CPU;
  for (uint32_t k = 0; k < a->nkinds; k++)
    if (a->steps[AGG_SIDE_GPU][k].s.count > 0)
      a->step_side = AGG_SIDE_GPU;
}

void agg_step_rows(struct idx_agg *a, struct agg_out *o)
{
  int gpu = a->step_side == AGG_SIDE_GPU;
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_STEP, 21);
  rows = sorted_rows(a->nkinds, &n, fill_step, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_step *s = &a->steps[a->step_side][rows[i].id];
    struct agg_sum_step r = {
      .kind = { rows[i].p, rows[i].n },
      .count = (int64_t)s->s.count,
      .total_ns = s->s.total_ns,
      .avg_ns = avg(&s->s),
      .tokens = s->tokens,
      .padded = (int64_t)s->padded,
      .kernel_ns = gpu ? s->kernel_ns : 0,
      .source = agg_txt(gpu ? "gpu" : "cpu"),
      .min_ns = s->s.min_ns,
      .p50_ns = agg_pct(&s->hist, &s->s, 500),
      .p90_ns = agg_pct(&s->hist, &s->s, 900),
      .p99_ns = agg_pct(&s->hist, &s->s, 990),
      .max_ns = s->s.max_ns,
      .warmup_steps = (int64_t)s->warmup,
      .steady_count = (int64_t)s->steady.count,
      .steady_total_ns = s->steady.total_ns,
      .steady_min_ns = s->steady.min_ns,
      .steady_p50_ns = agg_pct(&s->steady_hist, &s->steady, 500),
      .steady_p90_ns = agg_pct(&s->steady_hist, &s->steady, 900),
      .steady_p99_ns = agg_pct(&s->steady_hist, &s->steady, 990),
      .steady_max_ns = s->steady.max_ns,
    };

    agg_out_row(o, agg_sum_step_json(&r));
  }
  free(rows);
}

/* The kernel with the largest total (ties: first name), UINT32_MAX when
 * there is none; its launch shapes cut phases. */
static uint32_t heaviest(const struct agg_row *rows, size_t n)
{
  return n > 0 ? rows[0].id : UINT32_MAX;
}

static struct agg_opt rank_value(const struct idx_doc *doc,
                                 const struct agg_file_info *info)
{
  if (info->rank >= 0)
    return opt(1, info->rank);
  return opt(doc->rank >= 0, doc->rank);
}

static struct agg_txt device_value(const struct idx_agg *a,
                                   const struct idx_doc *doc)
{
  if (doc->device[0] != '\0')
    return agg_txt(doc->device);
  if (idx_format_get(doc->format)->meta_device && a->device[0] != '\0')
    return agg_txt(a->device);
  return agg_txt(NULL);
}

static void warn(json_t *w, const char *code, const char *msg)
{
  json_array_append_new(w,
                        json_pack("{s:s,s:s}", "code", code, "message", msg));
}

/* Names cut and escaped (agg_name.c). */
static void name_warnings(const struct idx_agg *a, json_t *w)
{
  char msg[384];

  if (a->kfold.cut + a->rfold.cut + a->texts_cut > 0) {
    snprintf(msg, sizeof(msg),
             "%llu kernel names, %llu host API names and %llu demangled "
             "names or families were longer than %u bytes (demangled "
             "names %u): each keeps its first bytes and ends in \"...#\" "
             "and a hash of the whole, so that distinct names stay distinct",
             (unsigned long long)a->kfold.cut, (unsigned long long)a->rfold.cut,
             (unsigned long long)a->texts_cut, AGG_NAME_MAX, AGG_DEMANGLED_MAX);
    warn(w, "names_cut", msg);
  }
  if (a->kfold.escaped + a->rfold.escaped > 0) {
    snprintf(msg, sizeof(msg),
             "%llu kernel names and %llu host API names held control "
             "characters (a NUL, a newline...): they are written as JSON "
             "escapes (\\u0000, \\n)",
             (unsigned long long)a->kfold.escaped,
             (unsigned long long)a->rfold.escaped);
    warn(w, "names_escaped", msg);
  }
}

/* The summary's warnings: names folded beyond the cap (agg_fold.c),
 * launch shapes beyond theirs (agg.c), names cut or escaped. */
static json_t *fold_warnings(const struct idx_agg *a)
{
  const struct agg_fold *folds[2] = { &a->kfold, &a->rfold };
  static const char *const what[2] = { "kernel", "host API" };
  json_t *w = json_array();
  char msg[384], cap[96];

  for (int i = 0; i < 2; i++) {
    if (folds[i]->id == UINT32_MAX)
      continue;
    snprintf(cap, sizeof(cap), "%u (max_kernel_names)%s", folds[i]->cap,
             folds[i]->by_bytes ? " or of 16 MiB of name text" : "");
    snprintf(msg, sizeof(msg),
             "%llu distinct %s names beyond the cap of %s are folded into "
             "one row \"%s\": its figures are their %llu events summed",
             (unsigned long long)folds[i]->distinct, what[i], cap,
             folds[i]->name, (unsigned long long)folds[i]->events);
    warn(w, i ? "runtime_names_capped" : "kernel_names_capped", msg);
  }
  if (a->shapes_folded > 0 || a->launches_folded > 0) {
    snprintf(msg, sizeof(msg),
             "beyond the cap of %u distinct launch shapes and launch rows "
             "(max_kernel_names), %llu kernels are counted without "
             "their grid and block and %llu without their registers and "
             "shared memory: their kernels' rows and totals still hold them",
             a->shape_cap, (unsigned long long)a->shapes_folded,
             (unsigned long long)a->launches_folded);
    warn(w, "launch_shapes_capped", msg);
  }
  name_warnings(a, w);
  return w;
}

/* The scalars of the summary: identity, the file and the totals. */
static json_t *summary_head(struct idx_agg *a, const struct idx_doc *doc,
                            const struct agg_file_info *info, int64_t busy,
                            const struct agg_stat *rt)
{
  const struct agg_copy *ms = &a->copies[AGG_COPY_MEMSET];
  struct agg_sum_rank r = { 0 };
  json_t *cw;
  int i;

  AGG_SUM_FILLS(TR_SUM_RANK, 56); /* 18 of them dec_put_rank()'s */
  if (a->t0_ns > a->tend_ns)      /* no timed event */
    a->t0_ns = a->tend_ns = 0;
  for (i = 0; i < AGG_COPY_MEMSET; i++) {
    r.memcpy_count += (int64_t)a->copies[i].s.count;
    r.memcpy_bytes += a->copies[i].bytes;
    r.memcpy_ns += a->copies[i].s.total_ns;
  }
  r.rank = rank_value(doc, info);
  r.file = agg_txt(info->path);
  r.format = agg_txt(idx_format_get(doc->format)->name);
  r.file_bytes = (int64_t)info->file_bytes;
  r.json_bytes = (int64_t)doc->json_bytes;
  r.events = (int64_t)doc->events;
  r.skipped_events = (int64_t)(doc->skipped + a->skipped);
  r.t0_ns = a->t0_ns;
  r.span_ns = a->tend_ns - a->t0_ns;
  r.device = device_value(a, doc);
  r.kernel_events = (int64_t)a->kernel_events;
  r.kernel_ns = a->kernel_ns;
  /* Every distinct name: those kept, and those folded. */
  r.distinct_kernels =
      (int64_t)a->nkrows -
      (a->kfold.id != UINT32_MAX && a->kernels[a->kfold.id].is_kernel) +
      (int64_t)a->kfold.distinct;
  r.memset_count = (int64_t)ms->s.count;
  r.memset_ns = ms->s.total_ns;
  r.device_ns = device_ns_of(a);
  r.gpu_busy_ns = busy;
  r.runtime_events = (int64_t)rt->count;
  r.runtime_ns = rt->total_ns;
  r.idle_ns = r.span_ns - busy;
  r.launch_delays = (int64_t)a->delay.count;
  r.launch_delay_min_ns = a->delay.min_ns;
  r.launch_delay_p50_ns = agg_pct(&a->delay_hist, &a->delay, 500);
  r.launch_delay_p99_ns = agg_pct(&a->delay_hist, &a->delay, 990);
  r.launch_delay_max_ns = a->delay.max_ns;
  for (uint32_t k = 0; k < a->nkinds; k++)
    r.warmup_steps += (int64_t)a->steps[a->step_side][k].warmup;
  r.timeline_bucket_ns = a->tl.width;
  r.kernel_names_folded = (int64_t)a->kfold.distinct;
  r.runtime_names_folded = (int64_t)a->rfold.distinct;
  r.warnings = fold_warnings(a);
  if (a->dec != NULL)
    dec_warnings(a->dec, r.warnings);
  dec_put_rank(a->dec, &r);
  r.collective_events = (int64_t)a->coll.events;
  r.collective_ns = a->coll.ns;
  r.exposed_comm_ns = a->coll.exposed_ns;
  for (int k = 0; k < AGG_HOST_KINDS; k++)
    r.host_events += (int64_t)a->host->events[k];
  r.critical_path_steps = (int64_t)a->cpath->steps_total;
  cw = agg_cpath_warnings(a);
  json_array_extend(r.warnings, cw);
  json_decref(cw);
  return agg_sum_rank_json(&r);
}

/* Copies and memsets join the kernels' categories: the category table is
 * over all device events. */
static void device_categories(struct idx_agg *a)
{
  struct agg_stat *copy = &a->cats[agg_category_index("copy")];
  struct agg_stat *mset = &a->cats[agg_category_index("memset")];
  int i;

  for (i = 0; i < AGG_COPY_MEMSET; i++) {
    copy->count += a->copies[i].s.count;
    copy->total_ns += a->copies[i].s.total_ns;
  }
  mset->count += a->copies[AGG_COPY_MEMSET].s.count;
  mset->total_ns += a->copies[AGG_COPY_MEMSET].s.total_ns;
}

void agg_out_row(struct agg_out *o, json_t *row)
{
  if (row == NULL && o->rc == 0)
    o->rc = tr_err_set(o->err, TR_ENOMEM, "", "out of memory");
  if (o->rc == 0)
    o->rc = o->sink->on_row(o->sink->ud, o->table, row, o->err);
  json_decref(row);
}

void agg_out_array(struct agg_out *o, json_t *rows)
{
  json_t *row;
  size_t i;

  if (rows == NULL)
    agg_out_row(o, NULL);
  json_array_foreach(rows, i, row)
    agg_out_row(o, json_incref(row));
  json_decref(rows);
}

/* The phases of the time pass, held until their turn. */
void agg_phase_rows(struct idx_agg *a, struct agg_out *o)
{
  agg_out_array(o, json_incref(a->phases));
}

/* The head, then every table in the summary's order: common/summary.h's
 * TR_TABLE_MAP, each row's rows function. */
static int emit(struct idx_agg *a, const struct idx_doc *doc,
                const struct agg_file_info *info, int64_t busy,
                struct agg_out *o)
{
  struct agg_stat rt = { 0, 0, 0, 0 };
  json_t *head;
  int rc;

  memset(a->cats, 0, sizeof(a->cats));
  kernel_cats(a);
  device_categories(a);
  runtime_sum(a, &rt);
  head = summary_head(a, doc, info, busy, &rt);
  if (head == NULL)
    return tr_err_set(o->err, TR_ENOMEM, "", "%s: out of memory", info->path);
  rc = o->sink->on_head(o->sink->ud, head, o->err);
  json_decref(head);
  if (rc != 0)
    return rc;
#define XX(name, rows)                                                         \
  o->table = #name;                                                            \
  rows(a, o);
  TR_SUM_WRITERS(XX)
#undef XX
  return o->rc;
}

/* Decode's walk (dec_end), beside the time pass when the file may use
 * two threads: the two read only what each owns, and what the walk could
 * spill was written before (dec_seal). */
static int dec_run(void *ud, void *item)
{
  return dec_end(item, ud);
}

int idx_agg_rows(struct idx_agg *a, const struct idx_doc *doc,
                 const struct agg_file_info *info, const struct idx_sink *sink,
                 struct tr_err *err)
{
  struct agg_out o = { sink, NULL, err, 0 };
  struct tr_err dec_err = { 0 };
  struct agg_beside dec;
  int64_t busy = 0;
  int rc;

  if ((rc = agg_fold_end(&a->kfold, &a->names)) != 0 ||
      (rc = agg_fold_end(&a->rfold, &a->rt_map)) != 0)
    return tr_err_set(err, rc, "", "%s: name spill: %s", info->path,
                      tr_strerror(rc));
  if ((rc = idx_agg_resolve(a)) != 0 || (rc = agg_families(a)) != 0)
    return tr_err_set(err, rc, "", "%s: out of memory", info->path);
  choose_step_side(a);
  if (agg_samples_init(a) != 0)
    return tr_err_set(err, TR_ENOMEM, "", "%s: out of memory", info->path);
  a->krows = sorted_rows(a->names.n, &a->nkrows, fill_kernel, a);
  if (a->krows == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "%s: out of memory", info->path);
  a->threads = info->threads;
  agg_beside_start(&dec, a->threads > 1 && a->dec != NULL, dec_run, &dec_err);
  if (a->dec != NULL && (rc = dec_seal(a->dec, err)) == 0)
    (void)agg_beside_put(&dec, a->dec);
  if (rc == 0)
    rc = agg_time_pass(a, heaviest(a->krows, a->nkrows), &busy, err);
  if (agg_beside_end(&dec) != 0 && rc == 0) {
    *err = dec_err;
    rc = dec.rc;
  }
  return rc != 0 ? rc : emit(a, doc, info, busy, &o);
}

/* ---- the whole summary as one document ---- */

static int tree_head(void *ud, json_t *head, struct tr_err *err)
{
  struct agg_tree *t = ud;

  (void)err;
  t->doc = json_incref(head);
  agg_sum_tables_new(t->doc);
  return 0;
}

static int tree_row(void *ud, const char *table, json_t *row,
                    struct tr_err *err)
{
  struct agg_tree *t = ud;

  if (json_array_append(json_object_get(t->doc, table), row) != 0)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  return 0;
}

void agg_tree_sink(struct agg_tree *t, struct idx_sink *out)
{
  t->doc = NULL;
  out->on_head = tree_head;
  out->on_row = tree_row;
  out->ud = t;
}

int agg_tree_take(struct agg_tree *t, int rc, json_t **out)
{
  if (rc != 0)
    json_decref(t->doc);
  else
    *out = t->doc;
  t->doc = NULL;
  return rc;
}

int idx_agg_summary(struct idx_agg *a, const struct idx_doc *doc,
                    const struct agg_file_info *info, json_t **out,
                    struct tr_err *err)
{
  struct agg_tree t;
  struct idx_sink sink;

  agg_tree_sink(&t, &sink);
  return agg_tree_take(&t, idx_agg_rows(a, doc, info, &sink, err), out);
}
