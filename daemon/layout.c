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
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"

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

struct scan {
  struct cap_layout *l;
  size_t cap;
  const char *root;   /* the folder scanned, as given */
  struct tr_err *err; /* why the scan was refused */
  int files;          /* trace files found directly in root */
  int from_files;     /* ranks are files, not rank folders */
};

/* Looks at entry name (rel below root) of folder dfd without following
 * it: 1 when it is a `want` (S_IFDIR or S_IFREG), with *st filled; 0 when
 * it vanished meanwhile (an export deletes its .json); else the refusal,
 * naming it: a link, a FIFO, a device... in a trace folder is never
 * followed nor opened. */
static int look(struct scan *s, int dfd, const char *name, const char *rel,
                mode_t want, struct stat *st)
{
  if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? 0
                           : tr_err_set(s->err, -errno, "path", "%s/%s: %s",
                                        s->root, rel, strerror(errno));
  if ((st->st_mode & S_IFMT) == want)
    return 1;
  if (S_ISLNK(st->st_mode))
    return tr_err_set(s->err, -ELOOP, "path",
                      "%s/%s is a symbolic link: traced follows no link in a "
                      "trace folder (copy the file in instead)",
                      s->root, rel);
  return tr_err_set(s->err, TR_EFORMAT, "path", "%s/%s is not %s but %s",
                    s->root, rel,
                    want == S_IFDIR ? "a folder" : "a regular file",
                    tr_file_kind(st->st_mode));
}

/* The sub-folder name (rel below root) of dfd, opened without following
 * a link swapped in since look(). NULL with s->err set. */
static DIR *open_sub(struct scan *s, int dfd, const char *name, const char *rel)
{
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

  if (d != NULL)
    return d;
  if (fd >= 0)
    close(fd);
  tr_err_set(
      s->err, errno == ENOTDIR ? -ELOOP : -errno, "path", "%s/%s: %s", s->root,
      rel, errno == ENOTDIR ? "no longer a folder (a link?)" : strerror(errno));
  return NULL;
}

/* Fills rank from the files of its folder (rel below root). Keeps the
 * first .gz by name order of readdir; two .gz make the rank incomplete
 * anyway. */
static int scan_rank_dir(struct scan *s, int dfd, const char *name,
                         const char *rel, struct cap_rank *rank)
{
  DIR *d = open_sub(s, dfd, name, rel);
  struct dirent *e;
  struct stat st;
  char *json = NULL, *sub;
  uint64_t json_bytes = 0;
  int rc = 0;

  if (d == NULL)
    return s->err->code;
  while (rc >= 0 && (e = readdir(d)) != NULL) {
    bool gz = ends_with(e->d_name, ".json.gz");

    if (!gz && !ends_with(e->d_name, ".json"))
      continue;
    sub = join(rel, e->d_name);
    rc = sub ? look(s, dirfd(d), e->d_name, sub, S_IFREG, &st) : TR_ENOMEM;
    if (rc == 1)
      rank->written += (uint64_t)st.st_size;
    if (rc == 1 && gz && rank->gz_count++ == 0) {
      rank->file = join(s->root, sub);
      rank->bytes = (uint64_t)st.st_size;
    } else if (rc == 1 && !gz && rank->orphan_json++ == 0) {
      json = join(s->root, sub);
      json_bytes = (uint64_t)st.st_size;
    }
    free(sub);
  }
  closedir(d);
  /* An import may hold a plain .json export: index it when no .gz. */
  if (rank->file == NULL) {
    rank->file = json;
    rank->bytes = json_bytes;
  } else {
    free(json);
  }
  return rc < 0 ? rc : 0;
}

static int add_rank_dir(struct scan *s, int dfd, const char *name,
                        const char *rel, int half, int pp, int dp, int tp)
{
  struct cap_rank *rank = add_rank(s->l, &s->cap);

  if (rank == NULL)
    return TR_ELIMIT;
  rank->label = strdup(rel);
  rank->half = half;
  rank->pp = pp;
  rank->dp = dp;
  rank->tp = tp;
  if (rank->label == NULL)
    return TR_ENOMEM;
  return scan_rank_dir(s, dfd, name, rel, rank);
}

/* One entry of a level: a half (at the root), a rank folder, or a trace
 * file counted for scan_files(). Other names are left alone. */
static int scan_level(struct scan *s, DIR *d, const char *prefix, int half);

static int scan_entry(struct scan *s, DIR *d, const char *name, const char *rel,
                      int half)
{
  bool is_half = half == 0 &&
                 (strcmp(name, "prefill") == 0 || strcmp(name, "decode") == 0);
  struct stat st;
  int pp, dp, tp, rc;
  DIR *sub;

  if (!is_half && !parse_rank_name(name, &pp, &dp, &tp)) {
    if (half == 0 && is_trace_name(name))
      s->files++;
    return 0;
  }
  rc = look(s, dirfd(d), name, rel, S_IFDIR, &st);
  if (rc <= 0)
    return rc;
  if (!is_half)
    return add_rank_dir(s, dirfd(d), name, rel, half, pp, dp, tp);
  sub = open_sub(s, dirfd(d), name, rel);
  if (sub == NULL)
    return s->err->code;
  rc = scan_level(s, sub, rel, name[0] == 'p' ? 1 : 2);
  closedir(sub);
  return rc;
}

/* Rank folders of one half (prefix "" for the root, "prefill", "decode"),
 * plus the halves themselves when at the root. */
static int scan_level(struct scan *s, DIR *d, const char *prefix, int half)
{
  struct dirent *e;
  int rc = 0;

  while (rc == 0 && (e = readdir(d)) != NULL) {
    char *rel;

    if (e->d_name[0] == '.')
      continue;
    rel = join(prefix, e->d_name);
    rc = rel ? scan_entry(s, d, e->d_name, rel, half) : TR_ENOMEM;
    free(rel);
  }
  return rc;
}

/* A folder of trace files without rank folders: one rank per file. */
static int scan_files(struct scan *s, DIR *d)
{
  struct dirent *e;
  struct stat st;
  int rc = 0;

  s->from_files = 1;
  rewinddir(d);
  while (rc == 0 && (e = readdir(d)) != NULL) {
    struct cap_rank *rank;

    if (e->d_name[0] == '.' || !is_trace_name(e->d_name))
      continue;
    rc = look(s, dirfd(d), e->d_name, e->d_name, S_IFREG, &st);
    if (rc <= 0)
      continue;
    rank = add_rank(s->l, &s->cap);
    if (rank == NULL)
      return TR_ELIMIT;
    rank->label = strdup(e->d_name);
    rank->file = join(s->root, e->d_name);
    rank->gz_count = ends_with(e->d_name, ".gz");
    rank->bytes = (uint64_t)st.st_size;
    rc = rank->label && rank->file ? 0 : TR_ENOMEM;
  }
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
    l->written += rank->written;
    if (rank->file != NULL)
      l->bytes_total += rank->bytes;
  }
}

/* path is one trace file (an import): one rank, label its name; the
 * layout's root is its folder. */
static int scan_single_file(struct scan *s, const char *path,
                            const struct stat *st)
{
  struct cap_rank *rank = add_rank(s->l, &s->cap);
  const char *slash = strrchr(path, '/');

  if (rank == NULL)
    return TR_ENOMEM;
  s->from_files = 1;
  rank->label = strdup(slash ? slash + 1 : path);
  rank->file = strdup(path);
  rank->gz_count = ends_with(path, ".gz");
  rank->bytes = (uint64_t)st->st_size;
  free(s->l->root);
  s->l->root = slash == path ? strdup("/")
               : slash       ? strndup(path, (size_t)(slash - path))
                             : strdup(".");
  return rank->label && rank->file && s->l->root ? 0 : TR_ENOMEM;
}

/* The folder path (not a link itself) and what lies in it. */
static int scan_top(struct scan *s, const char *path)
{
  struct stat st;
  int fd = tr_open_dir(NULL, path, &st, s->err);
  DIR *d;
  int rc;

  if (fd == TR_EFORMAT && S_ISREG(st.st_mode)) {
    tr_err_clear(s->err);
    return scan_single_file(s, path, &st);
  }
  if (fd < 0)
    return fd;
  d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return tr_err_set(s->err, -errno, "path", "%s: %s", path, strerror(errno));
  }
  rc = scan_level(s, d, "", 0);
  if (rc == 0 && s->l->n == 0 && s->files > 0)
    rc = scan_files(s, d);
  closedir(d);
  return rc;
}

int cap_layout_scan(const char *path, struct cap_layout **out,
                    struct tr_err *err)
{
  struct cap_layout *l = calloc(1, sizeof(*l));
  struct tr_err local = { 0 };
  struct scan s = { l, 0, path, &local, 0, 0 };
  int rc;

  if (l == NULL || (l->root = strdup(path)) == NULL) {
    free(l);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  rc = scan_top(&s, path);
  if (rc != 0) {
    cap_layout_free(l);
    if (local.code != 0)
      return tr_err_set(err, local.code, "path", "%s", local.msg);
    return tr_err_set(err, rc, "path", "cannot read %s: %s", path,
                      rc == TR_ELIMIT ? "too many ranks" : tr_strerror(rc));
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
  free(l->root);
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
