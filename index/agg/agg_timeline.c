/*
 * The utilisation timeline: the rank's span cut into at most
 * AGG_TIMELINE_BUCKETS equal buckets (width = ceil(span / buckets) ns, the
 * last bucket ends with the span). Per bucket:
 *   busy_ns      the union of device intervals inside it: the buckets sum
 *                to gpu_busy_ns exactly;
 *   by_category  that union split by category: each stretch the union
 *                grows by belongs to the record that grew it (a kernel's
 *                category, copy, memset), so the categories sum to busy_ns;
 *   steps        per step kind, the union of its labels inside the bucket
 *                (the step side's labels), and step, the kind that covers
 *                most of it (ties: the name first in byte order).
 * Fixed memory: buckets x (categories + kinds) counters.
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"

#define AGG_TIMELINE_BUCKETS TR_TIMELINE_BUCKETS

/* The pass's state: n equal buckets over the span, union-busy ns per
 * bucket and per category, and each step kind's label cover. */
struct agg_timeline {
  int64_t t0, width; /* bucket i is [t0 + i width, t0 + (i + 1) width) */
  uint32_t n, nk;
  int64_t *busy;  /* [n] */
  int64_t *cat;   /* [n][AGG_NCATEGORIES] */
  int64_t *cover; /* [n][nk] */
  int64_t cur_start[AGG_MAX_STEP_KINDS], cur_end[AGG_MAX_STEP_KINDS];
  uint32_t label_type; /* the step side's label records */
  int copy_cat, memset_cat;
};

int agg_timeline_new(struct idx_agg *a)
{
  return (a->timeline = calloc(1, sizeof(*a->timeline))) == NULL ? TR_ENOMEM
                                                                 : 0;
}

void agg_timeline_free(struct idx_agg *a)
{
  struct agg_timeline *tl = a->timeline;

  if (tl == NULL)
    return;
  free(tl->busy);
  free(tl->cat);
  free(tl->cover);
  free(tl);
  a->timeline = NULL;
}

/* The buckets over [t0, tend) for the step kinds tracked. */
int agg_timeline_seal(struct idx_agg *a, struct tr_err *err)
{
  struct agg_timeline *tl = a->timeline;
  int64_t span = a->tend_ns - a->t0_ns;

  (void)err;
  tl->t0 = a->t0_ns;
  tl->nk = a->nkinds;
  tl->label_type =
      a->step_side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU;
  tl->copy_cat = agg_category_index("copy");
  tl->memset_cat = agg_category_index("memset");
  for (uint32_t k = 0; k < AGG_MAX_STEP_KINDS; k++)
    tl->cur_start[k] = tl->cur_end[k] = INT64_MIN;
  if (span <= 0)
    return 0;
  tl->width = (span + AGG_TIMELINE_BUCKETS - 1) / AGG_TIMELINE_BUCKETS;
  tl->n = (uint32_t)((span + tl->width - 1) / tl->width);
  tl->busy = calloc(tl->n, sizeof(*tl->busy));
  tl->cat = calloc((size_t)tl->n * AGG_NCATEGORIES, sizeof(*tl->cat));
  tl->cover = calloc((size_t)tl->n * (tl->nk ? tl->nk : 1), sizeof(*tl->cover));
  if (tl->busy == NULL || tl->cat == NULL || tl->cover == NULL)
    return TR_ENOMEM;
  return 0;
}

/* Adds the overlap of [a, b) with each bucket to v[i * stride]. */
static void spread(const struct agg_timeline *tl, int64_t *v, size_t stride,
                   int64_t a, int64_t b)
{
  uint64_t i, last;

  if (b <= a || tl->n == 0)
    return;
  i = (uint64_t)(a - tl->t0) / (uint64_t)tl->width;
  last = (uint64_t)(b - 1 - tl->t0) / (uint64_t)tl->width;
  if (last >= tl->n)
    last = tl->n - 1;
  for (; i <= last; i++) {
    int64_t lo = tl->t0 + (int64_t)i * tl->width, hi = lo + tl->width;

    v[i * stride] += (b < hi ? b : hi) - (a > lo ? a : lo);
  }
}

/* Union-busy ns [start, end) of a record of category index cat. */
static void busy(struct agg_timeline *tl, int64_t start, int64_t end, int cat)
{
  if (tl->n == 0) /* no buckets: tl->cat is NULL, no offset from it */
    return;
  spread(tl, tl->busy, 1, start, end);
  spread(tl, tl->cat + cat, AGG_NCATEGORIES, start, end);
}

static void flush(struct agg_timeline *tl, uint32_t k)
{
  if (tl->cur_end[k] != INT64_MIN && tl->n > 0)
    spread(tl, tl->cover + k, tl->nk, tl->cur_start[k], tl->cur_end[k]);
}

/* A label of kind k [start, end); labels arrive in start order. */
static void label(struct agg_timeline *tl, uint32_t k, int64_t start,
                  int64_t end)
{
  if (k >= tl->nk)
    return;
  if (tl->cur_end[k] == INT64_MIN || start > tl->cur_end[k]) {
    flush(tl, k);
    tl->cur_start[k] = start;
    tl->cur_end[k] = end;
  } else if (end > tl->cur_end[k]) {
    tl->cur_end[k] = end;
  }
}

/* The category index of a device record. */
static int rec_category(const struct idx_agg *a, const struct agg_rec *r)
{
  if (r->type == AGG_REC_KERNEL)
    return a->name_cat[a->shapes[r->id].name];
  return r->type == AGG_REC_COPY ? a->timeline->copy_cat
                                 : a->timeline->memset_cat;
}

/* The labels of the step side, and what each device record adds to the
 * union of device records (agg_at.busy_end: its end before the record). */
int agg_timeline_walk(struct idx_agg *a, struct agg_at *at)
{
  struct agg_timeline *tl = a->timeline;
  const struct agg_rec *r = at->r;
  int64_t end = r->start_ns + r->dur_ns;

  if (r->type == tl->label_type && r->id < a->nkinds)
    label(tl, r->id, r->start_ns, end);
  if (!agg_rec_device(r->type))
    return 0;
  if (!at->any || r->start_ns >= at->busy_end)
    busy(tl, r->start_ns, end, rec_category(a, r));
  else if (end > at->busy_end)
    busy(tl, at->busy_end, end, rec_category(a, r));
  return 0;
}

int agg_timeline_end(struct idx_agg *a, struct tr_err *err)
{
  struct agg_timeline *tl = a->timeline;

  (void)err;
  for (uint32_t k = 0; k < tl->nk; k++) {
    flush(tl, k);
    tl->cur_end[k] = INT64_MIN;
  }
  return 0;
}

void agg_timeline_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  r->timeline_bucket_ns = a->timeline->width;
}

/* Bucket i's steps object; *step the kind covering most, or -1. */
static json_t *steps_of(const struct idx_agg *a, uint32_t i, int *step)
{
  const int64_t *c = a->timeline->cover + (size_t)i * a->timeline->nk;
  json_t *o = json_object();

  *step = -1;
  for (uint32_t k = 0; k < a->timeline->nk; k++) {
    const struct agg_key *key = &a->kinds_map.keys[k];

    if (c[k] <= 0)
      continue;
    json_object_setn_new_nocheck(o, key->p, key->n, json_integer(c[k]));
    if (*step < 0 || c[k] > c[*step] ||
        (c[k] == c[*step] && agg_key_cmp(key, &a->kinds_map.keys[*step]) < 0))
      *step = (int)k;
  }
  return o;
}

static json_t *categories_of(const struct idx_agg *a, uint32_t i)
{
  const int64_t *c = a->timeline->cat + (size_t)i * AGG_NCATEGORIES;
  json_t *o = json_object();

  for (int k = 0; k < AGG_NCATEGORIES; k++)
    if (c[k] > 0)
      json_object_set_new(o, agg_category_name(k), json_integer(c[k]));
  return o;
}

void agg_timeline_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_timeline *tl = a->timeline;
  int64_t span = a->tend_ns - a->t0_ns;

  AGG_SUM_FILLS(TR_SUM_TIMELINE, 7);
  for (uint32_t i = 0; i < tl->n; i++) {
    int64_t end = (int64_t)(i + 1) * tl->width;
    int step;
    struct agg_sum_timeline r = {
      .index = i,
      .start_ns = (int64_t)i * tl->width,
      .end_ns = end < span ? end : span,
      .busy_ns = tl->busy[i],
      .by_category = categories_of(a, i),
      .steps = steps_of(a, i, &step),
    };

    if (step >= 0) {
      r.step.p = a->kinds_map.keys[step].p;
      r.step.n = a->kinds_map.keys[step].n;
    }
    agg_out_timeline(o, &r);
  }
}
