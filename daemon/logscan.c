/*
 * The server log, read as ATOM's wait_server_ready.sh reads it
 * (docs/ATOM.md): only the bytes appended since this launch, looking for
 * the fatal markers. The launcher truncates the log at every launch, so a
 * file that shrank, or whose bytes before our offset changed, is a new
 * log: read it again from byte 0. Pool threads only; bounded work per call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cap_int.h"

#define CHUNK    (64 * 1024)
#define PASS_MAX (4 * 1024 * 1024) /* bytes read per call */

static const char *const markers[] = {
  "cluster_dims", "InductorError",       "SHUTDOWN signal",
  "proc died",    "Memory access fault", "HSA_STATUS_ERROR",
};

/* Remembers the bytes just before offset (buf holds the last len bytes
 * read, ending at offset). */
static void keep_fingerprint(struct cap_scan *s, const char *buf, size_t len)
{
  size_t n = len < sizeof(s->fp) ? len : sizeof(s->fp);
  size_t keep = sizeof(s->fp) - n;

  if (keep > s->fp_len)
    keep = s->fp_len;
  memmove(s->fp, s->fp + s->fp_len - keep, keep);
  memcpy(s->fp + keep, buf + len - n, n);
  s->fp_len = keep + n;
}

void cap_scan_snapshot(struct cap_scan *s)
{
  int fd = open(s->src, O_RDONLY | O_CLOEXEC);
  struct stat st;
  char buf[sizeof(s->fp)];
  ssize_t n;

  s->offset = 0;
  s->fp_len = 0;
  s->carry_len = 0;
  if (fd < 0)
    return;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    size_t want =
        st.st_size < (off_t)sizeof(buf) ? (size_t)st.st_size : sizeof(buf);

    n = pread(fd, buf, want, st.st_size - (off_t)want);
    if (n == (ssize_t)want) {
      s->offset = (uint64_t)st.st_size;
      keep_fingerprint(s, buf, want);
    }
  }
  close(fd);
}

/* True when the file is still the one whose bytes we read up to offset. */
static bool same_file(const struct cap_scan *s, int fd, off_t size)
{
  unsigned char buf[sizeof(s->fp)];

  if ((uint64_t)size < s->offset)
    return false;
  if (s->fp_len == 0)
    return true;
  return pread(fd, buf, s->fp_len, (off_t)(s->offset - s->fp_len)) ==
             (ssize_t)s->fp_len &&
         memcmp(buf, s->fp, s->fp_len) == 0;
}

/* Looks for a marker in carry + buf; on a find fills s->marker/line. */
static void find_marker(struct cap_scan *s, const char *buf, size_t len)
{
  char *text = malloc(s->carry_len + len);
  size_t n = s->carry_len + len;

  if (text == NULL)
    return;
  memcpy(text, s->carry, s->carry_len);
  memcpy(text + s->carry_len, buf, len);
  for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
    const char *at = memmem(text, n, markers[i], strlen(markers[i]));
    const char *from = at, *to = at;

    if (at == NULL)
      continue;
    while (from > text && from[-1] != '\n' && at - from < 120)
      from--;
    while (to < text + n && *to != '\n' && to - at < 120)
      to++;
    s->marker = markers[i];
    snprintf(s->line, sizeof(s->line), "%.*s", (int)(to - from), from);
    break;
  }
  s->carry_len = n < sizeof(s->carry) ? n : sizeof(s->carry);
  memcpy(s->carry, text + n - s->carry_len, s->carry_len);
  free(text);
}

static void append_copy(struct cap_scan *s, const char *buf, size_t len,
                        bool restart)
{
  int fd = open(s->copy, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

  if (fd < 0)
    return;
  if (restart && ftruncate(fd, 0) != 0)
    perror("traced: server log copy");
  if (len > 0 && write(fd, buf, len) < 0)
    perror("traced: server log copy");
  close(fd);
}

void cap_scan_run(struct cap_scan *s)
{
  int fd = open(s->src, O_RDONLY | O_CLOEXEC);
  char *buf = malloc(CHUNK);
  struct stat st;
  size_t total = 0;

  if (fd < 0 || buf == NULL || fstat(fd, &st) != 0)
    goto out;
  if (!same_file(s, fd, st.st_size)) {
    s->offset = 0;
    s->fp_len = 0;
    s->carry_len = 0;
    append_copy(s, NULL, 0, true);
  }
  while (s->marker == NULL && total < PASS_MAX) {
    ssize_t n = pread(fd, buf, CHUNK, (off_t)s->offset);

    if (n <= 0)
      break;
    find_marker(s, buf, (size_t)n);
    append_copy(s, buf, (size_t)n, false);
    keep_fingerprint(s, buf, (size_t)n);
    s->offset += (uint64_t)n;
    total += (size_t)n;
  }
out:
  free(buf);
  if (fd >= 0)
    close(fd);
}
