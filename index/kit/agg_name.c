/*
 * Names as the summary keeps them (kernel and host API names, families,
 * demangled forms, run-label texts): printable and bounded, whatever the
 * trace holds (docs/SECURITY.md).
 *
 * Control bytes (C0 and DEL: the reader decodes "\u0000" into a NUL) are
 * written as JSON writes them, "\n", "\t", "\u0000", so that a name is one
 * line of text everywhere it goes: a NUL no longer ends it in SQLite (two
 * names equal up to their NUL made the store fail the rank on the names
 * table's UNIQUE constraint) nor anywhere else. A backslash is left as it
 * is, so a name that holds the text "\n" and one that holds a newline read
 * alike (then they are one row); no trace of ../shared names either.
 *
 * A name longer than its cap keeps its first bytes (cut on a character)
 * and ends in "...#" and 16 hex digits of a 64-bit hash of the whole, so
 * that names alike in their first bytes stay apart. The caps: 8 KiB for
 * names and families, 16 KiB for demangled forms. The longest of the real
 * traces in ../shared are a 5,160-byte kernel name (a CUDA lambda's,
 * written demangled by nvcc's runtime) and a 10,129-byte demangled
 * composable_kernel name (2,004 bytes mangled): both are kept whole. A
 * name is stored about sixteen times (its row, the all-ranks sums, the
 * phases' top kernels...), so the cap is what bounds a trace of a few
 * hundred megabyte-long names in the database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/kit/kit.h"

#define SUFFIX_LEN 20 /* "...#" and 16 hex digits */

uint64_t agg_hash64(const void *p, size_t n)
{
  const unsigned char *b = p;
  uint64_t h = 14695981039346656037ull; /* FNV-1a */

  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* True when c is a control byte a name must not hold. */
static int is_control(unsigned char c)
{
  return c < 0x20 || c == 0x7f;
}

/* Eight bytes at a time: a word has a byte below 0x20 when subtracting
 * 0x20 from each borrows into a byte whose top bit was clear, and a DEL
 * when XOR with 0x7f leaves a zero byte (Hacker's Delight's "haszero";
 * exact as a yes or no). New names only, so a made-up name a trace holds
 * a hundred thousand of is cheap to check. */
int agg_has_control(const char *p, size_t n)
{
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t w, d;
  size_t i = 0;

  for (; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    d = w ^ (0x7f * ones);
    if ((((w - 0x20 * ones) & ~w) | ((d - ones) & ~d)) & highs)
      return 1;
  }
  for (; i < n; i++)
    if (is_control((unsigned char)p[i]))
      return 1;
  return 0;
}

/* The escape of control byte c into e (7 bytes); its length. */
static size_t escape(unsigned char c, char e[7])
{
  static const char shorts[] = {
    ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r'
  };

  if (c < sizeof(shorts) && shorts[c] != 0) {
    e[0] = '\\';
    e[1] = shorts[c];
    return 2;
  }
  snprintf(e, 7, "\\u%04x", c);
  return 6;
}

size_t agg_text_escape(const char *p, size_t n, char *out, size_t max,
                       size_t *taken)
{
  size_t i = 0, len = 0;
  char e[7];

  while (i < n) {
    unsigned char c = (unsigned char)p[i];
    size_t k = 1, w;

    if (is_control(c)) {
      w = escape(c, e);
      if (len + w > max)
        break;
      memcpy(out + len, e, w);
      len += w;
      i++;
      continue;
    }
    while (i + k < n && ((unsigned char)p[i + k] & 0xC0) == 0x80)
      k++; /* the whole UTF-8 character */
    if (len + k > max)
      break;
    memcpy(out + len, p + i, k);
    len += k;
    i += k;
  }
  *taken = i;
  return len;
}

int agg_name_find_kept(const struct agg_map *m, struct idx_str *s, char **buf,
                       unsigned *what, uint32_t *id)
{
  if (s->n <= AGG_NAME_MAX && agg_map_find(m, s->p, s->n, id))
    return 1;
  if (s->n <= AGG_NAME_MAX && !agg_has_control(s->p, s->n))
    return 0;
  if (*buf == NULL && (*buf = malloc(AGG_NAME_MAX + 1)) == NULL)
    return TR_ENOMEM;
  *s = agg_name_clean(*s, AGG_NAME_MAX, *buf, what);
  return agg_map_find(m, s->p, s->n, id);
}

struct idx_str agg_name_clean(struct idx_str s, size_t max, char *buf,
                              unsigned *what)
{
  struct idx_str out = { buf, 0 };
  size_t taken;

  *what = 0;
  if (s.p == NULL || (s.n <= max && !agg_has_control(s.p, s.n)))
    return s;
  if (agg_has_control(s.p, s.n))
    *what |= AGG_NAME_ESCAPED;
  out.n = agg_text_escape(s.p, s.n, buf, max, &taken);
  if (taken == s.n)
    return out;
  /* Too long: cut to make room for the hash of the whole. */
  out.n = agg_text_escape(s.p, s.n, buf, max - SUFFIX_LEN, &taken);
  snprintf(buf + out.n, SUFFIX_LEN + 1, "...#%016llx",
           (unsigned long long)agg_hash64(s.p, s.n));
  out.n += SUFFIX_LEN;
  *what |= AGG_NAME_CUT;
  return out;
}

char *agg_name_bound(char *s, size_t max, uint64_t *cut)
{
  struct idx_str in = { s, s != NULL ? strlen(s) : 0 }, out;
  unsigned what;
  char *bounded;

  if (s == NULL || in.n <= max)
    return s;
  bounded = malloc(max + 1);
  if (bounded != NULL) {
    out = agg_name_clean(in, max, bounded, &what);
    bounded[out.n] = '\0';
    (*cut)++;
  }
  free(s);
  return bounded;
}
