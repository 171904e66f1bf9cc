/*
 * The insides of the reader (index/read/README.md): the gzip inflater, the
 * structural scan, and the streaming reader's parsing, layouts and walks.
 * Internal to index/read/ (and its tests).
 */
#ifndef IDX_READ_INT_H
#define IDX_READ_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "index/read/read.h"

/* ---- one gzip inflater (inflate_isal.c, inflate_zlib.c) ---- */

/*
 * One gzip inflater, internal to index/: ISA-L (inflate_isal.c) when built
 * with TRACED_HAVE_ISAL, else zlib (inflate_zlib.c). Only source.c's
 * inflate thread uses it; an inflater is used by one thread at a time.
 */
struct idx_inflate;

/* The buffers of one idx_inflate_run() call: both are advanced past what
 * was consumed and produced. Borrowed for the call. */
struct idx_inflate_io {
  const uint8_t *in;
  size_t in_len;
  uint8_t *out;
  size_t out_len;
  /* The start of the buffer io->out is in, whose bytes before io->out are
   * the latest output: ISA-L's hunt takes its history back from there
   * instead of copying it aside. NULL: unknown. */
  const uint8_t *out_first;
};

/* A new inflater expecting a gzip header. Returns 0 or TR_ENOMEM; caller
 * frees with idx_inflate_free(). */
int idx_inflate_new(struct idx_inflate **out);

/* idx_inflate_run()'s return when, hunting, it stopped at a deflate block
 * boundary (index/read/read.h). */
#define IDX_INFLATE_BLOCK 2

/* Inflates from io->in into io->out. Returns 0 when it stopped because the
 * input ran out or the output is full, 1 at the end of a gzip member whose
 * CRC matched (io->in then starts right after the member),
 * IDX_INFLATE_BLOCK when hunting and at a block boundary with all output
 * before it delivered, or TR_EFORMAT with *what set to a static
 * description of the damage. */
int idx_inflate_run(struct idx_inflate *z, struct idx_inflate_io *io,
                    const char **what);

/* Hunting (on) or not: whether idx_inflate_run() stops at the next deflate
 * block boundary. Off after new() and reset(); a hunt costs more per byte
 * (zlib: Z_BLOCK; ISA-L: small input pieces), so the caller hunts only
 * when it wants a point. */
void idx_inflate_hunt(struct idx_inflate *z, int on);

/* Right after IDX_INFLATE_BLOCK: the input bits taken from io->in but not
 * yet used, so the next block starts that many bits before io->in. */
unsigned idx_inflate_pending_bits(const struct idx_inflate *z);

/* Starts raw deflate (no gzip wrapper, no CRC) at a block boundary, an
 * access point (index/read/read.h): nbits (0..7) bits of the block's first
 * byte, in bits, are its first ones; win (win_len bytes, borrowed for the
 * call) the output before it. idx_inflate_run() then returns 1 after the
 * member's last block, idx_inflate_unused_bytes() before its trailer.
 * 0 or TR_EFORMAT. idx_inflate_reset() goes back to gzip. */
int idx_inflate_resume(struct idx_inflate *z, unsigned bits, unsigned nbits,
                       const uint8_t *win, size_t win_len);

/* After the end of a resumed stream: the input bytes taken past it, so
 * that its trailer starts that many bytes before io->in. */
unsigned idx_inflate_unused_bytes(const struct idx_inflate *z);

/* Prepares for the next member of a multi-member gzip file. */
void idx_inflate_reset(struct idx_inflate *z);

/* "isal" or "zlib". */
const char *idx_inflate_name(void);

void idx_inflate_free(struct idx_inflate *z);

/* ---- the structural scan (scan*.c) ---- */

/*
 * Stage 1 of the reader: a structural scan of JSON text many bytes at a
 * time, in the way simdjson's first stage works. For every 64-byte block it
 * finds the quotes that are not escaped, which bytes lie inside strings
 * (a carry-less prefix XOR of the quotes), and from that the tokens the
 * event parser walks (reader_fast.c) as bit masks. One kernel per
 * instruction set (AVX2, SSE2, portable C), chosen at run time from what
 * the CPU supports. Internal to index/. Any thread; nothing here blocks.
 */
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
/* 1 when the kernel is AVX2's or AVX-512's: the layouts then find their
 * strings' ends 32 bytes at a time (reader_layout.c), so that the tests
 * and the fuzzer, going through every kernel, go through both widths. */
int idx_scan_wide(void);

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

/* ---- the streaming reader (reader*.c) ---- */

/*
 * Internals of the streaming reader (reader.c, reader_event.c,
 * reader_num.c). Any thread; nothing here blocks or allocates except where
 * said.
 */
#ifdef __SSE2__
#endif

/* Largest event (or deviceProperties / distributedInfo value) buffered
 * whole; a larger one is skipped in streaming fashion and counted. */
#define IDX_EVENT_CEILING (16u << 20)

/* Results of the scanning and parsing helpers. */
enum {
  IDX_P_OK = 0,
  IDX_P_MORE = 1,    /* the input ended inside the value */
  IDX_P_COPY = 2,    /* a string needs unescaping: parse from a copy */
  IDX_P_SYNTAX = -1, /* not JSON; the position says where */
  IDX_P_DEPTH = -2   /* nested deeper than IDX_MAX_DEPTH */
};

/*
 * Resumable skipping of one JSON value (any size, across chunks) that only
 * tracks strings and brackets: bytes outside strings are checked against
 * the JSON alphabet, brackets must match, scalars are not validated.
 */
struct idx_skip {
  uint32_t depth;    /* open brackets */
  uint8_t started;   /* the value's first byte was seen */
  uint8_t in_str;    /* inside a string */
  uint8_t esc;       /* the previous byte was a backslash in a string */
  uint8_t in_scalar; /* inside a number or literal at depth 0 */
  uint64_t arrays[IDX_MAX_DEPTH / 64]; /* bit d: level d+1 is an array */
};

void idx_skip_init(struct idx_skip *k);

/* Scans the value at p (its first byte is not whitespace). Returns
 * IDX_P_OK when the value ended, *used counting its bytes (a scalar ends
 * before its delimiter, which is not counted); IDX_P_MORE when [p, end) was
 * all used; or an error with *used at the bad byte. At most max_depth
 * levels may open. */
int idx_skip_run(struct idx_skip *k, const char *p, const char *end,
                 unsigned max_depth, size_t *used);

/* The common shapes of a number at p ("123", "4203669604595.407",
 * "1712195495607095.056"; no exponent, at most 19 digits kept, the result
 * within int64 but not INT64_MIN) parsed as idx_num_parse() does, in one
 * pass: returns the byte after the number, or NULL when the general path
 * is needed. Does not look at what follows the number. */

/* Powers of ten that fit an int64. */
static const uint64_t idx_pow10[] = { 1ull,
                                      10ull,
                                      100ull,
                                      1000ull,
                                      10000ull,
                                      100000ull,
                                      1000000ull,
                                      10000000ull,
                                      100000000ull,
                                      1000000000ull,
                                      10000000000ull,
                                      100000000000ull,
                                      1000000000000ull,
                                      10000000000000ull,
                                      100000000000000ull,
                                      1000000000000000ull,
                                      10000000000000000ull,
                                      100000000000000000ull,
                                      1000000000000000000ull };

/* The value of the 8 digits of d (digit values, not characters; the first
 * in the low byte), by three multiplications (the SWAR method of Lemire's
 * fast_float). */
static inline uint64_t idx_eight_digits(uint64_t d)
{
  const uint64_t mask = 0x000000ff000000ffull;

  d = d * 10 + (d >> 8);
  return ((d & mask) * 0x000f424000000064ull +
          ((d >> 16) & mask) * 0x0000271000000001ull) >>
         32;
}

/* The k leading digits of x (the first byte in the low byte) as digit
 * values moved to the top, with leading zeros below them: what
 * idx_eight_digits() reads as a k-digit number. Two shifts, as one by 64
 * is undefined. */
static inline uint64_t idx_top_digits(uint64_t x, unsigned k)
{
  return (x - 0x3030303030303030ull) << (32 - 4 * k) << (32 - 4 * k);
}

/* The run of digits at p (before end): its length, and in *v its value
 * when the length is at most 19. Eight bytes at a time while eight are
 * there. */
static inline __attribute__((always_inline)) size_t
idx_digit_run(const char *p, const char *end, uint64_t *v)
{
  const char *s = p;
  uint64_t acc = 0, x, d;
  unsigned k;

  while (end - p >= 8) {
    memcpy(&x, p, 8);
    k = idx_leading_digits(x);
    d = idx_top_digits(x, k);
    acc = acc * idx_pow10[k] + idx_eight_digits(d);
    p += k;
    if (k < 8) {
      *v = acc;
      return (size_t)(p - s);
    }
  }
  for (; p < end && *p >= '0' && *p <= '9'; p++)
    acc = acc * 10 + (uint64_t)(*p - '0');
  *v = acc;
  return (size_t)(p - s);
}

/* At most this many digits kept: 19 of them never overflow a uint64. */
#define IDX_NUM_DIGITS 19

/* idx_num_fast() when 34 bytes can be read at p: the integer part in up
 * to three words, the fraction in one, no loop. NULL with *general set
 * when the number has more digits than that takes. */
static inline __attribute__((always_inline)) const char *
idx_num_words(const char *p, unsigned scale, int64_t *out, int *general)
{
  const char *s = p + (*p == '-'), *q;
  uint64_t x, acc = 0;
  unsigned k, n = 0, f;

  do { /* eight digits a word while all of its bytes are digits */
    memcpy(&x, s + n, 8);
    k = idx_leading_digits(x);
    acc = acc * idx_pow10[k] + idx_eight_digits(idx_top_digits(x, k));
    n += k;
  } while (k == 8 && n < 24);
  if (k == 8)
    return *general = 1, NULL;
  if (n == 0 || n + scale > IDX_NUM_DIGITS)
    return NULL;
  acc *= idx_pow10[scale];
  q = s + n;
  if (*q == '.') {
    memcpy(&x, q + 1, 8);
    f = idx_leading_digits(x);
    if (f == 0)
      return NULL;
    if (f == 8)
      return *general = 1, NULL;
    /* Digits past the scale are truncated. */
    k = f < scale ? f : scale;
    acc += idx_eight_digits(idx_top_digits(x, k)) * idx_pow10[scale - k];
    q += 1 + f;
  }
  if (*q == 'e' || *q == 'E' || acc > (uint64_t)INT64_MAX)
    return NULL;
  *out = *p == '-' ? -(int64_t)acc : (int64_t)acc;
  return q;
}

static inline __attribute__((always_inline)) const char *
idx_num_fast(const char *p, const char *end, unsigned scale, int64_t *out)
{
  uint64_t acc, frac;
  size_t n, f;
  int neg = 0, general = 0;

  if (end - p >= 34) {
    const char *q = idx_num_words(p, scale, out, &general);

    if (!general)
      return q;
  }
  if (p < end && *p == '-')
    neg = 1, p++;
  n = idx_digit_run(p, end, &acc);
  if (n == 0 || n + scale > IDX_NUM_DIGITS)
    return NULL;
  p += n;
  acc *= idx_pow10[scale];
  if (p < end && *p == '.') {
    f = idx_digit_run(++p, end, &frac);
    if (f == 0)
      return NULL;
    /* Digits past the scale are truncated. */
    if (f > scale)
      for (frac = 0, n = 0; n < scale; n++)
        frac = frac * 10 + (uint64_t)(p[n] - '0');
    else
      frac *= idx_pow10[scale - f];
    acc += frac;
    p += f;
  }
  if ((p < end && (*p == 'e' || *p == 'E')) || acc > (uint64_t)INT64_MAX)
    return NULL;
  *out = neg ? -(int64_t)acc : (int64_t)acc;
  return p;
}

/* Decodes the JSON escapes of a string body s[0..n) in place (the result is
 * never longer) and stores its length in *out_n. Returns 0, or -1 on a bad
 * escape or a lone surrogate (s is then garbage). */
int idx_unescape(char *s, size_t n, size_t *out_n);

/* A number as written, converted when its scale is known. */
struct idx_numtok {
  const char *p; /* the number's text (inside the quotes for a string) */
  size_t n;
  int present; /* a number or a string was there (not null, not NaN) */
  int junk;    /* a string or literal that is no number ("N/A", NaN) */
  int done;    /* converted: rc and val hold the result */
  int rc;      /* IDX_NUM_* */
  int64_t val;
};

struct idx_parsed {
  int scale; /* in: 3 (kineto us) or 0 (mcTracer ns) for
                ts/dur, -1 while the format is unsettled */
  struct idx_event ev;
  struct idx_numtok ts, dur;         /* see idx_parsed_times() */
  int bad;                           /* malformed: skip and count the event */
  int co_id;                         /* args.co_id was present (mcTracer) */
  int64_t size;                      /* args "size" (runtime copy calls) */
  int64_t dyn_shared, static_shared; /* mcTracer args */
  uint32_t xhas; /* IDX_X_*: which of these three were read */
};

enum { IDX_X_SIZE = 1, IDX_X_DYN = 2, IDX_X_STATIC = 4 };

/* A cursor over a buffer that holds a whole value. */
struct idx_cur {
  const char *p, *end;
  int mut;        /* the buffer is the reader's: unescape in place */
  unsigned depth; /* nesting at p */
};

/* ---- the members read, the same for both event parsers ---- */

enum {
  IDX_K_OTHER,
  IDX_K_PH,
  IDX_K_CAT,
  IDX_K_NAME,
  IDX_K_PID,
  IDX_K_TID,
  IDX_K_TS,
  IDX_K_DUR,
  IDX_K_ARGS
};

enum {
  IDX_A_OTHER,
  IDX_A_CORR,
  IDX_A_COID,
  IDX_A_EXTID,
  IDX_A_DEVICE,
  IDX_A_STREAM,
  IDX_A_GRID,
  IDX_A_BLOCK,
  IDX_A_REGS,
  IDX_A_SHMEM,
  IDX_A_DYN,
  IDX_A_STATIC,
  IDX_A_BYTES,
  IDX_A_SIZE,
  IDX_A_KIND,
  IDX_A_KERNEL,
  IDX_A_NAME,
  IDX_A_WAIT_STREAM,
  IDX_A_WAIT_CORR,
  IDX_A_MEM_BYTES, /* a [memory] event's (profile_memory) */
  IDX_A_MEM_ADDR,
  IDX_A_MEM_ALLOC,
  IDX_A_MEM_RES,
  IDX_A_MEM_TYPE,
  IDX_A_MEM_ID
};

/* The event-level key k[0..n) as IDX_K_*; by length first, as this runs
 * for every key of every event. */
static inline int idx_event_key(const char *k, size_t n)
{
  switch (n) {
  case 2:
    if (k[0] == 'p' && k[1] == 'h')
      return IDX_K_PH;
    return k[0] == 't' && k[1] == 's' ? IDX_K_TS : IDX_K_OTHER;
  case 3:
    if (memcmp(k, "cat", 3) == 0)
      return IDX_K_CAT;
    if (memcmp(k, "pid", 3) == 0)
      return IDX_K_PID;
    if (memcmp(k, "tid", 3) == 0)
      return IDX_K_TID;
    return memcmp(k, "dur", 3) == 0 ? IDX_K_DUR : IDX_K_OTHER;
  case 4:
    if (memcmp(k, "name", 4) == 0)
      return IDX_K_NAME;
    return memcmp(k, "args", 4) == 0 ? IDX_K_ARGS : IDX_K_OTHER;
  default: return IDX_K_OTHER;
  }
}

/* XX(len, A, key): an args key and its IDX_A_* (docs/TRACE_FORMATS.md):
 * kineto's, legacy kineto's lower-case "external id", mcTracer's, and a
 * [memory] event's, by length and within a length in the order
 * idx_arg_key() tries them; len is passed through to XX. */
#define IDX_ARG_KEYS(XX, len)                                                  \
  XX(len, GRID, "grid")                                                        \
  XX(len, KIND, "kind")                                                        \
  XX(len, NAME, "name")                                                        \
  XX(len, SIZE, "size")                                                        \
  XX(len, MEM_ADDR, "Addr")                                                    \
  XX(len, BLOCK, "block")                                                      \
  XX(len, BYTES, "bytes")                                                      \
  XX(len, COID, "co_id")                                                       \
  XX(len, MEM_BYTES, "Bytes")                                                  \
  XX(len, DEVICE, "device")                                                    \
  XX(len, STREAM, "stream")                                                    \
  XX(len, KERNEL, "kernel")                                                    \
  XX(len, MEM_ID, "Device Id")                                                 \
  XX(len, CORR, "correlation")                                                 \
  XX(len, EXTID, "External id")                                                \
  XX(len, EXTID, "external id")                                                \
  XX(len, MEM_TYPE, "Device Type")                                             \
  XX(len, SHMEM, "shared memory")                                              \
  XX(len, STATIC, "static_shared")                                             \
  XX(len, DYN, "dynamic_shared")                                               \
  XX(len, WAIT_STREAM, "wait_on_stream")                                       \
  XX(len, MEM_RES, "Total Reserved")                                           \
  XX(len, MEM_ALLOC, "Total Allocated")                                        \
  XX(len, REGS, "registers per thread")                                        \
  XX(len, REGS, "registers_per_thread")                                        \
  XX(len, WAIT_CORR, "wait_on_cuda_event_record_corr_id")

/* The lengths of IDX_ARG_KEYS' keys, a case of idx_arg_key()'s switch
 * each: a key of a length left out here is never matched (test_reader
 * looks up every row). */
#define IDX_ARG_LENS(XX)                                                       \
  XX(4) XX(5) XX(6) XX(9) XX(11) XX(13) XX(14) XX(15) XX(20) XX(33)

/* The args key k[0..n) as IDX_A_*: by length first, as this runs for
 * every args key of every event. Each case expands every row; the rows
 * of another length are constant-false and fold away, so a case is the
 * chain of its own keys' compares. */
static inline int idx_arg_key(const char *k, size_t n)
{
#define IDX_ARG_IS_(len, A, key)                                               \
  if (sizeof(key) - 1 == (len) && memcmp(k, key, sizeof(key) - 1) == 0)        \
    return IDX_A_##A;
#define IDX_ARG_CASE_(len)                                                     \
  case len: IDX_ARG_KEYS(IDX_ARG_IS_, len) break;
  switch (n) {
    IDX_ARG_LENS(IDX_ARG_CASE_)
  default: break;
  }
#undef IDX_ARG_CASE_
#undef IDX_ARG_IS_
  return IDX_A_OTHER;
}

/* Where an integer member of args goes: *dst, with bit set in *has. */
struct idx_slot {
  int64_t *dst;
  uint32_t *has;
  uint32_t bit;
};

/* For an integer args key (IDX_A_*), its slot in e: returns 1 (and marks
 * e->co_id for "co_id"), else 0. */
static inline int idx_arg_slot(struct idx_parsed *e, int key,
                               struct idx_slot *s)
{
  struct idx_event *ev = &e->ev;

  s->has = &ev->has;
  switch (key) {
  case IDX_A_COID: e->co_id = 1; /* fall through */
  case IDX_A_CORR: s->dst = &ev->correlation, s->bit = IDX_HAS_CORR; break;
  case IDX_A_EXTID: s->dst = &ev->external_id, s->bit = IDX_HAS_EXTID; break;
  case IDX_A_DEVICE: s->dst = &ev->device, s->bit = IDX_HAS_DEVICE; break;
  case IDX_A_STREAM: s->dst = &ev->stream, s->bit = IDX_HAS_STREAM; break;
  case IDX_A_REGS: s->dst = &ev->registers, s->bit = IDX_HAS_REGS; break;
  case IDX_A_SHMEM: s->dst = &ev->shared_bytes, s->bit = IDX_HAS_SHMEM; break;
  case IDX_A_BYTES: s->dst = &ev->bytes, s->bit = IDX_HAS_BYTES; break;
  case IDX_A_WAIT_STREAM:
    s->dst = &ev->wait_stream, s->bit = IDX_HAS_WAIT_STREAM;
    break;
  case IDX_A_WAIT_CORR:
    s->dst = &ev->wait_corr, s->bit = IDX_HAS_WAIT_CORR;
    break;
  case IDX_A_SIZE:
    s->dst = &e->size, s->has = &e->xhas, s->bit = IDX_X_SIZE;
    break;
  case IDX_A_MEM_BYTES:
    s->dst = &ev->mem_bytes, s->bit = IDX_HAS_MEM_BYTES;
    break;
  case IDX_A_MEM_ADDR: s->dst = &ev->mem_addr, s->bit = IDX_HAS_MEM_ADDR; break;
  case IDX_A_MEM_ALLOC:
    s->dst = &ev->mem_allocated, s->bit = IDX_HAS_MEM_ALLOC;
    break;
  case IDX_A_MEM_RES:
    s->dst = &ev->mem_reserved, s->bit = IDX_HAS_MEM_RES;
    break;
  case IDX_A_MEM_TYPE: s->dst = &ev->mem_type, s->bit = IDX_HAS_MEM_TYPE; break;
  case IDX_A_MEM_ID: s->dst = &ev->mem_id, s->bit = IDX_HAS_MEM_ID; break;
  case IDX_A_DYN:
    s->dst = &e->dyn_shared, s->has = &e->xhas, s->bit = IDX_X_DYN;
    break;
  case IDX_A_STATIC:
    s->dst = &e->static_shared, s->has = &e->xhas, s->bit = IDX_X_STATIC;
    break;
  default: return 0;
  }
  return 1;
}

/* idx_parsed_reset() past the event itself. */
static inline void idx_parsed_reset_rest(struct idx_parsed *e)
{
  e->ts.present = e->dur.present = 0;
  e->bad = e->co_id = 0;
  e->xhas = 0;
}

/* What a parse of an event starts from (the reset of idx_parse_event()
 * gives the reader to read): all of the event, and no ts, dur, co_id or
 * args-derived fields yet. The event is zeroed by vector stores: GCC
 * makes a struct assignment or a memset of it a rep stos, which costs
 * many times more on every event. The empty asm hides the loop from
 * that. */
static inline void idx_parsed_reset(struct idx_parsed *e)
{
#ifdef __SSE2__
  char *d = (char *)&e->ev;
  size_t i;

  _Static_assert(sizeof(e->ev) % 16 == 0, "idx_event: whole vectors");
#pragma GCC unroll 32
  for (i = 0; i < sizeof(e->ev) / 16; i++) {
    __asm__("" : "+r"(d));
    _mm_storeu_si128((__m128i *)(void *)(d + 16 * i), _mm_setzero_si128());
  }
#else
  e->ev = (struct idx_event){ 0 };
#endif
  idx_parsed_reset_rest(e);
}

/* *dst = *src by vector loads and stores, for the same reason as
 * idx_parsed_reset(): GCC makes the assignment a rep movs, whose start
 * costs more than the copy on every event walked ahead. */
static inline void idx_event_copy(struct idx_event *dst,
                                  const struct idx_event *src)
{
#ifdef __SSE2__
  char *d = (char *)dst;
  const char *s = (const char *)src;
  size_t i;

#pragma GCC unroll 32
  for (i = 0; i < sizeof(*dst) / 16; i++) {
    __asm__("" : "+r"(d));
    _mm_storeu_si128(
        (__m128i *)(void *)(d + 16 * i),
        _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * i)));
  }
#else
  *dst = *src;
#endif
}

/* Fields derived from others once the whole event is read: shared memory
 * from mcTracer's dynamic + static, bytes from "size". */
static inline void idx_finish_event(struct idx_parsed *e)
{
  struct idx_event *ev = &e->ev;

  if (!(ev->has & IDX_HAS_SHMEM) && (e->xhas & (IDX_X_DYN | IDX_X_STATIC))) {
    /* One of the two may be absent: its slot holds what an earlier event
     * left there (the walks reset the flags, not the slots). */
    int64_t dyn = e->xhas & IDX_X_DYN ? e->dyn_shared : 0;
    int64_t stat = e->xhas & IDX_X_STATIC ? e->static_shared : 0;

    if (__builtin_add_overflow(dyn, stat, &ev->shared_bytes))
      e->bad = 1;
    ev->has |= IDX_HAS_SHMEM;
  }
  if (!(ev->has & IDX_HAS_BYTES) && (e->xhas & IDX_X_SIZE)) {
    ev->bytes = e->size;
    ev->has |= IDX_HAS_BYTES;
  }
}

/* Parses the event object at c->p ('{') into *out (all of it but
 * out->scale reset first).
 * Returns IDX_P_OK with c->p after the event, IDX_P_MORE, IDX_P_COPY (only
 * when !c->mut), or an error with c->p at the bad byte. */
int idx_parse_event(struct idx_cur *c, struct idx_parsed *out);

/* ts or dur to ns at scale unless done at parse time. */
static inline void idx_parsed_time(struct idx_numtok *t, unsigned scale,
                                   int64_t *dst, struct idx_parsed *e,
                                   uint32_t bit)
{
  if (!t->present)
    return;
  if (!t->done) {
    t->rc = idx_num_parse(t->p, t->n, scale, &t->val);
    t->done = 1;
  }
  if (t->rc != IDX_NUM_OK) {
    e->bad = 1; /* out of range, or a string that is no number */
    return;
  }
  *dst = t->val;
  e->ev.has |= bit;
}

/* Converts ts and dur to integer ns at scale (3: microseconds, 0:
 * nanoseconds) unless the parser did already; sets IDX_HAS_TS/DUR, or
 * e->bad when a value is outside the range of read.h (IDX_TS_LIMIT_NS,
 * IDX_DUR_LIMIT_NS: negative ones too). Inline: it runs for every event. */
static inline void idx_parsed_times(struct idx_parsed *e, unsigned scale)
{
  idx_parsed_time(&e->ts, scale, &e->ev.ts_ns, e, IDX_HAS_TS);
  idx_parsed_time(&e->dur, scale, &e->ev.dur_ns, e, IDX_HAS_DUR);
  if ((e->ev.has & IDX_HAS_DUR) &&
      (uint64_t)e->ev.dur_ns >= (uint64_t)IDX_DUR_LIMIT_NS)
    e->bad = 1;
  if ((e->ev.has & IDX_HAS_TS) &&
      (uint64_t)e->ev.ts_ns >= (uint64_t)IDX_TS_LIMIT_NS)
    e->bad = 1;
}

/* deviceProperties value at c->p: copies [0].name into device (NUL
 * terminated, cut at a character boundary to fit size); leaves device
 * alone when the value has another shape. Same returns as above. */
int idx_parse_devprops(struct idx_cur *c, char *device, size_t size);

/* distributedInfo value at c->p: stores "rank" in *rank when it is an
 * integer. Same returns as above. */
int idx_parse_distinfo(struct idx_cur *c, int64_t *rank);

/* ---- the token walk (reader_fast.c) ---- */

/* The bytes a number or literal is made of: + - . 0-9 A-Z a-z. */
extern const unsigned char idx_scalar_bytes[256];

static inline int idx_scalar_byte(char c)
{
  return idx_scalar_bytes[(unsigned char)c];
}

/* A cursor over the tokens of a scanned window (read_int.h). */
struct idx_walk {
  const char *base;  /* the window's first byte */
  const char *limit; /* the end of the bytes that may be read: numbers
                        may run on past the window */
  const uint64_t *tok, *tok_end; /* the window's token words */
  const uint64_t *next;          /* the word after the current one */
  const char *blk;               /* the current word's first byte */
  uint64_t bits;                 /* its tokens not yet returned */
  const char *at;                /* set by idx_fast_event(): its '}' */
};

/* Results of the walk. */
enum {
  IDX_W_OK,   /* done */
  IDX_W_BAIL, /* a shape the walk leaves to reader_event.c */
  IDX_W_SHORT /* the window ended first */
};

/* The walk over m's window, the bytes before limit readable. */
void idx_walk_init(struct idx_walk *w, const struct idx_scan_map *m,
                   const char *limit);

/* The next token returned is the first at or after p (inside the
 * window). */
void idx_walk_seek(struct idx_walk *w, const char *p);

/* The next token into *t; 0 when the window has no more. */
static inline int idx_walk_next(struct idx_walk *w, const char **t)
{
  while (w->bits == 0) {
    if (w->next == w->tok_end)
      return 0;
    w->bits = *w->next++;
    w->blk += 64;
  }
  *t = w->blk + __builtin_ctzll(w->bits);
  w->bits &= w->bits - 1;
  return 1;
}

/* ---- event layouts (reader_layout.c learns them, reader_match.c
 * matches them) ---- */

/* Layouts a walker keeps: a PyTorch trace has about twenty kinds of
 * event, a few of them most of its events. */
#define IDX_LAYOUTS 16

/* What follows a step's literal run. */
enum {
  IDX_H_END,      /* nothing: the run ends with the event's '}' */
  IDX_H_STR,      /* a kept string's body (between the run's last byte, its
                 opening quote, and the next run's first, its closing
                 one) */
  IDX_H_INT,      /* an integer field */
  IDX_H_TIME_US,  /* ts or dur in microseconds (kineto) */
  IDX_H_TIME_NS,  /* ts or dur in nanoseconds (mcTracer) */
  IDX_H_SKIP_NUM, /* a value only skipped, a number in the learnt event */
  IDX_H_SKIP_STR, /* the same, a string there */
  IDX_H_SKIP,     /* the same, anything else there */
  IDX_H_CONSTS    /* a bit: the run, not the first, holds constants (struct
                     idx_cst) too; the first run's are set first */
};
_Static_assert(IDX_H_CONSTS == 8, "IDX_H_CONSTS is a bit above every kind");

#define IDX_LAYOUT_BYTES  2048 /* literal bytes of one layout, with padding */
#define IDX_LAYOUT_STEPS  64
#define IDX_LAYOUT_CONSTS 4

/* A literal run and the hole after it. Offsets are into struct
 * idx_parsed. A run is compared in pieces of 16 bytes, or 32 where the
 * match is AVX2's ([0] and [1] of the arrays): every piece but the last
 * whole, the last under its tail. */
struct idx_step {
  const char *lit; /* the run: n bytes in its layout's bytes */
  uint16_t n;
  uint16_t last[2]; /* where its last piece starts in it */
  uint16_t need[2]; /* the bytes from its first a match may read before
                       the hole's own checks: its pieces, and 16 more
                       for the hole (int_at() reads a word at once) */
  uint32_t tail[2]; /* the bits of its last piece past its end */
  uint8_t hole;     /* H_*, with IDX_H_CONSTS */
  uint8_t c0, nc;   /* its constants: cst[c0, c0 + nc) */
  uint16_t field; /* IDX_H_STR: an idx_str; IDX_H_INT: an int64_t; H_TIME_*: an
                     idx_numtok */
  uint32_t room;  /* IDX_H_SKIP*: the levels the value may open */
  /* What the hole held last time, when it was short: pid, tid, device
   * and stream are the same event after event, and so are the first
   * eight digits of ts. IDX_H_INT: its bytes and the one after them (under
   * mask), their value and length (0: none yet); IDX_H_TIME_US: its first
   * eight bytes when all digits (0: none yet), and their value. */
  uint64_t memo_x, memo_mask;
  int64_t memo_v;
  unsigned memo_k;
  /* IDX_H_INT, once the memo was met again: its k digits and the next
   * run, when they fit in 16 bytes (fuse_mask: their bits; 0: none), so
   * that an event with the same value there matches both at once. */
  uint32_t fuse_mask;
  char fuse[16];
};

/* A string value inside a literal run (ph, cat): the same in every event
 * that matches, so the field points into the event's run. */
struct idx_cst {
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
  struct idx_step step[IDX_LAYOUT_STEPS];
  struct idx_cst cst[IDX_LAYOUT_CONSTS];
  /* Runs packed one after the other, read by unaligned loads: a last
   * piece may read up to 31 bytes past its run. */
  char bytes[IDX_LAYOUT_BYTES];
};

#define IDX_AT(e, off, type) ((type *)(void *)((char *)(e) + (off)))

/* The layouts one thread learnt, for one nesting and unit; zeroed: none. */
struct idx_layouts {
  struct idx_layout *l[IDX_LAYOUTS]; /* the most recently matched first */
  unsigned n;
  unsigned depth; /* what they were learnt for */
  int scale;
  struct idx_layout *spare; /* the next one learnt goes here */
  unsigned wait;            /* events to let pass before learning again */
  unsigned fails;           /* learnt nothing this many times in a row */
  int wide;                 /* idx_scan_wide() when they were learnt */
  idx_strict_fn strict;     /* idx_reader_judge(); NULL: none asked */
};

/* The event at p ('{'), nesting depth, ts/dur at scale (>= 0), against
 * every layout: 1, with *e as idx_fast_event() gives it and *close at
 * its '}', when one matches. Reads nothing at
 * or past end. Layouts of another depth or scale are forgotten. */
int idx_layouts_match(struct idx_layouts *t, const char *p, const char *end,
                      unsigned depth, int scale, struct idx_parsed *e,
                      const char **close);

/* Learns the layout of the event [p, close] that the token walk read into
 * *walked (at that depth and scale), unless it has a shape no layout
 * holds or learning backs off after failures. Numbers may be read up to
 * end. */
void idx_layouts_learn(struct idx_layouts *t, const char *p, const char *close,
                       const char *end, unsigned depth, int scale,
                       const struct idx_parsed *walked);
void idx_layouts_free(struct idx_layouts *t);

/* Layouts on (the default) or off, for tests and benchmarks; the first
 * use reads TRACED_LAYOUTS ("off"). Call before any reader runs. */
void idx_layouts_select(int on);
int idx_layouts_enabled(void);

/* Between the two files of the layouts. The value a hole skips at p, as
 * reader_event.c's skip_value() would, inside room levels: its end, or
 * NULL. idx_num_fast(), out of line. The event at p against l alone,
 * by the width t was learnt with (as idx_layouts_match()). Every layout
 * of t freed, t set for depth and scale. */
const char *idx_layout_skip(const char *p, const char *end, unsigned room);
const char *idx_layout_num(const char *p, const char *end, unsigned scale,
                           int64_t *v);
int idx_layout_match(const struct idx_layouts *t, struct idx_layout *l,
                     const char *p, const char *end, struct idx_parsed *e,
                     const char **close);
void idx_layouts_forget(struct idx_layouts *t, unsigned depth, int scale);

/* ---- the walker (reader_walk.c) ---- */

/*
 * One thread's way through the events of a text: a layout when one
 * matches, else the token walk over stage-1 masks of a window of the text
 * it scans itself, learning the event's layout then. Zeroed: ready.
 */
struct idx_walker {
  struct idx_layouts layouts;
  struct idx_scan_map win; /* masks of [win.base, win.base + win.len) */
  int win_ok;              /* win is of the current text */
  struct idx_walk walk;
  const char *at; /* set by idx_walker_event(): the event's '}' */
  int layouts_on; /* 1 on, -1 off, 0 not asked yet (idx_layouts_enabled) */
};

/* A new text: the window is stale. */
static inline void idx_walker_text(struct idx_walker *w)
{
  w->win_ok = 0;
}

/* idx_walker_event() past the layouts (reader_walk.c). */
int idx_walker_slow(struct idx_walker *w, const char *p, const char *end,
                    unsigned depth, int scale, struct idx_parsed *e);

/* idx_walker_event() by a layout, or 0. */
static inline int idx_walker_layout(struct idx_walker *w, const char *p,
                                    const char *end, unsigned depth, int scale,
                                    struct idx_parsed *e)
{
  return w->layouts_on > 0 && scale >= 0 &&
         idx_layouts_match(&w->layouts, p, end, depth, scale, e, &w->at);
}

/* The event at p ('{', in the current text, which ends at end) at
 * nesting depth, ts/dur at scale (-1: the format is unsettled), into *e
 * as idx_parse_event() would parse it: IDX_W_OK with w->at on its '}';
 * IDX_W_BAIL where reader_event.c must parse it; TR_ENOMEM. Inline, so
 * that an event a layout takes costs no call but the match. */
static inline int idx_walker_event(struct idx_walker *w, const char *p,
                                   const char *end, unsigned depth, int scale,
                                   struct idx_parsed *e)
{
  if (idx_walker_layout(w, p, end, depth, scale, e))
    return IDX_W_OK;
  return idx_walker_slow(w, p, end, depth, scale, e);
}

void idx_walker_free(struct idx_walker *w);

/* ---- events walked ahead (reader_batch.c) ---- */

/* At most this many events a batch (264 bytes each): a 1 MB chunk of
 * kineto holds about 3800. */
#define IDX_BATCH_MAX 4096

struct idx_batch {
  const char *start; /* the '{' of its first event, or NULL */
  const char *stop;  /* where the walk stopped */
  int stop_elem;     /* at stop the reader is in ELEM (else ELEM_NEXT) */
  unsigned depth;    /* the events' nesting it was walked for */
  int scale;         /* and the unit */
  size_t n;
  /* Set by the reader's thread when it needs the chunk while the walk is
   * on: the walk stops after the event it is at, and the reader takes the
   * events walked so far (source.c). */
  _Atomic int cut;
  struct idx_batch_ev {
    struct idx_event ev; /* ts and dur converted at scale */
    int bad;             /* malformed: counted, not handed over */
    int over;            /* over IDX_EVENT_CEILING: the same */
  } * ev;                /* IDX_BATCH_MAX, allocated at the first build */
};

/* Walks the events of text[0..len) (a chunk of the document) with w,
 * from the first '{' that looks like an event's, at nesting depth with
 * ts/dur at scale, into b, until b->cut is set. 0 or TR_ENOMEM. */
int idx_batch_build(struct idx_batch *b, struct idx_walker *w, const char *text,
                    size_t len, unsigned depth, int scale);
void idx_batch_free(struct idx_batch *b);

/* Parses the event object whose '{' is the next token, at nesting depth
 * (2 in traceEvents, 1 in a bare array), into *out as idx_parse_event()
 * would (all of it but out->scale reset first). IDX_W_OK with w->at on
 * its '}'; IDX_W_BAIL where reader_event.c must parse it (the window's
 * masks say nothing of escapes, UTF-8 or errors: the caller also checks
 * the event's blocks are clean); IDX_W_SHORT. */
int idx_fast_event(struct idx_walk *w, unsigned depth, struct idx_parsed *out);

#endif
