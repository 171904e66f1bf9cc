/*
 * cap_proc: a child process of the capture runner (an ATOM script), run
 * from an argv array (never a shell command line) in a process group of its
 * own, with stdout and stderr appended to a log file. ATOM's launcher leaves
 * the server running in the background in that same group, so killing the
 * group ends the server too.
 *
 * Loop thread only. Nothing here blocks but the open() of the log file.
 */
#ifndef DAEMON_PROC_H
#define DAEMON_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/tr.h"

struct cap_proc;

/* Called once when the group leader exits: status is its exit code, signal
 * the signal that ended it (0 if none); timed_out when the deadline killed
 * it. */
typedef void (*cap_proc_exit_cb)(struct cap_proc *p, int64_t status, int signal,
                                 bool timed_out, void *ud);

struct cap_proc_opts {
  const char *const *argv;    /* argv[0] is the program's path; borrowed */
  const char *const *env_add; /* "K=V" set over traced's environment,
                                 NULL-terminated; may be NULL; borrowed */
  const char *log_path;       /* stdout+stderr appended here */
  const char *cwd;            /* working folder; NULL: traced's */
  const char *mark;           /* non-NULL: CAP_PROC_MARK=<mark> is set in
                                 its environment (the capture's trace
                                 folder: unique to one traced and one
                                 capture), so that a restarted traced
                                 finds what a crashed one left running */
  uint64_t deadline_ms;       /* kill the group after this; 0: none */
  int grace_s;                /* SIGTERM to SIGKILL; 0: 5 s */
  cap_proc_exit_cb on_exit;
  void *ud;
};

/* Spawns. The strings of opts are copied where they must outlive the call.
 * On failure nothing was started and on_exit is never called. Caller
 * releases with cap_proc_close(). */
int cap_proc_spawn(uv_loop_t *loop, const struct cap_proc_opts *opts,
                   struct cap_proc **out, struct tr_err *err);

/* SIGTERM to the whole group, SIGKILL after the grace period to whatever
 * of the group is left. Works after the leader exited too (the server it
 * left behind). Idempotent. */
void cap_proc_kill(struct cap_proc *p);

/* The environment variable cap_proc_opts.mark sets. */
#define CAP_PROC_MARK "TRACED_CAPTURE"

/* True while any process of the group is alive. */
bool cap_proc_group_alive(const struct cap_proc *p);

/* True while the group pgid has a member that is not a zombie: a server
 * whose parent (the launcher) is gone stays a zombie until init reaps it,
 * and kill() still finds it. Reads /proc: any thread but the loop. */
bool cap_proc_group_lives(pid_t pgid);

/* True until on_exit was called. */
bool cap_proc_running(const struct cap_proc *p);

pid_t cap_proc_pid(const struct cap_proc *p);

/* Releases p: no more callbacks. A kill in progress is finished at once
 * with SIGKILL; otherwise the group (e.g. a server left running on
 * purpose) is left alone. Handles close and memory is freed on the loop
 * later. NULL is ok. */
void cap_proc_close(struct cap_proc *p);

#endif
