/*
 * The critical path's summary tables (common/summary.h: critical_kinds,
 * critical_steps, critical_segments, kernel_paths, family_paths,
 * idle_culprits, kernel_sequences, median_sequence) and the columns it
 * adds to the kernels and families. Times are from t0 as the phases'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/cpath/cpath.h"
#include "index/host/host.h"

static struct agg_txt key_txt(const struct agg_key *k)
{
  struct agg_txt t = { k->p, k->n };

  return t;
}

static struct agg_txt kind_txt(const struct agg_cpath *c, uint32_t kind)
{
  return key_txt(&c->kinds.keys[kind]);
}

/* Kinds in name order. Caller frees. */
static int kind_cmp(const void *x, const void *y, void *ud)
{
  const struct agg_cpath *c = ud;

  return agg_key_cmp(&c->kinds.keys[*(const uint32_t *)x],
                     &c->kinds.keys[*(const uint32_t *)y]);
}

static void bounds_set(int64_t *dst, const int64_t *b)
{
  memcpy(dst, b, CP_BOUNDS * sizeof(*b));
}

/* The struct rows' breakdown members are consecutive int64_t from cpu_ns
 * in enum cp_bound's order (TR_CRIT_BOUNDS). */
#define BOUNDS_AT(r) (&(r).cpu_ns)
_Static_assert(CP_BOUNDS == 7, "TR_CRIT_BOUNDS has a column per bound");

void cp_kind_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;
  uint32_t n = c->kinds.n, *order = agg_order(n, kind_cmp, c);

  AGG_SUM_FILLS(TR_SUM_CRIT_KIND, 19);
  for (uint32_t i = 0; order != NULL && i < n; i++) {
    const struct cp_kind *k = &c->kind[order[i]];
    struct agg_sum_crit_kind r = {
      .step = kind_txt(c, order[i]),
      .steps = (int64_t)k->steps,
      .analyzed = (int64_t)k->analyzed,
      .window_ns = k->window_ns,
      .length_ns = k->length.total_ns,
      .length_p50_ns = agg_pct(&k->length_hist, &k->length, 500),
      .length_max_ns = k->length.max_ns,
      .kernels = k->kernels,
      .kernels_on_path = k->on_path,
      .queue_max = k->queue_max,
      .queue_area_ns = k->queue_area,
      .extent_ns = k->extent_ns,
    };

    bounds_set(BOUNDS_AT(r), k->bound_ns);
    agg_out_crit_kind(o, &r);
  }
  free(order);
}

/* ---- steps and their paths ---- */

static const char *status_name(int s)
{
  return s == CP_STEP_TOO_BIG ? "too_big" : s == CP_STEP_CYCLE ? "cycle" : "ok";
}

static int64_t rel(const struct idx_agg *a, int64_t t)
{
  return t - a->t0_ns;
}

static json_t *queue_json(const struct idx_agg *a, const struct cp_pick *p)
{
  json_t *q = json_array();

  for (uint32_t i = 0; i < p->nqueue; i++)
    json_array_append_new(q, json_pack("[II]",
                                       (json_int_t)rel(a, p->queue[i].t_ns),
                                       (json_int_t)p->queue[i].depth));
  return q;
}

/* The role of the step with index ix among its kind's picks, or NULL. */
static const char *role_of(const struct cp_kind *k, int64_t ix,
                           const struct cp_pick **pick)
{
  const struct cp_pick *sl = cp_slowest(k);
  int med = k->median.set && k->median.row.index == ix;
  int slow = sl->set && sl->row.index == ix;

  *pick = med ? &k->median : slow ? sl : NULL;
  return med && slow ? "median slowest"
         : med       ? "median"
         : slow      ? "slowest"
                     : NULL;
}

static void step_row(const struct idx_agg *a, const struct cp_steprow *s,
                     struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;
  const struct cp_pick *pick;
  const char *role = role_of(&c->kind[s->kind], s->index, &pick);
  int ok = s->status == CP_STEP_OK;
  struct agg_sum_crit_step r = {
    .index = s->index,
    .step = kind_txt(c, s->kind),
    .label = s->label != UINT32_MAX ? key_txt(agg_host_name(a->host, s->label))
                                    : agg_txt(NULL),
    .start_ns = rel(a, s->start_ns),
    .dur_ns = s->end_ns - s->start_ns,
    .status = agg_txt(status_name(s->status)),
    .length_ns = s->length_ns,
    .path_from_ns = ok ? rel(a, s->path_from) : 0,
    .path_to_ns = ok ? rel(a, s->path_to) : 0,
    .events = s->events,
    .kernels = s->kernels,
    .kernels_on_path = s->kernels_on_path,
    .queue_max = s->queue_max,
    .queue_area_ns = s->queue_area,
    .extent_ns = s->extent_ns,
    .role = agg_txt(role),
    .queue = pick ? queue_json(a, pick) : NULL,
  };

  AGG_SUM_FILLS(TR_SUM_CRIT_STEP, 24);
  bounds_set(BOUNDS_AT(r), s->bound_ns);
  agg_out_crit_step(o, &r);
}

static int kept(const struct agg_cpath *c, int64_t index)
{
  for (size_t i = 0; i < c->nsteps; i++)
    if (c->steps[i].index == index)
      return 1;
  return 0;
}

/* Every step kept (in the order they closed), then the picks that were
 * not (beyond CP_KEEP_STEPS). */
void cp_step_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;

  for (size_t i = 0; i < c->nsteps; i++)
    step_row(a, &c->steps[i], o);
  for (uint32_t k = 0; c->steps_total > c->nsteps && k < c->kinds.n; k++) {
    const struct cp_pick *p[2] = { &c->kind[k].median,
                                   cp_slowest(&c->kind[k]) };

    for (int i = 0; i < 2; i++)
      if (p[i]->set && !kept(c, p[i]->row.index) &&
          (i == 0 || !p[0]->set || p[0]->row.index != p[1]->row.index))
        step_row(a, &p[i]->row, o);
  }
}

/* The text of a name by what it names. */
static struct agg_txt name_of(const struct idx_agg *a, int what, uint32_t id)
{
  switch (what) {
  case CP_WHAT_HOST: return key_txt(agg_host_name(a->host, id));
  case CP_WHAT_RT:
    return id < a->rt_map.n ? key_txt(&a->rt_map.keys[id]) : agg_txt("");
  case CP_WHAT_KERNEL:
    return id < a->names.n ? key_txt(&a->names.keys[id]) : agg_txt("");
  case CP_WHAT_COPY: return agg_txt("copy");
  default: return agg_txt("");
  }
}

static const char *what_name(int what)
{
  static const char *const n[] = { "host", "runtime", "kernel", "copy",
                                   "none" };

  return what >= 0 && what <= CP_WHAT_NONE ? n[what] : "none";
}

/* "thread pid/tid" or "stream device/stream". */
static void where_of(const struct idx_agg *a, const struct cp_segment *s,
                     char *buf, size_t size)
{
  char id[96];

  if (s->what == CP_WHAT_HOST || s->what == CP_WHAT_RT) {
    agg_host_thread_name(a->host, s->lane, id, sizeof(id));
    snprintf(buf, size, "thread %s", id);
  } else {
    agg_cpath_lane_name(a->cpath, s->lane, id, sizeof(id));
    snprintf(buf, size, "stream %s", id);
  }
}

static void segments_of(const struct idx_agg *a, const struct cp_pick *p,
                        struct agg_out *o)
{
  char where[128];

  AGG_SUM_FILLS(TR_SUM_CRIT_SEGMENT, 11);
  for (uint32_t i = 0; i < p->nsegs; i++) {
    const struct cp_segment *s = &p->segs[i];
    struct agg_sum_crit_segment r;

    where_of(a, s, where, sizeof(where));
    r = (struct agg_sum_crit_segment){
      .index = p->row.index,
      .step = kind_txt(a->cpath, p->row.kind),
      .seq = i,
      .what = name_of(a, s->what, s->name),
      .kind = agg_txt(what_name(s->what)),
      .where = agg_txt(where),
      .bound = agg_txt(cp_bound_name(s->bound)),
      .from_ns = rel(a, s->from_ns),
      .to_ns = rel(a, s->to_ns),
      .weight_ns = s->weight_ns,
      .count = s->count,
    };
    agg_out_crit_segment(o, &r);
  }
}

void cp_segment_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;
  uint32_t n = c->kinds.n, *order = agg_order(n, kind_cmp, c);

  for (uint32_t i = 0; order != NULL && i < n; i++) {
    const struct cp_kind *k = &c->kind[order[i]];

    if (k->median.set)
      segments_of(a, &k->median, o);
    if (cp_slowest(k)->set &&
        (!k->median.set || k->median.row.index != cp_slowest(k)->row.index))
      segments_of(a, cp_slowest(k), o);
  }
  free(order);
}

/* ---- per kernel and family ---- */

struct path_ctx {
  const struct idx_agg *a;
  const struct cp_path_row *rows;
  const struct agg_map *keys; /* names or families */
};

/* Kind, then time on the path descending, then name. */
static int path_cmp(const void *x, const void *y, void *ud)
{
  const struct path_ctx *p = ud;
  const struct cp_path_row *r = &p->rows[*(const uint32_t *)x];
  const struct cp_path_row *s = &p->rows[*(const uint32_t *)y];
  int d = agg_key_cmp(&p->a->cpath->kinds.keys[r->kind],
                      &p->a->cpath->kinds.keys[s->kind]);

  if (d != 0)
    return d;
  if (r->critical_ns != s->critical_ns)
    return r->critical_ns > s->critical_ns ? -1 : 1;
  return agg_key_cmp(&p->keys->keys[r->key], &p->keys->keys[s->key]);
}

static void path_rows(const struct idx_agg *a, int families, struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;
  const struct cp_paths *ps = families ? &c->fpaths : &c->paths;
  struct path_ctx p = { a, ps->rows, families ? &a->fam_map : &a->names };
  uint32_t n = (uint32_t)ps->n, *order = agg_order(n, path_cmp, &p);

  AGG_SUM_FILLS(TR_SUM_KERNEL_PATH, 11);
  AGG_SUM_FILLS(TR_SUM_FAMILY_PATH, 10);
  for (uint32_t i = 0; order != NULL && i < n; i++) {
    const struct cp_path_row *r = &p.rows[order[i]];
    uint32_t fam = families ? r->key : a->name_family[r->key];
    struct agg_sum_kernel_path k = {
      .name = families ? agg_txt("") : key_txt(&a->names.keys[r->key]),
      .family =
          fam != UINT32_MAX ? key_txt(&a->fam_map.keys[fam]) : agg_txt(""),
      .step = kind_txt(c, r->kind),
      .steps = (int64_t)r->steps,
      .steps_on = (int64_t)r->steps_on,
      .instances = (int64_t)r->instances,
      .on_path = (int64_t)r->on_path,
      .critical_ns = r->critical_ns,
      .slack_p50_ns = agg_pct(&r->slack_hist, &r->slack, 500),
      .slack_p99_ns = agg_pct(&r->slack_hist, &r->slack, 990),
      .slack_max_ns = r->slack.max_ns,
    };
    struct agg_sum_family_path f = {
      .family = k.family,
      .step = k.step,
      .steps = k.steps,
      .steps_on = k.steps_on,
      .instances = k.instances,
      .on_path = k.on_path,
      .critical_ns = k.critical_ns,
      .slack_p50_ns = k.slack_p50_ns,
      .slack_p99_ns = k.slack_p99_ns,
      .slack_max_ns = k.slack_max_ns,
    };

    if (families)
      agg_out_family_path(o, &f);
    else
      agg_out_kernel_path(o, &k);
  }
  free(order);
}

void cp_kernel_path_rows(struct idx_agg *a, struct agg_out *o)
{
  path_rows(a, 0, o);
}

void cp_family_path_rows(struct idx_agg *a, struct agg_out *o)
{
  path_rows(a, 1, o);
}

static struct agg_cols launch_cols(const struct cp_launch_row *r,
                                   int64_t critical_ns)
{
  struct agg_cols c = { critical_ns, 0, 0, 0, 0, 0, 0, 0 };

  if (r == NULL || r->call.count == 0)
    return c;
  c.calls = (int64_t)r->call.count;
  c.call_ns = r->call.total_ns;
  c.call_p50 = agg_pct(&r->call_hist, &r->call, 500);
  c.call_p99 = agg_pct(&r->call_hist, &r->call, 990);
  c.queue_ns = r->queue.total_ns;
  c.queue_p50 = agg_pct(&r->queue_hist, &r->queue, 500);
  c.queue_p99 = agg_pct(&r->queue_hist, &r->queue, 990);
  return c;
}

/* The families' launch costs: their names' merged. */
static int family_launch(struct idx_agg *a)
{
  struct agg_cpath *c = a->cpath;

  c->fam_launch = calloc(a->fam_map.n + 1, sizeof(*c->fam_launch));
  if (c->fam_launch == NULL)
    return TR_ENOMEM;
  c->nfam_launch = a->fam_map.n + 1;
  for (size_t i = 0; i < c->nlaunch; i++) {
    uint32_t f = a->name_family[i];
    struct cp_launch_row *d = &c->fam_launch[f], *s = &c->launch[i];

    if (f == UINT32_MAX || s->call.count == 0)
      continue;
    if (d->call.count == 0) {
      d->call.min_ns = s->call.min_ns;
      d->queue.min_ns = s->queue.min_ns;
    }
    d->call.count += s->call.count;
    d->call.total_ns = tr_sat_add(d->call.total_ns, s->call.total_ns);
    d->queue.count += s->queue.count;
    d->queue.total_ns = tr_sat_add(d->queue.total_ns, s->queue.total_ns);
    if (s->call.max_ns > d->call.max_ns)
      d->call.max_ns = s->call.max_ns;
    if (s->queue.max_ns > d->queue.max_ns)
      d->queue.max_ns = s->queue.max_ns;
    if (s->call.min_ns < d->call.min_ns)
      d->call.min_ns = s->call.min_ns;
    if (s->queue.min_ns < d->queue.min_ns)
      d->queue.min_ns = s->queue.min_ns;
    if (agg_hist_merge(&d->call_hist, &s->call_hist) != 0 ||
        agg_hist_merge(&d->queue_hist, &s->queue_hist) != 0)
      return TR_ENOMEM;
  }
  return 0;
}

int cp_cols_publish(struct idx_agg *a)
{
  const struct agg_cpath *c = a->cpath;
  uint32_t n = a->names.n, nf = a->fam_map.n;

  a->kcols = calloc(n + 1, sizeof(*a->kcols));
  a->fcols = calloc(nf + 1, sizeof(*a->fcols));
  if (a->kcols == NULL || a->fcols == NULL || family_launch(a) != 0)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < n; i++)
    a->kcols[i] =
        launch_cols(i < c->nlaunch && c->launch ? &c->launch[i] : NULL,
                    c->critical_ns ? c->critical_ns[i] : 0);
  for (uint32_t f = 0; f < nf; f++)
    a->fcols[f] = launch_cols(&c->fam_launch[f],
                              c->fam_critical_ns ? c->fam_critical_ns[f] : 0);
  return 0;
}

/* ---- culprits ---- */

static const char *culprit_kind(uint32_t what)
{
  static const char *const n[] = { "cpu_op",  "annotation", "python",
                                   "runtime", "none",       "unknown" };

  return what <= CP_CULPRIT_UNKNOWN ? n[what] : "unknown";
}

static struct agg_txt culprit_name(const struct idx_agg *a,
                                   const struct cp_culprit *r)
{
  if (r->what >= CP_CULPRIT_NONE)
    return agg_txt(NULL);
  return name_of(a, r->what == AGG_HOST_RT ? CP_WHAT_RT : CP_WHAT_HOST,
                 r->name);
}

/* Kind (none first), cause, idle time descending, name. */
static int culprit_cmp(const void *x, const void *y, void *ud)
{
  const struct idx_agg *a = ud;
  const struct cp_culprit *r = &a->cpath->culprits[*(const uint32_t *)x];
  const struct cp_culprit *s = &a->cpath->culprits[*(const uint32_t *)y];
  struct agg_txt rn = culprit_name(a, r), sn = culprit_name(a, s);
  struct agg_key rk = { rn.p ? rn.p : "", rn.p ? rn.n : 0 };
  struct agg_key sk = { sn.p ? sn.p : "", sn.p ? sn.n : 0 };
  int d;

  if (r->kind != s->kind) {
    if (r->kind == 0 || s->kind == 0)
      return r->kind == 0 ? -1 : 1;
    return agg_key_cmp(&a->kinds_map.keys[r->kind - 1],
                       &a->kinds_map.keys[s->kind - 1]);
  }
  if (r->cause != s->cause)
    return r->cause < s->cause ? -1 : 1;
  if (r->s.total_ns != s->s.total_ns)
    return r->s.total_ns > s->s.total_ns ? -1 : 1;
  d = agg_key_cmp(&rk, &sk);
  return d ? d : (r->what > s->what) - (r->what < s->what);
}

void cp_culprit_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;
  uint32_t n = c->culprit_map.n, *order = agg_order(n, culprit_cmp, a);

  AGG_SUM_FILLS(TR_SUM_CULPRIT, 8);
  for (uint32_t i = 0; order != NULL && i < n; i++) {
    const struct cp_culprit *r = &c->culprits[order[i]];
    struct agg_sum_culprit row = {
      .step =
          r->kind ? key_txt(&a->kinds_map.keys[r->kind - 1]) : agg_txt(NULL),
      .cause = agg_txt(agg_idle_cause_name((int)r->cause)),
      .culprit = culprit_name(a, r),
      .culprit_kind = agg_txt(culprit_kind(r->what)),
      .count = (int64_t)r->s.count,
      .idle_ns = r->s.total_ns,
      .p50_ns = agg_pct(&r->hist, &r->s, 500),
      .p99_ns = agg_pct(&r->hist, &r->s, 990),
    };

    agg_out_culprit(o, &row);
  }
  free(order);
}

/* ---- sequences ---- */

/* Kind name, n, count descending, time descending, families. */
static int seq_cmp(const void *x, const void *y, void *ud)
{
  const struct idx_agg *a = ud;
  const struct cp_seq *p = *(const struct cp_seq *const *)x;
  const struct cp_seq *q = *(const struct cp_seq *const *)y;
  int d = agg_key_cmp(&a->cpath->kinds.keys[p->kind],
                      &a->cpath->kinds.keys[q->kind]);

  if (d != 0)
    return d;
  if (p->n != q->n)
    return p->n < q->n ? -1 : 1;
  if (p->count != q->count)
    return p->count > q->count ? -1 : 1;
  if (p->total_ns != q->total_ns)
    return p->total_ns > q->total_ns ? -1 : 1;
  for (uint32_t k = 0; k < p->n; k++)
    if ((d = agg_key_cmp(&a->fam_map.keys[p->fam[k]],
                         &a->fam_map.keys[q->fam[k]])) != 0)
      return d;
  return 0;
}

/* The families of a sequence joined by " > ". NULL when out of memory. */
static char *seq_text(const struct idx_agg *a, const struct cp_seq *q)
{
  size_t len = 1, at = 0;
  char *s;

  for (uint32_t i = 0; i < q->n; i++)
    len += a->fam_map.keys[q->fam[i]].n + 3;
  if ((s = malloc(len)) == NULL)
    return NULL;
  for (uint32_t i = 0; i < q->n; i++) {
    const struct agg_key *f = &a->fam_map.keys[q->fam[i]];

    if (i > 0) {
      memcpy(s + at, " > ", 3);
      at += 3;
    }
    memcpy(s + at, f->p, f->n);
    at += f->n;
  }
  s[at] = '\0';
  return s;
}

void cp_sequence_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;
  const struct cp_seq **v = malloc((c->nseqs + 1) * sizeof(*v));
  uint32_t n = 0, run = 0;

  AGG_SUM_FILLS(TR_SUM_SEQUENCE, 6);
  for (uint32_t i = 0; v != NULL && c->seqs != NULL && i < c->seq_slots; i++)
    if (c->seqs[i].hash != 0)
      v[n++] = &c->seqs[i];
  if (v != NULL)
    qsort_r(v, n, sizeof(*v), seq_cmp, (void *)a);
  for (uint32_t i = 0; i < n; i++) {
    const struct cp_seq *q = v[i], *prev = i ? v[i - 1] : NULL;
    char *text;

    run = prev && prev->kind == q->kind && prev->n == q->n ? run + 1 : 0;
    if (run >= CP_SEQ_TOP || (text = seq_text(a, q)) == NULL)
      continue;
    {
      struct agg_sum_sequence r = {
        .step = kind_txt(c, q->kind),
        .n = q->n,
        .sequence = agg_txt(text),
        .count = (int64_t)q->count,
        .total_ns = q->total_ns,
        .steps = (int64_t)c->kind[q->kind].analyzed,
      };

      agg_out_sequence(o, &r);
    }
    free(text);
  }
  free(v);
}

void cp_median_seq_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_cpath *c = a->cpath;
  uint32_t n = c->kinds.n, *order = agg_order(n, kind_cmp, c);

  AGG_SUM_FILLS(TR_SUM_MEDIAN_SEQ, 7);
  for (uint32_t i = 0; order != NULL && i < n; i++) {
    const struct cp_pick *p = &c->kind[order[i]].median;
    int64_t total = 0;

    for (uint32_t j = 0; p->set && j < p->nseq; j++)
      total = tr_sat_add(total, p->seq[j].dur_ns);
    for (uint32_t j = 0; p->set && j < p->nseq; j++) {
      uint32_t name = p->seq[j].name;
      uint32_t fam = name < a->names.n ? a->name_family[name] : UINT32_MAX;
      struct agg_sum_median_seq r = {
        .step = kind_txt(c, order[i]),
        .position = j,
        .family =
            fam != UINT32_MAX ? key_txt(&a->fam_map.keys[fam]) : agg_txt(""),
        .name = name_of(a, CP_WHAT_KERNEL, name),
        .count = p->seq[j].count,
        .dur_ns = p->seq[j].dur_ns,
        .share = json_real(agg_share(p->seq[j].dur_ns, total)),
      };

      agg_out_median_seq(o, &r);
    }
  }
  free(order);
}

/* ---- warnings ---- */

json_t *agg_cpath_warnings(const struct idx_agg *a)
{
  const struct agg_cpath *c = a->cpath;
  uint64_t big = 0, cycles = 0;
  json_t *w = json_array();
  char msg[384];

  for (uint32_t k = 0; k < c->kinds.n; k++) {
    big += c->kind[k].too_big;
    cycles += c->kind[k].cycles;
  }
  if (big > 0) {
    snprintf(msg, sizeof(msg),
             "%llu steps passed the %u events the open steps may hold: "
             "their critical path is not found (status too_big)",
             (unsigned long long)big, c->max_events);
    json_array_append_new(w, json_pack("{s:s,s:s}", "code",
                                       "critical_path_steps_too_big", "message",
                                       msg));
  }
  if (cycles > 0) {
    snprintf(msg, sizeof(msg),
             "%llu steps' graphs have a cycle (sync edges against the "
             "clock): their critical path is not found (status cycle)",
             (unsigned long long)cycles);
    json_array_append_new(w, json_pack("{s:s,s:s}", "code",
                                       "critical_path_cycles", "message", msg));
  }
  if (c->forced > 0 || c->seq_dropped > 0 || a->host->dropped > 0) {
    snprintf(msg, sizeof(msg),
             "%llu steps closed before their device work was all seen "
             "(more than %d open at once), %llu kernel sequences beyond "
             "%d distinct not counted, %llu host events of threads beyond "
             "%d not tracked",
             (unsigned long long)c->forced, CP_OPEN_STEPS,
             (unsigned long long)c->seq_dropped, CP_SEQ_KEEP,
             (unsigned long long)a->host->dropped, AGG_HOST_THREADS);
    json_array_append_new(w,
                          json_pack("{s:s,s:s}", "code",
                                    "critical_path_bounded", "message", msg));
  }
  return w;
}
