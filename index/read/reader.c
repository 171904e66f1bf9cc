/*
 * The streaming trace reader (read.h): a push parser over chunks of any
 * size. The top level (the object around traceEvents, or a bare array of
 * events) is walked byte by byte by the state machine below. Events, three
 * ways, each giving the same result where it applies:
 *   - handed over from a batch the source's thread walked ahead in this
 *     chunk (reader_batch.c), when it starts where the state machine is;
 *   - walked from stage 1's token masks (read_int.h, reader_fast.c: the
 *     chunk's own, or a window the reader scans), one after another while
 *     "}, {" follows, when the event lies in the window and its blocks are
 *     clean [fast_events];
 *   - else parsed by reader_event.c byte by byte, straight from the chunk
 *     when the event lies inside it, else from a copy gathered in r->buf
 *     across chunks, with a ceiling.
 *
 * States (r->st) and transitions [function]:
 *   START -> KEY_WAIT ('{') | ELEM ('[': bare array of events)
 *   KEY_WAIT -> KEY ('"') | DONE ('}')
 *   KEY -> COLON -> VALUE
 *   VALUE -> ELEM (traceEvents) | CAPTURE (deviceProperties,
 *            distributedInfo) | SKIP (any other key) [on_value]
 *   OBJ_NEXT -> KEY_WAIT (',') | DONE ('}')
 *   ELEM -> ELEM_NEXT (event parsed in place, walked, or a batch's last)
 *           | ELEM (a batch or walk stopped after a ',') | CAPTURE (event
 *           crosses the chunk or has escapes) | SKIP (element is no
 *           object) | OBJ_NEXT / DONE (']') [on_elem, use_batch,
 *           fast_events]
 *   ELEM_NEXT -> ELEM (',') | OBJ_NEXT / DONE (']')
 *   SKIP -> r->after;  CAPTURE -> ELEM_NEXT | OBJ_NEXT [end_capture]
 *   any -> FAILED (error or callback stop; final)
 * Invariants: an element of traceEvents sits inside r->elem_depth
 * containers; r->off is the document offset of the current chunk's first
 * byte; the outcome (events, skips, error and its offset) does not depend
 * on how the input is cut into chunks.
 *
 * Document policies (docs/TRACE_FORMATS.md "seen in the wild"): trailing
 * commas accepted; raw control characters inside strings accepted; a UTF-8
 * byte order mark accepted; duplicate keys: the last wins, except a second
 * traceEvents, which is an error (its events could not be taken back);
 * nesting past IDX_MAX_DEPTH is an error. Values the reader skips are
 * checked for matching brackets, closed strings and the JSON alphabet
 * only; their escapes and UTF-8 are not checked.
 *
 * Event policies (each malformed event is counted in doc.skipped and not
 * handed over; the rest of the file is read):
 * - ph, cat, name: a type other than string/null, bad UTF-8, a bad escape
 *   or a lone surrogate makes the event malformed;
 * - ts, dur: exact decimals (reader_num.c), kineto microseconds or
 *   mcTracer nanoseconds to integer ns, digits past the ns truncated
 *   toward zero; numbers written as strings count; null leaves them
 *   absent; any other non-number ("N/A", NaN, {}, true) is malformed, as
 *   is a time outside read.h's range (0 <= ts < 2^62 ns, 0 <= dur <
 *   2^50 ns: a negative one, one past int64);
 * - pid, tid: numbers, or strings handed over as pid_str/tid_str;
 * - args integers: numbers or numeric strings; other types leave the
 *   field absent, out of int64 range makes the event malformed; grid and
 *   block must be three integers; shared memory falls back to
 *   dynamic_shared + static_shared, bytes to size;
 * - args strings (kind, kernel, name): bad UTF-8 leaves them absent; a
 *   numeric kind is handed over as written;
 * - an element that is not an object, or an event over IDX_EVENT_CEILING
 *   bytes, is counted as skipped.
 * Format (IDX_FORMAT_AUTO): settled by a top-level key only one format
 * writes, by a bare array, or else at the first event whose ph is not "M"
 * (format.c); metadata events before it get the default format's unit.
 */
#include <stdlib.h>
#include <string.h>

#include "index/read/read.h"
#include "index/read/read_int.h"

enum state {
  ST_START,
  ST_KEY_WAIT,
  ST_KEY,
  ST_COLON,
  ST_VALUE,
  ST_OBJ_NEXT,
  ST_ELEM,
  ST_ELEM_NEXT,
  ST_SKIP,
  ST_CAPTURE,
  ST_DONE,
  ST_FAILED
};

/* What a captured value is. */
enum cap { CAP_EVENT, CAP_DEVPROPS, CAP_DISTINFO, CAP_MEMBER };

struct idx_reader {
  idx_event_cb cb;
  void *ud;
  struct idx_doc doc;
  enum state st;
  enum state after;     /* SKIP: the state once the value ends */
  int fail;             /* FAILED: what feed/finish return */
  uint64_t off;         /* document offset of the current chunk */
  const char *chunk;    /* the chunk being fed */
  struct tr_err *err;   /* the caller's, during feed */
  char key[24];         /* the top-level key being read, a prefix */
  size_t key_n;         /* its length; sizeof(key) + 1 when longer */
  int key_bs;           /* the previous key byte was a backslash */
  int key_esc;          /* the key has an escape: it matches nothing */
  int begun;            /* a byte other than whitespace/BOM was seen */
  unsigned bom_n;       /* bytes of a UTF-8 byte order mark matched */
  int events_seen;      /* traceEvents was opened */
  int events_done;      /* and closed */
  int mark_pending;     /* idx_reader_mark(): the next element is marked */
  unsigned elem_depth;  /* nesting of an event: 2, or 1 when bare */
  struct idx_skip skip; /* SKIP and CAPTURE: where the value is */
  enum cap cap;         /* CAPTURE: what the value is */
  char *buf;            /* CAPTURE: the value's bytes, and a NUL */
  size_t buf_n, buf_cap;
  uint64_t buf_off;              /* document offset of buf[0] */
  int over;                      /* the value passed IDX_EVENT_CEILING */
  struct idx_parsed ev;          /* the event being handed over */
  int fast;                      /* stage 1 is on: events go the walker */
  struct idx_walker walker;      /* layouts and the token walk */
  const struct idx_batch *batch; /* the chunk's events walked ahead */
  /* idx_reader_keep_raw(): */
  int keep_raw;
  int keep_text; /* idx_reader_keep_text(): the events' text only */
  idx_member_cb on_member;
  char *mkey; /* the top-level key being read, quotes included */
  size_t mkey_n;
  char *raw; /* a captured event's text before it is parsed (parsing
                unescapes in place) */
  size_t raw_cap;
};

/* on_elem: the token walk gives the event to the byte-wise parser. */
#define FAST_BAIL 1

/* The document offset of p, a pointer into the current chunk. */
static uint64_t at(const struct idx_reader *r, const char *p)
{
  return r->off + (uint64_t)(p - r->chunk);
}

/* Records a fatal error at document offset off; the reader is done. */
static int fail_at(struct idx_reader *r, uint64_t off, const char *what)
{
  r->st = ST_FAILED;
  r->fail = TR_EFORMAT;
  return tr_err_set(r->err, TR_EFORMAT, NULL, "%s at byte %llu", what,
                    (unsigned long long)off);
}

/* A syntax (or depth) error at offset off, naming the byte found there. */
static int bad_byte(struct idx_reader *r, uint64_t off, int rc, unsigned char c)
{
  char what[64];

  if (rc == IDX_P_DEPTH) {
    snprintf(what, sizeof(what), "nesting deeper than %d levels",
             IDX_MAX_DEPTH);
  } else if (c >= 0x20 && c < 0x7f) {
    snprintf(what, sizeof(what), "not JSON (unexpected '%c')", c);
  } else {
    snprintf(what, sizeof(what), "not JSON (unexpected byte 0x%02x)", c);
  }
  return fail_at(r, off, what);
}

/* JSON whitespace. */
static int is_ws(char c)
{
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The ts/dur scale of the settled format, -1 while unsettled. */
static int scale_of(const struct idx_reader *r)
{
  if (r->doc.format == IDX_FORMAT_AUTO)
    return -1;
  return (int)idx_format_get(r->doc.format)->ts_scale;
}

/* Counts the parsed event and hands it over unless it is malformed. The
 * first event that is not metadata settles the format (format.c), unless
 * a top-level key or a bare array did (on_value, on_start); M events
 * before it get the default format's unit. */
static int deliver(struct idx_reader *r)
{
  struct idx_parsed *e = &r->ev;
  int rc;

  r->doc.events++;
  if (r->doc.format == IDX_FORMAT_AUTO && e->ev.ph != 'M')
    r->doc.format = idx_format_detect(&e->ev, e->co_id);
  if (!e->bad)
    idx_parsed_times(e, idx_format_get(r->doc.format)->ts_scale);
  if (e->bad) {
    r->doc.skipped++;
    return 0;
  }
  rc = r->cb(r->ud, &r->doc, &e->ev);
  if (rc != 0) {
    r->st = ST_FAILED;
    r->fail = rc;
  }
  return rc;
}

/* An element that cannot be handed over: counted as skipped. */
static void count_skipped(struct idx_reader *r)
{
  r->doc.events++;
  r->doc.skipped++;
}

/* SKIP the value starting here, then go to `after`. */
static void start_skip(struct idx_reader *r, enum state after)
{
  idx_skip_init(&r->skip);
  r->st = ST_SKIP;
  r->after = after;
}

/* CAPTURE the value starting at p (its bytes go to r->buf). */
static void start_capture(struct idx_reader *r, enum cap cap, const char *p)
{
  idx_skip_init(&r->skip);
  r->st = ST_CAPTURE;
  r->cap = cap;
  r->buf_n = 0;
  r->buf_off = at(r, p);
  r->over = 0;
}

/* The levels a value starting at the current position may open. */
static unsigned room(const struct idx_reader *r)
{
  int in_events = r->events_seen && !r->events_done;

  return IDX_MAX_DEPTH - (in_events ? r->elem_depth : 1);
}

/* Appends n bytes of the captured value, or marks it over the ceiling
 * (then only its end is looked for). 0 or TR_ENOMEM. */
static int append(struct idx_reader *r, const char *p, size_t n)
{
  size_t cap;
  char *nb;

  if (r->over)
    return 0;
  if (r->buf_n + n > IDX_EVENT_CEILING) {
    r->over = 1;
    return 0;
  }
  if (r->buf_n + n + 1 > r->buf_cap) {
    cap = r->buf_cap ? r->buf_cap : 4096;
    while (cap < r->buf_n + n + 1)
      cap *= 2;
    nb = realloc(r->buf, cap);
    if (nb == NULL)
      return TR_ENOMEM;
    r->buf = nb;
    r->buf_cap = cap;
  }
  memcpy(r->buf + r->buf_n, p, n);
  r->buf_n += n;
  return 0;
}

/* Runs the parser of the captured kind over buf[0..n); *stop is where it
 * stopped. */
static int parse_capture(struct idx_reader *r, size_t n, const char **stop)
{
  struct idx_cur c = { r->buf, r->buf + n, 1, 1 };
  int rc;

  if (r->cap == CAP_EVENT) {
    c.depth = r->elem_depth;
    r->ev.scale = scale_of(r);
    rc = idx_parse_event(&c, &r->ev);
  } else if (r->cap == CAP_MEMBER) {
    c.p = c.end; /* kept as written: the consumer judges it */
    rc = IDX_P_OK;
  } else if (r->cap == CAP_DEVPROPS) {
    rc = idx_parse_devprops(&c, r->doc.device, sizeof(r->doc.device));
  } else {
    rc = idx_parse_distinfo(&c, &r->doc.rank);
  }
  *stop = c.p;
  return rc;
}

/* A capture that cannot complete (the scanner failed at document offset
 * limit, or the input ended): the parser, stricter than the scanner, may
 * fail earlier in the bytes kept, where a parse in place (input in one
 * chunk) would have. Returns that error, or 0 when there is none. */
static int earlier_error(struct idx_reader *r, uint64_t limit)
{
  const char *stop;
  uint64_t off;
  int rc;

  if (r->over || r->buf_n == 0)
    return 0;
  rc = parse_capture(r, r->buf_n, &stop);
  off = r->buf_off + (uint64_t)(stop - r->buf);
  if ((rc != IDX_P_SYNTAX && rc != IDX_P_DEPTH) || off >= limit)
    return 0;
  return bad_byte(r, off, rc, (unsigned char)*stop);
}

/* Hands the captured top-level member to on_member (keep_raw). */
static int hand_member(struct idx_reader *r)
{
  struct idx_str key = { r->mkey_n <= IDX_KEY_MAX ? r->mkey : NULL, r->mkey_n };
  struct idx_str value = { r->over ? NULL : r->buf, r->buf_n };
  int rc = r->on_member != NULL ? r->on_member(r->ud, key, value) : 0;

  if (rc != 0) {
    r->st = ST_FAILED;
    r->fail = rc;
  }
  return rc;
}

/* keep_raw: the captured event's text, kept before parsing changes it. */
static int keep_event_text(struct idx_reader *r)
{
  if (r->buf_n > r->raw_cap) {
    char *nb = realloc(r->raw, r->buf_n);

    if (nb == NULL) {
      r->st = ST_FAILED;
      r->fail = TR_ENOMEM;
      return tr_err_set(r->err, TR_ENOMEM, NULL, "out of memory at byte %llu",
                        (unsigned long long)r->buf_off);
    }
    r->raw = nb;
    r->raw_cap = r->buf_n;
  }
  memcpy(r->raw, r->buf, r->buf_n);
  return 0;
}

/* Parses the captured value. A NUL after it ends a trailing scalar. */
static int end_capture(struct idx_reader *r)
{
  const char *stop;
  int rc;

  r->st = r->cap == CAP_EVENT ? ST_ELEM_NEXT : ST_OBJ_NEXT;
  if (r->cap != CAP_EVENT && r->keep_raw && (rc = hand_member(r)) != 0)
    return rc;
  if (r->over) {
    if (r->cap == CAP_EVENT)
      count_skipped(r);
    return 0;
  }
  if (r->cap == CAP_MEMBER)
    return 0;
  if (r->cap == CAP_EVENT && (r->keep_raw || r->keep_text) &&
      (rc = keep_event_text(r)) != 0)
    return rc;
  r->buf[r->buf_n] = 0;
  rc = parse_capture(r, r->buf_n + 1, &stop);
  if (rc == IDX_P_OK && stop != r->buf + r->buf_n)
    rc = IDX_P_SYNTAX;
  if (rc != IDX_P_OK) {
    if (stop > r->buf + r->buf_n)
      stop = r->buf + r->buf_n;
    return bad_byte(r, r->buf_off + (uint64_t)(stop - r->buf),
                    rc == IDX_P_DEPTH ? rc : IDX_P_SYNTAX,
                    (unsigned char)*stop);
  }
  if (r->cap != CAP_EVENT)
    return 0;
  r->ev.ev.raw.p = r->keep_raw || r->keep_text ? r->raw : NULL;
  r->ev.ev.raw.n = r->keep_raw || r->keep_text ? r->buf_n : 0;
  return deliver(r);
}

/* SKIP and CAPTURE: runs the value scanner over the chunk. */
static int scan(struct idx_reader *r, const char **pp, const char *end)
{
  size_t used;
  int rc = idx_skip_run(&r->skip, *pp, end, room(r), &used), err;

  if (rc < 0) {
    /* With the bad byte, which may end a token the parser rejects. */
    if (r->st == ST_CAPTURE && append(r, *pp, used + 1) == 0 &&
        (err = earlier_error(r, at(r, *pp + used))) != 0)
      return err;
    return bad_byte(r, at(r, *pp + used), rc, (unsigned char)(*pp)[used]);
  }
  if (r->st == ST_CAPTURE && append(r, *pp, used) != 0) {
    r->st = ST_FAILED;
    r->fail = TR_ENOMEM;
    return tr_err_set(r->err, TR_ENOMEM, NULL, "out of memory at byte %llu",
                      (unsigned long long)at(r, *pp));
  }
  *pp += used;
  if (rc == IDX_P_MORE)
    return 0;
  if (r->st == ST_SKIP) {
    r->st = r->after;
    return 0;
  }
  return end_capture(r);
}

/* Top-level keys the reader acts on. */
enum tkey { TK_OTHER, TK_EVENTS, TK_DEVPROPS, TK_DISTINFO };

/* What the top-level key just read is to the reader. */
static enum tkey top_key(const struct idx_reader *r)
{
  if (r->key_esc || r->key_n > sizeof(r->key))
    return TK_OTHER;
#define IS(s) (r->key_n == strlen(s) && memcmp(r->key, s, r->key_n) == 0)
  if (IS("traceEvents"))
    return TK_EVENTS;
  if (IS("deviceProperties"))
    return TK_DEVPROPS;
  if (IS("distributedInfo"))
    return TK_DISTINFO;
#undef IS
  return TK_OTHER;
}

/* VALUE: the first byte of a top-level value. */
static int on_value(struct idx_reader *r, const char **pp)
{
  enum tkey k = top_key(r);

  if (r->doc.format == IDX_FORMAT_AUTO && !r->key_esc &&
      r->key_n <= sizeof(r->key))
    r->doc.format = idx_format_of_key(r->key, r->key_n);
  switch (k) {
  case TK_EVENTS:
    if (**pp != '[')
      return fail_at(r, at(r, *pp), "traceEvents is not an array");
    if (r->events_seen)
      return fail_at(r, at(r, *pp), "a second traceEvents array");
    r->events_seen = 1;
    r->elem_depth = 2;
    r->st = ST_ELEM;
    (*pp)++;
    return 0;
  case TK_DEVPROPS: start_capture(r, CAP_DEVPROPS, *pp); return 0;
  case TK_DISTINFO: start_capture(r, CAP_DISTINFO, *pp); return 0;
  default:
    if (r->keep_raw)
      start_capture(r, CAP_MEMBER, *pp);
    else
      start_skip(r, ST_OBJ_NEXT);
    return 0;
  }
}

/* After the ']' of traceEvents (or of a bare array). */
static void end_events(struct idx_reader *r, const char *p)
{
  r->doc.array_end = (int64_t)at(r, p);
  r->mark_pending = 0;
  r->events_done = 1;
  r->st = r->doc.bare_array ? ST_DONE : ST_OBJ_NEXT;
}

/* ELEM at '{': events by the walker (a layout, or the token walk), as
 * long as it takes them, each handed over as on_elem would. Returns 0 (the
 * state machine goes on from *pp), FAST_BAIL (*pp at an event the walker
 * leaves to on_elem), or an error. */
static int fast_events(struct idx_reader *r, const char **pp, const char *end)
{
  const char *t;
  int rc;

  for (;;) {
    rc = idx_walker_event(&r->walker, *pp, end, r->elem_depth, scale_of(r),
                          &r->ev);
    if (rc < 0) {
      r->st = ST_FAILED;
      r->fail = rc;
      return tr_err_set(r->err, rc, NULL, "out of memory at byte %llu",
                        (unsigned long long)at(r, *pp));
    }
    if (rc != IDX_W_OK)
      return FAST_BAIL;
    t = r->walker.at + 1;
    r->st = ST_ELEM_NEXT;
    r->ev.ev.raw.p = *pp;
    r->ev.ev.raw.n = (size_t)(t - *pp);
    if ((size_t)(t - *pp) > IDX_EVENT_CEILING) {
      count_skipped(r);
    } else if ((rc = deliver(r)) != 0) {
      *pp = t;
      return rc;
    }
    *pp = t;
    /* "}, {" goes on here; anything else is the state machine's. */
    if (t == end || *t != ',')
      return 0;
    *pp = ++t;
    r->st = ST_ELEM;
    while (t < end && is_ws(*t))
      t++;
    if (t == end || *t != '{')
      return 0;
    *pp = t;
  }
}

/* ELEM at '{': when the chunk's batch (reader_batch.c) starts here and was
 * walked for this nesting and unit, its events are handed over as
 * deliver() would (the format is settled: a batch needs the unit), and
 * the state machine goes on where its walk stopped. FAST_BAIL when there
 * is no such batch. */
static int use_batch(struct idx_reader *r, const char **pp)
{
  const struct idx_batch *b = r->batch;
  size_t i;
  int rc;

  if (b == NULL || b->start != *pp || b->n == 0 || b->depth != r->elem_depth ||
      b->scale != scale_of(r))
    return FAST_BAIL;
  r->batch = NULL;
  r->doc.walked_ahead += b->n;
  for (i = 0; i < b->n; i++) {
    r->doc.events++;
    if (b->ev[i].bad || b->ev[i].over) {
      r->doc.skipped++;
    } else if ((rc = r->cb(r->ud, &r->doc, &b->ev[i].ev)) != 0) {
      r->st = ST_FAILED;
      r->fail = rc;
      return rc;
    }
  }
  *pp = b->stop;
  r->st = b->stop_elem ? ST_ELEM : ST_ELEM_NEXT;
  return 0;
}

/* ELEM: the first byte of an element of traceEvents. An object is parsed
 * in place when it lies wholly in the chunk; else it is captured. */
static int on_elem(struct idx_reader *r, const char **pp, const char *end)
{
  struct idx_cur c = { *pp, end, 0, r->elem_depth };
  int rc;

  if (**pp == ']') {
    end_events(r, (*pp)++);
    return 0;
  }
  if (r->mark_pending) {
    r->mark_pending = 0;
    r->doc.marks++;
    r->doc.mark_off = at(r, *pp);
    r->doc.mark_events = r->doc.events;
  }
  if (**pp != '{') {
    count_skipped(r);
    start_skip(r, ST_ELEM_NEXT);
    return 0;
  }
  if (r->batch != NULL && (rc = use_batch(r, pp)) != FAST_BAIL)
    return rc;
  if (r->fast && (rc = fast_events(r, pp, end)) != FAST_BAIL)
    return rc;
  c.p = *pp;
  r->ev.scale = scale_of(r);
  rc = idx_parse_event(&c, &r->ev);
  if (rc == IDX_P_MORE || rc == IDX_P_COPY) {
    start_capture(r, CAP_EVENT, *pp);
    return 0;
  }
  if (rc != IDX_P_OK)
    return bad_byte(r, at(r, c.p), rc, (unsigned char)*c.p);
  r->st = ST_ELEM_NEXT;
  /* Same outcome as a capture that passed the ceiling. */
  if ((size_t)(c.p - *pp) > IDX_EVENT_CEILING) {
    *pp = c.p;
    count_skipped(r);
    return 0;
  }
  r->ev.ev.raw.p = *pp;
  r->ev.ev.raw.n = (size_t)(c.p - *pp);
  *pp = c.p;
  return deliver(r);
}

/* START: whitespace and a byte order mark, then '{' or '['. */
static int on_start(struct idx_reader *r, const char **pp)
{
  static const unsigned char bom[] = { 0xef, 0xbb, 0xbf };
  unsigned char c = (unsigned char)**pp;
  uint64_t off = at(r, *pp);

  if (off == r->bom_n && off < 3 && c == bom[off]) {
    r->bom_n++;
    (*pp)++;
    return 0;
  }
  if (r->bom_n > 0 && r->bom_n < 3)
    return bad_byte(r, off, IDX_P_SYNTAX, c);
  r->begun = 1;
  if (c == '{') {
    r->st = ST_KEY_WAIT;
  } else if (c == '[') {
    r->doc.bare_array = 1;
    r->events_seen = 1;
    r->elem_depth = 1;
    if (r->doc.format == IDX_FORMAT_AUTO)
      r->doc.format = idx_format_bare();
    r->st = ST_ELEM;
  } else {
    return fail_at(r, off, "not JSON (expected '{' or '[')");
  }
  (*pp)++;
  return 0;
}

/* keep_raw: n more bytes of the key's text; past IDX_KEY_MAX only its
 * length is counted. */
static void keep_key_text(struct idx_reader *r, const char *p, size_t n)
{
  size_t room = r->mkey_n < IDX_KEY_MAX ? IDX_KEY_MAX - r->mkey_n : 0;

  memcpy(r->mkey + r->mkey_n, p, n < room ? n : room);
  r->mkey_n += n;
}

/* KEY: the bytes of a top-level key up to its closing quote. */
static int on_key(struct idx_reader *r, const char **pp, const char *end)
{
  const char *p = *pp;

  for (; p < end; p++) {
    if (r->key_bs) {
      r->key_bs = 0;
    } else if (*p == '\\') {
      r->key_bs = r->key_esc = 1;
    } else if (*p == '"') {
      r->st = ST_COLON;
      p++;
      break;
    }
    if (r->key_n < sizeof(r->key))
      r->key[r->key_n++] = *p;
    else
      r->key_n = sizeof(r->key) + 1;
  }
  if (r->keep_raw)
    keep_key_text(r, *pp, (size_t)(p - *pp));
  *pp = p;
  return 0;
}

/* A state that expects one of two bytes: ok1 -> st1, ok2 -> st2. */
static int expect(struct idx_reader *r, const char **pp, char ok1,
                  enum state st1, char ok2, enum state st2)
{
  char c = **pp;

  if (c != ok1 && c != ok2)
    return bad_byte(r, at(r, *pp), IDX_P_SYNTAX, (unsigned char)c);
  r->st = c == ok1 ? st1 : st2;
  if (r->st == ST_KEY) {
    r->key_n = 0;
    r->key_bs = r->key_esc = 0;
    if (r->keep_raw) {
      r->mkey_n = 0;
      keep_key_text(r, "\"", 1);
    }
  }
  if (c == ']')
    end_events(r, *pp);
  (*pp)++;
  return 0;
}

/* Consumes some of [*pp, end): one step of the state machine. */
static int step(struct idx_reader *r, const char **pp, const char *end)
{
  const char *p = *pp;

  if (r->st == ST_SKIP || r->st == ST_CAPTURE)
    return scan(r, pp, end);
  if (r->st == ST_KEY)
    return on_key(r, pp, end);
  if (r->st != ST_START || r->bom_n == 0 || r->bom_n == 3) {
    while (p < end && is_ws(*p))
      p++;
    *pp = p;
    if (p == end)
      return 0;
  }
  switch (r->st) {
  case ST_START: return on_start(r, pp);
  case ST_KEY_WAIT: return expect(r, pp, '"', ST_KEY, '}', ST_DONE);
  case ST_COLON: return expect(r, pp, ':', ST_VALUE, ':', ST_VALUE);
  case ST_VALUE: return on_value(r, pp);
  case ST_OBJ_NEXT: return expect(r, pp, ',', ST_KEY_WAIT, '}', ST_DONE);
  case ST_ELEM: return on_elem(r, pp, end);
  case ST_ELEM_NEXT: return expect(r, pp, ',', ST_ELEM, ']', ST_ELEM_NEXT);
  case ST_DONE:
    return fail_at(r, at(r, p), "data after the end of the JSON document");
  default: return r->fail;
  }
}

int idx_reader_new(enum idx_format forced, idx_event_cb cb, void *ud,
                   struct idx_reader **out)
{
  struct idx_reader *r = calloc(1, sizeof(*r));

  if (r == NULL)
    return TR_ENOMEM;
  r->cb = cb;
  r->ud = ud;
  r->fast = idx_scan_enabled();
  r->doc.format = forced;
  r->doc.rank = -1;
  r->doc.array_end = -1;
  *out = r;
  return 0;
}

int idx_reader_feed_chunk(struct idx_reader *r, const struct idx_chunk *c,
                          struct tr_err *err)
{
  const char *p = c->text, *end = c->text + c->len;
  int rc = 0;

  if (r->st == ST_FAILED)
    return r->fail;
  r->chunk = c->text;
  r->doc.chunk = c->text;
  r->doc.chunk_len = c->len;
  r->err = err;
  r->batch = r->fast ? c->batch : NULL;
  idx_walker_text(&r->walker);
  while (p < end && rc == 0)
    rc = step(r, &p, end);
  r->off += c->len;
  r->doc.json_bytes = r->off;
  r->doc.chunk = NULL;
  r->doc.chunk_len = 0;
  r->err = NULL;
  r->batch = NULL;
  return rc;
}

int idx_reader_feed(struct idx_reader *r, const char *buf, size_t len,
                    struct tr_err *err)
{
  struct idx_chunk c = { buf, len, NULL };

  return idx_reader_feed_chunk(r, &c, err);
}

void idx_reader_mark(struct idx_reader *r)
{
  r->mark_pending = !r->events_done;
}

int idx_reader_jump(struct idx_reader *r, uint64_t off, uint64_t events)
{
  if ((r->st != ST_ELEM && r->st != ST_ELEM_NEXT) || r->events_done ||
      off < r->off)
    return TR_EINVAL;
  /* After an element ELEM_NEXT waits for its comma, which lies before
   * off: ELEM takes the next element or the closing ']' alike. */
  r->st = ST_ELEM;
  r->off = off;
  r->doc.json_bytes = off;
  r->doc.events = events;
  return 0;
}

int idx_reader_walk_hint(const struct idx_reader *r, unsigned *depth,
                         int *scale)
{
  if (!r->fast || !r->events_seen || r->events_done || scale_of(r) < 0)
    return 0;
  *depth = r->elem_depth;
  *scale = scale_of(r);
  return 1;
}

int idx_reader_finish(struct idx_reader *r, struct tr_err *err)
{
  int in_events = r->events_seen && !r->events_done, rc;

  if (r->st == ST_FAILED)
    return r->fail;
  r->err = err;
  if (!r->begun)
    return fail_at(r, r->off, r->off == 0 ? "empty file" : "no JSON text");
  if (r->st == ST_CAPTURE && (rc = earlier_error(r, UINT64_MAX)) != 0)
    return rc;
  if (r->st != ST_DONE)
    return fail_at(r, r->off,
                   in_events ? "truncated JSON (ends inside traceEvents)"
                             : "truncated JSON");
  if (!r->events_seen)
    return fail_at(r, r->off, "no traceEvents array");
  if (r->doc.format == IDX_FORMAT_AUTO)
    r->doc.format = idx_format_get(IDX_FORMAT_AUTO)->id;
  r->err = NULL;
  return 0;
}

const struct idx_doc *idx_reader_doc(const struct idx_reader *r)
{
  return &r->doc;
}

int idx_reader_keep_raw(struct idx_reader *r, idx_member_cb on_member)
{
  if (r->mkey == NULL && (r->mkey = malloc(IDX_KEY_MAX)) == NULL)
    return TR_ENOMEM;
  r->keep_raw = 1;
  r->on_member = on_member;
  return 0;
}

void idx_reader_keep_text(struct idx_reader *r)
{
  r->keep_text = 1;
}

void idx_reader_judge(struct idx_reader *r, idx_strict_fn strict)
{
  r->walker.layouts.strict = strict;
}

void idx_reader_free(struct idx_reader *r)
{
  if (r == NULL)
    return;
  free(r->mkey);
  free(r->raw);
  free(r->buf);
  idx_walker_free(&r->walker);
  free(r);
}
