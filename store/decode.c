/*
 * The repeated-block view (GET /captures/<id>/decode/blocks,
 * common/summary.h's TR_SUM_DEC_BLOCK; docs/DECODE.md): each module that
 * ran in layers, over those layers. One rank: its rows as the indexer
 * wrote them. All ranks: each layer's time summed over the ranks
 * (decode_layer_modules), the kind's steps summed (decode_steps), then the
 * same figures, so that one slow layer on one rank still stands out as a
 * slow layer. Not summed at a capture's finish: the rows are few.
 */
#include "store/store_int.h"

/* clang-format off */
#define STEP_MATCH " AND (?7 IS NULL OR t.step = ?7)"
#define MODULE_Q " AND (?3 IS NULL OR instr(lower(t.module), lower(?3)) > 0)"
#define ORDER " ORDER BY step IS NULL, step, total_ns DESC, module LIMIT ?5"

static const char one_rank[] =
    "SELECT t.step AS step, t.module AS module, t.layers AS layers,"
    " t.total_ns AS total_ns, t.steps AS steps, t.layer_ns AS layer_ns,"
    " t.fastest_layer AS fastest_layer, t.fastest_ns AS fastest_ns,"
    " t.slowest_layer AS slowest_layer, t.slowest_ns AS slowest_ns"
    " FROM ranks r JOIN decode_blocks t ON t.rank_id = r.id"
    " WHERE r.capture_id = ?1 AND r.rank = ?2 AND r.status = 'done'"
    STEP_MATCH MODULE_Q ORDER;

/* Per layer summed over the ranks; per module the fastest and slowest
 * layer (ties: the lower). */
static const char all_ranks[] =
    "WITH lm AS (SELECT t.step AS step, t.module AS module, t.layer AS layer,"
    "  sum(t.total_ns) AS ns"
    "  FROM ranks r JOIN decode_layer_modules t ON t.rank_id = r.id"
    "  WHERE r.capture_id = ?1 AND r.status = 'done'"
    "  AND t.layer IS NOT NULL AND t.module IS NOT NULL" STEP_MATCH MODULE_Q
    "  GROUP BY t.step, t.module, t.layer),"
    " st AS (SELECT t.step AS step, sum(t.steps) AS steps"
    "  FROM ranks r JOIN decode_steps t ON t.rank_id = r.id"
    "  WHERE r.capture_id = ?1 AND r.status = 'done' GROUP BY t.step),"
    " o AS (SELECT lm.*, coalesce(st.steps, 0) AS steps,"
    "  row_number() OVER (PARTITION BY lm.step, lm.module"
    "   ORDER BY lm.ns DESC, lm.layer) AS slow_i,"
    "  row_number() OVER (PARTITION BY lm.step, lm.module"
    "   ORDER BY lm.ns, lm.layer) AS fast_i"
    "  FROM lm LEFT JOIN st ON st.step IS lm.step)"
    " SELECT step, module, count(*) AS layers, sum(ns) AS total_ns,"
    " max(steps) AS steps,"
    " CASE WHEN max(steps) > 0 THEN sum(ns) / count(*) / max(steps)"
    "  ELSE 0 END AS layer_ns,"
    " max(CASE WHEN fast_i = 1 THEN layer END) AS fastest_layer,"
    " CASE WHEN max(steps) > 0 THEN"
    "  max(CASE WHEN fast_i = 1 THEN ns END) / max(steps) ELSE 0 END"
    "  AS fastest_ns,"
    " max(CASE WHEN slow_i = 1 THEN layer END) AS slowest_layer,"
    " CASE WHEN max(steps) > 0 THEN"
    "  max(CASE WHEN slow_i = 1 THEN ns END) / max(steps) ELSE 0 END"
    "  AS slowest_ns"
    " FROM o GROUP BY step, module" ORDER;
/* clang-format on */

static int blocks_rows(struct store *st, const void *ctx,
                       const struct store_query *q, json_t **out,
                       struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc =
      store__stmt_query(st, q->rank < 0 ? all_ranks : one_rank, q, &s, err);

  (void)ctx;
  return rc < 0 ? rc : store__rows(st, s, out, err);
}

const struct store__sql store__sql_decode_blocks = { blocks_rows, NULL, NULL,
                                                      NULL };
