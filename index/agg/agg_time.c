/*
 * The time-ordered pass over the records (agg_runs.c merges them in start
 * order). Pass 1: union of device intervals (gpu_busy_ns), kernel time
 * inside each step kind's GPU-side labels (per kind and per family), the
 * phase cuts, and, each in its own file, the step distributions
 * (agg_steps.c), idle time by cause (agg_idle.c) and the utilisation
 * timeline (agg_timeline.c). Pass 2: per-phase figures (busy time,
 * kernels, top kernels and launch shapes).
 *
 * Phases (the seed 003 analysis, section 7: warm-up, each steady shape,
 * idle gaps): a new phase starts
 *   - "gap":   after an idle gap >= max(1 ms, span / 1000) with no device
 *              interval running;
 *   - "shape": when the heaviest kernel (largest total) shows up with a
 *              (grid, block) other than at its previous call (its first
 *              call counts as a change: warm-up follows initialisation).
 * Phases shorter than 1% of the span are merged into the phase before them
 * (a short first phase into the one after), then the shortest phases are
 * merged into their nearer neighbour until at most 64 remain. A merged
 * phase keeps the cause of its earliest part. At most 4096 raw phases are
 * held: beyond that the short ones are merged early. A phase's figures
 * count the device records that start in it.
 *
 * Step kernel time: a kernel counts for a kind when it starts inside one
 * of that kind's GPU-side labels, [start, end); inside labels of two kinds
 * it counts for both (each kind's union is kept apart).
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"
#include "index/agg/agg_sum.h"
#include "index/cpath/cpath.h"

#define GAP_MIN_NS    1000000
#define PHASE_MAX     64
#define PHASE_RAW_MAX 4096
#define TOP_N         5

enum cause { CAUSE_START, CAUSE_GAP, CAUSE_SHAPE };
static const char *const cause_names[] = { "start", "gap", "shape" };

struct seg {
  int64_t start, end;
  int cause;
};

struct segs {
  struct seg *v;
  size_t n, cap;
};

/* Pass 1 state. */
struct walk {
  struct idx_agg *a;
  uint32_t heavy;       /* name id of the heaviest kernel */
  uint32_t heavy_shape; /* shape of its last call, UINT32_MAX: none yet */
  int64_t gap_ns, min_len_ns;
  int any;
  int64_t cur_end; /* end of the union so far */
  int64_t busy;
  int64_t cover_end[AGG_MAX_STEP_KINDS]; /* per kind: end of labels */
  struct segs segs;
  uint32_t label_type; /* the step side's label records */
  int copy_cat, memset_cat;
  struct agg_steps_walk *steps;
  struct agg_idle_walk *idle;
  struct agg_coll_walk *coll;
  struct agg_samples_walk *samples;
};

static int is_device(uint32_t type)
{
  return type == AGG_REC_KERNEL || type == AGG_REC_COPY ||
         type == AGG_REC_MEMSET;
}

/* The category index of a device record. */
static int rec_category(const struct walk *w, const struct agg_rec *r)
{
  if (r->type == AGG_REC_KERNEL)
    return w->a->name_cat[w->a->shapes[r->id].name];
  return r->type == AGG_REC_COPY ? w->copy_cat : w->memset_cat;
}

static int64_t seg_len(const struct seg *s)
{
  return s->end - s->start;
}

/* Merges short segments into their predecessor (a short first one
 * absorbs its successors until long enough), in place. */
static void merge_short(struct segs *s, int64_t min_len)
{
  size_t i, n = 0;

  for (i = 0; i < s->n; i++) {
    struct seg *last = n ? &s->v[n - 1] : NULL;

    if (last != NULL &&
        (seg_len(&s->v[i]) < min_len || (n == 1 && seg_len(last) < min_len))) {
      if (s->v[i].end > last->end)
        last->end = s->v[i].end;
    } else {
      s->v[n++] = s->v[i];
    }
  }
  s->n = n;
}

/* Merges segment j + 1 into j. */
static void merge_next(struct segs *s, size_t j)
{
  if (s->v[j + 1].end > s->v[j].end)
    s->v[j].end = s->v[j + 1].end;
  memmove(&s->v[j + 1], &s->v[j + 2], (s->n - j - 2) * sizeof(*s->v));
  s->n--;
}

static void cap_count(struct segs *s, size_t max)
{
  while (s->n > max) {
    size_t i, m = 0;

    for (i = 1; i < s->n; i++)
      if (seg_len(&s->v[i]) < seg_len(&s->v[m]))
        m = i;
    if (m > 0 && (m + 1 == s->n || s->v[m].start - s->v[m - 1].end <=
                                       s->v[m + 1].start - s->v[m].end))
      merge_next(s, m - 1);
    else
      merge_next(s, m);
  }
}

static int seg_open(struct walk *w, const struct agg_rec *r, int cause)
{
  struct segs *s = &w->segs;

  if (s->n == PHASE_RAW_MAX) {
    merge_short(s, w->min_len_ns);
    cap_count(s, PHASE_RAW_MAX - 1);
  }
  if (agg_grow(&s->v, &s->cap, s->n, sizeof(*s->v)) != 0)
    return TR_ENOMEM;
  s->v[s->n].start = r->start_ns;
  s->v[s->n].end = r->start_ns + r->dur_ns;
  s->v[s->n].cause = cause;
  s->n++;
  return 0;
}

static int walk_device(struct walk *w, const struct agg_rec *r)
{
  int64_t end = r->start_ns + r->dur_ns;
  int cause = -1;
  struct seg *cur;

  if (!w->any) {
    cause = CAUSE_START;
  } else if (r->start_ns - w->cur_end >= w->gap_ns) {
    cause = CAUSE_GAP;
  }
  if (r->type == AGG_REC_KERNEL && w->a->shapes[r->id].name == w->heavy) {
    if (r->id != w->heavy_shape && cause < 0)
      cause = CAUSE_SHAPE;
    w->heavy_shape = r->id;
  }
  if (!w->any || r->start_ns >= w->cur_end) {
    w->busy += r->dur_ns;
    agg_timeline_busy(&w->a->tl, r->start_ns, end, rec_category(w, r));
  } else if (end > w->cur_end) {
    w->busy += end - w->cur_end;
    agg_timeline_busy(&w->a->tl, w->cur_end, end, rec_category(w, r));
  }
  if (!w->any || end > w->cur_end)
    w->cur_end = end;
  w->any = 1;
  if (cause >= 0)
    return seg_open(w, r, cause);
  cur = &w->segs.v[w->segs.n - 1];
  if (end > cur->end)
    cur->end = end;
  return 0;
}

/* A kernel inside the union of a kind's labels started so far counts for
 * that kind: labels arrive in start order, so the union covers t exactly
 * when t is before the largest label end seen. Kernel time inside labels
 * is GPU-side only (a CPU label spans the launches, not the kernels). */
static int walk_rec(struct walk *w, const struct agg_rec *r)
{
  struct idx_agg *a = w->a;
  uint32_t k, fam;
  int rc;

  if (r->type == w->label_type) {
    if (r->id < a->nkinds && a->on_finding != NULL)
      a->on_finding(a->finding_ud,
                    &(struct agg_finding){ AGG_FOUND_STEP, r->start_ns,
                                           r->start_ns + r->dur_ns, r->id,
                                           r->aux, 0, 0 });
    if (r->id < a->nkinds && r->start_ns + r->dur_ns > w->cover_end[r->id])
      w->cover_end[r->id] = r->start_ns + r->dur_ns;
    if (r->id < a->nkinds)
      agg_timeline_label(&a->tl, r->id, r->start_ns, r->start_ns + r->dur_ns);
    return 0;
  }
  if (r->type != AGG_REC_KERNEL || a->step_side != AGG_SIDE_GPU)
    return 0;
  fam = a->name_family[a->shapes[r->id].name];
  for (k = 0; k < a->nkinds; k++)
    if (r->start_ns < w->cover_end[k]) {
      a->steps[AGG_SIDE_GPU][k].kernel_ns += r->dur_ns;
      if (fam != UINT32_MAX &&
          (rc = agg_famstep_add(a, fam, k, r->dur_ns)) != 0)
        return rc;
    }
  return 0;
}

static int pass1_rec(struct walk *w, const struct agg_rec *r)
{
  int64_t busy_end = w->any ? w->cur_end : w->a->t0_ns;
  int label = r->type == AGG_REC_LABEL || r->type == AGG_REC_LABEL_CPU;
  int rc;

  /* The critical path first: it brings the host events up to r, which the
   * idle walk's culprits ask about. It reads its own labels (cpath.c). */
  if ((rc = agg_cpath_walk_rec(w->a->cpath_walk, r, busy_end)) != 0)
    return rc;
  if (label && r->id == w->a->dropped_kind)
    return 0;
  if ((rc = agg_coll_walk_rec(w->coll, r)) != 0 ||
      (rc = agg_idle_walk_rec(w->idle, r, busy_end)) != 0 ||
      (rc = agg_steps_walk_rec(w->steps, r)) != 0 ||
      (rc = agg_samples_walk_rec(
           w->samples, r,
           label && agg_steps_walk_warmup(w->steps, r->id))) != 0 ||
      (rc = walk_rec(w, r)) != 0)
    return rc;
  return is_device(r->type) ? walk_device(w, r) : 0;
}

static int pass1(struct walk *w)
{
  struct agg_iter *it;
  struct agg_rec r;
  size_t k;
  int rc;

  for (k = 0; k < AGG_MAX_STEP_KINDS; k++)
    w->cover_end[k] = INT64_MIN;
  if ((rc = agg_steps_walk_new(w->a, &w->steps)) != 0 ||
      (rc = agg_idle_walk_new(w->a, &w->idle)) != 0 ||
      (rc = agg_coll_walk_new(w->a, &w->coll)) != 0 ||
      (rc = agg_cpath_walk_new(w->a, &w->a->cpath_walk)) != 0 ||
      (rc = agg_samples_walk_new(w->a, &w->samples)) != 0 ||
      (rc = agg_iter_open(&w->a->runs, &it)) != 0)
    return rc;
  while ((rc = agg_iter_next(it, &r)) == 1)
    if ((rc = pass1_rec(w, &r)) != 0)
      break;
  agg_iter_close(it);
  agg_timeline_end(&w->a->tl);
  if (rc == 0)
    rc = agg_coll_walk_end(w->coll);
  else
    agg_coll_walk_free(w->coll);
  w->coll = NULL;
  return rc;
}

/* Pass 2 state: the phase being summed. */
struct acc {
  uint64_t count;
  int64_t total;
};

struct phase_sum {
  struct idx_agg *a;
  const struct segs *segs;
  json_t *out; /* the phases array */
  size_t p;    /* index of the phase being summed */
  int64_t start, end, cur_end, busy;
  uint64_t kernel_events, nrec;
  struct acc *by_shape, *by_name;
  uint32_t *shapes_seen, *names_seen;
  size_t nshapes_seen, nnames_seen;
};

struct top_ctx {
  const struct acc *acc;
  const struct idx_agg *a;        /* its names and their demangled forms */
  const struct agg_shape *shapes; /* ids are shapes; NULL: names */
};

static uint32_t top_name(const struct top_ctx *c, uint32_t id)
{
  return c->shapes ? c->shapes[id].name : id;
}

/* Total descending, then name, then shape id: a stable, total order. */
static int top_cmp(const void *x, const void *y, void *ud)
{
  const struct top_ctx *c = ud;
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  const struct agg_key *ka = &c->a->names.keys[top_name(c, a)];
  const struct agg_key *kb = &c->a->names.keys[top_name(c, b)];
  size_t n = ka->n < kb->n ? ka->n : kb->n;
  int d;

  if (c->acc[a].total != c->acc[b].total)
    return c->acc[a].total > c->acc[b].total ? -1 : 1;
  d = memcmp(ka->p, kb->p, n);
  if (d != 0)
    return d;
  if (ka->n != kb->n)
    return ka->n < kb->n ? -1 : 1;
  return (a > b) - (a < b);
}

static json_t *top_rows(struct top_ctx *c, uint32_t *ids, size_t n)
{
  json_t *rows = json_array(), *row;
  size_t i;

  qsort_r(ids, n, sizeof(*ids), top_cmp, c);
  for (i = 0; i < n && i < TOP_N; i++) {
    const struct agg_key *k = &c->a->names.keys[top_name(c, ids[i])];

    row = json_object();
    json_object_set_new(row, "name", agg_json_strn(k->p, k->n));
    agg_set_demangled(c->a, top_name(c, ids[i]), row);
    if (c->shapes != NULL) {
      const struct agg_shape *s = &c->shapes[ids[i]];

      json_object_set_new(row, "grid",
                          agg_json_xyz(s->grid, s->has & IDX_HAS_GRID));
      json_object_set_new(row, "block",
                          agg_json_xyz(s->block, s->has & IDX_HAS_BLOCK));
    }
    json_object_set_new(row, "count",
                        json_integer((json_int_t)c->acc[ids[i]].count));
    json_object_set_new(row, "total_ns", json_integer(c->acc[ids[i]].total));
    json_array_append_new(rows, row);
  }
  return rows;
}

static void phase_emit(struct phase_sum *ps)
{
  struct idx_agg *a = ps->a;
  struct top_ctx launches = { ps->by_shape, a, a->shapes };
  struct top_ctx kernels = { ps->by_name, a, NULL };
  struct agg_sum_phase ph = {
    .index = (int64_t)ps->p,
    .start_ns = ps->start - a->t0_ns,
    .end_ns = ps->end - a->t0_ns,
    .busy_ns = ps->busy,
    .kernel_events = (int64_t)ps->kernel_events,
    .cause = agg_txt(cause_names[ps->segs->v[ps->p].cause]),
    .top_kernels = top_rows(&kernels, ps->names_seen, ps->nnames_seen),
    .top_launches = top_rows(&launches, ps->shapes_seen, ps->nshapes_seen),
  };
  size_t i;

  AGG_SUM_FILLS(TR_SUM_PHASE, 8);
  json_array_append_new(ps->out, agg_sum_phase_json(&ph));
  for (i = 0; i < ps->nshapes_seen; i++)
    memset(&ps->by_shape[ps->shapes_seen[i]], 0, sizeof(struct acc));
  for (i = 0; i < ps->nnames_seen; i++)
    memset(&ps->by_name[ps->names_seen[i]], 0, sizeof(struct acc));
  ps->nshapes_seen = ps->nnames_seen = 0;
  ps->busy = 0;
  ps->kernel_events = 0;
  ps->nrec = 0;
}

static void acc_add(struct acc *acc, uint32_t id, uint32_t *seen, size_t *nseen,
                    int64_t dur)
{
  if (acc[id].count == 0)
    seen[(*nseen)++] = id;
  acc[id].count++;
  acc[id].total += dur;
}

static void phase_add(struct phase_sum *ps, const struct agg_rec *r)
{
  int64_t end = r->start_ns + r->dur_ns;

  while (ps->p + 1 < ps->segs->n &&
         r->start_ns >= ps->segs->v[ps->p + 1].start) {
    if (ps->nrec > 0)
      phase_emit(ps);
    ps->p++;
  }
  if (ps->nrec == 0 || r->start_ns >= ps->cur_end) {
    ps->busy += r->dur_ns;
  } else if (end > ps->cur_end) {
    ps->busy += end - ps->cur_end;
  }
  if (ps->nrec == 0) {
    ps->start = r->start_ns;
    ps->end = ps->cur_end = end;
  }
  if (end > ps->cur_end)
    ps->cur_end = ps->end = end;
  ps->nrec++;
  if (r->type != AGG_REC_KERNEL)
    return;
  ps->kernel_events++;
  acc_add(ps->by_shape, r->id, ps->shapes_seen, &ps->nshapes_seen, r->dur_ns);
  acc_add(ps->by_name, ps->a->shapes[r->id].name, ps->names_seen,
          &ps->nnames_seen, r->dur_ns);
}

static int pass2(struct phase_sum *ps)
{
  struct agg_iter *it;
  struct agg_rec r;
  int rc;

  if ((rc = agg_iter_open(&ps->a->runs, &it)) != 0)
    return rc;
  while ((rc = agg_iter_next(it, &r)) == 1)
    if (is_device(r.type))
      phase_add(ps, &r);
  agg_iter_close(it);
  if (rc == 0 && ps->nrec > 0)
    phase_emit(ps);
  return rc;
}

static int phases(struct idx_agg *a, const struct segs *segs, json_t **out)
{
  struct phase_sum ps;
  size_t ns = a->shapes_map.n, nn = a->names.n;
  int rc = TR_ENOMEM;

  memset(&ps, 0, sizeof(ps));
  ps.a = a;
  ps.segs = segs;
  ps.out = json_array();
  ps.by_shape = calloc(ns + 1, sizeof(*ps.by_shape));
  ps.by_name = calloc(nn + 1, sizeof(*ps.by_name));
  ps.shapes_seen = calloc(ns + 1, sizeof(*ps.shapes_seen));
  ps.names_seen = calloc(nn + 1, sizeof(*ps.names_seen));
  if (ps.out != NULL && ps.by_shape && ps.by_name && ps.shapes_seen &&
      ps.names_seen)
    rc = pass2(&ps);
  free(ps.by_shape);
  free(ps.by_name);
  free(ps.shapes_seen);
  free(ps.names_seen);
  if (rc != 0) {
    json_decref(ps.out);
    return rc;
  }
  *out = ps.out;
  return 0;
}

int agg_time_pass(struct idx_agg *a, uint32_t heavy, int64_t *gpu_busy_ns,
                  struct tr_err *err)
{
  struct walk w;
  int64_t span = a->tend_ns - a->t0_ns;
  int rc;

  memset(&w, 0, sizeof(w));
  w.a = a;
  w.heavy = heavy;
  w.heavy_shape = UINT32_MAX;
  w.label_type =
      a->step_side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU;
  w.copy_cat = agg_category_index("copy");
  w.memset_cat = agg_category_index("memset");
  w.gap_ns = span / 1000 > GAP_MIN_NS ? span / 1000 : GAP_MIN_NS;
  w.min_len_ns = span / 100;
  if ((rc = agg_runs_seal(&a->runs)) == 0 &&
      (rc = agg_runs_seal(&a->coll_runs)) == 0 &&
      (rc = agg_timeline_init(&a->tl, a->t0_ns, a->tend_ns, a->nkinds)) == 0 &&
      (rc = pass1(&w)) == 0) {
    rc = agg_idle_walk_end(w.idle, w.any ? w.cur_end : a->t0_ns);
    w.idle = NULL;
    if (rc == 0)
      rc = agg_cpath_walk_end(a->cpath_walk);
    else
      agg_cpath_walk_free(a->cpath_walk);
    a->cpath_walk = NULL;
    merge_short(&w.segs, w.min_len_ns);
    cap_count(&w.segs, PHASE_MAX);
    if (rc == 0)
      rc = phases(a, &w.segs, &a->phases);
  }
  agg_steps_walk_end(w.steps);
  agg_samples_walk_end(w.samples);
  agg_idle_walk_free(w.idle);
  agg_cpath_walk_free(a->cpath_walk);
  a->cpath_walk = NULL;
  agg_coll_walk_free(w.coll);
  free(w.segs.v);
  if (rc != 0)
    return tr_err_set(err, rc, "", "time pass failed: %s (%d)", tr_strerror(rc),
                      rc);
  *gpu_busy_ns = w.busy;
  return 0;
}
