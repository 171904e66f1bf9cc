/*
 * Memory over time: the [memory] events read and followed (memory.h).
 */
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "index/memory/memory_int.h"

#define LIVE_PER_NAME 16 /* live allocations per kernel name of the cap */

int mem_new(uint32_t max_names, const struct mem_names *nm,
            struct mem_lib **out)
{
  struct mem_lib *m = calloc(1, sizeof(*m));
  uint32_t names = max_names ? max_names : IDX_MAX_KERNEL_NAMES;

  *out = NULL;
  if (m == NULL)
    return TR_ENOMEM;
  m->max_owners = names;
  m->names = *nm;
  if (agg_corr_init(&m->live, sizeof(struct mem_alloc),
                    names * LIVE_PER_NAME) != 0) {
    free(m);
    return TR_ENOMEM;
  }
  *out = m;
  return 0;
}

void mem_free(struct mem_lib *m)
{
  if (m == NULL)
    return;
  for (uint32_t d = 0; d < m->ndev; d++)
    free(m->dev[d].tl);
  agg_corr_free(&m->live);
  agg_map_free(&m->owner_keys);
  free(m->owner);
  free(m);
}

/* ---- the event pass ---- */

static int is_memory(const struct idx_event *ev)
{
  return (ev->ph == 'i' || ev->ph == 'I') && ev->name.n == 8 &&
         memcmp(ev->name.p, "[memory]", 8) == 0;
}

int mem_parse(const struct idx_event *ev, struct mem_ev *out)
{
  const uint32_t need =
      IDX_HAS_TS | IDX_HAS_MEM_BYTES | IDX_HAS_MEM_ALLOC | IDX_HAS_MEM_TYPE;

  if (!is_memory(ev) || (ev->has & need) != need)
    return 0;
  /* The reader read the args (index/read/reader_int.h); an absent
   * reserved total, address or device id reads 0. */
  out->bytes = ev->mem_bytes;
  out->allocated = ev->mem_allocated;
  out->type = ev->mem_type;
  out->reserved = ev->has & IDX_HAS_MEM_RES ? ev->mem_reserved : 0;
  out->addr = ev->has & IDX_HAS_MEM_ADDR ? (uint64_t)ev->mem_addr : 0;
  out->id = ev->has & IDX_HAS_MEM_ID ? ev->mem_id : 0;
  return 1;
}

int mem_device(struct mem_lib *m, const struct mem_ev *e, uint32_t *dev)
{
  uint32_t d;

  m->events++;
  for (d = 0; d < m->ndev; d++)
    if (m->dev[d].type == e->type && m->dev[d].id == e->id) {
      *dev = d;
      return 0;
    }
  if (m->ndev == MEM_DEVICES) {
    m->devices_folded++;
    *dev = MEM_NONE;
    return 0;
  }
  memset(&m->dev[d], 0, sizeof(m->dev[d]));
  m->dev[d].type = e->type;
  m->dev[d].id = e->id;
  m->dev[d].peak = INT64_MIN;
  m->dev[d].peak_reserved = INT64_MIN;
  m->dev[d].peak_kind = MEM_NONE;
  *dev = m->ndev++;
  return 0;
}

void mem_span(struct mem_lib *m, int64_t t0, int64_t tend)
{
  int64_t span = tend - t0;

  m->t0 = t0;
  m->span = span;
  m->width = 0;
  m->nb = 0;
  if (span <= 0)
    return;
  /* agg_timeline_init()'s grid, four of its buckets to one */
  m->width = (span + TR_TIMELINE_BUCKETS - 1) / TR_TIMELINE_BUCKETS *
             (TR_TIMELINE_BUCKETS / TR_MEMORY_BUCKETS);
  m->nb = (uint32_t)((span + m->width - 1) / m->width);
}

/* ---- the walk ---- */

/* The timeline's bucket of ts on device v (allocated on first use). */
static int bucket_add(struct mem_lib *m, struct mem_dev *v, int64_t ts,
                      const struct mem_ev *e)
{
  struct mem_bucket *b;
  uint64_t i;

  if (m->nb == 0 || ts < m->t0)
    return 0;
  if (v->tl == NULL && (v->tl = calloc(m->nb, sizeof(*v->tl))) == NULL)
    return TR_ENOMEM;
  i = (uint64_t)(ts - m->t0) / (uint64_t)m->width;
  b = &v->tl[i < m->nb ? i : m->nb - 1];
  if (b->events == 0 || e->allocated < b->amin)
    b->amin = e->allocated;
  if (b->events == 0 || e->allocated > b->amax)
    b->amax = e->allocated;
  if (b->events == 0 || e->reserved > b->rmax)
    b->rmax = e->reserved;
  b->events++;
  return 0;
}

/* The owner of (device, op, module), made on first use; MEM_NONE past the
 * cap (then the allocation is not followed). */
static int owner_of(struct mem_lib *m, uint32_t dev, uint32_t op,
                    uint32_t module, uint32_t *out)
{
  uint32_t key[3] = { dev, op, module }, id;
  int rc;

  *out = MEM_NONE;
  if (agg_map_find(&m->owner_keys, key, sizeof(key), &id)) {
    *out = id;
    return 0;
  }
  if (m->owner_keys.n >= m->max_owners) {
    m->owners_folded++;
    return 0;
  }
  if ((rc = agg_map_intern(&m->owner_keys, key, sizeof(key), &id)) < 0 ||
      (rc = agg_grow(&m->owner, &m->owner_cap, id, sizeof(*m->owner))) != 0)
    return TR_ENOMEM;
  memset(&m->owner[id], 0, sizeof(m->owner[id]));
  m->owner[id].dev = dev;
  m->owner[id].op = op;
  m->owner[id].module = module;
  *out = id;
  return 0;
}

/* The owner's live figures are about to change: when they have not since
 * its device's latest peak, they are what was live at that peak. */
static void owner_touch(struct mem_lib *m, struct mem_owner *o)
{
  const struct mem_dev *v = &m->dev[o->dev];

  if (o->stamp < v->peak_stamp) {
    o->peak_bytes = o->live_bytes;
    o->peak_count = o->live_count;
  }
  o->stamp = m->stamp;
}

static int64_t live_key(uint32_t dev, uint64_t addr)
{
  return (int64_t)(addr ^ (uint64_t)dev << 57);
}

static int on_alloc(struct mem_lib *m, uint32_t dev, const struct mem_ev *e,
                    uint32_t op, uint32_t module)
{
  struct mem_alloc a = { e->bytes, MEM_NONE };
  struct mem_owner *o;
  int rc;

  if ((rc = owner_of(m, dev, op, module, &a.owner)) != 0)
    return rc;
  if (a.owner == MEM_NONE) {
    m->untracked++;
    return 0;
  }
  o = &m->owner[a.owner];
  o->allocs++;
  o->alloc_bytes += e->bytes;
  rc = agg_corr_put(&m->live, live_key(dev, e->addr), &a);
  if (rc == TR_ECONFLICT) { /* freed without its event: the old one goes */
    struct mem_alloc old;

    (void)agg_corr_take(&m->live, live_key(dev, e->addr), &old);
    owner_touch(m, &m->owner[old.owner]);
    m->owner[old.owner].live_bytes -= old.bytes;
    m->owner[old.owner].live_count--;
    rc = agg_corr_put(&m->live, live_key(dev, e->addr), &a);
  }
  if (rc != 0) { /* TR_ELIMIT: no room to follow it */
    m->untracked++;
    return 0;
  }
  owner_touch(m, o);
  o->live_bytes += e->bytes;
  o->live_count++;
  return 0;
}

static void on_release(struct mem_lib *m, uint32_t dev, const struct mem_ev *e)
{
  struct mem_alloc a;
  struct mem_owner *o;

  if (!agg_corr_take(&m->live, live_key(dev, e->addr), &a)) {
    m->dev[dev].freed_before -= e->bytes; /* allocated before the trace */
    return;
  }
  o = &m->owner[a.owner];
  owner_touch(m, o);
  o->live_bytes -= a.bytes;
  o->live_count--;
}

int mem_event(struct mem_lib *m, uint32_t dev, int64_t ts,
              const struct mem_ev *e, uint32_t op, uint32_t module,
              uint32_t kind)
{
  struct mem_dev *v;
  int rc = 0;

  if (dev == MEM_NONE || dev >= m->ndev)
    return 0;
  v = &m->dev[dev];
  m->stamp++;
  if (v->events++ == 0)
    v->first = e->allocated;
  v->last = e->allocated;
  if (e->reserved > v->peak_reserved)
    v->peak_reserved = e->reserved;
  if (e->bytes > 0) {
    v->allocs++;
    v->alloc_bytes += e->bytes;
    rc = on_alloc(m, dev, e, op, module);
  } else if (e->bytes < 0) {
    v->frees++;
    v->freed_bytes -= e->bytes;
    on_release(m, dev, e);
  }
  /* After the event's own change: Total Allocated counts it. */
  if (e->allocated > v->peak) {
    v->peak = e->allocated;
    v->peak_ts = ts;
    v->peak_kind = kind;
    v->peak_stamp = ++m->stamp;
  }
  return rc != 0 ? rc : bucket_add(m, v, ts, e);
}
