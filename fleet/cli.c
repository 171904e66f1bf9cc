/*
 * `traced fleet migrate`: the fleet's schema brought to this build's
 * version by an administrator (docs/FLEET.md), with the role that owns it.
 */
#include <stdio.h>
#include <string.h>

#include "fleet/fleet_int.h"

int fleet_cli_main(const struct cfg *cfg, const char *command)
{
  struct tr_err err = { 0 };
  PGconn *c = NULL;
  int from = 0, rc;

  if (command == NULL || strcmp(command, "migrate") != 0) {
    fprintf(stderr, "usage: traced fleet migrate [--config FILE] "
                    "[--fleet-dsn DSN]\n");
    return 2;
  }
  if (cfg->fleet_dsn[0] == '\0') {
    fprintf(stderr, "traced: fleet migrate: fleet_dsn is not set\n");
    return 2;
  }
  rc = fleet_dsn_check(cfg->fleet_dsn, &err);
  if (rc == 0)
    rc = fleet_pg_connect(cfg->fleet_dsn, "migrate", 10,
                          cfg->fleet_timeout_s * 1000, &c, &err);
  if (rc == 0)
    rc = fleet_schema_migrate(c, &from, &err);
  PQfinish(c);
  if (rc < 0) {
    fprintf(stderr, "traced: fleet migrate: %s\n", err.msg);
    return 1;
  }
  if (from == fleet_schema_version)
    printf("fleet schema: version %d, nothing to do\n", from);
  else
    printf("fleet schema: version %d -> %d\n", from, fleet_schema_version);
  return 0;
}
