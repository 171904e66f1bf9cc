/*
 * The Python functions' stream (host.h): nine events of ten in a trace
 * recorded with stacks, so they are kept compact and cheap to write and
 * read again. kineto writes them sorted by start: each one in order is a
 * record in 32 KiB blocks, spilled to a spill file (agg_spill.c) as blocks
 * fill; one out of order (a thread's block written after another's) goes
 * to a sorted stream of time records (agg_runs.c) and the two are merged
 * when read back. A record is a control byte, then its start after the
 * previous one's and its duration in as few bytes as they need (1 to 8
 * each, the control byte says how many), its name in 2 bytes or 4, and its
 * thread in 2 unless it is the previous record's: about 8 bytes where
 * fixed fields took 14, so half the bytes to write and read back. Each
 * field is stored and loaded as a whole word and cut by its length, so
 * writing and reading cost no loop and no branch per byte (LEB128 varints
 * took twice the instructions: docs/BENCHMARKS.md). A block starts from an
 * absolute start and names its first record's thread, so blocks decode on
 * their own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/host/host_int.h"

#define PY_BLOCK  32768 /* bytes of a block */
#define PY_HEAD   4     /* a block's header: its bytes used */
#define PY_RECMAX 24    /* bytes a record may touch (more than it holds) */
#define PY_SLACK  8     /* readable bytes past a block: a word load's reach */

/* The control byte: the start's and the duration's bytes less one in bits
 * 0-2 and 3-5, a 4-byte name (bit 6), a thread that follows (bit 7). */
#define PY_WIDE_NAME 0x40u
#define PY_THREAD    0x80u

int agg_pystream_init(struct agg_pystream *ps, struct agg_spill *sp)
{
  memset(ps, 0, sizeof(*ps));
  ps->sp = sp;
  if ((ps->buf = malloc(PY_BLOCK + PY_SLACK)) == NULL ||
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
  if (ps->f == NULL) {
    if ((rc = agg_spill_open(ps->sp, &ps->f)) != 0)
      return rc;
    /* Whole blocks only: each one write(), not a buffer's worth and its
     * rest (stdio's buffer is a page). */
    setvbuf(ps->f, NULL, _IONBF, 0);
  }
  memcpy(ps->buf, &used, PY_HEAD);
  if ((rc = agg_spill_write(ps->sp, ps->f, ps->buf, PY_BLOCK)) != 0)
    return rc;
  ps->blocks++;
  ps->len = PY_HEAD;
  return 0;
}

int agg_pystream_add(struct agg_pystream *ps, int64_t start_ns, int64_t dur_ns,
                     uint32_t name, uint16_t thread)
{
  unsigned char *p, *c;
  uint64_t ds, dur = (uint64_t)dur_ns;
  unsigned wd, wdur, ctl;
  int rc;

  if (ps->len > PY_BLOCK - PY_RECMAX && (rc = flush_block(ps)) != 0)
    return rc;
  /* A block's first start is absolute (biased: starts may be negative),
   * the rest are from the one before. */
  if (ps->len == PY_HEAD)
    ds = (uint64_t)start_ns ^ (1ull << 63);
  else
    ds = (uint64_t)(start_ns - ps->last_start);
  c = p = ps->buf + ps->len;
  wd = agg_width(ds);
  wdur = agg_width(dur);
  ctl = (wd - 1) | (wdur - 1) << 3;
  p = agg_put_word(agg_put_word(p + 1, ds, wd), dur, wdur);
  if (name > UINT16_MAX) {
    ctl |= PY_WIDE_NAME;
    memcpy(p, &name, 4);
    p += 4;
  } else {
    memcpy(p, &name, 2); /* little-endian: its low half */
    p += 2;
  }
  if (c == ps->buf + PY_HEAD || thread != ps->last_thread) {
    ctl |= PY_THREAD;
    memcpy(p, &thread, 2);
    p += 2;
  }
  *c = (unsigned char)ctl;
  ps->len = (size_t)(p - ps->buf);
  ps->last_start = start_ns;
  ps->last_thread = thread;
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
  pr->cur.corr = -1;
  pr->cur.kind = AGG_HOST_PY;
  if ((pr->block = malloc(PY_BLOCK + PY_SLACK)) == NULL ||
      agg_iter_open(&ps->late, &pr->late) != 0) {
    agg_pyreader_close(pr);
    return TR_ENOMEM;
  }
  return 0;
}

void agg_pyreader_close(struct agg_pyreader *pr)
{
  free(pr->block);
  agg_iter_close(pr->late);
  memset(pr, 0, sizeof(*pr));
}

/* The next record of the block at pr->p into pr->cur: 1, 0 at the
 * block's end, TR_EIO when the block is not one agg_pystream_add() wrote
 * (the block is readable PY_SLACK bytes past its end). Read in place as
 * the walk asks, never decoded whole into an array first: most records
 * have ended by the time the walk asks and are passed over. */
static inline int rec_next(struct agg_pyreader *pr)
{
  const unsigned char *p = pr->p;
  struct agg_host_ev *e = &pr->cur;
  unsigned ctl, wd, wdur, wname;
  uint64_t ds;

  if (p >= pr->end)
    return 0;
  ctl = *p;
  wd = (ctl & 7) + 1;
  wdur = (ctl >> 3 & 7) + 1;
  wname = ctl & PY_WIDE_NAME ? 4 : 2;
  if (pr->end - p < PY_RECMAX &&
      pr->end - p < 1 + wd + wdur + wname + (ctl & PY_THREAD ? 2 : 0))
    return TR_EIO;
  ds = agg_get_word(++p, wd);
  e->dur_ns = (int64_t)agg_get_word(p += wd, wdur);
  e->name = (uint32_t)agg_get_word(p += wdur, wname);
  p += wname;
  if (ctl & PY_THREAD) {
    memcpy(&e->thread, p, 2);
    p += 2;
  }
  e->start_ns =
      pr->first ? (int64_t)(ds ^ (1ull << 63)) : e->start_ns + (int64_t)ds;
  pr->first = 0;
  pr->p = p;
  return 1;
}

/* The next block of the compact stream to read (the one still in memory
 * last): 1, 0 at the end. */
static int next_block(struct agg_pyreader *pr)
{
  struct agg_pystream *ps = pr->ps;
  const unsigned char *b = pr->block;
  uint32_t used;

  if (pr->next < ps->blocks) {
    if (pread(fileno(ps->f), pr->block, PY_BLOCK,
              (off_t)(pr->next * PY_BLOCK)) != PY_BLOCK)
      return TR_EIO;
    pr->next++;
    memcpy(&used, pr->block, PY_HEAD);
    if (used > PY_BLOCK || used < PY_HEAD)
      return TR_EIO;
  } else if (!pr->tail_done && ps->f == NULL) { /* the block never spilled */
    pr->tail_done = 1;
    b = ps->buf;
    used = (uint32_t)ps->len;
  } else {
    return 0;
  }
  pr->p = b + PY_HEAD;
  pr->end = b + used;
  pr->first = 1;
  /* A block's first record names its thread. */
  return used == PY_HEAD || (b[PY_HEAD] & PY_THREAD) ? 1 : TR_EIO;
}

/* The next record of the block stream into pr->cur (cur_has 0 at its
 * end). */
static int cur_next(struct agg_pyreader *pr)
{
  int rc;

  while ((rc = rec_next(pr)) == 0)
    if ((rc = next_block(pr)) <= 0) {
      pr->cur_has = 0;
      return rc;
    }
  pr->cur_has = rc == 1;
  return rc < 0 ? rc : 0;
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
  int rc = cur_next(pr);

  return rc ? rc : late_next(pr);
}

int agg_pyreader_advance(struct agg_pyreader *pr, int64_t t,
                         struct agg_host_stacks *st)
{
  const struct agg_host_frame *parent;
  const struct agg_host_ev *c = &pr->cur, *e;
  int rc;

  for (;;) {
    /* Over by t: passed (no later question is about them). */
    while (pr->cur_has && c->start_ns <= t && c->start_ns + c->dur_ns <= t &&
           (!pr->late_has || c->start_ns <= pr->late_ev.start_ns))
      if ((rc = rec_next(pr)) != 1 && (rc = cur_next(pr)) != 0)
        return rc;
    e = pr->cur_has ? c : NULL;
    if (pr->late_has && (e == NULL || pr->late_ev.start_ns < e->start_ns))
      e = &pr->late_ev;
    if (e == NULL || e->start_ns > t)
      return 0;
    if (e->start_ns + e->dur_ns > t &&
        (rc = agg_host_stacks_push(st, e, 0, &parent)) != 0)
      return rc;
    if ((rc = e == &pr->late_ev ? late_next(pr) : cur_next(pr)) != 0)
      return rc;
  }
}
