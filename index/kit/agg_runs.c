/*
 * Time records in bounded memory. Trace files are not time-sorted (kineto
 * writes CPU spans, then GPU activity per stream), yet the union of device
 * intervals, step kernel time and phases need time order. Records gather in
 * a fixed buffer; a full buffer is sorted and appended to a spill file
 * (agg_spill.c) as a run; at the end the runs are k-way merged through a heap,
 * each read through a small window. A stream that arrives in order (kineto
 * writes each class of host event sorted by start, index/host/host.c) is never
 * sorted: a buffer already in order is written as it is, and one that
 * continues the run before it extends that run, so a sorted stream is one
 * run however long. Exact, and RSS stays flat with file size: the disk
 * holds the records instead, about a third of their 32 bytes each: in a
 * run a record is two control bytes, then its start after the one before
 * and its duration, aux (zigzag: -1 is one byte), id and type in the
 * bytes they need (the control bytes say how many), each stored and
 * loaded as a whole word cut to length, as the Python stream's
 * (index/host/host_py.c). Spilled bytes cost the kernel's copy into the
 * page cache and back, which on a busy machine is dearer than the
 * packing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/kit/kit.h"

#define MERGE_MEMORY_RECS (1u << 13) /* all run windows together: 96 KB */
#define REC_MAX           34         /* bytes of one packed record at most */
#define REC_SLACK         8          /* readable bytes past the packed ones */
/* Packed bytes written at a time: under the size malloc() maps on its
 * own (index/cli.c), so that the buffer comes from and goes back to the
 * heap. */
#define PACK_BYTES        (120u << 10)

/* ---- packing records ---- */

/* Packs x, whose start follows prev, at p (REC_MAX + 8 bytes writable).
 * The control bytes hold, three bits each, the bytes of the start's
 * delta, the duration and aux less one (1 to 8), and of id and type (0 to
 * 4). */
static unsigned char *pack(unsigned char *p, const struct agg_rec *x,
                           int64_t prev)
{
  uint64_t ds = (uint64_t)x->start_ns - (uint64_t)prev;
  uint64_t aux = agg_zigzag(x->aux);
  unsigned w0 = agg_width(ds), w1 = agg_width((uint64_t)x->dur_ns),
           w2 = agg_width(aux), w3 = agg_width0(x->id),
           w4 = agg_width0(x->type);
  uint16_t ctl =
      (uint16_t)((w0 - 1) | (w1 - 1) << 3 | (w2 - 1) << 6 | w3 << 9 | w4 << 12);

  memcpy(p, &ctl, 2);
  p = agg_put_word(p + 2, ds, w0);
  p = agg_put_word(p, (uint64_t)x->dur_ns, w1);
  p = agg_put_word(p, aux, w2);
  p = agg_put_word(p, x->id, w3);
  return agg_put_word(p, x->type, w4);
}

/* The w bytes at p, w 0 to 4 (id and type): agg_get_word() without its
 * test of 0, a mask a shift makes (every record is unpacked once). */
static inline uint32_t get_small(const unsigned char *p, unsigned w)
{
  uint64_t v;

  memcpy(&v, p, 8);
  return (uint32_t)(v & ((1ull << (8 * w)) - 1));
}

/* Unpacks the record at p, whose start follows prev, into x: the byte
 * after it, or NULL when it would pass end (p readable REC_SLACK bytes
 * past end). Its length is summed only near end: REC_MAX bytes hold any
 * record. */
static const unsigned char *unpack(const unsigned char *p,
                                   const unsigned char *end, int64_t prev,
                                   struct agg_rec *x)
{
  uint16_t ctl;
  unsigned w0, w1, w2, w3, w4;

  if (end - p < 2)
    return NULL;
  memcpy(&ctl, p, 2);
  w0 = (ctl & 7) + 1, w1 = (ctl >> 3 & 7) + 1, w2 = (ctl >> 6 & 7) + 1;
  w3 = ctl >> 9 & 7, w4 = ctl >> 12 & 7;
  if (w3 > 4 || w4 > 4 ||
      (end - p < REC_MAX && (size_t)(end - p) < 2u + w0 + w1 + w2 + w3 + w4))
    return NULL;
  p += 2;
  x->start_ns = (int64_t)((uint64_t)prev + agg_get_word(p, w0));
  x->dur_ns = (int64_t)agg_get_word(p += w0, w1);
  x->aux = agg_unzigzag(agg_get_word(p += w1, w2));
  x->id = get_small(p += w2, w3);
  x->type = get_small(p += w3, w4);
  return p + w4;
}

/* ---- sorting a run in place (introsort) ----
 *
 * qsort() would do, but glibc's allocates a buffer as large as the run for
 * every call: a spill of many runs would allocate and free 6 MB each time
 * (and under ASan each freed buffer stays in quarantine). This sorts in
 * place: quicksort on a median of three, insertion sort for short ranges,
 * heapsort when the recursion gets too deep, so O(n log n) always. */

static void rec_swap(struct agg_rec *a, struct agg_rec *b)
{
  struct agg_rec t = *a;

  *a = *b;
  *b = t;
}

static void insertion_sort(struct agg_rec *v, size_t n)
{
  for (size_t i = 1; i < n; i++) {
    struct agg_rec x = v[i];
    size_t j = i;

    while (j > 0 && agg_rec_cmp(&x, &v[j - 1]) < 0) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
}

static void sift_down(struct agg_rec *v, size_t i, size_t n)
{
  for (;;) {
    size_t c = 2 * i + 1;

    if (c >= n)
      return;
    if (c + 1 < n && agg_rec_cmp(&v[c], &v[c + 1]) < 0)
      c++;
    if (agg_rec_cmp(&v[i], &v[c]) >= 0)
      return;
    rec_swap(&v[i], &v[c]);
    i = c;
  }
}

static void heap_sort(struct agg_rec *v, size_t n)
{
  for (size_t i = n / 2; i-- > 0;)
    sift_down(v, i, n);
  for (size_t i = n; i-- > 1;) {
    rec_swap(&v[0], &v[i]);
    sift_down(v, 0, i);
  }
}

/* Hoare partition around the median of v[0], v[n/2], v[n-1]; returns the
 * size of the left part, which holds nothing greater than the right. */
static size_t partition(struct agg_rec *v, size_t n)
{
  struct agg_rec *m = &v[n / 2], pivot;
  size_t i = 0, j = n - 1;

  if (agg_rec_cmp(m, &v[0]) < 0)
    rec_swap(m, &v[0]);
  if (agg_rec_cmp(&v[n - 1], m) < 0) {
    rec_swap(&v[n - 1], m);
    if (agg_rec_cmp(m, &v[0]) < 0)
      rec_swap(m, &v[0]);
  }
  pivot = *m;
  for (;;) {
    while (agg_rec_cmp(&v[i], &pivot) < 0)
      i++;
    while (agg_rec_cmp(&pivot, &v[j]) < 0)
      j--;
    if (i >= j)
      return j + 1;
    rec_swap(&v[i++], &v[j--]);
  }
}

static void intro_sort(struct agg_rec *v, size_t n, int depth)
{
  while (n > 16) {
    size_t left;

    if (depth-- == 0) {
      heap_sort(v, n);
      return;
    }
    left = partition(v, n);
    if (left < n - left) { /* recurse on the smaller part: O(log n) stack */
      intro_sort(v, left, depth);
      v += left;
      n -= left;
    } else {
      intro_sort(v + left, n - left, depth);
      n = left;
    }
  }
  insertion_sort(v, n);
}

static void sort_recs(struct agg_rec *v, size_t n)
{
  int depth = 0;

  for (size_t m = n; m > 1; m >>= 1)
    depth += 2;
  intro_sort(v, n, depth);
}

int agg_runs_init(struct agg_runs *r, size_t cap, struct agg_spill *sp)
{
  memset(r, 0, sizeof(*r));
  r->sp = sp;
  r->cap = cap < 2 ? 2 : cap;
  r->window = MERGE_MEMORY_RECS;
  r->buf = malloc(r->cap * sizeof(*r->buf));
  return r->buf == NULL ? TR_ENOMEM : 0;
}

void agg_runs_window(struct agg_runs *r, size_t window)
{
  r->window = window ? window : MERGE_MEMORY_RECS;
}

/* Packs v[0..n) (starts after prev) and writes them at the spill file's
 * position; their bytes into *bytes. */
static int write_packed(struct agg_runs *r, const struct agg_rec *v, size_t n,
                        int64_t prev, uint64_t *bytes)
{
  unsigned char *buf = malloc(PACK_BYTES), *p;
  size_t i = 0;
  int rc = 0;

  if (buf == NULL)
    return TR_ENOMEM;
  *bytes = 0;
  while (rc == 0 && i < n) {
    for (p = buf; i < n && (size_t)(p - buf) <= PACK_BYTES - (REC_MAX + 8);
         i++) {
      p = pack(p, &v[i], prev);
      prev = v[i].start_ns;
    }
    rc = agg_spill_write(r->sp, r->spill, buf, (size_t)(p - buf));
    *bytes += (uint64_t)(p - buf);
  }
  free(buf);
  return rc;
}

/* Sorts the buffer and appends it to the spill file as one run (or as
 * the rest of the last one, when it goes on where that one ended). */
static int spill(struct agg_runs *r)
{
  struct agg_run run = { 0, 0, 0 }, *last;
  uint64_t bytes;
  int rc, goes_on;

  if (r->n == 0)
    return 0;
  if (r->spill == NULL) {
    if ((rc = agg_spill_open(r->sp, &r->spill)) != 0)
      return rc;
    /* Packed chunks only: each one write(), not a page's worth less. */
    setvbuf(r->spill, NULL, _IONBF, 0);
  }
  if (agg_grow(&r->runs, &r->runs_cap, r->nruns, sizeof(*r->runs)) != 0)
    return TR_ENOMEM;
  if (r->unsorted)
    sort_recs(r->buf, r->n);
  last = r->nruns ? &r->runs[r->nruns - 1] : NULL;
  goes_on = last != NULL && agg_rec_cmp(&r->buf[0], &r->last) >= 0;
  run.off = last != NULL ? last->off + last->bytes : 0;
  if (fseeko(r->spill, (off_t)run.off, SEEK_SET) != 0)
    return TR_EIO;
  rc = write_packed(r, r->buf, r->n, goes_on ? r->last.start_ns : 0, &bytes);
  if (rc != 0)
    return rc;
  if (fflush(r->spill) != 0)
    return TR_EIO;
  if (goes_on) {
    last->n += r->n;
    last->bytes += bytes;
  } else {
    run.n = r->n;
    run.bytes = bytes;
    r->runs[r->nruns++] = run;
  }
  r->last = r->buf[r->n - 1];
  r->n = 0;
  r->unsorted = 0;
  return 0;
}

int agg_runs_add(struct agg_runs *r, const struct agg_rec *rec)
{
  int rc;

  if (r->sealed)
    return TR_EINVAL;
  if (r->n == r->cap && (rc = spill(r)) != 0)
    return rc;
  if (r->n > 0 && !r->unsorted && agg_rec_cmp(rec, &r->buf[r->n - 1]) < 0)
    r->unsorted = 1;
  r->buf[r->n++] = *rec;
  return 0;
}

int agg_runs_seal(struct agg_runs *r)
{
  int rc;

  if (r->sealed)
    return 0;
  r->sealed = 1;
  if (r->spill != NULL) {
    /* Read from the file from now on: the buffer (up to 2 MB) goes before
     * the time pass, where a rank's indexing peaks. */
    rc = spill(r);
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
    return rc;
  }
  if (r->unsorted)
    sort_recs(r->buf, r->n);
  r->unsorted = 0;
  return 0;
}

void agg_runs_free(struct agg_runs *r)
{
  if (r == NULL)
    return;
  free(r->buf);
  free(r->runs);
  if (r->spill != NULL)
    fclose(r->spill);
  memset(r, 0, sizeof(*r));
}

/* One run being merged: a window of its packed bytes, and its current
 * record. */
struct cursor {
  uint64_t off, end;  /* the packed bytes not yet read: [off, end) */
  uint64_t left;      /* records not yet unpacked */
  unsigned char *win; /* cap bytes, and REC_SLACK */
  size_t cap, pos, len;
  int64_t prev; /* the start of the record before */
  struct agg_rec rec;
  int has; /* rec is the run's current record (else the run is done) */
};

struct agg_iter {
  struct agg_runs *r;
  size_t mem_pos; /* in-memory case: index into r->buf */
  struct cursor *cur;
  size_t ncur;
  size_t *heap; /* cursor indices, min-heap on the current record */
  size_t nheap;
  unsigned char *windows;
};

/* Moves the bytes not unpacked yet to the window's start and reads more
 * after them. */
static int cursor_fill(struct agg_iter *it, struct cursor *c)
{
  size_t keep = c->len - c->pos, want = c->cap - keep;
  ssize_t got;

  if (it->r->sp != NULL && idx_cancelled(it->r->sp->cancel))
    return TR_ECONFLICT;
  memmove(c->win, c->win + c->pos, keep);
  c->pos = 0;
  c->len = keep;
  if (c->end - c->off < want)
    want = (size_t)(c->end - c->off);
  if (want == 0)
    return 0;
  got = pread(fileno(it->r->spill), c->win + keep, want, (off_t)c->off);
  if (got != (ssize_t)want)
    return TR_EIO;
  c->off += want;
  c->len += want;
  return 0;
}

/* The run's next record into c->rec (c->has 0 past its last). */
static int cursor_next(struct agg_iter *it, struct cursor *c)
{
  const unsigned char *p;
  int rc;

  if (c->left == 0) {
    c->has = 0;
    return 0;
  }
  if (c->len - c->pos < REC_MAX && c->off < c->end &&
      (rc = cursor_fill(it, c)) != 0)
    return rc;
  p = unpack(c->win + c->pos, c->win + c->len, c->prev, &c->rec);
  if (p == NULL)
    return TR_EIO;
  c->pos = (size_t)(p - c->win);
  c->prev = c->rec.start_ns;
  c->left--;
  c->has = 1;
  return 0;
}

static int heap_less(const struct agg_iter *it, size_t a, size_t b)
{
  return agg_rec_cmp(&it->cur[a].rec, &it->cur[b].rec) < 0;
}

static void heap_down(struct agg_iter *it, size_t i)
{
  for (;;) {
    size_t l = 2 * i + 1, m = i, t;

    if (l < it->nheap && heap_less(it, it->heap[l], it->heap[m]))
      m = l;
    if (l + 1 < it->nheap && heap_less(it, it->heap[l + 1], it->heap[m]))
      m = l + 1;
    if (m == i)
      return;
    t = it->heap[i];
    it->heap[i] = it->heap[m];
    it->heap[m] = t;
    i = m;
  }
}

static int iter_open_runs(struct agg_iter *it)
{
  struct agg_runs *r = it->r;
  size_t i, window;
  int rc;

  it->ncur = r->nruns;
  /* The same memory as the records' windows would take. */
  window = r->window / (r->nruns ? r->nruns : 1);
  if (window < 64)
    window = 64;
  window *= sizeof(struct agg_rec);
  it->cur = calloc(it->ncur, sizeof(*it->cur));
  it->heap = calloc(it->ncur, sizeof(*it->heap));
  it->windows = malloc(it->ncur * (window + REC_SLACK));
  if (it->cur == NULL || it->heap == NULL || it->windows == NULL)
    return TR_ENOMEM;
  for (i = 0; i < it->ncur; i++) {
    struct cursor *c = &it->cur[i];

    c->off = r->runs[i].off;
    c->end = r->runs[i].off + r->runs[i].bytes;
    c->left = r->runs[i].n;
    c->win = it->windows + i * (window + REC_SLACK);
    c->cap = window;
    if ((rc = cursor_next(it, c)) != 0)
      return rc;
    if (c->has)
      it->heap[it->nheap++] = i;
  }
  for (i = it->nheap / 2; i-- > 0;)
    heap_down(it, i);
  return 0;
}

int agg_iter_open(struct agg_runs *r, struct agg_iter **out)
{
  struct agg_iter *it = calloc(1, sizeof(*it));
  int rc;

  if (it == NULL)
    return TR_ENOMEM;
  it->r = r;
  if (r->spill != NULL && (rc = iter_open_runs(it)) != 0) {
    agg_iter_close(it);
    return rc;
  }
  *out = it;
  return 0;
}

int agg_iter_next(struct agg_iter *it, struct agg_rec *rec)
{
  struct cursor *c;
  int rc;

  if (it->r->spill == NULL) {
    if (it->mem_pos >= it->r->n)
      return 0;
    *rec = it->r->buf[it->mem_pos++];
    return 1;
  }
  if (it->nheap == 0)
    return 0;
  c = &it->cur[it->heap[0]];
  *rec = c->rec;
  if ((rc = cursor_next(it, c)) != 0)
    return rc;
  if (!c->has)
    it->heap[0] = it->heap[--it->nheap];
  if (it->nheap > 1) /* a stream in order is one run: nothing to sift */
    heap_down(it, 0);
  return 1;
}

int agg_iter_read(struct agg_iter *it, struct agg_rec *out, size_t max)
{
  struct cursor *c;
  size_t n = 0, k;
  int rc = 0;

  if (it->r->spill == NULL) {
    k = it->r->n - it->mem_pos < max ? it->r->n - it->mem_pos : max;
    memcpy(out, it->r->buf + it->mem_pos, k * sizeof(*out));
    it->mem_pos += k;
    return (int)k;
  }
  while (n < max && it->nheap == 1) { /* one run left: no merge */
    c = &it->cur[it->heap[0]];
    out[n++] = c->rec;
    if ((rc = cursor_next(it, c)) != 0)
      return rc;
    if (!c->has)
      it->nheap = 0;
  }
  while (n < max && (rc = agg_iter_next(it, &out[n])) == 1)
    n++;
  return rc < 0 ? rc : (int)n;
}

void agg_iter_close(struct agg_iter *it)
{
  if (it == NULL)
    return;
  free(it->cur);
  free(it->heap);
  free(it->windows);
  free(it);
}

/* ---- run-label texts ---- */

struct label_entry { /* the index file: one per label */
  uint64_t off;
  uint32_t len, pad;
};

int agg_labels_add(struct agg_labels *l, const char *p, size_t n, int64_t *seq)
{
  struct label_entry e = { l->bytes, 0, 0 };
  char text[AGG_LABEL_TEXT];
  size_t taken;

  int rc;

  if (l->text == NULL && ((rc = agg_spill_open(l->sp, &l->text)) != 0 ||
                          (rc = agg_spill_open(l->sp, &l->index)) != 0))
    return rc;
  /* Cut on a character, control bytes escaped as names' are. */
  e.len = (uint32_t)agg_text_escape(p, n, text, sizeof(text), &taken);
  if ((rc = agg_spill_write(l->sp, l->text, text, e.len)) != 0 ||
      (rc = agg_spill_write(l->sp, l->index, &e, sizeof(e))) != 0)
    return rc;
  l->bytes += e.len;
  *seq = l->n++;
  return 0;
}

int agg_labels_get(struct agg_labels *l, int64_t seq, char *buf, size_t size)
{
  struct label_entry e;
  size_t len;

  buf[0] = '\0';
  if (seq < 0 || seq >= l->n)
    return 0;
  if (fflush(l->index) != 0 || fflush(l->text) != 0 ||
      pread(fileno(l->index), &e, sizeof(e), (off_t)seq * (off_t)sizeof(e)) !=
          (ssize_t)sizeof(e))
    return TR_EIO;
  len = e.len < size - 1 ? e.len : size - 1;
  if (len > 0 && pread(fileno(l->text), buf, len, (off_t)e.off) != (ssize_t)len)
    return TR_EIO;
  buf[len] = '\0';
  return 0;
}

void agg_labels_free(struct agg_labels *l)
{
  if (l == NULL)
    return;
  if (l->text != NULL)
    fclose(l->text);
  if (l->index != NULL)
    fclose(l->index);
  memset(l, 0, sizeof(*l));
}
