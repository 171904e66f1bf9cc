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
