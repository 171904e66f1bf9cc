/*
 * One gzip inflater, internal to index/: ISA-L (inflate_isal.c) when built
 * with TRACED_HAVE_ISAL, else zlib (inflate_zlib.c). Only source.c's
 * inflate thread uses it; an inflater is used by one thread at a time.
 */
#ifndef IDX_INFLATE_H
#define IDX_INFLATE_H

#include <stddef.h>
#include <stdint.h>

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
 * boundary (index/read/points.h). */
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
 * access point (index/read/points.h): nbits (0..7) bits of the block's first
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

#endif
