/*
 * Host stacks (host.h): the trie of distinct stacks and the open
 * frames of each thread.
 *
 * Nesting. The stack at t is every frame with start <= t < end, ordered by
 * start, then by end descending (of two frames starting together the
 * longer is the outer one); of two frames with one span, a module frame is
 * outside an op frame, else the name first in byte order is the outer
 * one. Frames arrive in start order; a frame that
 * ends leaves wherever it sits, so a trace whose frames overlap without
 * nesting (clock granularity between the python tracer and the op
 * profiler) still gives exactly that set. Frames above a removed or
 * inserted one take new nodes: their stack changed.
 */
#include <stdlib.h>
#include <string.h>

#include "index/host/host.h"

struct trie_key { /* the identity of a node */
  uint32_t parent, name;
};

int hs_trie_init(struct hs_trie *t, uint32_t max_nodes)
{
  memset(t, 0, sizeof(*t));
  t->max_nodes = max_nodes ? max_nodes : HS_MAX_NODE;
  if (agg_grow(&t->nodes, &t->nodes_cap, 0, sizeof(*t->nodes)) != 0)
    return TR_ENOMEM;
  t->nodes[HS_ROOT].parent = HS_ROOT;
  t->nodes[HS_ROOT].name = HS_NO_NAME;
  t->nnodes = 1;
  return 0;
}

void hs_trie_free(struct hs_trie *t)
{
  if (t == NULL)
    return;
  agg_map_free(&t->names);
  agg_map_free(&t->keys);
  free(t->nodes);
  memset(t, 0, sizeof(*t));
}

int hs_trie_name(struct hs_trie *t, enum hs_kind kind, const char *p, size_t n,
                 uint32_t *id)
{
  char small[256], *key = n < sizeof(small) ? small : malloc(n + 1);
  int rc;

  if (key == NULL)
    return TR_ENOMEM;
  key[0] = (char)kind;
  if (n > 0)
    memcpy(key + 1, p, n);
  rc = agg_map_intern(&t->names, key, n + 1, id);
  if (key != small)
    free(key);
  return rc < 0 ? rc : 0;
}

enum hs_kind hs_trie_kind(const struct hs_trie *t, uint32_t name)
{
  return (enum hs_kind)(unsigned char)t->names.keys[name].p[0];
}

const char *hs_trie_text(const struct hs_trie *t, uint32_t name, size_t *n)
{
  *n = t->names.keys[name].n - 1;
  return t->names.keys[name].p + 1;
}

int hs_trie_child(struct hs_trie *t, uint32_t parent, uint32_t name,
                  uint32_t *node)
{
  struct trie_key k = { parent, name };
  struct hs_cached *c =
      &t->cache[((parent * 0x9E3779B1u) ^ (name * 0x85EBCA77u)) >> 20 &
                (HS_CACHE - 1)];
  uint32_t id;
  int rc;

  if (c->node != 0 && c->parent == parent && c->name == name) {
    *node = c->node;
    return 0;
  }
  if (agg_map_find(&t->keys, &k, sizeof(k), &id)) {
    *c = (struct hs_cached){ parent, name, id + 1 };
    *node = id + 1;
    return 0;
  }
  if (t->nnodes >= t->max_nodes) {
    t->folded++;
    *node = parent;
    return 0;
  }
  if ((rc = agg_map_intern(&t->keys, &k, sizeof(k), &id)) < 0 ||
      agg_grow(&t->nodes, &t->nodes_cap, id + 1, sizeof(*t->nodes)) != 0)
    return TR_ENOMEM;
  t->nodes[id + 1].parent = parent;
  t->nodes[id + 1].name = name;
  t->nodes[id + 1].depth = t->nodes[parent].depth + 1;
  t->nnodes = id + 2;
  *c = (struct hs_cached){ parent, name, id + 1 };
  *node = id + 1;
  return 0;
}

int hs_lanes_init(struct hs_lanes *l)
{
  memset(l, 0, sizeof(*l));
  l->max_depth = HS_MAX_DEPTH;
  return 0;
}

void hs_lanes_free(struct hs_lanes *l)
{
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->ids.n; i++)
    free(l->lane[i].v);
  free(l->lane);
  agg_map_free(&l->ids);
  memset(l, 0, sizeof(*l));
}

int hs_lanes_id(struct hs_lanes *l, int64_t pid, int64_t tid, const char *ps,
                size_t pn, const char *ts, size_t tn, uint32_t *lane)
{
  char key[2 + 2 * sizeof(int64_t) + 512];
  size_t n = 0;

  /* A numeric and a text id never collide: the first byte says which. */
  key[n++] = ps != NULL ? 's' : 'n';
  if (ps == NULL) {
    memcpy(key + n, &pid, sizeof(pid));
    n += sizeof(pid);
  } else {
    pn = pn > 255 ? 255 : pn;
    key[n++] = (char)pn;
    memcpy(key + n, ps, pn);
    n += pn;
  }
  if (ts == NULL) {
    memcpy(key + n, &tid, sizeof(tid));
    n += sizeof(tid);
  } else {
    tn = tn > 255 ? 255 : tn;
    memcpy(key + n, ts, tn);
    n += tn;
  }
  if (agg_map_intern(&l->ids, key, n, lane) < 0 ||
      agg_grow(&l->lane, &l->lane_cap, *lane, sizeof(*l->lane)) != 0)
    return TR_ENOMEM;
  return 0;
}

/* Re-derives the nodes of the frames from index `from` up. */
static int renode(struct hs_trie *t, struct hs_lane *ln, uint32_t from)
{
  for (uint32_t i = from; i < ln->n; i++) {
    uint32_t below = i ? ln->v[i - 1].node : HS_ROOT;
    int rc = hs_trie_child(t, below, ln->v[i].name, &ln->v[i].node);

    if (rc != 0)
      return rc;
  }
  return 0;
}

void hs_lanes_advance(struct hs_lanes *l, struct hs_trie *t, uint32_t lane,
                      int64_t t_ns)
{
  struct hs_lane *ln = &l->lane[lane];
  uint32_t i, k = 0, first = UINT32_MAX;

  /* The top frame ends first when frames nest; then this is one pop. */
  while (ln->n > 0 && ln->v[ln->n - 1].end <= t_ns)
    ln->n--;
  if (!ln->ill)
    return;
  for (i = 0; i < ln->n; i++) {
    if (ln->v[i].end <= t_ns) {
      if (first == UINT32_MAX)
        first = i;
      continue;
    }
    ln->v[k++] = ln->v[i];
  }
  ln->n = k;
  ln->ill = 0;
  for (i = 1; i < ln->n; i++)
    ln->ill |= ln->v[i].end > ln->v[i - 1].end;
  /* A frame left from the middle: the ones above it have new stacks. A
   * renode failure (out of memory) leaves their old nodes: still a stack
   * they were on. */
  if (first != UINT32_MAX)
    (void)renode(t, ln, first);
}

/* 1 when frame name a goes outside frame name b of the same span. */
static int outer_name(const struct hs_trie *t, uint32_t a, uint32_t b)
{
  int ra = hs_trie_kind(t, a) == HS_OP, rb = hs_trie_kind(t, b) == HS_OP;
  size_t na, nb;
  const char *pa = hs_trie_text(t, a, &na), *pb = hs_trie_text(t, b, &nb);
  int c;

  if (ra != rb)
    return ra < rb;
  c = memcmp(pa, pb, na < nb ? na : nb);
  return c < 0 || (c == 0 && na < nb);
}

/* 1 when the open frame f goes inside a new frame (start, end, name) of
 * the same start. */
static int inside(const struct hs_trie *t, const struct hs_open *f,
                  int64_t start, int64_t end, uint32_t name)
{
  return f->start == start &&
         (f->end < end || (f->end == end && outer_name(t, name, f->name)));
}

int hs_lanes_push(struct hs_lanes *l, struct hs_trie *t, uint32_t lane,
                  int64_t start, int64_t end, uint32_t name, uint32_t user)
{
  struct hs_lane *ln = &l->lane[lane];
  uint32_t at = ln->n;
  size_t cap = ln->cap;

  if (ln->n >= l->max_depth) {
    l->too_deep++;
    return 0;
  }
  /* Each frame of a walk comes here: the calls only when they have
   * work (the room is there, the frame goes on top, nearly always). */
  if (ln->n == ln->cap) {
    if (agg_grow(&ln->v, &cap, ln->n, sizeof(*ln->v)) != 0)
      return TR_ENOMEM;
    ln->cap = (uint32_t)cap;
  }
  /* Below the open frames of the same start that go inside it. */
  while (at > 0 && inside(t, &ln->v[at - 1], start, end, name))
    at--;
  if (at < ln->n)
    memmove(&ln->v[at + 1], &ln->v[at], (ln->n - at) * sizeof(*ln->v));
  ln->v[at].start = start;
  ln->v[at].end = end;
  ln->v[at].name = name;
  ln->v[at].launched = 0;
  ln->v[at].user = user;
  ln->n++;
  if (at > 0 && end > ln->v[at - 1].end)
    ln->ill = 1;
  if (at + 1 < ln->n && ln->v[at + 1].end > end)
    ln->ill = 1;
  return renode(t, ln, at);
}

uint32_t hs_lanes_top(const struct hs_lanes *l, uint32_t lane)
{
  const struct hs_lane *ln = &l->lane[lane];

  return ln->n > 0 ? ln->v[ln->n - 1].node : HS_ROOT;
}

int hs_lanes_first_launch(struct hs_lanes *l, const struct hs_trie *t,
                          uint32_t lane,
                          int (*through)(const struct hs_trie *, uint32_t))
{
  struct hs_lane *ln = &l->lane[lane];

  for (uint32_t i = ln->n; i-- > 0;) {
    struct hs_open *f = &ln->v[i];

    if (hs_trie_kind(t, f->name) != HS_OP ||
        (through != NULL && through(t, f->name)))
      continue;
    if (f->launched)
      return 0;
    f->launched = 1;
    return 1;
  }
  return 0;
}
