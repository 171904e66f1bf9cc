/* The zlib inflater (see read_int.h), the portable fallback. */
#ifndef TRACED_HAVE_ISAL

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/tr.h"
#include "index/read/read_int.h"

struct idx_inflate {
  z_stream zs;
  int hunt; /* stop at block boundaries (Z_BLOCK) */
};

int idx_inflate_new(struct idx_inflate **out)
{
  struct idx_inflate *z = calloc(1, sizeof(*z));

  if (z == NULL)
    return TR_ENOMEM;
  /* 15 + 16: gzip wrapper only (the caller has seen the magic bytes). */
  if (inflateInit2(&z->zs, 15 + 16) != Z_OK) {
    free(z);
    return TR_ENOMEM;
  }
  *out = z;
  return 0;
}

void idx_inflate_reset(struct idx_inflate *z)
{
  /* 15 + 16: back to gzip after a resume's raw deflate. */
  inflateReset2(&z->zs, 15 + 16);
  z->hunt = 0;
}

int idx_inflate_resume(struct idx_inflate *z, unsigned bits, unsigned nbits,
                       const uint8_t *win, size_t win_len)
{
  z->hunt = 0;
  /* -15: raw deflate; then zlib's examples/zran.c: the first byte's bits
   * primed, the window as dictionary. */
  if (inflateReset2(&z->zs, -15) != Z_OK ||
      (nbits > 0 && inflatePrime(&z->zs, (int)nbits, (int)bits) != Z_OK) ||
      (win_len > 0 &&
       inflateSetDictionary(&z->zs, win, (uInt)win_len) != Z_OK))
    return TR_EFORMAT;
  return 0;
}

unsigned idx_inflate_unused_bytes(const struct idx_inflate *z)
{
  (void)z; /* zlib hands back every whole byte it did not use */
  return 0;
}

void idx_inflate_hunt(struct idx_inflate *z, int on)
{
  z->hunt = on;
}

unsigned idx_inflate_pending_bits(const struct idx_inflate *z)
{
  /* zlib.h, data_type: the unused bits of the last byte taken. */
  return (unsigned)z->zs.data_type & 7;
}

/* After a Z_BLOCK run: at the end of a block that is not the stream's
 * last (zlib.h: data_type 128 "end of block or header", 64 "last
 * block"). The end of the gzip header counts: a block starts there. */
static int at_boundary(const struct idx_inflate *z)
{
  return (z->zs.data_type & 128) != 0 && (z->zs.data_type & 64) == 0;
}

int idx_inflate_run(struct idx_inflate *z, struct idx_inflate_io *io,
                    const char **what)
{
  int rc;

  /* uInt is 32-bit: source.c's buffers are far smaller. */
  z->zs.next_in = (Bytef *)io->in;
  z->zs.avail_in = (uInt)io->in_len;
  z->zs.next_out = io->out;
  z->zs.avail_out = (uInt)io->out_len;
  rc = inflate(&z->zs, z->hunt ? Z_BLOCK : Z_NO_FLUSH);
  io->in = z->zs.next_in;
  io->in_len = z->zs.avail_in;
  io->out = z->zs.next_out;
  io->out_len = z->zs.avail_out;
  if (rc == Z_STREAM_END)
    return 1;
  /* Z_BUF_ERROR too: a hunt that starts right at a boundary returns at
   * once, without progress (zlib's inflate.c, case TYPE). */
  if ((rc == Z_OK || rc == Z_BUF_ERROR) && z->hunt && at_boundary(z))
    return IDX_INFLATE_BLOCK;
  if (rc == Z_OK || rc == Z_BUF_ERROR)
    return 0;
  if (rc == Z_DATA_ERROR && z->zs.msg != NULL &&
      strcmp(z->zs.msg, "incorrect data check") == 0)
    *what = "gzip CRC mismatch";
  else if (rc == Z_DATA_ERROR && z->zs.msg != NULL &&
           strcmp(z->zs.msg, "incorrect length check") == 0)
    *what = "gzip length mismatch";
  else if (rc == Z_DATA_ERROR && z->zs.msg != NULL &&
           strstr(z->zs.msg, "header") != NULL)
    *what = "bad gzip header";
  else
    *what = rc == Z_MEM_ERROR ? "out of memory" : "corrupt deflate data";
  return TR_EFORMAT;
}

const char *idx_inflate_name(void)
{
  return "zlib";
}

void idx_inflate_free(struct idx_inflate *z)
{
  if (z == NULL)
    return;
  inflateEnd(&z->zs);
  free(z);
}

#endif
