/*
 * Regression verdicts (issue 10): a finished capture or import compared
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
 * warns of a different TP or device, of a run without labels or of labels
 * that predate the taxonomy, when the real (not dummy_*) step kinds differ
 * (another label taxonomy: ATOM's draft against propose_eagle), or when a
 * run has no real (prefill, decode) steps to count per step by.
 *
 * Else, what is compared:
 *   step_p50, step_p99   per real step kind, the steady state's p50 (with
 *                        at least MIN_P50 steady steps per rank on both
 *                        sides) and p99 (MIN_P99); all ranks: the largest
 *                        of the ranks' (the straggler sets the pace);
 *   category, family     the time per real step: all ranks' total over
 *                        the real step count (/diff's norm=per_step),
 *                        where either side spends at least FLOOR of its
 *                        device time per step there; a family only on
 *                        one side is a change of unknown size.
 * A change counts when |delta| passes max(regression_threshold_pct, the
 * noise band): Z standard errors of the difference, estimated from the
 * step-time spread of the steady state, sigma = (p90 - p50) / 1.2816 (a
 * normal distribution's), n = steady steps per rank: a p50's error is
 * 1.2533 sigma / sqrt(n), a p99's 3.734 sigma / sqrt(n); a time per step
 * has the relative error sqrt(sum_k n_k sigma_k^2) / sum_k n_k mean_k over
 * the real kinds. Slower: regressed; else faster: improved; else
 * unchanged.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "store/store_int.h"

#define Z          3.0
#define SE_P50     1.2533
#define SE_P99     3.734
#define P90_SIGMAS 1.2816
#define MIN_P50    5
#define MIN_P99    20
#define FLOOR      0.01

/* The configuration of capture t (an SQL alias) as one JSON text. */
#define CONFIG_OF(t)                                                           \
  "json_array(json_extract(" t ".params, '$.model'),"                          \
  " coalesce(json_extract(" t ".params, '$.tp'), (SELECT count(*) FROM ranks"  \
  "  WHERE capture_id = " t ".id AND status = 'done')),"                       \
  " json_extract(" t ".params, '$.isl'), json_extract(" t ".params, '$.osl')," \
  " json_extract(" t ".params, '$.conc'),"                                     \
  " json_extract(" t ".params, '$.variant'),"                                  \
  " coalesce(json_extract(" t ".params, '$.more'), 0))"

struct vside {
  struct store__side sd;
  json_t *steps, *cats, *fams; /* all-ranks rows */
};

struct verdict {
  int threshold;
  json_t *reasons, *changes;
  int compared, regressed, improved;
};

/* ---- the baseline ---- */

/* 1 with *out when sql (?1 = id) finds a row, 0 when none. */
static int one_id(struct store *st, const char *sql, int64_t id, int64_t *out,
                  struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__stmt_id(st, sql, id, 0, &s, err);

  if (rc < 0)
    return rc;
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    *out = sqlite3_column_int64(s, 0);
  rc = rc == SQLITE_ROW    ? 1
       : rc == SQLITE_DONE ? 0
                           : store__db_err(st, "verdict", err);
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
  return rc;
}

static void unload(struct vside *v)
{
  json_decref(v->steps);
  json_decref(v->cats);
  json_decref(v->fams);
}

static int64_t member(json_t *row, const char *key)
{
  return json_integer_value(json_object_get(row, key));
}

static bool is_real(const char *kind)
{
  return kind != NULL && strncmp(kind, "dummy_", 6) != 0;
}

/* A step row's spread and its steady steps per rank. */
static double sigma_of(json_t *row)
{
  int64_t d = member(row, "steady_p90_ns") - member(row, "steady_p50_ns");

  return d > 0 ? (double)d / P90_SIGMAS : 0.0;
}

static double per_rank(json_t *row)
{
  int64_t ranks = member(row, "ranks");

  return (double)member(row, "steady_count") / (double)(ranks > 0 ? ranks : 1);
}

/* The relative standard error of a time per real step. */
static double step_noise(json_t *steps)
{
  double var = 0, total = 0;
  size_t i;
  json_t *row;

  json_array_foreach(steps, i, row) {
    double n = per_rank(row), sd = sigma_of(row);

    if (!is_real(json_string_value(json_object_get(row, "kind"))) || n <= 0)
      continue;
    var += n * sd * sd;
    total += n * (double)member(row, "steady_total_ns") /
             (double)member(row, "steady_count");
  }
  return total > 0 ? sqrt(var) / total : 0.0;
}

static json_t *row_of(json_t *rows, const char *key, const char *name)
{
  size_t i;
  json_t *row;

  json_array_foreach(rows, i, row) {
    const char *k = json_string_value(json_object_get(row, key));

    if (k != NULL && strcmp(k, name) == 0)
      return row;
  }
  return NULL;
}

/* ---- judging ---- */

static double round3(double x)
{
  return round(x * 1000.0) / 1000.0;
}

static json_t *ns_or_null(double v)
{
  return v >= 0 ? json_integer((json_int_t)llround(v)) : json_null();
}

/* One figure, a of the baseline and b, in ns (negative: absent on that
 * side); band: its noise band in percent. */
static void judge(struct verdict *v, const char *figure, const char *name,
                  double a, double b, double band)
{
  double limit = band > v->threshold ? band : v->threshold;
  bool known = a > 0 && b >= 0;
  double delta = known ? (b - a) * 100.0 / a : 0.0;
  bool slower = a < 0 || (b >= 0 && b > a);

  v->compared++;
  if (a >= 0 && b >= 0 && (a == b || (known && fabs(delta) <= limit)))
    return;
  *(slower ? &v->regressed : &v->improved) += 1;
  json_array_append_new(
      v->changes,
      json_pack("{s:s,s:s,s:o,s:o,s:o,s:f,s:s}", "figure", figure, "name", name,
                "baseline", ns_or_null(a), "value", ns_or_null(b), "delta_pct",
                known ? json_real(round3(delta)) : json_null(), "band_pct",
                round3(limit), "change", slower ? "regressed" : "improved"));
}

static void compare_step(struct verdict *v, json_t *ra, json_t *rb,
                         const char *kind)
{
  static const struct {
    const char *figure, *col;
    double se;
    int min;
  } stats[] = { { "step_p50", "steady_p50_ns", SE_P50, MIN_P50 },
                { "step_p99", "steady_p99_ns", SE_P99, MIN_P99 } };
  double na = per_rank(ra), nb = per_rank(rb);
  double sa = sigma_of(ra), sb = sigma_of(rb);

  for (size_t i = 0; i < 2; i++) {
    double a = (double)member(ra, stats[i].col);
    double b = (double)member(rb, stats[i].col);
    double se = stats[i].se * sqrt(sa * sa / na + sb * sb / nb);

    if (na < stats[i].min || nb < stats[i].min)
      continue;
    judge(v, stats[i].figure, kind, a, b, a > 0 ? Z * se * 100.0 / a : 0.0);
  }
}

static void compare_steps(struct verdict *v, const struct vside *a,
                          const struct vside *b)
{
  size_t i;
  json_t *rb;

  json_array_foreach(b->steps, i, rb) {
    const char *kind = json_string_value(json_object_get(rb, "kind"));
    json_t *ra = is_real(kind) ? row_of(a->steps, "kind", kind) : NULL;

    if (ra != NULL)
      compare_step(v, ra, rb, kind);
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

/* The rows of one grouping (categories or families, by key) per real
 * step, over both sides' keys. */
static void compare_totals(struct verdict *v, const char *figure,
                           const char *key, json_t *rows_a, json_t *rows_b,
                           const struct vside *a, const struct vside *b,
                           double band)
{
  double floor_a = FLOOR * device_per_step(a);
  double floor_b = FLOOR * device_per_step(b);
  json_t *sides[2] = { rows_b, rows_a }, *row;
  size_t i;

  for (int s = 0; s < 2; s++)
    json_array_foreach(sides[s], i, row) {
      const char *name = json_string_value(json_object_get(row, key));
      json_t *ra = s ? row : row_of(rows_a, key, name);
      json_t *rb = s ? row_of(rows_b, key, name) : row;
      double x = per_step(ra, a), y = per_step(rb, b);

      if (name == NULL || (s == 1 && rb != NULL) ||
          (x < floor_a && y < floor_b))
        continue;
      judge(v, figure, name, x, y, band);
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

static int cmp_change(const void *x, const void *y)
{
  json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
  json_t *da = json_object_get(a, "delta_pct"),
         *db = json_object_get(b, "delta_pct");
  double fa = json_is_null(da) ? INFINITY : fabs(json_real_value(da));
  double fb = json_is_null(db) ? INFINITY : fabs(json_real_value(db));

  if (fa != fb)
    return fa > fb ? -1 : 1;
  return strcmp(json_string_value(json_object_get(a, "name")),
                json_string_value(json_object_get(b, "name")));
}

/* changes sorted by |delta| (unknown first), then name. */
static json_t *sorted_changes(json_t *changes)
{
  size_t n = json_array_size(changes);
  json_t **v = calloc(n + 1, sizeof(*v)), *out = json_array();

  for (size_t i = 0; v != NULL && i < n; i++)
    v[i] = json_array_get(changes, i);
  if (v != NULL && n > 0)
    qsort(v, n, sizeof(*v), cmp_change);
  for (size_t i = 0; v != NULL && i < n; i++)
    json_array_append(out, v[i]);
  free(v);
  return out;
}

/* The comparison of b with a into v; the noise of a time per step. */
static double compare(struct verdict *v, const struct vside *a,
                      const struct vside *b)
{
  double ra = step_noise(a->steps), rb = step_noise(b->steps);
  double band = Z * sqrt(ra * ra + rb * rb) * 100.0;

  compare_steps(v, a, b);
  compare_totals(v, "category", "category", a->cats, b->cats, a, b, band);
  compare_totals(v, "family", "family", a->fams, b->fams, a, b, band);
  if (v->regressed > 0)
    tr_note(v->reasons, "regressed",
            "%d of %d figures are slower beyond max(%d%%, the noise band)",
            v->regressed, v->compared, v->threshold);
  else if (v->improved > 0)
    tr_note(v->reasons, "improved",
            "%d of %d figures are faster beyond max(%d%%, the noise band), "
            "none slower",
            v->improved, v->compared, v->threshold);
  else
    tr_note(v->reasons, "unchanged",
            "no change beyond max(%d%%, the noise band) over %d figures",
            v->threshold, v->compared);
  return band;
}

static const char *decide(const struct verdict *v, bool comparable)
{
  if (!comparable)
    return "incomparable";
  return v->regressed ? "regressed" : v->improved ? "improved" : "unchanged";
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
  struct verdict v = { threshold, json_array(), json_array(), 0, 0, 0 };
  bool comparable = false;
  double band = 0;
  int rc = load(st, &b, err);

  if (rc == 0 && base > 0)
    rc = load(st, &a, err);
  if (rc == 0 && base <= 0)
    tr_note(v.reasons, "no_baseline",
            "no baseline: no capture is pinned for this configuration and "
            "no other done one has it (an import needs a model to have one)");
  else if (rc == 0)
    comparable = !incomparable(&v, &a, &b);
  if (rc == 0 && comparable)
    band = compare(&v, &a, &b);
  if (rc == 0)
    *out = json_pack(
        "{s:I,s:o,s:s?,s:s,s:o,s:i,s:f,s:i,s:o}", "capture", (json_int_t)id,
        "baseline", base > 0 ? json_integer(base) : json_null(),
        "baseline_source", source, "verdict", decide(&v, comparable), "reasons",
        v.reasons, "threshold_pct", threshold, "step_noise_pct", round3(band),
        "compared", v.compared, "changes", sorted_changes(v.changes));
  else
    json_decref(v.reasons);
  json_decref(v.changes);
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
  int rc = store__stmt_id(st,
                          "SELECT verdict FROM capture_results"
                          " WHERE capture_id = ?1 AND verdict IS NOT NULL",
                          id, 0, &s, err);

  if (rc < 0)
    return rc;
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    *out = store__col_json(s, 0);
  rc = rc == SQLITE_ROW    ? 0
       : rc == SQLITE_DONE ? 1
                           : store__db_err(st, "verdict", err);
  store__done(s);
  return rc;
}

static int verdict_in(struct store *st, int64_t id, int64_t base, int threshold,
                      json_t **out, struct tr_err *err)
{
  const char *source = "asked";
  char status[16];
  bool pin = false;
  int rc = store__capture_exists(st, id, status, err);

  if (rc == 0 && strcmp(status, "done") != 0)
    rc = tr_err_set(err, TR_ECONFLICT, "id",
                    "capture %lld is %s: a verdict is made when it is done",
                    (long long)id, status);
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
  sqlite3_stmt *s;
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
    rc = store__stmt_id(
        st,
        pin ? "INSERT OR REPLACE INTO baselines(config,"
              " capture_id, pinned_at) SELECT " CONFIG_OF(
                  "c") ", c.id, ?2 FROM captures c WHERE c.id = ?1"
            : "DELETE FROM baselines WHERE capture_id = ?1",
        id, 0, &s, err);
  if (rc == 0) {
    if (pin)
      sqlite3_bind_int64(s, 2, tr_now_ns());
    rc =
        sqlite3_step(s) == SQLITE_DONE ? 0 : store__db_err(st, "baseline", err);
    store__done(s);
  }
  rc = store__wr_end(st, rc, err);
  if (rc == 0)
    *out = json_pack("{s:I,s:b}", "capture", (json_int_t)id, "pinned", pin);
  return rc;
}

int store_verdict_metrics(struct store *st, json_t **out, struct tr_err *err)
{
  json_t *counts = NULL, *latest = NULL;
  sqlite3_stmt *s;
  int rc = store__rd_begin(st, err);

  if (rc == 0)
    rc = store__stmt(st,
                     "SELECT r.verdict_code AS verdict, count(*) AS n"
                     " FROM capture_results r JOIN captures c"
                     " ON c.id = r.capture_id WHERE c.status = 'done'"
                     " AND r.verdict_code IS NOT NULL GROUP BY 1",
                     &s, err);
  if (rc == 0)
    rc = store__rows(st, s, &counts, err);
  if (rc == 0)
    rc = store__stmt(
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
        &s, err);
  if (rc == 0)
    rc = store__rows(st, s, &latest, err);
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
