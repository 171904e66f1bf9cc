/*
 * traced's entry point: `traced index ...` indexes files and exits;
 * otherwise the daemon runs in the foreground with the configuration from
 * --config FILE and --key value overrides (docs/API.md, "Command line").
 */
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "daemon/daemon.h"
#include "fleet/fleet.h"
#include "index/index.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: traced [--config FILE] [--KEY VALUE ...]\n"
          "       traced index [--format auto|kineto|mctracer] "
          "[--rules FILE] FILE...\n"
          "       traced fleet migrate [--config FILE] [--KEY VALUE ...]\n"
          "       traced --help | --version\n"
          "Every configuration key (see config/traced.conf) can be given as\n"
          "--key value, dashes or underscores, overriding the file.\n");
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
    if (strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) {
      fprintf(stderr, "traced: expected --key value at \"%s\"\n", argv[i]);
      usage(stderr);
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

int main(int argc, char **argv)
{
  struct cfg cfg;
  int rc;

  if (argc >= 2 && strcmp(argv[1], "index") == 0)
    return idx_cli_main(argc - 1, argv + 1);
  if (argc == 2 && strcmp(argv[1], "--help") == 0) {
    usage(stdout);
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
  rc = parse_args(argc, argv, &cfg);
  cfg_hide_args(argc, argv);
  if (rc == 0)
    rc = daemon_run(&cfg);
  cfg_free(&cfg);
  return rc;
}
