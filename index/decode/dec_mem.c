/*
 * [memory] events through decode (decode.h): the event pass puts each as
 * three records, so that the walk meets it in time order with its
 * thread's stack at hand and hands it whole to the memory room
 * (index/memory/memory.h) with the op and module that made it; and the
 * room's rows with decode's names.
 */
#include <string.h>

#include "index/decode/decode_int.h"

#define MEM_LANES (1u << 30) /* lanes a record can say (dur's bits) */
#define MEM_PARTS (1u << 16) /* events of one time stamp joined at once */

struct part { /* what DR_MEM and DR_MEM_TOTALS say */
  struct mem_ev e;
  uint8_t have;
};

static int put3(struct dec_file *d, int64_t ts, const struct mem_ev *e,
                uint32_t lane, uint32_t dev)
{
  uint32_t seq = (uint32_t)d->mem_seq;
  struct agg_rec a = { ts, e->bytes, (int64_t)e->addr, DR_MEM, seq };
  struct agg_rec b = { ts, e->allocated, e->reserved, DR_MEM_TOTALS, seq };
  struct agg_rec c = { ts, (int64_t)lane << 16 | dev, (int64_t)d->mem_seq,
                       DR_MEM_END, seq };
  int rc;

  d->mem_seq++;
  if ((rc = agg_runs_add(&d->runs, &a)) != 0 ||
      (rc = agg_runs_add(&d->runs, &b)) != 0)
    return rc;
  return agg_runs_add(&d->runs, &c);
}

int dec_memory(struct dec_file *d, const struct idx_event *ev)
{
  struct mem_ev e;
  uint32_t lane, dev;
  int rc;

  if (d->mem == NULL || !mem_parse(ev, &e))
    return 0;
  if ((rc = mem_device(d->mem, &e, &dev)) != 0 || dev == MEM_NONE ||
      (rc = dec_lane_of(d, ev, &lane)) != 0)
    return rc;
  return put3(d, ev->ts_ns, &e, lane < MEM_LANES ? lane : MEM_LANES, dev);
}

void dec_span(struct dec_file *d, int64_t t0_ns, int64_t tend_ns)
{
  if (d != NULL && d->mem != NULL)
    mem_span(d->mem, t0_ns, tend_ns);
}

/* ---- the walk ---- */

int dec_mem_part(struct agg_corr *parts, const struct agg_rec *r)
{
  struct part fresh, *p = agg_corr_get(parts, r->id);

  if (p == NULL) {
    memset(&fresh, 0, sizeof(fresh));
    if (agg_corr_put(parts, r->id, &fresh) != 0)
      return 0; /* more events at one time than joined: left out */
    p = agg_corr_get(parts, r->id);
  }
  if ((r->type & 0xff) == DR_MEM) {
    p->e.addr = (uint64_t)r->aux;
    p->e.bytes = r->dur_ns;
  } else {
    p->e.reserved = r->aux;
    p->e.allocated = r->dur_ns;
  }
  p->have |= (r->type & 0xff) == DR_MEM ? 1 : 2;
  return 0;
}

uint32_t dec_mem_lane(const struct agg_rec *r)
{
  uint32_t lane = (uint32_t)((uint64_t)r->dur_ns >> 16);

  return lane < MEM_LANES ? lane : UINT32_MAX;
}

int dec_mem_end(struct dec_file *d, struct agg_corr *parts,
                const struct agg_rec *r, uint32_t node, uint32_t kind)
{
  const struct dec_ident *id = NULL;
  struct part p;

  if (!agg_corr_take(parts, r->id, &p) || p.have != 3)
    return 0;
  if (node != HS_ROOT && (id = dec_ident_of(d, node)) == NULL)
    return TR_ENOMEM;
  return mem_event(d->mem, (uint32_t)(r->dur_ns & 0xffff), r->start_ns, &p.e,
                   id && id->op != DEC_NONE ? id->op : MEM_NONE,
                   id && id->module != DEC_NONE ? id->module : MEM_NONE,
                   kind < DEC_MAX_KINDS ? kind : MEM_NONE);
}

int dec_mem_parts_init(struct agg_corr *parts)
{
  return agg_corr_init(parts, sizeof(struct part), MEM_PARTS);
}
