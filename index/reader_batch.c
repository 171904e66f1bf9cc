/*
 * Events walked ahead (reader_int.h): the inflating thread, when the ring
 * is full and it would only wait, walks the events of a scanned chunk
 * (source.c), so that the reader, on its own thread, only hands them over.
 * Where the chunk's first event starts is not known ahead, nor whether the
 * reader will be in traceEvents there: the walk starts at the first '{'
 * at the events' nesting (stage 1 counts brackets), and the reader uses
 * the batch only when its own state machine reaches exactly that '{' in
 * traceEvents with the same unit, so the events are the ones it would have
 * walked itself; else it walks them itself, as it does without a batch.
 */
#include <stdlib.h>

#include "index/reader_int.h"

/* The first '{' at nesting depth in m's text (the nesting before it), or
 * NULL. */
static const char *first_event(const struct idx_scan_map *m, unsigned depth)
{
  int64_t d = m->depth;
  struct idx_walk w;
  const char *t;

  idx_walk_init(&w, m, m->base + m->len);
  while (idx_walk_next(&w, &t)) {
    if (*t == '{' && d == (int64_t)depth)
      return t;
    if (*t == '{' || *t == '[')
      d++;
    else if (*t == '}' || *t == ']')
      d--;
  }
  return NULL;
}

/* Walks events from b->start as reader.c's fast_events() does: one event
 * after another while each is the token walk's, clean, and followed by
 * "}, {". */
static void walk_run(struct idx_batch *b, const struct idx_scan_map *m,
                     const char *end)
{
  struct idx_parsed e;
  struct idx_walk w;
  const char *p = b->start, *t;

  idx_walk_init(&w, m, end);
  b->stop = p;
  b->stop_elem = 1;
  while (b->n < IDX_BATCH_MAX) {
    idx_walk_seek(&w, p);
    e.scale = b->scale;
    if (idx_fast_event(&w, b->depth, &e) != IDX_W_OK ||
        idx_scan_dirty(m, p, w.at))
      return; /* the reader takes this one */
    idx_parsed_times(&e, (unsigned)b->scale);
    t = w.at + 1;
    e.ev.raw.p = p; /* in the chunk, which the reader holds meanwhile */
    e.ev.raw.n = (size_t)(t - p);
    b->ev[b->n].ev = e.ev;
    b->ev[b->n].bad = e.bad;
    b->ev[b->n].over = (size_t)(t - p) > IDX_EVENT_CEILING;
    b->n++;
    b->stop = t;
    b->stop_elem = 0;
    if (t == end || *t != ',')
      return;
    b->stop = t + 1;
    b->stop_elem = 1;
    if (!idx_walk_next(&w, &t) || *t != '{' || !idx_ws_gap(b->stop, t))
      return;
    b->stop = p = t;
  }
}

int idx_batch_build(struct idx_batch *b, const struct idx_scan_map *m,
                    unsigned depth, int scale)
{
  b->n = 0;
  b->depth = depth;
  b->scale = scale;
  b->start = NULL;
  if (b->ev == NULL && (b->ev = malloc(IDX_BATCH_MAX * sizeof(*b->ev))) == NULL)
    return TR_ENOMEM;
  b->start = first_event(m, depth);
  if (b->start != NULL && scale >= 0)
    walk_run(b, m, m->base + m->len);
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
