/*
 * The decode figures into the rank summary (decode.h): completeness on
 * the rank, the TR_SUM_DEC_* tables, the warnings. Rows are ordered by
 * step kind (first seen; outside steps last), then total_ns descending,
 * then key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"

const char *const dec_reason_names[R_REASONS] = {
  [R_NO_CAPTURE] = "no_capture",
  [R_NO_GRAPH] = "no_graph",
  [R_COUNT] = "count_differs",
  [R_NAMES] = "names_differ",
};

#define MORE_NAMES "(more names)"

static json_t *reasons(const struct dec_complete *c)
{
  json_t *o = json_object();

  for (int i = 0; i < R_REASONS; i++)
    json_object_set_new(o, dec_reason_names[i],
                        json_pack("{s:I,s:I}", "replays",
                                  (json_int_t)c->unmatched[i], "ns",
                                  (json_int_t)c->unmatched_ns[i]));
  return o;
}

void dec_put_rank(const struct dec_file *d, struct agg_sum_rank *r)
{
  static const struct dec_complete zero;
  const struct dec_complete *c = d ? &d->c : &zero;
  const struct dec_lib *lib = d ? d->lib : NULL;

  r->capture_traces = lib ? (int64_t)lib->nfiles : 0;
  r->capture_graphs = lib ? (int64_t)lib->ngraphs : 0;
  r->capture_launches = lib ? (int64_t)lib->nlaunches : 0;
  r->replays = (int64_t)c->replays;
  r->replay_kernels = (int64_t)c->replay_kernels;
  r->replay_ns = c->replay_ns;
  r->replays_matched = (int64_t)c->matched;
  r->replays_short = (int64_t)c->short_matched;
  r->replays_short_ns = c->short_ns;
  r->missing_launches = (int64_t)c->missing_launches;
  r->replays_unmatched = 0;
  r->replays_unmatched_ns = 0;
  for (int i = 0; i < R_REASONS; i++) {
    r->replays_unmatched += (int64_t)c->unmatched[i];
    r->replays_unmatched_ns =
        tr_sat_add(r->replays_unmatched_ns, c->unmatched_ns[i]);
  }
  r->unmatched_reasons = reasons(c);
  r->empty_graph_launches = (int64_t)c->empty_graphs;
  r->kernels_no_launch = (int64_t)c->no_launch;
  r->kernels_no_launch_ns = c->no_launch_ns;
  r->kernels_no_op = (int64_t)c->no_op;
  r->kernels_no_op_ns = c->no_op_ns;
}

/* ---- keys as text ---- */

static struct agg_txt kind_txt(const struct dec_file *d, uint32_t kind)
{
  struct agg_txt t = { NULL, 0 };

  if (kind < DEC_MAX_KINDS) {
    t.p = d->kinds.keys[kind].p;
    t.n = d->kinds.keys[kind].n;
  }
  return t;
}

static struct agg_txt mod_txt(const struct dec_file *d, uint32_t mod)
{
  struct agg_txt t = { NULL, 0 };

  if (mod != DEC_NONE) {
    t.p = d->tab.mods.keys[mod].p;
    t.n = d->tab.mods.keys[mod].n;
  }
  return t;
}

static struct agg_txt op_txt(const struct dec_file *d, uint32_t op)
{
  struct agg_txt t = { NULL, 0 };

  if (op != DEC_NONE)
    t.p = hs_trie_text(&d->lib->trie, op, &t.n);
  return t;
}

static struct agg_txt name_txt(const struct dec_file *d, uint32_t name)
{
  if (name == DEC_NONE)
    return agg_txt(MORE_NAMES);
  return (struct agg_txt){ d->lib->names.keys[name].p,
                           d->lib->names.keys[name].n };
}

static struct agg_opt layer_opt(uint32_t layer_plus_one)
{
  return (struct agg_opt){ layer_plus_one > 0, (int64_t)layer_plus_one - 1 };
}

/* ---- memory (index/memory/): its ids' texts ---- */

static struct agg_txt mem_op(void *ud, uint32_t op)
{
  return op_txt(ud, op);
}

static struct agg_txt mem_module(void *ud, uint32_t module)
{
  return mod_txt(ud, module);
}

static struct agg_txt mem_kind(void *ud, uint32_t kind)
{
  return kind_txt(ud, kind);
}

void dec_mem_names(struct dec_file *d, struct mem_names *out)
{
  *out = (struct mem_names){ d, mem_op, mem_module, mem_kind };
}

/* ---- order ---- */

struct order_ctx {
  const struct dec_file *d;
};

static int txt_cmp(struct agg_txt a, struct agg_txt b)
{
  size_t n = a.n < b.n ? a.n : b.n;
  int c;

  if (a.p == NULL || b.p == NULL)
    return (a.p == NULL) - (b.p == NULL);
  c = n ? memcmp(a.p, b.p, n) : 0;
  return c ? c : (a.n > b.n) - (a.n < b.n);
}

/* A key's text for the tie order: module, op or layer as text. */
static int key_cmp(const struct dec_file *d, const struct dec_key *a,
                   const struct dec_key *b)
{
  int c = 0;

  switch (a->tag) {
  case T_OP:
  case T_OM:
  case T_SRC: c = txt_cmp(op_txt(d, a->a), op_txt(d, b->a)); break;
  case T_LAYER:
  case T_LM: c = (a->a > b->a) - (a->a < b->a); break;
  default: c = txt_cmp(mod_txt(d, a->a), mod_txt(d, b->a)); break;
  }
  if (c != 0)
    return c;
  if (a->tag == T_KERN)
    return txt_cmp(name_txt(d, a->b), name_txt(d, b->b));
  if (a->tag == T_LM || a->tag == T_OM || a->tag == T_SRC)
    return txt_cmp(mod_txt(d, a->b), mod_txt(d, b->b));
  return 0;
}

static int ent_cmp(const void *x, const void *y, void *ud)
{
  const struct dec_file *d = ud;
  const struct dec_ent *a = &d->tab.ent[*(const uint32_t *)x];
  const struct dec_ent *b = &d->tab.ent[*(const uint32_t *)y];

  if (a->key.kind != b->key.kind)
    return a->key.kind < b->key.kind ? -1 : 1;
  if (a->ns != b->ns)
    return a->ns > b->ns ? -1 : 1;
  return key_cmp(d, &a->key, &b->key);
}

/* The entry ids of tag, in row order; *n of them. Caller frees. */
static uint32_t *rows_of(struct dec_file *d, uint32_t tag, size_t *n)
{
  uint32_t *ids = malloc((d->tab.ents.n + 1) * sizeof(*ids));

  *n = 0;
  for (uint32_t i = 0; ids != NULL && i < d->tab.ents.n; i++)
    if (d->tab.ent[i].key.tag == tag)
      ids[(*n)++] = i;
  if (ids != NULL)
    qsort_r(ids, *n, sizeof(*ids), ent_cmp, d);
  return ids;
}

/* ---- figures ---- */

/* Percentile p (per mille) of an entry's time per step over the n steps
 * of its kind, the steps without it counting 0. */
static int64_t pct0(const struct dec_ent *e, uint64_t n, int p)
{
  uint64_t rank, zeros;

  if (n == 0 || e->steps == 0)
    return 0;
  rank = (n * (uint64_t)p + 999) / 1000 - 1;
  zeros = n > e->steps ? n - e->steps : 0;
  if (rank < zeros)
    return 0;
  return agg_hist_rank(&e->hist, rank - zeros, e->st.min_ns, e->st.max_ns);
}

struct figures {
  int64_t kernels, total_ns, steps, per_step_ns, p50_ns, p99_ns, step_ns;
  double share;
};

static struct figures figures_of(const struct dec_file *d,
                                 const struct dec_ent *e)
{
  uint32_t k = e->key.kind;
  uint64_t steps = k < DEC_MAX_KINDS ? d->tab.steps[k] : 0;
  struct figures f;

  f.kernels = (int64_t)e->kernels;
  f.total_ns = e->ns;
  f.steps = (int64_t)steps;
  f.per_step_ns = steps ? e->ns / (int64_t)steps : 0;
  f.p50_ns = pct0(e, steps, 500);
  f.p99_ns = pct0(e, steps, 990);
  f.step_ns = d->tab.kind_ns[k];
  f.share = agg_share(e->ns, f.step_ns);
  return f;
}

#define PUT_FIGURES(r, f)                                                      \
  do {                                                                         \
    (r).kernels = (f).kernels;                                                 \
    (r).total_ns = (f).total_ns;                                               \
    (r).steps = (f).steps;                                                     \
    (r).per_step_ns = (f).per_step_ns;                                         \
    (r).p50_ns = (f).p50_ns;                                                   \
    (r).p99_ns = (f).p99_ns;                                                   \
    (r).step_ns = (f).step_ns;                                                 \
    (r).share = (f).share;                                                     \
  } while (0)

/* The layers each (kind, module) ran in, by T_MOD entry id. */
static uint32_t *module_layers(const struct dec_file *d)
{
  const struct dec_tab *t = &d->tab;
  uint32_t *layers = calloc(t->ents.n + 1, sizeof(*layers)), id;

  for (uint32_t i = 0; layers != NULL && i < t->ents.n; i++) {
    struct dec_key k = { T_MOD, t->ent[i].key.kind, t->ent[i].key.b, 0 };

    if (t->ent[i].key.tag == T_LM && t->ent[i].key.a > 0 &&
        agg_map_find(&t->ents, &k, sizeof(k), &id))
      layers[id]++;
  }
  return layers;
}

/* A source frame's file, line and function: "<file>(<line>): <function>"
 * (hs_py_source() took only such frames). */
static void source_parts(struct agg_txt src, struct agg_sum_dec_source *r)
{
  const char *open = memchr(src.p, '(', src.n), *p;
  const char *end = src.p + src.n;
  int64_t line = 0;

  if (open == NULL)
    return;
  r->file = (struct agg_txt){ src.p, (size_t)(open - src.p) };
  for (p = open + 1; p < end && *p >= '0' && *p <= '9' && line < INT32_MAX;
       p++)
    line = line * 10 + (*p - '0');
  r->line = (struct agg_opt){ 1, line };
  if (end - p >= 3 && p[0] == ')' && p[1] == ':' && p[2] == ' ')
    r->function = (struct agg_txt){ p + 3, (size_t)(end - p - 3) };
}

static void source_row(struct dec_file *d, const struct dec_ent *e,
                       struct agg_txt step, const struct figures *f,
                       struct agg_out *o)
{
  struct agg_sum_dec_source r = { .step = step,
                                  .source = op_txt(d, e->key.a),
                                  .module = mod_txt(d, e->key.b) };

  AGG_SUM_FILLS(TR_SUM_DEC_SOURCE, 14);
  if (r.source.p != NULL)
    source_parts(r.source, &r);
  PUT_FIGURES(r, *f);
  agg_out_dec_source(o, &r);
}

/* The rows of table tag to o, one at a time. */
static void table(struct dec_file *d, uint32_t tag, const uint32_t *layers,
                  struct agg_out *o)
{
  size_t n;
  uint32_t *ids = rows_of(d, tag, &n);

  if (ids == NULL)
    agg_out_row(o, NULL); /* out of memory */
  for (size_t i = 0; ids != NULL && i < n; i++) {
    const struct dec_ent *e = &d->tab.ent[ids[i]];
    struct figures f = figures_of(d, e);
    struct agg_txt step = kind_txt(d, e->key.kind);

    switch (tag) {
    case T_MOD: {
      struct agg_sum_dec_module r = { .step = step,
                                      .module = mod_txt(d, e->key.a),
                                      .layers = layers ? layers[ids[i]] : 0 };
      AGG_SUM_FILLS(TR_SUM_DEC_MODULE, 11);
      PUT_FIGURES(r, f);
      agg_out_dec_module(o, &r);
      break;
    }
    case T_LAYER: {
      struct agg_sum_dec_layer r = { .step = step,
                                     .layer = layer_opt(e->key.a) };
      AGG_SUM_FILLS(TR_SUM_DEC_LAYER, 10);
      PUT_FIGURES(r, f);
      agg_out_dec_layer(o, &r);
      break;
    }
    case T_OP: {
      struct agg_sum_dec_op r = { .step = step,
                                  .op = op_txt(d, e->key.a),
                                  .count = (int64_t)e->instances,
                                  .subtree_ns = e->subtree_ns };
      AGG_SUM_FILLS(TR_SUM_DEC_OP, 12);
      PUT_FIGURES(r, f);
      agg_out_dec_op(o, &r);
      break;
    }
    case T_LM: {
      struct agg_sum_dec_layer_module r = { .step = step,
                                            .layer = layer_opt(e->key.a),
                                            .module = mod_txt(d, e->key.b) };
      AGG_SUM_FILLS(TR_SUM_DEC_LAYER_MODULE, 11);
      PUT_FIGURES(r, f);
      agg_out_dec_layer_module(o, &r);
      break;
    }
    case T_OM: {
      struct agg_sum_dec_op_module r = { .step = step,
                                         .op = op_txt(d, e->key.a),
                                         .module = mod_txt(d, e->key.b),
                                         .count = (int64_t)e->instances,
                                         .kernels = f.kernels,
                                         .total_ns = f.total_ns };
      AGG_SUM_FILLS(TR_SUM_DEC_OP_MODULE, 6);
      agg_out_dec_op_module(o, &r);
      break;
    }
    case T_SRC: source_row(d, e, step, &f, o); break;
    default: {
      struct agg_sum_dec_kernel r = { .step = step,
                                      .module = mod_txt(d, e->key.a),
                                      .name = name_txt(d, e->key.b),
                                      .kernels = f.kernels,
                                      .total_ns = f.total_ns };
      AGG_SUM_FILLS(TR_SUM_DEC_KERNEL, 5);
      agg_out_dec_kernel(o, &r);
      break;
    }
    }
  }
  free(ids);
}

/* ---- the repeated block ---- */

struct block { /* a (kind, module) over its layers */
  uint32_t kind, module, layers;
  int64_t total, fast_ns, slow_ns;
  int32_t fast, slow;
};

static int block_cmp(const void *x, const void *y, void *ud)
{
  const struct block *a = x, *b = y;

  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  if (a->total != b->total)
    return a->total > b->total ? -1 : 1;
  return txt_cmp(mod_txt(ud, a->module), mod_txt(ud, b->module));
}

/* One T_LM entry (a layer of a module) into its block. */
static void block_add(struct block *b, const struct dec_ent *e)
{
  int32_t layer = (int32_t)e->key.a - 1;

  if (b->layers == 0 || e->ns < b->fast_ns ||
      (e->ns == b->fast_ns && layer < b->fast)) {
    b->fast_ns = e->ns;
    b->fast = layer;
  }
  if (b->layers == 0 || e->ns > b->slow_ns ||
      (e->ns == b->slow_ns && layer < b->slow)) {
    b->slow_ns = e->ns;
    b->slow = layer;
  }
  b->layers++;
  b->total = tr_sat_add(b->total, e->ns);
}

static void blocks(struct dec_file *d, struct agg_out *o)
{
  const struct dec_tab *t = &d->tab;
  struct agg_map ids = { 0 };
  struct block *v = NULL;
  size_t cap = 0;
  uint32_t id;

  for (uint32_t i = 0; i < t->ents.n; i++) {
    const struct dec_ent *e = &t->ent[i];
    uint32_t key[2] = { e->key.kind, e->key.b };

    if (e->key.tag != T_LM || e->key.a == 0 || e->key.b == DEC_NONE)
      continue;
    if (agg_map_intern(&ids, key, sizeof(key), &id) < 0 ||
        agg_grow(&v, &cap, id, sizeof(*v)) != 0) {
      agg_out_row(o, NULL); /* out of memory */
      break;
    }
    v[id].kind = e->key.kind;
    v[id].module = e->key.b;
    block_add(&v[id], e);
  }
  if (ids.n > 0)
    qsort_r(v, ids.n, sizeof(*v), block_cmp, d);
  for (uint32_t i = 0; i < ids.n; i++) {
    const struct block *b = &v[i];
    int64_t steps = b->kind < DEC_MAX_KINDS ? (int64_t)t->steps[b->kind] : 0;
    struct agg_sum_dec_block r = {
      .step = kind_txt(d, b->kind),
      .module = mod_txt(d, b->module),
      .layers = b->layers,
      .total_ns = b->total,
      .steps = steps,
      .layer_ns = steps ? b->total / ((int64_t)b->layers * steps) : 0,
      .fastest_layer = b->fast,
      .fastest_ns = steps ? b->fast_ns / steps : 0,
      .slowest_layer = b->slow,
      .slowest_ns = steps ? b->slow_ns / steps : 0,
    };

    AGG_SUM_FILLS(TR_SUM_DEC_BLOCK, 10);
    agg_out_dec_block(o, &r);
  }
  free(v);
  agg_map_free(&ids);
}

/* ---- steps and their median ---- */

#define MEDIAN_TOP 5 /* kernels listed per segment of the median step */

struct mrow { /* a kernel of a segment (layer, module) of the median step */
  uint32_t layer, module, name;
  uint64_t kernels;
  int64_t ns;
};

/* Segment, then the segment's kernels largest first, then name. */
static int mrow_cmp(const void *x, const void *y, void *ud)
{
  const struct mrow *a = x, *b = y;

  if (a->layer != b->layer)
    return a->layer < b->layer ? -1 : 1;
  if (a->module != b->module)
    return txt_cmp(mod_txt(ud, a->module), mod_txt(ud, b->module));
  if (a->ns != b->ns)
    return a->ns > b->ns ? -1 : 1;
  return txt_cmp(name_txt(ud, a->name), name_txt(ud, b->name));
}

/* The median step's (stack, kernel) entries as rows of (layer, module,
 * kernel) summed, into *out (caller frees); their number. */
static size_t median_kernels(struct dec_file *d, const struct dec_median *m,
                             struct mrow **out)
{
  struct agg_map ids = { 0 };
  struct mrow *v = NULL;
  size_t cap = 0;
  uint32_t id;

  for (size_t i = 0; i < m->n; i++) {
    const struct dec_ident *ident = dec_ident_of(d, m->v[i].node);
    uint32_t key[3];

    if (ident == NULL)
      break;
    key[0] = (uint32_t)(ident->layer + 1);
    key[1] = ident->module;
    key[2] = m->v[i].name;
    if (agg_map_intern(&ids, key, sizeof(key), &id) < 0 ||
        agg_grow(&v, &cap, id, sizeof(*v)) != 0)
      break;
    v[id].layer = key[0];
    v[id].module = key[1];
    v[id].name = key[2];
    v[id].kernels += m->v[i].kernels;
    v[id].ns = tr_sat_add(v[id].ns, m->v[i].ns);
  }
  *out = v;
  id = ids.n;
  agg_map_free(&ids);
  return id;
}

static void median_rows(struct dec_file *d, uint32_t kind, struct agg_out *o)
{
  struct mrow *v = NULL;
  size_t n = median_kernels(d, &d->tab.median[kind], &v), i = 0;

  if (n > 0)
    qsort_r(v, n, sizeof(*v), mrow_cmp, d);
  while (i < n) {
    struct agg_sum_dec_median r = { .step = kind_txt(d, kind),
                                    .layer = layer_opt(v[i].layer),
                                    .module = mod_txt(d, v[i].module),
                                    .top_kernels = json_array() };
    size_t j = i;

    AGG_SUM_FILLS(TR_SUM_DEC_MEDIAN, 6);
    for (; j < n && v[j].layer == v[i].layer && v[j].module == v[i].module;
         j++) {
      struct agg_txt name = name_txt(d, v[j].name);

      r.kernels += (int64_t)v[j].kernels;
      r.total_ns = tr_sat_add(r.total_ns, v[j].ns);
      if (j - i < MEDIAN_TOP)
        json_array_append_new(
            r.top_kernels, json_pack("{s:s%,s:I,s:I}", "name", name.p, name.n,
                                     "kernels", (json_int_t)v[j].kernels,
                                     "total_ns", (json_int_t)v[j].ns));
    }
    agg_out_dec_median(o, &r);
    i = j;
  }
  free(v);
}

static void step_row(struct dec_file *d, uint32_t kind, int64_t t0_ns,
                     struct agg_out *o)
{
  const struct dec_tab *t = &d->tab;
  const struct dec_median *m = &t->median[kind];
  char label[AGG_LABEL_TEXT + 1] = "";
  struct agg_sum_dec_step r = { 0 };
  int64_t ns = 0;

  AGG_SUM_FILLS(TR_SUM_DEC_STEP, 9);
  if (m->have && agg_labels_get(&d->labels, m->seq, label, sizeof(label)))
    label[0] = '\0';
  for (size_t i = 0; i < m->n; i++)
    ns = tr_sat_add(ns, m->v[i].ns);
  r.step = kind_txt(d, kind);
  r.steps = (int64_t)t->steps[kind];
  r.kernels = (int64_t)t->kind_kernels[kind];
  r.step_ns = t->kind_ns[kind];
  r.attributed_ns = t->kind_attr_ns[kind];
  r.median_label = m->have ? agg_txt(label) : agg_txt(NULL);
  r.median_start_ns = (struct agg_opt){ m->have, m->start - t0_ns };
  r.median_dur_ns = (struct agg_opt){ m->have, m->dur };
  r.median_ns = ns;
  agg_out_dec_step(o, &r);
}

/* The decode_* tables of the summary (common/summary.h's TR_TABLE_MAP):
 * no rows when decode did not run (no file). */
void dec_module_rows(struct idx_agg *a, struct agg_out *o)
{
  uint32_t *layers;

  if (a->decode->file == NULL)
    return;
  layers = module_layers(a->decode->file);
  table(a->decode->file, T_MOD, layers, o);
  free(layers);
}

/* The tables table() writes, but decode_modules (its layers). */
#define DEC_TABLES(XX)                                                         \
  XX(dec_layer_rows, T_LAYER)                                                  \
  XX(dec_op_rows, T_OP)                                                        \
  XX(dec_layer_module_rows, T_LM)                                              \
  XX(dec_op_module_rows, T_OM)                                                 \
  XX(dec_kernel_rows, T_KERN)                                                  \
  XX(dec_source_rows, T_SRC)

#define XX(rows, tag)                                                          \
  void rows(struct idx_agg *a, struct agg_out *o)                              \
  {                                                                            \
    if (a->decode->file != NULL)                                               \
      table(a->decode->file, tag, NULL, o);                                    \
  }
DEC_TABLES(XX)
#undef XX

void dec_block_rows(struct idx_agg *a, struct agg_out *o)
{
  if (a->decode->file != NULL)
    blocks(a->decode->file, o);
}

/* The step kinds decode tracks. */
static uint32_t nkinds(const struct dec_file *d)
{
  return d->kinds.n < DEC_MAX_KINDS ? d->kinds.n : DEC_MAX_KINDS;
}

void dec_step_rows(struct idx_agg *a, struct agg_out *o)
{
  for (uint32_t k = 0; a->decode->file != NULL && k < nkinds(a->decode->file);
       k++)
    step_row(a->decode->file, k, a->t0_ns, o);
}

void dec_median_rows(struct idx_agg *a, struct agg_out *o)
{
  for (uint32_t k = 0; a->decode->file != NULL && k < nkinds(a->decode->file);
       k++)
    median_rows(a->decode->file, k, o);
}

/* ---- warnings ---- */

static void warn(json_t *w, const char *code, const char *msg)
{
  json_array_append_new(w,
                        json_pack("{s:s,s:s}", "code", code, "message", msg));
}

void dec_warnings(const struct dec_file *d, json_t *w)
{
  const struct dec_complete *c = &d->c;
  const struct dec_lib *lib = d->lib;
  uint64_t unmatched = 0;
  char msg[512];

  for (int i = 0; i < R_REASONS; i++)
    unmatched += c->unmatched[i];
  if (unmatched > 0) {
    snprintf(msg, sizeof(msg),
             "%llu of %llu graph replays are matched to no captured graph "
             "(unmatched_reasons): their %llu kernels have no op, module or "
             "layer",
             (unsigned long long)unmatched, (unsigned long long)c->replays,
             (unsigned long long)c->unmatched_kernels);
    warn(w, "replays_unmatched", msg);
  }
  if (lib->trie.folded > 0 || lib->names_folded > 0 || d->skipped > 0 ||
      d->lanes.too_deep > 0 || lib->py_folded > 0) {
    snprintf(msg, sizeof(msg),
             "decode tables capped: %llu frames beyond %u distinct stacks, "
             "%llu records beyond %u kernel names, %llu step labels beyond "
             "%d kinds, %llu frames deeper than %u, %llu Python frames "
             "beyond %u names (no source line)",
             (unsigned long long)lib->trie.folded, lib->trie.max_nodes,
             (unsigned long long)lib->names_folded, lib->max_names,
             (unsigned long long)d->skipped, DEC_MAX_KINDS,
             (unsigned long long)d->lanes.too_deep, d->lanes.max_depth,
             (unsigned long long)lib->py_folded, 4 * lib->max_names);
    warn(w, "decode_capped", msg);
  }
  if (c->steps_forced > 0 || c->late > 0 || c->launches_lost > 0) {
    snprintf(msg, sizeof(msg),
             "%llu steps were closed while their kernels were still due and "
             "%llu device records came after their step closed (counted in "
             "their kind's totals, not its per-step figures); %llu launches "
             "left the bounded table without a device record",
             (unsigned long long)c->steps_forced, (unsigned long long)c->late,
             (unsigned long long)c->launches_lost);
    warn(w, "decode_steps_overlapped", msg);
  }
  if (lib->graphs_dropped > 0 || lib->capture_files_failed > 0) {
    snprintf(msg, sizeof(msg),
             "%llu capture traces could not be read and %llu captured "
             "graphs beyond %u launches were left out",
             (unsigned long long)lib->capture_files_failed,
             (unsigned long long)lib->graphs_dropped, DEC_MAX_LAUNCHES);
    warn(w, "capture_traces_incomplete", msg);
  }
}
