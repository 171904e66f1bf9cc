/*
 * idx_slice_ranks(): every rank's window of a capture in one timeline,
 * a Chrome trace event document Perfetto opens as it is:
 *
 *   {"traceEvents": [<rank A's part>, <its processes' names and order>,
 *    <rank B's part>, ...], "traced_slice": {.., "ranks": [..]}}
 *
 * Each rank's part is what its own slice's traceEvents hold (slice.c
 * makes it, the same pass), but for the pid: a rank's processes (kineto
 * writes the host's OS pid and one per GPU) would meet another rank's of
 * the same number, so each pid the rank's events name, its text as
 * written, becomes one of the rank's own: pid_base + 1, + 2... in the
 * order first met, pid_base 1000 times the rank's place in the list (the
 * rank itself when the ranks are 0, 1, 2...). A process_name event's name
 * gets "rank <r> · " before it; after the part, a process that had none
 * gets one ("rank <r> · pid <its pid>"), and each a process_sort_index
 * of its new pid, so that a viewer lists the ranks in order. Flow events
 * (ph s, t, f), which a viewer joins by id across the document, get ids
 * of the rank's own too: id × the number of ranks + the rank's place
 * (flow_edit() says which ids stay as they are). Timestamps
 * stay as each rank recorded them; the window [t0_ns + start_ns, t0_ns +
 * end_ns) is the same instants on every rank's clock (t0_ns: the
 * capture's, its earliest rank's). The ranks' other top-level members
 * (deviceProperties, distributedInfo...) stay in their own slices.
 *
 * Bounds: SLICE_PART_PIDS processes per rank (the rest share the last);
 * a mended event is written whole into a scratch before its pid is
 * replaced, so the scratch holds one event: at most IDX_EVENT_CEILING
 * read, six times that when every byte of it was a control byte to
 * escape (\u00XX), kept for the next and freed at the end;
 * the ranks are sliced one after the other, each as its own slice is
 * (memory, the caps on inflating and spilling), by the one caller.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/slice/slice_int.h"

/* Processes one rank may have in the merged timeline; also the distance
 * between two ranks' pid_base. */
#define SLICE_PART_PIDS  999
#define SLICE_PID_STRIDE (SLICE_PART_PIDS + 1)

/* What idx_slice_ranks() reports of a rank in traced_slice. */
struct rank_report {
  struct idx_slice_stats st;
  uint32_t processes;
};

/* The merged timeline's pid of the rank's pid written key[0..n) (the
 * empty text: an event without one). -1, o->rc set, when out of memory. */
static int64_t map_pid(struct slice_part *pt, struct slice_out *o,
                       const char *key, size_t n, int naming)
{
  uint32_t id = SLICE_PART_PIDS - 1;
  int rc = 0;

  if (pt->pids.n < SLICE_PART_PIDS)
    rc = agg_map_intern(&pt->pids, key, n, &id);
  else if (!agg_map_find(&pt->pids, key, n, &id))
    id = SLICE_PART_PIDS - 1; /* past the bound: the last holds the rest */
  if (rc < 0 || agg_grow(&pt->named, &pt->named_cap, id, 1) != 0) {
    if (o->rc == 0)
      o->rc = TR_ENOMEM;
    return -1;
  }
  pt->named[id] |= (uint8_t)naming;
  return pt->pid_base + id + 1;
}

int64_t slice_part_pid_num(struct slice_part *pt, struct slice_out *o,
                           int64_t pid, int naming)
{
  char key[24];
  int n = snprintf(key, sizeof(key), "%" PRId64, pid);

  return map_pid(pt, o, key, (size_t)n, naming);
}

/* Where a process_name event's name text begins (after its quote), or
 * NULL when it has none as a string. */
static const char *process_name_at(struct idx_str t)
{
  struct idx_str args, name;

  if (!slice_json_member(t.p, t.n, "args", &args) ||
      !slice_json_member(args.p, args.n, "name", &name) || name.n < 2 ||
      name.p[0] != '"')
    return NULL;
  return name.p + 1;
}

/* One change to an event's text: at `at`, skip bytes go, text comes. */
struct edit {
  const char *at;
  size_t skip;
  const char *text;
  size_t n;
};

/* Writes t with edits e[0..n) made (put in text order here). */
static void put_edited(struct slice_out *o, struct idx_str t, struct edit *e,
                       int n)
{
  const char *p = t.p;

  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && e[k].at < e[k - 1].at; k--) {
      struct edit x = e[k];

      e[k] = e[k - 1];
      e[k - 1] = x;
    }

  for (int i = 0; i < n; i++) {
    slice_out_put(o, p, (size_t)(e[i].at - p));
    slice_out_put(o, e[i].text, e[i].n);
    p = e[i].at + e[i].skip;
  }
  slice_out_put(o, p, (size_t)(t.p + t.n - p));
}

/* The event's strict text: as it is, or mended into the scratch. */
static int strict_text(struct slice_part *pt, const struct idx_event *ev,
                       int verdict, struct idx_str *t)
{
  struct slice_out *m;
  int rc;

  if (verdict != SLICE_JSON_MENDED) {
    *t = ev->raw;
    return 0;
  }
  if ((m = calloc(1, sizeof(*m))) == NULL)
    return TR_ENOMEM;
  m->write = slice_held_write;
  m->ud = &pt->scratch;
  pt->scratch.n = 0;
  slice_json_mend(ev->raw.p, ev->raw.n, m);
  rc = slice_out_flush(m);
  free(m);
  *t = (struct idx_str){ pt->scratch.p, pt->scratch.n };
  return rc;
}

/* A flow event's id made the rank's own (ph s, t, f: a viewer joins them
 * by id, cat and name across the whole document, and every rank counts
 * its correlations alike): id x ranks + place. 1 with the edit in *e; 0
 * for an id that is not a plain integer or would pass 2^53 (what a
 * JavaScript reader holds exactly): it stays. */
static int flow_edit(const struct slice_part *pt, const struct idx_event *ev,
                     struct idx_str t, char *num, size_t cap, struct edit *e)
{
  struct idx_str id;
  uint64_t v = 0;

  if ((ev->ph != 's' && ev->ph != 't' && ev->ph != 'f') ||
      !slice_json_member(t.p, t.n, "id", &id) || id.n == 0 || id.n > 16)
    return 0;
  for (size_t i = 0; i < id.n; i++) {
    if (id.p[i] < '0' || id.p[i] > '9')
      return 0;
    v = v * 10 + (uint64_t)(id.p[i] - '0');
  }
  if (__builtin_mul_overflow(v, pt->places, &v) ||
      __builtin_add_overflow(v, pt->place, &v) || v > (UINT64_C(1) << 53))
    return 0;
  *e = (struct edit){ id.p, id.n, num,
                      (size_t)snprintf(num, cap, "%" PRIu64, v) };
  return 1;
}

void slice_part_event(struct slice_part *pt, struct slice_out *o,
                      const struct idx_event *ev, int verdict)
{
  static const char process_name[] = "process_name";
  const char *name_at = NULL;
  struct edit e[3];
  struct idx_str t, pid = { NULL, 0 };
  char num[32], flow[32];
  int64_t to;
  int has_pid, n = 0, rc;

  if ((rc = strict_text(pt, ev, verdict, &t)) != 0) {
    o->rc = o->rc != 0 ? o->rc : rc;
    return;
  }
  has_pid = slice_json_member(t.p, t.n, "pid", &pid);
  if (ev->ph == 'M' && ev->name.n == sizeof(process_name) - 1 &&
      memcmp(ev->name.p, process_name, ev->name.n) == 0)
    name_at = process_name_at(t);
  if ((to = map_pid(pt, o, pid.p, pid.n, name_at != NULL)) < 0)
    return;
  if (has_pid) {
    e[n++] =
        (struct edit){ pid.p, pid.n, num,
                       (size_t)snprintf(num, sizeof(num), "%" PRId64, to) };
  } else {
    /* An event without a pid is the rank's too. The text is an object
     * with a member at least (ph, for it to be kept). */
    const char *brace = memchr(t.p, '{', t.n);

    e[n++] = (struct edit){ brace + 1, 0, num,
                            (size_t)snprintf(num, sizeof(num),
                                             "\"pid\":%" PRId64 ",", to) };
  }
  if (name_at != NULL)
    e[n++] = (struct edit){ name_at, 0, pt->prefix, strlen(pt->prefix) };
  n += flow_edit(pt, ev, t, flow, sizeof(flow), &e[n]);
  put_edited(o, t, e, n);
}

/* ---- the merged document ---- */

/* Starts an element of the merged traceEvents. */
static void next_element(struct slice_part *pt, struct slice_out *o)
{
  if (pt->elements++)
    slice_out_put(o, ",", 1);
}

/* After a rank's part: a name for each of its processes that had none,
 * and each one's place (its pid: ranks in order). */
static void name_processes(struct slice_part *pt, struct slice_out *o)
{
  char buf[192];

  for (uint32_t id = 0; id < pt->pids.n; id++) {
    const struct agg_key *k = &pt->pids.keys[id];
    int64_t pid = pt->pid_base + id + 1;

    if (!pt->named[id]) {
      next_element(pt, o);
      snprintf(buf, sizeof(buf),
               "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
               ",\"tid\":0,\"args\":{\"name\":\"%spid ",
               pid, pt->prefix);
      slice_out_str(o, buf);
      if (k->n > 0)
        slice_json_escape(o, k->p, k->n);
      else
        slice_out_str(o, "(none)");
      slice_out_str(o, "\"}}");
    }
    next_element(pt, o);
    snprintf(buf, sizeof(buf),
             "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRId64
             ",\"tid\":0,\"args\":{\"sort_index\":%" PRId64 "}}",
             pid, pid);
    slice_out_str(o, buf);
  }
}

/* Readies pt for the rank at place i of n (its elements carry on). */
static void part_reset(struct slice_part *pt, size_t i, size_t n, int rank)
{
  pt->place = i;
  pt->places = n;
  agg_map_free(&pt->pids);
  memset(&pt->pids, 0, sizeof(pt->pids));
  if (pt->named != NULL)
    memset(pt->named, 0, pt->named_cap);
  pt->pid_base = (int64_t)i * SLICE_PID_STRIDE;
  snprintf(pt->prefix, sizeof(pt->prefix), "rank %d \u00b7 ", rank);
}

static void put_report(struct slice_out *o, const struct idx_slice_rank *r,
                       const struct rank_report *rep, int comma, int findings)
{
  char buf[160];

  snprintf(buf, sizeof(buf),
           "%s{\"rank\":%d,\"t0_ns\":%" PRId64 ",\"processes\":%" PRIu32 ",",
           comma ? "," : "", r->rank, r->t0_ns, rep->processes);
  slice_out_str(o, buf);
  slice_put_counts(o, &rep->st);
  slice_put_findings(o, &rep->st, findings);
  slice_out_str(o, "}");
}

static void put_tail(struct slice_out *o, const struct idx_slice_opts *opt,
                     const struct idx_slice_rank *ranks,
                     const struct rank_report *reps, size_t n)
{
  char buf[160];

  snprintf(buf, sizeof(buf),
           "],\"traced_slice\":{\"t0_ns\":%" PRId64 ",\"start_ns\":%" PRId64
           ",\"end_ns\":%" PRId64 ",\"ranks\":[",
           opt->t0_ns, opt->start_ns, opt->end_ns);
  slice_out_str(o, buf);
  for (size_t i = 0; i < n; i++)
    put_report(o, &ranks[i], &reps[i], i > 0, opt->findings);
  slice_out_str(o, "]}}");
}

/* The parts, one rank after the other, each followed by its processes. */
static int put_parts(struct slice_part *pt, struct slice_out *o,
                     const char *root, const struct idx_slice_rank *ranks,
                     size_t n, const struct idx_slice_opts *opt,
                     struct rank_report *reps, struct tr_err *err)
{
  int rc = 0;

  for (size_t i = 0; i < n && rc == 0; i++) {
    struct idx_slice_opts one = *opt;

    one.format = ranks[i].format;
    one.points_path = ranks[i].points_path;
    part_reset(pt, i, n, ranks[i].rank);
    /* What o holds goes first: the part writes straight to the writer. */
    if ((rc = slice_out_flush(o)) != 0)
      break;
    rc = slice_rank_run(root, ranks[i].path, &one, pt, o->write, o->ud,
                        &reps[i].st, err);
    if (rc == 0) {
      reps[i].processes = pt->pids.n;
      name_processes(pt, o);
      rc = o->rc;
    }
  }
  return rc;
}

int idx_slice_ranks(const char *root, const struct idx_slice_rank *ranks,
                    size_t n, const struct idx_slice_opts *o,
                    idx_write_fn write, void *ud, struct tr_err *err)
{
  struct slice_part *pt = calloc(1, sizeof(*pt));
  struct slice_out *out = calloc(1, sizeof(*out));
  struct rank_report *reps = calloc(n > 0 ? n : 1, sizeof(*reps));
  int rc = pt != NULL && out != NULL && reps != NULL ? 0 : TR_ENOMEM;

  if (rc == 0) {
    out->write = write;
    out->ud = ud;
    slice_out_str(out, "{\"traceEvents\":[");
    rc = put_parts(pt, out, root, ranks, n, o, reps, err);
  }
  if (rc == 0) {
    put_tail(out, o, ranks, reps, n);
    rc = slice_out_flush(out);
  }
  if (rc != 0)
    tr_err_set(err, rc, "", "the all-ranks slice failed");
  if (pt != NULL) {
    agg_map_free(&pt->pids);
    free(pt->named);
    free(pt->scratch.p);
  }
  free(pt);
  free(out);
  free(reps);
  return rc;
}
