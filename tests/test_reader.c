/*
 * The trace reader and byte source (index/read/read.h): real traces whole and
 * in 1-, 7- and 4096-byte chunks, compared with one another and with the
 * figures PROVENANCE.tsv gives (computed there with Python's json); cut
 * and damaged files; each malformed-input policy; exact decimals.
 */
#include <stdlib.h>

#include "check.h"
#include "index/read/read_int.h"
#include "index/slice/slice_int.h"
#include "test_reader.h"

/* The PROVENANCE.tsv row of a trace: total_events, ph_counts,
 * kernel_events (-1 when blank) and device_names ("" for "(none)"),
 * computed with Python's json module. */
struct prov {
  long long events, kernels;
  long long ph[256];
  char device[256];
};

static int read_prov(const char *name, struct prov *pv)
{
  char path[1024], line[16384], *f[32], *s, *tok, *save;
  FILE *fp;
  int n;

  trace_path(path, sizeof(path), "PROVENANCE.tsv");
  fp = fopen(path, "r");
  CHECK(fp != NULL);
  memset(pv, 0, sizeof(*pv));
  while (fgets(line, sizeof(line), fp) != NULL) {
    for (n = 0, s = line; n < 32; n++) {
      f[n] = s;
      s = strchr(s, '\t');
      if (s == NULL) {
        n++;
        break;
      }
      *s++ = 0;
    }
    if (n < 13 || strcmp(f[0], name) != 0)
      continue;
    fclose(fp);
    pv->events = atoll(f[8]);
    pv->kernels = f[12][0] != 0 ? atoll(f[12]) : -1;
    if (n > 16 && strcmp(f[16], "(none)") != 0)
      snprintf(pv->device, sizeof(pv->device), "%s", f[16]);
    for (tok = strtok_r(f[9], ";", &save); tok != NULL;
         tok = strtok_r(NULL, ";", &save))
      if (tok[0] != 0 && tok[1] == ':')
        pv->ph[(unsigned char)tok[0]] = atoll(tok + 2);
    return 1;
  }
  fclose(fp);
  return 0;
}

/* Every real trace: same figures whole and in 1-, 7- and 4096-byte
 * chunks; events, events per ph and kernels as PROVENANCE.tsv says. */
static void reader_real_traces(void)
{
  static char names[64][256];
  static const size_t chunks[] = { 4096, 7, 1 };
  struct tally whole, part;
  char path[1024];
  struct prov pv;
  size_t n, i;
  int k, count = list_traces(names, 64), c;
  char *data;

  CHECK(count >= 10);
  for (k = 0; k < count; k++) {
    data = trace_text(names[k], path, sizeof(path), &n);
    run_reader(data, n, 0, IDX_FORMAT_AUTO, &whole);
    fprintf(stderr, "   %s: %llu events\n", names[k],
            (unsigned long long)whole.events);
    CHECK_INT(whole.rc, 0);
    CHECK_INT(whole.format, IDX_FORMAT_KINETO);
    CHECK_INT(whole.skipped, 0);
    CHECK(read_prov(names[k], &pv));
    CHECK_INT(whole.events, pv.events);
    CHECK_STR(whole.device, pv.device);
    if (pv.kernels >= 0)
      CHECK_INT(whole.kernels, pv.kernels);
    for (c = 0; c < 256; c++)
      if (pv.ph[c] != 0)
        CHECK_INT(whole.ph[c], pv.ph[c]);
    for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
      run_reader(data, n, chunks[i], IDX_FORMAT_AUTO, &part);
      same_tally(&whole, &part);
    }

    free(data);
  }
}

/* Every real trace with its chunks' events walked ahead (as idx_file()'s
 * source thread does): the same as read whole, the batches used for most
 * events, and turned down where they were walked for a wrong guess. */
static void reader_batched_traces(void)
{
  static char names[64][256];
  struct tally whole, part;
  char path[1024];
  int k, count = list_traces(names, 64);
  char *data;
  size_t n;

  for (k = 0; k < count; k++) {
    data = trace_text(names[k], path, sizeof(path), &n);
    run_reader(data, n, 0, IDX_FORMAT_AUTO, &whole);
    run_batched(data, n, 1u << 20, IDX_FORMAT_AUTO, &part);
    same_tally(&whole, &part);
    fprintf(stderr, "   %s: %llu of %llu walked ahead\n", names[k],
            (unsigned long long)part.walked_ahead,
            (unsigned long long)whole.delivered);
    if (n > (4u << 20)) /* several chunks: all but the first batched */
      CHECK(part.walked_ahead > whole.delivered / 2);
    run_batched(data, n, 4096, IDX_FORMAT_AUTO, &part);
    same_tally(&whole, &part);
    free(data);
  }
}

/* idx_reader_keep_raw(): every event's text and every top-level member,
 * the same whole, in 7-byte chunks and walked ahead; each text parses to
 * its event (test_reader_util.c); the document's quirks too. */
static void reader_raw_texts(void)
{
  static char names[64][256];
  static const char *const docs[] = {
    "{\"a\": [1, {\"b\": \"}\"}], \"traceEvents\": [{\"ph\": \"X\", \"name\":"
    " \"e\\\"sc\", \"ts\": 1, \"dur\": 2,}, 7, {\"ph\": \"i\", \"ts\": 3},],"
    " \"z\": \"tail\", \"\\u0041\": null,}",
    "[{\"ph\": \"X\", \"name\": \"f\", \"ts\": 1, \"dur\": 1}]",
  };
  struct tally whole, part;
  char path[1024];
  int k, count = list_traces(names, 64);
  char *data;
  size_t n, i;

  keep_raw = 1;
  for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
    run_reader(docs[i], strlen(docs[i]), 0, IDX_FORMAT_AUTO, &whole);
    CHECK_INT(whole.rc, 0);
    CHECK(whole.raw != 0);
    run_reader(docs[i], strlen(docs[i]), 1, IDX_FORMAT_AUTO, &part);
    same_tally(&whole, &part);
  }
  for (k = 0; k < count; k++) {
    data = trace_text(names[k], path, sizeof(path), &n);
    run_reader(data, n, 0, IDX_FORMAT_AUTO, &whole);
    CHECK(whole.raw != 0);
    /* Layouts read nearly every event of a real trace, and the proof
     * marks nearly all they read (99.8% of them on the shared ones). */
    CHECK(whole.strict * 10 >= whole.delivered * 8);
    run_reader(data, n, 7, IDX_FORMAT_AUTO, &part);
    same_tally(&whole, &part);
    run_batched(data, n, 1u << 20, IDX_FORMAT_AUTO, &part);
    same_tally(&whole, &part);
    free(data);
  }
  keep_raw = 0;
}

/* reader_judged_events(): each event's name and whether it came marked
 * strict, in order. */
struct marks {
  char name[16][8];
  int strict[16], n;
};

static int on_marked(void *ud, const struct idx_doc *doc,
                     const struct idx_event *ev)
{
  struct marks *m = ud;
  int verdict = slice_json_mend(ev->raw.p, ev->raw.n, NULL);

  (void)doc;
  CHECK(m->n < 16 && ev->name.n < 8);
  memcpy(m->name[m->n], ev->name.p, ev->name.n);
  m->strict[m->n++] = ev->strict;
  /* A marked event is strict; of these, "a", "b" and "f" are. */
  if (ev->strict)
    CHECK_INT(verdict, SLICE_JSON_VALID);
  CHECK_INT(verdict == SLICE_JSON_VALID, strchr("abf", ev->name.p[0]) != NULL);
  return 0;
}

/* idx_reader_judge(): the events one layout reads (learnt from "a")
 * come marked strict only when their holes hold strict values, whatever
 * their type ("b" holds an array where "a" held a number); a control
 * byte in a string ("c"), a number JSON would not write ("d") or a bare
 * word ("e") in a hole leaves its event unmarked, and every event of a
 * layout whose literal runs are not strict (a raw tab in a key, "g") is
 * unmarked too, its holes strict or not. on_marked() checks each mark
 * against the slicer's judge. */
static void reader_judged_events(void)
{
  static const char *const holes[][3] = {
    { "a", "1", "2" },     { "b", "2", "[1, {\"y\": null}]" },
    { "c\x01", "3", "4" }, { "d", "007", "5" },
    { "e", "6", "NaN" },   { "f", "7", "8" },
    { "g", "8", "9" },     { "g", "9", "10" },
    { "g", "10", "11" },
  };
  static const int want[] = { 0, 1, 0, 0, 0, 1, 0, 0, 0 };
  char doc[4096];
  size_t n = 0, i;
  struct marks m = { 0 };
  struct idx_reader *r;
  struct tr_err err = { 0 };

  n += (size_t)snprintf(doc, sizeof(doc), "{\"traceEvents\": [");
  for (i = 0; i < sizeof(holes) / sizeof(holes[0]); i++)
    n += (size_t)snprintf(
        doc + n, sizeof(doc) - n,
        "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", "
        "\"pid\": 1, \"tid\": 2, \"ts\": %zu.500, \"dur\": 1.000, "
        "\"args\": {\"External id\": %s, \"%s\": %s}}",
        i > 0 ? ",\n  " : "", holes[i][0], i + 1, holes[i][1],
        holes[i][0][0] == 'g' ? "t\tab" : "x", holes[i][2]);
  n += (size_t)snprintf(doc + n, sizeof(doc) - n, "]}");
  CHECK(n < sizeof(doc));
  CHECK_INT(idx_reader_new(IDX_FORMAT_KINETO, on_marked, &m, &r), 0);
  CHECK_INT(idx_reader_keep_raw(r, NULL), 0);
  idx_reader_judge(r, slice_json_strict_end);
  CHECK_INT(idx_reader_feed(r, doc, n, &err), 0);
  CHECK_INT(idx_reader_finish(r, &err), 0);
  idx_reader_free(r);
  CHECK_INT(m.n, (int)(sizeof(want) / sizeof(want[0])));
  for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    CHECK_STR(m.name[i], holes[i][0]);
    CHECK_INT(m.strict[i], want[i]);
  }
}

static void reader_exact_decimals(void)
{
  static const struct {
    const char *text;
    unsigned scale;
    int rc;
    int64_t val;
  } cases[] = {
    { "0.001", 3, IDX_NUM_OK, 1 },
    { "4203669604595.407", 3, IDX_NUM_OK, 4203669604595407 },
    { "4203669604595407", 0, IDX_NUM_OK, 4203669604595407 },
    { "1e3", 3, IDX_NUM_OK, 1000000 },
    { "1.5e3", 0, IDX_NUM_OK, 1500 },
    { "1.5E+3", 3, IDX_NUM_OK, 1500000 },
    { "123e-2", 0, IDX_NUM_OK, 1 },
    { "1.0009", 3, IDX_NUM_OK, 1000 },
    { "-1.0009", 3, IDX_NUM_OK, -1000 },
    { "-0.0005", 3, IDX_NUM_OK, 0 },
    { "1e-5", 3, IDX_NUM_OK, 0 },
    { "0e999999999", 3, IDX_NUM_OK, 0 },
    { "0.0000000000000000000000001e25", 0, IDX_NUM_OK, 1 },
    { "12345678901234567890e-10", 0, IDX_NUM_OK, 1234567890 },
    { "9223372036854775807", 0, IDX_NUM_OK, INT64_MAX },
    { "-9223372036854775808", 0, IDX_NUM_OK, INT64_MIN },
    { "9223372036854775.807", 3, IDX_NUM_OK, INT64_MAX },
    { "9223372036854775808", 0, IDX_NUM_RANGE, 0 },
    { "-9223372036854775809", 0, IDX_NUM_RANGE, 0 },
    { "9223372036854775.808", 3, IDX_NUM_RANGE, 0 },
    { "1e999", 0, IDX_NUM_RANGE, 0 },
    { "99999999999999999999999", 0, IDX_NUM_RANGE, 0 },
    { "", 0, IDX_NUM_NAN, 0 },
    { "-", 0, IDX_NUM_NAN, 0 },
    { "1.2.3", 0, IDX_NUM_NAN, 0 },
    { "1e", 0, IDX_NUM_NAN, 0 },
    { "12a", 0, IDX_NUM_NAN, 0 },
    { "inf", 0, IDX_NUM_NAN, 0 },
    { "N/A", 0, IDX_NUM_NAN, 0 },
  };
  int64_t v;
  size_t i;
  int rc;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    v = 0;
    rc =
        idx_num_parse(cases[i].text, strlen(cases[i].text), cases[i].scale, &v);
    if (rc != cases[i].rc)
      fprintf(stderr, "case \"%s\"\n", cases[i].text);
    CHECK_INT(rc, cases[i].rc);
    if (rc == IDX_NUM_OK)
      CHECK_INT(v, cases[i].val);
  }
}

/* Shapes the token walk hands back to the byte-wise parser, and the
 * separators stage 1 does not make tokens: the same events, skips and
 * errors at the same byte either way (read_doc compares the walk, whole
 * and walked ahead, with 1- and 7-byte chunks, which never walk). */
static void reader_walk_shapes(void)
{
  struct tally t;
  struct last l;

  /* Junk between events, where no event's blocks are checked (the first
   * ends on byte 63, the end of a clean block). */
  doc_bad(EVENTS("{\"ph\":\"X\"},: {\"ph\":\"X\"}"), 42,
          "not JSON (unexpected ':') at byte 28");
  doc_bad(EVENTS("{\"ph\":\"X\",\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaa\"},: "
                 "{\"ph\":\"X\"}"),
          79, "not JSON (unexpected ':') at byte 65");
  doc_bad(EVENTS("{\"ph\":\"X\"},, {\"ph\":\"X\"}"), 42,
          "not JSON (unexpected ',') at byte 28");
  /* A missing comma or colon, a colon after a value, two of them. */
  doc_bad(EVENTS("{\"ph\":\"X\" \"ts\":1}"), 36,
          "not JSON (unexpected '\"') at byte 27");
  doc_bad(EVENTS("{\"ph\" \"X\"}"), 29,
          "not JSON (unexpected '\"') at byte 23");
  doc_bad(EVENTS("{\"ph\":\"X\":1}"), 31,
          "not JSON (unexpected ':') at byte 26");
  doc_bad(EVENTS("{\"ph\"::\"X\"}"), 30,
          "not JSON (unexpected ':') at byte 23");
  doc_bad(EVENTS("{\"args\":{\"a\":1 \"b\":2}}"), 41,
          "not JSON (unexpected '\"') at byte 32");
  /* Separators apart from what they follow, epoch microseconds (19
   * digits as ns), a number that is no int64, trailing commas. */
  doc_ok(EVENTS("{\"ph\" : \"X\" , \"ts\" :1712195495607095.056 ,"
                "\"dur\":1,\"args\":{\"grid\":[1 , 2,3,]},}"),
         &t, &l);
  CHECK_INT(l.ev.ts_ns, 1712195495607095056);
  CHECK(l.ev.has & IDX_HAS_GRID);
  doc_ok(EVENTS("{\"ph\":\"X\",\"ts\":9223372036854775.807,\"dur\":1},"
                "{\"ph\":\"X\",\"ts\":9223372036854775.808,\"dur\":1},"
                "{\"ph\":\"X\",\"ts\":4611686018427387.903,\"dur\":1}"),
         &t, &l);
  /* An int64 past docs/TRACE_FORMATS.md's range, and no int64. */
  CHECK_INT(t.skipped, 2);
  CHECK_INT(l.ev.ts_ns, IDX_TS_LIMIT_NS - 1);
}

/* idx_num_fast() reads a number with 34 bytes after it a word at a time
 * and near the end of the text a digit at a time: both must agree, on
 * every shape (signs, long integer parts, fractions past the scale,
 * exponents, junk after), at scales 0 and 3. */
static void reader_number_words(void)
{
  static const char tails[][4] = { ",", "}", "e5", ".", "x", " " };
  char num[64], buf[128];
  unsigned seed = 7, i, k, n, scale;
  const char *a, *b;
  int64_t va = 0, vb = 0;

  for (i = 0; i < 200000; i++) {
    seed = seed * 1103515245u + 12345u;
    n = 0;
    if (seed >> 31)
      num[n++] = '-';
    for (k = 1 + (seed >> 8) % 22; k > 0; k--)
      num[n++] = (char)('0' + (seed = seed * 1103515245u + 12345u) % 10);
    if ((seed >> 12) % 3 != 0) {
      num[n++] = '.';
      for (k = (seed >> 16) % 11; k > 0; k--)
        num[n++] = (char)('0' + (seed = seed * 1103515245u + 12345u) % 10);
    }
    n += (unsigned)snprintf(num + n, sizeof(num) - n, "%s",
                            tails[(seed >> 20) % 6]);
    scale = (seed >> 24) % 2 ? 3 : 0;
    memset(buf, ' ', sizeof(buf));
    memcpy(buf, num, n);
    a = idx_num_fast(buf, buf + n, scale, &va);
    b = idx_num_fast(buf, buf + sizeof(buf), scale, &vb);
    if ((a == NULL) != (b == NULL) || (a != NULL && (a != b || va != vb)))
      fprintf(stderr, "number \"%.*s\" scale %u\n", (int)n, num, scale);
    CHECK((a == NULL) == (b == NULL));
    if (a != NULL) {
      CHECK(a == b);
      CHECK_INT(va, vb);
    }
  }
}

/* Numbers in events: kineto microseconds to exact ns; numbers written as
 * strings count; "inf", "N/A", "" and null leave the field absent. */
static void reader_numbers_in_events(void)
{
  struct tally t;
  struct last l;

  doc_ok(EVENTS("{\"ph\":\"X\",\"cat\":\"kernel\",\"ts\":4203669604595.407,"
                "\"dur\":\"1.5e-3\",\"args\":{\"bytes\":\"128\","
                "\"correlation\":\" 42 \",\"grid\":[1,\"2\",3],"
                "\"block\":[1,2],\"External id\":9223372036854775807}}"),
         &t, &l);
  CHECK_INT(l.ev.ts_ns, 4203669604595407);
  CHECK_INT(l.ev.dur_ns, 1);
  CHECK_INT(l.ev.bytes, 128);
  CHECK_INT(l.ev.correlation, 42);
  CHECK_INT(l.ev.external_id, INT64_MAX);
  CHECK_INT(l.ev.grid[1], 2);
  CHECK(l.ev.has & IDX_HAS_GRID);
  CHECK(!(l.ev.has & IDX_HAS_BLOCK));
  doc_ok(EVENTS("{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"ts\":null,"
                "\"dur\":null,\"args\":{\"bytes\":\"N/A\",\"device\":\"\","
                "\"stream\":NaN,\"correlation\":Infinity,\"grid\":\"x\","
                "\"External id\":\"inf\"}}"),
         &t, &l);
  CHECK_INT(t.delivered, 1);
  CHECK_INT(l.ev.has, 0);
  /* But ts/dur that are there and no number make the event malformed. */
  doc_ok(EVENTS("{\"ph\":\"i\",\"ts\":\"inf\"},{\"ph\":\"i\",\"ts\":\"N/A\"},"
                "{\"ph\":\"i\",\"dur\":\"\"},{\"ph\":\"i\",\"ts\":NaN},"
                "{\"ph\":\"i\",\"ts\":\"1\\u0030\"},"
                "{\"ph\":\"i\",\"ts\":\" 7 \"}"),
         &t, &l);
  CHECK_INT(t.skipped, 5);
  CHECK_INT(l.ev.ts_ns, 7000);
  /* "size" stands for bytes on runtime copy calls; "bytes" wins. */
  doc_ok(EVENTS("{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"hipMemcpy"
                "Async\",\"ts\":1,\"args\":{\"size\":\"2560\"}},"
                "{\"ph\":\"X\",\"ts\":1,\"args\":{\"size\":1,\"bytes\":7}}"),
         &t, &l);
  CHECK_INT(t.sum_ids, 2560 + 7);
  CHECK_INT(l.ev.bytes, 7);
  /* Out of range anywhere: an int64 overflow, or a time outside
   * docs/TRACE_FORMATS.md's 0 <= ts < 2^62 ns, 0 <= dur < 2^50 ns (in
   * kineto's microseconds): skipped and counted; the edges inside
   * delivered exactly. */
  doc_ok(EVENTS("{\"ph\":\"X\",\"ts\":9223372036854775.808},"
                "{\"ph\":\"X\",\"ts\":1,\"args\":{\"correlation\":1e30}},"
                "{\"ph\":\"X\",\"ts\":1,\"dur\":-0.001},"
                "{\"ph\":\"X\",\"ts\":1,\"dur\":-0.0001},"
                "{\"ph\":\"X\",\"ts\":9223372036854775.807},"
                "{\"ph\":\"X\",\"ts\":4611686018427387.903,\"dur\":0},"
                "{\"ph\":\"X\",\"ts\":4611686018427387.904,\"dur\":0},"
                "{\"ph\":\"X\",\"ts\":-0.001,\"dur\":1},"
                "{\"ph\":\"X\",\"ts\":1,\"dur\":1125899906842.624},"
                "{\"ph\":\"X\",\"ts\":1,\"dur\":1e20},"
                "{\"ph\":\"X\",\"ts\":0,\"dur\":1125899906842.623}"),
         &t, &l);
  CHECK_INT(t.events, 11);
  CHECK_INT(t.skipped, 8);
  CHECK_INT(t.delivered, 3);
  CHECK_INT(l.ev.ts_ns, 0);
  CHECK_INT(l.ev.dur_ns, IDX_DUR_LIMIT_NS - 1);
}

/* docs/TRACE_FORMATS.md's time bounds in mcTracer's nanoseconds. */
static void reader_time_bounds(void)
{
  struct tally t;
  struct last l;

  doc_ok("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"k\",\"pid\":2,"
         "\"ts\":4611686018427387903,\"dur\":1125899906842623,"
         "\"args\":{\"co_id\":1}},"
         "{\"ph\":\"X\",\"name\":\"k\",\"pid\":2,"
         "\"ts\":4611686018427387904,\"dur\":1,\"args\":{\"co_id\":2}},"
         "{\"ph\":\"X\",\"name\":\"k\",\"pid\":2,\"ts\":1,"
         "\"dur\":1125899906842624,\"args\":{\"co_id\":3}}]}",
         &t, &l);
  CHECK_INT(t.delivered, 1);
  CHECK_INT(t.skipped, 2);
  CHECK_INT(l.ev.ts_ns, IDX_TS_LIMIT_NS - 1);
  CHECK_INT(l.ev.dur_ns, IDX_DUR_LIMIT_NS - 1);
}

/* kineto's cuda_sync events carry the stream they wait on and the
 * correlation of the awaited cudaEventRecord (docs/TRACE_FORMATS.md). */
static void reader_sync_args(void)
{
  struct tally t;
  struct last l;

  doc_ok(EVENTS("{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Wait "
                "Event\",\"pid\":0,\"tid\":20,\"ts\":1695835585751488,"
                "\"dur\":3,\"args\":{\"External id\":5170,\"cuda_sync_kind\":"
                "\"Stream Wait Event\",\"wait_on_stream\":7,"
                "\"wait_on_cuda_event_record_corr_id\":5169,"
                "\"wait_on_cuda_event_id\":1,\"stream\":20,"
                "\"correlation\":5170}}"),
         &t, &l);
  CHECK_INT(l.ev.wait_stream, 7);
  CHECK_INT(l.ev.wait_corr, 5169);
  CHECK_INT(l.ev.stream, 20);
  CHECK(l.ev.has & IDX_HAS_WAIT_STREAM);
  CHECK(l.ev.has & IDX_HAS_WAIT_CORR);
  doc_ok(EVENTS("{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream "
                "Sync\",\"ts\":1,\"dur\":9,\"args\":{\"stream\":7}}"),
         &t, &l);
  CHECK(!(l.ev.has & (IDX_HAS_WAIT_STREAM | IDX_HAS_WAIT_CORR)));
}

/* key is an args key of want: found at its length, and a letter off or
 * a byte longer is no key (an IDX_ARG_LENS without its length would
 * find nothing). */
static void arg_key_is(const char *key, int want)
{
  char buf[64];
  size_t n = strlen(key);

  CHECK_INT(idx_arg_key(key, n), want);
  memcpy(buf, key, n);
  buf[n - 1] ^= 0x20; /* "griD" */
  CHECK_INT(idx_arg_key(buf, n), IDX_A_OTHER);
  buf[n - 1] ^= 0x20;
  buf[n] = 'x'; /* "gridx" */
  CHECK_INT(idx_arg_key(buf, n + 1), IDX_A_OTHER);
}

/* Every row of IDX_ARG_KEYS, as the readers look keys up. */
static void reader_arg_keys(void)
{
#define XX(len, A, key) arg_key_is(key, IDX_A_##A);
  IDX_ARG_KEYS(XX, 0)
#undef XX
  CHECK_INT(idx_arg_key("External", 8), IDX_A_OTHER);
}

/* Each kind of broken document fails with a message and an offset. */
static void reader_bad_documents(void)
{
  static const char garbage[] = "\x1f\x8b\x08\x00\xff\xfe";

  doc_bad("", 0, "empty file at byte 0");
  doc_bad(" \n\t", 3, "no JSON text at byte 3");
  doc_bad("hello", 5, "not JSON (expected '{' or '[') at byte 0");
  doc_bad(garbage, sizeof(garbage) - 1, "not JSON");
  doc_bad("{\"a\": 1}", 8, "no traceEvents array at byte 8");
  doc_bad("{\"traceEvents\": {}}", 19,
          "traceEvents is not an array at byte 16");
  doc_bad("{\"traceEvents\": 5}", 18, "traceEvents is not an array");
  doc_bad("{\"traceEvents\": [", 17,
          "truncated JSON (ends inside traceEvents) at byte 17");
  doc_bad("{\"traceEvents\": [{\"ph\":\"X\"}", 27, "truncated JSON");
  doc_bad("{\"traceEvents\": [{\"ph\":\"X\"", 26, "truncated JSON");
  doc_bad("{\"traceEvents\": []", 18, "truncated JSON at byte 18");
  doc_bad("{\"traceEvents\": []} x", 21,
          "data after the end of the JSON document at byte 20");
  doc_bad("{\"traceEvents\": [], \"traceEvents\": []}", 38,
          "a second traceEvents array at byte 35");
  doc_bad("{\"traceEvents\": [{\"ph\" \"X\"}]}", 29,
          "not JSON (unexpected '\"') at byte 23");
  doc_bad("{\"traceEvents\": [{\"a\": [1}]}]}", 30,
          "not JSON (unexpected '}') at byte 25");
  doc_bad("{\"traceEvents\": [,]}", 20, "not JSON (unexpected ',') at byte 17");
  doc_bad("{\"traceEvents\": [{\"ts\": 1.2.3}]}", 32,
          "not JSON (unexpected '1') at byte 24");
  doc_bad("{\"x\": @, \"traceEvents\": []}", 27,
          "not JSON (unexpected '@') at byte 6");
  doc_bad("{\"traceEvents\": [{\"ph\":\"X\"}\x01]}", 30,
          "not JSON (unexpected byte 0x01) at byte 27");
  /* Found by the fuzzer: the error must not depend on where a chunk
   * ends (read_doc compares 1- and 7-byte chunks with the whole). */
  doc_bad("[{\"ph\":\":\"h", 11, "not JSON (unexpected 'h') at byte 10");
  doc_bad("[{\"ts\":.5e\xb3}]", 14, "not JSON (unexpected '.') at byte 7");
}

/* Nesting is bounded (an error, never a deep recursion), wherever the
 * deep value sits: in an event, in a skipped top-level value, in a bare
 * array. */
static void reader_depth_limit(void)
{
  static const char *const heads[] = {
    "{\"traceEvents\": [{\"args\": ",
    "{\"meta\": ",
    "[{\"x\": ",
    "[",
  };
  char *doc = malloc(4096);
  size_t i, n, k;

  CHECK(doc != NULL);
  for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
    n = (size_t)snprintf(doc, 4096, "%s", heads[i]);
    for (k = 0; k < 300; k++)
      doc[n++] = k % 2 ? '{' : '[';
    doc_bad(doc, n, "nesting deeper than 256 levels at byte");
  }
  /* 256 levels are fine. */
  n = (size_t)snprintf(doc, 4096, "{\"traceEvents\": [{\"args\": ");
  for (k = 0; k < 253; k++)
    doc[n++] = '[';
  for (k = 0; k < 253; k++)
    doc[n++] = ']';
  n += (size_t)snprintf(doc + n, 4096 - n, "}]}");
  {
    struct tally t;
    struct last l;

    doc[n] = 0;
    doc_ok(doc, &t, &l);
    CHECK_INT(t.delivered, 1);
  }
  free(doc);
}

/* What the wild writes and the reader accepts (docs/TRACE_FORMATS.md). */
static void reader_lenient_inputs(void)
{
  struct tally t;
  struct last l;

  /* Trailing commas; a byte order mark; duplicate keys: the last wins. */
  doc_ok("\xef\xbb\xbf{\"traceEvents\": [{\"ph\":\"X\",\"name\":\"a\","
         "\"name\":\"b\",\"args\":{\"kind\":\"x\",},},], \"z\": [1,],}",
         &t, &l);
  CHECK_INT(t.delivered, 1);
  CHECK_STR(l.name, "b");
  CHECK_STR(l.kind, "x");
  /* Raw control characters inside strings (Python's strict=False). */
  doc_ok(EVENTS("{\"ph\":\"X\",\"name\":\"a\x01\tb\x1f\"}"), &t, &l);
  CHECK_STR(l.name, "a\x01\tb\x1f");
  /* Escapes are decoded, surrogate pairs included. */
  doc_ok(EVENTS("{\"ph\":\"X\",\"name\":\"q\\\"\\\\\\/\\n\\u00e9\\ud83d"
                "\\ude00\\u0041\"}"),
         &t, &l);
  CHECK_STR(l.name, "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80"
                    "A");
  /* An empty events array is a complete (empty) trace. */
  doc_ok("{\"traceEvents\": []}", &t, &l);
  CHECK_INT(t.events, 0);
  CHECK_INT(t.format, IDX_FORMAT_KINETO);
  /* Keys with escapes match nothing; unknown keys of any shape skipped. */
  doc_ok("{\"trace\\u0045vents\": 5, \"traceEvents\": [{\"ph\":\"X\","
         "\"n\\u0061me\":\"x\", \"stack\": [\"a\", {\"b\": [null, true]}],"
         "\"Input Dims\": [[1, 77, 768], []]}]}",
         &t, &l);
  CHECK_STR(l.name, "(absent)");
  CHECK_INT(t.delivered, 1);
}

/* Malformed single events are skipped and counted, never fatal. */
static void reader_odd_events(void)
{
  struct tally t;
  struct last l;

  doc_ok(EVENTS("{\"ph\":\"X\",\"ts\":{}}," /* wrong types */
                "{\"ph\":\"X\",\"ts\":true},"
                "{\"ph\":\"X\",\"name\":5},"
                "{\"ph\":\"X\",\"cat\":[\"kernel\"]},"
                "{\"ph\":7},"
                "{\"ph\":\"X\",\"pid\":false,\"name\":\"lane\"},"
                "{\"ph\":\"X\",\"name\":\"\xff\xfe\"},"     /* bad UTF-8 */
                "{\"ph\":\"X\",\"name\":\"\xed\xa0\x80\"}," /* surrogate */
                "{\"ph\":\"X\",\"name\":\"\xc0\xaf\"},"     /* overlong */
                "{\"ph\":\"X\",\"name\":\"\\ud800\"},"      /* lone */
                "{\"ph\":\"X\",\"name\":\"\\x\"},"          /* bad escape */
                "1, \"s\", [1, 2], null,"                   /* no objects */
                "{\"ph\":\"X\",\"name\":\"ok\",\"x\":\"\xff\","
                "\"args\":{\"grid\":{},\"device\":[1],\"kind\":5,"
                "\"kernel\":\"\xff\"}}"),
         &t, &l);
  /* Wrong types or bad UTF-8 elsewhere than ph/cat/name/ts/dur leave
   * that field absent; the event stays. */
  CHECK_INT(t.events, 16);
  CHECK_INT(t.skipped, 14);
  CHECK_INT(t.delivered, 2);
  CHECK_STR(l.name, "ok");
  CHECK_STR(l.kind, "5");
  CHECK_STR(l.kernel, "(absent)");
  CHECK_INT(l.ev.has & (IDX_HAS_GRID | IDX_HAS_DEVICE), 0);
}

/* mcTracer's shared memory is dynamic_shared + static_shared; one of them
 * absent counts as 0, whatever an earlier event held (a bug the fuzzer
 * found on the walked-ahead path). */
static void reader_shared_memory(void)
{
  struct tally t;
  struct last l;

  doc_ok(EVENTS("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"a\","
                "\"ts\":1,\"dur\":1,"
                "\"args\":{\"dynamic_shared\":100,\"static_shared\":20}},"
                "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"b\","
                "\"ts\":2,\"dur\":1,\"args\":{\"static_shared\":7}}"),
         &t, &l);
  CHECK_INT(t.delivered, 2);
  CHECK(l.ev.has & IDX_HAS_SHMEM);
  CHECK_INT(l.ev.shared_bytes, 7);
}

/* kineto or mcTracer, settled before the first event that is not "M". */
static void reader_format_detection(void)
{
  static const char mc[] =
      "{\"traceEvents\": ["
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":2,\"ts\":5,"
      "\"args\":{\"name\":\"C500\"}},"
      "{\"name\":\"kernel_kernel\",\"ph\":\"X\",\"pid\":2,\"tid\":7,"
      "\"ts\":123456789,\"dur\":256313000,\"args\":{\"co_id\":93,"
      "\"grid\":[8,1,1],\"block\":[256,1,1],\"registers_per_thread\":40,"
      "\"dynamic_shared\":1024,\"static_shared\":512}}]}";
  struct tally t;
  struct last l;

  doc_ok(mc, &t, &l);
  CHECK_INT(t.format, IDX_FORMAT_MCTRACER);
  CHECK_INT(l.ev.ts_ns, 123456789);
  CHECK_INT(l.ev.dur_ns, 256313000);
  CHECK_INT(l.ev.correlation, 93);
  CHECK_INT(l.ev.registers, 40);
  CHECK_INT(l.ev.shared_bytes, 1536);
  CHECK_INT(l.ev.block[0], 256);
  /* Forced kineto reads the same numbers as microseconds. */
  read_doc(mc, strlen(mc), IDX_FORMAT_KINETO, &t, &l);
  CHECK_INT(t.format, IDX_FORMAT_KINETO);
  CHECK_INT(l.ev.ts_ns, 123456789000);
  /* pid lane without co_id is enough; a "cat" means kineto. */
  doc_ok(EVENTS("{\"ph\":\"X\",\"pid\":1,\"ts\":10}"), &t, &l);
  CHECK_INT(t.format, IDX_FORMAT_MCTRACER);
  CHECK_INT(l.ev.ts_ns, 10);
  doc_ok(EVENTS("{\"ph\":\"X\",\"pid\":1,\"cat\":\"cpu_op\",\"ts\":10}"), &t,
         &l);
  CHECK_INT(t.format, IDX_FORMAT_KINETO);
  CHECK_INT(l.ev.ts_ns, 10000);
  /* A kineto top-level key settles it before any event, even with
   * mcTracer-like events; displayTimeUnit "ns" changes no unit. */
  doc_ok("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [{\"ph\":\"X\","
         "\"pid\":2,\"ts\":1.5,\"args\":{\"co_id\":1}}]}",
         &t, &l);
  CHECK_INT(t.format, IDX_FORMAT_KINETO);
  CHECK_INT(l.ev.ts_ns, 1500);
  /* A bare array (legacy, no kineto) is kineto's unit. */
  doc_ok("[{\"name\":\"aten::zeros\",\"ph\":\"X\",\"ts\":492,\"dur\":100,"
         "\"tid\":1,\"pid\":\"CPU functions\",\"args\":{}},]",
         &t, &l);
  CHECK_INT(t.format, IDX_FORMAT_KINETO);
  CHECK_INT(l.ev.ts_ns, 492000);
  CHECK_STR(l.pid_str, "CPU functions");
  CHECK(!(l.ev.has & IDX_HAS_PID));
}

/* deviceProperties[0].name and distributedInfo.rank, before or after
 * traceEvents, among keys of any size. */
static void reader_document_fields(void)
{
  struct tally t;
  struct last l;

  doc_ok("{\"traceEvents\": [], \"deviceProperties\": [{\"id\": 0, \"name\":"
         " \"AMD Instinct \\u004dI300X\"}, {\"name\": \"other\"}],"
         " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": \"3\"}}",
         &t, &l);
  CHECK_STR(t.device, "AMD Instinct MI300X");
  CHECK_INT(t.rank, 3);
  doc_ok("{\"deviceProperties\": 5, \"distributedInfo\": [], "
         "\"traceEvents\": []}",
         &t, &l);
  CHECK_STR(t.device, "");
  CHECK_INT(t.rank, -1);
}

/* A 20 MB unknown value is streamed past; a 17 MB event (over the
 * ceiling) is skipped and counted, whole or in chunks. */
static void reader_big_values(void)
{
  const size_t big = 20u << 20, ev = IDX_EVENT_CEILING + (1u << 20);
  char *doc = malloc(big + ev + 256);
  struct tally t, part;
  size_t n = 0;

  CHECK(doc != NULL);
  n += (size_t)sprintf(doc + n, "{\"metadata\": \"");
  memset(doc + n, 'm', big);
  n += big;
  n += (size_t)sprintf(doc + n, "\", \"traceEvents\": [{\"ph\":\"X\","
                                "\"name\":\"");
  memset(doc + n, 'e', ev);
  n += ev;
  n += (size_t)sprintf(doc + n, "\"}, {\"ph\":\"X\",\"ts\":5}]}");
  run_reader(doc, n, 0, IDX_FORMAT_AUTO, &t);
  CHECK_INT(t.rc, 0);
  CHECK_INT(t.events, 2);
  CHECK_INT(t.skipped, 1);
  CHECK_INT(t.sum_ts, 5000);
  run_reader(doc, n, 4096, IDX_FORMAT_AUTO, &part);
  same_tally(&t, &part);
  run_reader(doc, n, 1 << 20, IDX_FORMAT_AUTO, &part);
  same_tally(&t, &part);
  free(doc);
}

/* Real documents cut anywhere fail, plain and gzipped, never a partial
 * result presented as complete. */
static void reader_cut_documents(void)
{
  static char names[64][256];
  int count = list_traces(names, 64), k, i;
  char path[1024], *json;
  unsigned char *gz;
  size_t n, gn, cut, last;
  struct tally t;

  for (k = 0; k < count; k++) {
    json = trace_text(names[k], path, sizeof(path), &n);
    for (last = n; last > 0 && strchr(" \n\r\t", json[last - 1]); last--)
      ;
    for (i = 0; i < 7; i++) {
      /* Cut points spread over the file, and the last bytes. */
      cut =
          i < 5 ? (n / 5) * (size_t)i + 1 + (size_t)k : last - (size_t)(i - 4);
      run_reader(json, cut, 4096, IDX_FORMAT_AUTO, &t);
      if (t.rc == 0)
        fprintf(stderr, "%s cut at %zu read as complete\n", names[k], cut);
      check_msg(&t, "at byte", "");
      if (i == 2) {
        gz = gzip_member(json, cut, &gn);
        write_file(tmp_path("cutjson.gz"), gz, gn);
        read_path(tmp_path("cutjson.gz"), &t);
        check_msg(&t, "truncated JSON", "at byte");
        free(gz);
      }
    }
    free(json);
  }
}

static int stop_at_two(void *ud, const struct idx_doc *doc,
                       const struct idx_event *ev)
{
  (void)ev;
  *(int *)ud += 1;
  return doc->events == 2 ? 42 : 0;
}

/* A callback's non-zero return stops reading: feed returns it, then and
 * on every later call, and finish fails too. */
static void reader_callback_stop(void)
{
  static const char doc[] = EVENTS("{\"ph\":\"X\"},{\"ph\":\"X\"},"
                                   "{\"ph\":\"X\"}");
  struct idx_reader *r;
  int calls = 0;

  CHECK_INT(idx_reader_new(IDX_FORMAT_AUTO, stop_at_two, &calls, &r), 0);
  CHECK_INT(idx_reader_feed(r, doc, sizeof(doc) - 1, NULL), 42);
  CHECK_INT(calls, 2);
  CHECK_INT(idx_reader_feed(r, "]", 1, NULL), 42);
  CHECK_INT(idx_reader_finish(r, NULL), 42);
  CHECK_INT(calls, 2);
  idx_reader_free(r);
  idx_reader_free(NULL);
}

/* A document of events with value in args.a: two of [0] (the first
 * settles the format, the layout is learnt from the second), `copies`
 * of value, then one more of [0], so that more than a vector's 32 bytes
 * follow each value. Its length. */
static size_t containers_doc(char *doc, size_t cap, const char *value,
                             int copies)
{
  static const char ev[] =
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"n\",\"pid\":1,\"tid\":1,"
      "\"ts\":1.5,\"dur\":2.0,\"args\":{\"a\":%s,\"device\":7}},\n";
  size_t n = (size_t)snprintf(doc, cap, "{\"traceEvents\": [");
  int k;

  for (k = 0; k < copies + 3; k++)
    n += (size_t)snprintf(doc + n, cap - n, ev,
                          k < 2 || k == copies + 2 ? "[0]" : value);
  n += (size_t)snprintf(doc + n, cap - n, "{\"ph\":\"i\"}]}");
  CHECK(n < cap);
  return n;
}

/* Arrays and objects a layout only skips (reader_match.c's
 * container_end32() where the kernel is AVX2's or AVX-512's): each event
 * of a learnt layout reads as the byte-wise reader reads it, or fails at
 * the same byte, whatever its strings, nesting and bytes; a value the
 * skipper rejects is not taken for one that ends where the layout's next
 * run (and a kept field after it) then matches. */
static void reader_skipped_containers(void)
{
  static const char *const ok[] = {
    "[\"a]\", \"[{\", [1, [2, [3]]], {\"k\": [\"}\"]}]",
    "[[59136, 768, 1], [], [1], [1], []]",
    "{\"x\": \"\\\"]\", \"y\": [\"\\\\\"]}",
    "[\"a string across a block of thirty-two bytes ]]}\", 1e-05, true]",
    "[ \n\t\r 1 , -2.5E+3 , null ]",
    "[\"\xc3\xa9\x01\", {}]",
  };
  static const char *const bad[] = {
    "[1, 2}",        "{\"k\": 1]", "[1, 2 @]",
    "[1, \xc3\xa9]", "[1, \x01]",  "[[1], [2]]]",
  };
  char doc[4096], deep[600];
  struct tally t;
  struct last l;
  size_t i, k, n;

  for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    containers_doc(doc, sizeof(doc), ok[i], 3);
    doc_ok(doc, &t, &l);
    CHECK_INT(t.delivered, 7);
    CHECK_INT(t.sum_ids, 6 * (7 + 1 + 1));
  }
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    n = containers_doc(doc, sizeof(doc), bad[i], 1);
    doc_bad(doc, n, "not JSON");
  }
  /* Past the vector's 64 levels, then past the limit (256 from the
   * document's root). */
  for (k = 0; k < 100; k++)
    deep[k] = '[', deep[200 - 1 - k] = ']';
  deep[200] = 0;
  containers_doc(doc, sizeof(doc), deep, 3);
  doc_ok(doc, &t, &l);
  CHECK_INT(t.delivered, 7);
  for (k = 0; k < 253; k++)
    deep[k] = '[', deep[506 - 1 - k] = ']';
  deep[506] = 0;
  n = containers_doc(doc, sizeof(doc), deep, 1);
  doc_bad(doc, n, "nesting deeper than 256 levels at byte");
}

int main(void)
{
  RUN(scan_kernels_match);
  RUN(reader_callback_stop);
  RUN(reader_exact_decimals);
  RUN(reader_number_words);
  RUN(reader_walk_shapes);
  RUN(reader_numbers_in_events);
  RUN(reader_time_bounds);
  RUN(reader_sync_args);
  RUN(reader_arg_keys);
  RUN(reader_bad_documents);
  RUN(reader_depth_limit);
  RUN(reader_skipped_containers);
  RUN(reader_lenient_inputs);
  RUN(reader_odd_events);
  RUN(reader_shared_memory);
  RUN(reader_format_detection);
  RUN(reader_document_fields);
  RUN(reader_big_values);
  RUN(reader_cut_documents);
  RUN(source_inflater);
  RUN(source_plain_and_gzip);
  RUN(source_damaged_gzip);
  RUN(source_close_early);
  RUN(source_unthreaded);
  RUN(source_scanned);
  RUN(reader_real_traces);
  RUN(reader_batched_traces);
  RUN(reader_raw_texts);
  RUN(reader_judged_events);
  return 0;
}
