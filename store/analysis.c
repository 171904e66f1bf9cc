/*
 * The analysis routes whose rows are not a stored table as it is: idle
 * time by cause (and by step kind), and the utilisation timeline re-binned
 * into fewer buckets. The stored rows are the rank summary's (index/
 * agg_idle.c, agg_timeline.c); these sum them, so every figure stays exact.
 *
 * Idle: rows {cause, idle_ns, share} (by step: {step, cause, idle_ns,
 * share}, step null outside steps), share of the rank's idle_ns (all
 * ranks: of their sum, rows summed and with "ranks"); largest first.
 */
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

#define TIMELINE_DEFAULT 256

/* clang-format off */
#define IDLE_SHARE(num, den)                                               \
  "CASE WHEN " den " > 0 THEN round(CAST(" num " AS REAL) / " den ", 6)" \
  " ELSE 0.0 END AS share"
#define IDLE_FROM " FROM ranks r JOIN idle i ON i.rank_id = r.id"
#define IDLE_DEN                                                           \
  ", (SELECT sum(idle_ns) AS d FROM ranks WHERE capture_id = ?1 AND"      \
  " status = 'done' AND (?2 < 0 OR rank = ?2)) den"
#define IDLE_WHERE                                                         \
  " WHERE r.capture_id = ?1 AND r.status = 'done' AND (?2 < 0 OR"        \
  " r.rank = ?2)"

/* By cause, or (by step) by step kind and cause; all ranks add "ranks". */
static const char idle_by_cause[] =
    "SELECT i.cause AS cause, sum(i.idle_ns) AS idle_ns, "
    IDLE_SHARE("sum(i.idle_ns)", "den.d") ", count(DISTINCT r.id) AS ranks"
    IDLE_FROM IDLE_DEN IDLE_WHERE
    " GROUP BY i.cause ORDER BY idle_ns DESC, cause";
static const char idle_by_step[] =
    "SELECT i.step AS step, i.cause AS cause, sum(i.idle_ns) AS idle_ns, "
    IDLE_SHARE("sum(i.idle_ns)", "den.d") ", count(DISTINCT r.id) AS ranks"
    IDLE_FROM IDLE_DEN IDLE_WHERE
    " GROUP BY i.step, i.cause"
    " ORDER BY i.step IS NOT NULL, step, idle_ns DESC, cause";
/* clang-format on */

static int idle_query(struct store *st, const struct store_query *q,
                      json_t **out, struct tr_err *err)
{
  bool by_step = q->by != NULL && strcmp(q->by, "step") == 0;

  return store__rows_id(st, by_step ? idle_by_step : idle_by_cause,
                        q->capture_id, q->rank, out, err);
}

/* Every rank's rows summed (q->rank -1) carry "ranks"; one rank's
 * do not. */
static int idle_rows(struct store *st, const void *ctx,
                     const struct store_query *q, json_t **out,
                     struct tr_err *err)
{
  int rc = idle_query(st, q, out, err);

  (void)ctx;
  store__rank_key(q, *out, "ranks");
  return rc;
}

/* By cause or (by step) by step kind and cause. */
const struct store__sql store__sql_idle = { idle_rows, NULL, NULL, NULL };

/* ---- the timeline ---- */

/* Adds the integer members of src into dst ({name: ns}). */
static void add_members(json_t *dst, json_t *src)
{
  const char *key;
  json_t *v;

  json_object_foreach(src, key, v) {
    json_t *have = json_object_get(dst, key);

    json_object_set_new(
        dst, key,
        json_integer(json_integer_value(have) + json_integer_value(v)));
  }
}

/* The member of steps with the largest value (ties: the name first in
 * byte order), or null. */
static json_t *main_step(json_t *steps)
{
  const char *key, *best = NULL;
  json_int_t most = 0;
  json_t *v;

  json_object_foreach(steps, key, v) {
    json_int_t ns = json_integer_value(v);

    if (ns > 0 &&
        (best == NULL || ns > most || (ns == most && strcmp(key, best) < 0))) {
      best = key;
      most = ns;
    }
  }
  return best ? json_string(best) : json_null();
}

/* One output row: the sum of the stored rows [from, to) of fine. */
static json_t *merged(json_t *fine, size_t from, size_t to)
{
  json_t *first = json_array_get(fine, from);
  json_t *last = json_array_get(fine, to - 1);
  json_t *cats = json_object(), *steps = json_object();
  json_int_t busy = 0;

  for (size_t i = from; i < to; i++) {
    json_t *r = json_array_get(fine, i);

    busy += json_integer_value(json_object_get(r, "busy_ns"));
    add_members(cats, json_object_get(r, "by_category"));
    add_members(steps, json_object_get(r, "steps"));
  }
  return json_pack("{s:O,s:O,s:I,s:o,s:o,s:o}", "start_ns",
                   json_object_get(first, "start_ns"), "end_ns",
                   json_object_get(last, "end_ns"), "busy_ns", busy,
                   "by_category", cats, "step", main_step(steps), "steps",
                   steps);
}

/* One rank's stored rows re-binned into at most n rows, appended to out
 * (each with "rank" when rank_key). */
static void rebin(json_t *fine, int n, json_t *rank_key, json_t *out)
{
  size_t total = json_array_size(fine);

  for (size_t j = 0; j < (size_t)n && j < total; j++) {
    size_t from = j * total / (size_t)n, to = (j + 1) * total / (size_t)n;
    json_t *row;

    if ((size_t)n >= total) {
      from = j;
      to = j + 1;
    }
    if (to <= from)
      continue;
    row = merged(fine, from, to);
    if (rank_key != NULL)
      json_object_set(row, "rank", rank_key);
    json_array_append_new(out, row);
  }
}

static int timeline_rows(struct store *st, const void *ctx,
                         const struct store_query *q, json_t **out,
                         struct tr_err *err)
{
  static const char sql[] =
      "SELECT r.rank AS rank, t.start_ns AS start_ns, t.end_ns AS end_ns,"
      " t.busy_ns AS busy_ns, t.by_category AS by_category_json,"
      " t.steps AS steps_json FROM ranks r JOIN timeline t"
      " ON t.rank_id = r.id WHERE r.capture_id = ?1 AND r.status = 'done'"
      " AND (?2 < 0 OR r.rank = ?2) ORDER BY r.rank, t.idx";
  int n = q->buckets > 0 ? q->buckets : TIMELINE_DEFAULT;
  json_t *all = NULL, *rank = json_array(), *row;
  size_t i;
  int rc = store__rows_id(st, sql, q->capture_id, q->rank, &all, err);

  (void)ctx;
  *out = json_array();
  /* Rows come by rank: each rank's run is re-binned on its own. */
  json_array_foreach(all, i, row) {
    json_t *key = json_object_get(json_array_get(rank, 0), "rank");

    if (key != NULL && !json_equal(key, json_object_get(row, "rank"))) {
      rebin(rank, n, q->rank < 0 ? key : NULL, *out);
      json_array_clear(rank);
    }
    json_array_append(rank, row);
  }
  if (json_array_size(rank) > 0)
    rebin(rank, n,
          q->rank < 0 ? json_object_get(json_array_get(rank, 0), "rank") : NULL,
          *out);
  json_decref(rank);
  json_decref(all);
  return rc;
}

int store__check_buckets(const struct store_query *q, struct tr_err *err)
{
  if (q->buckets < 0 || q->buckets > TR_TIMELINE_BUCKETS)
    return tr_err_set(err, TR_EINVAL, "buckets", "buckets must be 1..%d",
                      TR_TIMELINE_BUCKETS);
  return 0;
}

/* The rank's timeline re-binned into at most q->buckets rows {start_ns,
 * end_ns, busy_ns, by_category, steps, step} (sums of the stored buckets:
 * busy_ns still sums to gpu_busy_ns; step the kind covering most of the
 * row, ties by name); all ranks: every rank's rows, each with "rank". */
const struct store__sql store__sql_timeline = { timeline_rows, NULL,
                                                store__check_buckets, NULL };
