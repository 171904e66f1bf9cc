/*
 * The critical path's event pass and its walk in time order (cpath.h).
 *
 * Event pass: each device record (kernel, copy, memset) and each cuda_sync
 * event becomes a time record of its own stream with its device lane
 * ("device/stream"); the host events go to index/host/host.c.
 *
 * Time pass: the host events and the device records are merged in time
 * order (records by start, sync events by end, as HTA sorts them; host
 * events first on equal times), driven by the main records so that the
 * idle walk's questions (what ran on a thread when the device went idle)
 * find the host stacks at that time.
 *
 * Steps: where the trace has ATOM run labels on the host, each label is a
 * step (its kind the label's); else each ProfilerStep#N; else one step
 * over the whole span ("trace"). A step's window is its label's
 * [start, end]; it holds the CPU ops and runtime calls (of any thread)
 * that start inside it with a duration, the device records their calls
 * launched (however late they run) and the cuda_sync events of its calls
 * (HTA's window, docs/CRITICAL_PATH.md says where traced differs). A step
 * closes, and its path is found (cpath_step.c), once the walk is past its
 * window, every launch call of it has its device record (or a second went
 * by since the window's end), and each stream it ran on has started a
 * later launch's record or stayed idle CP_GRACE_NS after its last one; or
 * when CP_OPEN_STEPS newer steps are open (counted as forced).
 *
 * Launches are joined to their records by correlation through a table
 * indexed by its low bits (ids are sequential): exact while fewer than
 * JOIN_SLOTS launches are in flight.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/cpath/cpath.h"
#include "index/host/host.h"

#define JOIN_SLOTS   (1u << 16)
#define JOIN_STEPS   2          /* steps a launch call is kept for */
#define CP_GRACE_NS  10000000   /* a stream idle this long is done */
#define CP_EXPIRE_NS 1000000000 /* launch calls still without a record */
#define NONE32       UINT32_MAX
#define NO_LANE      UINT16_MAX

/* ---- the event pass ---- */

int agg_cpath_new(struct idx_agg *a)
{
  struct agg_cpath *c = calloc(1, sizeof(*c));

  if ((a->cpath = c) == NULL)
    return TR_ENOMEM;
  c->max_events = CP_MAX_EVENTS;
  /* Room for every kind at once, never moved: the analyst writes a kind's
   * figures while the walk may add kinds (the walk). */
  if ((c->kind = calloc(CP_MAX_KINDS, sizeof(*c->kind))) == NULL ||
      agg_runs_init(&c->dev, 1u << 14, &a->spill) != 0)
    return TR_ENOMEM;
  c->kind_cap = CP_MAX_KINDS;
  agg_runs_window(&c->dev, 1u << 13);
  return 0;
}

/* The lane of a device event: its (device, stream) as a key of 16 bytes
 * (agg_cpath_lane_name() writes it "device/stream"); NO_LANE beyond. The
 * last one is cached: records come in runs of one stream. */
static int lane_of(struct agg_cpath *c, int64_t device, int64_t stream,
                   uint16_t *out)
{
  int64_t key[2] = { device, stream };
  uint32_t id;
  int rc;

  if (c->lanes.n > 0 && key[0] == c->last_lane[0] &&
      key[1] == c->last_lane[1]) {
    *out = c->last_lane_id;
    return 0;
  }
  if (c->lanes.n >= NO_LANE &&
      !agg_map_find(&c->lanes, key, sizeof(key), &id)) {
    *out = NO_LANE;
    return 0;
  }
  if ((rc = agg_map_intern(&c->lanes, key, sizeof(key), &id)) < 0)
    return rc;
  c->last_lane[0] = device;
  c->last_lane[1] = stream;
  c->last_lane_id = *out = (uint16_t)id;
  return 0;
}

void agg_cpath_lane_name(const struct agg_cpath *c, uint16_t lane, char *buf,
                         size_t size)
{
  int64_t key[2] = { -1, -1 };

  if (lane < c->lanes.n)
    memcpy(key, c->lanes.keys[lane].p, sizeof(key));
  snprintf(buf, size, "%lld/%lld", (long long)key[0], (long long)key[1]);
}

static int64_t ev_device(const struct idx_event *ev)
{
  if (ev->has & IDX_HAS_DEVICE)
    return ev->device;
  return (ev->has & IDX_HAS_PID) ? ev->pid : -1;
}

static int64_t ev_stream(const struct idx_event *ev)
{
  if (ev->has & IDX_HAS_STREAM)
    return ev->stream;
  return (ev->has & IDX_HAS_TID) ? ev->tid : -1;
}

/* Device record packing: type the class (0 kernel, 1 copy, 2 memset),
 * aux (correlation + 1) << 16 | lane, id the kernel name or copy kind.
 * Sync events: start_ns their end (HTA's order), type 8 + kind | (wait
 * lane + 1) << 8, aux as records, id the awaited record's correlation
 * + 1 (0: none). */
#define DEV_SYNC 8

static int64_t corr_field(const struct idx_event *ev, uint32_t bit, int64_t v)
{
  return (ev->has & bit) && v >= 0 && v < (1ll << 46) ? v + 1 : 0;
}

static int on_record(struct idx_agg *a, const struct idx_event *ev,
                     enum idx_class cls)
{
  struct agg_rec r = { ev->ts_ns, ev->dur_ns, 0, 0, 0 };
  uint16_t lane;
  int rc;

  if ((rc = lane_of(a->cpath, ev_device(ev), ev_stream(ev), &lane)) != 0)
    return rc;
  if (lane == NO_LANE)
    return 0;
  r.aux = (corr_field(ev, IDX_HAS_CORR, ev->correlation) << 16) | lane;
  if (cls == IDX_CLASS_KERNEL) {
    r.type = 0;
    r.id = a->ev_name;
  } else {
    r.type = cls == IDX_CLASS_COPY ? 1 : 2;
  }
  return agg_runs_add(&a->cpath->dev, &r);
}

static int sync_kind(struct idx_str n)
{
  static const char *const names[] = { "Event Sync", "Stream Wait Event",
                                       "Context Sync", "Stream Sync" };

  for (int k = 0; k < 4; k++)
    if (n.p != NULL && n.n == strlen(names[k]) &&
        memcmp(n.p, names[k], n.n) == 0)
      return k;
  return -1;
}

static int on_sync(struct idx_agg *a, const struct idx_event *ev)
{
  struct agg_rec r = { ev->ts_ns + ev->dur_ns, ev->dur_ns, 0, 0, 0 };
  int kind = sync_kind(ev->name);
  uint16_t lane = NO_LANE, wait = NO_LANE;
  int rc;

  if (kind < 0)
    return 0;
  a->cpath->syncs++;
  if (kind != CP_SYNC_CONTEXT &&
      (rc = lane_of(a->cpath, ev_device(ev), ev_stream(ev), &lane)) != 0)
    return rc;
  if ((ev->has & IDX_HAS_WAIT_STREAM) &&
      (rc = lane_of(a->cpath, ev_device(ev), ev->wait_stream, &wait)) != 0)
    return rc;
  r.type = DEV_SYNC + (uint32_t)kind + (((uint32_t)wait + 1) << 8);
  r.aux = (corr_field(ev, IDX_HAS_CORR, ev->correlation) << 16) | lane;
  r.id = (uint32_t)(corr_field(ev, IDX_HAS_WAIT_CORR, ev->wait_corr) &
                    0xffffffffu);
  return agg_runs_add(&a->cpath->dev, &r);
}

/* A device record or a cuda_sync event (the host events are the host
 * pass's, index/host/host.c). */
int agg_cpath_event(struct idx_agg *a, const struct idx_doc *doc,
                    const struct idx_event *ev, enum idx_class cls)
{
  (void)doc;
  return cls == IDX_CLASS_SYNC ? on_sync(a, ev) : on_record(a, ev, cls);
}

static void launch_rows_free(struct cp_launch_row *rows, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    agg_hist_free(&rows[i].call_hist);
    agg_hist_free(&rows[i].queue_hist);
  }
  free(rows);
}

static void walk_free(struct agg_cpath_walk *w);

void agg_cpath_free(struct idx_agg *a)
{
  struct agg_cpath *c = a->cpath;

  if (c == NULL)
    return;
  walk_free(c->walk);
  agg_runs_free(&c->dev);
  agg_map_free(&c->lanes);
  for (size_t k = 0; k < c->kinds.n && c->kind != NULL; k++) {
    struct cp_kind *kd = &c->kind[k];
    struct cp_pick *p[3] = { &kd->median, &kd->slowest, &kd->runner };

    agg_hist_free(&kd->length_hist);
    for (int i = 0; i < 3; i++) {
      free(p[i]->segs);
      free(p[i]->seq);
      free(p[i]->queue);
    }
  }
  agg_map_free(&c->kinds); /* after the loop over its n */
  free(c->kind);
  cp_paths_free(&c->paths);
  cp_paths_free(&c->fpaths);
  free(c->critical_ns);
  free(c->fam_critical_ns);
  launch_rows_free(c->launch, c->nlaunch);
  launch_rows_free(c->fam_launch, c->nfam_launch);
  for (size_t i = 0; i < c->culprit_map.n; i++)
    agg_hist_free(&c->culprits[i].hist);
  agg_map_free(&c->culprit_map);
  free(c->culprits);
  free(c->seqs);
  free(c->steps);
  free(c);
  a->cpath = NULL;
}

/* ---- the walk ---- */

struct member {  /* a launch call kept in a step */
  uint32_t step; /* its id (struct wstep's), 0: none */
  uint32_t ev;
};

/* A launch call by correlation: 40 bytes, its correlation (below 2^40:
 * host.c's payload), its thread and whether a record of it came packed in
 * key. 0: an empty slot (the table is calloc()ed: untouched pages cost
 * nothing). */
struct jslot {
  uint64_t key; /* corr + 1 | seen << 46 | thread << 47 */
  int64_t start, dur;
  struct member in[JOIN_STEPS];
};

#define J_CORR (((uint64_t)1 << 46) - 1)
#define J_SEEN ((uint64_t)1 << 46)

static int64_t j_corr(const struct jslot *j)
{
  return (int64_t)(j->key & J_CORR) - 1;
}

static uint16_t j_thread(const struct jslot *j)
{
  return (uint16_t)(j->key >> 47);
}

struct lane_state { /* a device lane over the whole trace */
  int has_prev;
  int64_t prev_start; /* the last launch's first record's start */
  uint64_t item_step; /* that record in an open step (id), 0: none */
  uint32_t item_ev;
  int64_t last_corr, last_end;
};

struct wlane { /* a lane of one step */
  uint16_t lane;
  int64_t last_corr, last_end; /* its last record of the step */
};

struct wstep { /* an open step */
  uint32_t id;
  uint32_t kind, label;
  int64_t index, ws, we;
  struct cp_ev *ev;
  uint32_t n, cap;
  int too_big;
  uint32_t pending; /* launch calls without a record yet */
  struct wlane *lanes;
  size_t nlanes, lanes_cap;
};

struct snap { /* the innermost host event of a thread at snap_t */
  uint32_t name;
  uint8_t what;
};

struct agg_cpath_walk {
  struct idx_agg *a;
  struct agg_cpath *c;
  struct agg_host_iter *host;
  struct agg_iter *dev;
  struct agg_rec dev_head;
  int dev_has, infer_sync;
  struct agg_host_stacks stacks; /* ops, annotations, calls */
  struct agg_host_stacks py;     /* Python functions, brought up lazily */
  uint8_t *rt_flags; /* by runtime name id: CP_F_BLOCKING | CP_F_LAUNCHY */
  struct wstep *open[CP_OPEN_STEPS];
  uint32_t nopen;
  uint32_t next_id;
  uint32_t held; /* events the open steps hold, at most max_events */
  uint32_t ev_hint; /* the most events a closed step held: a new step's
                       room, taken at once (untouched, it costs no
                       memory) rather than grown again and again */
  int64_t next_index;
  int64_t now; /* everything up to here is processed */
  struct jslot *join;
  struct lane_state *lanes;
  size_t nlanes;
  int64_t snap_t;
  struct snap *snap; /* [AGG_HOST_THREADS] */
  int span_open;
  int comm;   /* the communication category's index */
  int rc;     /* the first failure of a call that cannot return one */
  FILE *dump; /* TRACED_CPATH_DUMP: every step's records, for tests */
  /* Each closed step's path and figures: on a second thread when the
   * summary has two, in the order the steps closed; the analyst alone
   * uses the scratch and the figures it writes (cp_stats_step()). */
  struct agg_beside analyst;
  struct cp_scratch scratch;
  /* The step the analyst finished last, its events' room kept for the
   * next step the walk opens: a fresh one is a fresh mapping whose every
   * page faults again (a million events a step on bench/'s big trace).
   * One at a time, handed between the two threads by exchange. */
  _Atomic(struct wstep *) spare;
};

static int analyse_step(void *ud, void *item);

/* A call that waits for the device (HTA's BLOCKING_SYNC_CALLS, and their
 * HIP and MACA twins), and one that may launch device work. */
static uint8_t call_flags(const struct agg_key *k)
{
  static const char *const blocking[] = { "Synchronize", "EventQuery",
                                          "Memcpy" };
  static const char *const launchy[] = { "LaunchKernel", "GraphLaunch",
                                         "Memcpy", "MemsetAsync",
                                         "LaunchCooperativeKernel" };
  uint8_t f = 0;

  for (size_t i = 0; i < 3; i++)
    if (memmem(k->p, k->n, blocking[i], strlen(blocking[i])) != NULL)
      f |= CP_F_BLOCKING;
  for (size_t i = 0; i < 5; i++)
    if (memmem(k->p, k->n, launchy[i], strlen(launchy[i])) != NULL)
      f |= CP_F_LAUNCHY;
  return f;
}

static int flags_init(struct agg_cpath_walk *w)
{
  const struct agg_map *m = &w->a->rt_map;

  w->rt_flags = calloc(m->n + 1, 1);
  if (w->rt_flags == NULL)
    return TR_ENOMEM;
  for (uint32_t i = 0; i < m->n; i++)
    w->rt_flags[i] = call_flags(&m->keys[i]);
  return 0;
}

/* Where the steps come from: ATOM run labels on the host, else profiler
 * steps, else the whole span. */
static int step_source(const struct idx_agg *a)
{
  uint32_t ps = UINT32_MAX;

  (void)agg_map_find(&a->kinds_map, "ProfilerStep", 12, &ps);
  for (uint32_t k = 0; k < a->nkinds; k++)
    if (k != ps && a->step[AGG_SIDE_CPU][k].s.count > 0)
      return CP_SOURCE_LABELS;
  return a->host->psteps.count > 0 ? CP_SOURCE_PSTEPS : CP_SOURCE_SPAN;
}

static int dev_advance(struct agg_cpath_walk *w)
{
  int rc = agg_iter_next(w->dev, &w->dev_head);

  w->dev_has = rc == 1;
  return rc < 0 ? rc : 0;
}

static int walk_new(struct idx_agg *a, struct agg_cpath_walk **out)
{
  struct agg_cpath_walk *w = calloc(1, sizeof(*w));
  int rc = TR_ENOMEM;

  if (w == NULL)
    return TR_ENOMEM;
  w->a = a;
  w->c = a->cpath;
  w->next_id = 1;
  w->now = INT64_MIN;
  w->snap_t = INT64_MIN;
  w->infer_sync = a->cpath->syncs == 0;
  w->comm = agg_category_index("communication");
  w->c->source = step_source(a);
  w->snap = calloc(AGG_HOST_THREADS, sizeof(*w->snap));
  w->lanes = calloc((size_t)a->cpath->lanes.n + 1, sizeof(*w->lanes));
  if (w->snap == NULL || w->lanes == NULL ||
      flags_init(w) != 0 || agg_host_stacks_init(&w->stacks) != 0 ||
      agg_host_stacks_init(&w->py) != 0)
    goto fail;
  for (uint32_t i = 0; i < AGG_HOST_THREADS; i++)
    w->snap[i].what = CP_CULPRIT_NONE;
  w->nlanes = a->cpath->lanes.n;
  if (getenv("TRACED_CPATH_DUMP") != NULL &&
      (w->dump = fopen(getenv("TRACED_CPATH_DUMP"), "ae")) == NULL) {
    rc = TR_EIO;
    goto fail;
  }
  if ((rc = agg_runs_seal(&a->cpath->dev)) != 0 ||
      (rc = agg_iter_open(&a->cpath->dev, &w->dev)) != 0 ||
      (rc = dev_advance(w)) != 0 || (rc = agg_host_open(a->host, &w->host)))
    goto fail;
  /* The dump names kinds the walk may still be adding: not beside it. */
  agg_beside_start(&w->analyst, a->threads > 1 && w->dump == NULL,
                   analyse_step, w);
  *out = w;
  return 0;
fail:
  walk_free(w);
  return rc;
}

static void step_free(struct wstep *s)
{
  if (s == NULL)
    return;
  free(s->ev);
  free(s->lanes);
  free(s);
}

static void walk_free(struct agg_cpath_walk *w)
{
  if (w == NULL)
    return;
  (void)agg_beside_end(&w->analyst);
  for (uint32_t i = 0; i < w->nopen; i++)
    step_free(w->open[i]);
  step_free(atomic_load(&w->spare));
  agg_host_close(w->host);
  agg_iter_close(w->dev);
  agg_host_stacks_free(&w->stacks);
  agg_host_stacks_free(&w->py);
  cp_scratch_free(&w->scratch);
  if (w->dump != NULL)
    fclose(w->dump);
  free(w->rt_flags);
  free(w->join);
  free(w->lanes);
  free(w->snap);
  free(w);
}

static struct wstep *open_step(const struct agg_cpath_walk *w, uint32_t id)
{
  for (uint32_t i = 0; id != 0 && i < w->nopen; i++)
    if (w->open[i]->id == id)
      return w->open[i];
  return NULL;
}

/* Appends e to s. The open steps hold at most max_events events between
 * them: the step whose event would pass it stops keeping events (it is
 * counted, not analysed). Returns the event's index, or NONE32. */
static uint32_t step_add(struct agg_cpath_walk *w, struct wstep *s,
                         const struct cp_ev *e)
{
  size_t cap = s->cap;

  if (s->too_big)
    return NONE32;
  if (w->held >= w->c->max_events) {
    s->too_big = 1;
    w->held -= s->n;
    free(s->ev);
    s->ev = NULL;
    s->n = s->cap = 0;
    return NONE32;
  }
  if (s->n == s->cap && agg_grow(&s->ev, &cap, s->n, sizeof(*s->ev)) != 0) {
    w->rc = TR_ENOMEM;
    return NONE32;
  }
  s->cap = (uint32_t)cap;
  s->ev[s->n] = *e;
  w->held++;
  return s->n++;
}

/* ---- steps ---- */

/* For tests (TRACED_CPATH_DUMP names a file): a JSON line per step with
 * its path's length and breakdown and each device record of it: name,
 * lane, start, end (absolute ns), on the path, slack. */
static void dump_step(struct agg_cpath_walk *w, const struct wstep *s,
                      const struct cp_result *res)
{
  const struct idx_agg *a = w->a;
  json_t *recs = json_array(), *bounds = json_object(), *line;

  for (int b = 0; b < CP_BOUNDS; b++)
    json_object_set_new(bounds, cp_bound_name(b),
                        json_integer(res->row.bound_ns[b]));
  for (uint32_t i = 0; i < s->n; i++) {
    const struct cp_ev *e = &s->ev[i];
    char lane[48];
    const struct agg_key *nm = e->kind == CP_EV_KERNEL && e->name < a->names.n
                                   ? &a->names.keys[e->name]
                                   : NULL;

    if (!cp_is_record(e))
      continue;
    agg_cpath_lane_name(w->c, e->lane, lane, sizeof(lane));
    json_array_append_new(
        recs, json_pack("[s#sIIiI]", nm ? nm->p : "copy", nm ? (int)nm->n : 4,
                        lane, (json_int_t)e->start, (json_int_t)e->end,
                        res->on_path ? res->on_path[i] : 0,
                        (json_int_t)(res->slack ? res->slack[i] : 0)));
  }
  line = json_pack(
      "{sIss#sIsIsisIsosIsIso}", "index", (json_int_t)s->index, "kind",
      w->c->kinds.keys[s->kind].p, (int)w->c->kinds.keys[s->kind].n, "start_ns",
      (json_int_t)s->ws, "end_ns", (json_int_t)s->we, "status", res->row.status,
      "length_ns", (json_int_t)res->row.length_ns, "bounds", bounds,
      "path_from", (json_int_t)res->row.path_from, "path_to",
      (json_int_t)res->row.path_to, "records", recs);
  json_dumpf(line, w->dump, JSON_COMPACT);
  fputc('\n', w->dump);
  json_decref(line);
}

/* A closed step's path and figures (the analyst's run). */
static int analyse_step(void *ud, void *item)
{
  struct agg_cpath_walk *w = ud;
  struct wstep *s = item;
  struct cp_result res = { 0 };
  struct cp_stepdata sd = { s->kind, s->ev, s->n, &res, &w->scratch };
  int rc = 0;

  res.row.index = s->index;
  res.row.kind = s->kind;
  res.row.label = s->label;
  res.row.start_ns = s->ws;
  res.row.end_ns = s->we;
  res.row.events = s->n;
  if (s->too_big)
    res.row.status = CP_STEP_TOO_BIG;
  else
    rc = cp_step_analyse(s->ev, s->n, w->infer_sync, &w->scratch, &res);
  if (rc == 0 && w->dump != NULL)
    dump_step(w, s, &res);
  if (rc == 0)
    rc = cp_stats_step(w->a, &sd);
  step_free(atomic_exchange(&w->spare, s));
  return rc;
}

static int close_step(struct agg_cpath_walk *w, uint32_t i)
{
  struct wstep *s = w->open[i];

  if (s->n > w->ev_hint)
    w->ev_hint = s->n;
  w->held -= s->n;
  memmove(&w->open[i], &w->open[i + 1],
          (w->nopen - i - 1) * sizeof(w->open[0]));
  w->nopen--;
  return agg_beside_put(&w->analyst, s);
}

/* A step is done once the walk is past its window, its launch calls have
 * their records (or are a second overdue), and each of its lanes has
 * started a later launch's record or has been idle CP_GRACE_NS. */
static int step_done(const struct agg_cpath_walk *w, const struct wstep *s)
{
  if (w->now <= s->we)
    return 0;
  if (s->pending > 0 && w->now <= s->we + CP_EXPIRE_NS)
    return 0;
  for (size_t k = 0; k < s->nlanes; k++) {
    const struct wlane *l = &s->lanes[k];
    const struct lane_state *ls = &w->lanes[l->lane];

    if (ls->last_corr == l->last_corr && w->now < l->last_end + CP_GRACE_NS)
      return 0;
  }
  return 1;
}

static int close_done(struct agg_cpath_walk *w)
{
  int rc = 0;

  for (uint32_t i = 0; i < w->nopen && rc == 0;)
    if (step_done(w, w->open[i]))
      rc = close_step(w, i);
    else
      i++;
  return rc;
}

/* The kind of a step label: a run label's kind (its name up to '['), or
 * "ProfilerStep". CP_NO_KIND for a run label whose kind agg.c did not keep
 * (past AGG_MAX_STEP_KINDS): it is no step here either. */
static int label_kind_id(struct agg_cpath_walk *w, const struct agg_host_ev *h,
                         uint32_t *kind)
{
  const struct agg_key *k = agg_host_name(w->a->host, h->name);
  struct idx_str s = { k->p, k->n };
  size_t n = agg_label_kind(s);
  uint32_t lk;

  if (w->c->source == CP_SOURCE_PSTEPS)
    return cp_stats_kind(w->a, "ProfilerStep", 12, kind);
  if (!agg_map_find(&w->a->kinds_map, k->p, n, &lk) ||
      lk >= AGG_MAX_STEP_KINDS) {
    *kind = CP_NO_KIND;
    return 0;
  }
  return cp_stats_kind(w->a, k->p, n, kind);
}

/* A zeroed step, with the spare's events' room when there is one. */
static struct wstep *step_reuse(struct agg_cpath_walk *w)
{
  struct wstep *s = atomic_exchange(&w->spare, NULL);
  struct cp_ev *ev;
  uint32_t cap;

  if (s == NULL)
    return calloc(1, sizeof(*s));
  ev = s->ev;
  cap = s->cap;
  free(s->lanes);
  memset(s, 0, sizeof(*s));
  s->ev = ev;
  s->cap = cap;
  return s;
}

static int step_new(struct agg_cpath_walk *w, int64_t ws, int64_t we,
                    uint32_t kind, uint32_t label)
{
  struct wstep *s;
  int rc;

  if (w->nopen == CP_OPEN_STEPS) {
    w->c->forced++;
    if ((rc = close_step(w, 0)) != 0)
      return rc;
  }
  if ((s = step_reuse(w)) == NULL)
    return TR_ENOMEM;
  if (s->ev == NULL && w->ev_hint > 0 &&
      (s->ev = malloc((size_t)w->ev_hint * sizeof(*s->ev))) != NULL)
    s->cap = w->ev_hint;
  s->id = w->next_id++;
  s->index = w->next_index++;
  s->kind = kind;
  s->label = label;
  s->ws = ws;
  s->we = we;
  w->open[w->nopen++] = s;
  return 0;
}

/* A host label opens a step when the steps come from its kind. */
static int maybe_open(struct agg_cpath_walk *w, const struct agg_host_ev *h)
{
  uint32_t want = w->c->source == CP_SOURCE_LABELS   ? AGG_HOST_LABEL
                  : w->c->source == CP_SOURCE_PSTEPS ? AGG_HOST_PSTEP
                                                     : 0;
  uint32_t kind;
  int rc;

  if (want == 0 || !(h->flags & want) || h->kind != AGG_HOST_ANNOT)
    return 0;
  if ((rc = label_kind_id(w, h, &kind)) != 0 || kind == CP_NO_KIND)
    return rc;
  return step_new(w, h->start_ns, h->start_ns + h->dur_ns, kind, h->name);
}

/* ---- host events ---- */

static uint8_t what_of(uint8_t kind)
{
  return kind == AGG_HOST_RT ? CP_WHAT_RT : CP_WHAT_HOST;
}

/* The join's slot for corr (>= 0). The table (2.5 MB) is made for the
 * first call with a correlation: a trace without launches never needs it.
 * NULL when out of memory. */
static struct jslot *join_slot(struct agg_cpath_walk *w, int64_t corr)
{
  if (w->join == NULL &&
      (w->join = calloc(JOIN_SLOTS, sizeof(*w->join))) == NULL)
    return NULL;
  return &w->join[(uint64_t)corr & (JOIN_SLOTS - 1)];
}

static struct jslot *slot_of(struct agg_cpath_walk *w, int64_t corr)
{
  struct jslot *j;

  if (corr < 0 || corr >= (int64_t)J_CORR || w->join == NULL)
    return NULL;
  j = &w->join[(uint64_t)corr & (JOIN_SLOTS - 1)];
  return j->key != 0 && j_corr(j) == corr ? j : NULL;
}

/* A CPU op or runtime call with a duration goes to every open step whose
 * window holds its start; a call is kept by correlation for its records. */
static int on_host_node(struct agg_cpath_walk *w, const struct agg_host_ev *h,
                        const struct agg_host_frame *parent)
{
  struct cp_ev e = { 0 };
  struct jslot *j = NULL;
  uint32_t held = 0;

  e.start = h->start_ns;
  e.end = h->start_ns + h->dur_ns;
  e.corr = h->corr;
  e.launch_next = INT64_MAX;
  e.wait_corr = -1;
  e.name = h->name;
  e.pname = parent ? parent->ev.name : 0;
  e.pwhat = parent ? what_of(parent->ev.kind) : CP_WHAT_NONE;
  e.launch = NONE32;
  e.lane = h->thread;
  e.wait_lane = NO_LANE;
  e.kind = h->kind == AGG_HOST_RT ? CP_EV_RT : CP_EV_OP;
  if (h->kind == AGG_HOST_RT && h->name < w->a->rt_map.n)
    e.flags = w->rt_flags[h->name];
  if (h->kind == AGG_HOST_RT && h->corr >= 0) {
    if ((j = join_slot(w, h->corr)) == NULL)
      return TR_ENOMEM;
    memset(j, 0, sizeof(*j));
    j->key = ((uint64_t)h->corr + 1) | (uint64_t)h->thread << 47;
    j->start = h->start_ns;
    j->dur = h->dur_ns;
  }
  if (h->dur_ns <= 0)
    return 0;
  for (uint32_t i = 0; i < w->nopen; i++) {
    struct wstep *s = w->open[i];
    uint32_t at;

    if (h->start_ns < s->ws || h->start_ns > s->we ||
        (at = step_add(w, s, &e)) == NONE32)
      continue;
    if (j != NULL && held < JOIN_STEPS)
      j->in[held++] = (struct member){ s->id, at };
    if (e.flags & CP_F_LAUNCHY)
      s->pending++;
  }
  return 0;
}

/* The Python functions up to time t (agg_host_py_advance()). */
static int py_advance(struct agg_cpath_walk *w, int64_t t)
{
  return agg_host_py_advance(w->host, t, &w->py);
}

/* Of two frames running at one time, the inner: the later start, or on
 * equal starts the shorter. */
static const struct agg_host_frame *inner(const struct agg_host_frame *a,
                                          const struct agg_host_frame *b)
{
  if (a == NULL || b == NULL)
    return a ? a : b;
  if (a->ev.start_ns != b->ev.start_ns)
    return a->ev.start_ns > b->ev.start_ns ? a : b;
  return a->ev.dur_ns <= b->ev.dur_ns ? a : b;
}

static int on_host(struct agg_cpath_walk *w, const struct agg_host_ev *h)
{
  const struct agg_host_frame *parent;
  int rc;

  if ((rc = py_advance(w, h->start_ns)) != 0 ||
      (rc = agg_host_stacks_push(&w->stacks, h, 0, &parent)) != 0 ||
      (rc = maybe_open(w, h)) != 0)
    return rc;
  if (h->kind != AGG_HOST_OP && h->kind != AGG_HOST_RT)
    return 0;
  return on_host_node(
      w, h,
      inner(parent, agg_host_stacks_top(&w->py, h->thread, h->start_ns, 0)));
}

/* ---- device records and sync events ---- */

static void lane_note(struct wstep *s, uint16_t lane, int64_t corr, int64_t end,
                      int *rc)
{
  size_t k;

  for (k = 0; k < s->nlanes && s->lanes[k].lane != lane; k++)
    ;
  if (k == s->nlanes) {
    if (agg_grow(&s->lanes, &s->lanes_cap, k, sizeof(*s->lanes)) != 0) {
      *rc = TR_ENOMEM;
      return;
    }
    s->nlanes++;
    s->lanes[k].lane = lane;
  }
  s->lanes[k].last_corr = corr;
  s->lanes[k].last_end = end;
}

/* The lane's queue (HTA's queue length): a launch's first record is an
 * item; it found its lane free when the item before it had started by its
 * launch call's start, and it tells that item when the next launch on the
 * lane came (cpath_step.c's launch delay rule). */
static uint8_t lane_item(struct agg_cpath_walk *w, struct lane_state *ls,
                         const struct jslot *j, int64_t start)
{
  uint8_t flags = CP_F_FIRST;
  struct wstep *ps = open_step(w, ls->item_step);

  if (!ls->has_prev || ls->prev_start <= j->start)
    flags |= CP_F_QFREE;
  if (ps != NULL && !ps->too_big && ls->item_ev < ps->n)
    ps->ev[ls->item_ev].launch_next = j->start;
  ls->has_prev = 1;
  ls->prev_start = start;
  ls->item_step = 0;
  return flags;
}

static int on_device_record(struct agg_cpath_walk *w, const struct agg_rec *r)
{
  uint16_t lane = (uint16_t)(r->aux & 0xffff);
  int64_t corr = (r->aux >> 16) - 1;
  struct jslot *j = slot_of(w, corr);
  struct lane_state *ls = &w->lanes[lane];
  struct cp_ev e = { 0 };
  int first = j != NULL && !(j->key & J_SEEN), rc = 0;

  e.start = r->start_ns;
  e.end = r->start_ns + r->dur_ns;
  e.corr = corr;
  e.launch_next = INT64_MAX;
  e.wait_corr = -1;
  e.name = r->id;
  e.lane = lane;
  e.wait_lane = NO_LANE;
  e.kind = r->type == 0   ? CP_EV_KERNEL
           : r->type == 1 ? CP_EV_COPY
                          : CP_EV_MEMSET;
  if (e.kind == CP_EV_KERNEL && r->id < w->a->names.n &&
      w->a->name_cat[r->id] == w->comm)
    e.flags |= CP_F_COMM;
  if (first) {
    e.flags |= lane_item(w, ls, j, r->start_ns);
    if (e.kind == CP_EV_KERNEL &&
        (rc = cp_stats_launch(w->a, r->id, j->dur,
                              r->start_ns - (j->start + j->dur))) != 0)
      return rc;
  }
  ls->last_corr = corr;
  ls->last_end = e.end;
  if (j == NULL)
    return 0;
  j->key |= J_SEEN;
  for (int m = 0; m < JOIN_STEPS && rc == 0; m++) {
    struct wstep *s = open_step(w, j->in[m].step);
    uint32_t at;

    if (s == NULL)
      continue;
    e.launch = j->in[m].ev;
    if (first && !s->too_big && (s->ev[e.launch].flags & CP_F_LAUNCHY))
      s->pending--;
    lane_note(s, lane, corr, e.end, &rc);
    if ((at = step_add(w, s, &e)) != NONE32 && first && ls->item_step == 0) {
      ls->item_step = s->id;
      ls->item_ev = at;
    }
  }
  return rc;
}

static int on_sync_event(struct agg_cpath_walk *w, const struct agg_rec *r)
{
  uint32_t wait = (r->type >> 8) - 1;
  int64_t corr = (r->aux >> 16) - 1;
  struct jslot *j = slot_of(w, corr);
  struct cp_ev e = { 0 };

  e.start = r->start_ns - r->dur_ns;
  e.end = r->start_ns;
  e.corr = corr;
  e.launch_next = INT64_MAX;
  e.wait_corr = (int64_t)r->id - 1;
  e.launch = NONE32;
  e.lane = (uint16_t)(r->aux & 0xffff);
  e.wait_lane = wait < NO_LANE ? (uint16_t)wait : NO_LANE;
  e.kind = CP_EV_SYNC;
  e.sync = (uint8_t)((r->type & 0xff) - DEV_SYNC);
  for (int m = 0; j != NULL && m < JOIN_STEPS; m++) {
    struct wstep *s = open_step(w, j->in[m].step);

    if (s != NULL)
      (void)step_add(w, s, &e);
  }
  return 0;
}

/* ---- the merge ---- */

/* Processes the host events and device items up to time t (inclusive),
 * host events first on equal times. */
static int advance(struct agg_cpath_walk *w, int64_t t)
{
  const struct agg_host_ev *h;
  int rc = 0, hh;

  while (rc == 0) {
    int64_t dk = w->dev_has ? w->dev_head.start_ns : INT64_MAX;

    while ((hh = agg_host_pop(w->host, dk < t ? dk : t, &h)) == 1)
      if ((rc = on_host(w, h)) != 0)
        return rc;
    if (hh < 0)
      return hh;
    if (!w->dev_has || dk > t)
      break;
    rc = w->dev_head.type >= DEV_SYNC ? on_sync_event(w, &w->dev_head)
                                      : on_device_record(w, &w->dev_head);
    if (rc == 0)
      rc = dev_advance(w);
  }
  if (rc == 0 && t > w->now)
    w->now = t;
  return rc;
}

/* What each thread ran at t (innermost, step labels aside). */
static int snapshot(struct agg_cpath_walk *w, int64_t t)
{
  const struct agg_host_stacks *st[2] = { &w->stacks, &w->py };
  int rc = py_advance(w, t);

  for (int k = 0; rc == 0 && k < 2; k++)
    for (uint32_t i = 0; i < st[k]->nactive; i++) {
      uint16_t th = st[k]->active[i];
      const struct agg_host_frame *f =
          inner(agg_host_stacks_top(&w->stacks, th, t,
                                    AGG_HOST_LABEL | AGG_HOST_PSTEP),
                agg_host_stacks_top(&w->py, th, t, 0));

      w->snap[th].name = f ? f->ev.name : 0;
      w->snap[th].what = f ? f->ev.kind : CP_CULPRIT_NONE;
    }
  w->snap_t = t;
  return rc;
}

/* A trace without steps is one step over its whole span ("trace"). */
static int span_step(struct agg_cpath_walk *w)
{
  uint32_t kind;
  int rc;

  if (w->span_open || w->c->source != CP_SOURCE_SPAN)
    return 0;
  w->span_open = 1;
  if ((rc = cp_stats_kind(w->a, "trace", 5, &kind)) != 0 || kind == CP_NO_KIND)
    return rc;
  return step_new(w, w->a->t0_ns, w->a->tend_ns, kind, NONE32);
}

/* Every record, labels of a dropped kind too: it brings the host events
 * and device records up to r (before the passes below it: the idle
 * stretches' culprits ask what ran at busy_end). It reads its own labels
 * (the host's). */
int agg_cpath_walk(struct idx_agg *a, struct agg_at *at)
{
  struct agg_cpath_walk *w = a->cpath->walk;
  const struct agg_rec *r = at->r;
  int64_t busy_end = at->busy_end;
  int rc = span_step(w);

  if (rc != 0)
    return rc;
  if (busy_end > w->snap_t && busy_end < r->start_ns) {
    if ((rc = advance(w, busy_end)) != 0 || (rc = snapshot(w, busy_end)) != 0)
      return rc;
  }
  if ((rc = advance(w, r->start_ns)) != 0)
    return rc;
  return w->rc ? w->rc : close_done(w);
}

/* An idle stretch closed (agg_idle.c's finding): its culprit, the host
 * event running on the thread that launched the record ending it when the
 * device went idle, with its idle ns by kind. */
void agg_cpath_found(struct idx_agg *a, const struct agg_finding *f)
{
  struct agg_cpath_walk *w = a->cpath->walk;
  const struct jslot *j;
  uint32_t name = 0;
  uint8_t what = CP_CULPRIT_UNKNOWN;

  if (w == NULL || f->what != AGG_FOUND_IDLE ||
      (f->cause != AGG_IDLE_HOST_LATE && f->cause != AGG_IDLE_SYNC))
    return;
  j = slot_of(w, f->corr);
  if (j != NULL && w->snap_t == f->start_ns) {
    name = w->snap[j_thread(j)].name;
    what = w->snap[j_thread(j)].what;
  }
  for (uint32_t k = 0; k < f->nparts && w->rc == 0; k++)
    if (f->parts[k] > 0)
      w->rc = cp_stats_culprit(a, k, f->cause, name, what, f->parts[k]);
}

int agg_cpath_seal(struct idx_agg *a, struct tr_err *err)
{
  (void)err;
  return walk_new(a, &a->cpath->walk);
}

/* The rest of the streams read, every step closed and analysed; then the
 * columns the kernel and family rows take (cpath_json.c). */
int agg_cpath_end(struct idx_agg *a, struct tr_err *err)
{
  struct agg_cpath_walk *w = a->cpath->walk;
  int rc = w->rc ? w->rc : span_step(w);

  (void)err;
  if (rc == 0)
    rc = advance(w, INT64_MAX);
  while (rc == 0 && w->nopen > 0)
    rc = close_step(w, 0);
  if (agg_beside_end(&w->analyst) != 0 && rc == 0)
    rc = w->analyst.rc;
  walk_free(w);
  a->cpath->walk = NULL;
  return rc != 0 ? rc : cp_cols_publish(a);
}

void agg_cpath_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  json_t *cw = agg_cpath_warnings(a);

  r->critical_path_steps = (int64_t)a->cpath->steps_total;
  json_array_extend(r->warnings, cw);
  json_decref(cw);
}
