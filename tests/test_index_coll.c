/*
 * The collectives' side files (index/agg/agg_coll.c, coll_match.c) when
 * something is wrong with them: a rank whose file is missing, cut short,
 * not one at all, or a link is left out of the matching with a warning
 * naming it, and the others are matched still; a path that exists
 * already is replaced, never followed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index.h"
#include "tests/check.h"

static const char *const hta[] = {
  "tests/data/hta_two_ranks/rank_0/sampled_rank-0.json.gz",
  "tests/data/hta_two_ranks/rank_1/sampled_rank-1.json.gz",
};

static void side_file(const char *trace, const char *out)
{
  char path[4096];
  struct idx_options o = { .format = IDX_FORMAT_AUTO,
                           .rank = -1,
                           .collectives_path = out };
  struct tr_err err = { 0 };
  json_t *sum = NULL;

  snprintf(path, sizeof(path), "%s/%s", getenv("SRC_DIR"), trace);
  CHECK_INT(idx_file(path, &o, &sum, &err), 0);
  CHECK_INT(json_integer_value(json_object_get(sum, "collective_events")), 10);
  json_decref(sum);
}

static void copy_cut(const char *from, const char *to, long keep)
{
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  char buf[4096];
  size_t n;

  CHECK(in != NULL && out != NULL);
  while (keep > 0 && (n = fread(buf, 1, sizeof(buf), in)) > 0) {
    n = (long)n < keep ? n : (size_t)keep;
    CHECK(fwrite(buf, 1, n, out) == n);
    keep -= (long)n;
  }
  fclose(in);
  fclose(out);
}

static int count_code(json_t *warnings, const char *code, int rank)
{
  char who[32];
  size_t i;
  json_t *w;
  int n = 0;

  snprintf(who, sizeof(who), "rank %d:", rank);
  json_array_foreach(warnings, i, w) {
    n += !strcmp(json_string_value(json_object_get(w, "code")), code) &&
         strstr(json_string_value(json_object_get(w, "message")), who);
  }
  return n;
}

static void index_coll_bad_files_left_out(void)
{
  char dir[] = "/tmp/traced-test-coll-XXXXXX", p[6][256];
  struct idx_coll_rank ranks[6];
  struct tr_err err = { 0 };
  json_t *out = NULL, *w;
  struct stat st;

  CHECK(mkdtemp(dir) != NULL);
  for (int i = 0; i < 6; i++) {
    snprintf(p[i], sizeof(p[i]), "%s/rank_%d.bin", dir, i);
    ranks[i] = (struct idx_coll_rank){ p[i], i, 0 };
  }
  side_file(hta[0], p[0]);
  /* An old file at the path is replaced, not written through. */
  CHECK(symlink("/etc/hostname", p[1]) == 0);
  side_file(hta[1], p[1]);
  CHECK(lstat(p[1], &st) == 0 && S_ISREG(st.st_mode));
  copy_cut(p[0], p[2], 100);             /* cut short */
  copy_cut("/etc/hostname", p[3], 4096); /* not a side file */
  CHECK(symlink(p[0], p[5]) == 0);       /* p[4] missing, p[5] a link */
  CHECK_INT(idx_collectives_match(ranks, 6, 1000, 16, &out, &err), 0);
  w = json_object_get(out, "warnings");
  for (int r = 2; r < 6; r++)
    CHECK_INT(count_code(w, "no_collective_record", r), 1);
  CHECK_INT(json_array_size(w), 4);
  CHECK_INT(json_integer_value(json_object_get(out, "matched")), 10);
  CHECK_INT(json_array_size(json_object_get(out, "families")), 2);
  json_decref(out);
  for (int i = 0; i < 6; i++)
    unlink(p[i]);
  rmdir(dir);
}

int main(void)
{
  RUN(index_coll_bad_files_left_out);
  return 0;
}
