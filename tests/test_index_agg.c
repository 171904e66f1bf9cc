/*
 * The aggregation fed with hand-made events (no reader): containers, the
 * launch join in both orders and on overflow, steps, phases, categories,
 * mcTracer lanes, and the time records spilled to disk.
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"
#include "tests/check.h"

static struct idx_str s_(const char *s)
{
  struct idx_str r = { s, s ? strlen(s) : 0 };

  return r;
}

static struct idx_event ev_x(const char *cat, const char *name, int64_t ts,
                             int64_t dur)
{
  struct idx_event e;

  memset(&e, 0, sizeof(e));
  e.ph = 'X';
  e.cat = s_(cat);
  e.name = s_(name);
  e.ts_ns = ts;
  e.dur_ns = dur;
  e.has = IDX_HAS_TS | IDX_HAS_DUR;
  return e;
}

static void set3(int64_t v[3], int64_t x, int64_t y, int64_t z)
{
  v[0] = x;
  v[1] = y;
  v[2] = z;
}

/* A ROCm kernel: grid/block, correlation, no shared memory. */
static struct idx_event rocm_kernel(const char *name, int64_t ts, int64_t dur,
                                    int64_t corr, int64_t gx)
{
  struct idx_event e = ev_x("kernel", name, ts, dur);

  e.has |= IDX_HAS_CORR | IDX_HAS_GRID | IDX_HAS_BLOCK;
  e.correlation = corr;
  set3(e.grid, gx, 1, 1);
  set3(e.block, 256, 1, 1);
  return e;
}

static struct idx_event rocm_launch(const char *kernel, int64_t ts,
                                    int64_t corr, int64_t gx, int64_t shmem)
{
  struct idx_event e = ev_x("cuda_runtime", "hipLaunchKernel", ts, 5);

  e.has |= IDX_HAS_CORR | IDX_HAS_GRID | IDX_HAS_BLOCK | IDX_HAS_SHMEM;
  e.correlation = corr;
  e.kernel = s_(kernel);
  set3(e.grid, gx, 1, 1);
  set3(e.block, 256, 1, 1);
  e.shared_bytes = shmem;
  return e;
}

static struct idx_doc doc_of(enum idx_format f)
{
  struct idx_doc d;

  memset(&d, 0, sizeof(d));
  d.format = f;
  d.rank = -1;
  return d;
}

static void feed(struct idx_agg *a, const struct idx_doc *d,
                 const struct idx_event *e)
{
  CHECK_INT(idx_agg_event(a, d, e), 0);
}

static json_t *summary(struct idx_agg *a, const struct idx_doc *d)
{
  struct agg_file_info info = { "mem.json", 0, -1, 1 };
  struct tr_err err = { 0 };
  json_t *out = NULL;

  CHECK_INT(idx_agg_summary(a, d, &info, &out, &err), 0);
  CHECK(out != NULL);
  return out;
}

static json_int_t geti(json_t *o, const char *key)
{
  json_t *v = json_object_get(o, key);

  if (!json_is_integer(v)) {
    fprintf(stderr, "field %s is not an integer\n", key);
    exit(1);
  }
  return json_integer_value(v);
}

/* The row of arr whose field key equals val. */
static json_t *row_by(json_t *arr, const char *key, const char *val)
{
  size_t i;
  json_t *r;

  json_array_foreach(arr, i, r)
    if (strcmp(json_string_value(json_object_get(r, key)), val) == 0)
      return r;
  fprintf(stderr, "no row with %s = %s\n", key, val);
  exit(1);
}

static void index_map_interns(void)
{
  struct agg_map m;
  uint32_t id, id2, i;
  char key[32];

  memset(&m, 0, sizeof(m));
  CHECK_INT(agg_map_intern(&m, "abc", 3, &id), 1);
  CHECK_INT(agg_map_intern(&m, "abc", 3, &id2), 0);
  CHECK_INT(id, id2);
  CHECK_INT(agg_map_intern(&m, "", 0, &id2), 1);
  CHECK(id2 != id);
  /* An empty text may come as (NULL, 0): the same key as "". */
  CHECK_INT(agg_map_intern(&m, NULL, 0, &i), 0);
  CHECK_INT(i, id2);
  CHECK_INT(agg_map_find(&m, NULL, 0, &i), 1);
  CHECK_INT(i, id2);
  for (i = 0; i < 10000; i++) {
    snprintf(key, sizeof(key), "k%u", i);
    CHECK(agg_map_intern(&m, key, strlen(key), &id) >= 0);
  }
  CHECK_INT(m.n, 10002);
  CHECK_INT(agg_map_intern(&m, "k777", 4, &id), 0);
  CHECK_INT(m.keys[id].n, 4);
  CHECK(memcmp(m.keys[id].p, "k777", 4) == 0);
  agg_map_free(&m);
  agg_map_free(NULL);
}

static void index_hist_median(void)
{
  struct agg_hist h;
  int64_t v, med;
  int i;

  memset(&h, 0, sizeof(h));
  for (i = 1; i <= 10; i++)
    CHECK_INT(agg_hist_add(&h, i * 10), 0);
  /* Lower median of 10..100 is 50; small values are exact. */
  CHECK_INT(agg_hist_median(&h, 10, 10, 100), 50);
  agg_hist_free(&h);
  for (i = 0; i < 1001; i++) {
    v = 1000000 + (int64_t)i * 7919;
    CHECK_INT(agg_hist_add(&h, v), 0);
  }
  med = agg_hist_median(&h, 1001, 1000000, 1000000 + 1000 * 7919);
  v = 1000000 + 500 * 7919;
  CHECK(llabs(med - v) * 1024 <= v);
  agg_hist_free(&h);
  agg_hist_free(NULL);
}

static void index_corr_take_and_limit(void)
{
  struct agg_corr c;
  int64_t i, v;

  CHECK_INT(agg_corr_init(&c, sizeof(int64_t), 1000), 0);
  for (i = 0; i < 1000; i++) {
    v = i * 3;
    CHECK_INT(agg_corr_put(&c, i * 4096, &v), 0); /* colliding keys */
  }
  v = 0;
  CHECK_INT(agg_corr_put(&c, 1, &v), TR_ELIMIT);
  CHECK_INT(agg_corr_put(&c, 4096, &v), TR_ECONFLICT);
  for (i = 0; i < 1000; i += 2)
    CHECK_INT(agg_corr_take(&c, i * 4096, &v), 1);
  for (i = 1; i < 1000; i += 2) {
    CHECK_INT(agg_corr_take(&c, i * 4096, &v), 1);
    CHECK_INT(v, i * 3);
  }
  CHECK_INT(c.n, 0);
  CHECK_INT(agg_corr_take(&c, 4096, &v), 0);
  agg_corr_free(&c);
}

/* Records through a 16-record buffer: many spilled runs, merged in order,
 * twice, every record once. */
static void index_runs_spill_merge(void)
{
  struct agg_spill sp = { 0 };
  struct agg_runs r;
  struct agg_iter *it;
  struct agg_rec rec, prev;
  int64_t sum_in = 0, sum_out;
  int pass, n;

  CHECK_INT(agg_runs_init(&r, 16, &sp), 0);
  srand(7);
  for (n = 0; n < 5000; n++) {
    rec.start_ns = rand() % 100000;
    rec.dur_ns = n;
    rec.type = (uint32_t)(rand() % 6);
    rec.id = 0;
    rec.aux = n % 3;
    sum_in += rec.start_ns + rec.dur_ns;
    CHECK_INT(agg_runs_add(&r, &rec), 0);
  }
  CHECK_INT(agg_runs_seal(&r), 0);
  CHECK(r.nruns > 100);
  for (pass = 0; pass < 2; pass++) {
    CHECK_INT(agg_iter_open(&r, &it), 0);
    sum_out = 0;
    n = 0;
    while (agg_iter_next(it, &rec) == 1) {
      if (n > 0)
        CHECK(prev.start_ns < rec.start_ns ||
              (prev.start_ns == rec.start_ns && prev.type <= rec.type));
      prev = rec;
      sum_out += rec.start_ns + rec.dur_ns;
      n++;
    }
    agg_iter_close(it);
    CHECK_INT(n, 5000);
    CHECK_INT(sum_out, sum_in);
  }
  agg_runs_free(&r);
}

static int rec_qsort_cmp(const void *a, const void *b)
{
  return agg_rec_cmp(a, b);
}

/* Records of every width through 64-record buffers, spilled packed (runs
 * that go on where the one before ended among them), read back as
 * qsort() orders them: every field of every record, both ways of
 * reading. */
/* agg_grow() from any capacity, 0 and 1 included (a critical-path step
 * may start with the room of a closed step that held one event). */
static void index_grow_small(void)
{
  for (size_t start = 0; start < 4; start++) {
    size_t cap = start;
    int *arr = start > 0 ? calloc(start, sizeof(*arr)) : NULL;

    CHECK_INT(agg_grow(&arr, &cap, start, sizeof(*arr)), 0);
    CHECK(cap > start && arr != NULL);
    arr[start] = 7;
    CHECK_INT(agg_grow(&arr, &cap, 100, sizeof(*arr)), 0);
    CHECK(cap > 100 && arr[start] == 7 && arr[100] == 0);
    free(arr);
  }
}

/* Every string over alphabet of each length in [lo, hi], appended to
 * *keys from *n on; the strings are spelled in buf's rows of 32. */
static void all_strings(const char *alphabet, size_t lo, size_t hi,
                        char (*buf)[32], uint64_t *keys, size_t *n)
{
  size_t k = strlen(alphabet);

  for (size_t len = lo; len <= hi; len++) {
    size_t count = 1, i, j, x;

    for (i = 0; i < len; i++)
      count *= k;
    for (i = 0; i < count; i++, (*n)++) {
      for (j = 0, x = i; j < len; j++, x /= k)
        buf[*n][j] = alphabet[x % k];
      keys[*n] = agg_key_hash(buf[*n], len);
    }
  }
}

static int cmp_u64(const void *x, const void *y)
{
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

  return a < b ? -1 : a > b;
}

/* agg_key_hash() keeps names of different lengths apart, as the names
 * met lately (agg.h's agg_seen) trust it to: every string of 0 to 7
 * bytes over "`a01" and of 8 to 17 over "`a", whose letters differ from
 * each other and from a length's low bits in one bit ("k1" and "k10",
 * "`aaa" and "`aaaa" once hashed alike). */
static void index_key_hash_apart(void)
{
  enum { MAX = 21845 + 261888 };
  char(*buf)[32] = calloc(MAX, sizeof(*buf));
  uint64_t *keys = calloc(MAX, sizeof(*keys));
  size_t n = 0, i;

  CHECK(buf != NULL && keys != NULL);
  all_strings("`a01", 0, 7, buf, keys, &n);
  all_strings("`a", 8, 17, buf, keys, &n);
  CHECK_INT(n, MAX);
  qsort(keys, n, sizeof(*keys), cmp_u64);
  for (i = 1; i < n; i++)
    CHECK(keys[i] != keys[i - 1]);
  free(buf);
  free(keys);
}

/* Fifty kernels k0 to k49, each its own row with its own time (k10 was
 * counted as k1 when their hashes met). */
static void index_kernels_apart(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  char name[16];
  json_t *sum, *rows;
  int i;

  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  for (i = 0; i < 50; i++) {
    struct idx_event e;

    snprintf(name, sizeof(name), "k%d", i);
    e = ev_x("kernel", name, 1000 * (int64_t)i, 100 + i);
    feed(&a, &d, &e);
  }
  sum = summary(&a, &d);
  rows = json_object_get(sum, "kernels");
  CHECK_INT(geti(sum, "distinct_kernels"), 50);
  CHECK_INT(json_array_size(rows), 50);
  for (i = 0; i < 50; i++) {
    json_t *r;

    snprintf(name, sizeof(name), "k%d", i);
    r = row_by(rows, "name", name);
    CHECK_INT(geti(r, "count"), 1);
    CHECK_INT(geti(r, "total_ns"), 100 + i);
  }
  json_decref(sum);
  idx_agg_free(&a);
}

static void index_runs_packed_exact(void)
{
  enum { N = 6000 };
  static const int64_t wide[] = {
    0, 1, -1, 255, 256, -129, INT64_MAX, INT64_MIN, (int64_t)1 << 40, -(1 << 20)
  };
  struct agg_spill sp = { 0 };
  struct agg_runs r;
  struct agg_iter *it;
  struct agg_rec *want = calloc(N, sizeof(*want)),
                 *got = calloc(N, sizeof(*got));
  int i, n, pass;

  CHECK(want != NULL && got != NULL);
  CHECK_INT(agg_runs_init(&r, 64, &sp), 0);
  srand(5);
  for (i = 0; i < N; i++) {
    struct agg_rec *x = &want[i];

    /* In order for a while (runs that go on), then anywhere (wrapping
     * past the ends of int64: deltas of every width). */
    x->start_ns =
        i < N / 2 ? (int64_t)i * 1000
                  : (int64_t)((uint64_t)wide[rand() % 10] + (uint64_t)rand());
    x->dur_ns = wide[rand() % 10];
    x->aux = wide[rand() % 10];
    x->id = (uint32_t)wide[rand() % 10] ^ (uint32_t)rand();
    x->type = rand() % 3 ? (uint32_t)(rand() % 6) : UINT32_MAX - (uint32_t)i;
    CHECK_INT(agg_runs_add(&r, x), 0);
  }
  CHECK_INT(agg_runs_seal(&r), 0);
  CHECK(r.spill != NULL && r.nruns > 10);
  qsort(want, N, sizeof(*want), rec_qsort_cmp);
  for (pass = 0; pass < 2; pass++) {
    CHECK_INT(agg_iter_open(&r, &it), 0);
    if (pass == 0)
      for (n = 0; n < N && agg_iter_next(it, &got[n]) == 1; n++)
        ;
    else
      n = agg_iter_read(it, got, N + 1);
    CHECK_INT(n, N);
    CHECK(memcmp(got, want, N * sizeof(*got)) == 0);
    agg_iter_close(it);
  }
  agg_runs_free(&r);
  free(want);
  free(got);
}

static json_t *launch_row(json_t *sum, const char *name, int64_t gx,
                          int with_grid)
{
  json_t *arr = json_object_get(sum, "launches"), *r, *g;
  size_t i;

  json_array_foreach(arr, i, r) {
    g = json_object_get(r, "grid");
    if (strcmp(json_string_value(json_object_get(r, "name")), name) != 0)
      continue;
    if (!with_grid && json_is_null(g))
      return r;
    if (with_grid && json_is_array(g) &&
        json_integer_value(json_array_get(g, 0)) == gx)
      return r;
  }
  fprintf(stderr, "no launch row %s grid %lld\n", name, (long long)gx);
  exit(1);
}

static void check_shmem(json_t *row, int64_t want)
{
  json_t *v = json_object_get(row, "shared_bytes");

  if (want < 0)
    CHECK(json_is_null(v));
  else
    CHECK_INT(json_integer_value(v), want);
}

static void index_join_both_orders(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  struct idx_event e;
  json_t *sum, *row;
  int i;

  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  e = rocm_kernel("A", 100, 10, 1, 100); /* kernel first */
  feed(&a, &d, &e);
  e = rocm_launch("A", 50, 1, 100, 512);
  feed(&a, &d, &e);
  e = rocm_launch("A", 150, 2, 200, 1024); /* launch first */
  feed(&a, &d, &e);
  e = rocm_kernel("A", 200, 30, 2, 200);
  feed(&a, &d, &e);
  e = ev_x("cuda_runtime", "hipGraphLaunch", 300, 40);
  e.has |= IDX_HAS_CORR;
  e.correlation = 3;
  feed(&a, &d, &e);
  for (i = 0; i < 3; i++) {
    e = rocm_kernel("B", 400 + i * 10, 5, 3, 50);
    feed(&a, &d, &e);
  }
  e = rocm_kernel("C", 500, 7, 4, 0); /* ROCm 6.2: no grid/block */
  e.has &= ~(uint32_t)(IDX_HAS_GRID | IDX_HAS_BLOCK);
  feed(&a, &d, &e);
  e = rocm_launch("C", 490, 4, 8, 0);
  feed(&a, &d, &e);
  /* D's launches disagree: one without shared memory, one with. */
  e = rocm_launch("D", 600, 5, 9, 0);
  e.has &= ~(uint32_t)IDX_HAS_SHMEM;
  feed(&a, &d, &e);
  e = rocm_launch("D", 601, 6, 9, 64);
  feed(&a, &d, &e);
  e = rocm_kernel("D", 700, 3, 7, 9); /* correlation 7: no launch */
  feed(&a, &d, &e);
  sum = summary(&a, &d);
  check_shmem(launch_row(sum, "A", 100, 1), 512);
  row = launch_row(sum, "A", 200, 1);
  check_shmem(row, 1024);
  CHECK_INT(geti(row, "total_ns"), 30);
  row = launch_row(sum, "B", 50, 1);
  check_shmem(row, -1);
  CHECK_INT(geti(row, "count"), 3);
  check_shmem(launch_row(sum, "C", 8, 1), 0);
  CHECK(json_is_null(
      json_object_get(launch_row(sum, "C", 8, 1), "registers_per_thread")));
  check_shmem(launch_row(sum, "D", 9, 1), -1);
  CHECK_INT(json_array_size(json_object_get(sum, "launches")), 5);
  CHECK_INT(geti(sum, "kernel_events"), 7);
  CHECK_INT(geti(sum, "distinct_kernels"), 4);
  CHECK_INT(geti(sum, "runtime_events"), 6);
  row = row_by(json_object_get(sum, "runtime"), "name", "hipLaunchKernel");
  CHECK_INT(geti(row, "count"), 5);
  CHECK_INT(geti(row, "total_ns"), 25);
  json_decref(sum);
  idx_agg_free(&a);
}

/* A ROCm 6.2 copy: no bytes on the device event, the runtime call's
 * "size" (same correlation) supplies them, whichever comes first. */
static struct idx_event rocm_copy(int64_t ts, int64_t corr, int64_t bytes)
{
  struct idx_event e =
      ev_x("gpu_memcpy", "Memcpy HtoD (Host -> Device)", ts, 20);

  e.has |= IDX_HAS_CORR;
  e.correlation = corr;
  e.kind = s_("HtoD");
  if (bytes >= 0) {
    e.has |= IDX_HAS_BYTES;
    e.bytes = bytes;
  }
  return e;
}

static struct idx_event copy_call(int64_t ts, int64_t corr, int64_t size)
{
  struct idx_event e = ev_x("cuda_runtime", "hipMemcpyWithStream", ts, 60);

  e.has |= IDX_HAS_CORR | IDX_HAS_BYTES;
  e.correlation = corr;
  e.bytes = size;
  return e;
}

static void index_copy_bytes_from_runtime(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  struct idx_event e;
  json_t *sum, *row;

  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  e = copy_call(10, 1, 2560); /* the call first */
  feed(&a, &d, &e);
  e = rocm_copy(30, 1, -1);
  feed(&a, &d, &e);
  e = rocm_copy(100, 2, -1); /* the copy first */
  feed(&a, &d, &e);
  e = copy_call(90, 2, 4096);
  feed(&a, &d, &e);
  e = rocm_copy(200, 3, 64); /* bytes of its own win over the call's */
  feed(&a, &d, &e);
  e = copy_call(190, 3, 999);
  feed(&a, &d, &e);
  e = rocm_copy(300, 4, -1); /* no call at all: bytes unknown */
  feed(&a, &d, &e);
  sum = summary(&a, &d);
  row = row_by(json_object_get(sum, "memcpy"), "kind", "HtoD");
  CHECK_INT(geti(row, "count"), 4);
  CHECK_INT(geti(row, "bytes"), 2560 + 4096 + 64);
  CHECK_INT(geti(row, "max_bytes"), 4096);
  CHECK_INT(geti(sum, "memcpy_bytes"), 2560 + 4096 + 64);
  json_decref(sum);
  idx_agg_free(&a);
}

/* More kernels waiting than the pending table holds: the overflow takes
 * the (name, grid, block) fallback; disagreeing launches give null. */
static void index_join_overflow(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  struct idx_event e;
  json_t *sum, *row;
  int i;

  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  for (i = 0; i < 40000; i++) {
    e = rocm_kernel("K", i * 10, 3, i, 7);
    feed(&a, &d, &e);
  }
  for (i = 0; i < 40000; i++) {
    e = rocm_launch("K", i * 10 - 1, i, 7, 4096);
    feed(&a, &d, &e);
  }
  for (i = 0; i < 33000; i++) {
    e = rocm_kernel("L", 500000 + i * 10, 2, 100000 + i, 9);
    feed(&a, &d, &e);
  }
  for (i = 0; i < 33000; i++) {
    e = rocm_launch("L", 500000 + i * 10 - 1, 100000 + i, 9, i % 2 ? 1 : 2);
    feed(&a, &d, &e);
  }
  sum = summary(&a, &d);
  row = launch_row(sum, "K", 7, 1);
  check_shmem(row, 4096);
  CHECK_INT(geti(row, "count"), 40000);
  CHECK_INT(geti(row, "total_ns"), 120000);
  CHECK_INT(json_array_size(json_object_get(sum, "launches")), 4);
  json_decref(sum);
  idx_agg_free(&a);
}

static void feed_label(struct idx_agg *a, const struct idx_doc *d,
                       const char *cat, const char *name, int64_t ts,
                       int64_t dur)
{
  struct idx_event e = ev_x(cat, name, ts, dur);

  feed(a, d, &e);
}

static void feed_kernel(struct idx_agg *a, const struct idx_doc *d,
                        const char *name, int64_t ts, int64_t dur, int64_t gx)
{
  struct idx_event e = ev_x("kernel", name, ts, dur);

  e.has |= IDX_HAS_GRID | IDX_HAS_BLOCK | IDX_HAS_SHMEM | IDX_HAS_REGS;
  set3(e.grid, gx, 1, 1);
  set3(e.block, 128, 1, 1);
  feed(a, d, &e);
}

static void check_step(json_t *steps, size_t i, const char *kind, int64_t count,
                       int64_t tokens, int64_t padded, int64_t kernel_ns,
                       const char *source)
{
  json_t *r = json_array_get(steps, i);

  CHECK(r != NULL);
  CHECK_STR(json_string_value(json_object_get(r, "kind")), kind);
  CHECK_INT(geti(r, "count"), count);
  CHECK_INT(geti(r, "tokens"), tokens);
  CHECK_INT(geti(r, "padded"), padded);
  CHECK_INT(geti(r, "kernel_ns"), kernel_ns);
  CHECK_STR(json_string_value(json_object_get(r, "source")), source);
}

static void index_steps_gpu_labels(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  const char *g = "gpu_user_annotation";
  struct idx_agg a;
  json_t *sum, *steps;

  CHECK_INT(idx_agg_init(&a, NULL, 4), 0); /* spills too */
  feed_label(&a, &d, "user_annotation", "decode[bs=3/4 tok=3]", 0, 100);
  feed_label(&a, &d, g, "ProfilerStep#3", 0, 10000);
  feed_label(&a, &d, g, "decode_helper[x]", 0, 10000);
  feed_label(&a, &d, g, "prefill[bs=2 tok=100 ctx=[50, 50]]", 4000, 1000);
  feed_kernel(&a, &d, "k", 1000, 100, 1);
  feed_kernel(&a, &d, "k", 1499, 10, 1);
  feed_kernel(&a, &d, "k", 1500, 10, 1); /* label end: outside */
  feed_kernel(&a, &d, "k", 2100, 50, 1);
  feed_kernel(&a, &d, "k", 3050, 20, 1);
  feed_kernel(&a, &d, "k", 4000, 300, 1); /* label start: inside */
  feed_kernel(&a, &d, "k", 9000, 5, 1);
  feed_label(&a, &d, g, "decode[bs=3/4 tok=3 d=3]", 1000, 500);
  feed_label(&a, &d, g, "decode[bs=32 tok=32 d=32 tbo=1]", 2000, 500);
  feed_label(&a, &d, g, "dummy_decode[bs=1 tok=1]", 3000, 100);
  sum = summary(&a, &d);
  steps = json_object_get(sum, "steps");
  CHECK_INT(json_array_size(steps), 3);
  check_step(steps, 0, "decode", 2, 35, 1, 160, "gpu");
  CHECK_INT(geti(json_array_get(steps, 0), "total_ns"), 1000);
  CHECK_INT(geti(json_array_get(steps, 0), "avg_ns"), 500);
  check_step(steps, 1, "dummy_decode", 1, 1, 0, 20, "gpu");
  check_step(steps, 2, "prefill", 1, 100, 0, 300, "gpu");
  CHECK_INT(geti(sum, "gpu_busy_ns"), 486);
  json_decref(sum);
  idx_agg_free(&a);
}

static void index_steps_cpu_bare(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  json_t *sum, *steps;

  d.bare_array = 1;
  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  feed_label(&a, &d, NULL, "propose_eagle[1/3 tok=16 bs=16/16 graph]", 5, 10);
  feed_label(&a, &d, NULL, "decode[bs=117/128 tok=117 d=117 spec=1]", 20, 10);
  feed_label(&a, &d, NULL, "aten::mm", 20, 10);
  sum = summary(&a, &d);
  steps = json_object_get(sum, "steps");
  CHECK_INT(json_array_size(steps), 2);
  check_step(steps, 0, "decode", 1, 117, 1, 0, "cpu");
  check_step(steps, 1, "propose_eagle", 1, 16, 0, 0, "cpu");
  CHECK_INT(geti(sum, "t0_ns"), 5);
  CHECK_INT(geti(sum, "span_ns"), 25);
  json_decref(sum);
  idx_agg_free(&a);
}

#define MS 1000000

static void check_phase(json_t *ph, const char *cause, int64_t start,
                        int64_t end, int64_t busy, int64_t kernels,
                        int64_t top_grid)
{
  json_t *top = json_object_get(ph, "top_launches");

  CHECK(ph != NULL);
  CHECK_STR(json_string_value(json_object_get(ph, "cause")), cause);
  CHECK_INT(geti(ph, "start_ns"), start);
  CHECK_INT(geti(ph, "end_ns"), end);
  CHECK_INT(geti(ph, "busy_ns"), busy);
  CHECK_INT(geti(ph, "kernel_events"), kernels);
  CHECK(json_array_size(top) >= 1 && json_array_size(top) <= 5);
  CHECK_INT(json_integer_value(json_array_get(
                json_object_get(json_array_get(top, 0), "grid"), 0)),
            top_grid);
}

/* Initialisation, a warm-up shape after a gap, a steady shape, a lone
 * kernel in the idle gap (too short: merged), a second steady shape. */
static void index_phases_gap_and_shape(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  json_t *sum, *ph;
  int i;

  CHECK_INT(idx_agg_init(&a, NULL, 8), 0);
  for (i = 19; i >= 0; i--)
    feed_kernel(&a, &d, "big", 970 * (int64_t)MS + i * 5 * MS, 5 * MS, 1028);
  for (i = 0; i < 10; i++)
    feed_kernel(&a, &d, "init", (int64_t)i * 2 * MS, MS, 3);
  for (i = 0; i < 5; i++)
    feed_kernel(&a, &d, "big", 220 * (int64_t)MS + i * 10 * MS, 10 * MS, 520);
  for (i = 0; i < 20; i++)
    feed_kernel(&a, &d, "big", 270 * (int64_t)MS + i * 20 * MS, 20 * MS, 2056);
  feed_kernel(&a, &d, "blip", 800 * (int64_t)MS, MS, 1);
  sum = summary(&a, &d);
  ph = json_object_get(sum, "phases");
  CHECK_INT(json_array_size(ph), 4);
  check_phase(json_array_get(ph, 0), "start", 0, 19 * MS, 10 * MS, 10, 3);
  check_phase(json_array_get(ph, 1), "gap", 220 * MS, 270 * MS, 50 * MS, 5,
              520);
  check_phase(json_array_get(ph, 2), "shape", 270 * MS, 801 * MS, 401 * MS, 21,
              2056);
  check_phase(json_array_get(ph, 3), "gap", 970 * MS, 1070 * MS, 100 * MS, 20,
              1028);
  CHECK_INT(geti(json_array_get(ph, 3), "index"), 3);
  CHECK_INT(geti(sum, "gpu_busy_ns"), 561 * MS);
  CHECK_INT(geti(sum, "span_ns"), 1070 * MS);
  CHECK_STR(json_string_value(json_object_get(
                json_array_get(json_object_get(sum, "kernels"), 0), "name")),
            "big");
  json_decref(sum);
  idx_agg_free(&a);
}

static struct idx_event mc(int64_t pid, const char *name, int64_t ts,
                           int64_t dur)
{
  struct idx_event e = ev_x(NULL, name, ts, dur);

  e.has |= IDX_HAS_PID;
  e.pid = pid;
  return e;
}

static void index_mctracer_lanes(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_MCTRACER);
  struct idx_agg a;
  struct idx_event e;
  json_t *sum, *row;

  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  e = mc(2, "process_name", 0, 0);
  e.ph = 'M';
  e.has &= ~(uint32_t)(IDX_HAS_TS | IDX_HAS_DUR);
  e.arg_name = s_("C500");
  feed(&a, &d, &e);
  e = mc(1, "mcLaunchKernel", 0, 5);
  feed(&a, &d, &e);
  e = mc(1, "mcMemcpyAsync", 20, 1000);
  feed(&a, &d, &e);
  e = mc(2, "kernel_kernel", 10, 100);
  e.has |= IDX_HAS_GRID | IDX_HAS_BLOCK | IDX_HAS_REGS | IDX_HAS_SHMEM;
  set3(e.grid, 2056, 32, 1);
  set3(e.block, 128, 1, 1);
  e.registers = 192;
  e.shared_bytes = 32768;
  feed(&a, &d, &e);
  e = mc(3, "memcpy DTOD(device,device)", 200, 50);
  e.has |= IDX_HAS_BYTES;
  e.bytes = 4096;
  feed(&a, &d, &e);
  e = mc(3, "memcpy HTOD(pinned,device)", 300, 5);
  e.has |= IDX_HAS_BYTES;
  e.bytes = 8;
  feed(&a, &d, &e);
  e = mc(3, "memset(device)", 400, 7);
  feed(&a, &d, &e);
  sum = summary(&a, &d);
  CHECK_STR(json_string_value(json_object_get(sum, "format")), "mctracer");
  CHECK_STR(json_string_value(json_object_get(sum, "device")), "C500");
  row = launch_row(sum, "kernel_kernel", 2056, 1);
  CHECK_INT(geti(row, "registers_per_thread"), 192);
  CHECK_INT(geti(row, "shared_bytes"), 32768);
  CHECK_INT(geti(sum, "memcpy_count"), 2);
  CHECK_INT(geti(sum, "memcpy_bytes"), 4104);
  CHECK_INT(geti(sum, "memset_count"), 1);
  CHECK_INT(geti(sum, "device_ns"), 162);
  CHECK_INT(geti(sum, "runtime_ns"), 1005);
  row = json_array_get(json_object_get(sum, "runtime"), 0);
  CHECK_STR(json_string_value(json_object_get(row, "name")), "mcMemcpyAsync");
  row = row_by(json_object_get(sum, "memcpy"), "kind", "DtoD");
  CHECK_INT(geti(row, "bytes"), 4096);
  CHECK_INT(geti(row, "max_bytes"), 4096);
  row = row_by(json_object_get(sum, "categories"), "category", "custom");
  CHECK_INT(geti(row, "total_ns"), 100);
  row = row_by(json_object_get(sum, "categories"), "category", "copy");
  CHECK_INT(geti(row, "total_ns"), 55);
  CHECK(json_real_value(json_object_get(row, "share")) > 0.339 &&
        json_real_value(json_object_get(row, "share")) < 0.3396);
  json_decref(sum);
  idx_agg_free(&a);
}

static void index_rules_builtin(void)
{
  static const char *const cases[][2] = {
    { "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8", "gemm" },
    { "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication" },
    { "rcclGenericKernel<1, false>", "communication" },
    { "cross_device_reduce_1stage<__hip_bfloat16, 8>", "communication" },
    { "MEMORY_COPY_DTOD", "copy" },
    { "__amd_rocclr_copyBuffer", "copy" },
    { "void at::native::vectorized_gather_kernel<16, long>(char*)", "routing" },
    { "void at::native::_scatter_gather_elementwise_kernel<128, 8>",
      "routing" },
    { "kernel_kernel", "custom" },
    { "kernel_kernel_1", "custom" },
    { "triton_red_fused_add_mean_mul_pow_rsqrt_0", "custom" },
    { "moe_sorting_kernel", "moe" },
    { "aiter::topk_softplus", "moe" },
    { "void at::native::cunn_SoftMaxForward<8>", "softmax_topk" },
    { "flash_fwd_kernel", "attention" },
    { "paged_attention_ll4mi_QKV_mfma16_kernel", "attention" },
    { "void at::native::normal_kernel", "other" },
    { "rms_norm_kernel<c10::BFloat16>", "normalization" },
    { "void at::native::unrolled_elementwise_kernel<add>", "elementwise" },
    { "wvSplitK_hf_sml_", "gemm" },
    { "async_copy_kernel", "other" },
    { "semaphore_reset", "sync" },
    { "_combined_routing_compute", "routing" },
    { "batched_transpose_32x32_half", "routing" },
    { "triton_poi_fused_clone_transpose_21", "custom" },
    { "kernel_unified_attention_3d", "attention" },
    { "void at::native::elementwise_kernel<128, 2, at::native::"
      "gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda>",
      "copy" },
    { "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32", "gemm" },
    { "Memset (Device)", "memset" },
    { "", "other" },
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    CHECK_STR(idx_category(NULL, cases[i][0]), cases[i][1]);
}

/* A pattern past ASCII (UTF-8) matches its own bytes, case-folded only
 * in A-Z, whether the name is short (matched in lower case at once) or
 * longer than any such (matched byte by byte). */
static void user_rules_utf8(const char *path)
{
  static const char tail[] = "_Gemm_\303\234ber"; /* "_Gemm_\u00dcber" */
  size_t n = 20000;
  struct idx_rules *r = NULL;
  struct tr_err err = { 0 };
  char *name = malloc(n + sizeof(tail));
  FILE *f = fopen(path, "w");

  CHECK(f != NULL && name != NULL);
  fputs("moe  GEMM_\303\234BER\nattention  ^\303\251t\n", f);
  fclose(f);
  CHECK_INT(idx_rules_load(path, &r, &err), 0);
  CHECK_STR(idx_category(r, "my_gemm_\303\234ber"), "moe");
  CHECK_STR(idx_category(r, "my_gemm_\303\274ber"), "gemm"); /* u-umlaut */
  CHECK_STR(idx_category(r, "\303\251tage"), "attention");
  memset(name, 'x', n);
  memcpy(name + n, tail, sizeof(tail));
  CHECK_STR(idx_category(r, name), "moe");
  memcpy(name, "\303\251t", 3);
  name[n] = '\0';
  CHECK_STR(idx_category(r, name), "attention");
  free(name);
  idx_rules_free(r);
}

static void index_rules_user_file(void)
{
  const char *path = "test_index_agg.rules";
  struct idx_rules *r = NULL;
  struct tr_err err = { 0 };
  FILE *f = fopen(path, "w");

  CHECK(f != NULL);
  fputs("# mine first\nattention  ^Kernel_Kernel\n\nmoe  Cijk_Alik\n", f);
  fclose(f);
  CHECK_INT(idx_rules_load(path, &r, &err), 0);
  CHECK_STR(idx_category(r, "kernel_kernel_1"), "attention");
  CHECK_STR(idx_category(r, "xkernel_kernel"), "other");
  CHECK_STR(idx_category(r, "Cijk_Alik_Bljk"), "moe");
  CHECK_STR(idx_category(r, "Cijk_Ailk"), "gemm");
  idx_rules_free(r);
  user_rules_utf8(path);
  f = fopen(path, "w");
  fputs("gemm cublas\nbogus x\n", f);
  fclose(f);
  r = NULL;
  CHECK_INT(idx_rules_load(path, &r, &err), TR_EINVAL);
  CHECK(r == NULL);
  CHECK(strstr(err.msg, ":2:") != NULL);
  remove(path);
  idx_rules_free(NULL);
}

/* Families by the built-in rules: templates and parameters go, Tensile
 * solution fields, tiles and Triton ordinals go, ck_tile's kentry is its
 * kernel, mangled names are read first. */
static void index_families_builtin(void)
{
  static const char *const cases[][2] = {
    { "Cijk_Alik_Bljk_BBS_BH_Bias_MT128x128x64_MI16x16x1_SN_LDSB1",
      "Cijk_Alik_Bljk_BBS_BH_Bias" },
    { "Cijk_Alik_Bljk_BBS_BH_Bias_MT64x16x512_MI32x32x8_SN_GRVWA8",
      "Cijk_Alik_Bljk_BBS_BH_Bias" },
    { "triton_red_fused_add_mean_mul_pow_rsqrt_10",
      "triton_red_fused_add_mean_mul_pow_rsqrt" },
    { "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NTN", "nvjet_tst" },
    { "cutlass_80_tensorop_s16816gemm_f16_128x128_32x3_nn_align8",
      "cutlass_80_tensorop_s16816gemm_f16" },
    { "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
      "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n" },
    { "volta_sgemm_128x64_nn", "volta_sgemm" },
    { "void at::native::vectorized_elementwise_kernel<4, at::native::"
      "FillFunctor<float> >(int, at::native::FillFunctor<float>, "
      "std::array<char*, 1ul>)",
      "at::native::vectorized_elementwise_kernel" },
    { "void at::native::(anonymous namespace)::distribution_kernel<float, "
      "4>(long, at::PhiloxCudaState)",
      "at::native::(anonymous namespace)::distribution_kernel" },
    { "_ZN2ck13kernel_gemm_vILi256EEEvPKfPf", "ck::kernel_gemm_v" },
    { "_ZN7ck_tile6kentryILi1ENS_10GemmKernelIfEEEEvv", "ck_tile::GemmKernel" },
    { "_Znot_a_mangled_name", "_Znot_a_mangled_name" },
    { "batched_transpose_256x4_half", "batched_transpose_256x4_half" },
    { "", "" },
  };

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *f = idx_family(NULL, cases[i][0]);

    CHECK_STR(f, cases[i][1]);
    free(f);
  }
}

/* The demangler reads real-world manglings (std::bfloat16_t as DF16b),
 * refuses names that are not manglings, and hostile ones, deep or long,
 * end in NULL or text, never in a crash (the sanitized build runs it). */
static void index_demangle_bounds(void)
{
  char *d = idx_demangle("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdIDF16bEE"
                         "EEvv");
  size_t n = 200000, i;
  char *deep = malloc(n + 16);

  CHECK_STR(d, "void ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<std::"
               "bfloat16_t> >()");
  free(d);
  CHECK(idx_demangle("gemm_kernel") == NULL);
  CHECK(idx_demangle("_Z") == NULL);
  memcpy(deep, "_Z1fI", 5);
  for (i = 5; i + 4 < 8000; i += 3)
    memcpy(deep + i, "1aI", 3);
  strcpy(deep + i, "iEvv");
  free(idx_demangle(deep));
  for (i = 5; i + 4 < n; i += 3)
    memcpy(deep + i, "1aI", 3);
  strcpy(deep + i, "iEvv");
  CHECK(idx_demangle(deep) == NULL); /* longer than the cap */
  free(deep);
}

/* family lines in a user's rules file come before the built-ins, and bad
 * ones are refused naming the line. */
static void index_families_user_file(void)
{
  const char *path = "test_index_agg.family.rules";
  struct idx_rules *r = NULL;
  struct tr_err err = { 0 };
  static const char *const cases[][2] = {
    { "my_gemm_128x128", "my_gemm" },
    { "aiter::fmoe_stage1_bf16_g1u1_32x128_pf3",
      "aiter::fmoe_stage1_bf16_g1u1" },
    { "Cijk_Alik_MT128x128x64", "Cijk_Alik_MT128x128x64" },
    { "wrap<inner<int>, 3>", "inner" },
  };
  FILE *f = fopen(path, "w");
  char *fam;

  CHECK(f != NULL);
  fputs("family ^my_gemm_ as my_gemm\nfamily fmoe tile\n"
        "family ^Cijk_ keep\nfamily ^wrap< arg 1\ngemm ^my_\n",
        f);
  fclose(f);
  CHECK_INT(idx_rules_load(path, &r, &err), 0);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fam = idx_family(r, cases[i][0]);
    CHECK_STR(fam, cases[i][1]);
    free(fam);
  }
  CHECK_STR(idx_category(r, "my_gemm_128x128"), "gemm");
  idx_rules_free(r);
  for (int bad = 0; bad < 4; bad++) {
    static const char *const lines[] = { "family x\n", "family x tile y\n",
                                         "family x arg 0\n",
                                         "family x bogus\n" };

    f = fopen(path, "w");
    fputs(lines[bad], f);
    fclose(f);
    r = NULL;
    CHECK_INT(idx_rules_load(path, &r, &err), TR_EINVAL);
    CHECK(r == NULL && strstr(err.msg, ":1:") != NULL);
  }
  remove(path);
}

/* Beyond the cap, new names fold into one row "(N more names)": N the
 * distinct names folded, its figures theirs summed, the names kept the
 * first of the file, totals whole, a warning in the summary. */
static void index_names_fold_beyond_cap(void)
{
  static const char *const order[] = { "a", "b", "c", "d", "e", "d",
                                       "f", "a", "g", "e", "h" };
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  int64_t total = 0, fold_total = 0;
  uint64_t fold_count = 0;
  char name[16];
  json_t *sum, *fold;
  size_t i;

  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  idx_agg_cap_names(&a, 3);
  for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
    struct idx_event e = ev_x("kernel", order[i], 100 * (int64_t)i, 10 + i);

    feed(&a, &d, &e);
    total += 10 + (int64_t)i;
    if (strcmp(order[i], "c") > 0) { /* a, b, c are kept */
      fold_total += 10 + (int64_t)i;
      fold_count++;
    }
  }
  for (i = 0; i < 5; i++) {
    struct idx_event e;

    snprintf(name, sizeof(name), "hip%zu", i);
    e = ev_x("cuda_runtime", name, 5 + (int64_t)i, 1);
    feed(&a, &d, &e);
  }
  sum = summary(&a, &d);
  fold = row_by(json_object_get(sum, "kernels"), "name", "(5 more names)");
  CHECK(fold != NULL);
  CHECK_INT(geti(fold, "count"), fold_count);
  CHECK_INT(geti(fold, "total_ns"), fold_total);
  CHECK_INT(json_array_size(json_object_get(sum, "kernels")), 4);
  CHECK(row_by(json_object_get(sum, "kernels"), "name", "c") != NULL);
  CHECK_INT(geti(sum, "kernel_ns"), total);
  CHECK_INT(geti(sum, "distinct_kernels"), 8);
  CHECK_INT(geti(sum, "kernel_names_folded"), 5);
  CHECK_INT(geti(sum, "runtime_names_folded"), 2);
  CHECK(row_by(json_object_get(sum, "runtime"), "name", "(2 more names)"));
  CHECK_INT(json_array_size(json_object_get(sum, "warnings")), 2);
  CHECK_STR(json_string_value(json_object_get(
                json_array_get(json_object_get(sum, "warnings"), 0), "code")),
            "kernel_names_capped");
  json_decref(sum);
  idx_agg_free(&a);
}

/* agg_name_clean(): a plain name as it is (no copy); control bytes as
 * JSON escapes; a long name cut on a character with the hash of the whole,
 * so that two names alike in their first 8 KiB stay apart. */
static void index_name_clean(void)
{
  static char buf[AGG_NAME_MAX + 1];
  static char a[AGG_NAME_MAX * 2], b[AGG_NAME_MAX * 2];
  struct idx_str plain = s_("void gemm<128>(float*)"),
                 ctrl = { "a\0b\n\x7f", 5 };
  struct idx_str out, out_b;
  char first[64];
  unsigned what;

  out = agg_name_clean(plain, AGG_NAME_MAX, buf, &what);
  CHECK(out.p == plain.p && out.n == plain.n && what == 0);
  /* The word-at-a-time check against the byte rule, every byte value at
   * every place of a 19-byte name among printable and UTF-8 bytes. */
  for (int c = 0; c < 256; c++)
    for (size_t at = 0; at < 19; at++) {
      char name[19];

      for (size_t i = 0; i < sizeof(name); i++)
        name[i] = (char)(i % 2 ? 0xe2 : 0x7e);
      name[at] = (char)c;
      CHECK_INT(agg_has_control(name, sizeof(name)), c < 0x20 || c == 0x7f);
    }
  out = agg_name_clean(ctrl, AGG_NAME_MAX, buf, &what);
  CHECK_INT(what, AGG_NAME_ESCAPED);
  CHECK_INT(out.n, 16);
  CHECK(memcmp(out.p, "a\\u0000b\\n\\u007f", 16) == 0);
  /* 'x' then 3-byte characters: the cut falls inside one, and backs off. */
  memset(a, 'x', sizeof(a));
  for (size_t i = 1; i + 3 <= sizeof(a); i += 3)
    memcpy(a + i, "\xe2\x82\xac", 3); /* the euro sign */
  memcpy(b, a, sizeof(b));
  b[sizeof(b) - 1] = 'y'; /* differs only at its last byte */
  out = agg_name_clean((struct idx_str){ a, sizeof(a) }, AGG_NAME_MAX, buf,
                       &what);
  CHECK_INT(what, AGG_NAME_CUT);
  CHECK(out.n <= AGG_NAME_MAX && out.n > AGG_NAME_MAX - 24);
  CHECK(memcmp(out.p + out.n - 20, "...#", 4) == 0);
  CHECK(((unsigned char)out.p[out.n - 21] & 0xC0) != 0xC0); /* whole chars */
  CHECK_INT((out.n - 20 - 1) % 3, 0);
  snprintf(first, sizeof(first), "%.20s", out.p + out.n - 20);
  out_b = agg_name_clean((struct idx_str){ b, sizeof(b) }, AGG_NAME_MAX, buf,
                         &what);
  CHECK_INT(out_b.n, out.n);
  CHECK(memcmp(first, out_b.p + out_b.n - 20, 20) != 0);
}

/* Kernel names with a NUL (two of them equal up to it), a newline and a
 * name of 1 MiB: every one a row of its own, escaped or cut, counted in
 * the warnings; counts and totals exact. */
static void index_names_escaped_and_cut(void)
{
  static char huge[1 << 20];
  struct idx_str names[] = { { "k\0one", 5 },
                             { "k\0two", 5 },
                             { "line\nbreak", 10 },
                             { huge, sizeof(huge) } };
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  json_t *sum, *kernels, *w;
  char want[64];
  size_t i;

  memset(huge, 'h', sizeof(huge));
  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  for (i = 0; i < 8; i++) {
    struct idx_event e = ev_x("kernel", "x", 100 * (int64_t)i, 10);

    e.name = names[i % 4];
    feed(&a, &d, &e);
  }
  sum = summary(&a, &d);
  kernels = json_object_get(sum, "kernels");
  CHECK_INT(json_array_size(kernels), 4);
  CHECK_INT(geti(row_by(kernels, "name", "k\\u0000one"), "count"), 2);
  CHECK_INT(geti(row_by(kernels, "name", "k\\u0000two"), "count"), 2);
  CHECK_INT(geti(row_by(kernels, "name", "line\\nbreak"), "total_ns"), 20);
  json_array_foreach(kernels, i, w) {
    const char *n = json_string_value(json_object_get(w, "name"));

    CHECK(strlen(n) <= AGG_NAME_MAX);
    CHECK(strlen(json_string_value(json_object_get(w, "family"))) <=
          AGG_NAME_MAX);
  }
  w = json_object_get(sum, "warnings");
  CHECK_INT(json_array_size(w), 2);
  CHECK_STR(json_string_value(json_object_get(json_array_get(w, 0), "code")),
            "names_cut");
  snprintf(want, sizeof(want), "1 kernel names, 0 host API names");
  CHECK(strstr(
            json_string_value(json_object_get(json_array_get(w, 0), "message")),
            want) != NULL);
  CHECK_STR(json_string_value(json_object_get(json_array_get(w, 1), "code")),
            "names_escaped");
  json_decref(sum);
  idx_agg_free(&a);
}

static void index_empty_summary(void)
{
  struct idx_doc d = doc_of(IDX_FORMAT_KINETO);
  struct idx_agg a;
  struct idx_event e = ev_x("kernel", "bad", 10, -1);
  json_t *sum;

  CHECK_INT(idx_agg_init(&a, NULL, 0), 0);
  feed(&a, &d, &e);
  e.has &= ~(uint32_t)IDX_HAS_DUR;
  feed(&a, &d, &e);
  sum = summary(&a, &d);
  CHECK_INT(geti(sum, "skipped_events"), 2);
  CHECK_INT(geti(sum, "kernel_events"), 0);
  CHECK_INT(geti(sum, "t0_ns"), 0);
  CHECK_INT(geti(sum, "span_ns"), 0);
  CHECK_INT(geti(sum, "gpu_busy_ns"), 0);
  CHECK(json_is_null(json_object_get(sum, "rank")));
  CHECK(json_is_null(json_object_get(sum, "device")));
  CHECK_INT(json_array_size(json_object_get(sum, "phases")), 0);
  CHECK_INT(json_array_size(json_object_get(sum, "kernels")), 0);
  json_decref(sum);
  idx_agg_free(&a);
  idx_agg_free(NULL);
}

int main(void)
{
  RUN(index_map_interns);
  RUN(index_hist_median);
  RUN(index_corr_take_and_limit);
  RUN(index_runs_spill_merge);
  RUN(index_grow_small);
  RUN(index_key_hash_apart);
  RUN(index_kernels_apart);
  RUN(index_runs_packed_exact);
  RUN(index_join_both_orders);
  RUN(index_join_overflow);
  RUN(index_copy_bytes_from_runtime);
  RUN(index_steps_gpu_labels);
  RUN(index_steps_cpu_bare);
  RUN(index_phases_gap_and_shape);
  RUN(index_mctracer_lanes);
  RUN(index_rules_builtin);
  RUN(index_rules_user_file);
  RUN(index_families_builtin);
  RUN(index_demangle_bounds);
  RUN(index_families_user_file);
  RUN(index_names_fold_beyond_cap);
  RUN(index_name_clean);
  RUN(index_names_escaped_and_cut);
  RUN(index_empty_summary);
  return 0;
}
