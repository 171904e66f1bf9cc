/*
 * cap_scan: what this launch's bytes of ATOM's server log say, read as
 * ATOM's wait_server_ready.sh reads it (docs/ATOM.md): only the bytes
 * appended since the launch. The launcher truncates the log at every
 * launch, so a file that shrank, or whose bytes before our offset changed,
 * is a new log: it is read again from byte 0 and what an earlier run wrote
 * never counts. Line by line, it finds the fatal markers and the lines of
 * ATOM's profiler (atom/model_engine/model_runner.py, api_server.py):
 *
 *   Rank N: profiler started (detailed=..., dir=...)
 *   Failed to start profiling                       (the API's log line)
 *   Rank N: stopping profiler...
 *   Rank N: trace exported to PATH (S MB, T s)
 *   Rank N: failed to export trace to PATH          (then a traceback)
 *   Rank N: profiler stop failed                    (kineto raised in
 *                                                    __exit__: no file)
 *   Rank N: profiler stop completed in T s          (after any of them)
 *
 * and error lines (uvicorn's "ERROR:", an exception ending a traceback, a
 * 5xx access line), the first one from err_from on kept for a partial
 * workload's report, and what a launch that died said last (its
 * traceback's exception line: cap_scan_decisive()). Each finding keeps its
 * line's byte offset, which tells the phase it was written in (daemon/watch.c).
 *
 * The bytes read are copied to the capture's own server.log.
 *
 * Pool threads only (file reads); one scan of a cap_scan at a time, and the
 * loop reads its fields only between scans. Bounded work per call.
 */
#ifndef DAEMON_LOGSCAN_H
#define DAEMON_LOGSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAP_SCAN_LINE 256 /* bytes of a quoted line kept */

struct cap_scan {
  /* Set by the owner before the first call. */
  const char *src;       /* ATOM's server log (borrowed) */
  char *copy;            /* the capture's copy (owned by the owner) */
  const char *trace_dir; /* exports are counted under it (borrowed) */

  /* Position: the next byte of src, the bytes just before it. */
  uint64_t offset;
  unsigned char fp[64];
  size_t fp_len;
  char partial[1024]; /* a line not yet ended */
  size_t partial_len;
  uint64_t partial_at; /* its offset */
  uint64_t bytes_seen; /* this launch's bytes read so far */

  /* Set by the owner between scans: error lines from this offset on are
   * kept (UINT64_MAX: none). */
  uint64_t err_from;

  /* What the launch's lines said. */
  const char *marker; /* a fatal marker (static string), or NULL */
  char marker_line[CAP_SCAN_LINE];
  uint64_t marker_at;                /* its offset */
  bool marker_framed;                /* its line is indented (a traceback's
                                        frame): a later one may replace it */
  int profilers_started;             /* "profiler started" lines */
  char start_failed[CAP_SCAN_LINE];  /* "Failed to start profiling" */
  int profilers_stopping;            /* "stopping profiler..." lines */
  uint64_t stopping_at;              /* the first one's offset, or
                                        UINT64_MAX */
  int stops_completed;               /* "profiler stop completed" lines */
  int traces_exported;               /* under trace_dir */
  char export_failed[CAP_SCAN_LINE]; /* the first such line, or "" */
  char stop_failed[CAP_SCAN_LINE];   /* the first "profiler stop failed" */
  char last_exported[CAP_SCAN_LINE]; /* the latest such line */
  char first_error[CAP_SCAN_LINE];   /* from err_from on, or "" */
  char last_error[CAP_SCAN_LINE];    /* the latest error line, or "" */
  uint64_t last_error_at;
  char launch_error[CAP_SCAN_LINE]; /* the launch's first error line */
  char tb_last[CAP_SCAN_LINE];      /* the latest traceback's last line */
  bool in_tb;                       /* inside a traceback's frames */
  char last_line[CAP_SCAN_LINE];    /* the latest non-blank line */
};

/* What decided a launch's end, as a person reads its log: the fatal
 * marker's line, else the last line of the latest Python traceback (its
 * exception), else the launch's first error line, else its last line;
 * NULL when nothing was read. Borrowed from s. */
const char *cap_scan_decisive(const struct cap_scan *s);

/* The decisive line (cap_scan_decisive()) of a whole log's text, as a
 * scan of it would find it, into out ("" when it has no line): what a
 * script that failed said last that matters (its traceback's exception,
 * its first error line). Any thread. */
void cap_log_decisive(const char *text, char out[CAP_SCAN_LINE]);

/* Records the end of src as this launch's start and forgets what was
 * seen. */
void cap_scan_snapshot(struct cap_scan *s);

/* Owner, between scans: keep the first error line from offset on (a line
 * read already but at or after it counts when it was the latest). */
void cap_scan_errors_from(struct cap_scan *s, uint64_t offset);

/* Reads at most a few MiB of src past the offset: copies them to copy,
 * and accounts each complete line. */
void cap_scan_run(struct cap_scan *s);

#endif
