/*
 * [memory] events through decode (decode.h): the event pass puts each as
 * two records, so that the walk meets it in time order with its thread's
 * stack at hand and hands it whole to the memory room
 * (index/memory/memory.h) with the op and module that made it; and the
 * room's rows with decode's names. The two are joined by their time and
 * thread: DR_MEM sorts before DR_MEM_TOTALS at one time, and two events
 * of one thread at one nanosecond (an allocator takes longer) are joined
 * in the order they sort, their figures each their own.
 */
#include <string.h>

#include "index/decode/decode_int.h"

#define MEM_PARTS (1u << 16) /* events of one time stamp joined at once */

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
  {
    struct agg_rec a = { ev->ts_ns, e.bytes, (int64_t)e.addr, DR_MEM, lane };
    struct agg_rec b = { ev->ts_ns, e.allocated, e.reserved,
                         DR_MEM_TOTALS | dev << 8, lane };

    if ((rc = agg_runs_add(&d->runs[DS_MEM], &a)) != 0)
      return rc;
    return agg_runs_add(&d->runs[DS_MEM], &b);
  }
}

void dec_span(struct dec_file *d, int64_t t0_ns, int64_t tend_ns)
{
  if (d != NULL && d->mem != NULL)
    mem_span(d->mem, t0_ns, tend_ns);
}

/* ---- the walk ---- */

int dec_mem_part(struct agg_corr *parts, const struct agg_rec *r)
{
  struct mem_ev e = { .bytes = r->dur_ns, .addr = (uint64_t)r->aux };

  /* A second event of the thread at this time before the first was
   * joined replaces it: its totals come next. */
  (void)agg_corr_remove(parts, r->id);
  return agg_corr_put(parts, r->id, &e) == TR_ENOMEM ? TR_ENOMEM : 0;
}

int dec_mem_end(struct dec_file *d, struct agg_corr *parts,
                const struct agg_rec *r, uint32_t node, uint32_t kind)
{
  const struct dec_ident *id = NULL;
  struct mem_ev e;

  if (!agg_corr_take(parts, r->id, &e))
    return 0; /* its first record left out (more events at one time) */
  e.allocated = r->dur_ns;
  e.reserved = r->aux;
  if (node != HS_ROOT && (id = dec_ident_of(d, node)) == NULL)
    return TR_ENOMEM;
  return mem_event(d->mem, r->type >> 8, r->start_ns, &e,
                   id && id->op != DEC_NONE ? id->op : MEM_NONE,
                   id && id->module != DEC_NONE ? id->module : MEM_NONE,
                   kind < DEC_MAX_KINDS ? kind : MEM_NONE);
}

int dec_mem_parts_init(struct agg_corr *parts)
{
  return agg_corr_init(parts, sizeof(struct mem_ev), MEM_PARTS);
}
