/*
 * libFuzzer target for the trace reader: the input (after one byte that
 * picks the split point and the forced format) is read by the byte-wise
 * reader alone (stage 1 off), then with each stage-1 kernel the CPU runs
 * (portable, SSE2, AVX2, AVX-512: index/read/read_int.h), whole and in two
 * chunks, and in two chunks with their masks and events walked ahead (as
 * idx_source gives them to idx_file()). Any
 * crash, leak, hang or sanitizer report is a bug, and so is an outcome
 * (events handed over, every field of each, skips, error message) that
 * differs between them: the token walk must read what the byte-wise reader
 * reads, and reject what it rejects at the same byte. Any one outcome is
 * acceptable. With the input's first byte's top bit set every run also
 * asks for the events' texts and the top-level members
 * (idx_reader_keep_raw, for slices) and marks the strict ones
 * (idx_reader_judge()): each text must be its event's '{' to '}', the
 * texts and members the same in every run, the slicer's mending
 * (index/slice/slice_json.c) of each must give text it judges strict, and each
 * event marked strict must be one by the slicer's judge.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "index/read/read.h"
#include "index/read/read_int.h"
#include "index/slice/slice_int.h"

static int keep_raw; /* this input's runs ask for texts and members */

static uint64_t mix(uint64_t h, uint64_t v)
{
  return (h ^ v) * 1099511628211ull;
}

/* A digest of every field handed over; touches every byte of each string,
 * so that ASan sees bad borrows. */
/* A slice_out that keeps at most a buffer of text (the rest is lost:
 * only short texts are judged again). */
struct sink {
  char text[1 << 16];
  size_t n;
  int cut;
};

static int sink_write(void *ud, const char *p, size_t n)
{
  struct sink *k = ud;

  if (k->n + n > sizeof(k->text)) {
    k->cut = 1;
    return 0;
  }
  memcpy(k->text + k->n, p, n);
  k->n += n;
  return 0;
}

/* The slicer's verdict on a text; a mended one must then be strict. */
static uint64_t judge(struct idx_str t)
{
  static struct slice_out o;
  static struct sink k;
  int v = slice_json_mend(t.p, t.n, NULL);

  memset(&o, 0, offsetof(struct slice_out, buf));
  o.write = sink_write;
  o.ud = &k;
  k.n = 0;
  k.cut = 0;
  /* Writing, the descent judges alone: the same verdict as without
   * output (its fast path for strict text first). */
  if (slice_json_mend(t.p, t.n, &o) != v)
    __builtin_trap();
  slice_out_flush(&o);
  if (v == SLICE_JSON_MENDED && !k.cut &&
      slice_json_mend(k.text, k.n, NULL) != SLICE_JSON_VALID)
    __builtin_trap();
  return (uint64_t)v;
}

static uint64_t digest(uint64_t h, struct idx_str s)
{
  h = mix(h, s.p == NULL ? 7 : s.n);
  for (size_t k = 0; s.p != NULL && k < s.n; k++)
    h = mix(h, (unsigned char)s.p[k]);
  return h;
}

static int on_member(void *ud, struct idx_str key, struct idx_str value)
{
  uint64_t *h = ud;

  if (key.p == NULL || key.n < 2 || key.p[0] != '"' || key.p[key.n - 1] != '"')
    __builtin_trap();
  *h = mix(digest(digest(*h, key), value), judge(value));
  return 0;
}

static int on_event(void *ud, const struct idx_doc *doc,
                    const struct idx_event *ev)
{
  const struct idx_str *s[] = { &ev->name,    &ev->cat,  &ev->pid_str,
                                &ev->tid_str, &ev->kind, &ev->kernel,
                                &ev->arg_name };
  const int64_t n[] = { ev->pid,          ev->tid,         ev->ts_ns,
                        ev->dur_ns,       ev->correlation, ev->external_id,
                        ev->device,       ev->stream,      ev->grid[0],
                        ev->grid[1],      ev->grid[2],     ev->block[0],
                        ev->block[1],     ev->block[2],    ev->registers,
                        ev->shared_bytes, ev->bytes,       doc->format };
  uint64_t *h = ud, v;
  size_t i, k;

  if (keep_raw) {
    if (ev->raw.p == NULL || ev->raw.n < 2 || ev->raw.p[0] != '{' ||
        ev->raw.p[ev->raw.n - 1] != '}')
      __builtin_trap();
    v = judge(ev->raw);
    /* Marked strict by the reader's proof: the judge must agree. Not
     * mixed in: which events a layout reads differs between the runs. */
    if (ev->strict && v != SLICE_JSON_VALID)
      __builtin_trap();
    *h = mix(digest(*h, ev->raw), v);
  } else if (ev->strict) {
    __builtin_trap(); /* marked, unasked */
  }
  *h = mix(*h, (unsigned char)ev->ph);
  *h = mix(*h, ev->has);
  for (i = 0; i < sizeof(n) / sizeof(n[0]); i++)
    *h = mix(*h, (uint64_t)n[i]);
  for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
    *h = mix(*h, s[i]->p == NULL ? 7 : s[i]->n);
    for (k = 0; s[i]->p != NULL && k < s[i]->n; k++)
      *h = mix(*h, (unsigned char)s[i]->p[k]);
  }
  return 0;
}

struct outcome {
  int rc;
  uint64_t digest, events, skipped;
  struct tr_err err;
};

/* A reader of fmt for a run into o (cleared), asking for texts and
 * members when this input's runs do. */
static struct idx_reader *reader_for(enum idx_format fmt, struct outcome *o)
{
  struct idx_reader *r;

  memset(o, 0, sizeof(*o));
  if (idx_reader_new(fmt, on_event, &o->digest, &r) != 0 ||
      (keep_raw && idx_reader_keep_raw(r, on_member) != 0))
    __builtin_trap();
  if (keep_raw)
    idx_reader_judge(r, slice_json_strict_end);
  return r;
}

/* The run's counts into o; r freed. */
static void reader_done(struct idx_reader *r, struct outcome *o)
{
  o->events = idx_reader_doc(r)->events;
  o->skipped = idx_reader_doc(r)->skipped;
  idx_reader_free(r);
}

/* Feeds data in two chunks, data[0..split) and the rest. */
static void run(enum idx_format fmt, const char *data, size_t size,
                size_t split, struct outcome *o)
{
  struct idx_reader *r = reader_for(fmt, o);

  o->rc = idx_reader_feed(r, data, split, &o->err);
  if (o->rc == 0)
    o->rc = idx_reader_feed(r, data + split, size - split, &o->err);
  if (o->rc == 0)
    o->rc = idx_reader_finish(r, &o->err);
  if (o->rc != 0 && o->err.msg[0] == 0)
    __builtin_trap(); /* every failure must say why */
  reader_done(r, o);
}

/* The same two chunks, each with its stage-1 masks (the string state and
 * nesting carried) and a batch walked ahead for the reader's hint, or
 * for kineto's traceEvents before it has one, as idx_source gives them. */
static void run_batched(enum idx_format fmt, const char *data, size_t size,
                        size_t split, struct outcome *o)
{
  struct idx_walker walker = { 0 };
  struct idx_batch batch = { 0 };
  const size_t cut[3] = { 0, split, size };
  struct idx_reader *r = reader_for(fmt, o);
  struct idx_chunk c;
  unsigned depth = 2;
  int scale = 3, i;

  for (i = 0; i < 2 && o->rc == 0; i++) {
    c.text = data + cut[i];
    c.len = cut[i + 1] - cut[i];
    (void)idx_reader_walk_hint(r, &depth, &scale);
    if (idx_batch_build(&batch, &walker, c.text, c.len, depth, scale) != 0)
      __builtin_trap();
    c.batch = &batch;
    o->rc = idx_reader_feed_chunk(r, &c, &o->err);
  }
  if (o->rc == 0)
    o->rc = idx_reader_finish(r, &o->err);
  reader_done(r, o);
  idx_walker_free(&walker);
  idx_batch_free(&batch);
}

static void same(const struct outcome *a, const struct outcome *b)
{
  if (a->rc != b->rc || a->digest != b->digest || a->events != b->events ||
      a->skipped != b->skipped || strcmp(a->err.msg, b->err.msg) != 0)
    __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const kernels[] = { "generic", "sse2", "avx2", "avx512" };
  struct outcome want, got;
  enum idx_format fmt;
  size_t at, k;

  if (size < 1)
    return 0;
  fmt = (enum idx_format)(data[0] % 3);
  keep_raw = data[0] >> 7;
  at = data[0] % size;
  data++, size--;
  at = at > size ? size : at;
  if (idx_scan_select("none") != 0)
    __builtin_trap();
  run(fmt, (const char *)data, size, size, &want);
  run(fmt, (const char *)data, size, at, &got);
  same(&want, &got);
  for (k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
    if (idx_scan_select(kernels[k]) != 0)
      continue; /* the CPU lacks it */
    run(fmt, (const char *)data, size, size, &got);
    same(&want, &got);
    run(fmt, (const char *)data, size, at, &got);
    same(&want, &got);
    run_batched(fmt, (const char *)data, size, at, &got);
    same(&want, &got);
  }
  return 0;
}
