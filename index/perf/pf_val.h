/*
 * The arguments of a CPU op as kineto writes them with record_shapes
 * (docs/PERF.md, "What an op's shapes say"): the members "Input Dims",
 * "Input type", "Input Strides", "Concrete Inputs" (and "Output type"
 * when a build writes it) of the event's args, each a JSON array, read
 * from the event's text into a small tree of values.
 *
 * Memory: a parse lives in a struct pf_args, a fixed arena (PF_VALS
 * values, PF_TEXT bytes of decoded strings): an op whose arguments need
 * more has no model (counted, never grown). Internal to index/; any
 * thread, one parse per struct at a time.
 */
#ifndef IDX_PF_VAL_H
#define IDX_PF_VAL_H

#include <stddef.h>
#include <stdint.h>

#include "index/read/read.h"

enum pv_type { PV_NULL, PV_BOOL, PV_INT, PV_NUM, PV_STR, PV_ARR };

/* One JSON value. Arrays hold their elements in a run of n values. */
struct pv {
  uint8_t t;  /* enum pv_type */
  uint8_t b;  /* PV_BOOL */
  uint32_t n; /* PV_STR: bytes; PV_ARR: elements */
  union {
    int64_t i;          /* PV_INT */
    double d;           /* PV_NUM */
    const char *s;      /* PV_STR: decoded text, not NUL-terminated */
    const struct pv *a; /* PV_ARR: the elements */
  };
};

#define PF_VALS 4096  /* values of one op's arguments */
#define PF_TEXT 16384 /* bytes of their decoded strings */

/* The members of args a model reads. */
enum pf_member {
  PF_DIMS,     /* "Input Dims" */
  PF_TYPES,    /* "Input type" */
  PF_STRIDES,  /* "Input Strides" */
  PF_CONCRETE, /* "Concrete Inputs" */
  PF_OUT_TYPE, /* "Output type" */
  PF_MEMBERS
};

struct pf_args {
  const struct pv *m[PF_MEMBERS]; /* NULL: absent */
  /* The label of the step the instance ran in (an iteration annotation:
   * docs/PERF.md, "Inference attention"), for the models that read it;
   * NULL: none. */
  const char *annot;
  size_t annot_n;
  struct pv vals[PF_VALS];
  uint32_t nvals;
  char text[PF_TEXT];
  size_t ntext;
};

/* The spans of the members in the event text raw[0..n) (its '{' to its
 * '}'): 0, or -1 when the text has no args object or is not JSON. Spans
 * of members absent stay NULL. */
int pf_args_spans(const char *raw, size_t n, struct idx_span sp[PF_MEMBERS]);

/* Parses the spans into a (its values reset first): 0, or -1 when a
 * member is not JSON or outgrows the arena. */
int pf_args_parse(struct pf_args *a, const struct idx_span sp[PF_MEMBERS]);

/* ---- reading the values (NULL-safe: a missing value reads as none) ---- */

/* Element i of array v, or NULL. */
const struct pv *pv_at(const struct pv *v, size_t i);
/* The number of elements of array v (0 for anything else). */
size_t pv_len(const struct pv *v);
/* 1 when v is an array of integers (a shape), with their count. */
int pv_is_shape(const struct pv *v);
/* 1 when v is a string equal to s. */
int pv_str_is(const struct pv *v, const char *s);
/* 1 when a and b are the same value (Python's ==, for the scalars and
 * arrays an event holds). */
int pv_equal(const struct pv *a, const struct pv *b);
/* v's text (NULL for a non-string) and its length. */
const char *pv_str(const struct pv *v, size_t *n);

#endif
