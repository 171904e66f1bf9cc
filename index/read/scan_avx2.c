/* The AVX2 kernel of stage 1 (read_int.h): two 32-byte vectors a block, byte
 * classes by table lookups on the nibbles (VPSHUFB), the prefix XOR of the
 * quotes by one carry-less multiply (PCLMULQDQ). Built with -mavx2 -mpclmul
 * (CMakeLists.txt) and run only where the CPU has both (scan.c). */
#if defined(__x86_64__)

#include <immintrin.h>

#include "index/read/read_int.h"

/* A 16-byte table in both lanes. */
#define TABLE(...) _mm256_setr_epi8(__VA_ARGS__, __VA_ARGS__)

struct consts {
  __m256i ws, op, bad_lo, bad_hi, nib, x20, quote, bs;
};

/*
 * Lookups on the low nibble hold, for whitespace and for , : [ ] { }, the
 * one byte of the class with that nibble (0 where none, which no byte with
 * that nibble equals; bytes >= 0x80 look up 0): a byte is in the class when
 * it equals its entry. Brackets share nibbles ('[' and '{'), so op
 * compares v | 0x20, which also lets 0x0c and 0x1a through: both are bad
 * bytes, so the block is dirty and the event goes the byte-wise way.
 * Bad bytes: six classes as products of a low- and a high-nibble set,
 *   1 lo{0-8,b,c,e,f} x hi{0,1}   controls but \t \n \r
 *   2 lo{9,a,d} x hi{1}           the rest of 0x10-0x1f
 *   4 lo{1,3-a,f} x hi{2}         ! # $ % & ' ( ) * /
 *   8 lo{c,e,f} x hi{5,7}         \ ^ _ | ~ DEL
 *  16 lo{b-f} x hi{3}             ; < = > ?
 *  32 lo{0} x hi{4,6}             @ `
 * a byte is bad when its two entries share a bit (>= 0x80: hb says it).
 */
static inline void init(struct consts *k)
{
  k->ws = TABLE(' ', 0, 0, 0, 0, 0, 0, 0, 0, '\t', '\n', 0, 0, '\r', 0, 0);
  k->op = TABLE(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ':', '{', ',', '}', 0, 0);
  k->bad_lo = TABLE(33, 5, 1, 5, 5, 5, 5, 5, 5, 6, 6, 17, 25, 18, 25, 29);
  k->bad_hi = TABLE(1, 3, 4, 16, 32, 8, 32, 8, 0, 0, 0, 0, 0, 0, 0, 0);
  k->nib = _mm256_set1_epi8(0x0f);
  k->x20 = _mm256_set1_epi8(0x20);
  k->quote = _mm256_set1_epi8('"');
  k->bs = _mm256_set1_epi8('\\');
}

/* The masks of 32 bytes: quote, ws, op, bad, hb, bs, b0, b1 in m[0..7]. */
static inline void raw32(const struct consts *k, __m256i v, uint32_t m[8])
{
  __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), k->nib);
  __m256i bad = _mm256_and_si256(_mm256_shuffle_epi8(k->bad_lo, v),
                                 _mm256_shuffle_epi8(k->bad_hi, hi));
  __m256i bs = _mm256_cmpeq_epi8(v, k->bs);

  m[0] = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, k->quote));
  m[1] = (uint32_t)_mm256_movemask_epi8(
      _mm256_cmpeq_epi8(_mm256_shuffle_epi8(k->ws, v), v));
  m[2] = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
      _mm256_shuffle_epi8(k->op, v), _mm256_or_si256(v, k->x20)));
  m[3] = ~(uint32_t)_mm256_movemask_epi8(
      _mm256_cmpeq_epi8(bad, _mm256_setzero_si256()));
  m[4] = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(v, bs));
  m[5] = (uint32_t)_mm256_movemask_epi8(bs);
  m[6] = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(v, 7));
  m[7] = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(v, 6));
}

static uint64_t pxor_clmul(uint64_t x)
{
  __m128i v = _mm_set_epi64x(0, (long long)x);

  return (uint64_t)_mm_cvtsi128_si64(
      _mm_clmulepi64_si128(v, _mm_set1_epi8((char)0xff), 0));
}

#define JOIN(i) ((uint64_t)lo[i] | (uint64_t)hi[i] << 32)

void idx_scan_avx2(struct idx_scan_map *m, size_t b0, struct idx_scan_carry *c,
                   const uint8_t *p, size_t nblocks)
{
  struct idx_scan_carry cc;
  struct idx_scan_raw r;
  struct consts k;
  uint32_t lo[8], hi[8];
  size_t b;

  init(&k);
  cc = *c; /* in registers: m's stores cannot alias it */
  for (b = 0; b < nblocks; b++, p += 64) {
    raw32(&k, _mm256_loadu_si256((const __m256i *)(const void *)p), lo);
    raw32(&k, _mm256_loadu_si256((const __m256i *)(const void *)(p + 32)), hi);
    r.quote = JOIN(0);
    r.ws = JOIN(1);
    r.op = JOIN(2);
    r.bad = JOIN(3);
    r.hb = JOIN(4);
    r.bs = JOIN(5);
    r.b0 = JOIN(6);
    r.b1 = JOIN(7);
    idx_scan_finish(m, b0 + b, &cc, &r, 64, pxor_clmul);
  }
  *c = cc;
}

#endif
