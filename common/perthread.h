/*
 * State of one owner kept per thread (each libmicrohttpd worker's store
 * connections: api/server.c, fleet/lab.c): made on a thread's first call
 * and listed, so that the owner frees every thread's once the threads are
 * joined (the workers come and go with their daemon; pthread's key
 * destructors would run too late or on threads the owner never sees).
 * tr_perthread_get() is for any thread; init, pop and destroy for the
 * owner alone, with no other thread using it.
 */
#ifndef TR_PERTHREAD_H
#define TR_PERTHREAD_H

#include <pthread.h>
#include <stddef.h>

#include "common/tr.h"

/* The first member of every thread's state. */
struct tr_perthread_item {
  struct tr_perthread_item *next;
};

struct tr_perthread {
  pthread_key_t key;    /* -> this thread's item */
  pthread_mutex_t lock; /* guards head */
  struct tr_perthread_item *head;
};

/* 0, or TR_ENOMEM (no key left: pt unusable, nothing to destroy). */
int tr_perthread_init(struct tr_perthread *pt);

/* This thread's state: size bytes (a struct whose first member is a
 * struct tr_perthread_item), zeroed on the thread's first call. Owned by
 * pt; NULL with err set when out of memory. */
void *tr_perthread_get(struct tr_perthread *pt, size_t size,
                       struct tr_err *err);

/* Takes one thread's state out of pt (NULL: none left); the caller frees
 * what it holds, then it with free(). */
void *tr_perthread_pop(struct tr_perthread *pt);

/* The key and the lock, once every state is popped. */
void tr_perthread_destroy(struct tr_perthread *pt);

#endif
