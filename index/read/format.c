/*
 * The format table (read.h): kineto and MetaX mcTracer JSON, as
 * docs/TRACE_FORMATS.md describes them.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "index/read/read.h"

/* kineto's cat values, new and legacy (2021) spellings. */
#define CAT(s, cls)                                                            \
  {                                                                            \
    s, sizeof(s) - 1, cls                                                      \
  }
static const struct {
  const char *cat;
  size_t n;
  enum idx_class cls;
} kineto_cats[] = {
  /* Most events are Python functions and CPU ops: first. */
  CAT("python_function", IDX_CLASS_PYTHON),
  CAT("cpu_op", IDX_CLASS_CPU_OP),
  CAT("Operator", IDX_CLASS_CPU_OP),
  CAT("kernel", IDX_CLASS_KERNEL),
  CAT("Kernel", IDX_CLASS_KERNEL),
  CAT("gpu_memcpy", IDX_CLASS_COPY),
  CAT("Memcpy", IDX_CLASS_COPY),
  CAT("gpu_memset", IDX_CLASS_MEMSET),
  CAT("Memset", IDX_CLASS_MEMSET),
  CAT("cuda_runtime", IDX_CLASS_RUNTIME),
  CAT("cuda_driver", IDX_CLASS_RUNTIME),
  CAT("Runtime", IDX_CLASS_RUNTIME),
  CAT("user_annotation", IDX_CLASS_LABEL_CPU),
  CAT("gpu_user_annotation", IDX_CLASS_LABEL_GPU),
  CAT("cuda_sync", IDX_CLASS_SYNC),
};
#undef CAT

/* p[0..n) == lit[0..n): from 8 to 16 bytes as two words that overlap,
 * read within both (this runs for every event: a call to memcmp cost a
 * fifth of the classification). */
static inline int same_text(const char *p, const char *lit, size_t n)
{
  uint64_t a, b, c, d;

  if (n < 8 || n > 16)
    return memcmp(p, lit, n) == 0;
  memcpy(&a, p, 8);
  memcpy(&b, lit, 8);
  memcpy(&c, p + n - 8, 8);
  memcpy(&d, lit + n - 8, 8);
  return a == b && c == d;
}

/* kineto: by cat. An X event without cat (the bare-array legacy format,
 * record_function labels as plain events) may be a host run label. */
static enum idx_class kineto_classify(const struct idx_event *ev)
{
  size_t i;

  if (ev->cat_class != 0)
    return (enum idx_class)(ev->cat_class - 1);
  if (ev->cat.p == NULL)
    return IDX_CLASS_LABEL_CPU;
  /* Length and first byte before the compare: this runs for every event,
   * most of them python_function or cpu_op. */
  for (i = 0; i < sizeof(kineto_cats) / sizeof(kineto_cats[0]); i++)
    if (ev->cat.n == kineto_cats[i].n &&
        ev->cat.p[0] == kineto_cats[i].cat[0] &&
        same_text(ev->cat.p, kineto_cats[i].cat, ev->cat.n))
      return kineto_cats[i].cls;
  return IDX_CLASS_NONE;
}

/* mcTracer: by pid lane, 1 host runtime API, 2 kernels, 3 copies (memsets
 * by name). */
static enum idx_class mctracer_classify(const struct idx_event *ev)
{
  size_t i;

  if (!(ev->has & IDX_HAS_PID))
    return IDX_CLASS_NONE;
  switch (ev->pid) {
  case 1: return IDX_CLASS_RUNTIME;
  case 2: return IDX_CLASS_KERNEL;
  case 3:
    for (i = 0; i < 6 && i < ev->name.n; i++)
      if (tolower((unsigned char)ev->name.p[i]) != "memset"[i])
        break;
    return i == 6 ? IDX_CLASS_MEMSET : IDX_CLASS_COPY;
  default: return IDX_CLASS_NONE;
  }
}

/* mcTracer events have no cat, and either args.co_id or a numeric pid
 * lane 1..3. */
static int mctracer_claims(const struct idx_event *ev, int co_id)
{
  int lane = (ev->has & IDX_HAS_PID) && ev->pid >= 1 && ev->pid <= 3;

  return ev->cat.p == NULL && (co_id || lane);
}

static const char *const kineto_keys[] = { "schemaVersion",
                                           "traceName",
                                           "displayTimeUnit",
                                           "deviceProperties",
                                           "distributedInfo",
                                           "baseTimeNanoseconds",
                                           NULL };

const struct idx_format_desc idx_formats[] = {
  [IDX_FORMAT_KINETO] = { IDX_FORMAT_KINETO, "kineto", 3, kineto_keys, 1, NULL,
                          kineto_classify, 1, 0 },
  [IDX_FORMAT_MCTRACER] = { IDX_FORMAT_MCTRACER, "mctracer", 0, NULL, 0,
                            mctracer_claims, mctracer_classify, 0, 1 },
};

#define NFORMATS (sizeof(idx_formats) / sizeof(idx_formats[0]))
_Static_assert(NFORMATS == IDX_FORMAT_COUNT, "a row per enum idx_format");

enum idx_format idx_format_detect(const struct idx_event *ev, int co_id)
{
  size_t i;

  for (i = 1; i < NFORMATS; i++)
    if (idx_formats[i].claims != NULL && idx_formats[i].claims(ev, co_id))
      return idx_formats[i].id;
  return IDX_FORMAT_DEFAULT;
}

enum idx_format idx_format_of_key(const char *k, size_t n)
{
  const char *const *key;
  size_t i;

  for (i = 1; i < NFORMATS; i++)
    for (key = idx_formats[i].top_keys; key != NULL && *key != NULL; key++)
      if (strlen(*key) == n && memcmp(*key, k, n) == 0)
        return idx_formats[i].id;
  return IDX_FORMAT_AUTO;
}

enum idx_format idx_format_bare(void)
{
  size_t i;

  for (i = 1; i < NFORMATS; i++)
    if (idx_formats[i].bare_array)
      return idx_formats[i].id;
  return IDX_FORMAT_DEFAULT;
}

int idx_format_parse(const char *name, enum idx_format *out)
{
  size_t i;

  if (strcmp(name, "auto") == 0) {
    *out = IDX_FORMAT_AUTO;
    return 0;
  }
  for (i = 1; i < NFORMATS; i++)
    if (strcmp(name, idx_formats[i].name) == 0) {
      *out = idx_formats[i].id;
      return 0;
    }
  return TR_EINVAL;
}

const char *idx_format_name(enum idx_format f)
{
  return f == IDX_FORMAT_AUTO ? "auto" : idx_format_get(f)->name;
}

const char *idx_format_names(char *buf, size_t size, const char *sep)
{
  size_t n = 0;

  buf[0] = '\0';
  for (int f = IDX_FORMAT_AUTO; f < IDX_FORMAT_COUNT && n < size; f++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s", f ? sep : "",
                          idx_format_name((enum idx_format)f));
  return buf;
}
