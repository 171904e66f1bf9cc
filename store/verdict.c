/*
 * Regression verdicts (docs/VERDICTS.md): a finished capture or import compared
 * with its baseline, decided for the reader.
 *
 * The baseline: the capture pinned for the same configuration (baselines,
 * PUT /captures/<id>/baseline), else the latest done one of that
 * configuration (finished last), for a configuration with a model; or any
 * done capture asked for (?baseline=). The configuration is model, TP
 * (params.tp, else the number of ranks, as /diff), ISL, OSL, CONC,
 * variant and more (absent: false).
 *
 * Incomparable, with the reasons, when there is no baseline, or /diff
 * warns of a different TP or device, of a run without steps (neither run
 * labels nor ProfilerStep#N) or of labels that predate the taxonomy, when
 * the real (not dummy_*) step kinds differ (another label taxonomy:
 * ATOM's draft against propose_eagle), or when a run has no real steps to
 * count per step by.
 *
 * Else, the figures (judge.c decides each, docs/VERDICTS.md):
 *   step_p50   per real step kind on both sides: shown, the steady p50
 *              (all ranks: the slowest rank's); judged, its steady steps'
 *              time bucket by bucket;
 *   category, family   the time per real step: all ranks' total over the
 *              real step count (/diff's norm=per_step), where either side
 *              spends at least FLOOR of its device time per step there; a
 *              family only on one side is a change of unknown size;
 *   kernel     the same, for the kernels the ranks track per step on both
 *              sides.
 * The history: up to MAX_HISTORY earlier done captures of this one's
 * configuration on the same device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "store/store_int.h"
#include "store/verdict_int.h"

#define FLOOR       0.01
#define MAX_HISTORY 20
#define MAX_FIGURES 20 /* figures listed beside the changes */
#define MAX_OP_GROUPS 10 /* op groups whose kernel time changed most */

/* The configuration of capture t (an SQL alias) as one JSON text. */
#define CONFIG_OF(t) STORE__CONFIG_OF(t)

/* The device of capture t's first done rank. */
#define DEVICE_OF(t)                                                           \
  "(SELECT device FROM ranks WHERE capture_id = " t ".id AND status = 'done'"  \
  " ORDER BY rank LIMIT 1)"

struct vside {
  struct store__side sd;
  json_t *steps, *cats, *fams, *kernels; /* all-ranks rows */
  struct store__figstats fs;
  struct store__steps st; /* its steps one by one */
};

struct verdict {
  int threshold;
  json_t *reasons;
  struct store__vfig *figs;
  size_t nfigs, cap;
  int regressed, improved;
  bool lined;              /* the two captures' steps line up */
  size_t steps_a, steps_b; /* their kept real steps */
};

/* ---- the baseline ---- */

/* 1 with *out when sql (?1 = id) finds a row, 0 when none. */
static int one_id(struct store *st, const char *sql, int64_t id, int64_t *out,
                  struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__first(st, sql, id, 0, "verdict", &s, err);

  if (rc == 1)
    *out = sqlite3_column_int64(s, 0);
  store__done(s);
  return rc;
}

/* The baseline of id: pinned for its configuration, else the latest done
 * of it; *source says which (NULL: none). */
static int find_baseline(struct store *st, int64_t id, int64_t *out,
                         const char **source, struct tr_err *err)
{
  int rc = one_id(st,
                  "SELECT b.capture_id FROM baselines b, captures me"
                  " JOIN captures c ON c.id = b.capture_id"
                  " WHERE me.id = ?1 AND b.capture_id != me.id"
                  " AND c.status = 'done' AND b.config = " CONFIG_OF("me"),
                  id, out, err);

  *source = rc == 1 ? "pinned" : NULL;
  if (rc == 0)
    rc = one_id(st,
                "SELECT c.id FROM captures c, captures me WHERE me.id = ?1"
                " AND c.id != me.id AND c.status = 'done'"
                " AND json_extract(me.params, '$.model') IS NOT NULL"
                " AND " CONFIG_OF("c") " = " CONFIG_OF(
                    "me") " ORDER BY c.finished_at DESC, c.id DESC LIMIT 1",
                id, out, err);
  if (rc == 1 && *source == NULL)
    *source = "latest";
  return rc < 0 ? rc : 0;
}

/* ---- the figures of a side ---- */

static int all_rows(struct store *st, enum tr_table t, int64_t id, json_t **out,
                    struct tr_err *err)
{
  struct store_query q = { .capture_id = id, .rank = -1 };
  int rc = store__sum_rows(st, t, &q, out, err);

  return rc == 1 ? store__table_live(st, t, &q, out, err) : rc;
}

static int load(struct store *st, struct vside *v, struct tr_err *err)
{
  int rc = store__side_load(st, &v->sd, -1, err);

  if (rc == 0)
    rc = all_rows(st, TR_TABLE_steps, v->sd.id, &v->steps, err);
  if (rc == 0)
    rc = all_rows(st, TR_TABLE_categories, v->sd.id, &v->cats, err);
  if (rc == 0)
    rc = all_rows(st, TR_TABLE_families, v->sd.id, &v->fams, err);
  if (rc == 0)
    rc = all_rows(st, TR_TABLE_kernels, v->sd.id, &v->kernels, err);
  if (rc == 0)
    rc = store__figstats_load(st, v->sd.id, &v->fs, err);
  if (rc == 0)
    rc = store__steps_load(st, v->sd.id, &v->st, err);
  return rc;
}

static void unload(struct vside *v)
{
  store__steps_free(&v->st);
  json_decref(v->steps);
  json_decref(v->cats);
  json_decref(v->fams);
  json_decref(v->kernels);
  store__figstats_free(&v->fs);
}

static int64_t member(json_t *row, const char *key)
{
  return json_integer_value(json_object_get(row, key));
}

static bool is_real(const char *kind)
{
  return kind != NULL && strncmp(kind, "dummy_", 6) != 0;
}

/* ---- gathering the figures ---- */

static void add_fig(struct verdict *v, const char *figure, const char *stat,
                    const char *name, double a, double b)
{
  struct store__vfig *f;

  if (v->nfigs == v->cap) {
    f = realloc(v->figs, (v->cap = v->cap ? v->cap * 2 : 32) * sizeof(*f));
    if (f == NULL)
      return; /* out of memory: the figure is left out */
    v->figs = f;
  }
  v->figs[v->nfigs++] = (struct store__vfig){
    .figure = figure, .stat = stat, .name = name, .a = a, .b = b
  };
}

static void gather_steps(struct verdict *v, const struct vside *a,
                         const struct vside *b)
{
  size_t i;
  json_t *rb;

  json_array_foreach(b->steps, i, rb) {
    const char *kind = json_string_value(json_object_get(rb, "kind"));
    json_t *ra = is_real(kind) ? tr_row_find(a->steps, "kind", kind) : NULL;

    if (ra != NULL && member(ra, "steady_count") > 0 &&
        member(rb, "steady_count") > 0)
      add_fig(v, "step_p50", "step", kind, (double)member(ra, "steady_p50_ns"),
              (double)member(rb, "steady_p50_ns"));
  }
}

/* The device time per real step of a side (its categories summed). */
static double device_per_step(const struct vside *s)
{
  double total = 0;
  size_t i;
  json_t *row;

  json_array_foreach(s->cats, i, row)
    total += (double)member(row, "total_ns");
  return total / (double)s->sd.real_steps;
}

static double per_step(json_t *row, const struct vside *s)
{
  return row ? (double)member(row, "total_ns") / (double)s->sd.real_steps
             : -1.0;
}

static bool tracked(const struct store__figstats *fs, const char *figure,
                    const char *name)
{
  for (size_t i = 0; i < fs->n; i++)
    if (strcmp(fs->v[i].figure, figure) == 0 &&
        strcmp(fs->v[i].name, name) == 0)
      return true;
  return false;
}

/* The rows of one grouping (categories, families or kernels, by key) per
 * real step, over both sides' keys; one_side: a key on one side only is
 * a figure (else left out), kernels: only those tracked per step. */
static void gather_totals(struct verdict *v, const char *figure,
                          const char *key, json_t *rows_a, json_t *rows_b,
                          const struct vside *a, const struct vside *b,
                          bool one_side)
{
  double floor_a = FLOOR * device_per_step(a);
  double floor_b = FLOOR * device_per_step(b);
  json_t *sides[2] = { rows_b, rows_a }, *row;
  bool kernels = strcmp(figure, "kernel") == 0;
  size_t i;

  for (int s = 0; s < 2; s++)
    json_array_foreach(sides[s], i, row) {
      const char *name = json_string_value(json_object_get(row, key));
      json_t *ra = s ? row : tr_row_find(rows_a, key, name);
      json_t *rb = s ? tr_row_find(rows_b, key, name) : row;
      double x = per_step(ra, a), y = per_step(rb, b);

      if (name == NULL || (s == 1 && rb != NULL) ||
          (x < floor_a && y < floor_b) ||
          (!one_side && (ra == NULL || rb == NULL)) ||
          (kernels && !tracked(&a->fs, figure, name) &&
           !tracked(&b->fs, figure, name)))
        continue;
      add_fig(v, figure, figure, name, x, y);
    }
}

/* Whether the two sides' real step kinds ("a, b", dummy_* left out)
 * are the same. */
static bool same_real_kinds(const char *x, const char *y)
{
  char a[512], b[512];
  const char *src[2] = { x, y };
  char *dst[2] = { a, b };

  for (int s = 0; s < 2; s++) {
    size_t n = 0;
    char copy[512], *save = NULL;

    snprintf(copy, sizeof(copy), "%s", src[s]);
    dst[s][0] = '\0';
    for (char *k = strtok_r(copy, ", ", &save); k != NULL;
         k = strtok_r(NULL, ", ", &save))
      if (is_real(k))
        n += (size_t)snprintf(dst[s] + n, n < 512 ? 512 - n : 0, "%s,", k);
  }
  return strcmp(a, b) == 0;
}

static const char *const blocking[] = { "different_tp", "different_device",
                                        "no_labels", "pre_taxonomy", NULL };

/* The reasons the two cannot be compared, into v; true when there is
 * one. */
static bool incomparable(struct verdict *v, const struct vside *a,
                         const struct vside *b)
{
  json_t *w = store__side_warnings(&a->sd, &b->sd), *x;
  size_t i, before = json_array_size(v->reasons);

  json_array_foreach(w, i, x) {
    const char *code = json_string_value(json_object_get(x, "code"));

    for (const char *const *c = blocking; *c != NULL; c++)
      if (strcmp(code, *c) == 0)
        json_array_append(v->reasons, x);
  }
  json_decref(w);
  if (a->sd.has_steps && b->sd.has_steps &&
      !same_real_kinds(a->sd.kinds, b->sd.kinds))
    tr_note(v->reasons, "different_label_taxonomy",
            "the real step kinds differ: baseline [%s], this one [%s]",
            a->sd.kinds, b->sd.kinds);
  if (json_array_size(v->reasons) == before &&
      (a->sd.real_steps == 0 || b->sd.real_steps == 0))
    tr_note(v->reasons, "no_real_steps",
            "%s has no prefill or decode steps to count per step by",
            a->sd.real_steps == 0 ? "the baseline" : "this capture");
  return json_array_size(v->reasons) > before;
}

static double sort_key(const struct store__vfig *f)
{
  return f->a < 0 || f->b < 0 ? INFINITY : fabs(f->diff_pct);
}

static int cmp_fig(const void *x, const void *y)
{
  const struct store__vfig *a = *(const struct store__vfig *const *)x;
  const struct store__vfig *b = *(const struct store__vfig *const *)y;
  double ka = sort_key(a), kb = sort_key(b);
  int d;

  if (ka != kb)
    return ka > kb ? -1 : 1;
  d = strcmp(a->figure, b->figure);
  return d ? d : strcmp(a->name, b->name);
}

/* The changes (full) and the figures (short, at most MAX_FIGURES), each
 * largest |difference| first (unknown first), then figure and name. */
static void listed(const struct verdict *v, json_t **changes, json_t **figs)
{
  const struct store__vfig **o = calloc(v->nfigs + 1, sizeof(*o));
  size_t nf = 0;

  *changes = json_array();
  *figs = json_array();
  for (size_t i = 0; o != NULL && i < v->nfigs; i++)
    o[i] = &v->figs[i];
  if (o != NULL)
    qsort(o, v->nfigs, sizeof(*o), cmp_fig);
  for (size_t i = 0; o != NULL && i < v->nfigs; i++) {
    if (o[i]->change != 0)
      json_array_append_new(*changes,
                            store__vfig_json(o[i], v->threshold, true));
    if (nf++ < MAX_FIGURES)
      json_array_append_new(*figs, store__vfig_json(o[i], v->threshold, false));
  }
  free(o);
}

/* The largest noise band of the step times (step_noise_pct). */
static double step_noise(const struct verdict *v)
{
  double n = 0;

  for (size_t i = 0; i < v->nfigs; i++)
    if (strcmp(v->figs[i].figure, "step_p50") == 0)
      n = fmax(n, v->figs[i].noise_pct);
  return n;
}

/* The comparison of b with a into v. */
static void compare(struct verdict *v, const struct vside *a,
                    const struct vside *b, const struct store__judge *j)
{
  gather_steps(v, a, b);
  gather_totals(v, "category", "category", a->cats, b->cats, a, b, true);
  gather_totals(v, "family", "family", a->fams, b->fams, a, b, true);
  gather_totals(v, "kernel", "name", a->kernels, b->kernels, a, b, false);
  store__judge_run(j, v->figs, v->nfigs);
  for (size_t i = 0; i < v->nfigs; i++) {
    v->regressed += v->figs[i].change > 0;
    v->improved += v->figs[i].change < 0;
  }
  if (v->regressed > 0)
    tr_note(v->reasons, "regressed",
            "%d of %zu figures are slower beyond max(%d%%, their noise band)",
            v->regressed, v->nfigs, v->threshold);
  else if (v->improved > 0)
    tr_note(v->reasons, "improved",
            "%d of %zu figures are faster beyond max(%d%%, their noise "
            "band), none slower",
            v->improved, v->nfigs, v->threshold);
  else
    tr_note(v->reasons, "unchanged",
            "no change beyond max(%d%%, each figure's noise band) over %zu "
            "figures",
            v->threshold, v->nfigs);
}

static const char *decide(const struct verdict *v, bool comparable)
{
  if (!comparable)
    return "incomparable";
  return v->regressed ? "regressed" : v->improved ? "improved" : "unchanged";
}

/* ---- the history ---- */

struct history {
  struct store__figstats *fs;
  struct store__steps *st;
  bool *lined; /* st[i] lines up with the baseline's steps */
  size_t n;
  json_t *ids;
};

/* The earlier done captures of id's configuration on its device (done
 * before it, when it is done), newest first, at most MAX_HISTORY, with
 * their figures. */
static int history_load(struct store *st, int64_t id, struct history *h,
                        struct tr_err *err)
{
  json_t *rows = NULL, *row;
  size_t i;
  int rc = store__rows_id(
      st,
      "SELECT c.id AS id FROM captures c, captures me WHERE me.id = ?1"
      " AND c.id != me.id AND c.status = 'done'"
      " AND json_extract(me.params, '$.model') IS NOT NULL"
      " AND " CONFIG_OF("c") " = " CONFIG_OF("me") " AND " DEVICE_OF(
          "c") " IS " DEVICE_OF("me") " AND (me.status != 'done'"
                                      " OR (c.finished_at, c.id) <"
                                      " (me.finished_at, me.id))"
                                      " ORDER BY c.finished_at DESC, c.id DESC"
                                      " LIMIT 20",
      id, 0, &rows, err);

  memset(h, 0, sizeof(*h));
  h->ids = json_array();
  if (rc == 0 &&
      ((h->fs = calloc(json_array_size(rows) + 1, sizeof(*h->fs))) == NULL ||
       (h->st = calloc(json_array_size(rows) + 1, sizeof(*h->st))) == NULL ||
       (h->lined = calloc(json_array_size(rows) + 1, sizeof(bool))) == NULL))
    rc = tr_err_set(err, TR_ENOMEM, "", "history: out of memory");
  json_array_foreach(rows, i, row) {
    if (rc != 0)
      break;
    rc = store__figstats_load(st, member(row, "id"), &h->fs[h->n], err);
    if (rc == 0 && h->fs[h->n].n > 0)
      rc = store__steps_load(st, member(row, "id"), &h->st[h->n], err);
    if (rc == 0 && h->fs[h->n].n > 0) {
      json_array_append(h->ids, json_object_get(row, "id"));
      h->n++;
    } else if (rc == 0) {
      store__figstats_free(&h->fs[h->n]);
    }
  }
  json_decref(rows);
  return rc;
}

static void history_free(struct history *h)
{
  for (size_t i = 0; i < h->n; i++) {
    store__figstats_free(&h->fs[i]);
    store__steps_free(&h->st[i]);
  }
  free(h->fs);
  free(h->st);
  free(h->lined);
  json_decref(h->ids);
}

/* ---- the verdict ---- */

/* Which test the figures had (test, test_note): step by step when the
 * steps line up, else by strata of steps of the same work. */
static void test_used(const struct verdict *v, bool comparable, json_t *o)
{
  char note[256];

  if (!comparable) {
    json_object_set_new(o, "test", json_null());
    json_object_set_new(o, "test_note", json_null());
    return;
  }
  if (v->lined)
    snprintf(note, sizeof(note),
             "the steps line up (%zu steps kept: the same kinds, batch sizes "
             "and tokens in the same order): each figure compared step by "
             "step, the paired differences' trimmed mean",
             v->steps_a);
  else
    snprintf(note, sizeof(note),
             "the steps do not line up (%zu steps kept here, %zu in the "
             "baseline): each figure compared over steps of the same kind and "
             "batch size, bucket by bucket",
             v->steps_b, v->steps_a);
  json_object_set_new(o, "test",
                      json_string(v->lined ? "paired_steps" : "buckets"));
  json_object_set_new(o, "test_note", json_string(note));
}

static json_t *answer(struct verdict *v, int64_t id, int64_t base,
                      const char *source, bool comparable,
                      const struct history *h, json_t *op_groups)
{
  json_t *changes, *figs, *o;

  listed(v, &changes, &figs);
  o = json_pack("{s:I,s:o,s:s?,s:s,s:O,s:i,s:f,s:i,s:o,s:o,s:{s:I,s:O},s:f}",
                "capture", (json_int_t)id, "baseline",
                base > 0 ? json_integer(base) : json_null(), "baseline_source",
                source, "verdict", decide(v, comparable), "reasons", v->reasons,
                "threshold_pct", v->threshold, "step_noise_pct",
                round(step_noise(v) * 1000.0) / 1000.0, "compared",
                (int)v->nfigs, "changes", changes, "figures", figs, "history",
                "captures", (json_int_t)h->n, "ids", h->ids, "alpha", 0.05);
  if (o != NULL)
    test_used(v, comparable, o);
  if (o != NULL)
    json_object_set_new(o, "op_groups", op_groups ? op_groups : json_array());
  else
    json_decref(op_groups);
  return o;
}

static void verdict_free(struct verdict *v)
{
  for (size_t i = 0; i < v->nfigs; i++)
    json_decref(v->figs[i].buckets);
  free(v->figs);
  json_decref(v->reasons);
}

/* The verdict of id against base (0: none), inside the caller's
 * transaction. */
static int judge_capture(struct store *st, int64_t id, int64_t base,
                         const char *source, bool finishing, int threshold,
                         json_t **out, struct tr_err *err)
{
  struct vside a = { .sd = { .id = base, .field = "baseline" } };
  struct vside b = {
    .sd = { .id = id, .field = "this run", .finishing = finishing }
  };
  struct verdict v = { .threshold = threshold, .reasons = json_array() };
  struct history h = { 0 };
  json_t *groups = NULL;
  bool comparable = false;
  /* Without a baseline nothing of this run is compared: its rows (a
   * JSON object per family, ten thousand for a trace at the name cap)
   * are not read. */
  int rc = base > 0 ? load(st, &b, err) : 0;

  if (rc == 0 && base > 0)
    rc = load(st, &a, err);
  if (rc == 0 && base <= 0)
    tr_note(v.reasons, "no_baseline",
            "no baseline: no capture is pinned for this configuration and "
            "no other done one has it (an import needs a model to have one)");
  else if (rc == 0)
    comparable = !incomparable(&v, &a, &b);
  if (rc == 0)
    rc = history_load(st, id, &h, err);
  if (rc == 0 && comparable) {
    struct store__judge j = { .a = &a.fs,
                              .b = &b.fs,
                              .sa = &a.st,
                              .sb = &b.st,
                              .lined = store__steps_line_up(&a.st, &b.st),
                              .hist = h.fs,
                              .shist = h.st,
                              .hist_lined = h.lined,
                              .nhist = h.n,
                              .threshold = threshold };

    for (size_t i = 0; i < h.n; i++)
      h.lined[i] = store__steps_line_up(&a.st, &h.st[i]);
    v.lined = j.lined;
    v.steps_a = a.st.n;
    v.steps_b = b.st.n;
    compare(&v, &a, &b, &j);
    /* The op groups' achieved rates (docs/PERF.md): shown beside the
     * figures, not judged (a capture keeps no per-step samples of them to
     * give their noise). */
    rc = store__diff_rows(st, "perf", true, &a.sd, &b.sd, -1, NULL,
                          MAX_OP_GROUPS, &groups, err);
  }
  if (rc == 0)
    *out = answer(&v, id, base, source, comparable, &h, groups);
  verdict_free(&v);
  history_free(&h);
  unload(&a);
  unload(&b);
  return rc;
}

int store__verdict_finish(struct store *st, int64_t id, int threshold,
                          json_t **out, struct tr_err *err)
{
  const char *source = NULL;
  int64_t base = 0;
  int rc = find_baseline(st, id, &base, &source, err);

  return rc == 0
             ? judge_capture(st, id, base, source, true, threshold, out, err)
             : rc;
}

/* Whether id is pinned as its configuration's baseline. */
static int pinned(struct store *st, int64_t id, bool *out, struct tr_err *err)
{
  int64_t any = 0;
  int rc = one_id(st, "SELECT capture_id FROM baselines WHERE capture_id = ?1",
                  id, &any, err);

  *out = rc == 1;
  return rc < 0 ? rc : 0;
}

static int stored_verdict(struct store *st, int64_t id, json_t **out,
                          struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__first(st,
                        "SELECT verdict FROM capture_results"
                        " WHERE capture_id = ?1 AND verdict IS NOT NULL",
                        id, 0, "verdict", &s, err);

  if (rc == 1)
    *out = store__col_json(s, 0);
  store__done(s);
  return rc < 0 ? rc : rc == 0; /* 1: none */
}

static int verdict_in(struct store *st, int64_t id, int64_t base, int threshold,
                      json_t **out, struct tr_err *err)
{
  const char *source = "asked";
  char status[16], name[STORE_NAME_MAX];
  bool pin = false;
  int rc = store__capture_exists(st, id, status, err);

  if (rc == 0 && strcmp(status, "done") != 0)
    rc = tr_err_set(err, TR_ECONFLICT, "id",
                    "capture %s is %s: a verdict is made when it is done",
                    store__capture_name(st, id, name), status);
  if (rc == 0 && base == 0 && (rc = stored_verdict(st, id, out, err)) == 1)
    rc = find_baseline(st, id, &base, &source, err) == 0 ? 1 : TR_EDB;
  if (rc == 1 || (rc == 0 && base > 0))
    rc = judge_capture(st, id, base, source, false, threshold, out, err);
  if (rc == 0)
    rc = pinned(st, id, &pin, err);
  if (rc == 0)
    json_object_set_new(*out, "pinned", json_boolean(pin));
  return rc;
}

int store_verdict(struct store *st, int64_t id, int64_t baseline, int threshold,
                  json_t **out, struct tr_err *err)
{
  json_t *v = NULL;
  int rc = baseline == id
               ? tr_err_set(err, TR_EINVAL, "baseline",
                            "baseline must be another capture than %lld",
                            (long long)id)
               : store__rd_begin(st, err);

  if (rc < 0)
    return rc;
  rc = verdict_in(st, id, baseline, threshold, &v, err);
  rc = store__rd_end(st, rc, err);
  if (rc < 0) {
    json_decref(v);
    return rc;
  }
  *out = v;
  return 0;
}

int store_baseline_set(struct store *st, int64_t id, bool pin, json_t **out,
                       struct tr_err *err)
{
  char status[16];
  int rc = store__wr_begin(st, err);

  if (rc < 0)
    return rc;
  rc = store__capture_exists(st, id, status, err);
  if (rc == 0 && pin && strcmp(status, "done") != 0)
    rc = tr_err_set(err, TR_ECONFLICT, "id",
                    "capture %lld is %s: only a done capture can be a "
                    "baseline",
                    (long long)id, status);
  if (rc == 0)
    rc = store__run(st, "baseline",
                    pin ? "INSERT OR REPLACE INTO baselines(config,"
                          " capture_id, pinned_at) SELECT " CONFIG_OF(
                              "c") ", c.id, ?2 FROM captures c WHERE c.id = ?1"
                        : "DELETE FROM baselines WHERE capture_id = ?1",
                    err, pin ? "%ld%ld" : "%ld", id, tr_now_ns());
  rc = store__wr_end(st, rc, err);
  if (rc == 0)
    *out = json_pack("{s:I,s:b}", "capture", (json_int_t)id, "pinned", pin);
  return rc;
}

int store_verdict_metrics(struct store *st, json_t **out, struct tr_err *err)
{
  json_t *counts = NULL, *latest = NULL;
  int rc = store__rd_begin(st, err);

  if (rc == 0)
    rc = store__rows_of(st,
                        "SELECT r.verdict_code AS verdict, count(*) AS n"
                        " FROM capture_results r JOIN captures c"
                        " ON c.id = r.capture_id WHERE c.status = 'done'"
                        " AND r.verdict_code IS NOT NULL GROUP BY 1",
                        &counts, err);
  if (rc == 0)
    rc = store__rows_of(
        st,
        "WITH v AS (SELECT c.id, " CONFIG_OF(
            "c") " AS config,"
                 " r.verdict_code AS verdict, c.finished_at FROM captures c"
                 " JOIN capture_results r ON r.capture_id = c.id"
                 " WHERE c.status = 'done' AND r.verdict_code IS NOT NULL"
                 " AND json_extract(c.params, '$.model') IS NOT NULL),"
                 " k AS (SELECT *, row_number() OVER (PARTITION BY config"
                 " ORDER BY finished_at DESC, id DESC) AS nth FROM v)"
                 " SELECT config AS config_json, verdict, id AS capture FROM k"
                 " WHERE nth = 1 ORDER BY finished_at DESC, id DESC LIMIT 100",
        &latest, err);
  rc = store__rd_end(st, rc, err);
  if (rc == 0) {
    json_t *by = json_object(), *row;
    size_t i;

    json_array_foreach(counts, i, row)
      json_object_set(by, json_string_value(json_object_get(row, "verdict")),
                      json_object_get(row, "n"));
    *out = json_pack("{s:o,s:O}", "counts", by, "latest", latest);
  }
  json_decref(counts);
  json_decref(latest);
  return rc;
}
