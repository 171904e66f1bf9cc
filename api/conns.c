/*
 * Request deadlines. libmicrohttpd's connection timeout is idle time, reset
 * by every byte, so a client trickling one header line every few seconds
 * holds its connection for ever, and a thousand of them hold every slot
 * (slowloris: docs/SECURITY.md). Here each connection carries the time its
 * current request began: when it was accepted, or when the previous request on
 * a kept-alive connection was answered. A reaper thread shuts down any whose
 * request is not fully received (headers and body) request_timeout_s after
 * it began; MHD then closes it as a client that went away. Once a request
 * is received, the response has MHD's idle timeout (idle_timeout_s): a
 * large trace download is never cut while it moves. An idle kept-alive
 * connection counts as a request not received, so it frees its slot too.
 *
 * The per-address and total connection limits are MHD's own
 * (MHD_OPTION_PER_IP_CONNECTION_LIMIT, MHD_OPTION_CONNECTION_LIMIT).
 *
 * The reaper also resumes the connections whose 401 guard.c holds
 * (api_conn_hold()): MHD then calls the request's handler again, which
 * answers.
 *
 * Threads: on_connection() and the marks run on MHD's workers; the list
 * is guarded by one mutex (taken on connect, close and hold only), under
 * which the reaper shuts sockets down and resumes held ones. MHD
 * calls NOTIFY_CLOSED (which unlinks the entry) before it closes the
 * socket, so the reaper never touches a descriptor that was reused.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "api/api_int.h"

#define REAP_EVERY_NS 250000000 /* how often deadlines are looked at */

/* began_ns and receiving are written by the connection's MHD thread
 * without the lock (twice a request), read by the reaper: began_ns is
 * stored before receiving is set, so a reaper that sees a new request
 * sees its start too. */
struct api_conn {
  int fd;
  _Atomic int64_t began_ns; /* CLOCK_MONOTONIC: the current request's start */
  atomic_bool receiving;    /* the request is not fully received yet */
  bool shut;                /* shut down by the reaper, not yet closed */
  struct MHD_Connection *held; /* suspended by api_conn_hold(), or NULL */
  int64_t resume_ns;           /* when the reaper resumes it */
  struct api_conn *prev, *next;
};

struct api_conns {
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t wake;  /* stop */
  pthread_t reaper;
  bool stop;
  bool released; /* api_conns_release() ran: no more holds */
  int64_t deadline_ns;
  struct api_conn *head;
};

static int64_t mono_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Shuts down the connections past their deadline, resumes the held ones
 * that are due (all of them with now INT64_MAX). Lock held. */
static void reap(struct api_conns *cs, int64_t now)
{
  for (struct api_conn *c = cs->head; c != NULL; c = c->next) {
    if (c->held != NULL && now >= c->resume_ns) {
      MHD_resume_connection(c->held);
      c->held = NULL;
    }
    if (atomic_load(&c->receiving) && !c->shut &&
        now - atomic_load(&c->began_ns) >= cs->deadline_ns) {
      shutdown(c->fd, SHUT_RDWR);
      c->shut = true;
    }
  }
}

static void *run_reaper(void *arg)
{
  struct api_conns *cs = arg;
  struct timespec until;

  pthread_mutex_lock(&cs->lock);
  while (!cs->stop) {
    reap(cs, mono_ns());
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += REAP_EVERY_NS;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&cs->wake, &cs->lock, &until);
  }
  pthread_mutex_unlock(&cs->lock);
  return NULL;
}

int api_conns_start(struct api *api, int request_timeout_s)
{
  struct api_conns *cs = calloc(1, sizeof(*cs));
  pthread_condattr_t attr;

  if (cs == NULL)
    return TR_ENOMEM;
  cs->deadline_ns = (int64_t)request_timeout_s * 1000000000;
  pthread_mutex_init(&cs->lock, NULL);
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&cs->wake, &attr);
  pthread_condattr_destroy(&attr);
  if (pthread_create(&cs->reaper, NULL, run_reaper, cs) != 0) {
    pthread_cond_destroy(&cs->wake);
    pthread_mutex_destroy(&cs->lock);
    free(cs);
    return TR_ENOMEM;
  }
  api->conns = cs;
  return 0;
}

void api_conns_stop(struct api *api)
{
  struct api_conns *cs = api->conns;

  if (cs == NULL)
    return;
  pthread_mutex_lock(&cs->lock);
  cs->stop = true;
  pthread_cond_signal(&cs->wake);
  pthread_mutex_unlock(&cs->lock);
  pthread_join(cs->reaper, NULL);
  /* MHD has stopped: every connection was closed and unlinked. */
  pthread_cond_destroy(&cs->wake);
  pthread_mutex_destroy(&cs->lock);
  free(cs);
  api->conns = NULL;
}

void api_on_connection(void *cls, struct MHD_Connection *conn,
                       void **socket_context,
                       enum MHD_ConnectionNotificationCode toe)
{
  struct api_conns *cs = ((struct api *)cls)->conns;
  struct api_conn *c = *socket_context;
  const union MHD_ConnectionInfo *ci;

  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c = ci != NULL ? calloc(1, sizeof(*c)) : NULL;
    if (c == NULL)
      return; /* not tracked: MHD's idle timeout still ends it */
    c->fd = ci->connect_fd;
    atomic_init(&c->began_ns, mono_ns());
    atomic_init(&c->receiving, true);
    pthread_mutex_lock(&cs->lock);
    c->next = cs->head;
    if (cs->head != NULL)
      cs->head->prev = c;
    cs->head = c;
    pthread_mutex_unlock(&cs->lock);
    *socket_context = c;
    return;
  }
  if (c == NULL)
    return;
  pthread_mutex_lock(&cs->lock);
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    cs->head = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  pthread_mutex_unlock(&cs->lock);
  free(c);
  *socket_context = NULL;
}

/* Marks the connection's request received (receiving false) or a new one
 * begun (receiving true, its clock restarted). */
static void mark(struct api *api, struct MHD_Connection *conn, bool receiving)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  struct api_conn *c = ci != NULL ? ci->socket_context : NULL;

  (void)api;
  if (c == NULL)
    return;
  if (receiving)
    atomic_store(&c->began_ns, mono_ns());
  atomic_store(&c->receiving, receiving);
}

void api_conn_received(struct api *api, struct MHD_Connection *conn)
{
  mark(api, conn, false);
}

bool api_conn_hold(struct api *api, struct MHD_Connection *conn,
                   int64_t delay_ns)
{
  struct api_conns *cs = api->conns;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  struct api_conn *c = ci != NULL ? ci->socket_context : NULL;

  if (c == NULL || cs == NULL)
    return false;
  pthread_mutex_lock(&cs->lock);
  if (cs->released) {
    pthread_mutex_unlock(&cs->lock);
    return false;
  }
  /* Suspended under the lock: the reaper never resumes a connection
   * that is not suspended yet. */
  MHD_suspend_connection(conn);
  c->resume_ns = mono_ns() + delay_ns;
  c->held = conn;
  pthread_mutex_unlock(&cs->lock);
  return true;
}

void api_conns_release(struct api *api)
{
  struct api_conns *cs = api->conns;

  if (cs == NULL)
    return;
  pthread_mutex_lock(&cs->lock);
  cs->released = true; /* nothing is held from here on */
  for (struct api_conn *c = cs->head; c != NULL; c = c->next)
    if (c->held != NULL) {
      MHD_resume_connection(c->held);
      c->held = NULL;
    }
  pthread_mutex_unlock(&cs->lock);
}

void api_conn_next(struct api *api, struct MHD_Connection *conn)
{
  mark(api, conn, true);
}
