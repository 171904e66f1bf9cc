/*
 * Scanning and in-memory parsing for the reader (read_int.h): the
 * resumable value skipper, and the parser of one whole event (or the
 * deviceProperties / distributedInfo values) held in a buffer. Only the
 * fields of struct idx_event are decoded; every other value is skipped by
 * the bracket-and-string scanner without being decoded.
 *
 * Duplicate keys: the last one wins, as with Python's json module.
 */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/text.h"
#include "index/read/read_int.h"

/* Byte classes outside strings; from C_WS on, a byte inside a skipped
 * array or object changes nothing. */
enum { C_BAD, C_QUOTE, C_OPEN, C_CLOSE, C_WS, C_SEP, C_SCALAR };

static const unsigned char cls[256] = {
  ['\t'] = C_WS,
  ['\n'] = C_WS,
  ['\r'] = C_WS,
  [' '] = C_WS,
  ['"'] = C_QUOTE,
  ['{'] = C_OPEN,
  ['['] = C_OPEN,
  ['}'] = C_CLOSE,
  [']'] = C_CLOSE,
  [','] = C_SEP,
  [':'] = C_SEP,
  ['+'] = C_SCALAR,
  ['-'] = C_SCALAR,
  ['.'] = C_SCALAR,
  ['0' ... '9'] = C_SCALAR,
  ['A' ... 'Z'] = C_SCALAR,
  ['a' ... 'z'] = C_SCALAR,
};

#ifndef __SSE2__
/* Bit 7 of each byte of w that equals the byte in rep (all 8 copies);
 * only the lowest set bit is exact, which is all callers use. */
static uint64_t match(uint64_t w, uint64_t rep)
{
  uint64_t y = w ^ rep;

  return (y - 0x0101010101010101ull) & ~y & 0x8080808080808080ull;
}
#endif

#ifdef __SSE2__
/* Bit i set when byte i of the 16 at p is one of a, b, c, d. */
static unsigned match16(const char *p, char a, char b, char c, char d)
{
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(a)),
                                        _mm_cmpeq_epi8(v, _mm_set1_epi8(b))),
                           _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)),
                                        _mm_cmpeq_epi8(v, _mm_set1_epi8(d))));

  return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* The next '"' or '\\' at or after p, or end. Sixteen (or eight) bytes
 * at a time: most strings are short, where a memchr call costs more than
 * it saves. */
static const char *quote_or_bs(const char *p, const char *end)
{
#ifdef __SSE2__
  unsigned bits;

  for (; end - p >= 16; p += 16) {
    bits = match16(p, '"', '\\', '"', '\\');
    if (bits != 0)
      return p + __builtin_ctz(bits);
  }
#else
  const uint64_t q = 0x2222222222222222ull, bs = 0x5c5c5c5c5c5c5c5cull;
  uint64_t w, m;

  for (; end - p >= 8; p += 8) {
    memcpy(&w, p, 8);
    m = match(w, q) | match(w, bs);
    if (m != 0)
      return p + (__builtin_ctzll(m) >> 3);
  }
#endif
  while (p < end && *p != '"' && *p != '\\')
    p++;
  return p;
}

/* Finds the closing quote of a string whose body starts at p. *esc is in:
 * the previous chunk ended on a backslash; out, when NULL is returned (no
 * closing quote before end): this chunk did. *saw_esc is set when the body
 * holds a backslash. */
static const char *str_end(const char *p, const char *end, int *esc,
                           int *saw_esc)
{
  if (*esc) {
    if (p == end)
      return NULL;
    p++;
    *esc = 0;
  }
  for (;;) {
    p = quote_or_bs(p, end);
    if (p == end)
      return NULL;
    if (*p == '"')
      return p;
    *saw_esc = 1;
    if (p + 1 == end) {
      *esc = 1;
      return NULL;
    }
    p += 2;
  }
}

void idx_skip_init(struct idx_skip *k)
{
  memset(k, 0, sizeof(*k));
}

/* One structural byte c at depth > 0 or the value's first byte. */
static int skip_byte(struct idx_skip *k, unsigned char c, unsigned max_depth)
{
  uint64_t bit;

  switch (cls[c]) {
  case C_WS:
  case C_SEP: return k->started ? IDX_P_OK : IDX_P_SYNTAX;
  case C_SCALAR:
    if (k->depth == 0)
      k->in_scalar = 1;
    break;
  case C_QUOTE: k->in_str = 1; break;
  case C_OPEN:
    if (k->depth >= max_depth)
      return IDX_P_DEPTH;
    bit = 1ull << (k->depth % 64);
    if (c == '[')
      k->arrays[k->depth / 64] |= bit;
    else
      k->arrays[k->depth / 64] &= ~bit;
    k->depth++;
    break;
  case C_CLOSE:
    if (k->depth == 0)
      return IDX_P_SYNTAX;
    k->depth--;
    bit = 1ull << (k->depth % 64);
    if (((k->arrays[k->depth / 64] & bit) != 0) != (c == ']'))
      return IDX_P_SYNTAX;
    break;
  default: return IDX_P_SYNTAX;
  }
  k->started = 1;
  return IDX_P_OK;
}

int idx_skip_run(struct idx_skip *k, const char *p, const char *end,
                 unsigned max_depth, size_t *used)
{
  const char *s = p, *q;
  int saw = 0, rc;

  for (;;) {
    if (k->in_str) {
      int esc = k->esc;

      q = str_end(p, end, &esc, &saw);
      k->esc = (uint8_t)esc;
      if (q == NULL) {
        *used = (size_t)(end - s);
        return IDX_P_MORE;
      }
      k->in_str = 0;
      p = q + 1;
      if (k->depth == 0) {
        *used = (size_t)(p - s);
        return IDX_P_OK;
      }
      continue;
    }
    if (p == end) {
      *used = (size_t)(p - s);
      return IDX_P_MORE;
    }
    if (k->in_scalar) {
      while (p < end && cls[(unsigned char)*p] == C_SCALAR)
        p++;
      if (p == end)
        continue;
      *used = (size_t)(p - s);
      return IDX_P_OK;
    }
    if (k->depth > 0) {
      while (p < end && cls[(unsigned char)*p] >= C_WS)
        p++;
      if (p == end)
        continue;
    }
    rc = skip_byte(k, (unsigned char)*p, max_depth);
    if (rc != IDX_P_OK) {
      *used = (size_t)(p - s);
      return rc;
    }
    p++;
    if (k->depth == 0 && !k->in_str && !k->in_scalar) {
      *used = (size_t)(p - s);
      return IDX_P_OK;
    }
  }
}

/* Skips JSON whitespace; a plain loop measured faster than vector code
 * on kineto's short runs of indentation. */
static const char *ws(const char *p, const char *end)
{
  while (p < end && cls[(unsigned char)*p] == C_WS)
    p++;
  return p;
}

static int get_tok(struct idx_cur *c, const char **t, size_t *n);

/* Skips the value at c->p. Strings and scalars (most unknown values:
 * python ids, "Ev Idx") go straight; only arrays and objects need the
 * bracket scanner. */
static int skip_value(struct idx_cur *c)
{
  struct idx_skip k;
  size_t used;
  const char *q;
  int rc, esc = 0, saw = 0;

  if (*c->p == '"') {
    q = str_end(c->p + 1, c->end, &esc, &saw);
    if (q == NULL)
      return IDX_P_MORE;
    c->p = q + 1;
    return IDX_P_OK;
  }
  if (cls[(unsigned char)*c->p] == C_SCALAR)
    return get_tok(c, &q, &used);
  idx_skip_init(&k);
  rc = idx_skip_run(&k, c->p, c->end, IDX_MAX_DEPTH - c->depth, &used);
  c->p += used;
  return rc;
}

/* The string at c->p ('"'), unescaped when the buffer allows; sets *bad
 * when it is not valid UTF-8 or has a bad escape. */
static int get_str(struct idx_cur *c, struct idx_str *out, int *bad)
{
  const char *b = c->p + 1, *q;
  int esc = 0, saw = 0;
  size_t n;

  q = str_end(b, c->end, &esc, &saw);
  if (q == NULL)
    return IDX_P_MORE;
  n = (size_t)(q - b);
  if (saw) {
    if (!c->mut)
      return IDX_P_COPY;
    /* The buffer is the reader's own copy (c->mut): writable. */
    if (idx_unescape((char *)b, n, &n) != 0) {
      *bad = 1;
      n = 0;
    }
  }
  if (!tr_utf8_valid(b, n))
    *bad = 1;
  out->p = b;
  out->n = n;
  c->p = q + 1;
  return IDX_P_OK;
}

/* A number or literal at c->p; IDX_P_MORE when it may go on past end. */
static int get_tok(struct idx_cur *c, const char **t, size_t *n)
{
  const char *p = c->p;

  while (p < c->end && cls[(unsigned char)*p] == C_SCALAR)
    p++;
  if (p == c->end)
    return IDX_P_MORE;
  if (p == c->p)
    return IDX_P_SYNTAX;
  *t = c->p;
  *n = (size_t)(p - c->p);
  c->p = p;
  return IDX_P_OK;
}

/* 1 when the token t[0..n) is the literal lit. */
static int tok_is(const char *t, size_t n, const char *lit)
{
  return strlen(lit) == n && memcmp(t, lit, n) == 0;
}

/* A number at c->p, also written as a string ("128"): t->present unless it
 * is null, NaN or Infinity; *wrong for a bool, object or array. Converted
 * at scale now unless scale < 0. A bare token that is no number is a
 * syntax error. */
static int read_num(struct idx_cur *c, struct idx_numtok *t, int *wrong,
                    int scale)
{
  int esc = 0, saw = 0, rc, is_str = *c->p == '"';
  const char *q;

  memset(t, 0, sizeof(*t));
  if (*c->p == '{' || *c->p == '[') {
    *wrong = 1;
    return skip_value(c);
  }
  if (is_str) {
    q = str_end(c->p + 1, c->end, &esc, &saw);
    if (q == NULL)
      return IDX_P_MORE;
    t->p = c->p + 1;
    t->n = (size_t)(q - t->p);
    c->p = q + 1;
    /* Strings may pad with spaces; escapes make it no number. */
    while (t->n > 0 && cls[(unsigned char)t->p[0]] == C_WS)
      t->p++, t->n--;
    while (t->n > 0 && cls[(unsigned char)t->p[t->n - 1]] == C_WS)
      t->n--;
    t->present = !saw;
    t->junk = saw;
  } else {
    /* Most numbers: one pass, when what follows ends the token. */
    q = scale >= 0 ? idx_num_fast(c->p, c->end, (unsigned)scale, &t->val)
                   : NULL;
    if (q != NULL && q < c->end && cls[(unsigned char)*q] != C_SCALAR) {
      t->p = c->p;
      t->n = (size_t)(q - c->p);
      c->p = q;
      t->present = t->done = 1;
      return IDX_P_OK;
    }
    rc = get_tok(c, &t->p, &t->n);
    if (rc != IDX_P_OK)
      return rc;
    /* Literals only where a number cannot start (or "-Infinity"). */
    if (!(t->p[0] >= '0' && t->p[0] <= '9') &&
        !(t->p[0] == '-' && t->n > 1 && t->p[1] != 'I')) {
      if (tok_is(t->p, t->n, "true") || tok_is(t->p, t->n, "false")) {
        *wrong = 1;
        return IDX_P_OK;
      }
      if (tok_is(t->p, t->n, "null"))
        return IDX_P_OK;
      if (tok_is(t->p, t->n, "NaN") || tok_is(t->p, t->n, "Infinity") ||
          tok_is(t->p, t->n, "-Infinity")) {
        t->junk = 1;
        return IDX_P_OK;
      }
    }
    t->present = 1;
  }
  if (!t->present || (scale < 0 && is_str))
    return IDX_P_OK;
  t->rc = idx_num_parse(t->p, t->n, scale < 0 ? 0 : (unsigned)scale, &t->val);
  if (t->rc == IDX_NUM_NAN && !is_str) {
    c->p = t->p;
    return IDX_P_SYNTAX;
  }
  if (t->rc == IDX_NUM_NAN)
    t->present = 0, t->junk = 1;
  t->done = scale >= 0;
  return IDX_P_OK;
}

typedef int (*on_key_fn)(struct idx_cur *c, const char *k, size_t kn,
                         void *ctx);
typedef int (*on_elem_fn)(struct idx_cur *c, size_t i, void *ctx);

/* After a member: ',' or the closing byte. Trailing commas are accepted. */
static int next_member(struct idx_cur *c, char close)
{
  c->p = ws(c->p, c->end);
  if (c->p == c->end)
    return IDX_P_MORE;
  if (*c->p == ',')
    c->p++;
  else if (*c->p != close)
    return IDX_P_SYNTAX;
  return IDX_P_OK;
}

/* Steps into the container at c->p, within the depth limit. */
static int enter(struct idx_cur *c)
{
  if (c->depth >= IDX_MAX_DEPTH)
    return IDX_P_DEPTH;
  c->depth++;
  c->p++;
  return IDX_P_OK;
}

/* Before a member or the closing byte: skips whitespace and sets *closed
 * when the container ends here (the byte consumed). */
static inline int member_or_close(struct idx_cur *c, char close, int *closed)
{
  c->p = ws(c->p, c->end);
  if (c->p == c->end)
    return IDX_P_MORE;
  *closed = *c->p == close;
  if (*closed) {
    c->p++;
    c->depth--;
  }
  return IDX_P_OK;
}

/* Calls on_key for each member of the object at c->p ('{'), with c->p at
 * the value, which on_key must consume. A key with escapes is passed with
 * kn 0: none of the keys we read has any. */
static int obj_each(struct idx_cur *c, on_key_fn on_key, void *ctx)
{
  const char *k, *q;
  int esc, saw, closed = 0, rc = enter(c);

  while (rc == IDX_P_OK) {
    rc = member_or_close(c, '}', &closed);
    if (rc != IDX_P_OK || closed)
      return rc;
    if (*c->p != '"')
      return IDX_P_SYNTAX;
    k = c->p + 1;
    esc = saw = 0;
    q = str_end(k, c->end, &esc, &saw);
    if (q == NULL)
      return IDX_P_MORE;
    c->p = ws(q + 1, c->end);
    if (c->p == c->end)
      return IDX_P_MORE;
    if (*c->p != ':')
      return IDX_P_SYNTAX;
    c->p = ws(c->p + 1, c->end);
    if (c->p == c->end)
      return IDX_P_MORE;
    rc = on_key(c, k, saw ? 0 : (size_t)(q - k), ctx);
    if (rc == IDX_P_OK)
      rc = next_member(c, '}');
  }
  return rc;
}

/* Calls on_elem for each element of the array at c->p ('['). */
static int arr_each(struct idx_cur *c, on_elem_fn on_elem, void *ctx)
{
  size_t i = 0;
  int closed = 0, rc = enter(c);

  while (rc == IDX_P_OK) {
    rc = member_or_close(c, ']', &closed);
    if (rc != IDX_P_OK || closed)
      return rc;
    rc = on_elem(c, i++, ctx);
    if (rc == IDX_P_OK)
      rc = next_member(c, ']');
  }
  return rc;
}

/* A string field. When strict (ph, cat, name), another type than
 * string or null, or a string that is not valid UTF-8, sets *bad (the
 * event is skipped); otherwise such a field is left absent. */
static int str_field(struct idx_cur *c, struct idx_str *dst, int *bad,
                     int strict)
{
  const char *t;
  size_t n;
  int rc, sbad = 0;

  if (*c->p == '"') {
    rc = get_str(c, dst, &sbad);
    if (sbad && strict)
      *bad = 1;
    else if (sbad)
      dst->p = NULL, dst->n = 0;
    return rc;
  }
  if (*c->p == '{' || *c->p == '[') {
    *bad |= strict;
    return skip_value(c);
  }
  rc = get_tok(c, &t, &n);
  if (rc == IDX_P_OK && !tok_is(t, n, "null"))
    *bad |= strict;
  return rc;
}

/* An integer field: a wrong type leaves it absent, a value out of range
 * makes the event malformed. */
static int int_field(struct idx_cur *c, struct idx_parsed *e, int64_t *dst,
                     uint32_t *has, uint32_t bit)
{
  struct idx_numtok t;
  int wrong = 0, rc = read_num(c, &t, &wrong, 0);

  if (rc != IDX_P_OK)
    return rc;
  if (t.present && t.rc == IDX_NUM_RANGE)
    e->bad = 1;
  else if (t.present) {
    *dst = t.val;
    *has |= bit;
  }
  return IDX_P_OK;
}

/* grid / block: [x, y, z] of integers, else absent. */
struct dim3 {
  struct idx_parsed *e;
  int64_t v[3];
  int ok;
};

/* One element of grid/block: d->ok becomes 2 after exactly three
 * integers, 0 on anything else. */
static int on_dim(struct idx_cur *c, size_t i, void *ctx)
{
  struct dim3 *d = ctx;
  struct idx_numtok t;
  int wrong = 0, rc = read_num(c, &t, &wrong, 0);

  if (rc != IDX_P_OK)
    return rc;
  if (t.present && t.rc == IDX_NUM_RANGE)
    d->e->bad = 1;
  if (i >= 3 || wrong || !t.present || t.rc != IDX_NUM_OK)
    d->ok = 0;
  else
    d->v[i] = t.val;
  if (i == 2 && d->ok)
    d->ok = 2;
  else if (i >= 2)
    d->ok = 0;
  return IDX_P_OK;
}

/* grid / block at c->p: set (and bit in has) only for [x, y, z]. */
static int dim3_field(struct idx_cur *c, struct idx_parsed *e, int64_t *dst,
                      uint32_t bit)
{
  struct dim3 d = { .e = e, .ok = 1 };
  int rc;

  if (*c->p != '[')
    return skip_value(c);
  rc = arr_each(c, on_dim, &d);
  if (rc == IDX_P_OK && d.ok == 2) {
    memcpy(dst, d.v, sizeof(d.v));
    e->ev.has |= bit;
  }
  return rc;
}

/* "kind" is a string on kineto ("Dispatch Kernel") and may be a number
 * elsewhere: a number is kept as written. */
static int kind_field(struct idx_cur *c, struct idx_parsed *e)
{
  const char *t;
  size_t n;
  int rc;

  if (*c->p == '"' || *c->p == '{' || *c->p == '[')
    return str_field(c, &e->ev.kind, &e->bad, 0);
  rc = get_tok(c, &t, &n);
  if (rc == IDX_P_OK && !tok_is(t, n, "null")) {
    e->ev.kind.p = t;
    e->ev.kind.n = n;
  }
  return rc;
}

/* One member of args: the fields of struct idx_event it feeds. */
static int on_arg(struct idx_cur *c, const char *k, size_t kn, void *ctx)
{
  struct idx_parsed *e = ctx;
  struct idx_event *ev = &e->ev;
  int key = idx_arg_key(k, kn);
  struct idx_slot slot;

  if (idx_arg_slot(e, key, &slot))
    return int_field(c, e, slot.dst, slot.has, slot.bit);
  switch (key) {
  case IDX_A_GRID: return dim3_field(c, e, ev->grid, IDX_HAS_GRID);
  case IDX_A_BLOCK: return dim3_field(c, e, ev->block, IDX_HAS_BLOCK);
  case IDX_A_KIND: return kind_field(c, e);
  case IDX_A_KERNEL: return str_field(c, &ev->kernel, &e->bad, 0);
  case IDX_A_NAME: return str_field(c, &ev->arg_name, &e->bad, 0);
  default: return skip_value(c);
  }
}

/* pid / tid: a number, or a lane name ("CPU functions", "stream 7"); any
 * other type leaves it absent. */
static int lane_field(struct idx_cur *c, struct idx_parsed *e, int64_t *num,
                      struct idx_str *str, uint32_t bit)
{
  if (*c->p == '"')
    return str_field(c, str, &e->bad, 0);
  return int_field(c, e, num, &e->ev.has, bit);
}

/* ts / dur: null leaves them absent; anything else that is no number
 * ({}, true, "N/A", NaN) makes the event malformed. */
static int time_field(struct idx_cur *c, struct idx_parsed *e,
                      struct idx_numtok *t)
{
  int wrong = 0, rc = read_num(c, t, &wrong, e->scale);

  e->bad |= wrong | t->junk;
  return rc;
}

/* One member of an event object. */
static int on_event_key(struct idx_cur *c, const char *k, size_t kn, void *ctx)
{
  struct idx_parsed *e = ctx;
  struct idx_event *ev = &e->ev;
  struct idx_str ph = { 0 };
  int rc;

  switch (idx_event_key(k, kn)) {
  case IDX_K_PH:
    rc = str_field(c, &ph, &e->bad, 1);
    ev->ph = ph.n > 0 ? ph.p[0] : 0;
    return rc;
  case IDX_K_CAT: return str_field(c, &ev->cat, &e->bad, 1);
  case IDX_K_NAME: return str_field(c, &ev->name, &e->bad, 1);
  case IDX_K_PID: return lane_field(c, e, &ev->pid, &ev->pid_str, IDX_HAS_PID);
  case IDX_K_TID: return lane_field(c, e, &ev->tid, &ev->tid_str, IDX_HAS_TID);
  case IDX_K_TS: return time_field(c, e, &e->ts);
  case IDX_K_DUR: return time_field(c, e, &e->dur);
  case IDX_K_ARGS: return *c->p == '{' ? obj_each(c, on_arg, e) : skip_value(c);
  default: return skip_value(c);
  }
}

int idx_parse_event(struct idx_cur *c, struct idx_parsed *out)
{
  int scale = out->scale, rc;

  memset(out, 0, sizeof(*out));
  out->scale = scale;
  if (*c->p != '{')
    return IDX_P_SYNTAX;
  rc = obj_each(c, on_event_key, out);
  if (rc == IDX_P_OK)
    idx_finish_event(out);
  return rc;
}

struct devprops {
  char *device;
  size_t size;
};

/* deviceProperties[0]: copies "name" when it is a valid string. */
static int on_dev_key(struct idx_cur *c, const char *k, size_t kn, void *ctx)
{
  struct devprops *d = ctx;
  struct idx_str s = { 0 };
  int bad = 0, rc;
  size_t n;

  if (kn != 4 || memcmp(k, "name", 4) != 0)
    return skip_value(c);
  rc = str_field(c, &s, &bad, 0);
  if (rc != IDX_P_OK || bad || s.p == NULL)
    return rc;
  n = s.n < d->size - 1 ? s.n : d->size - 1;
  /* Cut before a continuation byte, never inside a character. */
  while (n > 0 && n < s.n && ((unsigned char)s.p[n] & 0xc0) == 0x80)
    n--;
  memcpy(d->device, s.p, n);
  d->device[n] = 0;
  return IDX_P_OK;
}

/* An element of deviceProperties: only the first one is read. */
static int on_dev_elem(struct idx_cur *c, size_t i, void *ctx)
{
  if (i == 0 && *c->p == '{')
    return obj_each(c, on_dev_key, ctx);
  return skip_value(c);
}

int idx_parse_devprops(struct idx_cur *c, char *device, size_t size)
{
  struct devprops d = { device, size };

  if (*c->p != '[')
    return skip_value(c);
  return arr_each(c, on_dev_elem, &d);
}

/* distributedInfo: stores "rank" when it is an integer. */
static int on_dist_key(struct idx_cur *c, const char *k, size_t kn, void *ctx)
{
  struct idx_numtok t;
  int wrong = 0, rc;

  if (kn != 4 || memcmp(k, "rank", 4) != 0)
    return skip_value(c);
  rc = read_num(c, &t, &wrong, 0);
  if (rc == IDX_P_OK && t.present && t.rc == IDX_NUM_OK)
    *(int64_t *)ctx = t.val;
  return rc;
}

int idx_parse_distinfo(struct idx_cur *c, int64_t *rank)
{
  if (*c->p != '{')
    return skip_value(c);
  return obj_each(c, on_dist_key, rank);
}
