/*
 * The trace formats the indexer reads, one row each (format.c): the name
 * the API and the summary use, the unit of ts/dur, how a file is
 * recognised, and how its events are classified for the aggregation. A
 * new format is a value of enum idx_format (index.h) and a row here, with
 * its two functions; nothing else names a format. Internal to index/.
 */
#ifndef IDX_FORMAT_H
#define IDX_FORMAT_H

#include <stddef.h>

#include "index/read/event.h"

/* What an event counts as in the rank summary (agg.c). */
enum idx_class {
  IDX_CLASS_NONE, /* read for the trace's span only */
  IDX_CLASS_KERNEL,
  IDX_CLASS_COPY,
  IDX_CLASS_MEMSET,
  IDX_CLASS_RUNTIME,   /* host runtime API, kept apart from device time */
  IDX_CLASS_LABEL_CPU, /* a run label on the host (ATOM's prefill[...]) */
  IDX_CLASS_LABEL_GPU, /* the same label projected on the GPU stream */
  IDX_CLASS_CPU_OP,    /* a CPU op (index/host/host.c) */
  IDX_CLASS_PYTHON,    /* a Python function (index/host/host.c) */
  IDX_CLASS_SYNC       /* kineto's cuda_sync: index/cpath/cpath.c */
};

struct idx_format_desc {
  enum idx_format id;
  const char *name;  /* "kineto": API requests, summaries, --format */
  unsigned ts_scale; /* decimal digits from the file's unit to ns: 3 for
                        microseconds, 0 for nanoseconds */
  /* Detection. Top-level keys only this format writes (NULL-terminated);
   * any one of them settles the format before the first event. */
  const char *const *top_keys;
  int bare_array; /* a bare [ ... ] of events is this format */
  /* Claims the first event that is not metadata ("M"); co_id: the event's
   * args had a "co_id". NULL for the default format, which takes what no
   * other row claims. */
  int (*claims)(const struct idx_event *ev, int co_id);
  /* Classification of a ph "X" event. */
  enum idx_class (*classify)(const struct idx_event *ev);
  /* Aggregation. launch_join: device kernels take their launch resources
   * (shared memory, registers) from the runtime launch event of the same
   * correlation (ROCm kineto), else from their own args. meta_device: M
   * metadata on the device lane (pid 2) names the device. */
  int launch_join;
  int meta_device;
};

/* The rows, by enum idx_format (row 0, AUTO, is empty). */
extern const struct idx_format_desc idx_formats[IDX_FORMAT_COUNT];

/* What no other row claims (its claims is NULL). */
#define IDX_FORMAT_DEFAULT IDX_FORMAT_KINETO

/* The row of format f; IDX_FORMAT_AUTO (not settled) gives the default
 * format's row, whose unit metadata events read before the format is
 * settled take. Never NULL: f is an enum idx_format. Inline: the reader
 * and the aggregation ask for every event. */
static inline const struct idx_format_desc *idx_format_get(enum idx_format f)
{
  return &idx_formats[f > IDX_FORMAT_AUTO && f < IDX_FORMAT_COUNT
                          ? f
                          : IDX_FORMAT_DEFAULT];
}

/* The format the first event that is not metadata says the file is. */
enum idx_format idx_format_detect(const struct idx_event *ev, int co_id);

/* The format a top-level key k[0..n) settles, or IDX_FORMAT_AUTO. */
enum idx_format idx_format_of_key(const char *k, size_t n);

/* The format of a bare array of events. */
enum idx_format idx_format_bare(void);

#endif
