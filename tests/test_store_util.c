#include "tests/test_store_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"

void fx_db_path(char *buf, size_t size)
{
  char dir[] = "/tmp/traced_store_XXXXXX";

  CHECK(mkdtemp(dir) != NULL);
  snprintf(buf, size, "%s/t.db", dir);
}

void fx_db_remove(const char *path)
{
  static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
  char p[512], *slash;

  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
    unlink(p);
  }
  snprintf(p, sizeof(p), "%s", path);
  slash = strrchr(p, '/');
  *slash = '\0';
  rmdir(p);
}

static double share(int64_t num, int64_t den)
{
  return den > 0 ? round((double)num / (double)den * 1e6) / 1e6 : 0.0;
}

static json_int_t at(json_t *pair, size_t i)
{
  return json_integer_value(json_array_get(pair, i));
}

/* The family of a fixture kernel: its name up to a '#' ("gemm#128x64" and
 * "gemm#256x64" are family "gemm"), else the name. */
static json_t *family_of(const char *name)
{
  const char *hash = strchr(name, '#');

  return hash ? json_stringn(name, (size_t)(hash - name)) : json_string(name);
}

/* families rows: the kernels summed per family, total first. */
static json_t *family_rows(const struct fx_rank *r, int64_t kernel_ns)
{
  json_t *by = json_object(), *rows = json_array(), *v;
  const char *fam;

  for (size_t i = 0; i < r->nk; i++) {
    const struct fx_kernel *k = &r->k[i];
    json_t *f = family_of(k->name), *row;

    row = json_object_get(by, json_string_value(f));
    if (row == NULL) {
      row = json_pack("{s:O,s:s,s:i,s:i,s:i,s:I,s:I,s:I,s:I}", "family", f,
                      "category", k->category, "kernels", 0, "count", 0,
                      "total_ns", 0, "min_ns", k->min_ns, "max_ns", k->max_ns,
                      "p50_ns", k->median_ns, "p99_ns", k->max_ns);
      json_object_set_new(by, json_string_value(f), row);
    }
    json_object_set_new(row, "kernels",
                        json_integer(fx_int(row, "kernels") + 1));
    json_object_set_new(row, "count",
                        json_integer(fx_int(row, "count") + k->count));
    json_object_set_new(row, "total_ns",
                        json_integer(fx_int(row, "total_ns") + k->total_ns));
    if (k->min_ns < fx_int(row, "min_ns"))
      json_object_set_new(row, "min_ns", json_integer(k->min_ns));
    if (k->max_ns > fx_int(row, "max_ns")) {
      json_object_set_new(row, "max_ns", json_integer(k->max_ns));
      json_object_set_new(row, "p99_ns", json_integer(k->max_ns));
    }
    json_decref(f);
  }
  json_object_foreach(by, fam, v) {
    json_object_set_new(
        v, "avg_ns", json_integer(fx_int(v, "total_ns") / fx_int(v, "count")));
    json_object_set_new(v, "share",
                        json_real(share(fx_int(v, "total_ns"), kernel_ns)));
    json_array_append(rows, v);
  }
  json_decref(by);
  return rows;
}

/* kernels and launches rows, and categories summed per category. */
static void kernel_rows(const struct fx_rank *r, int64_t kernel_ns,
                        int64_t device_ns, json_t *sum)
{
  json_t *kernels = json_array(), *launches = json_array();
  json_t *cats = json_object(), *catrows = json_array();
  const char *cat;
  json_t *v;

  for (size_t i = 0; i < r->nk; i++) {
    const struct fx_kernel *k = &r->k[i];
    json_t *c = json_object_get(cats, k->category);

    json_array_append_new(
        kernels,
        json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:I}", "name",
                  k->name, "category", k->category, "count", k->count,
                  "total_ns", k->total_ns, "avg_ns", k->total_ns / k->count,
                  "min_ns", k->min_ns, "max_ns", k->max_ns, "median_ns",
                  k->median_ns, "share", share(k->total_ns, kernel_ns),
                  "first_ns", (json_int_t)i * 10, "last_ns",
                  (json_int_t)i * 10 + 5));
    json_object_set_new(json_array_get(kernels, i), "family",
                        family_of(k->name));
    json_object_set_new(json_array_get(kernels, i), "demangled", json_null());
    json_array_append_new(
        launches,
        json_pack("{s:s,s:[I,i,i],s:[i,i,i],s:i,s:n,s:I,s:I,s:I,s:I,s:I}",
                  "name", k->name, "grid", k->count, 1, 1, "block", 256, 1, 1,
                  "registers_per_thread", 64, "shared_bytes", "count", k->count,
                  "total_ns", k->total_ns, "avg_ns", k->total_ns / k->count,
                  "min_ns", k->min_ns, "max_ns", k->max_ns));
    if (c == NULL) {
      c = json_pack("[I,I]", (json_int_t)0, (json_int_t)0);
      json_object_set_new(cats, k->category, c);
    }
    json_array_set_new(c, 0, json_integer(at(c, 0) + k->count));
    json_array_set_new(c, 1, json_integer(at(c, 1) + k->total_ns));
  }
  json_object_foreach(cats, cat, v) {
    json_array_append_new(catrows,
                          json_pack("{s:s,s:I,s:I,s:f}", "category", cat,
                                    "count", at(v, 0), "total_ns", at(v, 1),
                                    "share", share(at(v, 1), device_ns)));
  }
  json_array_append_new(catrows,
                        json_pack("{s:s,s:i,s:I,s:f}", "category", "copy",
                                  "count", 1, "total_ns", r->memcpy_ns, "share",
                                  share(r->memcpy_ns, device_ns)));
  json_decref(cats);
  json_object_set_new(sum, "kernels", kernels);
  json_object_set_new(sum, "launches", launches);
  json_object_set_new(sum, "categories", catrows);
}

/* A step row's distribution: its steps all last avg_ns but the first,
 * which is the remainder (and the one warm-up step when it is slow). */
static void step_stats(json_t *row, const struct fx_step *s)
{
  int64_t avg = s->total_ns / s->count;
  int64_t first = s->total_ns - avg * (s->count - 1);
  int warm = s->count > 1 && first > 2 * avg;
  const char *keys[] = { "min_ns",        "p50_ns",        "p90_ns",
                         "p99_ns",        "max_ns",        "steady_min_ns",
                         "steady_p50_ns", "steady_p90_ns", "steady_p99_ns",
                         "steady_max_ns" };

  for (size_t i = 0; i < 10; i++)
    json_object_set_new(
        row, keys[i], json_integer(i == 4 || (i == 9 && !warm) ? first : avg));
  json_object_set_new(row, "warmup_steps", json_integer(warm));
  json_object_set_new(row, "steady_count", json_integer(s->count - warm));
  json_object_set_new(row, "steady_total_ns",
                      json_integer(s->total_ns - (warm ? first : 0)));
}

/* The analysis tables of a rank whose idle time is idle_ns: two causes,
 * two timeline buckets, and per step kind one bucket, one outlier and the
 * families' time (each family's total over the first kind). */
static void analysis_rows(const struct fx_rank *r, int64_t busy,
                          int64_t idle_ns, json_t *sum)
{
  json_t *buckets = json_array(), *outliers = json_array();
  json_t *famsteps = json_array(), *fams = json_object_get(sum, "families");
  json_t *f;
  size_t i;

  for (i = 0; i < r->ns; i++) {
    const struct fx_step *s = &r->s[i];

    json_array_append_new(
        buckets,
        json_pack("{s:s,s:s,s:i,s:i,s:I,s:i,s:f,s:I,s:I,s:I,s:I}", "kind",
                  s->kind, "dim", "bs", "lo", 1, "hi", 1, "count", s->count,
                  "padded", 1, "padded_share", 1.0 / (double)s->count, "min_ns",
                  1, "p50_ns", 2, "p99_ns", 3, "max_ns", 4));
    json_array_append_new(outliers,
                          json_pack("{s:s,s:s,s:i,s:i,s:I,s:s,s:[]}", "kind",
                                    s->kind, "role", "slowest", "index", 0,
                                    "start_ns", 0, "dur_ns", s->total_ns,
                                    "label", s->kind, "top_kernels"));
  }
  json_array_foreach(fams, i, f) {
    if (r->ns > 0)
      json_array_append_new(
          famsteps,
          json_pack("{s:O,s:s,s:O,s:O,s:I,s:I}", "family",
                    json_object_get(f, "family"), "step", r->s[0].kind, "count",
                    json_object_get(f, "count"), "total_ns",
                    json_object_get(f, "total_ns"), "steps", r->s[0].count,
                    "per_step_ns", fx_int(f, "total_ns") / r->s[0].count));
  }
  json_object_set_new(sum, "step_buckets", buckets);
  json_object_set_new(sum, "step_histogram", json_array());
  json_object_set_new(sum, "step_outliers", outliers);
  json_object_set_new(sum, "family_steps", famsteps);
  json_object_set_new(sum, "sample_figures", json_array());
  json_object_set_new(sum, "step_samples", json_array());
  json_object_set_new(sum, "idle",
                      json_pack("[{s:n,s:s,s:I},{s:n,s:s,s:I}]", "step",
                                "cause", "host_late", "idle_ns", idle_ns / 3,
                                "step", "cause", "sync", "idle_ns",
                                idle_ns - idle_ns / 3));
  json_object_set_new(sum, "timeline",
                      json_pack("[{s:i,s:i,s:i,s:I,s:{s:I},s:{},s:n},"
                                "{s:i,s:i,s:i,s:I,s:{s:I},s:{},s:n}]",
                                "index", 0, "start_ns", 0, "end_ns", 500000,
                                "busy_ns", busy / 2, "by_category", "gemm",
                                busy / 2, "steps", "step", "index", 1,
                                "start_ns", 500000, "end_ns", 1000000,
                                "busy_ns", busy - busy / 2, "by_category",
                                "gemm", busy - busy / 2, "steps", "step"));
}

/* The critical path of a rank (common/summary.h's TR_SUM_CRIT_* rows):
 * the even-indexed kernels are on the path of each step for half their
 * time, the others off it with their min_ns as slack; per step kind one
 * step (index its place, both median and slowest) of two stretches; two
 * culprits (the idle split of analysis_rows()); one sequence of the first
 * two kernels' families; the median step runs every kernel once. */
static int64_t crit_of(const struct fx_rank *r, size_t i)
{
  return i % 2 == 0 ? r->k[i].total_ns / 2 : 0;
}

static void crit_kernel_cols(json_t *row, int64_t crit, int64_t count)
{
  json_object_update_new(
      row, json_pack("{s:I,s:I,s:I,s:i,s:i,s:I,s:i,s:i}", "critical_ns", crit,
                     "launch_calls", count, "launch_call_ns", count * 100,
                     "launch_call_p50_ns", 100, "launch_call_p99_ns", 200,
                     "launch_queue_ns", count * 50, "launch_queue_p50_ns", 50,
                     "launch_queue_p99_ns", 80));
}

static json_t *path_row(json_t *row, const struct fx_step *s, bool on,
                        int64_t count, int64_t crit, int64_t slack)
{
  json_object_update_new(
      row, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "step", s->kind,
                     "steps", s->count, "steps_on", on ? s->count : 0,
                     "instances", count, "on_path", on ? count : 0,
                     "critical_ns", crit, "slack_p50_ns", slack, "slack_p99_ns",
                     slack, "slack_max_ns", slack));
  return row;
}

static void crit_paths(const struct fx_rank *r, json_t *sum)
{
  json_t *kp = json_array(), *fp = json_array(), *f;
  json_t *fams = json_object_get(sum, "families");
  size_t i;

  for (i = 0; r->ns > 0 && i < r->nk; i++)
    json_array_append_new(
        kp, path_row(json_pack("{s:s,s:o}", "name", r->k[i].name, "family",
                               family_of(r->k[i].name)),
                     &r->s[0], i % 2 == 0, r->k[i].count, crit_of(r, i),
                     i % 2 == 0 ? 0 : r->k[i].min_ns));
  json_array_foreach(fams, i, f) {
    int64_t crit = fx_int(f, "critical_ns");

    if (r->ns > 0)
      json_array_append_new(
          fp,
          path_row(json_pack("{s:O}", "family", json_object_get(f, "family")),
                   &r->s[0], crit > 0, fx_int(f, "count"), crit, 0));
  }
  json_object_set_new(sum, "kernel_paths", kp);
  json_object_set_new(sum, "family_paths", fp);
}

static void crit_steps(const struct fx_rank *r, json_t *sum)
{
  json_t *kinds = json_array(), *steps = json_array(), *segs = json_array();
  json_t *seqs = json_array(), *med = json_array();
  int64_t kernels = 0, on = 0;

  for (size_t i = 0; i < r->nk; i++) {
    kernels += r->k[i].count;
    on += i % 2 == 0 ? r->k[i].count : 0;
  }
  for (size_t i = 0; i < r->ns; i++) {
    const struct fx_step *s = &r->s[i];
    int64_t len = s->total_ns * 3 / 4;
    json_t *b = json_pack("{s:I,s:I,s:i,s:i,s:i,s:i,s:i}", "cpu_ns", len / 4,
                          "gpu_ns", len - len / 4, "comm_ns", 0, "launch_ns", 0,
                          "gap_ns", 0, "sync_ns", 0, "idle_ns", 0);
    json_t *k = json_pack(
        "{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:i,s:I}", "step", s->kind,
        "steps", s->count, "analyzed", s->count, "window_ns", s->total_ns,
        "length_ns", len, "length_p50_ns", len / s->count, "length_max_ns",
        len / s->count + 1, "kernels", kernels, "kernels_on_path", on,
        "queue_max", 2, "queue_area_ns", 100, "extent_ns", s->total_ns);
    json_t *st = json_pack(
        "{s:I,s:s,s:s,s:i,s:I,s:s,s:I,s:i,s:I,s:i,s:I,s:I,s:i,s:i,s:I,s:s,"
        "s:[[i,i],[i,i]]}",
        "index", (json_int_t)i, "step", s->kind, "label", s->kind, "start_ns",
        0, "dur_ns", s->total_ns / s->count, "status", "ok", "length_ns",
        len / s->count, "path_from_ns", 0, "path_to_ns", len / s->count,
        "events", 10, "kernels", kernels, "kernels_on_path", on, "queue_max", 2,
        "queue_area_ns", 100, "extent_ns", s->total_ns, "role",
        "median slowest", "queue", 0, 1, 10, 0);

    json_object_update(k, b);
    json_object_update_new(st, b);
    json_array_append_new(kinds, k);
    json_array_append_new(steps, st);
    for (int j = 0; j < 2; j++)
      json_array_append_new(
          segs, json_pack("{s:I,s:s,s:i,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:i}",
                          "index", (json_int_t)i, "step", s->kind, "seq", j,
                          "what", j ? (r->nk ? r->k[0].name : "none") : "step",
                          "kind", j ? "kernel" : "host", "where",
                          j ? "stream 0/7" : "thread 1/1", "bound",
                          j ? "gpu" : "cpu", "from_ns", j * len / 8, "to_ns",
                          (j + 1) * len / 8, "weight_ns", len / 8, "count", 1));
    if (r->nk >= 2) {
      json_t *a = family_of(r->k[0].name), *c = family_of(r->k[1].name);
      char seq[256];

      snprintf(seq, sizeof(seq), "%s > %s", json_string_value(a),
               json_string_value(c));
      json_array_append_new(
          seqs, json_pack("{s:s,s:i,s:s,s:I,s:I,s:I}", "step", s->kind, "n", 2,
                          "sequence", seq, "count", s->count, "total_ns",
                          r->k[0].min_ns + r->k[1].min_ns, "steps", s->count));
      json_decref(a);
      json_decref(c);
    }
    for (size_t j = 0; j < r->nk; j++)
      json_array_append_new(
          med,
          json_pack("{s:s,s:I,s:o,s:s,s:i,s:I,s:f}", "step", s->kind,
                    "position", (json_int_t)j, "family",
                    family_of(r->k[j].name), "name", r->k[j].name, "count", 1,
                    "dur_ns", r->k[j].min_ns, "share", 1.0 / (double)r->nk));
  }
  json_object_set_new(sum, "critical_kinds", kinds);
  json_object_set_new(sum, "critical_steps", steps);
  json_object_set_new(sum, "critical_segments", segs);
  json_object_set_new(sum, "kernel_sequences", seqs);
  json_object_set_new(sum, "median_sequence", med);
}

static void critical_rows(const struct fx_rank *r, int64_t idle_ns, json_t *sum)
{
  json_t *f, *k, *by_family = json_object();
  size_t i;

  json_array_foreach(json_object_get(sum, "kernels"), i, k)
    crit_kernel_cols(k, crit_of(r, i), r->k[i].count);
  /* Each family's time on the path, its kernels' summed (one pass: the
   * concurrency test's ranks have 20000 kernels). */
  for (i = 0; i < r->nk; i++) {
    json_t *fam = family_of(r->k[i].name);
    const char *name = json_string_value(fam);

    json_object_set_new(
        by_family, name,
        json_integer(json_integer_value(json_object_get(by_family, name)) +
                     crit_of(r, i)));
    json_decref(fam);
  }
  json_array_foreach(json_object_get(sum, "families"), i, f)
    crit_kernel_cols(
        f,
        json_integer_value(json_object_get(
            by_family, json_string_value(json_object_get(f, "family")))),
        fx_int(f, "count"));
  json_decref(by_family);
  crit_paths(r, sum);
  crit_steps(r, sum);
  json_object_set_new(
      sum, "idle_culprits",
      json_pack("[{s:s?,s:s,s:s,s:s,s:i,s:I,s:I,s:I},"
                "{s:s?,s:s,s:s,s:s,s:i,s:I,s:I,s:I}]",
                "step", r->ns ? r->s[0].kind : NULL, "cause", "host_late",
                "culprit", "_prepare_inputs", "culprit_kind", "python", "count",
                2, "idle_ns", idle_ns / 3, "p50_ns", idle_ns / 6, "p99_ns",
                idle_ns / 6, "step", r->ns ? r->s[0].kind : NULL, "cause",
                "sync", "culprit", "hipDeviceSynchronize", "culprit_kind",
                "runtime", "count", 1, "idle_ns", idle_ns - idle_ns / 3,
                "p50_ns", idle_ns - idle_ns / 3, "p99_ns",
                idle_ns - idle_ns / 3));
  json_object_update_new(sum, json_pack("{s:i,s:I}", "host_events", 100,
                                        "critical_path_steps",
                                        r->ns ? r->s[0].count : 0));
}

static json_t *step_rows(const struct fx_rank *r)
{
  json_t *steps = json_array();

  for (size_t i = 0; i < r->ns; i++) {
    const struct fx_step *s = &r->s[i];

    json_array_append_new(
        steps,
        json_pack("{s:s,s:I,s:I,s:I,s:I,s:i,s:I,s:s}", "kind", s->kind, "count",
                  s->count, "total_ns", s->total_ns, "avg_ns",
                  s->total_ns / s->count, "tokens", s->count * 4, "padded", 1,
                  "kernel_ns", s->total_ns / 2, "source", "gpu"));
    step_stats(json_array_get(steps, i), s);
  }
  return steps;
}

/* A rank without decode figures (common/summary.h's TR_SUM_RANK_DECODE):
 * every count 0. */
static json_t *decode_empty(void)
{
  static const char *const keys[] = {
    "capture_traces",       "capture_graphs",
    "capture_launches",     "replays",
    "replay_kernels",       "replay_ns",
    "replays_matched",      "replays_short",
    "replays_short_ns",     "missing_launches",
    "replays_unmatched",    "replays_unmatched_ns",
    "empty_graph_launches", "kernels_no_launch",
    "kernels_no_launch_ns", "kernels_no_op",
    "kernels_no_op_ns"
  };
  json_t *o = json_object();

  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    json_object_set_new(o, keys[i], json_integer(0));
  json_object_set_new(o, "unmatched_reasons", json_object());
  return o;
}

/* A rank without op groups or memory events (TR_SUM_RANK_PERF,
 * TR_SUM_RANK_MEMORY): no roof, no instances. */
static json_t *perf_empty(void)
{
  return json_pack("{s:n,s:i,s:i,s:i,s:i,s:i}", "gpu_roof", "op_instances", 0,
                   "op_unmodeled", 0, "op_instances_lost", 0, "memory_events",
                   0, "memory_untracked", 0);
}

/* Every table of the rank summary that sum lacks, empty: a table added to
 * TR_TABLE_MAP needs no edit here (docs/ARCHITECTURE.md). */
static void empty_tables(json_t *sum)
{
#define EMPTY(name, ROWS, row)                                                 \
  if (json_object_get(sum, #name) == NULL)                                     \
    json_object_set_new(sum, #name, json_array());
  TR_SUM_TABLES(EMPTY)
#undef EMPTY
}

json_t *fx_summary(int rank, const struct fx_rank *r)
{
  int64_t kernel_ns = 0, kernel_events = 0, device_ns;
  char file[64];
  json_t *sum;

  for (size_t i = 0; i < r->nk; i++) {
    kernel_ns += r->k[i].total_ns;
    kernel_events += r->k[i].count;
  }
  device_ns = kernel_ns + r->memcpy_ns;
  snprintf(file, sizeof(file), "/traces/rank_%d.pt.trace.json.gz", rank);
  sum = json_pack(
      "{s:i,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:I,s:I,s:I,"
      "s:i,s:i,s:I,s:i,s:i,s:I,s:I,s:i,s:i}",
      "rank", rank, "file", file, "format", "kineto", "file_bytes", 1000,
      "json_bytes", 9000, "events", 500, "skipped_events", 0, "t0_ns", 0,
      "span_ns", 1000000, "device", "AMD Instinct MI300X", "kernel_events",
      kernel_events, "kernel_ns", kernel_ns, "distinct_kernels",
      (json_int_t)r->nk, "memcpy_count", 1, "memcpy_bytes", 4096, "memcpy_ns",
      r->memcpy_ns, "memset_count", 0, "memset_ns", 0, "device_ns", device_ns,
      "gpu_busy_ns", device_ns, "runtime_events", 3, "runtime_ns", 300);
  json_object_update_new(
      sum, json_pack("{s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "idle_ns",
                     1000000 - device_ns, "launch_delays", 0,
                     "launch_delay_min_ns", 0, "launch_delay_p50_ns", 0,
                     "launch_delay_p99_ns", 0, "launch_delay_max_ns", 0,
                     "warmup_steps", 0, "timeline_bucket_ns", 500000));
  json_object_update_new(sum,
                         json_pack("{s:i,s:i,s:[]}", "kernel_names_folded", 0,
                                   "runtime_names_folded", 0, "warnings"));
  json_object_update_new(sum,
                         json_pack("{s:i,s:i,s:i}", "collective_events", 0,
                                   "collective_ns", 0, "exposed_comm_ns", 0));
  json_object_update_new(sum, decode_empty());
  json_object_update_new(sum, perf_empty());
  kernel_rows(r, kernel_ns, device_ns, sum);
  json_object_set_new(sum, "families", family_rows(r, kernel_ns));
  json_object_set_new(sum, "memcpy",
                      json_pack("[{s:s,s:i,s:I,s:i,s:i}]", "kind", "HtoD",
                                "count", 1, "total_ns", r->memcpy_ns, "bytes",
                                4096, "max_bytes", 4096));
  json_object_set_new(sum, "runtime",
                      json_pack("[{s:s,s:i,s:i,s:I,s:i}]", "name",
                                "hipLaunchKernel", "count", 3, "total_ns", 300,
                                "median_ns", r->runtime_median_ns, "max_ns",
                                200));
  json_object_set_new(sum, "steps", step_rows(r));
  json_object_set_new(
      sum, "phases",
      json_pack("[{s:i,s:i,s:I,s:I,s:I,s:s,s:[{s:s,s:i,s:i}],s:[]}]", "index",
                0, "start_ns", 0, "end_ns", kernel_ns, "busy_ns", kernel_ns,
                "kernel_events", kernel_events, "cause", "start", "top_kernels",
                "name", r->nk ? r->k[0].name : "none", "count", 1, "total_ns",
                1, "top_launches"));
  analysis_rows(r, device_ns, 1000000 - device_ns, sum);
  critical_rows(r, 1000000 - device_ns, sum);
  empty_tables(sum);
  CHECK(sum != NULL);
  return sum;
}

int64_t fx_capture(struct store *st, const char *model, int tp,
                   const struct fx_rank *r, size_t n)
{
  struct tr_err err = { 0 };
  json_t *params = json_pack("{s:s}", "model", model);
  int64_t id = 0;

  if (tp > 0)
    json_object_set_new(params, "tp", json_integer(tp));
  CHECK_INT(store_capture_insert(st, "capture", NULL, params, 0, &id, &err), 0);
  json_decref(params);
  for (size_t i = 0; i < n; i++) {
    json_t *sum = fx_summary((int)i, &r[i]);
    char label[32];

    snprintf(label, sizeof(label), "rank_%zu", i);
    if (store_rank_insert(st, id, (int)i, label, sum, &err) != 0) {
      fprintf(stderr, "rank insert: %s\n", err.msg);
      exit(1);
    }
    json_decref(sum);
  }
  CHECK_INT(store_capture_set_phase(st, id, "done", "done", &err), 0);
  return id;
}

int64_t fx_count(const char *path, const char *sql, int64_t p)
{
  sqlite3 *db;
  sqlite3_stmt *s;
  int64_t n;

  CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
  if (p >= 0)
    sqlite3_bind_int64(s, 1, p);
  CHECK_INT(sqlite3_step(s), SQLITE_ROW);
  n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

int64_t fx_int(json_t *obj, const char *key)
{
  json_t *v = json_object_get(obj, key);

  if (!json_is_integer(v)) {
    fprintf(stderr, "member %s missing or not an integer\n", key);
    exit(1);
  }
  return json_integer_value(v);
}
