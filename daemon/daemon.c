/* TEMPORARY stub, replaced by the daemon work. */
#include <stdio.h>
#include "daemon/daemon.h"
int daemon_run(const struct cfg *cfg)
{
  (void)cfg;
  fprintf(stderr, "traced: daemon not built yet\n");
  return 1;
}
