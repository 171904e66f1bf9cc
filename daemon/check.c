/*
 * What ATOM's scripts will find when traced runs them (docs/ATOM.md,
 * "Under systemd"): they inherit traced's environment, and run a bare
 * `python` (start_atom_server.sh:83, run_benchmark.sh:77) and rocm-smi.
 * ATOM's images put Python, with ATOM installed, in /opt/venv/bin (ATOM's
 * docker/Dockerfile:11,19); a PATH without it runs another Python, or
 * none, and the server dies at its first import. So traced says which
 * `python` the scripts will run and whether it imports `atom`: in its
 * start-up log (asked in the pool, once the loop runs, bounded in time),
 * and with `traced --check`, which also names rocm-smi, the scripts, the
 * KFD device and the pkill patterns of the scripts, and exits 1 when
 * something a capture needs is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "daemon/cap_int.h"
#include "daemon/daemon.h"

#define PROBE_TIMEOUT_MS 20000 /* `import atom` pulls in ATOM's package */
#define PROBE_OUTPUT_MAX 2048

extern char **environ;

struct python_probe {
  char path[4096]; /* the python PATH gives, or "" */
  bool imports;    /* it imports atom */
  char said[512];  /* atom's file, or the last line of its error */
};

/* The first executable name on PATH, into out; false when none. */
static bool on_path(const char *name, char *out, size_t size)
{
  const char *path = getenv("PATH");
  char *copy = strdup(path ? path : ""), *save = NULL;
  bool found = false;

  for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
       d = strtok_r(NULL, ":", &save)) {
    snprintf(out, size, "%s/%s", d, name);
    found = access(out, X_OK) == 0;
  }
  free(copy);
  if (!found && size > 0)
    out[0] = '\0';
  return found;
}

static int64_t now_ms(void)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Reads the child's output until it closes or the deadline; kills it
 * then. Returns its wait status, or -1 when it had to be killed. */
static int collect(pid_t pid, int fd, char *buf, size_t size)
{
  int64_t deadline = now_ms() + PROBE_TIMEOUT_MS;
  size_t used = 0;
  int status = -1;
  bool late = false;

  for (;;) {
    struct pollfd p = { fd, POLLIN, 0 };
    int64_t left = deadline - now_ms();
    ssize_t n;

    if (left <= 0 || poll(&p, 1, (int)left) == 0) {
      late = true;
      break;
    }
    if ((n = read(fd, buf + used, size - 1 - used)) < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    used += (size_t)n;
    if (used + 1 >= size)
      used = 0; /* keep the end: the error's last lines */
  }
  buf[used] = '\0';
  if (late)
    kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return late ? -1 : status;
}

/* The last non-blank line of text, into out. */
static void last_line(char *text, char *out, size_t size)
{
  char *save = NULL, *last = NULL;

  for (char *l = strtok_r(text, "\n", &save); l != NULL;
       l = strtok_r(NULL, "\n", &save))
    if (l[strspn(l, " \t\r")] != '\0')
      last = l;
  snprintf(out, size, "%s", last ? last : "");
}

/* Runs `python -c 'import atom'` as the scripts would. Blocks (up to
 * PROBE_TIMEOUT_MS): pool threads and the command line only. */
static void python_probe(struct python_probe *out)
{
  char *argv[] = { "python", "-c",
                   "import atom, sys; sys.stdout.write(atom.__file__ or '')",
                   NULL };
  char buf[PROBE_OUTPUT_MAX];
  posix_spawn_file_actions_t fa;
  int fds[2], status;
  pid_t pid;

  memset(out, 0, sizeof(*out));
  if (!on_path("python", out->path, sizeof(out->path))) {
    snprintf(out->said, sizeof(out->said), "no python on PATH");
    return;
  }
  if (pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(out->said, sizeof(out->said), "pipe: %s", strerror(errno));
    return;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  /* Not traced's working folder: a folder named atom there would import
   * as a namespace package (the scripts run in an empty one). */
  posix_spawn_file_actions_addchdir_np(&fa, "/");
  if (posix_spawn(&pid, out->path, &fa, NULL, argv, environ) != 0) {
    snprintf(out->said, sizeof(out->said), "cannot run it: %s",
             strerror(errno));
    close(fds[0]);
    close(fds[1]);
    posix_spawn_file_actions_destroy(&fa);
    return;
  }
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  status = collect(pid, fds[0], buf, sizeof(buf));
  close(fds[0]);
  out->imports = status == 0;
  if (status == -1)
    snprintf(out->said, sizeof(out->said), "`import atom` took over %d s",
             PROBE_TIMEOUT_MS / 1000);
  else
    last_line(buf, out->said, sizeof(out->said));
}

static void print_python(FILE *to, const struct python_probe *p)
{
  if (p->path[0] == '\0')
    fprintf(to, "traced: ATOM's scripts run `python`: none on PATH (ATOM's "
                "image has it in /opt/venv/bin: put that first on traced's "
                "PATH)\n");
  else if (p->imports)
    fprintf(to,
            "traced: ATOM's scripts run python = %s, which imports "
            "atom (%s)\n",
            p->path, p->said);
  else
    fprintf(to,
            "traced: ATOM's scripts run python = %s, which does NOT import "
            "atom: %s (ATOM's image has its Python in /opt/venv/bin: put "
            "that first on traced's PATH)\n",
            p->path, p->said);
}

/* ---- at start-up, in the pool ---- */

struct probe_work {
  uv_work_t req;
  struct python_probe p;
};

static void run_probe(uv_work_t *req)
{
  python_probe(&((struct probe_work *)req)->p);
}

static void on_probe(uv_work_t *req, int status)
{
  struct probe_work *w = (struct probe_work *)req;

  if (status == 0)
    print_python(stderr, &w->p);
  free(w);
}

void daemon_python_log(struct uv_loop_s *loop)
{
  struct probe_work *w = calloc(1, sizeof(*w));

  if (w != NULL && uv_queue_work(loop, &w->req, run_probe, on_probe) != 0)
    free(w);
}

/* ---- traced --check ---- */

static bool check_script(const char *what, const char *path)
{
  struct tr_kill_patterns pats = { 0 };
  struct tr_err err = { 0 };
  bool ok = access(path, R_OK) == 0;

  printf("traced: %s script: %s%s\n", what, path, ok ? "" : " (missing)");
  if (ok && tr_kill_patterns_read(path, &pats, &err) == 0 && pats.n > 0) {
    printf("traced:   it kills by name (pkill):");
    for (size_t i = 0; i < pats.n; i++)
      printf(" %s'%s'", pats.v[i].full ? "-f " : "", pats.v[i].pattern);
    printf("%s%s\n", pats.unresolved[0] ? "; unread: " : "", pats.unresolved);
  }
  tr_kill_patterns_free(&pats);
  return ok;
}

int daemon_check(const struct cfg *cfg)
{
  struct python_probe p;
  char smi[4096];
  struct stat st;
  bool ok = true;

  python_probe(&p);
  print_python(stdout, &p);
  ok = p.imports;
  if (on_path("rocm-smi", smi, sizeof(smi)))
    printf("traced: rocm-smi: %s\n", smi);
  else
    printf("traced: rocm-smi: not on PATH (ATOM's scripts exit 1 at their "
           "first GPU check)\n");
  ok = ok && smi[0] != '\0';
  if (stat(cfg->kfd_path, &st) == 0)
    printf("traced: kfd_path: %s (%s)\n", cfg->kfd_path,
           tr_file_kind(st.st_mode));
  else
    printf("traced: kfd_path: %s: %s (no local GPU holder can be seen)\n",
           cfg->kfd_path, strerror(errno));
  ok = check_script("start", cfg->start_script) && ok;
  ok = check_script("bench", cfg->bench_script) && ok;
  ok = check_script("stop", cfg->stop_script) && ok;
  printf("traced: %s\n", ok ? "ready to drive ATOM"
                            : "not ready: a capture would fail (above)");
  return ok ? 0 : 1;
}
