/*
 * The rank summary's rows as C structs, expanded from the one field list
 * of common/summary.h: the indexer fills a struct per row and
 * agg_sum_<row>_json() writes it, so every member is written under its one
 * name and with its one type. Internal to index/.
 *
 * C types by TYPE: INT and AVG int64_t; INT_NULL struct agg_opt (set 0:
 * null); TEXT, TEXT_NULL and NAME struct agg_txt (bytes, not NUL-
 * terminated; p NULL: null for TEXT_NULL, "" otherwise); JSON and
 * JSON_NULL json_t * (the writer takes the reference; NULL: null); REAL,
 * SHARE and RATIO double; REAL_NULL double, NaN for null.
 */
#ifndef IDX_AGG_SUM_H
#define IDX_AGG_SUM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/summary.h"

struct agg_opt {
  int set;
  int64_t v;
};

struct agg_txt {
  const char *p;
  size_t n;
};

/* A NUL-terminated string as a struct agg_txt (NULL stays NULL). */
struct agg_txt agg_txt(const char *s);

#define AGG_CTYPE_INT       int64_t
#define AGG_CTYPE_AVG       int64_t
#define AGG_CTYPE_INT_NULL  struct agg_opt
#define AGG_CTYPE_TEXT      struct agg_txt
#define AGG_CTYPE_TEXT_NULL struct agg_txt
#define AGG_CTYPE_NAME      struct agg_txt
#define AGG_CTYPE_JSON      json_t *
#define AGG_CTYPE_JSON_NULL json_t *
#define AGG_CTYPE_SHARE     double
#define AGG_CTYPE_RATIO     double
#define AGG_CTYPE_PART      double
#define AGG_CTYPE_REAL      double
#define AGG_CTYPE_REAL_NULL double

#define AGG_SUM_MEMBER_(key, col, ty, all, since) AGG_CTYPE_##ty key;

struct agg_sum_rank {
  TR_SUM_RANK(AGG_SUM_MEMBER_)
};

/* struct agg_sum_kernel, ..._launch, ...: one per TR_SUM_TABLES row. */
#define AGG_SUM_STRUCT_(member, ROWS, row)                                     \
  struct agg_sum_##row {                                                       \
    ROWS(AGG_SUM_MEMBER_)                                                      \
  };
TR_SUM_TABLES(AGG_SUM_STRUCT_)
TR_CAP_TABLES(AGG_SUM_STRUCT_)
#undef AGG_SUM_STRUCT_

/* The JSON object of a row, members in the list's order; takes the
 * references of its JSON members. NULL when out of memory. */
json_t *agg_sum_rank_json(const struct agg_sum_rank *r);
#define AGG_SUM_DECL_(member, ROWS, row)                                       \
  json_t *agg_sum_##row##_json(const struct agg_sum_##row *r);
TR_SUM_TABLES(AGG_SUM_DECL_)
TR_CAP_TABLES(AGG_SUM_DECL_)
#undef AGG_SUM_DECL_

/* Sets an empty array per TR_SUM_TABLES row into the summary object o,
 * in the list's order: the tables a row goes to. */
void agg_sum_tables_new(json_t *o);

/* Compile-time reminder at each place that fills a row: a row added to the
 * list fails it until that place sets the new member. */
#define AGG_SUM_FILLS(ROWS, n)                                                 \
  _Static_assert(TR_SUM_COUNT(ROWS) == (n),                                    \
                 #ROWS " has a member this function does not fill")

#endif
