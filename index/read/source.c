/*
 * The byte source (read.h): a plain or gzip trace file read by a thread of
 * its own, which reads (and inflates) into a ring of SLOTS buffers while the
 * caller parses the previous ones; or, without a thread, read into one
 * buffer on the caller's own turn (produce() does both).
 *
 * Ring protocol, under mu: the thread fills slot i only while it is not
 * full, then marks it full; the caller hands out full slots in order and
 * marks the one it held free on its next call. `ended` is set after the
 * thread's last slot, with end_err saying why (code 0: clean end), so the
 * caller sees every byte produced before an error, then the error.
 *
 * Walks ahead (IDX_SOURCE_SCAN, reader_batch.c): once the reader has said
 * what to walk for (idx_source_hint), the thread, when the ring is full
 * and it would only wait, walks the events of a full slot the caller does
 * not hold (batch BUILDING, then DONE, under mu; the caller waits for a
 * BUILDING slot it takes). So inflating keeps its own core busy and the
 * walk goes where there is time for it. The reader uses a batch only
 * where its own walk would have given the same events.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "index/read/read.h"
#include "index/read/read_int.h"

#define SLOTS      4
/* JSON text per slot; the fuzzer's build makes them small, so that its
 * small traces end slots inside and just after events too. */
#ifndef IDX_SOURCE_SLOT_BYTES
#define IDX_SOURCE_SLOT_BYTES (1u << 20)
#endif
#define SLOT_BYTES IDX_SOURCE_SLOT_BYTES
#define IN_BYTES   (1u << 20) /* compressed bytes per read() */

enum { BATCH_NONE, BATCH_BUILDING, BATCH_DONE };

/* Access points being recorded (read.h), by the producer. A point is
 * wanted once `spacing` output bytes have passed since the last one;
 * the inflater then hunts for the next block boundary. */
struct rec {
  uint64_t spacing;
  uint64_t next;       /* output offset from which a point is wanted */
  uint64_t out_base;   /* output offset of the slot being filled */
  const uint8_t *slot; /* the slot being filled */
  uint8_t tail[IDX_POINT_WINDOW]; /* the last output of earlier slots */
  size_t tail_len;
  int stopped; /* out of memory or full: record no more */
  uint64_t in_tail; /* gzip: from this compressed offset on, one point */
  int tail_taken;   /* is wanted whatever the spacing, once */
  struct idx_points pts;
};

/* Compressed bytes before the end of a gzip file from which one more
 * point is wanted, whatever the spacing: a slice always reads the text
 * after traceEvents (docs/SLICES.md), which then starts at most about
 * this much deflated text before it rather than a spacing. */
#define TAIL_IN_BYTES (64u << 10)

struct slot {
  char *buf;  /* SLOT_BYTES */
  size_t len; /* bytes of text when full */
  int full;
  int batch_state;        /* BATCH_* */
  struct idx_batch batch; /* events walked ahead in buf */
};

/* The state of gzip reading between slots. */
struct gz {
  struct idx_inflate_io io;
  int eof;       /* read() returned 0 */
  int in_member; /* inside a gzip member (else at a member boundary) */
};

struct idx_source {
  char *path;
  int fd;
  int gzip;     /* 1f 8b magic seen */
  int threaded; /* a thread produces the slots */
  int ahead;    /* the thread walks events ahead */
  uint64_t file_bytes;
  _Atomic uint64_t read_bytes; /* file bytes read by the thread */
  pthread_t thread;
  int started;        /* thread is running: join it */
  pthread_mutex_t mu; /* guards slot[].full, stop, ended */
  pthread_cond_t cv;  /* any change of those */
  struct slot slot[SLOTS];
  unsigned next;            /* caller: slot handed out next */
  int holding;              /* caller holds the slot before next */
  int stop;                 /* close: the thread must quit */
  int ended;                /* the thread filled its last slot */
  struct tr_err end_err;    /* why it ended; code 0 at a clean end */
  uint8_t *in;              /* producer: compressed input, IN_BYTES */
  struct idx_inflate *z;    /* producer: NULL for plain files */
  struct gz g;              /* producer: gzip state */
  struct idx_walker walker; /* producer: its walks ahead */
  int hinted;               /* walks ahead are for: */
  unsigned hint_depth;      /* the events' nesting */
  int hint_scale;           /* and the unit */
  struct rec *rec;          /* producer: access points; NULL: none */
};

/* Under mu: walks ahead in the oldest full slot that has no batch and
 * that the caller does not hold, releasing mu meanwhile. 1 when it did.
 * Out of memory, that slot simply has no batch. */
static int walk_one(struct idx_source *s)
{
  unsigned i, k = s->next; /* the caller's next; it holds the one before */
  struct slot *sl = NULL;

  if (!s->hinted)
    return 0;
  for (i = 0; i < SLOTS - 1 && sl == NULL; i++, k = (k + 1) % SLOTS)
    if (s->slot[k].full && s->slot[k].batch_state == BATCH_NONE)
      sl = &s->slot[k];
  if (sl == NULL)
    return 0;
  sl->batch_state = BATCH_BUILDING;
  atomic_store_explicit(&sl->batch.cut, 0, memory_order_relaxed);
  pthread_mutex_unlock(&s->mu);
  (void)idx_batch_build(&sl->batch, &s->walker, sl->buf, sl->len, s->hint_depth,
                        s->hint_scale);
  pthread_mutex_lock(&s->mu);
  sl->batch_state = BATCH_DONE;
  pthread_cond_broadcast(&s->cv);
  return 1;
}

/* Thread: waits until slot i is free, walking ahead in the meantime;
 * NULL when close() asks to stop. */
static char *wait_free(struct idx_source *s, unsigned i)
{
  char *buf = NULL;

  pthread_mutex_lock(&s->mu);
  while (s->slot[i].full && !s->stop)
    if (!walk_one(s))
      pthread_cond_wait(&s->cv, &s->mu);
  if (!s->stop)
    buf = s->slot[i].buf;
  pthread_mutex_unlock(&s->mu);
  return buf;
}

/* Thread: hands slot i, holding len bytes, to the caller. */
static void put_full(struct idx_source *s, unsigned i, size_t len)
{
  pthread_mutex_lock(&s->mu);
  s->slot[i].len = len;
  s->slot[i].full = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* Reads up to cap bytes, retrying short reads; returns bytes or -errno. */
static ssize_t read_some(struct idx_source *s, void *buf, size_t cap)
{
  size_t got = 0;
  ssize_t n;

  while (got < cap) {
    n = read(s->fd, (char *)buf + got, cap - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)
      break;
    got += (size_t)n;
  }
  atomic_fetch_add(&s->read_bytes, got);
  return (ssize_t)got;
}

/* The IDX_POINT_WINDOW output bytes before pos in the slot being filled
 * (fewer at the file's start), from the tail, then the slot, into win.
 * Returns their length. */
static size_t gather_window(const struct rec *r, size_t pos, uint8_t *win)
{
  size_t from_slot = pos < IDX_POINT_WINDOW ? pos : IDX_POINT_WINDOW;
  size_t from_tail = IDX_POINT_WINDOW - from_slot;

  if (from_tail > r->tail_len)
    from_tail = r->tail_len;
  memcpy(win, r->tail + r->tail_len - from_tail, from_tail);
  memcpy(win + from_tail, r->slot + pos - from_slot, from_slot);
  return from_tail + from_slot;
}

/* Whether a point is wanted at output offset pos of the slot. */
static int rec_wants(const struct rec *r, size_t pos)
{
  return r != NULL && !r->stopped && r->out_base + pos >= r->next;
}

/* Whether the one point near the end of a gzip file is wanted, the
 * inflater's input being at compressed offset in_off. */
static int rec_wants_tail(const struct rec *r, uint64_t in_off)
{
  return r != NULL && !r->stopped && !r->tail_taken && in_off >= r->in_tail;
}

/* Records a point at pos of the slot (the window only for a block). Out
 * of memory or past a limit (read.h), it records no more: the points
 * so far stay good, a slice past them reads from the last one. */
static void rec_add(struct rec *r, uint64_t in_bit, size_t pos, uint32_t kind)
{
  struct idx_point pt = { .out_off = r->out_base + pos,
                          .in_bit = in_bit,
                          .kind = kind };
  uint8_t win[IDX_POINT_WINDOW];

  if (kind == IDX_POINT_BLOCK)
    pt.win_len = (uint32_t)gather_window(r, pos, win);
  if (idx_points_add(&r->pts, &pt, win) != 0)
    r->stopped = 1;
  r->tail_taken |= in_bit / 8 >= r->in_tail;
  r->next = pt.out_off + r->spacing;
}

/* A slot of len bytes is done: its end becomes the tail (gzip only: a
 * plain file's points need no window). */
static void rec_slot_done(struct rec *r, size_t len, int gzip)
{
  size_t keep;

  r->out_base += len;
  if (!gzip)
    return;
  /* No point before the next slot's first window can need this tail (a
   * point's window lies after r->next - IDX_POINT_WINDOW). */
  if (r->next >= r->out_base + IDX_POINT_WINDOW) {
    r->tail_len = 0;
    return;
  }
  if (len >= IDX_POINT_WINDOW) {
    memcpy(r->tail, r->slot + len - IDX_POINT_WINDOW, IDX_POINT_WINDOW);
    r->tail_len = IDX_POINT_WINDOW;
    return;
  }
  keep = IDX_POINT_WINDOW - len;
  if (keep > r->tail_len)
    keep = r->tail_len;
  memmove(r->tail, r->tail + r->tail_len - keep, keep);
  memcpy(r->tail + keep, r->slot, len);
  r->tail_len = keep + len;
}

/* Plain file: a slot is filled straight by read(). 1, 0 at the end, or
 * negative (end_err set). */
static int produce_plain(struct idx_source *s, char *buf, size_t *len)
{
  ssize_t n;

  n = read_some(s, buf, SLOT_BYTES);
  *len = 0;
  if (n < 0)
    return tr_err_set(&s->end_err, (int)n, NULL, "%s: read: %s at byte %llu",
                      s->path, strerror((int)-n),
                      (unsigned long long)atomic_load(&s->read_bytes));
  /* A plain file's point is just where a slot starts (not its end). */
  if (n > 0 && rec_wants(s->rec, 0))
    rec_add(s->rec, s->rec->out_base * 8, 0, IDX_POINT_PLAIN);
  *len = (size_t)n;
  return n > 0;
}

/* Tops up the compressed input (keeping unread bytes) when it is below
 * an eighth of a buffer (still a slot's worth and more of text), or
 * whenever `force`. Each top-up first moves the unread bytes to the
 * buffer's start: below half, as many bytes were moved as were read.
 * 0 or -errno. */
static int refill(struct idx_source *s, struct gz *g, int force)
{
  ssize_t n;

  if (g->eof || g->io.in_len == IN_BYTES ||
      (!force && g->io.in_len >= IN_BYTES / 8))
    return 0;
  memmove(s->in, g->io.in, g->io.in_len);
  g->io.in = s->in;
  n = read_some(s, s->in + g->io.in_len, IN_BYTES - g->io.in_len);
  if (n < 0)
    return (int)n;
  if (n == 0)
    g->eof = 1;
  g->io.in_len += (size_t)n;
  return 0;
}

/* Records an inflate-side error at the compressed offset the inflater
 * has reached; returns code. */
static int gz_fail(struct idx_source *s, const struct gz *g, int code,
                   const char *what)
{
  uint64_t off = atomic_load(&s->read_bytes) - g->io.in_len;

  return tr_err_set(&s->end_err, code, NULL, "%s: %s at byte %llu", s->path,
                    what, (unsigned long long)off);
}

/* At a member boundary: 1 when another member starts, 0 at a clean end of
 * file, negative on trailing garbage. */
static int next_member(struct idx_source *s, struct gz *g)
{
  if (g->io.in_len == 0 && g->eof)
    return 0;
  if (g->io.in_len < 2 || g->io.in[0] != 0x1f || g->io.in[1] != 0x8b)
    return gz_fail(s, g, TR_EFORMAT, "data after the last gzip member");
  /* A member starts a fresh stream: a point there needs no window. */
  if (rec_wants(s->rec, SLOT_BYTES - g->io.out_len))
    rec_add(s->rec, (atomic_load(&s->read_bytes) - g->io.in_len) * 8,
            SLOT_BYTES - g->io.out_len, IDX_POINT_MEMBER);
  idx_inflate_reset(s->z);
  g->in_member = 1;
  return 1;
}

/* The inflater stopped at a block boundary while hunting: the point. */
static void rec_block(struct idx_source *s, const struct gz *g)
{
  uint64_t in_bit = (atomic_load(&s->read_bytes) - g->io.in_len) * 8 -
                    idx_inflate_pending_bits(s->z);

  idx_inflate_hunt(s->z, 0);
  rec_add(s->rec, in_bit, SLOT_BYTES - g->io.out_len, IDX_POINT_BLOCK);
}

/* Thread, gzip: fills one slot. 1 when the slot is done and more may
 * follow, 0 at the end of the file, negative on error. */
static int fill_gzip(struct idx_source *s, struct gz *g)
{
  const char *what = NULL;
  size_t in_before, out_before;
  int stalled = 0; /* the last run neither consumed nor produced */
  int rc;

  while (g->io.out_len > 0) {
    rc = refill(s, g, stalled);
    if (rc < 0)
      return gz_fail(s, g, rc, strerror(-rc));
    if (!g->in_member) {
      rc = next_member(s, g);
      if (rc <= 0)
        return rc;
    }
    if (rec_wants(s->rec, SLOT_BYTES - g->io.out_len) ||
        rec_wants_tail(s->rec, atomic_load(&s->read_bytes) - g->io.in_len))
      idx_inflate_hunt(s->z, 1);
    /* Run even on empty input: the inflater may hold pending output. */
    in_before = g->io.in_len;
    out_before = g->io.out_len;
    rc = idx_inflate_run(s->z, &g->io, &what);
    if (rc < 0)
      return gz_fail(s, g, rc, what);
    if (rc == IDX_INFLATE_BLOCK) {
      rec_block(s, g);
      continue; /* a boundary is progress, even when nothing moved */
    }
    if (rc == 1)
      g->in_member = 0;
    stalled =
        rc == 0 && in_before == g->io.in_len && out_before == g->io.out_len;
    if (stalled && g->eof)
      return gz_fail(s, g, TR_EFORMAT, "truncated gzip");
    if (stalled && g->io.in_len == IN_BYTES)
      return gz_fail(s, g, TR_EFORMAT, "corrupt deflate data");
  }
  return 1;
}

/* Gzip: inflates into one slot (*len bytes). 1 when more may follow, 0
 * at the end of the file, negative on error (end_err set). */
static int produce_gzip(struct idx_source *s, char *buf, size_t *len)
{
  struct gz *g = &s->g;
  int rc;

  g->io.out = (uint8_t *)buf;
  g->io.out_first = (const uint8_t *)buf;
  g->io.out_len = SLOT_BYTES;
  rc = fill_gzip(s, g);
  *len = SLOT_BYTES - g->io.out_len;
  return rc;
}

/* The next slot's bytes into buf: 1, 0 at the end, or negative. */
static int produce(struct idx_source *s, char *buf, size_t *len)
{
  int rc;

  if (s->rec != NULL)
    s->rec->slot = (const uint8_t *)buf;
  rc = s->gzip ? produce_gzip(s, buf, len) : produce_plain(s, buf, len);
  if (s->rec != NULL)
    rec_slot_done(s->rec, *len, s->gzip);
  return rc;
}

/* The thread: produces the whole file, then marks the ring ended. */
static void *run(void *arg)
{
  struct idx_source *s = arg;
  unsigned i;
  size_t len;
  char *buf;
  int rc;

  for (i = 0;; i = (i + 1) % SLOTS) {
    if ((buf = wait_free(s, i)) == NULL)
      break;
    rc = produce(s, buf, &len);
    if (len > 0)
      put_full(s, i, len);
    if (rc <= 0)
      break;
  }
  pthread_mutex_lock(&s->mu);
  s->ended = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Opens the file (common/file.h: a regular file, under root when one is
 * given, never through a link, never blocking) and sniffs the gzip
 * magic. 0 or negative with err. */
static int open_file(struct idx_source *s, const char *root, struct tr_err *err)
{
  unsigned char magic[2];
  struct stat st;
  ssize_t n;
  int fd = tr_open_file(root, s->path, 0, &st, err);

  if (fd < 0)
    return fd;
  s->fd = fd;
  s->file_bytes = (uint64_t)st.st_size;
  n = pread(s->fd, magic, 2, 0);
  if (n < 0)
    return tr_err_set(err, -errno, NULL, "%s: read: %s", s->path,
                      strerror(errno));
  s->gzip = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return 0;
}

/* The ring, and for gzip the input buffer and inflater. 0 or
 * TR_ENOMEM (close() frees what was made). */
static int alloc_buffers(struct idx_source *s)
{
  unsigned i;

  for (i = 0; i < (s->threaded ? SLOTS : 1); i++) {
    s->slot[i].buf = malloc(SLOT_BYTES);
    if (s->slot[i].buf == NULL)
      return TR_ENOMEM;
  }
  if (!s->gzip)
    return 0;
  s->in = malloc(IN_BYTES);
  if (s->in == NULL)
    return TR_ENOMEM;
  s->g.io.in = s->in;
  return idx_inflate_new(&s->z);
}

int idx_source_open(const char *path, unsigned flags, struct idx_source **out,
                    struct tr_err *err)
{
  return idx_source_open_under(NULL, path, flags, out, err);
}

int idx_source_open_under(const char *root, const char *path, unsigned flags,
                          struct idx_source **out, struct tr_err *err)
{
  return idx_source_open_points(root, path, flags, 0, out, err);
}

/* The recorder, when points are wanted. 0 or TR_ENOMEM. */
static int alloc_rec(struct idx_source *s, uint64_t spacing)
{
  if (spacing == 0)
    return 0;
  s->rec = calloc(1, sizeof(*s->rec));
  if (s->rec == NULL)
    return TR_ENOMEM;
  s->rec->spacing =
      spacing < IDX_POINT_SPACING_MIN ? IDX_POINT_SPACING_MIN : spacing;
  s->rec->next = 0; /* the file's start too: where a slice reads its head */
  s->rec->in_tail =
      s->file_bytes > TAIL_IN_BYTES ? s->file_bytes - TAIL_IN_BYTES : 0;
  return 0;
}

int idx_source_open_points(const char *root, const char *path, unsigned flags,
                           uint64_t spacing, struct idx_source **out,
                           struct tr_err *err)
{
  struct idx_source *s = calloc(1, sizeof(*s));
  int rc;

  if (s == NULL)
    return tr_err_set(err, TR_ENOMEM, NULL, "%s: out of memory", path);
  s->fd = -1;
  s->threaded = (flags & IDX_SOURCE_THREAD) != 0;
  s->ahead = (flags & IDX_SOURCE_SCAN) != 0 && idx_scan_enabled();
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->path = strdup(path);
  if (s->path == NULL) {
    idx_source_close(s);
    return tr_err_set(err, TR_ENOMEM, NULL, "%s: out of memory", path);
  }
  rc = open_file(s, root, err);
  if (rc == 0 && (alloc_buffers(s) != 0 || alloc_rec(s, spacing) != 0))
    rc = tr_err_set(err, TR_ENOMEM, NULL, "%s: out of memory", path);
  if (rc == 0 && s->threaded &&
      (rc = pthread_create(&s->thread, NULL, run, s)) != 0)
    rc = tr_err_set(err, -rc, NULL, "%s: thread: %s", path, strerror(rc));
  if (rc != 0) {
    idx_source_close(s);
    return rc;
  }
  s->started = s->threaded;
  *out = s;
  return 0;
}

/* Without a thread: the next slot is produced now, into the one buffer.
 * Bytes produced before an error are handed out first. */
static int next_inline(struct idx_source *s, struct idx_chunk *c,
                       struct tr_err *err)
{
  struct slot *sl = &s->slot[0];
  int rc;

  if (!s->ended) {
    rc = produce(s, sl->buf, &c->len);
    s->ended = rc <= 0;
  }
  if (c->len > 0) {
    c->text = sl->buf;
    return 0;
  }
  if (s->end_err.code != 0)
    return tr_err_set(err, s->end_err.code, NULL, "%s", s->end_err.msg);
  return 0;
}

int idx_source_next(struct idx_source *s, struct idx_chunk *c,
                    struct tr_err *err)
{
  struct slot *sl;

  memset(c, 0, sizeof(*c));
  if (!s->threaded)
    return next_inline(s, c, err);
  pthread_mutex_lock(&s->mu);
  if (s->holding) {
    sl = &s->slot[(s->next + SLOTS - 1) % SLOTS];
    sl->full = 0;
    sl->batch_state = BATCH_NONE;
    s->holding = 0;
    pthread_cond_broadcast(&s->cv);
  }
  sl = &s->slot[s->next];
  while (!sl->full && !s->ended)
    pthread_cond_wait(&s->cv, &s->mu);
  /* Walked ahead or not, but not while it is: a walk under way stops
   * after its current event, and what it walked is taken. */
  if (sl->full && sl->batch_state == BATCH_BUILDING)
    atomic_store_explicit(&sl->batch.cut, 1, memory_order_relaxed);
  while (sl->full && sl->batch_state == BATCH_BUILDING)
    pthread_cond_wait(&s->cv, &s->mu);
  if (!sl->full) {
    pthread_mutex_unlock(&s->mu);
    if (s->end_err.code != 0)
      return tr_err_set(err, s->end_err.code, NULL, "%s", s->end_err.msg);
    return 0;
  }
  c->batch = sl->batch_state == BATCH_DONE ? &sl->batch : NULL;
  s->holding = 1;
  s->next = (s->next + 1) % SLOTS;
  pthread_mutex_unlock(&s->mu);
  c->text = sl->buf;
  c->len = sl->len;
  return 0;
}

void idx_source_hint(struct idx_source *s, unsigned depth, int scale)
{
  pthread_mutex_lock(&s->mu);
  s->hint_depth = depth;
  s->hint_scale = scale;
  s->hinted = s->threaded && s->ahead;
  pthread_mutex_unlock(&s->mu);
}

struct idx_points *idx_source_points(const struct idx_source *s)
{
  return s->rec != NULL ? &s->rec->pts : NULL;
}

int idx_source_stat(const struct idx_source *s, struct stat *st)
{
  return fstat(s->fd, st) == 0 ? 0 : -errno;
}

uint64_t idx_source_file_bytes(const struct idx_source *s)
{
  return s->file_bytes;
}

uint64_t idx_source_read_bytes(const struct idx_source *s)
{
  return atomic_load(&s->read_bytes);
}

void idx_source_close(struct idx_source *s)
{
  unsigned i;

  if (s == NULL)
    return;
  if (s->started) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
  }
  if (s->fd >= 0)
    close(s->fd);
  for (i = 0; i < SLOTS; i++) {
    free(s->slot[i].buf);
    idx_batch_free(&s->slot[i].batch);
  }
  idx_walker_free(&s->walker);
  free(s->in);
  idx_inflate_free(s->z);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  if (s->rec != NULL)
    idx_points_free(&s->rec->pts);
  free(s->rec);
  free(s->path);
  free(s);
}
