/*
 * Strict JSON out of what the reader accepts (slice.h). A slice copies
 * events and top-level members byte for byte, but the reader takes more
 * than RFC 8259 does (reader.c, "Document policies"; it only checks the
 * brackets, strings and alphabet of values it does not read), and a
 * slice must open in any JSON reader. So each copied value is judged
 * first: strict JSON is copied as it is; else these quirks are mended,
 * the rest of the text kept as written:
 *   - a trailing comma before '}' or ']': dropped;
 *   - a control character inside a string: escaped (\u00XX);
 *   - a byte that is not UTF-8 inside a string: U+FFFD (\ufffd);
 *   - a backslash that starts no JSON escape: escaped itself (\\);
 *   - a number the reader reads leniently ("+5", "007", ".5", "5."):
 *     written as JSON writes that number ("5", "7", "0.5", "5");
 *   - any other bare word (NaN, Infinity, a cut literal): a string of it;
 *   - an object key written bare: quoted.
 * Anything else (a missing ':' or ',', an empty value, a cut string) is
 * not mended: the caller leaves the value out and counts it.
 *
 * One recursive descent, at most IDX_MAX_DEPTH deep, serves both the
 * judging (no output) and the mending (output to a slice_out).
 */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/text.h"
#include "index/read/read.h"
#include "index/slice/slice_int.h"

struct mend {
  const char *p, *end;
  struct slice_out *o; /* NULL: judge only */
  int changed;         /* something was mended */
  unsigned depth;
};

/* Results of the descent's steps. */
enum { M_OK = 0, M_BAD = -1 };

static void emit(struct mend *m, const char *s, size_t n)
{
  if (m->o != NULL && n > 0)
    slice_out_put(m->o, s, n);
}

/* Byte classes: JSON's whitespace, and what ends a bare word (the
 * whitespace, a structural byte or a quote). */
enum { C_WS = 1, C_DELIM = 2 };

static const unsigned char byte_class[256] = {
  [' '] = C_WS | C_DELIM,  ['\n'] = C_WS | C_DELIM, ['\r'] = C_WS | C_DELIM,
  ['\t'] = C_WS | C_DELIM, [','] = C_DELIM,         [':'] = C_DELIM,
  ['['] = C_DELIM,         [']'] = C_DELIM,         ['{'] = C_DELIM,
  ['}'] = C_DELIM,         ['"'] = C_DELIM,
};

static inline int is_ws(char c)
{
  return byte_class[(unsigned char)c] & C_WS;
}

static inline int is_delim(char c)
{
  return byte_class[(unsigned char)c] & C_DELIM;
}

static inline const char *skip_ws(const char *p, const char *e)
{
  while (p < e && is_ws(*p))
    p++;
  return p;
}

/* Copies the whitespace at m->p. */
static void ws(struct mend *m)
{
  const char *s = m->p;

  m->p = skip_ws(m->p, m->end);
  emit(m, s, (size_t)(m->p - s));
}

static int is_hex(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

/* One escape at p ('\\'): its length when it is JSON's, else 0. */
static size_t escape_len(const char *p, const char *end)
{
  if (end - p < 2)
    return 0;
  if (strchr("\"\\/bfnrt", p[1]) != NULL && p[1] != '\0')
    return 2;
  if (p[1] == 'u' && end - p >= 6 && is_hex(p[2]) && is_hex(p[3]) &&
      is_hex(p[4]) && is_hex(p[5]))
    return 6;
  return 0;
}

/* The bytes of a string body from p that need no mending: up to the
 * first '"', '\\', control byte or byte of 0x80 and above. Sixteen bytes
 * at a time where SSE2 is: one signed compare below 0x20 finds both of
 * the last two (bytes from 0x80 are negative). */
static const char *plain_run(const char *p, const char *end)
{
#ifdef __SSE2__
  for (; end - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m =
        _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                     _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);

    if (bits != 0)
      return p + __builtin_ctz(bits);
  }
#endif
  while (p < end) {
    unsigned char c = (unsigned char)*p;

    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
      break;
    p++;
  }
  return p;
}

/* A string's body from m->p up to its closing quote (or to end, when
 * closed is 0: a bare word quoted). */
static int string_body(struct mend *m, int closed)
{
  static const char hex[] = "0123456789abcdef";
  char u[6] = { '\\', 'u', '0', '0', 0, 0 };
  size_t k;

  for (;;) {
    const char *s = m->p;

    m->p = plain_run(m->p, m->end);
    emit(m, s, (size_t)(m->p - s));
    if (m->p == m->end)
      return closed ? M_BAD : M_OK; /* a string cut short */
    if (*m->p == '"' && closed)
      return M_OK;
    if (*m->p == '\\' && (k = escape_len(m->p, m->end)) > 0) {
      emit(m, m->p, k);
    } else if ((unsigned char)*m->p >= 0x80 &&
               (k = tr_utf8_len((const unsigned char *)m->p,
                                (size_t)(m->end - m->p))) > 0) {
      emit(m, m->p, k);
    } else {
      m->changed = 1;
      k = 1;
      if (*m->p == '\\' || *m->p == '"') {
        emit(m, "\\", 1);
        emit(m, m->p, 1);
      } else if ((unsigned char)*m->p < 0x20) {
        u[4] = hex[(unsigned char)*m->p >> 4];
        u[5] = hex[*m->p & 0xf];
        emit(m, u, 6);
      } else {
        emit(m, "\\ufffd", 6);
      }
    }
    m->p += k;
  }
}

static int string(struct mend *m)
{
  int rc;

  emit(m, "\"", 1);
  m->p++;
  if ((rc = string_body(m, 1)) != M_OK)
    return rc;
  emit(m, "\"", 1);
  m->p++;
  return M_OK;
}

/* Past the decimal digits at p (before e): eight at a time while eight
 * bytes are left (a timestamp has thirteen or more). */
static const char *digits(const char *p, const char *e)
{
  uint64_t x;
  unsigned k;

  while (e - p >= 8) {
    memcpy(&x, p, 8);
    k = idx_leading_digits(x);
    p += k;
    if (k < 8)
      return p;
  }
  while (p < e && *p >= '0' && *p <= '9')
    p++;
  return p;
}

/* p (before e) holds an exponent as JSON writes one: [eE][+-]?digits. */
static int exponent_ok(const char *p, const char *e)
{
  if (p == e || (*p != 'e' && *p != 'E'))
    return 0;
  if (++p < e && (*p == '+' || *p == '-'))
    p++;
  return p < e && digits(p, e) == e;
}

/* A number the reader reads leniently (idx_num_parse: a leading '+',
 * leading zeros, ".5", "5.") written as JSON would: 1 when p[0..n) is
 * one (and it was emitted), else 0. */
static int lenient_number(struct mend *m, const char *p, size_t n)
{
  const char *e = p + n, *ip, *fp;
  size_t in, fn;
  int neg = 0;

  if (p < e && (*p == '+' || *p == '-'))
    neg = *p++ == '-';
  ip = p;
  p = digits(p, e);
  in = (size_t)(p - ip);
  fp = p;
  fn = 0;
  if (p < e && *p == '.') {
    fp = ++p;
    p = digits(p, e);
    fn = (size_t)(p - fp);
  }
  if (in + fn == 0 || (p < e && !exponent_ok(p, e)))
    return 0;
  while (in > 1 && *ip == '0') /* "007" -> "7"; "0" stays */
    ip++, in--;
  if (neg)
    emit(m, "-", 1);
  emit(m, in > 0 ? ip : "0", in > 0 ? in : 1);
  if (fn > 0) {
    emit(m, ".", 1);
    emit(m, fp, fn);
  }
  emit(m, p, (size_t)(e - p));
  return 1;
}

/* Past the number at p when it is one as JSON writes it, up to a byte
 * that ends a bare word, else NULL. */
static const char *strict_number_at(const char *p, const char *e)
{
  const char *s;

  p += p < e && *p == '-';
  if (p == e || *p < '0' || *p > '9')
    return NULL;
  s = p;
  p = digits(p, e);
  if (*s == '0' && p - s > 1)
    return NULL;
  if (p < e && *p == '.') {
    s = ++p;
    if ((p = digits(p, e)) == s)
      return NULL;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    p += p < e && (*p == '+' || *p == '-');
    s = p;
    if ((p = digits(p, e)) == s)
      return NULL;
  }
  return p == e || is_delim(*p) ? p : NULL;
}

/* Past the literal or number at p (before e) when it is one as JSON
 * writes it, up to a byte that ends a bare word, else NULL: scalar()'s
 * word copied as it is, and the judge's fast path. */
static const char *strict_word(const char *p, const char *e)
{
  static const char *const lit[] = { "true", "false", "null" };
  size_t n;

  if (*p == '-' || (*p >= '0' && *p <= '9')) /* most words are numbers */
    return strict_number_at(p, e);
  for (size_t i = 0; i < sizeof(lit) / sizeof(lit[0]); i++)
    if (*p == lit[i][0]) {
      n = strlen(lit[i]);
      if ((size_t)(e - p) < n || memcmp(p, lit[i], n) != 0 ||
          (p + n < e && !is_delim(p[n])))
        return NULL;
      return p + n;
    }
  return strict_number_at(p, e);
}

/* A bare word at m->p: a literal or number as it is, a lenient number
 * as JSON writes it, anything else as a string. */
static int scalar(struct mend *m)
{
  const char *s = m->p;
  struct mend word;
  size_t n;

  while (m->p < m->end && !is_delim(*m->p))
    m->p++;
  n = (size_t)(m->p - s);
  if (n == 0)
    return M_BAD; /* no value where one must be */
  if (strict_word(s, m->end) != NULL) {
    emit(m, s, n);
    return M_OK;
  }
  m->changed = 1;
  if (lenient_number(m, s, n))
    return M_OK;
  word = (struct mend){ s, s + n, m->o, 0, m->depth };
  emit(m, "\"", 1);
  string_body(&word, 0);
  emit(m, "\"", 1);
  return M_OK;
}

static int value(struct mend *m);

/* After an element of a container: ',' then the next one, or the closing
 * byte (a trailing comma before it is dropped). 1: another element
 * follows, 0: closed, M_BAD. */
static int next_elem(struct mend *m, char close)
{
  const char *q;

  ws(m);
  if (m->p == m->end)
    return M_BAD;
  if (*m->p == close) {
    emit(m, m->p++, 1);
    return 0;
  }
  if (*m->p != ',')
    return M_BAD;
  q = ++m->p;
  while (q < m->end && is_ws(*q))
    q++;
  if (q < m->end && *q == close) { /* a trailing comma */
    m->changed = 1;
    ws(m);
    emit(m, m->p++, 1);
    return 0;
  }
  emit(m, ",", 1);
  return 1;
}

/* An object key: a string, or a bare word quoted. */
static int key(struct mend *m)
{
  const char *s = m->p;
  struct mend word;

  if (m->p < m->end && *m->p == '"')
    return string(m);
  while (m->p < m->end && !is_delim(*m->p))
    m->p++;
  if (m->p == s)
    return M_BAD;
  m->changed = 1;
  word = (struct mend){ s, m->p, m->o, 0, m->depth };
  emit(m, "\"", 1);
  string_body(&word, 0);
  emit(m, "\"", 1);
  return M_OK;
}

/* An object or array at m->p ('{' or '['). */
static int container(struct mend *m)
{
  char close = *m->p == '{' ? '}' : ']';
  int rc;

  if (++m->depth > IDX_MAX_DEPTH)
    return M_BAD;
  emit(m, m->p++, 1);
  ws(m);
  if (m->p < m->end && *m->p == close) {
    emit(m, m->p++, 1);
    m->depth--;
    return M_OK;
  }
  do {
    ws(m);
    if (close == '}') {
      if (key(m) != M_OK)
        return M_BAD;
      ws(m);
      if (m->p == m->end || *m->p != ':')
        return M_BAD;
      emit(m, m->p++, 1);
    }
    if (value(m) != M_OK)
      return M_BAD;
  } while ((rc = next_elem(m, close)) == 1);
  m->depth--;
  return rc == 0 ? M_OK : M_BAD;
}

static int value(struct mend *m)
{
  ws(m);
  if (m->p == m->end)
    return M_BAD;
  if (*m->p == '{' || *m->p == '[')
    return container(m);
  if (*m->p == '"')
    return string(m);
  return scalar(m);
}

/* ---- the judge's fast path ---- */

/* Past the closing quote of the string whose body starts at p, when the
 * body is strict JSON as it is; else NULL. */
static const char *strict_string(const char *p, const char *e)
{
  size_t k;

  for (;;) {
    p = plain_run(p, e);
    if (p == e)
      return NULL;
    if (*p == '"')
      return p + 1;
    if (*p == '\\')
      k = escape_len(p, e);
    else if ((unsigned char)*p >= 0x80)
      k = tr_utf8_len((const unsigned char *)p, (size_t)(e - p));
    else
      k = 0; /* a control byte */
    if (k == 0)
      return NULL;
    p += k;
  }
}

/*
 * Past the one strict JSON value at p (after whitespace), read as the
 * descent reads it but in one loop with no output; NULL where the descent
 * might not find it VALID (the descent then judges). Most events a slice
 * copies are strict, and judging them by the descent alone was half a
 * slice's time (docs/BENCHMARKS.md, "Slices from access points").
 */
const char *slice_json_strict_end(const char *p, const char *e)
{
  char close[IDX_MAX_DEPTH]; /* the open containers' closing bytes */
  unsigned depth = 0;

value:
  p = skip_ws(p, e);
  if (p == e)
    return NULL;
  if (*p == '{' || *p == '[') {
    if (depth == IDX_MAX_DEPTH)
      return NULL;
    close[depth++] = *p == '{' ? '}' : ']';
    p = skip_ws(p + 1, e);
    if (p < e && *p == close[depth - 1]) {
      p++;
      depth--;
      goto after;
    }
    if (close[depth - 1] == ']')
      goto value;
    goto key;
  }
  p = *p == '"' ? strict_string(p + 1, e) : strict_word(p, e);
  if (p == NULL)
    return NULL;
after:
  if (depth == 0)
    return p;
  p = skip_ws(p, e);
  if (p == e)
    return NULL;
  if (*p == close[depth - 1]) {
    p++;
    depth--;
    goto after;
  }
  if (*p != ',')
    return NULL;
  p = skip_ws(p + 1, e);
  if (close[depth - 1] == ']')
    goto value;
key:
  if (p == e || *p != '"' || (p = strict_string(p + 1, e)) == NULL)
    return NULL;
  p = skip_ws(p, e);
  if (p == e || *p != ':')
    return NULL;
  p++;
  goto value;
}

/* Whether p[0..n) is one strict JSON value within whitespace, by the
 * fast path alone: 1 only where the descent would find it VALID. */
static int strict_fast(const char *p, size_t n)
{
  const char *e = p + n, *q = slice_json_strict_end(p, e);

  return q != NULL && skip_ws(q, e) == e;
}

int slice_json_mend(const char *p, size_t n, struct slice_out *o)
{
  struct mend m = { p, p + n, o, 0, 0 };

  if (o == NULL && strict_fast(p, n))
    return SLICE_JSON_VALID;
  if (value(&m) != M_OK)
    return SLICE_JSON_BAD;
  ws(&m);
  if (m.p != m.end)
    return SLICE_JSON_BAD;
  return m.changed ? SLICE_JSON_MENDED : SLICE_JSON_VALID;
}

void slice_json_escape(struct slice_out *o, const char *p, size_t n)
{
  struct mend m = { p, p + n, o, 0, 0 };

  string_body(&m, 0);
}

int slice_json_member(const char *p, size_t n, const char *key,
                      struct idx_str *val)
{
  struct mend m = { p, p + n, NULL, 0, 0 };
  size_t klen = strlen(key);

  ws(&m);
  if (m.p == m.end || *m.p++ != '{')
    return 0;
  for (;;) {
    const char *k, *v;
    size_t kn;

    ws(&m);
    if (m.p == m.end || *m.p != '"')
      return 0; /* '}' of an object without it, or not strict */
    k = m.p + 1;
    if (string(&m) != M_OK)
      return 0;
    kn = (size_t)(m.p - 1 - k);
    ws(&m);
    if (m.p == m.end || *m.p++ != ':')
      return 0;
    ws(&m);
    v = m.p;
    if (value(&m) != M_OK)
      return 0;
    if (kn == klen && memcmp(k, key, klen) == 0) {
      *val = (struct idx_str){ v, (size_t)(m.p - v) };
      return 1;
    }
    ws(&m);
    if (m.p == m.end || *m.p++ != ',')
      return 0;
  }
}
