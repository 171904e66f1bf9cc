/*
 * Capture traces on disk (index.h, docs/DECODE.md "Captures"): ATOM's
 * file names and the execution_details.json of SGLang and vLLM (as
 * TraceLens reads it: trace_capture_merge_experimental.py's
 * load_capture_folder), and the CLI's reading of a capture_traces folder.
 * The daemon walks its folders itself (daemon/layout.c) and uses the two
 * parsers.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"

#define DETAILS_NAME "execution_details.json"
#define DETAILS_MAX  (1u << 20) /* bytes of execution_details.json read */
#define CAPTURES_MAX 4096       /* capture traces of one rank */

/* The decimal number at *p, advancing it; -1 when none (or too long). */
static int64_t number(const char **p)
{
  int64_t v = 0;
  int digits = 0;

  while (**p >= '0' && **p <= '9' && digits < 12) {
    v = v * 10 + (**p - '0');
    (*p)++;
    digits++;
  }
  return digits > 0 && (**p < '0' || **p > '9') ? v : -1;
}

int idx_capture_name(const char *base, int64_t *bs, int64_t *q, int64_t *rank)
{
  const char *p = base;
  int64_t b, qq = -1, r;

  if (strncmp(p, "bs_", 3) != 0)
    return 0;
  p += 3;
  if ((b = number(&p)) < 0)
    return 0;
  if (strncmp(p, "_q_", 3) == 0) {
    p += 3;
    if ((qq = number(&p)) < 0)
      return 0;
  }
  if (strncmp(p, "_rank", 5) != 0)
    return 0;
  p += 5;
  if ((r = number(&p)) < 0 ||
      (strcmp(p, ".json.gz") != 0 && strcmp(p, ".json") != 0))
    return 0;
  *bs = b;
  *q = qq;
  *rank = r;
  return 1;
}

static int plain_name(const char *s)
{
  return s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 &&
         strcmp(s, "..") != 0;
}

int idx_capture_details(const char *text, size_t n,
                        int (*fn)(void *ud, const char *file, int64_t bs,
                                  enum idx_graph_mode mode),
                        void *ud, struct tr_err *err)
{
  json_error_t jerr;
  json_t *doc = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr), *e;
  size_t i;
  int rc = 0;

  if (doc == NULL || !json_is_array(doc)) {
    json_decref(doc);
    return tr_err_set(err, TR_EINVAL, "", "%s: not a list of captures%s%s",
                      DETAILS_NAME, doc ? "" : ": ", doc ? "" : jerr.text);
  }
  json_array_foreach(doc, i, e) {
    const char *file = json_string_value(json_object_get(e, "file"));
    const char *mode = json_string_value(json_object_get(e, "mode"));
    json_t *bs = json_object_get(e, "batch_size");

    if (file == NULL || !plain_name(file) || !json_is_integer(bs) ||
        json_integer_value(bs) < 0 || mode == NULL ||
        (strcmp(mode, "FULL") != 0 && strcmp(mode, "PIECEWISE") != 0))
      continue;
    rc = fn(ud, file, (int64_t)json_integer_value(bs),
            strcmp(mode, "FULL") == 0 ? IDX_GRAPH_FULL : IDX_GRAPH_PIECEWISE);
    if (rc != 0)
      break;
  }
  json_decref(doc);
  return rc;
}

/* ---- the CLI's search ---- */

struct found {
  char *dir;
  struct idx_capture *v;
  size_t n, cap;
};

static int found_add(struct found *f, const char *file, int64_t bs, int64_t q,
                     enum idx_graph_mode mode)
{
  struct idx_capture *c;

  if (f->n >= CAPTURES_MAX)
    return TR_ELIMIT;
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 16;
    struct idx_capture *v = realloc(f->v, cap * sizeof(*v));

    if (v == NULL)
      return TR_ENOMEM;
    f->v = v;
    f->cap = cap;
  }
  c = &f->v[f->n];
  if (asprintf((char **)&c->path, "%s/%s", f->dir, file) < 0)
    return TR_ENOMEM;
  c->bs = bs;
  c->q = q;
  c->mode = mode;
  f->n++;
  return 0;
}

static int on_detail(void *ud, const char *file, int64_t bs,
                     enum idx_graph_mode mode)
{
  return found_add(ud, file, bs, -1, mode);
}

static int path_cmp(const void *x, const void *y)
{
  return strcmp(((const struct idx_capture *)x)->path,
                ((const struct idx_capture *)y)->path);
}

/* execution_details.json of dir, when there is one: 1 read, 0 none. */
static int read_details(struct found *f, struct tr_err *err)
{
  char *path = NULL, *text = malloc(DETAILS_MAX);
  size_t n = 0;
  FILE *fp = NULL;
  int rc = TR_ENOMEM;

  if (text != NULL && asprintf(&path, "%s/%s", f->dir, DETAILS_NAME) >= 0) {
    if ((fp = fopen(path, "rb")) == NULL) {
      rc = errno == ENOENT
               ? 0
               : tr_err_set(err, -errno, "", "%s: %s", path, strerror(errno));
    } else {
      n = fread(text, 1, DETAILS_MAX, fp);
      rc = idx_capture_details(text, n, on_detail, f, err);
      rc = rc == 0 ? 1 : rc;
      fclose(fp);
    }
  }
  free(path);
  free(text);
  return rc;
}

static int read_names(struct found *f, int rank)
{
  DIR *dir = opendir(f->dir);
  struct dirent *e;
  int64_t bs, q, r;
  int rc = 0;

  if (dir == NULL)
    return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
  while (rc == 0 && (e = readdir(dir)) != NULL)
    if (idx_capture_name(e->d_name, &bs, &q, &r) && (rank < 0 || r == rank))
      rc = found_add(f, e->d_name, bs, q, IDX_GRAPH_AUTO);
  closedir(dir);
  return rc;
}

int idx_captures_find(const char *dir, int rank, struct idx_capture **out,
                      size_t *n, struct tr_err *err)
{
  struct found f = { 0 };
  int rc;

  if ((f.dir = strdup(dir)) == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  rc = read_details(&f, err);
  if (rc == 0)
    rc = read_names(&f, rank);
  free(f.dir);
  if (rc < 0) {
    idx_captures_free(f.v, f.n);
    return err != NULL && err->code
               ? rc
               : tr_err_set(err, rc, "", "%s: %s", dir, tr_strerror(rc));
  }
  if (f.n > 1) /* f.v is NULL when none was found */
    qsort(f.v, f.n, sizeof(*f.v), path_cmp);
  *out = f.v;
  *n = f.n;
  return 0;
}

void idx_captures_free(struct idx_capture *c, size_t n)
{
  for (size_t i = 0; c != NULL && i < n; i++)
    free((char *)c[i].path);
  free(c);
}
