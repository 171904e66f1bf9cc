/*
 * Step-time distributions of the run-label kinds (docs/ATOM.md): per kind
 * min/p50/p90/p99/max, the steady state, batch-size buckets and outliers.
 *
 * Percentiles: p is the sample of rank ceil(p n) - 1 in sorted order,
 * valued as the medians are (the log-linear histogram of agg_map.c: exact
 * below 1024 ns, the bucket's midpoint within 1/1024 above, clamped to
 * [min, max]).
 *
 * Steady state: a kind's warm-up is its leading run of steps, in start
 * order, that each last more than twice the kind's p50 (JIT, autotuning
 * and allocator growth make first steps slow), at most ceil(count / 10) of
 * them; the steady figures are over the other steps, and each row says how
 * many were dropped (warmup_steps).
 *
 * Buckets: per kind, the steps by real batch size (bs=<real>[/<graph>])
 * and by tok=: 1, 2, 3-4, 5-8, ... 2^19+1-2^20 and one open bucket beyond.
 *
 * Outliers: the AGG_SLOWEST slowest steps of each kind (ties: the earlier,
 * then the first in the file) and its median step (the earliest step whose
 * duration is nearest the kind's p50), each with its top AGG_TOP kernels:
 * the kernels that start inside the step's label, [start, end), by total
 * time (ties: by name).
 *
 * All from the side the steps come from (GPU labels when the trace has
 * them, else CPU labels: agg_json.c). The event pass keeps per kind a
 * histogram, the slowest picks and the buckets; the time pass (in start
 * order) finds the warm-up, the median step and the picks' kernels.
 * Memory: per kind, histograms and a hash per picked step while it runs.
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"
#include "index/agg/agg_sum.h"

int64_t agg_pct(const struct agg_hist *h, const struct agg_stat *s, int p)
{
  uint64_t n = s->count, rank;

  if (n == 0)
    return 0;
  rank = (n * (uint64_t)p + 999) / 1000; /* ceil(p n / 1000) >= 1 */
  return agg_hist_rank(h, rank - 1, s->min_ns, s->max_ns);
}

/* True when pick a goes before b: slower, then earlier, then first seen. */
static int slower(const struct agg_pick *a, const struct agg_pick *b)
{
  if (a->dur_ns != b->dur_ns)
    return a->dur_ns > b->dur_ns;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns;
  return a->seq < b->seq;
}

static void keep_slow(struct agg_step *st, const struct agg_pick *p)
{
  uint32_t i;

  if (st->nslow == AGG_SLOWEST) {
    if (!slower(p, &st->slow[AGG_SLOWEST - 1]))
      return; /* not among the slowest */
    i = AGG_SLOWEST - 1;
  } else {
    i = st->nslow++;
  }
  while (i > 0 && slower(p, &st->slow[i - 1])) {
    st->slow[i] = st->slow[i - 1];
    i--;
  }
  st->slow[i] = *p;
}

/* Bucket of v >= 1: 0 for 1, b for 2^(b-1) < v <= 2^b, the last for more. */
static int bucket_of(int64_t v)
{
  int b = v <= 1 ? 0 : 64 - __builtin_clzll((uint64_t)(v - 1));

  return b < AGG_BUCKETS - 1 ? b : AGG_BUCKETS - 1;
}

static int bucket_add(struct agg_step *st, int dim, int64_t v, int padded,
                      int64_t dur)
{
  struct agg_bucket *b;

  if (v < 1)
    return 0;
  if (st->buckets == NULL &&
      (st->buckets = calloc(AGG_DIMS * AGG_BUCKETS, sizeof(*b))) == NULL)
    return TR_ENOMEM;
  b = &st->buckets[dim * AGG_BUCKETS + bucket_of(v)];
  agg_stat_add(&b->s, dur);
  b->padded += padded != 0;
  return agg_hist_add(&b->hist, dur);
}

int agg_step_seen(struct agg_step *st, const struct idx_event *ev, int64_t seq,
                  int64_t bs, int padded, int64_t tok)
{
  struct agg_pick p = { ev->ts_ns, ev->dur_ns, seq };
  int rc;

  agg_stat_add(&st->s, ev->dur_ns);
  st->padded += padded != 0;
  if (tok > 0)
    st->tokens += tok;
  keep_slow(st, &p);
  if (agg_hist_add(&st->hist, ev->dur_ns) != 0)
    return TR_ENOMEM;
  if ((rc = bucket_add(st, AGG_DIM_BS, bs, padded, ev->dur_ns)) != 0)
    return rc;
  return bucket_add(st, AGG_DIM_TOK, tok, padded, ev->dur_ns);
}

void agg_step_free(struct agg_step *st)
{
  if (st->buckets != NULL)
    for (int i = 0; i < AGG_DIMS * AGG_BUCKETS; i++)
      agg_hist_free(&st->buckets[i].hist);
  free(st->buckets);
  agg_hist_free(&st->hist);
  agg_hist_free(&st->steady_hist);
}

/* ---- the time pass ---- */

struct acc {
  uint32_t key; /* name id + 1; 0: empty */
  uint32_t pad;
  uint64_t count;
  int64_t total;
};

/* A picked step whose kernels are being summed: an open-addressing hash
 * name id -> (count, total). */
struct win {
  uint32_t kind;
  int role; /* 0..AGG_SLOWEST-1: that slowest pick; AGG_SLOWEST: median */
  int64_t end;
  struct acc *t;
  uint32_t cap, n;
};

struct kind_walk {
  int64_t p50;
  uint64_t seen, cap; /* steps walked; most that may be warm-up */
  int warming;
  int64_t best_diff; /* the median candidate's |dur - p50| */
};

struct agg_steps_walk {
  struct idx_agg *a;
  uint32_t label_type; /* AGG_REC_LABEL or AGG_REC_LABEL_CPU */
  struct kind_walk k[AGG_MAX_STEP_KINDS];
  struct win *w; /* open windows */
  size_t nw, wcap;
};

int agg_steps_walk_new(struct idx_agg *a, struct agg_steps_walk **out)
{
  struct agg_steps_walk *w = calloc(1, sizeof(*w));

  if (w == NULL)
    return TR_ENOMEM;
  w->a = a;
  w->label_type =
      a->step_side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU;
  for (uint32_t k = 0; k < a->nkinds; k++) {
    struct agg_step *st = &a->steps[a->step_side][k];

    w->k[k].p50 = agg_pct(&st->hist, &st->s, 500);
    w->k[k].cap = (st->s.count + 9) / 10;
    w->k[k].warming = 1;
    st->median.seq = -1;
  }
  *out = w;
  return 0;
}

static int acc_grow(struct win *x)
{
  uint32_t ncap = x->cap ? x->cap * 2 : 64;
  struct acc *t = calloc(ncap, sizeof(*t));

  if (t == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < x->cap; i++) {
    uint32_t j;

    if (x->t[i].key == 0)
      continue;
    j = (x->t[i].key * 2654435761u) & (ncap - 1);
    while (t[j].key != 0)
      j = (j + 1) & (ncap - 1);
    t[j] = x->t[i];
  }
  free(x->t);
  x->t = t;
  x->cap = ncap;
  return 0;
}

static int acc_add(struct win *x, uint32_t name, int64_t dur)
{
  uint32_t key = name + 1, i;

  if ((x->n + 1) * 2 > x->cap && acc_grow(x) != 0)
    return TR_ENOMEM;
  i = (key * 2654435761u) & (x->cap - 1);
  while (x->t[i].key != 0 && x->t[i].key != key)
    i = (i + 1) & (x->cap - 1);
  if (x->t[i].key == 0) {
    x->t[i].key = key;
    x->n++;
  }
  x->t[i].count++;
  x->t[i].total += dur;
  return 0;
}

/* Total descending, then name, then id (a total order). */
static int top_before(const struct idx_agg *a, const struct acc *x,
                      const struct acc *y)
{
  int d;

  if (x->total != y->total)
    return x->total > y->total;
  d = agg_key_cmp(&a->names.keys[x->key - 1], &a->names.keys[y->key - 1]);
  return d ? d < 0 : x->key < y->key;
}

/* The window's top kernels into the pick's slot of its kind. */
static void win_close(struct agg_steps_walk *w, struct win *x)
{
  struct agg_step *st = &w->a->steps[w->a->step_side][x->kind];
  struct agg_top *top =
      x->role == AGG_SLOWEST ? st->median_top : st->slow_top[x->role];
  uint32_t *n =
      x->role == AGG_SLOWEST ? &st->nmedian_top : &st->nslow_top[x->role];
  struct acc best[AGG_TOP];
  uint32_t m = 0;

  for (uint32_t i = 0; i < x->cap; i++) {
    uint32_t j;

    if (x->t[i].key == 0 ||
        (m == AGG_TOP && !top_before(w->a, &x->t[i], &best[m - 1])))
      continue; /* empty, or not among the top */
    j = m < AGG_TOP ? m++ : AGG_TOP - 1;
    while (j > 0 && top_before(w->a, &x->t[i], &best[j - 1])) {
      best[j] = best[j - 1];
      j--;
    }
    best[j] = x->t[i];
  }
  for (uint32_t i = 0; i < m; i++) {
    struct agg_top t = { best[i].key - 1, 0, best[i].count, best[i].total };

    top[i] = t;
  }
  *n = m;
  free(x->t);
  *x = w->w[--w->nw]; /* x may be the last one itself */
}

static int win_open(struct agg_steps_walk *w, const struct agg_rec *r, int role)
{
  struct win x = { r->id, role, r->start_ns + r->dur_ns, NULL, 0, 0 };

  if (agg_grow(&w->w, &w->wcap, w->nw, sizeof(*w->w)) != 0)
    return TR_ENOMEM;
  w->w[w->nw++] = x;
  return 0;
}

/* A new median candidate replaces the window of the old one. */
static int median_pick(struct agg_steps_walk *w, const struct agg_rec *r)
{
  struct agg_step *st = &w->a->steps[w->a->step_side][r->id];
  struct kind_walk *kw = &w->k[r->id];
  int64_t diff = llabs(r->dur_ns - kw->p50);

  if (st->median.seq >= 0 && diff >= kw->best_diff)
    return 0;
  for (size_t i = 0; i < w->nw; i++)
    if (w->w[i].kind == r->id && w->w[i].role == AGG_SLOWEST) {
      free(w->w[i].t);
      w->w[i] = w->w[--w->nw];
      break;
    }
  kw->best_diff = diff;
  st->median.start_ns = r->start_ns;
  st->median.dur_ns = r->dur_ns;
  st->median.seq = r->aux;
  st->nmedian_top = 0;
  return win_open(w, r, AGG_SLOWEST);
}

/* Warm-up or steady state, in start order. */
static int steady_add(struct agg_steps_walk *w, const struct agg_rec *r)
{
  struct agg_step *st = &w->a->steps[w->a->step_side][r->id];
  struct kind_walk *kw = &w->k[r->id];

  kw->seen++;
  if (kw->warming && r->dur_ns > 2 * kw->p50 && st->warmup < kw->cap) {
    st->warmup++;
    return 0;
  }
  kw->warming = 0;
  agg_stat_add(&st->steady, r->dur_ns);
  return agg_hist_add(&st->steady_hist, r->dur_ns);
}

int agg_steps_walk_warmup(const struct agg_steps_walk *w, uint32_t k)
{
  return k < w->a->nkinds && w->k[k].warming;
}

static int on_label(struct agg_steps_walk *w, const struct agg_rec *r)
{
  struct agg_step *st = &w->a->steps[w->a->step_side][r->id];
  int rc;

  if ((rc = steady_add(w, r)) != 0 || (rc = median_pick(w, r)) != 0)
    return rc;
  for (uint32_t i = 0; i < st->nslow; i++)
    if (st->slow[i].seq == r->aux && (rc = win_open(w, r, (int)i)) != 0)
      return rc;
  return 0;
}

int agg_steps_walk_rec(struct agg_steps_walk *w, const struct agg_rec *r)
{
  size_t i;
  int rc;

  for (i = w->nw; i-- > 0;)
    if (r->start_ns >= w->w[i].end)
      win_close(w, &w->w[i]);
  if (r->type == w->label_type && r->id < w->a->nkinds)
    return on_label(w, r);
  if (r->type != AGG_REC_KERNEL)
    return 0;
  for (i = 0; i < w->nw; i++)
    if ((rc = acc_add(&w->w[i], w->a->shapes[r->id].name, r->dur_ns)) != 0)
      return rc;
  return 0;
}

void agg_steps_walk_end(struct agg_steps_walk *w)
{
  if (w == NULL)
    return;
  while (w->nw > 0)
    win_close(w, &w->w[w->nw - 1]);
  free(w->w);
  free(w);
}

/* ---- the summary's tables ---- */

static int kind_cmp(const void *x, const void *y, void *ud)
{
  const struct agg_map *m = ud;

  return agg_key_cmp(&m->keys[*(const uint32_t *)x],
                     &m->keys[*(const uint32_t *)y]);
}

/* The step side's kinds with steps, by name. Caller frees; NULL: none or
 * out of memory (then *n is 0). */
static uint32_t *kinds_by_name(const struct idx_agg *a, uint32_t *n)
{
  uint32_t *v = malloc((a->nkinds + 1) * sizeof(*v));

  *n = 0;
  if (v == NULL)
    return NULL;
  for (uint32_t k = 0; k < a->nkinds; k++)
    if (a->steps[a->step_side][k].s.count > 0)
      v[(*n)++] = k;
  qsort_r(v, *n, sizeof(*v), kind_cmp, (void *)&a->kinds_map);
  return v;
}

static struct agg_txt kind_txt(const struct idx_agg *a, uint32_t k)
{
  struct agg_txt t = { a->kinds_map.keys[k].p, a->kinds_map.keys[k].n };

  return t;
}

static void bucket_row(const struct idx_agg *a, uint32_t k, int dim, int b,
                       struct agg_out *o)
{
  const struct agg_bucket *x =
      &a->steps[a->step_side][k].buckets[dim * AGG_BUCKETS + b];
  struct agg_sum_step_bucket r = {
    .kind = kind_txt(a, k),
    .dim = agg_txt(dim == AGG_DIM_BS ? "bs" : "tok"),
    .lo = b == 0 ? 1 : ((int64_t)1 << (b - 1)) + 1,
    .hi = { b < AGG_BUCKETS - 1, (int64_t)1 << b },
    .count = (int64_t)x->s.count,
    .padded = (int64_t)x->padded,
    .padded_share = agg_share((int64_t)x->padded, (int64_t)x->s.count),
    .min_ns = x->s.min_ns,
    .p50_ns = agg_pct(&x->hist, &x->s, 500),
    .p99_ns = agg_pct(&x->hist, &x->s, 990),
    .max_ns = x->s.max_ns,
  };

  AGG_SUM_FILLS(TR_SUM_STEP_BUCKET, 11);
  agg_out_row(o, agg_sum_step_bucket_json(&r));
}

void agg_step_bucket_rows(struct idx_agg *a, struct agg_out *o)
{
  uint32_t n, *kinds = kinds_by_name(a, &n);

  for (uint32_t i = 0; i < n; i++) {
    const struct agg_step *st = &a->steps[a->step_side][kinds[i]];

    for (int dim = 0; st->buckets != NULL && dim < AGG_DIMS; dim++)
      for (int b = 0; b < AGG_BUCKETS; b++)
        if (st->buckets[dim * AGG_BUCKETS + b].s.count > 0)
          bucket_row(a, kinds[i], dim, b, o);
  }
  free(kinds);
}

/* The bins of the step-time histogram being written. */
struct hist_out {
  struct agg_txt kind;
  struct agg_out *o;
  int64_t lo, hi;
  uint64_t count;
};

static void hist_flush(struct hist_out *h)
{
  struct agg_sum_step_hist r = { h->kind, h->lo, h->hi, (int64_t)h->count };

  AGG_SUM_FILLS(TR_SUM_STEP_HIST, 4);
  if (h->count > 0)
    agg_out_row(h->o, agg_sum_step_hist_json(&r));
  h->count = 0;
}

/* One histogram bucket [low, high): it lies inside one display bin. */
static void hist_bucket(void *ud, int64_t low, int64_t high, uint64_t count)
{
  struct hist_out *h = ud;
  int e = low > 0 ? 63 - __builtin_clzll((uint64_t)low) : 0; /* log2 */
  int64_t width = low < 1024 ? 64 : (int64_t)1 << (e - 3);

  (void)high;
  if (h->count > 0 && low >= h->hi)
    hist_flush(h);
  if (h->count == 0) {
    h->lo = low & ~(width - 1);
    h->hi = h->lo + width;
  }
  h->count += count;
}

void agg_step_hist_rows(struct idx_agg *a, struct agg_out *o)
{
  struct hist_out h = { { NULL, 0 }, o, 0, 0, 0 };
  uint32_t n, *kinds = kinds_by_name(a, &n);

  for (uint32_t i = 0; i < n; i++) {
    h.kind = kind_txt(a, kinds[i]);
    if (agg_hist_each(&a->steps[a->step_side][kinds[i]].hist, hist_bucket,
                      &h) == 0)
      hist_flush(&h);
  }
  free(kinds);
}

static json_t *top_json(const struct idx_agg *a, const struct agg_top *top,
                        uint32_t n)
{
  json_t *arr = json_array();

  for (uint32_t i = 0; i < n; i++) {
    const struct agg_key *k = &a->names.keys[top[i].name];
    json_t *row = json_pack("{s:s%,s:I,s:I}", "name", k->p, k->n, "count",
                            (json_int_t)top[i].count, "total_ns",
                            (json_int_t)top[i].total_ns);

    agg_set_demangled(a, top[i].name, row);
    json_array_append_new(arr, row);
  }
  return arr;
}

static void outlier_row(struct idx_agg *a, uint32_t k, const char *role,
                        int index, const struct agg_pick *p, json_t *top,
                        struct agg_out *o)
{
  char text[AGG_LABEL_TEXT + 1];
  struct agg_sum_step_outlier r = {
    .kind = kind_txt(a, k),
    .role = agg_txt(role),
    .index = index,
    .start_ns = p->start_ns - a->t0_ns,
    .dur_ns = p->dur_ns,
    .top_kernels = top,
  };

  AGG_SUM_FILLS(TR_SUM_STEP_OUTLIER, 7);
  if (agg_labels_get(&a->labels, p->seq, text, sizeof(text)) != 0)
    text[0] = '\0'; /* the spill file failed: the row keeps its figures */
  r.label = agg_txt(text);
  agg_out_row(o, agg_sum_step_outlier_json(&r));
}

void agg_step_outlier_rows(struct idx_agg *a, struct agg_out *o)
{
  uint32_t n, *kinds = kinds_by_name(a, &n);

  for (uint32_t i = 0; i < n; i++) {
    struct agg_step *st = &a->steps[a->step_side][kinds[i]];

    for (uint32_t j = 0; j < st->nslow; j++)
      outlier_row(a, kinds[i], "slowest", (int)j, &st->slow[j],
                  top_json(a, st->slow_top[j], st->nslow_top[j]), o);
    if (st->median.seq >= 0)
      outlier_row(a, kinds[i], "median", 0, &st->median,
                  top_json(a, st->median_top, st->nmedian_top), o);
  }
  free(kinds);
}
