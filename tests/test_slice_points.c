/*
 * Slices from access points (index/slice/slice.c, slice_figs.c, slice_feed.c;
 * docs/SLICES.md): every slice made from a rank's points and slice
 * figures is byte for byte the slice made by reading the whole file.
 *
 * On every real trace, on a plain copy and a multi-member gzip of the
 * biggest, indexed with points: windows at random, at the pieces' own
 * edges, before the first and after the last event, the whole span;
 * with and without findings; one rank and all ranks. And that it reads
 * less: a 1 ms window of the biggest trace reads a part of its text; a
 * stale or damaged points file falls back to the whole file; a trace
 * damaged behind its points' stamp fails the slice cleanly.
 */
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "index/read/read.h"
#include "index/index.h"
#include "index/slice/slice.h"
#include "test_reader.h"

/* Per trace, each with and without findings, each slice made twice: the
 * whole-file ones bound the time (3 minutes of CPU under ASan here). */
#define RANDOM_WINDOWS 6

struct mem {
  char *p;
  size_t n, cap;
};

static int mem_write(void *ud, const char *p, size_t n)
{
  struct mem *m = ud;

  if (n == 0)
    return 0;
  if (m->n + n + 1 > m->cap) {
    m->cap = (m->n + n + 1) * 2;
    m->p = realloc(m->p, m->cap);
    CHECK(m->p != NULL);
  }
  memcpy(m->p + m->n, p, n);
  m->n += n;
  m->p[m->n] = '\0';
  return 0;
}

/* A rank indexed with points: its file, its points, its t0 and span. */
struct rank {
  char path[4096];
  char points[4096];
  int64_t t0, span;
  struct slice_figs figs;
};

static void index_rank(struct rank *r, const char *path)
{
  struct idx_options o = { .format = IDX_FORMAT_AUTO, .rank = -1 };
  struct idx_points pts = { 0 };
  struct tr_err err = { 0 };
  struct stat st;
  json_t *sum = NULL;

  static int made;
  char name[32];

  snprintf(name, sizeof(name), "points-%d", made++);
  snprintf(r->path, sizeof(r->path), "%s", path);
  snprintf(r->points, sizeof(r->points), "%s", tmp_path(name));
  o.points_path = r->points;
  o.points_spacing = 64u << 10;
  if (idx_file(path, &o, &sum, &err) != 0) {
    fprintf(stderr, "%s: %s\n", path, err.msg);
    exit(1);
  }
  r->t0 = json_integer_value(json_object_get(sum, "t0_ns"));
  r->span = json_integer_value(json_object_get(sum, "span_ns"));
  json_decref(sum);
  CHECK_INT(stat(path, &st), 0);
  CHECK_INT(idx_points_load(r->points, &st, &pts, &err), 0);
  CHECK(pts.figs != NULL);
  CHECK_INT(slice_figs_decode(pts.figs, pts.figs_len, &r->figs), 0);
  idx_points_free(&pts);
}

static void free_rank(struct rank *r)
{
  slice_figs_free(&r->figs);
  unlink(r->points);
}

/* The options of a slice of r for [start, end) relative to its t0;
 * with points or not. With findings, the format is the one the rank
 * settled on and two threads are asked for: a pump inflates ahead
 * (slice_feed.c); without, the format is detected again and one thread
 * reads. */
static struct idx_slice_opts slice_opts(const struct rank *r, int64_t start,
                                        int64_t end, int findings, int points)
{
  return (struct idx_slice_opts){
    .format = findings ? (enum idx_format)r->figs.format : IDX_FORMAT_AUTO,
    .threads = findings ? 2 : 1,
    .t0_ns = r->t0,
    .start_ns = start,
    .end_ns = end,
    .findings = findings,
    .points_path = points ? r->points : NULL
  };
}

/* The slice slice_opts() says: its text (caller frees) and *st. */
static char *slice(const struct rank *r, int64_t start, int64_t end,
                   int findings, int points, struct idx_slice_stats *st)
{
  struct idx_slice_opts o = slice_opts(r, start, end, findings, points);
  struct tr_err err = { 0 };
  struct mem m = { NULL, 0, 0 };

  memset(st, 0, sizeof(*st));
  if (idx_slice_under(NULL, r->path, &o, mem_write, &m, st, &err) != 0) {
    fprintf(stderr, "%s: slice: %s\n", r->path, err.msg);
    exit(1);
  }
  return m.p;
}

/* The counts traced_slice prints are equal. */
static void check_same_counts(const struct idx_slice_stats *a,
                              const struct idx_slice_stats *b)
{
  CHECK_INT(a->events_read, b->events_read);
  CHECK_INT(a->events_kept, b->events_kept);
  CHECK_INT(a->metadata_events, b->metadata_events);
  CHECK_INT(a->events_mended, b->events_mended);
  CHECK_INT(a->events_dropped, b->events_dropped);
  CHECK_INT(a->members_kept, b->members_kept);
  CHECK_INT(a->members_dropped, b->members_dropped);
  CHECK_INT(a->steps, b->steps);
  CHECK_INT(a->idle, b->idle);
}

/* Both ways of one window, with and without findings: the same text.
 * Returns the share of the text the points' way read, in per mille. */
static unsigned check_window(const struct rank *r, int64_t start, int64_t end)
{
  struct idx_slice_stats a, b;
  unsigned share = 1000;

  for (int findings = 0; findings < 2; findings++) {
    char *whole = slice(r, start, end, findings, 0, &a);
    char *part = slice(r, start, end, findings, 1, &b);

    if (strcmp(whole, part) != 0) {
      fprintf(stderr, "%s: [%lld, %lld) findings %d: the slices differ\n",
              r->path, (long long)start, (long long)end, findings);
      exit(1);
    }
    check_same_counts(&a, &b);
    CHECK_INT(a.pieces, 0);
    CHECK_INT(b.pieces, r->figs.npieces);
    CHECK(b.pieces_read <= b.pieces);
    CHECK(b.text_bytes <= a.text_bytes + (64u << 10) * b.pieces);
    share = (unsigned)(a.text_bytes ? 1000 * b.text_bytes / a.text_bytes : 0);
    free(whole);
    free(part);
  }
  return share;
}

/* Windows at random over the span and a little around it, and at the
 * edges of the pieces' time hulls. */
static void check_windows(const struct rank *r)
{
  const struct slice_figs *g = &r->figs;
  int64_t span = r->span > 0 ? r->span : 1;

  check_window(r, 0, span + 1);
  check_window(r, -span - 1000, -1);         /* before the first event */
  check_window(r, span + 1, 2 * span + 1000); /* after the last */
  for (int i = 0; i < RANDOM_WINDOWS; i++) {
    int64_t a = (int64_t)(drand48() * 1.1 * (double)span) - span / 20;
    int64_t len = 1 + (int64_t)(drand48() * drand48() * (double)span);

    check_window(r, a, a + len);
  }
  for (size_t k = 0; k < g->npieces; k += 1 + g->npieces / 3) {
    const struct slice_piece *p = &g->piece[k];

    if (p->lo >= p->hi)
      continue;
    check_window(r, p->lo - r->t0, p->lo - r->t0 + 1);
    check_window(r, p->hi - r->t0 - 1, p->hi - r->t0);
    check_window(r, p->hi - r->t0, p->hi - r->t0 + 1000);
  }
}

/* Every real trace. */
static void slice_points_real_traces(void)
{
  const char *pat[] = { "%s/*.gz", "%s/graph_pairs/*/*.json.gz" };
  char g[4096];
  size_t total = 0, blocks_most = 0;
  glob_t gl;

  for (size_t k = 0; k < 2; k++) {
    snprintf(g, sizeof(g), pat[k], traces_dir());
    if (glob(g, 0, NULL, &gl) != 0)
      continue;
    for (size_t i = 0; i < gl.gl_pathc; i++, total++) {
      struct rank r = { 0 };

      index_rank(&r, gl.gl_pathv[i]);
      blocks_most = r.figs.nblocks > blocks_most ? r.figs.nblocks : blocks_most;
      check_windows(&r);
      free_rank(&r);
    }
    globfree(&gl);
  }
  CHECK(total >= 10);
  /* Some trace's findings span blocks of their index. */
  CHECK(blocks_most >= 3);
}

static const char *biggest(void)
{
  static char path[4096];

  trace_path(path, sizeof(path),
             "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz");
  return path;
}

/* The biggest trace's text, inflated. */
static char *text_of(const char *path, size_t *n)
{
  struct tr_err err = { 0 };
  struct idx_source *s = NULL;
  struct idx_chunk c;
  struct mem m = { NULL, 0, 0 };

  CHECK_INT(idx_source_open(path, 0, &s, &err), 0);
  do {
    CHECK_INT(idx_source_next(s, &c, &err), 0);
    mem_write(&m, c.text, c.len);
  } while (c.len > 0);
  idx_source_close(s);
  *n = m.n;
  return m.p;
}

/* A 1 ms window reads a part of the text; a plain copy and a gzip of
 * several members slice as the file does. */
static void slice_points_reads_less(void)
{
  struct rank r = { 0 };
  size_t n, gn, third;
  char *text = text_of(biggest(), &n);
  char plain[1024], multi[1024];
  FILE *f;
  unsigned share;

  snprintf(plain, sizeof(plain), "%s", tmp_path("plain.json"));
  snprintf(multi, sizeof(multi), "%s", tmp_path("multi.gz"));
  index_rank(&r, biggest());
  CHECK(r.figs.npieces >= 30);
  share = check_window(&r, r.span / 2, r.span / 2 + 1000000);
  fprintf(stderr, "1 ms of %s: %u per mille of the text read\n", r.path,
          share);
  CHECK(share < 500);
  free_rank(&r);

  CHECK((f = fopen(plain, "wb")) != NULL);
  CHECK(fwrite(text, 1, n, f) == n);
  fclose(f);
  index_rank(&r, plain);
  check_windows(&r);
  free_rank(&r);

  CHECK((f = fopen(multi, "wb")) != NULL);
  third = n / 3;
  for (size_t at = 0; at < n; at += third) {
    size_t len = at + third <= n ? third : n - at;
    unsigned char *gz = gzip_member(text + at, len, &gn);

    CHECK(fwrite(gz, 1, gn, f) == gn);
    free(gz);
  }
  fclose(f);
  index_rank(&r, multi);
  check_windows(&r);
  free_rank(&r);
  unlink(plain);
  unlink(multi);
  free(text);
}

/* A slice of r's whole span from its points, as slice() makes it with
 * findings on or off (a pump or not), that must fail: the trace was
 * damaged behind its stamp. The message says where. */
static void check_fails(const struct rank *r, int findings)
{
  struct idx_slice_opts o = slice_opts(r, 0, r->span + 1, findings, 1);
  struct tr_err err = { 0 };
  struct mem m = { NULL, 0, 0 };

  CHECK(idx_slice_under(NULL, r->path, &o, mem_write, &m, NULL, &err) != 0);
  CHECK(strstr(err.msg, r->path) != NULL);
  free(m.p);
}

/* The trace's deflate stream damaged in its middle, its size and mtime
 * kept: the points match its stamp, so a slice reads from them and meets
 * the damage, on one thread and through a pump, and fails cleanly. */
static void slice_points_damaged_trace(const char *copy)
{
  struct rank r = { 0 };
  struct timeval tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
  struct stat st;
  FILE *f;

  CHECK_INT(utimes(copy, tv), 0);
  index_rank(&r, copy);
  CHECK_INT(stat(copy, &st), 0);
  CHECK((f = fopen(copy, "r+b")) != NULL);
  CHECK_INT(fseek(f, st.st_size / 2, SEEK_SET), 0);
  for (int i = 0; i < 4096; i++)
    fputc(0xff, f);
  fclose(f);
  CHECK_INT(utimes(copy, tv), 0);
  check_fails(&r, 0);
  check_fails(&r, 1);
  free_rank(&r);
}

/* A points file of another version of the trace, or damaged, is not
 * used: the slice reads the whole file, and is the same. */
static void slice_points_stale(void)
{
  struct rank r = { 0 };
  struct idx_slice_stats a, b;
  struct timeval tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
  char copy[1024], *want, *got;
  struct mem gz = { NULL, 0, 0 };
  char buf[65536];
  size_t n;
  FILE *f = fopen(biggest(), "rb");

  snprintf(copy, sizeof(copy), "%s", tmp_path("copy.json.gz"));
  CHECK(f != NULL);
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
    mem_write(&gz, buf, n);
  fclose(f);
  CHECK((f = fopen(copy, "wb")) != NULL);
  CHECK(fwrite(gz.p, 1, gz.n, f) == gz.n);
  fclose(f);
  free(gz.p);
  index_rank(&r, copy);
  want = slice(&r, 0, 2000000, 1, 1, &a);
  CHECK(a.pieces > 0);
  CHECK_INT(utimes(copy, tv), 0); /* another mtime: stale */
  got = slice(&r, 0, 2000000, 1, 1, &b);
  CHECK_INT(b.pieces, 0);
  CHECK(strcmp(want, got) == 0);
  free(got);
  CHECK((f = fopen(r.points, "wb")) != NULL); /* damaged */
  fputs("TRCDPTS", f);
  fclose(f);
  got = slice(&r, 0, 2000000, 1, 1, &b);
  CHECK_INT(b.pieces, 0);
  CHECK(strcmp(want, got) == 0);
  free(got);
  free(want);
  free_rank(&r);
  slice_points_damaged_trace(copy);
  unlink(copy);
}

/* All ranks in one timeline, from points and not: the same text. */
static void slice_points_ranks(void)
{
  struct rank r[2];
  struct idx_slice_rank ranks[2];
  struct tr_err err = { 0 };
  struct mem m[2] = { { NULL, 0, 0 }, { NULL, 0, 0 } };
  char path[4096];

  trace_path(path, sizeof(path), "tracelens__mi300_resnet_act_checkpoint.json.gz");
  memset(r, 0, sizeof(r));
  index_rank(&r[0], biggest());
  index_rank(&r[1], path);
  for (int points = 0; points < 2; points++) {
    struct idx_slice_opts o = { .t0_ns = r[0].t0,
                                .start_ns = r[0].span / 3,
                                .end_ns = r[0].span / 3 + 5000000,
                                .findings = true };

    for (int i = 0; i < 2; i++)
      ranks[i] = (struct idx_slice_rank){ r[i].path, IDX_FORMAT_AUTO, i,
                                          r[i].t0,
                                          points ? r[i].points : NULL };
    CHECK_INT(idx_slice_ranks(NULL, ranks, 2, &o, mem_write, &m[points], &err),
              0);
  }
  CHECK(m[0].n > 0 && m[0].n == m[1].n);
  CHECK(memcmp(m[0].p, m[1].p, m[0].n) == 0);
  free(m[0].p);
  free(m[1].p);
  free_rank(&r[0]);
  free_rank(&r[1]);
}

int main(int argc, char **argv)
{
  srand48(21);
  RUN(slice_points_stale);
  /* "quick" (scripts/tsan.sh): a slice with a pump and its fallback,
   * under ThreadSanitizer. */
  if (argc > 1 && strcmp(argv[1], "quick") == 0)
    return 0;
  RUN(slice_points_reads_less);
  RUN(slice_points_ranks);
  RUN(slice_points_real_traces);
  return 0;
}
