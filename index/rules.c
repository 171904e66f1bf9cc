/*
 * Kernel categories: ONE ordered table of name patterns, first match wins
 * (docs/TRACE_FORMATS.md, "The analysis the seeds do by hand"). A pattern
 * is a case-insensitive substring, or with a leading '^' a prefix. User
 * rules (idx_rules_load) come first, so a user can override any built-in.
 *
 * Why this order:
 *  - communication first: "reduce_scatter", "all_gather" must not fall to
 *    routing ("scatter", "gather") or elementwise ("reduce").
 *  - copy and memset next: ROCm copy engines run as kernels named
 *    MEMORY_COPY_* / __amd_rocclr_copyBuffer*; "CatArrayBatchedCopy" and
 *    "direct_copy" kernels are copies whatever template wraps them
 *    ("elementwise_kernel<...direct_copy_kernel_cuda...>").
 *  - moe before attention, gemm and routing: "moe_sorting", "fused_moe"
 *    and "topk_softplus" (DeepSeek gating) are the MoE operator's own
 *    stages, reported with it rather than as generic sort/topk.
 *  - attention before gemm: fmha/flash kernels often embed "gemm" in
 *    their template names.
 *  - custom (triton_, TileLang's kernel_kernel*) after gemm/attention, so
 *    a library GEMM stays gemm; before the generic buckets, so a generated
 *    fused kernel is not filed as "reduce" or "norm".
 *  - routing before elementwise and softmax_topk: scatter/gather kernels
 *    are named "_scatter_gather_elementwise_kernel", "vectorized_gather".
 *    Layout moves (transpose, permute) are routing too.
 *  - normalization before elementwise ("rms_norm ... reduce").
 *  - no bare "norm" (it matches at::native::normal_kernel, a random fill)
 *    and no bare "sync" (it matches "async").
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/agg.h"
#include "index/index.h"

static const char *const categories[AGG_NCATEGORIES] = {
  "gemm",         "attention", "moe",    "communication", "custom",
  "routing",      "copy",      "memset", "elementwise",   "normalization",
  "softmax_topk", "sync",      "other"
};

struct rule {
  const char *pattern; /* lower case; leading '^': prefix */
  int category;        /* index into categories */
};

enum {
  GEMM,
  ATTN,
  MOE,
  COMM,
  CUSTOM,
  ROUTING,
  COPY,
  MEMSET,
  ELEM,
  NORM,
  SOFTMAX,
  SYNC,
  OTHER
};

static const struct rule builtin[] = {
  { "nccl", COMM },
  { "rccl", COMM },
  { "allreduce", COMM },
  { "all_reduce", COMM },
  { "all_gather", COMM },
  { "allgather", COMM },
  { "reduce_scatter", COMM },
  { "reducescatter", COMM },
  { "cross_device", COMM },
  { "alltoall", COMM },
  { "all_to_all", COMM },
  { "^memory_copy", COPY },
  { "copybuffer", COPY },
  { "memcpy", COPY },
  { "direct_copy", COPY },
  { "catarraybatchedcopy", COPY },
  { "memset", MEMSET },
  { "fillbuffer", MEMSET },
  { "moe", MOE },
  { "expert", MOE },
  { "topk_softplus", MOE },
  { "flash", ATTN },
  { "fmha", ATTN },
  { "attn", ATTN },
  { "attention", ATTN },
  { "paged_attention", ATTN },
  { "mla", ATTN },
  { "^pa_", ATTN },
  { "^cijk_", GEMM },
  { "gemm", GEMM },
  { "cutlass", GEMM },
  { "cublas", GEMM },
  { "hipblaslt", GEMM },
  { "mcblas", GEMM },
  { "matmul", GEMM },
  { "wvsplitk", GEMM },
  { "xmma", GEMM },
  { "gemv", GEMM },
  { "triton_", CUSTOM },
  { "^kernel_", CUSTOM },
  { "tilelang", CUSTOM },
  { "scatter", ROUTING },
  { "gather", ROUTING },
  { "reorder", ROUTING },
  { "sort", ROUTING },
  { "index_", ROUTING },
  { "indexselect", ROUTING },
  { "indexing", ROUTING },
  { "permute", ROUTING },
  { "hist", ROUTING },
  { "routing", ROUTING },
  { "transpose", ROUTING },
  { "rmsnorm", NORM },
  { "rms_norm", NORM },
  { "layernorm", NORM },
  { "layer_norm", NORM },
  { "groupnorm", NORM },
  { "group_norm", NORM },
  { "batchnorm", NORM },
  { "batch_norm", NORM },
  { "_norm_", NORM },
  { "softmax", SOFTMAX },
  { "topk", SOFTMAX },
  { "top_k", SOFTMAX },
  { "semaphore", SYNC },
  { "barrier", SYNC },
  { "^sync", SYNC },
  { "elementwise", ELEM },
  { "reduce", ELEM },
  { "fill", ELEM },
  { "unrolled", ELEM },
  { "vectorized", ELEM },
  { "pointwise", ELEM },
};

struct idx_rules {
  struct rule *user; /* patterns owned (strdup'd) */
  size_t n;
};

int agg_category_index(const char *category)
{
  int i;

  for (i = 0; i < AGG_NCATEGORIES; i++)
    if (strcmp(categories[i], category) == 0)
      return i;
  return OTHER;
}

const char *agg_category_name(int index)
{
  return index >= 0 && index < AGG_NCATEGORIES ? categories[index]
                                               : categories[OTHER];
}

/* Case-insensitive match of a lower-case pattern against name. */
static int rule_matches(const char *pattern, const char *name)
{
  const char *p = pattern[0] == '^' ? pattern + 1 : pattern;
  size_t n = strlen(p), i;
  const char *s;

  for (s = name; *s != '\0'; s++) {
    for (i = 0; i < n && s[i] != '\0'; i++)
      if (tolower((unsigned char)s[i]) != p[i])
        break;
    if (i == n)
      return 1;
    if (pattern[0] == '^')
      return 0;
  }
  return n == 0;
}

const char *idx_category(const struct idx_rules *rules, const char *name)
{
  size_t i;

  for (i = 0; rules != NULL && i < rules->n; i++)
    if (rule_matches(rules->user[i].pattern, name))
      return categories[rules->user[i].category];
  for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
    if (rule_matches(builtin[i].pattern, name))
      return categories[builtin[i].category];
  return categories[OTHER];
}

void idx_rules_free(struct idx_rules *rules)
{
  size_t i;

  if (rules == NULL)
    return;
  for (i = 0; i < rules->n; i++)
    free((char *)rules->user[i].pattern);
  free(rules->user);
  free(rules);
}

/* Parses one `category pattern` line into r->user. Blank and comment
 * lines are fine. */
static int parse_line(struct idx_rules *r, size_t *cap, char *line,
                      const char *path, int lineno, struct tr_err *err)
{
  char *cat, *pat, *end, *save = NULL, *p;
  int idx;

  if ((p = strchr(line, '#')) != NULL)
    *p = '\0';
  cat = strtok_r(line, " \t\r\n", &save);
  if (cat == NULL)
    return 0;
  pat = strtok_r(NULL, " \t\r\n", &save);
  end = strtok_r(NULL, " \t\r\n", &save);
  idx = agg_category_index(cat);
  if (pat == NULL || end != NULL || strcmp(pat, "^") == 0 ||
      strcmp(categories[idx], cat) != 0)
    return tr_err_set(err, TR_EINVAL, "rules",
                      "%s:%d: expected `category pattern` with a category "
                      "among gemm attention moe communication custom "
                      "routing copy memset elementwise normalization "
                      "softmax_topk sync other",
                      path, lineno);
  if (agg_grow(&r->user, cap, r->n, sizeof(*r->user)) != 0)
    return tr_err_set(err, TR_ENOMEM, "rules", "out of memory");
  for (p = pat; *p != '\0'; p++)
    *p = (char)tolower((unsigned char)*p);
  if ((r->user[r->n].pattern = strdup(pat)) == NULL)
    return tr_err_set(err, TR_ENOMEM, "rules", "out of memory");
  r->user[r->n++].category = idx;
  return 0;
}

int idx_rules_load(const char *path, struct idx_rules **out, struct tr_err *err)
{
  struct idx_rules *r = calloc(1, sizeof(*r));
  size_t cap = 0;
  char line[1024];
  int lineno = 0, rc = 0;
  FILE *f;

  if (r == NULL)
    return tr_err_set(err, TR_ENOMEM, "rules", "out of memory");
  if (path == NULL || path[0] == '\0') {
    *out = r;
    return 0;
  }
  if ((f = fopen(path, "r")) == NULL) {
    rc = -errno;
    idx_rules_free(r);
    return tr_err_set(err, rc, "rules", "%s: %s", path, strerror(-rc));
  }
  while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
    lineno++;
    if (strchr(line, '\n') == NULL && !feof(f))
      rc = tr_err_set(err, TR_EINVAL, "rules", "%s:%d: line too long", path,
                      lineno);
    else
      rc = parse_line(r, &cap, line, path, lineno, err);
  }
  fclose(f);
  if (rc != 0) {
    idx_rules_free(r);
    return rc;
  }
  *out = r;
  return 0;
}
