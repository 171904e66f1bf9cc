/*
 * Reals as traced writes them (common/reals.h): the fewest significant
 * digits that read back as the same double, by hand on the figures that
 * printed as 0.71352400000000005 and -16.667000000000002, and on
 * 200,000 random doubles (each read back exactly, and one digit fewer
 * never does); and jansson's text filtered: only reals outside strings
 * written again, every other byte kept.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "tests/check.h"

static void reals_by_hand(void)
{
  static const struct {
    double x;
    const char *text;
  } cases[] = {
    { 0.713524, "0.713524" },
    { -16.667, "-16.667" },
    { 0.1, "0.1" },
    { 1.0, "1.0" },
    { -0.0, "-0.0" },
    { 1e-5, "1e-05" },
    { 1e7, "1e+07" },
    { 123.5, "123.5" },
    { 5e-324, "5e-324" },
    { 1.0 / 3, "0.3333333333333333" },
    { 1.7976931348623157e308, "1.7976931348623157e+308" },
  };
  char buf[TR_REAL_TEXT];

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    size_t n = tr_real_text(cases[i].x, buf, sizeof(buf));

    CHECK_STR(buf, cases[i].text);
    CHECK_INT(n, strlen(cases[i].text));
  }
  /* A percentage's 3 decimals (a verdict's, /diff's). */
  tr_real_text(tr_round(100.0 * -1 / 6, 3), buf, sizeof(buf));
  CHECK_STR(buf, "-16.667");
  tr_real_text(tr_round(-0.13584168519932133, 3), buf, sizeof(buf));
  CHECK_STR(buf, "-0.136");
}

/* The number of significant digits of a real's text (leading zeros are
 * none, nor the ".0" of an integral one). */
static int digits(const char *t)
{
  size_t len = strlen(t);
  int n = 0;

  if (len > 2 && strcmp(t + len - 2, ".0") == 0)
    len -= 2;
  for (size_t i = 0; i < len && t[i] != 'e'; i++)
    n += (t[i] >= '1' && t[i] <= '9') || (t[i] == '0' && n > 0);
  return n;
}

static void reals_random(void)
{
  uint64_t s = 0x9e3779b97f4a7c15u;
  char buf[TR_REAL_TEXT], fewer[400]; /* "%g" of any double fits */

  for (int i = 0; i < 200000; i++) {
    double x;
    int p;

    s ^= s << 13; /* xorshift64 */
    s ^= s >> 7;
    s ^= s << 17;
    memcpy(&x, &s, sizeof(x));
    if (!isfinite(x))
      continue;
    tr_real_text(x, buf, sizeof(buf));
    CHECK(strtod(buf, NULL) == x);
    p = digits(buf);
    if (p > 1) {
      snprintf(fewer, sizeof(fewer), "%.*g", p - 1, x);
      CHECK(strtod(fewer, NULL) != x);
    }
  }
}

static int collect(const char *p, size_t n, void *ud)
{
  strncat(ud, p, n);
  return 0;
}

/* Reals in and out of strings (escaped quotes and backslashes too). */
static void reals_in_json(void)
{
  json_t *v = json_pack("{s:s,s:[f,f,i,f,b,n],s:{s:f}}", "a",
                        "0.71352400000000005 \"2.5\"", "b", 0.713524, -16.667,
                        3, 1e-5, 1, "c\"\\", "", 3.0);
  char out[512] = "", *text = tr_json_dumps(v, JSON_COMPACT);

  CHECK_STR(text, "{\"a\":\"0.71352400000000005 \\\"2.5\\\"\",\"b\":"
                  "[0.713524,-16.667,3,1e-05,true,null],\"c\\\"\\\\\":"
                  "{\"\":3.0}}");
  CHECK_INT(tr_json_dump_callback(v, collect, out, JSON_COMPACT), 0);
  CHECK_STR(out, text);
  free(text);
  json_decref(v);
}

int main(void)
{
  RUN(reals_by_hand);
  RUN(reals_random);
  RUN(reals_in_json);
  return 0;
}
