/*
 * Who holds GPU memory, asked before each of ATOM's scripts runs
 * (docs/ATOM.md, "Someone else's GPU job"). ATOM's scripts kill every
 * process rocm-smi lists as holding GPU memory once it does not free it
 * (start_atom_server.sh:45-52 after 30 s, stop_atom_server.sh:74-80 after
 * 60 s): run by a root daemon on a shared node, that would kill a
 * colleague's job. So traced runs `rocm-smi --showpids` first and judges
 * each PID it lists:
 *
 *   ATOM's own    the server or a worker of one: its environment carries
 *                 traced's mark (a server traced launched), or its command
 *                 line is ATOM's (atom.entrypoints, atom.model_engine, the
 *                 process titles "ATOM::..." of async_proc.py:106), or it
 *                 is a multiprocessing child of such a process;
 *   foreign       anything else, and a PID traced cannot see (another PID
 *                 namespace: a container).
 *
 * Foreign holders fail the capture, naming their PIDs and commands, unless
 * take_over_foreign_gpu = true. Without rocm-smi nothing is asked: ATOM's
 * scripts then fail at their own rocm-smi line and the launch says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cap_int.h"

#define SMI_DEADLINE_S  60         /* rocm-smi, at most */
#define SMI_OUTPUT_MAX  (1 << 20)  /* bytes of its output read */
#define PROC_TEXT_MAX   (64 << 10) /* of a /proc cmdline or environ */
#define ANCESTORS_MAX   64

struct gpu_check {
  struct cap_work super;
  json_t *holders;  /* [{pid, command, atom, why}] */
  char foreign[768];
};

/* /proc/<pid>/<name>, NUL-terminated, *len its length (a /proc file says
 * size 0: read as it comes, bounded). NULL when it cannot be read (gone,
 * or another user's environ). */
static char *proc_text(pid_t pid, const char *name, size_t *len)
{
  char path[64], *text;
  FILE *f;

  snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
  if ((f = fopen(path, "re")) == NULL)
    return NULL;
  if ((text = malloc(PROC_TEXT_MAX + 1)) != NULL) {
    *len = fread(text, 1, PROC_TEXT_MAX, f);
    text[*len] = '\0';
  }
  fclose(f);
  return text;
}

static bool has_mark(pid_t pid)
{
  size_t len = 0;
  char *env = proc_text(pid, "environ", &len);
  bool yes = false;

  for (size_t i = 0; env != NULL && i < len; i += strlen(env + i) + 1)
    yes = yes || strncmp(env + i, CAP_PROC_MARK "=", strlen(CAP_PROC_MARK) +
                                                        1) == 0;
  free(env);
  return yes;
}

static char *command_of(pid_t pid)
{
  size_t len = 0;
  char *cmd = proc_text(pid, "cmdline", &len);

  for (size_t i = 0; cmd != NULL && i + 1 < len; i++)
    if (cmd[i] == '\0')
      cmd[i] = ' ';
  return cmd;
}

static pid_t parent_of(pid_t pid)
{
  size_t len = 0;
  char *stat = proc_text(pid, "stat", &len), *close;
  int ppid = 0;

  /* "pid (comm) state ppid ...": comm may hold blanks and parens. */
  if (stat != NULL && (close = strrchr(stat, ')')) != NULL)
    sscanf(close + 1, " %*c %d", &ppid);
  free(stat);
  return (pid_t)ppid;
}

/* ATOM's by itself (not through an ancestor): why, or NULL. */
static const char *atom_itself(pid_t pid, const char *cmd)
{
  if (has_mark(pid))
    return "launched by traced";
  if (strstr(cmd, "atom.entrypoints") != NULL ||
      strstr(cmd, "atom.model_engine") != NULL)
    return "ATOM's command line";
  if (strncmp(cmd, "ATOM::", 6) == 0)
    return "ATOM's process title";
  return NULL;
}

/* Why pid is ATOM's, or NULL when it is not. */
static const char *atom_why(pid_t pid, const char *cmd)
{
  const char *why = atom_itself(pid, cmd);
  pid_t up = pid;

  if (why != NULL || (strstr(cmd, "multiprocessing.spawn") == NULL &&
                      strstr(cmd, "multiprocessing.resource_tracker") == NULL))
    return why;
  for (int i = 0; i < ANCESTORS_MAX && (up = parent_of(up)) > 1; i++) {
    char *c = command_of(up);

    why = c != NULL ? atom_itself(up, c) : NULL;
    free(c);
    if (why != NULL)
      return "a worker of an ATOM server";
  }
  return NULL;
}

/* One PID rocm-smi listed. */
static void judge(struct gpu_check *g, pid_t pid)
{
  char *cmd = command_of(pid);
  const char *why = cmd != NULL ? atom_why(pid, cmd) : NULL;
  size_t used = strlen(g->foreign);

  json_array_append_new(
      g->holders,
      json_pack("{s:i,s:s?,s:b,s:s}", "pid", (int)pid, "command", cmd, "atom",
                why != NULL, "why",
                why != NULL ? why
                : cmd != NULL ? "not ATOM's"
                              : "not visible from traced (another PID "
                                "namespace?)"));
  if (why == NULL && used + 1 < sizeof(g->foreign))
    snprintf(g->foreign + used, sizeof(g->foreign) - used, "%sPID %d (%.120s)",
             used ? ", " : "", (int)pid,
             cmd != NULL ? cmd : "not visible from here");
  free(cmd);
}

/* rocm-smi --showpids: the KFD table's rows after its "PID" header, as
 * ATOM's stop script reads them (stop_atom_server.sh:77). */
/* This run's output: the bytes of logs/<id>/gpu.log from where it ended
 * before the run (the capture's two checks append to it). */
static char *run_output(struct cap_job *job)
{
  char path[4096], *text;
  FILE *f = fopen(cap_log_path(job, "gpu", path, sizeof(path)), "re");
  size_t n = 0;

  if (f == NULL)
    return NULL;
  if (fseeko(f, (off_t)job->gpu.from, SEEK_SET) == 0 &&
      (text = malloc(SMI_OUTPUT_MAX + 1)) != NULL) {
    n = fread(text, 1, SMI_OUTPUT_MAX, f);
    text[n] = '\0';
  } else {
    text = NULL;
  }
  fclose(f);
  return text;
}

static void run_parse(struct cap_work *w)
{
  struct gpu_check *g = (struct gpu_check *)w;
  char *text = run_output(w->job), *save = NULL;
  bool table = false;

  g->holders = json_array();
  if (text == NULL)
    return;
  for (char *line = strtok_r(text, "\n", &save); line != NULL;
       line = strtok_r(NULL, "\n", &save)) {
    char *end;
    long pid;

    if (strncmp(line, "PID", 3) == 0) {
      table = true;
      continue;
    }
    pid = strtol(line, &end, 10);
    if (table && end != line && (*end == '\t' || *end == ' ') && pid > 0 &&
        pid < 1 << 22)
      judge(g, (pid_t)pid);
  }
  free(text);
}

static void on_parsed(struct cap_work *w)
{
  struct gpu_check *g = (struct gpu_check *)w;
  struct cap_job *job = w->job;
  void (*then)(struct cap_job *) = job->gpu.then;
  bool take = job->r->cfg->take_over_foreign_gpu;

  if (job->ending == END_NONE) {
    cap_job_merge(job, json_pack("{s:{s:{s:O,s:b}}}", "extra", job->gpu.which,
                                 "holders", g->holders, "taken_over",
                                 g->foreign[0] != '\0' && take));
    if (g->foreign[0] != '\0' && !take)
      cap_fail(job, END_FAILED, NULL,
               "GPU memory is held by processes that are not ATOM's: %s. "
               "ATOM's scripts would kill them (start_atom_server.sh, "
               "stop_atom_server.sh): end them, or set "
               "take_over_foreign_gpu = true",
               g->foreign);
    else
      then(job);
  }
  json_decref(g->holders);
  free(g);
}

static void on_smi_exit(struct cap_proc *p, int64_t status, int sig,
                        bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)status;
  (void)sig;
  (void)timed_out;
  cap_proc_close(p);
  job->child = NULL;
  /* Whatever it exited with, its table is what ATOM's scripts would read
   * (they ignore its status too). */
  if (job->ending == END_NONE)
    cap_job_queue_new(job, sizeof(struct gpu_check), run_parse, on_parsed);
}

/* True when an executable rocm-smi is on traced's PATH, which the scripts
 * inherit. */
bool cap_rocm_smi_on_path(void)
{
  const char *path = getenv("PATH");
  char *copy = strdup(path ? path : ""), *save = NULL, file[4096];
  bool found = false;

  for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
       d = strtok_r(NULL, ":", &save)) {
    snprintf(file, sizeof(file), "%s/rocm-smi", d);
    found = access(file, X_OK) == 0;
  }
  free(copy);
  return found;
}

void cap_gpu_check(struct cap_job *job, const char *which,
                   void (*then)(struct cap_job *))
{
  static char *const argv[] = { "rocm-smi", "--showpids", NULL };
  char path[4096];
  struct stat st;

  if (!cap_rocm_smi_on_path()) {
    then(job);
    return;
  }
  job->gpu.then = then;
  snprintf(job->gpu.which, sizeof(job->gpu.which), "%s", which);
  /* One stat of the capture's own log, on the loop: where this run's
   * output will start. */
  job->gpu.from = stat(cap_log_path(job, "gpu", path, sizeof(path)), &st) == 0
                      ? (uint64_t)st.st_size
                      : 0;
  cap_spawn(job, (char **)argv, NULL, "gpu", SMI_DEADLINE_S, on_smi_exit,
            &job->child);
}

int cap_gpu_check_budget_s(void)
{
  return SMI_DEADLINE_S + 10;
}
