/* Helpers of the reader and source tests (test_reader.h). */
#include <dirent.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "index/read/read.h"
#include "index/read/read_int.h"
#include "index/slice/slice_int.h"
#include "test_reader.h"

static uint64_t hash_str(uint64_t h, struct idx_str s)
{
  size_t i;

  if (s.p == NULL)
    return h * 31 + 7;
  for (i = 0; i < s.n; i++)
    h = (h ^ (unsigned char)s.p[i]) * 1099511628211ull;
  return h * 31 + s.n;
}

int keep_raw;

/* keep_raw: ev's text is its '{' to '}', and parses to ev. */
static void check_raw(const struct idx_doc *doc, const struct idx_event *ev)
{
  char *copy = malloc(ev->raw.n + 1);
  struct idx_cur c = { copy, copy + ev->raw.n, 1, doc->bare_array ? 1 : 2 };
  struct idx_parsed again;

  CHECK(ev->raw.p != NULL && copy != NULL);
  CHECK(ev->raw.n >= 2 && ev->raw.p[0] == '{' &&
        ev->raw.p[ev->raw.n - 1] == '}');
  memcpy(copy, ev->raw.p, ev->raw.n);
  copy[ev->raw.n] = '\0';
  again.scale = (int)idx_format_get(doc->format)->ts_scale;
  CHECK_INT(idx_parse_event(&c, &again), IDX_P_OK);
  CHECK(c.p == copy + ev->raw.n);
  idx_parsed_times(&again, (unsigned)again.scale);
  CHECK_INT(again.ev.ph, ev->ph);
  CHECK_INT(again.ev.has, ev->has);
  CHECK_INT(again.ev.ts_ns, ev->ts_ns);
  CHECK_INT(again.ev.dur_ns, ev->dur_ns);
  CHECK_INT(again.ev.name.n, ev->name.n);
  CHECK(ev->name.n == 0 ||
        memcmp(again.ev.name.p, ev->name.p, ev->name.n) == 0);
  /* Marked strict (idx_reader_judge()): the slicer's judge agrees. */
  if (ev->strict)
    CHECK_INT(slice_json_mend(ev->raw.p, ev->raw.n, NULL), SLICE_JSON_VALID);
  free(copy);
}

static int on_member(void *ud, struct idx_str key, struct idx_str value)
{
  struct tally *t = ud;

  CHECK(key.p != NULL && key.n >= 2 && key.p[0] == '"' &&
        key.p[key.n - 1] == '"');
  t->members = hash_str(hash_str(t->members, key), value);
  return 0;
}

static int on_event(void *ud, const struct idx_doc *doc,
                    const struct idx_event *ev)
{
  struct tally *t = ud;
  uint64_t h = t->strings;
  int i;

  if (keep_raw) {
    check_raw(doc, ev);
    t->raw = hash_str(t->raw, ev->raw);
    t->strict += ev->strict != 0;
  } else {
    CHECK(!ev->strict); /* none asked */
  }
  t->delivered++;
  t->ph[(unsigned char)ev->ph]++;
  if (ev->cat.p != NULL && ev->cat.n == 6 &&
      memcmp(ev->cat.p, "kernel", 6) == 0)
    t->kernels++;
  if (ev->has & IDX_HAS_TS)
    t->sum_ts += (uint64_t)ev->ts_ns;
  if (ev->has & IDX_HAS_DUR)
    t->sum_dur += (uint64_t)ev->dur_ns;
  t->sum_ids += (uint64_t)ev->correlation + (uint64_t)ev->external_id +
                (uint64_t)ev->device + (uint64_t)ev->stream +
                (uint64_t)ev->registers + (uint64_t)ev->shared_bytes +
                (uint64_t)ev->bytes + (uint64_t)ev->pid + (uint64_t)ev->tid;
  for (i = 0; i < 3; i++)
    t->sum_ids += (uint64_t)ev->grid[i] * 3 + (uint64_t)ev->block[i] * 5;
  t->has_bits += ev->has;
  h = hash_str(h, ev->name);
  h = hash_str(h, ev->cat);
  h = hash_str(h, ev->pid_str);
  h = hash_str(h, ev->tid_str);
  h = hash_str(h, ev->kind);
  h = hash_str(h, ev->kernel);
  t->strings = hash_str(h, ev->arg_name);
  return 0;
}

/* Feeds data[0..n) in chunks of `chunk` bytes (0: whole). */
/* Finishes a run of n bytes: what the reader knows of the document into
 * *t; frees r. */
static void end_run(struct idx_reader *r, size_t n, struct tally *t)
{
  const struct idx_doc *doc;

  if (t->rc == 0)
    t->rc = idx_reader_finish(r, &t->err);
  doc = idx_reader_doc(r);
  t->events = doc->events;
  t->skipped = doc->skipped;
  t->walked_ahead = doc->walked_ahead;
  t->format = doc->format;
  t->rank = doc->rank;
  memcpy(t->device, doc->device, sizeof(t->device));
  if (t->rc == 0)
    CHECK_INT(doc->json_bytes, n);
  idx_reader_free(r);
}

void run_reader(const char *data, size_t n, size_t chunk,
                enum idx_format forced, struct tally *t)
{
  struct idx_reader *r;
  size_t off = 0, len;

  memset(t, 0, sizeof(*t));
  CHECK_INT(idx_reader_new(forced, on_event, t, &r), 0);
  if (keep_raw) {
    CHECK_INT(idx_reader_keep_raw(r, on_member), 0);
    idx_reader_judge(r, slice_json_strict_end);
  }
  if (chunk == 0)
    chunk = n > 0 ? n : 1;
  while (off < n && t->rc == 0) {
    len = n - off < chunk ? n - off : chunk;
    t->rc = idx_reader_feed(r, data + off, len, &t->err);
    off += len;
  }
  end_run(r, n, t);
}

void same_tally(const struct tally *a, const struct tally *b)
{
  CHECK_INT(a->rc, b->rc);
  CHECK_INT(a->events, b->events);
  CHECK_INT(a->skipped, b->skipped);
  CHECK_INT(a->delivered, b->delivered);
  CHECK_INT(a->kernels, b->kernels);
  CHECK_INT(a->sum_ts, b->sum_ts);
  CHECK_INT(a->sum_dur, b->sum_dur);
  CHECK_INT(a->sum_ids, b->sum_ids);
  CHECK_INT(a->has_bits, b->has_bits);
  CHECK(a->strings == b->strings);
  CHECK(a->raw == b->raw);
  CHECK(a->members == b->members);
  CHECK(memcmp(a->ph, b->ph, sizeof(a->ph)) == 0);
  CHECK_INT(a->format, b->format);
  CHECK_INT(a->rank, b->rank);
  CHECK_STR(a->device, b->device);
  CHECK_STR(a->err.msg, b->err.msg);
}

unsigned source_flags = IDX_SOURCE_THREAD;

/* The whole JSON text of a file, through idx_source. Caller frees. */
char *slurp(const char *path, size_t *n, struct tr_err *err)
{
  struct idx_source *s;
  struct idx_chunk c;
  size_t cap = 1 << 20;
  char *out = malloc(cap);
  int rc;

  CHECK(out != NULL);
  *n = 0;
  rc = idx_source_open(path, source_flags & ~IDX_SOURCE_SCAN, &s, err);
  if (rc != 0) {
    free(out);
    return NULL;
  }
  while ((rc = idx_source_next(s, &c, err)) == 0 && c.len > 0) {
    while (*n + c.len > cap)
      cap *= 2;
    out = realloc(out, cap);
    CHECK(out != NULL);
    memcpy(out + *n, c.text, c.len);
    *n += c.len;
  }
  idx_source_close(s);
  if (rc != 0) {
    free(out);
    return NULL;
  }
  return out;
}

const char *traces_dir(void)
{
  const char *d = getenv("TRACES_DIR");

  return d != NULL ? d : "../shared/traces";
}

/* The real traces, *.gz in TRACES_DIR, sorted; returns how many. */
int list_traces(char names[][256], int max)
{
  DIR *d = opendir(traces_dir());
  struct dirent *e;
  int n = 0, i, j;
  char tmp[256];

  CHECK(d != NULL);
  while ((e = readdir(d)) != NULL && n < max) {
    size_t l = strlen(e->d_name);
    if (l > 3 && strcmp(e->d_name + l - 3, ".gz") == 0)
      snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++)
      if (strcmp(names[i], names[j]) > 0) {
        memcpy(tmp, names[i], 256);
        memcpy(names[i], names[j], 256);
        memcpy(names[j], tmp, 256);
      }
  return n;
}

void trace_path(char *out, size_t size, const char *name)
{
  CHECK(snprintf(out, size, "%s/%s", traces_dir(), name) < (int)size);
}

char *trace_text(const char *name, char *path, size_t size, size_t *n)
{
  struct tr_err err = { 0 };
  char *json;

  trace_path(path, size, name);
  json = slurp(path, n, &err);
  CHECK(json != NULL);
  return json;
}

/* s as a C string in dst, "(absent)" when absent. */

static void copy_str(char *dst, size_t size, struct idx_str s)
{
  size_t n = s.n < size - 1 ? s.n : size - 1;

  if (s.p == NULL) {
    snprintf(dst, size, "(absent)");
    return;
  }
  memcpy(dst, s.p, n);
  dst[n] = 0;
}

static int on_last(void *ud, const struct idx_doc *doc,
                   const struct idx_event *ev)
{
  struct last *l = ud;

  (void)doc;
  l->ev = *ev;
  copy_str(l->name, sizeof(l->name), ev->name);
  copy_str(l->cat, sizeof(l->cat), ev->cat);
  copy_str(l->kind, sizeof(l->kind), ev->kind);
  copy_str(l->kernel, sizeof(l->kernel), ev->kernel);
  copy_str(l->pid_str, sizeof(l->pid_str), ev->pid_str);
  l->count++;
  return 0;
}

/* Reads one document whole, checking that 1- and 7-byte chunks give the
 * same outcome; returns the whole run's tally and the last event. */
void read_doc(const char *json, size_t n, enum idx_format forced,
              struct tally *t, struct last *l)
{
  struct idx_reader *r;
  struct tally part;
  int rc;

  run_reader(json, n, 0, forced, t);
  run_reader(json, n, 1, forced, &part);
  same_tally(t, &part);
  run_reader(json, n, 7, forced, &part);
  same_tally(t, &part);
  run_batched(json, n, n > 0 ? n : 1, forced, &part);
  same_tally(t, &part);
  run_batched(json, n, 16, forced, &part);
  same_tally(t, &part);
  memset(l, 0, sizeof(*l));
  CHECK_INT(idx_reader_new(forced, on_last, l, &r), 0);
  rc = idx_reader_feed(r, json, n, NULL);
  if (rc == 0)
    rc = idx_reader_finish(r, NULL);
  CHECK_INT(rc, t->rc);
  idx_reader_free(r);
}

void doc_ok(const char *json, struct tally *t, struct last *l)
{
  read_doc(json, strlen(json), IDX_FORMAT_AUTO, t, l);
  if (t->rc != 0)
    fprintf(stderr, "unexpected error: %s\n", t->err.msg);
  CHECK_INT(t->rc, 0);
}

/* A document that must fail with `what` in the message. */
void doc_bad(const char *json, size_t n, const char *what)
{
  struct tally t;
  struct last l;

  read_doc(json, n, IDX_FORMAT_AUTO, &t, &l);
  CHECK(t.rc < 0);
  if (strstr(t.err.msg, what) == NULL) {
    fprintf(stderr, "message \"%s\" lacks \"%s\"\n", t.err.msg, what);
    CHECK(0);
  }
}

/* A scratch directory for the file tests, removed at exit. */
static char tmp_dir[512];

static void rm_tmp(void)
{
  char cmd[1024];
  DIR *d = opendir(tmp_dir);
  struct dirent *e;

  if (d == NULL)
    return;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') {
      snprintf(cmd, sizeof(cmd), "%s/%s", tmp_dir, e->d_name);
      unlink(cmd);
    }
  closedir(d);
  rmdir(tmp_dir);
}

const char *tmp_path(const char *name)
{
  static char path[1024];
  const char *base = getenv("TMPDIR");

  if (tmp_dir[0] == 0) {
    snprintf(tmp_dir, sizeof(tmp_dir), "%s/test_reader.XXXXXX",
             base != NULL ? base : "/tmp");
    CHECK(mkdtemp(tmp_dir) != NULL);
    atexit(rm_tmp);
  }
  snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
  return path;
}

void write_file(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");

  CHECK(f != NULL);
  CHECK(fwrite(data, 1, n, f) == n);
  CHECK(fclose(f) == 0);
}

/* data gzipped as one member; caller frees. */
unsigned char *gzip_member(const char *data, size_t n, size_t *out_n)
{
  z_stream zs;
  size_t cap = n + n / 100 + 1024;
  unsigned char *out = malloc(cap);

  CHECK(out != NULL);
  memset(&zs, 0, sizeof(zs));
  CHECK_INT(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  zs.next_in = (Bytef *)data;
  zs.avail_in = (uInt)n;
  zs.next_out = out;
  zs.avail_out = (uInt)cap;
  CHECK_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
  *out_n = zs.total_out;
  deflateEnd(&zs);
  return out;
}

/* The file's chunks straight from idx_source (with source_flags and the
 * stage-1 masks) into the reader, as idx_file() reads, into *t. */
void read_scanned(const char *path, struct tally *t)
{
  struct idx_source *s = NULL;
  struct idx_reader *r;
  struct idx_chunk c;
  unsigned depth;
  size_t n = 0;
  int scale;

  memset(t, 0, sizeof(*t));
  CHECK_INT(idx_reader_new(IDX_FORMAT_AUTO, on_event, t, &r), 0);
  t->rc = idx_source_open(path, source_flags | IDX_SOURCE_SCAN, &s, &t->err);
  while (t->rc == 0 && (t->rc = idx_source_next(s, &c, &t->err)) == 0 &&
         c.len > 0) {
    n += c.len;
    t->rc = idx_reader_feed_chunk(r, &c, &t->err);
    if (idx_reader_walk_hint(r, &depth, &scale))
      idx_source_hint(s, depth, scale);
  }
  idx_source_close(s);
  end_run(r, n, t);
}

/* Reads path through idx_source into a tally; the source's error (if
 * any) in t->rc / t->err. */
void read_path(const char *path, struct tally *t)
{
  size_t n;
  char *data;

  memset(t, 0, sizeof(*t));
  data = slurp(path, &n, &t->err);
  if (data == NULL) {
    t->rc = t->err.code;
    CHECK(t->rc < 0);
    return;
  }
  run_reader(data, n, 0, IDX_FORMAT_AUTO, t);
  free(data);
}

void check_msg(const struct tally *t, const char *a, const char *b)
{
  CHECK(t->rc < 0);
  if (strstr(t->err.msg, a) == NULL || strstr(t->err.msg, b) == NULL) {
    fprintf(stderr, "message \"%s\" lacks \"%s\" or \"%s\"\n", t->err.msg, a,
            b);
    CHECK(0);
  }
}

unsigned char *load(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  unsigned char *d;
  long len;

  CHECK(f != NULL);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  len = ftell(f);
  CHECK(len > 0);
  rewind(f);
  d = malloc((size_t)len + 16);
  CHECK(d != NULL);
  CHECK(fread(d, 1, (size_t)len, f) == (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return d;
}

/* Feeds data in chunks of `chunk` bytes, each with its stage-1 masks
 * (scanned in order, the string state and nesting carried) and a batch
 * walked ahead for the reader's hint, or for kineto's traceEvents until
 * the reader gives one (a guess it must turn down where it is wrong). */
void run_batched(const char *data, size_t n, size_t chunk,
                 enum idx_format forced, struct tally *t)
{
  struct idx_walker walker = { 0 };
  struct idx_batch batch = { 0 };
  struct idx_reader *r;
  struct idx_chunk c;
  size_t off = 0;
  unsigned depth = 2;
  int scale = 3;

  memset(t, 0, sizeof(*t));
  CHECK_INT(idx_reader_new(forced, on_event, t, &r), 0);
  if (keep_raw) {
    CHECK_INT(idx_reader_keep_raw(r, on_member), 0);
    idx_reader_judge(r, slice_json_strict_end);
  }
  while (off < n && t->rc == 0) {
    c.text = data + off;
    c.len = n - off < chunk ? n - off : chunk;
    (void)idx_reader_walk_hint(r, &depth, &scale);
    CHECK_INT(idx_batch_build(&batch, &walker, c.text, c.len, depth, scale), 0);
    c.batch = &batch;
    t->rc = idx_reader_feed_chunk(r, &c, &t->err);
    off += c.len;
  }
  end_run(r, n, t);
  idx_walker_free(&walker);
  idx_batch_free(&batch);
}
