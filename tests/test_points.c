/*
 * Access points (index/read/read.h): recorded while the source inflates,
 * saved and loaded, and resumed from. On every real trace, on a
 * multi-member gzip and on a plain file made here, inflating from every
 * point to the end gives the whole file's tail byte for byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "index/read/read.h"
#include "test_reader.h"

#define MIN_SPACING   (16u * 1024)
#define POINTS_WANTED 24 /* per file: each is resumed to the end */

/* A growable byte buffer. */
struct buf {
  uint8_t *p;
  size_t n, cap;
};

static void buf_put(struct buf *b, const void *p, size_t n)
{
  if (n == 0)
    return;
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
    CHECK(b->p != NULL);
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

/* The whole text of path through the source (spacing 0: no points),
 * the points recorded copied into *pts when asked. */
static void read_all(const char *path, unsigned flags, uint64_t spacing,
                     struct buf *out, struct idx_points *pts)
{
  struct tr_err err = { 0 };
  struct idx_source *s = NULL;
  struct idx_chunk c;
  const struct idx_points *got;

  CHECK_INT(idx_source_open_points(NULL, path, flags, spacing, &s, &err), 0);
  do {
    CHECK_INT(idx_source_next(s, &c, &err), 0);
    buf_put(out, c.text, c.len);
  } while (c.len > 0);
  got = idx_source_points(s);
  CHECK((got != NULL) == (spacing != 0));
  for (uint32_t i = 0; pts != NULL && got != NULL && i < got->n; i++) {
    uint8_t win[IDX_POINT_WINDOW];

    CHECK_INT(idx_points_window(got, i, win), 0);
    CHECK_INT(idx_points_add(pts, &got->pt[i], win), 0);
  }
  idx_source_close(s);
}

/* Inflates from point i to the end: equal to the whole text's tail. */
static void check_resume(int fd, const struct idx_points *p, uint32_t i,
                         const struct buf *whole)
{
  static uint8_t out[256 * 1024];
  struct tr_err err = { 0 };
  struct idx_resume *r = NULL;
  uint64_t at = p->pt[i].out_off;
  size_t got;

  CHECK(at < whole->n);
  CHECK_INT(idx_resume_open(fd, p, i, &r), 0);
  do {
    CHECK_INT(idx_resume_read(r, out, sizeof(out), &got, &err), 0);
    CHECK(got <= whole->n - at);
    if (memcmp(out, whole->p + at, got) != 0) {
      fprintf(stderr,
              "point %u (out %llu, bit %llu, kind %u): differs near "
              "output %llu\n",
              i, (unsigned long long)p->pt[i].out_off,
              (unsigned long long)p->pt[i].in_bit, p->pt[i].kind,
              (unsigned long long)at);
      exit(1);
    }
    at += got;
  } while (got > 0);
  CHECK_INT(at, whole->n);
  idx_resume_free(r);
}

/* Saved, loaded back equal; refused when the source changed, when the
 * file is cut or damaged, and when it is missing. */
static void check_file(const struct idx_points *p, const struct stat *src)
{
  const char *path = tmp_path("saved.points");
  struct idx_points q = { 0 };
  struct stat other = *src;
  struct tr_err err = { 0 };

  CHECK_INT(idx_points_save(p, path, src, &err), 0);
  CHECK_INT(idx_points_load(path, src, &q, &err), 0);
  CHECK_INT(q.n, p->n);
  CHECK_INT(q.wz_len, p->wz_len);
  for (uint32_t i = 0; i < q.n; i++) {
    CHECK_INT(q.pt[i].out_off, p->pt[i].out_off);
    CHECK_INT(q.pt[i].in_bit, p->pt[i].in_bit);
    CHECK_INT(q.pt[i].kind, p->pt[i].kind);
    CHECK_INT(q.pt[i].win_len, p->pt[i].win_len);
  }
  CHECK(p->wz_len == 0 || memcmp(q.wz, p->wz, p->wz_len) == 0);
  idx_points_free(&q);
  other.st_mtim.tv_nsec ^= 1;
  CHECK_INT(idx_points_load(path, &other, &q, &err), TR_EFORMAT);
  other = *src;
  other.st_size++;
  CHECK_INT(idx_points_load(path, &other, &q, &err), TR_EFORMAT);
  CHECK_INT(truncate(path, 47), 0);
  CHECK_INT(idx_points_load(path, src, &q, &err), TR_EFORMAT);
  CHECK_INT(unlink(path), 0);
  CHECK_INT(idx_points_load(path, src, &q, &err), TR_ENOTFOUND);
  CHECK_INT(q.n, 0);
}

/* Every byte of a saved file's header and entries flipped in turn: the
 * load refuses it or gives points that are still in order and bounded
 * (a flipped window shows when it is inflated). Never a crash. */
static void check_damage(const struct idx_points *p, const struct stat *src)
{
  const char *path = tmp_path("damaged.points");
  struct tr_err err = { 0 };
  struct idx_points q;
  size_t n = 48 + (size_t)(p->n < 4 ? p->n : 4) * 28;
  uint8_t b;
  int fd;

  CHECK_INT(idx_points_save(p, path, src, &err), 0);
  fd = open(path, O_RDWR);
  for (size_t k = 0; k < n; k++) {
    CHECK_INT(pread(fd, &b, 1, (off_t)k), 1);
    b ^= 0x41;
    CHECK_INT(pwrite(fd, &b, 1, (off_t)k), 1);
    memset(&q, 0, sizeof(q));
    if (idx_points_load(path, src, &q, &err) == 0)
      for (uint32_t i = 1; i < q.n; i++)
        CHECK(q.pt[i].out_off > q.pt[i - 1].out_off);
    idx_points_free(&q);
    b ^= 0x41;
    CHECK_INT(pwrite(fd, &b, 1, (off_t)k), 1);
  }
  close(fd);
  unlink(path);
}

static double now_s(void)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The whole check on one file; the points it had, by kind, are added
 * to kinds[]. */
static void check_path(const char *path, unsigned flags, uint32_t kinds[3])
{
  struct buf whole = { 0 }, again = { 0 };
  struct idx_points p = { 0 };
  uint64_t spacing;
  struct stat st;
  double t0;
  int fd;

  read_all(path, flags, 0, &whole, NULL);
  spacing = whole.n / POINTS_WANTED;
  if (spacing < MIN_SPACING)
    spacing = MIN_SPACING;
  read_all(path, flags, spacing, &again, &p);
  /* Recording changes nothing of what is read. */
  CHECK_INT(again.n, whole.n);
  CHECK(memcmp(again.p, whole.p, whole.n) == 0);
  fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  CHECK_INT(fstat(fd, &st), 0);
  t0 = now_s();
  for (uint32_t i = 0; i < p.n; i++) {
    check_resume(fd, &p, i, &whole);
    kinds[p.pt[i].kind]++;
  }
  fprintf(stderr,
          "   %s: %zu bytes, %u points (spacing %llu, %zu bytes of "
          "windows), all resumed in %.2f s\n",
          path, whole.n, p.n, (unsigned long long)spacing, p.wz_len,
          now_s() - t0);
  check_file(&p, &st);
  close(fd);
  idx_points_free(&p);
  free(whole.p);
  free(again.p);
}

/* Every real trace, threaded as indexing reads. */
static void points_real_traces(void)
{
  const char *dir = getenv("TRACES_DIR");
  const char *pat[] = { "%s/*.gz", "%s/graph_pairs/*/*.json.gz" };
  char g[4096];
  glob_t gl;
  uint32_t kinds[3] = { 0 };
  size_t total = 0;

  CHECK(dir != NULL);
  for (size_t k = 0; k < 2; k++) {
    snprintf(g, sizeof(g), pat[k], dir);
    if (glob(g, 0, NULL, &gl) != 0)
      continue;
    for (size_t i = 0; i < gl.gl_pathc; i++, total++)
      check_path(gl.gl_pathv[i], IDX_SOURCE_THREAD, kinds);
    globfree(&gl);
  }
  CHECK(total >= 10);
  /* Single-member files: the member's start (a slice reads its head
   * from there), then block points only, and enough of them (most of the
   * small traces are one or two deflate blocks: no point inside). */
  CHECK(kinds[IDX_POINT_BLOCK] >= 40);
  CHECK_INT(kinds[IDX_POINT_MEMBER], total);
  CHECK_INT(kinds[IDX_POINT_PLAIN], 0);
}

/* One gzip member of text into f (gzip_member(): level 6, as gzip(1)). */
static void put_member(FILE *f, const uint8_t *text, size_t n)
{
  size_t gn;
  unsigned char *gz = gzip_member((const char *)text, n, &gn);

  CHECK_INT(fwrite(gz, 1, gn, f), gn);
  free(gz);
}

/* The text of the biggest small trace, as `members` gzip members (0: a
 * plain file), at path. */
static void make_file(const char *path, int members)
{
  char src[4096];
  struct buf text = { 0 };
  FILE *f;
  size_t at = 0, part;

  snprintf(src, sizeof(src),
           "%s/tracelens__h100_Qwen_Qwen1.5-0.5B-Chat__"
           "1016005.json.gz",
           getenv("TRACES_DIR"));
  read_all(src, 0, 0, &text, NULL);
  f = fopen(path, "wb");
  CHECK(f != NULL);
  if (members == 0)
    CHECK_INT(fwrite(text.p, 1, text.n, f), text.n);
  /* Uneven members, one of them tiny: a member may hold no point. */
  for (int m = 0; m < members; m++) {
    part = m == members - 1 ? text.n - at
           : m == 1         ? 100
                            : text.n / (size_t)members;
    put_member(f, text.p + at, part);
    at += part;
  }
  CHECK_INT(fclose(f), 0);
  free(text.p);
}

/* make_file(members) checked read inline and by the source's thread,
 * the kinds of its points counted into kinds. */
static void check_made(int members, uint32_t kinds[3])
{
  char path[1024];

  /* A copy: check_path() takes tmp_path() for the points file. */
  snprintf(path, sizeof(path), "%s",
           tmp_path(members > 0 ? "members.json.gz" : "plain.json"));
  make_file(path, members);
  check_path(path, IDX_SOURCE_THREAD, kinds);
  check_path(path, 0, kinds);
}

static void points_multi_member(void)
{
  uint32_t kinds[3] = { 0 };

  check_made(7, kinds);
  /* Both kinds: points inside members and at their starts. */
  CHECK(kinds[IDX_POINT_BLOCK] > 0);
  CHECK(kinds[IDX_POINT_MEMBER] > 0);
}

static void points_plain(void)
{
  uint32_t kinds[3] = { 0 };

  check_made(0, kinds);
  CHECK(kinds[IDX_POINT_PLAIN] > 0);
  CHECK_INT(kinds[IDX_POINT_BLOCK] + kinds[IDX_POINT_MEMBER], 0);
}

/* A damaged points file is refused or harmless. */
static void points_damaged_file(void)
{
  char src[4096];
  struct buf text = { 0 };
  struct idx_points p = { 0 };
  struct stat st;

  snprintf(src, sizeof(src),
           "%s/tracelens__mi300_resnet_act_checkpoint"
           ".json.gz",
           getenv("TRACES_DIR"));
  read_all(src, 0, MIN_SPACING, &text, &p);
  CHECK(p.n > 4);
  CHECK_INT(stat(src, &st), 0);
  check_damage(&p, &st);
  idx_points_free(&p);
  free(text.p);
}

/* A point must follow the last one; the count and the windows' bytes are
 * capped, a refused point leaving the list as it was. */
static void points_limits(void)
{
  static uint8_t win[IDX_POINT_WINDOW];
  struct idx_points p = { 0 };
  struct idx_point pt = { .out_off = 100,
                          .in_bit = 800,
                          .kind = IDX_POINT_PLAIN };
  uint32_t n;

  CHECK_INT(idx_points_add(&p, &pt, NULL), 0);
  CHECK_INT(idx_points_add(&p, &pt, NULL), TR_EINVAL); /* not after */
  pt.out_off = 200;
  pt.in_bit = 900;
  pt.win_len = 1; /* a plain point has no window */
  CHECK_INT(idx_points_add(&p, &pt, win), TR_EINVAL);
  pt.kind = IDX_POINT_BLOCK;
  pt.win_len = 201; /* more window than output */
  CHECK_INT(idx_points_add(&p, &pt, win), TR_EINVAL);
  CHECK_INT(p.n, 1);
  /* Random windows barely deflate: the bytes' cap comes first. */
  srand(7);
  for (size_t i = 0; i < sizeof(win); i++)
    win[i] = (uint8_t)rand();
  pt.win_len = IDX_POINT_WINDOW;
  for (n = 1;; n++) {
    pt.out_off = (uint64_t)n << 20;
    pt.in_bit = (uint64_t)n << 23;
    if (idx_points_add(&p, &pt, win) != 0)
      break;
  }
  CHECK_INT(p.n, n);
  CHECK(p.wz_len <= IDX_POINTS_WZ_MAX);
  CHECK(p.wz_len > IDX_POINTS_WZ_MAX - 2 * IDX_POINT_WINDOW);
  idx_points_free(&p);
  /* Without windows, the count's cap. */
  pt.kind = IDX_POINT_MEMBER;
  pt.win_len = 0;
  for (n = 0; n <= IDX_POINTS_MAX; n++) {
    pt.out_off = pt.in_bit = n + 1;
    if (idx_points_add(&p, &pt, NULL) != 0)
      break;
  }
  CHECK_INT(n, IDX_POINTS_MAX);
  CHECK_INT(p.n, IDX_POINTS_MAX);
  idx_points_free(&p);
  idx_points_free(NULL);
}

int main(void)
{
  RUN(points_limits);
  RUN(points_plain);
  RUN(points_multi_member);
  RUN(points_damaged_file);
  RUN(points_real_traces);
  return 0;
}
