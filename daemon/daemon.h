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

/* `traced --check` (daemon/check.c): what ATOM's scripts will find, said
 * on stdout: the `python` they run and whether it imports atom, rocm-smi,
 * the KFD device, the scripts and their pkill patterns. Returns 0 when a
 * capture has what it needs, else 1. Blocks (a Python import, at most
 * 20 s). */
int daemon_check(const struct cfg *cfg);

/* At start-up: which `python` the scripts will run and whether it imports
 * atom, said on stderr once known (asked in loop's pool, at most 20 s). */
struct uv_loop_s;
void daemon_python_log(struct uv_loop_s *loop);

#endif
