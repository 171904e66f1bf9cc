/*
 * A sweep's points share one server (docs/SWEEPS.md): the runner keeps its
 * process group's handle between one point's end and the next one's
 * start, and each point's window leaves the launch folder for the
 * point's own trace folder before it is indexed (COLLECTING, and
 * recover.c after a restart).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cap_int.h"

/* Rank folders lie at most this deep under a launch folder:
 * prefill/pp0_rank_0/capture_traces/<file> is four. */
#define COLLECT_DEPTH 4

char *cap_sweep_launch_dir(const char *root, int64_t sweep)
{
  char *dir = tr_capture_dir(root, sweep, "sweeps"), *out = NULL;

  if (dir != NULL && asprintf(&out, "%s/launch", dir) < 0)
    out = NULL;
  free(dir);
  return out;
}

/* ---- the server, from point to point ---- */

void cap_sweep_drop(struct cap_runner *r)
{
  /* Closing leaves the group alone: the server stays up, as after a
   * capture, until the next stop script. */
  cap_proc_close(r->sweep.launcher);
  memset(&r->sweep, 0, sizeof(r->sweep));
}

void cap_sweep_join(struct cap_job *job)
{
  struct cap_sweep *s = &job->r->sweep;

  /* Imports run beside the GPU's queue; a point indexed again after a
   * restart needs no server. */
  if (job->is_import || job->recovered)
    return;
  if (job->sweep_id == 0 || s->id != job->sweep_id || s->launcher == NULL) {
    cap_sweep_drop(job->r);
    return;
  }
  job->joins = true;
  job->launcher = s->launcher;
  job->export.ranks_expected = s->ranks_expected;
  job->export.ranks_source = s->ranks_source;
  memset(s, 0, sizeof(*s));
}

void cap_sweep_keep(struct cap_job *job)
{
  struct cap_runner *r = job->r;

  if (job->is_import || job->recovered)
    return;
  cap_sweep_drop(r);
  /* Only a server that serves: the point's window is out of the launch
   * folder (no file of it left for the next export's rule), or the point
   * joined and never ran (its claim was refused); no look found it dead,
   * and its launcher is long done. */
  if (job->sweep_id == 0 ||
      !(job->collected || (job->joins && job->phase == TR_PHASE_QUEUED)) ||
      job->watch.died || job->launcher == NULL ||
      cap_proc_running(job->launcher) || r->stopping)
    return;
  r->sweep.id = job->sweep_id;
  r->sweep.launcher = job->launcher;
  r->sweep.ranks_expected = job->export.ranks_expected;
  r->sweep.ranks_source = job->export.ranks_source;
  job->launcher = NULL;
}

/* ---- a point's files ---- */

static int path_of(char *buf, size_t size, const char *dir, const char *name,
                   struct tr_err *err)
{
  int n = snprintf(buf, size, "%s/%s", dir, name);

  if (n < 0 || (size_t)n >= size)
    return tr_err_set(err, -ENAMETOOLONG, "", "path too long: %s/%s", dir,
                      name);
  return 0;
}

/* One file: renamed, or (a graph-capture trace) hard-linked. */
static int collect_file(const char *src, const char *dst, bool link_it,
                        struct tr_err *err)
{
  int rc = link_it ? link(src, dst) : rename(src, dst);

  if (rc != 0 && !(link_it && errno == EEXIST))
    return tr_err_set(err, -errno, "", "cannot %s %s to %s: %s",
                      link_it ? "link" : "move", src, dst, strerror(errno));
  return 0;
}

static int collect_dir(const char *from, const char *to, int depth,
                       bool link_it, struct tr_err *err)
{
  char src[4096], dst[4096];
  DIR *d = opendir(from);
  struct dirent *e;
  struct stat st;
  int rc = tr_mkdir_p(to);

  if (rc != 0 || d == NULL) {
    if (d != NULL)
      closedir(d);
    return tr_err_set(err, rc ? rc : -errno, "", "cannot read %s or make %s",
                      from, to);
  }
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if ((rc = path_of(src, sizeof(src), from, e->d_name, err)) != 0 ||
        (rc = path_of(dst, sizeof(dst), to, e->d_name, err)) != 0)
      break;
    /* No link is followed: a rank's files are ATOM's regular files. */
    if (lstat(src, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode) && depth < COLLECT_DEPTH)
      rc =
          collect_dir(src, dst, depth + 1,
                      link_it || strcmp(e->d_name, "capture_traces") == 0, err);
    else if (S_ISREG(st.st_mode) && depth > 0)
      rc = collect_file(src, dst, link_it, err);
  }
  closedir(d);
  return rc;
}

int cap_sweep_collect(const char *from, const char *to, struct tr_err *err)
{
  return collect_dir(from, to, 0, false, err);
}
