/*
 * Reals as traced writes them to people and programs alike (JSON answers
 * and stored texts, CSV cells, the indexer's summary, the fleet's rows):
 * the fewest significant digits that read back as the same double, so a
 * share is 0.713524, never 0.71352400000000005, and nothing is lost.
 * Pure functions; any thread.
 */
#ifndef TR_REALS_H
#define TR_REALS_H

#include <jansson.h>
#include <stddef.h>

#define TR_REAL_TEXT 32 /* room for any real's text and its NUL */

/* Writes finite x into buf (size >= TR_REAL_TEXT) as "%.<p>g" with the
 * smallest p whose text strtod() reads back as x, with ".0" appended when
 * that looks like an integer (a real stays a real: jansson's own rule).
 * Returns the text's length. */
size_t tr_real_text(double x, char *buf, size_t size);

/* x rounded to decimals places (half away from zero): the fixed precision
 * of percentages, 3 decimals (docs/API.md). */
double tr_round(double x, int decimals);

/* json_dump_callback() with every real written by tr_real_text(): the
 * same text but for the reals' digits. Returns its result. */
int tr_json_dump_callback(const json_t *v, json_dump_callback_t cb, void *ud,
                          size_t flags);

/* json_dumps() the same way; the caller frees the text. NULL when out of
 * memory. */
char *tr_json_dumps(const json_t *v, size_t flags);

#endif
