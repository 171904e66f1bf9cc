/*
 * The rank summary as JSON: the exact field list and orders of the data
 * contract (docs/API.md, "Rank summary"). Durations and
 * timestamps are integer ns, first/last/start/end relative to t0; avg is
 * floor(total / count); share is total / denominator rounded half up to 6
 * decimals (0 when the denominator is 0).
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg.h"
#include "index/format.h"

static const char *const copy_kind_names[AGG_COPY_KINDS] = {
  "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other", "memset"
};

/* A row to sort: total descending, then name ascending, then id. */
struct row {
  int64_t total;
  const char *p;
  size_t n;
  uint32_t id;
};

static int row_cmp(const void *x, const void *y)
{
  const struct row *a = x, *b = y;
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

static json_t *share(int64_t total, int64_t den)
{
  unsigned __int128 q;

  if (den <= 0 || total <= 0)
    return json_real(0.0);
  q = ((unsigned __int128)total * 2000000u + (uint64_t)den) /
      ((unsigned __int128)den * 2u);
  return json_real((double)q / 1e6);
}

static void set_int(json_t *o, const char *k, int64_t v)
{
  json_object_set_new(o, k, json_integer((json_int_t)v));
}

static void set_stat(json_t *o, const struct agg_stat *s, int minmax)
{
  set_int(o, "count", (int64_t)s->count);
  set_int(o, "total_ns", s->total_ns);
  set_int(o, "avg_ns", s->count ? s->total_ns / (int64_t)s->count : 0);
  if (minmax) {
    set_int(o, "min_ns", s->min_ns);
    set_int(o, "max_ns", s->max_ns);
  }
}

static const struct agg_key *key_of(const struct agg_map *m, uint32_t id)
{
  return &m->keys[id];
}

/* Sorted row order of the n ids for which keep() holds. Caller frees. */
static struct row *
sorted_rows(size_t n, size_t *nout,
            int (*fill)(void *ud, uint32_t id, struct row *r), void *ud)
{
  struct row *rows = malloc((n ? n : 1) * sizeof(*rows));
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

static void row_set(struct row *r, int64_t total, const struct agg_key *k)
{
  r->total = total;
  r->p = k->p;
  r->n = k->n;
}

static int fill_kernel(void *ud, uint32_t id, struct row *r)
{
  struct idx_agg *a = ud;

  row_set(r, a->kernels[id].s.total_ns, key_of(&a->names, id));
  return a->kernels[id].is_kernel;
}

/* The category of a kernel name (names are not NUL-terminated). */
static const char *category_of(const struct idx_agg *a, uint32_t id)
{
  const struct agg_key *k = key_of(&a->names, id);
  char *name = malloc(k->n + 1);
  const char *cat;

  if (name == NULL)
    return "other";
  memcpy(name, k->p, k->n);
  name[k->n] = '\0';
  cat = idx_category(a->rules, name);
  free(name);
  return cat;
}

static json_t *kernel_rows(struct idx_agg *a, const struct row *rows, size_t n,
                           struct agg_stat *cats)
{
  json_t *arr = json_array(), *o;
  size_t i;

  for (i = 0; i < n; i++) {
    const struct agg_kernel *k = &a->kernels[rows[i].id];
    const char *cat = category_of(a, rows[i].id);
    struct agg_stat *c = &cats[agg_category_index(cat)];

    c->count += k->s.count;
    c->total_ns += k->s.total_ns;
    o = json_object();
    json_object_set_new(o, "name", agg_json_strn(rows[i].p, rows[i].n));
    json_object_set_new(o, "category", json_string(cat));
    set_stat(o, &k->s, 1);
    set_int(o, "median_ns",
            agg_hist_median(&k->hist, k->s.count, k->s.min_ns, k->s.max_ns));
    json_object_set_new(o, "share", share(k->s.total_ns, a->kernel_ns));
    set_int(o, "first_ns", k->first_ns - a->t0_ns);
    set_int(o, "last_ns", k->last_ns - a->t0_ns);
    json_array_append_new(arr, o);
  }
  return arr;
}

static int fill_launch(void *ud, uint32_t id, struct row *r)
{
  struct idx_agg *a = ud;

  row_set(r, a->launches[id].s.total_ns,
          key_of(&a->names, a->shapes[a->launches[id].shape].name));
  return a->launches[id].s.count > 0;
}

static json_t *launch_rows(struct idx_agg *a)
{
  json_t *arr = json_array(), *o;
  struct row *rows;
  size_t i, n;

  rows = sorted_rows(a->launches_map.n, &n, fill_launch, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_launch *l = &a->launches[rows[i].id];
    const struct agg_shape *s = &a->shapes[l->shape];

    o = json_object();
    json_object_set_new(o, "name", agg_json_strn(rows[i].p, rows[i].n));
    json_object_set_new(o, "grid",
                        agg_json_xyz(s->grid, s->has & IDX_HAS_GRID));
    json_object_set_new(o, "block",
                        agg_json_xyz(s->block, s->has & IDX_HAS_BLOCK));
    json_object_set_new(o, "registers_per_thread",
                        (l->has & IDX_HAS_REGS) ? json_integer(l->regs)
                                                : json_null());
    json_object_set_new(o, "shared_bytes",
                        (l->has & IDX_HAS_SHMEM) ? json_integer(l->shmem)
                                                 : json_null());
    set_stat(o, &l->s, 1);
    json_array_append_new(arr, o);
  }
  free(rows);
  return arr;
}

static int fill_runtime(void *ud, uint32_t id, struct row *r)
{
  struct idx_agg *a = ud;

  row_set(r, a->runtime[id].s.total_ns, key_of(&a->rt_map, id));
  return 1;
}

static json_t *runtime_rows(struct idx_agg *a, struct agg_stat *sum)
{
  json_t *arr = json_array(), *o;
  struct row *rows;
  size_t i, n;

  rows = sorted_rows(a->rt_map.n, &n, fill_runtime, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_named *r = &a->runtime[rows[i].id];

    sum->count += r->s.count;
    sum->total_ns += r->s.total_ns;
    o = json_object();
    json_object_set_new(o, "name", agg_json_strn(rows[i].p, rows[i].n));
    set_int(o, "count", (int64_t)r->s.count);
    set_int(o, "total_ns", r->s.total_ns);
    set_int(o, "median_ns",
            agg_hist_median(&r->hist, r->s.count, r->s.min_ns, r->s.max_ns));
    set_int(o, "max_ns", r->s.max_ns);
    json_array_append_new(arr, o);
  }
  free(rows);
  return arr;
}

static int fill_copy(void *ud, uint32_t id, struct row *r)
{
  struct idx_agg *a = ud;

  r->total = a->copies[id].s.total_ns;
  r->p = copy_kind_names[id];
  r->n = strlen(r->p);
  return a->copies[id].s.count > 0;
}

static json_t *copy_rows(struct idx_agg *a)
{
  json_t *arr = json_array(), *o;
  struct row *rows;
  size_t i, n;

  rows = sorted_rows(AGG_COPY_KINDS, &n, fill_copy, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_copy *c = &a->copies[rows[i].id];

    o = json_object();
    json_object_set_new(o, "kind", json_string(rows[i].p));
    set_int(o, "count", (int64_t)c->s.count);
    set_int(o, "total_ns", c->s.total_ns);
    set_int(o, "bytes", c->bytes);
    set_int(o, "max_bytes", c->max_bytes);
    json_array_append_new(arr, o);
  }
  free(rows);
  return arr;
}

struct cat_ctx {
  const struct agg_stat *cats;
};

static int fill_cat(void *ud, uint32_t id, struct row *r)
{
  const struct cat_ctx *c = ud;

  r->total = c->cats[id].total_ns;
  r->p = agg_category_name((int)id);
  r->n = strlen(r->p);
  return c->cats[id].count > 0;
}

static json_t *category_rows(const struct agg_stat *cats, int64_t device_ns)
{
  struct cat_ctx ctx = { cats };
  json_t *arr = json_array(), *o;
  struct row *rows;
  size_t i, n;

  rows = sorted_rows(AGG_NCATEGORIES, &n, fill_cat, &ctx);
  for (i = 0; rows != NULL && i < n; i++) {
    o = json_object();
    json_object_set_new(o, "category", json_string(rows[i].p));
    set_int(o, "count", (int64_t)cats[rows[i].id].count);
    set_int(o, "total_ns", cats[rows[i].id].total_ns);
    json_object_set_new(o, "share",
                        share(cats[rows[i].id].total_ns, device_ns));
    json_array_append_new(arr, o);
  }
  free(rows);
  return arr;
}

struct step_ctx {
  struct idx_agg *a;
  int side;
};

static int fill_step(void *ud, uint32_t id, struct row *r)
{
  struct step_ctx *c = ud;

  row_set(r, 0, key_of(&c->a->kinds_map, id)); /* by kind name only */
  return c->a->steps[c->side][id].count > 0;
}

/* Steps from the GPU-side labels when the trace has any, else the CPU
 * side (docs/ATOM.md): one trace never mixes the two. */
static json_t *step_rows(struct idx_agg *a)
{
  struct step_ctx ctx = { a, AGG_SIDE_CPU };
  size_t nk = a->kinds_map.n, i, n;
  json_t *arr = json_array(), *o;
  struct row *rows;

  if (nk > AGG_MAX_STEP_KINDS)
    nk = AGG_MAX_STEP_KINDS;
  for (i = 0; i < nk; i++)
    if (a->steps[AGG_SIDE_GPU][i].count > 0)
      ctx.side = AGG_SIDE_GPU;
  rows = sorted_rows(nk, &n, fill_step, &ctx);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_step *s = &a->steps[ctx.side][rows[i].id];

    o = json_object();
    json_object_set_new(o, "kind", agg_json_strn(rows[i].p, rows[i].n));
    set_int(o, "count", (int64_t)s->count);
    set_int(o, "total_ns", s->total_ns);
    set_int(o, "avg_ns", s->total_ns / (int64_t)s->count);
    set_int(o, "tokens", s->tokens);
    set_int(o, "padded", (int64_t)s->padded);
    set_int(o, "kernel_ns", ctx.side == AGG_SIDE_GPU ? s->kernel_ns : 0);
    json_object_set_new(o, "source",
                        json_string(ctx.side == AGG_SIDE_GPU ? "gpu" : "cpu"));
    json_array_append_new(arr, o);
  }
  free(rows);
  return arr;
}

/* The kernel with the largest total (ties: first name), UINT32_MAX when
 * there is none; its launch shapes cut phases. */
static uint32_t heaviest(const struct row *rows, size_t n)
{
  return n > 0 ? rows[0].id : UINT32_MAX;
}

static json_t *rank_value(const struct idx_doc *doc,
                          const struct agg_file_info *info)
{
  if (info->rank >= 0)
    return json_integer(info->rank);
  if (doc->rank >= 0)
    return json_integer(doc->rank);
  return json_null();
}

static json_t *device_value(const struct idx_agg *a, const struct idx_doc *doc)
{
  if (doc->device[0] != '\0')
    return json_string(doc->device);
  if (idx_format_get(doc->format)->meta_device && a->device[0] != '\0')
    return json_string(a->device);
  return json_null();
}

/* The head of the summary: identity and the file. */
static json_t *summary_head(struct idx_agg *a, const struct idx_doc *doc,
                            const struct agg_file_info *info)
{
  json_t *o = json_object();
  int timed = a->t0_ns <= a->tend_ns;

  json_object_set_new(o, "rank", rank_value(doc, info));
  json_object_set_new(o, "file", json_string(info->path));
  json_object_set_new(o, "format",
                      json_string(idx_format_get(doc->format)->name));
  set_int(o, "file_bytes", (int64_t)info->file_bytes);
  set_int(o, "json_bytes", (int64_t)doc->json_bytes);
  set_int(o, "events", (int64_t)doc->events);
  set_int(o, "skipped_events", (int64_t)(doc->skipped + a->skipped));
  if (!timed)
    a->t0_ns = a->tend_ns = 0;
  set_int(o, "t0_ns", a->t0_ns);
  set_int(o, "span_ns", a->tend_ns - a->t0_ns);
  json_object_set_new(o, "device", device_value(a, doc));
  return o;
}

/* The totals of the summary; returns device_ns, the categories'
 * denominator. */
static int64_t summary_totals(struct idx_agg *a, json_t *o, size_t distinct,
                              int64_t busy, const struct agg_stat *rt)
{
  const struct agg_copy *ms = &a->copies[AGG_COPY_MEMSET];
  int64_t bytes = 0, ns = 0;
  uint64_t count = 0;
  int i;

  for (i = 0; i < AGG_COPY_MEMSET; i++) {
    count += a->copies[i].s.count;
    bytes += a->copies[i].bytes;
    ns += a->copies[i].s.total_ns;
  }
  set_int(o, "kernel_events", (int64_t)a->kernel_events);
  set_int(o, "kernel_ns", a->kernel_ns);
  set_int(o, "distinct_kernels", (int64_t)distinct);
  set_int(o, "memcpy_count", (int64_t)count);
  set_int(o, "memcpy_bytes", bytes);
  set_int(o, "memcpy_ns", ns);
  set_int(o, "memset_count", (int64_t)ms->s.count);
  set_int(o, "memset_ns", ms->s.total_ns);
  set_int(o, "device_ns", a->kernel_ns + ns + ms->s.total_ns);
  set_int(o, "gpu_busy_ns", busy);
  set_int(o, "runtime_events", (int64_t)rt->count);
  set_int(o, "runtime_ns", rt->total_ns);
  return a->kernel_ns + ns + ms->s.total_ns;
}

/* Copies and memsets join the kernels' categories: the category table is
 * over all device events. */
static void device_categories(const struct idx_agg *a, struct agg_stat *cats)
{
  struct agg_stat *copy = &cats[agg_category_index("copy")];
  struct agg_stat *mset = &cats[agg_category_index("memset")];
  int i;

  for (i = 0; i < AGG_COPY_MEMSET; i++) {
    copy->count += a->copies[i].s.count;
    copy->total_ns += a->copies[i].s.total_ns;
  }
  mset->count += a->copies[AGG_COPY_MEMSET].s.count;
  mset->total_ns += a->copies[AGG_COPY_MEMSET].s.total_ns;
}

int idx_agg_summary(struct idx_agg *a, const struct idx_doc *doc,
                    const struct agg_file_info *info, json_t **out,
                    struct tr_err *err)
{
  struct agg_stat cats[AGG_NCATEGORIES], rt = { 0, 0, 0, 0 };
  struct agg_time_out t = { 0, NULL };
  json_t *o, *kernels, *runtime;
  struct row *krows;
  int64_t device_ns;
  size_t nk;
  int rc;

  if ((rc = idx_agg_resolve(a)) != 0)
    return tr_err_set(err, rc, "", "%s: out of memory", info->path);
  krows = sorted_rows(a->names.n, &nk, fill_kernel, a);
  if (krows == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "%s: out of memory", info->path);
  rc = agg_time_pass(a, heaviest(krows, nk), &t, err);
  if (rc != 0) {
    free(krows);
    return rc;
  }
  memset(cats, 0, sizeof(cats));
  o = summary_head(a, doc, info);
  kernels = kernel_rows(a, krows, nk, cats);
  free(krows);
  runtime = runtime_rows(a, &rt);
  device_categories(a, cats);
  device_ns = summary_totals(a, o, nk, t.gpu_busy_ns, &rt);
  json_object_set_new(o, "kernels", kernels);
  json_object_set_new(o, "launches", launch_rows(a));
  json_object_set_new(o, "categories", category_rows(cats, device_ns));
  json_object_set_new(o, "memcpy", copy_rows(a));
  json_object_set_new(o, "runtime", runtime);
  json_object_set_new(o, "steps", step_rows(a));
  json_object_set_new(o, "phases", t.phases);
  *out = o;
  return 0;
}
