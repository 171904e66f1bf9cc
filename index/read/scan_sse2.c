/* The SSE2 kernel of stage 1 (read_int.h): four 16-byte vectors a block. SSE2
 * is part of every x86-64 CPU; it has neither byte shuffles nor a
 * carry-less multiply, so classes are compared one by one and the prefix
 * XOR is done by shifts. */
#if defined(__x86_64__)

#include <emmintrin.h>

#include "index/read/read_int.h"

/* Bytes of v that are <= k (unsigned). */
static inline __m128i le(__m128i v, char k)
{
  __m128i kk = _mm_set1_epi8(k);

  return _mm_cmpeq_epi8(_mm_min_epu8(v, kk), v);
}

static inline __m128i eq(__m128i v, char c)
{
  return _mm_cmpeq_epi8(v, _mm_set1_epi8(c));
}

static inline uint64_t bits(__m128i v, unsigned sh)
{
  return (uint64_t)(unsigned)_mm_movemask_epi8(v) << sh;
}

/* The raw masks of 16 bytes, as bits sh..sh+15 of r. */
static inline void raw16(const uint8_t *p, unsigned sh, struct idx_scan_raw *r)
{
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i low = _mm_or_si128(v, _mm_set1_epi8(0x20));
  __m128i quote = eq(v, '"'), bs = eq(v, '\\');
  __m128i ws = _mm_or_si128(_mm_or_si128(eq(v, ' '), eq(v, '\t')),
                            _mm_or_si128(eq(v, '\n'), eq(v, '\r')));
  __m128i op = _mm_or_si128(_mm_or_si128(eq(low, '{'), eq(low, '}')),
                            _mm_or_si128(eq(v, ':'), eq(v, ',')));
  __m128i alpha = _mm_or_si128(
      _mm_or_si128(le(_mm_sub_epi8(low, _mm_set1_epi8('a')), 25),
                   le(_mm_sub_epi8(v, _mm_set1_epi8('0')), 9)),
      _mm_or_si128(eq(v, '+'), le(_mm_sub_epi8(v, _mm_set1_epi8('-')), 1)));
  __m128i ok = _mm_or_si128(_mm_or_si128(quote, ws), _mm_or_si128(op, alpha));

  r->b0 |= bits(_mm_slli_epi16(v, 7), sh);
  r->b1 |= bits(_mm_slli_epi16(v, 6), sh);
  r->quote |= bits(quote, sh);
  r->ws |= bits(ws, sh);
  r->op |= bits(op, sh);
  r->bad |= bits(_mm_cmpeq_epi8(ok, _mm_setzero_si128()), sh);
  r->hb |= bits(_mm_or_si128(v, bs), sh);
  r->bs |= bits(bs, sh);
}

void idx_scan_sse2(struct idx_scan_map *m, size_t b0, struct idx_scan_carry *c,
                   const uint8_t *p, size_t nblocks)
{
  struct idx_scan_carry cc;
  struct idx_scan_raw r;
  size_t b;

  cc = *c; /* in registers: m's stores cannot alias it */
  for (b = 0; b < nblocks; b++, p += 64) {
    r = (struct idx_scan_raw){ 0 };
    raw16(p, 0, &r);
    raw16(p + 16, 16, &r);
    raw16(p + 32, 32, &r);
    raw16(p + 48, 48, &r);
    idx_scan_finish(m, b0 + b, &cc, &r, 64, idx_scan_pxor_shift);
  }
  *c = cc;
}

#endif
