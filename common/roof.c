/*
 * The GPUs' datasheet peaks (roof.h). Dense figures throughout: NVIDIA
 * quotes its tensor rates with 2:4 sparsity, halved here; a precision a
 * GPU's matrix units do not run is 0. Vector: the non-matrix (elementwise)
 * FP32 and FP64 rates; 16-bit elementwise ops are put against FP32's.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/roof.h"

#define AMD_MI300X                                                             \
  "AMD Instinct MI300X data sheet (amd.com, instinct-tech-docs/data-sheets/"   \
  "amd-instinct-mi300x-data-sheet.pdf)"
#define AMD_MI325X                                                             \
  "AMD Instinct MI325X data sheet (amd.com, instinct-tech-docs/product-"       \
  "briefs/instinct-mi325x-datasheet.pdf)"
#define AMD_MI355X                                                             \
  "AMD Instinct MI355X GPU data sheet (amd.com, instinct-tech-docs/product-"   \
  "briefs/amd-instinct-mi355x-gpu-datasheet.pdf)"
#define NV_H100                                                                \
  "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column "                    \
  "(nvidia.com/en-us/data-center/h100)"
#define NV_H200                                                                \
  "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column "                    \
  "(nvidia.com/en-us/data-center/h200)"
#define NV_B200                                                                \
  "NVIDIA Blackwell datasheet, HGX B200 per GPU "                              \
  "(nvidia.com/en-us/data-center/hgx)"
#define NV_A100                                                                \
  "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column "               \
  "(nvidia.com/en-us/data-center/a100)"

/* XX(name, pattern, unless, fp64, fp32, tf32, fp16, bf16, fp8, fp4,
 *    vector fp32, vector fp64, TB/s, source): a row. The row is the GPU
 * whose deviceProperties name holds pattern (any case) and not unless
 * (NULL: no such variant): kineto names the H100 SXM "NVIDIA H100 80GB
 * HBM3", its PCIe card "NVIDIA H100 PCIe". */
#define TR_ROOF_MAP(XX)                                                        \
  XX("MI300X", "MI300X", NULL, 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 0, \
     163.4, 81.7, 5.3, AMD_MI300X)                                             \
  XX("MI325X", "MI325X", NULL, 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 0, \
     163.4, 81.7, 6.0, AMD_MI325X)                                             \
  XX("MI355X", "MI355X", NULL, 78.6, 157.3, 0, 2516.6, 2516.6, 5033.2,         \
     10066.3, 157.3, 78.6, 8.0, AMD_MI355X)                                    \
  XX("H100 SXM", "H100", "PCIe", 67, 67, 494.7, 989.4, 989.4, 1978.9, 0, 67,   \
     34, 3.35, NV_H100)                                                        \
  XX("H200", "H200", NULL, 67, 67, 494.7, 989.4, 989.4, 1978.9, 0, 67, 34,     \
     4.8, NV_H200)                                                             \
  XX("B200", "B200", NULL, 40, 80, 1100, 2250, 2250, 4500, 9000, 80, 40, 8.0,  \
     NV_B200)                                                                  \
  XX("A100 SXM", "A100", "PCIe", 19.5, 19.5, 156, 312, 312, 0, 0, 19.5, 9.7,   \
     2.039, NV_A100)

static const struct tr_roof roofs[] = {
#define XX(name, pat, unless, f64, f32, tf32, f16, bf16, f8, f4, v32, v64, tb, \
           src)                                                                \
  { name, { f64, f32, tf32, f16, bf16, f8, f4 }, v32, v64, tb, src },
  TR_ROOF_MAP(XX)
#undef XX
};

static const char *const patterns[][2] = {
#define XX(name, pat, unless, ...) { pat, unless },
  TR_ROOF_MAP(XX)
#undef XX
};

#define NROOFS (sizeof(roofs) / sizeof(roofs[0]))

static const char *const prec_names[TR_PRECS] = {
#define XX(e, s) s,
  TR_ROOF_PRECS(XX)
#undef XX
};

/* The byte s of n bytes holds pat, any case. */
static int holds(const char *s, const char *pat)
{
  size_t n = strlen(s), k = strlen(pat);

  for (size_t i = 0; i + k <= n; i++) {
    size_t j = 0;

    while (j < k &&
           tolower((unsigned char)s[i + j]) == tolower((unsigned char)pat[j]))
      j++;
    if (j == k)
      return 1;
  }
  return 0;
}

int tr_roof_of_device(const char *device, struct tr_roof *out)
{
  for (size_t i = 0; device != NULL && i < NROOFS; i++)
    if (holds(device, patterns[i][0]) &&
        (patterns[i][1] == NULL || !holds(device, patterns[i][1]))) {
      *out = roofs[i];
      return 1;
    }
  return 0;
}

/* One "key=value" of a roof by hand. */
static int by_hand(struct tr_roof *r, const char *k, size_t kn, double v)
{
  for (int p = 0; p < TR_PRECS; p++)
    if (strlen(prec_names[p]) == kn && memcmp(prec_names[p], k, kn) == 0) {
      r->matrix[p] = v;
      return 0;
    }
  if (kn == 4 && memcmp(k, "tb_s", 4) == 0)
    r->tb_s = v;
  else if (kn == 8 && memcmp(k, "vec_fp32", 8) == 0)
    r->vec_fp32 = v;
  else if (kn == 8 && memcmp(k, "vec_fp64", 8) == 0)
    r->vec_fp64 = v;
  else
    return -1;
  return 0;
}

int tr_roof_parse(const char *setting, struct tr_roof *out, struct tr_err *err)
{
  const char *colon = strchr(setting, ':'), *p;
  struct tr_roof r;

  for (size_t i = 0; colon == NULL && i < NROOFS; i++)
    if (strcmp(roofs[i].name, setting) == 0) {
      *out = roofs[i];
      return 0;
    }
  for (p = setting; colon != NULL && p < colon && isprint((unsigned char)*p);
       p++)
    ; /* the name goes into JSON and the dashboard as it is */
  if (colon == NULL || colon == setting || p < colon ||
      (size_t)(colon - setting) >= sizeof(r.name))
    return tr_err_set(err, TR_EINVAL, "gpu_roof",
                      "gpu_roof: not a GPU of the table, nor "
                      "<name>:tb_s=...,<precision>=...");
  memset(&r, 0, sizeof(r));
  memcpy(r.name, setting, (size_t)(colon - setting));
  for (p = colon + 1;; p++) { /* key=value, comma-separated, none empty */
    const char *eq = strchr(p, '='), *end = p + strcspn(p, ",");
    char *stop;
    double v;

    if (eq == NULL || eq > end || eq + 1 == end ||
        (v = strtod(eq + 1, &stop), stop != end) || !(v >= 0 && v < 1e7) ||
        by_hand(&r, p, (size_t)(eq - p), v) != 0)
      return tr_err_set(err, TR_EINVAL, "gpu_roof",
                        "gpu_roof: bad figure at \"%.*s\"", (int)(end - p), p);
    if (*(p = end) == '\0')
      break;
  }
  if (!(r.tb_s > 0))
    return tr_err_set(err, TR_EINVAL, "gpu_roof",
                      "gpu_roof: a roof by hand needs tb_s");
  *out = r;
  return 0;
}

int tr_roof_pick(const char *setting, const char *device, struct tr_roof *out)
{
  if (setting != NULL && *setting != '\0')
    return tr_roof_parse(setting, out, NULL) == 0;
  return tr_roof_of_device(device, out);
}

double tr_roof_peak(const struct tr_roof *r, char maf, const char *prec)
{
  int p;

  if (prec == NULL)
    return 0;
  for (p = 0; p < TR_PRECS && strcmp(prec_names[p], prec) != 0; p++)
    ;
  if (p == TR_PRECS)
    return 0;
  if (maf == 'v')
    return p == TR_PREC_FP64 ? r->vec_fp64 : r->vec_fp32;
  return r->matrix[p];
}

const struct tr_roof *tr_roof_rows(size_t *n)
{
  *n = NROOFS;
  return roofs;
}
