/*
 * store internals shared by the files of store/: the connection with its
 * statement cache, the write lock, transactions and row-to-JSON helpers.
 * Internal functions are prefixed store__.
 */
#ifndef STORE_INT_H
#define STORE_INT_H

#include <sqlite3.h>

#include "store/store.h"

struct stmt_slot {
  char *sql; /* the statement's text, owned: the cache key */
  sqlite3_stmt *stmt;
};

struct store {
  sqlite3 *db;
  int mode;                /* STORE_RW or STORE_RO */
  struct stmt_slot *cache; /* prepared statements, linear search by text */
  size_t ncache, capcache;
};

/* schema.c: migration step i takes user_version i to i+1. */
extern const char *const store__migrations[];
extern const int store__schema_version;

/* Records the connection's last SQLite error as TR_EDB ("what: message")
 * and returns TR_EDB. */
int store__db_err(struct store *st, const char *what, struct tr_err *err);

/* The cached prepared statement for sql (a string of fixed fragments,
 * never client data), ready to bind. Give it back with store__done(). */
int store__stmt(struct store *st, const char *sql, sqlite3_stmt **out,
                struct tr_err *err);

/* Resets the statement and clears its bindings: ends its read of the
 * database, so every statement taken must be given back. NULL is ok. */
void store__done(sqlite3_stmt *s);

/* Write transaction: takes the process-wide writer mutex, then BEGIN
 * IMMEDIATE. store__wr_end() commits when rc is 0, else rolls back, and
 * always releases the mutex; it returns rc, or the commit's error. */
int store__wr_begin(struct store *st, struct tr_err *err);
int store__wr_end(struct store *st, int rc, struct tr_err *err);

/* Read transaction: one snapshot for several statements. */
int store__rd_begin(struct store *st, struct tr_err *err);
int store__rd_end(struct store *st, int rc, struct tr_err *err);

/* Binds s, or NULL when s is NULL. */
int store__bind_text(sqlite3_stmt *stmt, int i, const char *s);

/* Steps stmt to the end, appending one object per row to *out (a new array
 * when *out is NULL): keys are the result column names, values the column
 * values (integer, real, text, null); columns whose name ends in "_json"
 * hold JSON text and are parsed, the suffix dropped from the key. Gives
 * stmt back. */
int store__rows(struct store *st, sqlite3_stmt *stmt, json_t **out,
                struct tr_err *err);

/* store__rows() that stops before the rows' column bytes pass max_bytes
 * (0: no bound); the first row is always taken. */
int store__rows_max(struct store *st, sqlite3_stmt *stmt, size_t max_bytes,
                    json_t **out, struct tr_err *err);

/* The JSON value of a column holding JSON text (NULL -> json null). */
json_t *store__col_json(sqlite3_stmt *stmt, int col);

/* Records TR_ENOTFOUND "no capture <id>" (field "id") and returns it. */
int store__no_capture(int64_t id, struct tr_err *err);

/* store__stmt(), then binds ?1 = id and, when the statement has a ?2,
 * ?2 = rank. */
int store__stmt_id(struct store *st, const char *sql, int64_t id, int rank,
                   sqlite3_stmt **out, struct tr_err *err);

/* Steps s, a statement selecting a row of capture id: 0 with the row
 * ready, store__no_capture() when there is none, TR_EDB on error. The
 * caller gives s back. */
int store__step_capture(struct store *st, sqlite3_stmt *s, int64_t id,
                        struct tr_err *err);

/* TR_ENOTFOUND (field "id") unless the capture exists; *status (may be
 * NULL) gets its status, copied into a buffer of 16 bytes. */
int store__capture_exists(struct store *st, int64_t id, char *status,
                          struct tr_err *err);

/* TR_EINVAL naming field unless s (may be NULL: allowed) is one of the
 * NULL-terminated list. */
int store__check_enum(const char *s, const char *const *allowed,
                      const char *field, struct tr_err *err);

/* queries.c: TR_ENOTFOUND (field "rank") unless the capture has that
 * rank indexed (status done). */
int store__rank_exists(struct store *st, int64_t capture_id, int rank,
                       struct tr_err *err);

/* queries.c: the single-rank rows of one small table (categories, memcpy,
 * steps) for the capture object's rank short form. */
int store__rank_table(struct store *st, int64_t capture_id, int rank,
                      const char *table, json_t **out, struct tr_err *err);

/* ranks.c: the rank short forms of a capture (GET /captures/<id>). */
int store__capture_ranks(struct store *st, int64_t id, json_t **out,
                         struct tr_err *err);

#endif
