/*
 * Memory over time (docs/ANALYSIS.md, "Memory"): PyTorch's profile_memory
 * writes an instant event "[memory]" at every allocation and free of its
 * caching allocators, args "Bytes" (negative: a free), "Addr", "Total
 * Allocated" and "Total Reserved" after it, "Device Type" and "Device Id"
 * (the host's allocations: type 0, id -1). The room's face to the decode
 * walk, which owns the host stacks:
 *
 *   - event pass: mem_parse() reads an event's args from its text,
 *     mem_device() names its device by a small number;
 *   - time-ordered walk: mem_event() takes each event with the op and
 *     module above it on its thread and the step kind open there: per
 *     device the counts, the peak (the largest Total Allocated, the first
 *     event reaching it), the timeline's buckets (TR_MEMORY_BUCKETS on the
 *     utilisation timeline's grid, mem_span()), and the live allocations
 *     by address,
 *     so that what is live at the peak and what is never freed are known
 *     by the op and module that made them;
 *   - the rows: the pass below decode (agg_memory_head(), mem_*_rows()).
 *
 * What is live at the peak is found in one pass: each (device, op,
 * module) owner keeps its live bytes now and as they were at the latest
 * peak, saved the first time they change after it.
 *
 * Memory: devices at MEM_DEVICES, a device's timeline at
 * TR_MEMORY_BUCKETS buckets, owners at the rank's kernel names cap, live
 * allocations at 16 times it (beyond, an allocation is counted in
 * memory_untracked and not followed). Internal to index/; one thread at
 * a time.
 */
#ifndef IDX_MEMORY_H
#define IDX_MEMORY_H

#include <stdint.h>

#include "index/agg/agg.h"

#define MEM_DEVICES 64 /* devices of a rank */
#define MEM_NONE    UINT32_MAX

/* What a [memory] event says. */
struct mem_ev {
  int64_t bytes, allocated, reserved;
  uint64_t addr;
  int64_t type, id; /* Device Type, Device Id */
};

struct mem_lib;

/* The texts of the walk's ids, for the rows. */
struct mem_names {
  void *ud;
  struct agg_txt (*op)(void *ud, uint32_t op);
  struct agg_txt (*module)(void *ud, uint32_t module);
  struct agg_txt (*kind)(void *ud, uint32_t kind);
};

/* Caps from the rank's kernel names cap (0: IDX_MAX_KERNEL_NAMES); the
 * rows name the walk's ids by names (copied). The caller frees with
 * mem_free(). 0 or TR_ENOMEM. */
int mem_new(uint32_t max_names, const struct mem_names *names,
            struct mem_lib **out);
void mem_free(struct mem_lib *m);

/* 1 when ev is a [memory] event whose args say what it must (Bytes,
 * Total Allocated, Device Type; the others 0 when absent), into *out;
 * else 0. */
int mem_parse(const struct idx_event *ev, struct mem_ev *out);
/* The number of e's device (at most MEM_DEVICES of them; beyond, 0 and
 * *dev = MEM_NONE: the event is counted, not kept). */
int mem_device(struct mem_lib *m, const struct mem_ev *e, uint32_t *dev);

/* The rank's span, before the walk: the timeline's buckets are the
 * utilisation timeline's (agg_timeline.c). */
void mem_span(struct mem_lib *m, int64_t t0, int64_t tend);

/* One event in time order: at ts on device dev (mem_device()), made
 * under op and module (the decode names' ids; MEM_NONE: none) while step
 * kind kind was open on its thread (MEM_NONE: none). 0 or TR_ENOMEM. */
int mem_event(struct mem_lib *m, uint32_t dev, int64_t ts,
              const struct mem_ev *e, uint32_t op, uint32_t module,
              uint32_t kind);

/* The pass (agg.h's AGG_PASS_MAP, mem_rows.c), below decode, of no state
 * of its own: its head and its tables (memory, memory_timeline,
 * memory_ops: mem_*_rows(), times from the rank's t0) read the memory
 * decode's walk followed (idx_agg.mem, NULL: none). */

#endif
