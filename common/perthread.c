#include "common/perthread.h"

#include <stdlib.h>

int tr_perthread_init(struct tr_perthread *pt)
{
  pt->head = NULL;
  if (pthread_key_create(&pt->key, NULL) != 0)
    return TR_ENOMEM;
  pthread_mutex_init(&pt->lock, NULL);
  return 0;
}

void *tr_perthread_get(struct tr_perthread *pt, size_t size, struct tr_err *err)
{
  struct tr_perthread_item *t = pthread_getspecific(pt->key);

  if (t != NULL)
    return t;
  t = calloc(1, size);
  if (t == NULL || pthread_setspecific(pt->key, t) != 0) {
    free(t);
    tr_err_set(err, TR_ENOMEM, "", "out of memory");
    return NULL;
  }
  pthread_mutex_lock(&pt->lock);
  t->next = pt->head;
  pt->head = t;
  pthread_mutex_unlock(&pt->lock);
  return t;
}

void *tr_perthread_pop(struct tr_perthread *pt)
{
  struct tr_perthread_item *t = pt->head;

  if (t != NULL)
    pt->head = t->next;
  return t;
}

void tr_perthread_destroy(struct tr_perthread *pt)
{
  pthread_key_delete(pt->key);
  pthread_mutex_destroy(&pt->lock);
}
