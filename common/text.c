#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

size_t tr_utf8_len(const unsigned char *s, size_t n)
{
  static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
  size_t len = s[0] < 0x80             ? 1
               : (s[0] & 0xE0) == 0xC0 ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
  uint32_t cp;

  if (len <= 1)
    return len;
  if (len > n)
    return 0;
  cp = s[0] & (0x7F >> len);
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[k] & 0x3F);
  }
  if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

bool tr_utf8_valid(const char *s, size_t n)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, len;
  uint64_t w;

  while (i < n) {
    /* Names are nearly always ASCII: eight bytes at a time. */
    while (i + 8 <= n) {
      memcpy(&w, u + i, 8);
      if (w & 0x8080808080808080ull)
        break;
      i += 8;
    }
    if (i == n)
      break;
    if ((len = tr_utf8_len(u + i, n - i)) == 0)
      return false;
    i += len;
  }
  return true;
}

void tr_make_utf8(char *text)
{
  unsigned char *s = (unsigned char *)text;
  size_t n = strlen(text), i = 0;

  while (i < n) {
    size_t len = tr_utf8_len(s + i, n - i);

    if (len == 0 || (len == 1 && s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')) {
      s[i++] = '?';
      continue;
    }
    i += len;
  }
}

char *tr_read_tail(int fd, uint64_t size, size_t max, size_t *len)
{
  uint64_t from = size > max ? size - max : 0;
  char *buf = malloc(max + 1), *start;
  ssize_t n;

  if (buf == NULL)
    return NULL;
  n = pread(fd, buf, max, (off_t)from);
  if (n <= 0) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  start = from > 0 ? memchr(buf, '\n', (size_t)n) : NULL;
  start = start != NULL ? start + 1 : buf;
  n -= start - buf;
  memmove(buf, start, (size_t)n + 1);
  if (len != NULL)
    *len = (size_t)n;
  return buf;
}

void tr_note(json_t *notes, const char *code, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  tr_make_utf8(msg);
  json_array_append_new(notes,
                        json_pack("{s:s,s:s}", "code", code, "message", msg));
}

json_t *tr_row_find(json_t *rows, const char *key, const char *val)
{
  size_t i;
  json_t *row;

  json_array_foreach(rows, i, row) {
    const char *s = json_string_value(json_object_get(row, key));

    if (s != NULL && strcmp(s, val) == 0)
      return row;
  }
  return NULL;
}
