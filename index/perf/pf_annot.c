/*
 * The sequence-length aggregates of an iteration annotation
 * (docs/PERF.md, "Inference attention"), as TraceLens's annotation_utils.py
 * reads them: the "detailed" labels of vLLM, SGLang and ATOM carry, for
 * the context (prefill) and generation (decode) requests of a step, the
 * sums of their query lengths (sq), key lengths (sk), sq*sq and sq*sk.
 * A label without them (the native ones) gives none: an inference
 * attention op then has no model.
 */
#include <ctype.h>
#include <string.h>

#include "index/perf/perf_int.h"

enum { C_SQ, C_SK, C_SQSQ, C_SQSK, G_SQ, G_SK, G_SQSQ, G_SQSK };

static int starts(const char *s, size_t n, const char *lit)
{
  size_t k = strlen(lit);

  return n >= k && memcmp(s, lit, k) == 0;
}

/* The digits at *i as a number (capped), advancing; -1 when none. */
static int64_t digits(const char *s, size_t n, size_t *i)
{
  int64_t v = 0;
  size_t from = *i;

  while (*i < n && isdigit((unsigned char)s[*i])) {
    if (v < INT64_MAX / 10 - 9)
      v = v * 10 + (s[*i] - '0');
    (*i)++;
  }
  return *i > from ? v : -1;
}

/* lit at *i, advancing. */
static int eat(const char *s, size_t n, size_t *i, const char *lit)
{
  size_t k = strlen(lit);

  if (*i + k > n || memcmp(s + *i, lit, k) != 0)
    return 0;
  *i += k;
  return 1;
}

/* (sq<a>sk<b>sqsq<c>sqsk<d>) at *i into v[0..4). */
static int group4(const char *s, size_t n, size_t *i, int64_t *v)
{
  static const char *const lit[4] = { "(sq", "sk", "sqsq", "sqsk" };

  for (int k = 0; k < 4; k++)
    if (!eat(s, n, i, lit[k]) || (v[k] = digits(s, n, i)) < 0)
      return -1;
  return eat(s, n, i, ")") ? 0 : -1;
}

/* vLLM's execute_<n>_context_<c>(sq..sk..sqsq..sqsk..)_generation_<g>(...). */
static int vllm(const char *s, size_t n, int64_t v[8])
{
  size_t i = 8;

  if (!starts(s, n, "execute_") || digits(s, n, &i) < 0 ||
      !eat(s, n, &i, "_context_") || digits(s, n, &i) < 0 ||
      group4(s, n, &i, v) != 0 || !eat(s, n, &i, "_generation_") ||
      digits(s, n, &i) < 0 || group4(s, n, &i, v + 4) != 0)
    return -1;
  return 0;
}

/* The value of key= in s[from, to) as a number (its digits; 0 when the
 * key is absent or its value has none: _safe_int). first: the earliest
 * occurrence (re.findall into a dict keeps the last: last 0). */
static int64_t field(const char *s, size_t from, size_t to, const char *key,
                     int *seen)
{
  size_t k = strlen(key);
  int64_t v = 0;

  for (size_t i = from; i + k + 1 <= to; i++) {
    if ((i > from && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')) ||
        memcmp(s + i, key, k) != 0 || s[i + k] != '=')
      continue;
    size_t j = i + k + 1;
    int64_t d = digits(s, to, &j);

    *seen = 1;
    v = d < 0 ? 0 : d;
  }
  return v;
}

/* SGLang's step[EXTEND|DECODE|MIXED ... c_sq=.. g_sqsk=..]: the keys in
 * any order; the label must carry sqsq= to be a detailed one. */
static int sglang(const char *s, size_t n, int64_t v[8])
{
  static const char *const keys[8] = { "c_sq", "c_sk", "c_sqsq", "c_sqsk",
                                       "g_sq", "g_sk", "g_sqsq", "g_sqsk" };
  const char *close = memchr(s, ']', n);
  size_t end = close ? (size_t)(close - s) : 0, i;
  int seen = 0;

  if (!starts(s, n, "step[EXTEND") && !starts(s, n, "step[DECODE") &&
      !starts(s, n, "step[MIXED"))
    return -1;
  i = 5;
  while (i < n && isalpha((unsigned char)s[i]))
    i++;
  if (close == NULL ||
      (i < end && (isalnum((unsigned char)s[i]) || s[i] == '_')))
    return -1;
  for (size_t k = 0; k + 5 <= end; k++)
    if (memcmp(s + k, "sqsq=", 5) == 0 && isdigit((unsigned char)s[k + 5]))
      seen = 1;
  if (!seen)
    return -1;
  for (int k = 0; k < 8; k++)
    v[k] = field(s, 5, end, keys[k], &seen);
  return 0;
}

/* ATOM's prefill[...] / decode[...] with sqsq= and sqsk= (its detailed
 * annotation): the step's tokens and sk, sqsq, sqsk as the context's or
 * the generation's. */
static int atom(const char *s, size_t n, int64_t v[8])
{
  int prefill = starts(s, n, "prefill["), sq = 0, sk = 0, k;
  size_t from = prefill ? 8 : 7, to = n;

  if (!prefill && !starts(s, n, "decode["))
    return -1;
  while (to > from && s[to - 1] != ']')
    to--;
  if (to <= from)
    return -1;
  to--; /* the body is what the outermost brackets hold */
  memset(v, 0, 8 * sizeof(*v));
  k = prefill ? 0 : 4;
  v[k + 0] = field(s, from, to, "tok", &sq);
  v[k + 1] = field(s, from, to, "sk", &sk);
  sq = sk = 0;
  v[k + 2] = field(s, from, to, "sqsq", &sq);
  v[k + 3] = field(s, from, to, "sqsk", &sk);
  return sq && sk ? 0 : -1;
}

int pf_chunk_stats(const char *s, size_t n, int64_t out[8])
{
  memset(out, 0, 8 * sizeof(*out));
  if (s == NULL)
    return -1;
  if (starts(s, n, "execute_"))
    return vllm(s, n, out);
  if (starts(s, n, "step["))
    return sglang(s, n, out);
  return atom(s, n, out);
}
