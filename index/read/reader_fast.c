/*
 * The token walk (read_int.h): an event parsed from the tokens stage 1
 * found (read_int.h) instead of byte by byte. Each member costs a handful of
 * bit operations: the key's quotes, the colon, the value, the comma are
 * consecutive tokens, and whitespace and string bodies are never looked
 * at. It takes the shapes real traces are made of, strings and plain
 * numbers where values are read, anything at all where they are skipped,
 * and gives every other shape (null where a value is read, a number
 * written as a string or with an exponent, a syntax error) back to the
 * byte-wise parser, reader_event.c, whose result on what this accepts is
 * the same: the fuzzer (tests/fuzz_reader.c) holds the two to it. The
 * caller (reader.c) leaves events with escapes, bytes >= 0x80 or bytes
 * JSON does not allow (dirty blocks) to reader_event.c too.
 */
#include <string.h>

#include "index/read/read_int.h"

/* The cursor of one event's walk: the two words it uses for every token,
 * kept in registers (every function it is passed to is inlined into
 * idx_fast_event()), and the walk for the rest. */
struct cur {
  const char *blk;     /* the first byte of the current word's block */
  uint64_t bits;       /* its tokens not yet returned */
  struct idx_walk *wk; /* the next word, the window's end, the limit */
};

#define INLINE static inline __attribute__((always_inline))

/* The next word that has tokens (bits 0 at the window's end). Out of line
 * and returned by value (in two registers), so that the cursor's address
 * is never taken. */
struct refilled {
  const char *blk;
  uint64_t bits;
};

static struct refilled refill(struct idx_walk *wk, const char *blk)
{
  struct refilled r = { blk, 0 };

  while (r.bits == 0 && wk->next != wk->tok_end) {
    r.bits = *wk->next++;
    r.blk += 64;
  }
  return r;
}

/* The next token into t, or IDX_W_SHORT from the function. */
#define NEXT(t)                                                                \
  do {                                                                         \
    if (__builtin_expect(w->bits == 0, 0)) {                                   \
      struct refilled r_ = refill(w->wk, w->blk);                              \
      w->blk = r_.blk, w->bits = r_.bits;                                      \
      if (w->bits == 0)                                                        \
        return IDX_W_SHORT;                                                    \
    }                                                                          \
    (t) = w->blk + (unsigned)__builtin_ctzll(w->bits);                         \
    w->bits &= w->bits - 1;                                                    \
  } while (0)

void idx_walk_init(struct idx_walk *w, const struct idx_scan_map *m,
                   const char *limit)
{
  w->base = m->base;
  w->limit = limit;
  w->tok = m->tok;
  w->tok_end = m->tok + m->nblocks;
  idx_walk_seek(w, m->base);
}

void idx_walk_seek(struct idx_walk *w, const char *p)
{
  size_t i = (size_t)(p - w->base), b = i / 64;

  if (w->tok + b >= w->tok_end) {
    w->next = w->tok_end;
    w->bits = 0;
    return;
  }
  w->next = w->tok + b + 1;
  w->blk = w->base + b * 64;
  w->bits = w->tok[b] & (~0ull << (i % 64));
}

#define R8(c)                                                                  \
  [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1, [c + 4] = 1, [c + 5] = 1,    \
  [c + 6] = 1, [c + 7] = 1
#define R26(c) R8(c), R8(c + 8), R8(c + 16), [c + 24] = 1, [c + 25] = 1
const unsigned char idx_scalar_bytes[256] = {
  ['+'] = 1, ['-'] = 1, ['.'] = 1, R8('0'),
  ['8'] = 1, ['9'] = 1, R26('A'),  R26('a'),
};

/* The plain number whose first byte is the token v, at scale: the shape
 * idx_num_fast() takes, ended by a byte that cannot go on a number
 * (reader_event.c's read_num). *end: the byte after it. */
INLINE int num_val(const struct cur *w, const char *v, unsigned scale,
                   int64_t *out, const char **end)
{
  const char *q = idx_num_fast(v, w->wk->limit, scale, out);

  if (q == NULL || q >= w->wk->limit || idx_scalar_byte(*q))
    return IDX_W_BAIL;
  *end = q;
  return IDX_W_OK;
}

/*
 * Where a value ends goes to *end for the check of the ',' after it: the
 * byte after a string, number or container, or NULL for a number or
 * literal only skipped (its end is not looked for; comma_before() then
 * looks back from the next token).
 */

/* The string whose opening quote is the token v. */
INLINE int str_val(struct cur *w, const char *v, struct idx_str *out,
                   const char **end)
{
  const char *q;

  if (*v != '"')
    return IDX_W_BAIL;
  NEXT(q);
  out->p = v + 1;
  out->n = (size_t)(q - v - 1);
  *end = q + 1;
  return IDX_W_OK;
}

/* An integer member: the number goes to *dst, bit into *has. */
INLINE int int_val(struct cur *w, const char *v, int64_t *dst, uint32_t *has,
                   uint32_t bit, const char **end)
{
  int rc = num_val(w, v, 0, dst, end);

  if (rc == IDX_W_OK)
    *has |= bit;
  return rc;
}

/* Skips the value whose first token is v, opening at most max_depth
 * containers (reader_event.c's skip_value): brackets must match, nothing
 * else is looked at. */
INLINE int skip(struct cur *w, const char *v, unsigned max_depth,
                const char **end)
{
  uint64_t arrays = 0; /* bit d: the container at depth d is an array */
  unsigned d = 0;
  const char *t = v;

  switch (*v) {
  case '"':
    NEXT(t);
    *end = t + 1;
    return IDX_W_OK;
  case '{':
  case '[': break;
  case '}':
  case ']': return IDX_W_BAIL;
  default: /* a number or literal is one token */ *end = NULL; return IDX_W_OK;
  }
  for (;;) {
    if (*t == '{' || *t == '[') {
      if (d >= max_depth || d >= 64)
        return IDX_W_BAIL;
      arrays = (arrays & ~(1ull << d)) | ((uint64_t)(*t == '[') << d);
      d++;
    } else if (*t == '}' || *t == ']') {
      d--;
      if (((arrays >> d) & 1) != (*t == ']'))
        return IDX_W_BAIL;
      if (d == 0) {
        *end = t + 1;
        return IDX_W_OK;
      }
    } else if (*t == '"') {
      NEXT(t); /* its closing quote */
    }
    NEXT(t);
  }
}

/* grid / block: exactly [x, y, z] of plain integers; a value of another
 * type is skipped, as reader_event.c does. */
INLINE int dim3(struct cur *w, struct idx_parsed *e, const char *v,
                int64_t dst[3], uint32_t bit, unsigned depth, const char **end)
{
  int64_t d[3];
  const char *t, *q;
  int i;

  if (*v != '[')
    return skip(w, v, IDX_MAX_DEPTH - depth, end);
  for (i = 0; i < 3; i++) {
    NEXT(t);
    if (num_val(w, t, 0, &d[i], &q) != IDX_W_OK || (i < 2 && *q != ','))
      return IDX_W_BAIL;
  }
  NEXT(t);
  if (*t != ']')
    return IDX_W_BAIL;
  memcpy(dst, d, sizeof(d));
  e->ev.has |= bit;
  *end = t + 1;
  return IDX_W_OK;
}

/* One member of args (reader_event.c's on_arg). */
INLINE int on_arg(struct cur *w, struct idx_parsed *e, const char *k, size_t kn,
                  const char *v, unsigned depth, const char **end)
{
  struct idx_event *ev = &e->ev;
  int key = idx_arg_key(k, kn);
  struct idx_slot s;

  if (idx_arg_slot(e, key, &s))
    return int_val(w, v, s.dst, s.has, s.bit, end);
  switch (key) {
  case IDX_A_GRID: return dim3(w, e, v, ev->grid, IDX_HAS_GRID, depth, end);
  case IDX_A_BLOCK: return dim3(w, e, v, ev->block, IDX_HAS_BLOCK, depth, end);
  case IDX_A_KIND: return str_val(w, v, &ev->kind, end);
  case IDX_A_KERNEL: return str_val(w, v, &ev->kernel, end);
  case IDX_A_NAME: return str_val(w, v, &ev->arg_name, end);
  default: return skip(w, v, IDX_MAX_DEPTH - depth, end);
  }
}

/* ts / dur as a plain number at the settled format's scale. */
INLINE int time_val(struct cur *w, struct idx_parsed *e, const char *v,
                    struct idx_numtok *t, const char **end)
{
  int64_t val;

  if (e->scale < 0 || num_val(w, v, (unsigned)e->scale, &val, end) != 0)
    return IDX_W_BAIL;
  memset(t, 0, sizeof(*t));
  t->p = v;
  t->n = (size_t)(*end - v);
  t->present = t->done = 1;
  t->val = val;
  return IDX_W_OK;
}

/* One member of an event but args (reader_event.c's on_event_key), key
 * an IDX_K_*. */
INLINE int on_member(struct cur *w, struct idx_parsed *e, int key,
                     const char *v, unsigned depth, const char **end)
{
  struct idx_event *ev = &e->ev;
  struct idx_str ph = { NULL, 0 };
  int rc;

  switch (key) {
  case IDX_K_PH:
    rc = str_val(w, v, &ph, end);
    ev->ph = ph.n > 0 ? ph.p[0] : 0;
    return rc;
  case IDX_K_CAT: return str_val(w, v, &ev->cat, end);
  case IDX_K_NAME: return str_val(w, v, &ev->name, end);
  case IDX_K_PID:
    if (*v == '"')
      return str_val(w, v, &ev->pid_str, end);
    return int_val(w, v, &ev->pid, &ev->has, IDX_HAS_PID, end);
  case IDX_K_TID:
    if (*v == '"')
      return str_val(w, v, &ev->tid_str, end);
    return int_val(w, v, &ev->tid, &ev->has, IDX_HAS_TID, end);
  case IDX_K_TS: return time_val(w, e, v, &e->ts, end);
  case IDX_K_DUR: return time_val(w, e, v, &e->dur, end);
  default: return skip(w, v, IDX_MAX_DEPTH - depth, end);
  }
}

/* 1 when the last byte before token t that is no whitespace is a ','. In
 * a clean block (read_int.h) a separator sits right after the value it
 * follows, and there is only one: so this is the comma after the value
 * before t, if it has one (and *end == ',' says the same where the value's
 * end is known). Bytes <= ' ' outside strings are whitespace there (any
 * other would have made the block dirty). */
INLINE int comma_before(const char *t)
{
  while ((unsigned char)*--t <= ' ')
    ;
  return *t == ',';
}

/*
 * The members of the event and of its args object in one loop (in_args
 * says which object a member is of): key, ':', value, then ',' or '}', a
 * trailing comma allowed, as reader_event.c's obj_each. Separators are
 * no tokens (read_int.h): the ':' is the byte after the key's closing quote,
 * a ',' the byte after the value. depth: the event's nesting; its members
 * are one level deeper, args' two.
 */
INLINE int event(struct cur *w, unsigned depth, struct idx_parsed *e,
                 const char **close)
{
  const char *t, *k, *v, *end;
  int in_args = 0, key, rc;

  NEXT(t);
  if (*t != '{')
    return IDX_W_BAIL;
  NEXT(t);
  for (;;) {
    if (*t == '}') {
      *close = t;
      if (!in_args)
        return IDX_W_OK;
      in_args = 0; /* the end of args: its event goes on */
      end = t + 1;
    } else {
      if (*t != '"')
        return IDX_W_BAIL;
      k = t + 1;
      NEXT(t); /* the key's closing quote */
      NEXT(v);
      if (t[1] != ':') /* v is past it: t[1] is in the window */
        return IDX_W_BAIL;
      if (in_args) {
        rc = on_arg(w, e, k, (size_t)(t - k), v, depth + 2, &end);
      } else if ((key = idx_event_key(k, (size_t)(t - k))) == IDX_K_ARGS &&
                 *v == '{') {
        in_args = 1;
        NEXT(t);
        continue;
      } else {
        rc = on_member(w, e, key, v, depth + 1, &end);
      }
      if (rc != IDX_W_OK)
        return rc;
    }
    NEXT(t);
    /* Before a '}' a ',' may be left, not a ':' ("name": "x":}, clean as
     * a ':' after a closing quote is). */
    if (*t == '}' ? end != NULL && *end == ':'
                  : !(end != NULL ? *end == ',' : comma_before(t)))
      return IDX_W_BAIL;
  }
}

int idx_fast_event(struct idx_walk *walk, unsigned depth,
                   struct idx_parsed *out)
{
  struct cur c = { walk->blk, walk->bits, walk };
  int rc;

  idx_parsed_reset(out);
  rc = event(&c, depth, out, &walk->at);
  walk->blk = c.blk;
  walk->bits = c.bits;
  if (rc == IDX_W_OK)
    idx_finish_event(out);
  return rc;
}
