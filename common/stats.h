/*
 * Process-wide counters for GET /metrics, updated by the daemon's workers
 * and read by the HTTP threads. Lock-free: C11 atomics.
 */
#ifndef TR_STATS_H
#define TR_STATS_H

#include <stdatomic.h>
#include <stdint.h>

struct tr_stats {
  atomic_uint_least64_t index_bytes; /* file bytes indexed, all ranks */
  atomic_uint_least64_t index_ns;    /* wall time spent indexing */
  atomic_uint_least64_t ranks_indexed;
  atomic_uint_least64_t ranks_failed;
  atomic_uint_least64_t queue_length; /* captures and imports waiting */
};

extern struct tr_stats tr_stats;

#endif
