/*
 * Host events by thread, in time order (host.h).
 *
 * A host event is one time record (struct agg_rec) of the stream of its
 * class, packed so that agg_runs.c's order (start, type, aux, id, dur) is
 * the order a call stack needs:
 *
 *   start_ns, dur_ns  the event's
 *   type              UINT32_MAX - min(dur, UINT32_MAX): on equal starts
 *                     the longer event (the parent) first
 *   aux               bits 0-15 thread, 16-19 kind, 20-23 flags, 24-63
 *                     the event's number in the file (ops, annotations,
 *                     Python) or its correlation + 1 (runtime calls; 0:
 *                     none), so equal starts and durations keep file order
 *   id                its name
 *
 * Events of more than 4.3 s that start together keep file order among
 * themselves (kineto writes a parent before its child).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/host/host_int.h"

#define HOST_RECS    (1u << 14) /* records a stream holds before spilling */
#define HOST_WINDOW  (1u << 13) /* records its iterator holds */
#define PAYLOAD_BITS 40
#define PAYLOAD_MAX  ((1ll << PAYLOAD_BITS) - 1)

int agg_host_new(struct idx_agg *a)
{
  struct agg_host *h = calloc(1, sizeof(*h));
  struct agg_spill *sp = &a->spill;

  if ((a->host = h) == NULL)
    return TR_ENOMEM;
  agg_fold_init(&h->fold, AGG_HOST_NAMES, sp);
  if ((h->cache = calloc(AGG_SEEN, sizeof(*h->cache))) == NULL ||
      agg_pystream_init(&h->py, sp) != 0)
    return TR_ENOMEM;
  for (int i = 0; i < AGG_HOST_STREAMS; i++) {
    if (agg_runs_init(&h->runs[i], HOST_RECS, sp) != 0)
      return TR_ENOMEM;
    agg_runs_window(&h->runs[i], HOST_WINDOW);
  }
  return 0;
}

void agg_host_free(struct idx_agg *a)
{
  struct agg_host *h = a->host;

  if (h == NULL)
    return;
  for (int i = 0; i < AGG_HOST_STREAMS; i++)
    agg_runs_free(&h->runs[i]);
  agg_pystream_free(&h->py);
  agg_map_free(&h->names);
  agg_fold_free(&h->fold);
  agg_map_free(&h->threads);
  agg_hist_free(&h->pstep_hist);
  free(h->cache);
  free(h);
  a->host = NULL;
}

/* Appends the pid or tid of ev as text: the number, or the string a
 * legacy trace writes ("CPU functions"), cut to 64 bytes. */
static int id_text(char *buf, size_t size, int numeric, int64_t v,
                   struct idx_str s)
{
  if (numeric)
    return snprintf(buf, size, "%lld", (long long)v);
  size_t n = s.p ? s.n : 0;

  if (n > 64) /* cut on a character: the key must stay UTF-8 */
    for (n = 64; n > 0 && ((unsigned char)s.p[n] & 0xC0) == 0x80; n--)
      ;
  return snprintf(buf, size, "%.*s", (int)n, s.p ? s.p : "");
}

/* thread_of() of a thread other than the last one: out of line, so that
 * its key's room is no part of the frame of each event's call. */
static __attribute__((noinline)) int thread_key(struct agg_host *h,
                                                const struct idx_event *ev,
                                                int numeric, uint32_t *out)
{
  char key[160];
  int n, rc;

  n = id_text(key, 70, (ev->has & IDX_HAS_PID) != 0, ev->pid, ev->pid_str);
  key[n++] = '/';
  n += id_text(key + n, sizeof(key) - (size_t)n, (ev->has & IDX_HAS_TID) != 0,
               ev->tid, ev->tid_str);
  if (h->threads.n >= AGG_HOST_THREADS &&
      !agg_map_find(&h->threads, key, (size_t)n, out)) {
    *out = UINT32_MAX;
    return 0;
  }
  if ((rc = agg_map_intern(&h->threads, key, (size_t)n, out)) < 0)
    return rc;
  if (numeric) {
    h->have_last = 1;
    h->last_pid = ev->pid;
    h->last_tid = ev->tid;
    h->last_thread = *out;
  }
  return 0;
}

/* The thread index of ev, or UINT32_MAX beyond AGG_HOST_THREADS. The key
 * is the thread's "pid/tid" text; a thread's events come in runs, so the
 * last one is kept by its numbers. */
static inline int thread_of(struct agg_host *h, const struct idx_event *ev,
                            uint32_t *out)
{
  int numeric =
      (ev->has & (IDX_HAS_PID | IDX_HAS_TID)) == (IDX_HAS_PID | IDX_HAS_TID);

  if (numeric && h->have_last && ev->pid == h->last_pid &&
      ev->tid == h->last_tid) {
    *out = h->last_thread;
    return 0;
  }
  return thread_key(h, ev, numeric, out);
}

/* The host name id of s, of hash k (agg_name_hash()): from the names
 * seen lately (agg_seen), else interned (folded beyond AGG_HOST_NAMES).
 * Inline: a hit is a load and a compare, less than a call. */
static inline __attribute__((always_inline)) int
name_of(struct agg_host *h, struct idx_str s, uint64_t k, uint32_t *id)
{
  int rc = agg_seen_fold(h->cache, k, &h->fold, &h->names, s, 1, id);

  return rc < 0 ? rc : 0;
}

/* One host event of kind; name_id: for AGG_HOST_RT the call's id in
 * idx_agg.rt_map (the host names are for the others); flags: AGG_HOST_*.
 * Inline in each case of agg_host_event(), which names its kind: the
 * Python functions' (nine events in ten) then test no other kind's. */
static inline __attribute__((always_inline)) int
host_event(struct idx_agg *a, const struct idx_event *ev,
           enum agg_host_kind kind, uint32_t name_id, uint32_t flags)
{
  struct agg_host *h = a->host;
  static const int stream_of[AGG_HOST_KINDS] = { AGG_HOST_STREAM_OP,
                                                 AGG_HOST_STREAM_OP, -1,
                                                 AGG_HOST_STREAM_RT };
  struct agg_rec r;
  uint32_t thread;
  int64_t payload;
  int rc;

  if ((rc = thread_of(h, ev, &thread)) != 0)
    return rc;
  if (thread == UINT32_MAX) {
    h->dropped++;
    return 0;
  }
  if (kind != AGG_HOST_RT &&
      (rc = name_of(h, ev->name, agg_ev_hash(a, ev), &name_id)) < 0)
    return rc;
  if (kind == AGG_HOST_RT)
    payload = (ev->has & IDX_HAS_CORR) && ev->correlation >= 0 &&
                      ev->correlation < PAYLOAD_MAX
                  ? ev->correlation + 1
                  : 0;
  else
    payload = (int64_t)(h->seq & PAYLOAD_MAX);
  h->seq++;
  h->events[kind]++;
  /* A Python function in order is kept by its start, duration, name and
   * thread alone: no record to pack (nine events in ten). */
  if (kind == AGG_HOST_PY && !agg_pystream_late(&h->py, ev->ts_ns))
    return agg_pystream_add(&h->py, ev->ts_ns, ev->dur_ns, name_id,
                            (uint16_t)thread);
  r.start_ns = ev->ts_ns;
  r.dur_ns = ev->dur_ns;
  r.type = UINT32_MAX - (ev->dur_ns < (int64_t)UINT32_MAX ? (uint32_t)ev->dur_ns
                                                          : UINT32_MAX);
  r.aux = (payload << 24) | ((int64_t)(flags & 15) << 20) |
          ((int64_t)kind << 16) | (int64_t)thread;
  r.id = name_id;
  if ((flags & AGG_HOST_PSTEP) &&
      ((void)agg_stat_add(&h->psteps, ev->dur_ns),
       agg_hist_add(&h->pstep_hist, ev->dur_ns) != 0))
    return TR_ENOMEM;
  if (kind == AGG_HOST_PY)
    return agg_runs_add(&h->py.late, &r);
  return agg_runs_add(&h->runs[stream_of[kind]], &r);
}

/* A host label: an ATOM run label, or a profiler step. */
static uint32_t label_flags(const struct idx_event *ev)
{
  int64_t no;

  if (agg_profiler_step_no(ev->name.p, ev->name.n, &no))
    return AGG_HOST_PSTEP;
  return agg_label_kind(ev->name) > 0 ? AGG_HOST_LABEL : 0;
}

int agg_host_event(struct idx_agg *a, const struct idx_doc *doc,
                   const struct idx_event *ev, enum idx_class cls)
{
  (void)doc;
  switch (cls) {
  case IDX_CLASS_RUNTIME: /* its name's id is the device pass's */
    return host_event(a, ev, AGG_HOST_RT, a->ev_name, 0);
  case IDX_CLASS_CPU_OP: return host_event(a, ev, AGG_HOST_OP, 0, 0);
  case IDX_CLASS_PYTHON: return host_event(a, ev, AGG_HOST_PY, 0, 0);
  default:
    /* A bare-array trace (no cat) writes its ops as plain X events. */
    return host_event(a, ev,
                      ev->cat.p == NULL && !label_flags(ev) ? AGG_HOST_OP
                                                            : AGG_HOST_ANNOT,
                      0, label_flags(ev));
  }
}

void agg_host_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  for (int k = 0; k < AGG_HOST_KINDS; k++)
    r->host_events += (int64_t)a->host->events[k];
}

const struct agg_key *agg_host_name(const struct agg_host *h, uint32_t id)
{
  static const struct agg_key none = { "", 0 };

  return id < h->names.n ? &h->names.keys[id] : &none;
}

void agg_host_thread_name(const struct agg_host *h, uint16_t t, char *buf,
                          size_t size)
{
  const struct agg_key *k = t < h->threads.n ? &h->threads.keys[t] : NULL;

  snprintf(buf, size, "%.*s", k ? (int)k->n : 0, k ? k->p : "");
}

/* ---- reading back ---- */

void agg_host_unpack(const struct agg_rec *r, struct agg_host_ev *ev)
{
  int64_t payload = (int64_t)((uint64_t)r->aux >> 24);

  ev->start_ns = r->start_ns;
  ev->dur_ns = r->dur_ns;
  ev->thread = (uint16_t)(r->aux & 0xffff);
  ev->kind = (uint8_t)((r->aux >> 16) & 15);
  ev->flags = (uint8_t)((r->aux >> 20) & 15);
  ev->corr = ev->kind == AGG_HOST_RT ? payload - 1 : -1;
  ev->name = r->id;
}

#define ITER_BATCH 512 /* records read from a stream at a time */

struct stream_buf { /* the next records of one stream */
  struct agg_iter *it;
  struct agg_rec rec[ITER_BATCH];
  int n, pos;
};

struct agg_host_iter {
  struct stream_buf s[AGG_HOST_STREAMS];
  struct agg_host_ev ev; /* the last taken */
  struct agg_pyreader py;
};

static int refill(struct stream_buf *b)
{
  int n = agg_iter_read(b->it, b->rec, ITER_BATCH);

  b->n = n > 0 ? n : 0;
  b->pos = 0;
  return n < 0 ? n : 0;
}

int agg_host_open(struct agg_host *h, struct agg_host_iter **out)
{
  struct agg_host_iter *it = calloc(1, sizeof(*it));
  int rc = 0;

  if (it == NULL)
    return TR_ENOMEM;
  for (int i = 0; i < AGG_HOST_STREAMS && rc == 0; i++)
    if ((rc = agg_runs_seal(&h->runs[i])) == 0 &&
        (rc = agg_iter_open(&h->runs[i], &it->s[i].it)) == 0)
      rc = refill(&it->s[i]);
  if (rc == 0 && (rc = agg_pystream_seal(&h->py)) == 0 &&
      (rc = agg_pyreader_open(&h->py, &it->py)) == 0)
    rc = agg_pyreader_start(&it->py);
  if (rc != 0) {
    agg_host_close(it);
    return rc;
  }
  *out = it;
  return 0;
}

/* a before b in the merged order: start, then the longer (the parent);
 * on a tie the caller's first stream (ops before runtime calls). */
static int before(const struct agg_rec *a, const struct agg_rec *b)
{
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns;
  return a->type < b->type;
}

/* The next record of stream b when it starts at or before limit, taken. */
static int take(struct stream_buf *b, int64_t limit, struct agg_host_ev *ev)
{
  if (b->pos >= b->n || b->rec[b->pos].start_ns > limit)
    return 0;
  int rc;

  agg_host_unpack(&b->rec[b->pos], ev);
  if (++b->pos == b->n && (rc = refill(b)) != 0)
    return rc;
  return 1;
}

int agg_host_pop(struct agg_host_iter *it, int64_t limit,
                 const struct agg_host_ev **ev)
{
  struct stream_buf *op = &it->s[AGG_HOST_STREAM_OP];
  struct stream_buf *rt = &it->s[AGG_HOST_STREAM_RT];
  struct stream_buf *b = op;

  if (op->pos >= op->n ||
      (rt->pos < rt->n && before(&rt->rec[rt->pos], &op->rec[op->pos])))
    b = rt;
  *ev = &it->ev;
  return take(b, limit, &it->ev);
}

int agg_host_py_advance(struct agg_host_iter *it, int64_t t,
                        struct agg_host_stacks *st)
{
  return agg_pyreader_advance(&it->py, t, st);
}

void agg_host_close(struct agg_host_iter *it)
{
  if (it == NULL)
    return;
  for (int i = 0; i < AGG_HOST_STREAMS; i++)
    agg_iter_close(it->s[i].it);
  agg_pyreader_close(&it->py);
  free(it);
}

/* ---- stacks ---- */

int agg_host_stacks_init(struct agg_host_stacks *s)
{
  memset(s, 0, sizeof(*s));
  s->by_thread = calloc(AGG_HOST_THREADS, sizeof(*s->by_thread));
  return s->by_thread == NULL ? TR_ENOMEM : 0;
}

void agg_host_stacks_free(struct agg_host_stacks *s)
{
  if (s == NULL || s->by_thread == NULL)
    return;
  for (uint32_t i = 0; i < s->nactive; i++)
    free(s->by_thread[s->active[i]]);
  free(s->by_thread);
  memset(s, 0, sizeof(*s));
}

/* Pops the frames of thread t that ended by t_ns. */
static void pop_ended(struct agg_host_stacks *s, uint16_t t, int64_t t_ns)
{
  struct agg_host_frame *f = s->by_thread[t];

  while (s->depth[t] > 0) {
    const struct agg_host_ev *e = &f[s->depth[t] - 1].ev;

    if (e->start_ns + e->dur_ns > t_ns)
      break;
    s->depth[t]--;
  }
}

int agg_host_stacks_push(struct agg_host_stacks *s,
                         const struct agg_host_ev *ev, uint32_t user,
                         const struct agg_host_frame **parent)
{
  uint16_t t = ev->thread;
  struct agg_host_frame *f;

  if (s->by_thread[t] == NULL) {
    s->by_thread[t] = malloc(AGG_HOST_DEPTH * sizeof(*s->by_thread[t]));
    if (s->by_thread[t] == NULL)
      return TR_ENOMEM;
    s->active[s->nactive++] = t;
  }
  pop_ended(s, t, ev->start_ns);
  f = s->by_thread[t];
  *parent = s->depth[t] > 0 ? &f[s->depth[t] - 1] : NULL;
  if (s->depth[t] < AGG_HOST_DEPTH) {
    f[s->depth[t]].ev = *ev;
    f[s->depth[t]].user = user;
    s->depth[t]++;
  }
  return 0;
}

const struct agg_host_frame *agg_host_stacks_top(struct agg_host_stacks *s,
                                                 uint16_t t, int64_t t_ns,
                                                 uint32_t skip)
{
  struct agg_host_frame *f = s->by_thread[t];

  if (f == NULL)
    return NULL;
  pop_ended(s, t, t_ns);
  for (uint16_t d = s->depth[t]; d > 0; d--)
    if (!(f[d - 1].ev.flags & skip))
      return &f[d - 1];
  return NULL;
}
