/*
 * tr: what every module of traced shares: the error record, error codes,
 * and time formatting. Any thread; nothing here blocks.
 */
#ifndef TR_H
#define TR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* Our error codes; system errors are returned as -errno. */
enum {
  TR_EAGAIN = -1001,  /* more input needed (parsers) */
  TR_EINVAL = -1002,  /* a bad value from a user or a file */
  TR_EFORMAT = -1003, /* a file is not what it claims to be */
  TR_ENOTFOUND = -1004,
  TR_ECONFLICT = -1005, /* state does not allow the request */
  TR_ENOMEM = -1006,
  TR_ELIMIT = -1007, /* a ceiling was hit */
  TR_EIO = -1008,
  TR_EDB = -1009,
  TR_EAUTH = -1010,
  TR_ESTORAGE = -1011, /* the database refuses writes: disk full, I/O error */
  TR_EBUSY = -1012     /* a queue is full: retry later */
};

/*
 * The reason a call failed, for a person: code, one line, and the request
 * field or file at fault. The first failure is kept: a later tr_err_set()
 * on an err that already holds one does nothing.
 */
#define TR_ERR_MSG 512 /* bytes of an error's message */

struct tr_err {
  int code;       /* 0 when no error is recorded */
  char field[64]; /* request field, query parameter or "" */
  char msg[TR_ERR_MSG];
};

/* Records the error in err (may be NULL) unless one is held already, and
 * returns code so that callers can write `return tr_err_set(...)`. */
int tr_err_set(struct tr_err *err, int code, const char *field, const char *fmt,
               ...) __attribute__((format(printf, 4, 5)));

void tr_err_clear(struct tr_err *err);

/* A short stable name for a code ("invalid", "not_found", ...), used as the
 * "code" of HTTP error bodies. */
const char *tr_strerror(int code);

/* a + b, held at INT64_MAX or INT64_MIN where it would overflow: the sums
 * a trace makes (durations, bytes) over more events than
 * docs/TRACE_FORMATS.md's bounds let add up exactly. */
static inline int64_t tr_sat_add(int64_t a, int64_t b)
{
  int64_t r;

  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/* a * b, held as tr_sat_add() holds a sum. */
static inline int64_t tr_sat_mul(int64_t a, int64_t b)
{
  int64_t r;

  if (__builtin_mul_overflow(a, b, &r))
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

/* Wall clock in nanoseconds since the epoch. */
int64_t tr_now_ns(void);

/* Formats t (ns since the epoch, UTC) as RFC 3339 with milliseconds
 * ("2026-11-29T08:39:45.123Z") into buf of at least 32 bytes. */
void tr_rfc3339(int64_t t_ns, char *buf, size_t size);

/* A capture's folder under trace_root: "<root>/<id>" (sub NULL, its
 * traces) or "<root>/<sub>/<id>" (sub "logs"). New string, NULL when out
 * of memory. */
char *tr_capture_dir(const char *root, int64_t id, const char *sub);

/* Where a capture's rank keeps its access points (index/read/read.h), in
 * the capture's logs folder: "<root>/logs/<id>/points/rank_<rank>.points".
 * With make, the folder is made first. New string, NULL when out of
 * memory or the folder cannot be made. */
char *tr_points_path(const char *root, int64_t id, int64_t rank, bool make);

/* The trash of deleted captures: "<root>/.trash" (id 0), or a folder moved
 * into it, "<root>/.trash/<id>" (sub NULL) or "<root>/.trash/<sub>-<id>".
 * A capture's folders are renamed there when it is deleted (one rename,
 * at once) and removed by the daemon's pool. New string, NULL when out of
 * memory. */
char *tr_trash_dir(const char *root, int64_t id, const char *sub);
/* A folder of traced's state: "<the folder of db>/<sub>" (db: the
 * database's path, cfg->db). New string, NULL when out of memory. */
char *tr_state_dir(const char *db, const char *sub);

/* mkdir -p: creates path and its missing parents (mode 0755). Returns 0
 * (also when it exists already) or -errno. */
int tr_mkdir_p(const char *path);

/* A growing byte buffer with a ceiling (curl's dynbuf): a put that would
 * pass max (0: none) sets failed to TR_ELIMIT, one that fails to allocate
 * to TR_ENOMEM, and keeps what was there; later puts do nothing.
 * Zero-initialised is empty; p is NUL-terminated once anything was put.
 * tr_buf_free(NULL) is fine. */
struct tr_buf {
  char *p;
  size_t n, cap, max;
  int failed; /* 0, TR_ELIMIT or TR_ENOMEM */
};
void tr_buf_put(struct tr_buf *b, const char *data, size_t len);
/* Makes room for len more bytes at once (a put of them then copies
 * once); a failure is kept as a put's. */
void tr_buf_reserve(struct tr_buf *b, size_t len);
void tr_buf_printf(struct tr_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tr_buf_free(struct tr_buf *b);

#endif
