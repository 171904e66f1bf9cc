/*
 * The decode unit's time-ordered walk (decode.h) over a file's records
 * (dec_event.c), in start order.
 *
 * A capture trace: the host stacks of its threads (host.h); every
 * launch inside a capture window (StreamBeginCapture's end to
 * StreamEndCapture's start, on any thread: a graph records what any thread
 * launches into it) joins that window's graph with its stack.
 *
 * A run trace: the host stacks; step labels open steps (the innermost
 * label around a launch on its thread is its step); a launch takes the
 * stack and step of its thread at its start and waits, by correlation, in
 * a bounded table for its device records; a graph launch opens a replay
 * that collects the device records of its correlation in time order until
 * other work has started, at or after its last record there, on every
 * stream it ran on (a stream runs its work in order), or the walk ends;
 * then it is matched (dec_match.c). Records beyond its longest candidate's
 * launches are counted as they come: it cannot match. Each device record lands
 * in its step's accumulator as (stack, kernel name) -> count and time; a step
 * closes once the walk is past its end and every launch in it has had its
 * records and every replay in it is matched (dec_tab_step() takes it).
 *
 * Bounds: at most MAX_STEPS steps and MAX_REPLAYS replays open (the oldest
 * is closed or matched early, counted), LAUNCH_TABLE launches waiting (the
 * oldest is dropped, counted), a replay keeps at most its longest
 * candidate's count of kernels. Memory follows what is in flight.
 */
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"

#define MAX_STEPS    64
#define MAX_REPLAYS  64
#define MAX_CAND     16
#define MAX_RSTREAMS 8 /* streams a replay is followed on */
#define LAUNCH_TABLE (1u << 16)
#define NO_SLOT      UINT32_MAX
#define LATE_SLOT    MAX_STEPS /* outside every step */
#define SEQ_BITS     40

struct ostep { /* an open step */
  int used;
  uint32_t gen, kind, desc;
  int64_t start, end, seq;
  uint32_t pending; /* launches whose records have not come */
  uint32_t replays; /* replays not matched yet */
  uint32_t graphs;  /* graph launches so far: the next one's piece */
  struct agg_corr fine;
};

struct lstep { /* a step label open on a lane */
  int64_t end;
  uint32_t slot, gen;
};

struct lsteps {
  struct lstep *v;
  size_t n, cap;
};

#define LAUNCH_INST 4 /* modeled op instances a launch is counted in */

/* A launch waiting for its device records: 28 bytes, since the ring
 * holds LAUNCH_TABLE of them on a long trace (a launch stays once its
 * records came: a second record of it is attributed alike). */
struct lrec {
  uint32_t node, gen;
  uint32_t inst[LAUNCH_INST]; /* the op instances above it (PF_NONE) */
  uint8_t slot;               /* its step's slot; LREC_NO_SLOT: none */
  uint8_t kind, first, consumed;
};

#define LREC_NO_SLOT UINT8_MAX
_Static_assert(MAX_STEPS < LREC_NO_SLOT && DEC_MAX_KINDS <= UINT8_MAX,
               "a launch's step slot and kind fit a byte");

static uint32_t lrec_slot(const struct lrec *l)
{
  return l->slot == LREC_NO_SLOT ? NO_SLOT : l->slot;
}

struct replay {
  int used;
  int64_t corr;
  uint32_t slot, gen; /* its step; NO_SLOT: none */
  uint32_t kind;      /* its step's kind; DEC_MAX_KINDS: none */
  uint32_t cand[MAX_CAND];
  size_t ncand;
  uint32_t maxlen; /* launches of its longest candidate */
  size_t n;
  uint64_t over; /* kernels beyond maxlen: it cannot match */
  int64_t over_ns;
  struct rstream { /* a stream it ran on */
    uint32_t stream;
    int passed;  /* other work started there after its last record */
    int64_t end; /* the end of its last record there */
  } st[MAX_RSTREAMS];
  uint32_t nst;
  int wide;         /* on more streams than followed: it ends with the walk */
  struct dec_rk *k; /* kept across replays (the slot's buffer) */
  size_t cap;
};

struct cwin { /* an open capture window */
  uint32_t lane, graph;
};

struct walk {
  struct dec_file *d;
  struct dec_lib *lib;
  struct lsteps *ls; /* per lane */
  size_t nls;
  struct ostep steps[MAX_STEPS + 1];   /* [LATE_SLOT]: outside steps */
  struct agg_corr late[DEC_MAX_KINDS]; /* records after their step closed */
  uint32_t gen;
  struct dec_ring launches; /* struct lrec, LAUNCH_TABLE of them */
  struct replay rp[MAX_REPLAYS];
  size_t rp_hi; /* above the last replay in use (loops stop there) */
  uint32_t *at; /* dec_match's placement, at most maxlen entries */
  size_t at_cap;
  struct cwin win[8];
  size_t nwin;
  int dropping; /* the open graph exceeds DEC_MAX_LAUNCHES */
  struct pf_lib *perf;
  uint8_t *trans; /* device name id -> GEMM transposes + 1 (0: not yet) */
  size_t trans_cap;
  struct agg_corr mem_parts; /* [memory] events being joined (dec_mem.c) */
};

int dec_through(const struct hs_trie *t, uint32_t name)
{
  size_t n;
  const char *p = hs_trie_text(t, name, &n);

  return n == 7 && memcmp(p, "execute", 7) == 0;
}

/* ---- op instances (index/perf/perf.h) ---- */

/* A launch has had its records, or is lost: its instances wait no more. */
static void settle(struct walk *w, const struct lrec *l)
{
  for (int k = 0; k < LAUNCH_INST && l->inst[k] != PF_NONE; k++)
    pf_inst_settle(w->perf, l->inst[k]);
}

/* The GEMM transposes device name id's text tells, once per name. */
static uint8_t trans_of(struct walk *w, uint32_t name)
{
  const struct agg_key *k;

  if (name == DEC_NONE || name >= w->lib->names.n ||
      agg_grow(&w->trans, &w->trans_cap, name, 1) != 0)
    return 0;
  if (w->trans[name] == 0) {
    k = &w->lib->names.keys[name];
    w->trans[name] = (uint8_t)(pf_transposes(k->p, k->n) + 1);
  }
  return (uint8_t)(w->trans[name] - 1);
}

static struct ostep *lane_step(struct walk *w, uint32_t lane, int64_t t);
static const struct cwin *window_of(const struct walk *w, uint32_t lane);

/* An op frame with a proto starts on lane: in a run trace an instance
 * (recomputed when a checkpoint's recompute_fn is open on the lane,
 * nested inside the instances open there, which learn they have one
 * inside); in a capture trace a capture instance under the innermost one
 * open. Its number into *user. */
static int op_open(struct walk *w, uint32_t lane, uint32_t proto, int64_t start,
                   int64_t end, uint32_t *user)
{
  const struct hs_lane *ln = &w->d->lanes.lane[lane];
  const struct hs_trie *t = &w->lib->trie;
  uint32_t inner = PF_NONE;
  unsigned flags = 0;
  struct ostep *s;

  for (uint32_t i = 0; i < ln->n; i++) {
    if (hs_trie_kind(t, ln->v[i].name) == HS_RECOMP)
      flags |= PF_I_RECOMPUTE;
    if (ln->v[i].user == PF_NONE)
      continue;
    inner = ln->v[i].user;
    flags |= PF_I_NESTED;
    if (w->d->mode == DEC_RUN)
      pf_inst_inner(w->perf, ln->v[i].user);
  }
  if (w->d->mode == DEC_CAPTURE) {
    const struct cwin *cw = window_of(w, lane);

    return pf_capture_inst(w->perf, proto, inner, flags & PF_I_RECOMPUTE,
                           cw && !w->dropping ? cw->graph : PF_NONE, end, user);
  }
  s = lane_step(w, lane, start);
  return pf_inst_open(w->perf, proto, start, end, s ? s->seq : -1, flags, user);
}

/* The instances open on lane, innermost first, at most LAUNCH_INST. */
static void op_above(const struct walk *w, uint32_t lane,
                     uint32_t out[LAUNCH_INST])
{
  const struct hs_lane *ln = &w->d->lanes.lane[lane];
  int k = 0;

  for (uint32_t i = ln->n; i-- > 0 && k < LAUNCH_INST;)
    if (ln->v[i].user != PF_NONE)
      out[k++] = ln->v[i].user;
  while (k < LAUNCH_INST)
    out[k++] = PF_NONE;
}

static int label_text(void *ud, int64_t label, char *buf, size_t size)
{
  struct dec_file *d = ud;

  return agg_labels_get(&d->labels, label, buf, size);
}

/* ---- step accumulators ---- */

static int fine_add(struct agg_corr *fine, uint32_t node, uint32_t name,
                    int first, int64_t dur)
{
  int64_t key = (int64_t)((uint64_t)node << 32 | name);
  struct dec_fine *f = agg_corr_get(fine, key),
                  nf = { 1, (uint64_t)first, dur };

  if (f != NULL) {
    f->kernels++;
    f->instances += (uint64_t)first;
    f->ns = tr_sat_add(f->ns, dur);
    return 0;
  }
  return agg_corr_put(fine, key, &nf) == 0 ? 0 : TR_ENOMEM;
}

static struct ostep *step_at(struct walk *w, uint32_t slot, uint32_t gen)
{
  if (slot == NO_SLOT || slot >= MAX_STEPS || !w->steps[slot].used ||
      w->steps[slot].gen != gen)
    return NULL;
  return &w->steps[slot];
}

/* A device record of stack node, name and time into its step (slot, gen:
 * NO_SLOT outside steps); a step already closed takes it in its kind's
 * totals only (late). */
static int attribute(struct walk *w, uint32_t slot, uint32_t gen, uint32_t kind,
                     uint32_t node, uint32_t name, int first, int64_t dur)
{
  struct ostep *s = step_at(w, slot, gen);

  if (s != NULL)
    return fine_add(&s->fine, node, name, first, dur);
  if (slot == NO_SLOT || kind >= DEC_MAX_KINDS)
    return fine_add(&w->steps[LATE_SLOT].fine, node, name, first, dur);
  w->d->c.late++;
  return fine_add(&w->late[kind], node, name, first, dur);
}

/* An eager or matched record: counted without an op when its stack has
 * none. */
static int attribute_known(struct walk *w, uint32_t slot, uint32_t gen,
                           uint32_t kind, uint32_t node, uint32_t name,
                           int first, int64_t dur)
{
  const struct dec_ident *id = dec_ident_of(w->d, node);

  if (id == NULL)
    return TR_ENOMEM;
  if (id->op == DEC_NONE) {
    w->d->c.no_op++;
    w->d->c.no_op_ns = tr_sat_add(w->d->c.no_op_ns, dur);
  }
  return attribute(w, slot, gen, kind, node, name, first, dur);
}

static int step_close(struct walk *w, struct ostep *s)
{
  int rc = dec_tab_step(w->d, s->kind, &s->fine, s->start, s->end - s->start,
                        s->seq);

  s->used = 0;
  return rc;
}

static int step_done(const struct ostep *s, int64_t now)
{
  return s->used && s->end <= now && s->pending == 0 && s->replays == 0;
}

static int close_done(struct walk *w, int64_t now)
{
  for (size_t i = 0; i < MAX_STEPS; i++)
    if (step_done(&w->steps[i], now)) {
      int rc = step_close(w, &w->steps[i]);

      if (rc != 0)
        return rc;
    }
  return 0;
}

/* ---- replays ---- */

/* The replay's kernels without an identity (those beyond maxlen were
 * counted as they came). */
static int replay_unmatched(struct walk *w, struct replay *r, uint32_t kind,
                            enum dec_reason why)
{
  struct dec_complete *c = &w->d->c;
  int64_t ns = r->over_ns;
  int rc = 0;

  for (size_t i = 0; i < r->n; i++) {
    ns = tr_sat_add(ns, r->k[i].dur);
    if (rc == 0)
      rc = attribute(w, r->slot, r->gen, kind, HS_ROOT, r->k[i].name, 0,
                     r->k[i].dur);
  }
  c->unmatched[why]++;
  c->unmatched_ns[why] = tr_sat_add(c->unmatched_ns[why], ns);
  c->unmatched_kernels += r->n + r->over;
  return rc;
}

static int replay_matched(struct walk *w, struct replay *r, uint32_t kind,
                          const struct dec_match *m)
{
  const struct dec_graph *g = &w->lib->graphs[m->graph];
  struct dec_complete *c = &w->d->c;
  int rc = 0;

  for (size_t i = 0; i < r->n && rc == 0; i++) {
    const struct dec_launch *l = &w->lib->launches[g->first + m->at[i]];

    rc = attribute_known(w, r->slot, r->gen, kind, l->node, r->k[i].name,
                         l->first, r->k[i].dur);
    if (rc == 0 && l->cinst != PF_NONE)
      rc = pf_replay_record(w->perf, l->cinst, r->k[i].start, r->k[i].dur,
                            trans_of(w, r->k[i].name));
  }
  if (rc == 0) {
    struct ostep *s = step_at(w, r->slot, r->gen);

    rc = pf_replay_end(w->perf, s ? s->seq : -1, m->graph, g->cinst_first,
                       g->cinst_end, g->win_end);
  }
  if (!m->is_short) {
    c->matched++;
    return rc;
  }
  c->short_matched++;
  c->missing_launches += g->n - r->n;
  for (size_t i = 0; i < r->n; i++)
    c->short_ns = tr_sat_add(c->short_ns, r->k[i].dur);
  return rc;
}

static int replay_resolve(struct walk *w, struct replay *r)
{
  struct ostep *s = step_at(w, r->slot, r->gen);
  uint32_t kind = r->kind;
  struct dec_complete *c = &w->d->c;
  struct dec_match m = { DEC_NONE, 0, R_NO_GRAPH, w->at };
  int rc;

  c->replay_kernels += r->n + r->over;
  for (size_t i = 0; i < r->n; i++)
    c->replay_ns = tr_sat_add(c->replay_ns, r->k[i].dur);
  c->replay_ns = tr_sat_add(c->replay_ns, r->over_ns);
  if (r->n == 0 && r->over == 0) {
    c->empty_graphs++;
    rc = 0;
  } else if (r->ncand == 0) {
    rc = replay_unmatched(w, r, kind,
                          w->lib->nfiles ? R_NO_GRAPH : R_NO_CAPTURE);
  } else if (r->over > 0) {
    rc = replay_unmatched(w, r, kind, R_COUNT);
  } else {
    dec_match_replay(w->lib, r->cand, r->ncand, r->k, r->n, &m);
    rc = m.graph == DEC_NONE ? replay_unmatched(w, r, kind, m.reason)
                             : replay_matched(w, r, kind, &m);
  }
  if (s != NULL)
    s->replays--;
  r->used = 0;
  r->n = 0;
  while (w->rp_hi > 0 && !w->rp[w->rp_hi - 1].used)
    w->rp_hi--;
  return rc;
}

/* A new replay's slot: a free one, else the oldest is matched now. */
static int replay_slot(struct walk *w, struct replay **out)
{
  struct replay *old = NULL;

  for (size_t i = 0; i < MAX_REPLAYS; i++) {
    if (!w->rp[i].used) {
      *out = &w->rp[i];
      if (i >= w->rp_hi)
        w->rp_hi = i + 1;
      return 0;
    }
    if (old == NULL || w->rp[i].corr < old->corr)
      old = &w->rp[i];
  }
  *out = old;
  return replay_resolve(w, old);
}

/* ---- lanes' steps ---- */

/* The innermost step label open on lane at t, or NULL. */
static struct ostep *lane_step(struct walk *w, uint32_t lane, int64_t t)
{
  struct lsteps *ls = &w->ls[lane];

  while (ls->n > 0 &&
         (ls->v[ls->n - 1].end <= t ||
          step_at(w, ls->v[ls->n - 1].slot, ls->v[ls->n - 1].gen) == NULL))
    ls->n--;
  for (size_t i = ls->n; i-- > 0;)
    if (ls->v[i].end > t)
      return step_at(w, ls->v[i].slot, ls->v[i].gen);
  return NULL;
}

static int nested(const struct dec_file *d, int64_t seq)
{
  return (d->nested[seq / 64] >> (seq % 64)) & 1;
}

static int step_open(struct walk *w, const struct agg_rec *r)
{
  uint32_t lane = (uint32_t)(r->aux >> SEQ_BITS), slot = NO_SLOT;
  const struct dec_desc *desc = dec_desc_of(w->d, r->id);
  struct lsteps *ls = &w->ls[lane];
  struct ostep *s, *old = NULL;
  int rc;

  if (nested(w->d, r->aux & ((INT64_C(1) << SEQ_BITS) - 1)))
    return 0;
  if ((rc = close_done(w, r->start_ns)) != 0)
    return rc;
  for (uint32_t i = 0; i < MAX_STEPS && slot == NO_SLOT; i++)
    if (!w->steps[i].used)
      slot = i;
  for (uint32_t i = 0; slot == NO_SLOT && i < MAX_STEPS; i++)
    if (old == NULL || w->steps[i].start < old->start)
      old = &w->steps[i];
  if (slot == NO_SLOT) { /* the oldest, still waiting, is closed now */
    w->d->c.steps_forced++;
    for (size_t i = 0; i < w->rp_hi; i++)
      if (w->rp[i].used && w->rp[i].slot == (uint32_t)(old - w->steps) &&
          (rc = replay_resolve(w, &w->rp[i])) != 0)
        return rc;
    if ((rc = step_close(w, old)) != 0)
      return rc;
    slot = (uint32_t)(old - w->steps);
  }
  s = &w->steps[slot];
  s->used = 1;
  s->gen = ++w->gen;
  s->kind = desc->kind;
  s->desc = r->id;
  s->start = r->start_ns;
  s->end = r->start_ns + r->dur_ns;
  s->seq = r->aux & ((INT64_C(1) << SEQ_BITS) - 1);
  s->pending = s->replays = s->graphs = 0;
  if (agg_grow(&ls->v, &ls->cap, ls->n, sizeof(*ls->v)) != 0)
    return TR_ENOMEM;
  ls->v[ls->n].end = s->end;
  ls->v[ls->n].slot = slot;
  ls->v[ls->n].gen = s->gen;
  ls->n++;
  return 0;
}

/* ---- launches ---- */

static void launch_forget(struct walk *w, int64_t corr)
{
  struct lrec *l = dec_ring_get(&w->launches, corr);
  struct ostep *s;

  if (l == NULL)
    return;
  if (!l->consumed && (s = step_at(w, lrec_slot(l), l->gen)) != NULL)
    s->pending--;
  if (!l->consumed) {
    w->d->c.launches_lost++;
    settle(w, l);
  }
  dec_ring_unindex(&w->launches, corr);
}

static int launch_run(struct walk *w, const struct agg_rec *r, uint32_t node,
                      int first, struct ostep *s)
{
  struct lrec l = { node,
                    s ? s->gen : 0,
                    { 0 },
                    s ? (uint8_t)(s - w->steps) : LREC_NO_SLOT,
                    (uint8_t)(s ? s->kind : DEC_MAX_KINDS),
                    (uint8_t)first,
                    0 };
  const int64_t *oldest;

  op_above(w, r->id, l.inst);
  for (int k = 0; k < LAUNCH_INST && l.inst[k] != PF_NONE; k++)
    pf_inst_launch(w->perf, l.inst[k]);

  launch_forget(w, r->aux); /* a correlation seen again: the newer wins */
  if ((oldest = dec_ring_oldest(&w->launches)) != NULL)
    launch_forget(w, *oldest);
  if (dec_ring_push(&w->launches, r->aux, &l) != 0)
    return TR_ENOMEM;
  if (s != NULL)
    s->pending++;
  return 0;
}

/* The graph the launch records into: its own thread's window, else the
 * one opened last; NULL outside every window. */
static const struct cwin *window_of(const struct walk *w, uint32_t lane)
{
  for (size_t i = w->nwin; i-- > 0;)
    if (w->win[i].lane == lane)
      return &w->win[i];
  return w->nwin > 0 ? &w->win[w->nwin - 1] : NULL;
}

static int launch_capture(struct walk *w, const struct agg_rec *r,
                          uint32_t node, int first)
{
  const struct cwin *cw = window_of(w, r->id);
  struct dec_lib *lib = w->lib;
  struct dec_launch *l;

  if (cw == NULL || w->dropping)
    return 0;
  if (lib->nlaunches >= DEC_MAX_LAUNCHES) {
    w->dropping = 1; /* the graph is dropped when its window closes */
    return 0;
  }
  if (agg_grow(&lib->launches, &lib->launches_cap, lib->nlaunches,
               sizeof(*l)) != 0)
    return TR_ENOMEM;
  l = &lib->launches[lib->nlaunches++];
  l->node = node;
  {
    uint32_t above[LAUNCH_INST];

    op_above(w, r->id, above);
    l->cinst = above[0];
  }
  l->name = (uint32_t)(r->dur_ns & 0xffffffff);
  l->cls = (uint8_t)(r->dur_ns >> 32);
  l->first = (uint8_t)first;
  lib->graphs[cw->graph].n++;
  return 0;
}

static int on_launch(struct walk *w, const struct agg_rec *r)
{
  struct dec_file *d = w->d;
  uint32_t lane = r->id, node;
  int first;

  hs_lanes_advance(&d->lanes, &w->lib->trie, lane, r->start_ns);
  node = hs_lanes_top(&d->lanes, lane);
  first = hs_lanes_first_launch(&d->lanes, &w->lib->trie, lane, dec_through);
  if (d->mode == DEC_CAPTURE)
    return launch_capture(w, r, node, first);
  return launch_run(w, r, node, first, lane_step(w, lane, r->start_ns));
}

static int on_graph(struct walk *w, const struct agg_rec *r)
{
  struct ostep *s = lane_step(w, r->id, r->start_ns);
  struct replay *rp;
  int rc;

  w->d->c.replays++;
  if ((rc = replay_slot(w, &rp)) != 0)
    return rc;
  memset(rp, 0, offsetof(struct replay, k));
  rp->used = 1;
  rp->corr = r->aux;
  rp->slot = s ? (uint32_t)(s - w->steps) : NO_SLOT;
  rp->gen = s ? s->gen : 0;
  rp->kind = s ? s->kind : DEC_MAX_KINDS;
  rp->ncand = dec_candidates(w->d, s ? dec_desc_of(w->d, s->desc) : NULL,
                             s ? s->graphs++ : 0, rp->cand, MAX_CAND);
  for (size_t i = 0; i < rp->ncand; i++)
    if (w->lib->graphs[rp->cand[i]].n > rp->maxlen)
      rp->maxlen = w->lib->graphs[rp->cand[i]].n;
  if (s != NULL)
    s->replays++;
  if (agg_grow(&w->at, &w->at_cap, rp->maxlen, sizeof(*w->at)) != 0)
    return TR_ENOMEM;
  return 0;
}

/* ---- device records ---- */

static struct replay *replay_of(struct walk *w, int64_t corr)
{
  for (size_t i = 0; i < w->rp_hi; i++)
    if (w->rp[i].used && w->rp[i].corr == corr)
      return &w->rp[i];
  return NULL;
}

static int replay_add(struct walk *w, struct replay *r, const struct agg_rec *d,
                      uint32_t stream)
{
  int64_t end = d->start_ns + d->dur_ns;
  struct dec_rk *k;
  uint32_t i;

  for (i = 0; i < r->nst && r->st[i].stream != stream; i++)
    ;
  if (i == r->nst && r->nst < MAX_RSTREAMS)
    r->st[r->nst++] = (struct rstream){ stream, 0, end };
  else if (i == r->nst)
    r->wide = 1;
  else if (end > r->st[i].end)
    r->st[i].end = end;
  if (r->n >= r->maxlen) { /* it cannot match: counted now */
    r->over++;
    r->over_ns = tr_sat_add(r->over_ns, d->dur_ns);
    return attribute(w, r->slot, r->gen, r->kind, HS_ROOT, d->id, 0, d->dur_ns);
  }
  if (agg_grow(&r->k, &r->cap, r->n, sizeof(*r->k)) != 0)
    return TR_ENOMEM;
  k = &r->k[r->n++];
  k->name = d->id;
  k->stream = stream;
  k->cls = (uint8_t)(d->type >> 8);
  k->start = d->start_ns;
  k->dur = d->dur_ns;
  return 0;
}

/* Other work (correlation corr) starts on stream at t: a replay is over
 * once that happened, after its last record there, on every stream it ran
 * on. */
static int replays_over(struct walk *w, int64_t corr, uint32_t stream,
                        int64_t t)
{
  for (size_t i = 0; i < w->rp_hi; i++) {
    struct replay *r = &w->rp[i];
    uint32_t passed = 0;
    int rc;

    if (!r->used || r->corr == corr || r->nst == 0)
      continue;
    for (uint32_t s = 0; s < r->nst; s++) {
      if (r->st[s].stream == stream && r->st[s].end <= t)
        r->st[s].passed = 1;
      passed += (uint32_t)r->st[s].passed;
    }
    if (passed == r->nst && !r->wide && (rc = replay_resolve(w, r)) != 0)
      return rc;
  }
  return 0;
}

static int on_device(struct walk *w, const struct agg_rec *r)
{
  int64_t corr = r->aux & DEC_CORR_MASK;
  uint32_t stream = (uint32_t)(r->aux >> 48);
  struct dec_complete *c = &w->d->c;
  struct replay *rp;
  struct lrec *l;
  struct ostep *s;
  int rc;

  c->devices++;
  c->device_ns = tr_sat_add(c->device_ns, r->dur_ns);
  if ((rc = replays_over(w, corr, stream, r->start_ns)) != 0)
    return rc;
  if (corr != DEC_CORR_MASK && (rp = replay_of(w, corr)) != NULL)
    return replay_add(w, rp, r, stream);
  l = corr != DEC_CORR_MASK ? dec_ring_get(&w->launches, corr) : NULL;
  if (l == NULL) {
    c->no_launch++;
    c->no_launch_ns = tr_sat_add(c->no_launch_ns, r->dur_ns);
    return attribute(w, NO_SLOT, 0, DEC_MAX_KINDS, HS_ROOT, r->id, 0,
                     r->dur_ns);
  }
  s = step_at(w, lrec_slot(l), l->gen);
  rc = attribute_known(w, lrec_slot(l), l->gen, l->kind, l->node, r->id,
                       l->first, r->dur_ns);
  for (int k = 0; k < LAUNCH_INST && l->inst[k] != PF_NONE; k++)
    pf_inst_record(w->perf, l->inst[k], r->start_ns, r->dur_ns,
                   trans_of(w, r->id));
  l->first = 0; /* a second record of one launch is no new instance */
  if (!l->consumed) {
    l->consumed = 1;
    settle(w, l);
    if (s != NULL && --s->pending == 0 && step_done(s, r->start_ns))
      return rc ? rc : step_close(w, s);
  }
  return rc;
}

/* ---- capture windows ---- */

static int win_open(struct walk *w, const struct agg_rec *r)
{
  struct dec_lib *lib = w->lib;
  struct dec_capfile *f = &lib->files[w->d->file];
  struct dec_graph *g;

  if ((r->id == 1) != (w->d->begins == 0) || w->nwin == 8)
    return 0; /* ATOM's span only when the file has no capture calls */
  if (agg_grow(&lib->graphs, &lib->graphs_cap, lib->ngraphs, sizeof(*g)) != 0)
    return TR_ENOMEM;
  g = &lib->graphs[lib->ngraphs];
  g->file = w->d->file;
  g->root = (uint32_t)(lib->ngraphs - f->first);
  g->first = (uint32_t)lib->nlaunches;
  g->n = 0;
  g->cinst_first = g->cinst_end = pf_capture_count(w->perf);
  g->win_end = INT64_MAX;
  w->win[w->nwin].lane = (uint32_t)r->aux;
  w->win[w->nwin].graph = (uint32_t)lib->ngraphs++;
  w->nwin++;
  w->dropping = 0;
  return 0;
}

static void win_close(struct walk *w, const struct agg_rec *r)
{
  struct dec_lib *lib = w->lib;
  size_t i;

  if ((r->id == 1) != (w->d->begins == 0))
    return;
  for (i = w->nwin; i-- > 0 && w->win[i].lane != (uint32_t)r->aux;)
    ;
  if (i >= w->nwin)
    return;
  lib->graphs[w->win[i].graph].cinst_end = pf_capture_count(w->perf);
  lib->graphs[w->win[i].graph].win_end = r->start_ns;
  if (w->dropping && w->win[i].graph == lib->ngraphs - 1) {
    lib->nlaunches = lib->graphs[lib->ngraphs - 1].first;
    lib->ngraphs--;
    lib->graphs_dropped++;
    w->dropping = 0;
  }
  memmove(&w->win[i], &w->win[i + 1], (w->nwin - i - 1) * sizeof(*w->win));
  w->nwin--;
}

/* ---- the walk ---- */

/* A frame starts: pushed on its lane, an op with a proto opening its
 * instance. */
static int on_frame(struct walk *w, const struct agg_rec *r)
{
  struct dec_file *d = w->d;
  uint32_t lane = (uint32_t)r->aux, user = PF_NONE;
  uint32_t proto = (uint32_t)((uint64_t)r->aux >> 32) - 1;
  int rc;

  hs_lanes_advance(&d->lanes, &w->lib->trie, lane, r->start_ns);
  if (proto != PF_NONE && !hs_lanes_full(&d->lanes, lane) &&
      (rc = op_open(w, lane, proto, r->start_ns, r->start_ns + r->dur_ns,
                    &user)) != 0)
    return rc;
  return hs_lanes_push(&d->lanes, &w->lib->trie, lane, r->start_ns,
                       r->start_ns + r->dur_ns, r->id, user);
}

/* A [memory] event, whole: with the stack of its thread and the step
 * open there. */
static int on_memory(struct walk *w, const struct agg_rec *r)
{
  uint32_t lane = r->id, node = HS_ROOT, kind = DEC_MAX_KINDS;
  struct ostep *s;

  if (lane < w->nls) {
    hs_lanes_advance(&w->d->lanes, &w->lib->trie, lane, r->start_ns);
    node = hs_lanes_top(&w->d->lanes, lane);
    if ((s = lane_step(w, lane, r->start_ns)) != NULL)
      kind = s->kind;
  }
  return dec_mem_end(w->d, &w->mem_parts, r, node, kind);
}

static int walk_rec(struct walk *w, const struct agg_rec *r)
{
  struct dec_file *d = w->d;
  int rc;

  if (d->mode == DEC_RUN && (rc = pf_tick(w->perf, r->start_ns)) != 0)
    return rc;
  switch (r->type & 0xff) {
  case DR_FRAME: return on_frame(w, r);
  case DR_STEP: return d->mode == DEC_RUN ? step_open(w, r) : 0;
  case DR_WINOPEN: return d->mode == DEC_CAPTURE ? win_open(w, r) : 0;
  case DR_WINCLOSE:
    if (d->mode == DEC_CAPTURE)
      win_close(w, r);
    return 0;
  case DR_LAUNCH: return on_launch(w, r);
  case DR_GRAPH: return on_graph(w, r);
  case DR_DEVICE: return on_device(w, r);
  case DR_MEM: return d->mode == DEC_RUN ? dec_mem_part(&w->mem_parts, r) : 0;
  case DR_MEM_TOTALS: return d->mode == DEC_RUN ? on_memory(w, r) : 0;
  default: return 0;
  }
}

static int walk_init(struct walk *w, struct dec_file *d)
{
  memset(w, 0, sizeof(*w));
  w->d = d;
  w->lib = d->lib;
  w->perf = d->lib->perf;
  w->nls = d->lanes.ids.n;
  if (d->mode == DEC_RUN)
    pf_lib_labels(w->perf, label_text, d);
  if ((w->ls = calloc(w->nls + 1, sizeof(*w->ls))) == NULL ||
      dec_ring_init(&w->launches, sizeof(struct lrec), LAUNCH_TABLE) != 0 ||
      dec_mem_parts_init(&w->mem_parts) != 0)
    return TR_ENOMEM;
  for (size_t i = 0; i <= MAX_STEPS; i++)
    if (agg_corr_init(&w->steps[i].fine, sizeof(struct dec_fine),
                      UINT32_MAX / 4) != 0)
      return TR_ENOMEM;
  for (size_t i = 0; i < DEC_MAX_KINDS; i++)
    if (agg_corr_init(&w->late[i], sizeof(struct dec_fine), UINT32_MAX / 4))
      return TR_ENOMEM;
  return 0;
}

static void walk_free(struct walk *w)
{
  for (size_t i = 0; w->ls != NULL && i < w->nls; i++)
    free(w->ls[i].v);
  free(w->ls);
  dec_ring_free(&w->launches);
  agg_corr_free(&w->mem_parts);
  for (size_t i = 0; i <= MAX_STEPS; i++)
    agg_corr_free(&w->steps[i].fine);
  for (size_t i = 0; i < DEC_MAX_KINDS; i++)
    agg_corr_free(&w->late[i]);
  for (size_t i = 0; i < MAX_REPLAYS; i++)
    free(w->rp[i].k);
  free(w->at);
  free(w->trans);
}

/* End of records: replays matched, steps closed (in start order), and
 * what came outside steps or after its step. */
static int walk_end(struct walk *w)
{
  int rc = 0;

  for (size_t i = 0; i < w->rp_hi && rc == 0; i++)
    if (w->rp[i].used)
      rc = replay_resolve(w, &w->rp[i]);
  while (rc == 0) {
    struct ostep *first = NULL;

    for (size_t i = 0; i < MAX_STEPS; i++)
      if (w->steps[i].used &&
          (first == NULL || w->steps[i].start < first->start))
        first = &w->steps[i];
    if (first == NULL)
      break;
    rc = step_close(w, first);
  }
  for (uint32_t k = 0; k < DEC_MAX_KINDS && rc == 0; k++)
    if (w->late[k].n > 0)
      rc = dec_tab_step(w->d, k, &w->late[k], 0, 0, -1);
  if (rc == 0)
    rc = dec_tab_step(w->d, DEC_MAX_KINDS, &w->steps[LATE_SLOT].fine, 0, 0, -1);
  return rc == 0 ? pf_end(w->perf) : rc;
}

/* A capture trace's graphs: its file's count and mode. */
static void capture_end(struct walk *w)
{
  struct dec_lib *lib = w->lib;
  struct dec_capfile *f = &lib->files[w->d->file];

  if (w->dropping && w->nwin > 0)
    win_close(w, &(struct agg_rec){ 0, 0, w->win[w->nwin - 1].lane, DR_WINCLOSE,
                                    w->d->begins == 0 });
  for (size_t i = 0; i < w->nwin; i++) /* windows never closed */
    lib->graphs[w->win[i].graph].cinst_end = pf_capture_count(w->perf);
  f->n = (uint32_t)(lib->ngraphs - f->first);
  if (f->mode == IDX_GRAPH_AUTO)
    f->mode = f->n > 1 ? IDX_GRAPH_PIECEWISE : IDX_GRAPH_FULL;
}

/* The step labels alone, in start order (docs/DECODE.md, "Steps"): a
 * label that starts inside an earlier one of its thread is nested, not a
 * step of its own (its kernels are the outer step's: SGLang's
 * step[DECODE ...] inside its execute_... annotation); every other
 * label's duration goes to its kind's distribution, whose p50 picks the
 * median step. */
static int steps_scan(struct dec_file *d)
{
  size_t nlanes = d->lanes.ids.n + 1, words = (size_t)d->labels.n / 64 + 1;
  int64_t *outer_end = malloc(nlanes * sizeof(*outer_end));
  struct agg_iter *it = NULL;
  struct agg_rec r;
  int rc = TR_ENOMEM;

  if (outer_end != NULL && (d->nested = calloc(words, 8)) != NULL &&
      (rc = agg_iter_open(&d->step_runs, &it)) == 0) {
    for (size_t i = 0; i < nlanes; i++)
      outer_end[i] = INT64_MIN;
    while ((rc = agg_iter_next(it, &r)) == 1) {
      uint32_t lane = (uint32_t)(r.aux >> SEQ_BITS);
      int64_t seq = r.aux & ((INT64_C(1) << SEQ_BITS) - 1);
      struct dec_kind *k = &d->kind[dec_desc_of(d, r.id)->kind];

      if (r.start_ns < outer_end[lane]) {
        d->nested[seq / 64] |= UINT64_C(1) << (seq % 64);
        continue;
      }
      outer_end[lane] = r.start_ns + r.dur_ns;
      agg_stat_add(&k->dur, r.dur_ns);
      if (agg_hist_add(&k->hist, r.dur_ns) != 0) {
        rc = TR_ENOMEM;
        break;
      }
    }
    agg_iter_close(it);
  }
  free(outer_end);
  return rc;
}

/* The records of d's streams merged in their order: the next is the
 * least of the streams' heads (a few: a scan). */
static int walk_all(struct walk *w, struct dec_file *d)
{
  struct agg_iter *it[DEC_STREAMS] = { NULL };
  struct agg_rec head[DEC_STREAMS];
  int has[DEC_STREAMS] = { 0 }, rc = 0, i, best;

  for (i = 0; rc == 0 && i < DEC_STREAMS; i++)
    if ((rc = agg_iter_open(&d->runs[i], &it[i])) == 0 &&
        (has[i] = agg_iter_next(it[i], &head[i])) < 0)
      rc = has[i];
  while (rc == 0) {
    for (i = 0, best = -1; i < DEC_STREAMS; i++)
      if (has[i] == 1 && (best < 0 || agg_rec_cmp(&head[i], &head[best]) < 0))
        best = i;
    if (best < 0)
      break;
    if ((rc = walk_rec(w, &head[best])) == 0 &&
        (has[best] = agg_iter_next(it[best], &head[best])) < 0)
      rc = has[best];
  }
  for (i = 0; i < DEC_STREAMS; i++)
    agg_iter_close(it[i]);
  return rc;
}

int dec_walk(struct dec_file *d)
{
  struct walk w;
  int rc;

  if ((rc = walk_init(&w, d)) == 0 && (rc = steps_scan(d)) == 0)
    rc = walk_all(&w, d);
  if (rc == 0 && d->mode == DEC_RUN)
    rc = walk_end(&w);
  if (rc == 0 && d->mode == DEC_CAPTURE)
    capture_end(&w);
  walk_free(&w);
  return rc;
}
