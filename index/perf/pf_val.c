/*
 * The arguments of a CPU op, from its event's text (pf_val.h). The text
 * was proven JSON by the reader, escapes as written; the walk below still
 * checks every byte it relies on, so that text it was not meant for (a
 * fuzzer's) fails cleanly rather than being read past its end.
 */
#include <stdlib.h>
#include <string.h>

#include "index/perf/pf_val.h"

#define MAX_DEPTH 32 /* nesting of one member's value */

static const char *ws(const char *p, const char *e)
{
  while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}

/* Past the string at p ('"'), or NULL. */
static const char *skip_str(const char *p, const char *e)
{
  for (p++; p < e; p++) {
    if (*p == '\\')
      p++;
    else if (*p == '"')
      return p + 1;
  }
  return NULL;
}

/* Past the value at p, or NULL. Nesting is counted, not recursed. */
static const char *skip_value(const char *p, const char *e)
{
  int depth = 0;

  do {
    p = ws(p, e);
    if (p >= e)
      return NULL;
    if (*p == '"') {
      if ((p = skip_str(p, e)) == NULL)
        return NULL;
    } else if (*p == '[' || *p == '{') {
      depth++;
      p++;
    } else if (*p == ']' || *p == '}') {
      if (--depth < 0)
        return NULL;
      p++;
    } else if (*p == ',' || *p == ':') {
      if (depth == 0)
        return NULL;
      p++;
    } else {
      const char *s = p;

      while (p < e && *p != ',' && *p != ']' && *p != '}' && *p != ' ' &&
             *p != '\n' && *p != '\t' && *p != '\r')
        p++;
      if (p == s)
        return NULL;
    }
  } while (depth > 0);
  return p;
}

static int member_of(const char *k, size_t n)
{
  static const char *const names[PF_MEMBERS] = { "Input Dims", "Input type",
                                                 "Input Strides",
                                                 "Concrete Inputs",
                                                 "Output type" };

  for (int i = 0; i < PF_MEMBERS; i++)
    if (strlen(names[i]) == n && memcmp(names[i], k, n) == 0)
      return i;
  return -1;
}

/* Walks the members of the object at *pp ('{'); for each, fn(ud, key,
 * keylen, value, end) runs; *pp goes past the object. -1 on bad text. */
static int members(const char **pp, const char *e,
                   int (*fn)(void *ud, const char *k, size_t kn, const char *v,
                             const char *ve),
                   void *ud)
{
  const char *p = ws(*pp, e), *k, *ke, *v;

  if (p >= e || *p++ != '{')
    return -1;
  if ((p = ws(p, e)) < e && *p == '}') {
    *pp = p + 1;
    return 0;
  }
  for (;;) {
    if ((p = ws(p, e)) >= e || *p != '"' || (ke = skip_str(p, e)) == NULL)
      return -1;
    k = p + 1;
    if ((p = ws(ke, e)) >= e || *p++ != ':')
      return -1;
    v = ws(p, e);
    if ((p = skip_value(v, e)) == NULL || fn(ud, k, (size_t)(ke - 1 - k), v, p))
      return -1;
    if ((p = ws(p, e)) >= e)
      return -1;
    if (*p == '}') {
      *pp = p + 1;
      return 0;
    }
    if (*p++ != ',')
      return -1;
  }
}

static int on_arg(void *ud, const char *k, size_t kn, const char *v,
                  const char *ve)
{
  struct pf_span *sp = ud;
  int m = member_of(k, kn);

  if (m >= 0) {
    sp[m].p = v;
    sp[m].n = (size_t)(ve - v);
  }
  return 0;
}

struct top {
  struct pf_span *sp;
  int found;
};

static int on_top(void *ud, const char *k, size_t kn, const char *v,
                  const char *ve)
{
  struct top *t = ud;

  if (kn != 4 || memcmp(k, "args", 4) != 0 || *v != '{')
    return 0;
  t->found = 1;
  return members(&v, ve, on_arg, t->sp);
}

int pf_args_spans(const char *raw, size_t n, struct pf_span sp[PF_MEMBERS])
{
  struct top t = { sp, 0 };
  const char *p = raw;

  memset(sp, 0, PF_MEMBERS * sizeof(*sp));
  if (raw == NULL || members(&p, raw + n, on_top, &t) != 0)
    return -1;
  return t.found ? 0 : -1;
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
  const char *s = x->p + 1, *end = skip_str(x->p, x->e), *q;
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
  for (x->p = ws(x->p, x->e); x->p < x->e && *x->p != ']'; n++) {
    if ((x->p = skip_value(x->p, x->e)) == NULL ||
        (x->p = ws(x->p, x->e)) >= x->e)
      return -1;
    if (*x->p == ',')
      x->p = ws(x->p + 1, x->e);
  }
  if (x->p >= x->e || a->nvals + n > PF_VALS)
    return -1;
  run = &a->vals[first];
  a->nvals += n;
  x->p = save;
  for (uint32_t i = 0; i < n; i++) {
    x->p = ws(x->p, x->e);
    if (value(x, &run[i], depth + 1) != 0)
      return -1;
    x->p = ws(x->p, x->e);
    if (x->p < x->e && *x->p == ',')
      x->p++;
  }
  x->p = ws(x->p, x->e);
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
  x->p = ws(x->p, x->e);
  if (x->p >= x->e)
    return -1;
  if (*x->p == '"')
    return str_value(x, v);
  if (*x->p == '[')
    return array(x, v, depth);
  if (*x->p == '{') /* an object is no argument a model reads */
    return (x->p = skip_value(x->p, x->e)) == NULL ? -1 : 0;
  return scalar(x, v);
}

int pf_args_parse(struct pf_args *a, const struct pf_span sp[PF_MEMBERS])
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
    if (value(&x, v, 0) != 0 || ws(x.p, x.e) != x.e)
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
