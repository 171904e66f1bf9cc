/*
 * The walker (read_int.h): each event of a text by its layout
 * (reader_layout.c) when one matches, else by the token walk
 * (reader_fast.c) over masks of a window scanned from the event's '{'
 * (between two events: outside any string), learning its layout then.
 * reader.c walks the events of each chunk with one, and the source's
 * thread those it walks ahead (reader_batch.c) with another.
 */
#include "index/read/read_int.h"

/* Bytes scanned at a time: with its masks (1/64 of it) it stays in the
 * core's cache while the token walk reads it. First a small window: most
 * events the token walk takes are the few whose layout is not known yet.
 * The fuzzer's build makes both small, so that events cross windows. */
#ifndef IDX_SCAN_WINDOW
#define IDX_SCAN_WINDOW (64u << 10)
#endif
#define WINDOW       IDX_SCAN_WINDOW
#define SMALL_WINDOW (IDX_SCAN_WINDOW / 16)

/* Scans a window of up to len bytes from p. 0 or TR_ENOMEM. */
static int scan_window(struct idx_walker *w, const char *p, const char *end,
                       size_t len)
{
  struct idx_scan_carry carry = { 0 };

  if ((size_t)(end - p) < len)
    len = (size_t)(end - p);
  w->win_ok = 0;
  if (idx_scan_run(&w->win, &carry, p, len) != 0)
    return TR_ENOMEM;
  idx_walk_init(&w->walk, &w->win, end);
  w->win_ok = 1;
  return 0;
}

/* The token walk of the event at p, from the window when it holds p, else
 * from a small one scanned from p, else (the event is longer) from a
 * whole one. IDX_W_* or TR_ENOMEM. */
static int walk_tokens(struct idx_walker *w, const char *p, const char *end,
                       unsigned depth, struct idx_parsed *e)
{
  int rc;

  if (!w->win_ok || p < w->win.base || p >= w->win.base + w->win.len) {
    if ((rc = scan_window(w, p, end, SMALL_WINDOW)) != 0)
      return rc;
  }
  for (;;) {
    idx_walk_seek(&w->walk, p);
    rc = idx_fast_event(&w->walk, depth, e);
    /* Cut by the window's end, not the text's: once more from p. */
    if (rc != IDX_W_SHORT || w->win.base + w->win.len == end ||
        (w->win.base == p && w->win.len >= WINDOW))
      break;
    rc = scan_window(w, p, end, w->win.base == p ? WINDOW : SMALL_WINDOW);
    if (rc != 0)
      return rc;
  }
  if (rc == IDX_W_OK && idx_scan_dirty(&w->win, p, w->walk.at))
    rc = IDX_W_BAIL;
  return rc;
}

int idx_walker_slow(struct idx_walker *w, const char *p, const char *end,
                    unsigned depth, int scale, struct idx_parsed *e)
{
  int layouts, rc;

  if (w->layouts_on == 0) { /* read once: not a call for every event */
    w->layouts_on = idx_layouts_enabled() ? 1 : -1;
    if (idx_walker_layout(w, p, end, depth, scale, e))
      return IDX_W_OK;
  }
  layouts = scale >= 0 && w->layouts_on > 0;
  e->scale = scale;
  rc = walk_tokens(w, p, end, depth, e);
  if (rc != IDX_W_OK)
    return rc;
  w->at = w->walk.at;
  if (layouts)
    idx_layouts_learn(&w->layouts, p, w->at, end, depth, scale, e);
  return IDX_W_OK;
}

void idx_walker_free(struct idx_walker *w)
{
  if (w == NULL)
    return;
  idx_layouts_free(&w->layouts);
  idx_scan_map_free(&w->win);
  w->win_ok = 0;
}
