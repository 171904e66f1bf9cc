/*
 * The insides of index/host/: the Python functions' stream, written by
 * the event pass and read back in start order (host_py.c, for host.c).
 * Internal to index/host/.
 */
#ifndef IDX_HOST_INT_H
#define IDX_HOST_INT_H

#include "index/host/host.h"

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
/* A Python function in order (not agg_pystream_late()). */
int agg_pystream_add(struct agg_pystream *ps, int64_t start_ns, int64_t dur_ns,
                     uint32_t name, uint16_t thread);
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
