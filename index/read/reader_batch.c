/*
 * Events walked ahead (read_int.h): the inflating thread, when the ring
 * is full and it would only wait, walks the events of a chunk (source.c)
 * with a walker of its own (reader_walk.c), so that the reader, on its own
 * thread, only hands them over. Where the chunk's first event starts is
 * not known ahead, nor whether the reader will be in traceEvents there:
 * the walk starts at the first '{' that follows "}," (what ends the event
 * before it), and the reader uses the batch only when its own state
 * machine reaches exactly that '{' in traceEvents with the same nesting
 * and unit, so the events are the ones it would have walked itself; else
 * it walks them itself, as it does without a batch.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "index/read/read_int.h"

static int is_ws(char c)
{
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The first '{' of text[0..len) whose last bytes before it that are no
 * whitespace are "}," and that is followed by whitespace and a '"' or a
 * '}' (an event's first member, or its end), or NULL. */
static const char *first_event(const char *text, size_t len)
{
  const char *end = text + len, *p = text, *q;

  while ((p = memchr(p, '{', (size_t)(end - p))) != NULL) {
    for (q = p - 1; q >= text && is_ws(*q); q--)
      ;
    if (q > text && *q == ',') {
      for (q--; q >= text && is_ws(*q); q--)
        ;
      if (q >= text && *q == '}') {
        for (q = p + 1; q < end && is_ws(*q); q++)
          ;
        if (q < end && (*q == '"' || *q == '}'))
          return p;
      }
    }
    p++;
  }
  return NULL;
}

/* Walks events from b->start as reader.c's fast_events() does: one event
 * after another while the walker takes each and "}, {" follows, and the
 * reader has not cut the walk short. */
static void walk_run(struct idx_batch *b, struct idx_walker *w, const char *end)
{
  struct idx_parsed e;
  const char *p = b->start, *t;

  b->stop = p;
  b->stop_elem = 1;
  while (b->n < IDX_BATCH_MAX &&
         !atomic_load_explicit(&b->cut, memory_order_relaxed)) {
    if (idx_walker_event(w, p, end, b->depth, b->scale, &e) != IDX_W_OK)
      return; /* the reader takes this one */
    idx_parsed_times(&e, (unsigned)b->scale);
    t = w->at + 1;
    e.ev.raw.p = p; /* in the chunk, which the reader holds meanwhile */
    e.ev.raw.n = (size_t)(t - p);
    idx_event_copy(&b->ev[b->n].ev, &e.ev);
    b->ev[b->n].bad = e.bad;
    b->ev[b->n].over = (size_t)(t - p) > IDX_EVENT_CEILING;
    b->n++;
    b->stop = t;
    b->stop_elem = 0;
    if (t == end || *t != ',')
      return;
    b->stop = ++t;
    b->stop_elem = 1;
    while (t < end && is_ws(*t))
      t++;
    if (t == end || *t != '{')
      return;
    b->stop = p = t;
  }
}

int idx_batch_build(struct idx_batch *b, struct idx_walker *w, const char *text,
                    size_t len, unsigned depth, int scale)
{
  b->n = 0;
  b->depth = depth;
  b->scale = scale;
  b->start = NULL;
  if (b->ev == NULL && (b->ev = malloc(IDX_BATCH_MAX * sizeof(*b->ev))) == NULL)
    return TR_ENOMEM;
  if (scale < 0)
    return 0;
  b->start = first_event(text, len);
  if (b->start != NULL) {
    idx_walker_text(w);
    walk_run(b, w, text + len);
  }
  return 0;
}

void idx_batch_free(struct idx_batch *b)
{
  if (b == NULL)
    return;
  free(b->ev);
  b->ev = NULL;
  b->n = 0;
}
