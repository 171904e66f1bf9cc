/*
 * Step-time distributions of the run-label kinds (docs/ATOM.md): per kind
 * min/p50/p90/p99/max, the steady state, batch-size buckets and outliers.
 *
 * Percentiles: p is the sample of rank ceil(p n) - 1 in sorted order,
 * valued as the medians are (the log-linear histogram of agg_map.c: exact
 * below 1024 ns, the bucket's midpoint within 1/1024 above, clamped to
 * [min, max]).
 *
 * Steady state: a kind's warm-up is its leading run of steps, in start
 * order, that each last more than twice the kind's p50 (JIT, autotuning
 * and allocator growth make first steps slow), at most ceil(count / 10) of
 * them; the steady figures are over the other steps, and each row says how
 * many were dropped (warmup_steps).
 *
 * Buckets: per kind, the steps by real batch size (bs=<real>[/<graph>])
 * and by tok=: 1, 2, 3-4, 5-8, ... 2^19+1-2^20 and one open bucket beyond.
 *
 * Outliers: the AGG_SLOWEST slowest steps of each kind (ties: the earlier,
 * then the first in the file) and its median step (the earliest step whose
 * duration is nearest the kind's p50), each with its top AGG_TOP kernels:
 * the kernels that start inside the step's label, [start, end), by total
 * time (ties: by name).
 *
 * All from the side the steps come from (GPU labels when the trace has
 * them, else CPU labels: the seal below). The event pass keeps per kind a
 * histogram, the slowest picks and the buckets; the time pass (in start
 * order) finds the warm-up, the median step and the picks' kernels.
 * Memory: per kind, histograms and a hash per picked step while it runs.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"

int64_t agg_pct(const struct agg_hist *h, const struct agg_stat *s, int p)
{
  uint64_t n = s->count, rank;

  if (n == 0)
    return 0;
  rank = (n * (uint64_t)p + 999) / 1000; /* ceil(p n / 1000) >= 1 */
  return agg_hist_rank(h, rank - 1, s->min_ns, s->max_ns);
}

/* True when pick a goes before b: slower, then earlier, then first seen. */
static int slower(const struct agg_pick *a, const struct agg_pick *b)
{
  if (a->dur_ns != b->dur_ns)
    return a->dur_ns > b->dur_ns;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns;
  return a->seq < b->seq;
}

static void keep_slow(struct agg_step *st, const struct agg_pick *p)
{
  uint32_t i;

  if (st->nslow == AGG_SLOWEST) {
    if (!slower(p, &st->slow[AGG_SLOWEST - 1]))
      return; /* not among the slowest */
    i = AGG_SLOWEST - 1;
  } else {
    i = st->nslow++;
  }
  while (i > 0 && slower(p, &st->slow[i - 1])) {
    st->slow[i] = st->slow[i - 1];
    i--;
  }
  st->slow[i] = *p;
}

/* Bucket of v >= 1: 0 for 1, b for 2^(b-1) < v <= 2^b, the last for more. */
static int bucket_of(int64_t v)
{
  int b = v <= 1 ? 0 : 64 - __builtin_clzll((uint64_t)(v - 1));

  return b < AGG_BUCKETS - 1 ? b : AGG_BUCKETS - 1;
}

static int bucket_add(struct agg_step *st, int dim, int64_t v, int padded,
                      int64_t dur)
{
  struct agg_bucket *b;

  if (v < 1)
    return 0;
  if (st->buckets == NULL &&
      (st->buckets = calloc(AGG_DIMS * AGG_BUCKETS, sizeof(*b))) == NULL)
    return TR_ENOMEM;
  b = &st->buckets[dim * AGG_BUCKETS + bucket_of(v)];
  agg_stat_add(&b->s, dur);
  b->padded += padded != 0;
  return agg_hist_add(&b->hist, dur);
}

/* A run label of kind k seen in the event pass (side, its duration, start
 * and number, bs (-1: none), the padded flag, tok (-1)). */
static int step_seen(struct agg_step *st, const struct idx_event *ev,
                     int64_t seq, int64_t bs, int padded, int64_t tok)
{
  struct agg_pick p = { ev->ts_ns, ev->dur_ns, seq };
  int rc;

  agg_stat_add(&st->s, ev->dur_ns);
  st->padded += padded != 0;
  if (tok > 0)
    st->tokens += tok;
  keep_slow(st, &p);
  if (agg_hist_add(&st->hist, ev->dur_ns) != 0)
    return TR_ENOMEM;
  if ((rc = bucket_add(st, AGG_DIM_BS, bs, padded, ev->dur_ns)) != 0)
    return rc;
  return bucket_add(st, AGG_DIM_TOK, tok, padded, ev->dur_ns);
}

static void step_free(struct agg_step *st)
{
  if (st->buckets != NULL)
    for (int i = 0; i < AGG_DIMS * AGG_BUCKETS; i++)
      agg_hist_free(&st->buckets[i].hist);
  free(st->buckets);
  agg_hist_free(&st->hist);
  agg_hist_free(&st->steady_hist);
}

/* ---- the event pass: run labels ---- */

/* The run-label kinds (docs/ATOM.md), both generations: ATOM ffdf3bb5
 * writes prefill, decode, eager_decode and the dummy_* kinds
 * (atom/model_engine/run_labels.py), draft[i/k bs=] (eagle_proposer.py),
 * dspark[bs= T=], dspark_ctx_kv[bs= tok=] and dspark_sched[bs=]
 * (dspark_proposer.py); the seed skill's newer ATOM renames the drafts
 * propose_<drafter>[...] (any drafter, matched by prefix) and draft_kv. */
static const char *const label_kinds[] = { "prefill",
                                           "decode",
                                           "eager_decode",
                                           "dummy_decode",
                                           "dummy_eager_decode",
                                           "dummy_prefill",
                                           "draft",
                                           "dspark",
                                           "dspark_ctx_kv",
                                           "dspark_sched",
                                           "draft_kv" };

/* The profiler's own step annotation, "ProfilerStep#<N>" (torch.profiler's
 * step(): each iteration of a training or generic PyTorch loop): a step
 * kind of its own, "ProfilerStep", where a trace has no run labels
 * (the seal drops it otherwise). */
#define PROFILER_STEP     "ProfilerStep"
#define PROFILER_STEP_LEN (sizeof(PROFILER_STEP) - 1)

int agg_profiler_step_no(const char *p, size_t n, int64_t *no)
{
  int64_t v = 0;
  size_t i = PROFILER_STEP_LEN + 1;

  if (p == NULL || n <= i || memcmp(p, PROFILER_STEP "#", i) != 0)
    return 0;
  for (; i < n; i++) {
    if (!isdigit((unsigned char)p[i]) || v > INT64_MAX / 10 - 9)
      return 0;
    v = v * 10 + (p[i] - '0');
  }
  *no = v;
  return 1;
}

size_t agg_label_kind(struct idx_str n)
{
  const char *b = n.p ? memchr(n.p, '[', n.n) : NULL;
  size_t len, i;

  if (b == NULL)
    return 0;
  len = (size_t)(b - n.p);
  if (len > AGG_KIND_MAX)
    return 0; /* no kind is that long: a made-up propose_... */
  for (i = 0; i < sizeof(label_kinds) / sizeof(label_kinds[0]); i++)
    if (len == strlen(label_kinds[i]) && memcmp(n.p, label_kinds[i], len) == 0)
      return len;
  if (len <= 8 || memcmp(n.p, "propose_", 8) != 0)
    return 0;
  for (i = 8; i < len; i++)
    if (!isalnum((unsigned char)n.p[i]) && n.p[i] != '_')
      return 0;
  return len;
}

/* The steps table's kind of a label: a run label's, or "ProfilerStep". */
static size_t label_kind(struct idx_str n)
{
  int64_t no;

  if (agg_profiler_step_no(n.p, n.n, &no))
    return PROFILER_STEP_LEN;
  return agg_label_kind(n);
}

int64_t agg_label_field(struct idx_str n, size_t from, const char *key,
                        int64_t *second)
{
  size_t kl = strlen(key), i;
  int64_t v[2] = { -1, -1 };
  int which;

  for (i = from; i + kl <= n.n; i++) {
    char prev = n.p[i - 1];

    if ((prev != '[' && prev != ' ' && prev != ',') ||
        memcmp(n.p + i, key, kl) != 0)
      continue;
    i += kl;
    for (which = 0; which < 2; which++) {
      if (i >= n.n || !isdigit((unsigned char)n.p[i]))
        break;
      v[which] = 0;
      while (i < n.n && isdigit((unsigned char)n.p[i]) &&
             v[which] < INT64_MAX / 10 - 9)
        v[which] = v[which] * 10 + (n.p[i++] - '0');
      if (i >= n.n || n.p[i] != '/')
        break;
      i++;
    }
    break;
  }
  if (second != NULL)
    *second = v[1];
  return v[0];
}

/* A run label: its step figures (agg_steps.c), its text kept by number
 * for the outliers, and a time record. */
static int on_label_event(struct idx_agg *a, const struct idx_event *ev,
                          int side)
{
  size_t len = label_kind(ev->name);
  int64_t tok, bs, graph_bs, seq;
  uint32_t kind;
  int rc;

  if (len == 0 || (side == AGG_SIDE_GPU && ev->name.p[len] == '#'))
    return 0; /* kineto's GPU-side ProfilerStep spans only some kernels */
  rc = agg_map_intern(&a->kinds_map, ev->name.p, len, &kind);
  if (rc < 0)
    return rc;
  if (kind >= AGG_MAX_STEP_KINDS) {
    a->skipped++; /* a flood of made-up propose_* kinds: count, drop */
    return 0;
  }
  tok = agg_label_field(ev->name, len + 1, "tok=", NULL);
  bs = agg_label_field(ev->name, len + 1, "bs=", &graph_bs);
  if ((rc = agg_labels_add(&a->labels, ev->name.p, ev->name.n, &seq)) != 0 ||
      (rc = step_seen(&a->step[side][kind], ev, seq, bs,
                      bs >= 0 && graph_bs > bs, tok)) != 0)
    return rc;
  return agg_record(a, ev,
                    side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU,
                    kind, seq);
}

/* ---- the walk ---- */

struct acc {
  uint32_t key; /* name id + 1; 0: empty */
  uint32_t pad;
  uint64_t count;
  int64_t total;
};

/* A picked step whose kernels are being summed: an open-addressing hash
 * name id -> (count, total). */
struct win {
  uint32_t kind;
  int role; /* 0..AGG_SLOWEST-1: that slowest pick; AGG_SLOWEST: median */
  int64_t end;
  struct acc *t;
  uint32_t cap, n;
};

struct kind_walk {
  int64_t p50;
  uint64_t seen, cap; /* steps walked; most that may be warm-up */
  int warming;
  int64_t best_diff; /* the median candidate's |dur - p50| */
};

/* The pass's state: the walk's, over the labels of the step side. */
struct agg_steps {
  struct idx_agg *a;
  uint32_t label_type; /* AGG_REC_LABEL or AGG_REC_LABEL_CPU */
  struct kind_walk k[AGG_MAX_STEP_KINDS];
  struct win *w; /* open windows */
  size_t nw, wcap;
  int64_t cover_end[AGG_MAX_STEP_KINDS]; /* per kind: end of labels */
};

static int acc_grow(struct win *x)
{
  uint32_t ncap = x->cap ? x->cap * 2 : 64;
  struct acc *t = calloc(ncap, sizeof(*t));

  if (t == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < x->cap; i++) {
    uint32_t j;

    if (x->t[i].key == 0)
      continue;
    j = (x->t[i].key * 2654435761u) & (ncap - 1);
    while (t[j].key != 0)
      j = (j + 1) & (ncap - 1);
    t[j] = x->t[i];
  }
  free(x->t);
  x->t = t;
  x->cap = ncap;
  return 0;
}

static int acc_add(struct win *x, uint32_t name, int64_t dur)
{
  uint32_t key = name + 1, i;

  if ((x->n + 1) * 2 > x->cap && acc_grow(x) != 0)
    return TR_ENOMEM;
  i = (key * 2654435761u) & (x->cap - 1);
  while (x->t[i].key != 0 && x->t[i].key != key)
    i = (i + 1) & (x->cap - 1);
  if (x->t[i].key == 0) {
    x->t[i].key = key;
    x->n++;
  }
  x->t[i].count++;
  x->t[i].total = tr_sat_add(x->t[i].total, dur);
  return 0;
}

/* Total descending, then name, then id (a total order). */
static int top_before(const struct idx_agg *a, const struct acc *x,
                      const struct acc *y)
{
  int d;

  if (x->total != y->total)
    return x->total > y->total;
  d = agg_key_cmp(&a->names.keys[x->key - 1], &a->names.keys[y->key - 1]);
  return d ? d < 0 : x->key < y->key;
}

/* The window's top kernels into the pick's slot of its kind. */
static void win_close(struct agg_steps *w, struct win *x)
{
  struct agg_step *st = &w->a->step[w->a->step_side][x->kind];
  struct agg_top *top =
      x->role == AGG_SLOWEST ? st->median_top : st->slow_top[x->role];
  uint32_t *n =
      x->role == AGG_SLOWEST ? &st->nmedian_top : &st->nslow_top[x->role];
  struct acc best[AGG_TOP];
  uint32_t m = 0;

  for (uint32_t i = 0; i < x->cap; i++) {
    uint32_t j;

    if (x->t[i].key == 0 ||
        (m == AGG_TOP && !top_before(w->a, &x->t[i], &best[m - 1])))
      continue; /* empty, or not among the top */
    j = m < AGG_TOP ? m++ : AGG_TOP - 1;
    while (j > 0 && top_before(w->a, &x->t[i], &best[j - 1])) {
      best[j] = best[j - 1];
      j--;
    }
    best[j] = x->t[i];
  }
  for (uint32_t i = 0; i < m; i++) {
    struct agg_top t = { best[i].key - 1, 0, best[i].count, best[i].total };

    top[i] = t;
  }
  *n = m;
  free(x->t);
  *x = w->w[--w->nw]; /* x may be the last one itself */
}

static int win_open(struct agg_steps *w, const struct agg_rec *r, int role)
{
  struct win x = { r->id, role, r->start_ns + r->dur_ns, NULL, 0, 0 };

  if (agg_grow(&w->w, &w->wcap, w->nw, sizeof(*w->w)) != 0)
    return TR_ENOMEM;
  w->w[w->nw++] = x;
  return 0;
}

/* A new median candidate replaces the window of the old one. */
static int median_pick(struct agg_steps *w, const struct agg_rec *r)
{
  struct agg_step *st = &w->a->step[w->a->step_side][r->id];
  struct kind_walk *kw = &w->k[r->id];
  int64_t diff = llabs(r->dur_ns - kw->p50);

  if (st->median.seq >= 0 && diff >= kw->best_diff)
    return 0;
  for (size_t i = 0; i < w->nw; i++)
    if (w->w[i].kind == r->id && w->w[i].role == AGG_SLOWEST) {
      free(w->w[i].t);
      w->w[i] = w->w[--w->nw];
      break;
    }
  kw->best_diff = diff;
  st->median.start_ns = r->start_ns;
  st->median.dur_ns = r->dur_ns;
  st->median.seq = r->aux;
  st->nmedian_top = 0;
  return win_open(w, r, AGG_SLOWEST);
}

/* Warm-up or steady state, in start order. */
static int steady_add(struct agg_steps *w, const struct agg_rec *r)
{
  struct agg_step *st = &w->a->step[w->a->step_side][r->id];
  struct kind_walk *kw = &w->k[r->id];

  kw->seen++;
  if (kw->warming && r->dur_ns > 2 * kw->p50 && st->warmup < kw->cap) {
    st->warmup++;
    return 0;
  }
  kw->warming = 0;
  agg_stat_add(&st->steady, r->dur_ns);
  return agg_hist_add(&st->steady_hist, r->dur_ns);
}

/* Whether the label of kind k the walk took last was a warm-up step (the
 * samples pass asks, through agg_at.warmup). */
static int warming(const struct agg_steps *w, uint32_t k)
{
  return k < w->a->nkinds && w->k[k].warming;
}

static int on_label(struct agg_steps *w, const struct agg_rec *r)
{
  struct agg_step *st = &w->a->step[w->a->step_side][r->id];
  int rc;

  if ((rc = steady_add(w, r)) != 0 || (rc = median_pick(w, r)) != 0)
    return rc;
  for (uint32_t i = 0; i < st->nslow; i++)
    if (st->slow[i].seq == r->aux && (rc = win_open(w, r, (int)i)) != 0)
      return rc;
  return 0;
}

static int walk_rec(struct agg_steps *w, const struct agg_rec *r)
{
  size_t i;
  int rc;

  for (i = w->nw; i-- > 0;)
    if (r->start_ns >= w->w[i].end)
      win_close(w, &w->w[i]);
  if (r->type == w->label_type && r->id < w->a->nkinds)
    return on_label(w, r);
  if (r->type != AGG_REC_KERNEL)
    return 0;
  for (i = 0; i < w->nw; i++)
    if ((rc = acc_add(&w->w[i], w->a->shapes[r->id].name, r->dur_ns)) != 0)
      return rc;
  return 0;
}

/* Kernel time inside each kind's labels of the step side: a kernel counts
 * for a kind when it starts inside one of that kind's labels, [start, end)
 * (under host-side labels, ProfilerStep#N, the kernels that run inside the
 * host's step, as the step cards list them); labels arrive in start order,
 * so the union of a kind's labels started so far covers t exactly when t
 * is before the largest label end seen. Inside labels of two kinds it
 * counts for both. Each label of the step side is a finding. */
static void cover(struct idx_agg *a, struct agg_steps *w,
                  const struct agg_rec *r)
{
  if (r->type == w->label_type && r->id < a->nkinds) {
    struct agg_finding f = { AGG_FOUND_STEP,
                             r->start_ns,
                             r->start_ns + r->dur_ns,
                             r->id,
                             r->aux,
                             0,
                             0,
                             -1,
                             NULL,
                             0 };

    agg_found(a, &f);
    if (r->start_ns + r->dur_ns > w->cover_end[r->id])
      w->cover_end[r->id] = r->start_ns + r->dur_ns;
    return;
  }
  if (r->type != AGG_REC_KERNEL)
    return;
  for (uint32_t k = 0; k < a->nkinds; k++)
    if (r->start_ns < w->cover_end[k])
      a->step[a->step_side][k].kernel_ns =
          tr_sat_add(a->step[a->step_side][k].kernel_ns, r->dur_ns);
}

int agg_steps_walk(struct idx_agg *a, struct agg_at *at)
{
  struct agg_steps *w = a->steps;
  const struct agg_rec *r = at->r;
  int rc = walk_rec(w, r);

  at->warmup = (r->type == AGG_REC_LABEL || r->type == AGG_REC_LABEL_CPU) &&
               warming(w, r->id);
  at->cover_end = w->cover_end;
  if (rc == 0)
    cover(a, w, r);
  return rc;
}

/* The picks' top kernels into a->step of the step side. */
int agg_steps_end(struct idx_agg *a, struct tr_err *err)
{
  struct agg_steps *w = a->steps;

  (void)err;
  while (w->nw > 0)
    win_close(w, &w->w[w->nw - 1]);
  return 0;
}

int agg_steps_new(struct idx_agg *a)
{
  return (a->steps = calloc(1, sizeof(*a->steps))) == NULL ? TR_ENOMEM : 0;
}

/* Frees the pass's state and the vocabulary it made. */
void agg_steps_free(struct idx_agg *a)
{
  for (size_t i = 0; i < 2 * AGG_MAX_STEP_KINDS; i++)
    step_free(&a->step[i / AGG_MAX_STEP_KINDS][i % AGG_MAX_STEP_KINDS]);
  agg_labels_free(&a->labels);
  agg_map_free(&a->kinds_map);
  if (a->steps == NULL)
    return;
  for (size_t i = 0; i < a->steps->nw; i++)
    free(a->steps->w[i].t);
  free(a->steps->w);
  free(a->steps);
  a->steps = NULL;
}

int agg_steps_event(struct idx_agg *a, const struct idx_doc *doc,
                    const struct idx_event *ev, enum idx_class cls)
{
  (void)doc;
  return on_label_event(
      a, ev, cls == IDX_CLASS_LABEL_GPU ? AGG_SIDE_GPU : AGG_SIDE_CPU);
}

/* ProfilerStep steps count only in a trace without run labels: where ATOM
 * labels its steps, the profiler's own step (if any) would wrap them. */
static void drop_profiler_steps(struct idx_agg *a)
{
  uint32_t ps;
  int others = 0;

  if (!agg_map_find(&a->kinds_map, "ProfilerStep", 12, &ps) || ps >= a->nkinds)
    return;
  for (uint32_t k = 0; k < a->nkinds; k++)
    others |= k != ps && (a->step[AGG_SIDE_CPU][k].s.count > 0 ||
                          a->step[AGG_SIDE_GPU][k].s.count > 0);
  if (!others)
    return;
  step_free(&a->step[AGG_SIDE_CPU][ps]);
  memset(&a->step[AGG_SIDE_CPU][ps], 0, sizeof(a->step[AGG_SIDE_CPU][ps]));
  a->dropped_kind = ps;
}

/* Steps come from the GPU-side labels when the trace has any, else from
 * the CPU side (docs/ATOM.md): one trace never mixes the two. Then the
 * walk's state per kind. */
int agg_steps_seal(struct idx_agg *a, struct tr_err *err)
{
  struct agg_steps *w = a->steps;

  (void)err;
  a->nkinds =
      a->kinds_map.n < AGG_MAX_STEP_KINDS ? a->kinds_map.n : AGG_MAX_STEP_KINDS;
  drop_profiler_steps(a);
  a->step_side = AGG_SIDE_CPU;
  for (uint32_t k = 0; k < a->nkinds; k++)
    if (a->step[AGG_SIDE_GPU][k].s.count > 0)
      a->step_side = AGG_SIDE_GPU;
  w->a = a;
  w->label_type =
      a->step_side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU;
  for (uint32_t k = 0; k < AGG_MAX_STEP_KINDS; k++)
    w->cover_end[k] = INT64_MIN;
  for (uint32_t k = 0; k < a->nkinds; k++) {
    struct agg_step *st = &a->step[a->step_side][k];

    w->k[k].p50 = agg_pct(&st->hist, &st->s, 500);
    w->k[k].cap = (st->s.count + 9) / 10;
    w->k[k].warming = 1;
    st->median.seq = -1;
  }
  return 0;
}

void agg_steps_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  for (uint32_t k = 0; k < a->nkinds; k++)
    r->warmup_steps += (int64_t)a->step[a->step_side][k].warmup;
}

/* ---- the summary's tables ---- */

static int kind_cmp(const void *x, const void *y, void *ud)
{
  const struct agg_map *m = ud;

  return agg_key_cmp(&m->keys[*(const uint32_t *)x],
                     &m->keys[*(const uint32_t *)y]);
}

/* The step side's kinds with steps, by name. Caller frees; NULL: none or
 * out of memory (then *n is 0). */
static uint32_t *kinds_by_name(const struct idx_agg *a, uint32_t *n)
{
  uint32_t *v = malloc((a->nkinds + 1) * sizeof(*v));

  *n = 0;
  if (v == NULL)
    return NULL;
  for (uint32_t k = 0; k < a->nkinds; k++)
    if (a->step[a->step_side][k].s.count > 0)
      v[(*n)++] = k;
  qsort_r(v, *n, sizeof(*v), kind_cmp, (void *)&a->kinds_map);
  return v;
}

static struct agg_txt kind_txt(const struct idx_agg *a, uint32_t k)
{
  struct agg_txt t = { a->kinds_map.keys[k].p, a->kinds_map.keys[k].n };

  return t;
}

static void bucket_row(const struct idx_agg *a, uint32_t k, int dim, int b,
                       struct agg_out *o)
{
  const struct agg_bucket *x =
      &a->step[a->step_side][k].buckets[dim * AGG_BUCKETS + b];
  struct agg_sum_step_bucket r = {
    .kind = kind_txt(a, k),
    .dim = agg_txt(dim == AGG_DIM_BS ? "bs" : "tok"),
    .lo = b == 0 ? 1 : ((int64_t)1 << (b - 1)) + 1,
    .hi = { b < AGG_BUCKETS - 1, (int64_t)1 << b },
    .count = (int64_t)x->s.count,
    .padded = (int64_t)x->padded,
    .padded_share = agg_share((int64_t)x->padded, (int64_t)x->s.count),
    .min_ns = x->s.min_ns,
    .p50_ns = agg_pct(&x->hist, &x->s, 500),
    .p99_ns = agg_pct(&x->hist, &x->s, 990),
    .max_ns = x->s.max_ns,
  };

  AGG_SUM_FILLS(TR_SUM_STEP_BUCKET, 11);
  agg_out_step_bucket(o, &r);
}

void agg_step_bucket_rows(struct idx_agg *a, struct agg_out *o)
{
  uint32_t n, *kinds = kinds_by_name(a, &n);

  for (uint32_t i = 0; i < n; i++) {
    const struct agg_step *st = &a->step[a->step_side][kinds[i]];

    for (int dim = 0; st->buckets != NULL && dim < AGG_DIMS; dim++)
      for (int b = 0; b < AGG_BUCKETS; b++)
        if (st->buckets[dim * AGG_BUCKETS + b].s.count > 0)
          bucket_row(a, kinds[i], dim, b, o);
  }
  free(kinds);
}

/* The bins of the step-time histogram being written. */
struct hist_out {
  struct agg_txt kind;
  struct agg_out *o;
  int64_t lo, hi;
  uint64_t count;
};

static void hist_flush(struct hist_out *h)
{
  struct agg_sum_step_hist r = { h->kind, h->lo, h->hi, (int64_t)h->count };

  AGG_SUM_FILLS(TR_SUM_STEP_HIST, 4);
  if (h->count > 0)
    agg_out_step_hist(h->o, &r);
  h->count = 0;
}

/* One histogram bucket [low, high): it lies inside one display bin. */
static void hist_bucket(void *ud, int64_t low, int64_t high, uint64_t count)
{
  struct hist_out *h = ud;
  int e = low > 0 ? 63 - __builtin_clzll((uint64_t)low) : 0; /* log2 */
  int64_t width = low < 1024 ? 64 : (int64_t)1 << (e - 3);

  (void)high;
  if (h->count > 0 && low >= h->hi)
    hist_flush(h);
  if (h->count == 0) {
    h->lo = low & ~(width - 1);
    h->hi = h->lo + width;
  }
  h->count += count;
}

void agg_step_hist_rows(struct idx_agg *a, struct agg_out *o)
{
  struct hist_out h = { { NULL, 0 }, o, 0, 0, 0 };
  uint32_t n, *kinds = kinds_by_name(a, &n);

  for (uint32_t i = 0; i < n; i++) {
    h.kind = kind_txt(a, kinds[i]);
    if (agg_hist_each(&a->step[a->step_side][kinds[i]].hist, hist_bucket, &h) ==
        0)
      hist_flush(&h);
  }
  free(kinds);
}

static json_t *top_json(const struct idx_agg *a, const struct agg_top *top,
                        uint32_t n)
{
  json_t *arr = json_array();

  for (uint32_t i = 0; i < n; i++) {
    const struct agg_key *k = &a->names.keys[top[i].name];
    json_t *row = json_pack("{s:s%,s:I,s:I}", "name", k->p, k->n, "count",
                            (json_int_t)top[i].count, "total_ns",
                            (json_int_t)top[i].total_ns);

    agg_set_demangled(a, top[i].name, row);
    json_array_append_new(arr, row);
  }
  return arr;
}

static void outlier_row(struct idx_agg *a, uint32_t k, const char *role,
                        int index, const struct agg_pick *p, json_t *top,
                        struct agg_out *o)
{
  char text[AGG_LABEL_TEXT + 1];
  struct agg_sum_step_outlier r = {
    .kind = kind_txt(a, k),
    .role = agg_txt(role),
    .index = index,
    .start_ns = p->start_ns - a->t0_ns,
    .dur_ns = p->dur_ns,
    .top_kernels = top,
  };

  AGG_SUM_FILLS(TR_SUM_STEP_OUTLIER, 7);
  if (agg_labels_get(&a->labels, p->seq, text, sizeof(text)) != 0)
    text[0] = '\0'; /* the spill file failed: the row keeps its figures */
  r.label = agg_txt(text);
  agg_out_step_outlier(o, &r);
}

void agg_step_outlier_rows(struct idx_agg *a, struct agg_out *o)
{
  uint32_t n, *kinds = kinds_by_name(a, &n);

  for (uint32_t i = 0; i < n; i++) {
    struct agg_step *st = &a->step[a->step_side][kinds[i]];

    for (uint32_t j = 0; j < st->nslow; j++)
      outlier_row(a, kinds[i], "slowest", (int)j, &st->slow[j],
                  top_json(a, st->slow_top[j], st->nslow_top[j]), o);
    if (st->median.seq >= 0)
      outlier_row(a, kinds[i], "median", 0, &st->median,
                  top_json(a, st->median_top, st->nmedian_top), o);
  }
  free(kinds);
}

static int fill_step(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  agg_row_set(r, 0, &a->kinds_map.keys[id]); /* by kind name only */
  return a->step[a->step_side][id].s.count > 0;
}

void agg_step_rows(struct idx_agg *a, struct agg_out *o)
{
  int gpu = a->step_side == AGG_SIDE_GPU;
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_STEP, 21);
  rows = agg_sorted_rows(a->nkinds, &n, fill_step, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_step *s = &a->step[a->step_side][rows[i].id];
    struct agg_sum_step r = {
      .kind = { rows[i].p, rows[i].n },
      .count = (int64_t)s->s.count,
      .total_ns = s->s.total_ns,
      .avg_ns = agg_avg(&s->s),
      .tokens = s->tokens,
      .padded = (int64_t)s->padded,
      .kernel_ns = s->kernel_ns,
      .source = agg_txt(gpu ? "gpu" : "cpu"),
      .min_ns = s->s.min_ns,
      .p50_ns = agg_pct(&s->hist, &s->s, 500),
      .p90_ns = agg_pct(&s->hist, &s->s, 900),
      .p99_ns = agg_pct(&s->hist, &s->s, 990),
      .max_ns = s->s.max_ns,
      .warmup_steps = (int64_t)s->warmup,
      .steady_count = (int64_t)s->steady.count,
      .steady_total_ns = s->steady.total_ns,
      .steady_min_ns = s->steady.min_ns,
      .steady_p50_ns = agg_pct(&s->steady_hist, &s->steady, 500),
      .steady_p90_ns = agg_pct(&s->steady_hist, &s->steady, 900),
      .steady_p99_ns = agg_pct(&s->steady_hist, &s->steady, 990),
      .steady_max_ns = s->steady.max_ns,
    };

    agg_out_step(o, &r);
  }
  free(rows);
}
