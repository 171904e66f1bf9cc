/*
 * What the op models share (perf_int.h): reading shapes and dtypes the way
 * TraceLens's utils.py does, and writing a group's parameters.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/perf/perf_int.h"

const struct pv *pf_arg(const struct pf_args *a, enum pf_member m, size_t i)
{
  return pv_at(a->m[m], i);
}

int pf_shape(const struct pv *v, struct pf_shape *s)
{
  if (!pv_is_shape(v) || v->n > PF_MAXDIM)
    return -1;
  s->n = (int)v->n;
  for (uint32_t i = 0; i < v->n; i++)
    s->d[i] = v->a[i].i;
  return 0;
}

double pf_prod(const struct pf_shape *s)
{
  double p = 1;

  for (int i = 0; i < s->n; i++)
    p *= (double)s->d[i];
  return p;
}

/* s[0..n) equals lit, ignoring case. */
static int same_nocase(const char *s, size_t n, const char *lit)
{
  size_t k = strlen(lit);

  if (n != k)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)s[i]) != lit[i])
      return 0;
  return 1;
}

int pf_bpe_text(const char *s, size_t n)
{
  static const struct {
    const char *name;
    int bpe;
  } map[] = { { "double", 8 },
              { "long int", 8 },
              { "float", 4 },
              { "scalar", 4 },
              { "int", 4 },
              { "c10::half", 2 },
              { "c10::bfloat16", 2 },
              { "c10::float8_e4m3fnuz", 1 },
              { "c10::float8_e4m3fn", 1 },
              { "c10::float8_e5m2", 1 },
              { "c10::float8_e8m0fnu", 1 },
              { "unsigned char", 1 },
              { "signed char", 1 },
              { "fp8", 1 },
              /* two FP4 values a byte: shapes give the packed size */
              { "c10::float4_e2m1fn_x2", 1 },
              { "fp4", 1 } };

  for (size_t i = 0; s != NULL && i < sizeof(map) / sizeof(map[0]); i++)
    if (same_nocase(s, n, map[i].name))
      return map[i].bpe;
  return 0;
}

int pf_bpe(const struct pv *dtype)
{
  size_t n;
  const char *s = pv_str(dtype, &n);

  return pf_bpe_text(s, n);
}

const char *pf_prec(const struct pv *dtype)
{
  static const struct {
    const char *name, *prec;
  } map[] = { { "float", "fp32" },
              { "double", "fp64" },
              { "c10::half", "fp16" },
              { "c10::bfloat16", "bf16" },
              { "c10::float8_e4m3fnuz", "fp8" },
              { "unsigned char", "fp8" },
              { "fp8", "fp8" },
              { "fp4", "fp4" },
              { "mxfp4", "fp4" },
              { "c10::float4_e2m1fn_x2", "fp4" },
              { "c10::float8_e4m3fn", "fp8" } };
  size_t n;
  const char *s = pv_str(dtype, &n);

  for (size_t i = 0; s != NULL && i < sizeof(map) / sizeof(map[0]); i++)
    if (same_nocase(s, n, map[i].name))
      return map[i].prec;
  return NULL;
}

int pf_truthy(const struct pv *v)
{
  if (v == NULL)
    return 0;
  switch (v->t) {
  case PV_STR:
  case PV_ARR: return v->n > 0;
  case PV_BOOL: return v->b;
  case PV_INT: return v->i != 0;
  case PV_NUM: return v->d != 0;
  default: return 0;
  }
}

int pf_parse_bool(const struct pv *v)
{
  size_t n;
  const char *s = pv_str(v, &n);

  while (s != NULL && n > 0 && isspace((unsigned char)*s))
    s++, n--;
  while (s != NULL && n > 0 && isspace((unsigned char)s[n - 1]))
    n--;
  if (s != NULL) {
    if (same_nocase(s, n, "true") || same_nocase(s, n, "1"))
      return 1;
    if (same_nocase(s, n, "false") || same_nocase(s, n, "0") || n == 0)
      return 0;
  }
  return pf_truthy(v);
}

int pf_eval_bool(const struct pv *v)
{
  if (pv_str_is(v, "True"))
    return 1;
  return pv_str_is(v, "False") ? 0 : -1;
}

/* The string v as a NUL-terminated copy into buf; -1 when too long. */
static int cstr(const struct pv *v, char *buf, size_t size)
{
  size_t n;
  const char *s = pv_str(v, &n);

  if (s == NULL || n >= size)
    return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return 0;
}

/* 0 when a number was read from buf and only spaces follow it at end. */
static int all_read(const char *buf, const char *end)
{
  const char *p = end;

  while (isspace((unsigned char)*p))
    p++;
  return end != buf && *p == '\0' ? 0 : -1;
}

int pf_float(const struct pv *v, double dflt, double *out)
{
  char buf[64], *end;

  if (v == NULL || v->t == PV_NULL || pv_str_is(v, "") ||
      pv_str_is(v, "None")) {
    *out = dflt;
    return 0;
  }
  if (v->t == PV_INT || v->t == PV_NUM) {
    *out = v->t == PV_INT ? (double)v->i : v->d;
    return 0;
  }
  if (cstr(v, buf, sizeof(buf)) != 0)
    return -1;
  *out = strtod(buf, &end);
  return all_read(buf, end);
}

int pf_int(const struct pv *v, int64_t *out)
{
  char buf[64], *end;

  if (v != NULL && v->t == PV_INT) {
    *out = v->i;
    return 0;
  }
  if (cstr(v, buf, sizeof(buf)) != 0)
    return -1;
  *out = strtoll(buf, &end, 10);
  return all_read(buf, end);
}

int pf_int_list(const struct pv *v, struct pf_shape *out)
{
  size_t n;
  const char *s = pv_str(v, &n), *e;
  char *end;

  if (s == NULL)
    return -1;
  e = s + n;
  out->n = 0;
  while (s < e && (isspace((unsigned char)*s) || *s == '[' || *s == '('))
    s++;
  while (s < e && *s != ']' && *s != ')') {
    char buf[32];
    size_t k = 0;

    while (s < e && k + 1 < sizeof(buf) &&
           (isdigit((unsigned char)*s) || *s == '-' || *s == '+'))
      buf[k++] = *s++;
    buf[k] = '\0';
    if (k == 0 || out->n >= PF_MAXDIM)
      return -1;
    out->d[out->n++] = strtoll(buf, &end, 10);
    if (*end != '\0')
      return -1;
    while (s < e && (isspace((unsigned char)*s) || *s == ','))
      s++;
  }
  return 0;
}

/* a / b truncated, or -1 where C leaves it undefined (b == 0, INT64_MIN
 * / -1): a trace's own numbers can be either. The floor and ceiling
 * adjustments of the quotient below never leave int64_t. */
static int trunc_div(int64_t a, int64_t b, int64_t *q)
{
  if (b == 0 || (a == INT64_MIN && b == -1))
    return -1;
  *q = a / b;
  return 0;
}

int pf_floor_div(int64_t a, int64_t b, int64_t *q)
{
  if (trunc_div(a, b, q) != 0)
    return -1;
  if (a % b != 0 && (a < 0) != (b < 0))
    (*q)--;
  return 0;
}

int pf_ceil_div(int64_t a, int64_t b, int64_t *q)
{
  if (trunc_div(a, b, q) != 0)
    return -1;
  if (a % b != 0 && (a < 0) == (b < 0))
    (*q)++;
  return 0;
}

/* ---- the parameters ---- */

static void put(struct pf_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct pf_out *o, const char *fmt, ...)
{
  struct pf_params *p = &o->p;
  va_list ap;
  int n;

  if (p->bad)
    return;
  va_start(ap, fmt);
  n = vsnprintf(p->buf + p->n, sizeof(p->buf) - p->n, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(p->buf) - p->n)
    p->bad = 1;
  else
    p->n += (size_t)n;
}

static void key(struct pf_out *o, const char *k)
{
  put(o, "%s\"%s\":", o->p.n > 1 ? "," : "", k);
}

static void json_str(struct pf_out *o, const char *s, size_t n)
{
  put(o, "\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];

    if (c == '"' || c == '\\')
      put(o, "\\%c", c);
    else if (c < 0x20)
      put(o, "\\u%04x", c);
    else
      put(o, "%c", c);
  }
  put(o, "\"");
}

/* A double as the shortest text that reads back as it (null when not a
 * finite number: JSON has none). */
static void json_num(struct pf_out *o, double v)
{
  char buf[32];

  if (!isfinite(v)) {
    put(o, "null");
    return;
  }
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof(buf), "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  put(o, "%s%s", buf, strpbrk(buf, ".eEn") == NULL ? ".0" : "");
}

static void json_val(struct pf_out *o, const struct pv *v)
{
  if (v == NULL) {
    put(o, "null");
    return;
  }
  switch (v->t) {
  case PV_BOOL: put(o, v->b ? "true" : "false"); break;
  case PV_INT: put(o, "%lld", (long long)v->i); break;
  case PV_NUM: json_num(o, v->d); break;
  case PV_STR: json_str(o, v->s, v->n); break;
  case PV_ARR:
    put(o, "[");
    for (uint32_t i = 0; i < v->n; i++) {
      if (i > 0)
        put(o, ",");
      json_val(o, &v->a[i]);
    }
    put(o, "]");
    break;
  default: put(o, "null"); break;
  }
}

static void open_obj(struct pf_out *o)
{
  if (o->p.n == 0)
    put(o, "{");
}

void pp_int(struct pf_out *o, const char *k, int64_t v)
{
  open_obj(o);
  key(o, k);
  put(o, "%lld", (long long)v);
}

void pp_num(struct pf_out *o, const char *k, double v)
{
  open_obj(o);
  key(o, k);
  json_num(o, v);
}

void pp_count(struct pf_out *o, const char *k, double v)
{
  /* the range first: a cast of a double past int64_t is undefined */
  if (v < 9007199254740992.0 && v > -9007199254740992.0 &&
      v == (double)(int64_t)v)
    pp_int(o, k, (int64_t)v);
  else
    pp_num(o, k, v);
}

void pp_bool(struct pf_out *o, const char *k, int v)
{
  open_obj(o);
  key(o, k);
  put(o, v ? "true" : "false");
}

void pp_null(struct pf_out *o, const char *k)
{
  open_obj(o);
  key(o, k);
  put(o, "null");
}

void pp_text(struct pf_out *o, const char *k, const char *s)
{
  open_obj(o);
  key(o, k);
  if (s == NULL)
    put(o, "null");
  else
    json_str(o, s, strlen(s));
}

void pp_val(struct pf_out *o, const char *k, const struct pv *v)
{
  open_obj(o);
  key(o, k);
  json_val(o, v);
}

void pp_shape(struct pf_out *o, const char *k, const struct pf_shape *s)
{
  open_obj(o);
  key(o, k);
  put(o, "[");
  for (int i = 0; i < s->n; i++)
    put(o, "%s%lld", i ? "," : "", (long long)s->d[i]);
  put(o, "]");
}

void pp_tuple(struct pf_out *o, const char *k, const struct pv *const *v,
              size_t n)
{
  open_obj(o);
  key(o, k);
  put(o, "[");
  for (size_t i = 0; i < n; i++) {
    if (i > 0)
      put(o, ",");
    json_val(o, v[i]);
  }
  put(o, "]");
}

int pf_model_run(const struct pf_op *op, const struct pf_args *a,
                 struct pf_out *o)
{
  memset(o, 0, offsetof(struct pf_out, p));
  o->p.n = 0;
  o->p.bad = 0;
  o->bytes = -1;
  if (op->fn(op->name, a, o) != 0 || o->p.bad)
    return -1;
  if (o->p.n == 0)
    open_obj(o);
  put(o, "}");
  return o->p.bad || !isfinite(o->flops) ? -1 : 0;
}
