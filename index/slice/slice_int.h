/*
 * Internals of the trace slicer (slice.c): its buffered output and the
 * JSON mending a copied event or member may need (slice_json.c). Internal
 * to index/slice/ (and its tests); one thread at a time.
 */
#ifndef IDX_SLICE_INT_H
#define IDX_SLICE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "index/agg/agg.h"
#include "index/read/read.h"
#include "index/index.h"
#include "index/slice/slice.h"

/* Bytes gathered before they go to the writer. */
#define SLICE_OUT_BUF (64u << 10)

/* The slice's text on its way to the caller's writer. The first failure
 * (the writer's return, or TR_ENOMEM) is kept in rc and ends all output. */
struct slice_out {
  idx_write_fn write;
  void *ud;
  int rc;
  size_t n;
  char buf[SLICE_OUT_BUF];
};

/* Text kept in memory: a member held for the document's end, a mended
 * event (each at most the reader's ceiling on an event, mended). */
struct slice_held {
  char *p;
  size_t n, cap;
};

/* An idx_write_fn appending to the struct slice_held ud. */
int slice_held_write(void *ud, const char *p, size_t n);

/* Appends p[0..n): copied into the buffer, or written straight through
 * when larger than it. Returns o->rc. */
int slice_out_put(struct slice_out *o, const char *p, size_t n);
/* slice_out_put() of a NUL-terminated string. */
int slice_out_str(struct slice_out *o, const char *s);
/* Hands what is buffered to the writer. Returns o->rc. */
int slice_out_flush(struct slice_out *o);

/* What slice_json_mend() found of a JSON text. */
enum {
  SLICE_JSON_VALID,  /* strict JSON (RFC 8259) as it is */
  SLICE_JSON_MENDED, /* not, but mended (see slice_json.c) */
  SLICE_JSON_BAD     /* not, and not mendable */
};

/* Judges the JSON value p[0..n) (one value, nothing around it) and, when
 * o is not NULL, writes its mended text to o: the quirks the reader
 * accepts become strict JSON (slice_json.c lists them). Call with o NULL
 * first, then copy p as it is when VALID, or mend into o when MENDED. */
int slice_json_mend(const char *p, size_t n, struct slice_out *o);

/* Past the one strict JSON value at p (whitespace before it allowed)
 * ending at or before end, judged by slice_json_mend()'s fast path
 * alone; NULL where it is not, or may not be (the descent would say).
 * The reader's judge (idx_reader_judge()). */
const char *slice_json_strict_end(const char *p, const char *end);

/* Writes p[0..n) as the body of a JSON string (no quotes): '"', '\\' and
 * control characters escaped, bytes that are not UTF-8 as U+FFFD. */
void slice_json_escape(struct slice_out *o, const char *p, size_t n);

/* The value of the member key of the JSON object p[0..n) (strict JSON,
 * as it is or as slice_json_mend() wrote it; the key written without
 * escapes): 1 with its text in *val, or 0 when it has none. */
int slice_json_member(const char *p, size_t n, const char *key,
                      struct idx_str *val);

/* traced_slice's counts: "events_read":..,.."events_dropped":.. */
void slice_put_counts(struct slice_out *o, const struct idx_slice_stats *t);
/* ,"findings": {steps, idle} when on, else null. */
void slice_put_findings(struct slice_out *o, const struct idx_slice_stats *t,
                        int on);

/* ---- ranges of the text from access points (slice_feed.c) ---- */

/* A range of the document's text to feed: [a, b) (b UINT64_MAX: to
 * the end), starting at element number elems, over `pieces` pieces. */
struct slice_range {
  uint64_t a, b, elems;
  size_t pieces;
};

struct slice_feed {
  int fd; /* the trace, borrowed */
  const struct idx_points *pts;
  struct idx_reader *rd;     /* what the ranges are fed to */
  struct idx_resume *rs;     /* the stream open, or NULL */
  uint64_t pos;              /* the document offset it is at */
  uint64_t text_bytes;       /* inflated in all (read after closing) */
  const atomic_bool *cancel; /* checked between reads; may be NULL */
  char *buf;
  struct tr_err *err;
  struct slice_pump *pump; /* the thread inflating ahead, or NULL */
};

/* Ready to feed rd from the points pts of the file open on fd (both
 * borrowed). 0 or TR_ENOMEM; slice_feed_close() either way. */
int slice_feed_open(struct slice_feed *f, int fd, const struct idx_points *pts,
                    struct idx_reader *rd, struct tr_err *err);

/* Starts a thread that inflates range[0..n) (borrowed until closing),
 * in that order, ahead of the caller's slice_feed_range() calls, which
 * must then ask for exactly those ranges in that order. 0 or TR_ENOMEM
 * (then the feed inflates on the caller's turn, as without). */
int slice_feed_pump(struct slice_feed *f, const struct slice_range *range,
                    size_t n);

/* Feeds the text [a, b) to the reader (b UINT64_MAX: to the end), a at
 * or after the last range's end. 0, the reader's failure, TR_ECONFLICT
 * when cancelled, or negative with err (the file does not match its
 * points). */
int slice_feed_range(struct slice_feed *f, uint64_t a, uint64_t b);

/* Stops and joins the pump's thread, if any; f->text_bytes is then
 * final. */
void slice_feed_close(struct slice_feed *f);

/* ---- one rank's part of an all-ranks slice (slice_ranks.c) ---- */

/* A rank's processes in the merged timeline: each pid the rank's events
 * name (its text as written) gets one of its own, so ranks never share
 * one. Filled by the rank's slicer, read by idx_slice_ranks(). */
struct slice_part {
  uint64_t place, places; /* the rank's place in the list, of so many */
  int64_t pid_base;       /* the rank's pids are pid_base + 1 ... */
  char prefix[32];        /* "rank 3 \u00b7 ", before each process name */
  struct agg_map pids;    /* pid text -> id; SLICE_PART_PIDS at most */
  uint8_t *named;         /* by id: a process_name event was written */
  size_t named_cap;
  uint64_t elements;         /* elements of traceEvents written, all ranks */
  struct slice_held scratch; /* a mended event, before its pid is
                                replaced */
};

/* Writes ev (judged VALID or MENDED by slice_json_mend()) to o with its
 * pid replaced by its process's in the merged timeline (and a pid added
 * when it has none); a process_name event's name gets the rank's prefix.
 * Failures go to o->rc. */
void slice_part_event(struct slice_part *pt, struct slice_out *o,
                      const struct idx_event *ev, int verdict);

/* The merged timeline's pid of the rank's numeric pid; when naming, its
 * process_name is being written. -1 (o->rc set) when out of memory. */
int64_t slice_part_pid_num(struct slice_part *pt, struct slice_out *o,
                           int64_t pid, int naming);

/* The slicer of idx_slice_under() (slice.c): with part NULL it writes a
 * whole document; else only the elements of traceEvents, one rank's
 * part of a merged document (members left out, no traced_slice), its
 * pids those of part. */
int slice_rank_run(const char *root, const char *path,
                   const struct idx_slice_opts *o, struct slice_part *part,
                   idx_write_fn write, void *ud, struct idx_slice_stats *stats,
                   struct tr_err *err);

#endif
