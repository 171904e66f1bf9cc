/*
 * Event layouts (read_int.h). A tracer writes every event of one kind
 * alike: kineto's python_function events, nine in ten of a PyTorch trace,
 * all read
 *
 *   {\n    "ph": "X", "cat": "python_function", "name": "…", "pid": …,
 *   "tid": …,\n    "ts": …, "dur": …,\n    "args": {\n      "Python parent
 *   id": …, "Python id": …, "Ev Idx": …\n    }\n  }
 *
 * with the same keys in the same order, the same whitespace and
 * separators, the same ph and cat; only the values in the holes differ. A
 * layout is that text, learnt from one event the token walk read
 * (reader_fast.c): literal runs, compared with the next event 16 bytes at
 * a time, and holes, each read by what the learnt event had there (a kept
 * string, a number, a value only skipped). A match needs no stage-1 masks
 * at all, and costs a python_function event about a sixth of its token
 * walk and scan.
 *
 * Why a match reads what reader_event.c reads: the literal runs are bytes
 * of an event the token walk accepted (whose result reader_event.c's
 * equals, tests/fuzz_reader.c), so keys, their order, separators, ph and
 * cat are the same, and each hole is checked as reader_event.c checks a
 * value there: a number by the same idx_num_fast(), a kept string without
 * escapes and valid UTF-8, a skipped value by the same rules (the bracket
 * scanner for containers); anything else fails the match and the event
 * goes the token walk. A layout is kept only when matching the event it
 * was learnt from gives what the token walk gave.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "common/text.h"
#include "index/read/read_int.h"

/* What follows a step's literal run. */
enum {
  H_END,      /* nothing: the run ends with the event's '}' */
  H_STR,      /* a kept string's body (between the run's last byte, its
                 opening quote, and the next run's first, its closing
                 one) */
  H_INT,      /* an integer field */
  H_TIME_US,  /* ts or dur in microseconds (kineto) */
  H_TIME_NS,  /* ts or dur in nanoseconds (mcTracer) */
  H_SKIP_NUM, /* a value only skipped, a number in the learnt event */
  H_SKIP_STR, /* the same, a string there */
  H_SKIP,     /* the same, anything else there */
  H_CONSTS    /* a bit: the run holds constants (struct cst) too */
};
_Static_assert(H_CONSTS == 8, "H_CONSTS is a bit above every kind");

#define LAYOUT_BYTES  2048 /* literal bytes of one layout, with padding */
#define LAYOUT_STEPS  64
#define LAYOUT_CONSTS 4

/* A literal run and the hole after it. Offsets are into struct
 * idx_parsed. A run is compared in pieces of 16 bytes, or 32 where the
 * match is AVX2's ([0] and [1] of the arrays): every piece but the last
 * whole, the last under its tail. */
struct step {
  const char *lit; /* the run: n bytes in its layout's bytes */
  uint16_t n;
  uint16_t last[2]; /* where its last piece starts in it */
  uint16_t need[2]; /* the bytes from its first a match may read before
                       the hole's own checks: its pieces, and 16 more
                       for the hole (int_at() reads a word at once) */
  uint32_t tail[2]; /* the bits of its last piece past its end */
  uint8_t hole;     /* H_*, with H_CONSTS */
  uint8_t c0, nc;   /* its constants: cst[c0, c0 + nc) */
  uint16_t field;   /* H_STR: an idx_str; H_INT: an int64_t; H_TIME_*: an
                       idx_numtok */
  uint32_t room;    /* H_SKIP*: the levels the value may open */
  /* What the hole held last time, when it was short: pid, tid, device
   * and stream are the same event after event, and so are the first
   * eight digits of ts. H_INT: its bytes and the one after them (under
   * mask), their value and length (0: none yet); H_TIME_US: its first
   * eight bytes when all digits (0: none yet), and their value. */
  uint64_t memo_x, memo_mask;
  int64_t memo_v;
  unsigned memo_k;
};

/* A string value inside a literal run (ph, cat): the same in every event
 * that matches, so the field points into the event's run. */
struct cst {
  uint16_t field; /* an idx_str */
  uint16_t off, n;
};

struct idx_layout {
  unsigned nsteps, ncst, nbytes;
  /* Whether its literal runs are strict JSON around strict values in its
   * holes (judged(), for idx_reader_judge()): 1 yes, -1 no, 0 not known
   * yet. */
  signed char strict;
  /* What its integer holes set once all are read: every match reads
   * every hole, so the flags are the layout's, set at its end rather
   * than hole by hole. */
  uint32_t has, xhas; /* IDX_HAS_*, IDX_X_* */
  int co_id;          /* args.co_id is one of them */
  char ph;            /* the ph, a constant: the first byte of its string
                         in the runs (of the last "ph" key: it wins) */
  char cat_class;     /* the events' idx_event.cat_class: their cat is a
                         constant too */
  unsigned need[2];   /* the most of its steps' need */
  struct step step[LAYOUT_STEPS];
  struct cst cst[LAYOUT_CONSTS];
  /* Runs packed one after the other, read by unaligned loads: a last
   * piece may read up to 31 bytes past its run. */
  char bytes[LAYOUT_BYTES];
};

#define AT(e, off, type) ((type *)(void *)((char *)(e) + (off)))

/* What a match runs, inlined into both of its widths (match_with()):
 * GCC does not inline a function into one of another target unless told
 * to. */
#define LAYOUT_INLINE static inline __attribute__((always_inline))

#ifdef __x86_64__
#define LAYOUT_AVX2 __attribute__((target("avx2")))
#endif

/* ---- matching ---- */

/* 1 when the run of st is at p: its pieces compared 16 bytes at a time
 * (p may be read 15 bytes past the run). */
LAYOUT_INLINE int run_eq16(const char *p, const struct step *st)
{
#ifdef __SSE2__
  const char *lit = st->lit;
  unsigned i = st->last[0];

  /* The last piece first: most runs have no other. */
  if (((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
           _mm_loadu_si128((const __m128i *)(const void *)(p + i)),
           _mm_loadu_si128((const __m128i *)(const void *)(lit + i)))) |
       st->tail[0]) != 0xffff)
    return 0;
  while (i > 0) {
    i -= 16;
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(
            _mm_loadu_si128((const __m128i *)(const void *)(p + i)),
            _mm_loadu_si128((const __m128i *)(const void *)(lit + i)))) !=
        0xffff)
      return 0;
  }
  return 1;
#else
  return memcmp(p, st->lit, st->n) == 0;
#endif
}

#ifdef __x86_64__
/* run_eq16() 32 bytes at a time (AVX2: match_avx2() alone calls it): a
 * run of up to 32 bytes, most of them, in one compare. */
static inline LAYOUT_AVX2 int run_eq32(const char *p, const struct step *st)
{
  const char *lit = st->lit;
  unsigned i = st->last[1];

  if (((unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
           _mm256_loadu_si256((const __m256i *)(const void *)(p + i)),
           _mm256_loadu_si256((const __m256i *)(const void *)(lit + i)))) |
       st->tail[1]) != 0xffffffffu)
    return 0;
  while (i > 0) {
    i -= 32;
    if ((unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
            _mm256_loadu_si256((const __m256i *)(const void *)(p + i)),
            _mm256_loadu_si256((const __m256i *)(const void *)(lit + i)))) !=
        0xffffffffu)
      return 0;
  }
  return 1;
}
#endif

/* 1 when the run of st is at p, by the width's pieces (wide: a constant
 * where match_with() is inlined). */
LAYOUT_INLINE int run_eq(const struct step *st, const char *p, int wide)
{
#ifdef __x86_64__
  if (wide)
    return run_eq32(p, st);
#endif
  return run_eq16(p, st);
}

/* A piece of a string's body at p, by its masks of quotes, backslashes
 * and bytes >= 0x80: 1 when a quote or a backslash is in it, with *at
 * the quote, or NULL for a backslash; 0 to go on. *hi gets the high
 * bytes before the stop. */
LAYOUT_INLINE int str_piece(const char *p, unsigned q, unsigned b, unsigned h,
                            unsigned *hi, const char **at)
{
  unsigned k;

  if ((q | b) == 0) {
    *hi |= h;
    return 0;
  }
  k = (unsigned)__builtin_ctz(q | b);
  *hi |= h & ((1u << k) - 1);
  *at = (b >> k) & 1 ? NULL : p + k;
  return 1;
}

/* The closing quote of a string whose body starts at p, or NULL when a
 * backslash comes first or fewer than 16 bytes are left to look at; *hi
 * gets the body's bytes >= 0x80 (non-zero when there is one). */
LAYOUT_INLINE const char *str_close(const char *p, const char *end,
                                    unsigned *hi)
{
  const char *at = NULL;
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
  __m128i v;

  for (; end - p >= 16; p += 16) {
    v = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (str_piece(p, (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)),
                  (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, bs)),
                  (unsigned)_mm_movemask_epi8(v), hi, &at))
      return at;
  }
#else
  for (; p < end; p++) {
    if (*p == '"')
      return p;
    if (*p == '\\')
      return NULL;
    *hi |= (unsigned char)*p & 0x80;
  }
#endif
  return at;
}

#ifdef __x86_64__
/* str_close() 32 bytes at a time, its last 16 to 31 bytes by str_close()
 * (AVX2: match_avx2() alone calls it). Names run to 30 bytes and more,
 * kernels' to hundreds: one compare where SSE2 takes two. */
static inline LAYOUT_AVX2 const char *str_close32(const char *p,
                                                  const char *end, unsigned *hi)
{
  const __m256i quote = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\');
  const char *at = NULL;
  __m256i v;

  for (; end - p >= 32; p += 32) {
    v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (str_piece(p,
                  (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)),
                  (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, bs)),
                  (unsigned)_mm256_movemask_epi8(v), hi, &at))
      return at;
  }
  return str_close(p, end, hi);
}
#endif

/* The closing quote of the string whose body starts at p, 32 bytes at a
 * time when wide (a constant where match_with() is inlined). */
LAYOUT_INLINE const char *str_end_of(const char *p, const char *end,
                                     unsigned *hi, int wide)
{
#ifdef __x86_64__
  if (wide)
    return str_close32(p, end, hi);
#endif
  (void)wide;
  return str_close(p, end, hi);
}

/* The end of the number or literal at p, as reader_event.c's get_tok()
 * finds it; NULL when it may go on past end. Mostly digits: eight at a
 * time first (8 bytes at p are readable). */
LAYOUT_INLINE const char *scalar_end(const char *p, const char *end)
{
  uint64_t x;
  unsigned k;

  memcpy(&x, p, 8);
  k = idx_leading_digits(x);
  if (k > 0 && k < 8 && !idx_scalar_byte(p[k]))
    return p + k;
  if (!idx_scalar_byte(*p))
    return NULL;
  while (p < end && idx_scalar_byte(*p))
    p++;
  return p < end ? p : NULL;
}

/* The end of the digits at p when a byte no number or literal has
 * follows them within 16 bytes, which is where skip_hole() ends them,
 * else NULL (16 bytes at p are readable). */
LAYOUT_INLINE const char *digits_end(const char *p)
{
#ifdef __SSE2__
  __m128i d = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)p),
                           _mm_set1_epi8('0'));
  unsigned k = (unsigned)__builtin_ctz(~(unsigned)_mm_movemask_epi8(
      _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d)));

  return k - 1 < 15 && !idx_scalar_byte(p[k]) ? p + k : NULL;
#else
  const char *q = p;

  while (q < p + 15 && *q >= '0' && *q <= '9')
    q++;
  return q > p && q < p + 15 && !idx_scalar_byte(*q) ? q : NULL;
#endif
}

/* The end of the value at p that reader_event.c's skip_value() would
 * skip, or NULL (strings with escapes are left to the token walk). */
static const char *skip_hole(const char *p, const char *end, unsigned room)
{
  struct idx_skip k;
  unsigned hi = 0;
  size_t used;

  if (*p == '"') {
    p = str_close(p + 1, end, &hi);
    return p != NULL ? p + 1 : NULL;
  }
  /* scalar_end() reads a word at p: fewer bytes left before end (a
   * source's slot ending just after the event) leave it to the walk. */
  if (idx_scalar_byte(*p))
    return end - p >= 8 ? scalar_end(p, end) : NULL;
  if (*p != '[' && *p != '{')
    return NULL;
  idx_skip_init(&k);
  if (idx_skip_run(&k, p, end, room, &used) != IDX_P_OK)
    return NULL;
  return p + used;
}

/* idx_num_fast() out of line: where a hole's number is not of the
 * shapes read inline (and for learning), so that the match keeps its
 * registers. */
static __attribute__((noinline)) const char *
num_at(const char *p, const char *end, unsigned scale, int64_t *v)
{
  return idx_num_fast(p, end, scale, v);
}

/* The integer at p as idx_num_fast() reads it: 1 to 7 digits and no
 * fraction or exponent by one word (8 bytes at p are readable), or no work
 * at all when its bytes and the one after them are the last ones'. */
LAYOUT_INLINE const char *int_at(struct step *st, const char *p,
                                 const char *end, int64_t *v)
{
  uint64_t x;
  unsigned k;

  memcpy(&x, p, 8);
  if (st->memo_k != 0 && ((x ^ st->memo_x) & st->memo_mask) == 0) {
    *v = st->memo_v;
    return p + st->memo_k;
  }
  k = idx_leading_digits(x);
  if (k > 0 && k < 8 && p[k] != '.' && (p[k] | 0x20) != 'e') {
    *v = (int64_t)idx_eight_digits(idx_top_digits(x, k));
    st->memo_x = x;
    st->memo_mask = ~0ull >> (56 - 8 * k);
    st->memo_v = *v;
    st->memo_k = k;
    return p + k;
  }
  return num_at(p, end, 0, v);
}

/* ts or dur in microseconds at p, as idx_num_fast(p, end, 3) reads it
 * (its word-at-a-time path unrolled for scale 3), the first eight digits
 * of a long one not converted again when they are the last ones'. */
LAYOUT_INLINE const char *us_at(struct step *st, const char *p, const char *end,
                                int64_t *v)
{
  const uint64_t zeros = 0x3030303030303030ull;
  uint64_t x, acc;
  unsigned k, f;
  const char *q;

  if (end - p < 34)
    return num_at(p, end, 3, v);
  memcpy(&x, p, 8);
  k = idx_leading_digits(x);
  if (k == 8) {
    if (x != st->memo_x) {
      st->memo_x = x;
      st->memo_v = (int64_t)idx_eight_digits(x - zeros);
    }
    acc = (uint64_t)st->memo_v;
    memcpy(&x, p + 8, 8);
    k = idx_leading_digits(x);
    if (k == 8) /* 16 digits or more */
      return num_at(p, end, 3, v);
    acc = acc * idx_pow10[k] + idx_eight_digits(idx_top_digits(x, k));
    q = p + 8 + k;
  } else {
    if (k == 0) /* '-', or no number */
      return num_at(p, end, 3, v);
    acc = idx_eight_digits(idx_top_digits(x, k));
    q = p + k;
  }
  acc *= 1000; /* at most 15 digits: no overflow */
  if (*q == '.') {
    memcpy(&x, q + 1, 8);
    f = idx_leading_digits(x);
    if (f == 3) { /* kineto's "%.3f": the ns digits, read as they are */
      x -= zeros;
      acc += (x & 0xff) * 100 + (x >> 8 & 0xff) * 10 + (x >> 16 & 0xff);
    } else {
      if (f == 0 || f == 8)
        return num_at(p, end, 3, v);
      k = f < 3 ? f : 3; /* digits past the ns are truncated */
      acc += idx_eight_digits(idx_top_digits(x, k)) * idx_pow10[3 - k];
    }
    q += 1 + f;
  }
  if (*q == 'e' || *q == 'E')
    return NULL;
  *v = (int64_t)acc;
  return q;
}

#ifdef __x86_64__
/* Loaded from byte k (1 to 16): the shuffle that moves the first k bytes
 * of a vector to its end, zeros before them. */
static const int8_t digits_tail[32] = { -1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, -1, -1, -1, -1, -1, -1, -1,
                                        0,  1,  2,  3,  4,  5,  6,  7,
                                        8,  9,  10, 11, 12, 13, 14, 15 };

/* The value of the first k (1 to 16) digits of d (digit values, not
 * characters): moved to the vector's end, then pairs, fours and eights
 * of them summed by multiply-adds (Lemire's, as in simdjson). */
static inline LAYOUT_AVX2 uint64_t digits16(__m128i d, unsigned k)
{
  __m128i a = _mm_shuffle_epi8(
      d, _mm_loadu_si128((const __m128i *)(const void *)(digits_tail + k)));
  uint64_t r;

  a = _mm_maddubs_epi16(a, _mm_set1_epi16(0x010a));
  a = _mm_madd_epi16(a, _mm_set1_epi32(0x00010064));
  a = _mm_packus_epi32(a, a);
  a = _mm_madd_epi16(a, _mm_set1_epi32(0x00012710));
  r = (uint64_t)_mm_cvtsi128_si64(a);
  return (r & 0xffffffffu) * 100000000u + (r >> 32);
}

/* us_at() 32 bytes at a time (AVX2: match_avx2() alone calls it): which
 * bytes are digits from one compare, the integer part (up to 16 digits,
 * all idx_num_fast() takes at scale 3) by digits16(), the first three of
 * the fraction from one word. */
static inline LAYOUT_AVX2 const char *us_at32(const char *p, const char *end,
                                              int64_t *v)
{
  __m256i d;
  uint64_t dig, acc, x;
  unsigned k, f;
  const char *q;

  if (end - p < 34)
    return num_at(p, end, 3, v);
  d = _mm256_sub_epi8(_mm256_loadu_si256((const __m256i *)(const void *)p),
                      _mm256_set1_epi8('0'));
  dig = (uint32_t)_mm256_movemask_epi8(
      _mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8(9)), d));
  k = (unsigned)__builtin_ctzll(~dig);
  if (k - 1 >= 16) /* '-', no number, or more digits than scale 3 takes */
    return num_at(p, end, 3, v);
  acc = digits16(_mm256_castsi256_si128(d), k) * 1000; /* < 2^64 */
  q = p + k;
  if (*q == '.') {
    f = (unsigned)__builtin_ctzll(~(dig >> (k + 1)));
    if (f == 0 || k + 1 + f >= 32) /* none, or they may go on */
      return num_at(p, end, 3, v);
    /* Digits past the ns are truncated; fewer count as zeros after. */
    memcpy(&x, q + 1, 8);
    x = (x - 0x3030303030303030ull) & (~0ull >> (64 - 8 * (f < 3 ? f : 3)));
    acc += (x & 0xff) * 100 + (x >> 8 & 0xff) * 10 + (x >> 16 & 0xff);
    q += 1 + f;
  }
  if (*q == 'e' || *q == 'E' || acc > (uint64_t)INT64_MAX)
    return NULL;
  *v = (int64_t)acc;
  return q;
}
#endif

/* ts or dur in microseconds at p, by the width's reader. */
LAYOUT_INLINE const char *us_of(struct step *st, const char *p, const char *end,
                                int64_t *v, int wide)
{
#ifdef __x86_64__
  if (wide)
    return us_at32(p, end, v);
#endif
  (void)wide;
  return us_at(st, p, end, v);
}

/* ts or dur read at p into t (what the token walk's time_val() sets). */
LAYOUT_INLINE const char *time_at(const char *p, const char *q, int64_t v,
                                  struct idx_numtok *t)
{
  if (q == NULL)
    return NULL;
  memset(t, 0, sizeof(*t));
  t->p = p;
  t->n = (size_t)(q - p);
  t->present = t->done = 1;
  t->val = v;
  return q;
}

/* A kept string's body at p, into st's field: its end (the next run
 * starts with the closing quote), or NULL. */
LAYOUT_INLINE const char *str_fill(const struct step *st, const char *p,
                                   const char *end, struct idx_parsed *e,
                                   int wide)
{
  struct idx_str *s;
  const char *q;
  unsigned hi = 0;

  q = str_end_of(p, end, &hi, wide);
  if (q == NULL || (hi != 0 && !tr_utf8_valid(p, (size_t)(q - p))))
    return NULL;
  s = AT(e, st->field, struct idx_str);
  s->p = p;
  s->n = (size_t)(q - p);
  return q;
}

/* A value only skipped at p, a string in the learnt event: its end. */
LAYOUT_INLINE const char *skip_str(const struct step *st, const char *p,
                                   const char *end, int wide)
{
  const char *q;
  unsigned hi = 0;

  if (*p == '"' && (q = str_end_of(p + 1, end, &hi, wide)) != NULL)
    return q + 1;
  return skip_hole(p, end, st->room);
}

/* The constants of st's run, which starts at p. */
static void set_consts(const struct idx_layout *l, const struct step *st,
                       const char *p, struct idx_parsed *e)
{
  const struct cst *c = &l->cst[st->c0], *last = c + st->nc;
  struct idx_str *s;

  for (; c < last; c++) {
    s = AT(e, c->field, struct idx_str);
    s->p = p + c->off;
    s->n = c->n;
  }
}

#ifdef __x86_64__
/* idx_parsed_reset() by 32-byte stores (AVX2: match_avx2() alone calls
 * it), fewer by half. */
static inline LAYOUT_AVX2 void reset32(struct idx_parsed *e)
{
  char *d = (char *)&e->ev;
  size_t i;

#pragma GCC unroll 16
  for (i = 0; i + 32 <= sizeof(e->ev); i += 32) {
    __asm__("" : "+r"(d)); /* no rep stos: read_int.h */
    _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_setzero_si256());
  }
  if (i < sizeof(e->ev))
    _mm_storeu_si128((__m128i *)(void *)(d + i), _mm_setzero_si128());
  idx_parsed_reset_rest(e);
}
#endif

/* The event reset by the width's stores. */
LAYOUT_INLINE void reset(struct idx_parsed *e, int wide)
{
#ifdef __x86_64__
  if (wide) {
    reset32(e);
    return;
  }
#endif
  idx_parsed_reset(e);
}

/* The event at p against l: 1 with *close at its '}'. A number's end is
 * not checked against the next byte: the next run starts with a byte that
 * cannot go on a number (it came after one in the learnt event). Each run
 * needs 16 bytes after it (step.need), so the hole's first 16 bytes are
 * readable. An integer's flag is set once all holes are read. */
LAYOUT_INLINE int match_with(struct idx_layout *l, const char *p,
                             const char *end, struct idx_parsed *e,
                             const char **close, int wide)
{
  struct step *st = l->step;
  /* The last place a run may start: its pieces, and the hole's first 16
   * bytes, are then readable, whichever run it is. An event that ends
   * closer to end than its longest run's need goes the token walk. */
  const uintptr_t last = (uintptr_t)end - l->need[wide];
  const char *q;
  unsigned hole;
  int64_t v;

  /* Most layouts that miss an event miss it in the first run (its ph and
   * cat are there): the event is reset only once that run is. */
  if ((uintptr_t)p > last || !run_eq(st, p, wide))
    return 0;
  reset(e, wide);
  for (;;) {
    p += st->n;
    hole = st->hole;
  again:
    switch (hole & (2 * H_CONSTS - 1)) {
    case H_END: goto matched;
    case H_STR: p = str_fill(st, p, end, e, wide); break;
    case H_INT:
      if ((p = int_at(st, p, end, &v)) != NULL)
        *AT(e, st->field, int64_t) = v;
      break;
    case H_TIME_US:
      q = us_of(st, p, end, &v, wide);
      p = time_at(p, q, v, AT(e, st->field, struct idx_numtok));
      break;
    case H_TIME_NS:
      q = num_at(p, end, 0, &v);
      p = time_at(p, q, v, AT(e, st->field, struct idx_numtok));
      break;
    case H_SKIP_NUM:
      q = digits_end(p);
      p = q != NULL ? q : skip_hole(p, end, st->room);
      break;
    case H_SKIP_STR: p = skip_str(st, p, end, wide); break;
    case H_SKIP: p = skip_hole(p, end, st->room); break;
    case H_END | H_CONSTS:
    case H_STR | H_CONSTS:
    case H_INT | H_CONSTS:
    case H_TIME_US | H_CONSTS:
    case H_TIME_NS | H_CONSTS:
    case H_SKIP_NUM | H_CONSTS:
    case H_SKIP_STR | H_CONSTS:
    case H_SKIP | H_CONSTS:
      set_consts(l, st, p - st->n, e);
      hole ^= H_CONSTS;
      goto again;
    default: __builtin_unreachable(); /* hole < 2 * H_CONSTS */
    }
    if (p == NULL)
      return 0;
    st++;
    if ((uintptr_t)p > last || !run_eq(st, p, wide))
      return 0;
  }
matched:
  *close = p - 1;
  e->ev.ph = l->ph;
  e->ev.cat_class = l->cat_class;
  e->ev.has = l->has; /* reset: none before */
  e->xhas = l->xhas;
  e->co_id = l->co_id;
  if (l->xhas != 0)
    idx_finish_event(e);
  return 1;
}

/* ---- judging (idx_reader_judge()) ---- */

/* Whether the event at p, up to close (its '}'), is l's literal runs with
 * one strict JSON value in each hole (a strict string's body in a kept
 * string's hole, its quotes being the runs' bytes either side), as
 * end_of() delimits the values: the runs are compared again at the ends
 * it finds, so the answer does not rest on where fill() ended them. */
static int holes_strict(const struct idx_layout *l, const char *p,
                        const char *close, const char *end,
                        idx_strict_fn end_of)
{
  const struct step *st;
  const char *q;

  for (st = l->step;; st++) {
    if (end - p < (ptrdiff_t)st->need[0] || !run_eq(st, p, 0))
      return 0;
    p += st->n;
    if ((st->hole & ~H_CONSTS) == H_END)
      return p == close + 1;
    if ((st->hole & ~H_CONSTS) == H_STR) {
      q = end_of(p - 1, close);
      p = q != NULL ? q - 1 : NULL; /* the next run starts at its quote */
    } else {
      p = end_of(p, close);
    }
    if (p == NULL)
      return 0;
  }
}

/*
 * Whether the event at p that l matched (its '}' at close, the buffer
 * readable up to end) is strict JSON. Why its holes suffice once l is
 * judged: each hole of l is a value's place in the event l was learnt
 * from (build()), so in any event of l's runs with one whole strict value
 * in each hole, the runs are the same bytes in the same places of the same
 * tree, strict or not whatever the holes hold. The first such event of l
 * is judged whole, once, and its verdict is l's. Nesting needs no look:
 * the reader hands over no event nested past IDX_MAX_DEPTH counted from
 * the document's root, so none reaches the judge's limit, counted from
 * the event's '{'.
 */
static int judged(struct idx_layout *l, const char *p, const char *close,
                  const char *end, idx_strict_fn end_of)
{
  if (l->strict < 0 || !holes_strict(l, p, close, end, end_of))
    return 0;
  if (l->strict == 0)
    l->strict = end_of(p, close + 1) == close + 1 ? 1 : -1;
  return l->strict > 0;
}

static int match_narrow(struct idx_layout *l, const char *p, const char *end,
                        struct idx_parsed *e, const char **close)
{
  return match_with(l, p, end, e, close, 0);
}

#ifdef __x86_64__
static LAYOUT_AVX2 int match_avx2(struct idx_layout *l, const char *p,
                                  const char *end, struct idx_parsed *e,
                                  const char **close)
{
  return match_with(l, p, end, e, close, 1);
}
#endif

/* The event at p against l, by the width t was learnt with (t->wide is
 * set only where the CPU has AVX2: idx_scan_wide()). */
static int match(const struct idx_layouts *t, struct idx_layout *l,
                 const char *p, const char *end, struct idx_parsed *e,
                 const char **close)
{
#ifdef __x86_64__
  if (t->wide)
    return match_avx2(l, p, end, e, close);
#endif
  return match_narrow(l, p, end, e, close);
}

/* The event at p against t's layouts past the most recently matched: 1
 * when one matches, which then goes first. */
static __attribute__((noinline)) int
match_others(struct idx_layouts *t, const char *p, const char *end,
             struct idx_parsed *e, const char **close)
{
  struct idx_layout *l;
  unsigned i;

  for (i = 1; i < t->n; i++) {
    if (!match(t, t->l[i], p, end, e, close))
      continue;
    l = t->l[i];
    memmove(&t->l[1], &t->l[0], i * sizeof(t->l[0]));
    t->l[0] = l;
    return 1;
  }
  return 0;
}

/* The event at p against t's layouts, the most recently matched inlined
 * (most events are of the kind before them): no call but this one for
 * them. Not inlined itself: its caller stays a jump. */
static __attribute__((noinline)) int
first_narrow(struct idx_layouts *t, const char *p, const char *end,
             struct idx_parsed *e, const char **close)
{
  return match_with(t->l[0], p, end, e, close, 0) ||
         match_others(t, p, end, e, close);
}

#ifdef __x86_64__
static LAYOUT_AVX2 int first_avx2(struct idx_layouts *t, const char *p,
                                  const char *end, struct idx_parsed *e,
                                  const char **close)
{
  return match_with(t->l[0], p, end, e, close, 1) ||
         match_others(t, p, end, e, close);
}
#endif

/* ---- learning ---- */

/* A layout being learnt from the event text [s, close]. */
struct build {
  struct idx_layout *l;
  const char *run;   /* the current literal run's first byte */
  unsigned c0;       /* its first constant */
  const char *close; /* the event's '}' */
  const char *end;   /* numbers may be read up to here */
  unsigned depth;    /* the event's nesting */
  int scale;
};

static const char *ws(const char *p, const char *close)
{
  while (p < close && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}

/* Ends the current run at p with a hole of the given kind; the next run
 * starts where the caller says. NULL when the layout is full. */
static struct step *cut(struct build *b, const char *p, int hole)
{
  struct idx_layout *l = b->l;
  size_t n = (size_t)(p - b->run), at = l->nbytes, w;
  struct step *st;
  int i;

  if (n == 0 || l->nsteps == LAYOUT_STEPS || at + n + 32 > LAYOUT_BYTES)
    return NULL;
  st = &l->step[l->nsteps++];
  memset(st, 0, sizeof(*st));
  memcpy(l->bytes + at, b->run, n);
  memset(l->bytes + at + n, 0, 32); /* what its last piece reads past it */
  st->lit = l->bytes + at;
  st->n = (uint16_t)n;
  for (i = 0, w = 16; i < 2; i++, w *= 2) {
    st->last[i] = (uint16_t)((n - 1) / w * w);
    st->tail[i] =
        (uint32_t)(~0ull << (n - st->last[i])) & (uint32_t)(~0ull >> (64 - w));
    st->need[i] =
        (uint16_t)(st->last[i] + w > n + 16 ? st->last[i] + w : n + 16);
    if (st->need[i] > l->need[i])
      l->need[i] = st->need[i];
  }
  st->hole = (uint8_t)(hole | (l->ncst > b->c0 ? H_CONSTS : 0));
  st->c0 = (uint8_t)b->c0;
  st->nc = (uint8_t)(l->ncst - b->c0);
  b->c0 = l->ncst;
  l->nbytes = (unsigned)(at + n);
  return st;
}

/* The closing quote of the string at v, or NULL (the event has no
 * backslash: the first quote closes it). */
static const char *str_at(const struct build *b, const char *v)
{
  if (*v != '"')
    return NULL;
  return memchr(v + 1, '"', (size_t)(b->close - v - 1));
}

#define OFF(member) offsetof(struct idx_parsed, member)

/* A constant string (ph, cat) at v: NULL, or the byte after it. */
static const char *constant(struct build *b, const char *v, uint16_t field)
{
  const char *q = str_at(b, v);
  struct idx_layout *l = b->l;
  struct cst *c;

  if (q == NULL)
    return NULL;
  if (field == OFF(ev.ph)) {
    l->ph = q - v - 1 > 0 ? v[1] : 0;
    return q + 1;
  }
  if (l->ncst == LAYOUT_CONSTS)
    return NULL;
  c = &l->cst[l->ncst++];
  c->field = field;
  c->off = (uint16_t)(v + 1 - b->run);
  c->n = (uint16_t)(q - v - 1);
  return q + 1; /* the run goes on: its step, once cut, has c */
}

/* A kept string at v: a hole for its body. */
static const char *str_hole(struct build *b, const char *v, size_t field)
{
  const char *q = str_at(b, v);
  struct step *st;

  if (q == NULL || (st = cut(b, v + 1, H_STR)) == NULL)
    return NULL;
  st->field = (uint16_t)field;
  b->run = q;
  return q + 1;
}

/* A number at v read at scale (0 for integers): a hole. */
static struct step *num_hole(struct build *b, const char *v, int hole,
                             const char **after)
{
  int64_t val;
  const char *q = num_at(v, b->end, hole == H_TIME_US ? 3 : 0, &val);
  struct step *st;

  if (q == NULL || q >= b->close || idx_scalar_byte(*q) ||
      (st = cut(b, v, hole)) == NULL)
    return NULL;
  b->run = *after = q;
  return st;
}

/* An integer field at v (offsets into struct idx_parsed). */
static const char *int_hole(struct build *b, const char *v, size_t field,
                            size_t has, uint32_t bit, int coid)
{
  const char *after;
  struct step *st = num_hole(b, v, H_INT, &after);

  if (st == NULL)
    return NULL;
  st->field = (uint16_t)field;
  if (has == OFF(xhas))
    b->l->xhas |= bit;
  else
    b->l->has |= bit;
  b->l->co_id |= coid;
  return after;
}

/* A value only skipped, at v, inside `levels` containers of the event. */
static const char *skip_at(struct build *b, const char *v, unsigned levels)
{
  unsigned room = IDX_MAX_DEPTH - (b->depth + levels);
  const char *q = skip_hole(v, b->end, room);
  int hole = idx_scalar_byte(*v) ? H_SKIP_NUM : *v == '"' ? H_SKIP_STR : H_SKIP;
  struct step *st;

  if (q == NULL || q > b->close || (st = cut(b, v, hole)) == NULL)
    return NULL;
  st->room = room;
  b->run = q;
  return q;
}

/* grid / block: exactly [x, y, z] of plain integers (else no layout:
 * reader_event.c reads each element, and may mark the event bad). */
static const char *dim3_holes(struct build *b, const char *v, size_t field,
                              uint32_t bit)
{
  const char *p = v;
  int i;

  if (*p != '[')
    return NULL;
  for (i = 0; i < 3; i++) {
    p = ws(p + 1, b->close);
    p = int_hole(b, p, field + (size_t)i * sizeof(int64_t), OFF(ev.has), bit,
                 0);
    if (p == NULL)
      return NULL;
    p = ws(p, b->close);
    if (*p != (i < 2 ? ',' : ']'))
      return NULL;
  }
  return p + 1;
}

/* A member of args at v (reader_event.c's on_arg). */
static const char *arg_value(struct build *b, int key, const char *v)
{
  struct idx_parsed e;
  struct idx_slot s;

  if (idx_arg_slot(&e, key, &s))
    return int_hole(b, v, (size_t)((char *)s.dst - (char *)&e),
                    (size_t)((char *)s.has - (char *)&e), s.bit,
                    key == IDX_A_COID);
  switch (key) {
  case IDX_A_GRID: return dim3_holes(b, v, OFF(ev.grid), IDX_HAS_GRID);
  case IDX_A_BLOCK: return dim3_holes(b, v, OFF(ev.block), IDX_HAS_BLOCK);
  case IDX_A_KIND: return str_hole(b, v, OFF(ev.kind));
  case IDX_A_KERNEL: return str_hole(b, v, OFF(ev.kernel));
  case IDX_A_NAME: return str_hole(b, v, OFF(ev.arg_name));
  default: return skip_at(b, v, 2);
  }
}

/* A member of the event but args at v (reader_event.c's on_event_key). */
static const char *member_value(struct build *b, int key, const char *v)
{
  switch (key) {
  case IDX_K_PH: return constant(b, v, OFF(ev.ph));
  case IDX_K_CAT: return constant(b, v, OFF(ev.cat));
  case IDX_K_NAME: return str_hole(b, v, OFF(ev.name));
  case IDX_K_PID:
    if (*v == '"')
      return str_hole(b, v, OFF(ev.pid_str));
    return int_hole(b, v, OFF(ev.pid), OFF(ev.has), IDX_HAS_PID, 0);
  case IDX_K_TID:
    if (*v == '"')
      return str_hole(b, v, OFF(ev.tid_str));
    return int_hole(b, v, OFF(ev.tid), OFF(ev.has), IDX_HAS_TID, 0);
  case IDX_K_TS:
  case IDX_K_DUR: {
    const char *after;
    struct step *st =
        num_hole(b, v, b->scale == 3 ? H_TIME_US : H_TIME_NS, &after);

    if (st == NULL)
      return NULL;
    st->field = (uint16_t)(key == IDX_K_TS ? OFF(ts) : OFF(dur));
    return after;
  }
  case IDX_K_ARGS: return NULL; /* args that is no object */
  default: return skip_at(b, v, 1);
  }
}

/* One member at p (its key's opening quote): the byte after its value, or
 * NULL. *in_args is set when it opens args. */
static const char *member(struct build *b, const char *p, int *in_args)
{
  const char *k = p + 1, *q = str_at(b, p), *v;
  int key;

  if (q == NULL)
    return NULL;
  p = ws(q + 1, b->close);
  if (*p != ':')
    return NULL;
  v = ws(p + 1, b->close);
  if (*in_args)
    return arg_value(b, idx_arg_key(k, (size_t)(q - k)), v);
  key = idx_event_key(k, (size_t)(q - k));
  if (key == IDX_K_ARGS && *v == '{') {
    *in_args = 1;
    return v + 1;
  }
  return member_value(b, key, v);
}

/* Learns l from the event [s, close]: 1, or 0 when it has a shape no
 * layout holds (escapes or bytes >= 0x80 anywhere, a field of another
 * type than a layout reads, too many members). The loop is
 * reader_event.c's obj_each() over the event and its args. */
static int build(struct idx_layout *l, const char *s, const char *close,
                 const char *end, unsigned depth, int scale)
{
  struct build b = { l, s, 0, close, end, depth, scale };
  const char *p;
  int in_args = 0, opened;

  memset(l, 0, offsetof(struct idx_layout, bytes));
  if (scale != 3 && scale != 0) /* the holes know these two units */
    return 0;
  for (p = s; p <= close; p++)
    if (*p == '\\' || (unsigned char)*p >= 0x80)
      return 0;
  if (*s != '{')
    return 0;
  p = ws(s + 1, close);
  for (;;) {
    if (*p == '}') {
      if (!in_args)
        break;
      in_args = 0;
      p = ws(p + 1, close);
    } else {
      opened = in_args;
      if (*p != '"' || (p = member(&b, p, &in_args)) == NULL)
        return 0;
      p = ws(p, close);
      if (in_args && !opened)
        continue; /* args opened: its members come next */
    }
    if (*p == ',')
      p = ws(p + 1, close);
    else if (*p != '}')
      return 0;
  }
  return p == close && cut(&b, close + 1, H_END) != NULL;
}

/* ---- checking what was learnt ---- */

static int same_str(struct idx_str a, struct idx_str b)
{
  return a.p == b.p && a.n == b.n;
}

static int same_time(const struct idx_numtok *a, const struct idx_numtok *b)
{
  if (a->present != b->present)
    return 0;
  return !a->present || (a->done == b->done && a->val == b->val &&
                         a->p == b->p && a->n == b->n);
}

/* 1 when a and b hand over the same event (the fields the parsers set). */
static int same_parsed(const struct idx_parsed *a, const struct idx_parsed *b)
{
  const struct idx_event *x = &a->ev, *y = &b->ev;
  const uint32_t xs = a->xhas;

  return x->ph == y->ph && x->has == y->has && same_str(x->name, y->name) &&
         same_str(x->cat, y->cat) && same_str(x->pid_str, y->pid_str) &&
         same_str(x->tid_str, y->tid_str) && same_str(x->kind, y->kind) &&
         same_str(x->kernel, y->kernel) && same_str(x->arg_name, y->arg_name) &&
         x->pid == y->pid && x->tid == y->tid &&
         x->correlation == y->correlation && x->external_id == y->external_id &&
         x->device == y->device && x->stream == y->stream &&
         x->registers == y->registers && x->shared_bytes == y->shared_bytes &&
         x->bytes == y->bytes &&
         memcmp(x->grid, y->grid, sizeof(x->grid)) == 0 &&
         memcmp(x->block, y->block, sizeof(x->block)) == 0 &&
         same_time(&a->ts, &b->ts) && same_time(&a->dur, &b->dur) &&
         a->bad == b->bad && a->co_id == b->co_id && xs == b->xhas &&
         (!(xs & IDX_X_SIZE) || a->size == b->size) &&
         (!(xs & IDX_X_DYN) || a->dyn_shared == b->dyn_shared) &&
         (!(xs & IDX_X_STATIC) || a->static_shared == b->static_shared);
}

/* ---- the table ---- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
/* Read by every reader thread, set by idx_layouts_select() (tests, the
 * benchmarks) while others may read: atomic. */
static atomic_int enabled = 1;

static void read_env(void)
{
  const char *env = getenv("TRACED_LAYOUTS");

  if (env != NULL && strcmp(env, "off") == 0)
    atomic_store_explicit(&enabled, 0, memory_order_relaxed);
}

void idx_layouts_select(int on)
{
  pthread_once(&once, read_env);
  atomic_store_explicit(&enabled, on, memory_order_relaxed);
}

int idx_layouts_enabled(void)
{
  pthread_once(&once, read_env);
  return atomic_load_explicit(&enabled, memory_order_relaxed);
}

/* Forgets every layout: they were learnt for another nesting or unit. */
static void forget(struct idx_layouts *t, unsigned depth, int scale)
{
  while (t->n > 0)
    free(t->l[--t->n]);
  t->depth = depth;
  t->scale = scale;
  t->wide = idx_scan_wide();
}

/* idx_layouts_match() where the common case is not: layouts of another
 * nesting or unit to forget, none yet, or the strict events to mark. */
static __attribute__((noinline)) int
match_slow(struct idx_layouts *t, const char *p, const char *end,
           unsigned depth, int scale, struct idx_parsed *e, const char **close)
{
  if (t->depth != depth || t->scale != scale)
    forget(t, depth, scale);
  if (t->n == 0 || !(match(t, t->l[0], p, end, e, close) ||
                     match_others(t, p, end, e, close)))
    return 0;
  if (t->strict != NULL) /* t->l[0] matched */
    e->ev.strict = (char)judged(t->l[0], p, *close, end, t->strict);
  return 1;
}

int idx_layouts_match(struct idx_layouts *t, const char *p, const char *end,
                      unsigned depth, int scale, struct idx_parsed *e,
                      const char **close)
{
  if (__builtin_expect(t->depth != depth || t->scale != scale || t->n == 0 ||
                           t->strict != NULL,
                       0))
    return match_slow(t, p, end, depth, scale, e, close);
#ifdef __x86_64__
  if (t->wide)
    return first_avx2(t, p, end, e, close);
#endif
  return first_narrow(t, p, end, e, close);
}

void idx_layouts_learn(struct idx_layouts *t, const char *p, const char *close,
                       const char *end, unsigned depth, int scale,
                       const struct idx_parsed *walked)
{
  struct idx_parsed again;
  const char *at;
  struct idx_layout *l;

  if (t->depth != depth || t->scale != scale)
    forget(t, depth, scale);
  if (t->wait > 0) {
    t->wait--;
    return;
  }
  l = t->spare != NULL ? t->spare : malloc(sizeof(*l));
  t->spare = l;
  if (l == NULL)
    return;
  if (!build(l, p, close, end, t->depth, t->scale) ||
      !match(t, l, p, end, &again, &at) || at != close ||
      !same_parsed(&again, walked)) {
    /* Events of a shape no layout holds: try again later, less often
     * each time, so that a trace of them pays little for the tries. */
    t->fails += t->fails < 12;
    t->wait = 1u << t->fails;
    return;
  }
  /* The walked event's cat_class is 0: the class is looked up. */
  l->cat_class =
      (char)(idx_format_get(IDX_FORMAT_KINETO)->classify(&walked->ev) + 1);
  t->fails = 0;
  t->spare = t->n == IDX_LAYOUTS ? t->l[--t->n] : NULL;
  memmove(&t->l[1], &t->l[0], t->n * sizeof(t->l[0]));
  t->l[0] = l;
  t->n++;
}

void idx_layouts_free(struct idx_layouts *t)
{
  if (t == NULL)
    return;
  forget(t, 0, 0);
  free(t->spare);
  t->spare = NULL;
}
