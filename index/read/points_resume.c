/*
 * Inflating from an access point (read.h) to the end of the file, with
 * the build's inflater (read_int.h: ISA-L or zlib): raw deflate from the
 * block's bit, primed with the bits of its first byte, the window as its
 * history (zlib's examples/zran.c); at the member's end its 8-byte trailer
 * is skipped and the next members are read as gzip, each CRC checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/read/read_int.h"
#include "index/read/read.h"

#define IN_BYTES      (256u * 1024)
#define TRAILER_BYTES 8 /* CRC-32 and ISIZE (RFC 1952, 2.2) */

enum mode {
  M_PLAIN, /* plain file: pread() */
  M_RAW,   /* inside the member the point is in, no gzip wrapper */
  M_GZIP,  /* later members, each with its wrapper */
  M_END
};

struct idx_resume {
  int fd;            /* borrowed */
  uint64_t next_off; /* the file offset after what in[] holds */
  int eof;           /* pread() returned 0 */
  enum mode mode;
  struct idx_inflate *z;    /* NULL for a plain file */
  struct idx_inflate_io io; /* io.in: what is left of in[] */
  uint8_t in[IN_BYTES];
};

/* The file offset of io.in. */
static uint64_t in_off(const struct idx_resume *r)
{
  return r->next_off - r->io.in_len;
}

/* Reads more input when none is left. 0 or -errno. */
static int fill(struct idx_resume *r)
{
  ssize_t n;

  if (r->io.in_len > 0 || r->eof)
    return 0;
  do
    n = pread(r->fd, r->in, IN_BYTES, (off_t)r->next_off);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  r->eof = n == 0;
  r->next_off += (uint64_t)n;
  r->io.in = r->in;
  r->io.in_len = (size_t)n;
  return 0;
}

/* The inflater started at point i's block: its first byte's bits that
 * belong to it, its window. 0, TR_EFORMAT or TR_ENOMEM. */
static int start_block(struct idx_resume *r, const struct idx_points *p,
                       uint32_t i)
{
  const struct idx_point *pt = &p->pt[i];
  unsigned skip = (unsigned)(pt->in_bit % 8); /* bits of the last block */
  uint8_t *win = malloc(IDX_POINT_WINDOW);
  uint8_t b = 0;
  int rc;

  if (win == NULL)
    return TR_ENOMEM;
  rc = idx_points_window(p, i, win);
  if (rc == 0 && skip != 0 && pread(r->fd, &b, 1, (off_t)(pt->in_bit / 8)) != 1)
    rc = TR_EFORMAT;
  if (rc == 0 && skip != 0)
    r->next_off++;
  if (rc == 0)
    rc = idx_inflate_resume(r->z, (unsigned)b >> skip, skip ? 8 - skip : 0, win,
                            pt->win_len);
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
  r->next_off = pt->in_bit / 8;
  r->mode = pt->kind == IDX_POINT_PLAIN    ? M_PLAIN
            : pt->kind == IDX_POINT_MEMBER ? M_GZIP
                                           : M_RAW;
  if (r->mode != M_PLAIN)
    rc = idx_inflate_new(&r->z);
  if (rc == 0 && r->mode == M_RAW)
    rc = start_block(r, p, i);
  if (rc != 0) {
    idx_resume_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* At a member's end: past the raw member's trailer (the inflater may have
 * read into it), then the next member, or the end of the file. 0 or
 * negative. */
static int next_member(struct idx_resume *r)
{
  int rc;

  if (r->mode == M_RAW) {
    r->next_off = in_off(r) - idx_inflate_unused_bytes(r->z) + TRAILER_BYTES;
    r->io.in_len = 0;
  }
  if ((rc = fill(r)) != 0)
    return rc;
  if (r->io.in_len == 0) {
    r->mode = M_END;
    return 0;
  }
  r->mode = M_GZIP;
  idx_inflate_reset(r->z);
  return 0;
}

/* One idx_inflate_run() into buf; *got bytes. 0 or negative. */
static int step(struct idx_resume *r, uint8_t *buf, size_t cap, size_t *got)
{
  const char *what = NULL;
  size_t in_before;
  int rc = fill(r);

  if (rc != 0)
    return rc;
  /* The inflaters' counts are 32-bit. */
  r->io.out = buf;
  r->io.out_len = cap < (1u << 30) ? cap : (1u << 30);
  r->io.out_first = buf;
  in_before = r->io.in_len;
  rc = idx_inflate_run(r->z, &r->io, &what);
  *got = (size_t)(r->io.out - buf);
  if (rc == 1)
    return next_member(r);
  /* No progress: out of input at the end of the file (truncated), or
   * refusing what it has (both inflaters take all they are given). */
  if (rc == 0 && *got == 0 && r->io.in_len == in_before &&
      (r->eof || in_before > 0))
    return TR_EFORMAT;
  return rc < 0 ? TR_EFORMAT : 0;
}

/* A plain file's next bytes. */
static int read_plain(struct idx_resume *r, uint8_t *buf, size_t cap,
                      size_t *got)
{
  ssize_t n;

  do
    n = pread(r->fd, buf, cap, (off_t)r->next_off);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  r->next_off += (uint64_t)n;
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
                      (unsigned long long)in_off(r));
  return 0;
}

void idx_resume_free(struct idx_resume *r)
{
  if (r == NULL)
    return;
  idx_inflate_free(r->z);
  free(r);
}
