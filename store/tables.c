/*
 * The store's side of the table of tables (common/summary.h's
 * TR_TABLE_MAP): the registry of each table's SQL, the checks every table
 * shares, and store_table(), which answers a table route from the sums a
 * done capture keeps (sums.c) or from its SQL.
 */
#include <string.h>

#include "store/store_int.h"

static const struct store__sql *const sqls[TR_NTABLES] = {
#define XX(scope, name, ...) [TR_TABLE_##name] = &store__sql_##name,
  TR_TABLE_MAP(XX)
#undef XX
};

int store__table_check(enum tr_table t, const struct store_query *q,
                       struct tr_err *err)
{
  const struct tr_table_row *tt = &tr_tables[t];
  int rc = q->limit < 0
               ? tr_err_set(err, TR_EINVAL, "limit", "limit must be >= 0")
               : store__check_enum(q->sort, tr_sorts, "sort", err);

  if (rc == 0 && tt->by != NULL)
    rc = store__check_enum(q->by, tt->by, "by", err);
  return rc;
}

/* All ranks of a done capture: its sums stored at its finish, else the
 * table's SQL now. */
static int table_rows(struct store *st, const void *ctx,
                      const struct store_query *q, json_t **out,
                      struct tr_err *err)
{
  enum tr_table t =
      (enum tr_table)((const struct tr_table_row *)ctx - tr_tables);
  int rc = q->rank < 0 && (tr_tables[t].flags & TR_T_SUMMED) && !q->on_path
               ? store__sum_rows(st, t, q, out, err)
               : 1;

  return rc == 1 ? sqls[t]->rows(st, sqls[t]->ctx, q, out, err) : rc;
}

int store_table(struct store *st, enum tr_table t, const struct store_query *q,
                json_t **out, struct tr_err *err)
{
  int rc = store__table_check(t, q, err);

  if (rc == 0 && sqls[t]->check != NULL)
    rc = sqls[t]->check(q, err);
  if (rc < 0)
    return rc;
  return store__snapshot(st, q, table_rows, &tr_tables[t], out, err);
}

int store__table_live(struct store *st, enum tr_table t,
                      const struct store_query *q, json_t **out,
                      struct tr_err *err)
{
  struct store_query all = *q;

  all.rank = -1;
  return sqls[t]->rows(st, sqls[t]->ctx, &all, out, err);
}

int store__table_live_each(struct store *st, enum tr_table t,
                           const struct store_query *q, store__row_fn fn,
                           void *ud, struct tr_err *err)
{
  struct store_query all = *q;
  json_t *rows = NULL, *row;
  size_t i;
  int rc;

  all.rank = -1;
  if (sqls[t]->each != NULL)
    return sqls[t]->each(st, sqls[t]->ctx, &all, fn, ud, err);
  rc = sqls[t]->rows(st, sqls[t]->ctx, &all, &rows, err);
  json_array_foreach(rows, i, row) {
    if (rc == 0)
      rc = fn(ud, row, err);
  }
  json_decref(rows);
  return rc;
}

int store__rank_table(struct store *st, int64_t capture_id, int rank,
                      enum tr_table t, json_t **out, struct tr_err *err)
{
  struct store_query q = { .capture_id = capture_id, .rank = rank };

  return sqls[t]->rows(st, sqls[t]->ctx, &q, out, err);
}
