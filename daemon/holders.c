/*
 * Processes as /proc shows them, for the judgement of who ATOM's scripts
 * would kill (gpu.c; docs/ATOM.md, "Someone else's GPU job"):
 *
 *   ATOM's own    the server or a worker of one: its environment carries
 *                 traced's mark (a server traced launched), or its command
 *                 line is ATOM's (atom.entrypoints, atom.model_engine, the
 *                 process titles "ATOM::..." of async_proc.py:106 and
 *                 atom/utils/__init__.py:175-195), or it is a
 *                 multiprocessing child of such a process;
 *   foreign       anything else.
 *
 * The local holders of the GPUs are the processes with a descriptor open
 * on the KFD device (kfd_path), as amd-smi finds them inside a container
 * whose PIDs KFD does not know (ROCm/rocm-systems#3752: /proc/<pid>/fd);
 * the processes ATOM's scripts kill by name are those whose command line
 * (pkill -f) matches one of their patterns (atom/scripts.h).
 *
 * Pool threads only: everything here reads /proc.
 */
#include <dirent.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/cap_int.h"

#define PROC_TEXT_MAX (64 << 10) /* of a /proc cmdline or environ */
#define ANCESTORS_MAX 64
#define FDS_MAX       65536 /* descriptors of one process looked at */

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
    yes = yes ||
          strncmp(env + i, CAP_PROC_MARK "=", strlen(CAP_PROC_MARK) + 1) == 0;
  free(env);
  return yes;
}

char *cap_proc_command(pid_t pid)
{
  size_t len = 0;
  char *cmd = proc_text(pid, "cmdline", &len);

  while (cmd != NULL && len > 0 && cmd[len - 1] == '\0')
    len--;
  for (size_t i = 0; cmd != NULL && i < len; i++)
    if (cmd[i] == '\0')
      cmd[i] = ' ';
  if (cmd != NULL)
    cmd[len] = '\0';
  return cmd;
}

bool cap_proc_exists(pid_t pid)
{
  char path[32];

  snprintf(path, sizeof(path), "/proc/%d", (int)pid);
  return access(path, F_OK) == 0;
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

const char *cap_proc_atom_why(pid_t pid, const char *cmd)
{
  const char *why = atom_itself(pid, cmd);
  pid_t up = pid;

  if (why != NULL || (strstr(cmd, "multiprocessing.spawn") == NULL &&
                      strstr(cmd, "multiprocessing.resource_tracker") == NULL))
    return why;
  for (int i = 0; i < ANCESTORS_MAX && (up = parent_of(up)) > 1; i++) {
    char *c = cap_proc_command(up);

    why = c != NULL ? atom_itself(up, c) : NULL;
    free(c);
    if (why != NULL)
      return "a worker of an ATOM server";
  }
  return NULL;
}

/* Calls fn for each process of /proc (its PID). */
static void each_pid(void (*fn)(pid_t pid, void *ud), void *ud)
{
  DIR *d = opendir("/proc");
  struct dirent *e;

  while (d != NULL && (e = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);

    if (*end == '\0' && end != e->d_name && pid > 0 && pid <= INT_MAX)
      fn((pid_t)pid, ud);
  }
  if (d != NULL)
    closedir(d);
}

struct kfd_scan {
  const char *path; /* the device, resolved */
  pid_t *pids;
  size_t n, max;
};

/* Whether pid has a descriptor on the device: /proc/<pid>/fd/<n> links
 * to it (readlink only: the target is never opened, nor stat'ed). */
static void kfd_one(pid_t pid, void *ud)
{
  struct kfd_scan *k = ud;
  char dir[64], link[PATH_MAX], target[PATH_MAX];
  DIR *d;
  struct dirent *e;
  int seen = 0;

  snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
  if (k->n >= k->max || (d = opendir(dir)) == NULL)
    return;
  while ((e = readdir(d)) != NULL && seen++ < FDS_MAX) {
    ssize_t len;

    if (e->d_name[0] == '.')
      continue;
    snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
    len = readlink(link, target, sizeof(target) - 1);
    if (len <= 0)
      continue;
    target[len] = '\0';
    if (strcmp(target, k->path) == 0) {
      k->pids[k->n++] = pid;
      break;
    }
  }
  closedir(d);
}

size_t cap_kfd_holders(const char *kfd_path, pid_t *pids, size_t max)
{
  char real[PATH_MAX];
  struct kfd_scan k = { real, pids, 0, max };

  if (realpath(kfd_path, real) == NULL)
    return 0;
  each_pid(kfd_one, &k);
  return k.n;
}

struct pattern_scan {
  const struct tr_kill_patterns *pats[2];
  const char *scripts[2];
  regex_t *re; /* one per pattern of pats[0] then pats[1]; NULL: bad */
  bool *ok;
  pid_t self;
  json_t *first; /* the first look's matches; NULL: this is it */
  json_t *matches;
  char *foreign;
  size_t fsize;
};

/* The first pattern (and its script's index in *script) that cmd, or
 * the process name comm without -f, matches as pkill reads them; NULL. */
static const struct tr_kill_pattern *first_match(const struct pattern_scan *ps,
                                                 const char *cmd,
                                                 const char *comm, int *script)
{
  size_t k = 0;

  for (int s = 0; s < 2; s++)
    for (size_t i = 0; ps->pats[s] != NULL && i < ps->pats[s]->n; i++, k++) {
      const struct tr_kill_pattern *p = &ps->pats[s]->v[i];
      const char *text = p->full ? cmd : comm;

      if (ps->ok[k] && text != NULL && text[0] != '\0' &&
          regexec(&ps->re[k], text, 0, NULL, 0) == 0) {
        *script = s;
        return p;
      }
    }
  return NULL;
}

/* True when the first look of ps matched pid as a foreign process. */
static bool foreign_before(const struct pattern_scan *ps, pid_t pid)
{
  size_t i;
  json_t *m;

  json_array_foreach(ps->first, i, m)
    if (json_integer_value(json_object_get(m, "pid")) == pid &&
        !json_is_true(json_object_get(m, "atom")))
      return true;
  return false;
}

/* One process: recorded when a pattern matches its command line (the
 * arguments joined by blanks, -f) or its name. On the second look a
 * foreign process the first did not see has come since: left out. */
static void pattern_one(pid_t pid, void *ud)
{
  struct pattern_scan *ps = ud;
  const struct tr_kill_pattern *p;
  size_t len = 0;
  char *cmd, *comm;
  const char *why = NULL;
  int s = 0;

  if (pid == ps->self || (cmd = cap_proc_command(pid)) == NULL)
    return;
  if ((comm = proc_text(pid, "comm", &len)) != NULL)
    comm[strcspn(comm, "\n")] = '\0';
  if ((p = first_match(ps, cmd, comm, &s)) != NULL &&
      ((why = cap_proc_atom_why(pid, cmd)) != NULL || ps->first == NULL ||
       foreign_before(ps, pid))) {
    json_array_append_new(
        ps->matches, json_pack("{s:i,s:s,s:b,s:s,s:s,s:s,s:i}", "pid", (int)pid,
                               "command", cmd, "atom", why != NULL, "why",
                               why ? why : "not ATOM's", "pattern", p->pattern,
                               "script", ps->scripts[s], "line", p->line));
    if (why == NULL) {
      size_t used = strlen(ps->foreign);

      snprintf(ps->foreign + used, ps->fsize - used,
               "%sPID %d (%.120s), by pkill %s'%s' (%s:%d)", used ? ", " : "",
               (int)pid, cmd, p->full ? "-f " : "", p->pattern, ps->scripts[s],
               p->line);
    }
  }
  free(comm);
  free(cmd);
}

/* A foreign match must outlive a look KILL_RELOOK_MS later: a process that
 * only passed by (a `ps | grep lm_eval` in another shell) is not one the
 * scripts' pkill would find. Worker thread: it may sleep. */
#define KILL_RELOOK_MS 300

static void relook(struct pattern_scan *ps, size_t from)
{
  struct timespec ts = { 0, KILL_RELOOK_MS * 1000000L };

  if (ps->foreign[from] == '\0')
    return;
  nanosleep(&ts, NULL);
  ps->first = ps->matches;
  ps->matches = json_array();
  ps->foreign[from] = '\0';
  each_pid(pattern_one, ps);
  json_decref(ps->first);
  ps->first = NULL;
}

void cap_kill_matches(const struct tr_kill_patterns *pats[2],
                      const char *scripts[2], json_t *matches, char *foreign,
                      size_t fsize)
{
  size_t n = (pats[0] ? pats[0]->n : 0) + (pats[1] ? pats[1]->n : 0), k = 0;
  size_t from = strlen(foreign);
  struct pattern_scan ps = { { pats[0], pats[1] },
                             { scripts[0], scripts[1] },
                             calloc(n + 1, sizeof(regex_t)),
                             calloc(n + 1, sizeof(bool)),
                             getpid(),
                             NULL,
                             json_array(),
                             foreign,
                             fsize };

  if (ps.re == NULL || ps.ok == NULL) {
    free(ps.re);
    free(ps.ok);
    json_decref(ps.matches);
    return;
  }
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; pats[s] != NULL && i < pats[s]->n; i++, k++)
      ps.ok[k] = regcomp(&ps.re[k], pats[s]->v[i].pattern,
                         REG_EXTENDED | REG_NOSUB) == 0;
  each_pid(pattern_one, &ps);
  relook(&ps, from);
  json_array_extend(matches, ps.matches);
  json_decref(ps.matches);
  for (k = 0; k < n; k++)
    if (ps.ok[k])
      regfree(&ps.re[k]);
  free(ps.re);
  free(ps.ok);
}
