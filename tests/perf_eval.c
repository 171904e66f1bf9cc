/*
 * The op models alone (index/perf/perf_int.h), for tests/test_perf_models.py:
 * each line of stdin is an event's text ({"name": ..., "args": {...}},
 * with "annot": an iteration annotation for the models that read one);
 * each line of stdout is the model's answer as JSON:
 *   {"model": 0|1, "category", "gflops", "bytes" (null: unknown),
 *    "maf", "prec", "params"}
 * "model": 0 when the op has none or its arguments do not fit it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/perf/perf_int.h"

static struct pf_args args;

static void answer(const char *line, size_t n)
{
  json_error_t jerr;
  json_t *ev = json_loadb(line, n, 0, &jerr), *out = json_object();
  const char *name = json_string_value(json_object_get(ev, "name"));
  const char *annot = json_string_value(json_object_get(ev, "annot"));
  struct idx_span sp[PF_MEMBERS];
  const struct pf_op *op;
  struct pf_out o;
  char *text;

  op = name ? pf_op_find(name, strlen(name)) : NULL;
  args.annot = annot;
  args.annot_n = annot ? strlen(annot) : 0;
  if (op == NULL || pf_args_spans(line, n, sp) != 0 ||
      pf_args_parse(&args, sp) != 0 || pf_model_run(op, &args, &o) != 0) {
    json_object_set_new(out, "model", json_integer(0));
  } else {
    json_object_set_new(out, "model", json_integer(1));
    json_object_set_new(out, "category", json_string(o.category));
    json_object_set_new(out, "gflops", json_real(o.flops / 1e9));
    json_object_set_new(out, "bytes",
                        o.bytes < 0 ? json_null() : json_real(o.bytes));
    json_object_set_new(out, "maf",
                        o.maf ? json_stringn(&o.maf, 1) : json_null());
    json_object_set_new(out, "prec",
                        o.prec ? json_string(o.prec) : json_null());
    json_object_set_new(out, "params", json_loadb(o.p.buf, o.p.n, 0, &jerr));
  }
  text = json_dumps(out, JSON_COMPACT);
  puts(text ? text : "{}");
  free(text);
  json_decref(out);
  json_decref(ev);
}

int main(void)
{
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;

  while ((n = getline(&line, &cap, stdin)) > 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      n--;
    answer(line, (size_t)n);
  }
  free(line);
  return 0;
}
