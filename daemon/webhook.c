/*
 * The verdicts' webhook (docs/ANALYSIS.md): when a capture or import is done,
 * its verdict is POSTed as JSON to webhook_url, from the loop (cap_http:
 * libcurl multi, never a blocking transfer). An attempt ends within
 * webhook_timeout_s; a failed one (no answer, not 2xx, a redirect, which
 * is not followed) is tried again webhook_retries times, 1, 2, 4... s
 * apart. Never fatal: a delivery that cannot be made is said on stderr
 * and dropped, the capture stays done; at most WEBHOOK_QUEUE wait at
 * once (more are dropped, said), and shutdown drops those left.
 *
 * Loop thread only. One timer serves every delivery waiting to retry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "common/stats.h"
#include "daemon/cap_int.h"

#define WEBHOOK_QUEUE 64
#define BACKOFF_MS    1000

struct delivery {
  struct delivery *next;
  struct cap_webhook *w;
  int64_t id;
  char *body;
  int attempts;             /* made so far */
  uint64_t due;             /* uv_now() of the next attempt */
  struct cap_http_req *req; /* in flight, else NULL */
};

struct cap_webhook {
  uv_loop_t *loop;
  struct cap_http *http;
  const struct cfg *cfg;
  uv_timer_t timer;
  struct delivery *list;
  int n;
  void (*closed)(void *ud);
  void *closed_ud;
};

static void kick(struct cap_webhook *w);

static void drop(struct cap_webhook *w, struct delivery *d)
{
  for (struct delivery **p = &w->list; *p != NULL; p = &(*p)->next)
    if (*p == d) {
      *p = d->next;
      break;
    }
  w->n--;
  cap_http_cancel(d->req);
  free(d->body);
  free(d);
}

static void on_answer(void *ud, const struct cap_http_answer *a)
{
  struct delivery *d = ud;
  struct cap_webhook *w = d->w;
  int left = w->cfg->webhook_retries + 1 - d->attempts;

  d->req = NULL;
  if (a->ok) {
    atomic_fetch_add(&tr_stats.webhooks_delivered, 1);
    drop(w, d);
  } else if (left <= 0) {
    fprintf(stderr,
            "traced: capture %lld: webhook: %s; dropped after %d "
            "attempts\n",
            (long long)d->id, a->msg, d->attempts);
    atomic_fetch_add(&tr_stats.webhooks_failed, 1);
    drop(w, d);
  } else {
    uint64_t wait = (uint64_t)BACKOFF_MS << (d->attempts - 1);

    fprintf(stderr, "traced: capture %lld: webhook: %s; again in %llu ms\n",
            (long long)d->id, a->msg, (unsigned long long)wait);
    d->due = uv_now(w->loop) + wait;
  }
  kick(w);
}

static void on_timer(uv_timer_t *t)
{
  kick(t->data);
}

/* Starts every delivery that is due; the timer waits for the next. */
static void kick(struct cap_webhook *w)
{
  uint64_t now = uv_now(w->loop), next = UINT64_MAX;
  struct delivery *d, *after;

  for (d = w->list; d != NULL; d = after) {
    after = d->next;
    if (d->req != NULL)
      continue;
    if (d->due > now) {
      next = d->due < next ? d->due : next;
      continue;
    }
    d->attempts++;
    if (cap_http_post_json(w->http, w->cfg->webhook_url, d->body,
                           (long)w->cfg->webhook_timeout_s * 1000, on_answer, d,
                           &d->req) != 0) {
      fprintf(stderr,
              "traced: capture %lld: webhook: cannot start a "
              "transfer; dropped\n",
              (long long)d->id);
      atomic_fetch_add(&tr_stats.webhooks_failed, 1);
      drop(w, d);
    }
  }
  if (next != UINT64_MAX)
    uv_timer_start(&w->timer, on_timer, next - now, 0);
}

int cap_webhook_new(uv_loop_t *loop, struct cap_http *http,
                    const struct cfg *cfg, struct cap_webhook **out)
{
  struct cap_webhook *w = calloc(1, sizeof(*w));

  if (w == NULL)
    return TR_ENOMEM;
  w->loop = loop;
  w->http = http;
  w->cfg = cfg;
  uv_timer_init(loop, &w->timer);
  w->timer.data = w;
  *out = w;
  return 0;
}

void cap_webhook_send(struct cap_webhook *w, int64_t id, json_t *body)
{
  struct delivery *d;
  char *text;

  if (w == NULL || w->cfg->webhook_url[0] == '\0' || body == NULL) {
    json_decref(body);
    return;
  }
  text = tr_json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (w->n >= WEBHOOK_QUEUE || text == NULL ||
      (d = calloc(1, sizeof(*d))) == NULL) {
    fprintf(stderr,
            "traced: capture %lld: webhook: %d deliveries wait "
            "already; dropped\n",
            (long long)id, w->n);
    atomic_fetch_add(&tr_stats.webhooks_failed, 1);
    free(text);
    return;
  }
  d->w = w;
  d->id = id;
  d->body = text;
  d->due = uv_now(w->loop);
  d->next = w->list;
  w->list = d;
  w->n++;
  kick(w);
}

static void on_closed(uv_handle_t *h)
{
  struct cap_webhook *w = h->data;
  void (*done)(void *) = w->closed;
  void *ud = w->closed_ud;

  free(w);
  done(ud);
}

void cap_webhook_close(struct cap_webhook *w, void (*done)(void *ud), void *ud)
{
  if (w == NULL) {
    done(ud);
    return;
  }
  if (w->n > 0)
    fprintf(stderr, "traced: shutdown: %d webhook deliveries dropped\n", w->n);
  while (w->list != NULL)
    drop(w, w->list);
  w->closed = done;
  w->closed_ud = ud;
  uv_close((uv_handle_t *)&w->timer, on_closed);
}
