/*
 * store internals shared by the files of store/: the connection with its
 * statement cache, the write lock, transactions and row-to-JSON helpers.
 * Internal functions are prefixed store__.
 */
#ifndef STORE_INT_H
#define STORE_INT_H

#include "store/estimate.h"

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

/* fields.c: the rank summary's members (common/summary.h) as the store
 * sees them. */
enum store__fty {
  F_INT,       /* integer, required */
  F_INT_NULL,  /* integer or null/absent */
  F_TEXT,      /* string, required */
  F_TEXT_NULL, /* string or null/absent */
  F_NAME,      /* string, required, interned into names: column name_id */
  F_JSON,      /* any JSON value, required, stored as compact text */
  F_JSON_NULL, /* JSON value or null/absent */
  F_REAL,      /* real number, required */
  F_REAL_NULL, /* real number or null/absent */
  F_AVG,       /* derived when read: total_ns / count; not stored */
  F_SHARE,     /* derived when read: total_ns / a rank column; not stored */
  F_RATIO,     /* derived when read: a column / count; not stored */
  F_PART       /* derived when read: total_ns / a column; not stored */
};

enum store__fall { /* how a row sums over ranks: common/summary.h's ALL */
                   A_KEY,
                   A_SUM,
                   A_MIN,
                   A_MAX,
                   A_ANY,
                   A_MIXED,
                   A_NONE,
                   A_EACH,
                   A_AVG,
                   A_SHARE,
                   A_RATIO,
                   A_PART
};

struct store__field {
  const char *key; /* member of the summary object or row */
  const char *col; /* column it is stored in */
  enum store__fty ty;
  enum store__fall all;
  const char *den; /* F_SHARE: the ranks column it is a share of; F_RATIO:
                      the row's column over its count; F_PART: the row's
                      column total_ns is a part of */
};

struct store__table {
  const char *member; /* the summary's array, and the SQL table */
  const struct store__field *f;
  size_t n;
};

extern const struct store__field store__rank_fields[];
extern const size_t store__rank_nfields;
extern const struct store__table store__tables[];
extern const size_t store__ntables;
/* The capture's own tables (common/summary.h's TR_CAP_TABLES). */
extern const struct store__table store__cap_tables[];
extern const size_t store__ncap_tables;

/* The table of the summary member (kernels, launches...), or NULL. */
const struct store__table *store__table(const char *member);

/* False for the derived members (avg_ns, share, padded_share). */
bool store__field_stored(const struct store__field *f);

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

/* sql's cached statement (store__stmt()) with ?1, ?2... bound in turn,
 * one conversion of types a parameter, each taking the next argument:
 * "%d" int, "%ld" int64_t, "%f" double, "%s" const char * (copied; NULL
 * binds null). They are printf's, so that the compiler checks every
 * argument against its conversion (-Wformat, in -Wall). Conversions
 * past a '|' are bound only where the statement has their parameter (a
 * statement text made for several uses, a parameter numbering shared by
 * statements that skip some); arguments past those bound are not read.
 * Another conversion, or before any '|' a parameter the statement lacks,
 * is TR_EDB, the statement given back.
 * With out, the statement is handed over (give it back with
 * store__done(); store__rows() and the like give it back); with out
 * NULL, it is stepped to its end (it returns no row) and given back: 0,
 * or TR_EDB ("what: message"). Called as store__prep() and
 * store__run(). */
int store__exec(struct store *st, const char *what, const char *sql,
                sqlite3_stmt **out, struct tr_err *err, const char *types, ...)
    __attribute__((format(printf, 6, 7)));
/* A statement without parameters binds "", and "%s" binds NULL as null:
 * both on purpose, though printf's would be warned of (store/ calls no
 * sprintf(), the other check -Wformat-overflow makes). */
#pragma GCC diagnostic ignored "-Wformat-zero-length"
#ifndef __clang__ /* clang has no such check */
#pragma GCC diagnostic ignored "-Wformat-overflow"
#endif

/* The bound statement of sql into *out: store__prep(st, sql, &s, err,
 * "%ld%s", id, name). */
#define store__prep(st, sql, out, err, ...)                                    \
  store__exec(st, NULL, sql, out, err, __VA_ARGS__)

/* sql, a statement returning no row, run once: store__run(st, "write",
 * sql, err, "%ld", id). */
#define store__run(st, what, sql, err, ...)                                    \
  store__exec(st, what, sql, NULL, err, __VA_ARGS__)

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

/* Called with each row of a statement (store__rows_each()), borrowed for
 * the call; a non-zero return stops the rows and is returned. */
typedef int (*store__row_fn)(void *ud, json_t *row, struct tr_err *err);

/* Steps stmt to the end, handing each row, made as store__rows() makes
 * it, to fn: memory holds one row at a time. Gives stmt back. */
int store__rows_each(struct store *st, sqlite3_stmt *stmt, store__row_fn fn,
                     void *ud, struct tr_err *err);

/* A page of a list: store__rows_max()'s rows into *out (a new array),
 * each row made an item by finish(). Gives s back. */
int store__page(struct store *st, sqlite3_stmt *s, size_t max_bytes,
                void (*finish)(json_t *row), json_t **out, struct tr_err *err);

/* The rows of sql, a statement without parameters, as store__rows()
 * makes them, into *out (a new array). */
int store__rows_of(struct store *st, const char *sql, json_t **out,
                   struct tr_err *err);

/* The rows of sql (?1 = id, ?2 = rank where it has one) as
 * store__rows() makes them, into *out (a new array). */
int store__rows_id(struct store *st, const char *sql, int64_t id, int rank,
                   json_t **out, struct tr_err *err);

/* Fills elem from the row s stands on (store__collect()): 1 keeps it, 0
 * skips the row, TR_ENOMEM stops (elem, begun, is kept for the caller to
 * free what it holds). */
typedef int (*store__fill_fn)(sqlite3_stmt *s, void *elem, void *ud);

/* Steps s to its end, each row made an element (size bytes) of a new
 * array by fill(s, elem, ud): *out, *n of them, which the caller frees
 * (NULL with none), on error too. Gives s back. TR_ENOMEM or TR_EDB,
 * both naming what. */
int store__collect(struct store *st, sqlite3_stmt *s, size_t size,
                   store__fill_fn fill, void *ud, const char *what, void **out,
                   size_t *n, struct tr_err *err);

/* The rows of sql (?1 = id) as store__collect() makes them: *out, *n of
 * them, which the caller frees (NULL with none), on error too. */
int store__collect_id(struct store *st, const char *sql, int64_t id,
                      size_t size, store__fill_fn fill, void *ud,
                      const char *what, void **out, size_t *n,
                      struct tr_err *err);

/* The first row of sql (?1 = id) as store__rows() makes it, into *out
 * (NULL when there is none). */
int store__row_id(struct store *st, const char *sql, int64_t id, json_t **out,
                  struct tr_err *err);

/* A record read with its children (GET /captures/<id>, /sweeps/<id>). */
struct store__record {
  const char *sql;    /* its row, ?1 = id */
  const char *member; /* the member holding its children */
  int (*children)(struct store *st, int64_t id, json_t **out,
                  struct tr_err *err);
  void (*finish)(json_t *rec); /* its row made the record */
  int (*missing)(struct store *st, int64_t id, struct tr_err *err);
};

/* Record id of r with its children, read in one snapshot, into *out;
 * r->missing() when there is none. */
int store__record_get(struct store *st, const struct store__record *r,
                      int64_t id, json_t **out, struct tr_err *err);

/* A record's timestamps (created_at, started_at, finished_at,
 * phase_started_at: ns since the epoch) as RFC 3339 strings. */
void store__stamps(json_t *obj);

/* The JSON value of a column holding JSON text (NULL -> json null). */
json_t *store__col_json(sqlite3_stmt *stmt, int col);

/* Bytes of a capture's name (store__capture_name()). */
#define STORE_NAME_MAX 160

/* How the store's messages name capture id: its number, or, in a lab
 * view's file where id is a copy of a fleet's capture, as its node names
 * it ("n1:5", docs/FLEET.md), so that an answer about a copy reads as
 * the node's own. Into buf (STORE_NAME_MAX bytes); returns buf. */
const char *store__capture_name(struct store *st, int64_t id, char *buf);

/* Records TR_ENOTFOUND "no capture <name>" (field "id") and returns it. */
int store__no_capture(struct store *st, int64_t id, struct tr_err *err);

/* store__prep(sql, "|%ld%d", id, rank): ?1 = id and ?2 = rank where the
 * statement has them. */
int store__stmt_id(struct store *st, const char *sql, int64_t id, int rank,
                   sqlite3_stmt **out, struct tr_err *err);

/* Steps s once: 1 with a row ready, 0 at its end, else TR_EDB ("what:
 * message"). The caller gives s back. */
int store__step(struct store *st, sqlite3_stmt *s, const char *what,
                struct tr_err *err);

/* store__stmt_id(), then store__step(): 1 with the statement's first
 * row ready in *out, 0 with none, or an error (*out NULL). Give *out
 * back with store__done(). */
int store__first(struct store *st, const char *sql, int64_t id, int rank,
                 const char *what, sqlite3_stmt **out, struct tr_err *err);

/* Steps s, a statement selecting a row of capture id: 0 with the row
 * ready, store__no_capture() when there is none, TR_EDB on error. The
 * caller gives s back. */
int store__step_capture(struct store *st, sqlite3_stmt *s, int64_t id,
                        struct tr_err *err);

/* The bench's figures a sweep's point shows (ATOM's result file's keys,
 * docs/ATOM.md), in order: output tokens/s, TTFT and TPOT in ms. */
#define STORE__SWEEP_BENCH(XX)                                                 \
  XX(output_throughput)                                                        \
  XX(request_throughput)                                                       \
  XX(total_token_throughput)                                                   \
  XX(median_ttft_ms)                                                           \
  XX(p99_ttft_ms)                                                              \
  XX(mean_ttft_ms)                                                             \
  XX(median_tpot_ms)                                                           \
  XX(p99_tpot_ms)                                                              \
  XX(mean_tpot_ms)                                                             \
  XX(completed)                                                                \
  XX(num_prompts)

/* The units of a sweep's computed figures and the decimals each is
 * written with (docs/SWEEPS.md, "Precision"): durations in whole ns (an
 * integer, as every duration of the API), slopes and their errors in ns
 * per sequence, shares and ratios as the tables' shares, percentages as
 * the verdicts', batch sizes. The bench's figures are ATOM's own. */
#define STORE__SWEEP_UNITS(XX)                                                 \
  XX(NS, 0)                                                                    \
  XX(SLOPE, 3)                                                                 \
  XX(SHARE, 6)                                                                 \
  XX(PCT, 3)                                                                   \
  XX(BS, 3)

enum store__sweep_unit {
#define XX(unit, decimals) STORE__SWEEP_##unit,
  STORE__SWEEP_UNITS(XX)
#undef XX
};

/* v (new) at unit's precision: NS an integer, the others a real rounded
 * to its decimals; null when v is not finite. */
json_t *store__sweep_num(double v, enum store__sweep_unit unit);

/* A queued capture row (store_capture_insert() without its transaction
 * and its bound), inside the caller's write transaction. */
int store__capture_row(struct store *st, const char *kind, const char *label,
                       json_t *params, int64_t *id, struct tr_err *err);

/* TR_EBUSY (field "queue") when adding captures to those queued would
 * pass max_queued (> 0). Inside the caller's write transaction, so that
 * two inserts cannot both pass. */
int store__check_queue(struct store *st, int max_queued, int adding,
                       struct tr_err *err);

/* Inside the write that changes capture id (store/sweeps.c); nothing when
 * it is no sweep's point. claim: its first point was claimed, the sweep
 * runs. settle: it became final: with ends, the sweep ends (failed, its
 * queued points cancelled); once none of its points waits or runs, the
 * sweep is done (a point done) or failed. */
int store__sweep_claim(struct store *st, int64_t id, struct tr_err *err);
int store__sweep_settle(struct store *st, int64_t id, const char *ends,
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

/* queries.c: store__stmt(), then binds the members of q the statement
 * has parameters for, by the one numbering of the tables' SQL: ?1
 * capture_id, ?2 rank, ?3 q, ?4 category, ?5 limit (-1: none), ?6
 * family, ?7 kind, ?8 module, ?9 on_path, ?10 step (a filter's "" as
 * NULL: any). A statement may skip a number (it binds harmlessly). */
int store__stmt_query(struct store *st, const char *sql,
                      const struct store_query *q, sqlite3_stmt **out,
                      struct tr_err *err);

/* queries.c: the rows of one rank (q->rank >= 0) do not name it: key,
 * which names the rank (or ranks) of each row, is dropped from each. */
void store__rank_key(const struct store_query *q, json_t *rows,
                     const char *key);

/* queries.c: runs fn(st, ctx, q, &rows, err) in one read snapshot after
 * checking that the capture (and q->rank, unless -1) exists and is
 * indexed; *out gets the rows. TR_EINVAL naming "rank" for a rank < -1. */
typedef int (*store__rows_fn)(struct store *st, const void *ctx,
                              const struct store_query *q, json_t **out,
                              struct tr_err *err);
int store__snapshot(struct store *st, const struct store_query *q,
                    store__rows_fn fn, const void *ctx, json_t **out,
                    struct tr_err *err);

/* ranks.c: inserts the rows (a JSON array, borrowed) of the capture
 * table c for capture_id, inside the caller's write transaction;
 * TR_EINVAL naming "summary" for a row that does not fit c. */
int store__insert_capture_rows(struct store *st, int64_t capture_id,
                               const struct store__table *c, json_t *rows,
                               struct tr_err *err);

/* queries.c: appends to buf (len tracks it, cut at size) the expression
 * that reads field f of a table read as "t" (names as "n", the rank as
 * "r"), named as its JSON key (JSON text columns as key_json). */
void store__col_expr(char *buf, size_t size, size_t *len,
                     const struct store__field *f);

/*
 * A table's hand-written SQL, one per row of TR_TABLE_MAP (store__sql_<name>
 * in queries.c, analysis.c, results.c): rows(st, ctx, q, ...) answers q
 * from the stored rows as they are (never from the sums), inside the
 * caller's transaction; check (may be NULL) refuses what the table cannot
 * answer before anything is read. tables.c is the registry.
 */
struct store__sql {
  store__rows_fn rows;
  const void *ctx;
  int (*check)(const struct store_query *q, struct tr_err *err);
  /* rows' rows handed to fn one at a time (store__rows_each()); NULL:
   * the table is small, rows' answer is walked. */
  int (*each)(struct store *st, const void *ctx, const struct store_query *q,
              store__row_fn fn, void *ud, struct tr_err *err);
};
#define STORE__SQL_DECL_(scope, name, ...)                                     \
  extern const struct store__sql store__sql_##name;
TR_TABLE_MAP(STORE__SQL_DECL_)
#undef STORE__SQL_DECL_

/* analysis.c: the check of ?buckets= (1..TR_TIMELINE_BUCKETS) of the
 * tables re-binned from a rank's timeline grid. */
int store__check_buckets(const struct store_query *q, struct tr_err *err);

/* tables.c: table t's rows for q (q->rank ignored: every rank) as its
 * SQL answers them, inside the caller's transaction. */
int store__table_live(struct store *st, enum tr_table t,
                      const struct store_query *q, json_t **out,
                      struct tr_err *err);
/* The same rows handed to fn one at a time (store__rows_each()). */
int store__table_live_each(struct store *st, enum tr_table t,
                           const struct store_query *q, store__row_fn fn,
                           void *ud, struct tr_err *err);

/* tables.c: the single-rank rows of table t, inside the caller's
 * transaction (the capture object's short form of a rank). */
int store__rank_table(struct store *st, int64_t capture_id, int rank,
                      enum tr_table t, json_t **out, struct tr_err *err);

/* tables.c: TR_EINVAL naming the member of q that table t does not take
 * (limit < 0, an unknown sort or by), else 0. */
int store__table_check(enum tr_table t, const struct store_query *q,
                       struct tr_err *err);

/* sums.c: the all-ranks rows of table t for q from sum_rows (a done
 * capture's sums, stored at its finish): 0 with *out, 1 when the capture
 * has none (answer live), or an error. Inside the caller's snapshot. */
int store__sum_rows(struct store *st, enum tr_table t,
                    const struct store_query *q, json_t **out,
                    struct tr_err *err);

/* sums.c: every summed table of capture id into sum_rows and sum_texts,
 * inside the caller's write transaction, after store__results_drop(). */
int store__sums_write(struct store *st, int64_t id, struct tr_err *err);

/* diff.c: one run as /diff's warnings (and the verdicts) see it. */
struct store__side {
  int64_t id;
  char name[STORE_NAME_MAX]; /* store__capture_name()'s, once loaded */
  const char *field;  /* the query parameter naming it ("a", "b") */
  int64_t tp;         /* params.tp, else its number of ranks */
  int64_t real_steps; /* prefill + decode, the largest per-rank count */
  bool has_steps, has_decode, has_dummy;
  char kinds[512]; /* its step kinds, "decode, prefill" */
  char device[128];
  bool finishing; /* set by the caller: its ranks are indexed, it is not
                     done yet (store_capture_finish()) */
};

/* Fills sd (id, field, finishing set by the caller) inside the caller's
 * transaction: TR_ENOTFOUND / TR_ECONFLICT naming sd->field unless the
 * capture exists and is done (and has rank, unless -1). */
int store__side_load(struct store *st, struct store__side *sd, int rank,
                     struct tr_err *err);

/* diff.c: /diff's rows of one grouping (by, a value of tr_diff_bys) as a
 * JSON array, totals per real step when norm, sorted by |delta| then key,
 * at most limit (0: all); kind: a decode table's step kind, or NULL. */
int store__diff_rows(struct store *st, const char *by, bool norm,
                     const struct store__side *a, const struct store__side *b,
                     int rank, const char *kind, int limit, json_t **out,
                     struct tr_err *err);

/* /diff's warnings about comparing a with b: [{code, message}]. */
json_t *store__side_warnings(const struct store__side *a,
                             const struct store__side *b);

/* results.c: drops what capture id got at its finish (its rows are
 * changing), inside the caller's write transaction. */
int store__results_drop(struct store *st, int64_t id, struct tr_err *err);

/* verdict.c: the verdict of capture id (its ranks indexed, not done
 * yet) against its baseline, inside the caller's transaction. */
int store__verdict_finish(struct store *st, int64_t id, int threshold,
                          json_t **out, struct tr_err *err);

/* figures.c: capture id's figures by stratum into capture_figures, from
 * its ranks' step samples, inside the caller's write transaction. */
int store__figures_write(struct store *st, int64_t id, struct tr_err *err);

/* A capture's capture_figures rows, by figure, name and stratum. */
struct store__figstat {
  char *figure, *name, *stratum;
  struct est e;
};

struct store__figstats {
  struct store__figstat *v;
  size_t n;
};

/* Loads them (none: n 0) inside the caller's transaction. */
int store__figstats_load(struct store *st, int64_t id,
                         struct store__figstats *out, struct tr_err *err);
void store__figstats_free(struct store__figstats *fs);

/* A capture's kept steps one by one (figures.c), the ranks merged as its
 * figures merge them: a step's figure the ranks' sum, its time the
 * slowest rank's. What a verdict pairs when two captures' steps line up
 * (judge.c). */
struct store__step {
  char *kind;
  int64_t ordinal, step, bs, tok, dur; /* step, bs, tok: -1 when absent */
  bool warmup;
  double *vals; /* [nfig], the figures' device time in the step */
};

struct store__steps {
  char **type, **name; /* the figures every rank tracks, [nfig] */
  size_t nfig;
  struct store__step *v; /* by kind, then ordinal */
  size_t n;              /* 0 also when the ranks ran different steps */
};

/* Loads them inside the caller's transaction; free with
 * store__steps_free() (which accepts a zeroed one). */
int store__steps_load(struct store *st, int64_t id, struct store__steps *out,
                      struct tr_err *err);
void store__steps_free(struct store__steps *s);

/* Whether a and b ran the same steps: the same kinds, ordinals, profiler
 * steps, batch sizes and tokens, in the same order (two runs of one
 * benchmark with one seed). */
bool store__steps_line_up(const struct store__steps *a,
                          const struct store__steps *b);

/* ln(b / a) of the figure (stat "step": the time of kind name's steps;
 * else the figure of that type and name) in each step of two captures
 * whose steps line up, where both are positive, into l (room for a->n);
 * returns how many. Warm-ups too: a warm-up step did the same work as
 * the other run's (a trace whose first profiler step holds all of it). */
size_t store__steps_pairs(const struct store__steps *a,
                          const struct store__steps *b, const char *stat,
                          const char *name, double *l);

/* ranks.c: the rank short forms of a capture (GET /captures/<id>). */
int store__capture_ranks(struct store *st, int64_t id, json_t **out,
                         struct tr_err *err);

/* The configuration of capture t (an SQL alias of captures) as one JSON
 * text, [model, tp, isl, osl, conc, variant, more]: what a verdict's
 * baseline shares (verdict.c), and what the fleet groups by (fleet_out.c).
 * tp is params.tp, else the number of done ranks. */
#define STORE__CONFIG_OF(t)                                                       \
  "json_array(json_extract(" t ".params, '$.model'),"                          \
  " coalesce(json_extract(" t ".params, '$.tp'), (SELECT count(*) FROM ranks"  \
  "  WHERE capture_id = " t ".id AND status = 'done')),"                       \
  " json_extract(" t ".params, '$.isl'), json_extract(" t ".params, '$.osl')," \
  " json_extract(" t ".params, '$.conc'),"                                     \
  " json_extract(" t ".params, '$.variant'),"                                  \
  " coalesce(json_extract(" t ".params, '$.more'), 0))"

/* A new random (version 4) UUID, as SQL: a capture's identity in the
 * fleet (schema.c's triggers, fleet_out.c's backfill). */
#define STORE__UUID                                                            \
  "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||"           \
  " substr(hex(randomblob(2)), 2) || '-' ||"                                   \
  " substr('89ab', 1 + abs(random() % 4), 1) ||"                               \
  " substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"

/* Now in ms since the epoch, as SQL. */
#define STORE__NOW_MS                                                          \
  "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"

/* A capture's final statuses (common/lifecycle.h's), as SQL. */
#define STORE__FINAL "('done','failed','cancelled','interrupted')"

/* ranks.c: the id of name in names, adding it when new; a new name's
 * bytes go to *bytes (may be NULL) twice (its row and its index entry). */
int store__intern(struct store *st, const char *name, int64_t *id,
                  uint64_t *bytes, struct tr_err *err);

/* fleet_out.c: s[0..n) (valid UTF-8 without NUL) as a JSON string,
 * appended to b. */
void store__put_string(struct tr_buf *b, const char *s, size_t n);

/* fleet_out.c: a table published with a capture (docs/FLEET.md): it
 * hangs off the capture by the column fk, a foreign key to captures(id),
 * or to ranks(id) when rank. */
struct store__hang {
  char table[128];
  char fk[128];
  bool rank;
};

/* The tables published with a capture, found in the schema's foreign
 * keys (but ranks, the sums, the pins and the fleet's own): *out (caller
 * frees), *n of them. */
int store__fleet_tables(struct store *st, struct store__hang **out, size_t *n,
                        struct tr_err *err);

/* A column of a table here: its name, whether it references names(id),
 * whether it holds blobs. */
struct store__col {
  char name[128];
  bool name_ref, blob;
};

/* fleet_out.c: the columns of table, in their order: what a published
 * table's rows are written from (fleet_out.c) and read back into in a
 * lab view's copy (fleet_lab.c). *out (caller frees), *n of them. */
int store__columns(struct store *st, const char *table, struct store__col **out,
                   size_t *n, struct tr_err *err);

#endif
