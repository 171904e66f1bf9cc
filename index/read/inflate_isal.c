/* The ISA-L inflater (see read_int.h): igzip's streaming isal_inflate(),
 * which reads the gzip header and checks the CRC itself (ISAL_GZIP). */
#ifdef TRACED_HAVE_ISAL

#include <isa-l/igzip_lib.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/tr.h"
#include "index/read/read_int.h"

/*
 * Hunting for a block boundary. Stock ISA-L cannot stop at a block's end,
 * but it stops where its input runs out, and a run that ends inside a
 * dynamic block's header (tens of bytes) leaves it in ISAL_BLOCK_HDR,
 * the header's bits kept: a boundary, its bit offset known. Feeding a
 * whole block in 32-byte pieces would cost ~1,000 calls, each moving
 * ISA-L's 32 KiB history; so the hunt feeds 4 KiB pieces, keeping what
 * it needs to go back to the state before each, and when a piece read a
 * new header (the Huffman tables changed) it goes back and feeds that
 * piece again in 256-byte pieces, and the one of those in 32-byte ones
 * (hunt()).
 *
 * Going back costs little: the tables are kept once a hunt (they change
 * only at a header), the state's small fields before each piece, and the
 * history is the output before the piece, taken back from the caller's
 * buffer (io->out_first) where it holds it, else copied aside.
 */

/* The parts of struct inflate_state around the Huffman tables. */
#define HEAD_END   offsetof(struct inflate_state, lit_huff_code)
#define TABLES_END offsetof(struct inflate_state, block_state)
#define MID_END    offsetof(struct inflate_state, tmp_out_buffer)

struct idx_inflate {
  struct inflate_state st;    /* ~87 KB: history and Huffman tables */
  int hunt;                   /* stop at the next block boundary */
  struct inflate_state *snap; /* hunting: st before the last piece */
  int snap_tables;            /* snap holds st's current tables */
  int snap_history;           /* snap holds the history (else: out) */
};

int idx_inflate_new(struct idx_inflate **out)
{
  struct idx_inflate *z = calloc(1, sizeof(*z));

  if (z == NULL)
    return TR_ENOMEM;
  idx_inflate_reset(z);
  *out = z;
  return 0;
}

void idx_inflate_reset(struct idx_inflate *z)
{
  isal_inflate_init(&z->st);
  z->st.crc_flag = ISAL_GZIP;
  z->hunt = 0;
}

int idx_inflate_resume(struct idx_inflate *z, unsigned bits, unsigned nbits,
                       const uint8_t *win, size_t win_len)
{
  isal_inflate_init(&z->st);
  z->st.crc_flag = ISAL_DEFLATE;
  z->hunt = 0;
  if (win_len > 0 &&
      isal_inflate_set_dict(&z->st, (uint8_t *)win, (uint32_t)win_len) !=
          ISAL_DECOMP_OK)
    return TR_EFORMAT;
  /* The block's first bits, as if ISA-L had read its first byte. */
  z->st.read_in = bits;
  z->st.read_in_length = (int32_t)nbits;
  return 0;
}

unsigned idx_inflate_unused_bytes(const struct idx_inflate *z)
{
  /* ISA-L reads up to 8 bytes ahead into read_in; past the last block,
   * its whole bytes are the trailer's (the partial one is padding). */
  return (unsigned)z->st.read_in_length / 8;
}

void idx_inflate_hunt(struct idx_inflate *z, int on)
{
  if (on && !z->hunt)
    z->snap_tables = 0;
  z->hunt = on;
}

unsigned idx_inflate_pending_bits(const struct idx_inflate *z)
{
  /* Before a header that did not fit, read_in holds the bits before it
   * and tmp_in_buffer the bytes after them (igzip_inflate.c,
   * read_header_stateful()). */
  return (unsigned)z->st.read_in_length + 8u * (unsigned)z->st.tmp_in_size;
}

/* Between two blocks of the member's deflate data, with every byte of
 * the one before handed out: no literal, copy or temporary output
 * pending. wrapper_flag: the gzip header has been read. */
static int at_boundary(const struct inflate_state *st)
{
  return (st->block_state == ISAL_BLOCK_NEW_HDR ||
          st->block_state == ISAL_BLOCK_HDR) &&
         st->wrapper_flag != 0 && st->write_overflow_len == 0 &&
         st->copy_overflow_length == 0 &&
         st->tmp_out_valid == st->tmp_out_processed;
}

/* A person's words for an isal_inflate() error. */
static const char *describe(int rc)
{
  switch (rc) {
  case ISAL_INCORRECT_CHECKSUM: return "gzip CRC mismatch";
  case ISAL_INVALID_WRAPPER: return "bad gzip header";
  case ISAL_UNSUPPORTED_METHOD: return "gzip method is not deflate";
  default: return "corrupt deflate data";
  }
}

/* One isal_inflate() call on at most in_cap bytes of io->in. */
static int run_once(struct idx_inflate *z, struct idx_inflate_io *io,
                    size_t in_cap)
{
  size_t in_len = io->in_len < in_cap ? io->in_len : in_cap;
  int rc;

  /* avail_in/avail_out are 32-bit: source.c's buffers are far smaller. */
  z->st.next_in = (uint8_t *)io->in;
  z->st.avail_in = (uint32_t)in_len;
  z->st.next_out = io->out;
  z->st.avail_out = (uint32_t)io->out_len;
  rc = isal_inflate(&z->st);
  io->in_len -= (size_t)(z->st.next_in - io->in);
  io->in = z->st.next_in;
  io->out = z->st.next_out;
  io->out_len = z->st.avail_out;
  return rc;
}

/* Keeps what going back to st before the next piece needs (above);
 * io: the piece's buffers. */
static void snap_save(struct idx_inflate *z, const struct idx_inflate_io *io)
{
  size_t hist = (size_t)z->st.tmp_out_valid;

  if (!z->snap_tables)
    memcpy((char *)z->snap + HEAD_END, (char *)&z->st + HEAD_END,
           TABLES_END - HEAD_END);
  z->snap_tables = 1;
  memcpy(z->snap, &z->st, HEAD_END);
  memcpy((char *)z->snap + TABLES_END, (char *)&z->st + TABLES_END,
         MID_END - TABLES_END);
  /* With nothing pending, the history is the output's last bytes. */
  z->snap_history = z->st.tmp_out_processed != z->st.tmp_out_valid ||
                    io->out_first == NULL ||
                    (size_t)(io->out - io->out_first) < hist;
  if (z->snap_history)
    memcpy(z->snap->tmp_out_buffer, z->st.tmp_out_buffer, hist);
}

/* Back to the state snap_save() kept; io: the piece's buffers then. */
static void snap_load(struct idx_inflate *z, const struct idx_inflate_io *io)
{
  memcpy(&z->st, z->snap, MID_END);
  if (z->snap_history)
    memcpy(z->st.tmp_out_buffer, z->snap->tmp_out_buffer,
           (size_t)z->st.tmp_out_valid);
  else
    memcpy(z->st.tmp_out_buffer, io->out - z->st.tmp_out_valid,
           (size_t)z->st.tmp_out_valid);
}

/* Whether a block header was read since the snapshot: its codes are
 * (almost surely) not the last block's. Two blocks with the same codes
 * are one boundary missed, never a wrong one. */
static int tables_changed(const struct idx_inflate *z)
{
  return memcmp((const char *)&z->st + HEAD_END,
                (const char *)z->snap + HEAD_END, TABLES_END - HEAD_END) != 0;
}

/* How a run ended: negative on damage, 1 at the member's end,
 * IDX_INFLATE_BLOCK at a boundary (hunting), else 0. */
static int outcome(const struct idx_inflate *z, int rc, const char **what)
{
  if (rc < 0) {
    *what = describe(rc);
    return TR_EFORMAT;
  }
  if (z->st.block_state == ISAL_BLOCK_FINISH)
    return 1;
  return z->hunt && at_boundary(&z->st) ? IDX_INFLATE_BLOCK : 0;
}

/* Hunting: feeds the first len bytes of io->in in pieces of
 * hunt_step[level] bytes; a piece that read a new header is fed again
 * from the state before it in the next level's smaller pieces, and the
 * last level's pieces are small enough to end inside the header. */
static int hunt(struct idx_inflate *z, struct idx_inflate_io *io, size_t len,
                unsigned level, const char **what)
{
  static const size_t hunt_step[] = { 4096, 256, 32 };
  const unsigned last = sizeof(hunt_step) / sizeof(hunt_step[0]) - 1;
  size_t end = io->in_len - len; /* io->in_len where the piece ends */
  size_t step;
  struct idx_inflate_io before;
  int rc = 0;

  while (rc == 0 && io->in_len > end && io->out_len > 0) {
    before = *io;
    step = io->in_len - end < hunt_step[level] ? io->in_len - end
                                               : hunt_step[level];
    if (level < last)
      snap_save(z, io);
    rc = outcome(z, run_once(z, io, step), what);
    if (rc == 0 && io->in_len == before.in_len && io->out_len == before.out_len)
      break; /* stalled: source.c's checks decide */
    if (rc != 0 || level == last || !tables_changed(z))
      continue;
    snap_load(z, &before);
    rc = hunt(z, &before, before.in_len - io->in_len, level + 1, what);
    *io = before;
    /* Not caught (the header fit in one last-level piece): new tables. */
    z->snap_tables = 0;
  }
  return rc;
}

int idx_inflate_run(struct idx_inflate *z, struct idx_inflate_io *io,
                    const char **what)
{
  if (z->hunt && z->snap == NULL)
    z->snap = malloc(sizeof(*z->snap));
  if (z->hunt && z->snap != NULL) /* out of memory: no hunt, no point */
    return hunt(z, io, io->in_len, 0, what);
  return outcome(z, run_once(z, io, io->in_len), what);
}

const char *idx_inflate_name(void)
{
  return "isal";
}

void idx_inflate_free(struct idx_inflate *z)
{
  if (z == NULL)
    return;
  free(z->snap);
  free(z);
}

#endif
