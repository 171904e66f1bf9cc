/*
 * idx_file(): the whole path source -> reader -> aggregation on real
 * traces: progress reports, the cancel flag, rank override, errors naming
 * the file, and the same summary with or without options.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index.h"
#include "tests/check.h"

static char path_buf[4096];

static const char *trace(const char *name)
{
  const char *dir = getenv("TRACES_DIR");

  snprintf(path_buf, sizeof(path_buf), "%s/%s", dir ? dir : "../shared/traces",
           name);
  return path_buf;
}

struct progress {
  int calls;
  uint64_t last;
  atomic_bool *cancel; /* set at the first report when non-NULL */
};

static void on_progress(void *ud, uint64_t file_bytes_read)
{
  struct progress *p = ud;

  CHECK(file_bytes_read >= p->last);
  p->last = file_bytes_read;
  p->calls++;
  if (p->cancel != NULL)
    atomic_store(p->cancel, true);
}

static void index_file_progress(void)
{
  const char *path = trace("tracelens__mi300_resnet_act_checkpoint.json.gz");
  struct idx_options opt = { .format = IDX_FORMAT_AUTO,
                             .rank = 5,
                             .on_progress = on_progress };
  struct progress p = { 0, 0, NULL };
  struct tr_err err = { 0 };
  json_t *out = NULL, *plain = NULL;
  struct stat st;

  opt.ud = &p;
  CHECK_INT(stat(path, &st), 0);
  CHECK_INT(idx_file(path, &opt, &out, &err), 0);
  CHECK(p.calls >= 1);
  CHECK_INT(p.last, st.st_size);
  CHECK_INT(json_integer_value(json_object_get(out, "rank")), 5);
  CHECK_INT(json_integer_value(json_object_get(out, "file_bytes")), st.st_size);
  CHECK_STR(json_string_value(json_object_get(out, "file")), path);
  CHECK_INT(idx_file(path, NULL, &plain, &err), 0);
  CHECK_INT(json_integer_value(json_object_get(plain, "rank")), 0);
  json_object_del(out, "rank");
  json_object_del(plain, "rank");
  CHECK(json_equal(out, plain));
  json_decref(out);
  json_decref(plain);
}

static void index_file_cancel(void)
{
  const char *path = trace("tracelens__xdit_flux.1_aiter_sage_profile_"
                           "trace_rank_0.json.gz");
  atomic_bool cancel = true;
  struct idx_options opt = { .format = IDX_FORMAT_AUTO,
                             .rank = -1,
                             .cancel = &cancel };
  struct tr_err err = { 0 };
  json_t *out = NULL;

  CHECK_INT(idx_file(path, &opt, &out, &err), TR_ECONFLICT);
  CHECK(out == NULL);
  CHECK(strstr(err.msg, "cancelled") != NULL);
  CHECK(strstr(err.msg, path) != NULL);
}

/* A 12 MB plain trace, cancelled from the first progress report: the
 * indexing stops there, before the end of the file. */
static void index_file_cancel_midway(void)
{
  const char *path = "test_index_file_big.json";
  atomic_bool cancel = false;
  struct progress p = { 0, 0, &cancel };
  struct idx_options opt = { .format = IDX_FORMAT_AUTO,
                             .rank = -1,
                             .on_progress = on_progress,
                             .ud = &p,
                             .cancel = &cancel };
  struct tr_err err = { 0 };
  json_t *out = NULL;
  FILE *f = fopen(path, "w");
  int i;

  CHECK(f != NULL);
  fputs("{\"traceEvents\": [", f);
  for (i = 0; i < 100000; i++)
    fprintf(f,
            "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
            "\"k%d\", \"ts\": %d, \"dur\": 1, \"args\": {\"pad\": "
            "\"%060d\"}}",
            i ? ", " : "", i % 50, i, 0);
  fputs("]}", f);
  fclose(f);
  CHECK_INT(idx_file(path, &opt, &out, &err), TR_ECONFLICT);
  CHECK(out == NULL);
  CHECK_INT(p.calls, 1);
  CHECK(p.last < 12000000);
  CHECK(strstr(err.msg, path) != NULL);
  CHECK(strstr(err.msg, "cancelled") != NULL);
  remove(path);
}

static void index_file_errors(void)
{
  struct tr_err err = { 0 };
  json_t *out = NULL;

  CHECK(idx_file("/nonexistent/trace.json.gz", NULL, &out, &err) < 0);
  CHECK(out == NULL);
  CHECK(strstr(err.msg, "/nonexistent/trace.json.gz") != NULL);
}

static void index_file_rules(void)
{
  const char *path = trace("tracelens__torch_compile_triton_trace.json.gz");
  const char *rules_path = "test_index_file.rules";
  struct idx_options opt = { .format = IDX_FORMAT_KINETO, .rank = -1 };
  struct idx_rules *rules = NULL;
  struct tr_err err = { 0 };
  json_t *out = NULL, *row;
  size_t i;
  FILE *f = fopen(rules_path, "w");

  CHECK(f != NULL);
  fputs("sync ^triton_\n", f);
  fclose(f);
  CHECK_INT(idx_rules_load(rules_path, &rules, &err), 0);
  opt.rules = rules;
  CHECK_INT(idx_file(path, &opt, &out, &err), 0);
  json_array_foreach(json_object_get(out, "kernels"), i, row)
    if (strncmp(json_string_value(json_object_get(row, "name")), "triton_",
                7) == 0)
      CHECK_STR(json_string_value(json_object_get(row, "category")), "sync");
  CHECK(json_array_size(json_object_get(out, "kernels")) > 0);
  json_decref(out);
  idx_rules_free(rules);
  remove(rules_path);
}

int main(void)
{
  RUN(index_file_progress);
  RUN(index_file_cancel);
  RUN(index_file_cancel_midway);
  RUN(index_file_errors);
  RUN(index_file_rules);
  return 0;
}
