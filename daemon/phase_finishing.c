/*
 * FINISHING, of captures and imports, once every rank is indexed and
 * before it is done: in one pool job, its ranks' collectives are matched
 * (idx_collectives_match(): the side files the rank jobs wrote under
 * logs/<id>/collectives), and store_capture_finish() writes them, its
 * all-ranks tables summed and its verdict in one transaction; only then
 * is DONE entered (its own state write), so a done capture's answers never
 * change afterwards. A restart before DONE does it again (the capture is
 * indexed again: the rank jobs skip the ranks stored, their side files
 * stay).
 *
 * The collectives never fail a capture: a matching that cannot be made is
 * a warning in the capture's "collectives". A store that refuses the
 * write (a full disk) is tried again as state writes are (work.c's rule),
 * then fails it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

#define TIMELINE_BINS 256 /* of the collectives' rank x time picture */

struct finish_work {
  struct cap_work super;
  json_t *verdict; /* made */
  int rc;
  char msg[CAP_MSG_MAX];
};

/* Ranks run together within a group: a disaggregated server's halves and
 * pipeline stages apart (daemon/layout.h). */
static int group_of(const struct cap_rank *rk)
{
  return rk->half * 1024 + (rk->pp > 0 ? rk->pp : 0);
}

/* The matched collectives of the job's ranks, or {"warnings": [why not]}. */
static json_t *collectives(struct cap_job *job)
{
  const struct cap_layout *l = job->layout;
  struct idx_coll_rank *ranks = calloc(l->n + 1, sizeof(*ranks));
  struct tr_err err = { 0 };
  json_t *out = NULL;
  size_t i;

  for (i = 0; ranks != NULL && i < l->n; i++) {
    ranks[i].path = cap_coll_path(job, i, false);
    ranks[i].rank = (int)i;
    ranks[i].group = group_of(&l->ranks[i]);
    if (ranks[i].path == NULL)
      break;
  }
  if (ranks == NULL || i < l->n)
    tr_err_set(&err, TR_ENOMEM, "", "out of memory");
  else
    /* Every instance a route may ask for (limit up to table_limit_max). */
    idx_collectives_match(ranks, l->n, (size_t)job->r->cfg->table_limit_max,
                          TIMELINE_BINS, &out, &err);
  for (i = 0; ranks != NULL && i < l->n; i++)
    free((char *)ranks[i].path);
  free(ranks);
  if (out == NULL)
    out = json_pack("{s:[{s:s,s:s}]}", "warnings", "code", "collectives_failed",
                    "message", err.msg);
  return out;
}

static void run_finish(struct cap_work *w)
{
  struct finish_work *fw = (struct finish_work *)w;
  struct store_finish f = { collectives(w->job),
                            w->r->cfg->regression_threshold_pct };
  struct tr_err err = { 0 };
  struct store *st = cap_db_take(w->r, &err);

  fw->rc = st != NULL
               ? store_capture_finish(st, w->job->id, &f, &fw->verdict, &err)
           : err.code ? err.code
                      : TR_EDB;
  cap_db_give(w->r, st);
  snprintf(fw->msg, sizeof(fw->msg), "%s", err.msg);
  json_decref(f.collectives);
}

static void on_finish_done(struct cap_work *w)
{
  struct finish_work *fw = (struct finish_work *)w;
  struct cap_job *job = w->job;

  if (job->ending == END_NONE && !job->finished && cap_store_refused(fw->rc) &&
      cap_work_retry(w, false))
    return; /* the store refused it: again, as state writes are */
  if (job->ending != END_NONE || job->finished) {
    json_decref(fw->verdict);
  } else if (fw->rc != 0) {
    cap_fail(job, END_FAILED, NULL,
             "every rank is indexed, but the capture's results cannot be "
             "stored: %s",
             fw->msg);
  } else {
    job->verdict = fw->verdict;
    cap_enter(job, TR_PHASE_DONE, NULL);
  }
  free(fw);
}

int phase_finishing_budget_s(const struct cap_job *job)
{
  return cap_trace_budget_s(job);
}

void phase_finishing_enter(struct cap_job *job)
{
  cap_job_queue_new(job, sizeof(struct finish_work), run_finish,
                    on_finish_done);
}
