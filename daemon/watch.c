/*
 * The server's signs of life, for the phases that wait on it. ATOM's server
 * can be silent for minutes and healthy (docs/ATOM.md: /stop_profile blocks
 * its event loop until rank 0 has exported), so an unanswered HTTP call
 * proves nothing. What cannot be slow decides: its process group (the
 * launcher's: ATOM's start script backgrounds the server with a plain `&`),
 * a refused connection (the kernel still accepts into the listen backlog
 * of a busy server), and this launch's log lines.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/cap_int.h"

#define PROBE_TIMEOUT_MS 3000
#define REFUSALS_DEAD    2 /* refused rounds in a row: nobody listens */

static void begin(struct cap_job *job);

uint64_t cap_watch_log_size(const struct cap_job *job)
{
  struct stat st;

  /* One fstatat of a local file, on the loop: a boundary must be the
   * log's size at the transition itself, not when a pool thread gets to
   * it (which may be after lines of the next phase were written). */
  if (fstatat(AT_FDCWD, job->r->cfg->server_log, &st, AT_SYMLINK_NOFOLLOW) ==
          0 &&
      S_ISREG(st.st_mode))
    return (uint64_t)st.st_size;
  return 0;
}

void cap_watch_mark_phase(struct cap_job *job, enum tr_phase phase)
{
  job->log_at[phase] = cap_watch_log_size(job);
  job->log_marked |= 1u << phase;
}

void cap_watch_errors_from(struct cap_job *job, uint64_t offset)
{
  /* The scan's fields are the pool's while a scan runs. */
  if (job->watch.scanning) {
    job->watch.errors_from = offset;
    job->watch.errors_pending = true;
  } else {
    cap_scan_errors_from(&job->scan, offset);
  }
}

enum tr_phase cap_watch_phase_of(const struct cap_job *job, uint64_t at)
{
  enum tr_phase p = TR_PHASE_LAUNCHING;

  /* The start script truncates the log (docs/ATOM.md): boundaries count
   * from the ready wait on. ATOM's own "stopping profiler" line starts the
   * export, however late traced moved there. */
  for (int i = 0; i < TR_NPHASE; i++)
    if (tr_phase_server((enum tr_phase)i, TR_LOGGED) &&
        (job->log_marked & (1u << i)) && job->log_at[i] <= at)
      p = (enum tr_phase)i;
  if (job->scan.profilers_stopping > 0 && job->scan.stopping_at <= at &&
      tr_phase_server(p, TR_HELD))
    p = TR_PHASE_EXPORTING;
  return p;
}

/* The fix a fatal marker names, or "" (static text): cluster_dims, in the
 * marker's line or the exception Inductor raised with it. */
static const char *marker_fix(const struct cap_scan *s)
{
  return s->marker != NULL && (strstr(s->marker_line, "cluster_dims") ||
                               strstr(s->tb_last, "cluster_dims"))
             ? tr_atom_level_fix()
             : "";
}

void cap_watch_cause(const struct cap_job *job, char *buf, size_t size)
{
  const struct cap_scan *s = &job->scan;
  const char *line = cap_scan_decisive(s), *fix = marker_fix(s);

  if (line == NULL)
    snprintf(buf, size, "the server log of this launch is empty");
  else
    snprintf(buf, size, "the server log says: %s%s%s", line,
             fix[0] ? " -- " : "", fix);
}

/* Decides the round; called once its parts are in. */
static void finish(struct cap_job *job)
{
  struct cap_watch *w = &job->watch;
  const char *dead = NULL;
  cap_watch_cb cb = w->cb;

  if (w->again) {
    w->probe = w->again_probe;
    w->again = w->again_probe = false;
    begin(job);
    return;
  }
  w->cb = NULL;
  if (w->probe)
    w->refusals = w->refused ? w->refusals + 1 : 0;
  w->dead_phase = job->phase;
  if (job->scan.marker != NULL) {
    w->dead_phase = cap_watch_phase_of(job, job->scan.marker_at);
    const char *fix = marker_fix(&job->scan);

    snprintf(w->why, sizeof(w->why),
             "the server log shows the fatal marker \"%s\", written during "
             "the %s phase: %s%s%s",
             job->scan.marker, tr_phase_name(w->dead_phase),
             job->scan.marker_line, fix[0] ? " -- " : "", fix);
  } else if (!w->group_lives) {
    char cause[CAP_SCAN_LINE + 32];

    cap_watch_cause(job, cause, sizeof(cause));
    snprintf(w->why, sizeof(w->why),
             "the server's processes are gone (process group %d); %s",
             (int)cap_proc_pid(job->launcher), cause);
  } else if (w->refusals >= REFUSALS_DEAD)
    snprintf(w->why, sizeof(w->why), "the server refuses connections on %s:%d",
             job->r->cfg->atom_host, job->r->cfg->atom_port);
  else
    w->why[0] = '\0';
  dead = w->why[0] != '\0' ? w->why : NULL;
  w->died = dead != NULL;
  if (job->ending == END_NONE && !job->finished)
    cb(job, dead);
}

static void part_done(struct cap_job *job)
{
  if (job->watch.cb != NULL && --job->watch.pending == 0)
    finish(job);
}

struct scan_work {
  struct cap_work super;
  pid_t pgid; /* the server's process group */
  bool lives;
};

/* The log's new bytes and the group's members, off the loop. */
static void run_scan(struct cap_work *w)
{
  struct scan_work *sw = (struct scan_work *)w;

  cap_scan_run(&w->job->scan);
  sw->lives = cap_proc_group_lives(sw->pgid);
}

static void on_scan_done(struct cap_work *w)
{
  struct cap_job *job = w->job;

  job->watch.group_lives = ((struct scan_work *)w)->lives;
  free(w);
  job->watch.scanning = false;
  if (job->watch.errors_pending) {
    job->watch.errors_pending = false;
    cap_scan_errors_from(&job->scan, job->watch.errors_from);
  }
  if (job->watch.waiting) {
    job->watch.waiting = false;
    if (job->watch.cb != NULL)
      begin(job);
    return;
  }
  part_done(job);
}

static void on_probe(void *ud, const struct cap_http_answer *a)
{
  struct cap_job *job = ud;

  job->watch.conn = NULL;
  job->watch.refused = a->refused;
  part_done(job);
}

static void begin(struct cap_job *job)
{
  struct cap_watch *w = &job->watch;
  const struct cfg *c = job->r->cfg;
  struct scan_work *work;

  /* A scan still in the pool (a snapshot, a dropped round) read bytes from
   * before this round: start when it is back. */
  if (w->scanning) {
    w->waiting = true;
    return;
  }
  if ((work = cap_job_work_new(job, sizeof(*work))) == NULL)
    return;
  w->refused = false;
  w->pending = 1;
  if (w->probe &&
      cap_atom_probe(job->r->http, c->atom_host, c->atom_port, PROBE_TIMEOUT_MS,
                     on_probe, job, &w->conn) == 0)
    w->pending++;
  work->pgid = cap_proc_pid(job->launcher);
  w->scanning = true;
  cap_work_queue(job->r, job, &work->super, run_scan, on_scan_done);
}

void cap_watch_tick(struct cap_job *job, bool probe, cap_watch_cb cb)
{
  if (job->watch.cb != NULL)
    return;
  job->watch.cb = cb;
  job->watch.probe = probe;
  begin(job);
}

void cap_watch_fresh(struct cap_job *job, bool probe, cap_watch_cb cb)
{
  struct cap_watch *w = &job->watch;

  if (w->cb == NULL) {
    cap_watch_tick(job, probe, cb);
    return;
  }
  w->cb = cb;
  w->again = true;
  w->again_probe = w->again_probe || probe;
}

void cap_watch_stop(struct cap_job *job)
{
  cap_http_cancel(job->watch.conn);
  job->watch.conn = NULL;
  job->watch.cb = NULL;
  job->watch.again = job->watch.waiting = false;
  job->watch.pending = 0;
}

struct snapshot_work {
  struct cap_work super;
  void (*then)(struct cap_job *job);
};

static void run_snapshot(struct cap_work *w)
{
  cap_scan_snapshot(&w->job->scan);
}

static void on_snapshot_done(struct cap_work *w)
{
  struct snapshot_work *sw = (struct snapshot_work *)w;
  struct cap_job *job = w->job;
  void (*then)(struct cap_job *) = sw->then;

  free(sw);
  job->watch.scanning = false;
  if (job->ending == END_NONE)
    then(job);
}

void cap_watch_snapshot(struct cap_job *job, void (*then)(struct cap_job *))
{
  struct snapshot_work *sw = cap_job_work_new(job, sizeof(*sw));

  if (sw == NULL)
    return;
  sw->then = then;
  job->watch.scanning = true;
  cap_work_queue(job->r, job, &sw->super, run_snapshot, on_snapshot_done);
}
