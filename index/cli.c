/*
 * `traced index [--format auto|kineto|mctracer] [--rules FILE]
 * [--max-kernel-names N] [--collectives OUT] FILE...`
 * (docs/API.md, "Command line"): indexes each file without a daemon and
 * prints its rank summary as one compact JSON document per line. A file
 * that fails is reported on stderr (file and byte offset) and the others
 * still run; exit 0 all ok, 1 some file failed, 2 bad usage. With
 * --collectives the files are the ranks of one capture, in the order
 * given: their collectives are matched across them as the daemon does
 * (idx_collectives_match(), every instance kept, 256 timeline bins) and
 * the answer is written to OUT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/index.h"

#define CLI_TIMELINE_BINS 256

static int usage(const char *why)
{
  fprintf(stderr,
          "traced index: %s\n"
          "usage: traced index [--format auto|kineto|mctracer] "
          "[--rules FILE] [--max-kernel-names N] [--collectives OUT] "
          "FILE...\n",
          why);
  return 2;
}

static int parse_format(const char *s, enum idx_format *out)
{
  if (strcmp(s, "auto") == 0)
    *out = IDX_FORMAT_AUTO;
  else if (strcmp(s, "kineto") == 0)
    *out = IDX_FORMAT_KINETO;
  else if (strcmp(s, "mctracer") == 0)
    *out = IDX_FORMAT_MCTRACER;
  else
    return -1;
  return 0;
}

/* Indexes one file and prints its summary; 0 ok, 1 failed. */
static int index_one(const char *path, const struct idx_options *opt)
{
  struct tr_err err = { 0 };
  json_t *summary = NULL;

  if (idx_file(path, opt, &summary, &err) != 0) {
    fprintf(stderr, "traced index: %s\n", err.msg);
    return 1;
  }
  /* 15 significant digits print shares (6 decimals) without binary
   * noise such as 0.10000000000000001. */
  if (json_dumpf(summary, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15)) !=
          0 ||
      fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
    fprintf(stderr, "traced index: %s: cannot write the summary\n", path);
    json_decref(summary);
    return 1;
  }
  json_decref(summary);
  return 0;
}

/* --collectives: the side files of ranks 0..n-1 in dir, matched, the
 * answer written to out. 0 ok, 1 failed. */
static int match_all(const char *dir, int n, const char *out)
{
  struct idx_coll_rank *ranks = calloc((size_t)n + 1, sizeof(*ranks));
  char **paths = calloc((size_t)n + 1, sizeof(*paths));
  struct tr_err err = { 0 };
  json_t *doc = NULL;
  int rc = ranks && paths ? 0 : 1;

  for (int i = 0; rc == 0 && i < n; i++) {
    if (asprintf(&paths[i], "%s/rank_%d.bin", dir, i) < 0)
      rc = 1;
    ranks[i] = (struct idx_coll_rank){ paths[i], i, 0 };
  }
  if (rc == 0 && idx_collectives_match(ranks, (size_t)n, SIZE_MAX / 2,
                                       CLI_TIMELINE_BINS, &doc, &err) != 0) {
    fprintf(stderr, "traced index: %s\n", err.msg);
    rc = 1;
  }
  if (rc == 0 && json_dump_file(doc, out, JSON_COMPACT) != 0) {
    fprintf(stderr, "traced index: cannot write %s\n", out);
    rc = 1;
  }
  for (int i = 0; paths != NULL && i < n; i++) {
    if (paths[i] != NULL)
      (void)unlink(paths[i]);
    free(paths[i]);
  }
  json_decref(doc);
  free(paths);
  free(ranks);
  return rc;
}

/* Indexes files[0..n) as ranks; with coll, their side files go to a
 * private folder and are matched into coll. */
static int index_all(char **files, int n, struct idx_options *opt,
                     const char *coll)
{
  char dir[] = "/tmp/traced-collectives-XXXXXX", path[64];
  int status = 0;

  if (coll != NULL && mkdtemp(dir) == NULL) {
    fprintf(stderr, "traced index: cannot make a folder in /tmp\n");
    return 1;
  }
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof(path), "%s/rank_%d.bin", dir, i);
    opt->collectives_path = coll != NULL ? path : NULL;
    status |= index_one(files[i], opt);
  }
  if (coll != NULL) {
    status |= status == 0 ? match_all(dir, n, coll) : 0;
    for (int i = 0; i < n; i++) {
      snprintf(path, sizeof(path), "%s/rank_%d.bin", dir, i);
      (void)unlink(path);
    }
    (void)rmdir(dir);
  }
  return status;
}

int idx_cli_main(int argc, char **argv)
{
  struct idx_options opt = {
    IDX_FORMAT_AUTO, NULL, -1, NULL, NULL, NULL, 0, NULL
  };
  const char *rules_path = NULL, *coll = NULL;
  struct idx_rules *rules = NULL;
  struct tr_err err = { 0 };
  int i, status = 0;

  for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (strcmp(argv[i], "--") == 0) {
      i++; /* end of options: files follow */
      break;
    }
    if (i + 1 >= argc)
      return usage("an option lacks its value");
    if (strcmp(argv[i], "--format") == 0) {
      if (parse_format(argv[i + 1], &opt.format) != 0)
        return usage("--format must be auto, kineto or mctracer");
    } else if (strcmp(argv[i], "--rules") == 0) {
      rules_path = argv[i + 1];
    } else if (strcmp(argv[i], "--collectives") == 0) {
      coll = argv[i + 1];
    } else if (strcmp(argv[i], "--max-kernel-names") == 0) {
      char *end;
      unsigned long n = strtoul(argv[i + 1], &end, 10);

      if (*argv[i + 1] == '\0' || *end != '\0' || n < 1 || n > 10000000)
        return usage("--max-kernel-names must be 1..10000000");
      opt.max_kernel_names = (uint32_t)n;
    } else {
      return usage("unknown option");
    }
  }
  if (i >= argc)
    return usage("no trace file given");
  if (idx_rules_load(rules_path, &rules, &err) != 0) {
    fprintf(stderr, "traced index: %s\n", err.msg);
    return 2;
  }
  opt.rules = rules;
  status = index_all(argv + i, argc - i, &opt, coll);
  idx_rules_free(rules);
  return status;
}
