/*
 * daemon: runs traced as a service: opens the store, recovers captures
 * left mid-phase by a crash, starts the HTTP API and the capture runner on
 * a libuv loop, and runs until SIGTERM/SIGINT. Main thread only.
 */
#ifndef DAEMON_H
#define DAEMON_H

#include "common/config.h"

/* Returns the process exit status. cfg is borrowed for the whole run. */
int daemon_run(const struct cfg *cfg);

#endif
