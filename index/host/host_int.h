/*
 * The insides of index/host/: the Python functions' stream, written by
 * the event pass and read back in start order (host_py.c, for host.c).
 * Internal to index/host/.
 */
#ifndef IDX_HOST_INT_H
#define IDX_HOST_INT_H

#include "index/host/host.h"

/* The Python stream's blocks (host_py.c says their format). A block is
 * one write() and one pread() of the spill file: 120 KiB takes a quarter
 * of the calls 32 KiB did (a 1 GB trace's stream is about 26 MB) and
 * stays under the size malloc() maps on its own (index/cli.c), so that
 * its two buffers come from the heap. */
#define PY_BLOCK  122880 /* bytes of a block: 120 KiB */
#define PY_HEAD   4      /* a block's header: its bytes used */
#define PY_RECMAX 24     /* bytes a record may touch (more than it holds) */
#define PY_SLACK  8      /* readable bytes past a block: a word load's reach */

/* The control byte: the start's and the duration's bytes less one in bits
 * 0-2 and 3-5, a 4-byte name (bit 6), a thread that follows (bit 7). */
#define PY_WIDE_NAME 0x40u
#define PY_THREAD    0x80u

struct agg_pyreader {
  struct agg_pystream *ps;
  unsigned char *block;
  /* The records of the block not read yet (p at its first: first). */
  const unsigned char *p, *end;
  int first;
  /* The next record of the blocks in order, when cur_has. */
  struct agg_host_ev cur;
  int cur_has;
  uint64_t next; /* the next block to read */
  int tail_done;
  struct agg_iter *late;
  struct agg_host_ev late_ev;
  int late_has;
};

/* host_py.c, for host.c: the Python stream's writer and reader. An event
 * out of order goes to ps->late as host.c packs a time record. */
int agg_pystream_init(struct agg_pystream *ps, struct agg_spill *sp);
/* 1 when a Python function starting at start_ns comes out of order: its
 * record goes to ps->late, else to agg_pystream_add(). */
static inline int agg_pystream_late(const struct agg_pystream *ps,
                                    int64_t start_ns)
{
  return ps->any && start_ns < ps->last_start;
}
/* Writes the block being filled to the spill file (none when empty). */
int agg_pystream_flush(struct agg_pystream *ps);
/* A Python function in order (not agg_pystream_late()); inline: nine
 * events in ten of a trace with stacks. */
static inline int agg_pystream_add(struct agg_pystream *ps, int64_t start_ns,
                                   int64_t dur_ns, uint32_t name,
                                   uint16_t thread)
{
  unsigned char *p, *c;
  uint64_t ds, dur = (uint64_t)dur_ns;
  unsigned wd, wdur, ctl;
  int rc;

  if (ps->len > PY_BLOCK - PY_RECMAX && (rc = agg_pystream_flush(ps)) != 0)
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

int agg_pystream_seal(struct agg_pystream *ps);
void agg_pystream_free(struct agg_pystream *ps);
int agg_pyreader_open(struct agg_pystream *ps, struct agg_pyreader *pr);
int agg_pyreader_start(struct agg_pyreader *pr);
int agg_pyreader_advance(struct agg_pyreader *pr, int64_t t,
                         struct agg_host_stacks *st);
void agg_pyreader_close(struct agg_pyreader *pr);
/* A host time record as an event. */
void agg_host_unpack(const struct agg_rec *r, struct agg_host_ev *ev);

#endif
