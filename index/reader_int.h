/*
 * Internals of the streaming reader (reader.c, reader_event.c,
 * reader_num.c). Any thread; nothing here blocks or allocates except where
 * said.
 */
#ifndef IDX_READER_INT_H
#define IDX_READER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "index/event.h"

/* Nesting allowed in the whole document (the top object is level 1):
 * deeper input is an error, never a deep recursion. */
#define IDX_MAX_DEPTH 256

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

/* Results of idx_num_parse(). */
enum { IDX_NUM_OK = 0, IDX_NUM_NAN = 1, IDX_NUM_RANGE = 2 };

/* The number written in p[0..n) (JSON grammar, leniently: a leading '+',
 * leading zeros and a bare '.5' or '5.' are accepted) times 10^scale,
 * exactly, digits beyond the integer truncated toward zero: ("1.0009", 3)
 * -> 1000, ("-0.0005", 3) -> 0, ("1.5e3", 0) -> 1500. Never goes through a
 * double. IDX_NUM_NAN when p is not a number, IDX_NUM_RANGE when the
 * result does not fit an int64. */
int idx_num_parse(const char *p, size_t n, unsigned scale, int64_t *out);

/* The common shapes of a number at p ("123", "4203669604595.407"; no
 * exponent, at most 18 digits kept) parsed as idx_num_parse() does, in one
 * pass: returns the byte after the number, or NULL when the general path
 * is needed. Does not look at what follows the number. */
const char *idx_num_fast(const char *p, const char *end, unsigned scale,
                         int64_t *out);

/* 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or code points
 * past U+10FFFF), else 0. */
int idx_utf8_valid(const char *s, size_t n);

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

/* Parses the event object at c->p ('{') into *out (all of it but
 * out->scale reset first).
 * Returns IDX_P_OK with c->p after the event, IDX_P_MORE, IDX_P_COPY (only
 * when !c->mut), or an error with c->p at the bad byte. */
int idx_parse_event(struct idx_cur *c, struct idx_parsed *out);

/* Converts ts and dur to integer ns at scale (3: microseconds, 0:
 * nanoseconds) unless the parser did already; sets IDX_HAS_TS/DUR, or
 * e->bad when a value is out of range or dur is negative. */
void idx_parsed_times(struct idx_parsed *e, unsigned scale);

/* deviceProperties value at c->p: copies [0].name into device (NUL
 * terminated, cut at a character boundary to fit size); leaves device
 * alone when the value has another shape. Same returns as above. */
int idx_parse_devprops(struct idx_cur *c, char *device, size_t size);

/* distributedInfo value at c->p: stores "rank" in *rank when it is an
 * integer. Same returns as above. */
int idx_parse_distinfo(struct idx_cur *c, int64_t *rank);

#endif
