/*
 * The collectives of one rank (docs/ANALYSIS.md): communication kernels (the
 * category table's "communication", rules.c) are recorded per stream with
 * their start and duration in sorted runs of their own (one
 * record per collective, spilled like the other time records, so memory
 * and disk follow the collectives, not the events), then walked in time
 * order beside the main records to find, for each collective:
 *
 *   exposed_ns  the part of it during which no compute kernel (a kernel of
 *               any category but communication, copy and memset) runs on
 *               the rank; kernels of one stream run one after another, so
 *               that is no compute on the rank's other streams;
 *   its kind    the step kind whose label covers its start (agg_cover, the
 *               rule of idle time), or none;
 *   its key     (family, stream): the stream's lane is its ordinal among
 *               the streams that run the family, in order of first start,
 *               so that two ranks' k-th collectives of a family on their
 *               first such stream are matched whatever the streams' ids.
 *
 * The rank's totals go into its summary; every collective, when the side
 * file was asked for (idx_options.collectives_path), into the file of
 * agg_int.h that the capture-level matching reads (coll_match.c).
 *
 * Exposure is exact in one pass. With the compute intervals added in start
 * order, the measure of their union below t, U(t), is busy - max(0,
 * cur_end - t) for any t that no added interval starts after: the part of
 * the union after t is then one piece, [t, cur_end). A collective [s, e)
 * reads U(s) when it opens (every compute kernel starting before s is in)
 * and U(e) at the first main record starting at or after e (before that
 * record is added), so its covered part is U(e) - U(s). Open collectives
 * wait in a heap by end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg_int.h"

#define NAME_BUF      512        /* a name's bytes copied on the stack */
#define AGG_COLL_RECS (1u << 14) /* 512 KB of collectives */

enum { COMM_UNKNOWN, COMM_YES, COMM_NO };

struct agg_coll_walk;

/* The pass's state. */
struct agg_coll {
  struct agg_runs runs; /* the collectives' records (aux = lane) */
  struct agg_map lanes; /* (device, stream) */
  struct agg_coll_walk *walk;
  uint64_t events;
  int64_t ns, exposed_ns; /* the rank's totals */
};

/* ---- the event pass ---- */

/* Whether name id is a communication kernel under the rules: once per
 * name, at its first kernel event. The fold row (agg_fold.c) stands for
 * many names and is none. */
static int is_comm(struct idx_agg *a, uint32_t nid)
{
  const struct agg_key *k = &a->names.keys[nid];
  char stack[NAME_BUF], *buf = stack;
  int yes;

  if (nid == a->kfold.id)
    return 0;
  if (k->n >= sizeof(stack) && (buf = malloc(k->n + 1)) == NULL)
    return TR_ENOMEM;
  memcpy(buf, k->p, k->n);
  buf[k->n] = '\0';
  yes = strcmp(idx_category(a->rules, buf), "communication") == 0;
  if (buf != stack)
    free(buf);
  return yes;
}

/* The lane of a device event: (device, stream), the stream from
 * args.stream, else the GPU event's tid (docs/TRACE_FORMATS.md). */
static int lane_of(struct idx_agg *a, const struct idx_event *ev,
                   uint32_t *lane)
{
  int64_t key[2] = { (ev->has & IDX_HAS_PID) ? ev->pid : -1, -1 };

  if (ev->has & IDX_HAS_STREAM)
    key[1] = ev->stream;
  else if (ev->has & IDX_HAS_TID)
    key[1] = ev->tid;
  return agg_map_intern(&a->coll->lanes, key, sizeof(key), lane) < 0 ? TR_ENOMEM
                                                                     : 0;
}

/* A kernel event (of name and shape a->ev_name, a->ev_shape, the device
 * pass's): recorded when it is a collective. */
int agg_coll_event(struct idx_agg *a, const struct idx_doc *doc,
                   const struct idx_event *ev, enum idx_class cls)
{
  uint32_t nid = a->ev_name;
  struct agg_kernel *k = &a->kernels[nid];
  struct agg_rec r = { ev->ts_ns, ev->dur_ns, 0, AGG_REC_KERNEL, a->ev_shape };
  uint32_t lane;
  int rc;

  (void)doc;
  (void)cls;
  if (k->comm == COMM_UNKNOWN) {
    if ((rc = is_comm(a, nid)) < 0)
      return rc;
    k->comm = rc ? COMM_YES : COMM_NO;
  }
  if (k->comm != COMM_YES)
    return 0;
  if ((rc = lane_of(a, ev, &lane)) != 0)
    return rc;
  r.aux = lane;
  return agg_runs_add(&a->coll->runs, &r);
}

/* ---- the time pass ---- */

struct open_coll { /* a collective waiting for U(end) */
  int64_t end, start, dur, u_start;
  uint64_t seq; /* opening order: ties of (end, start) */
  uint32_t key;
  int32_t kind;
};

struct agg_coll_walk {
  struct idx_agg *a;
  struct agg_iter *it; /* over the collectives' records */
  struct agg_rec next; /* its next record, when has_next */
  int has_next;
  int comm, copy, memset; /* category indexes */
  uint32_t label_type;    /* the step side's label records */
  int steps;              /* the step side has labels */
  struct agg_cover cover;
  int any;           /* a compute kernel was added */
  int64_t busy, end; /* the compute union: its measure, its end */
  struct open_coll *heap;
  size_t n, cap;
  uint64_t seq;
  struct agg_map keys; /* (family, lane) -> key */
  struct coll_key {
    uint32_t family, lane;
    int64_t stream;
  } * key;
  size_t key_cap;
  uint32_t *lanes; /* per family id: keys of it so far */
  size_t lanes_cap;
  uint64_t nrecs;
};

/* U(t) of the comment at the top: valid while no added compute interval
 * starts after t. */
static int64_t covered_below(const struct agg_coll_walk *w, int64_t t)
{
  if (!w->any)
    return 0;
  return w->end > t ? w->busy - (w->end - t) : w->busy;
}

static int open_before(const struct open_coll *x, const struct open_coll *y)
{
  if (x->end != y->end)
    return x->end < y->end;
  if (x->start != y->start)
    return x->start < y->start;
  return x->seq < y->seq;
}

static void heap_up(struct open_coll *h, size_t i)
{
  while (i > 0 && open_before(&h[i], &h[(i - 1) / 2])) {
    struct open_coll t = h[i];

    h[i] = h[(i - 1) / 2];
    h[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static void heap_down(struct open_coll *h, size_t n)
{
  size_t i = 0;

  for (;;) {
    size_t c = 2 * i + 1;
    struct open_coll t;

    if (c >= n)
      return;
    if (c + 1 < n && open_before(&h[c + 1], &h[c]))
      c++;
    if (!open_before(&h[c], &h[i]))
      return;
    t = h[i];
    h[i] = h[c];
    h[c] = t;
    i = c;
  }
}

/* The key of a collective of family f on lane: new keys take the next
 * lane ordinal of their family. */
static int key_of(struct agg_coll_walk *w, uint32_t f, uint32_t lane,
                  uint32_t *out)
{
  uint32_t k[2] = { f, lane };
  int rc = agg_map_intern(&w->keys, k, sizeof(k), out);
  int64_t lane_key[2];

  if (rc == 0)
    return 0;
  if (rc < 0 || agg_grow(&w->key, &w->key_cap, *out, sizeof(*w->key)) != 0 ||
      agg_grow(&w->lanes, &w->lanes_cap, f, sizeof(*w->lanes)) != 0)
    return TR_ENOMEM;
  memcpy(lane_key, w->a->coll->lanes.keys[lane].p, sizeof(lane_key));
  w->key[*out].family = f;
  w->key[*out].lane = w->lanes[f]++;
  w->key[*out].stream = lane_key[1];
  return 0;
}

static int open_coll(struct agg_coll_walk *w, const struct agg_rec *c)
{
  struct idx_agg *a = w->a;
  uint32_t f = a->name_family[a->shapes[c->id].name];
  struct open_coll o = { c->start_ns + c->dur_ns,
                         c->start_ns,
                         c->dur_ns,
                         covered_below(w, c->start_ns),
                         w->seq++,
                         0,
                         -1 };
  int rc;

  if (f == UINT32_MAX)
    return 0;
  if ((rc = key_of(w, f, (uint32_t)c->aux, &o.key)) != 0)
    return rc;
  if (w->steps)
    o.kind = agg_cover_kind(&w->cover, a->nkinds, c->start_ns);
  if (agg_grow(&w->heap, &w->cap, w->n, sizeof(*w->heap)) != 0)
    return TR_ENOMEM;
  w->heap[w->n] = o;
  heap_up(w->heap, w->n++);
  return 0;
}

/* The earliest-ending open collective: its exposure is final. */
static int close_first(struct agg_coll_walk *w)
{
  struct open_coll o = w->heap[0];
  int64_t covered = covered_below(w, o.end) - o.u_start;
  struct coll_rec rec = { o.start, o.dur, o.dur - covered, o.key, o.kind };

  w->heap[0] = w->heap[--w->n];
  heap_down(w->heap, w->n);
  w->a->coll->events++;
  w->a->coll->ns = tr_sat_add(w->a->coll->ns, o.dur);
  w->a->coll->exposed_ns = tr_sat_add(w->a->coll->exposed_ns, rec.exposed_ns);
  w->nrecs++;
  if (w->a->coll_out != NULL &&
      fwrite(&rec, sizeof(rec), 1, w->a->coll_out) != 1)
    return TR_EIO;
  return 0;
}

/* Opens the collectives starting before t, then closes those ending at or
 * before t (before anything starting at t is added). */
static int advance(struct agg_coll_walk *w, int64_t t, int all)
{
  int rc;

  while (w->has_next && (all || w->next.start_ns < t)) {
    if ((rc = open_coll(w, &w->next)) != 0)
      return rc;
    if ((rc = agg_iter_next(w->it, &w->next)) < 0)
      return rc;
    w->has_next = rc;
  }
  while (w->n > 0 && (all || w->heap[0].end <= t))
    if ((rc = close_first(w)) != 0)
      return rc;
  return 0;
}

static void walk_free(struct agg_coll_walk *w);

static int walk_new(struct idx_agg *a, struct agg_coll_walk **out)
{
  struct agg_coll_walk *w = calloc(1, sizeof(*w));
  int rc;

  if (w == NULL)
    return TR_ENOMEM;
  w->a = a;
  w->comm = agg_category_index("communication");
  w->copy = agg_category_index("copy");
  w->memset = agg_category_index("memset");
  w->label_type =
      a->step_side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU;
  for (uint32_t k = 0; k < a->nkinds; k++)
    w->steps |= a->step[a->step_side][k].s.count > 0;
  agg_cover_init(&w->cover);
  if ((rc = agg_iter_open(&a->coll->runs, &w->it)) != 0 ||
      (rc = agg_iter_next(w->it, &w->next)) < 0) {
    walk_free(w);
    return rc;
  }
  w->has_next = rc;
  *out = w;
  return 0;
}

static int is_compute(const struct agg_coll_walk *w, const struct agg_rec *r)
{
  int cat;

  if (r->type != AGG_REC_KERNEL)
    return 0;
  cat = w->a->name_cat[w->a->shapes[r->id].name];
  return cat != w->comm && cat != w->copy && cat != w->memset;
}

int agg_coll_walk(struct idx_agg *a, struct agg_at *at)
{
  struct agg_coll_walk *w = a->coll->walk;
  const struct agg_rec *r = at->r;
  int64_t end = r->start_ns + r->dur_ns;
  int rc = advance(w, r->start_ns, 0);

  if (rc != 0)
    return rc;
  if (r->type == w->label_type && r->id < w->a->nkinds)
    agg_cover_label(&w->cover, r->id, r->start_ns, end);
  if (!is_compute(w, r))
    return 0;
  if (!w->any || r->start_ns >= w->end)
    w->busy += r->dur_ns;
  else if (end > w->end)
    w->busy += end - w->end;
  if (!w->any || end > w->end)
    w->end = end;
  w->any = 1;
  return 0;
}

static int put_text(FILE *f, const char *p, size_t n)
{
  uint32_t len = n > COLL_TEXT_MAX ? COLL_TEXT_MAX : (uint32_t)n;

  return fwrite(&len, sizeof(len), 1, f) == 1 &&
                 (len == 0 || fwrite(p, len, 1, f) == 1)
             ? 0
             : TR_EIO;
}

/* The keys, the kinds and the trailer after the records. */
static int write_tables(struct agg_coll_walk *w, FILE *f)
{
  struct idx_agg *a = w->a;
  struct coll_trailer t = { COLL_MAGIC, w->nrecs, w->keys.n, a->nkinds,
                            0,          0,        a->t0_ns,  a->tend_ns };
  long at = ftell(f);
  int rc = at < 0 ? TR_EIO : 0;

  t.keys_at = (uint64_t)at;
  for (uint32_t i = 0; rc == 0 && i < w->keys.n; i++) {
    const struct agg_key *fam = &a->fam_map.keys[w->key[i].family];

    rc = put_text(f, fam->p, fam->n);
    if (rc == 0 && (fwrite(&w->key[i].lane, 4, 1, f) != 1 ||
                    fwrite(&w->key[i].stream, 8, 1, f) != 1))
      rc = TR_EIO;
  }
  if (rc == 0 && (at = ftell(f)) < 0)
    rc = TR_EIO;
  t.kinds_at = (uint64_t)at;
  for (uint32_t k = 0; rc == 0 && k < a->nkinds; k++)
    rc = put_text(f, a->kinds_map.keys[k].p, a->kinds_map.keys[k].n);
  if (rc == 0 && fwrite(&t, sizeof(t), 1, f) != 1)
    rc = TR_EIO;
  return rc;
}

/* The collectives still open closed, the side file's tables written. */
int agg_coll_end(struct idx_agg *a, struct tr_err *err)
{
  struct agg_coll_walk *w = a->coll->walk;
  int rc = advance(w, 0, 1);

  (void)err;
  if (rc == 0 && a->coll_out != NULL)
    rc = write_tables(w, a->coll_out);
  walk_free(w);
  a->coll->walk = NULL;
  return rc;
}

static void walk_free(struct agg_coll_walk *w)
{
  if (w == NULL)
    return;
  agg_iter_close(w->it);
  agg_map_free(&w->keys);
  free(w->heap);
  free(w->key);
  free(w->lanes);
  free(w);
}

/* ---- the pass's hooks ---- */

int agg_coll_new(struct idx_agg *a)
{
  size_t cap =
      a->rec_cap && a->rec_cap < AGG_COLL_RECS ? a->rec_cap : AGG_COLL_RECS;

  if ((a->coll = calloc(1, sizeof(*a->coll))) == NULL)
    return TR_ENOMEM;
  return agg_runs_init(&a->coll->runs, cap, &a->spill);
}

void agg_coll_free(struct idx_agg *a)
{
  if (a->coll == NULL)
    return;
  walk_free(a->coll->walk);
  agg_runs_free(&a->coll->runs);
  agg_map_free(&a->coll->lanes);
  free(a->coll);
  a->coll = NULL;
}

int agg_coll_seal(struct idx_agg *a, struct tr_err *err)
{
  int rc;

  (void)err;
  if ((rc = agg_runs_seal(&a->coll->runs)) != 0)
    return rc;
  return walk_new(a, &a->coll->walk);
}

void agg_coll_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  r->collective_events = (int64_t)a->coll->events;
  r->collective_ns = a->coll->ns;
  r->exposed_comm_ns = a->coll->exposed_ns;
}
