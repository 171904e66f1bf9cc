/*
 * `traced index [--format auto|kineto|mctracer] [--rules FILE]
 * [--max-kernel-names N] FILE...`
 * (docs/API.md, "Command line"): indexes each file without a daemon and
 * prints its rank summary as one compact JSON document per line. A file
 * that fails is reported on stderr (file and byte offset) and the others
 * still run; exit 0 all ok, 1 some file failed, 2 bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "index/index.h"

static int usage(const char *why)
{
  fprintf(stderr,
          "traced index: %s\n"
          "usage: traced index [--format auto|kineto|mctracer] "
          "[--rules FILE] [--max-kernel-names N] FILE...\n",
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

int idx_cli_main(int argc, char **argv)
{
  struct idx_options opt = { IDX_FORMAT_AUTO, NULL, -1, NULL, NULL, NULL, 0 };
  const char *rules_path = NULL;
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
  for (; i < argc; i++)
    status |= index_one(argv[i], &opt);
  idx_rules_free(rules);
  return status;
}
