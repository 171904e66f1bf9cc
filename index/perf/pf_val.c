/*
 * The arguments of a CPU op, from its event's text (perf_int.h; the members
 * found by index/read/read.h). The walk below checks every byte it relies
 * on, so that text it was not meant for (a fuzzer's) fails cleanly rather
 * than being read past its end.
 */
#include <stdlib.h>
#include <string.h>

#include "index/perf/perf_int.h"

#define MAX_DEPTH 32 /* nesting of one member's value */

int pf_args_spans(const char *raw, size_t n, struct idx_span sp[PF_MEMBERS])
{
  static const char *const names[PF_MEMBERS] = { "Input Dims", "Input type",
                                                 "Input Strides",
                                                 "Concrete Inputs",
                                                 "Output type" };

  return idx_args_spans(raw, n, names, PF_MEMBERS, sp);
}

/* ---- the values ---- */

struct parse {
  struct pf_args *a;
  const char *p, *e;
};

static int hex4(const char *p, unsigned *v)
{
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 16u;
    if (d > 15)
      return -1;
    *v = *v * 16 + d;
  }
  return 0;
}

/* Appends code point u as UTF-8 (a lone surrogate as U+FFFD). */
static int put_utf8(struct pf_args *a, unsigned u)
{
  unsigned char b[4];
  size_t n;

  if (u >= 0xD800 && u <= 0xDFFF)
    u = 0xFFFD;
  if (u < 0x80)
    b[0] = (unsigned char)u, n = 1;
  else if (u < 0x800)
    b[0] = (unsigned char)(0xC0 | u >> 6),
    b[1] = (unsigned char)(0x80 | (u & 63)), n = 2;
  else
    b[0] = (unsigned char)(0xE0 | u >> 12),
    b[1] = (unsigned char)(0x80 | ((u >> 6) & 63)),
    b[2] = (unsigned char)(0x80 | (u & 63)), n = 3;
  if (a->ntext + n > PF_TEXT)
    return -1;
  memcpy(a->text + a->ntext, b, n);
  a->ntext += n;
  return 0;
}

/* The string at x->p ('"') into v: its text in place when it has no
 * escape, else decoded into the arena. */
static int str_value(struct parse *x, struct pv *v)
{
  const char *s = x->p + 1, *end = idx_json_skip(x->p, x->e), *q;
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  unsigned u;

  if (end == NULL)
    return -1;
  x->p = end;
  v->t = PV_STR;
  if (memchr(s, '\\', (size_t)(end - 1 - s)) == NULL) {
    v->s = s;
    v->n = (uint32_t)(end - 1 - s);
    return 0;
  }
  v->s = x->a->text + x->a->ntext;
  for (q = s; q < end - 1; q++) {
    if (*q != '\\') {
      if (x->a->ntext >= PF_TEXT)
        return -1;
      x->a->text[x->a->ntext++] = *q;
    } else if (*++q == 'u') {
      if (end - 1 - q < 5 || hex4(q + 1, &u) != 0 || put_utf8(x->a, u) != 0)
        return -1;
      q += 4;
    } else {
      const char *f = strchr(from, *q);

      if (f == NULL || *q == '\0' || x->a->ntext >= PF_TEXT)
        return -1;
      x->a->text[x->a->ntext++] = to[f - from];
    }
  }
  v->n = (uint32_t)(x->a->text + x->a->ntext - v->s);
  return 0;
}

/* A scalar other than a string: true, false, null or a number. */
static int scalar(struct parse *x, struct pv *v)
{
  const char *s = x->p;
  char buf[64], *end;
  size_t n;

  while (x->p < x->e && strchr(",]} \n\t\r", *x->p) == NULL)
    x->p++;
  n = (size_t)(x->p - s);
  if (n == 4 && memcmp(s, "true", 4) == 0)
    return v->t = PV_BOOL, v->b = 1, 0;
  if (n == 5 && memcmp(s, "false", 5) == 0)
    return v->t = PV_BOOL, v->b = 0, 0;
  if (n == 4 && memcmp(s, "null", 4) == 0)
    return v->t = PV_NULL, 0;
  if (n == 0 || n >= sizeof(buf))
    return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (strcspn(buf, ".eE") == n) {
    long long i = strtoll(buf, &end, 10);

    if (*end == '\0') {
      v->t = PV_INT;
      v->i = i;
      return 0;
    }
  }
  v->d = strtod(buf, &end);
  v->t = PV_NUM;
  return *end == '\0' ? 0 : -1;
}

static int value(struct parse *x, struct pv *v, int depth);

/* The array at x->p ('['): its elements first parsed into a run of
 * consecutive values (a nested array's own elements go after the run). */
static int array(struct parse *x, struct pv *v, int depth)
{
  struct pf_args *a = x->a;
  const char *save;
  uint32_t n = 0, first = a->nvals;
  struct pv *run;

  if (depth >= MAX_DEPTH)
    return -1;
  x->p++;
  save = x->p;
  /* Count the elements first, so that their run is contiguous. */
  for (x->p = idx_json_ws(x->p, x->e); x->p < x->e && *x->p != ']'; n++) {
    if ((x->p = idx_json_skip(x->p, x->e)) == NULL ||
        (x->p = idx_json_ws(x->p, x->e)) >= x->e)
      return -1;
    if (*x->p == ',')
      x->p = idx_json_ws(x->p + 1, x->e);
  }
  if (x->p >= x->e || a->nvals + n > PF_VALS)
    return -1;
  run = &a->vals[first];
  a->nvals += n;
  x->p = save;
  for (uint32_t i = 0; i < n; i++) {
    x->p = idx_json_ws(x->p, x->e);
    if (value(x, &run[i], depth + 1) != 0)
      return -1;
    x->p = idx_json_ws(x->p, x->e);
    if (x->p < x->e && *x->p == ',')
      x->p++;
  }
  x->p = idx_json_ws(x->p, x->e);
  if (x->p >= x->e || *x->p != ']')
    return -1;
  x->p++;
  v->t = PV_ARR;
  v->n = n;
  v->a = run;
  return 0;
}

static int value(struct parse *x, struct pv *v, int depth)
{
  memset(v, 0, sizeof(*v));
  x->p = idx_json_ws(x->p, x->e);
  if (x->p >= x->e)
    return -1;
  if (*x->p == '"')
    return str_value(x, v);
  if (*x->p == '[')
    return array(x, v, depth);
  if (*x->p == '{') /* an object is no argument a model reads */
    return (x->p = idx_json_skip(x->p, x->e)) == NULL ? -1 : 0;
  return scalar(x, v);
}

int pf_args_parse(struct pf_args *a, const struct idx_span sp[PF_MEMBERS])
{
  a->nvals = 0;
  a->ntext = 0;
  for (int m = 0; m < PF_MEMBERS; m++) {
    struct parse x = { a, sp[m].p, NULL };
    struct pv *v;

    a->m[m] = NULL;
    if (sp[m].p == NULL)
      continue;
    x.e = sp[m].p + sp[m].n;
    if (a->nvals >= PF_VALS)
      return -1;
    v = &a->vals[a->nvals++];
    if (value(&x, v, 0) != 0 || idx_json_ws(x.p, x.e) != x.e)
      return -1;
    a->m[m] = v;
  }
  return 0;
}

const struct pv *pv_at(const struct pv *v, size_t i)
{
  return v != NULL && v->t == PV_ARR && i < v->n ? &v->a[i] : NULL;
}

size_t pv_len(const struct pv *v)
{
  return v != NULL && v->t == PV_ARR ? v->n : 0;
}

int pv_is_shape(const struct pv *v)
{
  if (v == NULL || v->t != PV_ARR)
    return 0;
  for (uint32_t i = 0; i < v->n; i++)
    if (v->a[i].t != PV_INT)
      return 0;
  return 1;
}

int pv_str_is(const struct pv *v, const char *s)
{
  size_t n = strlen(s);

  return v != NULL && v->t == PV_STR && v->n == n && memcmp(v->s, s, n) == 0;
}

const char *pv_str(const struct pv *v, size_t *n)
{
  if (v == NULL || v->t != PV_STR) {
    *n = 0;
    return NULL;
  }
  *n = v->n;
  return v->s;
}

int pv_equal(const struct pv *a, const struct pv *b)
{
  if (a == NULL || b == NULL || a->t != b->t)
    return a == b;
  switch (a->t) {
  case PV_BOOL: return a->b == b->b;
  case PV_INT: return a->i == b->i;
  case PV_NUM: return a->d == b->d;
  case PV_STR: return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
  case PV_ARR:
    if (a->n != b->n)
      return 0;
    for (uint32_t i = 0; i < a->n; i++)
      if (!pv_equal(&a->a[i], &b->a[i]))
        return 0;
    return 1;
  default: return 1;
  }
}
