/*
 * Accounting of single events: the per-name, per-shape and per-kind tables
 * each class of event (device kernel, copy, memset, host runtime API, run
 * label) feeds. The format's row (format.c) says which class an event is.
 *
 * Only ph "X" events carry durations; an X event without a numeric ts or
 * dur, or with a negative dur, is skipped and counted.
 *
 * The launch join (ROCm): a kernel event has grid/block only, its runtime
 * launch event (same correlation, before or after it in the file) has the
 * shared memory. Two bounded tables (AGG_PENDING entries each) hold the
 * side seen first until the other arrives, removed on match. When a table
 * is full, the kernel is parked per (name, grid, block) shape instead, and
 * at the end takes the registers/shared memory that runtime launches of the
 * same (args.kernel, grid, block) reported, when they all agreed; else null.
 * Graph launches (hipGraphLaunch: one correlation for many kernels) carry
 * no shape and take the same fallback. Memory: distinct shapes + 2 tables.
 *
 * The copy join (ROCm 6.2): a gpu_memcpy/gpu_memset event may carry no
 * bytes while its runtime call (hipMemcpyWithStream...) has them as "size"
 * under the same correlation. Two more bounded tables pair them the same
 * way; when a table is full, that copy's bytes stay unknown (0).
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"
#include "index/cpath/cpath.h"
#include "index/decode/decode.h"
#include "index/read/format.h"
#include "index/host/host.h"

#define AGG_PENDING      (1u << 15)
#define AGG_DEFAULT_RECS (3u << 16) /* 6 MB of time records */
#define AGG_COLL_RECS    (1u << 14) /* 512 KB of collectives */
#define HAS_SHAPE        (IDX_HAS_GRID | IDX_HAS_BLOCK)
#define HAS_RES          (IDX_HAS_REGS | IDX_HAS_SHMEM)

struct pend_kernel { /* a kernel waiting for its launch event */
  uint32_t shape;
  uint32_t pad;
  int64_t dur_ns;
};

struct pend_launch { /* a launch event waiting for its kernel */
  uint32_t has;
  uint32_t pad;
  int64_t regs, shmem;
  int64_t grid[3], block[3];
};

struct pend_copy { /* a copy without bytes waiting for its runtime call */
  uint32_t kind;   /* enum agg_copy_kind */
  uint32_t pad;
};

static int str_ieq(const char *p, const char *lit, size_t n)
{
  size_t i;

  for (i = 0; i < n; i++)
    if (tolower((unsigned char)p[i]) != lit[i])
      return 0;
  return 1;
}

void agg_stat_add(struct agg_stat *s, int64_t dur)
{
  if (s->count == 0 || dur < s->min_ns)
    s->min_ns = dur;
  if (s->count == 0 || dur > s->max_ns)
    s->max_ns = dur;
  s->count++;
  s->total_ns += dur;
}

/* Interns (name, grid, block) as a shape; grows the shape array. */
static int shape_id(struct idx_agg *a, uint32_t name, uint32_t has,
                    const int64_t grid[3], const int64_t block[3],
                    uint32_t *out)
{
  struct agg_shape key;
  int rc;

  memset(&key, 0, sizeof(key));
  key.name = name;
  key.has = has & HAS_SHAPE;
  if (has & IDX_HAS_GRID)
    memcpy(key.grid, grid, sizeof(key.grid));
  if (has & IDX_HAS_BLOCK)
    memcpy(key.block, block, sizeof(key.block));
  /* The key is the identity part of the struct, up to rt_has. */
  if (a->shapes_map.n >= a->shape_cap && key.has != 0 &&
      !agg_map_find(&a->shapes_map, &key, offsetof(struct agg_shape, rt_has),
                    out)) {
    memset(&key, 0, sizeof(key)); /* beyond the cap: the name alone */
    key.name = name;
    a->shapes_folded++;
  }
  rc = agg_map_intern(&a->shapes_map, &key, offsetof(struct agg_shape, rt_has),
                      out);
  if (rc < 0)
    return rc;
  if (agg_grow(&a->shapes, &a->shapes_cap, *out, sizeof(*a->shapes)) != 0)
    return TR_ENOMEM;
  if (rc == 1)
    a->shapes[*out] = key;
  return 0;
}

/* The id of a kernel name, folded beyond the cap (agg_fold.c); kernel:
 * the name of a kernel event, counted among the folded names. */
static int name_id(struct idx_agg *a, struct idx_str s, int kernel,
                   uint32_t *out)
{
  int rc = agg_fold_intern(&a->kfold, &a->names, s, kernel, out);

  if (rc < 0)
    return rc;
  return agg_grow(&a->kernels, &a->kernels_cap, *out, sizeof(*a->kernels));
}

/* Adds dur (or a whole stat) to the launch row (shape, regs, shared). */
static int launch_add(struct idx_agg *a, uint32_t shape, uint32_t has,
                      int64_t regs, int64_t shmem, const struct agg_stat *s)
{
  struct agg_launch key, *l;
  uint32_t id;
  int rc;

  memset(&key, 0, sizeof(key));
  key.shape = shape;
  key.has = has & HAS_RES;
  key.regs = (has & IDX_HAS_REGS) ? regs : 0;
  key.shmem = (has & IDX_HAS_SHMEM) ? shmem : 0;
  if (a->launches_map.n >= a->shape_cap && key.has != 0 &&
      !agg_map_find(&a->launches_map, &key, offsetof(struct agg_launch, s),
                    &id)) {
    key.has = 0; /* beyond the cap: the shape alone */
    key.regs = key.shmem = 0;
    a->launches_folded += (uint64_t)s->count;
  }
  rc = agg_map_intern(&a->launches_map, &key, offsetof(struct agg_launch, s),
                      &id);
  if (rc < 0)
    return rc;
  if (agg_grow(&a->launches, &a->launches_cap, id, sizeof(*a->launches)))
    return TR_ENOMEM;
  l = &a->launches[id];
  if (rc == 1)
    *l = key;
  if (l->s.count == 0 || s->min_ns < l->s.min_ns)
    l->s.min_ns = s->min_ns;
  if (l->s.count == 0 || s->max_ns > l->s.max_ns)
    l->s.max_ns = s->max_ns;
  l->s.count += s->count;
  l->s.total_ns += s->total_ns;
  return 0;
}

static int launch_add_one(struct idx_agg *a, uint32_t shape, uint32_t has,
                          int64_t regs, int64_t shmem, int64_t dur)
{
  struct agg_stat s = { 1, dur, dur, dur };

  return launch_add(a, shape, has, regs, shmem, &s);
}

/* A kernel met its launch event: the launch fills what the kernel lacks
 * (grid/block on ROCm 6.2, shared memory and registers on every ROCm). */
static int launch_joined(struct idx_agg *a, uint32_t shape,
                         const struct pend_launch *pl, int64_t dur)
{
  struct agg_shape *s = &a->shapes[shape];
  int64_t grid[3], block[3];
  uint32_t has = s->has;
  int rc;

  memcpy(grid, s->grid, sizeof(grid));
  memcpy(block, s->block, sizeof(block));
  if (!(has & IDX_HAS_GRID) && (pl->has & IDX_HAS_GRID)) {
    memcpy(grid, pl->grid, sizeof(grid));
    has |= IDX_HAS_GRID;
  }
  if (!(has & IDX_HAS_BLOCK) && (pl->has & IDX_HAS_BLOCK)) {
    memcpy(block, pl->block, sizeof(block));
    has |= IDX_HAS_BLOCK;
  }
  if (has != s->has &&
      (rc = shape_id(a, s->name, has, grid, block, &shape)) != 0)
    return rc;
  return launch_add_one(a, shape, pl->has, pl->regs, pl->shmem, dur);
}

/* A time record of ev; aux is the correlation (-1: none) unless given. */
static int record_aux(struct idx_agg *a, const struct idx_event *ev,
                      enum agg_rec_type type, uint32_t id, int64_t aux)
{
  struct agg_rec r = { ev->ts_ns, ev->dur_ns, aux, type, id };

  return agg_runs_add(&a->runs, &r);
}

static int record(struct idx_agg *a, const struct idx_event *ev,
                  enum agg_rec_type type, uint32_t id)
{
  return record_aux(a, ev, type, id,
                    (ev->has & IDX_HAS_CORR) ? ev->correlation : -1);
}

static int on_kernel(struct idx_agg *a, const struct idx_doc *doc,
                     const struct idx_event *ev)
{
  struct pend_launch pl;
  struct pend_kernel pk;
  struct agg_kernel *k;
  uint32_t nid, shape;
  int rc;

  if ((rc = name_id(a, ev->name, 1, &nid)) != 0 ||
      (rc = shape_id(a, nid, ev->has, ev->grid, ev->block, &shape)) != 0)
    return rc;
  a->ev_name = nid;
  k = &a->kernels[nid];
  if (k->s.count == 0 || ev->ts_ns < k->first_ns)
    k->first_ns = ev->ts_ns;
  if (k->s.count == 0 || ev->ts_ns > k->last_ns)
    k->last_ns = ev->ts_ns;
  k->is_kernel = 1;
  agg_stat_add(&k->s, ev->dur_ns);
  if (agg_hist_add(&k->hist, ev->dur_ns) != 0)
    return TR_ENOMEM;
  a->kernel_events++;
  a->kernel_ns += ev->dur_ns;
  if ((rc = record(a, ev, AGG_REC_KERNEL, shape)) != 0 ||
      (rc = agg_coll_seen(a, ev, nid, shape)) != 0)
    return rc;
  /* CUDA and mcTracer kernels describe themselves; ROCm ones need the
   * launch event. */
  if (!idx_format_get(doc->format)->launch_join || (ev->has & IDX_HAS_SHMEM) ||
      !(ev->has & IDX_HAS_CORR))
    return launch_add_one(a, shape, ev->has, ev->registers, ev->shared_bytes,
                          ev->dur_ns);
  if (agg_corr_take(&a->rt_pending, ev->correlation, &pl))
    return launch_joined(a, shape, &pl, ev->dur_ns);
  pk.shape = shape;
  pk.pad = 0;
  pk.dur_ns = ev->dur_ns;
  if (agg_corr_put(&a->k_pending, ev->correlation, &pk) == 0)
    return 0;
  agg_stat_add(&a->shapes[shape].unresolved, ev->dur_ns);
  return 0;
}

/* Remembers what a launch of (args.kernel, grid, block) said, for the
 * fallback join. */
static int launch_shape_note(struct idx_agg *a, const struct idx_event *ev,
                             const struct pend_launch *pl)
{
  struct agg_shape *s;
  uint32_t nid, shape;
  int rc;

  if (ev->kernel.p == NULL)
    return 0;
  if ((rc = name_id(a, ev->kernel, 0, &nid)) != 0 ||
      (rc = shape_id(a, nid, pl->has, pl->grid, pl->block, &shape)) != 0)
    return rc;
  s = &a->shapes[shape];
  if (!s->rt_seen) {
    s->rt_seen = 1;
    s->rt_has = pl->has & HAS_RES;
    s->rt_regs = pl->regs;
    s->rt_shmem = pl->shmem;
  } else if (s->rt_has != (pl->has & HAS_RES) || s->rt_regs != pl->regs ||
             s->rt_shmem != pl->shmem) {
    s->rt_conflict = 1;
  }
  return 0;
}

static int on_launch(struct idx_agg *a, const struct idx_event *ev)
{
  struct pend_launch pl;
  struct pend_kernel pk;
  int rc;

  memset(&pl, 0, sizeof(pl));
  pl.has = ev->has & (HAS_RES | HAS_SHAPE);
  pl.regs = (ev->has & IDX_HAS_REGS) ? ev->registers : 0;
  pl.shmem = (ev->has & IDX_HAS_SHMEM) ? ev->shared_bytes : 0;
  if (ev->has & IDX_HAS_GRID)
    memcpy(pl.grid, ev->grid, sizeof(pl.grid));
  if (ev->has & IDX_HAS_BLOCK)
    memcpy(pl.block, ev->block, sizeof(pl.block));
  if ((rc = launch_shape_note(a, ev, &pl)) != 0)
    return rc;
  if (agg_corr_take(&a->k_pending, ev->correlation, &pk))
    return launch_joined(a, pk.shape, &pl, pk.dur_ns);
  /* A full table drops the launch: the shape fallback still has it. */
  (void)agg_corr_put(&a->rt_pending, ev->correlation, &pl);
  return 0;
}

static void on_runtime_copy(struct idx_agg *a, const struct idx_event *ev);

/* AGG_CALL_SYNC for a call that holds the host until the device is done:
 * *Synchronize* (cuda/hip/mc Device, Stream, Event), or a copy call that is
 * not *Async (hipMemcpy, cudaMemcpy, hipMemcpyWithStream, mcMemcpy...). */
static uint32_t call_flags(struct idx_str n)
{
  static const char *const words[] = { "Synchronize", "Memcpy", "memcpy",
                                       "Async" };
  int has[4] = { 0, 0, 0, 0 };

  for (size_t w = 0; n.p != NULL && w < 4; w++) {
    size_t k = strlen(words[w]);

    for (size_t i = 0; !has[w] && i + k <= n.n; i++)
      has[w] = memcmp(n.p + i, words[w], k) == 0;
  }
  return has[0] || ((has[1] || has[2]) && !has[3]) ? AGG_CALL_SYNC : 0;
}

/* A host call the time pass needs: one that may issue device work (it has
 * a correlation) or that waits for the device. */
static int record_call(struct idx_agg *a, const struct idx_event *ev)
{
  uint32_t flags = call_flags(ev->name);

  if (flags == 0 && !(ev->has & IDX_HAS_CORR))
    return 0;
  return record(a, ev, AGG_REC_CALL, flags);
}

static int on_runtime(struct idx_agg *a, const struct idx_doc *doc,
                      const struct idx_event *ev)
{
  struct agg_named *r;
  uint32_t id;
  int rc;

  rc = agg_fold_intern(&a->rfold, &a->rt_map, ev->name, 1, &id);
  if (rc < 0 ||
      agg_grow(&a->runtime, &a->runtime_cap, id, sizeof(*a->runtime)) != 0)
    return TR_ENOMEM;
  a->ev_name = id;
  r = &a->runtime[id];
  agg_stat_add(&r->s, ev->dur_ns);
  if (agg_hist_add(&r->hist, ev->dur_ns) != 0)
    return TR_ENOMEM;
  if ((rc = record_call(a, ev)) != 0)
    return rc;
  if (!idx_format_get(doc->format)->launch_join || !(ev->has & IDX_HAS_CORR))
    return 0;
  if (ev->kernel.p != NULL || (ev->has & HAS_RES))
    return on_launch(a, ev);
  if (ev->has & IDX_HAS_BYTES)
    on_runtime_copy(a, ev);
  return 0;
}

/* Copy direction from args.kind ("DtoD"), else from the name: kineto
 * "Memcpy HtoD (Pageable -> Device)", mcTracer "memcpy DTOH(...)". */
static enum agg_copy_kind copy_kind(const struct idx_event *ev)
{
  static const char *const dirs[] = { "htod", "dtoh", "dtod", "htoh", "ptop" };
  const char *p = NULL;
  size_t i;

  if (ev->kind.p != NULL && ev->kind.n == 4)
    p = ev->kind.p;
  else if (ev->name.n >= 11 && str_ieq(ev->name.p, "memcpy ", 7))
    p = ev->name.p + 7;
  for (i = 0; p != NULL && i < 5; i++)
    if (str_ieq(p, dirs[i], 4))
      return (enum agg_copy_kind)i;
  return AGG_COPY_OTHER;
}

static void copy_bytes_add(struct agg_copy *c, int64_t bytes)
{
  c->bytes += bytes;
  if (bytes > c->max_bytes)
    c->max_bytes = bytes;
}

/* A copy without bytes takes them from its runtime call, now or when the
 * call comes (see the copy join above). */
static int64_t copy_bytes(struct idx_agg *a, const struct idx_event *ev,
                          enum agg_copy_kind kind)
{
  struct pend_copy pc = { (uint32_t)kind, 0 };
  int64_t bytes = 0;

  if (ev->has & IDX_HAS_BYTES)
    return ev->bytes;
  if (!(ev->has & IDX_HAS_CORR))
    return 0;
  if (agg_corr_take(&a->rtc_pending, ev->correlation, &bytes))
    return bytes;
  (void)agg_corr_put(&a->c_pending, ev->correlation, &pc);
  return 0;
}

static int on_copy(struct idx_agg *a, const struct idx_event *ev, int memset)
{
  enum agg_copy_kind kind = memset ? AGG_COPY_MEMSET : copy_kind(ev);
  struct agg_copy *c = &a->copies[kind];

  agg_stat_add(&c->s, ev->dur_ns);
  copy_bytes_add(c, copy_bytes(a, ev, kind));
  return record(a, ev, memset ? AGG_REC_MEMSET : AGG_REC_COPY, kind);
}

/* A runtime copy call's bytes ("size"), for its device copy. */
static void on_runtime_copy(struct idx_agg *a, const struct idx_event *ev)
{
  struct pend_copy pc;

  if (agg_corr_take(&a->c_pending, ev->correlation, &pc))
    copy_bytes_add(&a->copies[pc.kind], ev->bytes);
  else
    (void)agg_corr_put(&a->rtc_pending, ev->correlation, &ev->bytes);
}

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
 * (agg_json.c drops it otherwise). */
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
static int on_label(struct idx_agg *a, const struct idx_event *ev, int side)
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
      (rc = agg_step_seen(&a->steps[side][kind], ev, seq, bs,
                          bs >= 0 && graph_bs > bs, tok)) != 0)
    return rc;
  return record_aux(a, ev,
                    side == AGG_SIDE_GPU ? AGG_REC_LABEL : AGG_REC_LABEL_CPU,
                    kind, seq);
}

/* mcTracer names the device in M metadata on the device lane (pid 2).
 * M events come before the format is settled: the name is kept, and used
 * only when the file turns out to be mcTracer (agg_json.c). */
static void on_meta(struct idx_agg *a, const struct idx_event *ev)
{
  size_t n = ev->arg_name.n;

  if (a->device[0] != '\0' || ev->arg_name.p == NULL || n == 0 ||
      !(ev->has & IDX_HAS_PID) || ev->pid != 2)
    return;
  if (n >= sizeof(a->device))
    n = sizeof(a->device) - 1;
  memcpy(a->device, ev->arg_name.p, n);
  a->device[n] = '\0';
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

/* The accounting of one X event of class cls; the critical path's
 * (index/cpath/cpath.c) after it. */
static int account(struct idx_agg *a, const struct idx_doc *doc,
                   const struct idx_event *ev, enum idx_class cls)
{
  int rc;

  switch (cls) {
  case IDX_CLASS_KERNEL: rc = on_kernel(a, doc, ev); break;
  case IDX_CLASS_COPY: rc = on_copy(a, ev, 0); break;
  case IDX_CLASS_MEMSET: rc = on_copy(a, ev, 1); break;
  case IDX_CLASS_RUNTIME: rc = on_runtime(a, doc, ev); break;
  case IDX_CLASS_LABEL_CPU: rc = on_label(a, ev, AGG_SIDE_CPU); break;
  case IDX_CLASS_LABEL_GPU: rc = on_label(a, ev, AGG_SIDE_GPU); break;
  default: rc = 0; break;
  }
  return rc != 0 ? rc : agg_cpath_event(a, doc, ev, cls);
}

int idx_agg_event(void *ud, const struct idx_doc *doc,
                  const struct idx_event *ev)
{
  struct idx_agg *a = ud;
  enum idx_class cls;
  int rc;

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
  if (ev->ph != 'X')
    return 0;
  cls = idx_format_get(doc->format)->classify(ev);
  if ((rc = account(a, doc, ev, cls)) != 0 || a->dec == NULL ||
      !dec_wants(ev, cls))
    return rc;
  return dec_event(a->dec, ev, cls);
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
  a->host = calloc(1, sizeof(*a->host));
  a->cpath = calloc(1, sizeof(*a->cpath));
  if (a->host == NULL || a->cpath == NULL || agg_host_init(a->host, &a->spill) != 0 ||
      agg_cpath_init(a->cpath, &a->spill) != 0 ||
      agg_runs_init(&a->runs, rec_cap ? rec_cap : AGG_DEFAULT_RECS,
                    &a->spill) != 0 ||
      agg_runs_init(&a->coll_runs,
                    rec_cap && rec_cap < AGG_COLL_RECS ? rec_cap
                                                       : AGG_COLL_RECS,
                    &a->spill) != 0 ||
      agg_corr_init(&a->k_pending, sizeof(struct pend_kernel), AGG_PENDING) !=
          0 ||
      agg_corr_init(&a->rt_pending, sizeof(struct pend_launch), AGG_PENDING) !=
          0 ||
      agg_corr_init(&a->c_pending, sizeof(struct pend_copy), AGG_PENDING) !=
          0 ||
      agg_corr_init(&a->rtc_pending, sizeof(int64_t), AGG_PENDING) != 0) {
    idx_agg_free(a);
    return TR_ENOMEM;
  }
  return 0;
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
  size_t i;

  if (a == NULL)
    return;
  for (i = 0; i < a->names.n; i++)
    agg_hist_free(&a->kernels[i].hist);
  for (i = 0; i < a->rt_map.n; i++)
    agg_hist_free(&a->runtime[i].hist);
  for (i = 0; i < 2 * AGG_MAX_STEP_KINDS; i++)
    agg_step_free(&a->steps[i / AGG_MAX_STEP_KINDS][i % AGG_MAX_STEP_KINDS]);
  agg_labels_free(&a->labels);
  agg_families_free(a);
  agg_timeline_free(&a->tl);
  agg_samples_free(&a->samples);
  agg_hist_free(&a->delay_hist);
  agg_fold_free(&a->kfold);
  agg_fold_free(&a->rfold);
  free(a->kernels);
  free(a->shapes);
  free(a->launches);
  free(a->runtime);
  agg_map_free(&a->names);
  agg_map_free(&a->shapes_map);
  agg_map_free(&a->launches_map);
  agg_map_free(&a->rt_map);
  agg_map_free(&a->kinds_map);
  agg_corr_free(&a->k_pending);
  agg_corr_free(&a->rt_pending);
  agg_corr_free(&a->c_pending);
  agg_corr_free(&a->rtc_pending);
  agg_runs_free(&a->runs);
  agg_runs_free(&a->coll_runs);
  agg_map_free(&a->lanes);
  free(a->krows);
  json_decref(a->phases);
  if (a->host != NULL)
    agg_host_free(a->host);
  if (a->cpath != NULL)
    agg_cpath_free(a->cpath);
  free(a->host);
  free(a->cpath);
  memset(a, 0, sizeof(*a));
}

static void park_pending(void *ud, const void *val)
{
  struct idx_agg *a = ud;
  const struct pend_kernel *pk = val;

  agg_stat_add(&a->shapes[pk->shape].unresolved, pk->dur_ns);
}

int idx_agg_resolve(struct idx_agg *a)
{
  struct agg_shape *s;
  uint32_t i;
  int rc;

  agg_corr_drain(&a->k_pending, park_pending, a);
  for (i = 0; i < a->shapes_map.n; i++) {
    s = &a->shapes[i];
    if (s->unresolved.count == 0)
      continue;
    rc = launch_add(a, i, s->rt_conflict ? 0 : s->rt_has, s->rt_regs,
                    s->rt_shmem, &s->unresolved);
    if (rc != 0)
      return rc;
    memset(&s->unresolved, 0, sizeof(s->unresolved));
  }
  return 0;
}
