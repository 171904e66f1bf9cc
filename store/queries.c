/*
 * The queries behind GET /captures/<id>/{kernels,launches,categories,
 * steps,memcpy,runtime,phases}. Each table has a single-rank and an
 * all-ranks statement with the same result columns (named as the JSON
 * keys: see store__rows). Every statement takes the same parameters:
 *   ?1 capture id, ?2 rank, ?3 name substring, ?4 category, ?5 limit
 * (a statement may ignore some). Client text is only ever bound.
 *
 * All-ranks rules: count, total_ns and byte counts are summed; min_ns is
 * the least and max_ns/max_bytes the largest of the ranks'; avg_ns is the
 * summed total over the summed count; share is of the summed kernel_ns
 * (device_ns for categories); "ranks" is on how many ranks the row
 * appears. A median cannot be summed: runtime's median_ns is the largest
 * per-rank median (the straggler's). steps' source is the ranks' common
 * source, or "mixed".
 */
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

struct spec {
  const char *single;
  const char *all;
  const char *order; /* fixed ORDER BY, or NULL: by q->sort */
};

/* The SQL below is laid out by hand: clang-format cannot break it. */
/* clang-format off */
/* Shares are rounded to 6 decimals as in the rank summary; 0 when the
 * denominator is. */
#define SHARE(num, den)                                                    \
  "CASE WHEN " den " > 0 THEN round(CAST(" num " AS REAL) / " den ", 6)"  \
  " ELSE 0.0 END AS share"
#define FROM_RANK(t, alias)                                                \
  " FROM ranks r JOIN " t " " alias " ON " alias ".rank_id = r.id"
#define ONE_RANK                                                           \
  " WHERE r.capture_id = ?1 AND r.rank = ?2 AND r.status = 'done'"
#define ALL_RANKS " WHERE r.capture_id = ?1 AND r.status = 'done'"
#define NAME_MATCH " AND (?3 IS NULL OR instr(lower(n.name), lower(?3)) > 0)"
#define DEN(col)                                                           \
  ", (SELECT sum(" col ") AS d FROM ranks WHERE capture_id = ?1 AND"      \
  " status = 'done') den"

/* t.c AS c: results are named explicitly, never by SQLite's default. */
#define C(t, c) " " t "." c " AS " c
#define AVG(t) " " t ".total_ns / " t ".count AS avg_ns"
#define SUM(t, c) " sum(" t "." c ") AS " c
#define SUM_AVG(t) " sum(" t ".total_ns) / sum(" t ".count) AS avg_ns"

static const struct spec kernels = {
    "SELECT" C("n", "name") "," C("k", "category") "," C("k", "count") ","
    C("k", "total_ns") "," AVG("k") "," C("k", "min_ns") "," C("k", "max_ns")
    "," C("k", "median_ns") ", " SHARE("k.total_ns", "r.kernel_ns") ","
    C("k", "first_ns") "," C("k", "last_ns")
    FROM_RANK("kernels", "k") " JOIN names n ON n.id = k.name_id"
    ONE_RANK NAME_MATCH " AND (?4 IS NULL OR k.category = ?4)",
    /* row_number() picks, per kernel, the rank with the largest and the
     * smallest total (ties: the lower rank number). */
    "WITH per AS (SELECT k.*, r.rank AS rank,"
    " row_number() OVER (PARTITION BY k.name_id"
    "  ORDER BY k.total_ns DESC, r.rank) AS slow_i,"
    " row_number() OVER (PARTITION BY k.name_id"
    "  ORDER BY k.total_ns, r.rank) AS fast_i"
    FROM_RANK("kernels", "k") " JOIN names n ON n.id = k.name_id"
    ALL_RANKS NAME_MATCH " AND (?4 IS NULL OR k.category = ?4))"
    " SELECT" C("n", "name") ", max(p.category) AS category,"
    SUM("p", "count") "," SUM("p", "total_ns") "," SUM_AVG("p") ","
    " min(p.min_ns) AS min_ns, max(p.max_ns) AS max_ns, "
    SHARE("sum(p.total_ns)", "den.d") ", count(*) AS ranks,"
    " max(CASE WHEN p.slow_i = 1 THEN p.rank END) AS slowest_rank,"
    " max(CASE WHEN p.slow_i = 1 THEN p.total_ns END) AS slowest_rank_ns,"
    " max(CASE WHEN p.fast_i = 1 THEN p.rank END) AS fastest_rank,"
    " max(CASE WHEN p.fast_i = 1 THEN p.total_ns END) AS fastest_rank_ns"
    " FROM per p JOIN names n ON n.id = p.name_id" DEN("kernel_ns")
    " GROUP BY p.name_id",
    NULL};

#define LAUNCH_SHAPE                                                       \
  C("n", "name") ", l.grid AS grid_json, l.block AS block_json,"          \
  C("l", "registers_per_thread") "," C("l", "shared_bytes")

static const struct spec launches = {
    "SELECT" LAUNCH_SHAPE "," C("l", "count") "," C("l", "total_ns") ","
    AVG("l") "," C("l", "min_ns") "," C("l", "max_ns")
    FROM_RANK("launches", "l") " JOIN names n ON n.id = l.name_id"
    ONE_RANK NAME_MATCH,
    "SELECT" LAUNCH_SHAPE "," SUM("l", "count") "," SUM("l", "total_ns") ","
    SUM_AVG("l") ", min(l.min_ns) AS min_ns, max(l.max_ns) AS max_ns,"
    " count(*) AS ranks"
    FROM_RANK("launches", "l") " JOIN names n ON n.id = l.name_id"
    ALL_RANKS NAME_MATCH " GROUP BY l.name_id, l.grid, l.block,"
    " l.registers_per_thread, l.shared_bytes",
    NULL};

static const struct spec categories = {
    "SELECT" C("c", "category") "," C("c", "count") "," C("c", "total_ns")
    ", " SHARE("c.total_ns", "r.device_ns")
    FROM_RANK("categories", "c") ONE_RANK
    " AND (?4 IS NULL OR c.category = ?4)",
    "SELECT" C("c", "category") "," SUM("c", "count") ","
    SUM("c", "total_ns") ", " SHARE("sum(c.total_ns)", "den.d") ","
    " count(*) AS ranks"
    FROM_RANK("categories", "c") DEN("device_ns") ALL_RANKS
    " AND (?4 IS NULL OR c.category = ?4) GROUP BY c.category",
    "total_ns DESC, category"};

static const struct spec memcpy_spec = {
    "SELECT" C("m", "kind") "," C("m", "count") "," C("m", "total_ns") ","
    C("m", "bytes") "," C("m", "max_bytes") FROM_RANK("memcpy", "m")
    ONE_RANK,
    "SELECT" C("m", "kind") "," SUM("m", "count") "," SUM("m", "total_ns")
    "," SUM("m", "bytes") ", max(m.max_bytes) AS max_bytes,"
    " count(*) AS ranks" FROM_RANK("memcpy", "m") ALL_RANKS
    " GROUP BY m.kind",
    "total_ns DESC, kind"};

static const struct spec runtime = {
    "SELECT" C("n", "name") "," C("t", "count") "," C("t", "total_ns") ","
    AVG("t") "," C("t", "median_ns") "," C("t", "max_ns")
    FROM_RANK("runtime", "t") " JOIN names n ON n.id = t.name_id" ONE_RANK
    NAME_MATCH,
    "SELECT" C("n", "name") "," SUM("t", "count") "," SUM("t", "total_ns")
    "," SUM_AVG("t") ", max(t.median_ns) AS median_ns,"
    " max(t.max_ns) AS max_ns, count(*) AS ranks"
    FROM_RANK("runtime", "t") " JOIN names n ON n.id = t.name_id"
    ALL_RANKS NAME_MATCH " GROUP BY t.name_id",
    NULL};

static const struct spec steps = {
    "SELECT" C("s", "kind") "," C("s", "count") "," C("s", "total_ns") ","
    AVG("s") "," C("s", "tokens") "," C("s", "padded") ","
    C("s", "kernel_ns") "," C("s", "source") FROM_RANK("steps", "s")
    ONE_RANK,
    "SELECT" C("s", "kind") "," SUM("s", "count") "," SUM("s", "total_ns")
    "," SUM_AVG("s") "," SUM("s", "tokens") "," SUM("s", "padded") ","
    SUM("s", "kernel_ns") ","
    " CASE WHEN min(s.source) = max(s.source) THEN min(s.source)"
    "  ELSE 'mixed' END AS source, count(*) AS ranks"
    FROM_RANK("steps", "s") ALL_RANKS " GROUP BY s.kind",
    "kind"};

#define PHASE_COLS                                                         \
  " p.idx AS \"index\"," C("p", "start_ns") "," C("p", "end_ns") ","      \
  C("p", "busy_ns") "," C("p", "kernel_events") "," C("p", "cause") ","   \
  " p.top_kernels AS top_kernels_json,"                                    \
  " p.top_launches AS top_launches_json" FROM_RANK("phases", "p")

static const struct spec phases = {
    "SELECT" PHASE_COLS ONE_RANK,
    "SELECT r.rank AS rank," PHASE_COLS ALL_RANKS,
    "rank, \"index\""};

/* clang-format on */

static const char *const sorts[] = { "total", "count", "avg", "name", NULL };
static const char *const sort_orders[] = { "total_ns DESC, name",
                                           "count DESC, name",
                                           "avg_ns DESC, name", "name" };

static const char *order_of(const struct spec *sp, const char *sort)
{
  if (sp->order != NULL)
    return sp->order;
  for (size_t i = 0; sort != NULL && sorts[i] != NULL; i++) {
    if (strcmp(sort, sorts[i]) == 0)
      return sort_orders[i];
  }
  return sort_orders[0];
}

/* Runs sp for q inside the caller's read transaction, no checks. */
static int query_rows(struct store *st, const struct spec *sp,
                      const struct store_query *q, json_t **out,
                      struct tr_err *err)
{
  char sql[4096];
  sqlite3_stmt *s;
  int rc;

  snprintf(sql, sizeof(sql), "%s ORDER BY %s LIMIT ?5",
           q->rank < 0 ? sp->all : sp->single, order_of(sp, q->sort));
  rc = store__stmt(st, sql, &s, err);
  if (rc < 0)
    return rc;
  sqlite3_bind_int64(s, 1, q->capture_id);
  sqlite3_bind_int(s, 2, q->rank);
  store__bind_text(s, 3, q->q && *q->q ? q->q : NULL);
  store__bind_text(s, 4, q->category && *q->category ? q->category : NULL);
  sqlite3_bind_int(s, 5, q->limit > 0 ? q->limit : -1);
  return store__rows(st, s, out, err);
}

int store__rank_exists(struct store *st, int64_t capture_id, int rank,
                       struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt_id(st,
                          "SELECT status FROM ranks WHERE capture_id = ?1"
                          " AND rank = ?2",
                          capture_id, rank, &s, err);

  if (rc < 0)
    return rc;
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW &&
      strcmp((const char *)sqlite3_column_text(s, 0), "done") == 0)
    rc = 0;
  else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    rc = tr_err_set(err, TR_ENOTFOUND, "rank",
                    "capture %lld has no indexed rank %d",
                    (long long)capture_id, rank);
  else
    rc = store__db_err(st, "rank", err);
  store__done(s);
  return rc;
}

static int run(struct store *st, const struct spec *sp,
               const struct store_query *q, json_t **out, struct tr_err *err)
{
  json_t *rows = NULL;
  int rc = 0;

  if (q->rank < -1)
    rc = tr_err_set(err, TR_EINVAL, "rank", "rank must be >= 0");
  else if (q->limit < 0)
    rc = tr_err_set(err, TR_EINVAL, "limit", "limit must be >= 0");
  if (rc == 0)
    rc = store__check_enum(q->sort, sorts, "sort", err);
  if (rc == 0)
    rc = store__rd_begin(st, err);
  if (rc < 0)
    return rc;
  rc = store__capture_exists(st, q->capture_id, NULL, err);
  if (rc == 0 && q->rank >= 0)
    rc = store__rank_exists(st, q->capture_id, q->rank, err);
  if (rc == 0)
    rc = query_rows(st, sp, q, &rows, err);
  rc = store__rd_end(st, rc, err);
  if (rc < 0) {
    json_decref(rows);
    return rc;
  }
  *out = rows;
  return 0;
}

int store__rank_table(struct store *st, int64_t capture_id, int rank,
                      const char *table, json_t **out, struct tr_err *err)
{
  struct store_query q = { .capture_id = capture_id, .rank = rank };
  const struct spec *sp = strcmp(table, "categories") == 0 ? &categories
                          : strcmp(table, "memcpy") == 0   ? &memcpy_spec
                                                           : &steps;

  return query_rows(st, sp, &q, out, err);
}

int store_kernels(struct store *st, const struct store_query *q, json_t **out,
                  struct tr_err *err)
{
  return run(st, &kernels, q, out, err);
}

int store_launches(struct store *st, const struct store_query *q, json_t **out,
                   struct tr_err *err)
{
  return run(st, &launches, q, out, err);
}

int store_categories(struct store *st, const struct store_query *q,
                     json_t **out, struct tr_err *err)
{
  return run(st, &categories, q, out, err);
}

int store_steps(struct store *st, const struct store_query *q, json_t **out,
                struct tr_err *err)
{
  return run(st, &steps, q, out, err);
}

int store_memcpy(struct store *st, const struct store_query *q, json_t **out,
                 struct tr_err *err)
{
  return run(st, &memcpy_spec, q, out, err);
}

int store_runtime(struct store *st, const struct store_query *q, json_t **out,
                  struct tr_err *err)
{
  return run(st, &runtime, q, out, err);
}

int store_phases(struct store *st, const struct store_query *q, json_t **out,
                 struct tr_err *err)
{
  return run(st, &phases, q, out, err);
}
