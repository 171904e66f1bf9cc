/*
 * libFuzzer target for the trace reader: the input (after one byte that
 * picks the split point and the forced format) is fed whole, and again in
 * two chunks. Any crash, leak, hang or sanitizer report is a bug, and so
 * is an outcome (events, skips, error message) that depends on the split;
 * any one outcome is acceptable.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "index/event.h"

/* Touches every byte handed over, so that ASan sees bad borrows. */
static int on_event(void *ud, const struct idx_doc *doc,
                    const struct idx_event *ev)
{
  const struct idx_str *s[] = { &ev->name,    &ev->cat,  &ev->pid_str,
                                &ev->tid_str, &ev->kind, &ev->kernel,
                                &ev->arg_name };
  unsigned *sum = ud;
  size_t i, k;

  (void)doc;
  for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
    for (k = 0; s[i]->p != NULL && k < s[i]->n; k++)
      *sum += (unsigned char)s[i]->p[k];
  return 0;
}

struct outcome {
  int rc;
  unsigned sum;
  uint64_t events, skipped;
  struct tr_err err;
};

/* Feeds data in two chunks, data[0..split) and the rest. */
static void run(enum idx_format fmt, const char *data, size_t size,
                size_t split, struct outcome *o)
{
  struct idx_reader *r;

  memset(o, 0, sizeof(*o));
  if (idx_reader_new(fmt, on_event, &o->sum, &r) != 0)
    __builtin_trap();
  o->rc = idx_reader_feed(r, data, split, &o->err);
  if (o->rc == 0)
    o->rc = idx_reader_feed(r, data + split, size - split, &o->err);
  if (o->rc == 0)
    o->rc = idx_reader_finish(r, &o->err);
  if (o->rc != 0 && o->err.msg[0] == 0)
    __builtin_trap(); /* every failure must say why */
  o->events = idx_reader_doc(r)->events;
  o->skipped = idx_reader_doc(r)->skipped;
  idx_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct outcome whole, split;
  enum idx_format fmt;
  size_t at;

  if (size < 1)
    return 0;
  fmt = (enum idx_format)(data[0] % 3);
  at = data[0] % size;
  data++, size--;
  at = at > size ? size : at;
  run(fmt, (const char *)data, size, size, &whole);
  run(fmt, (const char *)data, size, at, &split);
  if (whole.rc != split.rc || whole.sum != split.sum ||
      whole.events != split.events || whole.skipped != split.skipped ||
      strcmp(whole.err.msg, split.err.msg) != 0)
    __builtin_trap();
  return 0;
}
