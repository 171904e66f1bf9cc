/*
 * Child processes in their own process group. UV_PROCESS_DETACHED makes
 * the child call setsid(), so its pid is the group id of everything it
 * starts (ATOM's launcher backgrounds the server: it stays in the group).
 */
#include "daemon/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

struct cap_proc {
  uv_process_t proc;
  uv_timer_t deadline; /* the process's own time budget */
  uv_timer_t grace;    /* SIGTERM -> SIGKILL */
  pid_t pgid;
  int grace_s;
  int open_handles; /* freed when this drops to 0 */
  bool running;     /* leader not yet exited */
  bool timed_out;
  bool killing; /* grace timer armed */
  bool closed;  /* owner let go: no more callbacks */
  cap_proc_exit_cb on_exit;
  void *ud;
};

static void on_handle_closed(uv_handle_t *h)
{
  struct cap_proc *p = h->data;

  if (--p->open_handles == 0)
    free(p);
}

static void close_all(struct cap_proc *p)
{
  uv_close((uv_handle_t *)&p->proc, on_handle_closed);
  uv_close((uv_handle_t *)&p->deadline, on_handle_closed);
  uv_close((uv_handle_t *)&p->grace, on_handle_closed);
}

static void signal_group(const struct cap_proc *p, int sig)
{
  if (p->pgid > 0)
    kill(-p->pgid, sig);
}

static void on_exit_cb(uv_process_t *h, int64_t status, int term_signal)
{
  struct cap_proc *p = h->data;

  p->running = false;
  uv_timer_stop(&p->deadline);
  if (p->closed) {
    /* Released while running (see cap_proc_close): finish now. */
    close_all(p);
    return;
  }
  p->on_exit(p, status, term_signal, p->timed_out, p->ud);
}

static void on_grace(uv_timer_t *t)
{
  struct cap_proc *p = t->data;

  p->killing = false;
  signal_group(p, SIGKILL);
}

static void on_deadline(uv_timer_t *t)
{
  struct cap_proc *p = t->data;

  p->timed_out = true;
  cap_proc_kill(p);
}

/* environ with env_add and the mark laid over it, as a new NULL-terminated
 * array of borrowed strings (only the array is allocated; mark is the
 * caller's buffer). */
static char **build_env(const char *const *add, const char *mark)
{
  size_t n = 0, nadd = 0, k = 0;
  char **env;

  while (environ[n] != NULL)
    n++;
  while (add != NULL && add[nadd] != NULL)
    nadd++;
  env = calloc(n + nadd + 2, sizeof(*env));
  if (env == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
    bool replaced = false;

    for (size_t j = 0; j < nadd && !replaced; j++)
      replaced = strncmp(add[j], environ[i], len) == 0;
    if (mark[0] != '\0' && strncmp(mark, environ[i], len) == 0)
      replaced = true;
    if (!replaced)
      env[k++] = environ[i];
  }
  for (size_t j = 0; j < nadd; j++)
    env[k++] = (char *)add[j];
  if (mark[0] != '\0')
    env[k++] = (char *)mark;
  return env;
}

static int start_child(uv_loop_t *loop, struct cap_proc *p,
                       const struct cap_proc_opts *o, int fd, char **env)
{
  uv_process_options_t po;
  uv_stdio_container_t stdio[3];

  memset(&po, 0, sizeof(po));
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = fd;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = fd;
  po.file = o->argv[0];
  po.cwd = o->cwd;
  po.args = (char **)o->argv;
  po.env = env;
  po.flags = UV_PROCESS_DETACHED;
  po.stdio_count = 3;
  po.stdio = stdio;
  po.exit_cb = on_exit_cb;
  p->proc.data = p;
  return uv_spawn(loop, &p->proc, &po);
}

int cap_proc_spawn(uv_loop_t *loop, const struct cap_proc_opts *o,
                   struct cap_proc **out, struct tr_err *err)
{
  struct cap_proc *p = calloc(1, sizeof(*p));
  char *mark = NULL;
  char **env;
  int fd, rc;

  if (o->mark != NULL && asprintf(&mark, CAP_PROC_MARK "=%s", o->mark) < 0)
    mark = NULL;
  env = build_env(o->env_add, mark ? mark : "");

  if (p == NULL || env == NULL) {
    free(p);
    free(env);
    free(mark);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = -errno;
    free(p);
    free(env);
    free(mark);
    return tr_err_set(err, rc, "", "cannot open %s: %s", o->log_path,
                      strerror(-rc));
  }
  rc = start_child(loop, p, o, fd, env);
  close(fd);
  free(env);
  free(mark);
  if (rc != 0) {
    /* uv_spawn initialised the handle even on failure: close it. */
    p->open_handles = 1;
    uv_close((uv_handle_t *)&p->proc, on_handle_closed);
    return tr_err_set(err, rc, "", "cannot run %s: %s", o->argv[0],
                      uv_strerror(rc));
  }
  p->pgid = p->proc.pid;
  p->running = true;
  p->grace_s = o->grace_s > 0 ? o->grace_s : 5;
  p->on_exit = o->on_exit;
  p->ud = o->ud;
  p->open_handles = 3;
  uv_timer_init(loop, &p->deadline);
  uv_timer_init(loop, &p->grace);
  p->deadline.data = p->grace.data = p;
  uv_unref((uv_handle_t *)&p->grace);
  if (o->deadline_ms > 0)
    uv_timer_start(&p->deadline, on_deadline, o->deadline_ms, 0);
  *out = p;
  return 0;
}

void cap_proc_kill(struct cap_proc *p)
{
  if (p == NULL || p->killing || !cap_proc_group_alive(p))
    return;
  signal_group(p, SIGTERM);
  p->killing = true;
  uv_timer_start(&p->grace, on_grace, (uint64_t)p->grace_s * 1000, 0);
}

bool cap_proc_group_alive(const struct cap_proc *p)
{
  return p != NULL && p->pgid > 0 && (kill(-p->pgid, 0) == 0 || errno == EPERM);
}

/* The state and the process group of /proc/<pid>/stat ("pid (comm) S ppid
 * pgrp ..."; comm may hold blanks and parentheses: read after the last
 * ')'). */
static bool proc_stat(const char *pid, char *state, pid_t *pgrp)
{
  char path[300], buf[512], *close_paren;
  int fd, ppid, group;
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%s/stat", pid);
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return false;
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  if ((close_paren = strrchr(buf, ')')) == NULL ||
      sscanf(close_paren + 1, " %c %d %d", state, &ppid, &group) != 3)
    return false;
  *pgrp = group;
  return true;
}

bool cap_proc_group_lives(pid_t pgid)
{
  DIR *d;
  struct dirent *e;
  bool lives = false;

  if (pgid <= 0 || (kill(-pgid, 0) != 0 && errno != EPERM))
    return false;
  if ((d = opendir("/proc")) == NULL)
    return true; /* cannot tell: kill() found it */
  while (!lives && (e = readdir(d)) != NULL) {
    char state;
    pid_t group;

    lives = e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
            proc_stat(e->d_name, &state, &group) && group == pgid &&
            state != 'Z' && state != 'X';
  }
  closedir(d);
  return lives;
}

bool cap_proc_running(const struct cap_proc *p)
{
  return p != NULL && p->running;
}

pid_t cap_proc_pid(const struct cap_proc *p)
{
  return p != NULL ? p->pgid : 0;
}

void cap_proc_close(struct cap_proc *p)
{
  if (p == NULL || p->closed)
    return;
  p->closed = true;
  if (p->killing || p->running) {
    /* Nobody will wait for the grace period any more. A running leader
     * is only closed on shutdown or after a kill: end it so that its exit
     * is reaped, then close (on_exit_cb). */
    signal_group(p, SIGKILL);
    p->killing = false;
  }
  if (!p->running)
    close_all(p);
}
