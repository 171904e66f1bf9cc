/*
 * The op groups' route (GET /captures/<id>/ops/perf, docs/PERF.md): the
 * stored op_perf rows (one rank's, or every rank's summed: counts, kernel
 * time and the rates' inverse times added, the work per instance and the
 * roof as they are), and what is made of them: the work in TraceLens's
 * units, the kernel time's figures, the rates' means, and the roof's
 * answer. Per instance, the roof's time is the longer of its FLOPs at the
 * peak of its compute spec and its bytes at the bandwidth; the group's
 * time lost to the roof is its kernel time minus its timed instances'
 * roof time, never below 0. ?q= matches a part of the op's name or of its
 * category, ?category= one category (GEMM, SDPA_fwd...: TraceLens's, not
 * the kernels'). Without ?sort= the
 * rows come by the time lost, largest first; ?sort= total (kernel time),
 * count, avg or name.
 */
#include <string.h>

#include "store/store_int.h"

/* clang-format off */
#define PERF_GROUPS                                                        \
  "WITH g AS (SELECT t.op AS op, t.params AS params,"                     \
  " t.recompute AS recompute, max(t.category) AS category,"               \
  " max(t.input_dims) AS input_dims, max(t.input_types) AS input_types,"  \
  " max(t.input_strides) AS input_strides,"                               \
  " max(t.concrete_inputs) AS concrete_inputs,"                           \
  " max(t.compute_spec) AS compute_spec, sum(t.count) AS count,"          \
  " sum(t.timed) AS timed, sum(t.kernels) AS kernels,"                    \
  " sum(t.nested) AS nested, max(t.flops) AS flops,"                      \
  " max(t.bytes) AS bytes, sum(t.kernel_ns) AS kernel_ns,"                \
  " min(t.kernel_min_ns) AS kernel_min_ns,"                               \
  " max(t.kernel_max_ns) AS kernel_max_ns,"                               \
  " max(t.kernel_p50_ns) AS kernel_p50_ns, sum(t.inv_s) AS inv_s,"        \
  " max(t.peak_tflops) AS peak_tflops, max(t.peak_tb_s) AS peak_tb_s,"    \
  " count(*) AS ranks"                                                    \
  " FROM ranks r JOIN op_perf t ON t.rank_id = r.id"                      \
  " WHERE r.capture_id = ?1 AND r.status = 'done'"                        \
  " AND (?2 < 0 OR r.rank = ?2)"                                          \
  " AND (?3 IS NULL OR instr(lower(t.op), lower(?3)) > 0"                 \
  " OR instr(lower(t.category), lower(?3)) > 0)"                          \
  " AND (?4 IS NULL OR t.category = ?4)"                                  \
  " GROUP BY t.op, t.params, t.recompute),"                               \
  " h AS (SELECT g.*, flops / (peak_tflops * 1e12) AS c,"                 \
  " bytes / (peak_tb_s * 1e12) AS m FROM g),"                             \
  " k AS (SELECT h.*, CASE WHEN c IS NULL THEN m WHEN m IS NULL THEN c"   \
  " ELSE max(c, m) END AS roof_s FROM h)"                                 \
  " SELECT op, category, params, recompute,"                              \
  " input_dims AS input_dims_json, input_types AS input_types_json,"      \
  " input_strides AS input_strides_json,"                                 \
  " concrete_inputs AS concrete_inputs_json, compute_spec,"               \
  " count, timed, kernels, nested,"                                       \
  " flops / 1e9 AS gflops, bytes / 1048576.0 AS data_moved_mb,"           \
  " CASE WHEN bytes > 0 THEN flops / bytes END AS flops_per_byte,"        \
  " CASE WHEN count > 0 THEN kernel_ns / 1e3 / count ELSE 0.0 END"        \
  "  AS kernel_us_mean,"                                                  \
  " kernel_p50_ns / 1e3 AS kernel_us_median,"                             \
  " kernel_min_ns / 1e3 AS kernel_us_min,"                                \
  " kernel_max_ns / 1e3 AS kernel_us_max, kernel_ns / 1e3 AS kernel_us_sum," \
  " CASE WHEN timed > 0 THEN flops * inv_s / timed / 1e12 END"            \
  "  AS tflops_s_mean,"                                                   \
  " CASE WHEN timed > 0 THEN bytes * inv_s / timed / 1e12 END"            \
  "  AS tb_s_mean,"                                                       \
  " peak_tflops, peak_tb_s,"                                              \
  " CASE WHEN roof_s > 0 THEN flops / roof_s / 1e12 END"                  \
  "  AS attainable_tflops,"                                               \
  " CASE WHEN kernel_ns > 0 THEN 100.0 * timed * roof_s * 1e9 / kernel_ns" \
  " END AS pct_of_attainable,"                                            \
  " CASE WHEN roof_s IS NULL THEN NULL"                                   \
  " WHEN c IS NOT NULL AND (m IS NULL OR c >= m) THEN 'compute'"          \
  " ELSE 'memory' END AS bound,"                                          \
  " CASE WHEN roof_s IS NOT NULL THEN"                                    \
  " max(0.0, kernel_ns / 1e3 - timed * roof_s * 1e6) END AS lost_us,"     \
  " ranks FROM k ORDER BY "
#define PERF_TIES ", op, params, recompute LIMIT ?5"
/* clang-format on */

/* The statements: by the time lost, then by each ?sort= of tr_sorts. */
static const char *const perf_sql[] = {
  PERF_GROUPS "lost_us DESC NULLS LAST, kernel_us_sum DESC" PERF_TIES,
  PERF_GROUPS "kernel_us_sum DESC" PERF_TIES,
  PERF_GROUPS "count DESC" PERF_TIES,
  PERF_GROUPS "kernel_us_mean DESC" PERF_TIES,
  PERF_GROUPS "op" PERF_TIES,
};

static int perf_rows(struct store *st, const void *ctx,
                     const struct store_query *q, json_t **out,
                     struct tr_err *err)
{
  size_t k = 0;
  sqlite3_stmt *s;
  int rc;

  (void)ctx;
  for (size_t j = 0; q->sort != NULL && tr_sorts[j] != NULL && j < 4; j++)
    if (strcmp(q->sort, tr_sorts[j]) == 0)
      k = j + 1;
  rc = store__stmt_query(st, perf_sql[k], q, &s, err);
  if (rc < 0)
    return rc;
  if ((rc = store__rows(st, s, out, err)) == 0)
    store__rank_key(q, *out, "ranks");
  return rc;
}

const struct store__sql store__sql_op_perf = { perf_rows, NULL, NULL, NULL };
