/*
 * The SQL of the tables whose rows are a rank summary's table as it is
 * (kernels, launches, categories, memcpy, runtime, steps, phases,
 * step_buckets, step_histogram, step_outliers, families, family_steps):
 * each is one SPEC() row, registered as its store__sql_<name> (tables.c).
 * Each table has a single-rank and an all-ranks statement
 * with the same result columns (named as the JSON keys: see store__rows).
 * Every statement takes the same parameters:
 *   ?1 capture id, ?2 rank, ?3 name substring, ?4 category, ?5 limit,
 *   ?6 family, ?7 step kind, ?8 module, ?9 on a critical path only,
 *   ?10 a step (an index, median or slowest)
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
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

/*
 * A table's query: the column list is made from the field list
 * (store/fields.c) by build_sql(); the rest is written here. SQL =
 * head, columns, from, [the share denominator join], where, [GROUP BY the
 * KEY columns]. Columns read the table as "t" and names as "n".
 */
struct spec {
  enum tr_table t;
  const char *table; /* the summary member: its fields */
  const char *single_from, *single_where;
  const char *all_head; /* before the columns; NULL: "SELECT" */
  const char *all_from, *all_where;
  const char *order; /* fixed ORDER BY, or NULL: by q->sort */
};

static int spec_rows(struct store *st, const void *ctx,
                     const struct store_query *q, json_t **out,
                     struct tr_err *err);
static int spec_each(struct store *st, const void *ctx,
                     const struct store_query *q, store__row_fn fn, void *ud,
                     struct tr_err *err);

/* A table's spec, registered as its SQL (tables.c). */
#define SPEC(name, ...)                                                        \
  static const struct spec name##_spec = { TR_TABLE_##name, #name,             \
                                           __VA_ARGS__ };                      \
  const struct store__sql store__sql_##name = { spec_rows, &name##_spec,      \
                                                NULL, spec_each }

/* SPEC() with a check of ?step= (critical_path, critical_path/steps). */
static int step_check(const struct store_query *q, struct tr_err *err);
#define SPEC_CHECK(name, ...)                                                  \
  static const struct spec name##_spec = { TR_TABLE_##name, #name,             \
                                           __VA_ARGS__ };                      \
  const struct store__sql store__sql_##name = { spec_rows, &name##_spec,       \
                                                step_check, spec_each }

/* The SQL below is laid out by hand: clang-format cannot break it. */
/* clang-format off */
#define FROM_RANK(t) " FROM ranks r JOIN " t " t ON t.rank_id = r.id"
#define NAMES " JOIN names n ON n.id = t.name_id"
#define ONE_RANK                                                           \
  " WHERE r.capture_id = ?1 AND r.rank = ?2 AND r.status = 'done'"
#define ALL_RANKS " WHERE r.capture_id = ?1 AND r.status = 'done'"
#define NAME_MATCH " AND (?3 IS NULL OR instr(lower(n.name), lower(?3)) > 0)"
#define CATEGORY_MATCH " AND (?4 IS NULL OR t.category = ?4)"
#define FAMILY_MATCH " AND (?6 IS NULL OR t.family = ?6)"
#define KIND_MATCH " AND (?7 IS NULL OR t.kind = ?7)"
#define FAMILY_Q " AND (?3 IS NULL OR instr(lower(t.family), lower(?3)) > 0)"
#define RANKS ", count(*) AS ranks"
/* ?9: only the rows on a critical path (kernels, families); over all
 * ranks, those on a path on some rank, summed over every rank. */
#define ON_PATH " AND (?9 = 0 OR t.critical_ns > 0)"
#define ON_PATH_ALL(table, key)                                            \
  " AND (?9 = 0 OR t." key " IN (SELECT o." key " FROM ranks ro JOIN "     \
  table " o ON o.rank_id = ro.id WHERE ro.capture_id = ?1"                 \
  " AND ro.status = 'done' AND o.critical_ns > 0))"

SPEC(kernels, FROM_RANK("kernels") NAMES,
    ONE_RANK NAME_MATCH CATEGORY_MATCH FAMILY_MATCH ON_PATH,
    /* row_number() picks, per kernel, the rank with the largest and the
     * smallest total (ties: the lower rank number). */
    "WITH per AS (SELECT t.*, r.rank AS rank,"
    " row_number() OVER (PARTITION BY t.name_id"
    "  ORDER BY t.total_ns DESC, r.rank) AS slow_i,"
    " row_number() OVER (PARTITION BY t.name_id"
    "  ORDER BY t.total_ns, r.rank) AS fast_i"
    FROM_RANK("kernels") NAMES ALL_RANKS NAME_MATCH CATEGORY_MATCH
    FAMILY_MATCH ON_PATH_ALL("kernels", "name_id") ")"
    " SELECT",
    RANKS ","
    " max(CASE WHEN t.slow_i = 1 THEN t.rank END) AS slowest_rank,"
    " max(CASE WHEN t.slow_i = 1 THEN t.total_ns END) AS slowest_rank_ns,"
    " max(CASE WHEN t.fast_i = 1 THEN t.rank END) AS fastest_rank,"
    " max(CASE WHEN t.fast_i = 1 THEN t.total_ns END) AS fastest_rank_ns"
    " FROM per t" NAMES, "",
    NULL);

SPEC(launches, FROM_RANK("launches") NAMES, ONE_RANK NAME_MATCH,
    NULL, RANKS FROM_RANK("launches") NAMES, ALL_RANKS NAME_MATCH,
    NULL);

SPEC(categories, FROM_RANK("categories"), ONE_RANK CATEGORY_MATCH,
    NULL, RANKS FROM_RANK("categories"), ALL_RANKS CATEGORY_MATCH,
    "total_ns DESC, category");

SPEC(memcpy, FROM_RANK("memcpy"), ONE_RANK,
    NULL, RANKS FROM_RANK("memcpy"), ALL_RANKS,
    "total_ns DESC, kind");

SPEC(runtime, FROM_RANK("runtime") NAMES, ONE_RANK NAME_MATCH,
    NULL, RANKS FROM_RANK("runtime") NAMES, ALL_RANKS NAME_MATCH,
    NULL);

SPEC(steps, FROM_RANK("steps"), ONE_RANK,
    NULL, RANKS FROM_RANK("steps"), ALL_RANKS,
    "kind");

/* Every rank's phases, each with its rank (the rows are EACH). */
SPEC(phases, FROM_RANK("phases"), ONE_RANK,
    "SELECT r.rank AS rank,", FROM_RANK("phases"), ALL_RANKS,
    "rank, \"index\"");

SPEC(step_buckets, FROM_RANK("step_buckets"), ONE_RANK KIND_MATCH,
    NULL, RANKS FROM_RANK("step_buckets"), ALL_RANKS KIND_MATCH,
    "kind, dim, lo");

SPEC(step_histogram, FROM_RANK("step_histogram"), ONE_RANK KIND_MATCH,
    NULL, RANKS FROM_RANK("step_histogram"), ALL_RANKS KIND_MATCH,
    "kind, lo_ns");

/* Every rank's outliers, each with its rank: the slowest, then the
 * median step, per kind. */
SPEC(step_outliers, FROM_RANK("step_outliers"), ONE_RANK KIND_MATCH,
    "SELECT r.rank AS rank,", FROM_RANK("step_outliers"),
    ALL_RANKS KIND_MATCH, "rank, kind, role DESC, \"index\"");

SPEC(families, FROM_RANK("families"),
    ONE_RANK FAMILY_Q CATEGORY_MATCH ON_PATH,
    NULL, RANKS FROM_RANK("families"),
    ALL_RANKS FAMILY_Q CATEGORY_MATCH ON_PATH_ALL("families", "family"),
    NULL);

SPEC(family_steps, FROM_RANK("family_steps"),
    ONE_RANK FAMILY_Q " AND (?7 IS NULL OR t.step = ?7)",
    NULL, RANKS FROM_RANK("family_steps"),
    ALL_RANKS FAMILY_Q " AND (?7 IS NULL OR t.step = ?7)",
    "step, total_ns DESC, family");

/* The critical path (index/cpath*.c, docs/CRITICAL_PATH.md): its tables
 * name the step kind "step". */
#define STEP_MATCH " AND (?7 IS NULL OR t.step = ?7)"
#define SEQ_Q " AND (?3 IS NULL OR instr(lower(t.sequence), lower(?3)) > 0)"

SPEC(critical_kinds, FROM_RANK("critical_kinds"), ONE_RANK STEP_MATCH,
    NULL, RANKS FROM_RANK("critical_kinds"), ALL_RANKS STEP_MATCH, "step");

/* ?10: a step by index, or the median or slowest of its kind (role holds
 * both words when one step is both). */
#define STEP_PICK(t)                                                       \
  " AND (?10 IS NULL OR (?10 GLOB '[0-9]*' AND " t ".idx = CAST(?10 AS INTEGER))" \
  " OR ' ' || " t ".role || ' ' LIKE '% ' || ?10 || ' %')"
#define STEP_OF " JOIN critical_steps s ON s.rank_id = t.rank_id AND s.idx = t.idx"

/* Every rank's steps and stretches, each with its rank (the rows are
 * EACH). */
SPEC_CHECK(critical_steps, FROM_RANK("critical_steps"),
    ONE_RANK STEP_MATCH STEP_PICK("t"),
    "SELECT r.rank AS rank,", FROM_RANK("critical_steps"),
    ALL_RANKS STEP_MATCH STEP_PICK("t"), "rank, \"index\"");

SPEC_CHECK(critical_segments, FROM_RANK("critical_segments") STEP_OF,
    ONE_RANK STEP_MATCH STEP_PICK("s"),
    "SELECT r.rank AS rank,", FROM_RANK("critical_segments") STEP_OF,
    ALL_RANKS STEP_MATCH STEP_PICK("s"), "rank, \"index\", seq");

SPEC(kernel_paths, FROM_RANK("kernel_paths") NAMES,
    ONE_RANK NAME_MATCH STEP_MATCH FAMILY_MATCH, NULL,
    RANKS FROM_RANK("kernel_paths") NAMES,
    ALL_RANKS NAME_MATCH STEP_MATCH FAMILY_MATCH,
    "step, critical_ns DESC, name");

SPEC(family_paths, FROM_RANK("family_paths"), ONE_RANK FAMILY_Q STEP_MATCH,
    NULL, RANKS FROM_RANK("family_paths"), ALL_RANKS FAMILY_Q STEP_MATCH,
    "step, critical_ns DESC, family");

SPEC(idle_culprits, FROM_RANK("idle_culprits"), ONE_RANK STEP_MATCH,
    NULL, RANKS FROM_RANK("idle_culprits"), ALL_RANKS STEP_MATCH,
    "step IS NULL, step, cause, idle_ns DESC, culprit, culprit_kind");

SPEC(kernel_sequences, FROM_RANK("kernel_sequences"),
    ONE_RANK STEP_MATCH SEQ_Q, NULL, RANKS FROM_RANK("kernel_sequences"),
    ALL_RANKS STEP_MATCH SEQ_Q,
    "step, n, count DESC, total_ns DESC, sequence");

SPEC(median_sequence, FROM_RANK("median_sequence"), ONE_RANK STEP_MATCH,
    "SELECT r.rank AS rank,", FROM_RANK("median_sequence"),
    ALL_RANKS STEP_MATCH, "rank, step, position");

/* The verdicts' inputs as they are (index/agg/agg_samples.c): every rank's
 * sampled steps and the figures their values are of, each with its rank. */
SPEC(sample_figures, FROM_RANK("sample_figures"), ONE_RANK,
    "SELECT r.rank AS rank,", FROM_RANK("sample_figures"), ALL_RANKS,
    "rank, idx");

SPEC(step_samples, FROM_RANK("step_samples"), ONE_RANK KIND_MATCH,
    "SELECT r.rank AS rank,", FROM_RANK("step_samples"),
    ALL_RANKS KIND_MATCH, "rank, kind, ordinal");

/* Decode (index/decode/decode.h): per step kind (?kind=), outside every step
 * (step null) last; ?q= a substring of the module (op, kernel name),
 * ?module= exactly the module. */
#define STEP_MATCH " AND (?7 IS NULL OR t.step = ?7)"
#define Q_OF(c) " AND (?3 IS NULL OR instr(lower(" c "), lower(?3)) > 0)"
#define MODULE_MATCH " AND (?8 IS NULL OR t.module = ?8)"
#define STEP_ORDER "step IS NULL, step, "

SPEC(decode_modules, FROM_RANK("decode_modules"),
    ONE_RANK STEP_MATCH Q_OF("t.module"),
    NULL, RANKS FROM_RANK("decode_modules"),
    ALL_RANKS STEP_MATCH Q_OF("t.module"),
    STEP_ORDER "total_ns DESC, module");

SPEC(decode_layers, FROM_RANK("decode_layers"), ONE_RANK STEP_MATCH,
    NULL, RANKS FROM_RANK("decode_layers"), ALL_RANKS STEP_MATCH,
    STEP_ORDER "total_ns DESC, layer");

SPEC(decode_ops, FROM_RANK("decode_ops"), ONE_RANK STEP_MATCH Q_OF("t.op"),
    NULL, RANKS FROM_RANK("decode_ops"), ALL_RANKS STEP_MATCH Q_OF("t.op"),
    STEP_ORDER "total_ns DESC, op");

SPEC(decode_layer_modules, FROM_RANK("decode_layer_modules"),
    ONE_RANK STEP_MATCH Q_OF("t.module") MODULE_MATCH,
    NULL, RANKS FROM_RANK("decode_layer_modules"),
    ALL_RANKS STEP_MATCH Q_OF("t.module") MODULE_MATCH,
    STEP_ORDER "layer IS NULL, layer, total_ns DESC, module");

SPEC(decode_op_modules, FROM_RANK("decode_op_modules"),
    ONE_RANK STEP_MATCH Q_OF("t.op") MODULE_MATCH,
    NULL, RANKS FROM_RANK("decode_op_modules"),
    ALL_RANKS STEP_MATCH Q_OF("t.op") MODULE_MATCH,
    STEP_ORDER "total_ns DESC, op, module");

SPEC(decode_kernels, FROM_RANK("decode_kernels") NAMES,
    ONE_RANK STEP_MATCH NAME_MATCH MODULE_MATCH,
    NULL, RANKS FROM_RANK("decode_kernels") NAMES,
    ALL_RANKS STEP_MATCH NAME_MATCH MODULE_MATCH,
    STEP_ORDER "total_ns DESC, module, name");

SPEC(decode_steps, FROM_RANK("decode_steps"), ONE_RANK,
    NULL, RANKS FROM_RANK("decode_steps"), ALL_RANKS,
    "step");

/* Every rank's median step, each with its rank. */
SPEC(decode_median, FROM_RANK("decode_median"), ONE_RANK STEP_MATCH,
    "SELECT r.rank AS rank,", FROM_RANK("decode_median"),
    ALL_RANKS STEP_MATCH,
    "rank, step, layer IS NULL, layer, total_ns DESC, module");

/* Kernel time by source line (decode's T_SRC, docs/DECODE.md). */
SPEC(sources, FROM_RANK("sources"),
    ONE_RANK STEP_MATCH Q_OF("t.source") MODULE_MATCH,
    NULL, RANKS FROM_RANK("sources"),
    ALL_RANKS STEP_MATCH Q_OF("t.source") MODULE_MATCH,
    STEP_ORDER "total_ns DESC, source IS NULL, source, module");

/* Memory over time (index/memory/): every rank's rows, each with its
 * rank (EACH). */
SPEC(memory, FROM_RANK("memory"), ONE_RANK,
    "SELECT r.rank AS rank,", FROM_RANK("memory"), ALL_RANKS,
    "rank, device_type, device_id");

SPEC(memory_ops, FROM_RANK("memory_ops"),
    ONE_RANK Q_OF("coalesce(t.op, '')"),
    "SELECT r.rank AS rank,", FROM_RANK("memory_ops"),
    ALL_RANKS Q_OF("coalesce(t.op, '')"),
    "rank, device, peak_live_bytes DESC, alloc_bytes DESC, op IS NULL, op,"
    " module IS NULL, module");

/* clang-format on */

/* Appends printf-style text to buf (len tracks it; output is cut at size,
 * and the statement then fails to prepare, never runs truncated SQL). */
static void cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void cat(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
  va_list ap;

  if (*len >= size)
    return;
  va_start(ap, fmt);
  *len += (size_t)vsnprintf(buf + *len, size - *len, fmt, ap);
  va_end(ap);
}

/* total_ns over the column den of the table `of` (r: the rank, t: the
 * row), rounded to 6 decimals, as key. */
static void part_expr(char *b, size_t size, size_t *len, const char *of,
                      const char *den, const char *key)
{
  cat(b, size, len,
      " CASE WHEN %s.%s > 0 THEN round(CAST(t.total_ns AS REAL) / %s.%s, 6)"
      " ELSE 0.0 END AS \"%s\"",
      of, den, of, den, key);
}

/* The expression of f when one rank's rows are read as they are. */
void store__col_expr(char *b, size_t size, size_t *len,
                     const struct store__field *f)
{
  switch (f->ty) {
  case F_NAME: cat(b, size, len, " n.name AS \"%s\"", f->key); break;
  case F_JSON:
  case F_JSON_NULL:
    cat(b, size, len, " t.%s AS \"%s_json\"", f->col, f->key);
    break;
  case F_AVG:
    cat(b, size, len, " t.total_ns / t.count AS \"%s\"", f->key);
    break;
  case F_SHARE: part_expr(b, size, len, "r", f->den, f->key); break;
  case F_RATIO:
    cat(b, size, len,
        " CASE WHEN t.count > 0 THEN round(CAST(t.%s AS REAL) / t.count, 6)"
        " ELSE 0.0 END AS \"%s\"",
        f->den, f->key);
    break;
  case F_PART: part_expr(b, size, len, "t", f->den, f->key); break;
  default: cat(b, size, len, " t.%s AS \"%s\"", f->col, f->key); break;
  }
}

/* The expression of f over the rows of every rank (ALL of the list); false
 * when f is not in that answer. */
static bool col_all(char *b, size_t size, size_t *len,
                    const struct store__field *f)
{
  static const char *const fn[] = {
    [A_SUM] = "sum", [A_MIN] = "min", [A_MAX] = "max", [A_ANY] = "max"
  };

  switch (f->all) {
  case A_KEY:
  case A_EACH: store__col_expr(b, size, len, f); return true;
  case A_NONE: return false;
  case A_MIXED:
    cat(b, size, len,
        " CASE WHEN min(t.%s) = max(t.%s) THEN min(t.%s) ELSE 'mixed' END"
        " AS \"%s\"",
        f->col, f->col, f->col, f->key);
    return true;
  case A_AVG:
    cat(b, size, len, " sum(t.total_ns) / sum(t.count) AS \"%s\"", f->key);
    return true;
  case A_RATIO:
    cat(b, size, len,
        " CASE WHEN sum(t.count) > 0 THEN round(CAST(sum(t.%s) AS REAL) /"
        " sum(t.count), 6) ELSE 0.0 END AS \"%s\"",
        f->den, f->key);
    return true;
  case A_PART:
    cat(b, size, len,
        " CASE WHEN sum(t.%s) > 0 THEN round(CAST(sum(t.total_ns) AS REAL) /"
        " sum(t.%s), 6) ELSE 0.0 END AS \"%s\"",
        f->den, f->den, f->key);
    return true;
  case A_SHARE:
    cat(b, size, len,
        " CASE WHEN den.d > 0 THEN round(CAST(sum(t.total_ns) AS REAL) /"
        " den.d, 6) ELSE 0.0 END AS \"%s\"",
        f->key);
    return true;
  default:
    cat(b, size, len, " %s(t.%s) AS \"%s\"", fn[f->all], f->col, f->key);
    return true;
  }
}

/* The statement of sp, for one rank or (all) every rank, into buf; its
 * length, >= size when it did not fit. */
static size_t build_sql(const struct spec *sp, bool all, char *buf, size_t size)
{
  const struct store__table *t = store__table(sp->table);
  const char *den = NULL, *sep = "";
  size_t len = 0;
  bool group = false;

  cat(buf, size, &len, "%s", all && sp->all_head ? sp->all_head : "SELECT");
  for (size_t i = 0; i < t->n; i++) {
    size_t at = len;

    cat(buf, size, &len, "%s", sep);
    if (all ? col_all(buf, size, &len, &t->f[i])
            : (store__col_expr(buf, size, &len, &t->f[i]), true))
      sep = ",";
    else
      len = at; /* not in this answer: drop the separator too */
    if (t->f[i].ty == F_SHARE)
      den = t->f[i].den;
    group |= all && t->f[i].all != A_EACH;
  }
  cat(buf, size, &len, "%s", all ? sp->all_from : sp->single_from);
  if (all && den != NULL)
    cat(buf, size, &len,
        ", (SELECT sum(%s) AS d FROM ranks WHERE capture_id = ?1 AND"
        " status = 'done') den",
        den);
  cat(buf, size, &len, "%s", all ? sp->all_where : sp->single_where);
  sep = " GROUP BY";
  for (size_t i = 0; group && i < t->n; i++)
    if (t->f[i].all == A_KEY) {
      cat(buf, size, &len, "%s t.%s", sep, t->f[i].col);
      sep = ",";
    }
  return len;
}

/* By tr_sorts: what each sort orders by before the table's key. */
static const char *const sort_orders[] = { "total_ns DESC, ", "count DESC, ",
                                           "avg_ns DESC, ", "" };

/* The ORDER BY of sp for sort, into buf: rows with a name sort by it,
 * families by family (the map's key). */
static const char *order_of(const struct spec *sp, const char *sort, char *buf,
                            size_t size)
{
  const char *key = tr_tables[sp->t].key;
  size_t i = 0;

  if (sp->order != NULL)
    return sp->order;
  while (sort != NULL && tr_sorts[i] != NULL && strcmp(sort, tr_sorts[i]) != 0)
    i++;
  snprintf(buf, size, "%s%s", sort_orders[sort && tr_sorts[i] ? i : 0], key);
  return buf;
}

/* A filter's text: NULL for NULL or "" (any). */
static const char *any(const char *s)
{
  return s != NULL && *s != '\0' ? s : NULL;
}

void store__rank_key(const struct store_query *q, json_t *rows, const char *key)
{
  json_t *row;
  size_t i;

  json_array_foreach(rows, i, row) {
    if (q->rank >= 0)
      json_object_del(row, key);
  }
}

int store__stmt_query(struct store *st, const char *sql,
                      const struct store_query *q, sqlite3_stmt **out,
                      struct tr_err *err)
{
  return store__prep(st, sql, out, err, "|%ld%d%s%s%d%s%s%s%d%s", q->capture_id,
                     q->rank, any(q->q), any(q->category),
                     q->limit > 0 ? q->limit : -1, any(q->family), any(q->kind),
                     any(q->module), q->on_path, any(q->step));
}

/* The statement of sp's rows for q, bound, inside the caller's read
 * transaction, no checks. */
static int query_stmt(struct store *st, const struct spec *sp,
                      const struct store_query *q, sqlite3_stmt **out,
                      struct tr_err *err)
{
  char sql[4096], order[64];
  sqlite3_stmt *s;
  size_t len;
  int rc;

  len = build_sql(sp, q->rank < 0, sql, sizeof(sql));
  cat(sql, sizeof(sql), &len, " ORDER BY %s LIMIT ?5",
      order_of(sp, q->sort, order, sizeof(order)));
  if (len >= sizeof(sql))
    return tr_err_set(err, TR_EDB, "", "%s: query too long", sp->table);
  rc = store__stmt_query(st, sql, q, &s, err);
  if (rc < 0)
    return rc;
  *out = s;
  return 0;
}

static int query_rows(struct store *st, const struct spec *sp,
                      const struct store_query *q, json_t **out,
                      struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = query_stmt(st, sp, q, &s, err);

  return rc < 0 ? rc : store__rows(st, s, out, err);
}

/* query_rows()'s rows handed to fn one at a time. */
static int spec_each(struct store *st, const void *ctx,
                     const struct store_query *q, store__row_fn fn, void *ud,
                     struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = query_stmt(st, ctx, q, &s, err);

  return rc < 0 ? rc : store__rows_each(st, s, fn, ud, err);
}

int store__rank_exists(struct store *st, int64_t capture_id, int rank,
                       struct tr_err *err)
{
  char name[STORE_NAME_MAX];
  sqlite3_stmt *s;
  int rc = store__first(st,
                        "SELECT status FROM ranks WHERE capture_id = ?1"
                        " AND rank = ?2",
                        capture_id, rank, "rank", &s, err);

  if (rc == 1 && strcmp((const char *)sqlite3_column_text(s, 0), "done") == 0)
    rc = 0;
  else if (rc >= 0)
    rc = tr_err_set(err, TR_ENOTFOUND, "rank",
                    "capture %s has no indexed rank %d",
                    store__capture_name(st, capture_id, name), rank);
  store__done(s);
  return rc;
}

int store__snapshot(struct store *st, const struct store_query *q,
                    store__rows_fn fn, const void *ctx, json_t **out,
                    struct tr_err *err)
{
  json_t *rows = NULL;
  int rc = q->rank < -1
               ? tr_err_set(err, TR_EINVAL, "rank", "rank must be >= 0")
               : store__rd_begin(st, err);

  if (rc < 0)
    return rc;
  rc = store__capture_exists(st, q->capture_id, NULL, err);
  if (rc == 0 && q->rank >= 0)
    rc = store__rank_exists(st, q->capture_id, q->rank, err);
  if (rc == 0)
    rc = fn(st, ctx, q, &rows, err);
  rc = store__rd_end(st, rc, err);
  if (rc < 0) {
    json_decref(rows);
    return rc;
  }
  *out = rows;
  return 0;
}

static int spec_rows(struct store *st, const void *ctx,
                     const struct store_query *q, json_t **out,
                     struct tr_err *err)
{
  return query_rows(st, ctx, q, out, err);
}

/* A step is an index (digits), median or slowest. */
static int step_check(const struct store_query *q, struct tr_err *err)
{
  const char *p = q->step;

  if (p == NULL || *p == '\0' || strcmp(p, "median") == 0 ||
      strcmp(p, "slowest") == 0)
    return 0;
  while (*p >= '0' && *p <= '9')
    p++;
  return *p == '\0' && p - q->step <= 18
             ? 0
             : tr_err_set(err, TR_EINVAL, "step",
                          "step is a step index, median or slowest");
}
