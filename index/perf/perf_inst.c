/*
 * Op instances and their kernel time (perf.h): a fixed table of open
 * instances, a min-heap of their frames' ends, and a replay's capture
 * instances. An instance closes once its frame has ended and no launch
 * under it awaits a record: then its busy time (the union of its
 * records' intervals) goes to its group.
 */
#include <stdlib.h>
#include <string.h>

#include "index/perf/perf_int.h"

#define MAX_CINST (1u << 20) /* capture op instances of a rank */

/* An instance's figures into its group (TraceLens's row of one event):
 * kernel time, and the rates' inverse time when it has any. */
static int account(struct pf_lib *lib, uint32_t proto, unsigned flags,
                   int inner, uint8_t trans, int64_t label, int64_t busy,
                   uint32_t kernels)
{
  struct pf_group *g;
  uint32_t id;
  int rc = pf_group_of(lib, proto, flags, trans, label, &id);

  if (rc != 0 || id == PF_NONE)
    return rc;
  g = &lib->group[id];
  if (g->outer && inner)
    return 0; /* the modeled op inside has the row (docs/PERF.md) */
  g->count++;
  g->kernels += kernels;
  g->nested += (flags & PF_I_NESTED) != 0;
  g->ns += busy;
  g->min_ns = busy < g->min_ns ? busy : g->min_ns;
  g->max_ns = busy > g->max_ns ? busy : g->max_ns;
  if (busy > 0) {
    g->timed++;
    g->inv_s += 1e9 / (double)busy;
  }
  return agg_hist_add(&g->hist, busy);
}

/* ---- the heap of frame ends ---- */

static void heap_up(struct pf_lib *lib, size_t i)
{
  struct pf_heap *h = lib->heap, x = h[i];

  while (i > 0 && h[(i - 1) / 2].end > x.end) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = x;
}

static void heap_pop(struct pf_lib *lib)
{
  struct pf_heap *h = lib->heap, x = h[--lib->nheap];
  size_t i = 0, n = lib->nheap;

  while (2 * i + 1 < n) {
    size_t c = 2 * i + 1;

    if (c + 1 < n && h[c + 1].end < h[c].end)
      c++;
    if (h[c].end >= x.end)
      break;
    h[i] = h[c];
    i = c;
  }
  if (n > 0)
    h[i] = x;
}

static int heap_push(struct pf_lib *lib, uint32_t id)
{
  if (agg_grow(&lib->heap, &lib->heap_cap, lib->nheap, sizeof(*lib->heap)))
    return TR_ENOMEM;
  lib->heap[lib->nheap].end = lib->inst[id].end;
  lib->heap[lib->nheap].id = id;
  heap_up(lib, lib->nheap++);
  lib->inst[id].in_heap = 1;
  return 0;
}

/* ---- instances ---- */

int pf_inst_open(struct pf_lib *lib, uint32_t proto, int64_t start, int64_t end,
                 int64_t label, unsigned flags, uint32_t *inst)
{
  struct pf_inst *i;
  uint32_t id;

  (void)start;
  *inst = PF_NONE;
  if (lib->nfree == 0) {
    lib->inst_lost++;
    return 0;
  }
  id = lib->free_ids[--lib->nfree];
  i = &lib->inst[id];
  memset(i, 0, sizeof(*i));
  i->used = 1;
  i->proto = proto;
  i->flags = (uint8_t)flags;
  i->end = end;
  i->label = label;
  i->until = INT64_MIN;
  *inst = id;
  return heap_push(lib, id);
}

void pf_inst_inner(struct pf_lib *lib, uint32_t inst)
{
  lib->inst[inst].inner = 1;
}

void pf_inst_launch(struct pf_lib *lib, uint32_t inst)
{
  lib->inst[inst].pending++;
}

/* Adds [start, start + dur) to the union busy (until: the end of the
 * intervals so far), records coming in start order. */
static void add_busy(int64_t *busy, int64_t *until, int64_t start, int64_t dur)
{
  int64_t end = start + dur;

  if (start >= *until)
    *busy += dur;
  else if (end > *until)
    *busy += end - *until;
  if (end > *until)
    *until = end;
}

void pf_inst_record(struct pf_lib *lib, uint32_t inst, int64_t start,
                    int64_t dur, uint8_t trans)
{
  struct pf_inst *i = &lib->inst[inst];

  add_busy(&i->busy, &i->until, start, dur);
  i->kernels++;
  if (i->trans == 0)
    i->trans = trans;
}

void pf_inst_settle(struct pf_lib *lib, uint32_t inst)
{
  struct pf_inst *i = &lib->inst[inst];

  if (i->pending > 0 && --i->pending == 0 && !i->in_heap)
    (void)heap_push(lib, inst); /* out of memory: closed at the end */
}

static int inst_close(struct pf_lib *lib, uint32_t id)
{
  struct pf_inst *i = &lib->inst[id];
  int rc = account(lib, i->proto, i->flags, i->inner, i->trans, i->label,
                   i->busy, i->kernels);

  i->used = 0;
  lib->free_ids[lib->nfree++] = id;
  return rc;
}

int pf_tick(struct pf_lib *lib, int64_t now)
{
  int rc = 0;

  while (rc == 0 && lib->nheap > 0 && lib->heap[0].end <= now) {
    uint32_t id = lib->heap[0].id;

    heap_pop(lib);
    lib->inst[id].in_heap = 0;
    if (lib->inst[id].used && lib->inst[id].pending == 0)
      rc = inst_close(lib, id);
  }
  return rc;
}

int pf_end(struct pf_lib *lib)
{
  int rc = 0;

  lib->nheap = 0;
  for (uint32_t id = 0; id < PF_OPEN && rc == 0; id++)
    if (lib->inst[id].used)
      rc = inst_close(lib, id);
  return rc;
}

/* ---- graph replays ---- */

int pf_capture_inst(struct pf_lib *lib, uint32_t proto, uint32_t parent,
                    unsigned flags, uint32_t graph, int64_t end,
                    uint32_t *cinst)
{
  struct pf_cinst *c;

  *cinst = PF_NONE;
  if (lib->ncinst >= MAX_CINST) {
    lib->inst_lost++;
    return 0;
  }
  if (agg_grow(&lib->cinst, &lib->cinst_cap, lib->ncinst, sizeof(*c)) != 0)
    return TR_ENOMEM;
  c = &lib->cinst[lib->ncinst];
  c->proto = proto;
  c->parent = parent;
  c->graph = graph;
  c->end = end;
  c->flags = (uint8_t)(flags | (parent != PF_NONE ? PF_I_NESTED : 0));
  c->inner = 0;
  if (parent != PF_NONE)
    lib->cinst[parent].inner = 1;
  *cinst = (uint32_t)lib->ncinst++;
  return 0;
}

uint32_t pf_capture_parent(const struct pf_lib *lib, uint32_t cinst)
{
  return lib->cinst[cinst].parent;
}

uint32_t pf_capture_count(const struct pf_lib *lib)
{
  return (uint32_t)lib->ncinst;
}

int pf_replay_record(struct pf_lib *lib, uint32_t cinst, int64_t start,
                     int64_t dur, uint8_t trans)
{
  for (uint32_t c = cinst; c != PF_NONE; c = lib->cinst[c].parent) {
    struct pf_racc *a = agg_corr_get(&lib->racc, c), fresh = { 0 };

    if (a == NULL) {
      fresh.until = INT64_MIN;
      if (agg_corr_put(&lib->racc, c, &fresh) != 0 ||
          agg_grow(&lib->rlist, &lib->rlist_cap, lib->nrlist,
                   sizeof(*lib->rlist)) != 0)
        return TR_ENOMEM;
      lib->rlist[lib->nrlist++] = c;
      a = agg_corr_get(&lib->racc, c);
    }
    add_busy(&a->busy, &a->until, start, dur);
    a->kernels++;
    if (a->trans == 0)
      a->trans = trans;
  }
  return 0;
}

int pf_replay_end(struct pf_lib *lib, int64_t label, uint32_t graph,
                  uint32_t first, uint32_t end, int64_t win_end)
{
  struct pf_racc a;
  int rc = 0;

  for (uint32_t c = first; c < end && c < lib->ncinst && rc == 0; c++) {
    const struct pf_cinst *ci = &lib->cinst[c];

    if (ci->graph != graph || ci->end > win_end)
      continue;
    if (!agg_corr_take(&lib->racc, c, &a))
      memset(&a, 0, sizeof(a)); /* an op of the window without records */
    rc = account(lib, ci->proto, ci->flags, ci->inner, a.trans, label, a.busy,
                 a.kernels);
  }
  /* What is left had records but lies outside the window: not the
   * replay's (an op around the whole capture). */
  for (size_t k = 0; k < lib->nrlist; k++)
    (void)agg_corr_take(&lib->racc, lib->rlist[k], &a);
  lib->nrlist = 0;
  return rc;
}
