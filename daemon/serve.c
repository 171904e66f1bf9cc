/*
 * What the daemon does for the API in its pool (api/api.h's hooks), so
 * that no HTTP thread ever reads a trace or walks a tree: a slice of a
 * rank's raw trace, made with the category rules the runner holds and
 * handed to the API's ring as it is made; and the trash of deleted
 * captures emptied (the API moves a capture's folders into it with one
 * rename each).
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "daemon/cap_int.h"

/* ---- slices ---- */

struct slice_work {
  struct cap_work super;
  const struct api_slice_req *req;
};

/* The format a rank was indexed as (an import may have forced it). */
static enum idx_format format_of(const char *name)
{
  enum idx_format f;

  return idx_format_parse(name, &f) == 0 ? f : IDX_FORMAT_AUTO;
}

/* Every rank's window in one timeline (q->nranks > 0). */
static int slice_ranks(const struct api_slice_req *q,
                       const struct idx_slice_opts *o, struct tr_err *err)
{
  struct idx_slice_rank *ranks = calloc(q->nranks, sizeof(*ranks));
  int rc;

  if (ranks == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  for (size_t i = 0; i < q->nranks; i++)
    ranks[i] = (struct idx_slice_rank){ q->ranks[i].path,
                                        format_of(q->ranks[i].format),
                                        q->ranks[i].rank, q->ranks[i].t0_ns,
                                        q->ranks[i].points };
  rc = idx_slice_ranks(q->root, ranks, q->nranks, o, q->write, q->ud, err);
  free(ranks);
  return rc;
}

static void run_slice(struct cap_work *w)
{
  const struct api_slice_req *q = ((struct slice_work *)w)->req;
  struct idx_slice_opts o = {
    .format = q->nranks > 0 ? IDX_FORMAT_AUTO : format_of(q->format),
    .rules = w->r->rules,
    .max_kernel_names = (uint32_t)w->r->cfg->max_kernel_names,
    .t0_ns = q->t0_ns,
    .start_ns = q->start_ns,
    .end_ns = q->end_ns,
    .findings = q->findings,
    .cancel = q->cancel,
    /* A slice reads and spills what indexing does, under the same caps. */
    .max_inflated_bytes = (uint64_t)w->r->cfg->max_rank_inflated_bytes,
    .max_spill_bytes = (uint64_t)w->r->cfg->max_rank_spill_bytes,
    .points_path = q->nranks > 0 ? NULL : q->points,
  };
  struct idx_slice_stats stats = { 0 };
  struct tr_err err = { 0 };
  char *spill = tr_state_dir(w->r->cfg->db, "spill");
  int nice = cap_nice_lower(), rc = TR_ENOMEM;

  o.spill_dir = spill;
  if (spill == NULL)
    tr_err_set(&err, rc, "", "out of memory");
  else if (q->nranks > 0)
    rc = slice_ranks(q, &o, &err);
  else
    rc = idx_slice_under(q->root, q->path, &o, q->write, q->ud, &stats, &err);
  if (rc == 0 && stats.pieces > 0)
    fprintf(stderr,
            "traced: slice of %s: %llu bytes of text read in %llu of %llu "
            "pieces\n",
            q->path, (unsigned long long)stats.text_bytes,
            (unsigned long long)stats.pieces_read,
            (unsigned long long)stats.pieces);
  free(spill);
  cap_nice_restore(nice);
  q->done(q->ud, rc, err.msg); /* q is the API's no more */
}

static void on_slice_done(struct cap_work *w)
{
  free(w);
}

void cap_runner_slice(struct cap_runner *r, const struct api_slice_req *req)
{
  struct slice_work *sw = calloc(1, sizeof(*sw));

  if (sw == NULL) {
    req->done(req->ud, TR_ENOMEM, "out of memory");
    return;
  }
  sw->req = req;
  cap_work_queue(r, NULL, &sw->super, run_slice, on_slice_done);
}

/* ---- the trash ---- */

/* Everything in the trash, never the trash itself (the API makes it
 * once, then renames into it). */
static int on_remove(const char *path, const struct stat *sb, int flag,
                     struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  if (ftw->level == 0)
    return 0;
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* The walk takes no link (FTW_PHYS): a link to an import's originals is
 * removed, never followed. */
static void run_purge(struct cap_work *w)
{
  char *trash = tr_trash_dir(w->r->cfg->trace_root, 0, NULL);

  if (trash != NULL && nftw(trash, on_remove, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
      errno != ENOENT)
    fprintf(stderr, "traced: emptying %s: %s\n", trash, strerror(errno));
  free(trash);
}

static void on_purge_done(struct cap_work *w)
{
  struct cap_runner *r = w->r;

  free(w);
  r->purging = false;
  if (r->purge_again) {
    r->purge_again = false;
    cap_runner_purge(r);
  }
}

void cap_runner_purge(struct cap_runner *r)
{
  struct cap_work *w;

  if (r->purging) {
    r->purge_again = true;
    return;
  }
  if (r->stopping || (w = calloc(1, sizeof(*w))) == NULL)
    return; /* the next start empties it */
  r->purging = true;
  cap_work_queue(r, NULL, w, run_purge, on_purge_done);
}

void cap_runner_formats(const char **list, size_t n)
{
  size_t k = 0;

  for (int f = IDX_FORMAT_AUTO; f < IDX_FORMAT_COUNT && k + 1 < n; f++)
    list[k++] = idx_format_name((enum idx_format)f);
  list[k] = NULL;
}
