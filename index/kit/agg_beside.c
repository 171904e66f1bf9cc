/*
 * Work handed to one thread beside the caller's (agg.h, "beside"): what
 * runs after the reader is done runs on one thread while the other core
 * idles (docs/BENCHMARKS.md, "The critical path's cost"), so decode's walk
 * and the analysis of each closed step go to a second one. Items run in
 * the order they were handed over, at most AGG_BESIDE_SLOTS waiting, so
 * what they hold stays bounded.
 */
#include <string.h>

#include "index/kit/kit.h"

static void *beside_main(void *arg)
{
  struct agg_beside *b = arg;
  void *item;
  int rc;

  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (b->n == 0 && !b->ending)
      pthread_cond_wait(&b->cv, &b->mu);
    if (b->n == 0)
      break;
    item = b->items[b->first];
    pthread_mutex_unlock(&b->mu);
    rc = b->run(b->ud, item);
    pthread_mutex_lock(&b->mu);
    /* The slot frees once its item has run: the bound counts it. */
    b->first = (b->first + 1) % AGG_BESIDE_SLOTS;
    b->n--;
    if (b->rc == 0)
      b->rc = rc;
    pthread_cond_broadcast(&b->cv);
  }
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

void agg_beside_start(struct agg_beside *b, int thread,
                      int (*run)(void *ud, void *item), void *ud)
{
  memset(b, 0, sizeof(*b));
  b->run = run;
  b->ud = ud;
  if (!thread)
    return;
  if (pthread_mutex_init(&b->mu, NULL) != 0)
    return;
  if (pthread_cond_init(&b->cv, NULL) != 0) {
    pthread_mutex_destroy(&b->mu);
    return;
  }
  b->started = pthread_create(&b->thread, NULL, beside_main, b) == 0;
  if (!b->started) {
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
  }
}

int agg_beside_put(struct agg_beside *b, void *item)
{
  int rc;

  if (!b->started) {
    rc = b->run(b->ud, item);
    if (b->rc == 0)
      b->rc = rc;
    return b->rc;
  }
  pthread_mutex_lock(&b->mu);
  while (b->n == AGG_BESIDE_SLOTS)
    pthread_cond_wait(&b->cv, &b->mu);
  b->items[(b->first + b->n) % AGG_BESIDE_SLOTS] = item;
  b->n++;
  pthread_cond_broadcast(&b->cv);
  rc = b->rc;
  pthread_mutex_unlock(&b->mu);
  return rc;
}

int agg_beside_end(struct agg_beside *b)
{
  if (b->started) {
    pthread_mutex_lock(&b->mu);
    b->ending = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    b->started = 0;
  }
  return b->rc;
}
