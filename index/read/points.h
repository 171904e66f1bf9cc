/*
 * Access points into a trace file, so that a reader can start inflating
 * near an output offset instead of at the file's start (zlib's
 * examples/zran.c): each point is where a deflate block starts (its bit
 * offset in the file), the output offset there, and the 32 KiB of output
 * before it, which the block may copy from. A point at a gzip member's
 * start needs no window; in a plain file a point is just an offset.
 *
 * The indexing pass records them as it inflates (index/read/source.c,
 * idx_source_open_points()); idx_points_save() writes them beside the
 * rank, the windows deflated; idx_points_load() reads them back and
 * refuses a file that is damaged or was made from another version of the
 * source; idx_resume_*() inflates from one. No thread of its own; a
 * struct is used by one thread at a time.
 */
#ifndef IDX_POINTS_H
#define IDX_POINTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/tr.h"

#define IDX_POINT_WINDOW      (32u * 1024) /* deflate's farthest copy */
/* Output bytes between points, by default: a slice then inflates half of
 * that on average before its window (docs/BENCHMARKS.md, "Access
 * points", has what it costs and what the file weighs). */
#ifndef IDX_POINT_SPACING /* a build may set it (bench/, docs/SLICES.md) */
#define IDX_POINT_SPACING     (32ull << 20)
#endif
#define IDX_POINT_SPACING_MIN (16u * 1024) /* smaller is taken as this */
#define IDX_POINTS_MAX        (1u << 20) /* points in one file, loaded or made */
#define IDX_POINTS_WZ_MAX     (64u << 20) /* their deflated windows' bytes */

enum idx_point_kind {
  IDX_POINT_BLOCK,  /* a block inside a member: needs the window */
  IDX_POINT_MEMBER, /* a gzip member's first byte */
  IDX_POINT_PLAIN   /* a plain file's byte */
};

struct idx_point {
  uint64_t out_off; /* output (JSON text) offset */
  uint64_t in_bit;  /* the file's bit where the block or member starts */
  uint32_t kind;    /* enum idx_point_kind */
  uint32_t win_len; /* window bytes (0..IDX_POINT_WINDOW) */
  uint64_t wz_off;  /* its deflated bytes in idx_points.wz */
  uint32_t wz_len;
};

/* Zero-filled is empty and valid. */
struct idx_points {
  struct idx_point *pt; /* n, out_off and in_bit increasing */
  uint32_t n, cap;
  uint8_t *wz; /* the windows, each deflated on its own */
  size_t wz_len, wz_cap;
  /* Bytes stored with them for the slicer (index/slice/slice_figs.h), opaque
   * here; NULL: none. */
  uint8_t *figs;
  size_t figs_len;
  /* Loaded: the file mapped, which wz and figs point into (a slice
   * loads them each time: no copy). NULL when made here. */
  uint8_t *file;
  size_t file_len;
};

/* Appends a point, deflating its window (win_len bytes, borrowed; NULL
 * when 0). 0, TR_ELIMIT past IDX_POINTS_MAX or IDX_POINTS_WZ_MAX,
 * TR_EINVAL when it does not follow the last point, or TR_ENOMEM (p
 * unchanged). */
int idx_points_add(struct idx_points *p, const struct idx_point *pt,
                   const uint8_t *win);

/* Writes p to path (path.tmp, then renamed), stamped with the source
 * file's size and mtime (src: its fstat()), p->figs after the points.
 * 0 or negative with err. */
int idx_points_save(const struct idx_points *p, const char *path,
                    const struct stat *src, struct tr_err *err);

/* The same in three steps, so that the slicer's bytes can be streamed
 * after the points (index/file.c writes them while the time pass runs):
 * idx_points_open() writes path.tmp up to the points' end, the caller
 * writes its bytes to o->f, idx_points_close() records how many there
 * are and renames the file into place when rc is 0, else removes it;
 * it returns rc or its own failure. */
struct idx_points_out {
  FILE *f;
  char *tmp;
};
int idx_points_open(const struct idx_points *p, const char *path,
                    const struct stat *src, struct idx_points_out *o,
                    struct tr_err *err);
int idx_points_close(struct idx_points_out *o, const char *path,
                     uint64_t figs_len, int rc, struct tr_err *err);

/* Reads path into *out (caller frees with idx_points_free()) when it is
 * a points file of this version whose stamp matches src and whose every
 * count and offset is in bounds. 0; TR_ENOTFOUND when it is missing,
 * TR_EFORMAT when it is damaged or stale (the caller then has no points
 * and reads from the start), negative errno, or TR_ENOMEM. */
int idx_points_load(const char *path, const struct stat *src,
                    struct idx_points *out, struct tr_err *err);

/* The window of point i inflated into buf (IDX_POINT_WINDOW bytes).
 * 0 or TR_EFORMAT. */
int idx_points_window(const struct idx_points *p, uint32_t i, uint8_t *buf);

/* The last point at or before out_off, or -1 when none. */
long idx_points_find(const struct idx_points *p, uint64_t out_off);

/* Frees the arrays (NULL or empty is fine); p is then empty. */
void idx_points_free(struct idx_points *p);

/* Inflating from a point to the end of the file. */
struct idx_resume;

/* Starts at point i of p (copied what it needs) in the file open on fd
 * (borrowed until idx_resume_free()). 0, TR_EINVAL, TR_EFORMAT or
 * TR_ENOMEM; caller frees with idx_resume_free(). */
int idx_resume_open(int fd, const struct idx_points *p, uint32_t i,
                    struct idx_resume **out);

/* The next output bytes into buf (up to cap): *got 0 at the end. 0, or
 * negative with err (a read error, damaged data). */
int idx_resume_read(struct idx_resume *r, uint8_t *buf, size_t cap, size_t *got,
                    struct tr_err *err);

void idx_resume_free(struct idx_resume *r);

#endif
