/*
 * The byte source (index/read/source.c, index/inflate_*.c): plain files, gzip
 * with one and several members, cut and damaged gzip, with the inflater
 * the build chose (ISA-L in release builds, zlib in sanitized ones).
 */
#include <stdlib.h>

#include "check.h"
#include "index/read/read_int.h"
#include "test_reader.h"

static void many_members(const char *json, size_t n, const struct tally *plain)
{
  unsigned char *all = malloc(n + (1u << 20)), *m;
  size_t off = 0, len = 0, mn, step;
  struct tally t;
  unsigned i;

  CHECK(all != NULL);
  for (i = 0; off < n; i++) {
    step = i == 3 ? 0 : 1 + (i * 7919u * 7919u) % 700000u;
    step = step > n - off ? n - off : step;
    m = gzip_member(json + off, step, &mn);
    CHECK(len + mn <= n + (1u << 20));
    memcpy(all + len, m, mn);
    len += mn;
    off += step;
    free(m);
  }
  CHECK(i > 20);
  write_file(tmp_path("many.json.gz"), all, len);
  read_path(tmp_path("many.json.gz"), &t);
  same_tally(plain, &t);
  free(all);
}

/* Plain JSON, one gzip member, several members, and a file of 1 MiB
 * members with the split inside an event: all read the same. */
void source_plain_and_gzip(void)
{
  char path[1024], *json;
  unsigned char *a, *b, *both;
  size_t n, an, bn, half;
  struct tally plain, t;

  json = trace_text("tracelens__mi300_resnet_act_checkpoint.json.gz", path,
                    sizeof(path), &n);
  write_file(tmp_path("plain.json"), json, n);
  read_path(tmp_path("plain.json"), &plain);
  CHECK_INT(plain.rc, 0);
  CHECK_INT(plain.events, 56451);
  half = n / 2 + 13;
  a = gzip_member(json, half, &an);
  b = gzip_member(json + half, n - half, &bn);
  both = malloc(an + bn);
  CHECK(both != NULL);
  memcpy(both, a, an);
  memcpy(both + an, b, bn);
  write_file(tmp_path("one.json.gz"), a, an);
  write_file(tmp_path("two.json.gz"), both, an + bn);
  read_path(tmp_path("two.json.gz"), &t);
  same_tally(&plain, &t);
  /* Many members of odd sizes, one of them empty: boundaries fall at
   * every alignment of the inflater's input. */
  many_members(json, n, &plain);
  /* The first member alone is a valid gzip of half a document. */
  read_path(tmp_path("one.json.gz"), &t);
  check_msg(&t, "truncated JSON", "at byte");
  free(a);
  free(b);
  free(both);
  free(json);
}

/* Closing a source before its end stops the thread (ASan checks that
 * nothing leaks); closing NULL is harmless. */
void source_close_early(void)
{
  char path[1024];
  struct idx_source *s;
  struct tr_err err = { 0 };
  struct idx_chunk c;

  trace_path(path, sizeof(path),
             "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz");
  CHECK_INT(idx_source_open(path, source_flags, &s, &err), 0);
  CHECK_INT(idx_source_next(s, &c, &err), 0);
  CHECK(c.len >= 4 && memcmp(c.text, "\n  {", 4) == 0);
  CHECK(idx_source_file_bytes(s) == 3858078);
  CHECK(idx_source_read_bytes(s) > 0);
  idx_source_close(s);
  CHECK_INT(idx_source_open(path, source_flags, &s, &err), 0);
  idx_source_close(s);
  idx_source_close(NULL);
}

/* The inflater under test is the one the build chose: the release build
 * tests ISA-L, the sanitized build zlib (Makefile test-asan). */
void source_inflater(void)
{
  const char *want = getenv("TRACED_INFLATE");

  fprintf(stderr, "   inflater: %s\n", idx_inflate_name());
  if (want != NULL && want[0] != 0)
    CHECK_STR(idx_inflate_name(), want);
}

/* Cut, damaged and padded gzip files fail, naming file and offset. */
void source_damaged_gzip(void)
{
  char path[1024], want[128];
  const char *p = tmp_path("cut.json.gz");
  unsigned char *gz;
  size_t n, cuts[6], i;
  struct tally t;

  trace_path(path, sizeof(path),
             "tracelens__mi300_resnet_act_checkpoint.json.gz");
  gz = load(path, &n);
  cuts[0] = 5, cuts[1] = 100, cuts[2] = n / 3, cuts[3] = n / 2;
  cuts[4] = n - 4, cuts[5] = n - 1;
  for (i = 0; i < 6; i++) {
    write_file(p, gz, cuts[i]);
    read_path(p, &t);
    snprintf(want, sizeof(want), "truncated gzip at byte %zu", cuts[i]);
    check_msg(&t, p, want);
  }
  gz[n - 8] ^= 0x55; /* the CRC */
  write_file(p, gz, n);
  read_path(p, &t);
  check_msg(&t, p, "gzip CRC mismatch at byte");
  gz[n - 8] ^= 0x55;
  gz[n / 2] ^= 0xff;
  gz[n / 2 + 1] ^= 0xff;
  write_file(p, gz, n);
  read_path(p, &t);
  check_msg(&t, p, "at byte");
  gz[n / 2] ^= 0xff;
  gz[n / 2 + 1] ^= 0xff;
  memcpy(gz + n, "xyz", 3);
  write_file(p, gz, n + 3);
  read_path(p, &t);
  snprintf(want, sizeof(want), "data after the last gzip member at byte %zu",
           n);
  check_msg(&t, p, want);
  write_file(p, gz, n);
  read_path(p, &t);
  CHECK_INT(t.rc, 0);
  CHECK_INT(t.events, 56451);
  free(gz);
  read_path(tmp_path("missing.json"), &t);
  check_msg(&t, "missing.json", "No such file");
  read_path(tmp_path(""), &t);
  check_msg(&t, "test_reader.", "not a regular file (a folder)");
}

/* Without a thread of its own (idx_options.threads 1) the source reads
 * the same bytes and fails the same way. */
void source_unthreaded(void)
{
  unsigned saved = source_flags;

  source_flags = 0;
  source_plain_and_gzip();
  source_damaged_gzip();
  source_close_early();
  source_flags = saved;
}

/* Chunks with their stage-1 masks, as idx_file() reads them, scanned by
 * the source's thread or the caller, with and without the thread: every
 * trace reads as its text read whole does, with every kernel the CPU runs
 * on one of them; a cut file fails the same way. */
void source_scanned(void)
{
  static const char *const kernels[] = { "avx512", "avx2", "sse2", "generic" };
  static const unsigned flags[] = { IDX_SOURCE_THREAD, 0 };
  static char names[64][256];
  const char *best = idx_scan_name(), *cut = tmp_path("cut.json.gz");
  int count = list_traces(names, 64), k, f, i;
  struct tally want, got;
  unsigned char *gz;
  char path[1024], *json;
  size_t n;

  for (k = 0; k < count; k++) {
    json = trace_text(names[k], path, sizeof(path), &n);
    run_reader(json, n, 0, IDX_FORMAT_AUTO, &want);
    free(json);
    for (f = 0; f < 2; f++) {
      source_flags = flags[f];
      for (i = 0; i < 4; i++) {
        if (idx_scan_select(kernels[i]) != 0)
          continue;
        read_scanned(path, &got);
        same_tally(&want, &got);
        if (strstr(names[k], "mi300_resnet") == NULL)
          break; /* one kernel for the others */
      }
      CHECK_INT(idx_scan_select(best), 0);
    }
  }
  trace_path(path, sizeof(path),
             "tracelens__mi300_resnet_act_checkpoint.json.gz");
  gz = load(path, &n);
  write_file(cut, gz, n / 2);
  for (f = 0; f < 2; f++) {
    source_flags = flags[f];
    read_path(cut, &want);
    read_scanned(cut, &got);
    check_msg(&got, "truncated gzip", "at byte");
    CHECK_STR(got.err.msg, want.err.msg);
  }
  source_flags = IDX_SOURCE_THREAD;
  free(gz);
}
