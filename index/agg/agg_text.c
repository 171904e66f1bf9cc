/*
 * The summary's rows handed to a sink that takes them as text
 * (idx_sink.on_text: `traced index`), written from their structs without
 * a jansson object: byte for byte what tr_json_dump_callback() writes of
 * agg_sum_<row>_json()'s object with JSON_COMPACT (common/reals.h), which
 * a sink without on_text is handed. The members in the field list's
 * order, "key":value with no space; integers in decimal; strings as
 * jansson's dump escapes them (\" \\ \b \f \n \r \t, other controls
 * \u00XX, nothing else), and, as jansson, a string that is not UTF-8
 * fails the row; reals by tr_real_text(), null where jansson makes none
 * (a real that is not finite); a JSON member as tr_json_dump_callback()
 * writes it (put_value()).
 * On the 1 GB trace of bench/ the summary's 3.9 MB of rows cost 0.72
 * billion instructions as objects, dumped and filtered.
 */
#include <string.h>

#include "common/reals.h"
#include "index/agg/agg.h"

/* A row being written: its text, and whether a string or a JSON member
 * could not be written (the dump's failure). */
struct text {
  struct tr_buf *b;
  int bad;
  char sep; /* '{' before the first member, then ',' */
};

static void put(struct text *t, const char *p, size_t n)
{
  tr_buf_put(t->b, p, n);
}

/* jansson's utf8_iterate(): the length of the character at p (n > 0
 * bytes left), 0 when it is not UTF-8 (overlong, a surrogate, past
 * U+10FFFF, cut). */
static size_t utf8_len(const unsigned char *p, size_t n, int32_t *cp)
{
  size_t len = p[0] < 0x80                    ? 1
               : p[0] >= 0xC2 && p[0] <= 0xDF ? 2
               : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
               : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4
                                              : 0;
  int32_t v;

  if (len <= 1 || len > n) {
    *cp = p[0];
    return len > n ? 0 : len;
  }
  v = p[0] & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < len; i++) {
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
    v = (v << 6) + (p[i] & 0x3F);
  }
  if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (len == 2 && v < 0x80) ||
      (len == 3 && v < 0x800) || (len == 4 && v < 0x10000))
    return 0;
  *cp = v;
  return len;
}

/* A string as jansson's dump_string() writes it (no escape flags). */
static void put_str(struct text *t, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t run = 0, i = 0, len;
  char esc[8];
  int32_t cp;

  put(t, "\"", 1);
  while (i < n) {
    if (p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\') {
      i++; /* the common case: printable ASCII */
      continue;
    }
    if ((len = utf8_len(p + i, n - i, &cp)) == 0) {
      t->bad = 1;
      return;
    }
    if (cp >= 0x20 && cp != '"' && cp != '\\') {
      i += len;
      continue;
    }
    put(t, s + run, i - run);
    switch (cp) {
    case '\\': put(t, "\\\\", 2); break;
    case '"': put(t, "\\\"", 2); break;
    case '\b': put(t, "\\b", 2); break;
    case '\f': put(t, "\\f", 2); break;
    case '\n': put(t, "\\n", 2); break;
    case '\r': put(t, "\\r", 2); break;
    case '\t': put(t, "\\t", 2); break;
    default:
      snprintf(esc, sizeof(esc), "\\u%04X", (unsigned)cp);
      put(t, esc, 6);
      break;
    }
    i += len;
    run = i;
  }
  put(t, s + run, n - run);
  put(t, "\"", 1);
}

static void key(struct text *t, const char *k, size_t n)
{
  put(t, &t->sep, 1);
  t->sep = ',';
  put(t, "\"", 1);
  put(t, k, n);
  put(t, "\":", 2);
}

static void put_int(struct text *t, int64_t v)
{
  char buf[24], *e = buf + sizeof(buf), *p = e;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

  do
    *--p = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0)
    *--p = '-';
  put(t, p, (size_t)(e - p));
}

static void put_real(struct text *t, double v)
{
  char buf[TR_REAL_TEXT];

  if (v != v || v - v != 0) /* NaN, inf: json_real() makes no real */
    put(t, "null", 4);
  else
    put(t, buf, tr_real_text(v, buf, sizeof(buf)));
}

/* A value as tr_json_dump_callback() writes it with JSON_COMPACT: an
 * object's members in the order they were set (jansson keeps it), keys
 * and strings as put_str(), numbers as put_int() and put_real() (its
 * filter writes each real again by tr_real_text()). Without jansson's
 * dump and the filter reading its text back: the timeline's and
 * decode's JSON members were a tenth of a billion instructions of the
 * 1 GB trace of bench/. */
static void put_value(struct text *t, json_t *v)
{
  const char *k;
  json_t *m;
  size_t i;
  char sep;

  switch (json_typeof(v)) {
  case JSON_OBJECT:
    sep = '{';
    json_object_foreach(v, k, m) {
      put(t, &sep, 1);
      sep = ',';
      put_str(t, k, strlen(k));
      put(t, ":", 1);
      put_value(t, m);
    }
    put(t, sep == ',' ? "}" : "{}", sep == ',' ? 1 : 2);
    break;
  case JSON_ARRAY:
    sep = '[';
    json_array_foreach(v, i, m) {
      put(t, &sep, 1);
      sep = ',';
      put_value(t, m);
    }
    put(t, sep == ',' ? "]" : "[]", sep == ',' ? 1 : 2);
    break;
  case JSON_STRING:
    put_str(t, json_string_value(v), json_string_length(v));
    break;
  case JSON_INTEGER: put_int(t, json_integer_value(v)); break;
  case JSON_REAL: put_real(t, json_real_value(v)); break;
  case JSON_TRUE: put(t, "true", 4); break;
  case JSON_FALSE: put(t, "false", 5); break;
  case JSON_NULL: put(t, "null", 4); break;
  }
}

/* A JSON member: taken, as the object's setter takes it. */
static void put_json(struct text *t, json_t *v)
{
  if (v == NULL) {
    put(t, "null", 4);
    return;
  }
  put_value(t, v);
  json_decref(v);
}

static void put_txt(struct text *t, struct agg_txt v)
{
  put_str(t, v.p ? v.p : "", v.p ? v.n : 0);
}

#define KEY(k) key(t, #k, sizeof(#k) - 1)

static void text_INT(struct text *t, int64_t v)
{
  put_int(t, v);
}

static void text_INT_NULL(struct text *t, struct agg_opt v)
{
  if (v.set)
    put_int(t, v.v);
  else
    put(t, "null", 4);
}

static void text_TEXT_NULL(struct text *t, struct agg_txt v)
{
  if (v.p != NULL)
    put_txt(t, v);
  else
    put(t, "null", 4);
}

#define text_AVG       text_INT
#define text_TEXT      put_txt
#define text_NAME      put_txt
#define text_JSON      put_json
#define text_JSON_NULL put_json
#define text_SHARE     put_real
#define text_RATIO     put_real
#define text_PART      put_real
#define text_REAL      put_real
#define text_REAL_NULL put_real

#define TEXT(k, col, ty, all, since)                                           \
  KEY(k);                                                                      \
  text_##ty(t, r->k);

/* The row's text into o's buffer, then to the sink's on_text. */
static void deliver(struct agg_out *o, struct text *t)
{
  if (t->b->failed && o->rc == 0)
    o->rc = tr_err_set(o->err, TR_ENOMEM, "", "out of memory");
  if (t->bad && o->rc == 0)
    o->rc = tr_err_set(o->err, TR_EINVAL, "", "cannot write the summary");
  if (o->rc == 0)
    o->rc = o->sink->on_text(o->sink->ud, o->table, t->b->p, t->b->n, o->err);
}

#define OUT(member, ROWS, row)                                                 \
  void agg_out_##row(struct agg_out *o, const struct agg_sum_##row *r)         \
  {                                                                            \
    struct text tx = { &o->text, 0, '{' }, *t = &tx;                           \
                                                                               \
    if (o->sink->on_text == NULL) {                                            \
      agg_out_row(o, agg_sum_##row##_json(r));                                 \
      return;                                                                  \
    }                                                                          \
    o->text.n = 0;                                                             \
    ROWS(TEXT)                                                                 \
    put(t, "}", 1);                                                            \
    deliver(o, t);                                                             \
  }
TR_SUM_TABLES(OUT)
