/*
 * An event's args members from its text (idx_event.raw, which the reader
 * keeps for consumers that ask: idx_reader_keep_text()): the members the
 * reader's fixed fields do not hold, found by name and returned as spans
 * of their JSON text, for the op models (index/perf/) and the memory
 * events (index/memory/). The text was proven JSON by the reader, escapes
 * as written; the walk still checks every byte it relies on, so that text
 * it was not meant for (a fuzzer's) fails cleanly. Any thread; no memory.
 */
#ifndef IDX_ARGS_H
#define IDX_ARGS_H

#include <stddef.h>
#include <stdint.h>

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
