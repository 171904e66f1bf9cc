#include "common/tr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int tr_err_set(struct tr_err *err, int code, const char *field, const char *fmt,
               ...)
{
  va_list ap;

  if (err == NULL || err->code != 0)
    return code;
  err->code = code;
  snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
  va_end(ap);
  return code;
}

void tr_err_clear(struct tr_err *err)
{
  if (err != NULL)
    memset(err, 0, sizeof(*err));
}

const char *tr_strerror(int code)
{
  switch (code) {
  case 0: return "ok";
  case TR_EAGAIN: return "again";
  case TR_EINVAL: return "invalid";
  case TR_EFORMAT: return "bad_format";
  case TR_ENOTFOUND: return "not_found";
  case TR_ECONFLICT: return "conflict";
  case TR_ENOMEM: return "no_memory";
  case TR_ELIMIT: return "too_large";
  case TR_EIO: return "io";
  case TR_EDB: return "database";
  case TR_EAUTH: return "unauthorized";
  case TR_ESTORAGE: return "insufficient_storage";
  case TR_EBUSY: return "too_many";
  default: return "system";
  }
}

int64_t tr_now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void tr_rfc3339(int64_t t_ns, char *buf, size_t size)
{
  time_t secs = (time_t)(t_ns / 1000000000);
  int ms = (int)((t_ns / 1000000) % 1000);
  struct tm tm;
  char day[24];

  gmtime_r(&secs, &tm);
  strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, size, "%s.%03dZ", day, ms);
}

int tr_mkdir_p(const char *path)
{
  char buf[4096];

  if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
    return -ENAMETOOLONG;
  for (char *p = buf + 1; *p != '\0'; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return -errno;
    *p = '/';
  }
  return mkdir(buf, 0755) != 0 && errno != EEXIST ? -errno : 0;
}

char *tr_capture_dir(const char *root, int64_t id, const char *sub)
{
  char *out;
  int n = sub != NULL ? asprintf(&out, "%s/%s/%lld", root, sub, (long long)id)
                      : asprintf(&out, "%s/%lld", root, (long long)id);

  return n < 0 ? NULL : out;
}

char *tr_points_path(const char *root, int64_t id, int64_t rank, bool make)
{
  char *logs = tr_capture_dir(root, id, "logs"), *dir = NULL, *out = NULL;

  if (logs != NULL && asprintf(&dir, "%s/points", logs) < 0)
    dir = NULL;
  if (dir != NULL && (!make || tr_mkdir_p(dir) == 0) &&
      asprintf(&out, "%s/rank_%lld.points", dir, (long long)rank) < 0)
    out = NULL;
  free(logs);
  free(dir);
  return out;
}

char *tr_trash_dir(const char *root, int64_t id, const char *sub)
{
  char *out;
  int n = id == 0 ? asprintf(&out, "%s/.trash", root)
          : sub != NULL
              ? asprintf(&out, "%s/.trash/%s-%lld", root, sub, (long long)id)
              : asprintf(&out, "%s/.trash/%lld", root, (long long)id);

  return n < 0 ? NULL : out;
}

char *tr_state_dir(const char *db, const char *sub)
{
  const char *slash = strrchr(db, '/');
  char *out;
  int n = slash == NULL ? asprintf(&out, "%s", sub)
                        : asprintf(&out, "%.*s/%s", (int)(slash - db), db, sub);

  return n < 0 ? NULL : out;
}

void tr_buf_reserve(struct tr_buf *b, size_t len)
{
  size_t cap = b->cap ? b->cap : 256;
  char *grown;

  if (b->failed)
    return;
  if (b->max > 0 && b->n + len > b->max) {
    b->failed = TR_ELIMIT;
    return;
  }
  while (cap < b->n + len + 1)
    cap *= 2;
  if (cap == b->cap)
    return;
  if ((grown = realloc(b->p, cap)) == NULL) {
    b->failed = TR_ENOMEM;
    return;
  }
  b->p = grown;
  b->cap = cap;
}

void tr_buf_put(struct tr_buf *b, const char *data, size_t len)
{
  tr_buf_reserve(b, len);
  if (b->failed)
    return;
  memcpy(b->p + b->n, data, len);
  b->n += len;
  b->p[b->n] = '\0';
}

void tr_buf_printf(struct tr_buf *b, const char *fmt, ...)
{
  char small[256], *big = NULL;
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof(small)) {
    va_start(ap, fmt);
    n = vasprintf(&big, fmt, ap);
    va_end(ap);
  }
  if (n < 0)
    b->failed = TR_ENOMEM;
  else
    tr_buf_put(b, big != NULL ? big : small, (size_t)n);
  free(big);
}

void tr_buf_free(struct tr_buf *b)
{
  if (b == NULL)
    return;
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}
