/*
 * The table of tables (common/summary.h's TR_TABLE_MAP) as data, for the
 * store's registry, the routes and the test that holds api/openapi.yaml
 * to it.
 */
#include "common/summary.h"

#include <stddef.h>
#include <string.h>

#define PER_RANK    false
#define PER_CAPTURE true

const struct tr_table_row tr_tables[TR_NTABLES] = {
#define XX(scope, name, ROWS, row, route, params, by, flags, key, kind)        \
  [TR_TABLE_##name] = { #name, route, params, by, flags, key, kind, scope },
  TR_TABLE_MAP(XX)
#undef XX
};

const char *const tr_param_names[TR_NPARAMS] = {
#define XX(e, name, type) [TR_PARAM_##e] = #name,
  TR_PARAM_MAP(XX)
#undef XX
};

const char *const tr_sorts[] = { "total", "count", "avg", "name", NULL };

const char *const tr_op_categories[] = { "GEMM",
                                         "SDPA_fwd",
                                         "SDPA_bwd",
                                         "CONV_fwd",
                                         "CONV_bwd",
                                         "UnaryElementwise",
                                         "BinaryElementwise",
                                         "Reduce_fwd",
                                         "Normalization",
                                         "RMSNorm_fwd",
                                         "RoPE_fwd",
                                         "MoE_fused_fwd",
                                         "MoE_unfused_fwd",
                                         "InferenceAttention_fwd",
                                         NULL };

const char *const tr_diff_bys[] = {
#define XX(by, ...) #by,
  TR_DIFF_BY_MAP(XX)
#undef XX
      NULL
};

/* Each value of ?by= reads a table of the map: a name that is none does
 * not compile. */
enum {
#define XX(by, table, ...) TR_DIFF_BY_##by = TR_TABLE_##table,
  TR_DIFF_BY_MAP(XX)
#undef XX
};

int tr_table_find(const char *name)
{
  for (int t = 0; name != NULL && t < TR_NTABLES; t++)
    if (strcmp(tr_tables[t].name, name) == 0)
      return t;
  return -1;
}

int tr_table_find_route(const char *route)
{
  for (int t = 0; route != NULL && t < TR_NTABLES; t++)
    if (strcmp(tr_tables[t].route, route) == 0)
      return t;
  return -1;
}
