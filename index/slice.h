/*
 * Internals of the trace slicer (slice.c): its buffered output and the
 * JSON mending a copied event or member may need (slice_json.c). Internal
 * to index/; one thread at a time.
 */
#ifndef IDX_SLICE_H
#define IDX_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "index/index.h"

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

/* Writes p[0..n) as the body of a JSON string (no quotes): '"', '\\' and
 * control characters escaped, bytes that are not UTF-8 as U+FFFD. */
void slice_json_escape(struct slice_out *o, const char *p, size_t n);

#endif
