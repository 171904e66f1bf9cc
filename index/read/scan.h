/*
 * Stage 1 of the reader: a structural scan of JSON text many bytes at a
 * time, in the way simdjson's first stage works. For every 64-byte block it
 * finds the quotes that are not escaped, which bytes lie inside strings
 * (a carry-less prefix XOR of the quotes), and from that the tokens the
 * event parser walks (reader_fast.c) as bit masks. One kernel per
 * instruction set (AVX2, SSE2, portable C), chosen at run time from what
 * the CPU supports. Internal to index/. Any thread; nothing here blocks.
 */
#ifndef IDX_SCAN_H
#define IDX_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* What one block passes to the next: the scan of a long text in pieces
 * gives the masks a scan of it whole would. Zeroed: the text starts
 * outside any string. */
struct idx_scan_carry {
  uint64_t in_str; /* ~0: the previous block ended inside a string */
  uint64_t esc;    /* 1: it ended on an escaping backslash */
  uint64_t scalar; /* 1: it ended inside a number or literal */
  uint64_t quote;  /* 1: it ended on a closing quote */
  uint64_t value;  /* 1: it ended on the last byte of a value */
  int64_t depth;   /* [ and { minus ] and } outside strings so far */
};

/*
 * The masks of a scanned region: byte i of [base, base + len) is bit i % 64
 * of word i / 64 of tok. Bits past len are 0.
 *   tok    the bytes the event parser stops at: [ ] { } outside strings,
 *          every unescaped quote (both ends of a string), and the first
 *          byte of each number or literal. Between two tokens there is only
 *          whitespace, the rest of a number or literal, and separators.
 *   dirty  bit b of word b / 64: block b holds a backslash, a byte >= 0x80,
 *          outside strings a byte JSON does not allow, or a separator not
 *          right after what it separates: a ':' not right after a closing
 *          quote, a ',' not right after the end of a string, number,
 *          literal, array or object. The parser leaves an event that
 *          touches such a block to the byte-wise path, which unescapes,
 *          checks UTF-8 and reports errors.
 * So separators are no tokens: the parser finds them next to the key or
 * value before them (`"key": value,`, as every writer of traces puts them),
 * a third fewer stops than a token for each.
 */
struct idx_scan_map {
  const char *base;
  size_t len;
  int64_t depth; /* the nesting at base: the carry's depth before */
  size_t nblocks;
  uint64_t *tok, *dirty;
  int any_dirty; /* some dirty bit is set */
  size_t cap;    /* blocks the arrays hold */
};

/* Scans text[0..len) into m (growing its arrays as needed), carrying the
 * string state in *c from the text before. 0 or TR_ENOMEM. */
int idx_scan_run(struct idx_scan_map *m, struct idx_scan_carry *c,
                 const char *text, size_t len);

void idx_scan_map_free(struct idx_scan_map *m);

/* Kernel selection: "avx512", "avx2", "sse2", "generic", or "none" (no
 * scan: the
 * reader walks every byte itself, as before stage 1 existed). The first
 * use picks the best the CPU supports, or what the environment variable
 * TRACED_SCAN names (a test and benchmark hook). idx_scan_select() returns
 * TR_EINVAL for an unknown name or one the CPU cannot run; call it before
 * any reader runs. */
int idx_scan_select(const char *name);
const char *idx_scan_name(void);
int idx_scan_enabled(void); /* 0 for "none" */

/* 1 when a block of m from a to b (both in m's text, inclusive) is
 * dirty. */
static inline int idx_scan_dirty(const struct idx_scan_map *m, const char *a,
                                 const char *b)
{
  size_t i = (size_t)(a - m->base) / 64, j = (size_t)(b - m->base) / 64;

  if (!m->any_dirty)
    return 0;
  for (; i <= j; i++)
    if ((m->dirty[i / 64] >> (i % 64)) & 1)
      return 1;
  return 0;
}

/* ---- for the kernels (scan*.c) ---- */

/* One block's masks before the string state is applied: bytes equal
 * to or in the class. op: , : [ ] { }; b0, b1: bit 0 and bit 1 of each
 * byte, which tell them apart (brackets are odd, '{' '[' have bit 1, ':'
 * too); bad: bytes that may not appear outside strings (not whitespace,
 * op, a quote, or + - . 0-9 A-Z a-z); hb: bytes >= 0x80 and backslashes;
 * bs: the backslashes, needed only when hb is not 0. A kernel may also
 * count a byte it finds bad as op (the block is dirty). */
struct idx_scan_raw {
  uint64_t quote, ws, op, b0, b1, bad, hb, bs;
};

/* Bit i: byte i follows an escaping backslash (bs: the backslashes;
 * carry: the block before ended on one). A run of backslashes escapes
 * every other byte after its start: simdjson's branchless find_escaped,
 * sequences that start on an odd bit told from those on an even one by
 * one addition. Inline and branchless: a call in the kernels' loop would
 * make them keep their constants in memory. */
static inline uint64_t idx_scan_escaped(uint64_t bs, uint64_t carry)
{
  const uint64_t even = 0x5555555555555555ull;
  uint64_t follows, odd_starts, seq;

  bs &= ~carry; /* escaped by the block before: no escaper itself */
  follows = (bs << 1) | carry;
  odd_starts = bs & ~even & ~follows;
  seq = odd_starts + bs;
  return (even ^ (seq << 1)) & follows;
}

/* Prefix XOR by shifts, for kernels without a carry-less multiply. */
static inline uint64_t idx_scan_pxor_shift(uint64_t x)
{
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

/* Applies the string state to a block's raw masks (n valid bytes, 1..64;
 * the rest are spaces) and stores its masks as block b of m. pxor is the
 * kernel's prefix XOR (a carry-less multiply where the CPU has one). */
static inline void idx_scan_finish(struct idx_scan_map *m, size_t b,
                                   struct idx_scan_carry *c,
                                   const struct idx_scan_raw *r, unsigned n,
                                   uint64_t (*pxor)(uint64_t))
{
  uint64_t quote = r->quote, in_str, scalar, start, op, sep, closing, value;
  uint64_t ok;

  if (r->hb != 0 || c->esc != 0) {
    uint64_t esc = idx_scan_escaped(r->bs, c->esc);

    quote &= ~esc;
    /* The next block's first byte is escaped when this one's last is a
     * backslash that is not escaped itself. */
    c->esc = ((r->bs & ~esc) >> (n - 1)) & 1;
  }
  in_str = pxor(quote) ^ c->in_str;
  c->in_str = (uint64_t)((int64_t)(in_str << (64 - n)) >> 63);
  op = r->op & ~in_str;
  sep = op & ~r->b0;
  scalar = ~(r->ws | r->op | quote | in_str);
  start = scalar & ~((scalar << 1) | c->scalar);
  closing = quote & ~in_str;
  value = closing | scalar | (op & r->b0 & ~r->b1); /* a value's last byte */
  /* ':' after a closing quote, ',' after a value's last byte. */
  ok = (sep & r->b1 & ((closing << 1) | c->quote)) |
       (sep & ~r->b1 & ((value << 1) | c->value));
  c->scalar = (scalar >> (n - 1)) & 1;
  c->quote = (closing >> (n - 1)) & 1;
  c->value = (value >> (n - 1)) & 1;
  c->depth += __builtin_popcountll(op & r->b0 & r->b1) -
              __builtin_popcountll(op & r->b0 & ~r->b1);
  m->tok[b] = (op & ~sep) | quote | start;
  if ((r->hb | (r->bad & ~in_str) | (sep & ~ok)) != 0) {
    m->dirty[b / 64] |= 1ull << (b % 64);
    m->any_dirty = 1;
  }
}

/* The kernels: scan nblocks whole blocks at p into blocks b0... of m. */
void idx_scan_generic(struct idx_scan_map *m, size_t b0,
                      struct idx_scan_carry *c, const uint8_t *p,
                      size_t nblocks);
#if defined(__x86_64__)
void idx_scan_sse2(struct idx_scan_map *m, size_t b0, struct idx_scan_carry *c,
                   const uint8_t *p, size_t nblocks);
void idx_scan_avx2(struct idx_scan_map *m, size_t b0, struct idx_scan_carry *c,
                   const uint8_t *p, size_t nblocks);
void idx_scan_avx512(struct idx_scan_map *m, size_t b0,
                     struct idx_scan_carry *c, const uint8_t *p,
                     size_t nblocks);
#endif

#endif
