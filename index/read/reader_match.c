/*
 * Matching events against their layouts (read_int.h; reader_layout.c
 * says what a layout is, learns them and why a match reads what
 * reader_event.c reads): each literal run compared with the event, 32
 * bytes at a time where the CPU has AVX2 (idx_scan_wide()) else 16, and
 * each hole read by its kind (numbers, strings and skipped arrays and
 * objects by vectors too where AVX2 is). This is the reader's hottest code,
 * once for most events of a trace: the most recently matched layout is matched
 * inline, the holes' flags are the layout's, set at the end.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "common/text.h"
#include "index/read/read_int.h"

/* What a match runs, inlined into both of its widths (match_with()):
 * GCC does not inline a function into one of another target unless told
 * to. */
#define LAYOUT_INLINE static inline __attribute__((always_inline))

#ifdef __x86_64__
#define LAYOUT_AVX2 __attribute__((target("avx2")))
#endif

/* ---- matching ---- */

#ifdef __SSE2__
/* The bytes the holes' vectors compare with, 32 of each, read from
 * memory by the instruction that uses them: GCC builds a set1_epi8() of
 * a constant in a general register and broadcasts it, three instructions
 * each time a hole is read (a few hundred million on a big trace). */
static const char rep_quote[32] = { [0 ... 31] = '"' };
static const char rep_bs[32] = { [0 ... 31] = '\\' };
static const char rep_zero[32] = { [0 ... 31] = '0' };
static const char rep_nine[32] = { [0 ... 31] = 9 };

/* 16 bytes of one of them; the empty asm hides which, or GCC sees the
 * constant again and broadcasts it. */
LAYOUT_INLINE __m128i rep16(const char *rep)
{
  __asm__("" : "+r"(rep));
  return _mm_loadu_si128((const __m128i *)(const void *)rep);
}
#endif

/* 1 when the run of st is at p: its pieces compared 16 bytes at a time
 * (p may be read 15 bytes past the run). */
LAYOUT_INLINE int run_eq16(const char *p, const struct idx_step *st)
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
/* All 32 bytes of one of them (AVX2). */
static inline LAYOUT_AVX2 __m256i rep32(const char *rep)
{
  __asm__("" : "+r"(rep));
  return _mm256_loadu_si256((const __m256i *)(const void *)rep);
}

/* run_eq16() 32 bytes at a time (AVX2: match_avx2() alone calls it): a
 * run of up to 32 bytes, most of them, in one compare. */
static inline LAYOUT_AVX2 int run_eq32(const char *p, const struct idx_step *st)
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
LAYOUT_INLINE int run_eq(const struct idx_step *st, const char *p, int wide)
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
  const __m128i quote = rep16(rep_quote), bs = rep16(rep_bs);
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
  const __m256i quote = rep32(rep_quote), bs = rep32(rep_bs);
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
 * follows them within 16 bytes, which is where idx_layout_skip() ends them,
 * else NULL (16 bytes at p are readable). */
LAYOUT_INLINE const char *digits_end(const char *p)
{
#ifdef __SSE2__
  __m128i d = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)p),
                           rep16(rep_zero));
  unsigned k = (unsigned)__builtin_ctz(~(unsigned)_mm_movemask_epi8(
      _mm_cmpeq_epi8(_mm_min_epu8(d, rep16(rep_nine)), d)));

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
const char *idx_layout_skip(const char *p, const char *end, unsigned room)
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

#ifdef __x86_64__
/* Outside strings, a byte's low and high nibble, looked up: a bit in
 * common when the skipper (reader_event.c's cls) takes it in an array or
 * object (whitespace, quote, bracket, separator, number or literal).
 * Classes of high nibble: 0, 2, 3, 4 or 6, 5 or 7 (none from 8 on). */
static const int8_t allowed_lo[16] = { 0x16, 0x1c, 0x1e, 0x1c, 0x1c, 0x1c,
                                       0x1c, 0x1c, 0x1c, 0x1d, 0x1d, 0x1a,
                                       0x0a, 0x1b, 0x0a, 0x08 };
static const int8_t allowed_hi[16] = { 0x01, 0,    0x02, 0x04,
                                       0x08, 0x10, 0x08, 0x10 };

/* The bytes of v outside the skipper's classes, as a mask. */
static inline LAYOUT_AVX2 uint32_t not_allowed(__m256i v)
{
  const __m256i lo = _mm256_broadcastsi128_si256(
                    _mm_loadu_si128((const __m128i *)(const void *)allowed_lo)),
                hi = _mm256_broadcastsi128_si256(
                    _mm_loadu_si128((const __m128i *)(const void *)allowed_hi)),
                low4 = _mm256_set1_epi8(0x0f);
  __m256i c = _mm256_and_si256(
      _mm256_shuffle_epi8(lo, _mm256_and_si256(v, low4)),
      _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4)));

  return (uint32_t)_mm256_movemask_epi8(
      _mm256_cmpeq_epi8(c, _mm256_setzero_si256()));
}

/* Bit i set when an odd number of the bits of q up to i are: the bytes
 * from an opening quote to before its closing one. */
static inline uint32_t prefix_xor(uint32_t q)
{
  q ^= q << 1;
  q ^= q << 2;
  q ^= q << 4;
  q ^= q << 8;
  return q ^ q << 16;
}

/* The array or object at p (its '[' or '{') skipped as idx_skip_run()
 * skips it, 32 bytes at a time (AVX2: match_avx2() alone calls it): the
 * strings by their quotes' masks, the brackets one by one. Anything
 * else (a backslash, a byte outside the skipper's classes, brackets that
 * do not pair, more levels than room or than 64, fewer than 32 bytes
 * left) is left to idx_layout_skip(), whose answer it is then. */
static LAYOUT_AVX2 __attribute__((noinline)) const char *
container_end32(const char *p, const char *end, unsigned room)
{
  const char *s = p;
  uint64_t arrays = 0; /* bit d: the level d is an array */
  uint32_t in = 0, q, br, open, bad, i;
  unsigned depth = 0;
  __m256i v;

  for (; end - p >= 32; p += 32) {
    v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, rep32(rep_bs))) != 0)
      break;
    q = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, rep32(rep_quote)));
    in = prefix_xor(q) ^ (uint32_t)(-(int32_t)(in >> 31));
    v = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
    open = (uint32_t)_mm256_movemask_epi8(
               _mm256_cmpeq_epi8(v, _mm256_set1_epi8('{'))) &
           ~in;
    br = open | ((uint32_t)_mm256_movemask_epi8(
                     _mm256_cmpeq_epi8(v, _mm256_set1_epi8('}'))) &
                 ~in);
    bad =
        not_allowed(_mm256_loadu_si256((const __m256i *)(const void *)p)) & ~in;
    for (; br != 0; br &= br - 1) {
      i = (uint32_t)__builtin_ctz(br);
      if ((bad & ((2u << i) - 1)) != 0)
        return idx_layout_skip(s, end, room);
      if (open >> i & 1) {
        if (depth >= room || depth >= 64)
          return idx_layout_skip(s, end, room);
        arrays = (arrays & ~(1ull << depth)) | (uint64_t)(p[i] == '[') << depth;
        depth++;
      } else {
        if (depth == 0 || (arrays >> (depth - 1) & 1) != (p[i] == ']'))
          return idx_layout_skip(s, end, room);
        if (--depth == 0)
          return p + i + 1;
      }
    }
    if (bad != 0)
      break;
  }
  return idx_layout_skip(s, end, room);
}
#endif

/* The value a hole skips at p, by the width's skipper. */
LAYOUT_INLINE const char *skip_of(const char *p, const char *end, unsigned room,
                                  int wide)
{
#ifdef __x86_64__
  if (wide && (*p == '[' || *p == '{'))
    return container_end32(p, end, room);
#endif
  (void)wide;
  return idx_layout_skip(p, end, room);
}

/* idx_num_fast() out of line: where a hole's number is not of the
 * shapes read inline (and for learning), so that the match keeps its
 * registers. */
__attribute__((noinline)) const char *
idx_layout_num(const char *p, const char *end, unsigned scale, int64_t *v)
{
  return idx_num_fast(p, end, scale, v);
}

/* The integer at p as idx_num_fast() reads it: 1 to 7 digits and no
 * fraction or exponent by one word (8 bytes at p are readable), or no work
 * at all when its bytes and the one after them are the last ones'. */
LAYOUT_INLINE const char *int_at(struct idx_step *st, const char *p,
                                 const char *end, int64_t *v)
{
  uint64_t x;
  unsigned k;

  memcpy(&x, p, 8);
  if (st->memo_k != 0 && ((x ^ st->memo_x) & st->memo_mask) == 0) {
    if (st->fuse_mask == 0 && st->memo_k + st[1].n <= 16) {
      memcpy(st->fuse, p, st->memo_k);
      memcpy(st->fuse + st->memo_k, st[1].lit, st[1].n);
      st->fuse_mask = (1u << (st->memo_k + st[1].n)) - 1;
    }
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
    st->fuse_mask = 0;
    return p + k;
  }
  return idx_layout_num(p, end, 0, v);
}

/* 1 when the integer hole of st and the run after it are, at p, the
 * value it read last and that run (st->fuse): what int_at() and run_eq()
 * then find, by one compare (16 bytes at p are readable). */
LAYOUT_INLINE int fused_at(const struct idx_step *st, const char *p)
{
#ifdef __SSE2__
  return ((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
              _mm_loadu_si128((const __m128i *)(const void *)p),
              _mm_loadu_si128((const __m128i *)(const void *)st->fuse))) &
          st->fuse_mask) == st->fuse_mask;
#else
  (void)st;
  (void)p;
  return 0;
#endif
}

/* ts or dur in microseconds at p, as idx_num_fast(p, end, 3) reads it
 * (its word-at-a-time path unrolled for scale 3), the first eight digits
 * of a long one not converted again when they are the last ones'. */
LAYOUT_INLINE const char *us_at(struct idx_step *st, const char *p,
                                const char *end, int64_t *v)
{
  const uint64_t zeros = 0x3030303030303030ull;
  uint64_t x, acc;
  unsigned k, f;
  const char *q;

  if (end - p < 34)
    return idx_layout_num(p, end, 3, v);
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
      return idx_layout_num(p, end, 3, v);
    acc = acc * idx_pow10[k] + idx_eight_digits(idx_top_digits(x, k));
    q = p + 8 + k;
  } else {
    if (k == 0) /* '-', or no number */
      return idx_layout_num(p, end, 3, v);
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
        return idx_layout_num(p, end, 3, v);
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
 * bytes are digits from one compare, then the integer part (up to 16
 * digits, all idx_num_fast() takes at scale 3) by digits16() and the first
 * three of the fraction from one word, or, for kineto's three, both parts
 * by one digits16(). */
static inline LAYOUT_AVX2 const char *us_at32(const char *p, const char *end,
                                              int64_t *v)
{
  __m256i d;
  uint64_t dig, acc, x;
  unsigned k, f;
  const char *q;

  if (end - p < 34)
    return idx_layout_num(p, end, 3, v);
  d = _mm256_sub_epi8(_mm256_loadu_si256((const __m256i *)(const void *)p),
                      rep32(rep_zero));
  dig = (uint32_t)_mm256_movemask_epi8(
      _mm256_cmpeq_epi8(_mm256_min_epu8(d, rep32(rep_nine)), d));
  k = (unsigned)__builtin_ctzll(~dig);
  if (k - 1 >= 16) /* '-', no number, or more digits than scale 3 takes */
    return idx_layout_num(p, end, 3, v);
  if (k <= 13 && p[k] == '.' && (dig >> (k + 1) & 0xf) == 7) {
    /* kineto's "%.3f" (three digits after the point, then none), the
     * ns a whole number: its digits without the point read at once, k + 3
     * of them, at most 16: the first k from d, the rest one byte further
     * on (digits_tail from 16 - k has its high bits on the first k). */
    acc = digits16(
        _mm_blendv_epi8(
            _mm_sub_epi8(
                _mm_loadu_si128((const __m128i *)(const void *)(p + 1)),
                rep16(rep_zero)),
            _mm256_castsi256_si128(d),
            _mm_loadu_si128(
                (const __m128i *)(const void *)(digits_tail + 16 - k))),
        k + 3);
    q = p + k + 4;
  } else {
    acc = digits16(_mm256_castsi256_si128(d), k) * 1000; /* < 2^64 */
    q = p + k;
    if (*q == '.') {
      f = (unsigned)__builtin_ctzll(~(dig >> (k + 1)));
      if (f == 0 || k + 1 + f >= 32) /* none, or they may go on */
        return idx_layout_num(p, end, 3, v);
      /* Digits past the ns are truncated; fewer count as zeros after. */
      memcpy(&x, q + 1, 8);
      x = (x - 0x3030303030303030ull) & (~0ull >> (64 - 8 * (f < 3 ? f : 3)));
      acc += (x & 0xff) * 100 + (x >> 8 & 0xff) * 10 + (x >> 16 & 0xff);
      q += 1 + f;
    }
  }
  if (*q == 'e' || *q == 'E' || acc > (uint64_t)INT64_MAX)
    return NULL;
  *v = (int64_t)acc;
  return q;
}
#endif

/* ts or dur in microseconds at p, by the width's reader. */
LAYOUT_INLINE const char *us_of(struct idx_step *st, const char *p,
                                const char *end, int64_t *v, int wide)
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
LAYOUT_INLINE const char *str_fill(const struct idx_step *st, const char *p,
                                   const char *end, struct idx_parsed *e,
                                   int wide)
{
  struct idx_str *s;
  const char *q;
  unsigned hi = 0;

  q = str_end_of(p, end, &hi, wide);
  if (q == NULL || (hi != 0 && !tr_utf8_valid(p, (size_t)(q - p))))
    return NULL;
  s = IDX_AT(e, st->field, struct idx_str);
  s->p = p;
  s->n = (size_t)(q - p);
  return q;
}

/* A value only skipped at p, a string in the learnt event: its end. */
LAYOUT_INLINE const char *skip_str(const struct idx_step *st, const char *p,
                                   const char *end, int wide)
{
  const char *q;
  unsigned hi = 0;

  if (*p == '"' && (q = str_end_of(p + 1, end, &hi, wide)) != NULL)
    return q + 1;
  return skip_of(p, end, st->room, wide);
}

/* The constants of st's run, which starts at p. */
static void set_consts(const struct idx_layout *l, const struct idx_step *st,
                       const char *p, struct idx_parsed *e)
{
  const struct idx_cst *c = &l->cst[st->c0], *last = c + st->nc;
  struct idx_str *s;

  for (; c < last; c++) {
    s = IDX_AT(e, c->field, struct idx_str);
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
  struct idx_step *st = l->step;
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
  set_consts(l, st, p, e);
  for (;;) {
  run_matched:
    p += st->n;
    hole = st->hole;
  again:
    switch (hole) { /* < 2 * IDX_H_CONSTS: cut() makes no other */
    case IDX_H_END: goto matched;
    case IDX_H_STR: p = str_fill(st, p, end, e, wide); break;
    case IDX_H_INT:
      /* The next run is then compared at p + memo_k: its bound first. */
      if (st->fuse_mask != 0 && (uintptr_t)p + st->memo_k <= last &&
          fused_at(st, p)) {
        *IDX_AT(e, st->field, int64_t) = st->memo_v;
        p += st->memo_k;
        st++;
        goto run_matched;
      }
      if ((p = int_at(st, p, end, &v)) != NULL)
        *IDX_AT(e, st->field, int64_t) = v;
      break;
    case IDX_H_TIME_US:
      q = us_of(st, p, end, &v, wide);
      p = time_at(p, q, v, IDX_AT(e, st->field, struct idx_numtok));
      break;
    case IDX_H_TIME_NS:
      q = idx_layout_num(p, end, 0, &v);
      p = time_at(p, q, v, IDX_AT(e, st->field, struct idx_numtok));
      break;
    case IDX_H_SKIP_NUM:
      q = digits_end(p);
      p = q != NULL ? q : skip_of(p, end, st->room, wide);
      break;
    case IDX_H_SKIP_STR: p = skip_str(st, p, end, wide); break;
    case IDX_H_SKIP: p = skip_of(p, end, st->room, wide); break;
    case IDX_H_END | IDX_H_CONSTS:
    case IDX_H_STR | IDX_H_CONSTS:
    case IDX_H_INT | IDX_H_CONSTS:
    case IDX_H_TIME_US | IDX_H_CONSTS:
    case IDX_H_TIME_NS | IDX_H_CONSTS:
    case IDX_H_SKIP_NUM | IDX_H_CONSTS:
    case IDX_H_SKIP_STR | IDX_H_CONSTS:
    case IDX_H_SKIP | IDX_H_CONSTS:
      set_consts(l, st, p - st->n, e);
      hole ^= IDX_H_CONSTS;
      goto again;
    default: __builtin_unreachable(); /* hole < 2 * IDX_H_CONSTS */
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
  const struct idx_step *st;
  const char *q;

  for (st = l->step;; st++) {
    if (end - p < (ptrdiff_t)st->need[0] || !run_eq(st, p, 0))
      return 0;
    p += st->n;
    if ((st->hole & ~IDX_H_CONSTS) == IDX_H_END)
      return p == close + 1;
    if ((st->hole & ~IDX_H_CONSTS) == IDX_H_STR) {
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
int idx_layout_match(const struct idx_layouts *t, struct idx_layout *l,
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
    if (!idx_layout_match(t, t->l[i], p, end, e, close))
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

/* idx_layouts_match() where the common case is not: layouts of another
 * nesting or unit to forget, none yet, or the strict events to mark. */
static __attribute__((noinline)) int
match_slow(struct idx_layouts *t, const char *p, const char *end,
           unsigned depth, int scale, struct idx_parsed *e, const char **close)
{
  if (t->depth != depth || t->scale != scale)
    idx_layouts_forget(t, depth, scale);
  if (t->n == 0 || !(idx_layout_match(t, t->l[0], p, end, e, close) ||
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
