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
  struct agg_host_ev *dec; /* the block decoded */
  uint32_t ndec, pos;
  uint64_t next; /* the next block to read */
  int tail_done;
  struct agg_iter *late;
  struct agg_host_ev late_ev;
  int late_has;
};

/* host_py.c, for host.c: the Python stream's writer and reader. r is the
 * event's time record (host.c's packing, for the out-of-order path). */
int agg_pystream_init(struct agg_pystream *ps, struct agg_spill *sp);
int agg_pystream_add(struct agg_pystream *ps, const struct agg_rec *r,
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
