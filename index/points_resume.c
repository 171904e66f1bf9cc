/*
 * Inflating from an access point (points.h) to the end of the file, with
 * zlib in either build: raw inflate primed with the bits of the block's
 * first byte and the window as its dictionary, as zlib's examples/zran.c
 * does; at the member's end its 8-byte trailer is skipped and the next
 * members are read as gzip. A slice reads a few MB from a point, so
 * zlib's speed against ISA-L's matters little there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "index/points.h"

#define IN_BYTES      (64u * 1024)
#define TRAILER_BYTES 8 /* CRC-32 and ISIZE (RFC 1952, 2.2) */

enum mode {
  M_PLAIN, /* plain file: pread() */
  M_RAW,   /* inside the member the point is in, no gzip wrapper */
  M_GZIP,  /* later members, each with its wrapper */
  M_END
};

struct idx_resume {
  int fd;       /* borrowed */
  uint64_t off; /* next file byte to read */
  int eof;      /* pread() returned 0 */
  enum mode mode;
  unsigned skip; /* trailer bytes still to skip */
  int zinit;     /* zs needs inflateEnd() */
  z_stream zs;
  uint8_t in[IN_BYTES];
};

/* Reads more input when zs has none. 0 or -errno. */
static int fill(struct idx_resume *r)
{
  ssize_t n;

  if (r->zs.avail_in > 0 || r->eof)
    return 0;
  do
    n = pread(r->fd, r->in, IN_BYTES, (off_t)r->off);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  r->eof = n == 0;
  r->off += (uint64_t)n;
  r->zs.next_in = r->in;
  r->zs.avail_in = (uInt)n;
  return 0;
}

/* Positions a raw inflate at the block: the bits of its first byte that
 * belong to it primed, the window set. 0 or TR_EFORMAT. */
static int start_block(struct idx_resume *r, const struct idx_points *p,
                       uint32_t i)
{
  const struct idx_point *pt = &p->pt[i];
  unsigned bits = (unsigned)(pt->in_bit % 8);
  uint8_t *win = NULL;
  uint8_t b;
  int rc = 0;

  if (bits != 0) {
    if (pread(r->fd, &b, 1, (off_t)(pt->in_bit / 8)) != 1)
      return TR_EFORMAT;
    r->off++;
    if (inflatePrime(&r->zs, (int)(8 - bits), b >> bits) != Z_OK)
      return TR_EFORMAT;
  }
  if (pt->win_len == 0)
    return 0;
  if ((win = malloc(IDX_POINT_WINDOW)) == NULL)
    return TR_ENOMEM;
  rc = idx_points_window(p, i, win);
  if (rc == 0 && inflateSetDictionary(&r->zs, win, pt->win_len) != Z_OK)
    rc = TR_EFORMAT;
  free(win);
  return rc;
}

int idx_resume_open(int fd, const struct idx_points *p, uint32_t i,
                    struct idx_resume **out)
{
  struct idx_resume *r;
  const struct idx_point *pt;
  int rc = 0;

  if (i >= p->n)
    return TR_EINVAL;
  pt = &p->pt[i];
  if ((r = calloc(1, sizeof(*r))) == NULL)
    return TR_ENOMEM;
  r->fd = fd;
  r->off = pt->in_bit / 8;
  r->mode = pt->kind == IDX_POINT_PLAIN    ? M_PLAIN
            : pt->kind == IDX_POINT_MEMBER ? M_GZIP
                                           : M_RAW;
  if (r->mode != M_PLAIN) {
    /* -15: raw deflate; 15 + 16: a gzip member. */
    if (inflateInit2(&r->zs, r->mode == M_RAW ? -15 : 15 + 16) != Z_OK)
      rc = TR_ENOMEM;
    r->zinit = rc == 0;
  }
  if (rc == 0 && r->mode == M_RAW)
    rc = start_block(r, p, i);
  if (rc != 0) {
    idx_resume_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* At a member's end: skips what is left of the raw member's trailer,
 * then starts the next member, or ends at the end of the file. 0 or
 * -errno. */
static int next_member(struct idx_resume *r)
{
  unsigned n;
  int rc;

  if (r->mode == M_RAW)
    r->skip = TRAILER_BYTES;
  while (r->skip > 0) {
    if ((rc = fill(r)) != 0)
      return rc;
    if (r->zs.avail_in == 0)
      return TR_EFORMAT; /* truncated trailer */
    n = r->skip < r->zs.avail_in ? r->skip : r->zs.avail_in;
    r->zs.next_in += n;
    r->zs.avail_in -= n;
    r->skip -= n;
  }
  if ((rc = fill(r)) != 0)
    return rc;
  if (r->zs.avail_in == 0) {
    r->mode = M_END;
    return 0;
  }
  r->mode = M_GZIP;
  return inflateReset2(&r->zs, 15 + 16) == Z_OK ? 0 : TR_EFORMAT;
}

/* One inflate() step into buf; *got bytes. 0 or negative. */
static int step(struct idx_resume *r, uint8_t *buf, size_t cap, size_t *got)
{
  int rc = fill(r), zrc;

  if (rc != 0)
    return rc;
  r->zs.next_out = buf;
  r->zs.avail_out = (uInt)(cap < UINT32_MAX ? cap : UINT32_MAX);
  zrc = inflate(&r->zs, Z_NO_FLUSH);
  *got = (size_t)(r->zs.next_out - buf);
  if (zrc == Z_STREAM_END)
    return next_member(r);
  if (zrc == Z_BUF_ERROR && r->eof && r->zs.avail_in == 0)
    return TR_EFORMAT; /* truncated */
  return zrc == Z_OK || zrc == Z_BUF_ERROR ? 0 : TR_EFORMAT;
}

/* A plain file's next bytes. */
static int read_plain(struct idx_resume *r, uint8_t *buf, size_t cap,
                      size_t *got)
{
  ssize_t n;

  do
    n = pread(r->fd, buf, cap, (off_t)r->off);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  r->off += (uint64_t)n;
  *got = (size_t)n;
  if (n == 0)
    r->mode = M_END;
  return 0;
}

int idx_resume_read(struct idx_resume *r, uint8_t *buf, size_t cap, size_t *got,
                    struct tr_err *err)
{
  int rc = 0;

  *got = 0;
  if (r->mode == M_PLAIN)
    rc = read_plain(r, buf, cap, got);
  while (rc == 0 && *got == 0 && r->mode != M_END && cap > 0)
    rc = step(r, buf, cap, got);
  if (rc != 0)
    return tr_err_set(err, rc, NULL, "resume: %s at byte %llu",
                      rc == TR_EFORMAT ? "damaged or truncated gzip"
                                       : strerror(-rc),
                      (unsigned long long)(r->off - r->zs.avail_in));
  return 0;
}

void idx_resume_free(struct idx_resume *r)
{
  if (r == NULL)
    return;
  if (r->zinit)
    inflateEnd(&r->zs);
  free(r);
}
