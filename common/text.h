/*
 * Text that traced quotes to people (log tails, error messages): made
 * valid UTF-8 so that it is a JSON string, and cut at line starts; the
 * row of an answer that names a key. Any thread; tr_read_tail() blocks on
 * its read.
 */
#ifndef TR_TEXT_H
#define TR_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0: no
 * overlong forms, no surrogates, nothing past U+10FFFF (jansson's rule). */
size_t tr_utf8_len(const unsigned char *s, size_t n);

/* True when s[0..n) is valid UTF-8 by that rule (ASCII control bytes
 * included: JSON's own rules about them are the parser's). */
bool tr_utf8_valid(const char *s, size_t n);

/* Replaces, in place, each byte that does not start a valid UTF-8
 * sequence, and control characters but newline and tab, with '?'. */
void tr_make_utf8(char *text);

/* The last max bytes of the open file fd (size: its size), starting at a
 * line when the cut falls inside one, as a new NUL-terminated string
 * (*len its length, may be NULL); NULL when nothing could be read. */
char *tr_read_tail(int fd, uint64_t size, size_t max, size_t *len);

/* Appends {"code": code, "message": the formatted text, cut to 1 KB and
 * made UTF-8} to the array notes: the warnings and reasons of answers. */
void tr_note(json_t *notes, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The first row of rows (an array of objects) whose member key is the
 * string val, or NULL; borrowed from rows. */
json_t *tr_row_find(json_t *rows, const char *key, const char *val);

#endif
