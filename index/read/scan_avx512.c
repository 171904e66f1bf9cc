/* The AVX-512 kernel of stage 1 (read_int.h): one 64-byte vector a block, so
 * each class is a 64-bit mask straight from one compare (AVX-512BW), with
 * the nibble lookups of the AVX2 kernel (scan_avx2.c says what the tables
 * hold) and the same carry-less prefix XOR. Built with -mavx512bw
 * -mpclmul (CMakeLists.txt) and run only where the CPU has both (scan.c). */
#if defined(__x86_64__)

#include <immintrin.h>

#include "index/read/read_int.h"

/* A 16-byte table in all four lanes. */
#define TABLE(...) _mm512_broadcast_i32x4(_mm_setr_epi8(__VA_ARGS__))

static uint64_t pxor_clmul(uint64_t x)
{
  __m128i v = _mm_set_epi64x(0, (long long)x);

  return (uint64_t)_mm_cvtsi128_si64(
      _mm_clmulepi64_si128(v, _mm_set1_epi8((char)0xff), 0));
}

void idx_scan_avx512(struct idx_scan_map *m, size_t b0,
                     struct idx_scan_carry *c, const uint8_t *p, size_t nblocks)
{
  struct idx_scan_carry cc;
  const __m512i ws_t =
      TABLE(' ', 0, 0, 0, 0, 0, 0, 0, 0, '\t', '\n', 0, 0, '\r', 0, 0);
  const __m512i op_t =
      TABLE(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ':', '{', ',', '}', 0, 0);
  const __m512i bad_lo =
      TABLE(33, 5, 1, 5, 5, 5, 5, 5, 5, 6, 6, 17, 25, 18, 25, 29);
  const __m512i bad_hi =
      TABLE(1, 3, 4, 16, 32, 8, 32, 8, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i nib = _mm512_set1_epi8(0x0f), x20 = _mm512_set1_epi8(0x20);
  const __m512i quote = _mm512_set1_epi8('"'), bs = _mm512_set1_epi8('\\');
  const __m512i one = _mm512_set1_epi8(1), two = _mm512_set1_epi8(2);
  struct idx_scan_raw r;
  __m512i v, hi;
  size_t b;

  cc = *c; /* in registers: m's stores cannot alias it */
  for (b = 0; b < nblocks; b++, p += 64) {
    v = _mm512_loadu_si512((const void *)p);
    hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
    r.quote = _mm512_cmpeq_epi8_mask(v, quote);
    r.ws = _mm512_cmpeq_epi8_mask(_mm512_shuffle_epi8(ws_t, v), v);
    r.op = _mm512_cmpeq_epi8_mask(_mm512_shuffle_epi8(op_t, v),
                                  _mm512_or_si512(v, x20));
    r.bad = _mm512_test_epi8_mask(_mm512_shuffle_epi8(bad_lo, v),
                                  _mm512_shuffle_epi8(bad_hi, hi));
    r.bs = _mm512_cmpeq_epi8_mask(v, bs);
    r.hb = _mm512_movepi8_mask(v) | r.bs;
    r.b0 = _mm512_test_epi8_mask(v, one);
    r.b1 = _mm512_test_epi8_mask(v, two);
    idx_scan_finish(m, b0 + b, &cc, &r, 64, pxor_clmul);
  }
  *c = cc;
}

#endif
