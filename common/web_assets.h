/*
 * The dashboard files (web/), compiled into the binary by cmake/embed.cmake.
 * The table ends with an entry whose name is NULL. Read-only, any thread.
 */
#ifndef TR_WEB_ASSETS_H
#define TR_WEB_ASSETS_H

#include <stddef.h>

struct tr_web_asset {
  const char *name;           /* base name: "index.html" */
  const unsigned char *bytes; /* NUL-terminated for convenience */
  size_t len;                 /* without the NUL */
};

extern const struct tr_web_asset tr_web_assets[];

#endif
