/*
 * Collectives matched across the ranks of a capture (docs/ANALYSIS.md): on a
 * tensor-parallel step every rank runs the same collectives in the same
 * order, so the k-th collective of a family on a lane (index/agg/agg_coll.c)
 * of every rank of a group is one collective. A group is the ranks that
 * run together (a disaggregated server's halves and pipeline stages are
 * apart: the daemon says which, from the trace folder's layout).
 *
 * Per matched collective: the first and the last arrival (start), the
 * skew (last minus first), the rank that arrived last (ties: the lower
 * rank), and per rank its wait (the last arrival minus its own start,
 * within its duration) and its transfer (the rest of its duration). Ranks
 * with different counts of a key are matched up to the shorter sequence,
 * with a warning naming them.
 *
 * Bounded memory: the side files are read as streams, one pass to count
 * (every collective's figures by family and step kind) and one per key to
 * match; what stays is a figure row per (family, rank) and (kind, rank),
 * the `keep` worst instances and the timeline's bins.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/text.h"
#include "index/agg/agg_int.h"

#define KEYS_MAX 256 /* (family, lane) keys matched per group */

struct fig { /* summary.h's TR_COLL_FIGURES */
  int64_t count, total, exposed, matched, wait, transfer, late, last, held;
};

struct rin { /* one rank's side file */
  const struct idx_coll_rank *in;
  FILE *f;
  struct coll_trailer t;
  uint32_t *key_fam;  /* local key -> family */
  uint32_t *key_lane; /* local key -> lane */
  uint64_t *key_n;    /* records of the local key */
  uint32_t *kind;     /* local kind -> kind + 1 (0: outside steps) */
};

struct pr { /* a rank's part of an instance */
  int rank;
  int64_t start, dur, wait, transfer; /* start from the rank's t0 */
};

struct inst {
  int64_t skew, start; /* start: the first arrival, absolute */
  uint32_t fam, lane;
  uint64_t index;
  int last_rank;
  size_t nper;
  struct pr *per;
};

struct tbin {
  int64_t instances, late, wait, last;
};

struct match {
  struct rin *r;
  size_t n;
  struct agg_map fams, kinds; /* names of every rank */
  struct fig *ff, *kf;        /* [family][n], [kind + 1][n] */
  int64_t t0, tend, width;
  int bins;
  struct tbin *tl;  /* [bins][n] */
  int64_t *tl_skew; /* [bins] */
  struct inst *top; /* a heap: the least bad of the kept at [0] */
  size_t ntop, top_cap, keep;
  uint64_t matched;
  json_t *warnings;
};

/* ---- reading a side file ---- */

static int read_text(FILE *f, char *buf, uint32_t *n)
{
  if (fread(n, sizeof(*n), 1, f) != 1 || *n > COLL_TEXT_MAX ||
      (*n > 0 && fread(buf, *n, 1, f) != 1))
    return TR_EFORMAT;
  return 0;
}

/* The trailer of the file behind fd (size bytes), checked. */
static int read_trailer(int fd, uint64_t size, struct coll_trailer *t)
{
  uint64_t body = size - sizeof(*t);

  if (size < sizeof(*t) ||
      pread(fd, t, sizeof(*t), (off_t)body) != (ssize_t)sizeof(*t) ||
      t->magic != COLL_MAGIC || t->nrecs > body / sizeof(struct coll_rec) ||
      t->keys_at < t->nrecs * sizeof(struct coll_rec) ||
      t->kinds_at < t->keys_at || t->kinds_at > body ||
      t->nkeys > (t->kinds_at - t->keys_at) / 16 ||
      t->nkinds > (body - t->kinds_at) / 4)
    return TR_EFORMAT;
  return 0;
}

static int open_side(struct rin *r)
{
  struct stat st;
  int fd = open(r->in->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  int rc = 0;

  if (fd < 0)
    return -errno;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    rc = TR_EFORMAT;
  if (rc == 0)
    rc = read_trailer(fd, (uint64_t)st.st_size, &r->t);
  if (rc == 0 && (r->f = fdopen(fd, "rb")) == NULL)
    rc = TR_ENOMEM;
  if (rc != 0)
    close(fd);
  return rc;
}

/* The keys and kinds of r, their names interned into m. */
static int read_tables(struct match *m, struct rin *r)
{
  char buf[COLL_TEXT_MAX];
  uint32_t n;
  int64_t stream;
  int rc = fseek(r->f, (long)r->t.keys_at, SEEK_SET) ? TR_EIO : 0;

  r->key_fam = calloc(r->t.nkeys + 1, sizeof(*r->key_fam));
  r->key_lane = calloc(r->t.nkeys + 1, sizeof(*r->key_lane));
  r->key_n = calloc(r->t.nkeys + 1, sizeof(*r->key_n));
  r->kind = calloc(r->t.nkinds + 1, sizeof(*r->kind));
  if (!r->key_fam || !r->key_lane || !r->key_n || !r->kind)
    return TR_ENOMEM;
  for (uint64_t i = 0; rc == 0 && i < r->t.nkeys; i++) {
    if ((rc = read_text(r->f, buf, &n)) != 0 ||
        fread(&r->key_lane[i], 4, 1, r->f) != 1 ||
        fread(&stream, 8, 1, r->f) != 1)
      rc = TR_EFORMAT;
    else if (agg_map_intern(&m->fams, buf, n, &r->key_fam[i]) < 0)
      rc = TR_ENOMEM;
  }
  if (rc == 0 && fseek(r->f, (long)r->t.kinds_at, SEEK_SET) != 0)
    rc = TR_EIO;
  for (uint64_t k = 0; rc == 0 && k < r->t.nkinds; k++) {
    if ((rc = read_text(r->f, buf, &n)) == 0 &&
        agg_map_intern(&m->kinds, buf, n, &r->kind[k]) < 0)
      rc = TR_ENOMEM;
    r->kind[k]++;
  }
  return rc;
}

/* The next record of r (key: only that key's; UINT32_MAX: any). */
static int next_rec(struct rin *r, uint32_t key, struct coll_rec *rec)
{
  do {
    if (fread(rec, sizeof(*rec), 1, r->f) != 1)
      return TR_EFORMAT;
    if (rec->key >= r->t.nkeys || rec->kind < -1 ||
        rec->kind >= (int64_t)r->t.nkinds)
      return TR_EFORMAT;
  } while (key != UINT32_MAX && rec->key != key);
  return 0;
}

/* ---- the figures ---- */

static struct fig *fam_fig(struct match *m, const struct rin *r, uint32_t key)
{
  return &m->ff[(size_t)r->key_fam[key] * m->n + (size_t)(r - m->r)];
}

static struct fig *kind_fig(struct match *m, const struct rin *r, int32_t k)
{
  return &m->kf[(size_t)(k < 0 ? 0 : r->kind[k]) * m->n + (size_t)(r - m->r)];
}

/* Pass 0: every collective's count, time and exposure. */
static int count_rank(struct match *m, struct rin *r)
{
  struct coll_rec rec;
  int rc = fseek(r->f, 0, SEEK_SET) ? TR_EIO : 0;

  for (uint64_t i = 0; rc == 0 && i < r->t.nrecs; i++) {
    struct fig *f[2];

    if ((rc = next_rec(r, UINT32_MAX, &rec)) != 0)
      break;
    r->key_n[rec.key]++;
    f[0] = fam_fig(m, r, rec.key);
    f[1] = kind_fig(m, r, rec.kind);
    for (int j = 0; j < 2; j++) {
      f[j]->count++;
      f[j]->total = tr_sat_add(f[j]->total, rec.dur_ns);
      f[j]->exposed = tr_sat_add(f[j]->exposed, rec.exposed_ns);
    }
  }
  return rc;
}

/* ---- instances ---- */

/* Worse: more skew, then earlier, then family and index (a total order). */
static int worse(const struct match *m, const struct inst *a,
                 const struct inst *b)
{
  int c;

  if (a->skew != b->skew)
    return a->skew > b->skew;
  if (a->start != b->start)
    return a->start < b->start;
  c = agg_key_cmp(&m->fams.keys[a->fam], &m->fams.keys[b->fam]);
  if (c != 0)
    return c < 0;
  if (a->lane != b->lane)
    return a->lane < b->lane;
  return a->index < b->index;
}

static void top_swap(struct inst *a, struct inst *b)
{
  struct inst t = *a;

  *a = *b;
  *b = t;
}

static void top_down(struct match *m, size_t i)
{
  for (;;) {
    size_t c = 2 * i + 1;

    if (c >= m->ntop)
      return;
    if (c + 1 < m->ntop && worse(m, &m->top[c], &m->top[c + 1]))
      c++;
    if (!worse(m, &m->top[i], &m->top[c]))
      return;
    top_swap(&m->top[i], &m->top[c]);
    i = c;
  }
}

/* Keeps x (its per taken) among the keep worst. */
static int top_offer(struct match *m, struct inst *x)
{
  size_t i = m->ntop;

  if (m->keep == 0)
    return 0;
  if (m->ntop == m->keep) {
    if (!worse(m, x, &m->top[0]))
      return 0;
    free(m->top[0].per);
    m->top[0] = *x;
    x->per = NULL;
    top_down(m, 0);
    return 0;
  }
  if (agg_grow(&m->top, &m->top_cap, m->ntop, sizeof(*m->top)) != 0)
    return TR_ENOMEM;
  m->top[m->ntop++] = *x;
  x->per = NULL;
  while (i > 0 && worse(m, &m->top[(i - 1) / 2], &m->top[i])) {
    top_swap(&m->top[i], &m->top[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  return 0;
}

static void bin_add(struct match *m, const struct inst *x, const size_t *slot)
{
  int64_t b = (x->start - m->t0) / m->width;

  if (b < 0)
    b = 0;
  if (b >= m->bins)
    b = m->bins - 1;
  if (x->skew > m->tl_skew[b])
    m->tl_skew[b] = x->skew;
  for (size_t j = 0; j < x->nper; j++) {
    struct tbin *t = &m->tl[(size_t)b * m->n + slot[j]];

    t->instances++;
    t->late += x->per[j].start + m->r[slot[j]].t.t0_ns - x->start;
    t->wait += x->per[j].wait;
    t->last += x->per[j].rank == x->last_rank;
  }
}

/* One matched collective: recs[j] of rank slot[j]. */
static int instance(struct match *m, const size_t *slot,
                    const struct coll_rec *recs, size_t g, struct inst *x)
{
  int64_t first = recs[0].start_ns, last = recs[0].start_ns, held = 0;
  size_t lj = 0;

  for (size_t j = 1; j < g; j++) {
    if (recs[j].start_ns < first)
      first = recs[j].start_ns;
    if (recs[j].start_ns > last) {
      last = recs[j].start_ns;
      lj = j;
    }
  }
  if ((x->per = calloc(g, sizeof(*x->per))) == NULL)
    return TR_ENOMEM;
  x->skew = last - first;
  x->start = first;
  x->nper = g;
  x->last_rank = m->r[slot[lj]].in->rank;
  for (size_t j = 0; j < g; j++) {
    struct rin *r = &m->r[slot[j]];
    int64_t wait = last - recs[j].start_ns;
    struct fig *f[2] = { fam_fig(m, r, recs[j].key),
                         kind_fig(m, r, recs[j].kind) };

    if (wait > recs[j].dur_ns)
      wait = recs[j].dur_ns;
    x->per[j] = (struct pr){ r->in->rank, recs[j].start_ns - r->t.t0_ns,
                             recs[j].dur_ns, wait, recs[j].dur_ns - wait };
    held += j == lj ? 0 : wait;
    for (int i = 0; i < 2; i++) {
      f[i]->matched++;
      f[i]->wait += wait;
      f[i]->transfer += recs[j].dur_ns - wait;
      f[i]->late += recs[j].start_ns - first;
    }
  }
  for (int i = 0; i < 2; i++) {
    struct rin *r = &m->r[slot[lj]];
    struct fig *f =
        i ? kind_fig(m, r, recs[lj].kind) : fam_fig(m, r, recs[lj].key);

    f->last++;
    f->held += held;
  }
  return 0;
}

/* The local key of (family fam, lane) on r, or UINT32_MAX. */
static uint32_t local_key(const struct rin *r, uint32_t fam, uint32_t lane)
{
  for (uint32_t k = 0; k < r->t.nkeys; k++)
    if (r->key_fam[k] == fam && r->key_lane[k] == lane)
      return k;
  return UINT32_MAX;
}

/* The ranks of slot whose count of their key is (not) n, into text. */
static void ranks_text(const struct match *m, const size_t *slot,
                       const uint64_t *cnt, size_t g, uint64_t n, int eq,
                       char *buf, size_t size)
{
  size_t len = 0;

  buf[0] = '\0';
  for (size_t j = 0; j < g && len < size; j++)
    if ((cnt[j] == n) == eq)
      len += (size_t)snprintf(buf + len, size - len, "%s%d", len ? ", " : "",
                              m->r[slot[j]].in->rank);
}

/* The shortest count of the key over the group; a warning when they
 * differ. */
static uint64_t shortest(struct match *m, const size_t *slot,
                         const uint32_t *lk, size_t g, uint32_t fam,
                         uint32_t lane, uint64_t *cnt)
{
  uint64_t lo = UINT64_MAX, hi = 0;
  const struct agg_key *fk = &m->fams.keys[fam];
  char fewer[256], others[256];

  for (size_t j = 0; j < g; j++) {
    cnt[j] = lk[j] == UINT32_MAX ? 0 : m->r[slot[j]].key_n[lk[j]];
    lo = cnt[j] < lo ? cnt[j] : lo;
    hi = cnt[j] > hi ? cnt[j] : hi;
  }
  if (lo != hi) {
    ranks_text(m, slot, cnt, g, lo, 1, fewer, sizeof(fewer));
    ranks_text(m, slot, cnt, g, lo, 0, others, sizeof(others));
    tr_note(m->warnings, "unequal_collective_counts",
            "%.*s (lane %u): rank %s ran %llu, rank %s more (up to %llu): "
            "the first %llu are matched",
            (int)(fk->n > 200 ? 200 : fk->n), fk->p, lane, fewer,
            (unsigned long long)lo, others, (unsigned long long)hi,
            (unsigned long long)lo);
  }
  return lo;
}

/* Matches the key (fam, lane) over the g ranks of slot. */
static int match_key(struct match *m, const size_t *slot, size_t g,
                     uint32_t fam, uint32_t lane)
{
  uint32_t *lk = calloc(g, sizeof(*lk));
  uint64_t *cnt = calloc(g, sizeof(*cnt)), n;
  struct coll_rec *recs = calloc(g, sizeof(*recs));
  int rc = lk && cnt && recs ? 0 : TR_ENOMEM;

  for (size_t j = 0; rc == 0 && j < g; j++) {
    lk[j] = local_key(&m->r[slot[j]], fam, lane);
    if (fseek(m->r[slot[j]].f, 0, SEEK_SET) != 0)
      rc = TR_EIO;
  }
  n = rc == 0 ? shortest(m, slot, lk, g, fam, lane, cnt) : 0;
  for (uint64_t k = 0; rc == 0 && k < n; k++) {
    struct inst x = { .fam = fam, .lane = lane, .index = k };

    for (size_t j = 0; rc == 0 && j < g; j++)
      rc = next_rec(&m->r[slot[j]], lk[j], &recs[j]);
    if (rc == 0 && (rc = instance(m, slot, recs, g, &x)) == 0) {
      m->matched++;
      bin_add(m, &x, slot);
      rc = top_offer(m, &x);
    }
    free(x.per);
  }
  free(lk);
  free(cnt);
  free(recs);
  return rc;
}

static int key_cmp(const void *x, const void *y, void *ud)
{
  const struct match *m = ud;
  const uint32_t *a = x, *b = y;
  int c = agg_key_cmp(&m->fams.keys[a[0]], &m->fams.keys[b[0]]);

  return c ? c : (a[1] > b[1]) - (a[1] < b[1]);
}

/* Every (family, lane) of the group's ranks, sorted, at most KEYS_MAX. */
static int group_keys(struct match *m, const size_t *slot, size_t g,
                      uint32_t **out, size_t *nout)
{
  struct agg_map seen = { 0 };
  uint32_t *keys = NULL, id;
  size_t n = 0, cap = 0;
  int rc = 0;

  for (size_t j = 0; rc == 0 && j < g; j++) {
    const struct rin *r = &m->r[slot[j]];

    for (uint32_t k = 0; rc == 0 && k < r->t.nkeys; k++) {
      uint32_t key[2] = { r->key_fam[k], r->key_lane[k] };

      if ((rc = agg_map_intern(&seen, key, sizeof(key), &id)) == 1 &&
          (rc = agg_grow(&keys, &cap, 2 * n + 1, sizeof(*keys))) == 0) {
        keys[2 * n] = key[0];
        keys[2 * n++ + 1] = key[1];
      }
    }
  }
  agg_map_free(&seen);
  if (rc < 0) {
    free(keys);
    return rc;
  }
  if (n > 0)
    qsort_r(keys, n, 2 * sizeof(*keys), key_cmp, m);
  if (n > KEYS_MAX) {
    tr_note(m->warnings, "collective_keys_capped",
            "%zu (family, stream) pairs: only the first %d are matched", n,
            KEYS_MAX);
    n = KEYS_MAX;
  }
  *out = keys;
  *nout = n;
  return 0;
}

static int match_group(struct match *m, const size_t *slot, size_t g)
{
  uint32_t *keys = NULL;
  size_t n = 0;
  int rc = g > 1 ? group_keys(m, slot, g, &keys, &n) : 0;

  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = match_key(m, slot, g, keys[2 * i], keys[2 * i + 1]);
  free(keys);
  return rc;
}

/* Each group's ranks in turn (groups in order of first appearance). */
static int match_groups(struct match *m)
{
  size_t *slot = calloc(m->n + 1, sizeof(*slot));
  char *done = calloc(m->n + 1, 1);
  int rc = slot && done ? 0 : TR_ENOMEM;

  for (size_t i = 0; rc == 0 && i < m->n; i++) {
    size_t g = 0;

    if (done[i] || m->r[i].f == NULL)
      continue;
    for (size_t j = i; j < m->n; j++)
      if (!done[j] && m->r[j].f != NULL &&
          m->r[j].in->group == m->r[i].in->group) {
        done[j] = 1;
        slot[g++] = j;
      }
    rc = match_group(m, slot, g);
  }
  free(slot);
  free(done);
  return rc;
}

/* ---- the answer ---- */

static struct agg_txt key_txt(const struct agg_map *map, uint32_t id)
{
  struct agg_txt t = { map->keys[id].p, map->keys[id].n };

  return t;
}

static void figures_of(const struct fig *f, int64_t *v)
{
  const int64_t in[] = { f->count,    f->total, f->exposed, f->matched, f->wait,
                         f->transfer, f->late,  f->last,    f->held };

  memcpy(v, in, sizeof(in));
}

#define FIGS(r, f)                                                             \
  do {                                                                         \
    int64_t v_[9];                                                             \
                                                                               \
    figures_of(f, v_);                                                         \
    (r).count = v_[0];                                                         \
    (r).total_ns = v_[1];                                                      \
    (r).exposed_ns = v_[2];                                                    \
    (r).matched = v_[3];                                                       \
    (r).wait_ns = v_[4];                                                       \
    (r).transfer_ns = v_[5];                                                   \
    (r).late_ns = v_[6];                                                       \
    (r).last = v_[7];                                                          \
    (r).held_ns = v_[8];                                                       \
  } while (0)

static int name_order(const void *x, const void *y, void *ud)
{
  const struct agg_map *map = ud;

  return agg_key_cmp(&map->keys[*(const uint32_t *)x],
                     &map->keys[*(const uint32_t *)y]);
}

static json_t *family_rows(const struct match *m)
{
  uint32_t *ids = agg_order(m->fams.n, name_order, &m->fams);
  json_t *rows = json_array();

  AGG_SUM_FILLS(TR_COLL_FAMILY, 11);
  for (uint32_t i = 0; ids != NULL && i < m->fams.n; i++)
    for (size_t j = 0; j < m->n; j++) {
      const struct fig *f = &m->ff[(size_t)ids[i] * m->n + j];
      struct agg_sum_coll_family r = { .family = key_txt(&m->fams, ids[i]),
                                       .rank = m->r[j].in->rank };

      FIGS(r, f);
      if (f->count > 0)
        json_array_append_new(rows, agg_sum_coll_family_json(&r));
    }
  free(ids);
  return rows;
}

/* Outside steps first, then the kinds by name. */
static json_t *step_rows(const struct match *m)
{
  uint32_t *ids = agg_order(m->kinds.n, name_order, &m->kinds);
  json_t *rows = json_array();

  AGG_SUM_FILLS(TR_COLL_STEP, 11);
  for (uint32_t i = 0; ids != NULL && i <= m->kinds.n; i++)
    for (size_t j = 0; j < m->n; j++) {
      uint32_t k = i == 0 ? 0 : ids[i - 1] + 1;
      const struct fig *f = &m->kf[(size_t)k * m->n + j];
      struct agg_sum_coll_step r = {
        .step = k ? key_txt(&m->kinds, k - 1) : agg_txt(NULL),
        .rank = m->r[j].in->rank,
      };

      FIGS(r, f);
      if (f->count > 0)
        json_array_append_new(rows, agg_sum_coll_step_json(&r));
    }
  free(ids);
  return rows;
}

static json_t *per_rank_json(const struct inst *x)
{
  json_t *arr = json_array();

  for (size_t j = 0; j < x->nper; j++)
    json_array_append_new(
        arr, json_pack("{s:i,s:I,s:I,s:I,s:I}", "rank", x->per[j].rank,
                       "start_ns", (json_int_t)x->per[j].start, "dur_ns",
                       (json_int_t)x->per[j].dur, "wait_ns",
                       (json_int_t)x->per[j].wait, "transfer_ns",
                       (json_int_t)x->per[j].transfer));
  return arr;
}

static int inst_order(const void *x, const void *y, void *ud)
{
  const struct match *m = ud;
  const struct inst *a = x, *b = y;

  return worse(m, a, b) ? -1 : worse(m, b, a) ? 1 : 0;
}

static json_t *instance_rows(struct match *m)
{
  json_t *rows = json_array();

  AGG_SUM_FILLS(TR_COLL_INSTANCE, 7);
  if (m->ntop > 0)
    qsort_r(m->top, m->ntop, sizeof(*m->top), inst_order, m);
  for (size_t i = 0; i < m->ntop; i++) {
    const struct inst *x = &m->top[i];
    struct agg_sum_coll_instance r = {
      .family = key_txt(&m->fams, x->fam),
      .index = (int64_t)x->index,
      .lane = x->lane,
      .start_ns = x->start - m->t0,
      .skew_ns = x->skew,
      .last_rank = x->last_rank,
      .per_rank = per_rank_json(x),
    };

    json_array_append_new(rows, agg_sum_coll_instance_json(&r));
  }
  return rows;
}

static json_t *timeline_rows(const struct match *m)
{
  json_t *rows = json_array();

  AGG_SUM_FILLS(TR_COLL_TIMELINE, 9);
  for (int b = 0; b < m->bins; b++)
    for (size_t j = 0; j < m->n; j++) {
      const struct tbin *t = &m->tl[(size_t)b * m->n + j];
      struct agg_sum_coll_timeline r = {
        .bin = b,
        .start_ns = (int64_t)b * m->width,
        .end_ns = (int64_t)(b + 1) * m->width,
        .rank = m->r[j].in->rank,
        .instances = t->instances,
        .late_ns = t->late,
        .wait_ns = t->wait,
        .last = t->last,
        .skew_max_ns = m->tl_skew[b],
      };

      if (t->instances > 0)
        json_array_append_new(rows, agg_sum_coll_timeline_json(&r));
    }
  return rows;
}

static json_t *answer(struct match *m)
{
  return json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:O}", "t0_ns",
                   (json_int_t)m->t0, "span_ns", (json_int_t)(m->tend - m->t0),
                   "matched", (json_int_t)m->matched, "families",
                   family_rows(m), "steps", step_rows(m), "instances",
                   instance_rows(m), "timeline", timeline_rows(m), "warnings",
                   m->warnings);
}

/* ---- setup ---- */

/* Opens every side file; one that cannot be read is left out, with a
 * warning. The span is the ranks' read. */
static int load(struct match *m)
{
  int any = 0, rc;

  for (size_t i = 0; i < m->n; i++) {
    struct rin *r = &m->r[i];

    if ((rc = open_side(r)) == 0 && (rc = read_tables(m, r)) == TR_ENOMEM)
      return rc;
    if (rc != 0) {
      tr_note(m->warnings, "no_collective_record",
              "rank %d: its collectives cannot be read (%s): it is left out",
              r->in->rank, rc > -1000 ? strerror(-rc) : tr_strerror(rc));
      if (r->f != NULL)
        fclose(r->f);
      r->f = NULL;
      continue;
    }
    if (!any || r->t.t0_ns < m->t0)
      m->t0 = r->t.t0_ns;
    if (!any || r->t.tend_ns > m->tend)
      m->tend = r->t.tend_ns;
    any = 1;
  }
  return 0;
}

static int setup(struct match *m)
{
  size_t nf = m->fams.n, nk = m->kinds.n + 1;
  int64_t span = m->tend - m->t0;

  m->width = span > 0 ? (span + m->bins - 1) / m->bins : 1;
  m->ff = calloc(nf * m->n + 1, sizeof(*m->ff));
  m->kf = calloc(nk * m->n + 1, sizeof(*m->kf));
  m->tl = calloc((size_t)m->bins * m->n + 1, sizeof(*m->tl));
  m->tl_skew = calloc((size_t)m->bins + 1, sizeof(*m->tl_skew));
  return m->ff && m->kf && m->tl && m->tl_skew ? 0 : TR_ENOMEM;
}

static void match_free(struct match *m)
{
  for (size_t i = 0; i < m->n; i++) {
    if (m->r[i].f != NULL)
      fclose(m->r[i].f);
    free(m->r[i].key_fam);
    free(m->r[i].key_lane);
    free(m->r[i].key_n);
    free(m->r[i].kind);
  }
  for (size_t i = 0; i < m->ntop; i++)
    free(m->top[i].per);
  free(m->r);
  free(m->ff);
  free(m->kf);
  free(m->tl);
  free(m->tl_skew);
  free(m->top);
  agg_map_free(&m->fams);
  agg_map_free(&m->kinds);
  json_decref(m->warnings);
}

int idx_collectives_match(const struct idx_coll_rank *ranks, size_t n,
                          size_t keep, int bins, json_t **out,
                          struct tr_err *err)
{
  struct match m;
  int rc;

  memset(&m, 0, sizeof(m));
  m.n = n;
  m.keep = keep;
  m.bins = bins > 0 ? bins : 1;
  m.r = calloc(n + 1, sizeof(*m.r));
  m.warnings = json_array();
  rc = m.r != NULL && m.warnings != NULL ? 0 : TR_ENOMEM;
  for (size_t i = 0; rc == 0 && i < n; i++)
    m.r[i].in = &ranks[i];
  if (rc == 0)
    rc = load(&m);
  if (rc == 0)
    rc = setup(&m);
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (m.r[i].f != NULL)
      rc = count_rank(&m, &m.r[i]);
  if (rc == 0)
    rc = match_groups(&m);
  if (rc == 0 && (*out = answer(&m)) == NULL)
    rc = TR_ENOMEM;
  match_free(&m);
  if (rc != 0)
    return tr_err_set(err, rc, "", "collectives: %s", tr_strerror(rc));
  return 0;
}
