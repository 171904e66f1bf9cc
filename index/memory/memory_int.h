/*
 * The memory room's insides (memory.h), shared by mem_lib.c (the events)
 * and mem_rows.c (the rows). Internal to index/memory/.
 */
#ifndef IDX_MEMORY_INT_H
#define IDX_MEMORY_INT_H

#include "index/memory/memory.h"

struct mem_bucket { /* the events of a timeline bucket */
  int64_t amin, amax, rmax;
  uint64_t events;
};

struct mem_dev {
  int64_t type, id;
  uint64_t events, allocs, frees;
  int64_t alloc_bytes, freed_bytes, freed_before;
  int64_t first, last;   /* Total Allocated of its first, last event */
  int64_t peak, peak_ts; /* the largest Total Allocated, first at */
  uint32_t peak_kind;    /* the step kind open then, MEM_NONE */
  uint64_t peak_stamp;   /* mem_lib.stamp of the peak */
  int64_t peak_reserved; /* the largest Total Reserved */
  struct mem_bucket *tl; /* [mem_lib.nb], NULL until an event */
};

struct mem_owner { /* a (device, op, module) */
  uint32_t dev, op, module;
  uint64_t allocs;
  int64_t alloc_bytes;
  int64_t live_bytes, live_count;   /* now */
  int64_t peak_bytes, peak_count;   /* at the device's peak, once changed */
  uint64_t stamp;                   /* mem_lib.stamp of its last change */
  int64_t never_bytes, never_count; /* at the end (mem_rows) */
};

struct mem_alloc { /* a live allocation */
  int64_t bytes;
  uint32_t owner;
};

struct mem_lib {
  struct mem_dev dev[MEM_DEVICES];
  uint32_t ndev;
  uint64_t events, devices_folded, untracked, owners_folded;
  uint64_t stamp;          /* one per change, in time order */
  int64_t t0, span, width; /* the timeline's grid */
  uint32_t nb;
  struct agg_map owner_keys; /* (dev, op, module) -> owner */
  struct mem_owner *owner;
  size_t owner_cap;
  uint32_t max_owners;
  struct agg_corr live; /* address ^ device -> struct mem_alloc */
  struct mem_names names;
};

#endif
