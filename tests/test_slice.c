/*
 * index/slice/slice.c and slice_json.c: the JSON mending of copied values, and
 * slices of small hand-made traces compared byte for byte with the text
 * they must give (members before and after the events, metadata events,
 * the window's edges, the reader's quirks, a bare array, traced's
 * tracks); all ranks in one timeline, byte for byte (pids, process
 * names, flow ids, a mended event, an event without pid). The real traces
 * are checked against a Python reference through the daemon
 * (tests/test_api_open.py).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/slice/slice_int.h"
#include "tests/check.h"

/* ---- output into memory ---- */

struct mem {
  char *p;
  size_t n;
};

static int mem_write(void *ud, const char *p, size_t n)
{
  struct mem *m = ud;

  m->p = realloc(m->p, m->n + n + 1);
  CHECK(m->p != NULL);
  memcpy(m->p + m->n, p, n);
  m->n += n;
  m->p[m->n] = '\0';
  return 0;
}

/* slice_json_mend() of in: its verdict, and the mended text in *out
 * (caller frees; the input itself when valid). */
static int mend(const char *in, char **out)
{
  struct slice_out *o = calloc(1, sizeof(*o));
  struct mem m = { NULL, 0 };
  int rc = slice_json_mend(in, strlen(in), NULL);

  o->write = mem_write;
  o->ud = &m;
  /* Writing, the descent judges alone: the verdict without output (its
   * fast path for strict text first) must be the same. */
  CHECK_INT(slice_json_mend(in, strlen(in), o), rc);
  slice_out_flush(o);
  free(o);
  *out = m.p != NULL ? m.p : strdup("");
  return rc;
}

static void check_mend(const char *in, int verdict, const char *want)
{
  char *got;

  CHECK_INT(mend(in, &got), verdict);
  if (verdict != SLICE_JSON_BAD)
    CHECK_STR(got, want);
  free(got);
}

static void slice_json_quirks(void)
{
  /* Strict JSON stays byte for byte, whitespace included. */
  check_mend("{\"ph\": \"X\", \"ts\": 4203669604595.407, \"args\": {\"a\":"
             " [1, -2.5e-3, true, false, null, \"\\u00e9\\n\"]}}",
             SLICE_JSON_VALID,
             "{\"ph\": \"X\", \"ts\": 4203669604595.407, \"args\": {\"a\":"
             " [1, -2.5e-3, true, false, null, \"\\u00e9\\n\"]}}");
  check_mend("{\"a\":[1,2,],\"b\":{\"c\":1 , },}", SLICE_JSON_MENDED,
             "{\"a\":[1,2],\"b\":{\"c\":1  }}");
  check_mend("{\"n\":\"a\tb\x01\"}", SLICE_JSON_MENDED,
             "{\"n\":\"a\\u0009b\\u0001\"}");
  check_mend("{\"n\":\"\xff\xc3\xa9\"}", SLICE_JSON_MENDED,
             "{\"n\":\"\\ufffd\xc3\xa9\"}");
  check_mend("{\"n\":\"a\\qb\"}", SLICE_JSON_MENDED, "{\"n\":\"a\\\\qb\"}");
  check_mend("[+5, 007, .5, 5., -0.50, 1e5, +1.5E+3]", SLICE_JSON_MENDED,
             "[5, 7, 0.5, 5, -0.50, 1e5, 1.5E+3]");
  check_mend("[NaN, Infinity, tru]", SLICE_JSON_MENDED,
             "[\"NaN\", \"Infinity\", \"tru\"]");
  check_mend("{bare: 1}", SLICE_JSON_MENDED, "{\"bare\": 1}");
  check_mend("\"\"", SLICE_JSON_VALID, "\"\"");
  check_mend(" { \"a\" : [ 1 , {} , [ ] , \"\" ] ,\n\t\"b\":{\"c\":-0}\r} ",
             SLICE_JSON_VALID,
             " { \"a\" : [ 1 , {} , [ ] , \"\" ] ,\n\t\"b\":{\"c\":-0}\r} ");
  /* Strings past sixteen bytes (read sixteen at a time), a quirk at
   * either side of the sixteenth byte. */
  check_mend("[\"0123456789abcdefghij\\u00e9\xc3\xa9\\/klmnopqrstuvwxyz\"]",
             SLICE_JSON_VALID,
             "[\"0123456789abcdefghij\\u00e9\xc3\xa9\\/klmnopqrstuvwxyz\"]");
  check_mend("[\"0123456789abcd\x01\"]", SLICE_JSON_MENDED,
             "[\"0123456789abcd\\u0001\"]");
  check_mend("[\"0123456789abcde\x80xyz\"]", SLICE_JSON_MENDED,
             "[\"0123456789abcde\\ufffdxyz\"]");
  check_mend("[\"0123456789abcdef\\x\"]", SLICE_JSON_MENDED,
             "[\"0123456789abcdef\\\\x\"]");
  check_mend("[\"0123456789abcdefghijklmnopqrstuvw", SLICE_JSON_BAD, NULL);
  check_mend("[1e5, 1E+5, 0.5e-5, -1, 0]", SLICE_JSON_VALID,
             "[1e5, 1E+5, 0.5e-5, -1, 0]");
  check_mend("[1e, 1]", SLICE_JSON_MENDED, "[\"1e\", 1]");
  check_mend("[]", SLICE_JSON_VALID, "[]");
  /* Not mendable: a missing separator, an empty value, a cut string. */
  check_mend("{\"a\" 1}", SLICE_JSON_BAD, NULL);
  check_mend("[1 2]", SLICE_JSON_BAD, NULL);
  check_mend("[1,,2]", SLICE_JSON_BAD, NULL);
  check_mend("{\"a\":}", SLICE_JSON_BAD, NULL);
  check_mend("\"abc", SLICE_JSON_BAD, NULL);
  check_mend("[1] 2", SLICE_JSON_BAD, NULL);
  check_mend("", SLICE_JSON_BAD, NULL);
}

static void slice_json_depth(void)
{
  char deep[600];

  memset(deep, '[', 300);
  memset(deep + 300, ']', 300);
  deep[600 - 1] = '\0';
  deep[599] = '\0';
  /* 300 levels: past IDX_MAX_DEPTH (256). */
  CHECK_INT(slice_json_mend(deep, 599, NULL), SLICE_JSON_BAD);
  memset(deep, '[', 200);
  memset(deep + 200, ']', 200);
  CHECK_INT(slice_json_mend(deep, 400, NULL), SLICE_JSON_VALID);
  /* IDX_MAX_DEPTH levels exactly, and one more. */
  memset(deep, '[', 256);
  memset(deep + 256, ']', 256);
  CHECK_INT(slice_json_mend(deep, 512, NULL), SLICE_JSON_VALID);
  memset(deep, '[', 257);
  memset(deep + 257, ']', 257);
  CHECK_INT(slice_json_mend(deep, 514, NULL), SLICE_JSON_BAD);
}

/* ---- slices of files ---- */

static char *write_trace(const char *text)
{
  char *path = strdup("/tmp/traced-test-slice-XXXXXX");
  int fd = mkstemp(path);

  CHECK(fd >= 0);
  CHECK((size_t)write(fd, text, strlen(text)) == strlen(text));
  close(fd);
  return path;
}

/* The slice of text for [start, end) relative to t0, without findings. */
static char *slice(const char *text, int64_t t0, int64_t start, int64_t end,
                   int findings, struct idx_slice_stats *st)
{
  struct idx_slice_opts o = { .format = IDX_FORMAT_AUTO,
                              .t0_ns = t0,
                              .start_ns = start,
                              .end_ns = end,
                              .findings = findings };
  struct tr_err err = { 0 };
  struct mem m = { NULL, 0 };
  char *path = write_trace(text);

  if (idx_slice_under(NULL, path, &o, mem_write, &m, st, &err) != 0) {
    fprintf(stderr, "slice: %s\n", err.msg);
    exit(1);
  }
  unlink(path);
  free(path);
  return m.p;
}

/* The events of the output (strict JSON) as a new array. */
static json_t *events_of(const char *doc)
{
  json_error_t e;
  json_t *j = json_loads(doc, 0, &e);

  if (j == NULL) {
    fprintf(stderr, "not JSON: %s at %d: %s\n", e.text, e.position, doc);
    exit(1);
  }
  json_incref(json_object_get(j, "traceEvents"));
  {
    json_t *ev = json_object_get(j, "traceEvents");

    json_decref(j);
    return ev;
  }
}

/* Kineto: members before and after the events, M events, the window's
 * edges (us with three decimals; t0 = 1000.000 us). */
static const char kineto[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": "
    "\"MI300X\"}],\n"
    "\"traceEvents\": [\n"
    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 7, \"tid\": 0,"
    " \"args\": {\"name\": \"python\"}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"before\", \"pid\": 0,"
    " \"tid\": 7, \"ts\": 1000.000, \"dur\": 1.000},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ends at start\","
    " \"pid\": 0, \"tid\": 7, \"ts\": 1001.000, \"dur\": 1.000},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"crosses start\","
    " \"pid\": 0, \"tid\": 7, \"ts\": 1001.500, \"dur\": 1.000},\n"
    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"at start\","
    " \"pid\": 7, \"tid\": 7, \"ts\": 1002.000},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"esc \\\"q\\\"\","
    " \"pid\": 0, \"tid\": 7, \"ts\": 1002.999, \"dur\": 0.000},\n"
    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"at end\","
    " \"pid\": 7, \"tid\": 7, \"ts\": 1003.000},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"no ts\", \"pid\": 0},\n"
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 7, \"tid\": 7,"
    " \"ts\": 0, \"args\": {\"name\": \"main\"}}\n"
    "],\n"
    "\"traceName\": \"x.pt.trace.json\", \"baseTimeNanoseconds\": 17}\n";

static void slice_kineto_window(void)
{
  struct idx_slice_stats st;
  char *got = slice(kineto, 1000000, 2000, 3000, 0, &st);

  CHECK_STR(
      got,
      "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\": 0, \"name\": "
      "\"MI300X\"}],\"traceEvents\":["
      "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 7, \"tid\": 0,"
      " \"args\": {\"name\": \"python\"}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"crosses start\","
      " \"pid\": 0, \"tid\": 7, \"ts\": 1001.500, \"dur\": 1.000},"
      "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"at start\","
      " \"pid\": 7, \"tid\": 7, \"ts\": 1002.000},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"esc \\\"q\\\"\","
      " \"pid\": 0, \"tid\": 7, \"ts\": 1002.999, \"dur\": 0.000},"
      "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 7, \"tid\": 7,"
      " \"ts\": 0, \"args\": {\"name\": \"main\"}}"
      "],\"traceName\":\"x.pt.trace.json\",\"baseTimeNanoseconds\":17,"
      "\"traced_slice\":{\"t0_ns\":1000000,\"start_ns\":2000,\"end_ns\":3000,"
      "\"events_read\":9,\"events_kept\":5,\"metadata_events\":2,"
      "\"events_mended\":0,\"events_dropped\":0,\"members_kept\":4,"
      "\"members_dropped\":0,\"findings\":null}}");
  CHECK_INT(st.events_kept, 5);
  free(got);
}

/* The reader's quirks: trailing commas (document, events, args), a raw
 * control character, a lenient number, a bare array. */
static void slice_quirks(void)
{
  char *got = slice("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\tb\","
                    " \"ts\": 5, \"dur\": 2, \"args\": {\"x\": [1,],},},"
                    " {\"ph\": \"i\", \"ts\": 50},],"
                    " \"traceName\": \"t\",}",
                    5000, 0, 10000, 0, NULL);
  json_t *ev = events_of(got);

  CHECK_INT(json_array_size(ev), 1);
  CHECK_STR(json_string_value(json_object_get(json_array_get(ev, 0), "name")),
            "a\tb");
  CHECK(strstr(got, "\"events_mended\":1") != NULL);
  json_decref(ev);
  free(got);
  /* A bare array (legacy autograd profiler) gives an object. */
  got = slice("[{\"ph\": \"X\", \"name\": \"f\", \"pid\": \"CPU functions\","
              " \"ts\": 10, \"dur\": 5}, {\"ph\": \"X\", \"name\": \"g\","
              " \"pid\": \"CPU functions\", \"ts\": 100, \"dur\": 5},]",
              10000, 0, 1000, 0, NULL);
  ev = events_of(got);
  CHECK_INT(json_array_size(ev), 1);
  CHECK_STR(json_string_value(json_object_get(json_array_get(ev, 0), "name")),
            "f");
  json_decref(ev);
  free(got);
}

/* An event of the window that is not mendable is left out and counted. */
static void slice_drops_unmendable(void)
{
  struct idx_slice_stats st;
  char *got = slice("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 5, \"dur\": 1,"
                    " \"args\": {\"a\": [1 2]}}, {\"ph\": \"X\", \"ts\": 6,"
                    " \"dur\": 1}]}",
                    5000, 0, 10000, 0, &st);
  json_t *ev = events_of(got);

  CHECK_INT(json_array_size(ev), 1);
  CHECK_INT(st.events_dropped, 1);
  json_decref(ev);
  free(got);
}

/* traced's tracks: one decode step over two kernels with an idle stretch
 * between them (host_late: its launch started after the device went
 * idle), all in the window; before the step, from the first launch call
 * (t0) to the first kernel, a stretch outside every label (other, all of
 * it between steps). */
static void slice_tracks(void)
{
  static const char doc[] =
      "{\"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\":"
      " \"decode[bs=4 tok=4]\", \"pid\": 2, \"tid\": 1, \"ts\": 100.000,"
      " \"dur\": 50.000},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
      "\"hipLaunchKernel\","
      " \"pid\": 9, \"tid\": 9, \"ts\": 99.000, \"dur\": 1.000,"
      " \"args\": {\"correlation\": 1}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 2,"
      " \"tid\": 7, \"ts\": 100.000, \"dur\": 10.000,"
      " \"args\": {\"correlation\": 1}},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
      "\"hipLaunchKernel\","
      " \"pid\": 9, \"tid\": 9, \"ts\": 120.000, \"dur\": 1.000,"
      " \"args\": {\"correlation\": 2}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k2\", \"pid\": 2,"
      " \"tid\": 7, \"ts\": 130.000, \"dur\": 20.000,"
      " \"args\": {\"correlation\": 2}}]}";
  struct idx_slice_stats st;
  char *got = slice(doc, 99000, 0, 60000, 1, &st);
  json_t *ev = events_of(got), *e;
  size_t i;
  int steps = 0, idle = 0;

  CHECK_INT(st.events_kept, 5);
  json_array_foreach(ev, i, e) {
    const char *cat = json_string_value(json_object_get(e, "cat"));
    json_t *args = json_object_get(e, "args");

    if (cat == NULL || strcmp(cat, "traced") != 0)
      continue;
    CHECK_INT(json_integer_value(json_object_get(e, "pid")), 10);
    if (json_integer_value(json_object_get(e, "tid")) == 1) {
      steps++;
      CHECK_STR(json_string_value(json_object_get(e, "name")), "decode");
      CHECK_STR(json_string_value(json_object_get(args, "label")),
                "decode[bs=4 tok=4]");
      CHECK_INT(json_integer_value(json_object_get(args, "step_ns")), 50000);
      CHECK(json_real_value(json_object_get(e, "ts")) == 100.0);
    } else if (idle++ == 0) {
      CHECK_STR(json_string_value(json_object_get(e, "name")), "other");
      CHECK_INT(json_integer_value(json_object_get(args, "idle_ns")), 1000);
      CHECK_INT(json_integer_value(json_object_get(args, "between_steps_ns")),
                1000);
    } else {
      CHECK_STR(json_string_value(json_object_get(e, "name")), "host_late");
      CHECK(json_real_value(json_object_get(e, "ts")) == 110.0);
      CHECK(json_real_value(json_object_get(e, "dur")) == 20.0);
      CHECK_INT(json_integer_value(json_object_get(args, "idle_ns")), 20000);
      CHECK_INT(json_integer_value(json_object_get(args, "between_steps_ns")),
                0);
    }
  }
  CHECK_INT(steps, 1);
  CHECK_INT(idle, 2);
  CHECK_INT(st.steps, 1);
  CHECK_INT(st.idle, 2);
  json_decref(ev);
  free(got);
}

/* ---- all ranks in one timeline (slice_ranks.c) ---- */

/* Rank 0: a named process, a flow, a mended event, an event without pid;
 * rank 1: the same pid 0 again. */
static const char rank0[] =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 7, \"tid\": 0,"
    " \"args\": {\"name\": \"python\"}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0,"
    " \"tid\": 7, \"ts\": 1001.000, \"dur\": 1.000},\n"
    "{\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": 5,"
    " \"pid\": 7, \"tid\": 7, \"ts\": 1001.000},\n"
    "{\"ph\": \"f\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": 5,"
    " \"pid\": 0, \"tid\": 7, \"ts\": 1001.500, \"bp\": \"e\"},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\tb\", \"pid\": 0,"
    " \"tid\": 7, \"ts\": 1001.200, \"dur\": 0.100,},\n"
    "{\"ph\": \"i\", \"name\": \"nopid\", \"ts\": 1001.300},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"late\", \"pid\": 0,"
    " \"tid\": 7, \"ts\": 1020.000, \"dur\": 1.000}\n"
    "], \"traceName\": \"a\"}\n";
static const char rank1[] =
    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kb\","
    " \"pid\": 0, \"tid\": 1, \"ts\": 1001.000, \"dur\": 1.000}]}";

static void slice_ranks_timeline(void)
{
  char *paths[2] = { write_trace(rank0), write_trace(rank1) };
  struct idx_slice_rank ranks[2] = {
    { paths[0], IDX_FORMAT_KINETO, 0, 1000000, NULL },
    { paths[1], IDX_FORMAT_KINETO, 1, 1000000, NULL },
  };
  struct idx_slice_opts o = { .t0_ns = 1000000,
                              .start_ns = 0,
                              .end_ns = 10000 };
  struct tr_err err = { 0 };
  struct mem m = { NULL, 0 };

  CHECK_INT(idx_slice_ranks(NULL, ranks, 2, &o, mem_write, &m, &err), 0);
  CHECK_STR(
      m.p,
      "{\"traceEvents\":["
      "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0,"
      " \"args\": {\"name\": \"rank 0 \u00b7 python\"}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 2,"
      " \"tid\": 7, \"ts\": 1001.000, \"dur\": 1.000},"
      "{\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": 10,"
      " \"pid\": 1, \"tid\": 7, \"ts\": 1001.000},"
      "{\"ph\": \"f\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": 10,"
      " \"pid\": 2, \"tid\": 7, \"ts\": 1001.500, \"bp\": \"e\"},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\\u0009b\", \"pid\": "
      "2,"
      " \"tid\": 7, \"ts\": 1001.200, \"dur\": 0.100},"
      "{\"pid\":3,\"ph\": \"i\", \"name\": \"nopid\", \"ts\": 1001.300},"
      "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,\"tid\":0,"
      "\"args\":{\"sort_index\":1}},"
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":2,\"tid\":0,"
      "\"args\":{\"name\":\"rank 0 \u00b7 pid 0\"}},"
      "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":2,\"tid\":0,"
      "\"args\":{\"sort_index\":2}},"
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":3,\"tid\":0,"
      "\"args\":{\"name\":\"rank 0 \u00b7 pid (none)\"}},"
      "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":3,\"tid\":0,"
      "\"args\":{\"sort_index\":3}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kb\","
      " \"pid\": 1001, \"tid\": 1, \"ts\": 1001.000, \"dur\": 1.000},"
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1001,\"tid\":0,"
      "\"args\":{\"name\":\"rank 1 \u00b7 pid 0\"}},"
      "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1001,\"tid\":0,"
      "\"args\":{\"sort_index\":1001}}"
      "],\"traced_slice\":{\"t0_ns\":1000000,\"start_ns\":0,"
      "\"end_ns\":10000,\"ranks\":["
      "{\"rank\":0,\"t0_ns\":1000000,\"processes\":3,\"events_read\":7,"
      "\"events_kept\":6,\"metadata_events\":1,\"events_mended\":1,"
      "\"events_dropped\":0,\"findings\":null},"
      "{\"rank\":1,\"t0_ns\":1000000,\"processes\":1,\"events_read\":1,"
      "\"events_kept\":1,\"metadata_events\":0,\"events_mended\":0,"
      "\"events_dropped\":0,\"findings\":null}]}}");
  free(m.p);
  for (int i = 0; i < 2; i++) {
    unlink(paths[i]);
    free(paths[i]);
  }
}

int main(void)
{
  RUN(slice_json_quirks);
  RUN(slice_json_depth);
  RUN(slice_kineto_window);
  RUN(slice_quirks);
  RUN(slice_drops_unmendable);
  RUN(slice_tracks);
  RUN(slice_ranks_timeline);
  return 0;
}
