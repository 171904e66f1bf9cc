/*
 * `traced index [--format auto|kineto|mctracer] [--rules FILE] [--jobs N]
 * [--threads T] [--max-kernel-names N] FILE...` (docs/API.md, "Command
 * line"): indexes each file without a daemon and prints its rank summary as
 * one compact JSON document per line, in the order of the arguments. A file
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
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
          "[--threads T] [--max-kernel-names N] [--collectives OUT] "
          "[--captures auto|none|DIR] FILE...\n",
          why, idx_format_names(names, sizeof(names), "|"));
  return 2;
}

/* One file's outcome, kept until it is its turn to be printed. */
struct result {
  json_t *summary; /* NULL when it failed */
  char msg[512];   /* why it failed */
  int done;
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
  const char *coll_dir; /* --collectives: where the side files go */
  const char *captures; /* --captures: "auto", "none" or a folder */
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

static void index_one(struct batch *b, int i)
{
  struct tr_err err = { 0 };
  json_t *summary = NULL;
  struct result *r = &b->res[i];
  struct idx_options o = b->opt;
  char side[64];

  struct idx_capture *caps = NULL;
  size_t ncaps = 0;

  if (b->coll_dir != NULL) {
    coll_file(b->coll_dir, i, side, sizeof(side));
    o.collectives_path = side;
  }
  if (captures_of(b, b->files[i], &caps, &ncaps, &err) == 0) {
    o.captures = caps;
    o.ncaptures = ncaps;
    if (idx_file(b->files[i], &o, &summary, &err) != 0)
      summary = NULL;
  }
  if (summary == NULL)
    snprintf(r->msg, sizeof(r->msg), "%s", err.msg);
  idx_captures_free(caps, ncaps);
  pthread_mutex_lock(&b->mu);
  r->summary = summary;
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
  int rc = 0;

  pthread_mutex_lock(&b->mu);
  while (!r->done)
    pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
  if (r->summary == NULL) {
    fprintf(stderr, "traced index: %s\n", r->msg);
    return 1;
  }
  /* 15 significant digits print shares (6 decimals) without binary
   * noise such as 0.10000000000000001. */
  if (json_dumpf(r->summary, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15)) !=
          0 ||
      fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
    fprintf(stderr, "traced index: %s: cannot write the summary\n",
            b->files[i]);
    rc = 1;
  }
  json_decref(r->summary);
  r->summary = NULL;
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
  if (rc == 0 && json_dump_file(doc, out, JSON_COMPACT) != 0) {
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
    } else if (strcmp(argv[i], "--jobs") == 0) {
      if (parse_count(argv[i + 1], MAX_JOBS, &jobs) != 0)
        return usage("--jobs must be 1 to 256");
    } else if (strcmp(argv[i], "--threads") == 0) {
      if (parse_count(argv[i + 1], 64, &threads) != 0)
        return usage("--threads must be 1 to 64");
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
  /* The cores shared among the jobs, unless told. */
  b.opt.threads = threads > 0        ? threads
                  : cores / jobs > 1 ? (int)(cores / jobs)
                                     : 1;
  status = run_all(&b, jobs, coll);
  idx_rules_free(rules);
  return status;
}
