/*
 * The decode tables (decode.h, common/summary.h's TR_SUM_DEC_*): what a
 * stack means, and a closed step's device records summed into every
 * table of its kind.
 *
 * Identity of a stack (docs/DECODE.md, "Identity"):
 *   - op: the innermost cpu_op frame, looking past Python frames (never on
 *     the stack) and pass-through ops ("execute", as TraceLens does); an
 *     op's subtree: every distinct op on the stack;
 *   - module path: the module frames outermost first, joined by '/': an
 *     nn.Module frame by its class (the tracer's instance suffix "_<n>"
 *     dropped), a module tag (ATOM's mark_trace) as written with every
 *     "layers.<n>" component written "layers.*";
 *   - layer: the <n> of the innermost module tag with a "layers.<n>"
 *     component; else the instance number of the outermost nn.Module whose
 *     class ends in "Layer" or "Block" (DecoderLayer, T5Block...);
 *   - source: the innermost Python frame of the model's code at an
 *     absolute path, else at a package's relative path (hs_py_source()).
 *
 * Per step: a step's records are grouped by table key, and each key's sum
 * goes into its entry's per-step histogram (agg_map.c's log-linear one,
 * as the step times: exact below 1024 ns, within 1/1024 above). A step
 * where the key took nothing counts as 0: the percentile p of n steps is
 * the step time of rank ceil(p n) - 1, ranks below the steps without the
 * key being 0.
 */
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"

#define PATH_MAX_BYTES 2048
#define MORE_NAMES     "(more names)"

int dec_tab_init(struct dec_tab *t)
{
  memset(t, 0, sizeof(*t));
  return 0;
}

void dec_tab_free(struct dec_tab *t)
{
  if (t == NULL)
    return;
  for (size_t i = 0; i < t->ents.n; i++)
    agg_hist_free(&t->ent[i].hist);
  agg_map_free(&t->ents);
  free(t->ent);
  agg_map_free(&t->mods);
  free(t->ident);
  free(t->opsv);
  for (size_t k = 0; k < DEC_MAX_KINDS; k++)
    free(t->median[k].v);
  agg_corr_free(&t->scratch);
  memset(t, 0, sizeof(*t));
}

/* ---- identity ---- */

/* "Qwen3DecoderLayer_7": the class's length and the instance (-1). */
static size_t class_of(const char *p, size_t n, int32_t *instance)
{
  size_t i = n;
  int64_t v = 0;

  while (i > 0 && p[i - 1] >= '0' && p[i - 1] <= '9')
    i--;
  *instance = -1;
  if (i == n || i < 2 || p[i - 1] != '_' || n - i > 9)
    return n;
  for (size_t j = i; j < n; j++)
    v = v * 10 + (p[j] - '0');
  *instance = (int32_t)v;
  return i - 1;
}

static int ends_with(const char *p, size_t n, const char *w)
{
  size_t k = strlen(w);

  return n >= k && memcmp(p + n - k, w, k) == 0;
}

/* Appends s[0..n) to buf at *len, up to PATH_MAX_BYTES. */
static void add(char *buf, size_t *len, const char *s, size_t n)
{
  if (*len + n > PATH_MAX_BYTES)
    n = PATH_MAX_BYTES - *len;
  memcpy(buf + *len, s, n);
  *len += n;
}

/* A module tag with every "layers.<n>" component written "layers.*" into
 * buf; the innermost such <n> (the last) into *layer when it has one. */
static void tag_segment(char *buf, size_t *len, const char *p, size_t n,
                        int32_t *layer)
{
  size_t i = 0;

  while (i < n) {
    size_t j = i;

    if ((i == 0 || p[i - 1] == '.') && n - i > 7 &&
        memcmp(p + i, "layers.", 7) == 0) {
      int64_t v = 0;

      j = i + 7;
      while (j < n && p[j] >= '0' && p[j] <= '9' && v < INT32_MAX / 10)
        v = v * 10 + (p[j++] - '0');
      if (j > i + 7 && (j == n || p[j] == '.')) {
        add(buf, len, "layers.*", 8);
        *layer = (int32_t)v;
        i = j;
        continue;
      }
    }
    add(buf, len, p + i, 1);
    i++;
  }
}

static int ident_compute(struct dec_file *d, uint32_t node,
                         struct dec_ident *id)
{
  const struct hs_trie *t = &d->lib->trie;
  struct dec_tab *tab = &d->tab;
  uint32_t chain[HS_MAX_DEPTH + 1], n = 0;
  int32_t tag_layer = DEC_NO_LAYER, inst;
  int abs_src = 0; /* id->src is an absolute frame (HS_SRC) */
  char path[PATH_MAX_BYTES];
  size_t len = 0, tl;
  int rc;

  for (uint32_t x = node; x != HS_ROOT && n <= HS_MAX_DEPTH;
       x = hs_trie_node(t, x)->parent)
    chain[n++] = hs_trie_node(t, x)->name;
  id->op = DEC_NONE;
  id->src = DEC_NONE;
  id->module = DEC_NONE;
  id->layer = DEC_NO_LAYER;
  id->ops_at = (uint32_t)tab->nopsv;
  id->nops = 0;
  for (uint32_t i = 0; i < n; i++) { /* innermost first */
    uint32_t k;

    if (hs_trie_kind(t, chain[i]) == HS_SRC && !abs_src)
      id->src = chain[i], abs_src = 1;
    else if (hs_trie_kind(t, chain[i]) == HS_SRC_PKG && id->src == DEC_NONE)
      id->src = chain[i];
    if (hs_trie_kind(t, chain[i]) != HS_OP || dec_through(t, chain[i]))
      continue;
    if (id->op == DEC_NONE)
      id->op = chain[i];
    for (k = 0; k < id->nops && tab->opsv[id->ops_at + k] != chain[i]; k++)
      ;
    if (k < id->nops)
      continue;
    if (agg_grow(&tab->opsv, &tab->opsv_cap, tab->nopsv, sizeof(*tab->opsv)))
      return TR_ENOMEM;
    tab->opsv[tab->nopsv++] = chain[i];
    id->nops++;
  }
  for (uint32_t i = n; i-- > 0;) { /* outermost first */
    enum hs_kind kind = hs_trie_kind(t, chain[i]);
    const char *p = hs_trie_text(t, chain[i], &tl);

    if (kind != HS_MODULE && kind != HS_ANNOT)
      continue;
    if (len > 0)
      add(path, &len, "/", 1);
    if (kind == HS_ANNOT) {
      tag_segment(path, &len, p, tl, &tag_layer);
      continue;
    }
    tl = class_of(p, tl, &inst);
    add(path, &len, p, tl);
    if (id->layer == DEC_NO_LAYER && inst >= 0 &&
        (ends_with(p, tl, "Layer") || ends_with(p, tl, "Block")))
      id->layer = inst;
  }
  if (tag_layer != DEC_NO_LAYER)
    id->layer = tag_layer;
  if (len > 0 && (rc = agg_map_intern(&tab->mods, path, len, &id->module)) < 0)
    return rc;
  id->done = 1;
  return 0;
}

const struct dec_ident *dec_ident_of(struct dec_file *d, uint32_t node)
{
  struct dec_tab *t = &d->tab;
  struct dec_ident id;

  if (agg_grow(&t->ident, &t->ident_cap, node, sizeof(*t->ident)) != 0)
    return NULL;
  if (t->ident[node].done)
    return &t->ident[node];
  if (ident_compute(d, node, &id) != 0)
    return NULL;
  t->ident[node] = id;
  return &t->ident[node];
}

/* ---- entries ---- */

static struct dec_ent *ent(struct dec_tab *t, uint32_t tag, uint32_t kind,
                           uint32_t a, uint32_t b, uint32_t *id_out)
{
  struct dec_key key = { tag, kind, a, b };
  uint32_t id;
  int rc = agg_map_intern(&t->ents, &key, sizeof(key), &id);

  if (rc < 0 || agg_grow(&t->ent, &t->ent_cap, id, sizeof(*t->ent)) != 0)
    return NULL;
  if (rc == 1)
    t->ent[id].key = key;
  if (id_out != NULL)
    *id_out = id;
  return &t->ent[id];
}

static int ent_add(struct dec_tab *t, uint32_t tag, uint32_t kind, uint32_t a,
                   uint32_t b, const struct dec_fine *f, struct agg_corr *step)
{
  uint32_t id;
  struct dec_ent *e = ent(t, tag, kind, a, b, &id);
  int64_t *sum;

  if (e == NULL)
    return TR_ENOMEM;
  e->kernels += f->kernels;
  e->instances += f->instances;
  e->ns = tr_sat_add(e->ns, f->ns);
  if (step == NULL)
    return 0;
  if ((sum = agg_corr_get(step, id)) != NULL) {
    *sum = tr_sat_add(*sum, f->ns);
    return 0;
  }
  return agg_corr_put(step, id, &f->ns) == 0 ? 0 : TR_ENOMEM;
}

/* One (stack, kernel name) of a step into every table. */
static int fine_into(struct dec_file *d, uint32_t kind, uint32_t node,
                     uint32_t name, const struct dec_fine *f,
                     struct agg_corr *step)
{
  struct dec_tab *t = &d->tab;
  const struct dec_ident *id = dec_ident_of(d, node);
  uint32_t layer, mod;
  int rc;

  if (id == NULL)
    return TR_ENOMEM;
  layer = (uint32_t)(id->layer + 1);
  mod = id->module;
  t->kind_ns[kind] = tr_sat_add(t->kind_ns[kind], f->ns);
  t->kind_kernels[kind] += f->kernels;
  if (id->op != DEC_NONE)
    t->kind_attr_ns[kind] = tr_sat_add(t->kind_attr_ns[kind], f->ns);
  if ((rc = ent_add(t, T_MOD, kind, mod, 0, f, step)) != 0 ||
      (rc = ent_add(t, T_LAYER, kind, layer, 0, f, step)) != 0 ||
      (rc = ent_add(t, T_OP, kind, id->op, 0, f, step)) != 0 ||
      (rc = ent_add(t, T_LM, kind, layer, mod, f, step)) != 0 ||
      (rc = ent_add(t, T_OM, kind, id->op, mod, f, NULL)) != 0 ||
      (rc = ent_add(t, T_KERN, kind, mod, name, f, NULL)) != 0 ||
      (rc = ent_add(t, T_SRC, kind, id->src, mod, f, step)) != 0)
    return rc;
  for (uint32_t i = 0; i < id->nops; i++) {
    struct dec_ent *e = ent(t, T_OP, kind, t->opsv[id->ops_at + i], 0, NULL);

    if (e == NULL)
      return TR_ENOMEM;
    e->subtree_ns = tr_sat_add(e->subtree_ns, f->ns);
  }
  return 0;
}

/* The kind's step-label p50 (its median step is the nearest to it). */
static int64_t kind_p50(const struct dec_file *d, uint32_t kind)
{
  return agg_pct(&d->kind[kind].hist, &d->kind[kind].dur, 500);
}

static int median_better(const struct dec_median *m, int64_t dist,
                         int64_t start)
{
  return !m->have || dist < m->dist || (dist == m->dist && start < m->start);
}

/* Every used slot of a correlation table, then emptied. */
#define FOR_SLOTS(c, i)                                                        \
  for (uint32_t i = 0; i < (c)->cap; i++)                                      \
    if ((c)->used[i])

static void corr_clear(struct agg_corr *c)
{
  memset(c->used, 0, c->cap);
  c->n = 0;
}

/* The per-step sums of a closed step into their entries' histograms. */
static int step_sums(struct dec_tab *t, struct agg_corr *step)
{
  FOR_SLOTS(step, i)
  {
    struct dec_ent *e = &t->ent[step->keys[i]];
    int64_t v;

    memcpy(&v, step->vals + (size_t)i * step->vsize, sizeof(v));
    e->steps++;
    agg_stat_add(&e->st, v);
    if (agg_hist_add(&e->hist, v) != 0)
      return TR_ENOMEM;
  }
  corr_clear(step);
  return 0;
}

int dec_tab_step(struct dec_file *d, uint32_t kind, struct agg_corr *fine,
                 int64_t start, int64_t dur, int64_t seq)
{
  struct dec_tab *t = &d->tab;
  int counted = kind < DEC_MAX_KINDS && seq >= 0, want = 0, rc = 0;
  struct dec_median *m = kind < DEC_MAX_KINDS ? &t->median[kind] : NULL;
  int64_t dist = 0;
  struct dec_mk *v = NULL;
  size_t nv = 0;

  if (counted && t->scratch.cap == 0 &&
      agg_corr_init(&t->scratch, sizeof(int64_t), UINT32_MAX / 4) != 0)
    return TR_ENOMEM;
  if (counted) {
    dist = dur - kind_p50(d, kind);
    dist = dist < 0 ? -dist : dist;
    want = median_better(m, dist, start);
    if (want && (v = malloc((fine->n + 1) * sizeof(*v))) == NULL)
      return TR_ENOMEM;
  }
  FOR_SLOTS(fine, i)
  {
    const struct dec_fine *f =
        (const void *)(fine->vals + (size_t)i * fine->vsize);
    uint64_t key = (uint64_t)fine->keys[i];

    if (rc == 0)
      rc = fine_into(d, kind, (uint32_t)(key >> 32), (uint32_t)key, f,
                     counted ? &t->scratch : NULL);
    if (v != NULL)
      v[nv++] = (struct dec_mk){ (uint32_t)(key >> 32), (uint32_t)key,
                                 f->kernels, f->ns };
  }
  corr_clear(fine);
  if (counted) {
    t->steps[kind]++;
    if (rc == 0)
      rc = step_sums(t, &t->scratch);
  }
  if (want && rc == 0) {
    free(m->v);
    *m = (struct dec_median){ 1, dist, start, dur, seq, v, nv };
    return 0;
  }
  free(v);
  return rc;
}
