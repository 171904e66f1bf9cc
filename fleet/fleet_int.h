/*
 * fleet internals shared by the files of fleet/: libpq connections with
 * traced's timeouts (pg.c), the schema (schema.c), the counters behind
 * /healthz and /metrics (stats.c).
 */
#ifndef FLEET_INT_H
#define FLEET_INT_H

#include <libpq-fe.h>
#include <stdatomic.h>

#include "fleet/fleet.h"

/* ---- pg.c ---- */

/* A blocking connection to dsn, its settings after traced's own (so the
 * DSN may override them): connect_timeout connect_s, statement_timeout
 * statement_ms, TCP keepalives and tcp_user_timeout so that a server gone
 * silent is noticed, application_name "traced <app>". TR_EIO with
 * libpq's message (never a password: the DSN holds none). */
int fleet_pg_connect(const char *dsn, const char *app, int connect_s,
                     int statement_ms, PGconn **out, struct tr_err *err);

/* PQexecParams() of sql with n text parameters (NULL: SQL null; with none,
 * PQexec(): several statements may be given at once): 0 with
 * *res (caller PQclear()s; may be NULL when res is), or TR_EIO with the
 * server's message and its SQLSTATE in err->field. */
int fleet_pg_exec(PGconn *c, const char *sql, int n, const char *const *vals,
                  PGresult **res, struct tr_err *err);

/* True when c can no longer be used (closed or broken): reconnect. */
bool fleet_pg_broken(PGconn *c);

/* ---- schema.c ---- */

/* The fleet's schema version in c's database (0: none yet). */
int fleet_schema_have(PGconn *c, int *have, struct tr_err *err);

/* Applies the missing migrations under the fleet's advisory lock, in one
 * transaction; *from gets the version found. TR_ECONFLICT when the
 * schema is newer than this build; TR_EIO (SQLSTATE 42501 in err->field)
 * when the role may not change it. */
int fleet_schema_migrate(PGconn *c, int *from, struct tr_err *err);

/* The schema at this build's version: migrated when older and may_migrate
 * (a role that may not is told to run `traced fleet migrate`), refused
 * with a clear message when newer. */
int fleet_schema_ready(PGconn *c, bool may_migrate, struct tr_err *err);

/* The fleet's id (fleet.meta), into id (64 bytes). */
int fleet_schema_id(PGconn *c, char *id, struct tr_err *err);

/* Advisory lock keys: migrations, and the order of the fleet's changes
 * (fleet.captures.seq is given under it, just before the commit, so that
 * a follower reading seq > n never skips one committed later). */
#define FLEET_LOCK_MIGRATE 0x7472616365640001LL
#define FLEET_LOCK_SEQ     0x7472616365640002LL

/* ---- stats.c ---- */

struct fleet_stats {
  atomic_bool publishing;         /* a publisher runs */
  atomic_bool connected;          /* its connection is up */
  atomic_int_least64_t outbox;    /* rows in the outbox */
  atomic_int_least64_t oldest_ms; /* the oldest's queued_ms; 0: none */
  atomic_uint_least64_t published, deleted, backfilled, failures;
  atomic_bool following;             /* a lab view follows */
  atomic_int_least64_t heard_ms;     /* its last good read; 0: never */
  atomic_int_least64_t started_ms;   /* when it started */
  atomic_int_least64_t followed_seq; /* the last change applied */
  atomic_uint_least64_t copies, follow_failures;
};

extern struct fleet_stats fleet_stats;

/* The last error of the publisher (lab false) or the follower, kept for
 * /healthz (copied, cut to 255 bytes; NULL clears it). */
void fleet_stats_error(bool lab, const char *msg);

/* Now, ms since the epoch. */
int64_t fleet_now_ms(void);

#endif
