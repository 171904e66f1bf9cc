/*
 * A graph replay against the graphs it may have replayed (docs/DECODE.md,
 * "Matching"): which captured graphs are candidates for a graph launch,
 * and whether the replay's kernels are the candidate's launches.
 *
 * Candidates. The step label's batch size (ATOM: the graph's, bs=<real>/
 * <graph>; vLLM, SGLang: their annotation's) picks the capture files of
 * the smallest captured batch size at or above it (TraceLens's
 * find_closest_batch_size), ATOM's q bucket (tok / real bs, when it
 * divides) among those; without a step or a batch size every file is a
 * candidate. A FULL file offers its one graph to every graph launch of a
 * step, a PIECEWISE file its i-th graph to the i-th.
 *
 * Kernels against launches. A launch fits a kernel when the launch named
 * the kernel (ROCm's args.kernel) and the names are equal; a launch that
 * names nothing (CUDA) fits any kernel; a copy launch (memcpy) fits a copy
 * record or a kernel whose name says Memcpy or copyBuffer (ROCm's blit
 * kernels), a memset launch a memset or fillBuffer, as TraceLens pairs
 * them. A replay matches a candidate
 *   - exactly: as many kernels as launches, the i-th fitting the i-th; on
 *     several streams each launch, in capture order, takes the head of a
 *     stream's queue (time order) that fits it, the earliest to start
 *     when several do, and every kernel must be taken;
 *   - short: fewer kernels than launches (a trace that lost graph
 *     kernels), on one stream, when the kernels fit the launches as a
 *     subsequence in one way only: the leftmost and the rightmost
 *     placements are the same (every placement lies between them).
 * The first candidate that matches exactly wins, else the first that
 * matches short; anything else is unmatched with its reason, never
 * placed by a guess.
 */
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"

/* The selection key of file i of the library for a step. */
struct pick {
  uint32_t file;
  int64_t bs, q;
  int mode;
};

static int pick_cmp(const void *x, const void *y)
{
  const struct pick *a = x, *b = y;

  if (a->bs != b->bs)
    return a->bs < b->bs ? -1 : 1;
  if (a->q != b->q)
    return a->q < b->q ? -1 : 1;
  if (a->mode != b->mode)
    return a->mode < b->mode ? -1 : 1; /* FULL first */
  return (a->file > b->file) - (a->file < b->file);
}

/* The smallest captured batch size at or above want; -1 none. */
static int64_t closest_bs(const struct dec_lib *lib, int64_t want)
{
  int64_t best = -1;

  for (size_t i = 0; i < lib->nfiles; i++) {
    int64_t bs = lib->files[i].bs;

    if (bs >= want && (best < 0 || bs < best))
      best = bs;
  }
  return best;
}

/* 1 when file f is a candidate for a step of batch b (-1: any) and q
 * bucket q (-1: any; when no file of batch b has it, any). */
static int file_fits(const struct dec_capfile *f, int64_t b, int64_t q,
                     int q_known)
{
  if (b >= 0 && f->bs >= 0 && f->bs != b)
    return 0;
  return !q_known || f->q < 0 || f->q == q;
}

size_t dec_candidates(const struct dec_file *d, const struct dec_desc *desc,
                      uint32_t piece, uint32_t *out, size_t max)
{
  const struct dec_lib *lib = d->lib;
  struct pick *p = malloc((lib->nfiles + 1) * sizeof(*p));
  int64_t want = -1, b = -1, q = -1;
  size_t n = 0, k = 0;
  int q_known = 0;

  if (p == NULL)
    return 0;
  if (desc != NULL)
    want = desc->graph_bs >= 0 ? desc->graph_bs : desc->bs;
  if (want >= 0)
    b = closest_bs(lib, want);
  if (desc != NULL && desc->tok > 0 && desc->bs > 0 &&
      desc->tok % desc->bs == 0)
    q = desc->tok / desc->bs;
  for (size_t i = 0; q >= 0 && i < lib->nfiles; i++)
    q_known |= lib->files[i].q == q && (b < 0 || lib->files[i].bs == b);
  for (size_t i = 0; i < lib->nfiles; i++) {
    const struct dec_capfile *f = &lib->files[i];

    /* A step whose batch no file reaches takes the files of no known
     * batch size only. */
    if ((want >= 0 && b < 0 && f->bs >= 0) || !file_fits(f, b, q, q_known))
      continue;
    p[n].file = (uint32_t)i;
    p[n].bs = f->bs;
    p[n].q = f->q;
    p[n].mode = f->mode == IDX_GRAPH_PIECEWISE;
    n++;
  }
  qsort(p, n, sizeof(*p), pick_cmp);
  for (size_t i = 0; i < n && k < max; i++) {
    const struct dec_capfile *f = &lib->files[p[i].file];

    if (f->n == 0)
      continue;
    if (f->mode != IDX_GRAPH_PIECEWISE)
      out[k++] = f->first;
    else if (piece < f->n)
      out[k++] = f->first + piece;
  }
  free(p);
  return k;
}

/* ---- kernels against launches ---- */

static int name_has(const struct dec_lib *lib, uint32_t name, const char *w)
{
  if (name == DEC_NONE)
    return 0;
  return memmem(lib->names.keys[name].p, lib->names.keys[name].n, w,
                strlen(w)) != NULL;
}

static int fits(const struct dec_lib *lib, const struct dec_launch *l,
                const struct dec_rk *k)
{
  switch ((enum dec_cls)l->cls) {
  case DEC_COPY:
    return k->cls == DEC_COPY || name_has(lib, k->name, "Memcpy") ||
           name_has(lib, k->name, "copyBuffer");
  case DEC_MEMSET:
    return k->cls == DEC_MEMSET || name_has(lib, k->name, "Memset") ||
           name_has(lib, k->name, "fillBuffer");
  default:
    if (l->name == DEC_NONE)
      return k->cls == DEC_KERNEL;
    return k->cls == DEC_KERNEL && k->name == l->name;
  }
}

static int one_stream(const struct dec_rk *k, size_t n)
{
  for (size_t i = 1; i < n; i++)
    if (k[i].stream != k[0].stream)
      return 0;
  return 1;
}

static int exact_one(const struct dec_lib *lib, const struct dec_launch *g,
                     const struct dec_rk *k, size_t n, uint32_t *at)
{
  for (size_t i = 0; i < n; i++) {
    if (!fits(lib, &g[i], &k[i]))
      return 0;
    at[i] = (uint32_t)i;
  }
  return 1;
}

/* Several streams: each launch in capture order takes the fitting head of
 * a stream's queue that started first. next[i]: the index in k of the
 * kernel after k[i] on its stream; heads: the first of each stream. */
static int exact_many(const struct dec_lib *lib, const struct dec_launch *g,
                      const struct dec_rk *k, size_t n, uint32_t *at)
{
  uint32_t *next = malloc(n * sizeof(*next)), *heads = NULL, *tail = NULL;
  size_t ns = 0, i, s;
  int ok = 0;

  if (next == NULL || (heads = malloc(n * sizeof(*heads))) == NULL ||
      (tail = malloc(n * sizeof(*tail))) == NULL)
    goto out;
  for (i = 0; i < n; i++) {
    next[i] = UINT32_MAX;
    for (s = 0; s < ns && k[heads[s]].stream != k[i].stream; s++)
      ;
    if (s == ns)
      heads[ns++] = (uint32_t)i;
    else
      next[tail[s]] = (uint32_t)i;
    tail[s] = (uint32_t)i;
  }
  for (i = 0; i < n; i++) {
    size_t best = ns;

    for (s = 0; s < ns; s++)
      if (heads[s] != UINT32_MAX && fits(lib, &g[i], &k[heads[s]]) &&
          (best == ns || heads[s] < heads[best]))
        best = s; /* k is in time order: a lower index started first */
    if (best == ns)
      goto out;
    at[heads[best]] = (uint32_t)i;
    heads[best] = next[heads[best]];
  }
  ok = 1;
out:
  free(next);
  free(heads);
  free(tail);
  return ok;
}

/* Fewer kernels than launches, on one stream: placed when the leftmost
 * and the rightmost placements agree. */
static int short_one(const struct dec_lib *lib, const struct dec_launch *g,
                     size_t ng, const struct dec_rk *k, size_t n, uint32_t *at)
{
  uint32_t *right = malloc((n + 1) * sizeof(*right));
  size_t i, j;
  int ok = 0;

  if (right == NULL)
    return 0;
  for (i = 0, j = 0; i < ng && j < n; i++)
    if (fits(lib, &g[i], &k[j]))
      at[j++] = (uint32_t)i;
  if (j == n) {
    for (i = ng, j = n; i-- > 0 && j > 0;)
      if (fits(lib, &g[i], &k[j - 1]))
        right[--j] = (uint32_t)i;
    ok = j == 0 && memcmp(at, right, n * sizeof(*at)) == 0;
  }
  free(right);
  return ok;
}

void dec_match_replay(const struct dec_lib *lib, const uint32_t *cand,
                      size_t ncand, const struct dec_rk *k, size_t n,
                      struct dec_match *m)
{
  int many = !one_stream(k, n), same_count = 0;

  m->graph = DEC_NONE;
  m->is_short = 0;
  m->reason = lib->nfiles == 0 ? R_NO_CAPTURE : R_NO_GRAPH;
  for (size_t c = 0; c < ncand; c++) {
    const struct dec_graph *gr = &lib->graphs[cand[c]];
    const struct dec_launch *g = &lib->launches[gr->first];

    if (gr->n != n)
      continue;
    same_count = 1;
    if (many ? exact_many(lib, g, k, n, m->at)
             : exact_one(lib, g, k, n, m->at)) {
      m->graph = cand[c];
      return;
    }
  }
  for (size_t c = 0; !many && c < ncand; c++) {
    const struct dec_graph *gr = &lib->graphs[cand[c]];

    if (gr->n > n &&
        short_one(lib, &lib->launches[gr->first], gr->n, k, n, m->at)) {
      m->graph = cand[c];
      m->is_short = 1;
      return;
    }
  }
  if (ncand > 0)
    m->reason = same_count ? R_NAMES : R_COUNT;
}
