/*
 * The Python functions' stream (host.h): nine events of ten in a trace
 * recorded with stacks, so they are kept compact and cheap to write and
 * read again. kineto writes them sorted by start: each one in order is a
 * record in blocks of PY_BLOCK bytes, spilled to a spill file
 * (agg_spill.c) as blocks fill; one out of order (a thread's block written
 * after another's) goes to a sorted stream of time records (agg_runs.c) and the
 * two are merged when read back. A record is a control byte, then its start
 * after the previous one's and its duration in as few bytes as they need (1 to
 * 8 each, the control byte says how many), its name in 2 bytes or 4, and its
 * thread in 2 unless it is the previous record's: about 8 bytes where
 * fixed fields took 14, so half the bytes to write and read back. Each
 * field is stored and loaded as a whole word and cut by its length, so
 * writing and reading cost no loop and no branch per byte (LEB128 varints
 * took twice the instructions: docs/BENCHMARKS.md). A block starts from an
 * absolute start and names its first record's thread, so blocks decode on
 * their own. The writer of a record is inline (host_int.h): host.c calls
 * it for each of millions of events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/host/host_int.h"

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

int agg_pystream_flush(struct agg_pystream *ps)
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

int agg_pystream_seal(struct agg_pystream *ps)
{
  int rc = ps->f != NULL ? agg_pystream_flush(ps) : 0;

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

/* Passes over the records of the block stream over by t that start no
 * later than the late stream's next (no later question is about them):
 * most records, so a block's are read by a copy of the reader the
 * compiler keeps in registers, stored back once, not record by record. */
static int pass_ended(struct agg_pyreader *pr, int64_t t)
{
  int64_t lim =
      pr->late_has && pr->late_ev.start_ns < t ? pr->late_ev.start_ns : t;
  int rc;

  while (pr->cur_has && pr->cur.start_ns <= lim &&
         pr->cur.start_ns + pr->cur.dur_ns <= t) {
    struct agg_pyreader l = *pr;

    while ((rc = rec_next(&l)) == 1 && l.cur.start_ns <= lim &&
           l.cur.start_ns + l.cur.dur_ns <= t)
      ;
    *pr = l;
    if (rc < 0 || (rc == 0 && (rc = cur_next(pr)) != 0))
      return rc;
  }
  return 0;
}

int agg_pyreader_advance(struct agg_pyreader *pr, int64_t t,
                         struct agg_host_stacks *st)
{
  const struct agg_host_frame *parent;
  const struct agg_host_ev *c = &pr->cur, *e;
  int rc;

  for (;;) {
    if ((rc = pass_ended(pr, t)) != 0)
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
