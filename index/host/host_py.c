/*
 * The Python functions' stream (host.h): nine events of ten in a trace
 * recorded with stacks, so they are kept compact and cheap to write and
 * read again. kineto writes them sorted by start: each one in order is 12
 * bytes in 64 KiB blocks (its start after the previous one's and its
 * duration as 32 bits, the rare one beyond escaped to 64; its name and
 * thread in 32 bits), spilled to a spill file (agg_spill.c) as blocks
 * fill; one out of order (a thread's block written after another's) goes
 * to a sorted stream of time records (agg_runs.c) and the two are merged
 * when read back. A block starts from an absolute start, so blocks decode
 * on their own. (Varints took fewer bytes, and twice the instructions to
 * write and read: docs/BENCHMARKS.md.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/host/host_int.h"

#define PY_BLOCK       65536      /* bytes of a block */
#define PY_RECMIN      12         /* bytes one record takes at least */
#define PY_RECMAX      28         /* and at most */
#define PY_HEAD        4          /* a block's header: its bytes used */
#define PY_ESC         UINT32_MAX /* a 32-bit field whose value follows in 64 */
#define PY_THREAD_BITS 12         /* a thread index's, below its name id's */

_Static_assert(AGG_HOST_THREADS <= 1u << PY_THREAD_BITS &&
                   AGG_HOST_NAMES < 1u << (32 - PY_THREAD_BITS),
               "a name id (the fold's too) and a thread fit 32 bits");

static unsigned char *put_wide(unsigned char *p, uint64_t v)
{
  uint32_t w = v < PY_ESC ? (uint32_t)v : PY_ESC;

  memcpy(p, &w, 4);
  if (w != PY_ESC)
    return p + 4;
  memcpy(p + 4, &v, 8);
  return p + 12;
}

static const unsigned char *get_wide(const unsigned char *p,
                                     const unsigned char *end, uint64_t *v)
{
  uint32_t w;

  if (end - p < 4)
    return NULL;
  memcpy(&w, p, 4);
  if (w != PY_ESC) {
    *v = w;
    return p + 4;
  }
  if (end - p < 12)
    return NULL;
  memcpy(v, p + 4, 8);
  return p + 12;
}

int agg_pystream_init(struct agg_pystream *ps, struct agg_spill *sp)
{
  memset(ps, 0, sizeof(*ps));
  ps->sp = sp;
  if ((ps->buf = malloc(PY_BLOCK)) == NULL ||
      agg_runs_init(&ps->late, 1u << 12, sp) != 0) {
    agg_pystream_free(ps);
    return TR_ENOMEM;
  }
  agg_runs_window(&ps->late, 1u << 12);
  ps->len = PY_HEAD;
  return 0;
}

void agg_pystream_free(struct agg_pystream *ps)
{
  if (ps == NULL)
    return;
  free(ps->buf);
  agg_runs_free(&ps->late);
  if (ps->f != NULL)
    fclose(ps->f);
  memset(ps, 0, sizeof(*ps));
}

static int flush_block(struct agg_pystream *ps)
{
  uint32_t used = (uint32_t)ps->len;
  int rc;

  if (ps->len == PY_HEAD)
    return 0;
  if (ps->f == NULL && (rc = agg_spill_open(ps->sp, &ps->f)) != 0)
    return rc;
  memcpy(ps->buf, &used, PY_HEAD);
  if ((rc = agg_spill_write(ps->sp, ps->f, ps->buf, PY_BLOCK)) != 0)
    return rc;
  ps->blocks++;
  ps->len = PY_HEAD;
  return 0;
}

int agg_pystream_add(struct agg_pystream *ps, const struct agg_rec *r,
                     uint32_t name, uint16_t thread)
{
  unsigned char *p;
  int rc;

  ps->events++;
  if (ps->any && r->start_ns < ps->last_start)
    return agg_runs_add(&ps->late, r);
  if (ps->len > PY_BLOCK - PY_RECMAX && (rc = flush_block(ps)) != 0)
    return rc;
  p = ps->buf + ps->len;
  /* A block's first start is absolute (biased: starts may be negative),
   * the rest are from the one before. */
  if (ps->len == PY_HEAD)
    p = put_wide(p, (uint64_t)r->start_ns ^ (1ull << 63));
  else
    p = put_wide(p, (uint64_t)(r->start_ns - ps->last_start));
  p = put_wide(p, (uint64_t)r->dur_ns);
  name = name << PY_THREAD_BITS | thread;
  memcpy(p, &name, 4);
  p += 4;
  ps->len = (size_t)(p - ps->buf);
  ps->last_start = r->start_ns;
  ps->any = 1;
  return 0;
}

int agg_pystream_seal(struct agg_pystream *ps)
{
  int rc = ps->f != NULL ? flush_block(ps) : 0;

  return rc ? rc : agg_runs_seal(&ps->late);
}

/* ---- reading back ---- */

int agg_pyreader_open(struct agg_pystream *ps, struct agg_pyreader *pr)
{
  memset(pr, 0, sizeof(*pr));
  pr->ps = ps;
  if ((pr->block = malloc(PY_BLOCK)) == NULL ||
      (pr->dec = malloc((PY_BLOCK / PY_RECMIN) * sizeof(*pr->dec))) == NULL ||
      agg_iter_open(&ps->late, &pr->late) != 0) {
    agg_pyreader_close(pr);
    return TR_ENOMEM;
  }
  return 0;
}

void agg_pyreader_close(struct agg_pyreader *pr)
{
  free(pr->block);
  free(pr->dec);
  agg_iter_close(pr->late);
  memset(pr, 0, sizeof(*pr));
}

/* Decodes the block text b[PY_HEAD .. used) into pr->dec. */
static int decode(struct agg_pyreader *pr, const unsigned char *b,
                  uint32_t used)
{
  const unsigned char *p = b + PY_HEAD, *end = b + used;
  int64_t start = 0;

  pr->ndec = pr->pos = 0;
  while (p < end) {
    uint64_t ds, dur;
    uint32_t name;
    uint16_t thread;
    struct agg_host_ev *e = &pr->dec[pr->ndec];

    if ((p = get_wide(p, end, &ds)) == NULL ||
        (p = get_wide(p, end, &dur)) == NULL || end - p < 4)
      return TR_EIO;
    memcpy(&name, p, 4);
    thread = (uint16_t)(name & ((1u << PY_THREAD_BITS) - 1));
    name >>= PY_THREAD_BITS;
    p += 4;
    start = pr->ndec == 0 ? (int64_t)(ds ^ (1ull << 63)) : start + (int64_t)ds;
    e->start_ns = start;
    e->dur_ns = (int64_t)dur;
    e->corr = -1;
    e->name = name;
    e->thread = thread;
    e->kind = AGG_HOST_PY;
    e->flags = 0;
    pr->ndec++;
  }
  return 0;
}

/* The next block of the compact stream decoded (the one still in memory
 * last); ndec 0 at the end. */
static int next_block(struct agg_pyreader *pr)
{
  struct agg_pystream *ps = pr->ps;
  uint32_t used;

  pr->ndec = pr->pos = 0;
  if (pr->next < ps->blocks) {
    if (pread(fileno(ps->f), pr->block, PY_BLOCK,
              (off_t)(pr->next * PY_BLOCK)) != PY_BLOCK)
      return TR_EIO;
    pr->next++;
    memcpy(&used, pr->block, PY_HEAD);
    return used <= PY_BLOCK ? decode(pr, pr->block, used) : TR_EIO;
  }
  if (!pr->tail_done) { /* the block never spilled */
    pr->tail_done = 1;
    if (ps->f == NULL)
      return decode(pr, ps->buf, (uint32_t)ps->len);
  }
  return 0;
}

/* The late stream's next record into pr->late_ev. */
static int late_next(struct agg_pyreader *pr)
{
  struct agg_rec r;
  int rc = agg_iter_next(pr->late, &r);

  pr->late_has = rc == 1;
  if (rc == 1)
    agg_host_unpack(&r, &pr->late_ev);
  return rc < 0 ? rc : 0;
}

int agg_pyreader_start(struct agg_pyreader *pr)
{
  int rc = next_block(pr);

  return rc ? rc : late_next(pr);
}

int agg_pyreader_advance(struct agg_pyreader *pr, int64_t t,
                         struct agg_host_stacks *st)
{
  const struct agg_host_frame *parent;
  const struct agg_host_ev *e;
  int rc;

  for (;;) {
    const struct agg_host_ev *c = pr->dec + pr->pos, *end = pr->dec + pr->ndec;

    /* Over by t: passed (no later question is about them). */
    while (c < end && c->start_ns <= t && c->start_ns + c->dur_ns <= t &&
           (!pr->late_has || c->start_ns <= pr->late_ev.start_ns))
      c++;
    pr->pos = (uint32_t)(c - pr->dec);
    if (c == end && pr->ndec > 0) {
      if ((rc = next_block(pr)) != 0)
        return rc;
      continue;
    }
    e = c < end ? c : NULL;
    if (pr->late_has && (e == NULL || pr->late_ev.start_ns < e->start_ns))
      e = &pr->late_ev;
    if (e == NULL || e->start_ns > t)
      return 0;
    if (e->start_ns + e->dur_ns > t &&
        (rc = agg_host_stacks_push(st, e, 0, &parent)) != 0)
      return rc;
    if (e == &pr->late_ev)
      rc = late_next(pr);
    else
      rc = ++pr->pos == pr->ndec ? next_block(pr) : 0;
    if (rc != 0)
      return rc;
  }
}
