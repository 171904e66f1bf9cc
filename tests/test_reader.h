/*
 * Helpers shared by the reader and source tests (test_reader*.c): run the
 * reader over a buffer and sum what it hands over, read files through
 * idx_source, make scratch files. Every helper exits via CHECK on a setup
 * failure.
 */
#ifndef TEST_READER_H
#define TEST_READER_H

#include <stddef.h>
#include <stdint.h>

#include "index/read/read.h"

/* What a run of the reader saw: sums over every field handed over, so
 * that two runs agree only if they handed over the same events. */
struct tally {
  uint64_t events, skipped, delivered, kernels;
  uint64_t ph[256];
  uint64_t sum_ts, sum_dur, sum_ids; /* wrapping sums */
  uint64_t strings;                  /* hash of every string handed over */
  uint64_t has_bits;                 /* sum of idx_event.has */
  uint64_t walked_ahead;             /* idx_doc.walked_ahead */
  uint64_t raw, members;             /* hashes of the event texts and the
                                        members (keep_raw runs only) */
  uint64_t strict; /* events marked strict (keep_raw runs only: they ask
                      for idx_reader_judge()); not compared */
  enum idx_format format;
  int64_t rank;
  char device[256];
  int rc;
  struct tr_err err;
};

/* The last event handed over, copied out of the callback. */
struct last {
  struct idx_event ev;
  char name[256], cat[64], kind[64], kernel[64], pid_str[64];
  int count;
};

/* Feeds data[0..n) in chunks of `chunk` bytes (0: whole) into *t. */
void run_reader(const char *data, size_t n, size_t chunk,
                enum idx_format forced, struct tally *t);
/* The same, each chunk with its stage-1 masks and events walked ahead
 * (index/read/reader_batch.c), as idx_file() is given them. */
void run_batched(const char *data, size_t n, size_t chunk,
                 enum idx_format forced, struct tally *t);
/* Fails unless a and b saw the same (events, sums, errors). */
void same_tally(const struct tally *a, const struct tally *b);
/* One document read whole, checked against 1- and 7-byte chunks and
 * against chunks with their events walked ahead; the whole run in *t, its
 * last event in *l. */
void read_doc(const char *json, size_t n, enum idx_format forced,
              struct tally *t, struct last *l);
void doc_ok(const char *json, struct tally *t, struct last *l);
/* A document that must fail with `what` in the message. */
void doc_bad(const char *json, size_t n, const char *what);
/* Fails unless t failed with both a and b in its message. */
void check_msg(const struct tally *t, const char *a, const char *b);

/* When set, run_reader() and run_batched() ask for the events' texts
 * and the top-level members (idx_reader_keep_raw) and for the strict ones
 * marked (idx_reader_judge(), as the slicer asks): each text must be the
 * event's '{' to '}' and parse to the event handed over, each marked one
 * must be strict by the slicer's judge, and the tally hashes them. */
extern int keep_raw;

/* The idx_source_open() flags of slurp(), read_path() and read_scanned():
 * IDX_SOURCE_THREAD by default. */
extern unsigned source_flags;

/* The JSON text of a file through idx_source (caller frees), or NULL
 * with err set. */
char *slurp(const char *path, size_t *n, struct tr_err *err);
/* The file through idx_source and the reader, into *t. */
void read_path(const char *path, struct tally *t);
/* The same as idx_file() reads it: chunks with their stage-1 masks. */
void read_scanned(const char *path, struct tally *t);
/* The raw bytes of a file, with 16 spare bytes; caller frees. */
unsigned char *load(const char *path, size_t *n);

const char *traces_dir(void);
/* The real traces (*.gz in TRACES_DIR), sorted; returns how many. */
int list_traces(char names[][256], int max);
void trace_path(char *out, size_t size, const char *name);
/* The JSON text of the real trace name through idx_source (slurp()), its
 * path in path (size bytes); caller frees, *n its length. */
char *trace_text(const char *name, char *path, size_t size, size_t *n);

/* A file in the test's scratch directory (removed at exit); the returned
 * path is valid until the next call. */
const char *tmp_path(const char *name);
void write_file(const char *path, const void *data, size_t n);
/* data gzipped as one member; caller frees. */
unsigned char *gzip_member(const char *data, size_t n, size_t *out_n);

/* The source cases (test_reader_source.c), run by test_reader.c. */
void source_plain_and_gzip(void);
void source_inflater(void);
void source_damaged_gzip(void);
void source_close_early(void);
void source_unthreaded(void);
void source_scanned(void);

/* The stage-1 cases (test_reader_scan.c). */
void scan_kernels_match(void);

#define EVENTS(...) "{\"traceEvents\": [" __VA_ARGS__ "]}"

#endif
