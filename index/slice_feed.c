/*
 * Ranges of a trace's JSON text into a reader, each inflated from the
 * nearest access point before it (slice.h, struct slice_feed): what lies
 * between the point and the range is inflated and dropped, and a range
 * that starts where the last one ended, or a little after it, goes on
 * inflating rather than starting again.
 */
#include <stdlib.h>

#include "index/slice.h"

/* Bytes inflated at a time. */
#define FEED_BUF (256u << 10)

int slice_feed_open(struct slice_feed *f, int fd, const struct idx_points *pts,
                    struct idx_reader *rd, struct tr_err *err)
{
  *f = (struct slice_feed){ .fd = fd, .pts = pts, .rd = rd, .err = err };
  if ((f->buf = malloc(FEED_BUF)) == NULL)
    return tr_err_set(err, TR_ENOMEM, NULL, "out of memory");
  return 0;
}

void slice_feed_close(struct slice_feed *f)
{
  idx_resume_free(f->rs);
  free(f->buf);
  f->rs = NULL;
  f->buf = NULL;
}

/* Inflates from the point nearest before off, unless the stream open
 * now is before off and no nearer point lies between. 0 or negative. */
static int seek(struct slice_feed *f, uint64_t off)
{
  long i = idx_points_find(f->pts, off);
  int rc;

  if (i < 0)
    return tr_err_set(f->err, TR_EFORMAT, NULL,
                      "no access point before byte %llu",
                      (unsigned long long)off);
  if (f->rs != NULL && f->pos <= off && f->pos >= f->pts->pt[i].out_off)
    return 0;
  idx_resume_free(f->rs);
  f->rs = NULL;
  if ((rc = idx_resume_open(f->fd, f->pts, (uint32_t)i, &f->rs)) != 0)
    return tr_err_set(f->err, rc, NULL, "cannot resume at access point %ld",
                      i);
  f->pos = f->pts->pt[i].out_off;
  return 0;
}

/* The next bytes of the stream, at most `most`, into f->buf: *got, 0 at
 * the end of the file. 0 or negative. */
static int next(struct slice_feed *f, uint64_t most, size_t *got)
{
  size_t cap = most < FEED_BUF ? (size_t)most : FEED_BUF;
  int rc = idx_resume_read(f->rs, (uint8_t *)f->buf, cap, got, f->err);

  f->pos += *got;
  f->text_bytes += *got;
  return rc;
}

int slice_feed_range(struct slice_feed *f, uint64_t a, uint64_t b)
{
  size_t got;
  int rc;

  if ((rc = seek(f, a)) != 0)
    return rc;
  while (f->pos < a) {
    if ((rc = next(f, a - f->pos, &got)) != 0)
      return rc;
    if (got == 0)
      return tr_err_set(f->err, TR_EFORMAT, NULL,
                        "the file ends before byte %llu",
                        (unsigned long long)a);
  }
  while (f->pos < b) {
    if (f->cancel != NULL && atomic_load(f->cancel))
      return TR_ECONFLICT;
    if ((rc = next(f, b - f->pos, &got)) != 0)
      return rc;
    if (got == 0)
      return b == UINT64_MAX ? 0
                             : tr_err_set(f->err, TR_EFORMAT, NULL,
                                          "the file ends before byte %llu",
                                          (unsigned long long)b);
    if ((rc = idx_reader_feed(f->rd, f->buf, got, f->err)) != 0)
      return rc;
  }
  return 0;
}
