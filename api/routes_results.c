/*
 * Verdicts and baselines (docs/ANALYSIS.md): GET /captures/<id>/verdict
 * (?baseline=<id> compares with any other capture or import), PUT and
 * DELETE /captures/<id>/baseline (pin as its configuration's baseline,
 * unpin: the verdict says "pinned"), and the verdict gauges of /metrics. A pin
 * changes no capture's figures: the answers kept about done captures (cache.c)
 * hold no pin, and these answers are never kept.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "common/stats.h"

enum MHD_Result api_get_verdict(struct api_req *r)
{
  struct tr_err err = { 0 };
  int64_t id = 0, baseline = 0;
  struct store *st;
  json_t *out = NULL;

  if (api_query_check(r, &err) != 0 || api_path_id(r, &id, &err) != 0 ||
      api_query_int(r, "baseline", 1, INT64_MAX, &baseline, &err) != 0 ||
      (st = api_store(r, STORE_RO, &err)) == NULL ||
      store_verdict(st, id, baseline, r->api->cfg->regression_threshold_pct,
                    &out, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(r, 200, out);
}

static enum MHD_Result set_baseline(struct api_req *r, bool pin)
{
  struct tr_err err = { 0 };
  struct store *st;
  json_t *out = NULL;
  int64_t id = 0;

  if (api_query_check(r, &err) != 0 || api_path_id(r, &id, &err) != 0 ||
      (st = api_store(r, STORE_RW, &err)) == NULL ||
      store_baseline_set(st, id, pin, &out, &err) != 0)
    return api_reply_tr_err(r, &err);
  return api_reply_json(r, 200, out);
}

enum MHD_Result api_put_baseline(struct api_req *r)
{
  return set_baseline(r, true);
}

enum MHD_Result api_delete_baseline(struct api_req *r)
{
  return set_baseline(r, false);
}

/* ---- /metrics ---- */

/* A Prometheus label value: \, " and newline escaped (exposition format
 * 0.0.4). */
static void label(FILE *f, const char *name, json_t *v, const char *sep)
{
  char num[32];
  const char *s = json_string_value(v);

  if (s == NULL) {
    snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
    s = json_is_null(v) || v == NULL ? "" : num;
  }
  fprintf(f, "%s=\"", name);
  for (; *s != '\0'; s++) {
    if (*s == '\\' || *s == '"')
      fprintf(f, "\\%c", *s);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
  fprintf(f, "\"%s", sep);
}

static void latest_gauges(FILE *f, json_t *latest)
{
  static const char *const keys[] = { "model", "tp",      "isl", "osl",
                                      "conc",  "variant", "more" };
  size_t i;
  json_t *row;

  fputs("# HELP traced_regressed 1 when the latest verdict of a "
        "configuration is regressed, else 0.\n"
        "# TYPE traced_regressed gauge\n",
        f);
  json_array_foreach(latest, i, row) {
    json_t *config = json_object_get(row, "config");

    fputs("traced_regressed{", f);
    for (size_t k = 0; k < 7; k++)
      label(f, keys[k], json_array_get(config, k), k < 6 ? "," : "");
    fprintf(f, "} %d\n",
            strcmp(json_string_value(json_object_get(row, "verdict")),
                   "regressed") == 0);
  }
}

void api_metrics_verdicts(FILE *f, struct store *st)
{
  static const char *const verdicts[] = { "regressed", "improved", "unchanged",
                                          "incomparable" };
  json_t *m = NULL;

  fprintf(f,
          "# HELP traced_webhooks_total Verdicts POSTed to webhook_url, by "
          "result.\n# TYPE traced_webhooks_total counter\n"
          "traced_webhooks_total{result=\"delivered\"} %llu\n"
          "traced_webhooks_total{result=\"failed\"} %llu\n",
          (unsigned long long)atomic_load(&tr_stats.webhooks_delivered),
          (unsigned long long)atomic_load(&tr_stats.webhooks_failed));
  if (store_verdict_metrics(st, &m, NULL) != 0)
    return;
  fputs("# HELP traced_verdicts Done captures and imports by verdict.\n"
        "# TYPE traced_verdicts gauge\n",
        f);
  for (size_t i = 0; i < 4; i++)
    fprintf(f, "traced_verdicts{verdict=\"%s\"} %lld\n", verdicts[i],
            (long long)json_integer_value(
                json_object_get(json_object_get(m, "counts"), verdicts[i])));
  latest_gauges(f, json_object_get(m, "latest"));
  json_decref(m);
}
