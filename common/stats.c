#include "common/stats.h"

#include <pthread.h>
#include <stdio.h>

struct tr_stats tr_stats;

static pthread_mutex_t reason_lock = PTHREAD_MUTEX_INITIALIZER;
static char reason_text[256]; /* guarded by reason_lock */

void tr_stats_store_refused(const char *reason)
{
  pthread_mutex_lock(&reason_lock);
  snprintf(reason_text, sizeof(reason_text), "%s", reason);
  atomic_store(&tr_stats.store_refusing, true);
  pthread_mutex_unlock(&reason_lock);
}

void tr_stats_store_accepted(void)
{
  if (!atomic_load_explicit(&tr_stats.store_refusing, memory_order_relaxed))
    return;
  pthread_mutex_lock(&reason_lock);
  atomic_store(&tr_stats.store_refusing, false);
  reason_text[0] = '\0';
  pthread_mutex_unlock(&reason_lock);
}

bool tr_stats_store_degraded(char *reason, size_t size)
{
  bool yes;

  if (!atomic_load(&tr_stats.store_refusing))
    return false;
  pthread_mutex_lock(&reason_lock);
  yes = atomic_load(&tr_stats.store_refusing);
  if (reason != NULL && size > 0)
    snprintf(reason, size, "%s", reason_text);
  pthread_mutex_unlock(&reason_lock);
  return yes;
}
