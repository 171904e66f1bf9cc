#include "common/stats.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

/* ---- final states not yet stored ---- */

static struct {
  int64_t id;      /* 0: a free slot */
  uint64_t seq;    /* when it was put: the oldest goes first */
  char status[24]; /* status and phase names */
  char phase[32];  /* "": the stored phase stands */
  json_t *error;   /* owned, or NULL */
} pending[TR_PENDING_MAX];
static uint64_t pending_seq;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of id, else a free one, else the oldest's. Lock held. */
static size_t pending_slot(int64_t id)
{
  size_t pick = 0;

  for (size_t i = 0; i < TR_PENDING_MAX; i++) {
    if (pending[i].id == id)
      return i;
    if (pending[pick].id != 0 &&
        (pending[i].id == 0 || pending[i].seq < pending[pick].seq))
      pick = i;
  }
  return pick;
}

void tr_stats_pending_put(int64_t id, const char *status, const char *phase,
                          json_t *error)
{
  size_t i;

  pthread_mutex_lock(&pending_lock);
  i = pending_slot(id);
  json_decref(pending[i].error);
  pending[i].id = id;
  pending[i].seq = ++pending_seq;
  snprintf(pending[i].status, sizeof(pending[i].status), "%s", status);
  snprintf(pending[i].phase, sizeof(pending[i].phase), "%s",
           phase != NULL ? phase : "");
  pending[i].error = error != NULL ? json_deep_copy(error) : NULL;
  pthread_mutex_unlock(&pending_lock);
}

void tr_stats_pending_drop(int64_t id)
{
  pthread_mutex_lock(&pending_lock);
  for (size_t i = 0; i < TR_PENDING_MAX; i++)
    if (pending[i].id == id) {
      json_decref(pending[i].error);
      memset(&pending[i], 0, sizeof(pending[i]));
    }
  pthread_mutex_unlock(&pending_lock);
}

void tr_stats_pending_apply(json_t *obj)
{
  json_int_t id = json_integer_value(json_object_get(obj, "id"));

  if (id == 0)
    return;
  pthread_mutex_lock(&pending_lock);
  for (size_t i = 0; i < TR_PENDING_MAX; i++) {
    if (pending[i].id != id)
      continue;
    json_object_set_new(obj, "status", json_string(pending[i].status));
    if (pending[i].phase[0] != '\0')
      json_object_set_new(obj, "phase", json_string(pending[i].phase));
    if (pending[i].error != NULL)
      json_object_set_new(obj, "error", json_deep_copy(pending[i].error));
    json_object_set_new(obj, "state_stored", json_false());
  }
  pthread_mutex_unlock(&pending_lock);
}

size_t tr_stats_pending_text(char *buf, size_t size)
{
  size_t n = 0, used = 0;

  if (size > 0)
    buf[0] = '\0';
  pthread_mutex_lock(&pending_lock);
  for (size_t i = 0; i < TR_PENDING_MAX; i++) {
    if (pending[i].id == 0)
      continue;
    if (used < size)
      used += (size_t)snprintf(buf + used, size - used, "%scapture %lld (%s)",
                               n > 0 ? ", " : "", (long long)pending[i].id,
                               pending[i].status);
    n++;
  }
  pthread_mutex_unlock(&pending_lock);
  return n;
}
