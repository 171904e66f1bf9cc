/*
 * The phases of a rank (the phases table), from the walk of the records in
 * start order (agg.c) and a second pass of its own over them at its end.
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
 * (the second pass) count the device records that start in it: busy
 * time, kernels, top kernels and launch shapes.
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"

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

/* The pass's state: the phases cut so far, then their rows. */
struct agg_phases {
  uint32_t heavy_shape; /* shape of the heaviest kernel's last call,
                           UINT32_MAX: none yet */
  int64_t gap_ns, min_len_ns;
  struct segs segs;
  json_t *rows; /* the phases, once the pass has ended */
};

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

static int seg_open(struct agg_phases *w, const struct agg_rec *r, int cause)
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

/* A device record: a phase opens (its cause), or the last one grows. */
int agg_phases_walk(struct idx_agg *a, struct agg_at *at)
{
  struct agg_phases *w = a->phases;
  const struct agg_rec *r = at->r;
  int64_t end = r->start_ns + r->dur_ns;
  int cause = -1;
  struct seg *cur;

  if (!agg_rec_device(r->type))
    return 0;
  if (!at->any) {
    cause = CAUSE_START;
  } else if (r->start_ns - at->busy_end >= w->gap_ns) {
    cause = CAUSE_GAP;
  }
  if (r->type == AGG_REC_KERNEL && a->shapes[r->id].name == a->heavy) {
    if (r->id != w->heavy_shape && cause < 0)
      cause = CAUSE_SHAPE;
    w->heavy_shape = r->id;
  }
  if (cause >= 0)
    return seg_open(w, r, cause);
  cur = &w->segs.v[w->segs.n - 1];
  if (end > cur->end)
    cur->end = end;
  return 0;
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
  acc[id].total = tr_sat_add(acc[id].total, dur);
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
    if (agg_rec_device(r.type))
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

int agg_phases_new(struct idx_agg *a)
{
  return (a->phases = calloc(1, sizeof(*a->phases))) == NULL ? TR_ENOMEM : 0;
}

void agg_phases_free(struct idx_agg *a)
{
  if (a->phases == NULL)
    return;
  free(a->phases->segs.v);
  json_decref(a->phases->rows);
  free(a->phases);
  a->phases = NULL;
}

int agg_phases_seal(struct idx_agg *a, struct tr_err *err)
{
  struct agg_phases *w = a->phases;
  int64_t span = a->tend_ns - a->t0_ns;

  (void)err;
  w->heavy_shape = UINT32_MAX;
  w->gap_ns = span / 1000 > GAP_MIN_NS ? span / 1000 : GAP_MIN_NS;
  w->min_len_ns = span / 100;
  return 0;
}

/* The phases merged, then summed by a second pass over the records. */
int agg_phases_end(struct idx_agg *a, struct tr_err *err)
{
  struct agg_phases *w = a->phases;

  (void)err;
  merge_short(&w->segs, w->min_len_ns);
  cap_count(&w->segs, PHASE_MAX);
  return phases(a, &w->segs, &w->rows);
}

/* The phases, held until their turn. */
void agg_phase_rows(struct idx_agg *a, struct agg_out *o)
{
  agg_out_array(o, json_incref(a->phases->rows));
}
