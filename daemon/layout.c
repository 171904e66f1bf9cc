/*
 * The trace folder as ATOM writes it (docs/ATOM.md, "Where traces land, and
 * when they are complete"): a rank is exported when its folder holds its
 * `.pt.trace.json.gz` and no `.json` of the export is left; the exporter
 * writes the .json, gzips it, then deletes the .json, so a .json beside
 * means an export still running or one that died midway.
 */
#include "daemon/layout.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_RANKS 4096 /* ceiling: a folder is not allowed to grow us */

static bool ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);

  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Reads a decimal number at *p, advancing it; -1 when there is none. */
static int read_num(const char **p)
{
  long v = 0;
  const char *s = *p;

  if (*s < '0' || *s > '9')
    return -1;
  while (*s >= '0' && *s <= '9' && v < 1000000)
    v = v * 10 + (*s++ - '0');
  *p = s;
  return (int)v;
}

/* Parses `[pp<p>_](rank_<r>|dp<d>_tp<r>)`. Returns true on a match. */
static bool parse_rank_name(const char *name, int *pp, int *dp, int *tp)
{
  const char *s = name;

  *pp = *dp = *tp = -1;
  if (strncmp(s, "pp", 2) == 0) {
    s += 2;
    if ((*pp = read_num(&s)) < 0 || *s++ != '_')
      return false;
  }
  if (strncmp(s, "rank_", 5) == 0) {
    s += 5;
    *tp = read_num(&s);
  } else if (strncmp(s, "dp", 2) == 0) {
    s += 2;
    if ((*dp = read_num(&s)) < 0 || strncmp(s, "_tp", 3) != 0)
      return false;
    s += 3;
    *tp = read_num(&s);
  }
  return *tp >= 0 && *s == '\0';
}

static bool is_trace_name(const char *name)
{
  return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

static char *join(const char *a, const char *b)
{
  char *out;

  if (a[0] == '\0')
    return strdup(b);
  return asprintf(&out, "%s/%s", a, b) < 0 ? NULL : out;
}

static uint64_t file_size(const char *path)
{
  struct stat st;

  return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static struct cap_rank *add_rank(struct cap_layout *l, size_t *cap)
{
  struct cap_rank *rank;

  if (l->n >= MAX_RANKS)
    return NULL;
  if (l->n == *cap) {
    size_t grown = *cap ? 2 * *cap : 16;
    struct cap_rank *ranks = realloc(l->ranks, grown * sizeof(*ranks));

    if (ranks == NULL)
      return NULL;
    l->ranks = ranks;
    *cap = grown;
  }
  rank = &l->ranks[l->n++];
  memset(rank, 0, sizeof(*rank));
  rank->pp = rank->dp = rank->tp = -1;
  return rank;
}

/* Fills rank from the files of its folder dir. Keeps the first .gz by
 * name order of readdir; two .gz make the rank incomplete anyway. */
static int scan_rank_dir(const char *dir, struct cap_rank *rank)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  char *json = NULL;

  if (d == NULL)
    return -errno;
  while ((e = readdir(d)) != NULL) {
    if (ends_with(e->d_name, ".json.gz")) {
      if (rank->gz_count++ == 0)
        rank->file = join(dir, e->d_name);
    } else if (ends_with(e->d_name, ".json")) {
      rank->orphan_json++;
      if (json == NULL)
        json = join(dir, e->d_name);
    }
  }
  closedir(d);
  /* An import may hold a plain .json export: index it when no .gz. */
  if (rank->file == NULL)
    rank->file = json;
  else
    free(json);
  if (rank->file != NULL)
    rank->bytes = file_size(rank->file);
  return 0;
}

struct scan {
  struct cap_layout *l;
  size_t cap;
  const char *root;
  int files;      /* trace files found directly in root */
  int from_files; /* ranks are files, not rank folders */
};

static int add_rank_dir(struct scan *s, const char *rel, int half, int pp,
                        int dp, int tp)
{
  struct cap_rank *rank = add_rank(s->l, &s->cap);
  char *full;
  int rc;

  if (rank == NULL)
    return TR_ELIMIT;
  rank->label = strdup(rel);
  rank->half = half;
  rank->pp = pp;
  rank->dp = dp;
  rank->tp = tp;
  full = join(s->root, rel);
  if (rank->label == NULL || full == NULL) {
    free(full);
    return TR_ENOMEM;
  }
  rc = scan_rank_dir(full, rank);
  free(full);
  return rc;
}

/* Rank folders of one half (prefix "" for the root, "prefill", "decode"),
 * plus the halves themselves when at the root. */
static int scan_level(struct scan *s, const char *prefix, int half)
{
  char *dir = join(s->root, prefix);
  DIR *d = dir ? opendir(dir) : NULL;
  struct dirent *e;
  int rc = 0, pp, dp, tp;

  free(dir);
  if (d == NULL)
    return -errno;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    char *rel;

    if (e->d_name[0] == '.')
      continue;
    rel = join(prefix, e->d_name);
    if (rel == NULL) {
      rc = TR_ENOMEM;
    } else if (half == 0 && (strcmp(e->d_name, "prefill") == 0 ||
                             strcmp(e->d_name, "decode") == 0)) {
      rc = scan_level(s, rel, e->d_name[0] == 'p' ? 1 : 2);
    } else if (parse_rank_name(e->d_name, &pp, &dp, &tp)) {
      rc = add_rank_dir(s, rel, half, pp, dp, tp);
    } else if (half == 0 && is_trace_name(e->d_name)) {
      s->files++;
    }
    free(rel);
  }
  closedir(d);
  return rc;
}

/* A folder of trace files without rank folders: one rank per file. */
static int scan_files(struct scan *s)
{
  DIR *d = opendir(s->root);
  struct dirent *e;
  int rc = 0;

  if (d == NULL)
    return -errno;
  s->from_files = 1;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    struct cap_rank *rank;

    if (e->d_name[0] == '.' || !is_trace_name(e->d_name))
      continue;
    rank = add_rank(s->l, &s->cap);
    if (rank == NULL) {
      rc = TR_ELIMIT;
      break;
    }
    rank->label = strdup(e->d_name);
    rank->file = join(s->root, e->d_name);
    rank->gz_count = ends_with(e->d_name, ".gz");
    rank->bytes = rank->file ? file_size(rank->file) : 0;
  }
  closedir(d);
  return rc;
}

static int cmp_rank(const void *pa, const void *pb)
{
  const struct cap_rank *a = pa, *b = pb;

  if (a->half != b->half)
    return a->half - b->half;
  if (a->pp != b->pp)
    return a->pp - b->pp;
  if (a->dp != b->dp)
    return a->dp - b->dp;
  if (a->tp != b->tp)
    return a->tp - b->tp;
  return strcmp(a->label ? a->label : "", b->label ? b->label : "");
}

/* Totals and the plain flag, once the ranks are known. */
static void summarize(struct cap_layout *l, int from_files)
{
  l->plain = !from_files;
  for (size_t i = 0; i < l->n; i++) {
    struct cap_rank *rank = &l->ranks[i];

    if (rank->half != 0 || rank->pp >= 0 || rank->dp >= 0)
      l->plain = 0;
    if (rank->gz_count == 1 && rank->orphan_json == 0)
      l->exported++;
    l->orphan_json += rank->orphan_json;
    if (rank->file != NULL)
      l->bytes_total += rank->bytes;
  }
}

static int scan_single_file(struct scan *s, const char *path)
{
  struct cap_rank *rank = add_rank(s->l, &s->cap);
  const char *slash = strrchr(path, '/');

  if (rank == NULL)
    return TR_ENOMEM;
  s->from_files = 1;
  rank->label = strdup(slash ? slash + 1 : path);
  rank->file = strdup(path);
  rank->gz_count = ends_with(path, ".gz");
  rank->bytes = file_size(path);
  return rank->label && rank->file ? 0 : TR_ENOMEM;
}

int cap_layout_scan(const char *path, struct cap_layout **out,
                    struct tr_err *err)
{
  struct cap_layout *l = calloc(1, sizeof(*l));
  struct scan s = { l, 0, path, 0, 0 };
  struct stat st;
  int rc;

  if (l == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  if (stat(path, &st) != 0) {
    rc = -errno;
  } else if (!S_ISDIR(st.st_mode)) {
    rc = scan_single_file(&s, path);
  } else {
    rc = scan_level(&s, "", 0);
    if (rc == 0 && l->n == 0 && s.files > 0)
      rc = scan_files(&s);
  }
  if (rc != 0) {
    cap_layout_free(l);
    return tr_err_set(err, rc, "path", "cannot read %s: %s", path,
                      rc == TR_ELIMIT        ? "too many ranks"
                      : rc < 0 && rc > -4096 ? strerror(-rc)
                                             : "failed");
  }
  if (l->n > 1)
    qsort(l->ranks, l->n, sizeof(l->ranks[0]), cmp_rank);
  summarize(l, s.from_files);
  *out = l;
  return 0;
}

void cap_layout_free(struct cap_layout *l)
{
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->n; i++) {
    free(l->ranks[i].label);
    free(l->ranks[i].file);
  }
  free(l->ranks);
  free(l);
}

/* Appends "; " + one problem to msg, keeping it terminated. */
static void say(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *msg, size_t size, const char *fmt, ...)
{
  size_t used;
  va_list ap;

  if (msg == NULL || size == 0)
    return;
  used = strlen(msg);
  if (used > 0 && used + 2 < size) {
    memcpy(msg + used, "; ", 3);
    used += 2;
  }
  va_start(ap, fmt);
  vsnprintf(msg + used, size - used, fmt, ap);
  va_end(ap);
}

/* One rank's problem, if any; returns true when the rank is exported. */
static bool check_rank(const struct cap_rank *rank, const char *name, char *msg,
                       size_t size)
{
  if (rank->orphan_json > 0)
    say(msg, size, "%s: orphan .json left: the exporter died mid-export", name);
  else if (rank->gz_count == 0)
    say(msg, size, "%s: no .pt.trace.json.gz in %s", name, rank->label);
  else if (rank->gz_count > 1)
    say(msg, size, "%s: %d .gz files in %s (expected one)", name,
        rank->gz_count, rank->label);
  return rank->gz_count == 1 && rank->orphan_json == 0;
}

int cap_layout_complete(const struct cap_layout *l, int tp, char *msg,
                        size_t size)
{
  int complete = 1;
  char name[64];

  if (msg != NULL && size > 0)
    msg[0] = '\0';
  if (!l->plain) {
    for (size_t i = 0; i < l->n; i++)
      if (!check_rank(&l->ranks[i], l->ranks[i].label, msg, size))
        complete = 0;
    if ((int)l->n < tp) {
      say(msg, size, "%zu of %d rank folders", l->n, tp);
      complete = 0;
    }
    return complete;
  }
  for (int r = 0; r < tp; r++) {
    const struct cap_rank *rank = NULL;

    for (size_t i = 0; i < l->n && rank == NULL; i++)
      if (l->ranks[i].tp == r)
        rank = &l->ranks[i];
    snprintf(name, sizeof(name), "rank %d", r);
    if (rank == NULL) {
      say(msg, size, "%s: no rank_%d folder", name, r);
      complete = 0;
    } else if (!check_rank(rank, name, msg, size)) {
      complete = 0;
    }
  }
  return complete;
}
