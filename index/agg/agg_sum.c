/*
 * Writers of the rank summary's rows, expanded from common/summary.h: one
 * json_t setter per TYPE, one function per row struct (index/agg/agg.h).
 */
#include <math.h>
#include <string.h>

#include "index/agg/agg.h"

struct agg_txt agg_txt(const char *s)
{
  struct agg_txt t = { s, s ? strlen(s) : 0 };

  return t;
}

/* With o NULL (out of memory) jansson frees v. */
static void put(json_t *o, const char *key, json_t *v)
{
  json_object_set_new_nocheck(o, key, v ? v : json_null());
}

static json_t *text(struct agg_txt t)
{
  json_t *s = json_stringn_nocheck(t.p ? t.p : "", t.p ? t.n : 0);

  return s ? s : json_string("");
}

static void set_INT(json_t *o, const char *key, int64_t v)
{
  put(o, key, json_integer((json_int_t)v));
}

static void set_AVG(json_t *o, const char *key, int64_t v)
{
  set_INT(o, key, v);
}

static void set_INT_NULL(json_t *o, const char *key, struct agg_opt v)
{
  put(o, key, v.set ? json_integer((json_int_t)v.v) : json_null());
}

static void set_TEXT(json_t *o, const char *key, struct agg_txt v)
{
  put(o, key, text(v));
}

static void set_NAME(json_t *o, const char *key, struct agg_txt v)
{
  put(o, key, text(v));
}

static void set_TEXT_NULL(json_t *o, const char *key, struct agg_txt v)
{
  put(o, key, v.p ? text(v) : json_null());
}

static void set_JSON(json_t *o, const char *key, json_t *v)
{
  put(o, key, v);
}

static void set_JSON_NULL(json_t *o, const char *key, json_t *v)
{
  put(o, key, v);
}

static void set_REAL(json_t *o, const char *key, double v)
{
  put(o, key, isfinite(v) ? json_real(v) : json_null());
}

static void set_REAL_NULL(json_t *o, const char *key, double v)
{
  set_REAL(o, key, v);
}

static void set_SHARE(json_t *o, const char *key, double v)
{
  put(o, key, json_real(v));
}

static void set_RATIO(json_t *o, const char *key, double v)
{
  set_SHARE(o, key, v);
}

static void set_PART(json_t *o, const char *key, double v)
{
  set_SHARE(o, key, v);
}

#define SET(key, col, ty, all, since) set_##ty(o, #key, r->key);

json_t *agg_sum_rank_json(const struct agg_sum_rank *r)
{
  json_t *o = json_object(); /* NULL: each set frees its value */

  TR_SUM_RANK(SET)
  return o;
}

#define WRITER(member, ROWS, row)                                              \
  json_t *agg_sum_##row##_json(const struct agg_sum_##row *r)                  \
  {                                                                            \
    json_t *o = json_object();                                                 \
                                                                               \
    ROWS(SET)                                                                  \
    return o;                                                                  \
  }
TR_SUM_TABLES(WRITER)
TR_CAP_TABLES(WRITER)

void agg_sum_tables_new(json_t *o)
{
#define PUT(member, ROWS, row) put(o, #member, json_array());
  TR_SUM_TABLES(PUT)
#undef PUT
}
