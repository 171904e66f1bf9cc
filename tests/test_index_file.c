/*
 * idx_file(): the whole path source -> reader -> aggregation on real
 * traces: progress reports, the cancel flag, rank override, errors naming
 * the file, and the same summary with or without options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index.h"
#include "common/reals.h"
#include "tests/check.h"

static char path_buf[4096];

static const char *trace_into(char *buf, size_t size, const char *name)
{
  const char *dir = getenv("TRACES_DIR");

  snprintf(buf, size, "%s/%s", dir ? dir : "../shared/traces", name);
  return buf;
}

static const char *trace(const char *name)
{
  return trace_into(path_buf, sizeof(path_buf), name);
}

struct progress {
  int calls;
  uint64_t last;
  atomic_bool *cancel; /* set at the first report of `at` bytes or more
                          when non-NULL */
  uint64_t at;
};

static void on_progress(void *ud, uint64_t file_bytes_read)
{
  struct progress *p = ud;

  CHECK(file_bytes_read >= p->last);
  p->last = file_bytes_read;
  p->calls++;
  if (p->cancel != NULL && file_bytes_read >= p->at)
    atomic_store(p->cancel, true);
}

static void index_file_progress(void)
{
  const char *path = trace("tracelens__mi300_resnet_act_checkpoint.json.gz");
  struct idx_options opt = { .format = IDX_FORMAT_AUTO,
                             .rank = 5,
                             .on_progress = on_progress };
  struct progress p = { 0, 0, NULL, 0 };
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

/* A plain trace of n kernels of 50 names, each with pad bytes of
 * argument, started at (i * stride) % n microseconds. */
static void write_kernels(const char *path, int n, int pad, int stride)
{
  FILE *f = fopen(path, "w");

  CHECK(f != NULL);
  fputs("{\"traceEvents\": [", f);
  for (int i = 0; i < n; i++)
    fprintf(f,
            "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
            "\"k%d\", \"ts\": %d, \"dur\": 1, \"args\": {\"pad\": "
            "\"%0*d\"}}",
            i ? ", " : "", i % 50, (int)(((int64_t)i * stride) % n), pad, 0);
  fputs("]}", f);
  fclose(f);
}

/* idx_file() of path, cancelled from the progress report of `at` bytes
 * on; its code, with p's reports and err. */
static int index_cancelled(const char *path, uint64_t at, struct progress *p,
                           struct tr_err *err)
{
  atomic_bool cancel = false;
  struct idx_options opt = { .format = IDX_FORMAT_AUTO,
                             .rank = -1,
                             .on_progress = on_progress,
                             .ud = p,
                             .cancel = &cancel };
  json_t *out = NULL;
  int rc;

  p->cancel = &cancel;
  p->at = at;
  rc = idx_file(path, &opt, &out, err);
  CHECK(out == NULL);
  return rc;
}

/* A 12 MB plain trace, cancelled from the first progress report: the
 * indexing stops there, before the end of the file. */
static void index_file_cancel_midway(void)
{
  const char *path = "test_index_file_big.json";
  struct progress p = { 0, 0, NULL, 0 };
  struct tr_err err = { 0 };

  write_kernels(path, 100000, 60, 1);
  CHECK_INT(index_cancelled(path, 0, &p, &err), TR_ECONFLICT);
  CHECK_INT(p.calls, 1);
  CHECK(p.last < 12000000);
  CHECK(strstr(err.msg, path) != NULL);
  CHECK(strstr(err.msg, "cancelled") != NULL);
  remove(path);
}

/* 200,000 kernels out of order (their time records spill: more than the
 * 65,536 held in memory), cancelled from the report of the file's last
 * byte: the read is over, and the walks of the spilled records, seconds
 * on a big rank, stop too (agg_spill.cancel, kit.h) instead of making
 * the summary. */
static void index_file_cancel_walk(void)
{
  const char *path = "test_index_file_walk.json";
  struct progress p = { 0, 0, NULL, 0 };
  struct tr_err err = { 0 };
  struct stat st;

  write_kernels(path, 200000, 1, 7919);
  CHECK_INT(stat(path, &st), 0);
  CHECK_INT(index_cancelled(path, (uint64_t)st.st_size, &p, &err),
            TR_ECONFLICT);
  CHECK_INT(p.last, st.st_size);
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

/* One thread or two give the same summary: with two, decode's walk and
 * each step's critical path run beside the time pass (index/
 * agg_beside.c). On a trace with profiler steps and one with decode's
 * run labels and graph replays. */
static void index_file_threads(void)
{
  static const char *const names[] = {
    "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz",
    "graph_pairs/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
  };

  for (size_t i = 0; i < 2; i++) {
    struct idx_options one = { .format = IDX_FORMAT_AUTO, .rank = -1,
                               .threads = 1 };
    struct idx_options two = one;
    struct tr_err err = { 0 };
    json_t *a = NULL, *b = NULL;

    two.threads = 2;
    CHECK_INT(idx_file(trace(names[i]), &one, &a, &err), 0);
    CHECK_INT(idx_file(trace(names[i]), &two, &b, &err), 0);
    CHECK(json_array_size(json_object_get(a, "critical_steps")) > 0);
    CHECK(json_equal(a, b));
    json_decref(a);
    json_decref(b);
  }
}

/* idx_file()'s summary as `traced index` prints it (one line). */
static char *summary_line(const char *path)
{
  struct tr_err err = { 0 };
  json_t *out = NULL;
  char *text, *line;

  CHECK_INT(idx_file(path, NULL, &out, &err), 0);
  text = tr_json_dumps(out, JSON_COMPACT); /* as the command writes it */
  CHECK(text != NULL);
  CHECK(asprintf(&line, "%s\n", text) > 0);
  free(text);
  json_decref(out);
  return line;
}

/* What idx_cli_main(argv) wrote on stdout, and its status. */
static char *cli_stdout(char **argv, int argc, int *status)
{
  FILE *tmp = tmpfile();
  int saved = dup(STDOUT_FILENO);
  long n;
  char *text;

  CHECK(tmp != NULL && saved >= 0);
  fflush(stdout);
  CHECK(dup2(fileno(tmp), STDOUT_FILENO) >= 0);
  *status = idx_cli_main(argc, argv);
  fflush(stdout);
  CHECK(dup2(saved, STDOUT_FILENO) >= 0);
  close(saved);
  n = ftell(tmp);
  CHECK(n >= 0 && (text = calloc((size_t)n + 1, 1)) != NULL);
  rewind(tmp);
  CHECK_INT(fread(text, 1, (size_t)n, tmp), n);
  fclose(tmp);
  return text;
}

/* The command line writes each summary as its rows come (index/cli.c),
 * never as a whole document: its lines are byte for byte jansson's dump
 * of idx_file()'s document, in the order of the files, with one job and
 * with two, and a file that fails in between prints nothing there. */
static void index_cli_text(void)
{
  char a[4096], b[4096];
  char *want, *got, *la, *lb;
  const char *jobs[] = { "1", "2" };

  trace_into(a, sizeof(a),
             "tracelens__xdit_flux.1_aiter_sage_profile_trace_rank_0.json.gz");
  trace_into(b, sizeof(b), "graph_pairs/sglang_decode/"
                           "sglang_Qwen3-8B_decode.json.gz");
  la = summary_line(a);
  lb = summary_line(b);
  CHECK(asprintf(&want, "%s%s", la, lb) > 0);
  for (size_t j = 0; j < 2; j++) {
    char *argv[] = { "index", "--jobs", (char *)jobs[j], "--captures",
                     "none", a, "/nonexistent/trace.json.gz", b, NULL };
    int status;

    got = cli_stdout(argv, 8, &status);
    CHECK_INT(status, 1);
    CHECK_STR(got, want);
    free(got);
  }
  free(want);
  free(la);
  free(lb);
}

int main(void)
{
  RUN(index_file_progress);
  RUN(index_file_cancel);
  RUN(index_file_cancel_midway);
  RUN(index_file_cancel_walk);
  RUN(index_file_errors);
  RUN(index_file_rules);
  RUN(index_file_threads);
  RUN(index_cli_text);
  return 0;
}
