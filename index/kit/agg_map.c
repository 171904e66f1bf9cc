/*
 * The aggregation's containers: an interning map (names and shapes -> dense
 * ids), a sparse log-linear histogram (medians without keeping samples),
 * and a bounded correlation table with removal (the launch join). Each
 * grows only with distinct keys.
 */
#include <stdlib.h>
#include <string.h>

#include "index/kit/kit.h"

#define ARENA_CHUNK 65536

/* Arena chunk: keys are never freed one by one, only all at once. */
struct agg_chunk {
  struct agg_chunk *next;
  size_t used, size;
  char data[];
};

/* The 128-bit product of a and b, its halves folded: one multiply mixes
 * two words (wyhash's core). */
static inline uint64_t mum(uint64_t a, uint64_t b)
{
  __extension__ typedef unsigned __int128 u128;
  u128 r = (u128)a * b;

  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

#define HASH_K0 0xa0761d6478bd642full
#define HASH_K1 0xe7037ed1a0b428dbull
#define HASH_K2 0x8ebc6af09c88c6e3ull

static inline uint64_t load8(const unsigned char *p)
{
  uint64_t w;

  memcpy(&w, p, 8);
  return w;
}

static inline uint64_t load4(const unsigned char *p)
{
  uint32_t w;

  memcpy(&w, p, 4);
  return w;
}

/* Sixteen bytes at a time, each pair of words mixed by one multiply
 * whose product carries the state before (kernel names run to hundreds
 * of bytes, and each host event's name is hashed: Python functions' of 30
 * to 60 bytes, millions of them; two lanes of a multiply and a fold per
 * word cost twice the instructions); the last bytes by words that overlap
 * the ones before rather than byte by byte; the length mixed into the
 * state before any byte and again at the end ("k1" and "k10" once hashed
 * alike, their lengths and last bytes both differing in bit 0). The ids a
 * map hands out do not depend on it: they are dense, in the order keys
 * came. */
uint64_t agg_key_hash(const void *key, size_t len)
{
  const unsigned char *p = key; /* NULL when len is 0 */
  uint64_t seed = mum(HASH_K0 ^ len, HASH_K1), a = 0, b = 0;
  size_t i = len;

  if (len > 16) {
    for (; i > 16; i -= 16, p += 16)
      seed = mum(load8(p) ^ HASH_K1, load8(p + 8) ^ seed);
    a = load8(p + i - 16);
    b = load8(p + i - 8);
  } else if (len >= 8) {
    a = load8(p);
    b = load8(p + len - 8);
  } else if (len >= 4) {
    a = load4(p);
    b = load4(p + len - 4);
  } else if (len > 0) {
    a = (uint64_t)p[0] << 16 | (uint64_t)p[len / 2] << 8 | p[len - 1];
  }
  a ^= HASH_K1;
  b ^= seed;
  {
    __extension__ typedef unsigned __int128 u128;
    u128 r = (u128)a * b;

    return mum((uint64_t)r ^ HASH_K0 ^ len, (uint64_t)(r >> 64) ^ HASH_K2);
  }
}

/* A map's slots keep the low half. */
static uint32_t hash_bytes(const void *key, size_t len)
{
  return (uint32_t)agg_key_hash(key, len);
}

int agg_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
  void **pa = arr;
  /* From 16 at least: half again of a capacity under 2 is no more. */
  size_t ncap = *cap >= 16 ? *cap : 16;
  void *p;

  if (need < *cap)
    return 0;
  /* By half again, not double: a table of ten thousand names then leaves
   * a twentieth unused, not a third (the name cap's worst case). */
  while (ncap <= need)
    ncap += ncap / 2;
  p = realloc(*pa, ncap * elem);
  if (p == NULL)
    return TR_ENOMEM;
  memset((char *)p + *cap * elem, 0, (ncap - *cap) * elem);
  *pa = p;
  *cap = ncap;
  return 0;
}

/* Copies key into the arena. NULL when out of memory. */
static const char *arena_copy(struct agg_chunk **arena, const void *key,
                              size_t len)
{
  struct agg_chunk *c = *arena;
  char *dst;

  if (c == NULL || c->size - c->used < len) {
    size_t size = len > ARENA_CHUNK ? len : ARENA_CHUNK;

    c = malloc(sizeof(*c) + size);
    if (c == NULL)
      return NULL;
    c->used = 0;
    c->size = size;
    c->next = *arena;
    *arena = c;
  }
  dst = c->data + c->used;
  if (len > 0)
    memcpy(dst, key, len);
  c->used += len;
  return dst;
}

static int map_rehash(struct agg_map *m)
{
  size_t ncap = m->cap ? m->cap * 2 : 256, i, j;
  uint64_t *ns = calloc(ncap, sizeof(*ns));

  if (ns == NULL)
    return TR_ENOMEM;
  for (i = 0; i < m->cap; i++) {
    if (m->slots[i] == 0)
      continue;
    j = (size_t)(m->slots[i] >> 32) & (ncap - 1);
    while (ns[j] != 0)
      j = (j + 1) & (ncap - 1);
    ns[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = ns;
  m->cap = ncap;
  return 0;
}

/* Whether the n bytes at a and b are the same, by words where there are
 * eight (the last word overlapping the one before): a hit of the map is
 * the common case, and a call of memcmp() costs more than the compare of
 * a name of a few words. */
static inline int key_eq(const unsigned char *a, const unsigned char *b,
                         size_t n)
{
  size_t i;

  if (n < 8)
    return n == 0 || memcmp(a, b, n) == 0;
  for (i = 0; i + 8 < n; i += 8)
    if (load8(a + i) != load8(b + i))
      return 0;
  return load8(a + n - 8) == load8(b + n - 8);
}

/* The slot holding key (hash h), or the empty one where it would go. */
static size_t map_probe(const struct agg_map *m, const void *key, size_t len,
                        uint32_t h)
{
  size_t i;

  for (i = h & (m->cap - 1); m->slots[i] != 0; i = (i + 1) & (m->cap - 1)) {
    uint32_t cand = (uint32_t)(m->slots[i] & 0xffffffffu) - 1;

    if ((uint32_t)(m->slots[i] >> 32) == h && m->keys[cand].n == len &&
        key_eq((const unsigned char *)m->keys[cand].p, key, len))
      break;
  }
  return i;
}

int agg_map_find(const struct agg_map *m, const void *key, size_t len,
                 uint32_t *id)
{
  size_t i;

  if (m->cap == 0)
    return 0;
  i = map_probe(m, key, len, hash_bytes(key, len));
  if (m->slots[i] == 0)
    return 0;
  *id = (uint32_t)(m->slots[i] & 0xffffffffu) - 1;
  return 1;
}

int agg_map_intern(struct agg_map *m, const void *key, size_t len, uint32_t *id)
{
  uint32_t h = hash_bytes(key, len);
  size_t i;
  const char *copy;

  if ((m->n + 1) * 2 > m->cap && map_rehash(m) != 0)
    return TR_ENOMEM;
  i = map_probe(m, key, len, h);
  if (m->slots[i] != 0) {
    *id = (uint32_t)(m->slots[i] & 0xffffffffu) - 1;
    return 0;
  }
  if (agg_grow(&m->keys, &m->keys_cap, m->n, sizeof(*m->keys)) != 0)
    return TR_ENOMEM;
  copy = arena_copy(&m->arena, key, len);
  if (copy == NULL)
    return TR_ENOMEM;
  m->keys[m->n].p = copy;
  m->keys[m->n].n = len;
  m->slots[i] = ((uint64_t)h << 32) | (m->n + 1);
  *id = m->n++;
  return 1;
}

void agg_map_free(struct agg_map *m)
{
  struct agg_chunk *c, *next;

  if (m == NULL)
    return;
  for (c = m->arena; c != NULL; c = next) {
    next = c->next;
    free(c);
  }
  free(m->slots);
  free(m->keys);
  memset(m, 0, sizeof(*m));
}

/* ---- histogram ---- */

#define HIST_EXACT    1024u /* values below are their own bucket */
#define HIST_SUB_BITS 9     /* 512 buckets per power of two above */

static uint32_t hist_bucket(int64_t v)
{
  uint64_t u = v < 0 ? 0 : (uint64_t)v;
  int e;

  if (u < HIST_EXACT)
    return (uint32_t)u;
  e = 63 - __builtin_clzll(u);
  return HIST_EXACT + (uint32_t)(e - 10) * (1u << HIST_SUB_BITS) +
         (uint32_t)((u >> (e - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1));
}

/* The bucket's first value; its values are [low, low + width). */
static void hist_range(uint32_t b, uint64_t *low, uint64_t *width)
{
  uint32_t e, m;

  if (b < HIST_EXACT) {
    *low = b;
    *width = 1;
    return;
  }
  e = (b - HIST_EXACT) / (1u << HIST_SUB_BITS) + 10;
  m = (b - HIST_EXACT) % (1u << HIST_SUB_BITS);
  *width = 1ull << (e - HIST_SUB_BITS);
  *low = ((uint64_t)(1u << HIST_SUB_BITS) + m) * *width;
}

/* The bucket's midpoint (exact for the small buckets). */
static int64_t hist_value(uint32_t b)
{
  uint64_t low, width;

  hist_range(b, &low, &width);
  return (int64_t)(low + width / 2);
}

/* The first table holds one bucket: a name that runs once (ten thousand
 * of them in a made-up trace) costs two small blocks, not 192 bytes. */
static int hist_rehash(struct agg_hist *h)
{
  uint32_t ncap = h->cap ? h->cap * 2 : 2, i, j;
  uint32_t *nk = calloc(ncap, sizeof(*nk));
  uint64_t *nc = calloc(ncap, sizeof(*nc));

  if (nk == NULL || nc == NULL) {
    free(nk);
    free(nc);
    return TR_ENOMEM;
  }
  for (i = 0; i < h->cap; i++) {
    if (h->keys[i] == 0)
      continue;
    j = (h->keys[i] * 2654435761u) & (ncap - 1);
    while (nk[j] != 0)
      j = (j + 1) & (ncap - 1);
    nk[j] = h->keys[i];
    nc[j] = h->counts[i];
  }
  free(h->keys);
  free(h->counts);
  h->keys = nk;
  h->counts = nc;
  h->cap = ncap;
  return 0;
}

/* Adds n samples to bucket key k (bucket + 1). */
static int hist_bump(struct agg_hist *h, uint32_t k, uint64_t n)
{
  uint32_t i;

  if ((h->n + 1) * 2 > h->cap && hist_rehash(h) != 0)
    return TR_ENOMEM;
  i = (k * 2654435761u) & (h->cap - 1);
  while (h->keys[i] != 0 && h->keys[i] != k)
    i = (i + 1) & (h->cap - 1);
  if (h->keys[i] == 0) {
    h->keys[i] = k;
    h->n++;
  }
  h->counts[i] += n;
  return 0;
}

int agg_hist_add(struct agg_hist *h, int64_t v)
{
  return hist_bump(h, hist_bucket(v) + 1, 1);
}

static int cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

  return (x > y) - (x < y);
}

/* Finds the count of bucket key k (k = bucket + 1). */
static uint64_t hist_count(const struct agg_hist *h, uint32_t k)
{
  uint32_t i = (k * 2654435761u) & (h->cap - 1);

  while (h->keys[i] != k)
    i = (i + 1) & (h->cap - 1);
  return h->counts[i];
}

int64_t agg_hist_median(const struct agg_hist *h, uint64_t count, int64_t min,
                        int64_t max)
{
  return agg_hist_rank(h, count > 0 ? (count - 1) / 2 : 0, min, max);
}

/* The bucket keys in use, ascending (n of them); NULL when out of memory
 * or empty. Caller frees. */
static uint32_t *sorted_keys(const struct agg_hist *h, uint32_t *n)
{
  uint32_t *order = h->n ? malloc(h->n * sizeof(*order)) : NULL, i;

  *n = 0;
  for (i = 0; order != NULL && i < h->cap; i++)
    if (h->keys[i] != 0)
      order[(*n)++] = h->keys[i];
  if (order != NULL)
    qsort(order, *n, sizeof(*order), cmp_u32);
  return order;
}

int64_t agg_hist_rank(const struct agg_hist *h, uint64_t want, int64_t min,
                      int64_t max)
{
  uint32_t n, i, *order = sorted_keys(h, &n);
  uint64_t seen = 0;
  int64_t v = min; /* out of memory at the very end: degrade, never fail */

  if (h->n == 0)
    return 0;
  for (i = 0; i < n; i++) {
    seen += hist_count(h, order[i]);
    if (seen > want) {
      v = hist_value(order[i] - 1);
      break;
    }
  }
  free(order);
  return v < min ? min : v > max ? max : v;
}

int agg_hist_each(const struct agg_hist *h,
                  void (*fn)(void *ud, int64_t low, int64_t high,
                             uint64_t count),
                  void *ud)
{
  uint32_t n, i, *order = sorted_keys(h, &n);
  uint64_t low, width;

  if (order == NULL)
    return h->n == 0 ? 0 : TR_ENOMEM;
  for (i = 0; i < n; i++) {
    hist_range(order[i] - 1, &low, &width);
    fn(ud, (int64_t)low, (int64_t)(low + width), hist_count(h, order[i]));
  }
  free(order);
  return 0;
}

int agg_hist_merge(struct agg_hist *dst, const struct agg_hist *src)
{
  uint32_t i;

  for (i = 0; i < src->cap; i++)
    if (src->keys[i] != 0 && hist_bump(dst, src->keys[i], src->counts[i]) != 0)
      return TR_ENOMEM;
  return 0;
}

void agg_hist_free(struct agg_hist *h)
{
  if (h == NULL)
    return;
  free(h->keys);
  free(h->counts);
  memset(h, 0, sizeof(*h));
}

/* ---- correlation table ---- */

static uint32_t corr_home(const struct agg_corr *c, int64_t key)
{
  return agg_corr_home(c->cap, key);
}

/* Arrays for cap slots, all empty, in *c; 0 or TR_ENOMEM (c unchanged). */
static int corr_alloc(struct agg_corr *c, uint32_t cap)
{
  int64_t *keys = calloc(cap, sizeof(*keys));
  unsigned char *vals = calloc(cap, c->vsize), *used = calloc(cap, 1);

  if (keys == NULL || vals == NULL || used == NULL) {
    free(keys);
    free(vals);
    free(used);
    return TR_ENOMEM;
  }
  c->keys = keys;
  c->vals = vals;
  c->used = used;
  c->cap = cap;
  return 0;
}

/* The table starts small and doubles as entries come, up to twice max
 * slots: its memory follows what is in flight (a few hundred launches),
 * not the file, as a table of its full size would once every slot had
 * been written. */
int agg_corr_init(struct agg_corr *c, size_t vsize, uint32_t max)
{
  memset(c, 0, sizeof(*c));
  c->vsize = vsize;
  c->max = max;
  return corr_alloc(c, 16);
}

/* Slot of key, or of the empty slot where it would go. */
static uint32_t corr_find(const struct agg_corr *c, int64_t key)
{
  uint32_t i = corr_home(c, key);

  while (c->used[i] && c->keys[i] != key)
    i = (i + 1) & (c->cap - 1);
  return i;
}

/* Twice the slots, every entry moved over. 0 or TR_ENOMEM (unchanged). */
static int corr_grow(struct agg_corr *c)
{
  struct agg_corr old = *c;
  uint32_t i, j;

  if (corr_alloc(c, old.cap * 2) != 0)
    return TR_ENOMEM;
  for (i = 0; i < old.cap; i++) {
    if (!old.used[i])
      continue;
    j = corr_find(c, old.keys[i]);
    c->used[j] = 1;
    c->keys[j] = old.keys[i];
    memcpy(c->vals + (size_t)j * c->vsize, old.vals + (size_t)i * c->vsize,
           c->vsize);
  }
  free(old.keys);
  free(old.vals);
  free(old.used);
  return 0;
}

int agg_corr_put(struct agg_corr *c, int64_t key, const void *val)
{
  uint32_t i = corr_find(c, key);

  if (c->used[i])
    return TR_ECONFLICT;
  if (c->n >= c->max)
    return TR_ELIMIT;
  if ((c->n + 1) * 2 > c->cap) {
    if (corr_grow(c) != 0)
      return TR_ENOMEM;
    i = corr_find(c, key);
  }
  c->used[i] = 1;
  c->keys[i] = key;
  c->n++;
  memcpy(c->vals + (size_t)i * c->vsize, val, c->vsize);
  return 0;
}

/* Backward-shift removal (agg_corr_may_fill()): a table churned by
 * millions of launches never degrades. */
static void corr_remove(struct agg_corr *c, uint32_t i)
{
  uint32_t j = i, home;

  for (;;) {
    j = (j + 1) & (c->cap - 1);
    if (!c->used[j])
      break;
    home = corr_home(c, c->keys[j]);
    if (agg_corr_may_fill(home, i, j)) {
      c->keys[i] = c->keys[j];
      memcpy(c->vals + (size_t)i * c->vsize, c->vals + (size_t)j * c->vsize,
             c->vsize);
      i = j;
    }
  }
  c->used[i] = 0;
  c->n--;
}

/* The slot holding key, or UINT32_MAX. */
static uint32_t corr_slot(const struct agg_corr *c, int64_t key)
{
  uint32_t i;

  if (c->n == 0)
    return UINT32_MAX;
  i = corr_find(c, key);
  return c->used[i] ? i : UINT32_MAX;
}

void *agg_corr_get(struct agg_corr *c, int64_t key)
{
  uint32_t i = corr_slot(c, key);

  return i == UINT32_MAX ? NULL : c->vals + (size_t)i * c->vsize;
}

int agg_corr_remove(struct agg_corr *c, int64_t key)
{
  uint32_t i = corr_slot(c, key);

  if (i == UINT32_MAX)
    return 0;
  corr_remove(c, i);
  return 1;
}

int agg_corr_take(struct agg_corr *c, int64_t key, void *out)
{
  uint32_t i = corr_slot(c, key);

  if (i == UINT32_MAX)
    return 0;
  memcpy(out, c->vals + (size_t)i * c->vsize, c->vsize);
  corr_remove(c, i);
  return 1;
}

void agg_corr_drain(struct agg_corr *c, void (*fn)(void *ud, const void *val),
                    void *ud)
{
  uint32_t i;

  for (i = 0; i < c->cap; i++)
    if (c->used[i]) {
      fn(ud, c->vals + (size_t)i * c->vsize);
      c->used[i] = 0;
    }
  c->n = 0;
}

void agg_corr_free(struct agg_corr *c)
{
  if (c == NULL)
    return;
  free(c->keys);
  free(c->vals);
  free(c->used);
  memset(c, 0, sizeof(*c));
}
