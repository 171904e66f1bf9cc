/*
 * libFuzzer target for an access points file and the slice figures in it
 * (index/read/points.c, slice_figs.c) and for a slice made from them
 * (slice.c, slice_feed.c, points_resume.c): the input is a points file of
 * the trace FUZZ_POINTS_TRACE (a small real trace), its stamp set to the
 * trace's so that the loader gets past it. It is loaded, its figures
 * decoded, and a slice of the trace is made from it, with findings, over
 * a window the input's last bytes choose, on one thread or with a pump. Any
 * crash, leak, hang or sanitizer report is a bug; a refused file or a failed
 * slice is not.
 *
 * With FUZZ_POINTS_SEED=PATH, it writes the trace's own points file to
 * PATH and exits: scripts/fuzz.sh's seed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index.h"
#include "index/read/read.h"
#include "index/slice/slice.h"

#define STAMP_AT 16 /* points.c: size, mtime seconds and nanoseconds */

static const char *trace;
static struct stat trace_st;
static char points[64];

static int drop(void *ud, const char *p, size_t n)
{
  (void)ud;
  (void)p;
  (void)n;
  return 0;
}

static void seed(const char *out)
{
  struct idx_options o = { .format = IDX_FORMAT_AUTO, .rank = -1 };
  struct tr_err err = { 0 };
  json_t *sum = NULL;

  o.points_path = out;
  o.points_spacing = IDX_POINT_SPACING_MIN;
  o.threads = 1;
  if (idx_file(trace, &o, &sum, &err) != 0) {
    fprintf(stderr, "fuzz_points: %s\n", err.msg);
    exit(1);
  }
  json_decref(sum);
  exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  trace = getenv("FUZZ_POINTS_TRACE");
  if (trace == NULL || stat(trace, &trace_st) != 0) {
    fprintf(stderr, "fuzz_points: FUZZ_POINTS_TRACE names no file\n");
    exit(1);
  }
  if (getenv("FUZZ_POINTS_SEED") != NULL)
    seed(getenv("FUZZ_POINTS_SEED"));
  snprintf(points, sizeof(points), "/tmp/traced-fuzz-points-%d",
           (int)getpid());
  return 0;
}

static void put_u64(uint8_t *b, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> (8 * i));
}

/* The input with the trace's stamp, as the file the slicer loads. */
static int write_points(const uint8_t *data, size_t size)
{
  uint8_t *b = malloc(size ? size : 1);
  FILE *f = fopen(points, "wb");
  int ok;

  if (b == NULL || f == NULL) {
    free(b);
    if (f != NULL)
      fclose(f);
    return 0;
  }
  memcpy(b, data, size);
  if (size >= STAMP_AT + 24) {
    put_u64(b + STAMP_AT, (uint64_t)trace_st.st_size);
    put_u64(b + STAMP_AT + 8, (uint64_t)trace_st.st_mtim.tv_sec);
    put_u64(b + STAMP_AT + 16, (uint64_t)trace_st.st_mtim.tv_nsec);
  }
  ok = fwrite(b, 1, size, f) == size;
  free(b);
  return fclose(f) == 0 && ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct idx_points p = { 0 };
  struct slice_figs g = { 0 };
  struct tr_err err = { 0 };
  struct idx_slice_opts o = { .format = IDX_FORMAT_AUTO, .findings = true };
  int64_t at = 0;

  if (!write_points(data, size))
    return 0;
  if (idx_points_load(points, &trace_st, &p, &err) == 0 && p.figs != NULL &&
      slice_figs_decode(p.figs, p.figs_len, &g) == 0) {
    /* A window near the pieces the input holds. */
    if (g.npieces > 0 && size >= 2)
      at = g.piece[data[size - 1] % g.npieces].lo;
    o.t0_ns = at;
    o.start_ns = 0;
    o.end_ns = 1 + (int64_t)(size >= 2 ? data[size - 2] : 0) * 1000;
    /* One byte more picks a pump (two threads, the settled format:
     * slice_feed.c) or this thread alone (detecting it again). */
    o.threads = size >= 3 && (data[size - 3] & 1) ? 2 : 1;
    if (o.threads == 2)
      o.format = (enum idx_format)g.format;
    o.max_inflated_bytes = 64u << 20;
    o.points_path = points;
    (void)idx_slice_under(NULL, trace, &o, drop, NULL, NULL, &err);
  }
  slice_figs_free(&g);
  idx_points_free(&p);
  unlink(points);
  return 0;
}
