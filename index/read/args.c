/*
 * An event's args members from its text (read.h).
 */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "index/read/read.h"

const char *idx_json_ws(const char *p, const char *e)
{
  while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}

/* Past the string at p ('"'), by memchr: the escapes are rare. */
static const char *skip_str(const char *p, const char *e)
{
  for (p++; p < e;) {
    const char *q = memchr(p, '"', (size_t)(e - p));
    const char *b = q;

    if (q == NULL)
      return NULL;
    while (b > p && b[-1] == '\\')
      b--;
    if ((q - b) % 2 == 0) /* an even run of backslashes: the quote ends it */
      return q + 1;
    p = q + 1;
  }
  return NULL;
}

/* The bytes a value's skip stops at: 1 a quote, 2 an opening, 3 a
 * closing bracket. */
static const unsigned char stops[256] = {
  ['"'] = 1, ['['] = 2, ['{'] = 2, [']'] = 3, ['}'] = 3
};

/* The next quote or bracket at or after p, or e: sixteen bytes at a time
 * where SSE2 is (a shape's brackets come every ten bytes or so). */
static const char *next_stop(const char *p, const char *e)
{
#ifdef __SSE2__
  const __m128i q = _mm_set1_epi8('"'), ao = _mm_set1_epi8('['),
                ac = _mm_set1_epi8(']'), oo = _mm_set1_epi8('{'),
                oc = _mm_set1_epi8('}');

  for (; e - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, ao)),
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, ac), _mm_cmpeq_epi8(v, oo)),
                     _mm_cmpeq_epi8(v, oc)));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);

    if (bits != 0)
      return p + __builtin_ctz(bits);
  }
#endif
  while (p < e && stops[(unsigned char)*p] == 0)
    p++;
  return p;
}

/* A value's brackets matched in one tight loop over a table: the text is
 * the reader's strict JSON (the parse that reads the value checks its
 * grammar); what is not fails cleanly at e. */
const char *idx_json_skip(const char *p, const char *e)
{
  int depth = 0;

  p = idx_json_ws(p, e);
  if (p >= e)
    return NULL;
  if (*p == '"')
    return skip_str(p, e);
  if (*p != '[' && *p != '{') {
    const char *s = p;

    while (p < e && *p != ',' && *p != ']' && *p != '}' && *p != ':' &&
           *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r')
      p++;
    return p == s ? NULL : p;
  }
  for (;;) {
    unsigned c;

    if ((p = next_stop(p, e)) >= e)
      return NULL;
    c = stops[(unsigned char)*p];
    if (c == 1) {
      if ((p = skip_str(p, e)) == NULL)
        return NULL;
      continue;
    }
    p++;
    if (c == 2)
      depth++;
    else if (--depth == 0)
      return p;
  }
}

/* Past "key": at p (its quote) in [p, e) when a ':' follows, else NULL. */
static const char *after_key(const char *p, const char *e, size_t keylen)
{
  const char *q = idx_json_ws(p + keylen, e);

  return q < e && *q == ':' ? idx_json_ws(q + 1, e) : NULL;
}

/* The first member "key": in [p, e), its value's start, or NULL. A key
 * is found by its quoted text (memmem: the reader's SIMD already walked
 * these bytes once): the quoted text cannot stand inside a string value
 * of strict JSON, where its quotes would be escaped. */
static const char *find_key(const char *p, const char *e, const char *key)
{
  char pat[64];
  size_t k = strlen(key);
  const char *at, *v;

  if (k + 2 > sizeof(pat))
    return NULL;
  pat[0] = '"';
  memcpy(pat + 1, key, k);
  pat[k + 1] = '"';
  while (p < e && (at = memmem(p, (size_t)(e - p), pat, k + 2)) != NULL) {
    if ((v = after_key(at, e, k + 2)) != NULL)
      return v;
    p = at + 1;
  }
  return NULL;
}

int idx_args_spans(const char *raw, size_t n, const char *const *names,
                   int count, struct idx_span *sp)
{
  const char *e = raw + n, *p, *k, *ke, *v;
  size_t len[8];

  memset(sp, 0, (size_t)count * sizeof(*sp));
  if (raw == NULL || count > 8 || (p = find_key(raw, e, "args")) == NULL ||
      *p != '{')
    return -1;
  for (int i = 0; i < count; i++)
    len[i] = strlen(names[i]);
  /* One pass over args' members (kineto writes a flat object of numbers,
   * strings and the shapes' arrays). */
  for (p = idx_json_ws(p + 1, e); p < e && *p != '}';) {
    if (*p != '"' || (ke = skip_str(p, e)) == NULL ||
        (v = after_key(p, e, (size_t)(ke - p))) == NULL || v >= e)
      return -1;
    k = p + 1;
    if ((p = idx_json_skip(v, e)) == NULL)
      return -1;
    for (int i = 0; i < count; i++)
      if ((size_t)(ke - 1 - k) == len[i] && k[0] == names[i][0] &&
          memcmp(k, names[i], len[i]) == 0) {
        sp[i].p = v;
        sp[i].n = (size_t)(p - v);
      }
    if ((p = idx_json_ws(p, e)) < e && *p == ',')
      p = idx_json_ws(p + 1, e);
  }
  return p < e ? 0 : -1;
}

int idx_span_int(struct idx_span s, int64_t *v)
{
  size_t i = 0;
  int neg = 0;
  uint64_t u = 0;

  if (s.p == NULL || s.n == 0)
    return -1;
  if (s.p[0] == '-')
    neg = 1, i = 1;
  if (i == s.n)
    return -1;
  for (; i < s.n; i++) {
    unsigned d = (unsigned)(s.p[i] - '0');

    if (d > 9 || u > (UINT64_MAX - d) / 10)
      return -1;
    u = u * 10 + d;
  }
  if (u > (uint64_t)INT64_MAX + (uint64_t)neg)
    return -1;
  *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  return 0;
}
