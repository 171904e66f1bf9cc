/*
 * One step's critical path (docs/CRITICAL_PATH.md): the graph
 * Holistic Trace Analysis builds (hta/analyzers/critical_path_analysis.py)
 * over the step's events, and its longest path.
 *
 * Nodes: the start and the end of every CPU op, runtime call, kernel, copy
 * and memset of the step (event i: nodes 2i and 2i + 1). Edges:
 *
 *   host chain   per thread, the op and call boundaries in call-stack order
 *                (enter, nested enters and exits, exit): each to the next
 *                weighs the time between them; from one top-level op's end
 *                to the next top-level op's start weighs 0 (HTA: ops depend
 *                on the previous one, the time between is not work); the
 *                exit of a blocking call weighs 0 (its wait is the device's)
 *   device       start to end of each record (its duration); from its
 *                launch call's start (the launch delay) when every earlier
 *                launch on its stream had started by the launch, no other
 *                launch on its stream came before it started, the stream's
 *                previous record had ended by the launch, and so had the
 *                record it waits for; else from the previous record's end on
 *                its stream (kernel-to-kernel gap) when that is under 1.5 ms
 *                and after what it waits for
 *   sync (0)     cuda_sync events: Stream Wait Event makes the first record
 *                launched after the cudaStreamWaitEvent call (its thread,
 *                its stream) wait for the record of the last launch before
 *                the awaited cudaEventRecord on the recorded stream; Event
 *                Sync ties that record's end to the cudaEventSynchronize
 *                call's end; Stream Sync the stream's last record's end to
 *                the call's end, Context Sync every stream's. A trace
 *                without cuda_sync events (ROCm's) gets them from blocking
 *                calls: a copy call's own record, a synchronize call every
 *                stream's last record, each when it ended by the call's end.
 *
 * The longest path is found in topological order (Kahn's algorithm; a
 * graph with a cycle, which only clock skew on sync edges can make, is
 * counted and not analysed). Among equally long paths it takes, into each
 * node, the edge from the earliest node (nodes are numbered in the step's
 * event order: host events by start, then device events), then by edge
 * type, and ends at the earliest node of the largest length. Negative weights
 * (a child starting before its parent, a kernel before its launch) are
 * 0. Slack of a record: the length minus the longest path through it.
 */
#include <stdlib.h>
#include <string.h>

#include "index/cpath/cpath.h"

#define KK_THRESHOLD_NS 1500000 /* HTA's KERNEL_KERNEL_DELAY_THRESHOLD_US */
#define NONE            UINT32_MAX

enum edge_type { E_OP, E_DEP, E_BLOCK, E_LAUNCH, E_KK, E_SYNC };

/* What an edge is attributed to (HTA's _attribute_edge): an event, or the
 * call-stack parent of one. */
enum { A_NONE, A_EVENT, A_PARENT };

struct edge {
  uint32_t src, dst; /* node ids */
  int64_t w;
  uint8_t type, atype;
  uint32_t attr; /* event index */
};

struct graph {
  const struct cp_ev *ev;
  uint32_t n;
  struct edge *e;
  size_t ne, cap;
  struct cp_scratch *sc;
  int rc;
};

void *cp_scratch(struct cp_scratch *s, enum cp_buf b, size_t bytes, int zero)
{
  if (bytes == 0)
    bytes = 1;
  if (bytes > s->cap[b]) {
    size_t cap = s->cap[b] * 2 > bytes ? s->cap[b] * 2 : bytes;
    void *p = realloc(s->p[b], cap);

    if (p == NULL)
      return NULL;
    s->p[b] = p;
    s->cap[b] = cap;
  }
  if (zero)
    memset(s->p[b], 0, bytes);
  return s->p[b];
}

void cp_scratch_free(struct cp_scratch *s)
{
  for (int b = 0; b < CP_BUFS; b++)
    free(s->p[b]);
  memset(s, 0, sizeof(*s));
}

/* Scratch buffer b as an array of n elements of *type. */
#define SCRATCH(g, b, n, type, zero)                                           \
  ((type *)cp_scratch((g)->sc, (b), ((size_t)(n) + 1) * sizeof(type), (zero)))

static int is_host(const struct cp_ev *e)
{
  return e->kind == CP_EV_OP || e->kind == CP_EV_RT;
}

static int64_t node_time(const struct graph *g, uint32_t node)
{
  const struct cp_ev *e = &g->ev[node / 2];

  return node % 2 ? e->end : e->start;
}

/* Adds an edge; timed types weigh the time between the nodes. */
static void add(struct graph *g, uint32_t src, uint32_t dst, int type,
                int atype, uint32_t attr)
{
  struct edge *e;
  int64_t w = 0;

  if (g->rc != 0)
    return;
  if (g->ne == g->cap) {
    struct edge *e2 = SCRATCH(g, CP_B_EDGES, 2 * g->cap, struct edge, 0);

    if (e2 == NULL) {
      g->rc = TR_ENOMEM;
      return;
    }
    g->e = e2;
    g->cap *= 2;
  }
  if (type == E_OP || type == E_LAUNCH || type == E_KK)
    w = node_time(g, dst) - node_time(g, src);
  e = &g->e[g->ne++];
  e->src = src;
  e->dst = dst;
  e->w = w > 0 ? w : 0;
  e->type = (uint8_t)type;
  e->atype = (uint8_t)atype;
  e->attr = attr;
}

/* ---- the host chains ---- */

struct chain {     /* one thread's walk */
  uint32_t last;   /* last node, NONE */
  uint32_t top;    /* innermost open op, NONE */
  uint32_t depth;  /* open ops */
  uint32_t parent; /* the event whose parent the next case-4 edge takes */
};

/* HTA's attribution of an edge from node src to node dst of the chain:
 * from a start, its event; end to end, the ending event; end to start,
 * the call-stack parent of the event that ended. */
static void chain_edge(struct graph *g, struct chain *c, uint32_t dst, int type)
{
  uint32_t src = c->last;

  if (type == E_DEP)
    add(g, src, dst, E_DEP, A_NONE, 0);
  else if (src % 2 == 0)
    add(g, src, dst, type, A_EVENT, src / 2);
  else if (dst % 2 == 1)
    add(g, src, dst, type, A_EVENT, dst / 2);
  else
    add(g, src, dst, type, A_PARENT, c->parent);
}

static void chain_exit(struct graph *g, struct chain *c, uint32_t *below)
{
  uint32_t i = c->top;

  if (c->last != NONE)
    chain_edge(g, c, 2 * i + 1,
               (g->ev[i].flags & CP_F_BLOCKING) ? E_BLOCK : E_OP);
  c->last = 2 * i + 1;
  c->parent = i;
  c->top = below[i];
  c->depth--;
}

static void chain_enter(struct graph *g, struct chain *c, uint32_t i,
                        uint32_t *below)
{
  if (c->last != NONE)
    chain_edge(g, c, 2 * i, c->depth == 0 ? E_DEP : E_OP);
  c->last = 2 * i;
  c->parent = i;
  below[i] = c->top;
  c->top = i;
  c->depth++;
}

/* The chains of every thread: ops nest by time (an op ends before the
 * next one of its thread that starts at or after its end begins). A step
 * has few threads: their chains are found by a scan. */
static int host_chains(struct graph *g)
{
  uint32_t *below = SCRATCH(g, CP_B_BELOW, g->n, uint32_t, 0), i;
  struct chain *ch = NULL;
  uint16_t *lane = NULL;
  size_t nch = 0, cap = 0, lcap = 0, k;

  if (below == NULL)
    return TR_ENOMEM;
  for (i = 0; i < g->n && g->rc == 0; i++) {
    const struct cp_ev *e = &g->ev[i];
    struct chain *c;

    if (!is_host(e))
      continue;
    for (k = 0; k < nch && lane[k] != e->lane; k++)
      ;
    if (k == nch) {
      if (agg_grow(&ch, &cap, nch, sizeof(*ch)) != 0 ||
          agg_grow(&lane, &lcap, nch, sizeof(*lane)) != 0) {
        g->rc = TR_ENOMEM;
        break;
      }
      ch[nch] = (struct chain){ NONE, NONE, 0, 0 };
      lane[nch++] = e->lane;
    }
    c = &ch[k];
    while (c->top != NONE && g->ev[c->top].end <= e->start)
      chain_exit(g, c, below);
    chain_enter(g, c, i, below);
  }
  for (k = 0; k < nch; k++)
    while (ch[k].top != NONE && g->rc == 0)
      chain_exit(g, &ch[k], below);
  free(ch);
  free(lane);
  return g->rc;
}

/* ---- the device side ---- */

struct lane_last { /* the last record of a lane, in processing order */
  uint16_t lane;
  uint32_t ev;
};

struct corr_map { /* runtime calls by correlation */
  int64_t *key;
  uint32_t *val;
  uint32_t cap;
};

struct dev { /* the device walk's state */
  struct graph *g;
  struct lane_last *last;
  size_t nlast, last_cap;
  uint32_t *ksync; /* by record: the record it waits for, NONE */
  struct corr_map calls;
  /* Launches by lane, in start order: (launch event, its lane's last
   * record of that launch, its first record). */
  struct launch {
    uint16_t lane;
    uint32_t call, first, lastrec;
  } * launches;
  size_t nlaunches;
  /* The records of each call (CSR): recs[rec_at[c] .. rec_at[c + 1]). */
  uint32_t *rec_at, *recs;
};

static uint32_t hash_corr(int64_t k)
{
  uint64_t h = (uint64_t)k * 0x9e3779b97f4a7c15ull;

  return (uint32_t)(h >> 32);
}

static int calls_init(struct corr_map *m, const struct graph *g)
{
  uint32_t cap = 16;

  while (cap < 2 * g->n)
    cap *= 2;
  m->cap = cap;
  m->key = SCRATCH(g, CP_B_CALLKEY, cap, int64_t, 0);
  m->val = SCRATCH(g, CP_B_CALLVAL, cap, uint32_t, 0);
  if (m->key == NULL || m->val == NULL)
    return TR_ENOMEM;
  memset(m->key, 0xff, cap * sizeof(*m->key)); /* -1: empty */
  for (uint32_t i = 0; i < g->n; i++) {
    uint32_t h;

    if (g->ev[i].kind != CP_EV_RT || g->ev[i].corr < 0)
      continue;
    for (h = hash_corr(g->ev[i].corr) & (cap - 1); m->key[h] != -1;
         h = (h + 1) & (cap - 1))
      if (m->key[h] == g->ev[i].corr)
        break;
    m->key[h] = g->ev[i].corr;
    m->val[h] = i;
  }
  return 0;
}

static uint32_t call_of(const struct corr_map *m, int64_t corr)
{
  if (corr < 0)
    return NONE;
  for (uint32_t h = hash_corr(corr) & (m->cap - 1); m->key[h] != -1;
       h = (h + 1) & (m->cap - 1))
    if (m->key[h] == corr)
      return m->val[h];
  return NONE;
}

static struct lane_last *last_of(struct dev *d, uint16_t lane)
{
  for (size_t i = 0; i < d->nlast; i++)
    if (d->last[i].lane == lane)
      return &d->last[i];
  return NULL;
}

static int launch_cmp(const void *x, const void *y)
{
  const struct launch *a = x, *b = y;

  if (a->lane != b->lane)
    return a->lane < b->lane ? -1 : 1;
  return (a->call > b->call) - (a->call < b->call);
}

/* The launches of the step by lane: each launch call with its first and
 * its last record on that lane (a graph replay may run on several). */
static int launches_init(struct dev *d)
{
  struct graph *g = d->g;
  uint32_t *entry = SCRATCH(g, CP_B_ENTRY, g->n, uint32_t, 0); /* by call */
  size_t cap = 0;
  int rc = entry == NULL ? TR_ENOMEM : 0;

  if (entry != NULL)
    memset(entry, 0xff, (g->n + 1) * sizeof(*entry));
  for (uint32_t i = 0; rc == 0 && i < g->n; i++) {
    const struct cp_ev *e = &g->ev[i];
    struct launch *l = NULL;

    if (!cp_is_record(e) || e->launch == NONE)
      continue;
    /* entry: the call's first entry; a replay on several lanes has more
     * after it. */
    for (size_t k = entry[e->launch]; k < d->nlaunches && l == NULL; k++)
      if (d->launches[k].call == e->launch && d->launches[k].lane == e->lane)
        l = &d->launches[k];
    if (l != NULL) {
      l->lastrec = i;
      continue;
    }
    if (d->nlaunches >= cap) {
      cap = cap ? 2 * cap : 1024;
      d->launches = SCRATCH(g, CP_B_LAUNCHES, cap, struct launch, 0);
      if (d->launches == NULL) {
        rc = TR_ENOMEM;
        break;
      }
    }
    if (entry[e->launch] == NONE)
      entry[e->launch] = (uint32_t)d->nlaunches;
    d->launches[d->nlaunches++] = (struct launch){ e->lane, e->launch, i, i };
  }
  if (rc == 0 && d->nlaunches > 1) /* none: launches is still NULL */
    qsort(d->launches, d->nlaunches, sizeof(*d->launches), launch_cmp);
  return rc;
}

/* The record the last launch on lane before call `before` (in the step's
 * order) ran last: what an event recorded by that call waits for. */
static uint32_t record_before(const struct dev *d, uint16_t lane,
                              uint32_t before)
{
  uint32_t found = NONE;

  for (size_t k = 0; k < d->nlaunches; k++)
    if (d->launches[k].lane == lane && d->launches[k].call < before)
      found = d->launches[k].lastrec;
  return found;
}

/* The first record of the first launch after call `after` on the same
 * thread whose records run on lane. */
static uint32_t record_after(const struct dev *d, uint16_t lane, uint32_t after)
{
  const struct cp_ev *ev = d->g->ev;

  for (size_t k = 0; k < d->nlaunches; k++)
    if (d->launches[k].lane == lane && d->launches[k].call > after &&
        ev[d->launches[k].call].lane == ev[after].lane)
      return d->launches[k].first;
  return NONE;
}

static void sync_event(struct dev *d, uint32_t i)
{
  const struct cp_ev *s = &d->g->ev[i];
  uint32_t call = call_of(&d->calls, s->corr), rec, src;

  if (call == NONE)
    return;
  if (s->sync == CP_SYNC_STREAM || s->sync == CP_SYNC_CONTEXT) {
    for (size_t k = 0; k < d->nlast; k++)
      if (s->sync == CP_SYNC_CONTEXT || d->last[k].lane == s->lane)
        add(d->g, 2 * d->last[k].ev + 1, 2 * call + 1, E_SYNC, A_NONE, 0);
    return;
  }
  rec = call_of(&d->calls, s->wait_corr);
  if (rec == NONE || s->wait_lane == UINT16_MAX ||
      (src = record_before(d, s->wait_lane, rec)) == NONE)
    return;
  if (s->sync == CP_SYNC_EVENT) {
    add(d->g, 2 * src + 1, 2 * call + 1, E_SYNC, A_NONE, 0);
    return;
  }
  rec = record_after(d, s->lane, call);
  if (rec != NONE)
    d->ksync[rec] = src;
}

/* The records of each launch call, by call. */
static int records_by_call(struct dev *d)
{
  struct graph *g = d->g;
  uint32_t *fill;

  d->rec_at = SCRATCH(g, CP_B_RECAT, g->n + 1, uint32_t, 1);
  d->recs = SCRATCH(g, CP_B_RECS, g->n, uint32_t, 0);
  fill = SCRATCH(g, CP_B_FILL, g->n, uint32_t, 1);
  if (d->rec_at == NULL || d->recs == NULL || fill == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < g->n; i++)
    if (cp_is_record(&g->ev[i]) && g->ev[i].launch != NONE)
      d->rec_at[g->ev[i].launch + 1]++;
  for (uint32_t c = 0; c < g->n; c++)
    d->rec_at[c + 1] += d->rec_at[c];
  for (uint32_t i = 0; i < g->n; i++)
    if (cp_is_record(&g->ev[i]) && g->ev[i].launch != NONE) {
      uint32_t c = g->ev[i].launch;

      d->recs[d->rec_at[c] + fill[c]++] = i;
    }
  return 0;
}

/* A blocking call of a trace without cuda_sync events: it waited for its
 * own copy, or (a synchronize) for every stream's last record, where those
 * ended by its end. */
static void inferred_sync(struct dev *d, uint32_t c)
{
  const struct cp_ev *ev = d->g->ev;
  int own = d->rec_at[c + 1] > d->rec_at[c];

  for (uint32_t k = d->rec_at[c]; k < d->rec_at[c + 1]; k++) {
    uint32_t i = d->recs[k];

    if (ev[i].end <= ev[c].end)
      add(d->g, 2 * i + 1, 2 * c + 1, E_SYNC, A_NONE, 0);
  }
  for (size_t k = 0; !own && k < d->nlast; k++)
    if (ev[d->last[k].ev].end <= ev[c].end)
      add(d->g, 2 * d->last[k].ev + 1, 2 * c + 1, E_SYNC, A_NONE, 0);
}

/* HTA's edges into record i: its span, the sync it waits for, then the
 * launch delay or the gap after the lane's previous record. */
static int record_edges(struct dev *d, uint32_t i)
{
  const struct cp_ev *ev = d->g->ev, *k = &ev[i];
  struct lane_last *ll = last_of(d, k->lane);
  uint32_t sync = d->ksync[i], prev = ll ? ll->ev : NONE;
  int64_t sync_end = sync != NONE ? ev[sync].end : INT64_MIN;
  const struct cp_ev *l = k->launch != NONE ? &ev[k->launch] : NULL;

  add(d->g, 2 * i, 2 * i + 1, E_OP, A_EVENT, i);
  if (sync != NONE)
    add(d->g, 2 * sync + 1, 2 * i, E_SYNC, A_NONE, 0);
  if (l != NULL && (k->flags & CP_F_FIRST) && (k->flags & CP_F_QFREE) &&
      k->launch_next >= k->start && (prev == NONE || ev[prev].end < l->start) &&
      (sync == NONE || sync_end < l->start))
    add(d->g, 2 * k->launch, 2 * i, E_LAUNCH, A_NONE, 0);
  else if (prev != NONE && k->start - ev[prev].end < KK_THRESHOLD_NS &&
           (sync == NONE || sync_end < ev[prev].end))
    add(d->g, 2 * prev + 1, 2 * i, E_KK, A_EVENT, prev);
  if (ll == NULL) {
    if (agg_grow(&d->last, &d->last_cap, d->nlast, sizeof(*d->last)) != 0)
      return TR_ENOMEM;
    ll = &d->last[d->nlast++];
    ll->lane = k->lane;
  }
  ll->ev = i;
  return d->g->rc;
}

static int end_cmp(const void *x, const void *y, void *ud)
{
  const struct cp_ev *ev = ud;
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

  if (ev[a].end != ev[b].end)
    return ev[a].end < ev[b].end ? -1 : 1;
  return (a > b) - (a < b);
}

/* The blocking calls by end (inferred syncs run in the records' order by
 * that time), NULL-safe count in *n. */
static uint32_t *blocking_by_end(struct graph *g, int infer, size_t *n)
{
  uint32_t *v = SCRATCH(g, CP_B_BLOCKING, g->n, uint32_t, 0);

  *n = 0;
  for (uint32_t i = 0; v != NULL && infer && i < g->n; i++)
    if (g->ev[i].kind == CP_EV_RT && (g->ev[i].flags & CP_F_BLOCKING))
      v[(*n)++] = i;
  if (v != NULL)
    qsort_r(v, *n, sizeof(*v), end_cmp, (void *)g->ev);
  return v;
}

/* What the sync rules need, only when the step has syncs to place: its
 * calls by correlation and launches by lane (cuda_sync events), or each
 * call's records (blocking calls). */
static int dev_init(struct dev *d, int syncs, size_t blocking)
{
  if (syncs && (calls_init(&d->calls, d->g) != 0 || launches_init(d) != 0))
    return TR_ENOMEM;
  if (blocking > 0 && records_by_call(d) != 0)
    return TR_ENOMEM;
  return 0;
}

static int device_edges(struct graph *g, int infer)
{
  struct dev d = { .g = g };
  size_t nb = 0, b = 0;
  uint32_t *blocking = blocking_by_end(g, infer, &nb);
  int rc = blocking == NULL ? TR_ENOMEM : 0, syncs = 0;

  for (uint32_t i = 0; i < g->n && !syncs; i++)
    syncs = g->ev[i].kind == CP_EV_SYNC;
  d.ksync = SCRATCH(g, CP_B_KSYNC, g->n, uint32_t, 0);
  if (rc == 0 && (d.ksync == NULL || dev_init(&d, syncs, nb) != 0))
    rc = TR_ENOMEM;
  if (rc == 0)
    memset(d.ksync, 0xff, (g->n + 1) * sizeof(*d.ksync));
  for (uint32_t i = 0; rc == 0 && i <= g->n; i++) {
    int64_t key = i == g->n                     ? INT64_MAX
                  : g->ev[i].kind == CP_EV_SYNC ? g->ev[i].end
                                                : g->ev[i].start;

    if (i < g->n && !cp_is_record(&g->ev[i]) && g->ev[i].kind != CP_EV_SYNC)
      continue;
    while (b < nb && g->ev[blocking[b]].end < key)
      inferred_sync(&d, blocking[b++]);
    if (i == g->n)
      break;
    if (g->ev[i].kind == CP_EV_SYNC)
      sync_event(&d, i);
    else
      rc = record_edges(&d, i);
    rc = rc ? rc : g->rc;
  }
  free(d.last);
  return rc ? rc : g->rc;
}

/* ---- the longest path ---- */

struct order {     /* the graph in CSR form and a topological order */
  uint32_t *first; /* [nodes + 1]: out-edges of node v */
  uint32_t *out;   /* edge ids */
  uint32_t *topo;
  uint32_t ntopo;
};

static int toposort(struct graph *g, uint32_t nodes, struct order *o)
{
  uint32_t *indeg = SCRATCH(g, CP_B_INDEG, nodes, uint32_t, 1);
  uint32_t *fill = SCRATCH(g, CP_B_FILL, nodes, uint32_t, 1), head = 0;

  o->first = SCRATCH(g, CP_B_FIRST, nodes + 1, uint32_t, 1);
  o->out = SCRATCH(g, CP_B_OUT, g->ne, uint32_t, 0);
  o->topo = SCRATCH(g, CP_B_TOPO, nodes, uint32_t, 0);
  if (indeg == NULL || fill == NULL || o->first == NULL || o->out == NULL ||
      o->topo == NULL)
    return TR_ENOMEM;
  for (size_t k = 0; k < g->ne; k++)
    o->first[g->e[k].src + 1]++;
  for (uint32_t v = 0; v < nodes; v++)
    o->first[v + 1] += o->first[v];
  for (size_t k = 0; k < g->ne; k++) { /* a node's edges keep their order */
    uint32_t s = g->e[k].src;

    o->out[o->first[s] + fill[s]++] = (uint32_t)k;
    indeg[g->e[k].dst]++;
  }
  o->ntopo = 0;
  for (uint32_t v = 0; v < nodes; v++)
    if (indeg[v] == 0)
      o->topo[o->ntopo++] = v;
  while (head < o->ntopo) {
    uint32_t v = o->topo[head++];

    for (uint32_t k = o->first[v]; k < o->first[v + 1]; k++)
      if (--indeg[g->e[o->out[k]].dst] == 0)
        o->topo[o->ntopo++] = g->e[o->out[k]].dst;
  }
  return 0;
}

/* Of two edges into one node that give it the same length, the one the
 * path takes: from the earlier node (node ids follow the step's event
 * order), then by type. */
static int tie_before(const struct edge *a, const struct edge *b)
{
  if (a->src != b->src)
    return a->src < b->src;
  return a->type < b->type;
}

/* Longest path ending at each node (fwd, with the edge it came by) and
 * starting at each node (bwd). */
static void longest(const struct graph *g, const struct order *o, int64_t *fwd,
                    uint32_t *pred, int64_t *bwd)
{
  for (uint32_t t = 0; t < o->ntopo; t++) {
    uint32_t v = o->topo[t];

    for (uint32_t k = o->first[v]; k < o->first[v + 1]; k++) {
      const struct edge *e = &g->e[o->out[k]];
      int64_t cand = fwd[v] + e->w;

      if (pred[e->dst] == NONE || cand > fwd[e->dst] ||
          (cand == fwd[e->dst] && tie_before(e, &g->e[pred[e->dst]]))) {
        fwd[e->dst] = cand;
        pred[e->dst] = o->out[k];
      }
    }
  }
  for (uint32_t t = o->ntopo; t-- > 0;) {
    uint32_t v = o->topo[t];

    for (uint32_t k = o->first[v]; k < o->first[v + 1]; k++) {
      const struct edge *e = &g->e[o->out[k]];

      if (e->w + bwd[e->dst] > bwd[v])
        bwd[v] = e->w + bwd[e->dst];
    }
  }
}

/* ---- the path's stretches ---- */

static int bound_of(const struct graph *g, const struct edge *e)
{
  switch (e->type) {
  case E_LAUNCH: return CP_LAUNCH;
  case E_KK: return CP_GAP;
  case E_SYNC:
  case E_BLOCK: return CP_SYNC;
  case E_DEP: return CP_IDLE;
  default: break;
  }
  if (is_host(&g->ev[e->src / 2]))
    return CP_CPU;
  return (g->ev[e->src / 2].flags & CP_F_COMM) ? CP_COMM : CP_GPU;
}

/* What a stretch names: its attributed event (or that one's parent), the
 * record a launch or a gap leads to, what a sync or idle edge ends at. */
static void seg_what(const struct graph *g, const struct edge *e,
                     struct cp_segment *s)
{
  const struct cp_ev *x;

  if (e->atype == A_PARENT) {
    x = &g->ev[e->attr];
    s->name = x->pname;
    s->what = x->pwhat;
    s->lane = x->lane;
    return;
  }
  x = e->atype == A_EVENT && e->type != E_KK ? &g->ev[e->attr]
                                             : &g->ev[e->dst / 2];
  s->name = x->name;
  s->lane = x->lane;
  switch (x->kind) {
  case CP_EV_OP: s->what = CP_WHAT_HOST; break;
  case CP_EV_RT: s->what = CP_WHAT_RT; break;
  case CP_EV_KERNEL: s->what = CP_WHAT_KERNEL; break;
  default: s->what = CP_WHAT_COPY; break;
  }
}

/* The stretches of the path's edges path[n - 1] down to path[0], merged,
 * into out (NULL: only counted); with out, the breakdown (weights by
 * bound, the wall time of the zero-weight sync and idle edges) and the
 * events on the path too. Returns how many there are. */
static uint32_t stretches(const struct graph *g, const uint32_t *path,
                          uint32_t n, struct cp_result *res,
                          struct cp_segment *out)
{
  struct cp_segment last = { 0 };
  uint32_t count = 0;

  for (uint32_t k = n; k-- > 0;) {
    const struct edge *e = &g->e[path[k]];
    int b = bound_of(g, e);
    int64_t from = node_time(g, e->src), to = node_time(g, e->dst);
    struct cp_segment s = { from, to, e->w, 0, 0, (uint8_t)b, 0, 1 };

    if (out != NULL) {
      res->row.bound_ns[b] +=
          b == CP_SYNC || b == CP_IDLE ? (to > from ? to - from : 0) : e->w;
      if (e->type == E_OP && e->src + 1 == e->dst)
        res->on_path[e->src / 2] = 1;
    }
    if (e->w == 0 && to <= from)
      continue;
    seg_what(g, e, &s);
    if (count > 0 && last.bound == s.bound && last.what == s.what &&
        last.name == s.name && last.lane == s.lane &&
        last.to_ns == s.from_ns) {
      last.to_ns = s.to_ns;
      last.weight_ns = tr_sat_add(last.weight_ns, s.weight_ns);
      last.count++;
      continue;
    }
    if (count > 0 && out != NULL)
      out[count - 1] = last;
    last = s;
    count++;
  }
  if (count > 0 && out != NULL)
    out[count - 1] = last;
  return count;
}

/* The path's edges from its first node to its last, as merged stretches
 * (counted first, so that a step of many short host calls keeps one
 * stretch for each, not one for each edge), and the breakdown. */
static int path_segments(struct graph *g, const uint32_t *pred, uint32_t end,
                         struct cp_result *res)
{
  uint32_t n = 0, *path, v = end;

  for (v = end; pred[v] != NONE; v = g->e[pred[v]].src)
    n++;
  path = SCRATCH(g, CP_B_PATH, n, uint32_t, 0);
  if (path == NULL)
    return TR_ENOMEM;
  for (v = end, n = 0; pred[v] != NONE; v = g->e[pred[v]].src)
    path[n++] = pred[v];
  res->row.path_from = node_time(g, v);
  res->row.path_to = node_time(g, end);
  res->nsegs = stretches(g, path, n, res, NULL);
  res->segs = SCRATCH(g, CP_B_SEGS, res->nsegs, struct cp_segment, 0);
  if (res->segs == NULL)
    return TR_ENOMEM;
  stretches(g, path, n, res, res->segs);
  return 0;
}

/* The node of the largest length, the first in the step's order. */
static uint32_t path_end(uint32_t nodes, const int64_t *fwd)
{
  uint32_t best = NONE;

  for (uint32_t v = 0; v < nodes; v++)
    if (best == NONE || fwd[v] > fwd[best])
      best = v;
  return best;
}

static int analyse(struct graph *g, struct cp_result *res)
{
  uint32_t nodes = 2 * g->n, end;
  struct order o = { 0 };
  int64_t *fwd = SCRATCH(g, CP_B_FWD, nodes, int64_t, 1);
  int64_t *bwd = SCRATCH(g, CP_B_BWD, nodes, int64_t, 1);
  uint32_t *pred = SCRATCH(g, CP_B_PRED, nodes, uint32_t, 0);
  int rc;

  if (fwd == NULL || bwd == NULL || pred == NULL)
    return TR_ENOMEM;
  if ((rc = toposort(g, nodes, &o)) != 0)
    return rc;
  if (o.ntopo < nodes) {
    res->row.status = CP_STEP_CYCLE;
    return 0;
  }
  memset(pred, 0xff, (nodes + 1) * sizeof(*pred));
  longest(g, &o, fwd, pred, bwd);
  end = path_end(nodes, fwd);
  res->row.length_ns = end == NONE ? 0 : fwd[end];
  for (uint32_t i = 0; i < g->n; i++) {
    int64_t w = g->ev[i].end - g->ev[i].start;

    if (cp_is_record(&g->ev[i]))
      res->slack[i] =
          res->row.length_ns - (fwd[2 * i] + (w > 0 ? w : 0) + bwd[2 * i + 1]);
  }
  return end == NONE ? 0 : path_segments(g, pred, end, res);
}

int cp_step_analyse(const struct cp_ev *ev, uint32_t n, int infer_sync,
                    struct cp_scratch *sc, struct cp_result *res)
{
  struct graph g = { ev, n, NULL, 0, 3 * (size_t)n + 16, sc, 0 };
  int rc;

  /* About three edges an event: a growth is rare. */
  g.e = SCRATCH(&g, CP_B_EDGES, g.cap, struct edge, 0);
  res->on_path = SCRATCH(&g, CP_B_ONPATH, n, uint8_t, 1);
  res->slack = SCRATCH(&g, CP_B_SLACK, n, int64_t, 1);
  if (g.e == NULL || res->on_path == NULL || res->slack == NULL)
    return TR_ENOMEM;
  if ((rc = host_chains(&g)) == 0 && (rc = device_edges(&g, infer_sync)) == 0)
    rc = analyse(&g, res);
  return rc;
}
