/*
 * idx_slice_under(): a window of a rank's raw trace as a kineto JSON
 * document small enough for Perfetto, in one streaming pass.
 *
 * The reader hands each event with its text and each top-level member
 * (idx_reader_keep_raw); what is kept is copied byte for byte, timestamps
 * as in the file, and only mended where it is not strict JSON
 * (slice_json.c). The output is
 *
 *   {<members before traceEvents>, "traceEvents": [<kept events>,
 *    <traced's tracks>], <members after traceEvents>, "traced_slice": {..}}
 *
 * whatever the input's shape (a bare array gives no members); separators
 * and whitespace between values are the slicer's, so a trailing comma of
 * the input never reaches the output. Members read after the first event
 * are held (up to the event ceiling each, bounded as the reader bounds
 * them) until the tracks are written: the tracks are known only at the end.
 *
 * Which events: an event spans [ts, ts + dur) for ph "X" (dur when
 * present), else the instant [ts, ts + 1 ns); it is kept when that span
 * overlaps the window [t0 + start_ns, t0 + end_ns). Every ph "M" event
 * (process and thread names, sort indices) is kept whatever its time;
 * events without a ts that are not "M" have no place on the timeline and
 * are not. Events the reader skips as malformed are not handed over, so
 * not kept (the reader counts them).
 *
 * traced's tracks (with findings): the same events go through the
 * aggregation of idx_file() (agg.c), whose time pass reports each step of
 * the step side and each idle stretch (agg.h, struct agg_finding); those
 * overlapping the window become ph "X" events of a process of their own
 * (the largest numeric pid of the trace + 1, named "traced"): thread 1
 * the steps (name: the kind; args: the label, step_ns), thread 2 the idle
 * stretches (name: the cause; args: idle_ns, between_steps_ns, the part
 * of it no step label covers, counted as between_steps). Their ts and dur
 * are written in the trace's own unit (kineto microseconds with three
 * decimals, mcTracer nanoseconds).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "index/agg/agg.h"
#include "index/read/read.h"
#include "index/slice/slice_int.h"

struct slicer {
  const struct idx_slice_opts *o;
  int64_t lo, hi;      /* the window in trace ns: [lo, hi) */
  int events_begun;    /* an event was read: later members are held */
  int array_open;      /* "traceEvents":[ is written */
  int members_written; /* a member is written before it */
  uint64_t *elements;  /* elements written in it: own_elements, or, in
                          a part, the merged document's */
  uint64_t own_elements;
  struct slice_part *part; /* NULL: a whole document (slice.h) */
  int tracks_named;        /* traced's process and threads are named */
  int scale;               /* ts unit: digits to ns (read.h's ts_scale) */
  int64_t max_pid;         /* largest numeric pid, INT64_MIN: none */
  struct slice_held held;  /* members read after the events start, held
                              for the end (the reader drops larger ones) */
  int findings;  /* traced's tracks are wanted */
  int step_side; /* where the steps come from (agg.h's AGG_SIDE_*) */
  struct idx_agg agg;
  int agg_on; /* the findings come from agg, which reads every event (else
                 from the rank's slice figures) */
  struct idx_slice_stats st;
  struct slice_out out;      /* the document */
  struct slice_out held_out; /* into held */
};

/* ---- output ---- */

int slice_out_flush(struct slice_out *o)
{
  if (o->rc == 0 && o->n > 0)
    o->rc = o->write(o->ud, o->buf, o->n);
  o->n = 0;
  return o->rc;
}

int slice_out_put(struct slice_out *o, const char *p, size_t n)
{
  if (o->rc != 0 || n == 0)
    return o->rc;
  if (o->n + n > sizeof(o->buf) && slice_out_flush(o) != 0)
    return o->rc;
  if (n > sizeof(o->buf)) {
    o->rc = o->write(o->ud, p, n);
    return o->rc;
  }
  memcpy(o->buf + o->n, p, n);
  o->n += n;
  return 0;
}

int slice_out_str(struct slice_out *o, const char *s)
{
  return slice_out_put(o, s, strlen(s));
}

int slice_held_write(void *ud, const char *p, size_t n)
{
  struct slice_held *h = ud;

  if (n == 0)
    return 0;
  if (agg_grow(&h->p, &h->cap, h->n + n - 1, 1) != 0)
    return TR_ENOMEM;
  memcpy(h->p + h->n, p, n);
  h->n += n;
  return 0;
}

/* Writes the JSON value v to o as judged (slice_json_mend() with no
 * output gave verdict, VALID or MENDED): as it is, or mended. */
static void put_judged(struct slice_out *o, struct idx_str v, int verdict)
{
  if (verdict == SLICE_JSON_MENDED)
    slice_json_mend(v.p, v.n, o);
  else
    slice_out_put(o, v.p, v.n);
}

/* Writes a member `key:value` to o, after a comma when comma. 0, or
 * SLICE_JSON_BAD when either is not mendable (nothing written then). */
static int put_member(struct slice_out *o, int comma, struct idx_str key,
                      struct idx_str value)
{
  int k = slice_json_mend(key.p, key.n, NULL);
  int v = slice_json_mend(value.p, value.n, NULL);

  if (k == SLICE_JSON_BAD || v == SLICE_JSON_BAD)
    return SLICE_JSON_BAD;
  if (comma)
    slice_out_put(o, ",", 1);
  put_judged(o, key, k);
  slice_out_put(o, ":", 1);
  put_judged(o, value, v);
  return 0;
}

/* Opens the output's traceEvents array, once. */
static void open_array(struct slicer *s)
{
  if (s->array_open)
    return;
  slice_out_str(&s->out, s->members_written ? ",\"traceEvents\":["
                                            : "\"traceEvents\":[");
  s->array_open = 1;
}

/* Starts an element of the array: the comma before all but the first. */
static void next_element(struct slicer *s)
{
  open_array(s);
  if ((*s->elements)++)
    slice_out_put(&s->out, ",", 1);
}

/* ---- the reader's callbacks ---- */

static int on_member(void *ud, struct idx_str key, struct idx_str value)
{
  struct slicer *s = ud;
  int rc;

  if (s->part != NULL)
    return 0; /* a merged document's members are its own */
  if (key.p == NULL || value.p == NULL) {
    s->st.members_dropped++;
    return 0;
  }
  if (!s->events_begun) {
    rc = put_member(&s->out, s->members_written, key, value);
    s->members_written += rc == 0;
  } else {
    /* After the array: a comma always (traceEvents comes first). */
    rc = put_member(&s->held_out, 1, key, value);
    if (s->held_out.rc != 0)
      return s->held_out.rc;
  }
  if (rc != 0)
    s->st.members_dropped++;
  else
    s->st.members_kept++;
  return s->out.rc;
}

/* The event's span overlaps the window (the file's comment says how). */
static int in_window(const struct slicer *s, const struct idx_event *ev)
{
  int64_t b, e;

  slice_span(ev, &b, &e);
  return b < s->hi && e > s->lo;
}

static void note_pid(struct slicer *s, const struct idx_event *ev)
{
  if ((ev->has & IDX_HAS_PID) && ev->pid > s->max_pid)
    s->max_pid = ev->pid;
}

static int on_event(void *ud, const struct idx_doc *doc,
                    const struct idx_event *ev)
{
  struct slicer *s = ud;
  int meta = ev->ph == 'M', verdict, rc;

  if (idx_cancelled(s->o->cancel))
    return TR_ECONFLICT;
  s->st.events_read++;
  s->events_begun = 1;
  note_pid(s, ev);
  if (s->agg_on && (rc = idx_agg_event(&s->agg, doc, ev)) != 0)
    return rc;
  if (!meta && (!(ev->has & IDX_HAS_TS) || !in_window(s, ev)))
    return 0;
  verdict = ev->strict ? SLICE_JSON_VALID
                       : slice_json_mend(ev->raw.p, ev->raw.n, NULL);
  if (verdict == SLICE_JSON_BAD) {
    s->st.events_dropped++;
    return 0;
  }
  next_element(s);
  if (s->part != NULL)
    slice_part_event(s->part, &s->out, ev, verdict);
  else
    put_judged(&s->out, ev->raw, verdict);
  s->st.events_kept++;
  s->st.metadata_events += meta;
  s->st.events_mended += verdict == SLICE_JSON_MENDED;
  return s->out.rc;
}

/* ---- traced's tracks ---- */

#define TRACK_STEPS 1
#define TRACK_IDLE  2

/* t in trace ns as the file writes it (read.h's ts_scale): microseconds
 * with three decimals (kineto), nanoseconds (mcTracer). */
static void put_time(struct slicer *s, const char *key, int64_t t)
{
  uint64_t a = t < 0 ? 0 - (uint64_t)t : (uint64_t)t, unit = 1;
  char buf[64];

  for (int i = 0; i < s->scale; i++)
    unit *= 10;
  if (s->scale == 0)
    snprintf(buf, sizeof(buf), ",\"%s\":%" PRId64, key, t);
  else
    snprintf(buf, sizeof(buf), ",\"%s\":%s%" PRIu64 ".%0*" PRIu64, key,
             t < 0 ? "-" : "", a / unit, s->scale, a % unit);
  slice_out_str(&s->out, buf);
}

/* The pid of traced's tracks: past every numeric pid of the trace (in a
 * part, the merged timeline's for it; naming: its name is written). */
static int64_t tracks_pid(struct slicer *s, int naming)
{
  int64_t pid = s->max_pid == INT64_MIN  ? 1
                : s->max_pid < INT64_MAX ? s->max_pid + 1
                                         : -1;

  if (s->part == NULL)
    return pid;
  return slice_part_pid_num(s->part, &s->out, pid, naming);
}

/* One ph "M" event naming traced's process or one of its threads. */
static void put_name(struct slicer *s, const char *what, int tid,
                     const char *name)
{
  int process = strcmp(what, "process_name") == 0;
  char buf[256];

  next_element(s);
  snprintf(buf, sizeof(buf),
           "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64
           ",\"tid\":%d,\"args\":{\"name\":\"%s%s\"}}",
           what, tracks_pid(s, process), tid,
           process && s->part != NULL ? s->part->prefix : "", name);
  slice_out_str(&s->out, buf);
}

static void name_tracks(struct slicer *s)
{
  if (s->tracks_named++)
    return;
  put_name(s, "process_name", 0, "traced");
  put_name(s, "thread_name", TRACK_STEPS,
           s->step_side == AGG_SIDE_GPU ? "steps (GPU-side labels)"
                                        : "steps (CPU-side labels)");
  put_name(s, "thread_name", TRACK_IDLE, "idle time by cause");
}

/* The head of a finding's X event, up to its args' opening brace. */
static void put_head(struct slicer *s, int tid, const char *name, size_t n,
                     const struct slice_found *f)
{
  char buf[96];

  name_tracks(s);
  next_element(s);
  slice_out_str(&s->out, "{\"ph\":\"X\",\"cat\":\"traced\",\"name\":\"");
  slice_json_escape(&s->out, name, n);
  snprintf(buf, sizeof(buf), "\",\"pid\":%" PRId64 ",\"tid\":%d",
           tracks_pid(s, 0), tid);
  slice_out_str(&s->out, buf);
  put_time(s, "ts", f->start_ns);
  put_time(s, "dur", f->end_ns - f->start_ns);
  slice_out_str(&s->out, ",\"args\":{");
}

static void put_step(struct slicer *s, const struct slice_found *f)
{
  char buf[64];

  put_head(s, TRACK_STEPS, f->kind, f->kind_n, f);
  slice_out_str(&s->out, "\"label\":\"");
  slice_json_escape(&s->out, f->label, f->label_n);
  snprintf(buf, sizeof(buf), "\",\"step_ns\":%" PRId64 "}}",
           f->end_ns - f->start_ns);
  slice_out_str(&s->out, buf);
  s->st.steps++;
}

static void put_idle(struct slicer *s, const struct slice_found *f)
{
  const char *cause = agg_idle_cause_name(f->cause);
  char buf[96];

  put_head(s, TRACK_IDLE, cause, strlen(cause), f);
  snprintf(buf, sizeof(buf),
           "\"idle_ns\":%" PRId64 ",\"between_steps_ns\":%" PRId64 "}}",
           f->end_ns - f->start_ns, f->between_ns);
  slice_out_str(&s->out, buf);
  s->st.idle++;
}

/* A finding, when it overlaps the window. */
static void put_finding(struct slicer *s, const struct slice_found *f)
{
  if (f->start_ns >= s->hi || f->end_ns <= s->lo || s->out.rc != 0)
    return;
  if (f->what == AGG_FOUND_STEP)
    put_step(s, f);
  else
    put_idle(s, f);
}

/* agg's on_finding. */
static void on_finding(void *ud, const struct agg_finding *f)
{
  struct slicer *s = ud;
  char label[AGG_LABEL_TEXT + 1];
  struct slice_found t;

  s->step_side = s->agg.step_side;
  slice_found_of(&s->agg, f, label, &t);
  put_finding(s, &t);
}

/* The findings the rank's slice figures hold, in the time pass's order:
 * those of the blocks whose hull meets the window. */
static void stored_tracks(struct slicer *s, const struct slice_figs *g)
{
  struct slice_found f;

  s->step_side = (int)g->step_side;
  for (size_t b = 0; s->out.rc == 0 && b < g->nblocks; b++) {
    const struct slice_found_block *k = &g->block[b];
    size_t at = k->at,
           end = b + 1 < g->nblocks ? g->block[b + 1].at : g->found_len;
    int64_t last = k->last;

    if (k->lo >= s->hi || k->hi <= s->lo)
      continue;
    while (s->out.rc == 0 && at < end && slice_figs_found(g, &at, &last, &f))
      put_finding(s, &f);
  }
}

/* The summary's pieces are not the slice's: dropped as they come. */
static int drop_head(void *ud, json_t *head, struct tr_err *err)
{
  (void)ud;
  (void)head;
  (void)err;
  return 0;
}

static int drop_row(void *ud, const char *table, json_t *row,
                    struct tr_err *err)
{
  (void)table;
  return drop_head(ud, row, err);
}

/* Runs the aggregation's end (its time pass reports the findings). */
static int tracks(struct slicer *s, const struct idx_doc *doc, const char *path,
                  struct tr_err *err)
{
  static const struct idx_sink drop = { drop_head, drop_row, NULL, NULL };
  struct agg_file_info info = { path, 0, -1, 0 };
  int rc;

  s->agg.on_finding = on_finding;
  s->agg.finding_ud = s;
  rc = idx_agg_rows(&s->agg, doc, &info, &drop, err);
  return rc != 0 ? rc : s->out.rc;
}

/* ---- the document's end ---- */

void slice_put_counts(struct slice_out *o, const struct idx_slice_stats *t)
{
  char buf[256];

  snprintf(buf, sizeof(buf),
           "\"events_read\":%" PRIu64 ",\"events_kept\":%" PRIu64
           ",\"metadata_events\":%" PRIu64 ",\"events_mended\":%" PRIu64
           ",\"events_dropped\":%" PRIu64,
           t->events_read, t->events_kept, t->metadata_events, t->events_mended,
           t->events_dropped);
  slice_out_str(o, buf);
}

void slice_put_findings(struct slice_out *o, const struct idx_slice_stats *t,
                        int on)
{
  char buf[96];

  if (on)
    snprintf(buf, sizeof(buf),
             ",\"findings\":{\"steps\":%" PRIu64 ",\"idle\":%" PRIu64 "}",
             t->steps, t->idle);
  else
    snprintf(buf, sizeof(buf), ",\"findings\":null");
  slice_out_str(o, buf);
}

static void put_stats(struct slicer *s)
{
  const struct idx_slice_stats *t = &s->st;
  char buf[256];

  snprintf(buf, sizeof(buf),
           ",\"traced_slice\":{\"t0_ns\":%" PRId64 ",\"start_ns\":%" PRId64
           ",\"end_ns\":%" PRId64 ",",
           s->o->t0_ns, s->o->start_ns, s->o->end_ns);
  slice_out_str(&s->out, buf);
  slice_put_counts(&s->out, t);
  snprintf(buf, sizeof(buf),
           ",\"members_kept\":%" PRIu64 ",\"members_dropped\":%" PRIu64,
           t->members_kept, t->members_dropped);
  slice_out_str(&s->out, buf);
  slice_put_findings(&s->out, t, s->findings);
  slice_out_str(&s->out, "}}");
}

/* The document's end; figs: the rank's slice figures when the findings
 * come from them, else NULL. */
static int finish(struct slicer *s, const struct idx_doc *doc, const char *path,
                  const struct slice_figs *figs, struct tr_err *err)
{
  int rc;

  s->scale = (int)idx_format_get(doc->format)->ts_scale;
  open_array(s);
  if (s->agg_on && (rc = tracks(s, doc, path, err)) != 0)
    return rc;
  if (s->findings && figs != NULL)
    stored_tracks(s, figs);
  if (s->part != NULL)
    return slice_out_flush(&s->out);
  slice_out_put(&s->out, "]", 1);
  if ((rc = slice_out_flush(&s->held_out)) != 0)
    return rc;
  slice_out_put(&s->out, s->held.p, s->held.n);
  put_stats(s);
  return slice_out_flush(&s->out);
}

/* [t0 + start, t0 + end), saturated at the int64 range. */
static void window(struct slicer *s)
{
  if (__builtin_add_overflow(s->o->t0_ns, s->o->start_ns, &s->lo))
    s->lo = s->o->start_ns < 0 ? INT64_MIN : INT64_MAX;
  if (__builtin_add_overflow(s->o->t0_ns, s->o->end_ns, &s->hi))
    s->hi = s->o->end_ns < 0 ? INT64_MIN : INT64_MAX;
}

/* s is zeroed. With stored, the findings (if any) will come from the
 * rank's slice figures. */
static int slicer_init(struct slicer *s, const struct idx_slice_opts *o,
                       struct slice_part *part, idx_write_fn write, void *ud,
                       int stored)
{
  s->part = part;
  /* A part writes into the merged document's array. */
  s->array_open = part != NULL;
  s->elements = part != NULL ? &part->elements : &s->own_elements;
  s->out.write = write;
  s->out.ud = ud;
  s->held_out.write = slice_held_write;
  s->held_out.ud = &s->held;
  s->o = o;
  s->max_pid = INT64_MIN;
  s->findings = o->findings;
  window(s);
  if (!o->findings || stored)
    return 0;
  if (idx_agg_init(&s->agg, o->rules, 0) != 0)
    return TR_ENOMEM;
  idx_agg_cap_names(&s->agg, o->max_kernel_names);
  s->agg.spill.dir = o->spill_dir;
  s->agg.spill.max_bytes = o->max_spill_bytes;
  s->agg_on = 1;
  return 0;
}

/* ---- from access points ---- */

/* The rank's points and slice figures (o->points_path) when they are of
 * the file at path (opened on *fd) and can serve a slice with o's
 * findings: 1; else 0 and nothing is held (the whole file is read, and
 * reports what is wrong with it). */
static int load_points(const char *root, const char *path,
                       const struct idx_slice_opts *o, int *fd,
                       struct idx_points *pts, struct slice_figs *figs)
{
  struct tr_err e = { 0 };
  struct stat st;

  *fd = -1;
  if (o->points_path == NULL ||
      (*fd = tr_open_file(root, path, 0, &st, &e)) < 0)
    return 0;
  if (idx_points_load(o->points_path, &st, pts, &e) == 0 &&
      pts->figs != NULL &&
      slice_figs_decode(pts->figs, pts->figs_len, figs) == 0 &&
      (!o->findings || figs->found_complete))
    return 1;
  slice_figs_free(figs);
  idx_points_free(pts);
  close(*fd);
  *fd = -1;
  return 0;
}

/* A piece the window needs, or one that must be read whatever it. */
static int piece_needed(const struct slicer *s, const struct slice_piece *p)
{
  return (p->flags & SLICE_PIECE_READ) || (p->lo < s->hi && p->hi > s->lo);
}

/* The reader goes on at offset off, element number elems; TR_EFORMAT
 * with err when it is not between elements there. */
static int jump(struct slice_feed *f, uint64_t off, uint64_t elems)
{
  if (idx_reader_jump(f->rd, off, elems) == 0)
    return 0;
  return tr_err_set(f->err, TR_EFORMAT, NULL,
                    "the points do not match the file at byte %llu",
                    (unsigned long long)off);
}

/* The stored M events from document offset from up to end (*m: the next
 * one not yet passed), each fed to the reader as if read in its place. */
static int replay_metas(struct slice_feed *f, const struct slice_figs *g,
                        size_t *m, uint64_t from, uint64_t end)
{
  int rc = 0;

  for (; rc == 0 && *m < g->nmeta && g->meta[*m].off < end; (*m)++) {
    const struct slice_meta *x = &g->meta[*m];

    if (x->off < from)
      continue; /* in a range read */
    if ((rc = jump(f, x->off, x->elems)) == 0 &&
        (rc = idx_reader_feed(f->rd, g->text + x->at, x->len, f->err)) == 0)
      rc = idx_reader_feed(f->rd, ",", 1, f->err);
  }
  return rc;
}

/* Feeds range r, after the stored M events before it that no range
 * read. *done: where the last range ended. */
static int read_range(struct slice_feed *f, const struct slice_figs *g,
                      size_t *m, uint64_t *done, const struct slice_range *r)
{
  int rc = replay_metas(f, g, m, *done, r->a);

  if (rc == 0 && (rc = jump(f, r->a, r->elems)) == 0)
    rc = slice_feed_range(f, r->a, r->b);
  *done = r->b;
  return rc;
}

/* The next run of pieces from *k the window needs, into *r; with every,
 * each piece is needed (the format is not settled yet: the reader
 * settles it on what it reads). 0 when none is left. */
static int next_run(const struct slicer *s, const struct slice_figs *g,
                    int every, size_t *k, struct slice_range *r)
{
  size_t j;

  while (*k < g->npieces && !every && !piece_needed(s, &g->piece[*k]))
    (*k)++;
  if (*k == g->npieces)
    return 0;
  for (j = *k; j + 1 < g->npieces && piece_needed(s, &g->piece[j + 1]); j++)
    ;
  *r = (struct slice_range){
    .a = g->piece[*k].off,
    .b = j + 1 < g->npieces ? g->piece[j + 1].off : (uint64_t)g->array_end,
    .elems = g->piece[*k].elems,
    .pieces = j - *k + 1,
  };
  *k = j + 1;
  return 1;
}

/* The head (the text before traceEvents' first piece). */
static struct slice_range head(const struct slice_figs *g)
{
  return (struct slice_range){ .b = g->piece[0].off };
}

/* The tail: from traceEvents' end to the file's. */
static struct slice_range tail(const struct slice_figs *g,
                               const struct idx_doc *doc)
{
  return (struct slice_range){ .a = (uint64_t)g->array_end,
                               .b = UINT64_MAX,
                               .elems = doc->events };
}

/* Every range read_pieces() will feed, when the format is settled
 * (else the runs depend on when the reader settles it): *out (caller
 * frees), *n of them. 0, 1 when not known yet, or TR_ENOMEM. */
static int plan(const struct slicer *s, const struct slice_figs *g,
                const struct idx_doc *doc, struct slice_range **out,
                size_t *n)
{
  struct slice_range *r;
  size_t k = 0;

  *out = NULL;
  *n = 0;
  if (doc->format == IDX_FORMAT_AUTO)
    return 1;
  /* Runs alternate with pieces skipped: at most half the pieces, and one. */
  if ((r = malloc((g->npieces / 2 + 3) * sizeof(*r))) == NULL)
    return TR_ENOMEM;
  r[(*n)++] = head(g);
  while (next_run(s, g, 0, &k, &r[*n]))
    (*n)++;
  /* The tail's element count is the reader's when it gets there: any. */
  r[(*n)++] = tail(g, doc);
  *out = r;
  return 0;
}

/* The head, the pieces the window needs, and the tail from traceEvents'
 * end: the reader sees the document as if whole, but for events no slice
 * of this window keeps. */
static int read_pieces(struct slicer *s, struct slice_feed *f,
                       const struct slice_figs *g)
{
  const struct idx_doc *doc = idx_reader_doc(f->rd);
  struct slice_range r = head(g);
  uint64_t done = r.b;
  size_t m = 0, k = 0;
  int rc = slice_feed_range(f, r.a, r.b);

  /* The head holds no event handed over (slice_figs.c). */
  s->events_begun = g->delivered > 0;
  while (rc == 0 &&
         next_run(s, g, doc->format == IDX_FORMAT_AUTO, &k, &r)) {
    rc = read_range(f, g, &m, &done, &r);
    s->st.pieces_read += r.pieces;
  }
  r = tail(g, doc);
  if (rc == 0)
    rc = read_range(f, g, &m, &done, &r);
  s->st.pieces = g->npieces;
  return rc == 0 ? idx_reader_finish(f->rd, f->err) : rc;
}

/* The slice from the rank's points: the figures say what is not read.
 * With threads to spare and the format settled, a thread inflates the
 * ranges ahead of the parse. */
static int read_points(struct slicer *s, int fd, const struct idx_points *pts,
                       const struct slice_figs *g, struct idx_reader *rd,
                       struct tr_err *err)
{
  struct slice_range *ranges = NULL;
  struct slice_feed f;
  size_t n;
  int rc = slice_feed_open(&f, fd, pts, rd, err);

  f.cancel = s->o->cancel;
  /* Without (not settled, out of memory), this thread inflates. */
  if (rc == 0 && idx_threads(s->o->threads) > 1 &&
      plan(s, g, idx_reader_doc(rd), &ranges, &n) == 0)
    (void)slice_feed_pump(&f, ranges, n);
  if (rc == 0)
    rc = read_pieces(s, &f, g);
  slice_feed_close(&f);
  free(ranges);
  s->st.text_bytes = f.text_bytes;
  s->st.events_read = g->delivered;
  s->max_pid = g->max_pid;
  return rc;
}

/* The whole file, start to end. */
static int read_whole(struct slicer *s, const char *root, const char *path,
                      struct idx_reader *rd, struct tr_err *err)
{
  const struct idx_slice_opts *o = s->o;
  struct idx_options ropt = { .format = o->format,
                              .rules = o->rules,
                              .rank = -1,
                              .cancel = o->cancel,
                              .threads = o->threads,
                              .max_inflated_bytes = o->max_inflated_bytes };
  struct idx_read got;
  int rc = idx_read_under(root, path, rd, &ropt, &got, err);

  s->st.text_bytes = idx_reader_doc(rd)->json_bytes;
  return rc;
}

int slice_rank_run(const char *root, const char *path,
                   const struct idx_slice_opts *o, struct slice_part *part,
                   idx_write_fn write, void *ud, struct idx_slice_stats *stats,
                   struct tr_err *err)
{
  struct tr_err local = { 0 };
  struct idx_reader *rd = NULL;
  struct idx_points pts = { 0 };
  struct slice_figs figs = { 0 };
  struct slicer *s = calloc(1, sizeof(*s));
  int fd = -1, stored = load_points(root, path, o, &fd, &pts, &figs);
  int rc = s != NULL ? slicer_init(s, o, part, write, ud, stored) : TR_ENOMEM;

  if (rc == 0)
    rc = idx_reader_new(o->format, on_event, s, &rd);
  if (rc == 0)
    rc = idx_reader_keep_raw(rd, on_member);
  if (rc == 0)
    idx_reader_judge(rd, slice_json_strict_end);
  if (rc == 0 && (part != NULL || (rc = slice_out_put(&s->out, "{", 1)) == 0))
    rc = stored ? read_points(s, fd, &pts, &figs, rd, &local)
                : read_whole(s, root, path, rd, &local);
  if (rc == 0)
    rc = finish(s, idx_reader_doc(rd), path, stored ? &figs : NULL, &local);
  if (rc == 0 && stats != NULL)
    *stats = s->st;
  idx_reader_free(rd);
  if (s != NULL) {
    if (s->agg_on) {
      agg_spill_blame(&s->agg.spill, rc, &local);
      idx_agg_free(&s->agg);
    }
    free(s->held.p);
    free(s);
  }
  slice_figs_free(&figs);
  idx_points_free(&pts);
  if (fd >= 0)
    close(fd);
  return rc == 0 ? 0 : idx_file_fail(err, &local, rc, path);
}

int idx_slice_under(const char *root, const char *path,
                    const struct idx_slice_opts *o, idx_write_fn write,
                    void *ud, struct idx_slice_stats *stats, struct tr_err *err)
{
  return slice_rank_run(root, path, o, NULL, write, ud, stats, err);
}
