/*
 * Why the GPU waits: the rank's idle time (span minus the union of device
 * intervals) split by cause and by step kind, and the launch delays.
 *
 * Idle time is every stretch of [t0, t0 + span) where no kernel, copy or
 * memset runs. Walking the records in start order, each stretch is cut by
 * the run labels of the step side (agg_steps.c): the parts no label covers
 * are "between_steps" (when the trace has steps at all); a covered part
 * belongs to the kind whose covering label started last (ties: the kind
 * seen first in the file) and takes the cause of its stretch, the first
 * that holds of:
 *
 *   graph_replay   the device records before and after the stretch have
 *                  one correlation: kernels of one hipGraphLaunch /
 *                  cudaGraphLaunch replay (never host idle);
 *   sync           a synchronising host call (*Synchronize*, a blocking
 *                  copy: a memcpy call without Async) that started before
 *                  the stretch ended was still running when it began;
 *   collective     the stretch ends with a communication kernel (rules.c):
 *                  the device waited for a collective;
 *   host_late      the host call that issued the record ending the stretch
 *                  (same correlation) started after the stretch began;
 *   other          anything else: work was queued yet did not start
 *                  (dependencies, launch overhead), or the stretch ends
 *                  the trace.
 *
 * So the causes partition the idle time: they sum to it exactly.
 *
 * Launch delay: a kernel's start minus the start of the host call of its
 * correlation, for the first kernel of each correlation (later kernels of
 * a graph replay have no launch of their own). Calls are joined to their
 * kernels in time order through a table indexed by the low bits of the
 * correlation (ids are sequential): exact while fewer than JOIN_SLOTS
 * launches are in flight; a kernel whose call was overwritten, or which
 * starts before it (clock skew), has no delay and cannot be host_late.
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg_int.h"

#define JOIN_SLOTS (1u << 16)

static const char *const cause_names[AGG_IDLE_CAUSES] = {
  "host_late", "sync", "collective", "graph_replay", "between_steps", "other"
};

struct slot {       /* a host call by correlation */
  int64_t corr;     /* -1: empty */
  int64_t start_ns; /* the call's start */
};

/* The pass's state: the idle time by step kind and cause ([0]: no step,
 * [k + 1]: kind k), the launch delays, and the walk's. */
struct agg_idle {
  int64_t idle[AGG_MAX_STEP_KINDS + 1][AGG_IDLE_CAUSES];
  struct agg_stat delay;
  struct agg_hist delay_hist;
  struct idx_agg *a;
  uint32_t label_type; /* the step side's label records */
  int steps;           /* the step side has labels */
  int any;             /* a device record was seen */
  int comm;            /* the communication category's index */
  struct agg_cover cover;
  int gap;                              /* a stretch is open since gap_start */
  int64_t gap_start;                    /* when the device went idle */
  int64_t cursor;                       /* idle accounted up to here */
  int64_t pend[AGG_MAX_STEP_KINDS + 1]; /* covered ns of the open stretch,
                                           by kind + 1; [0] without steps */
  int64_t pend_between;                 /* its ns outside every label */
  int64_t prev_corr; /* of the record that last extended the union */
  int64_t sync_end;  /* latest end of a synchronising call so far */
  struct slot *join; /* [JOIN_SLOTS] */
  uint64_t used[JOIN_SLOTS / 64]; /* bit i: a device record of slot i's
                                     call came already (a bitmap: 16-byte
                                     slots, 1 MB, not 24) */
};

int agg_idle_new(struct idx_agg *a)
{
  return (a->idle = calloc(1, sizeof(*a->idle))) == NULL ? TR_ENOMEM : 0;
}

void agg_idle_free(struct idx_agg *a)
{
  if (a->idle == NULL)
    return;
  agg_hist_free(&a->idle->delay_hist);
  free(a->idle->join);
  free(a->idle);
  a->idle = NULL;
}

int agg_idle_seal(struct idx_agg *a, struct tr_err *err)
{
  struct agg_idle *w = a->idle;

  (void)err;
  if ((w->join = malloc(JOIN_SLOTS * sizeof(*w->join))) == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < JOIN_SLOTS; i++)
    w->join[i].corr = -1;
  w->a = a;
  w->label_type =
      a->step_side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU;
  for (uint32_t k = 0; k < a->nkinds; k++)
    w->steps |= a->step[a->step_side][k].s.count > 0;
  agg_cover_init(&w->cover);
  w->comm = agg_category_index("communication");
  w->cursor = a->t0_ns;
  w->prev_corr = -1;
  w->sync_end = INT64_MIN;
  return 0;
}

void agg_cover_init(struct agg_cover *c)
{
  for (uint32_t k = 0; k < AGG_MAX_STEP_KINDS; k++) {
    c->start[k] = 0;
    c->end[k] = INT64_MIN;
  }
}

void agg_cover_label(struct agg_cover *c, uint32_t k, int64_t start,
                     int64_t end)
{
  if (end > c->end[k])
    c->end[k] = end;
  c->start[k] = start;
}

int agg_cover_kind(const struct agg_cover *c, uint32_t nk, int64_t t)
{
  int best = -1;

  for (uint32_t k = 0; k < nk; k++)
    if (c->end[k] > t && (best < 0 || c->start[k] > c->start[best]))
      best = (int)k;
  return best;
}

/* Accounts the idle time up to t (the start of the record being walked):
 * labels only change at records, so the cover is known up to t. */
static void advance(struct agg_idle *w, int64_t t, int64_t busy_end)
{
  int64_t c = w->cursor > busy_end ? w->cursor : busy_end, e;
  int k;

  if (t > c && !w->gap) {
    w->gap = 1;
    w->gap_start = c;
  }
  while (c < t) {
    if (!w->steps) {
      w->pend[0] += t - c;
      break;
    }
    if ((k = agg_cover_kind(&w->cover, w->a->nkinds, c)) < 0) {
      w->idle[0][AGG_IDLE_BETWEEN_STEPS] += t - c;
      w->pend_between += t - c;
      break;
    }
    e = w->cover.end[k] < t ? w->cover.end[k] : t;
    w->pend[k + 1] += e - c;
    c = e;
  }
  if (t > w->cursor)
    w->cursor = t;
}

static int is_collective(const struct agg_idle *w, const struct agg_rec *r)
{
  return r->type == AGG_REC_KERNEL &&
         w->a->name_cat[w->a->shapes[r->id].name] == w->comm;
}

/* The cause of the open stretch, ended by r (NULL: the end of the trace)
 * whose issuing call started at launch (INT64_MIN: unknown). */
static int cause_of(const struct agg_idle *w, const struct agg_rec *r,
                    int64_t launch)
{
  if (r != NULL && r->aux >= 0 && r->aux == w->prev_corr)
    return AGG_IDLE_GRAPH;
  if (w->sync_end > w->gap_start)
    return AGG_IDLE_SYNC;
  if (r != NULL && is_collective(w, r))
    return AGG_IDLE_COLLECTIVE;
  if (r != NULL && launch != INT64_MIN && launch > w->gap_start)
    return AGG_IDLE_HOST_LATE;
  return AGG_IDLE_OTHER;
}

/* Ends the open stretch at end with its cause; corr: the correlation of
 * the record that ended it (-1). A finding: the critical path's culprits
 * hear it (index/cpath/cpath.c). */
static void close_gap(struct agg_idle *w, int cause, int64_t end, int64_t corr)
{
  struct agg_finding f = {
    AGG_FOUND_IDLE, w->gap_start,    end,  0,       -1,
    cause,          w->pend_between, corr, w->pend, w->a->nkinds + 1
  };

  agg_found(w->a, &f);
  for (uint32_t j = 0; j <= w->a->nkinds; j++) {
    w->idle[j][cause] += w->pend[j];
    w->pend[j] = 0;
  }
  w->pend_between = 0;
  w->gap = 0;
}

/* The start of the call that issued device record r (INT64_MIN: unknown);
 * the first kernel of a correlation adds its launch delay. */
static int64_t launch_of(struct agg_idle *w, const struct agg_rec *r, int *rc)
{
  uint64_t i = (uint64_t)r->aux & (JOIN_SLOTS - 1), bit = 1ull << (i % 64);
  struct slot *s;

  if (r->aux < 0)
    return INT64_MIN;
  s = &w->join[i];
  if (s->corr != r->aux)
    return INT64_MIN;
  if (!(w->used[i / 64] & bit) && r->type == AGG_REC_KERNEL &&
      r->start_ns >= s->start_ns) {
    agg_stat_add(&w->delay, r->start_ns - s->start_ns);
    if (agg_hist_add(&w->delay_hist, r->start_ns - s->start_ns) != 0)
      *rc = TR_ENOMEM;
  }
  w->used[i / 64] |= bit;
  return s->start_ns;
}

static int on_device(struct agg_idle *w, const struct agg_rec *r,
                     int64_t busy_end)
{
  int rc = 0;
  int64_t launch = launch_of(w, r, &rc);

  advance(w, r->start_ns, busy_end);
  if (w->gap)
    close_gap(w, cause_of(w, r, launch), r->start_ns, r->aux);
  if (!w->any || r->start_ns + r->dur_ns > busy_end)
    w->prev_corr = r->aux;
  w->any = 1;
  return rc;
}

static void on_call(struct agg_idle *w, const struct agg_rec *r)
{
  uint64_t i;

  if ((r->id & AGG_CALL_SYNC) && r->start_ns + r->dur_ns > w->sync_end)
    w->sync_end = r->start_ns + r->dur_ns;
  if (r->aux < 0)
    return;
  i = (uint64_t)r->aux & (JOIN_SLOTS - 1);
  w->join[i].corr = r->aux;
  w->join[i].start_ns = r->start_ns;
  w->used[i / 64] &= ~(1ull << (i % 64));
}

int agg_idle_walk(struct idx_agg *a, struct agg_at *at)
{
  struct agg_idle *w = a->idle;
  const struct agg_rec *r = at->r;
  int64_t busy_end = at->busy_end;

  switch (r->type) {
  case AGG_REC_KERNEL:
  case AGG_REC_COPY:
  case AGG_REC_MEMSET: return on_device(w, r, busy_end);
  case AGG_REC_CALL: on_call(w, r); return 0;
  default: break;
  }
  if (r->type != w->label_type || r->id >= w->a->nkinds)
    return 0;
  advance(w, r->start_ns, busy_end);
  agg_cover_label(&w->cover, r->id, r->start_ns, r->start_ns + r->dur_ns);
  return 0;
}

/* The idle time up to the end of the span (the last stretch a finding,
 * before the critical path's walk ends: ends run in reverse). */
int agg_idle_end(struct idx_agg *a, struct tr_err *err)
{
  struct agg_idle *w = a->idle;

  (void)err;
  advance(w, a->tend_ns, a->busy_end);
  if (w->gap)
    close_gap(w, cause_of(w, NULL, INT64_MIN), a->tend_ns, -1);
  free(w->join);
  w->join = NULL;
  return 0;
}

void agg_idle_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  const struct agg_idle *w = a->idle;

  r->launch_delays = (int64_t)w->delay.count;
  r->launch_delay_min_ns = w->delay.min_ns;
  r->launch_delay_p50_ns = agg_pct(&w->delay_hist, &w->delay, 500);
  r->launch_delay_p99_ns = agg_pct(&w->delay_hist, &w->delay, 990);
  r->launch_delay_max_ns = w->delay.max_ns;
}

const char *agg_idle_cause_name(int cause)
{
  return cause >= 0 && cause < AGG_IDLE_CAUSES ? cause_names[cause] : "other";
}

void agg_idle_rows(struct idx_agg *a, struct agg_out *o)
{

  AGG_SUM_FILLS(TR_SUM_IDLE, 3);
  for (uint32_t j = 0; j <= a->nkinds; j++)
    for (int c = 0; c < AGG_IDLE_CAUSES; c++) {
      const struct agg_key *k = j ? &a->kinds_map.keys[j - 1] : NULL;
      struct agg_sum_idle r = {
        .step = { k ? k->p : NULL, k ? k->n : 0 },
        .cause = agg_txt(cause_names[c]),
        .idle_ns = a->idle->idle[j][c],
      };

      if (a->idle->idle[j][c] > 0)
        agg_out_idle(o, &r);
    }
}
