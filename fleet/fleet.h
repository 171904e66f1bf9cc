/*
 * fleet: one history for the whole lab in PostgreSQL (docs/FLEET.md),
 * through libpq. Three parts:
 *
 *   the schema    versioned migrations of the fleet's tables, roles and
 *                 row-level security, applied under an advisory lock by
 *                 `traced fleet migrate` and by any node whose role may
 *                 (schema.c);
 *   the publisher a node's outbox (store/fleet_out.c) sent to PostgreSQL,
 *                 one capture per transaction, from libuv's thread pool
 *                 (publish.c);
 *   the lab view  a follower thread mirroring the fleet's capture list
 *                 into a database file of the lab's own, and the captures
 *                 HTTP threads ask for copied into it from PostgreSQL
 *                 (lab.c).
 *
 * Every libpq call blocks, bounded by connect_timeout, statement_timeout
 * and TCP timeouts: none runs on the loop thread.
 */
#ifndef FLEET_H
#define FLEET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "common/config.h"
#include "common/tr.h"
#include "store/store.h"

/* The schema version this build writes and reads (schema.c). */
extern const int fleet_schema_version;

/* TR_EINVAL naming "fleet_dsn" unless dsn is a libpq conninfo (key=value
 * or a postgresql:// URI) without a password: passwords come from a file
 * (passfile=, PGPASSFILE or ~/.pgpass), never from traced's
 * configuration. */
int fleet_dsn_check(const char *dsn, struct tr_err *err);

/* `traced fleet migrate [--config FILE] [--KEY VALUE ...]` (cfg read from
 * those): applies the missing migrations to fleet_dsn's database and says
 * from which version to which. Returns the exit status (0, 1 failed, 2
 * bad usage). */
int fleet_cli_main(const struct cfg *cfg, const char *command);

/* ---- the publisher (loop thread) ---- */

struct fleet_pub;

/* Starts publishing db's outbox to cfg->fleet_dsn (checked first; the
 * store's outbox switched on). cfg and loop are borrowed until
 * fleet_pub_free(). */
int fleet_pub_start(uv_loop_t *loop, const struct cfg *cfg,
                    struct fleet_pub **out, struct tr_err *err);

/* Stops: cancels a publish in flight (it is sent again at the next start:
 * the outbox keeps it), closes the timer; done(ud) on the loop once
 * nothing of it runs. */
void fleet_pub_stop(struct fleet_pub *p, void (*done)(void *ud), void *ud);

/* After the loop ended. NULL is ok. */
void fleet_pub_free(struct fleet_pub *p);

/* ---- health and metrics (any thread) ---- */

/* True (with a reason for /healthz) while the outbox holds a capture
 * older than fleet_outbox_max_age_s, or a lab view has not reached
 * PostgreSQL for as long. */
bool fleet_degraded(const struct cfg *cfg, char *reason, size_t size);

/* The fleet's gauges and counters, Prometheus text. Nothing without
 * fleet_dsn. */
void fleet_metrics(const struct cfg *cfg, FILE *f);

/* ---- the lab view ---- */

struct fleet_lab;

/* Starts following cfg->fleet_dsn into <db>.fleet (fleet_view). */
int fleet_lab_start(const struct cfg *cfg, struct fleet_lab **out,
                    struct tr_err *err);

/* fn(ud, id) is called (from the follower thread) for each copied capture
 * whose answers are stale (deleted in the fleet, dropped from the copies,
 * or its node:id naming a newer capture now). */
void fleet_lab_on_drop(struct fleet_lab *lab, void (*fn)(void *ud, int64_t id),
                       void *ud);

/* Stops the follower and closes every thread's connections: after the
 * HTTP threads have stopped. NULL is ok. */
void fleet_lab_stop(struct fleet_lab *lab);

/* This thread's read-only connection to the lab's database file, where
 * the copies answer (capture ids there are store_fleet_ref.cache_id). */
struct store *fleet_lab_store(struct fleet_lab *lab, struct tr_err *err);

/* True when text names a capture of the fleet: "node:id" or a UUID (a
 * bare id is the local node's). */
bool fleet_ref_syntax(const char *text);

/*
 * The capture ref names ("node:id": the newest of that node's captures
 * numbered id; or its UUID), copied into the lab's file when it is not
 * yet (from PostgreSQL, on the calling thread, within
 * fleet_read_timeout_ms): *out with cache_id. TR_EINVAL (field) for a
 * malformed ref, TR_ENOTFOUND (field) when the fleet has no such
 * capture, TR_EIO while PostgreSQL cannot be read (the copies already
 * made still answer), TR_ELIMIT when it is larger than fleet_cache_mb.
 */
int fleet_lab_get(struct fleet_lab *lab, const char *ref, const char *field,
                  struct store_fleet_ref *out, struct tr_err *err);

/* The baseline of ref across the fleet (store_fleet_baseline()), copied:
 * 1 when there is none. */
int fleet_lab_baseline(struct fleet_lab *lab, const struct store_fleet_ref *ref,
                       struct store_fleet_ref *out, struct tr_err *err);

#endif
