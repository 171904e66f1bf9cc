/*
 * Access points (read.h): the list, its file, and its checks.
 *
 * The file, little-endian, every count checked on load:
 *
 *   "TRCDPTS\0", version u32, count u32, the source's size u64, mtime
 *   seconds u64 and nanoseconds u64, deflated window bytes u64, the
 *   slicer's bytes u64 (56 bytes)
 *   count entries: out_off u64, in_bit u64, kind u32, win_len u32,
 *     wz_len u32 (28 bytes)
 *   the windows, each a zlib stream (compress2()) of win_len bytes, in
 *   the entries' order
 *   the slicer's bytes (index/slice/slice_figs.c), opaque here
 *
 * A window is deflated on its own, so that one point costs one small
 * inflate; its zlib wrapper's Adler-32 catches a damaged window.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "index/read/read.h"

#define MAGIC       "TRCDPTS"
/* 3: the slicer's bytes hold the findings' index. An older file is
 * refused as any that is not of its trace: a slice then reads the whole
 * file (docs/SLICES.md). */
#define VERSION     3
#define HEAD_BYTES  56
#define FIGS_LEN_AT 48 /* the header's slicer's bytes, set last */
#define ENTRY_BYTES 28
/* Level 1: a trace's 32 KiB window deflates to ~3.4 KB at level 1, ~2.6
 * KB at level 9, but level 9 costs ~4M instructions a window, which at 8
 * MB spacing is 3% of indexing by itself (docs/BENCHMARKS.md, "Access
 * points"). */
#define WZ_LEVEL    1
/* A points file's ceiling: 1,000 points of 4 GB at 4 MB spacing weigh
 * a few MB; anything near this is not ours. */
#define FILE_MAX    (256l << 20)

static void put_u32(uint8_t *b, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *b, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *b)
{
  uint32_t v = 0;

  for (int i = 3; i >= 0; i--)
    v = v << 8 | b[i];
  return v;
}

static uint64_t get_u64(const uint8_t *b)
{
  uint64_t v = 0;

  for (int i = 7; i >= 0; i--)
    v = v << 8 | b[i];
  return v;
}

/* Room for one more point and a deflated window. 0 or TR_ENOMEM. */
static int reserve(struct idx_points *p, size_t wz_more)
{
  void *np;
  size_t cap;

  if (p->n == p->cap) {
    cap = p->cap ? 2 * (size_t)p->cap : 64;
    np = realloc(p->pt, cap * sizeof(*p->pt));
    if (np == NULL)
      return TR_ENOMEM;
    p->pt = np;
    p->cap = (uint32_t)cap;
  }
  if (p->wz_cap - p->wz_len >= wz_more)
    return 0;
  cap = p->wz_cap ? 2 * p->wz_cap : 64 * 1024;
  while (cap - p->wz_len < wz_more)
    cap *= 2;
  np = realloc(p->wz, cap);
  if (np == NULL)
    return TR_ENOMEM;
  p->wz = np;
  p->wz_cap = cap;
  return 0;
}

/* Whether pt may follow the points of p (the load checks the same). */
static int follows(const struct idx_points *p, const struct idx_point *pt)
{
  const struct idx_point *last = p->n ? &p->pt[p->n - 1] : NULL;

  if (pt->kind > IDX_POINT_PLAIN || pt->win_len > IDX_POINT_WINDOW ||
      pt->win_len > pt->out_off)
    return 0;
  if (pt->kind != IDX_POINT_BLOCK && pt->win_len != 0)
    return 0;
  return last == NULL ||
         (pt->out_off > last->out_off && pt->in_bit > last->in_bit);
}

int idx_points_add(struct idx_points *p, const struct idx_point *pt,
                   const uint8_t *win)
{
  uLongf zlen = compressBound(IDX_POINT_WINDOW);
  struct idx_point *q;

  if (p->n >= IDX_POINTS_MAX)
    return TR_ELIMIT;
  if (!follows(p, pt))
    return TR_EINVAL;
  if (reserve(p, zlen) != 0)
    return TR_ENOMEM;
  if (pt->win_len == 0)
    zlen = 0;
  else if (compress2(p->wz + p->wz_len, &zlen, win, pt->win_len, WZ_LEVEL) !=
           Z_OK)
    return TR_ENOMEM;
  if (zlen > IDX_POINTS_WZ_MAX - p->wz_len)
    return TR_ELIMIT;
  q = &p->pt[p->n++];
  *q = *pt;
  q->wz_off = p->wz_len;
  q->wz_len = (uint32_t)zlen;
  p->wz_len += zlen;
  return 0;
}

/* The header and entries of p as the file has them; caller frees. */
static uint8_t *encode_head(const struct idx_points *p, const struct stat *src,
                            size_t *len)
{
  size_t n = HEAD_BYTES + (size_t)p->n * ENTRY_BYTES;
  uint8_t *b = calloc(1, n), *e;

  if (b == NULL)
    return NULL;
  memcpy(b, MAGIC, sizeof(MAGIC));
  put_u32(b + 8, VERSION);
  put_u32(b + 12, p->n);
  put_u64(b + 16, (uint64_t)src->st_size);
  put_u64(b + 24, (uint64_t)src->st_mtim.tv_sec);
  put_u64(b + 32, (uint64_t)src->st_mtim.tv_nsec);
  put_u64(b + 40, p->wz_len);
  put_u64(b + FIGS_LEN_AT, 0); /* idx_points_close() sets it */
  for (uint32_t i = 0; i < p->n; i++) {
    e = b + HEAD_BYTES + (size_t)i * ENTRY_BYTES;
    put_u64(e, p->pt[i].out_off);
    put_u64(e + 8, p->pt[i].in_bit);
    put_u32(e + 16, p->pt[i].kind);
    put_u32(e + 20, p->pt[i].win_len);
    put_u32(e + 24, p->pt[i].wz_len);
  }
  *len = n;
  return b;
}

int idx_points_open(const struct idx_points *p, const char *path,
                    const struct stat *src, struct idx_points_out *o,
                    struct tr_err *err)
{
  size_t head_len;
  uint8_t *head = encode_head(p, src, &head_len);
  int rc;

  *o = (struct idx_points_out){ NULL, NULL };
  if (head == NULL)
    return tr_err_set(err, TR_ENOMEM, NULL, "%s: out of memory", path);
  rc = idx_side_open(path, &o->f, &o->tmp, err);
  if (rc == 0 && (fwrite(head, 1, head_len, o->f) != head_len ||
                  (p->wz_len > 0 &&
                   fwrite(p->wz, 1, p->wz_len, o->f) != p->wz_len)))
    rc = tr_err_set(err, TR_EIO, NULL, "%s: %s", o->tmp, strerror(errno));
  free(head);
  if (rc != 0) {
    rc = idx_side_close(o->f, o->tmp, path, rc, err);
    *o = (struct idx_points_out){ NULL, NULL };
  }
  return rc;
}

int idx_points_close(struct idx_points_out *o, const char *path,
                     uint64_t figs_len, int rc, struct tr_err *err)
{
  uint8_t b[8];

  if (o->f == NULL)
    return rc;
  put_u64(b, figs_len);
  if (rc == 0 && (fseek(o->f, FIGS_LEN_AT, SEEK_SET) != 0 ||
                  fwrite(b, 1, sizeof(b), o->f) != sizeof(b)))
    rc = tr_err_set(err, TR_EIO, NULL, "%s: %s", o->tmp, strerror(errno));
  rc = idx_side_close(o->f, o->tmp, path, rc, err);
  *o = (struct idx_points_out){ NULL, NULL };
  return rc;
}

int idx_points_save(const struct idx_points *p, const char *path,
                    const struct stat *src, struct tr_err *err)
{
  struct idx_points_out o;
  int rc = idx_points_open(p, path, src, &o, err);

  if (rc == 0 && p->figs_len > 0 &&
      fwrite(p->figs, 1, p->figs_len, o.f) != p->figs_len)
    rc = tr_err_set(err, TR_EIO, NULL, "%s: %s", o.tmp, strerror(errno));
  return idx_points_close(&o, path, p->figs_len, rc, err);
}

/* The header's checks: magic, version, count, the stamp, the size. The
 * count, window bytes and the slicer's into *n, *wz_len and *figs_len.
 * 0 or TR_EFORMAT. */
static int check_head(const uint8_t *b, size_t len, const struct stat *src,
                      uint32_t *n, uint64_t *wz_len, uint64_t *figs_len)
{
  if (len < HEAD_BYTES || memcmp(b, MAGIC, sizeof(MAGIC)) != 0 ||
      get_u32(b + 8) != VERSION)
    return TR_EFORMAT;
  *n = get_u32(b + 12);
  *wz_len = get_u64(b + 40);
  *figs_len = get_u64(b + FIGS_LEN_AT);
  if (*n > IDX_POINTS_MAX || *wz_len > IDX_POINTS_WZ_MAX ||
      *figs_len > FILE_MAX ||
      len != HEAD_BYTES + (size_t)*n * ENTRY_BYTES + *wz_len + *figs_len)
    return TR_EFORMAT;
  /* A changed source makes every point wrong. */
  if (get_u64(b + 16) != (uint64_t)src->st_size ||
      get_u64(b + 24) != (uint64_t)src->st_mtim.tv_sec ||
      get_u64(b + 32) != (uint64_t)src->st_mtim.tv_nsec)
    return TR_EFORMAT;
  return 0;
}

/* The entries into out, each checked as idx_points_add() checks a new
 * point, their windows within wz_len and inside the source. */
static int parse_entries(const uint8_t *b, uint32_t n, uint64_t wz_len,
                         const struct stat *src, struct idx_points *out)
{
  struct idx_point pt;
  uint64_t wz_off = 0;
  const uint8_t *e;

  for (uint32_t i = 0; i < n; i++) {
    e = b + HEAD_BYTES + (size_t)i * ENTRY_BYTES;
    pt.out_off = get_u64(e);
    pt.in_bit = get_u64(e + 8);
    pt.kind = get_u32(e + 16);
    pt.win_len = get_u32(e + 20);
    pt.wz_len = get_u32(e + 24);
    pt.wz_off = wz_off;
    if (!follows(out, &pt) || pt.in_bit / 8 >= (uint64_t)src->st_size ||
        (pt.wz_len == 0) != (pt.win_len == 0) || pt.wz_len > wz_len - wz_off)
      return TR_EFORMAT;
    wz_off += pt.wz_len;
    out->pt[out->n++] = pt;
  }
  return wz_off == wz_len ? 0 : TR_EFORMAT;
}

/* The whole file mapped (*buf, *len; caller munmap()s), at most
 * FILE_MAX bytes: a slice loads its rank's points each time and touches
 * only the few windows and findings it needs. The file is only ever
 * replaced by a rename (idx_points_close()), never cut in place, so the
 * mapping stays whole. 0 or negative. */
static int map_file(const char *path, uint8_t **buf, size_t *len)
{
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  void *m;
  int rc = 0;

  *buf = NULL;
  *len = 0;
  if (fd < 0)
    return errno == ENOENT ? TR_ENOTFOUND : -errno;
  if (fstat(fd, &st) != 0)
    rc = -errno;
  else if (!S_ISREG(st.st_mode) || st.st_size > FILE_MAX || st.st_size == 0)
    rc = TR_EFORMAT;
  else if ((m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
                     0)) == MAP_FAILED)
    rc = -errno;
  else
    *buf = m, *len = (size_t)st.st_size;
  close(fd);
  return rc;
}

/* The bytes of a points file, b[0..len) (mapped), into *out: its
 * windows and the slicer's bytes left in b, which *out then owns. 0,
 * TR_EFORMAT or TR_ENOMEM (b still the caller's). */
static int parse(uint8_t *b, size_t len, const struct stat *src,
                 struct idx_points *out)
{
  struct idx_points p = { 0 };
  uint64_t wz_len = 0, figs_len = 0;
  uint32_t n = 0;
  int rc = check_head(b, len, src, &n, &wz_len, &figs_len);
  size_t at = HEAD_BYTES + (size_t)n * ENTRY_BYTES;

  if (rc == 0 && n > 0 && (p.pt = malloc(n * sizeof(*p.pt))) == NULL)
    rc = TR_ENOMEM;
  if (rc == 0) {
    p.cap = n;
    rc = parse_entries(b, n, wz_len, src, &p);
  }
  if (rc != 0) {
    free(p.pt);
    return rc;
  }
  p.wz = wz_len > 0 ? b + at : NULL;
  p.wz_len = p.wz_cap = wz_len;
  p.figs = figs_len > 0 ? b + at + wz_len : NULL;
  p.figs_len = figs_len;
  p.file = b;
  p.file_len = len;
  *out = p;
  return 0;
}

int idx_points_load(const char *path, const struct stat *src,
                    struct idx_points *out, struct tr_err *err)
{
  uint8_t *b = NULL;
  size_t len = 0;
  int rc = map_file(path, &b, &len);

  if (rc == 0)
    rc = parse(b, len, src, out);
  if (rc != 0) {
    if (b != NULL)
      munmap(b, len);
    return tr_err_set(err, rc, NULL, "%s: %s", path,
                      rc == TR_EFORMAT ? "not a points file of this source"
                      : rc == TR_ENOTFOUND ? "no such file"
                                           : "cannot read");
  }
  return 0;
}

int idx_points_window(const struct idx_points *p, uint32_t i, uint8_t *buf)
{
  const struct idx_point *pt = &p->pt[i];
  uLongf len = IDX_POINT_WINDOW;

  if (pt->win_len == 0)
    return 0;
  if (uncompress(buf, &len, p->wz + pt->wz_off, pt->wz_len) != Z_OK ||
      len != pt->win_len)
    return TR_EFORMAT;
  return 0;
}

long idx_points_find(const struct idx_points *p, uint64_t out_off)
{
  uint32_t lo = 0, hi = p->n; /* the answer is below hi */

  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;

    if (p->pt[mid].out_off <= out_off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (long)lo - 1;
}

void idx_points_free(struct idx_points *p)
{
  if (p == NULL)
    return;
  free(p->pt);
  if (p->file != NULL) {
    munmap(p->file, p->file_len); /* wz and figs lie in it */
  } else {
    free(p->wz);
    free(p->figs);
  }
  memset(p, 0, sizeof(*p));
}
