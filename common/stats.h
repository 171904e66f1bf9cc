/*
 * Process-wide counters for GET /metrics, updated by the daemon's workers
 * and read by the HTTP threads, and whether the store accepts writes (for
 * GET /healthz). Lock-free but for the refusal's reason: C11 atomics.
 */
#ifndef TR_STATS_H
#define TR_STATS_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tr_stats {
  atomic_uint_least64_t index_bytes; /* file bytes indexed, all ranks */
  atomic_uint_least64_t index_ns;    /* wall time spent indexing */
  atomic_uint_least64_t ranks_indexed;
  atomic_uint_least64_t ranks_failed;
  atomic_uint_least64_t queue_length;       /* captures and imports waiting */
  atomic_uint_least64_t webhooks_delivered; /* verdicts POSTed (2xx) */
  atomic_uint_least64_t webhooks_failed;    /* given up or dropped */
  /* Set while the store refuses writes (SQLite answered SQLITE_FULL or an
   * I/O error to a write); the reason is kept by tr_stats_store_refused(). */
  atomic_bool store_refusing;
};

extern struct tr_stats tr_stats;

/* A write failed because the store cannot take it (full disk, I/O error):
 * sets the flag and keeps a short reason (copied, cut to 255 bytes). Any
 * thread: the store's write path calls it, so every writer does. */
void tr_stats_store_refused(const char *reason);

/* A write committed: clears the flag. Cheap when it is clear. */
void tr_stats_store_accepted(void);

/* True while the store refuses writes; reason (size bytes, may be NULL)
 * gets why. */
bool tr_stats_store_degraded(char *reason, size_t size);

/* A capture's final state that the store refused (daemon/work.c writes it
 * again until it takes it): the API shows it over the stored row, marked
 * "state_stored": false, and /healthz names it, so that a capture recovery
 * could not write is never shown as running. status and phase are names
 * (phase NULL: the stored one stands); error (may be NULL) is copied. At
 * most TR_PENDING_MAX are kept, a newer one taking the oldest's place.
 * Any thread. */
#define TR_PENDING_MAX 64
void tr_stats_pending_put(int64_t id, const char *status, const char *phase,
                          json_t *error);

/* Its state was written, or is no longer traced's to write. */
void tr_stats_pending_drop(int64_t id);

/* Overlays the pending state of the capture obj describes (its "id"), if
 * any, onto obj. */
void tr_stats_pending_apply(json_t *obj);

/* The captures waiting, as "capture 5 (interrupted), ..." into buf; the
 * number waiting. */
size_t tr_stats_pending_text(char *buf, size_t size);

#endif
