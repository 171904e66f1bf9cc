/*
 * Event layouts (read_int.h). A tracer writes every event of one kind
 * alike: kineto's python_function events, nine in ten of a PyTorch trace,
 * all read
 *
 *   {\n    "ph": "X", "cat": "python_function", "name": "…", "pid": …,
 *   "tid": …,\n    "ts": …, "dur": …,\n    "args": {\n      "Python parent
 *   id": …, "Python id": …, "Ev Idx": …\n    }\n  }
 *
 * with the same keys in the same order, the same whitespace and
 * separators, the same ph and cat; only the values in the holes differ. A
 * layout is that text, learnt from one event the token walk read
 * (reader_fast.c): literal runs, compared with the next event 32 or 16
 * bytes at a time (reader_match.c), and holes, each read by what the
 * learnt event had there (a kept string, a number, a value only skipped).
 * A match needs no stage-1 masks at all, and costs a python_function
 * event a small part of its token walk and scan.
 *
 * Why a match reads what reader_event.c reads: the literal runs are bytes
 * of an event the token walk accepted (whose result reader_event.c's
 * equals, tests/fuzz_reader.c), so keys, their order, separators, ph and
 * cat are the same, and each hole is checked as reader_event.c checks a
 * value there: a number by the same idx_num_fast(), a kept string without
 * escapes and valid UTF-8, a skipped value by the same rules (the bracket
 * scanner for containers, or where the match is AVX2's, vectors that find
 * its strings and leave it to the scanner whenever they see anything but
 * what the scanner takes); anything else fails the match and the event
 * goes the token walk. A layout is kept only when matching the event it
 * was learnt from gives what the token walk gave.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "index/read/read_int.h"

/* ---- learning ---- */

/* A layout being learnt from the event text [s, close]. */
struct build {
  struct idx_layout *l;
  const char *run;   /* the current literal run's first byte */
  unsigned c0;       /* its first constant */
  const char *close; /* the event's '}' */
  const char *end;   /* numbers may be read up to here */
  unsigned depth;    /* the event's nesting */
  int scale;
};

static const char *ws(const char *p, const char *close)
{
  while (p < close && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}

/* Ends the current run at p with a hole of the given kind; the next run
 * starts where the caller says. NULL when the layout is full. */
static struct idx_step *cut(struct build *b, const char *p, int hole)
{
  struct idx_layout *l = b->l;
  size_t n = (size_t)(p - b->run), at = l->nbytes, w;
  struct idx_step *st;
  int i;

  if (n == 0 || l->nsteps == IDX_LAYOUT_STEPS || at + n + 32 > IDX_LAYOUT_BYTES)
    return NULL;
  st = &l->step[l->nsteps++];
  memset(st, 0, sizeof(*st));
  memcpy(l->bytes + at, b->run, n);
  memset(l->bytes + at + n, 0, 32); /* what its last piece reads past it */
  st->lit = l->bytes + at;
  st->n = (uint16_t)n;
  for (i = 0, w = 16; i < 2; i++, w *= 2) {
    st->last[i] = (uint16_t)((n - 1) / w * w);
    st->tail[i] =
        (uint32_t)(~0ull << (n - st->last[i])) & (uint32_t)(~0ull >> (64 - w));
    st->need[i] =
        (uint16_t)(st->last[i] + w > n + 16 ? st->last[i] + w : n + 16);
    if (st->need[i] > l->need[i])
      l->need[i] = st->need[i];
  }
  /* The first run's constants are set as the match begins, without a
   * turn of its loop for them (before any other run's: the last of a
   * duplicate key wins). */
  st->hole =
      (uint8_t)(hole | (l->ncst > b->c0 && st != l->step ? IDX_H_CONSTS : 0));
  st->c0 = (uint8_t)b->c0;
  st->nc = (uint8_t)(l->ncst - b->c0);
  b->c0 = l->ncst;
  l->nbytes = (unsigned)(at + n);
  return st;
}

/* The closing quote of the string at v, or NULL (the event has no
 * backslash: the first quote closes it). */
static const char *str_at(const struct build *b, const char *v)
{
  if (*v != '"')
    return NULL;
  return memchr(v + 1, '"', (size_t)(b->close - v - 1));
}

#define OFF(member) offsetof(struct idx_parsed, member)

/* A constant string (ph, cat) at v: NULL, or the byte after it. */
static const char *constant(struct build *b, const char *v, uint16_t field)
{
  const char *q = str_at(b, v);
  struct idx_layout *l = b->l;
  struct idx_cst *c;

  if (q == NULL)
    return NULL;
  if (field == OFF(ev.ph)) {
    l->ph = q - v - 1 > 0 ? v[1] : 0;
    return q + 1;
  }
  if (l->ncst == IDX_LAYOUT_CONSTS)
    return NULL;
  c = &l->cst[l->ncst++];
  c->field = field;
  c->off = (uint16_t)(v + 1 - b->run);
  c->n = (uint16_t)(q - v - 1);
  return q + 1; /* the run goes on: its step, once cut, has c */
}

/* A kept string at v: a hole for its body. */
static const char *str_hole(struct build *b, const char *v, size_t field)
{
  const char *q = str_at(b, v);
  struct idx_step *st;

  if (q == NULL || (st = cut(b, v + 1, IDX_H_STR)) == NULL)
    return NULL;
  st->field = (uint16_t)field;
  b->run = q;
  return q + 1;
}

/* A number at v read at scale (0 for integers): a hole. */
static struct idx_step *num_hole(struct build *b, const char *v, int hole,
                                 const char **after)
{
  int64_t val;
  const char *q =
      idx_layout_num(v, b->end, hole == IDX_H_TIME_US ? 3 : 0, &val);
  struct idx_step *st;

  if (q == NULL || q >= b->close || idx_scalar_byte(*q) ||
      (st = cut(b, v, hole)) == NULL)
    return NULL;
  b->run = *after = q;
  return st;
}

/* An integer field at v (offsets into struct idx_parsed). */
static const char *int_hole(struct build *b, const char *v, size_t field,
                            size_t has, uint32_t bit, int coid)
{
  const char *after;
  struct idx_step *st = num_hole(b, v, IDX_H_INT, &after);

  if (st == NULL)
    return NULL;
  st->field = (uint16_t)field;
  if (has == OFF(xhas))
    b->l->xhas |= bit;
  else
    b->l->has |= bit;
  b->l->co_id |= coid;
  return after;
}

/* A value only skipped, at v, inside `levels` containers of the event. */
static const char *skip_at(struct build *b, const char *v, unsigned levels)
{
  unsigned room = IDX_MAX_DEPTH - (b->depth + levels);
  const char *q = idx_layout_skip(v, b->end, room);
  int hole = idx_scalar_byte(*v) ? IDX_H_SKIP_NUM
             : *v == '"'         ? IDX_H_SKIP_STR
                                 : IDX_H_SKIP;
  struct idx_step *st;

  if (q == NULL || q > b->close || (st = cut(b, v, hole)) == NULL)
    return NULL;
  st->room = room;
  b->run = q;
  return q;
}

/* grid / block: exactly [x, y, z] of plain integers (else no layout:
 * reader_event.c reads each element, and may mark the event bad). */
static const char *dim3_holes(struct build *b, const char *v, size_t field,
                              uint32_t bit)
{
  const char *p = v;
  int i;

  if (*p != '[')
    return NULL;
  for (i = 0; i < 3; i++) {
    p = ws(p + 1, b->close);
    p = int_hole(b, p, field + (size_t)i * sizeof(int64_t), OFF(ev.has), bit,
                 0);
    if (p == NULL)
      return NULL;
    p = ws(p, b->close);
    if (*p != (i < 2 ? ',' : ']'))
      return NULL;
  }
  return p + 1;
}

/* A member of args at v (reader_event.c's on_arg). */
static const char *arg_value(struct build *b, int key, const char *v)
{
  struct idx_parsed e;
  struct idx_slot s;

  if (idx_arg_slot(&e, key, &s))
    return int_hole(b, v, (size_t)((char *)s.dst - (char *)&e),
                    (size_t)((char *)s.has - (char *)&e), s.bit,
                    key == IDX_A_COID);
  switch (key) {
  case IDX_A_GRID: return dim3_holes(b, v, OFF(ev.grid), IDX_HAS_GRID);
  case IDX_A_BLOCK: return dim3_holes(b, v, OFF(ev.block), IDX_HAS_BLOCK);
  case IDX_A_KIND: return str_hole(b, v, OFF(ev.kind));
  case IDX_A_KERNEL: return str_hole(b, v, OFF(ev.kernel));
  case IDX_A_NAME: return str_hole(b, v, OFF(ev.arg_name));
  default: return skip_at(b, v, 2);
  }
}

/* A member of the event but args at v (reader_event.c's on_event_key). */
static const char *member_value(struct build *b, int key, const char *v)
{
  switch (key) {
  case IDX_K_PH: return constant(b, v, OFF(ev.ph));
  case IDX_K_CAT: return constant(b, v, OFF(ev.cat));
  case IDX_K_NAME: return str_hole(b, v, OFF(ev.name));
  case IDX_K_PID:
    if (*v == '"')
      return str_hole(b, v, OFF(ev.pid_str));
    return int_hole(b, v, OFF(ev.pid), OFF(ev.has), IDX_HAS_PID, 0);
  case IDX_K_TID:
    if (*v == '"')
      return str_hole(b, v, OFF(ev.tid_str));
    return int_hole(b, v, OFF(ev.tid), OFF(ev.has), IDX_HAS_TID, 0);
  case IDX_K_TS:
  case IDX_K_DUR: {
    const char *after;
    struct idx_step *st =
        num_hole(b, v, b->scale == 3 ? IDX_H_TIME_US : IDX_H_TIME_NS, &after);

    if (st == NULL)
      return NULL;
    st->field = (uint16_t)(key == IDX_K_TS ? OFF(ts) : OFF(dur));
    return after;
  }
  case IDX_K_ARGS: return NULL; /* args that is no object */
  default: return skip_at(b, v, 1);
  }
}

/* One member at p (its key's opening quote): the byte after its value, or
 * NULL. *in_args is set when it opens args. */
static const char *member(struct build *b, const char *p, int *in_args)
{
  const char *k = p + 1, *q = str_at(b, p), *v;
  int key;

  if (q == NULL)
    return NULL;
  p = ws(q + 1, b->close);
  if (*p != ':')
    return NULL;
  v = ws(p + 1, b->close);
  if (*in_args)
    return arg_value(b, idx_arg_key(k, (size_t)(q - k)), v);
  key = idx_event_key(k, (size_t)(q - k));
  if (key == IDX_K_ARGS && *v == '{') {
    *in_args = 1;
    return v + 1;
  }
  return member_value(b, key, v);
}

/* Learns l from the event [s, close]: 1, or 0 when it has a shape no
 * layout holds (escapes or bytes >= 0x80 anywhere, a field of another
 * type than a layout reads, too many members). The loop is
 * reader_event.c's obj_each() over the event and its args. */
static int build(struct idx_layout *l, const char *s, const char *close,
                 const char *end, unsigned depth, int scale)
{
  struct build b = { l, s, 0, close, end, depth, scale };
  const char *p;
  int in_args = 0, opened;

  memset(l, 0, offsetof(struct idx_layout, bytes));
  if (scale != 3 && scale != 0) /* the holes know these two units */
    return 0;
  for (p = s; p <= close; p++)
    if (*p == '\\' || (unsigned char)*p >= 0x80)
      return 0;
  if (*s != '{')
    return 0;
  p = ws(s + 1, close);
  for (;;) {
    if (*p == '}') {
      if (!in_args)
        break;
      in_args = 0;
      p = ws(p + 1, close);
    } else {
      opened = in_args;
      if (*p != '"' || (p = member(&b, p, &in_args)) == NULL)
        return 0;
      p = ws(p, close);
      if (in_args && !opened)
        continue; /* args opened: its members come next */
    }
    if (*p == ',')
      p = ws(p + 1, close);
    else if (*p != '}')
      return 0;
  }
  return p == close && cut(&b, close + 1, IDX_H_END) != NULL;
}

/* ---- checking what was learnt ---- */

static int same_str(struct idx_str a, struct idx_str b)
{
  return a.p == b.p && a.n == b.n;
}

static int same_time(const struct idx_numtok *a, const struct idx_numtok *b)
{
  if (a->present != b->present)
    return 0;
  return !a->present || (a->done == b->done && a->val == b->val &&
                         a->p == b->p && a->n == b->n);
}

/* 1 when a and b hand over the same event (the fields the parsers set). */
static int same_parsed(const struct idx_parsed *a, const struct idx_parsed *b)
{
  const struct idx_event *x = &a->ev, *y = &b->ev;
  const uint32_t xs = a->xhas;

  return x->ph == y->ph && x->has == y->has && same_str(x->name, y->name) &&
         same_str(x->cat, y->cat) && same_str(x->pid_str, y->pid_str) &&
         same_str(x->tid_str, y->tid_str) && same_str(x->kind, y->kind) &&
         same_str(x->kernel, y->kernel) && same_str(x->arg_name, y->arg_name) &&
         x->pid == y->pid && x->tid == y->tid &&
         x->correlation == y->correlation && x->external_id == y->external_id &&
         x->device == y->device && x->stream == y->stream &&
         x->registers == y->registers && x->shared_bytes == y->shared_bytes &&
         x->bytes == y->bytes &&
         memcmp(x->grid, y->grid, sizeof(x->grid)) == 0 &&
         memcmp(x->block, y->block, sizeof(x->block)) == 0 &&
         same_time(&a->ts, &b->ts) && same_time(&a->dur, &b->dur) &&
         a->bad == b->bad && a->co_id == b->co_id && xs == b->xhas &&
         (!(xs & IDX_X_SIZE) || a->size == b->size) &&
         (!(xs & IDX_X_DYN) || a->dyn_shared == b->dyn_shared) &&
         (!(xs & IDX_X_STATIC) || a->static_shared == b->static_shared);
}

/* ---- the table ---- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
/* Read by every reader thread, set by idx_layouts_select() (tests, the
 * benchmarks) while others may read: atomic. */
static atomic_int enabled = 1;

static void read_env(void)
{
  const char *env = getenv("TRACED_LAYOUTS");

  if (env != NULL && strcmp(env, "off") == 0)
    atomic_store_explicit(&enabled, 0, memory_order_relaxed);
}

void idx_layouts_select(int on)
{
  pthread_once(&once, read_env);
  atomic_store_explicit(&enabled, on, memory_order_relaxed);
}

int idx_layouts_enabled(void)
{
  pthread_once(&once, read_env);
  return atomic_load_explicit(&enabled, memory_order_relaxed);
}

/* Forgets every layout: they were learnt for another nesting or unit. */
void idx_layouts_forget(struct idx_layouts *t, unsigned depth, int scale)
{
  while (t->n > 0)
    free(t->l[--t->n]);
  t->depth = depth;
  t->scale = scale;
  t->wide = idx_scan_wide();
}

void idx_layouts_learn(struct idx_layouts *t, const char *p, const char *close,
                       const char *end, unsigned depth, int scale,
                       const struct idx_parsed *walked)
{
  struct idx_parsed again;
  const char *at;
  struct idx_layout *l;

  if (t->depth != depth || t->scale != scale)
    idx_layouts_forget(t, depth, scale);
  if (t->wait > 0) {
    t->wait--;
    return;
  }
  l = t->spare != NULL ? t->spare : malloc(sizeof(*l));
  t->spare = l;
  if (l == NULL)
    return;
  if (!build(l, p, close, end, t->depth, t->scale) ||
      !idx_layout_match(t, l, p, end, &again, &at) || at != close ||
      !same_parsed(&again, walked)) {
    /* Events of a shape no layout holds: try again later, less often
     * each time, so that a trace of them pays little for the tries. */
    t->fails += t->fails < 12;
    t->wait = 1u << t->fails;
    return;
  }
  /* The walked event's cat_class is 0: the class is looked up. */
  l->cat_class =
      (char)(idx_format_get(IDX_FORMAT_KINETO)->classify(&walked->ev) + 1);
  t->fails = 0;
  t->spare = t->n == IDX_LAYOUTS ? t->l[--t->n] : NULL;
  memmove(&t->l[1], &t->l[0], t->n * sizeof(t->l[0]));
  t->l[0] = l;
  t->n++;
}

void idx_layouts_free(struct idx_layouts *t)
{
  if (t == NULL)
    return;
  idx_layouts_forget(t, 0, 0);
  free(t->spare);
  t->spare = NULL;
}
