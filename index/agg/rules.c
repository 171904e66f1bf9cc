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
 *
 * The same table holds the family rules (family.c): the first family rule
 * that matches a (demangled) name says what of it to drop, so that one
 * kernel at another tile or ordinal is one family. A user's file adds
 * `family PATTERN ACTION` lines: keep (only the template and parameter
 * lists go, as for every name), tile (cut before the first field
 * _<letters><N>x<M>: Tensile's MT128x128x64 and all solution fields after
 * it, CUTLASS's and nvjet's 128x256), ordinal (drop a trailing _<digits>:
 * Triton's numbering), arg N (the N-th template argument: ck_tile's
 * kentry<1, Rmsnorm2dFwd<...>> is Rmsnorm2dFwd), as NAME (that name).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg_int.h"
#include "index/index.h"

static const char *const categories[AGG_NCATEGORIES] = {
  "gemm",         "attention", "moe",    "communication", "custom",
  "routing",      "copy",      "memset", "elementwise",   "normalization",
  "softmax_topk", "sync",      "other"
};

struct rule {
  const char *pattern; /* lower case; leading '^': prefix */
  int category;        /* index into categories; -1: a family rule */
  int family;          /* enum agg_fam_action; -1: a category rule */
  int arg;             /* AGG_FAM_ARG: which argument, from 1 */
  const char *as;      /* AGG_FAM_AS: the family */
};

#define CAT(p, c)                                                              \
  {                                                                            \
    p, c, -1, 0, NULL                                                          \
  }
#define FAM(p, a, n)                                                           \
  {                                                                            \
    p, -1, AGG_FAM_##a, n, NULL                                                \
  }

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
  /* Families (family.c): what of a name to drop so that the same
   * kernel at another tile or ordinal is one family. ck_tile first: its
   * kernel is the 2nd argument of kentry<>, whatever it holds (GEMMs). */
  FAM("ck_tile::kentry<", ARG, 2),
  FAM("^cijk_", TILE, 0), /* Tensile: solution fields from _MT... */
  FAM("nvjet", TILE, 0),
  FAM("cutlass", TILE, 0),
  FAM("xmma", TILE, 0),
  FAM("cudnn", TILE, 0),
  FAM("gemm", TILE, 0),       /* volta_sgemm_128x64_nn */
  FAM("triton_", ORDINAL, 0), /* triton_poi_fused_add_0 */
  /* Categories. */
  CAT("nccl", COMM),
  CAT("rccl", COMM),
  CAT("allreduce", COMM),
  CAT("all_reduce", COMM),
  CAT("all_gather", COMM),
  CAT("allgather", COMM),
  CAT("reduce_scatter", COMM),
  CAT("reducescatter", COMM),
  CAT("cross_device", COMM),
  CAT("alltoall", COMM),
  CAT("all_to_all", COMM),
  /* vLLM's symmetric-memory all-reduce, NCCL's point-to-point kernel
   * outside an nccl* name, MSCCL++ and AITER's quick all-reduce. */
  CAT("multimem", COMM),
  CAT("sendrecv", COMM),
  CAT("mscclpp", COMM),
  CAT("quickreduce", COMM),
  CAT("^memory_copy", COPY),
  CAT("copybuffer", COPY),
  CAT("memcpy", COPY),
  CAT("direct_copy", COPY),
  CAT("catarraybatchedcopy", COPY),
  CAT("memset", MEMSET),
  CAT("fillbuffer", MEMSET),
  CAT("moe", MOE),
  CAT("expert", MOE),
  CAT("topk_softplus", MOE),
  CAT("flash", ATTN),
  CAT("fmha", ATTN),
  CAT("attn", ATTN),
  CAT("attention", ATTN),
  CAT("paged_attention", ATTN),
  CAT("mla", ATTN),
  CAT("^pa_", ATTN),
  CAT("^cijk_", GEMM),
  CAT("gemm", GEMM),
  CAT("cutlass", GEMM),
  CAT("cublas", GEMM),
  CAT("hipblaslt", GEMM),
  CAT("mcblas", GEMM),
  CAT("matmul", GEMM),
  CAT("wvsplitk", GEMM),
  CAT("xmma", GEMM),
  CAT("gemv", GEMM),
  CAT("triton_", CUSTOM),
  CAT("^kernel_", CUSTOM),
  CAT("tilelang", CUSTOM),
  CAT("scatter", ROUTING),
  CAT("gather", ROUTING),
  CAT("reorder", ROUTING),
  CAT("sort", ROUTING),
  CAT("index_", ROUTING),
  CAT("indexselect", ROUTING),
  CAT("indexing", ROUTING),
  CAT("permute", ROUTING),
  CAT("hist", ROUTING),
  CAT("routing", ROUTING),
  CAT("transpose", ROUTING),
  CAT("rmsnorm", NORM),
  CAT("rms_norm", NORM),
  CAT("layernorm", NORM),
  CAT("layer_norm", NORM),
  CAT("groupnorm", NORM),
  CAT("group_norm", NORM),
  CAT("batchnorm", NORM),
  CAT("batch_norm", NORM),
  CAT("_norm_", NORM),
  CAT("softmax", SOFTMAX),
  CAT("topk", SOFTMAX),
  CAT("top_k", SOFTMAX),
  CAT("semaphore", SYNC),
  CAT("barrier", SYNC),
  CAT("^sync", SYNC),
  CAT("elementwise", ELEM),
  CAT("reduce", ELEM),
  CAT("fill", ELEM),
  CAT("unrolled", ELEM),
  CAT("vectorized", ELEM),
  CAT("pointwise", ELEM),
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

/* c in lower case, as tolower() in the "C" locale, which traced keeps
 * (it never calls setlocale()), without its call per byte. */
static unsigned char ascii_lower(unsigned char c)
{
  return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Names up to this long are matched in lower case by strstr(), the
 * longest kept (a demangled one, docs/SECURITY.md) among them. */
#define LOW_MAX (16u << 10)

/* Case-insensitive match of a lower-case pattern against name: against
 * low, the name in lower case (ascii_lower()), by the C library's string
 * search; NULL: byte by byte. Bytes past ASCII (a UTF-8 name's) match
 * themselves: only A-Z have a lower case in the "C" locale. */
static int rule_matches(const char *pattern, const char *name, const char *low)
{
  const char *p = pattern[0] == '^' ? pattern + 1 : pattern;
  size_t n = strlen(p), i;
  const char *s;

  if (low != NULL)
    return pattern[0] == '^' ? strncmp(low, p, n) == 0 : strstr(low, p) != NULL;
  for (s = name; *s != '\0'; s++) {
    for (i = 0; i < n && s[i] != '\0'; i++)
      if (ascii_lower((unsigned char)s[i]) != (unsigned char)p[i])
        break;
    if (i == n)
      return 1;
    if (pattern[0] == '^')
      return 0;
  }
  return n == 0;
}

/* The first rule, the user's before the built-ins, that matches name and
 * is a category rule (family 0) or a family rule (family 1); NULL: none. */
static const struct rule *first_match(const struct idx_rules *rules,
                                      const char *name, int family)
{
  size_t i, n = strlen(name);
  char buf[LOW_MAX + 1], *low = n <= LOW_MAX ? buf : NULL;

  for (i = 0; low != NULL && i <= n; i++)
    buf[i] = (char)ascii_lower((unsigned char)name[i]);
  for (i = 0; rules != NULL && i < rules->n; i++)
    if ((rules->user[i].family >= 0) == family &&
        rule_matches(rules->user[i].pattern, name, low))
      return &rules->user[i];
  for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
    if ((builtin[i].family >= 0) == family &&
        rule_matches(builtin[i].pattern, name, low))
      return &builtin[i];
  return NULL;
}

const char *idx_category(const struct idx_rules *rules, const char *name)
{
  const struct rule *r = first_match(rules, name, 0);

  return categories[r ? r->category : OTHER];
}

int agg_family_rule(const struct idx_rules *rules, const char *name,
                    struct agg_family_rule *out)
{
  const struct rule *r = first_match(rules, name, 1);

  if (r == NULL)
    return 0;
  out->action = (enum agg_fam_action)r->family;
  out->arg = r->arg;
  out->as = r->as;
  return 1;
}

void idx_rules_free(struct idx_rules *rules)
{
  size_t i;

  if (rules == NULL)
    return;
  for (i = 0; i < rules->n; i++) {
    free((char *)rules->user[i].pattern);
    free((char *)rules->user[i].as);
  }
  free(rules->user);
  free(rules);
}

/* A new rule at the end of r->user for pattern (lower-cased in place). */
static struct rule *add_rule(struct idx_rules *r, size_t *cap, char *pat,
                             struct tr_err *err)
{
  struct rule *u;
  char *p;

  if (agg_grow(&r->user, cap, r->n, sizeof(*r->user)) != 0) {
    tr_err_set(err, TR_ENOMEM, "rules", "out of memory");
    return NULL;
  }
  for (p = pat; *p != '\0'; p++)
    *p = (char)tolower((unsigned char)*p);
  u = &r->user[r->n];
  memset(u, 0, sizeof(*u));
  u->family = -1;
  if ((u->pattern = strdup(pat)) == NULL) {
    tr_err_set(err, TR_ENOMEM, "rules", "out of memory");
    return NULL;
  }
  r->n++;
  return u;
}

/* `family PATTERN keep|tile|ordinal|arg N|as NAME` (tokens after
 * "family"); 0, or TR_EINVAL for a bad line. */
static int parse_family(struct idx_rules *r, size_t *cap, char *pat, char *act,
                        char *arg, char *extra, struct tr_err *err)
{
  /* In enum agg_fam_action's order. */
  static const char *const acts[] = { "keep", "tile", "ordinal", "arg", "as" };
  struct rule *u;
  long n = 0;
  size_t i = 0;

  while (act != NULL && i < 5 && strcmp(act, acts[i]) != 0)
    i++;
  if (pat == NULL || act == NULL || strcmp(pat, "^") == 0 || i == 5 ||
      extra != NULL ||
      (((int)i == AGG_FAM_ARG || (int)i == AGG_FAM_AS) != (arg != NULL)))
    return TR_EINVAL;
  if ((int)i == AGG_FAM_ARG &&
      ((n = strtol(arg, &extra, 10)) < 1 || n > 64 || *extra != '\0'))
    return TR_EINVAL;
  if ((u = add_rule(r, cap, pat, err)) == NULL)
    return TR_ENOMEM;
  u->category = -1;
  u->family = (int)i;
  u->arg = (int)n;
  if ((int)i == AGG_FAM_AS && (u->as = strdup(arg)) == NULL)
    return tr_err_set(err, TR_ENOMEM, "rules", "out of memory");
  return 0;
}

/* Parses one `category pattern` or `family pattern action [arg]` line into
 * r->user. Blank and comment lines are fine. */
static int parse_line(struct idx_rules *r, size_t *cap, char *line,
                      const char *path, int lineno, struct tr_err *err)
{
  char *w[5], *save = NULL, *p;
  int idx, rc, nw = 0;

  if ((p = strchr(line, '#')) != NULL)
    *p = '\0';
  for (p = line; nw < 5; p = NULL)
    if ((w[nw] = strtok_r(p, " \t\r\n", &save)) == NULL)
      break;
    else
      nw++;
  if (nw == 0)
    return 0;
  while (nw < 5)
    w[nw++] = NULL;
  if (strcmp(w[0], "family") == 0) {
    rc = parse_family(r, cap, w[1], w[2], w[3], w[4], err);
    if (rc != TR_EINVAL)
      return rc;
    return tr_err_set(err, TR_EINVAL, "rules",
                      "%s:%d: expected `family pattern keep|tile|ordinal` "
                      "or `family pattern arg N` or `family pattern as NAME`",
                      path, lineno);
  }
  idx = agg_category_index(w[0]);
  if (w[1] == NULL || w[2] != NULL || strcmp(w[1], "^") == 0 ||
      strcmp(categories[idx], w[0]) != 0)
    return tr_err_set(err, TR_EINVAL, "rules",
                      "%s:%d: expected `category pattern` with a category "
                      "among gemm attention moe communication custom "
                      "routing copy memset elementwise normalization "
                      "softmax_topk sync other, or a `family` rule",
                      path, lineno);
  if (add_rule(r, cap, w[1], err) == NULL)
    return TR_ENOMEM;
  r->user[r->n - 1].category = idx;
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
