/*
 * The device pass (agg.h): kernels, their launch shapes and launches,
 * copies and memsets, and the host runtime API calls, one event at a time
 * (the kernels, launches, categories, memcpy and runtime tables). It makes
 * the rank's vocabulary of kernel names, launch shapes and host API names
 * (struct idx_agg) and the time records of device work and of the calls
 * that issue or wait for it.
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

#include "index/agg/agg_int.h"

#define AGG_PENDING (1u << 15)
#define HAS_SHAPE   (IDX_HAS_GRID | IDX_HAS_BLOCK)
#define HAS_RES     (IDX_HAS_REGS | IDX_HAS_SHMEM)

static const char *const copy_kind_names[AGG_COPY_KINDS] = {
  "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other", "memset"
};

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
    a->device->shapes_folded++;
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

/* The id of a kernel name of hash key (0: none known), folded beyond
 * the cap (agg_fold.c); kernel: the name of a kernel event, counted among
 * the folded names. */
static int name_id(struct idx_agg *a, struct idx_str s, uint64_t key,
                   int kernel, uint32_t *out)
{
  int rc = agg_seen_fold(a->device->kseen, key, &a->kfold, &a->names, s, kernel,
                         out);

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
  if (a->device->launches_map.n >= a->shape_cap && key.has != 0 &&
      !agg_map_find(&a->device->launches_map, &key,
                    offsetof(struct agg_launch, s), &id)) {
    key.has = 0; /* beyond the cap: the shape alone */
    key.regs = key.shmem = 0;
    a->device->launches_folded += (uint64_t)s->count;
  }
  rc = agg_map_intern(&a->device->launches_map, &key,
                      offsetof(struct agg_launch, s), &id);
  if (rc < 0)
    return rc;
  if (agg_grow(&a->device->launches, &a->device->launches_cap, id,
               sizeof(*a->device->launches)))
    return TR_ENOMEM;
  l = &a->device->launches[id];
  if (rc == 1)
    *l = key;
  if (l->s.count == 0 || s->min_ns < l->s.min_ns)
    l->s.min_ns = s->min_ns;
  if (l->s.count == 0 || s->max_ns > l->s.max_ns)
    l->s.max_ns = s->max_ns;
  l->s.count += s->count;
  l->s.total_ns = tr_sat_add(l->s.total_ns, s->total_ns);
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

/* A time record of ev with its correlation (-1: none). */
static int record(struct idx_agg *a, const struct idx_event *ev,
                  enum agg_rec_type type, uint32_t id)
{
  return agg_record(a, ev, type, id, agg_corr_of(ev));
}

static int on_kernel(struct idx_agg *a, const struct idx_doc *doc,
                     const struct idx_event *ev)
{
  struct pend_launch pl;
  struct pend_kernel pk;
  struct agg_kernel *k;
  uint32_t nid, shape;
  int rc;

  if ((rc = name_id(a, ev->name, agg_ev_hash(a, ev), 1, &nid)) != 0 ||
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
  a->device->kernel_events++;
  a->kernel_ns = tr_sat_add(a->kernel_ns, ev->dur_ns);
  a->ev_shape = shape;
  if ((rc = record(a, ev, AGG_REC_KERNEL, shape)) != 0)
    return rc;
  /* CUDA and mcTracer kernels describe themselves; ROCm ones need the
   * launch event. */
  if (!idx_format_get(doc->format)->launch_join || (ev->has & IDX_HAS_SHMEM) ||
      !(ev->has & IDX_HAS_CORR))
    return launch_add_one(a, shape, ev->has, ev->registers, ev->shared_bytes,
                          ev->dur_ns);
  if (agg_corr_take(&a->device->rt_pending, ev->correlation, &pl))
    return launch_joined(a, shape, &pl, ev->dur_ns);
  pk.shape = shape;
  pk.pad = 0;
  pk.dur_ns = ev->dur_ns;
  if (agg_corr_put(&a->device->k_pending, ev->correlation, &pk) == 0)
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
  if ((rc = name_id(a, ev->kernel, 0, 0, &nid)) != 0 ||
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
  if (agg_corr_take(&a->device->k_pending, ev->correlation, &pk))
    return launch_joined(a, pk.shape, &pl, pk.dur_ns);
  /* A full table drops the launch: the shape fallback still has it. */
  (void)agg_corr_put(&a->device->rt_pending, ev->correlation, &pl);
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
 * a correlation) or that waits for the device. Its flags are its name's,
 * worked out at the name's first call (but the fold row's: many names). */
static int record_call(struct idx_agg *a, const struct idx_event *ev,
                       uint32_t id)
{
  struct agg_named *r = &a->device->runtime[id];
  uint32_t flags;

  if (id == a->rfold.id) {
    flags = call_flags(ev->name);
  } else if (r->call_known) {
    flags = r->call;
  } else {
    flags = r->call = call_flags(ev->name);
    r->call_known = 1;
  }

  if (flags == 0 && !(ev->has & IDX_HAS_CORR))
    return 0;
  return record(a, ev, AGG_REC_CALL, flags);
}

static int on_runtime(struct idx_agg *a, const struct idx_doc *doc,
                      const struct idx_event *ev)
{
  struct agg_named *r;
  uint32_t id;
  int rc = agg_seen_fold(a->device->rseen, agg_ev_hash(a, ev), &a->rfold,
                         &a->rt_map, ev->name, 1, &id);

  if (rc < 0 || agg_grow(&a->device->runtime, &a->device->runtime_cap, id,
                         sizeof(*a->device->runtime)) != 0)
    return TR_ENOMEM;
  a->ev_name = id;
  r = &a->device->runtime[id];
  agg_stat_add(&r->s, ev->dur_ns);
  if (agg_hist_add(&r->hist, ev->dur_ns) != 0)
    return TR_ENOMEM;
  if ((rc = record_call(a, ev, id)) != 0)
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
  c->bytes = tr_sat_add(c->bytes, bytes);
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
  if (agg_corr_take(&a->device->rtc_pending, ev->correlation, &bytes))
    return bytes;
  (void)agg_corr_put(&a->device->c_pending, ev->correlation, &pc);
  return 0;
}

static int on_copy(struct idx_agg *a, const struct idx_event *ev, int memset)
{
  enum agg_copy_kind kind = memset ? AGG_COPY_MEMSET : copy_kind(ev);
  struct agg_copy *c = &a->device->copies[kind];

  agg_stat_add(&c->s, ev->dur_ns);
  copy_bytes_add(c, copy_bytes(a, ev, kind));
  return record(a, ev, memset ? AGG_REC_MEMSET : AGG_REC_COPY, kind);
}

/* A runtime copy call's bytes ("size"), for its device copy. */
static void on_runtime_copy(struct idx_agg *a, const struct idx_event *ev)
{
  struct pend_copy pc;

  if (agg_corr_take(&a->device->c_pending, ev->correlation, &pc))
    copy_bytes_add(&a->device->copies[pc.kind], ev->bytes);
  else
    (void)agg_corr_put(&a->device->rtc_pending, ev->correlation, &ev->bytes);
}

static void park_pending(void *ud, const void *val)
{
  struct idx_agg *a = ud;
  const struct pend_kernel *pk = val;

  agg_stat_add(&a->shapes[pk->shape].unresolved, pk->dur_ns);
}

/* End of events: kernels still waiting for a launch event take the shape
 * fallback (see the top of this file). 0 or TR_ENOMEM. */
static int resolve(struct idx_agg *a)
{
  struct agg_shape *s;
  uint32_t i;
  int rc;

  agg_corr_drain(&a->device->k_pending, park_pending, a);
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

/* ---- the pass's hooks ---- */

int agg_device_new(struct idx_agg *a)
{
  struct agg_device *d = calloc(1, sizeof(*d));

  if ((a->device = d) == NULL ||
      (d->kseen = calloc(2 * AGG_SEEN, sizeof(*d->kseen))) == NULL ||
      agg_corr_init(&d->k_pending, sizeof(struct pend_kernel), AGG_PENDING) !=
          0 ||
      agg_corr_init(&d->rt_pending, sizeof(struct pend_launch), AGG_PENDING) !=
          0 ||
      agg_corr_init(&d->c_pending, sizeof(struct pend_copy), AGG_PENDING) !=
          0 ||
      agg_corr_init(&d->rtc_pending, sizeof(int64_t), AGG_PENDING) != 0)
    return TR_ENOMEM;
  d->rseen = d->kseen + AGG_SEEN;
  return 0;
}

/* Frees the pass's state and the vocabulary it made. */
void agg_device_free(struct idx_agg *a)
{
  struct agg_device *d = a->device;

  for (size_t i = 0; i < a->names.n; i++)
    agg_hist_free(&a->kernels[i].hist);
  for (size_t i = 0; d != NULL && i < a->rt_map.n; i++)
    agg_hist_free(&d->runtime[i].hist);
  agg_fold_free(&a->kfold);
  agg_fold_free(&a->rfold);
  free(a->kernels);
  free(a->shapes);
  agg_map_free(&a->names);
  agg_map_free(&a->shapes_map);
  agg_map_free(&a->rt_map);
  if (d == NULL)
    return;
  free(d->launches);
  free(d->runtime);
  free(d->krows);
  free(d->kseen);
  agg_map_free(&d->launches_map);
  agg_corr_free(&d->k_pending);
  agg_corr_free(&d->rt_pending);
  agg_corr_free(&d->c_pending);
  agg_corr_free(&d->rtc_pending);
  free(d);
  a->device = NULL;
}

int agg_device_event(struct idx_agg *a, const struct idx_doc *doc,
                     const struct idx_event *ev, enum idx_class cls)
{
  switch (cls) {
  case IDX_CLASS_KERNEL: return on_kernel(a, doc, ev);
  case IDX_CLASS_COPY: return on_copy(a, ev, 0);
  case IDX_CLASS_MEMSET: return on_copy(a, ev, 1);
  case IDX_CLASS_RUNTIME: return on_runtime(a, doc, ev);
  default: return 0;
  }
}

static int fill_kernel(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  agg_row_set(r, a->kernels[id].s.total_ns, &a->names.keys[id]);
  return a->kernels[id].is_kernel;
}

/* The names folded beyond their caps counted, the launch fallback taken,
 * and the kernels in their table's order: the heaviest (largest total,
 * ties: first name) cuts phases (agg_phases.c). */
int agg_device_seal(struct idx_agg *a, struct tr_err *err)
{
  struct agg_device *d = a->device;
  int rc;

  if ((rc = agg_fold_end(&a->kfold, &a->names)) != 0 ||
      (rc = agg_fold_end(&a->rfold, &a->rt_map)) != 0)
    return tr_err_set(err, rc, "", "%s: name spill: %s", a->path,
                      tr_strerror(rc));
  if (resolve(a) != 0 || (d->krows = agg_sorted_rows(a->names.n, &d->nkrows,
                                                     fill_kernel, a)) == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "%s: out of memory", a->path);
  a->heavy = d->nkrows > 0 ? d->krows[0].id : UINT32_MAX;
  return 0;
}

/* device_ns, the categories' denominator: kernels, copies and memsets. */
static int64_t device_ns_of(const struct idx_agg *a)
{
  int64_t ns = a->kernel_ns;

  for (int i = 0; i < AGG_COPY_KINDS; i++)
    ns = tr_sat_add(ns, a->device->copies[i].s.total_ns);
  return ns;
}

static void warn(json_t *w, const char *code, const char *msg)
{
  json_array_append_new(w,
                        json_pack("{s:s,s:s}", "code", code, "message", msg));
}

/* Names cut and escaped (agg_name.c). */
static void name_warnings(const struct idx_agg *a, json_t *w)
{
  char msg[384];

  if (a->kfold.cut + a->rfold.cut + a->texts_cut > 0) {
    snprintf(msg, sizeof(msg),
             "%llu kernel names, %llu host API names and %llu demangled "
             "names or families were longer than %u bytes (demangled "
             "names %u): each keeps its first bytes and ends in \"...#\" "
             "and a hash of the whole, so that distinct names stay distinct",
             (unsigned long long)a->kfold.cut, (unsigned long long)a->rfold.cut,
             (unsigned long long)a->texts_cut, AGG_NAME_MAX, AGG_DEMANGLED_MAX);
    warn(w, "names_cut", msg);
  }
  if (a->kfold.escaped + a->rfold.escaped > 0) {
    snprintf(msg, sizeof(msg),
             "%llu kernel names and %llu host API names held control "
             "characters (a NUL, a newline...): they are written as JSON "
             "escapes (\\u0000, \\n)",
             (unsigned long long)a->kfold.escaped,
             (unsigned long long)a->rfold.escaped);
    warn(w, "names_escaped", msg);
  }
}

/* The summary's warnings: names folded beyond the cap (agg_fold.c),
 * launch shapes beyond theirs, names cut or escaped. */
static void fold_warnings(const struct idx_agg *a, json_t *w)
{
  const struct agg_fold *folds[2] = { &a->kfold, &a->rfold };
  static const char *const what[2] = { "kernel", "host API" };
  const struct agg_device *d = a->device;
  char msg[384], cap[96];

  for (int i = 0; i < 2; i++) {
    if (folds[i]->id == UINT32_MAX)
      continue;
    snprintf(cap, sizeof(cap), "%u (max_kernel_names)%s", folds[i]->cap,
             folds[i]->by_bytes ? " or of 16 MiB of name text" : "");
    snprintf(msg, sizeof(msg),
             "%llu distinct %s names beyond the cap of %s are folded into "
             "one row \"%s\": its figures are their %llu events summed",
             (unsigned long long)folds[i]->distinct, what[i], cap,
             folds[i]->name, (unsigned long long)folds[i]->events);
    warn(w, i ? "runtime_names_capped" : "kernel_names_capped", msg);
  }
  if (d->shapes_folded > 0 || d->launches_folded > 0) {
    snprintf(msg, sizeof(msg),
             "beyond the cap of %u distinct launch shapes and launch rows "
             "(max_kernel_names), %llu kernels are counted without "
             "their grid and block and %llu without their registers and "
             "shared memory: their kernels' rows and totals still hold them",
             a->shape_cap, (unsigned long long)d->shapes_folded,
             (unsigned long long)d->launches_folded);
    warn(w, "launch_shapes_capped", msg);
  }
  name_warnings(a, w);
}

void agg_device_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  const struct agg_device *d = a->device;
  const struct agg_copy *ms = &d->copies[AGG_COPY_MEMSET];

  for (int i = 0; i < AGG_COPY_MEMSET; i++) {
    r->memcpy_count += (int64_t)d->copies[i].s.count;
    r->memcpy_bytes = tr_sat_add(r->memcpy_bytes, d->copies[i].bytes);
    r->memcpy_ns = tr_sat_add(r->memcpy_ns, d->copies[i].s.total_ns);
  }
  r->kernel_events = (int64_t)d->kernel_events;
  r->kernel_ns = a->kernel_ns;
  /* Every distinct name: those kept, and those folded. */
  r->distinct_kernels =
      (int64_t)d->nkrows -
      (a->kfold.id != UINT32_MAX && a->kernels[a->kfold.id].is_kernel) +
      (int64_t)a->kfold.distinct;
  r->memset_count = (int64_t)ms->s.count;
  r->memset_ns = ms->s.total_ns;
  r->device_ns = device_ns_of(a);
  for (uint32_t i = 0; i < a->rt_map.n; i++) {
    r->runtime_events += (int64_t)d->runtime[i].s.count;
    r->runtime_ns = tr_sat_add(r->runtime_ns, d->runtime[i].s.total_ns);
  }
  r->kernel_names_folded = (int64_t)a->kfold.distinct;
  r->runtime_names_folded = (int64_t)a->rfold.distinct;
  fold_warnings(a, r->warnings);
}

/* ---- the tables ---- */

static struct agg_opt opt(int set, int64_t v)
{
  struct agg_opt o = { set, v };

  return o;
}

void agg_kernel_rows(struct idx_agg *a, struct agg_out *o)
{
  const struct agg_row *rows = a->device->krows;
  static const struct agg_cols none;

  AGG_SUM_FILLS(TR_SUM_KERNEL, 21);
  for (size_t i = 0; i < a->device->nkrows; i++) {
    uint32_t id = rows[i].id, fam = a->name_family[id];
    const struct agg_kernel *k = &a->kernels[id];
    struct agg_sum_kernel r = {
      .name = { rows[i].p, rows[i].n },
      .category = agg_txt(agg_category_name(a->name_cat[id])),
      .count = (int64_t)k->s.count,
      .total_ns = k->s.total_ns,
      .avg_ns = agg_avg(&k->s),
      .min_ns = k->s.min_ns,
      .max_ns = k->s.max_ns,
      .median_ns =
          agg_hist_median(&k->hist, k->s.count, k->s.min_ns, k->s.max_ns),
      .share = agg_share(k->s.total_ns, a->kernel_ns),
      .first_ns = k->first_ns - a->t0_ns,
      .last_ns = k->last_ns - a->t0_ns,
      .family = { a->fam_map.keys[fam].p, a->fam_map.keys[fam].n },
      .demangled = agg_txt(a->demangled[id]),
    };

    AGG_COLS_SET(r, a->kcols != NULL ? a->kcols[id] : none);
    agg_out_kernel(o, &r);
  }
}

static int fill_launch(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;
  const struct agg_launch *l = &a->device->launches[id];

  agg_row_set(r, l->s.total_ns, &a->names.keys[a->shapes[l->shape].name]);
  return l->s.count > 0;
}

void agg_launch_rows(struct idx_agg *a, struct agg_out *o)
{
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_LAUNCH, 10);
  rows = agg_sorted_rows(a->device->launches_map.n, &n, fill_launch, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_launch *l = &a->device->launches[rows[i].id];
    const struct agg_shape *s = &a->shapes[l->shape];
    struct agg_sum_launch r = {
      .name = { rows[i].p, rows[i].n },
      .grid = agg_json_xyz(s->grid, s->has & IDX_HAS_GRID),
      .block = agg_json_xyz(s->block, s->has & IDX_HAS_BLOCK),
      .registers_per_thread = opt(l->has & IDX_HAS_REGS, l->regs),
      .shared_bytes = opt(l->has & IDX_HAS_SHMEM, l->shmem),
      .count = (int64_t)l->s.count,
      .total_ns = l->s.total_ns,
      .avg_ns = agg_avg(&l->s),
      .min_ns = l->s.min_ns,
      .max_ns = l->s.max_ns,
    };

    agg_out_launch(o, &r);
  }
  free(rows);
}

static int fill_runtime(void *ud, uint32_t id, struct agg_row *r)
{
  struct idx_agg *a = ud;

  agg_row_set(r, a->device->runtime[id].s.total_ns, &a->rt_map.keys[id]);
  return 1;
}

void agg_runtime_rows(struct idx_agg *a, struct agg_out *o)
{
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_RUNTIME, 6);
  rows = agg_sorted_rows(a->rt_map.n, &n, fill_runtime, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_named *rt = &a->device->runtime[rows[i].id];
    struct agg_sum_runtime r = {
      .name = { rows[i].p, rows[i].n },
      .count = (int64_t)rt->s.count,
      .total_ns = rt->s.total_ns,
      .avg_ns = agg_avg(&rt->s),
      .median_ns =
          agg_hist_median(&rt->hist, rt->s.count, rt->s.min_ns, rt->s.max_ns),
      .max_ns = rt->s.max_ns,
    };

    agg_out_runtime(o, &r);
  }
  free(rows);
}

static int fill_copy(void *ud, uint32_t id, struct agg_row *r)
{
  const struct agg_copy *c = &((struct idx_agg *)ud)->device->copies[id];

  r->total = c->s.total_ns;
  r->p = copy_kind_names[id];
  r->n = strlen(r->p);
  return c->s.count > 0;
}

void agg_memcpy_rows(struct idx_agg *a, struct agg_out *o)
{
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_MEMCPY, 5);
  rows = agg_sorted_rows(AGG_COPY_KINDS, &n, fill_copy, a);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_copy *c = &a->device->copies[rows[i].id];
    struct agg_sum_memcpy r = {
      .kind = { rows[i].p, rows[i].n },
      .count = (int64_t)c->s.count,
      .total_ns = c->s.total_ns,
      .bytes = c->bytes,
      .max_bytes = c->max_bytes,
    };

    agg_out_memcpy(o, &r);
  }
  free(rows);
}

static int fill_cat(void *ud, uint32_t id, struct agg_row *r)
{
  const struct agg_stat *cats = ud;

  r->total = cats[id].total_ns;
  r->p = agg_category_name((int)id);
  r->n = strlen(r->p);
  return cats[id].count > 0;
}

/* The device time by category: each kernel's, and copies and memsets
 * their own (the category table is over all device events). */
static void categories(const struct idx_agg *a, struct agg_stat *cats)
{
  const struct agg_device *d = a->device;
  struct agg_stat *copy = &cats[agg_category_index("copy")];
  struct agg_stat *mset = &cats[agg_category_index("memset")];

  for (size_t i = 0; i < d->nkrows; i++) {
    const struct agg_kernel *k = &a->kernels[d->krows[i].id];
    struct agg_stat *c = &cats[a->name_cat[d->krows[i].id]];

    c->count += k->s.count;
    c->total_ns = tr_sat_add(c->total_ns, k->s.total_ns);
  }
  for (int i = 0; i < AGG_COPY_MEMSET; i++) {
    copy->count += d->copies[i].s.count;
    copy->total_ns = tr_sat_add(copy->total_ns, d->copies[i].s.total_ns);
  }
  mset->count += d->copies[AGG_COPY_MEMSET].s.count;
  mset->total_ns =
      tr_sat_add(mset->total_ns, d->copies[AGG_COPY_MEMSET].s.total_ns);
}

void agg_category_rows(struct idx_agg *a, struct agg_out *o)
{
  struct agg_stat cats[AGG_NCATEGORIES];
  int64_t device_ns = device_ns_of(a);
  struct agg_row *rows;
  size_t i, n;

  AGG_SUM_FILLS(TR_SUM_CATEGORY, 4);
  memset(cats, 0, sizeof(cats));
  categories(a, cats);
  rows = agg_sorted_rows(AGG_NCATEGORIES, &n, fill_cat, cats);
  for (i = 0; rows != NULL && i < n; i++) {
    const struct agg_stat *c = &cats[rows[i].id];
    struct agg_sum_category r = {
      .category = { rows[i].p, rows[i].n },
      .count = (int64_t)c->count,
      .total_ns = c->total_ns,
      .share = agg_share(c->total_ns, device_ns),
    };

    agg_out_category(o, &r);
  }
  free(rows);
}
