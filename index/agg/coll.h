/*
 * The collectives of one rank as its index writes them for the
 * capture-level matching (coll_match.c): a compact file, native byte order
 * (written and read by the same traced, on the same machine), in the
 * capture's log folder. Internal to index/.
 *
 *   records  struct coll_rec, nrecs of them, in the order each collective
 *            ended; a key is one stream, where kernels run one after the
 *            other, so a key's records are in start order
 *   keys     at keys_at: per key, u32 n, the family's n bytes, u32 lane
 *            (the key's ordinal among the keys of its family, in order of
 *            first start), i64 stream (the trace's own number, -1: none)
 *   kinds    at kinds_at: per step kind, u32 n and the kind's n bytes
 *   trailer  struct coll_trailer, the last bytes of the file
 */
#ifndef IDX_COLL_H
#define IDX_COLL_H

#include <stdint.h>

#define COLL_MAGIC    0x31444e5254434c43ull /* "CLCTRND1" */
#define COLL_TEXT_MAX 4096                  /* bytes of a family or kind */

struct coll_rec {
  int64_t start_ns;   /* absolute, as the rank's trace */
  int64_t dur_ns;     /* the kernel's duration */
  int64_t exposed_ns; /* of it, with no compute kernel running */
  uint32_t key;       /* into the keys */
  int32_t kind;       /* into the kinds: the step kind whose label covers
                         its start (agg_cover_kind()), -1: none */
};

struct coll_trailer {
  uint64_t magic;
  uint64_t nrecs, nkeys, nkinds;
  uint64_t keys_at, kinds_at; /* byte offsets */
  int64_t t0_ns, tend_ns;     /* the rank's span (the summary's t0_ns) */
};

#endif
