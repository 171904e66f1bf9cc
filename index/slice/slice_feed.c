/*
 * Ranges of a trace's JSON text into a reader, each inflated from the
 * nearest access point before it (slice.h, struct slice_feed): what lies
 * between the point and the range is inflated and dropped, and a range
 * that starts where the last one ended, or a little after it, goes on
 * inflating rather than starting again.
 *
 * With a pump (slice_feed_pump()), a thread of the feed's own inflates
 * the ranges, all known beforehand, into a ring of PUMP_SLOTS buffers
 * while the caller parses the ones before: inflating is about a fifth of
 * a slice's time and the parse the rest (docs/BENCHMARKS.md, "Slices
 * from access points"), so on two cores the one hides behind the other,
 * as indexing's source does (source.c). Ring protocol, under mu: the thread
 * fills the slot after the `count` full ones from `head` while count <
 * PUMP_SLOTS; the caller feeds slot head and then frees it; the thread's end
 * (`ended`, with end_rc and end_err) comes after its last slot, so the caller
 * sees every byte inflated before a failure, then the failure. Until the pump
 * is closed, only its thread touches the stream (rs, pos, text_bytes, buf).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "index/slice/slice_int.h"

/* Bytes inflated at a time. */
#define FEED_BUF   (256u << 10)
#define PUMP_SLOTS 4

struct pump_slot {
  char *buf;    /* FEED_BUF */
  size_t len;   /* text in it */
  size_t range; /* the range it belongs to */
  int last;     /* the range's last slot */
};

struct slice_pump {
  const struct slice_range *range; /* borrowed */
  size_t nranges;
  size_t taken; /* the caller: ranges fed so far */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* any change of count, stop, ended */
  struct pump_slot slot[PUMP_SLOTS];
  unsigned head, count;
  int stop;  /* the caller is done: the thread must quit */
  int ended; /* the thread posted its last slot */
  int end_rc;
  struct tr_err end_err;
};

int slice_feed_open(struct slice_feed *f, int fd, const struct idx_points *pts,
                    struct idx_reader *rd, struct tr_err *err)
{
  *f = (struct slice_feed){ .fd = fd, .pts = pts, .rd = rd, .err = err };
  if ((f->buf = malloc(FEED_BUF)) == NULL)
    return tr_err_set(err, TR_ENOMEM, NULL, "out of memory");
  return 0;
}

/* Inflates from the point nearest before off, unless the stream open
 * now is before off and no nearer point lies between. 0 or negative
 * with err. */
static int seek(struct slice_feed *f, uint64_t off, struct tr_err *err)
{
  long i = idx_points_find(f->pts, off);
  int rc;

  if (i < 0)
    return tr_err_set(err, TR_EFORMAT, NULL, "no access point before byte %llu",
                      (unsigned long long)off);
  if (f->rs != NULL && f->pos <= off && f->pos >= f->pts->pt[i].out_off)
    return 0;
  idx_resume_free(f->rs);
  f->rs = NULL;
  if ((rc = idx_resume_open(f->fd, f->pts, (uint32_t)i, &f->rs)) != 0)
    return tr_err_set(err, rc, NULL, "cannot resume at access point %ld", i);
  f->pos = f->pts->pt[i].out_off;
  return 0;
}

/* The next bytes of the stream, at most `most`, into buf (FEED_BUF):
 * *got, 0 at the end of the file. 0 or negative with err. */
static int next(struct slice_feed *f, char *buf, uint64_t most, size_t *got,
                struct tr_err *err)
{
  size_t cap = most < FEED_BUF ? (size_t)most : FEED_BUF;
  int rc = idx_resume_read(f->rs, (uint8_t *)buf, cap, got, err);

  f->pos += *got;
  f->text_bytes += *got;
  return rc;
}

static int ends_before(struct tr_err *err, uint64_t off)
{
  return tr_err_set(err, TR_EFORMAT, NULL, "the file ends before byte %llu",
                    (unsigned long long)off);
}

/* Seeks to a and inflates up to it, dropping the text. */
static int reach(struct slice_feed *f, uint64_t a, struct tr_err *err)
{
  size_t got;
  int rc = seek(f, a, err);

  while (rc == 0 && f->pos < a) {
    if ((rc = next(f, f->buf, a - f->pos, &got, err)) == 0 && got == 0)
      rc = ends_before(err, a);
  }
  return rc;
}

/* ---- on the caller's turn ---- */

static int feed_here(struct slice_feed *f, uint64_t a, uint64_t b)
{
  size_t got;
  int rc = reach(f, a, f->err);

  while (rc == 0 && f->pos < b) {
    if (idx_cancelled(f->cancel))
      return TR_ECONFLICT;
    if ((rc = next(f, f->buf, b - f->pos, &got, f->err)) != 0)
      return rc;
    if (got == 0)
      return b == UINT64_MAX ? 0 : ends_before(f->err, b);
    rc = idx_reader_feed(f->rd, f->buf, got, f->err);
  }
  return rc;
}

/* ---- the pump's thread ---- */

/* The slot to fill next, once one is free; NULL when told to stop. */
static struct pump_slot *free_slot(struct slice_pump *p)
{
  struct pump_slot *sl = NULL;

  pthread_mutex_lock(&p->mu);
  while (!p->stop && p->count == PUMP_SLOTS)
    pthread_cond_wait(&p->cv, &p->mu);
  if (!p->stop)
    sl = &p->slot[(p->head + p->count) % PUMP_SLOTS];
  pthread_mutex_unlock(&p->mu);
  return sl;
}

static void post(struct slice_pump *p)
{
  pthread_mutex_lock(&p->mu);
  p->count++;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

/* Range r into slots, its last one marked. 1 when stopped, 0, or
 * negative with p->end_err. */
static int pump_range(struct slice_feed *f, struct slice_pump *p, size_t r)
{
  uint64_t b = p->range[r].b;
  struct pump_slot *sl;
  int rc = reach(f, p->range[r].a, &p->end_err);

  while (rc == 0) {
    if ((sl = free_slot(p)) == NULL)
      return 1;
    sl->len = 0;
    if (f->pos < b &&
        (rc = next(f, sl->buf, b - f->pos, &sl->len, &p->end_err)) != 0)
      break;
    if (sl->len == 0 && f->pos < b && b != UINT64_MAX)
      return ends_before(&p->end_err, b);
    sl->range = r;
    sl->last = f->pos >= b || sl->len == 0;
    post(p);
    if (sl->last)
      return 0;
  }
  return rc;
}

static void *pump_run(void *arg)
{
  struct slice_feed *f = arg;
  struct slice_pump *p = f->pump;
  int rc = 0;

  for (size_t r = 0; rc == 0 && r < p->nranges; r++)
    rc = pump_range(f, p, r);
  pthread_mutex_lock(&p->mu);
  p->ended = 1;
  p->end_rc = rc > 0 ? 0 : rc;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* ---- the caller's side of the pump ---- */

/* The full slot at head, or NULL when the thread ended without one. */
static struct pump_slot *full_slot(struct slice_pump *p)
{
  struct pump_slot *sl = NULL;

  pthread_mutex_lock(&p->mu);
  while (p->count == 0 && !p->ended)
    pthread_cond_wait(&p->cv, &p->mu);
  if (p->count > 0)
    sl = &p->slot[p->head];
  pthread_mutex_unlock(&p->mu);
  return sl;
}

static void release(struct slice_pump *p)
{
  pthread_mutex_lock(&p->mu);
  p->head = (p->head + 1) % PUMP_SLOTS;
  p->count--;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

/* The thread's failure, told as the caller's own (it has ended). */
static int pump_failed(struct slice_feed *f, struct slice_pump *p)
{
  if (p->end_rc == 0) /* ended with ranges owed: not the plan's */
    return tr_err_set(f->err, TR_EINVAL, NULL, "a range past the plan");
  tr_err_set(f->err, p->end_err.code, NULL, "%s", p->end_err.msg);
  return p->end_rc;
}

static int feed_pumped(struct slice_feed *f, uint64_t a, uint64_t b)
{
  struct slice_pump *p = f->pump;
  size_t r = p->taken;
  struct pump_slot *sl;
  int rc = 0, last = 0;

  if (r >= p->nranges || p->range[r].a != a || p->range[r].b != b)
    return tr_err_set(f->err, TR_EINVAL, NULL,
                      "the range [%llu, %llu) is not the plan's",
                      (unsigned long long)a, (unsigned long long)b);
  while (rc == 0 && !last) {
    if (idx_cancelled(f->cancel))
      return TR_ECONFLICT;
    if ((sl = full_slot(p)) == NULL)
      return pump_failed(f, p);
    if (sl->range != r)
      return tr_err_set(f->err, TR_EINVAL, NULL, "the pump is out of step");
    last = sl->last;
    rc = sl->len > 0 ? idx_reader_feed(f->rd, sl->buf, sl->len, f->err) : 0;
    release(p);
  }
  p->taken += rc == 0;
  return rc;
}

static void pump_free(struct slice_pump *p)
{
  for (unsigned i = 0; i < PUMP_SLOTS; i++)
    free(p->slot[i].buf);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}

int slice_feed_pump(struct slice_feed *f, const struct slice_range *range,
                    size_t n)
{
  struct slice_pump *p = calloc(1, sizeof(*p));
  unsigned i = 0;

  if (p == NULL)
    return TR_ENOMEM;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->range = range;
  p->nranges = n;
  while (i < PUMP_SLOTS && (p->slot[i].buf = malloc(FEED_BUF)) != NULL)
    i++;
  f->pump = p;
  if (i == PUMP_SLOTS && pthread_create(&p->thread, NULL, pump_run, f) == 0)
    return 0;
  f->pump = NULL;
  pump_free(p);
  return TR_ENOMEM;
}

int slice_feed_range(struct slice_feed *f, uint64_t a, uint64_t b)
{
  return f->pump != NULL ? feed_pumped(f, a, b) : feed_here(f, a, b);
}

void slice_feed_close(struct slice_feed *f)
{
  struct slice_pump *p = f->pump;

  if (p != NULL) {
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pump_free(p);
    f->pump = NULL;
  }
  idx_resume_free(f->rs);
  free(f->buf);
  f->rs = NULL;
  f->buf = NULL;
}
