/*
 * The driver of a rank's aggregation: the passes of AGG_PASS_MAP (agg.h)
 * and when each hook runs, as daemon/capture.c drives the phases of
 * TR_PHASE_MAP. It calls, in the map's order:
 *
 *   new      at idx_agg_init();
 *   event    for each X event with ts and dur, the passes of its class
 *            (the format's row, format.c, says which class an event is),
 *            and for each instant event the passes of IDX_CLASS_INSTANT;
 *   seal     once the file is read (agg_walk());
 *   walk     for each time record in start order (agg_runs.c merges
 *            them), with the union of device records so far; a label of
 *            the dropped kind goes only to the passes that ask for ALL;
 *   found    for each finding a pass hands to agg_found();
 *   end      when the records are done, in the reverse order;
 *   head     for the summary's scalars (agg_json.c), then each table's
 *            rows function (common/summary.h's TR_TABLE_MAP);
 *   free     at idx_agg_free(), in the reverse order.
 *
 * Only ph "X" events carry durations; an X event without a numeric ts or
 * dur, or with a negative dur, is skipped and counted.
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"

#define AGG_DEFAULT_RECS (3u << 16) /* 6 MB of time records */

struct agg_pass {
  const char *name;
  unsigned classes; /* AGG_CL() bits */
  int (*new)(struct idx_agg *a);
  void (*free)(struct idx_agg *a);
  agg_event_fn event;
  int (*seal)(struct idx_agg *a, struct tr_err *err);
  int (*walk)(struct idx_agg *a, struct agg_at *at);
  int all; /* its walk takes the labels of the dropped kind too */
  void (*found)(struct idx_agg *a, const struct agg_finding *f);
  int (*end)(struct idx_agg *a, struct tr_err *err);
  void (*head)(struct idx_agg *a, struct agg_sum_rank *r);
};

static const struct agg_pass passes[AGG_NPASSES] = {
#define XX(name, state, classes, event, seal, walk, found, end, head)          \
  { #name,                                                                     \
    classes,                                                                   \
    AGG_HOOK(state, agg_##name##_new),                                         \
    AGG_HOOK(state, agg_##name##_free),                                        \
    AGG_HOOK(event, agg_##name##_event),                                       \
    AGG_HOOK(seal, agg_##name##_seal),                                         \
    AGG_HOOK(walk, agg_##name##_walk),                                         \
    AGG_ALL_##walk,                                                            \
    AGG_HOOK(found, agg_##name##_found),                                       \
    AGG_HOOK(end, agg_##name##_end),                                           \
    AGG_HOOK(head, agg_##name##_head) },
  AGG_PASS_MAP(XX)
#undef XX
};

void agg_stat_add(struct agg_stat *s, int64_t dur)
{
  if (s->count == 0 || dur < s->min_ns)
    s->min_ns = dur;
  if (s->count == 0 || dur > s->max_ns)
    s->max_ns = dur;
  s->count++;
  s->total_ns = tr_sat_add(s->total_ns, dur);
}

int64_t agg_corr_of(const struct idx_event *ev)
{
  return (ev->has & IDX_HAS_CORR) ? ev->correlation : -1;
}

uint64_t agg_name_hash(struct idx_str s)
{
  return s.p == NULL ? 0 : agg_key_hash(s.p, s.n);
}

int agg_seen_fold_slow(struct agg_seen *v, uint64_t key, struct agg_fold *f,
                       struct agg_map *m, struct idx_str s, int count,
                       uint32_t *id)
{
  int rc;

  if ((rc = agg_fold_intern(f, m, s, count, id)) >= 0 && *id != f->id &&
      key != 0)
    agg_seen_put(v, key, *id, 0);
  return rc;
}

int agg_record(struct idx_agg *a, const struct idx_event *ev,
               enum agg_rec_type type, uint32_t id, int64_t aux)
{
  struct agg_rec r = { ev->ts_ns, ev->dur_ns, aux, type, id };

  return agg_runs_add(&a->runs, &r);
}

/* ---- events ---- */

/* mcTracer names the device in M metadata on the device lane (pid 2).
 * M events come before the format is settled: the name is kept, and used
 * only when the file turns out to be mcTracer (agg_json.c). */
static void on_meta(struct idx_agg *a, const struct idx_event *ev)
{
  size_t n = ev->arg_name.n;

  if (a->meta_device[0] != '\0' || ev->arg_name.p == NULL || n == 0 ||
      !(ev->has & IDX_HAS_PID) || ev->pid != 2)
    return;
  if (n >= sizeof(a->meta_device))
    n = sizeof(a->meta_device) - 1;
  memcpy(a->meta_device, ev->arg_name.p, n);
  a->meta_device[n] = '\0';
}

static void note_time(struct idx_agg *a, const struct idx_event *ev)
{
  int64_t end = ev->ts_ns;

  if (ev->ph == 'X')
    end += ev->dur_ns;
  if (a->t0_ns > a->tend_ns) {
    a->t0_ns = ev->ts_ns;
    a->tend_ns = end;
    return;
  }
  if (ev->ts_ns < a->t0_ns)
    a->t0_ns = ev->ts_ns;
  if (end > a->tend_ns)
    a->tend_ns = end;
}

int idx_agg_event(void *ud, const struct idx_doc *doc,
                  const struct idx_event *ev)
{
  struct idx_agg *a = ud;
  const agg_event_fn *to;
  enum idx_class cls;
  int rc = 0;

  a->ev_hashed = 0;
  if (ev->ph == 'M') {
    on_meta(a, ev);
    return 0;
  }
  if (ev->ph == 'X' &&
      (!(ev->has & IDX_HAS_TS) || !(ev->has & IDX_HAS_DUR) || ev->dur_ns < 0)) {
    a->skipped++;
    return 0;
  }
  if (ev->has & IDX_HAS_TS)
    note_time(a, ev);
  if (ev->ph == 'i' || ev->ph == 'I')
    cls = IDX_CLASS_INSTANT;
  else if (ev->ph == 'X')
    cls = idx_format_get(doc->format)->classify(ev);
  else
    return 0;
  for (to = a->by_class[cls]; rc == 0 && *to != NULL; to++)
    rc = (*to)(a, doc, ev, cls);
  return rc;
}

/* ---- init and free ---- */

/* The passes each event class goes to, in the map's order. */
static void route_classes(struct idx_agg *a)
{
  for (unsigned c = 0; c < IDX_NCLASSES; c++) {
    uint8_t n = 0;

    for (uint8_t i = 0; i < AGG_NPASSES; i++)
      if (passes[i].event != NULL && (passes[i].classes & (1u << c)))
        a->by_class[c][n++] = passes[i].event;
    a->by_class[c][n] = NULL;
  }
}

int idx_agg_init(struct idx_agg *a, const struct idx_rules *rules,
                 size_t rec_cap)
{
  memset(a, 0, sizeof(*a));
  a->rules = rules;
  a->t0_ns = 1; /* t0 > tend: no timed event yet */
  agg_fold_init(&a->kfold, IDX_MAX_KERNEL_NAMES, &a->spill);
  a->shape_cap = IDX_MAX_KERNEL_NAMES;
  agg_fold_init(&a->rfold, AGG_MAX_RUNTIME_NAMES, &a->spill);
  a->labels.sp = &a->spill;
  a->dropped_kind = UINT32_MAX;
  a->heavy = UINT32_MAX;
  route_classes(a);
  if (agg_runs_init(&a->runs, rec_cap ? rec_cap : AGG_DEFAULT_RECS,
                    &a->spill) != 0)
    goto fail;
  for (size_t i = 0; i < AGG_NPASSES; i++)
    if (passes[i].new != NULL && passes[i].new(a) != 0)
      goto fail;
  return 0;
fail:
  idx_agg_free(a);
  return TR_ENOMEM;
}

void idx_agg_cap_names(struct idx_agg *a, uint32_t cap)
{
  if (cap > 0) {
    a->kfold.cap = cap;
    a->shape_cap = cap;
    a->rfold.cap = cap < AGG_MAX_RUNTIME_NAMES ? cap : AGG_MAX_RUNTIME_NAMES;
  }
}

void idx_agg_free(struct idx_agg *a)
{
  if (a == NULL)
    return;
  for (size_t i = AGG_NPASSES; i-- > 0;)
    if (passes[i].free != NULL)
      passes[i].free(a);
  agg_runs_free(&a->runs);
  free(a->kcols);
  free(a->fcols);
  memset(a, 0, sizeof(*a));
}

/* ---- the walk ---- */

void agg_found(struct idx_agg *a, const struct agg_finding *f)
{
  for (size_t i = 0; i < AGG_NPASSES; i++)
    if (passes[i].found != NULL)
      passes[i].found(a, f);
  if (a->on_finding != NULL)
    a->on_finding(a->finding_ud, f);
}

/* One record to every pass that walks, then into the union of device
 * records (gpu_busy_ns). */
static int walk_rec(struct idx_agg *a, const struct agg_rec *r, int *any)
{
  int64_t end = r->start_ns + r->dur_ns;
  struct agg_at at = { r, *any ? a->busy_end : a->t0_ns, *any, 0, 0, NULL };
  int rc = 0;

  at.dropped = (r->type == AGG_REC_LABEL || r->type == AGG_REC_LABEL_CPU) &&
               r->id == a->dropped_kind;
  for (size_t i = 0; rc == 0 && i < AGG_NPASSES; i++)
    if (passes[i].walk != NULL && (!at.dropped || passes[i].all))
      rc = passes[i].walk(a, &at);
  if (rc != 0 || !agg_rec_device(r->type))
    return rc;
  if (!*any || r->start_ns >= a->busy_end)
    a->gpu_busy_ns += r->dur_ns;
  else if (end > a->busy_end)
    a->gpu_busy_ns += end - a->busy_end;
  if (!*any || end > a->busy_end)
    a->busy_end = end;
  *any = 1;
  return 0;
}

static int walk(struct idx_agg *a)
{
  struct agg_iter *it;
  struct agg_rec r;
  int any = 0, rc;

  if ((rc = agg_runs_seal(&a->runs)) != 0 ||
      (rc = agg_iter_open(&a->runs, &it)) != 0)
    return rc;
  while ((rc = agg_iter_next(it, &r)) == 1)
    if ((rc = walk_rec(a, &r, &any)) != 0)
      break;
  agg_iter_close(it);
  if (!any)
    a->busy_end = a->t0_ns;
  return rc;
}

int agg_walk(struct idx_agg *a, struct tr_err *err)
{
  struct tr_err local = { 0 };
  size_t i;
  int rc = 0;

  a->busy_end = a->gpu_busy_ns = 0;
  for (i = 0; rc == 0 && i < AGG_NPASSES; i++)
    if (passes[i].seal != NULL)
      rc = passes[i].seal(a, &local);
  if (rc == 0)
    rc = walk(a);
  for (i = AGG_NPASSES; rc == 0 && i-- > 0;)
    if (passes[i].end != NULL)
      rc = passes[i].end(a, &local);
  if (rc == 0)
    return 0;
  if (local.code != 0)
    *err = local;
  else
    tr_err_set(err, rc, "", "time pass failed: %s (%d)", tr_strerror(rc), rc);
  return rc;
}

void agg_heads(struct idx_agg *a, struct agg_sum_rank *r)
{
  for (size_t i = 0; i < AGG_NPASSES; i++)
    if (passes[i].head != NULL)
      passes[i].head(a, r);
}
