/*
 * Exact decimal numbers, UTF-8 checks and JSON string unescaping for the
 * reader (read_int.h). Timestamps reach 16 significant digits
 * (4203669604595.407 us): a double would round them, so numbers are read as
 * digit strings and scaled by moving the decimal point.
 */
#include <string.h>

#include "index/read/read_int.h"

/* The digits of a number, the integer and fraction parts side by side. */
struct digits {
  const char *ip, *fp; /* integer digits, fraction digits */
  size_t in, fn;
};

/* Digit i of the integer and fraction digits taken as one string. */
static int digit_at(const struct digits *d, size_t i)
{
  return (i < d->in ? d->ip[i] : d->fp[i - d->in]) - '0';
}

static int is_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* Reads the exponent after 'e'; clamps it to +-1e6 (anything larger is
 * out of range or zero anyway). Returns the end or NULL when malformed. */
static const char *read_exp(const char *p, const char *end, int64_t *exp)
{
  int neg = 0;
  int64_t e = 0;

  if (p < end && (*p == '+' || *p == '-'))
    neg = *p++ == '-';
  if (p == end || !is_digit(*p))
    return NULL;
  for (; p < end && is_digit(*p); p++)
    if (e < 1000000)
      e = e * 10 + (*p - '0');
  *exp = neg ? -e : e;
  return p;
}

/* Splits p[0..n) into sign, digits and exponent. 0 or IDX_NUM_NAN. */
static int split(const char *p, const char *end, int *neg, struct digits *d,
                 int64_t *exp)
{
  *neg = 0;
  *exp = 0;
  if (p < end && (*p == '-' || *p == '+'))
    *neg = *p++ == '-';
  d->ip = p;
  while (p < end && is_digit(*p))
    p++;
  d->in = (size_t)(p - d->ip);
  d->fp = p;
  d->fn = 0;
  if (p < end && *p == '.') {
    d->fp = ++p;
    while (p < end && is_digit(*p))
      p++;
    d->fn = (size_t)(p - d->fp);
  }
  if (d->in + d->fn == 0)
    return IDX_NUM_NAN;
  if (p < end && (*p == 'e' || *p == 'E'))
    p = read_exp(p + 1, end, exp);
  return p == end ? IDX_NUM_OK : IDX_NUM_NAN;
}

int idx_num_parse(const char *p, size_t n, unsigned scale, int64_t *out)
{
  const uint64_t lim = (uint64_t)INT64_MAX; /* +1 when negative */
  struct digits d;
  uint64_t acc = 0; /* magnitude so far */
  int64_t shift;    /* power of ten applied to the digit string */
  size_t keep, i;   /* leading digits that survive truncation */
  int neg;

  if (idx_num_fast(p, p + n, scale, out) == p + n)
    return IDX_NUM_OK;
  if (split(p, p + n, &neg, &d, &shift) != IDX_NUM_OK)
    return IDX_NUM_NAN;
  shift += (int64_t)scale - (int64_t)d.fn;
  keep = d.in + d.fn;
  if (shift < 0)
    keep = (int64_t)keep + shift > 0 ? (size_t)((int64_t)keep + shift) : 0;
  for (i = 0; i < keep; i++) {
    if (acc > (lim + 1 - (uint64_t)digit_at(&d, i)) / 10)
      return IDX_NUM_RANGE;
    acc = acc * 10 + (uint64_t)digit_at(&d, i);
  }
  for (; shift > 0 && acc != 0; shift--) {
    if (acc > (lim + 1) / 10)
      return IDX_NUM_RANGE;
    acc *= 10;
  }
  if (acc > lim + (uint64_t)neg)
    return IDX_NUM_RANGE;
  *out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
  return IDX_NUM_OK;
}

/* Four hex digits at s, or -1. */
static long hex4(const char *s, const char *end)
{
  long v = 0;
  int i, c;

  if (end - s < 4)
    return -1;
  for (i = 0; i < 4; i++) {
    c = s[i];
    if (c >= '0' && c <= '9')
      v = v * 16 + (c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v * 16 + (c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v = v * 16 + (c - 'A' + 10);
    else
      return -1;
  }
  return v;
}

/* Writes code point cp (valid, <= U+10FFFF) as UTF-8 at w; returns the
 * byte after it. */
static char *put_utf8(char *w, long cp)
{
  if (cp < 0x80) {
    *w++ = (char)cp;
  } else if (cp < 0x800) {
    *w++ = (char)(0xc0 | (cp >> 6));
    *w++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *w++ = (char)(0xe0 | (cp >> 12));
    *w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *w++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *w++ = (char)(0xf0 | (cp >> 18));
    *w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
    *w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *w++ = (char)(0x80 | (cp & 0x3f));
  }
  return w;
}

/* Decodes \uXXXX (and its low surrogate) at *r, just past the 'u'. The
 * code point, or -1 for a bad or lone surrogate. */
static long unicode_escape(const char **r, const char *end)
{
  long cp = hex4(*r, end), lo;

  if (cp < 0)
    return -1;
  *r += 4;
  if (cp >= 0xdc00 && cp <= 0xdfff)
    return -1;
  if (cp < 0xd800 || cp > 0xdbff)
    return cp;
  if (end - *r < 6 || (*r)[0] != '\\' || (*r)[1] != 'u')
    return -1;
  lo = hex4(*r + 2, end);
  if (lo < 0xdc00 || lo > 0xdfff)
    return -1;
  *r += 6;
  return 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
}

int idx_unescape(char *s, size_t n, size_t *out_n)
{
  static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
  const char *r = s, *end = s + n, *b, *m;
  char *w = s;
  long cp;

  while ((b = memchr(r, '\\', (size_t)(end - r))) != NULL) {
    memmove(w, r, (size_t)(b - r));
    w += b - r;
    r = b + 1;
    if (r == end)
      return -1;
    if (*r == 'u') {
      r++;
      cp = unicode_escape(&r, end);
      if (cp < 0)
        return -1;
      w = put_utf8(w, cp);
      continue;
    }
    m = memchr(simple, *r, sizeof(simple) - 1);
    if (m == NULL || (m - simple) % 2 != 0)
      return -1;
    *w++ = m[1];
    r++;
  }
  memmove(w, r, (size_t)(end - r));
  *out_n = (size_t)(w - s) + (size_t)(end - r);
  return 0;
}
