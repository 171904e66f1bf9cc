/*
 * Answers about finished work, kept in memory. A capture whose status is
 * "done" never changes again (its ranks, tables and object are final)
 * until it is deleted, and deleting goes through this API: so its JSON (and
 * CSV) answers are kept, keyed by the request, and dropped on DELETE. The
 * dashboard and scripts poll the same few URLs; a hit costs a copy
 * instead of a query. An answer about a sweep depends on every point's
 * capture: each entry lists the captures it depends on.
 *
 * A fill races a delete: a worker reads "done", runs the query, and only
 * then stores the answer, while another deletes the capture in between.
 * The epoch closes that gap: api_cache_drop() bumps it, and a put whose
 * epoch (read before the status) is older is refused.
 *
 * Any thread; one mutex. Ceiling: answer_cache_mb (0: nothing is kept);
 * the oldest entries go first.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#define NBUCKETS 1024

struct entry {
  struct entry *next;          /* in its bucket */
  struct entry *older, *newer; /* the age list */
  int64_t *ids;                /* the captures the answer depends on */
  size_t nids;
  char *key;
  const char *ctype; /* static: the answer's Content-Type */
  char *body;
  size_t len;
};

struct api_cache {
  pthread_mutex_t lock; /* guards everything below */
  uint64_t epoch;
  size_t bytes, max; /* kept, and at most */
  struct entry *buckets[NBUCKETS];
  struct entry *oldest, *newest;
};

static size_t hash(const char *key)
{
  size_t h = 5381;

  for (; *key != '\0'; key++)
    h = h * 33 + (unsigned char)*key;
  return h % NBUCKETS;
}

struct api_cache *api_cache_new(size_t max_bytes)
{
  struct api_cache *c = calloc(1, sizeof(*c));

  if (c != NULL) {
    pthread_mutex_init(&c->lock, NULL);
    c->max = max_bytes;
  }
  return c;
}

static void entry_free(struct entry *e)
{
  if (e == NULL)
    return;
  free(e->key);
  free(e->body);
  free(e->ids);
  free(e);
}

/* Whether e's answer depends on capture id. */
static bool depends(const struct entry *e, int64_t id)
{
  for (size_t i = 0; i < e->nids; i++)
    if (e->ids[i] == id)
      return true;
  return false;
}

/* Unlinks e from its bucket and the age list and frees it. Lock held. */
static void unlink_entry(struct api_cache *c, struct entry *e)
{
  struct entry **p = &c->buckets[hash(e->key)];

  while (*p != e)
    p = &(*p)->next;
  *p = e->next;
  if (e->older != NULL)
    e->older->newer = e->newer;
  else
    c->oldest = e->newer;
  if (e->newer != NULL)
    e->newer->older = e->older;
  else
    c->newest = e->older;
  c->bytes -= e->len + strlen(e->key) + e->nids * sizeof(*e->ids);
  entry_free(e);
}

void api_cache_free(struct api_cache *c)
{
  if (c == NULL)
    return;
  while (c->oldest != NULL)
    unlink_entry(c, c->oldest);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

uint64_t api_cache_epoch(struct api_cache *c)
{
  uint64_t e;

  pthread_mutex_lock(&c->lock);
  e = c->epoch;
  pthread_mutex_unlock(&c->lock);
  return e;
}

/* The entry of key, or NULL. Lock held. */
static struct entry *find(struct api_cache *c, const char *key)
{
  struct entry *e;

  for (e = c->buckets[hash(key)]; e != NULL; e = e->next)
    if (strcmp(e->key, key) == 0)
      break;
  return e;
}

struct MHD_Response *api_cache_get(struct api_cache *c, const char *key)
{
  struct MHD_Response *resp = NULL;
  const char *ctype = NULL;
  struct entry *e;

  pthread_mutex_lock(&c->lock);
  e = find(c, key);
  if (e != NULL) {
    resp =
        MHD_create_response_from_buffer(e->len, e->body, MHD_RESPMEM_MUST_COPY);
    ctype = e->ctype;
  }
  pthread_mutex_unlock(&c->lock);
  if (resp != NULL)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  return resp;
}

static struct entry *entry_new(const char *key, const int64_t *ids, size_t nids,
                               const char *ctype, const char *body, size_t len)
{
  struct entry *e = calloc(1, sizeof(*e));

  if (e != NULL) {
    e->key = strdup(key);
    e->body = malloc(len);
    e->ids = calloc(nids ? nids : 1, sizeof(*ids));
  }
  if (e == NULL || e->key == NULL || e->body == NULL || e->ids == NULL) {
    entry_free(e);
    return NULL;
  }
  memcpy(e->body, body, len);
  if (nids > 0)
    memcpy(e->ids, ids, nids * sizeof(*ids));
  e->nids = nids;
  e->ctype = ctype;
  e->len = len;
  return e;
}

void api_cache_put(struct api_cache *c, uint64_t epoch, const char *key,
                   const int64_t *ids, size_t nids, const char *ctype,
                   const char *body, size_t len)
{
  struct entry *e;

  /* One answer may not push out most of the others. */
  if (len > c->max / 8)
    return;
  e = entry_new(key, ids, nids, ctype, body, len);
  if (e == NULL)
    return; /* not kept: the next request asks the store again */
  pthread_mutex_lock(&c->lock);
  if (epoch != c->epoch || find(c, key) != NULL) {
    pthread_mutex_unlock(&c->lock);
    entry_free(e);
    return;
  }
  e->next = c->buckets[hash(key)];
  c->buckets[hash(key)] = e;
  e->older = c->newest;
  if (c->newest != NULL)
    c->newest->newer = e;
  else
    c->oldest = e;
  c->newest = e;
  c->bytes += len + strlen(key) + nids * sizeof(*ids);
  while (c->bytes > c->max)
    unlink_entry(c, c->oldest);
  pthread_mutex_unlock(&c->lock);
}

void api_cache_drop(struct api_cache *c, int64_t id)
{
  struct entry *e, *newer;

  pthread_mutex_lock(&c->lock);
  c->epoch++;
  for (e = c->oldest; e != NULL; e = newer) {
    newer = e->newer;
    if (depends(e, id))
      unlink_entry(c, e);
  }
  pthread_mutex_unlock(&c->lock);
}
