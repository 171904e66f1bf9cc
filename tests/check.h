/*
 * Assertions for the C tests: on failure they print file:line, the
 * expression and both values, and exit 1 (so ctest shows the reason).
 */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define CHECK_INT(a, b)                                                        \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ != b_) {                                                            \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__,      \
              __LINE__, #a, #b, a_, b_);                                       \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define CHECK_STR(a, b)                                                        \
  do {                                                                         \
    const char *a_ = (a), *b_ = (b);                                           \
    if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                     \
      fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__,  \
              __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");       \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Runs one test case function, printing its name. */
#define RUN(fn)                                                                \
  do {                                                                         \
    fprintf(stderr, "-- %s\n", #fn);                                           \
    fn();                                                                      \
  } while (0)

#endif
