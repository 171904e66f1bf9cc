/*
 * Answers too slow for an MHD worker (a sweep's scaling reads every
 * decode sample of every rank of every point, a compare two sweeps':
 * docs/SWEEPS.md, "Slow answers"). The route hands the making of its
 * answer to the slow-answers thread and suspends the connection
 * (MHD_ALLOW_SUSPEND_RESUME, as slices and held 401s do); the thread makes
 * it, keeps it on the request and resumes the connection; MHD then calls
 * the route again, which replies what was made (api_slow_made()). So no
 * MHD worker and never the daemon's loop waits for such an answer, and
 * the other routes keep answering meanwhile.
 *
 * One thread: these answers are made one after the other, so a burst of
 * them costs one core, and the answer cache (cache.c) makes a done
 * sweep's once. At most API_SLOW_WAITING wait behind the one being made
 * (429 beyond). The thread reads through a store connection of its own
 * (api_store()), as an MHD worker does.
 *
 * Lifetime: a job belongs to its request (freed with it); while it waits
 * or is made, the request's connection is suspended, so MHD neither calls
 * the route nor frees the request. api_slow_stop() (before
 * MHD_stop_daemon(), which may not stop with a connection suspended)
 * answers the waiting jobs with a refusal, lets the one being made end,
 * and joins the thread.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#define API_SLOW_WAITING 8

struct api_slow_job {
  struct api_req *r;
  api_slow_fn fn;
  void *arg;
  void (*arg_free)(void *);
  struct api_made made;
  struct api_slow_job *next; /* in the queue */
};

struct api_slows {
  pthread_mutex_t lock; /* guards the rest */
  pthread_cond_t work;  /* a job was queued, or the thread must stop */
  struct api_slow_job *head, *tail;
  int waiting;
  bool stopping, started;
  pthread_t thread;
};

/* Says the job's answer is made and hands its request back to MHD (lock
 * held: api_slow_stop() never resumes a connection twice). */
static void finish(struct api_slow_job *j)
{
  j->made.ready = true;
  MHD_resume_connection(j->r->conn);
}

static void *run(void *arg)
{
  struct api_slows *sl = arg;
  struct api_slow_job *j;

  pthread_mutex_lock(&sl->lock);
  for (;;) {
    while (sl->head == NULL && !sl->stopping)
      pthread_cond_wait(&sl->work, &sl->lock);
    if (sl->head == NULL)
      break;
    j = sl->head;
    sl->head = j->next;
    if (sl->head == NULL)
      sl->tail = NULL;
    sl->waiting--;
    pthread_mutex_unlock(&sl->lock);
    j->made.rc = j->fn(j->r, j->arg, &j->made.out, &j->made.err);
    pthread_mutex_lock(&sl->lock);
    finish(j);
  }
  pthread_mutex_unlock(&sl->lock);
  return NULL;
}

struct api_slows *api_slow_new(void)
{
  struct api_slows *sl = calloc(1, sizeof(*sl));

  if (sl == NULL)
    return NULL;
  pthread_mutex_init(&sl->lock, NULL);
  pthread_cond_init(&sl->work, NULL);
  if (pthread_create(&sl->thread, NULL, run, sl) != 0) {
    pthread_mutex_destroy(&sl->lock);
    pthread_cond_destroy(&sl->work);
    free(sl);
    return NULL;
  }
  sl->started = true;
  return sl;
}

void api_slow_stop(struct api_slows *sl)
{
  struct api_slow_job *j;

  if (sl == NULL || !sl->started)
    return;
  pthread_mutex_lock(&sl->lock);
  sl->stopping = true;
  while ((j = sl->head) != NULL) {
    sl->head = j->next;
    tr_err_set(&j->made.err, TR_EBUSY, "", "traced is stopping");
    j->made.rc = TR_EBUSY;
    finish(j);
  }
  sl->tail = NULL;
  sl->waiting = 0;
  pthread_cond_signal(&sl->work);
  pthread_mutex_unlock(&sl->lock);
  pthread_join(sl->thread, NULL);
  sl->started = false;
}

void api_slow_free(struct api_slows *sl)
{
  if (sl == NULL)
    return;
  api_slow_stop(sl);
  pthread_mutex_destroy(&sl->lock);
  pthread_cond_destroy(&sl->work);
  free(sl);
}

void api_slow_job_free(struct api_slow_job *j)
{
  if (j == NULL)
    return;
  if (j->arg_free != NULL)
    j->arg_free(j->arg);
  json_decref(j->made.out);
  free(j);
}

/* Read under the lock that finish() wrote it under: MHD's own resume
 * orders them too, but no sanitizer sees inside libmicrohttpd. */
const struct api_made *api_slow_made(struct api_req *r)
{
  struct api_slows *sl = r->api->slows;
  bool ready;

  if (r->slow == NULL)
    return NULL;
  pthread_mutex_lock(&sl->lock);
  ready = r->slow->made.ready;
  pthread_mutex_unlock(&sl->lock);
  return ready ? &r->slow->made : NULL;
}

enum MHD_Result api_slow(struct api_req *r, api_slow_fn fn, void *arg,
                         void (*arg_free)(void *))
{
  struct api_slows *sl = r->api->slows;
  struct api_slow_job *j = calloc(1, sizeof(*j));
  bool taken = false, stopping;

  if (j == NULL) {
    if (arg_free != NULL)
      arg_free(arg);
    return api_reply_error(r, 500, "no_memory", NULL, "out of memory");
  }
  *j = (struct api_slow_job){ r, fn, arg, arg_free, { .arg = arg }, NULL };
  api_slow_job_free(r->slow);
  r->slow = j;
  pthread_mutex_lock(&sl->lock);
  stopping = sl->stopping;
  if (!stopping && sl->waiting < API_SLOW_WAITING) {
    /* Suspended before the thread can take it (it needs the lock): it
     * never resumes a connection that is not suspended yet. */
    MHD_suspend_connection(r->conn);
    if (sl->tail != NULL)
      sl->tail->next = j;
    else
      sl->head = j;
    sl->tail = j;
    sl->waiting++;
    taken = true;
    pthread_cond_signal(&sl->work);
  }
  pthread_mutex_unlock(&sl->lock);
  if (taken)
    return MHD_YES;
  return stopping ? api_reply_error(r, 429, "busy", NULL, "traced is stopping")
                  : api_reply_error(r, 429, "busy", NULL,
                                    "%d slow answers wait to be made: "
                                    "retry when they are",
                                    API_SLOW_WAITING);
}
