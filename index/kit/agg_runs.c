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
 * holds 32 bytes per device event, host call and run label instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/kit/kit.h"

#define MERGE_MEMORY_RECS (1u << 13) /* all run windows together: 256 KB */

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

/* Sorts the buffer and appends it to the spill file as one run. */
static int spill(struct agg_runs *r)
{
  struct agg_run run;
  int rc;

  if (r->n == 0)
    return 0;
  if (r->spill == NULL && (rc = agg_spill_open(r->sp, &r->spill)) != 0)
    return rc;
  if (agg_grow(&r->runs, &r->runs_cap, r->nruns, sizeof(*r->runs)) != 0)
    return TR_ENOMEM;
  if (r->unsorted)
    sort_recs(r->buf, r->n);
  run.first =
      r->nruns ? r->runs[r->nruns - 1].first + r->runs[r->nruns - 1].n : 0;
  run.n = r->n;
  if (fseeko(r->spill, (off_t)(run.first * sizeof(*r->buf)), SEEK_SET) != 0)
    return TR_EIO;
  rc = agg_spill_write(r->sp, r->spill, r->buf, r->n * sizeof(*r->buf));
  if (rc != 0)
    return rc;
  if (fflush(r->spill) != 0)
    return TR_EIO;
  if (r->nruns > 0 && agg_rec_cmp(&r->buf[0], &r->last) >= 0)
    r->runs[r->nruns - 1].n += r->n; /* it goes on where that run ended */
  else
    r->runs[r->nruns++] = run;
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

/* One run being merged: a window of its records. */
struct cursor {
  uint64_t next; /* next record index in the file */
  uint64_t end;
  struct agg_rec *win;
  size_t pos, len;
};

struct agg_iter {
  struct agg_runs *r;
  size_t mem_pos; /* in-memory case: index into r->buf */
  struct cursor *cur;
  size_t ncur;
  size_t *heap; /* cursor indices, min-heap on the current record */
  size_t nheap;
  size_t window;
  struct agg_rec *windows;
};

static int cursor_fill(struct agg_iter *it, struct cursor *c)
{
  size_t want = it->window;
  ssize_t got;

  if (c->end - c->next < want)
    want = (size_t)(c->end - c->next);
  c->pos = 0;
  c->len = want;
  if (want == 0)
    return 0;
  got = pread(fileno(it->r->spill), c->win, want * sizeof(*c->win),
              (off_t)(c->next * sizeof(*c->win)));
  if (got != (ssize_t)(want * sizeof(*c->win)))
    return TR_EIO;
  c->next += want;
  return 0;
}

static int heap_less(const struct agg_iter *it, size_t a, size_t b)
{
  const struct cursor *x = &it->cur[a], *y = &it->cur[b];

  return agg_rec_cmp(&x->win[x->pos], &y->win[y->pos]) < 0;
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
  size_t i;
  int rc;

  it->ncur = r->nruns;
  it->window = r->window / (r->nruns ? r->nruns : 1);
  if (it->window < 64)
    it->window = 64;
  it->cur = calloc(it->ncur, sizeof(*it->cur));
  it->heap = calloc(it->ncur, sizeof(*it->heap));
  it->windows = malloc(it->ncur * it->window * sizeof(*it->windows));
  if (it->cur == NULL || it->heap == NULL || it->windows == NULL)
    return TR_ENOMEM;
  for (i = 0; i < it->ncur; i++) {
    it->cur[i].next = r->runs[i].first;
    it->cur[i].end = r->runs[i].first + r->runs[i].n;
    it->cur[i].win = it->windows + i * it->window;
    if ((rc = cursor_fill(it, &it->cur[i])) != 0)
      return rc;
    if (it->cur[i].len > 0)
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
  *rec = c->win[c->pos++];
  if (c->pos == c->len && (rc = cursor_fill(it, c)) != 0)
    return rc;
  if (c->len == 0)
    it->heap[0] = it->heap[--it->nheap];
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
    k = c->len - c->pos < max - n ? c->len - c->pos : max - n;
    memcpy(out + n, c->win + c->pos, k * sizeof(*out));
    c->pos += k;
    n += k;
    if (c->pos == c->len && (rc = cursor_fill(it, c)) != 0)
      return rc;
    if (c->len == 0)
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
