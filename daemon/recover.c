/*
 * Start-up of the runner and recovery of what a previous traced left
 * "running" (a crash, a kill -9, a power cut): nothing may stay running
 * forever. A capture whose trace folder is complete (every expected rank
 * has its one .gz and no .json) is indexed; any other becomes
 * "interrupted" with the phase it was in. An import is indexed again.
 *
 * The processes an interrupted capture left (its server, its bench) are
 * ended: after a kill -9 nothing else would end them.
 *
 * This runs in cap_runner_new() (cap_recover()), before the loop runs and
 * before the HTTP API starts: nothing waits on the loop yet, so these blocking
 * reads and one-row writes delay only the start-up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/text.h"
#include "daemon/cap_int.h"

static void push_id(struct cap_runner *r, enum tr_kind kind, int64_t id)
{
  struct cap_queue *q = &r->queues[kind];
  int64_t *grown = realloc(q->recover, (q->nrecover + 1) * sizeof(*grown));

  if (grown == NULL)
    return;
  q->recover = grown;
  grown[q->nrecover++] = id;
}

/* Marks capture id interrupted with its error, in one write. A store that
 * refuses it (a full disk, a read-only file) gets it again from the
 * runner's retries (work.c) until it takes it: never left "running". */
static void interrupt(struct cap_runner *r, struct store *st, int64_t id,
                      const char *phase, const char *why)
{
  char msg[1024 + 128]; /* the caller's 1024-byte why whole, after the prefix */
  json_t *error, *merges;
  struct tr_err err = { 0 };
  struct store_apply a = { false, TR_STATUS_INTERRUPTED, -1, NULL, NULL };
  int rc;

  snprintf(msg, sizeof(msg),
           "traced stopped during %s (crash or restart); "
           "the capture cannot resume: %s",
           phase, why);
  error =
      json_pack("{s:s,s:s,s:n}", "phase", phase, "message", msg, "log_tail");
  merges = json_pack("{s:O}", "error", error);
  a.merges = merges;
  rc = store_capture_apply(st, id, &a, &err);
  if (rc != 0)
    fprintf(stderr, "traced: capture %lld: %s\n", (long long)id, err.msg);
  if (cap_store_refused(rc))
    cap_runner_orphan(r, id, TR_STATUS_INTERRUPTED, -1, json_incref(error));
  json_decref(merges);
  json_decref(error);
  fprintf(stderr, "traced: capture %lld interrupted in %s: %s\n", (long long)id,
          phase, why);
}

/* The ranks the capture's export was to hold: as settled at its ready gate
 * (progress.ranks_expected), else its TP. */
static int expected_ranks(json_t *obj)
{
  json_t *n =
      json_object_get(json_object_get(obj, "progress"), "ranks_expected");
  json_t *tp = json_object_get(json_object_get(obj, "params"), "tp");

  if (json_is_integer(n) && json_integer_value(n) > 0)
    return (int)json_integer_value(n);
  return json_is_integer(tp) ? (int)json_integer_value(tp) : TR_DEFAULT_TP;
}

/* A sweep's point (docs/SWEEPS.md): the window its server exported into
 * the sweep's launch folder is moved into the point's own folder when the
 * point was collecting it, or when its export had completed (benchmark,
 * exporting); a rename is atomic and the move idempotent. Its processes
 * carry the launch folder's mark: *mark gets it. */
static void collect_point(const struct cfg *cfg, int64_t id, json_t *obj,
                          const char *phase, char **mark)
{
  int64_t sweep =
      json_integer_value(json_object_get(json_object_get(obj, "sweep"), "id"));
  char *launch = sweep ? cap_sweep_launch_dir(cfg->trace_root, sweep) : NULL;
  char *dir = tr_capture_dir(cfg->trace_root, id, NULL);
  struct cap_layout *l = NULL;
  struct tr_err err = { 0 };
  bool complete = false;

  if (launch != NULL && dir != NULL &&
      (strcmp(phase, "benchmark") == 0 || strcmp(phase, "exporting") == 0) &&
      cap_layout_scan(launch, &l, NULL) == 0)
    complete = cap_layout_complete(l, expected_ranks(obj), NULL, 0);
  cap_layout_free(l);
  if (launch != NULL && dir != NULL &&
      (complete || strcmp(phase, "collecting") == 0) &&
      cap_sweep_collect(launch, dir, &err) != 0)
    fprintf(stderr, "traced: capture %lld: collecting its traces: %s\n",
            (long long)id, err.msg);
  free(dir);
  if (launch != NULL) {
    free(*mark);
    *mark = launch;
  }
}

/* Returns true when the capture is interrupted (its processes must go,
 * found by *mark, a new string: the folder their mark names). */
static bool recover_capture(struct cap_runner *r, struct store *st, int64_t id,
                            json_t *obj, char **mark)
{
  const char *phase = json_string_value(json_object_get(obj, "phase"));
  struct cap_layout *l = NULL;
  char *dir = tr_capture_dir(r->cfg->trace_root, id, NULL);
  char problems[1024] = "";

  phase = phase ? phase : "queued";
  *mark = dir != NULL ? strdup(dir) : NULL;
  collect_point(r->cfg, id, obj, phase, mark);
  if (dir == NULL || cap_layout_scan(dir, &l, NULL) != 0)
    snprintf(problems, sizeof(problems), "no trace folder %.900s",
             dir ? dir : "");
  else if (cap_layout_complete(l, expected_ranks(obj), problems,
                               sizeof(problems)))
    problems[0] = '\0';
  cap_layout_free(l);
  free(dir);
  if (problems[0] == '\0') {
    fprintf(stderr,
            "traced: capture %lld: trace folder complete after a "
            "restart in %s: indexing it\n",
            (long long)id, phase);
    push_id(r, TR_KIND_CAPTURE, id);
    return false;
  }
  interrupt(r, st, id, phase, problems);
  return true;
}

/* ---- what a crashed traced left running ---- */

#define LEFTOVER_GRACE_MS 5000

/* True when /proc/<pid>/environ holds one of the marks: CAP_PROC_MARK=
 * <a folder of marks> (proc.h: a capture's trace folder, a sweep's launch
 * folder). */
static bool marked(const char *pid, char *const *marks, size_t n)
{
  char path[300], *env, *want;
  size_t len = 0;
  int fd;
  bool hit = false;

  snprintf(path, sizeof(path), "/proc/%s/environ", pid);
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return false;
  env = tr_read_tail(fd, 1 << 20, 1 << 20, &len);
  close(fd);
  for (size_t i = 0; env != NULL && i < n && !hit; i++) {
    if (marks[i] == NULL)
      continue;
    if (asprintf(&want, CAP_PROC_MARK "=%s", marks[i]) < 0)
      break;
    for (size_t at = 0; !hit && at < len; at += strlen(env + at) + 1)
      hit = strcmp(env + at, want) == 0;
    free(want);
  }
  free(env);
  return hit;
}

/* Signals the process groups of every marked process; the number found. */
static int signal_marked(char *const *marks, size_t n, int sig)
{
  DIR *d = opendir("/proc");
  struct dirent *e;
  int found = 0;
  pid_t pid, pgid;

  while (d != NULL && (e = readdir(d)) != NULL) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
        !marked(e->d_name, marks, n))
      continue;
    found++;
    pid = (pid_t)strtol(e->d_name, NULL, 10); /* /proc/<pid>: digits */
    pgid = getpgid(pid);
    if (pgid > 1 && pgid != getpgrp())
      kill(-pgid, sig);
    kill(pid, sig);
  }
  if (d != NULL)
    closedir(d);
  return found;
}

/* After a crash (kill -9) the scripts, the bench and the server of an
 * interrupted capture run on, holding the GPUs until the next capture's
 * stop script. Every process traced starts carries its capture's mark
 * (proc.h): SIGTERM to theirs, SIGKILL to what is left after a grace. */
static void end_leftovers(char *const *marks, size_t n)
{
  int left;

  if (n == 0 || signal_marked(marks, n, SIGTERM) == 0)
    return;
  for (int waited = 0; waited < LEFTOVER_GRACE_MS; waited += 100) {
    usleep(100 * 1000);
    if ((left = signal_marked(marks, n, 0)) == 0)
      return;
  }
  left = signal_marked(marks, n, SIGKILL);
  fprintf(stderr,
          "traced: %d leftover processes of interrupted captures "
          "killed\n",
          left);
}

int cap_recover(struct cap_runner *r, struct tr_err *err)
{
  struct store *st;
  int rc;

  if ((rc = store_open(r->cfg->db, STORE_RW, &st, err)) != 0)
    return rc;
  for (int kind = 0; kind < TR_NKIND && rc == 0; kind++) {
    int64_t *ids = NULL;
    char **marks = NULL;
    size_t n = 0, nleft = 0;

    rc = store_capture_ids(st, "running", tr_kind_names[kind], &ids, &n, err);
    if (rc == 0 && n > 0 && (marks = calloc(n, sizeof(*marks))) == NULL)
      rc = tr_err_set(err, TR_ENOMEM, "", "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
      json_t *obj = NULL;

      if (store_capture_get(st, ids[i], &obj, NULL) != 0)
        continue;
      if (kind == TR_KIND_IMPORT)
        push_id(r, TR_KIND_IMPORT, ids[i]);
      else if (recover_capture(r, st, ids[i], obj, &marks[nleft]))
        nleft++; /* interrupted: end what it left */
      else
        free(marks[nleft]);
      json_decref(obj);
    }
    end_leftovers(marks, nleft);
    for (size_t i = 0; i < nleft; i++)
      free(marks[i]);
    free(marks);
    free(ids);
  }
  store_close(st);
  return rc;
}
