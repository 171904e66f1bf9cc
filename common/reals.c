/*
 * Reals written with the fewest digits that read back (reals.h). jansson
 * writes a real as "%.17g" (exact, and often 0.71352400000000005): every
 * dump goes through a filter that finds the reals in its text, outside
 * strings, and writes each again with tr_real_text(); the text jansson
 * makes is otherwise kept byte for byte.
 */
#include "common/reals.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tr.h"

size_t tr_real_text(double x, char *buf, size_t size)
{
  int n = 0;

  for (int p = 1; p <= 17; p++) {
    n = snprintf(buf, size, "%.*g", p, x);
    if (strtod(buf, NULL) == x)
      break;
  }
  if (n > 0 && (size_t)n + 2 < size && strpbrk(buf, ".eEni") == NULL) {
    memcpy(buf + n, ".0", 3);
    n += 2;
  }
  return n > 0 ? (size_t)n : 0;
}

double tr_round(double x, int decimals)
{
  double scale = pow(10.0, decimals);

  return round(x * scale) / scale;
}

/* The filter between jansson and the real callback. */
struct filter {
  json_dump_callback_t cb;
  void *ud;
  bool in_str, esc;
  char num[64]; /* the number being read, outside strings */
  size_t nn;
  int rc;
};

static void emit(struct filter *f, const char *p, size_t n)
{
  if (f->rc == 0 && n > 0)
    f->rc = f->cb(p, n, f->ud);
}

/* The number read so far, a real written again. */
static void flush_num(struct filter *f)
{
  char text[TR_REAL_TEXT];

  if (f->nn == 0)
    return;
  f->num[f->nn] = '\0';
  if (strpbrk(f->num, ".eE") != NULL)
    emit(f, text, tr_real_text(strtod(f->num, NULL), text, sizeof(text)));
  else
    emit(f, f->num, f->nn);
  f->nn = 0;
}

static bool in_number(char c, size_t nn)
{
  return (c >= '0' && c <= '9') || c == '-' ||
         (nn > 0 && (c == '.' || c == 'e' || c == 'E' || c == '+'));
}

/* Passes text through, runs of it at once, numbers outside strings held
 * until they end. */
static int on_text(const char *p, size_t n, void *ud)
{
  struct filter *f = ud;
  size_t run = 0; /* p[run..i) passes through as it is */

  for (size_t i = 0; i < n && f->rc == 0; i++) {
    char c = p[i];

    if (f->in_str) {
      f->in_str = f->esc || c != '"';
      f->esc = !f->esc && c == '\\';
      continue;
    }
    if (in_number(c, f->nn) && f->nn + 1 < sizeof(f->num)) {
      emit(f, p + run, i - run);
      f->num[f->nn++] = c;
      run = i + 1;
      continue;
    }
    flush_num(f);
    f->in_str = c == '"';
  }
  emit(f, p + run, n > run ? n - run : 0);
  return f->rc;
}

int tr_json_dump_callback(const json_t *v, json_dump_callback_t cb, void *ud,
                          size_t flags)
{
  struct filter f = { .cb = cb, .ud = ud };
  int rc = json_dump_callback(v, on_text, &f, flags & ~JSON_REAL_PRECISION(31));

  if (rc == 0)
    flush_num(&f);
  return rc != 0 ? rc : f.rc;
}

static int to_buf(const char *p, size_t n, void *ud)
{
  tr_buf_put(ud, p, n);
  return 0;
}

char *tr_json_dumps(const json_t *v, size_t flags)
{
  struct tr_buf b = { 0 };

  if (v == NULL || tr_json_dump_callback(v, to_buf, &b, flags) != 0 ||
      b.failed != 0 || b.p == NULL) {
    tr_buf_free(&b);
    return NULL;
  }
  return b.p; /* NUL-terminated: the caller frees it */
}
