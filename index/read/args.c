/*
 * An event's args members from its text (args.h).
 */
#include <string.h>

#include "index/read/args.h"

const char *idx_json_ws(const char *p, const char *e)
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

/* Nesting is counted, not recursed. */
const char *idx_json_skip(const char *p, const char *e)
{
  int depth = 0;

  do {
    p = idx_json_ws(p, e);
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

/* Walks the members of the object at *pp ('{'); for each, fn(ud, key,
 * keylen, value, end) runs; *pp goes past the object. -1 on bad text. */
static int members(const char **pp, const char *e,
                   int (*fn)(void *ud, const char *k, size_t kn, const char *v,
                             const char *ve),
                   void *ud)
{
  const char *p = idx_json_ws(*pp, e), *k, *ke, *v;

  if (p >= e || *p++ != '{')
    return -1;
  if ((p = idx_json_ws(p, e)) < e && *p == '}') {
    *pp = p + 1;
    return 0;
  }
  for (;;) {
    if ((p = idx_json_ws(p, e)) >= e || *p != '"' ||
        (ke = skip_str(p, e)) == NULL)
      return -1;
    k = p + 1;
    if ((p = idx_json_ws(ke, e)) >= e || *p++ != ':')
      return -1;
    v = idx_json_ws(p, e);
    if ((p = idx_json_skip(v, e)) == NULL ||
        fn(ud, k, (size_t)(ke - 1 - k), v, p))
      return -1;
    if ((p = idx_json_ws(p, e)) >= e)
      return -1;
    if (*p == '}') {
      *pp = p + 1;
      return 0;
    }
    if (*p++ != ',')
      return -1;
  }
}

struct want {
  const char *const *names;
  int count, found;
  struct idx_span *sp;
};

static int on_arg(void *ud, const char *k, size_t kn, const char *v,
                  const char *ve)
{
  struct want *w = ud;

  for (int i = 0; i < w->count; i++)
    if (strlen(w->names[i]) == kn && memcmp(w->names[i], k, kn) == 0) {
      w->sp[i].p = v;
      w->sp[i].n = (size_t)(ve - v);
      break;
    }
  return 0;
}

static int on_top(void *ud, const char *k, size_t kn, const char *v,
                  const char *ve)
{
  struct want *w = ud;

  if (kn != 4 || memcmp(k, "args", 4) != 0 || *v != '{')
    return 0;
  w->found = 1;
  return members(&v, ve, on_arg, w);
}

int idx_args_spans(const char *raw, size_t n, const char *const *names,
                   int count, struct idx_span *sp)
{
  struct want w = { names, count, 0, sp };
  const char *p = raw;

  memset(sp, 0, (size_t)count * sizeof(*sp));
  if (raw == NULL || members(&p, raw + n, on_top, &w) != 0)
    return -1;
  return w.found ? 0 : -1;
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
