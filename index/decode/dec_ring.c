/*
 * The walk's launches in arrival order, found by correlation
 * (decode_int.h). A long run trace keeps its bound of them (a launch stays
 * once its records came: docs/DECODE.md's second record of one launch),
 * so the index holds a 4-byte place in the ring, its key read from the
 * ring, where a correlation table would hold the key and the record again
 * in each of its slots (twice as many as it holds).
 */
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"

/* The index slot holding corr, or the empty one where it would go. */
static uint32_t ring_find(const struct dec_ring *r, int64_t corr)
{
  uint32_t i = agg_corr_home(r->cap, corr);

  while (r->ix[i] != 0 && r->corr[r->ix[i] - 1] != corr)
    i = (i + 1) & (r->cap - 1);
  return i;
}

int dec_ring_init(struct dec_ring *r, size_t vsize, uint32_t max)
{
  memset(r, 0, sizeof(*r));
  r->vsize = vsize;
  r->max = max;
  r->cap = 16;
  r->corr = malloc(max * sizeof(*r->corr));
  r->vals = malloc(max * vsize);
  r->ix = calloc(r->cap, sizeof(*r->ix));
  return r->corr && r->vals && r->ix ? 0 : TR_ENOMEM;
}

void *dec_ring_get(const struct dec_ring *r, int64_t corr)
{
  uint32_t i;

  if (r->n == 0)
    return NULL;
  i = ring_find(r, corr);
  return r->ix[i] != 0 ? r->vals + (size_t)(r->ix[i] - 1) * r->vsize : NULL;
}

/* Backward-shift removal, as agg_corr's (agg_corr_may_fill()). */
void dec_ring_unindex(struct dec_ring *r, int64_t corr)
{
  uint32_t i, j, home;

  if (r->n == 0)
    return;
  i = ring_find(r, corr);
  if (r->ix[i] == 0)
    return;
  for (j = i;;) {
    j = (j + 1) & (r->cap - 1);
    if (r->ix[j] == 0)
      break;
    home = agg_corr_home(r->cap, r->corr[r->ix[j] - 1]);
    if (agg_corr_may_fill(home, i, j)) {
      r->ix[i] = r->ix[j];
      i = j;
    }
  }
  r->ix[i] = 0;
  r->n--;
}

const int64_t *dec_ring_oldest(const struct dec_ring *r)
{
  return r->len == r->max ? &r->corr[r->head] : NULL;
}

/* Twice the index slots, every place moved over. 0 or TR_ENOMEM. */
static int ring_grow(struct dec_ring *r)
{
  uint32_t *old = r->ix, ocap = r->cap;

  if ((r->ix = calloc((size_t)ocap * 2, sizeof(*r->ix))) == NULL) {
    r->ix = old;
    return TR_ENOMEM;
  }
  r->cap = ocap * 2;
  for (uint32_t i = 0; i < ocap; i++)
    if (old[i] != 0)
      r->ix[ring_find(r, r->corr[old[i] - 1])] = old[i];
  free(old);
  return 0;
}

int dec_ring_push(struct dec_ring *r, int64_t corr, const void *val)
{
  uint32_t at;

  if ((r->n + 1) * 2 > r->cap && ring_grow(r) != 0)
    return TR_ENOMEM;
  if (r->len == r->max) {
    r->head = (r->head + 1) % r->max;
    r->len--;
  }
  at = (r->head + r->len++) % r->max;
  r->corr[at] = corr;
  memcpy(r->vals + (size_t)at * r->vsize, val, r->vsize);
  r->ix[ring_find(r, corr)] = at + 1;
  r->n++;
  return 0;
}

void dec_ring_free(struct dec_ring *r)
{
  free(r->corr);
  free(r->vals);
  free(r->ix);
  memset(r, 0, sizeof(*r));
}
