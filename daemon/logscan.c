#include "daemon/logscan.h"

#include "common/file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK    (64 * 1024)
#define PASS_MAX (4 * 1024 * 1024) /* bytes read per call */

/* docs/ATOM.md (wait_server_ready.sh, wait_infer_drain.sh): a launch with
 * one of these is dead or will never be ready. "proc died" is also how
 * ATOM reports a worker that died (async_proc.py), and the parser's error
 * line is how a refused argv ends. */
static const char *const markers[] = {
  "cluster_dims",
  "InductorError",
  "SHUTDOWN signal",
  "proc died",
  "Memory access fault",
  "HSA_STATUS_ERROR",
  "openai_server.py: error:",
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

/* The log is a file traced reads as root where other users may write:
 * never follow a link, never block on a FIFO, only a regular file. */
static int open_log(const char *path, struct stat *st)
{
  return tr_open_file(NULL, path, 0, st, NULL);
}

static void forget(struct cap_scan *s)
{
  s->offset = 0;
  s->fp_len = 0;
  s->partial_len = 0;
  s->partial_at = 0;
  s->bytes_seen = 0;
  s->marker = NULL;
  s->marker_framed = false;
  s->marker_line[0] = s->start_failed[0] = s->export_failed[0] = '\0';
  s->last_exported[0] = s->stop_failed[0] = '\0';
  s->first_error[0] = s->last_error[0] = '\0';
  s->launch_error[0] = s->tb_last[0] = s->last_line[0] = '\0';
  s->in_tb = false;
  s->marker_at = s->last_error_at = 0;
  s->stopping_at = UINT64_MAX;
  s->profilers_started = s->profilers_stopping = s->traces_exported = 0;
  s->stops_completed = 0;
}

void cap_scan_errors_from(struct cap_scan *s, uint64_t offset)
{
  s->err_from = offset;
  s->first_error[0] = '\0';
  if (s->last_error[0] != '\0' && s->last_error_at >= offset)
    memcpy(s->first_error, s->last_error, sizeof(s->first_error));
}

void cap_scan_snapshot(struct cap_scan *s)
{
  struct stat st;
  char buf[sizeof(s->fp)];
  int fd = open_log(s->src, &st);

  forget(s);
  if (fd < 0)
    return;
  if (st.st_size > 0) {
    size_t want =
        st.st_size < (off_t)sizeof(buf) ? (size_t)st.st_size : sizeof(buf);

    if (pread(fd, buf, want, st.st_size - (off_t)want) == (ssize_t)want) {
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

static void quote(char *dst, const char *line, size_t n)
{
  snprintf(dst, CAP_SCAN_LINE, "%.*s", (int)n, line);
}

/* "Rank N: <what>" at the start of the message of line (after ATOM's
 * logger prefix). */
static const char *rank_says(const char *line, size_t n, const char *what)
{
  const char *at = memmem(line, n, "Rank ", 5);
  const char *p, *end = line + n;

  if (at == NULL)
    return NULL;
  for (p = at + 5; p < end && *p >= '0' && *p <= '9'; p++)
    ;
  if (p == at + 5 || end - p < 2 || p[0] != ':' || p[1] != ' ')
    return NULL;
  p += 2;
  return (size_t)(end - p) >= strlen(what) && memcmp(p, what, strlen(what)) == 0
             ? p + strlen(what)
             : NULL;
}

static void account_profiler(struct cap_scan *s, const char *line, size_t n,
                             uint64_t at)
{
  const char *path;
  size_t dir = strlen(s->trace_dir);

  if (rank_says(line, n, "profiler started") != NULL)
    s->profilers_started++;
  else if (rank_says(line, n, "stopping profiler") != NULL) {
    if (s->profilers_stopping++ == 0)
      s->stopping_at = at;
  } else if (rank_says(line, n, "profiler stop completed") != NULL)
    s->stops_completed++;
  else if (rank_says(line, n, "profiler stop failed") != NULL) {
    if (s->stop_failed[0] == '\0')
      quote(s->stop_failed, line, n);
  } else if (rank_says(line, n, "failed to export trace to ") != NULL) {
    if (s->export_failed[0] == '\0')
      quote(s->export_failed, line, n);
  } else if ((path = rank_says(line, n, "trace exported to ")) != NULL) {
    /* Only this capture's folder: a --mark-trace graph trace or another
     * server's would not be a rank of ours. */
    if ((size_t)(line + n - path) > dir &&
        memcmp(path, s->trace_dir, dir) == 0 && path[dir] == '/') {
      s->traces_exported++;
      quote(s->last_exported, line, n);
    }
  } else if (s->start_failed[0] == '\0' &&
             memmem(line, n, "Failed to start profiling", 25) != NULL) {
    quote(s->start_failed, line, n);
  }
}

/* An error line of ATOM's server log: uvicorn's "ERROR:", an exception
 * ending a traceback ("ValueError: ..." at the start of a line), the long
 * log format's "[atom ERROR]" header, or an access line with a 5xx. */
static bool error_line(const char *line, size_t n)
{
  size_t word = 0;

  if (n >= 6 && memcmp(line, "ERROR:", 6) == 0)
    return true;
  if (memmem(line, n, " ERROR] ", 8) != NULL ||
      memmem(line, n, " HTTP/1.1\" 5", 12) != NULL)
    return true;
  while (word < n && (isalnum((unsigned char)line[word]) ||
                      line[word] == '_' || line[word] == '.'))
    word++;
  return word > 0 && word < n && line[word] == ':' &&
         ((word >= 5 && memcmp(line + word - 5, "Error", 5) == 0) ||
          (word >= 9 && memcmp(line + word - 9, "Exception", 9) == 0));
}

/* Python's traceback: "Traceback (most recent call last):", indented
 * frames, then the exception's line, the first one not indented (a chained
 * exception starts another traceback after it). */
static void account_traceback(struct cap_scan *s, const char *line, size_t n)
{
  static const char start[] = "Traceback (most recent call last):";

  if (n >= sizeof(start) - 1 && memcmp(line, start, sizeof(start) - 1) == 0) {
    s->in_tb = true;
  } else if (s->in_tb && n > 0 && line[0] != ' ' && line[0] != '\t') {
    quote(s->tb_last, line, n);
    s->in_tb = false;
  }
}

const char *cap_scan_decisive(const struct cap_scan *s)
{
  if (s->marker != NULL)
    return s->marker_line;
  if (s->tb_last[0] != '\0')
    return s->tb_last;
  if (s->launch_error[0] != '\0')
    return s->launch_error;
  return s->last_line[0] != '\0' ? s->last_line : NULL;
}

static void account_line(struct cap_scan *s, const char *line, size_t n,
                         uint64_t at)
{
  size_t blank = 0;

  while (blank < n &&
         (line[blank] == ' ' || line[blank] == '\t' || line[blank] == '\r'))
    blank++;
  if (blank < n)
    quote(s->last_line, line, n);
  account_traceback(s, line, n);
  /* A marker in a traceback's frame (an indented source line) gives way
   * to the next one outside it: its exception's line says more. */
  for (size_t i = 0; (s->marker == NULL || s->marker_framed) &&
                     i < sizeof(markers) / sizeof(*markers);
       i++) {
    if (memmem(line, n, markers[i], strlen(markers[i])) != NULL &&
        (s->marker == NULL || blank == 0)) {
      s->marker = markers[i];
      s->marker_at = at;
      s->marker_framed = blank > 0;
      quote(s->marker_line, line, n);
    }
  }
  if (error_line(line, n)) {
    quote(s->last_error, line, n);
    s->last_error_at = at;
    if (s->launch_error[0] == '\0')
      quote(s->launch_error, line, n);
    if (s->first_error[0] == '\0' && at >= s->err_from)
      quote(s->first_error, line, n);
  }
  account_profiler(s, line, n, at);
}

/* Splits buf into lines, the first continuing s->partial. A line longer
 * than partial is accounted by its first bytes. */
static void account(struct cap_scan *s, const char *buf, size_t len)
{
  const char *p = buf, *end = buf + len, *nl;

  while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
    size_t n = (size_t)(nl - p);

    if (s->partial_len > 0) {
      size_t room = sizeof(s->partial) - s->partial_len;

      n = n < room ? n : room;
      memcpy(s->partial + s->partial_len, p, n);
      account_line(s, s->partial, s->partial_len + n, s->partial_at);
      s->partial_len = 0;
    } else {
      account_line(s, p, n, s->offset + (uint64_t)(p - buf));
    }
    p = nl + 1;
  }
  if (p < end) {
    size_t n = (size_t)(end - p), room = sizeof(s->partial) - s->partial_len;

    if (s->partial_len == 0)
      s->partial_at = s->offset + (uint64_t)(p - buf);
    n = n < room ? n : room;
    memcpy(s->partial + s->partial_len, p, n);
    s->partial_len += n;
  }
}

void cap_log_decisive(const char *text, char out[CAP_SCAN_LINE])
{
  /* A scan of no file: no copy, no trace folder to count exports in. */
  struct cap_scan *s = calloc(1, sizeof(*s));
  const char *line;

  out[0] = '\0';
  if (s == NULL)
    return;
  s->trace_dir = "";
  forget(s);
  s->err_from = UINT64_MAX;
  account(s, text, strlen(text));
  if (s->partial_len > 0)
    account_line(s, s->partial, s->partial_len, s->partial_at);
  line = cap_scan_decisive(s);
  if (line != NULL)
    snprintf(out, CAP_SCAN_LINE, "%s", line);
  free(s);
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
  struct stat st;
  int fd = open_log(s->src, &st);
  char *buf = malloc(CHUNK);
  size_t total = 0;

  if (fd < 0 || buf == NULL)
    goto out;
  if (!same_file(s, fd, st.st_size)) {
    forget(s);
    append_copy(s, NULL, 0, true);
  }
  while (total < PASS_MAX) {
    ssize_t n = pread(fd, buf, CHUNK, (off_t)s->offset);

    if (n <= 0)
      break;
    account(s, buf, (size_t)n);
    append_copy(s, buf, (size_t)n, false);
    keep_fingerprint(s, buf, (size_t)n);
    s->offset += (uint64_t)n;
    s->bytes_seen += (uint64_t)n;
    total += (size_t)n;
  }
out:
  free(buf);
  if (fd >= 0)
    close(fd);
}
