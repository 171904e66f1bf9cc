/*
 * Protos and groups (perf.h, perf_int.h). A proto is an op with its
 * arguments' text, kept once in the protos map's key; its group is the
 * model's answer on them: TraceLens's group key, the op's name and
 * parameters. Variants of a group: the GEMM transposes its kernels' names
 * tell, and the recompute of activation checkpointing (TraceLens's
 * is_recompute column). The annotated models' groups also depend on the
 * step's label, resolved once per (proto, label).
 */
#include <stdlib.h>
#include <string.h>

#include "index/perf/perf_int.h"

#define SEP '\0'

int pf_lib_new(uint32_t max_groups, struct pf_lib **out)
{
  struct pf_lib *lib = calloc(1, sizeof(*lib));

  if (lib == NULL)
    return TR_ENOMEM;
  lib->max_groups = max_groups ? max_groups : IDX_MAX_KERNEL_NAMES;
  lib->max_protos = 4 * lib->max_groups;
  if (agg_corr_init(&lib->variants, sizeof(uint32_t), UINT32_MAX / 4) != 0 ||
      agg_corr_init(&lib->annotated, sizeof(uint32_t), UINT32_MAX / 4) != 0 ||
      agg_corr_init(&lib->racc, sizeof(struct pf_racc), PF_OPEN) != 0 ||
      (lib->inst = calloc(PF_OPEN, sizeof(*lib->inst))) == NULL ||
      (lib->free_ids = malloc(PF_OPEN * sizeof(*lib->free_ids))) == NULL) {
    pf_lib_free(lib);
    return TR_ENOMEM;
  }
  for (uint32_t i = 0; i < PF_OPEN; i++)
    lib->free_ids[i] = PF_OPEN - 1 - i;
  lib->nfree = PF_OPEN;
  *out = lib;
  return 0;
}

void pf_lib_free(struct pf_lib *lib)
{
  if (lib == NULL)
    return;
  for (uint32_t i = 0; i < lib->groups.n; i++)
    agg_hist_free(&lib->group[i].hist);
  agg_map_free(&lib->names);
  agg_map_free(&lib->protos);
  agg_map_free(&lib->groups);
  agg_corr_free(&lib->variants);
  agg_corr_free(&lib->annotated);
  agg_corr_free(&lib->racc);
  free(lib->proto);
  free(lib->group);
  free(lib->op_of);
  free(lib->inst);
  free(lib->free_ids);
  free(lib->heap);
  free(lib->cinst);
  free(lib->rlist);
  free(lib);
}

void pf_lib_labels(struct pf_lib *lib,
                   int (*fn)(void *ud, int64_t label, char *buf, size_t size),
                   void *ud)
{
  lib->label_fn = fn;
  lib->label_ud = ud;
}

/* ---- groups ---- */

/* The group of name and params (recompute: the variant under a
 * checkpoint's recompute), o's figures with it; PF_NONE past the cap. */
static int intern_group(struct pf_lib *lib, uint32_t name, uint32_t proto,
                        const struct pf_out *o, const char *params, size_t pn,
                        int recompute, uint32_t *out)
{
  const struct agg_key *nk = &lib->names.keys[name];
  char stack[PF_PARAMS + 512], *key = stack;
  size_t n = nk->n + pn + 3;
  struct pf_group *g;
  uint32_t id;
  int rc;

  if (n > sizeof(stack) && (key = malloc(n)) == NULL)
    return TR_ENOMEM;
  memcpy(key, nk->p, nk->n);
  key[nk->n] = SEP;
  memcpy(key + nk->n + 1, params, pn);
  key[nk->n + 1 + pn] = SEP;
  key[nk->n + 2 + pn] = (char)('0' + recompute);
  if (!agg_map_find(&lib->groups, key, n, &id) &&
      lib->groups.n >= lib->max_groups) {
    lib->groups_folded++;
    *out = PF_NONE;
    rc = 0;
  } else if ((rc = agg_map_intern(&lib->groups, key, n, &id)) >= 0 &&
             (rc = agg_grow(&lib->group, &lib->group_cap, id,
                            sizeof(*lib->group))) == 0) {
    g = &lib->group[id];
    if (g->count == 0 && g->category == NULL) {
      g->name = name;
      g->proto = proto;
      g->base = id;
      g->category = o->category;
      g->prec = o->prec;
      g->maf = o->maf;
      g->outer = (lib->proto[proto].op->flags & PF_OP_OUTER) != 0;
      g->recompute = (uint8_t)recompute;
      g->gemm = strcmp(o->category, "GEMM") == 0;
      g->flops = o->flops;
      g->bytes = o->bytes;
      g->min_ns = INT64_MAX;
    }
    *out = id;
    rc = 0;
  }
  if (key != stack)
    free(key);
  return rc;
}

/* The parameters text of group g (in its key). */
static const char *params_of(const struct pf_lib *lib, uint32_t g, size_t *n)
{
  const struct agg_key *k = &lib->groups.keys[g];
  const char *p = memchr(k->p, SEP, k->n);

  *n = k->n - (size_t)(p + 1 - k->p) - 2;
  return p + 1;
}

/* The proto's arguments into lib->args, with the annotation text. */
static int parse_proto(struct pf_lib *lib, const struct pf_proto *p,
                       const char *annot)
{
  struct idx_span sp[PF_MEMBERS];
  const char *s = p->args, *e = p->args + p->args_n;

  for (int m = 0; m < PF_MEMBERS; m++) {
    const char *z = memchr(s, SEP, (size_t)(e - s));

    if (z == NULL)
      return -1;
    sp[m].p = z > s ? s : NULL;
    sp[m].n = (size_t)(z - s);
    s = z + 1;
  }
  lib->args.annot = annot;
  lib->args.annot_n = annot ? strlen(annot) : 0;
  return pf_args_parse(&lib->args, sp);
}

/* The model's group of proto id (with the step label's text annot for
 * the annotated models); PF_NONE when the arguments fit no model. */
static int model_group(struct pf_lib *lib, uint32_t id, const char *annot,
                       uint32_t *group)
{
  struct pf_proto *p = &lib->proto[id];
  struct pf_out o;

  *group = PF_NONE;
  if (parse_proto(lib, p, annot) != 0 ||
      pf_model_run(p->op, &lib->args, &o) != 0) {
    lib->no_model++;
    return 0;
  }
  return intern_group(lib, p->name, id, &o, o.p.buf, o.p.n, 0, group);
}

/* The group of an annotated model for the step label: resolved once per
 * (proto, label). */
static int annotated(struct pf_lib *lib, uint32_t proto, int64_t label,
                     uint32_t *group)
{
  int64_t key = (int64_t)proto << 32 | (uint32_t)(label + 1);
  uint32_t *have = agg_corr_get(&lib->annotated, key);
  char text[4096] = "";
  int rc;

  if (have != NULL) {
    *group = *have;
    return 0;
  }
  if (label >= 0 && lib->label_fn != NULL &&
      lib->label_fn(lib->label_ud, label, text, sizeof(text)) != 0)
    text[0] = '\0';
  if ((rc = model_group(lib, proto, text[0] ? text : NULL, group)) != 0)
    return rc;
  return agg_corr_put(&lib->annotated, key, group) == 0 ? 0 : TR_ENOMEM;
}

/* The variant of base with the GEMM transposes trans (0: none) and under
 * a recompute or not. */
static int variant(struct pf_lib *lib, uint32_t base, uint8_t trans,
                   int recompute, uint32_t *group)
{
  static const char *const tf[3] = { "false", "true", "null" };
  int64_t key = (int64_t)base << 16 | trans << 1 | recompute;
  uint32_t *have = agg_corr_get(&lib->variants, key);
  struct pf_group *b = &lib->group[base];
  char params[PF_PARAMS + 64];
  struct pf_out o;
  const char *bp;
  size_t n;
  int rc;

  if (have != NULL) {
    *group = *have;
    return 0;
  }
  bp = params_of(lib, base, &n);
  memcpy(params, bp, n - 1); /* its closing brace goes after the transposes */
  if (trans > 0)
    n = (size_t)snprintf(params + n - 1, sizeof(params) - (n - 1),
                         "%s\"transpose\":[%s,%s]}", n > 2 ? "," : "",
                         tf[(trans - 1) / 3], tf[(trans - 1) % 3]) +
        n - 1;
  else
    params[n - 1] = '}';
  memset(&o, 0, sizeof(o));
  o.category = b->category;
  o.prec = b->prec;
  o.maf = b->maf;
  o.flops = b->flops;
  o.bytes = b->bytes;
  if ((rc = intern_group(lib, b->name, b->proto, &o, params, n, recompute,
                         group)) != 0)
    return rc;
  if (*group != PF_NONE)
    lib->group[*group].base = base;
  return agg_corr_put(&lib->variants, key, group) == 0 ? 0 : TR_ENOMEM;
}

int pf_group_of(struct pf_lib *lib, uint32_t proto, unsigned flags,
                uint8_t trans, int64_t label, uint32_t *group)
{
  const struct pf_proto *p = &lib->proto[proto];
  uint32_t base = p->group;
  int rc;

  *group = PF_NONE;
  if ((p->op->flags & PF_OP_ANNOT) &&
      (rc = annotated(lib, proto, label, &base)) != 0)
    return rc;
  if (base == PF_NONE)
    return 0;
  if (!lib->group[base].gemm)
    trans = 0;
  if (trans == 0 && !(flags & PF_I_RECOMPUTE)) {
    *group = base;
    return 0;
  }
  return variant(lib, base, trans, (flags & PF_I_RECOMPUTE) != 0, group);
}

/* ---- protos ---- */

/* The model of op name id (a decode frame name), once per name. */
static const struct pf_op *op_of(struct pf_lib *lib, uint32_t name_id,
                                 const char *name, size_t n)
{
  if (agg_grow(&lib->op_of, &lib->op_cap, name_id, sizeof(*lib->op_of)) != 0)
    return NULL;
  if (lib->op_of[name_id].known)
    return lib->op_of[name_id].op;
  lib->op_of[name_id].known = 1;
  lib->op_of[name_id].op = pf_op_find(name, n);
  return lib->op_of[name_id].op;
}

/* A 64-bit hash of the op and its members' spans. */
static uint64_t spans_hash(const struct pf_op *op,
                           const struct idx_span sp[PF_MEMBERS])
{
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)op, w;

  for (int m = 0; m < PF_MEMBERS; m++) {
    const unsigned char *p = (const unsigned char *)sp[m].p;
    size_t n = sp[m].p ? sp[m].n : 0, i;

    h = (h ^ (n + 1)) * 0xff51afd7ed558ccdull;
    for (i = 0; i + 8 <= n; i += 8) {
      memcpy(&w, p + i, 8);
      h = (h ^ w) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    for (w = 0; i < n; i++)
      w = w << 8 | p[i];
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
  }
  return h ? h : 1;
}

/* A new proto (or a known one) of op and the members' spans. */
static int add_proto(struct pf_lib *lib, const struct pf_op *op,
                     const char *name, size_t name_n,
                     const struct idx_span sp[PF_MEMBERS], uint32_t *out)
{
  size_t n = name_n + 1, at;
  uint32_t id, nid;
  char *key;
  int rc;

  for (int m = 0; m < PF_MEMBERS; m++)
    n += (sp[m].p ? sp[m].n : 0) + 1;
  if (n > PF_ARG_TEXT || (key = malloc(n)) == NULL)
    return n > PF_ARG_TEXT ? (*out = PF_NONE, 0) : TR_ENOMEM;
  memcpy(key, name, name_n);
  key[name_n] = SEP;
  at = name_n + 1;
  for (int m = 0; m < PF_MEMBERS; m++) {
    if (sp[m].p)
      memcpy(key + at, sp[m].p, sp[m].n), at += sp[m].n;
    key[at++] = SEP;
  }
  *out = PF_NONE;
  if (agg_map_find(&lib->protos, key, n, &id)) {
    *out = id;
    rc = 0;
  } else if (lib->protos.n >= lib->max_protos ||
             lib->args_bytes + n > PF_ARGS_BYTES) {
    lib->protos_folded++;
    rc = 0;
  } else if ((rc = agg_map_intern(&lib->protos, key, n, &id)) >= 0 &&
             (rc = agg_grow(&lib->proto, &lib->proto_cap, id,
                            sizeof(*lib->proto))) == 0 &&
             (rc = agg_map_intern(&lib->names, name, name_n, &nid)) >= 0) {
    struct pf_proto *p = &lib->proto[id];
    const struct agg_key *k = &lib->protos.keys[id];

    lib->args_bytes += n;
    p->op = op;
    p->args = k->p + name_n + 1;
    p->args_n = (uint32_t)(k->n - name_n - 1);
    p->name = nid;
    p->group = PF_NONE;
    rc = op->flags & PF_OP_ANNOT ? 0 : model_group(lib, id, NULL, &p->group);
    *out = id;
  }
  free(key);
  return rc < 0 ? rc : 0;
}

int pf_proto(struct pf_lib *lib, const struct idx_event *ev, uint32_t name_id,
             const char *name, size_t n, uint32_t *proto)
{
  const struct pf_op *op = op_of(lib, name_id, name, n);
  struct idx_span sp[PF_MEMBERS];
  uint64_t h;
  size_t slot;
  int rc;

  *proto = PF_NONE;
  if (op == NULL || ev->raw.p == NULL ||
      pf_args_spans(ev->raw.p, ev->raw.n, sp) != 0 || sp[PF_DIMS].p == NULL)
    return 0;
  h = spans_hash(op, sp);
  slot = (size_t)(h >> 52) & (PF_CACHE - 1);
  if (lib->cache[slot].key == h) {
    *proto = lib->cache[slot].id;
    return 0;
  }
  if ((rc = add_proto(lib, op, name, n, sp, proto)) != 0)
    return rc;
  if (*proto != PF_NONE) {
    lib->cache[slot].key = h;
    lib->cache[slot].id = *proto;
  }
  return 0;
}

/* ---- GEMM transposes ---- */

/* "C???_A???_B???" somewhere in s: a Tensile (ROCm) GEMM. */
static int tensile(const char *s, size_t n)
{
  for (size_t i = 0; i + 14 <= n; i++) {
    int ok = s[i] == 'C' && s[i + 4] == '_' && s[i + 5] == 'A' &&
             s[i + 9] == '_' && s[i + 10] == 'B';

    for (size_t k = 1; ok && k < 14; k++)
      if (k != 4 && k != 5 && k != 9 && k != 10)
        ok = s[i + k] >= 'a' && s[i + k] <= 'z';
    if (ok)
      return 1;
  }
  return 0;
}

static int has(const char *s, size_t n, const char *lit)
{
  return memmem(s, n, lit, strlen(lit)) != NULL;
}

uint8_t pf_transposes(const char *s, size_t n)
{
  int ta = 2, tb = 2;

  if (tensile(s, n)) {
    ta = has(s, n, "_Ailk_") ? 0 : has(s, n, "_Alik_") ? 1 : 2;
    tb = has(s, n, "_Bljk_") ? 0 : has(s, n, "_Bjlk_") ? 1 : 2;
  } else if (n >= 5 && memcmp(s, "nvjet", 5) == 0) {
    const char *u = s + n;

    while (u > s && u[-1] != '_')
      u--;
    if (s + n - u < 2)
      return 0; /* TraceLens reads two characters: it raises */
    ta = u[0] == 'T';
    tb = u[1] == 'T';
  } else {
    return 0;
  }
  return (uint8_t)(1 + 3 * ta + tb);
}
