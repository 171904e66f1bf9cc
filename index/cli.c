/*
 * `traced index [--format auto|kineto|mctracer] [--rules FILE] [--jobs N]
 * [--threads T] [--max-kernel-names N] [--gpu-roof ROOF] FILE...`
 * (docs/API.md, "Command line"): indexes each file without a daemon and
 * prints its rank summary as one compact JSON document per line, in the
 * order of the arguments. A file
 * that fails is reported on stderr (file and byte offset) and the others
 * still run; exit 0 all ok, 1 some file failed, 2 bad usage.
 *
 * --jobs N indexes N files at once (the ranks of a capture, as the daemon's
 * index_jobs does), each on a worker thread of its own; --threads T is
 * idx_options.threads for each file, by default the cores shared among the
 * jobs. Summaries are printed as soon as every earlier file's is.
 *
 * --collectives OUT: the files are the ranks of one capture, in the order
 * given; their collectives are matched across them as the daemon does
 * (idx_collectives_match(), every instance kept, 256 timeline bins) and
 * the answer is written to OUT.
 *
 * --captures auto|none|DIR: the capture traces each file's graph replays
 * are matched against (docs/DECODE.md): auto (the default) the
 * capture_traces folder beside each file, DIR one folder for every file,
 * none no captures.
 *
 * --points DIR: each file's access points (index/read/read.h) are written to
 * DIR/<file's name>.points; --points-spacing BYTES sets their spacing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__ /* (a libc header above defines it) */
#include <malloc.h>
#endif

#include "common/reals.h"
#include "common/roof.h"
#include "common/summary.h"
#include "index/index.h"

#define MAX_JOBS          256
#define CLI_TIMELINE_BINS 256

/* "auto|kineto|mctracer": the --format values, from the format table. */
static int usage(const char *why)
{
  char names[128];

  fprintf(stderr,
          "traced index: %s\n"
          "usage: traced index [--format %s] [--rules FILE] [--jobs N] "
          "[--threads T] [--max-kernel-names N] [--gpu-roof ROOF] "
          "[--collectives OUT] "
          "[--captures auto|none|DIR] [--points DIR [--points-spacing BYTES]] "
          "FILE...\n",
          why, idx_format_names(names, sizeof(names), "|"));
  return 2;
}

/* A summary's text as it is made (text_*() below). */
struct text {
  char *p;
  size_t n, cap;
  size_t table;    /* tables opened so far; the last one is open */
  int members;     /* members written */
  int rows;        /* rows in the open table */
  const char *why; /* why the text failed; NULL: fine */
};

/* One file's outcome, kept until it is its turn to be printed: its
 * summary as text, written by the worker as the rows are made
 * (idx_file_sink()), so that no row outlives its turn and the whole
 * document is never held as a tree. */
struct result {
  struct text text;
  char msg[512]; /* why it failed */
  int done, failed;
};

/* The files and the workers that take them in turn. */
struct batch {
  char **files;
  int nfiles;
  struct idx_options opt;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a result is done */
  int next;          /* the next file a worker takes */
  struct result *res;
  const char *coll_dir;   /* --collectives: where the side files go */
  const char *captures;   /* --captures: "auto", "none" or a folder */
  const char *points_dir; /* --points: where the points files go */
};

/* The capture traces of file (--captures) into *c, *n. */
static int captures_of(const struct batch *b, const char *file,
                       struct idx_capture **c, size_t *n, struct tr_err *err)
{
  const char *slash = strrchr(file, '/');
  char *dir = NULL;
  int rc;

  *c = NULL;
  *n = 0;
  if (strcmp(b->captures, "none") == 0)
    return 0;
  if (strcmp(b->captures, "auto") != 0)
    return idx_captures_find(b->captures, -1, c, n, err);
  if (asprintf(&dir, "%.*s%scapture_traces", slash ? (int)(slash - file) : 0,
               file, slash ? "/" : "") < 0)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  rc = idx_captures_find(dir, -1, c, n, err);
  free(dir);
  return rc;
}

/* The side file of file i (rank i) in dir. */
static void coll_file(const char *dir, int i, char *buf, size_t size)
{
  snprintf(buf, size, "%s/rank_%d.bin", dir, i);
}

/* ---- a summary as text ---- */

/* The summary's tables in their order (common/summary.h): its text is
 * the head's members, then each table as an array member, as jansson
 * writes the whole document (agg_tree_sink()). */
static const char *const table_names[] = {
#define TABLE_NAME(member, ROWS, row) #member,
  TR_SUM_TABLES(TABLE_NAME)
#undef TABLE_NAME
};
#define NTABLES (sizeof(table_names) / sizeof(table_names[0]))

/* Reals with the fewest digits that read back (common/reals.h): shares
 * (6 decimals) without binary noise such as 0.10000000000000001. */
#define TEXT_FLAGS JSON_COMPACT

static int text_put(const char *buf, size_t size, void *ud)
{
  struct text *t = ud;
  size_t cap = t->cap > 0 ? t->cap : 1 << 16;
  char *p;

  if (t->why != NULL)
    return -1;
  while (cap - t->n < size)
    cap *= 2;
  if (cap != t->cap) {
    if ((p = realloc(t->p, cap)) == NULL) {
      t->why = "out of memory";
      return -1;
    }
    t->p = p;
    t->cap = cap;
  }
  memcpy(t->p + t->n, buf, size);
  t->n += size;
  return 0;
}

static void text_lit(struct text *t, const char *s)
{
  (void)text_put(s, strlen(s), t);
}

static void text_json(struct text *t, json_t *v)
{
  if (tr_json_dump_callback(v, text_put, t, TEXT_FLAGS) != 0 && t->why == NULL)
    t->why = "cannot write the summary";
}

/* An idx_sink's answer: a text that failed stops the indexing. */
static int text_rc(const struct text *t, struct tr_err *err)
{
  return t->why == NULL ? 0 : tr_err_set(err, TR_ENOMEM, "", "%s", t->why);
}

/* The head's members, its closing brace left off for the tables (an
 * idx_sink's on_head). */
static int text_head(void *ud, json_t *head, struct tr_err *err)
{
  struct text *t = ud;

  text_json(t, head);
  if (t->why == NULL) {
    t->n--; /* '}' */
    t->members = t->n > 1;
  }
  return text_rc(t, err);
}

/* Opens the next table, closing the one open. */
static void text_open(struct text *t)
{
  if (t->table > 0)
    text_lit(t, "]");
  if (t->members++)
    text_lit(t, ",");
  text_lit(t, "\"");
  text_lit(t, table_names[t->table++]);
  text_lit(t, "\":[");
  t->rows = 0;
}

/* Opens table (the open one or a later one: those between are empty) for
 * its next row; the rows come in the tables' order. 0, or -1 when table
 * is out of that order. */
static int text_at(struct text *t, const char *table)
{
  size_t k = t->table > 0 ? t->table - 1 : 0;

  while (k < NTABLES && strcmp(table_names[k], table) != 0)
    k++;
  if (k == NTABLES) {
    if (t->why == NULL)
      t->why = "a summary row out of the tables' order";
    return -1;
  }
  while (t->table <= k)
    text_open(t);
  if (t->rows++)
    text_lit(t, ",");
  return 0;
}

/* A row of table (an idx_sink's on_row). */
static int text_row(void *ud, const char *table, json_t *row,
                    struct tr_err *err)
{
  struct text *t = ud;

  if (text_at(t, table) == 0)
    text_json(t, row);
  return text_rc(t, err);
}

/* A row of table as its text (an idx_sink's on_text). */
static int text_row_text(void *ud, const char *table, const char *p, size_t n,
                         struct tr_err *err)
{
  struct text *t = ud;

  if (text_at(t, table) == 0)
    (void)text_put(p, n, t);
  return text_rc(t, err);
}

/* The tables left (empty), the closing brace and the line's end. */
static void text_end(struct text *t)
{
  while (t->table < NTABLES)
    text_open(t);
  text_lit(t, "]}\n");
}

static void index_one(struct batch *b, int i)
{
  struct tr_err err = { 0 };
  struct result *r = &b->res[i];
  struct idx_options o = b->opt;
  struct idx_sink sink = { text_head, text_row, &r->text, text_row_text };
  struct idx_capture *caps = NULL;
  size_t ncaps = 0;
  char side[64], points[4096];
  const char *base = strrchr(b->files[i], '/');
  int rc;

  if (b->points_dir != NULL) {
    snprintf(points, sizeof(points), "%s/%s.points", b->points_dir,
             base != NULL ? base + 1 : b->files[i]);
    o.points_path = points;
  }
  if (b->coll_dir != NULL) {
    coll_file(b->coll_dir, i, side, sizeof(side));
    o.collectives_path = side;
  }
  if ((rc = captures_of(b, b->files[i], &caps, &ncaps, &err)) == 0) {
    o.captures = caps;
    o.ncaptures = ncaps;
    rc = idx_file_sink(NULL, b->files[i], &o, &sink, &err);
  }
  idx_captures_free(caps, ncaps);
  pthread_mutex_lock(&b->mu);
  if (rc != 0)
    snprintf(r->msg, sizeof(r->msg), "%s", err.msg);
  r->failed = rc != 0;
  r->done = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

static void *worker(void *arg)
{
  struct batch *b = arg;
  int i;

  for (;;) {
    pthread_mutex_lock(&b->mu);
    i = b->next < b->nfiles ? b->next++ : -1;
    pthread_mutex_unlock(&b->mu);
    if (i < 0)
      return NULL;
    index_one(b, i);
  }
}

/* Prints result i (waiting for it); 0 ok, 1 failed. */
static int print_one(struct batch *b, int i)
{
  struct result *r = &b->res[i];
  struct text *t = &r->text;
  int rc = 0;

  pthread_mutex_lock(&b->mu);
  while (!r->done)
    pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
  text_end(t);
  if (r->failed) {
    fprintf(stderr, "traced index: %s\n", r->msg);
    rc = 1;
  } else if (t->why != NULL || fwrite(t->p, 1, t->n, stdout) != t->n ||
             fflush(stdout) != 0) {
    fprintf(stderr, "traced index: %s: %s\n", b->files[i],
            t->why != NULL ? t->why : "cannot write the summary");
    rc = 1;
  }
  free(t->p);
  t->p = NULL;
  return rc;
}

/* Indexes every file, jobs at a time, printing each summary as soon as
 * the ones before it are printed; the exit status. */
static int run_batch(struct batch *b, int jobs)
{
  pthread_t tid[MAX_JOBS];
  int started = 0, status = 0, i;

  b->res = calloc((size_t)b->nfiles, sizeof(*b->res));
  if (b->res == NULL) {
    fprintf(stderr, "traced index: out of memory\n");
    return 1;
  }
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  for (; jobs > 1 && started < jobs && started < b->nfiles; started++)
    if (pthread_create(&tid[started], NULL, worker, b) != 0)
      break;
  for (i = 0; i < b->nfiles; i++) {
    if (started == 0)
      index_one(b, b->next++); /* one job: this thread does them */
    status |= print_one(b, i);
  }
  while (started > 0)
    pthread_join(tid[--started], NULL);
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  free(b->res);
  return status;
}

/* --collectives: the side files of ranks 0..n-1 in dir matched, the
 * answer written to out. 0 ok, 1 failed. */

/* The matching's document into file out, reals as common/reals.h writes
 * them. */
static int write_doc(const json_t *doc, const char *out)
{
  FILE *f = fopen(out, "w");
  char *text = tr_json_dumps(doc, JSON_COMPACT);
  int rc = f != NULL && text != NULL && fputs(text, f) >= 0 ? 0 : -1;

  if (f != NULL && fclose(f) != 0)
    rc = -1;
  free(text);
  return rc;
}

static int match_all(const char *dir, int n, const char *out)
{
  struct idx_coll_rank *ranks = calloc((size_t)n + 1, sizeof(*ranks));
  char(*paths)[64] = calloc((size_t)n + 1, sizeof(*paths));
  struct tr_err err = { 0 };
  json_t *doc = NULL;
  int rc = ranks && paths ? 0 : 1;

  for (int i = 0; rc == 0 && i < n; i++) {
    coll_file(dir, i, paths[i], sizeof(paths[i]));
    ranks[i] = (struct idx_coll_rank){ paths[i], i, 0 };
  }
  if (rc == 0 && idx_collectives_match(ranks, (size_t)n, SIZE_MAX / 2,
                                       CLI_TIMELINE_BINS, &doc, &err) != 0) {
    fprintf(stderr, "traced index: %s\n", err.msg);
    rc = 1;
  }
  if (rc == 0 && write_doc(doc, out) != 0) {
    fprintf(stderr, "traced index: cannot write %s\n", out);
    rc = 1;
  }
  json_decref(doc);
  free(paths);
  free(ranks);
  return rc;
}

/* run_batch(), and with --collectives (out) the matching, in a private
 * folder of side files removed afterwards. */
static int run_all(struct batch *b, int jobs, const char *out)
{
  char dir[] = "/tmp/traced-collectives-XXXXXX", side[64];
  int status;

  if (out != NULL && mkdtemp(dir) == NULL) {
    fprintf(stderr, "traced index: cannot make a folder in /tmp\n");
    return 1;
  }
  b->coll_dir = out != NULL ? dir : NULL;
  status = run_batch(b, jobs);
  if (out == NULL)
    return status;
  if (status == 0)
    status = match_all(dir, b->nfiles, out);
  for (int i = 0; i < b->nfiles; i++) {
    coll_file(dir, i, side, sizeof(side));
    (void)unlink(side);
  }
  (void)rmdir(dir);
  return status;
}

/* A positive integer option value, at most max. */
static int parse_count(const char *s, int max, int *out)
{
  char *end;
  long v = strtol(s, &end, 10);

  if (*s == '\0' || *end != '\0' || v < 1 || v > max)
    return -1;
  *out = (int)v;
  return 0;
}

/* A big buffer (from 128 KiB: time record windows, a step's events, the
 * critical path's scratch) is its own mapping, given back to the system
 * when freed. glibc's default raises that threshold to the largest block
 * freed so far, after which freed buffers stay with the process, and a
 * pass's walk on a thread of its own, in another malloc arena, does not
 * reuse them: the 1 GB trace's peak RSS went from 34 MB to 30-31 MB
 * (docs/BENCHMARKS.md). */
static void memory_back(void)
{
#ifdef __GLIBC__
  (void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

int idx_cli_main(int argc, char **argv)
{
  struct batch b = { 0 };
  const char *rules_path = NULL, *coll = NULL;
  struct idx_rules *rules = NULL;
  struct tr_err err = { 0 };
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int i, jobs = 1, threads = 0, status;

  b.opt.format = IDX_FORMAT_AUTO;
  b.opt.rank = -1;
  b.captures = "auto";
  for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (strcmp(argv[i], "--") == 0) {
      i++; /* end of options: files follow */
      break;
    }
    if (i + 1 >= argc)
      return usage("an option lacks its value");
    if (strcmp(argv[i], "--format") == 0) {
      if (idx_format_parse(argv[i + 1], &b.opt.format) != 0)
        return usage("--format names no trace format");
    } else if (strcmp(argv[i], "--rules") == 0) {
      rules_path = argv[i + 1];
    } else if (strcmp(argv[i], "--collectives") == 0) {
      coll = argv[i + 1];
    } else if (strcmp(argv[i], "--captures") == 0) {
      b.captures = argv[i + 1];
    } else if (strcmp(argv[i], "--points") == 0) {
      b.points_dir = argv[i + 1];
    } else if (strcmp(argv[i], "--points-spacing") == 0) {
      char *end;
      unsigned long long n = strtoull(argv[i + 1], &end, 10);

      if (*argv[i + 1] == '\0' || *end != '\0' || n < 65536 || n > (1ull << 40))
        return usage("--points-spacing must be 65536 to 2^40");
      b.opt.points_spacing = n;
    } else if (strcmp(argv[i], "--jobs") == 0) {
      if (parse_count(argv[i + 1], MAX_JOBS, &jobs) != 0)
        return usage("--jobs must be 1 to 256");
    } else if (strcmp(argv[i], "--threads") == 0) {
      if (parse_count(argv[i + 1], 64, &threads) != 0)
        return usage("--threads must be 1 to 64");
    } else if (strcmp(argv[i], "--gpu-roof") == 0) {
      struct tr_roof roof;

      if (tr_roof_parse(argv[i + 1], &roof, &err) != 0)
        return usage(err.msg);
      b.opt.gpu_roof = argv[i + 1];
    } else if (strcmp(argv[i], "--max-kernel-names") == 0) {
      char *end;
      unsigned long n = strtoul(argv[i + 1], &end, 10);

      if (*argv[i + 1] == '\0' || *end != '\0' || n < 1 || n > 10000000)
        return usage("--max-kernel-names must be 1..10000000");
      b.opt.max_kernel_names = (uint32_t)n;
    } else {
      return usage("unknown option");
    }
  }
  if (i >= argc)
    return usage("no trace file given");
  if (idx_rules_load(rules_path, &rules, &err) != 0) {
    fprintf(stderr, "traced index: %s\n", err.msg);
    return 2;
  }
  b.opt.rules = rules;
  b.files = argv + i;
  b.nfiles = argc - i;
  memory_back();
  /* The cores shared among the jobs, unless told. */
  b.opt.threads = threads > 0        ? threads
                  : cores / jobs > 1 ? (int)(cores / jobs)
                                     : 1;
  status = run_all(&b, jobs, coll);
  idx_rules_free(rules);
  return status;
}
