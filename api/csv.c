/*
 * The table routes' rows as CSV (?format=csv): RFC 4180, one place for
 * every table, so that a CSV answer has exactly the JSON answer's rows in
 * its order and the JSON members as columns.
 *
 * Columns: every member of any row, in the order first met (row by row,
 * member by member: jansson keeps insertion order), named by a header
 * line. Cells: a string as it is, an integer in decimal, a real and a
 * nested value (grid/block arrays, a phase's top kernels, a timeline
 * bucket's by_category) as the compact JSON text the JSON answer holds,
 * true/false, and an empty cell for null or a member the row lacks. A cell
 * holding '"', ',', a control character or DEL is quoted, its quotes
 * doubled; records end with CRLF. No rows: an empty body (no columns are
 * known).
 *
 * A spreadsheet runs a cell that begins with '=', '+', '-' or '@' as a
 * formula (and some take a tab or a carriage return before one): a kernel
 * name is whatever a trace says, so such a text cell is written as OWASP
 * recommends against CSV injection, quoted and prefixed with a single
 * quote ("'=cmd|..."), which the spreadsheet shows as the text. Numbers
 * stay numbers: an integer or a real (a negative delta_ns) is a JSON
 * number, never a text cell, and is written as it is. A script reading the
 * CSV drops the quote before '=', '+', '-', '@', tab or CR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "api/api_int.h"

/* True when a spreadsheet would take text s (n > 0) for a formula. */
static bool formula_like(const char *s, size_t n)
{
  return n > 0 && memchr("=+-@\t\r", s[0], 6) != NULL;
}

/* Writes s[0..n) as one cell, quoted when it must be; text is a string of
 * the data (escaped when a spreadsheet would run it), not a number. */
static void put_cell(FILE *f, const char *s, size_t n, bool text)
{
  bool guard = text && formula_like(s, n), quote = guard;

  for (size_t i = 0; i < n && !quote; i++) {
    unsigned char c = (unsigned char)s[i];

    quote = c == '"' || c == ',' || c < 0x20 || c == 0x7f;
  }
  if (!quote) {
    fwrite(s, 1, n, f);
    return;
  }
  fputc('"', f);
  if (guard)
    fputc('\'', f);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"')
      fputc('"', f);
    fputc(s[i], f);
  }
  fputc('"', f);
}

/* Writes value v (NULL: the row lacks the member) as a cell. */
static int put_value(FILE *f, json_t *v)
{
  char num[32];
  char *text;

  switch (v != NULL ? json_typeof(v) : JSON_NULL) {
  case JSON_NULL: return 0;
  case JSON_STRING:
    put_cell(f, json_string_value(v), json_string_length(v), true);
    return 0;
  case JSON_INTEGER:
    snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    fputs(num, f);
    return 0;
  case JSON_REAL: /* as the JSON answer writes it */
    tr_real_text(json_real_value(v), num, sizeof(num));
    fputs(num, f);
    return 0;
  case JSON_TRUE: fputs("true", f); return 0;
  case JSON_FALSE: fputs("false", f); return 0;
  default: /* an array, an object: the JSON answer's text */
    text = tr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
      return TR_ENOMEM;
    put_cell(f, text, strlen(text), false);
    free(text);
    return 0;
  }
}

/* The columns of rows: every member name, in the order first met, as an
 * array of strings. NULL when out of memory. */
static json_t *columns_of(json_t *rows)
{
  json_t *cols = json_array(), *seen = json_object(), *row, *v;
  const char *key;
  size_t i;

  if (cols == NULL || seen == NULL) {
    json_decref(cols);
    json_decref(seen);
    return NULL;
  }
  json_array_foreach(rows, i, row) {
    json_object_foreach(row, key, v) {
      if (json_object_get(seen, key) == NULL) {
        json_object_set_new(seen, key, json_true());
        json_array_append_new(cols, json_string(key));
      }
    }
  }
  json_decref(seen);
  return cols;
}

static void put_header(FILE *f, json_t *cols)
{
  json_t *c;
  size_t j;

  json_array_foreach(cols, j, c) {
    if (j > 0)
      fputc(',', f);
    put_cell(f, json_string_value(c), json_string_length(c), true);
  }
  fputs("\r\n", f);
}

int api_csv_rows(json_t *rows, char **text, size_t *len)
{
  json_t *cols = columns_of(rows), *row, *c;
  char *buf = NULL;
  size_t i, j, n = 0;
  int rc = cols != NULL ? 0 : TR_ENOMEM;
  FILE *f = rc == 0 ? open_memstream(&buf, &n) : NULL;

  if (f == NULL) {
    json_decref(cols);
    return TR_ENOMEM;
  }
  if (json_array_size(rows) > 0)
    put_header(f, cols);
  json_array_foreach(rows, i, row) {
    json_array_foreach(cols, j, c) {
      if (j > 0)
        fputc(',', f);
      if (rc == 0)
        rc = put_value(f, json_object_get(row, json_string_value(c)));
    }
    fputs("\r\n", f);
  }
  json_decref(cols);
  if (fclose(f) != 0 || rc != 0) {
    free(buf);
    return TR_ENOMEM;
  }
  *text = buf;
  *len = n;
  return 0;
}
