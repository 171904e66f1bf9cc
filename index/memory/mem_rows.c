/*
 * Memory over time: the pass's head and its rows (memory.h).
 */
#include <stdio.h>
#include <string.h>

#include "index/memory/memory_int.h"

/* PyTorch's c10::DeviceType names, by kineto's Device Type. */
static const char *const type_names[] = {
  "cpu",  "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip",
  "fpga", "maia", "xla",    "vulkan", "metal",  "xpu",   "mps",
  "meta", "hpu",  "ve",     "lazy",   "ipu",    "mtia",  "privateuseone",
};

/* A device's name as torch.device prints it: "cuda:0", "cpu". */
static void device_name(const struct mem_dev *v, char *buf, size_t size)
{
  size_t nt = sizeof(type_names) / sizeof(type_names[0]);
  char type[32];

  if (v->type >= 0 && (size_t)v->type < nt)
    snprintf(type, sizeof(type), "%s", type_names[v->type]);
  else
    snprintf(type, sizeof(type), "type%lld", (long long)v->type);
  if (v->id < 0)
    snprintf(buf, size, "%s", type);
  else
    snprintf(buf, size, "%s:%lld", type, (long long)v->id);
}

static void never_freed(void *ud, const void *val)
{
  struct mem_lib *m = ud;
  const struct mem_alloc *a = val;

  m->owner[a->owner].never_bytes += a->bytes;
  m->owner[a->owner].never_count++;
}

static struct agg_txt txt_of(struct agg_txt (*fn)(void *, uint32_t), void *ud,
                             uint32_t id)
{
  return id == MEM_NONE || fn == NULL ? agg_txt(NULL) : fn(ud, id);
}

static void device_row(const struct mem_lib *m, uint32_t d, int64_t t0,
                       struct agg_out *o)
{
  const struct mem_names *nm = &m->names;
  const struct mem_dev *v = &m->dev[d];
  struct agg_sum_memory r;
  char name[64];

  AGG_SUM_FILLS(TR_SUM_MEMORY, 17);
  memset(&r, 0, sizeof(r));
  device_name(v, name, sizeof(name));
  r.device = agg_txt(name);
  r.device_type = v->type;
  r.device_id = v->id;
  r.events = (int64_t)v->events;
  r.allocs = (int64_t)v->allocs;
  r.frees = (int64_t)v->frees;
  r.alloc_bytes = v->alloc_bytes;
  r.freed_bytes = v->freed_bytes;
  r.peak_allocated_bytes = v->peak;
  r.peak_ns = v->peak_ts - t0;
  r.peak_step = txt_of(nm->kind, nm->ud, v->peak_kind);
  r.peak_reserved_bytes = v->peak_reserved;
  r.first_allocated_bytes = v->first;
  r.last_allocated_bytes = v->last;
  for (uint32_t k = 0; k < m->owner_keys.n; k++)
    if (m->owner[k].dev == d) {
      r.never_freed_bytes += m->owner[k].never_bytes;
      r.never_freed_count += m->owner[k].never_count;
    }
  r.freed_before_bytes = v->freed_before;
  agg_out_memory(o, &r);
}

static void timeline_rows(const struct mem_lib *m, uint32_t d,
                          struct agg_out *o)
{
  const struct mem_dev *v = &m->dev[d];
  char name[64];

  AGG_SUM_FILLS(TR_SUM_MEMORY_TIMELINE, 8);
  device_name(v, name, sizeof(name));
  for (uint32_t i = 0; v->tl != NULL && i < m->nb && o->rc == 0; i++) {
    const struct mem_bucket *b = &v->tl[i];
    int64_t end = (int64_t)(i + 1) * m->width;
    struct agg_sum_memory_timeline r = {
      .device = agg_txt(name),
      .index = i,
      .start_ns = (int64_t)i * m->width,
      .end_ns = end < m->span ? end : m->span,
      .events = (int64_t)b->events,
      .allocated_min_bytes = b->amin,
      .allocated_max_bytes = b->amax,
      .reserved_max_bytes = b->rmax,
    };

    if (b->events > 0)
      agg_out_memory_timeline(o, &r);
  }
}

static void owner_row(const struct mem_lib *m, const struct mem_owner *w,
                      struct agg_out *o)
{
  const struct mem_names *nm = &m->names;
  const struct mem_dev *v = &m->dev[w->dev];
  int changed = w->stamp > v->peak_stamp; /* since the peak */
  struct agg_sum_memory_op r;
  char name[64];

  AGG_SUM_FILLS(TR_SUM_MEMORY_OP, 9);
  device_name(v, name, sizeof(name));
  r.device = agg_txt(name);
  r.op = txt_of(nm->op, nm->ud, w->op);
  r.module = txt_of(nm->module, nm->ud, w->module);
  r.allocs = (int64_t)w->allocs;
  r.alloc_bytes = w->alloc_bytes;
  r.peak_live_bytes = changed ? w->peak_bytes : w->live_bytes;
  r.peak_live_count = changed ? w->peak_count : w->live_count;
  r.never_freed_bytes = w->never_bytes;
  r.never_freed_count = w->never_count;
  agg_out_memory_op(o, &r);
}

/* ---- the pass (memory.h) ---- */

/* Its scalars; the allocations still live at the walk's end are the
 * never freed ones, each counted to its owner here, once, before the
 * rows. */
void agg_memory_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  struct mem_lib *m = a->mem;

  if (m != NULL)
    agg_corr_drain(&m->live, never_freed, m);
  r->memory_events = m ? (int64_t)m->events : 0;
  r->memory_untracked = m ? (int64_t)(m->untracked + m->devices_folded) : 0;
}

void mem_device_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct mem_lib *m = a->mem;

  for (uint32_t d = 0; m != NULL && d < m->ndev && o->rc == 0; d++)
    device_row(m, d, a->t0_ns, o);
}

void mem_timeline_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct mem_lib *m = a->mem;

  for (uint32_t d = 0; m != NULL && d < m->ndev && o->rc == 0; d++)
    timeline_rows(m, d, o);
}

void mem_op_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct mem_lib *m = a->mem;

  for (uint32_t k = 0; m != NULL && k < m->owner_keys.n && o->rc == 0; k++)
    if (m->owner[k].allocs > 0)
      owner_row(m, &m->owner[k], o);
}
