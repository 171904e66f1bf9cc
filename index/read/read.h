/*
 * read: bytes to events (index/read/README.md). Its face, what the rooms
 * above it read: the events the reader hands out (struct idx_event, one
 * per element of traceEvents, to a callback), the trace formats and their
 * classes of events, the access points recorded while inflating, and the
 * reader's number grammar and depth bound, which the slicer's strict JSON
 * judge shares (index/slice/slice_json.c). Internal to index/.
 */
#ifndef IDX_READ_H
#define IDX_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/tr.h"
#include "index/index.h"

/* ---- access points (points.c, points_resume.c) ---- */

/*
 * Access points into a trace file, so that a reader can start inflating
 * near an output offset instead of at the file's start (zlib's
 * examples/zran.c): each point is where a deflate block starts (its bit
 * offset in the file), the output offset there, and the 32 KiB of output
 * before it, which the block may copy from. A point at a gzip member's
 * start needs no window; in a plain file a point is just an offset.
 *
 * The indexing pass records them as it inflates (index/read/source.c,
 * idx_source_open_points()); idx_points_save() writes them beside the
 * rank, the windows deflated; idx_points_load() reads them back and
 * refuses a file that is damaged or was made from another version of the
 * source; idx_resume_*() inflates from one. No thread of its own; a
 * struct is used by one thread at a time.
 */
#define IDX_POINT_WINDOW (32u * 1024) /* deflate's farthest copy */
/* Output bytes between points, by default: a slice then inflates half of
 * that on average before its window (docs/BENCHMARKS.md, "Access
 * points", has what it costs and what the file weighs). */
#ifndef IDX_POINT_SPACING /* a build may set it (bench/, docs/SLICES.md) */
#define IDX_POINT_SPACING (32ull << 20)
#endif
#define IDX_POINT_SPACING_MIN (16u * 1024) /* smaller is taken as this */
#define IDX_POINTS_MAX        (1u << 20) /* points in one file, loaded or made */
#define IDX_POINTS_WZ_MAX     (64u << 20) /* their deflated windows' bytes */

enum idx_point_kind {
  IDX_POINT_BLOCK,  /* a block inside a member: needs the window */
  IDX_POINT_MEMBER, /* a gzip member's first byte */
  IDX_POINT_PLAIN   /* a plain file's byte */
};

struct idx_point {
  uint64_t out_off; /* output (JSON text) offset */
  uint64_t in_bit;  /* the file's bit where the block or member starts */
  uint32_t kind;    /* enum idx_point_kind */
  uint32_t win_len; /* window bytes (0..IDX_POINT_WINDOW) */
  uint64_t wz_off;  /* its deflated bytes in idx_points.wz */
  uint32_t wz_len;
};

/* Zero-filled is empty and valid. */
struct idx_points {
  struct idx_point *pt; /* n, out_off and in_bit increasing */
  uint32_t n, cap;
  uint8_t *wz; /* the windows, each deflated on its own */
  size_t wz_len, wz_cap;
  /* Bytes stored with them for the slicer (index/slice/slice.h), opaque
   * here; NULL: none. */
  uint8_t *figs;
  size_t figs_len;
  /* Loaded: the file mapped, which wz and figs point into (a slice
   * loads them each time: no copy). NULL when made here. */
  uint8_t *file;
  size_t file_len;
};

/* Appends a point, deflating its window (win_len bytes, borrowed; NULL
 * when 0). 0, TR_ELIMIT past IDX_POINTS_MAX or IDX_POINTS_WZ_MAX,
 * TR_EINVAL when it does not follow the last point, or TR_ENOMEM (p
 * unchanged). */
int idx_points_add(struct idx_points *p, const struct idx_point *pt,
                   const uint8_t *win);

/* Writes p to path (path.tmp, then renamed), stamped with the source
 * file's size and mtime (src: its fstat()), p->figs after the points.
 * 0 or negative with err. */
int idx_points_save(const struct idx_points *p, const char *path,
                    const struct stat *src, struct tr_err *err);

/* The same in three steps, so that the slicer's bytes can be streamed
 * after the points (index/file.c writes them while the time pass runs):
 * idx_points_open() writes path.tmp up to the points' end, the caller
 * writes its bytes to o->f, idx_points_close() records how many there
 * are and renames the file into place when rc is 0, else removes it;
 * it returns rc or its own failure. */
struct idx_points_out {
  FILE *f;
  char *tmp;
};
int idx_points_open(const struct idx_points *p, const char *path,
                    const struct stat *src, struct idx_points_out *o,
                    struct tr_err *err);
int idx_points_close(struct idx_points_out *o, const char *path,
                     uint64_t figs_len, int rc, struct tr_err *err);

/* Reads path into *out (caller frees with idx_points_free()) when it is
 * a points file of this version whose stamp matches src and whose every
 * count and offset is in bounds. 0; TR_ENOTFOUND when it is missing,
 * TR_EFORMAT when it is damaged or stale (the caller then has no points
 * and reads from the start), negative errno, or TR_ENOMEM. */
int idx_points_load(const char *path, const struct stat *src,
                    struct idx_points *out, struct tr_err *err);

/* The window of point i inflated into buf (IDX_POINT_WINDOW bytes).
 * 0 or TR_EFORMAT. */
int idx_points_window(const struct idx_points *p, uint32_t i, uint8_t *buf);

/* The last point at or before out_off, or -1 when none. */
long idx_points_find(const struct idx_points *p, uint64_t out_off);

/* Frees the arrays (NULL or empty is fine); p is then empty. */
void idx_points_free(struct idx_points *p);

/* Inflating from a point to the end of the file. */
struct idx_resume;

/* Starts at point i of p (copied what it needs) in the file open on fd
 * (borrowed until idx_resume_free()). 0, TR_EINVAL, TR_EFORMAT or
 * TR_ENOMEM; caller frees with idx_resume_free(). */
int idx_resume_open(int fd, const struct idx_points *p, uint32_t i,
                    struct idx_resume **out);

/* The next output bytes into buf (up to cap): *got 0 at the end. 0, or
 * negative with err (a read error, damaged data). */
int idx_resume_read(struct idx_resume *r, uint8_t *buf, size_t cap, size_t *got,
                    struct tr_err *err);

void idx_resume_free(struct idx_resume *r);

/* ---- events (reader.c, source.c) ---- */

/*
 * The seam between the trace reader (reader.c, source.c) and the
 * aggregation (agg*.c): the reader turns JSON text into struct idx_event
 * records, one per element of traceEvents, and hands each to a callback.
 * Internal to index/.
 */
/* A string of the event, JSON escapes already decoded, valid UTF-8, not
 * NUL-terminated. Borrowed: valid only during the callback. p == NULL when
 * the field was absent. */
struct idx_str {
  const char *p;
  size_t n;
};

/* Bits of idx_event.has: which numeric fields were present and numeric
 * (numbers written as strings, "bytes": "128", count as present; "inf",
 * "N/A" and the like do not). */
enum {
  IDX_HAS_PID = 1u << 0, /* pid was a number */
  IDX_HAS_TID = 1u << 1, /* tid was a number */
  IDX_HAS_TS = 1u << 2,
  IDX_HAS_DUR = 1u << 3,
  IDX_HAS_CORR = 1u << 4,
  IDX_HAS_EXTID = 1u << 5,
  IDX_HAS_DEVICE = 1u << 6,
  IDX_HAS_STREAM = 1u << 7,
  IDX_HAS_GRID = 1u << 8,
  IDX_HAS_BLOCK = 1u << 9,
  IDX_HAS_REGS = 1u << 10,
  IDX_HAS_SHMEM = 1u << 11,
  IDX_HAS_BYTES = 1u << 12,
  IDX_HAS_WAIT_STREAM = 1u << 13, /* cuda_sync: wait_on_stream */
  IDX_HAS_WAIT_CORR = 1u << 14,   /* cuda_sync: the awaited record's
                                     correlation */
  /* A [memory] event's args (profile_memory: index/memory/). */
  IDX_HAS_MEM_BYTES = 1u << 15, /* "Bytes" */
  IDX_HAS_MEM_ADDR = 1u << 16,  /* "Addr" */
  IDX_HAS_MEM_ALLOC = 1u << 17, /* "Total Allocated" */
  IDX_HAS_MEM_RES = 1u << 18,   /* "Total Reserved" */
  IDX_HAS_MEM_TYPE = 1u << 19,  /* "Device Type" */
  IDX_HAS_MEM_ID = 1u << 20     /* "Device Id" */
};

/* The times an event may carry (docs/TRACE_FORMATS.md, "What the reader
 * accepts"): 0 <= ts_ns < IDX_TS_LIMIT_NS and 0 <= dur_ns <
 * IDX_DUR_LIMIT_NS. An event outside is skipped and counted as malformed.
 * kineto's clock is the Unix epoch in microseconds, or a count since boot
 * or baseTimeNanoseconds, mcTracer's nanoseconds since boot: 2^62 ns is
 * the year 2116, and neither writes a time before its origin. An event
 * lasts at most the profiler's window (seconds to minutes; kineto cannot
 * buffer days): 2^50 ns is 13 days. So every end (ts + dur), every span
 * and every difference of two of them stays below 2^63, and 2^12
 * durations sum without overflow; sums over more saturate where they are
 * made. */
#define IDX_TS_LIMIT_NS  ((int64_t)1 << 62)
#define IDX_DUR_LIMIT_NS ((int64_t)1 << 50)

struct idx_event {
  char ph;     /* 'X', 'i', 'I', 'M', 's', 'f', 'C', 'B', 'E'...;
                  0 when absent */
  char strict; /* 1: raw is strict JSON as written, proven by the
                  reader (idx_reader_judge()); 0: not known */
  /* The kineto class of cat (enum idx_class) plus 1 when the reader
   * knows it without a look (an event its layout read: its cat is the
   * layout's), else 0; only the kineto row's classify reads it. */
  char cat_class;
  uint32_t has; /* IDX_HAS_* */
  struct idx_str name;
  struct idx_str cat;     /* absent in mcTracer and bare-array traces */
  int64_t pid, tid;       /* when numeric */
  struct idx_str pid_str; /* when written as strings: "CPU functions", */
  struct idx_str tid_str; /* "stream 7" (legacy kineto) */
  int64_t ts_ns;          /* integer nanoseconds, converted exactly from */
  int64_t dur_ns;         /* the file's unit (kineto us, mcTracer ns) */

  /* From args. */
  int64_t correlation; /* kineto "correlation", mcTracer "co_id" */
  int64_t external_id; /* "External id" or legacy "external id" */
  int64_t device, stream;
  /* A kernel's launch shape, or a [memory] event's allocation (the two
   * never meet in one event: they share the slots, the has bits say
   * which was read). */
  union {
    struct {
      int64_t grid[3], block[3];
    };
    struct {
      int64_t mem_bytes, mem_addr, mem_allocated, mem_reserved;
      int64_t mem_type, mem_id;
    };
  };
  /* kineto's cuda_sync events (docs/TRACE_FORMATS.md) carry no launch
   * resources: the stream a Stream Wait Event or Event Sync waits on and
   * the correlation of the cudaEventRecord call that recorded the awaited
   * event share their slots (the struct stays 17 vectors wide, which
   * idx_parsed_reset() clears on every event); the has bits say which was
   * read, and an event with both keys keeps the later one. */
  union {
    int64_t registers;   /* "registers per thread", "registers_per_thread" */
    int64_t wait_stream; /* IDX_HAS_WAIT_STREAM */
  };
  union {
    int64_t shared_bytes; /* "shared memory", or mcTracer dynamic_shared +
                             static_shared */
    int64_t wait_corr;    /* IDX_HAS_WAIT_CORR */
  };
  int64_t bytes;           /* "bytes"; "size" on runtime copy calls */
  struct idx_str kind;     /* "kind": "DtoD", "Dispatch Kernel", "1" */
  struct idx_str kernel;   /* "kernel": the launched kernel on a runtime
                              launch event (hipLaunchKernel...) */
  struct idx_str arg_name; /* "name": M events (process_name...) */

  /* The event's text as in the file, from its '{' to its '}' (escapes as
   * written): set when the reader was asked for it (idx_reader_keep_raw),
   * else it may be empty. */
  struct idx_str raw;
};

/* What the reader knows of the whole document. Filled as it reads; the
 * format is settled before the first event that is not ph "M" is handed
 * over (with --format it is settled from the start). */
struct idx_doc {
  enum idx_format format; /* KINETO or MCTRACER once settled */
  int bare_array;         /* the file is a bare [ ... ] of events (legacy
                             Chrome format written without kineto) */
  int64_t rank;           /* distributedInfo.rank, or -1 */
  char device[256];       /* deviceProperties[0].name, or "" */
  uint64_t events;        /* elements of traceEvents seen so far */
  uint64_t skipped;       /* events skipped as malformed (counted, never
                             silently dropped) */
  uint64_t json_bytes;    /* JSON text consumed so far */
  uint64_t walked_ahead;  /* events handed over from batches walked ahead
                             by idx_source's thread (for tests, benches) */
  /* Where pieces of traceEvents begin (idx_reader_mark()): marks counts
   * them, the last one's first element is at document offset mark_off,
   * with mark_events elements before it. */
  uint32_t marks;
  uint64_t mark_off, mark_events;
  int64_t array_end; /* offset of the ']' closing traceEvents, or -1 */
  /* During a feed: its text, which starts at document offset
   * json_bytes (an event's raw text may lie in it). */
  const char *chunk;
  size_t chunk_len;
};

/* Called once per event, in file order. A non-zero return stops reading
 * and is returned by idx_reader_feed(). */
typedef int (*idx_event_cb)(void *ud, const struct idx_doc *doc,
                            const struct idx_event *ev);

/* A top-level member of the document other than traceEvents, as written:
 * key is its JSON string with the quotes, value its text (no whitespace
 * around). key.p is NULL when the key is longer than IDX_KEY_MAX bytes,
 * value.p when the value is longer than the event ceiling (neither is
 * kept). Called in file order with the events, for idx_reader_keep_raw().
 * Borrowed for the call. A non-zero return stops reading. */
typedef int (*idx_member_cb)(void *ud, struct idx_str key,
                             struct idx_str value);

/* Longest top-level key handed to an idx_member_cb. */
#define IDX_KEY_MAX 4096

/*
 * The streaming JSON reader: push parser over chunks of any size (1 byte
 * works). Never holds the whole document: one event at a time, up to a
 * ceiling; unknown keys of any size are skipped in streaming fashion.
 */
struct idx_reader;

int idx_reader_new(enum idx_format forced, idx_event_cb cb, void *ud,
                   struct idx_reader **out);

/* Consumes len bytes. Returns 0, or negative with err holding the message
 * and the byte offset in the JSON text ("at byte 123456"). */
int idx_reader_feed(struct idx_reader *r, const char *buf, size_t len,
                    struct tr_err *err);

/* A chunk of the document as idx_source hands it out: its text and the
 * events its thread walked ahead in it (read_int.h), or NULL (the
 * reader then walks them itself). All borrowed for the call. */
struct idx_batch;
struct idx_chunk {
  const char *text;
  size_t len;
  const struct idx_batch *batch;
};

/* idx_reader_feed() of a whole chunk. */
int idx_reader_feed_chunk(struct idx_reader *r, const struct idx_chunk *c,
                          struct tr_err *err);

/* 1, with the events' nesting and the ts/dur unit (a reader_num.c scale)
 * into *depth and *scale, once the reader is inside traceEvents with the
 * format settled: what a batch must be walked for (idx_source_hint). */
int idx_reader_walk_hint(const struct idx_reader *r, unsigned *depth,
                         int *scale);

/* A piece of traceEvents begins: the next element that starts is its
 * first (idx_doc's marks, mark_off, mark_events), or none when the array
 * ends first. A slice later reads the piece alone (index/slice/slice_figs.c).
 */
void idx_reader_mark(struct idx_reader *r);

/* Goes on at document offset off, the first byte of an element (or the
 * array's closing ']') with `events` elements before it, as if the text
 * between had been read: the next feed starts there. Only between
 * elements of traceEvents (a feed ended after an element or its comma):
 * else TR_EINVAL, and the reader is unchanged. */
int idx_reader_jump(struct idx_reader *r, uint64_t off, uint64_t events);

/* End of input: fails when the document is incomplete (truncated), has no
 * traceEvents array, or is empty. */
int idx_reader_finish(struct idx_reader *r, struct tr_err *err);

const struct idx_doc *idx_reader_doc(const struct idx_reader *r);
void idx_reader_free(struct idx_reader *r);

/* For a consumer that copies the document (index/slice/slice.c): from now on
 * each event comes with its text (idx_event.raw) and each top-level
 * member other than traceEvents goes to on_member (may be NULL) with the
 * reader's ud. Members the reader would skip are then held whole, up to
 * the event ceiling. Call before the first feed. 0 or TR_ENOMEM. */
int idx_reader_keep_raw(struct idx_reader *r, idx_member_cb on_member);

/* For a consumer that reads events' arguments from their text (the op
 * models, index/perf/): every event comes with its text, also one that
 * lay across two chunks (copied then, before parsing changes it); the
 * top-level members are skipped as usual. */
void idx_reader_keep_text(struct idx_reader *r);

/* A judge of strict JSON: past the one strict JSON value at p (whitespace
 * before it allowed) that ends at or before end, else NULL (which may
 * mean "not sure"). */
typedef const char *(*idx_strict_fn)(const char *p, const char *end);

/* For a consumer that must know which events are strict JSON as written
 * (index/slice/slice.c): from now on an event read by a learnt layout comes
 * with idx_event.strict set when its text is proven strict. The proof
 * costs strict() on the layout's first event once, then on each event's
 * holes only, not on its literal runs (reader_layout.c says why that is
 * a proof). Other events come with strict 0. */
void idx_reader_judge(struct idx_reader *r, idx_strict_fn strict);

/*
 * The byte source: a plain or gzip file (detected by its magic bytes),
 * inflated (ISA-L where built with it, else zlib) on a thread of its own
 * into a small ring of buffers, so that inflating overlaps parsing; or,
 * without IDX_SOURCE_THREAD, on the caller's thread as it asks for each
 * chunk. With IDX_SOURCE_SCAN (and stage 1 on, index/read/read_int.h) the
 * thread, when it is ahead, also walks the events of chunks the caller has not
 * taken yet (reader_batch.c).
 */
struct idx_source;

enum { IDX_SOURCE_THREAD = 1, IDX_SOURCE_SCAN = 2 };

int idx_source_open(const char *path, unsigned flags, struct idx_source **out,
                    struct tr_err *err);
/* The same, the file opened under root (common/file.h's tr_open_file():
 * no link followed below root; NULL: no root check). */
int idx_source_open_under(const char *root, const char *path, unsigned flags,
                          struct idx_source **out, struct tr_err *err);

/* The same, recording access points (index/read/read.h) every `spacing`
 * output bytes (0: none, as idx_source_open_under(); at least
 * IDX_POINT_SPACING_MIN). */
int idx_source_open_points(const char *root, const char *path, unsigned flags,
                           uint64_t spacing, struct idx_source **out,
                           struct tr_err *err);

/* The points recorded, complete once idx_source_next() has returned the
 * end (those before a limit or a failed allocation stopped recording);
 * borrowed until idx_source_close(). NULL when none were asked for. */
struct idx_points;
struct idx_points *idx_source_points(const struct idx_source *s);

/* A file written beside the rank (the collectives' side file, the access
 * points): path.tmp, created afresh without following a link (*tmp gets
 * its name, *f the stream); idx_side_close() renames it into place when
 * rc is 0, else removes it, and returns rc or the close's failure. */
int idx_side_open(const char *path, FILE **f, char **tmp, struct tr_err *err);
int idx_side_close(FILE *f, char *tmp, const char *path, int rc,
                   struct tr_err *err);

/* fstat() of the file: 0 or -errno. */
struct stat;
int idx_source_stat(const struct idx_source *s, struct stat *st);

/* Next chunk of JSON text into *c, borrowed until the next call: with the
 * events the thread walked ahead under IDX_SOURCE_SCAN when it had the
 * time and a hint. Returns 0 with c->len == 0 at the end,
 * or negative on a read or inflate error (truncated gzip, bad CRC) with
 * err naming the file and offset. */
int idx_source_next(struct idx_source *s, struct idx_chunk *c,
                    struct tr_err *err);

/* What the thread's walks ahead are for (idx_reader_walk_hint()); until it
 * is given, the thread walks nothing. Any thread. */
void idx_source_hint(struct idx_source *s, unsigned depth, int scale);

uint64_t idx_source_file_bytes(const struct idx_source *s); /* file size */
uint64_t idx_source_read_bytes(const struct idx_source *s); /* read so far */
void idx_source_close(struct idx_source *s);

/* ---- file.c: one file through a reader ---- */

/* What idx_read_under() read: the file's size; with opt->points_path,
 * the access points recorded (the caller frees them, idx_points_free())
 * and the file's fstat() to stamp them with. */
struct idx_read {
  uint64_t file_bytes;
  struct stat st;
  struct idx_points points;
};

/* The threads a file may keep busy when asked for `asked`
 * (idx_options.threads: 0, as the machine allows). */
int idx_threads(int asked);

/* Reads the file at path (under root as idx_file_under() says; NULL: no
 * root) to its end through rd, which idx_reader_finish()es: the source
 * inflates on its own thread; opt's cancel and on_progress act as for
 * idx_file(). With opt->points_path, points are recorded and each chunk
 * fed begins a piece (idx_reader_mark()). *got is filled on success. */
int idx_read_under(const char *root, const char *path, struct idx_reader *rd,
                   const struct idx_options *opt, struct idx_read *got,
                   struct tr_err *err);

/* Re-records local (the failure rc of the file at path) into err as
 * "<path>: <message>" unless the message names the file already; the first
 * failure recorded wins. Returns rc. */
int idx_file_fail(struct tr_err *err, const struct tr_err *local, int rc,
                  const char *path);

/* ---- trace formats (format.c) ---- */

/*
 * The trace formats the indexer reads, one row each (format.c): the name
 * the API and the summary use, the unit of ts/dur, how a file is
 * recognised, and how its events are classified for the aggregation. A
 * new format is a value of enum idx_format (index.h) and a row here, with
 * its two functions; nothing else names a format. Internal to index/.
 */
/* What an event counts as in the rank summary (agg.c). */
enum idx_class {
  IDX_CLASS_NONE, /* read for the trace's span only */
  IDX_CLASS_KERNEL,
  IDX_CLASS_COPY,
  IDX_CLASS_MEMSET,
  IDX_CLASS_RUNTIME,   /* host runtime API, kept apart from device time */
  IDX_CLASS_LABEL_CPU, /* a run label on the host (ATOM's prefill[...]) */
  IDX_CLASS_LABEL_GPU, /* the same label projected on the GPU stream */
  IDX_CLASS_CPU_OP,    /* a CPU op (index/host/host.c) */
  IDX_CLASS_PYTHON,    /* a Python function (index/host/host.c) */
  IDX_CLASS_SYNC,      /* kineto's cuda_sync: index/cpath/cpath.c */
  /* An instant event (ph "i"), which no format classifies: the
   * aggregation's own word for profile_memory's [memory] events
   * (index/memory/memory.h). */
  IDX_CLASS_INSTANT,
  IDX_NCLASSES
};

struct idx_format_desc {
  enum idx_format id;
  const char *name;  /* "kineto": API requests, summaries, --format */
  unsigned ts_scale; /* decimal digits from the file's unit to ns: 3 for
                        microseconds, 0 for nanoseconds */
  /* Detection. Top-level keys only this format writes (NULL-terminated);
   * any one of them settles the format before the first event. */
  const char *const *top_keys;
  int bare_array; /* a bare [ ... ] of events is this format */
  /* Claims the first event that is not metadata ("M"); co_id: the event's
   * args had a "co_id". NULL for the default format, which takes what no
   * other row claims. */
  int (*claims)(const struct idx_event *ev, int co_id);
  /* Classification of a ph "X" event. */
  enum idx_class (*classify)(const struct idx_event *ev);
  /* Aggregation. launch_join: device kernels take their launch resources
   * (shared memory, registers) from the runtime launch event of the same
   * correlation (ROCm kineto), else from their own args. meta_device: M
   * metadata on the device lane (pid 2) names the device. */
  int launch_join;
  int meta_device;
};

/* The rows, by enum idx_format (row 0, AUTO, is empty). */
extern const struct idx_format_desc idx_formats[IDX_FORMAT_COUNT];

/* What no other row claims (its claims is NULL). */
#define IDX_FORMAT_DEFAULT IDX_FORMAT_KINETO

/* The row of format f; IDX_FORMAT_AUTO (not settled) gives the default
 * format's row, whose unit metadata events read before the format is
 * settled take. Never NULL: f is an enum idx_format. Inline: the reader
 * and the aggregation ask for every event. */
static inline const struct idx_format_desc *idx_format_get(enum idx_format f)
{
  return &idx_formats[f > IDX_FORMAT_AUTO && f < IDX_FORMAT_COUNT
                          ? f
                          : IDX_FORMAT_DEFAULT];
}

/* The format the first event that is not metadata says the file is. */
enum idx_format idx_format_detect(const struct idx_event *ev, int co_id);

/* The format a top-level key k[0..n) settles, or IDX_FORMAT_AUTO. */
enum idx_format idx_format_of_key(const char *k, size_t n);

/* The format of a bare array of events. */
enum idx_format idx_format_bare(void);

/* ---- the reader's grammar, which slices share (reader_num.c) ---- */

/* Nesting allowed in the whole document (the top object is level 1):
 * deeper input is an error, never a deep recursion. */
#define IDX_MAX_DEPTH 256

/* Results of idx_num_parse(). */
enum { IDX_NUM_OK = 0, IDX_NUM_NAN = 1, IDX_NUM_RANGE = 2 };

/* The number written in p[0..n) (JSON grammar, leniently: a leading '+',
 * leading zeros and a bare '.5' or '5.' are accepted) times 10^scale,
 * exactly, digits beyond the integer truncated toward zero: ("1.0009", 3)
 * -> 1000, ("-0.0005", 3) -> 0, ("1.5e3", 0) -> 1500. Never goes through a
 * double. IDX_NUM_NAN when p is not a number, IDX_NUM_RANGE when the
 * result does not fit an int64. */
int idx_num_parse(const char *p, size_t n, unsigned scale, int64_t *out);

/* How many of the 8 bytes of x (the first in the low byte) are digits
 * before the first that is not. A byte 0xfa..0xff carries into the next
 * one in the second test, but is itself no digit, so the first non-digit
 * is found right. */
static inline unsigned idx_leading_digits(uint64_t x)
{
  const uint64_t hi = 0xf0f0f0f0f0f0f0f0ull, zero = 0x3030303030303030ull;
  uint64_t no = ((x & hi) ^ zero) | (((x + 0x0606060606060606ull) & hi) ^ zero);

  return no == 0 ? 8 : (unsigned)__builtin_ctzll(no) / 8;
}

/* ---- an event's args from its text (args.c) ----
 *
 * The args members the reader's fixed fields do not hold, found by name
 * in an event's text (idx_event.raw, which the reader keeps for consumers
 * that ask: idx_reader_keep_text()) and returned as spans of their JSON
 * text, for the op models (index/perf/) and the memory events
 * (index/memory/). The text was proven JSON by the reader, escapes as
 * written; the walk still checks every byte it relies on, so that text it
 * was not meant for (a fuzzer's) fails cleanly. Any thread; no memory. */

/* A member's value as the event writes it (JSON text); p NULL: absent. */
struct idx_span {
  const char *p;
  size_t n;
};

/* The spans of the args members named names[0..count) (count at most 8)
 * in the event text raw[0..n) (its '{' to its '}') into sp: 0, or
 * -1 when the text has no args object or a member's value is no JSON. A
 * member absent keeps a NULL span. */
int idx_args_spans(const char *raw, size_t n, const char *const *names,
                   int count, struct idx_span *sp);

/* A span holding a JSON integer (no fraction, no exponent) into *v: 0, or
 * -1 when it holds anything else or one past int64. */
int idx_span_int(struct idx_span s, int64_t *v);

/* ---- the walk's pieces, for parsers of the values ---- */

/* Past the blanks at p. */
const char *idx_json_ws(const char *p, const char *e);
/* Past the JSON value at p, or NULL when it is none. */
const char *idx_json_skip(const char *p, const char *e);

#endif
