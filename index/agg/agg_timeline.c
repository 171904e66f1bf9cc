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
#include "index/agg/agg_sum.h"

int agg_timeline_init(struct agg_timeline *tl, int64_t t0, int64_t tend,
                      uint32_t nk)
{
  int64_t span = tend - t0;

  memset(tl, 0, sizeof(*tl));
  tl->t0 = t0;
  tl->nk = nk;
  for (uint32_t k = 0; k < AGG_MAX_STEP_KINDS; k++)
    tl->cur_start[k] = tl->cur_end[k] = INT64_MIN;
  if (span <= 0)
    return 0;
  tl->width = (span + AGG_TIMELINE_BUCKETS - 1) / AGG_TIMELINE_BUCKETS;
  tl->n = (uint32_t)((span + tl->width - 1) / tl->width);
  tl->busy = calloc(tl->n, sizeof(*tl->busy));
  tl->cat = calloc((size_t)tl->n * AGG_NCATEGORIES, sizeof(*tl->cat));
  tl->cover = calloc((size_t)tl->n * (nk ? nk : 1), sizeof(*tl->cover));
  if (tl->busy == NULL || tl->cat == NULL || tl->cover == NULL) {
    agg_timeline_free(tl);
    return TR_ENOMEM;
  }
  return 0;
}

void agg_timeline_free(struct agg_timeline *tl)
{
  free(tl->busy);
  free(tl->cat);
  free(tl->cover);
  tl->busy = tl->cat = tl->cover = NULL;
  tl->n = 0;
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

void agg_timeline_busy(struct agg_timeline *tl, int64_t start, int64_t end,
                       int cat)
{
  spread(tl, tl->busy, 1, start, end);
  spread(tl, tl->cat + cat, AGG_NCATEGORIES, start, end);
}

static void flush(struct agg_timeline *tl, uint32_t k)
{
  if (tl->cur_end[k] != INT64_MIN)
    spread(tl, tl->cover + k, tl->nk, tl->cur_start[k], tl->cur_end[k]);
}

void agg_timeline_label(struct agg_timeline *tl, uint32_t k, int64_t start,
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

void agg_timeline_end(struct agg_timeline *tl)
{
  for (uint32_t k = 0; k < tl->nk; k++) {
    flush(tl, k);
    tl->cur_end[k] = INT64_MIN;
  }
}

/* Bucket i's steps object; *step the kind covering most, or -1. */
static json_t *steps_of(const struct idx_agg *a, uint32_t i, int *step)
{
  const int64_t *c = a->tl.cover + (size_t)i * a->tl.nk;
  json_t *o = json_object();

  *step = -1;
  for (uint32_t k = 0; k < a->tl.nk; k++) {
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
  const int64_t *c = a->tl.cat + (size_t)i * AGG_NCATEGORIES;
  json_t *o = json_object();

  for (int k = 0; k < AGG_NCATEGORIES; k++)
    if (c[k] > 0)
      json_object_set_new(o, agg_category_name(k), json_integer(c[k]));
  return o;
}

void agg_timeline_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_timeline *tl = &a->tl;
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
    agg_out_row(o, agg_sum_timeline_json(&r));
  }
}
