/*
 * The critical path's figures over the steps (cpath.h): per step kind, per
 * kernel name and family and kind, the steps list, the picked steps (the
 * median and the slowest of each kind, with their paths, kernels and
 * launch queue), the idle culprits, launch costs and kernel sequences;
 * and their summary tables (common/summary.h). Memory grows with distinct
 * names, kinds, culprits and sequences (capped), and the picks.
 */
#include <stdlib.h>
#include <string.h>

#include "index/cpath/cpath.h"
#include "index/host/host.h"

static const char *const bound_names[CP_BOUNDS] = { "cpu",    "gpu", "comm",
                                                    "launch", "gap", "sync",
                                                    "idle" };

const char *cp_bound_name(int b)
{
  return b >= 0 && b < CP_BOUNDS ? bound_names[b] : "idle";
}

int cp_stats_kind(struct idx_agg *a, const char *p, size_t n, uint32_t *id)
{
  struct agg_cpath *c = a->cpath;
  struct cp_kind *k;
  uint32_t lk;
  int rc;

  if (c->kinds.n >= CP_MAX_KINDS && !agg_map_find(&c->kinds, p, n, id)) {
    *id = CP_NO_KIND;
    return 0;
  }
  rc = agg_map_intern(&c->kinds, p, n, id);
  if (rc < 0 || agg_grow(&c->kind, &c->kind_cap, *id, sizeof(*c->kind)) != 0)
    return TR_ENOMEM;
  if (rc == 0)
    return 0;
  /* The step time the median step is nearest: the kind's p50 as /steps
   * gives it (agg_steps.c's, of the step side), or of the profiler
   * steps. */
  k = &c->kind[*id];
  if (c->source == CP_SOURCE_LABELS && agg_map_find(&a->kinds_map, p, n, &lk) &&
      lk < AGG_MAX_STEP_KINDS)
    k->p50_ns = agg_pct(&a->step[a->step_side][lk].hist,
                        &a->step[a->step_side][lk].s, 500);
  else if (c->source == CP_SOURCE_PSTEPS)
    k->p50_ns = agg_pct(&a->host->pstep_hist, &a->host->psteps, 500);
  return 0;
}

/* ---- per kernel and family ---- */

void cp_paths_free(struct cp_paths *p)
{
  for (size_t i = 0; i < p->n; i++)
    agg_hist_free(&p->rows[i].slack_hist);
  for (int k = 0; k < CP_MAX_KINDS; k++)
    free(p->row_of[k]);
  free(p->rows);
  memset(p, 0, sizeof(*p));
}

/* The row of (key, kind); keys < nkeys. NULL when out of memory. */
static struct cp_path_row *path_row(struct cp_paths *p, uint32_t nkeys,
                                    uint32_t key, uint32_t kind)
{
  uint32_t **of = &p->row_of[kind];
  struct cp_path_row *r;

  if (*of == NULL) {
    if ((*of = malloc((nkeys + 1) * sizeof(**of))) == NULL)
      return NULL;
    memset(*of, 0xff, (nkeys + 1) * sizeof(**of));
  }
  if ((*of)[key] != CP_NO_ROW)
    return &p->rows[(*of)[key]];
  if (agg_grow(&p->rows, &p->cap, p->n, sizeof(*p->rows)) != 0)
    return NULL;
  (*of)[key] = (uint32_t)p->n;
  r = &p->rows[p->n++];
  r->key = key;
  r->kind = kind;
  r->last_step = r->last_step_on = -1;
  return r;
}

static int path_add(struct cp_path_row *r, int64_t step, int on, int64_t dur,
                    int64_t slack)
{
  if (r->last_step != step) {
    r->last_step = step;
    r->steps++;
  }
  r->instances++;
  if (on) {
    r->on_path++;
    r->critical_ns = tr_sat_add(r->critical_ns, dur);
    if (r->last_step_on != step) {
      r->last_step_on = step;
      r->steps_on++;
    }
  }
  agg_stat_add(&r->slack, slack > 0 ? slack : 0);
  return agg_hist_add(&r->slack_hist, slack > 0 ? slack : 0);
}

static int grow_by_name(struct idx_agg *a)
{
  struct agg_cpath *c = a->cpath;

  if (c->critical_ns == NULL &&
      ((c->critical_ns = calloc(a->names.n + 1, sizeof(int64_t))) == NULL ||
       (c->fam_critical_ns = calloc(a->fam_map.n + 1, sizeof(int64_t))) ==
           NULL))
    return TR_ENOMEM;
  return 0;
}

/* The step's kernels into the per name and per family rows. */
static int kernels_add(struct idx_agg *a, const struct cp_stepdata *sd)
{
  struct agg_cpath *c = a->cpath;
  const struct cp_result *res = sd->res;
  int rc = grow_by_name(a);

  for (uint32_t i = 0; rc == 0 && i < sd->n; i++) {
    const struct cp_ev *e = &sd->ev[i];
    uint32_t fam;
    struct cp_path_row *r;
    int on = res->on_path[i] != 0;

    if (e->kind != CP_EV_KERNEL || e->name >= a->names.n)
      continue;
    fam = a->name_family[e->name];
    if ((r = path_row(&c->paths, a->names.n, e->name, sd->kind)) == NULL)
      return TR_ENOMEM;
    rc = path_add(r, res->row.index, on, e->end - e->start, res->slack[i]);
    if (on)
      c->critical_ns[e->name] =
          tr_sat_add(c->critical_ns[e->name], e->end - e->start);
    if (rc != 0 || fam == UINT32_MAX)
      continue;
    if ((r = path_row(&c->fpaths, a->fam_map.n, fam, sd->kind)) == NULL)
      return TR_ENOMEM;
    rc = path_add(r, res->row.index, on, e->end - e->start, res->slack[i]);
    if (on)
      c->fam_critical_ns[fam] =
          tr_sat_add(c->fam_critical_ns[fam], e->end - e->start);
  }
  return rc;
}

/* ---- the launch queue of a step ---- */

struct qchange {
  int64_t t;
  int d;
};

static int qchange_cmp(const void *x, const void *y)
{
  const struct qchange *a = x, *b = y;

  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  return a->d - b->d; /* a start (-1) before a launch at the same time */
}

/* The step's launches waiting: from each launch call's start to its first
 * record's start. Max, ns x depth over [window start, extent end), and
 * (when series) the changes. */
static int queue_of(const struct cp_stepdata *sd, struct cp_steprow *row,
                    struct cp_qpoint **series, uint32_t *nseries)
{
  struct qchange *q;
  int64_t depth = 0, end = row->end_ns;
  size_t n = 0, records = 0;

  /* Two changes a device record at most: sized by them, not by the
   * step's events (a step of host calls alone needs none). */
  for (uint32_t i = 0; i < sd->n; i++)
    records += cp_is_record(&sd->ev[i]);
  q = cp_scratch(sd->sc, CP_B_QUEUE, (2 * records + 1) * sizeof(*q), 0);
  if (q == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < sd->n; i++) {
    const struct cp_ev *e = &sd->ev[i];

    if (cp_is_record(e)) {
      if (e->end > end)
        end = e->end;
      if ((e->flags & CP_F_FIRST) && e->launch != UINT32_MAX &&
          sd->ev[e->launch].start < e->start) {
        q[n++] = (struct qchange){ sd->ev[e->launch].start, 1 };
        q[n++] = (struct qchange){ e->start, -1 };
      }
    }
  }
  qsort(q, n, sizeof(*q), qchange_cmp);
  row->extent_ns = end - row->start_ns;
  for (size_t k = 0; k < n; k++) {
    int64_t next = k + 1 < n ? q[k + 1].t : end;

    depth += q[k].d;
    if (depth > row->queue_max)
      row->queue_max = depth;
    if (next > q[k].t)
      row->queue_area =
          tr_sat_add(row->queue_area, tr_sat_mul(depth, next - q[k].t));
    if (series != NULL && *nseries < CP_QUEUE_POINTS &&
        (k + 1 == n || q[k + 1].t != q[k].t))
      (*series)[(*nseries)++] = (struct cp_qpoint){ q[k].t, depth };
  }
  return 0;
}

/* ---- sequences ---- */

/* The slot of sequence (kind, n, fam[0..n)) with hash h in a table of
 * slots (a power of two): its own, or the empty one where it goes. */
static struct cp_seq *seq_slot(struct cp_seq *t, uint32_t slots, uint64_t h,
                               uint32_t kind, uint32_t n, const uint32_t *fam)
{
  uint32_t i = (uint32_t)(h >> 40) & (slots - 1);

  for (;; i = (i + 1) & (slots - 1)) {
    struct cp_seq *q = &t[i];

    if (q->hash == 0 || (q->hash == h && q->kind == kind && q->n == n &&
                         memcmp(q->fam, fam, n * sizeof(*fam)) == 0))
      return q;
  }
}

/* Room for one more sequence while the table stays at most half full: it
 * starts at 1024 slots and doubles, up to CP_SEQ_SLOTS (CP_SEQ_KEEP
 * sequences); its order does not matter (the rows are sorted). */
static int seq_room(struct agg_cpath *c)
{
  uint32_t slots = c->seq_slots ? c->seq_slots * 2 : 1024;
  struct cp_seq *t;

  if (c->seqs != NULL && (c->nseqs + 1) * 2 <= c->seq_slots)
    return 0;
  if (slots > CP_SEQ_SLOTS && c->seqs != NULL)
    return 0; /* full size: the cap on sequences holds it */
  if ((t = calloc(slots, sizeof(*t))) == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < c->seq_slots; i++)
    if (c->seqs[i].hash != 0)
      *seq_slot(t, slots, c->seqs[i].hash, c->seqs[i].kind, c->seqs[i].n,
                c->seqs[i].fam) = c->seqs[i];
  free(c->seqs);
  c->seqs = t;
  c->seq_slots = slots;
  return 0;
}

/* Counts every run of CP_SEQ_MIN..CP_SEQ_MAX consecutive kernels of the
 * step (by family) for its kind; beyond CP_SEQ_KEEP distinct ones, new
 * ones are not counted (seq_dropped). */
static int sequences_add(struct idx_agg *a, const struct cp_stepdata *sd)
{
  struct agg_cpath *c = a->cpath;
  uint32_t *fam = cp_scratch(sd->sc, CP_B_FAM, (sd->n + 1) * sizeof(*fam), 0);
  int64_t *dur = cp_scratch(sd->sc, CP_B_DUR, (sd->n + 1) * sizeof(*dur), 0);
  uint32_t nk = 0;

  if (fam == NULL || dur == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < sd->n; i++)
    if (sd->ev[i].kind == CP_EV_KERNEL && sd->ev[i].name < a->names.n &&
        a->name_family[sd->ev[i].name] != UINT32_MAX) {
      fam[nk] = a->name_family[sd->ev[i].name];
      dur[nk++] = sd->ev[i].end - sd->ev[i].start;
    }
  for (uint32_t p = 0; p < nk; p++) {
    uint64_t h = 0x9e3779b97f4a7c15ull * (sd->kind + 1);
    int64_t total = dur[p];

    h = (h ^ fam[p]) * 0xff51afd7ed558ccdull;
    for (uint32_t n = CP_SEQ_MIN; n <= CP_SEQ_MAX && p + n <= nk; n++) {
      struct cp_seq *q;

      total = tr_sat_add(total, dur[p + n - 1]);
      h = (h ^ fam[p + n - 1]) * 0xff51afd7ed558ccdull;
      h ^= h >> 31;
      if (c->nseqs < CP_SEQ_KEEP && seq_room(c) != 0)
        return TR_ENOMEM;
      q = seq_slot(c->seqs, c->seq_slots, h | 1, sd->kind, n, fam + p);
      if (q->hash == 0) {
        if (c->nseqs >= CP_SEQ_KEEP) {
          c->seq_dropped++;
          continue;
        }
        q->hash = h | 1;
        q->kind = sd->kind;
        q->n = n;
        memcpy(q->fam, fam + p, n * sizeof(*fam));
        c->nseqs++;
      }
      q->count++;
      q->total_ns = tr_sat_add(q->total_ns, total);
    }
  }
  return 0;
}

/* ---- picks ---- */

static void pick_free(struct cp_pick *p)
{
  free(p->segs);
  free(p->seq);
  free(p->queue);
  memset(p, 0, sizeof(*p));
}

/* The group of segments v[0..n) as one: its times, weight and count
 * summed, named by its heaviest member, bound by the bound of most wall
 * time. */
static struct cp_segment group_of(const struct cp_segment *v, uint32_t n)
{
  int64_t wall[CP_BOUNDS] = { 0 };
  struct cp_segment g = v[0];
  uint32_t heavy = 0;

  g.weight_ns = 0;
  g.count = 0;
  for (uint32_t i = 0; i < n; i++) {
    wall[v[i].bound] += v[i].to_ns - v[i].from_ns;
    g.weight_ns = tr_sat_add(g.weight_ns, v[i].weight_ns);
    g.count += v[i].count;
    if (v[i].weight_ns > v[heavy].weight_ns)
      heavy = i;
  }
  g.to_ns = v[n - 1].to_ns;
  g.name = v[heavy].name;
  g.what = v[heavy].what;
  for (int b = 0; b < CP_BOUNDS; b++)
    if (wall[b] > wall[g.bound])
      g.bound = (uint8_t)b;
  return g;
}

/* A path of more than CP_SEGMENTS stretches as groups of consecutive ones
 * on one lane, larger groups until it fits. Copies into out. */
static uint32_t coalesce(const struct cp_segment *v, uint32_t n,
                         struct cp_segment *out)
{
  uint32_t m = n, size = 1;

  while (m > CP_SEGMENTS || size == 1) {
    m = 0;
    for (uint32_t i = 0; i < n && m < CP_SEGMENTS + size;) {
      uint32_t j = i + 1;

      while (j < n && j - i < size && v[j].lane == v[i].lane &&
             v[j].what / 2 == v[i].what / 2)
        j++;
      out[m++] = size == 1 ? v[i] : group_of(v + i, j - i);
      i = j;
    }
    if (m <= CP_SEGMENTS)
      break;
    size *= 2;
  }
  return m < CP_SEGMENTS ? m : CP_SEGMENTS;
}

/* Keeps the step as a kind's pick: its row, path, kernels (runs of one
 * name as one) and queue. */
static int pick_set(const struct cp_stepdata *sd, struct cp_pick *p)
{
  struct cp_pick np = { 0 };
  struct cp_steprow row = sd->res->row;

  np.set = 1;
  np.segs = malloc((CP_SEGMENTS * 2 + 1) * sizeof(*np.segs));
  np.seq = malloc((CP_MEDIAN_SEQ + 1) * sizeof(*np.seq));
  np.queue = malloc((CP_QUEUE_POINTS + 1) * sizeof(*np.queue));
  if (np.segs == NULL || np.seq == NULL || np.queue == NULL ||
      queue_of(sd, &row, &np.queue, &np.nqueue) != 0) {
    pick_free(&np);
    return TR_ENOMEM;
  }
  np.row = sd->res->row;
  np.nsegs =
      sd->res->nsegs ? coalesce(sd->res->segs, sd->res->nsegs, np.segs) : 0;
  for (uint32_t i = 0; i < sd->n; i++) {
    const struct cp_ev *e = &sd->ev[i];
    struct cp_seqitem *last = np.nseq ? &np.seq[np.nseq - 1] : NULL;

    if (e->kind != CP_EV_KERNEL)
      continue;
    if (last != NULL && last->name == e->name) {
      last->count++;
      last->dur_ns = tr_sat_add(last->dur_ns, e->end - e->start);
    } else if (np.nseq < CP_MEDIAN_SEQ) {
      np.seq[np.nseq++] = (struct cp_seqitem){ e->name, 1, e->end - e->start };
    }
  }
  pick_free(p);
  *p = np;
  return 0;
}

static int64_t dist(int64_t a, int64_t b)
{
  return a > b ? a - b : b - a;
}

/* The median step is the earliest whose step time is nearest the kind's
 * p50 (/steps' median step: agg_steps.c); the slowest the longest (ties:
 * the later), the one before it kept as the runner-up, shown when the
 * slowest is the median (cp_slowest). */
static int picks(const struct cp_stepdata *sd, struct cp_kind *k)
{
  int64_t d = sd->res->row.step_ns;
  int rc = 0;

  if (!k->slowest.set || d >= k->slowest.row.step_ns) {
    struct cp_pick old = k->runner;

    k->runner = k->slowest;
    k->slowest = old; /* freed and replaced by pick_set */
    rc = pick_set(sd, &k->slowest);
  } else if (!k->runner.set || d >= k->runner.row.step_ns) {
    rc = pick_set(sd, &k->runner);
  }
  if (rc == 0 && (!k->median.set ||
                  dist(d, k->p50_ns) < dist(k->median.row.step_ns, k->p50_ns)))
    rc = pick_set(sd, &k->median);
  return rc;
}

const struct cp_pick *cp_slowest(const struct cp_kind *k)
{
  return k->runner.set && k->median.set &&
                 k->median.row.index == k->slowest.row.index
             ? &k->runner
             : &k->slowest;
}

/* The step's window grown to the end of its last record and of its path
 * (its records run after its label when the host runs ahead), and its
 * time as /steps counts it. */
static void window_of(const struct idx_agg *a, const struct cp_stepdata *sd,
                      struct cp_steprow *row)
{
  int64_t first = INT64_MAX, last = INT64_MIN;

  row->step_ns = row->end_ns - row->start_ns;
  for (uint32_t i = 0; i < sd->n; i++) {
    const struct cp_ev *e = &sd->ev[i];

    if (cp_is_record(e)) {
      first = e->start < first ? e->start : first;
      last = e->end > last ? e->end : last;
    }
  }
  row->end_ns = last > row->end_ns ? last : row->end_ns;
  row->end_ns = row->path_to > row->end_ns ? row->path_to : row->end_ns;
  if (a->cpath->source == CP_SOURCE_LABELS && a->step_side == AGG_SIDE_GPU)
    row->step_ns = last >= first ? last - first : 0;
}

/* ---- a closed step ---- */

static int keep_row(struct agg_cpath *c, const struct cp_steprow *row)
{
  c->steps_total++;
  if (c->nsteps >= CP_KEEP_STEPS)
    return 0;
  if (agg_grow(&c->steps, &c->steps_cap, c->nsteps, sizeof(*c->steps)) != 0)
    return TR_ENOMEM;
  c->steps[c->nsteps++] = *row;
  return 0;
}

int cp_stats_step(struct idx_agg *a, const struct cp_stepdata *sd)
{
  struct agg_cpath *c = a->cpath;
  struct cp_kind *k = &c->kind[sd->kind];
  struct cp_steprow *row = (struct cp_steprow *)&sd->res->row;
  int rc;

  k->steps++;
  if (row->status != CP_STEP_OK) { /* not analysed: its label's window */
    k->too_big += row->status == CP_STEP_TOO_BIG;
    k->cycles += row->status == CP_STEP_CYCLE;
    return keep_row(c, row);
  }
  window_of(a, sd, row);
  for (uint32_t i = 0; i < sd->n; i++)
    if (sd->ev[i].kind == CP_EV_KERNEL) {
      row->kernels++;
      row->kernels_on_path += sd->res->on_path[i] != 0;
    }
  if ((rc = queue_of(sd, row, NULL, NULL)) != 0 ||
      (rc = kernels_add(a, sd)) != 0 || (rc = sequences_add(a, sd)) != 0 ||
      (rc = picks(sd, k)) != 0)
    return rc;
  k->analyzed++;
  k->window_ns = tr_sat_add(k->window_ns, row->end_ns - row->start_ns);
  agg_stat_add(&k->length, row->length_ns);
  if (agg_hist_add(&k->length_hist, row->length_ns) != 0)
    return TR_ENOMEM;
  for (int b = 0; b < CP_BOUNDS; b++)
    k->bound_ns[b] = tr_sat_add(k->bound_ns[b], row->bound_ns[b]);
  k->kernels += row->kernels;
  k->on_path += row->kernels_on_path;
  if (row->queue_max > k->queue_max)
    k->queue_max = row->queue_max;
  k->queue_area = tr_sat_add(k->queue_area, row->queue_area);
  k->extent_ns = tr_sat_add(k->extent_ns, row->extent_ns);
  return keep_row(c, row);
}

int cp_stats_launch(struct idx_agg *a, uint32_t name, int64_t call_ns,
                    int64_t queue_ns)
{
  struct agg_cpath *c = a->cpath;
  struct cp_launch_row *r;

  if (name >= a->names.n)
    return 0;
  if (c->launch == NULL) {
    if ((c->launch = calloc(a->names.n + 1, sizeof(*c->launch))) == NULL)
      return TR_ENOMEM;
    c->nlaunch = a->names.n;
  }
  r = &c->launch[name];
  call_ns = call_ns > 0 ? call_ns : 0;
  queue_ns = queue_ns > 0 ? queue_ns : 0;
  agg_stat_add(&r->call, call_ns);
  agg_stat_add(&r->queue, queue_ns);
  if (agg_hist_add(&r->call_hist, call_ns) != 0 ||
      agg_hist_add(&r->queue_hist, queue_ns) != 0)
    return TR_ENOMEM;
  return 0;
}

int cp_stats_culprit(struct idx_agg *a, uint32_t kind, int cause, uint32_t name,
                     uint32_t what, int64_t idle_ns)
{
  struct agg_cpath *c = a->cpath;
  uint32_t key[4] = { kind, (uint32_t)cause, name, what }, id;
  struct cp_culprit *r;
  int rc;

  if (what >= CP_CULPRIT_NONE)
    key[2] = 0;
  if ((rc = agg_map_intern(&c->culprit_map, key, sizeof(key), &id)) < 0 ||
      agg_grow(&c->culprits, &c->culprits_cap, id, sizeof(*c->culprits)) != 0)
    return TR_ENOMEM;
  r = &c->culprits[id];
  if (rc == 1) {
    r->kind = kind;
    r->cause = (uint32_t)cause;
    r->name = key[2];
    r->what = what;
  }
  agg_stat_add(&r->s, idle_ns);
  return agg_hist_add(&r->hist, idle_ns);
}
