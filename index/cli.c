/*
 * `traced index [--format auto|kineto|mctracer] [--rules FILE] FILE...`
 * (docs/API.md, "Command line"): indexes each file without a daemon and
 * prints its rank summary as one compact JSON document per line. A file
 * that fails is reported on stderr (file and byte offset) and the others
 * still run; exit 0 all ok, 1 some file failed, 2 bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "index/index.h"

/* "auto|kineto|mctracer": the --format values, from the format table. */
static const char *format_names(void)
{
  static char names[128];
  size_t n;
  int f;

  n = (size_t)snprintf(names, sizeof(names), "%s",
                       idx_format_name(IDX_FORMAT_AUTO));
  for (f = IDX_FORMAT_AUTO + 1; f < IDX_FORMAT_COUNT && n < sizeof(names); f++)
    n += (size_t)snprintf(names + n, sizeof(names) - n, "|%s",
                          idx_format_name((enum idx_format)f));
  return names;
}

static int usage(const char *why)
{
  fprintf(stderr,
          "traced index: %s\n"
          "usage: traced index [--format %s] [--rules FILE] FILE...\n",
          why, format_names());
  return 2;
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
  struct idx_options opt = { IDX_FORMAT_AUTO, NULL, -1, NULL, NULL, NULL };
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
      if (idx_format_parse(argv[i + 1], &opt.format) != 0)
        return usage("--format names no trace format");
    } else if (strcmp(argv[i], "--rules") == 0) {
      rules_path = argv[i + 1];
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
