/*
 * traced's entry point: `traced index ...` indexes files and exits;
 * otherwise the daemon runs in the foreground with the configuration from
 * --config FILE and --key value overrides (docs/API.md, "Command line").
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "daemon/daemon.h"
#include "fleet/fleet.h"
#include "index/index.h"

static void usage(FILE *out, bool settings)
{
  fprintf(out,
          "usage: traced [--config FILE] [--KEY VALUE ...]\n"
          "       traced index [--format auto|kineto|mctracer] "
          "[--rules FILE] FILE...\n"
          "       traced fleet migrate [--config FILE] [--KEY VALUE ...]\n"
          "       traced --check [--config FILE] [--KEY VALUE ...]\n"
          "       traced --help | --help-markdown | --version\n"
          "Every configuration key (see config/traced.conf) can be given as\n"
          "--key value, dashes or underscores, overriding the file. Prefer\n"
          "auth_token_file to --auth-token (a command line is public).\n");
  if (settings) {
    struct cfg cfg;

    cfg_defaults(&cfg);
    cfg_finish(&cfg, NULL);
    fputs("\nconfiguration keys [default]:\n", out);
    cfg_usage(out, &cfg);
    cfg_free(&cfg);
  }
}

/* Why argv[i] is not "--key value": naming the key alone, never a value
 * (a word out of place may be a secret, e.g. --auth-token=SECRET). */
static void bad_word(char **argv, int argc, int i)
{
  const char *w = argv[i];

  if (strncmp(w, "--", 2) != 0)
    fprintf(stderr,
            "traced: expected --key value: argument %d is not a "
            "--key\n",
            i);
  else if (strchr(w, '=') != NULL)
    fprintf(stderr,
            "traced: --%.*s=...: give the value as the next word "
            "(--%.*s VALUE)\n",
            (int)strcspn(w + 2, "="), w + 2, (int)strcspn(w + 2, "="), w + 2);
  else if (i + 1 >= argc)
    fprintf(stderr, "traced: %.64s needs a value\n", w);
}

/* Applies argv over cfg: --config first (wherever it stands), then every
 * --key value in order. Returns 0, or 2 for bad usage. */
static int parse_args(int argc, char **argv, struct cfg *cfg)
{
  struct tr_err err = { 0 };
  int i;

  for (i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--config") == 0 &&
        cfg_load_file(cfg, argv[i + 1], &err) != 0)
      goto bad;
  for (i = 1; i < argc; i += 2) {
    if (strncmp(argv[i], "--", 2) != 0 || strchr(argv[i], '=') != NULL ||
        i + 1 >= argc) {
      bad_word(argv, argc, i);
      usage(stderr, false);
      return 2;
    }
    if (strcmp(argv[i], "--config") != 0 &&
        cfg_set(cfg, argv[i] + 2, argv[i + 1], &err) != 0)
      goto bad;
  }
  if (cfg_finish(cfg, &err) != 0)
    goto bad;
  return 0;
bad:
  fprintf(stderr, "traced: %s\n", err.msg);
  return 2;
}

/* Overwrites the value of --auth-token in argv (with '*'), so that ps and
 * /proc/<pid>/cmdline no longer show it. After the arguments are read. */
static void hide_args(int argc, char **argv)
{
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--auth-token") == 0 ||
        strcmp(argv[i], "--auth_token") == 0)
      memset(argv[i + 1], '*', strlen(argv[i + 1]));
}

int main(int argc, char **argv)
{
  struct cfg cfg;
  bool check;
  int rc;

  if (argc >= 2 && strcmp(argv[1], "index") == 0)
    return idx_cli_main(argc - 1, argv + 1);
  if (argc == 2 && strcmp(argv[1], "--help") == 0) {
    usage(stdout, true);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--help-markdown") == 0) {
    cfg_markdown(stdout);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("traced %s\n", TRACED_VERSION);
    return 0;
  }
  cfg_defaults(&cfg);
  if (argc >= 2 && strcmp(argv[1], "fleet") == 0) {
    /* `traced fleet COMMAND --key value...`: COMMAND stands where the
     * program's name does for parse_args(). */
    rc = argc >= 3 ? parse_args(argc - 2, argv + 2, &cfg) : 2;
    if (rc == 0)
      rc = fleet_cli_main(&cfg, argv[2]);
    else if (argc < 3)
      rc = fleet_cli_main(&cfg, NULL);
    cfg_free(&cfg);
    return rc;
  }
  check = argc >= 2 && strcmp(argv[1], "--check") == 0;
  /* --check stands where the program's name does for parse_args(). */
  rc = parse_args(argc - check, argv + check, &cfg);
  hide_args(argc, argv);
  if (rc == 0)
    rc = check ? daemon_check(&cfg) : daemon_run(&cfg);
  cfg_free(&cfg);
  return rc;
}
