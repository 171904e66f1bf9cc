/*
 * The decode unit's event pass (decode.h): each event that matters to it
 * becomes a 32-byte record (decode_int.h's enum dec_rtype), sorted and
 * spilled by agg_runs like the time records; the walk (dec_walk.c) reads
 * them back in time order. What matters (docs/DECODE.md, "Events"):
 *
 *   - host frames: cpu_op (legacy "Operator"); python_function named
 *     "nn.Module: <Class>_<n>" (with_stack traces); user_annotation that
 *     reads as a module tag (ATOM's mark_trace: "model.layers.3.mlp",
 *     "paged_attention_asm": letters, digits, '_' and '.' only);
 *   - step labels (user_annotation): ATOM's run labels, vLLM's
 *     execute_..._context_..._generation_... and SGLang's step[...]
 *     iteration annotations, xDiT's execute_diffusion_<bs>_<res>;
 *   - runtime calls with a correlation that launch device work: names
 *     with "launch", "memcpy" or "memset" (any case), graph launches
 *     ("graphlaunch"); in a capture trace the capture windows
 *     (*StreamBeginCapture / *StreamEndCapture, else ATOM's
 *     capture_graph_bs_<n> annotation);
 *   - device records (kernels, copies, memsets) of the run trace.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"

#define STEP_RECS (1u << 12) /* step labels in memory before a spill */
#define RT_NAMES_MAX 1024    /* runtime names whose class is kept */
#define MOD_PFX   "nn.Module: "
#define MOD_PFX_N (sizeof(MOD_PFX) - 1)

static int str_is(struct idx_str s, const char *lit)
{
  size_t n = strlen(lit);

  return s.p != NULL && s.n == n && memcmp(s.p, lit, n) == 0;
}

static int starts(struct idx_str s, const char *lit)
{
  size_t n = strlen(lit);

  return s.p != NULL && s.n >= n && memcmp(s.p, lit, n) == 0;
}

/* Case-insensitive substring (runtime call names). */
static int has_word(struct idx_str s, const char *lit)
{
  size_t n = strlen(lit);

  for (size_t i = 0; s.p != NULL && i + n <= s.n; i++) {
    size_t k = 0;

    while (k < n && tolower((unsigned char)s.p[i + k]) == lit[k])
      k++;
    if (k == n)
      return 1;
  }
  return 0;
}

/* ---- the library ---- */

int dec_lib_new(uint32_t max_names, struct agg_spill *sp,
                struct dec_lib **out)
{
  struct dec_lib *lib = calloc(1, sizeof(*lib));

  if (lib == NULL || hs_trie_init(&lib->trie, 0) != 0 ||
      (lib->py_seen = calloc(3 * AGG_SEEN, sizeof(*lib->py_seen))) == NULL ||
      pf_lib_new(max_names, &lib->perf) != 0) {
    if (lib != NULL) {
      hs_trie_free(&lib->trie);
      free(lib->py_seen);
    }
    free(lib);
    return TR_ENOMEM;
  }
  lib->op_seen = lib->py_seen + AGG_SEEN;
  lib->dev_seen = lib->op_seen + AGG_SEEN;
  lib->max_names = max_names ? max_names : IDX_MAX_KERNEL_NAMES;
  lib->sp = sp;
  *out = lib;
  return 0;
}

void dec_lib_free(struct dec_lib *lib)
{
  if (lib == NULL)
    return;
  hs_trie_free(&lib->trie);
  pf_lib_free(lib->perf);
  agg_map_free(&lib->names);
  agg_map_free(&lib->py_names);
  free(lib->py_kind);
  free(lib->py_seen);
  free(lib->name_buf);
  for (size_t i = 0; i < lib->nfiles; i++)
    free(lib->files[i].path);
  free(lib->files);
  free(lib->launches);
  free(lib->graphs);
  free(lib);
}

void dec_lib_capture_failed(struct dec_lib *lib)
{
  lib->capture_files_failed++;
}

int dec_name(struct dec_lib *lib, const char *p, size_t n, uint32_t *id)
{
  struct idx_str s = { p, n };
  unsigned what = 0;
  int rc;

  /* A name as the kernels table keeps it (agg_fold.c), so that the two
   * tables name a kernel alike. */
  if ((rc = agg_name_find_kept(&lib->names, &s, &lib->name_buf, &what, id)) !=
      0)
    return rc < 0 ? rc : 0;
  if (lib->names.n >= lib->max_names) {
    lib->names_folded++;
    *id = DEC_NONE;
    return 0;
  }
  rc = agg_map_intern(&lib->names, s.p, s.n, id);
  return rc < 0 ? rc : 0;
}

/* ---- a file ---- */

static int add_capfile(struct dec_lib *lib, const struct idx_capture *cap,
                       uint32_t *index)
{
  struct dec_capfile *f;

  if (agg_grow(&lib->files, &lib->files_cap, lib->nfiles, sizeof(*f)) != 0)
    return TR_ENOMEM;
  f = &lib->files[lib->nfiles];
  memset(f, 0, sizeof(*f));
  if ((f->path = strdup(cap->path ? cap->path : "")) == NULL)
    return TR_ENOMEM;
  f->bs = cap->bs;
  f->q = cap->q;
  f->mode = cap->mode;
  f->first = (uint32_t)lib->ngraphs;
  *index = (uint32_t)lib->nfiles++;
  return 0;
}

/* The streams' records in memory before a spill, 2 MB in all as one
 * stream had, and each iterator's window: a stream read in order needs
 * little (agg_runs.c). */
static const uint32_t stream_recs[DEC_STREAMS] = { 1u << 14, 1u << 14, 1u << 13,
                                                   1u << 14, 1u << 12 };
#define STREAM_WINDOW (1u << 11)

static int runs_init(struct dec_file *d)
{
  for (int i = 0; i < DEC_STREAMS; i++) {
    if (agg_runs_init(&d->runs[i], stream_recs[i], d->lib->sp) != 0)
      return TR_ENOMEM;
    agg_runs_window(&d->runs[i], STREAM_WINDOW);
  }
  return 0;
}

static void runs_free(struct dec_file *d)
{
  for (int i = 0; i < DEC_STREAMS; i++)
    agg_runs_free(&d->runs[i]);
  agg_runs_free(&d->step_runs);
}

int dec_file_new(struct dec_lib *lib, enum dec_mode mode,
                 const struct idx_capture *cap, struct dec_file **out)
{
  struct dec_file *d = calloc(1, sizeof(*d));
  int rc = TR_ENOMEM;

  if (d == NULL)
    return TR_ENOMEM;
  d->lib = lib;
  d->mode = mode;
  d->cap = cap;
  d->labels.sp = lib->sp;
  if (runs_init(d) == 0 &&
      agg_runs_init(&d->step_runs, STEP_RECS, lib->sp) == 0 &&
      hs_lanes_init(&d->lanes) == 0 && dec_tab_init(&d->tab) == 0) {
    struct mem_names names;

    dec_mem_names(d, &names);
    rc = mode == DEC_CAPTURE ? add_capfile(lib, cap, &d->file)
                             : mem_new(lib->max_names, &names, &d->mem);
  }
  if (rc != 0) {
    dec_file_free(d);
    return rc;
  }
  *out = d;
  return 0;
}

void dec_file_free(struct dec_file *d)
{
  if (d == NULL)
    return;
  runs_free(d);
  free(d->nested);
  hs_lanes_free(&d->lanes);
  agg_map_free(&d->stream_ids);
  agg_map_free(&d->rt_names);
  free(d->rt_class);
  agg_map_free(&d->kinds);
  agg_map_free(&d->descs);
  for (size_t i = 0; i < DEC_MAX_KINDS; i++)
    agg_hist_free(&d->kind[i].hist);
  agg_labels_free(&d->labels);
  dec_tab_free(&d->tab);
  mem_free(d->mem);
  free(d);
}

int dec_seal(struct dec_file *d, struct tr_err *err)
{
  int rc = agg_runs_seal(&d->step_runs);

  for (int i = 0; rc == 0 && i < DEC_STREAMS; i++)
    rc = agg_runs_seal(&d->runs[i]);
  if (rc != 0)
    return tr_err_set(err, rc, "", "decode: %s", tr_strerror(rc));
  return 0;
}

int dec_end(struct dec_file *d, struct tr_err *err)
{
  int rc;

  if (d->ended)
    return 0;
  d->ended = 1;
  if ((rc = dec_seal(d, err)) != 0)
    return rc;
  /* What the event pass kept is freed as soon as it has served, since
   * this walk may run beside the time pass, where a rank's indexing
   * peaks: the runtime names now, the records (2.5 MB) once walked. */
  agg_map_free(&d->rt_names);
  free(d->rt_class);
  d->rt_class = NULL;
  d->rt_class_cap = 0;
  rc = dec_walk(d);
  runs_free(d);
  if (rc != 0)
    return tr_err_set(err, rc, "", "decode: %s", tr_strerror(rc));
  return 0;
}

const struct dec_desc *dec_desc_of(const struct dec_file *d, uint32_t id)
{
  return (const struct dec_desc *)(const void *)d->descs.keys[id].p;
}

/* ---- records ---- */

static int put(struct dec_file *d, enum dec_stream s,
               const struct idx_event *ev, uint32_t type, uint32_t id,
               int64_t aux, int64_t dur)
{
  struct agg_rec r = { ev->ts_ns, dur, aux, type, id };

  return agg_runs_add(&d->runs[s], &r);
}

int dec_lane_of(struct dec_file *d, const struct idx_event *ev,
                uint32_t *lane)
{
  int numeric = (ev->has & IDX_HAS_PID) && (ev->has & IDX_HAS_TID);
  int rc;

  if (numeric && d->last_lane.valid && d->last_lane.pid == ev->pid &&
      d->last_lane.tid == ev->tid) {
    *lane = d->last_lane.lane;
    return 0;
  }
  rc = hs_lanes_id(
      &d->lanes, ev->pid, ev->tid,
      (ev->has & IDX_HAS_PID) ? NULL : ev->pid_str.p, ev->pid_str.n,
      (ev->has & IDX_HAS_TID) ? NULL : ev->tid_str.p, ev->tid_str.n, lane);
  d->last_lane.valid = numeric && rc == 0;
  d->last_lane.pid = ev->pid;
  d->last_lane.tid = ev->tid;
  d->last_lane.lane = *lane;
  return rc;
}

/* SGLang's profiler ops carry a counter that changes from run to run
 * ("sglang_profiler::rmsnorm_rmsnorm2d_fwd_109"): the name without it,
 * as TraceLens's normalize_sglang_profiler_op_names has it. */
static size_t op_name_len(const char *p, size_t n)
{
  size_t i = n;

  if (n < 18 || memcmp(p, "sglang_profiler::", 17) != 0)
    return n;
  while (i > 17 && isdigit((unsigned char)p[i - 1]))
    i--;
  return i < n && i > 18 && p[i - 1] == '_' ? i - 1 : n;
}

/* A frame record of trie name `name` (op frames: of text p[0..n)): aux
 * holds its lane, and above it its op's proto + 1 (index/perf/perf.h; 0:
 * none). */
static int frame_put(struct dec_file *d, const struct idx_event *ev,
                     enum hs_kind kind, uint32_t name, const char *p, size_t n)
{
  uint32_t lane, proto = PF_NONE;
  int rc;

  if ((rc = dec_lane_of(d, ev, &lane)) != 0)
    return rc;
  if (kind == HS_OP &&
      (rc = pf_proto(d->lib->perf, ev, name, p, n, &proto)) != 0)
    return rc;
  return put(d, kind == HS_OP || kind == HS_ANNOT ? DS_HOST : DS_PY, ev,
             DR_FRAME, name, (int64_t)(uint32_t)(proto + 1) << 32 | lane,
             ev->dur_ns);
}

static int frame(struct dec_file *d, const struct idx_event *ev,
                 enum hs_kind kind, const char *p, size_t n)
{
  uint32_t name;
  int rc;

  if ((rc = hs_trie_name(&d->lib->trie, kind, p, n, &name)) != 0)
    return rc;
  return frame_put(d, ev, kind, name, p, n);
}

/* An op frame (cpu_op), its trie name from the ops met lately (key: the
 * hash of its name) when there. */
static int on_op(struct dec_file *d, const struct idx_event *ev, uint64_t key)
{
  size_t n = op_name_len(ev->name.p, ev->name.n);
  uint32_t name;
  int rc;

  if (!agg_seen_id(d->lib->op_seen, key, &name)) {
    if ((rc = hs_trie_name(&d->lib->trie, HS_OP, ev->name.p, n, &name)) != 0)
      return rc;
    agg_seen_put(d->lib->op_seen, key, name, 0);
  }
  return frame_put(d, ev, HS_OP, name, ev->name.p, n);
}

/* ---- step labels ---- */

/* The unsigned number at s[*i], advancing *i; -1 when there is none. */
static int64_t number(struct idx_str s, size_t *i)
{
  int64_t v = -1;

  while (*i < s.n && isdigit((unsigned char)s.p[*i]) && v < INT64_MAX / 10 - 9)
    v = (v < 0 ? 0 : v * 10) + (s.p[(*i)++] - '0');
  return v;
}

/* The number right after the first occurrence of key at or after from;
 * -1. */
static int64_t after(struct idx_str s, size_t from, const char *key)
{
  size_t n = strlen(key);

  for (size_t i = from; i + n <= s.n; i++)
    if (memcmp(s.p + i, key, n) == 0) {
      i += n;
      return number(s, &i);
    }
  return -1;
}

/* The number in the next parentheses from *i on: (<n>) or (sq<n>...). */
static int64_t paren_number(struct idx_str s, size_t *i)
{
  while (*i < s.n && s.p[*i] != '(')
    (*i)++;
  if (*i >= s.n)
    return -1;
  (*i)++;
  if (*i + 2 <= s.n && s.p[*i] == 's' && s.p[*i + 1] == 'q')
    *i += 2;
  return number(s, i);
}

/* vLLM's iteration annotations: execute_context_<c>(<a>)_generation_<g>(<x>)
 * and execute_<n>_context_<c>(sq<a>sk..)_generation_<g>(sq<x>sk..): the
 * kind from which side has requests, the batch from a + x (the tokens, as
 * TraceLens's find_closest_batch_size takes them); xDiT's
 * execute_diffusion_<bs>_<res>. */
static const char *execute_kind(struct idx_str s, int64_t *bs)
{
  int64_t c, g, a, x;
  size_t i = 8;

  if (starts(s, "execute_diffusion_")) {
    i = 18;
    *bs = number(s, &i);
    return *bs >= 0 ? "diffusion" : NULL;
  }
  c = after(s, 8, "context_");
  g = after(s, 8, "generation_");
  if (c < 0 || g < 0)
    return NULL;
  a = paren_number(s, &i);
  x = paren_number(s, &i);
  *bs = (a > 0 ? a : 0) + (x > 0 ? x : 0);
  if (c > 0 && g > 0)
    return "mixed";
  return c > 0 ? "prefill" : "decode";
}

/* SGLang's step[EXTEND|DECODE|MIXED bs=.. ...]: the batch from c_sq + g_sq
 * when the detailed fields are there, else bs (decode) or toks. */
static const char *sglang_kind(struct idx_str s, int64_t *bs)
{
  static const char *const words[][2] = { { "step[EXTEND", "prefill" },
                                          { "step[DECODE", "decode" },
                                          { "step[MIXED", "mixed" } };
  int64_t c, g;

  for (size_t w = 0; w < 3; w++) {
    if (!starts(s, words[w][0]))
      continue;
    c = after(s, 5, " c_sq=");
    g = after(s, 5, " g_sq=");
    if (c >= 0 || g >= 0)
      *bs = (c > 0 ? c : 0) + (g > 0 ? g : 0);
    else if (w == 1 || (*bs = after(s, 5, " toks=")) < 0)
      *bs = after(s, 5, " bs=");
    return words[w][1];
  }
  return NULL;
}

/* The step a label opens into *desc (kind name into *kind), or 0 when the
 * label is none (docs/DECODE.md, "Steps"). */
static int step_of(struct idx_str s, struct dec_desc *desc,
                   struct idx_str *kind)
{
  size_t len = agg_label_kind(s);
  const char *k = NULL;
  int64_t second;

  memset(desc, 0, sizeof(*desc));
  desc->bs = desc->graph_bs = desc->tok = -1;
  if (len > 0) {
    desc->bs = agg_label_field(s, len + 1, "bs=", &second);
    desc->graph_bs = second >= 0 ? second : desc->bs;
    desc->tok = agg_label_field(s, len + 1, "tok=", NULL);
    kind->p = s.p;
    kind->n = len;
    return 1;
  }
  if (starts(s, "execute_"))
    k = execute_kind(s, &desc->bs);
  else if (starts(s, "step["))
    k = sglang_kind(s, &desc->bs);
  if (k == NULL)
    return 0;
  kind->p = k;
  kind->n = strlen(k);
  return 1;
}

static int step(struct dec_file *d, const struct idx_event *ev,
                struct dec_desc *desc, struct idx_str kind)
{
  uint32_t k, id, lane;
  struct agg_rec r;
  int64_t seq;
  int rc;

  if ((rc = agg_map_intern(&d->kinds, kind.p, kind.n, &k)) < 0)
    return rc;
  if (k >= DEC_MAX_KINDS) {
    d->skipped++;
    return 0;
  }
  desc->kind = k;
  if ((rc = agg_map_intern(&d->descs, desc, sizeof(*desc), &id)) < 0 ||
      (rc = agg_labels_add(&d->labels, ev->name.p, ev->name.n, &seq)) != 0 ||
      (rc = dec_lane_of(d, ev, &lane)) != 0)
    return rc;
  r = (struct agg_rec){ ev->ts_ns, ev->dur_ns, (int64_t)lane << 40 | seq,
                        DR_STEP, id };
  if ((rc = agg_runs_add(&d->step_runs, &r)) != 0)
    return rc;
  return agg_runs_add(&d->runs[DS_HOST], &r);
}

/* A user_annotation that tags a module (ATOM's mark_trace: a module's
 * prefix or a name): letters, digits, '_' and '.', and not a capture
 * label (capture_graph_bs_8, capture_32_DECODE). */
static int module_tag(struct idx_str s)
{
  if (s.n == 0 || s.n > 256 || starts(s, "capture_"))
    return 0;
  for (size_t i = 0; i < s.n; i++)
    if (!isalnum((unsigned char)s.p[i]) && s.p[i] != '_' && s.p[i] != '.')
      return 0;
  return 1;
}

/* A capture window's edge at t: DR_WINOPEN or DR_WINCLOSE; fallback 1
 * for ATOM's capture_graph_bs_<n> span (used when the file has no
 * StreamBeginCapture call). */
static int window(struct dec_file *d, enum dec_stream s,
                  const struct idx_event *ev, uint32_t type, int64_t t,
                  uint32_t fallback)
{
  struct idx_event at = *ev;
  uint32_t lane;
  int rc;

  if ((rc = dec_lane_of(d, ev, &lane)) != 0)
    return rc;
  at.ts_ns = t;
  return put(d, s, &at, type, fallback, lane, 0);
}

static int on_annotation(struct dec_file *d, const struct idx_event *ev)
{
  struct dec_desc desc;
  struct idx_str kind;

  if (step_of(ev->name, &desc, &kind))
    return step(d, ev, &desc, kind);
  if (d->mode == DEC_CAPTURE && starts(ev->name, "capture_graph_bs_")) {
    int rc = window(d, DS_HOST, ev, DR_WINOPEN, ev->ts_ns, 1);

    return rc ? rc
              : window(d, DS_HOST, ev, DR_WINCLOSE, ev->ts_ns + ev->dur_ns, 1);
  }
  if (module_tag(ev->name))
    return frame(d, ev, HS_ANNOT, ev->name.p, ev->name.n);
  return 0;
}

/* ---- launches and device records ---- */

/* What a runtime call is to decode, by its name (any case). */
enum rt_kind {
  RT_OTHER,
  RT_BEGIN_CAPTURE, /* *StreamBeginCapture */
  RT_END_CAPTURE,   /* *StreamEndCapture */
  RT_GRAPH,         /* *GraphLaunch */
  RT_KERNEL,        /* *Launch*, not *HostFunc */
  RT_COPY,          /* *Memcpy* */
  RT_MEMSET         /* *Memset* */
};

static enum rt_kind rt_kind_of(struct idx_str n)
{
  if (has_word(n, "streambegincapture"))
    return RT_BEGIN_CAPTURE;
  if (has_word(n, "streamendcapture"))
    return RT_END_CAPTURE;
  if (has_word(n, "graphlaunch"))
    return RT_GRAPH;
  if (has_word(n, "launch") && !has_word(n, "hostfunc"))
    return RT_KERNEL;
  if (has_word(n, "memcpy"))
    return RT_COPY;
  return has_word(n, "memset") ? RT_MEMSET : RT_OTHER;
}

/* rt_kind_of(), once per distinct name (a trace calls a few dozen); past
 * RT_NAMES_MAX of them (made-up names) each call's is found again. */
static int rt_kind(struct dec_file *d, struct idx_str n, enum rt_kind *out)
{
  uint32_t id;
  int rc;

  if (agg_map_find(&d->rt_names, n.p, n.n, &id)) {
    *out = (enum rt_kind)d->rt_class[id];
    return 0;
  }
  *out = rt_kind_of(n);
  if (d->rt_names.n >= RT_NAMES_MAX)
    return 0;
  rc = agg_map_intern(&d->rt_names, n.p, n.n, &id);
  if (rc < 0 || agg_grow(&d->rt_class, &d->rt_class_cap, id, 1) != 0)
    return TR_ENOMEM;
  d->rt_class[id] = (uint8_t)*out;
  return 0;
}

static int on_runtime(struct dec_file *d, const struct idx_event *ev)
{
  uint32_t lane, name = DEC_NONE;
  enum rt_kind kind;
  enum dec_cls cls;
  int rc;

  if ((rc = rt_kind(d, ev->name, &kind)) != 0)
    return rc;
  if (d->mode == DEC_CAPTURE && kind == RT_BEGIN_CAPTURE) {
    d->begins++;
    return window(d, DS_RT, ev, DR_WINOPEN, ev->ts_ns + ev->dur_ns, 0);
  }
  if (d->mode == DEC_CAPTURE && kind == RT_END_CAPTURE)
    return window(d, DS_RT, ev, DR_WINCLOSE, ev->ts_ns, 0);
  if (!(ev->has & IDX_HAS_CORR) || kind < RT_GRAPH)
    return 0;
  if (kind == RT_GRAPH) {
    if (d->mode != DEC_RUN)
      return 0;
    return (rc = dec_lane_of(d, ev, &lane)) != 0
               ? rc
               : put(d, DS_RT, ev, DR_GRAPH, lane,
                     ev->correlation & DEC_CORR_MASK, 0);
  }
  cls = kind == RT_KERNEL ? DEC_KERNEL
        : kind == RT_COPY ? DEC_COPY
                          : DEC_MEMSET;
  if ((rc = dec_lane_of(d, ev, &lane)) != 0)
    return rc;
  if (d->mode == DEC_CAPTURE && cls == DEC_KERNEL && ev->kernel.p != NULL &&
      (rc = dec_name(d->lib, ev->kernel.p, ev->kernel.n, &name)) != 0)
    return rc;
  return put(d, DS_RT, ev, DR_LAUNCH, lane, ev->correlation & DEC_CORR_MASK,
             (int64_t)name | (int64_t)cls << 32);
}

/* The stream a device record ran on, as a small lane number. */
static int stream_of(struct dec_file *d, const struct idx_event *ev,
                     uint32_t *lane)
{
  int64_t key[2] = { (ev->has & IDX_HAS_DEVICE) ? ev->device : ev->pid,
                     (ev->has & IDX_HAS_STREAM) ? ev->stream : ev->tid };
  int rc;

  if (d->last_stream.valid && d->last_stream.key[0] == key[0] &&
      d->last_stream.key[1] == key[1]) {
    *lane = d->last_stream.lane;
    return 0;
  }
  if ((rc = agg_map_intern(&d->stream_ids, key, sizeof(key), lane)) < 0)
    return rc;
  if (*lane >= (1u << 15))
    *lane = (1u << 15) - 1; /* a flood of streams shares the last lane */
  d->last_stream.valid = 1;
  memcpy(d->last_stream.key, key, sizeof(key));
  d->last_stream.lane = *lane;
  return 0;
}

/* dec_name() of a device record's name of hash key, from the names met
 * lately when there (a name past the cap is never kept there). */
static int device_name(struct dec_lib *lib, struct idx_str s, uint64_t key,
                       uint32_t *id)
{
  int rc;

  if (agg_seen_id(lib->dev_seen, key, id))
    return 0;
  if ((rc = dec_name(lib, s.p, s.n, id)) == 0 && *id != DEC_NONE)
    agg_seen_put(lib->dev_seen, key, *id, 0);
  return rc;
}

static int on_device(struct dec_file *d, const struct idx_event *ev,
                     enum dec_cls cls, uint64_t key)
{
  uint32_t name, stream;
  int64_t corr = (ev->has & IDX_HAS_CORR) ? ev->correlation & DEC_CORR_MASK
                                          : DEC_CORR_MASK;
  int rc;

  if ((rc = device_name(d->lib, ev->name, key, &name)) != 0 ||
      (rc = stream_of(d, ev, &stream)) != 0)
    return rc;
  return put(d, DS_DEV, ev, DR_DEVICE | (uint32_t)cls << 8, name,
             (int64_t)stream << 48 | corr, ev->dur_ns);
}

/* torch.utils.checkpoint's recompute_fn (TraceLens's detect_recompute):
 * the activations it recomputes run under it. */
static int recompute(struct idx_str s)
{
  return starts(s, "torch/utils/checkpoint.py") && has_word(s, "recompute_fn");
}

/* hs_py_source() of a frame name, once per distinct name. Past the cap
 * of names (4 x max_names) a new name is no source frame: the frames kept
 * on the stacks, and so the names, stay bounded as kernel names are.
 * *keep: the answer is the map's, the same each time the name comes. */
static int py_source(struct dec_lib *lib, struct idx_str s, int *keep)
{
  uint32_t id;
  int kind;

  *keep = 0;
  if (agg_map_find(&lib->py_names, s.p, s.n, &id)) {
    *keep = id < lib->py_kind_cap && lib->py_kind[id];
    return *keep ? lib->py_kind[id] - 1 : 0;
  }
  if (lib->py_names.n >= 4 * lib->max_names) {
    lib->py_folded++;
    return 0;
  }
  kind = hs_py_source(s.p, s.n);
  if (agg_map_intern(&lib->py_names, s.p, s.n, &id) < 0 ||
      agg_grow(&lib->py_kind, &lib->py_kind_cap, id, 1) != 0)
    return 0;
  lib->py_kind[id] = (uint8_t)(kind + 1);
  *keep = 1;
  return kind;
}

/* A python_function: a module's frame, a checkpoint's recompute, a source
 * line or none (nine in ten events, most of them none), from the
 * functions met lately (key: the hash of its name) when there. */
static int on_python(struct dec_file *d, const struct idx_event *ev,
                     uint64_t key)
{
  const struct agg_seen *seen = agg_seen_find(d->lib->py_seen, key);
  struct idx_str s = ev->name;
  enum hs_kind kind;
  uint32_t name;
  int keep = 1, rc;

  if (seen != NULL)
    return seen->aux == 0
               ? 0
               : frame_put(d, ev, (enum hs_kind)seen->aux, seen->id, NULL, 0);
  if (s.n > MOD_PFX_N && s.p[0] == 'n' && starts(s, MOD_PFX)) {
    kind = HS_MODULE;
    s.p += MOD_PFX_N;
    s.n -= MOD_PFX_N;
  } else if (recompute(s)) {
    kind = HS_RECOMP;
  } else if ((kind = (enum hs_kind)py_source(d->lib, s, &keep)) == 0) {
    if (keep)
      agg_seen_put(d->lib->py_seen, key, HS_NO_NAME, 0);
    return 0;
  }
  if ((rc = hs_trie_name(&d->lib->trie, kind, s.p, s.n, &name)) != 0)
    return rc;
  agg_seen_put(d->lib->py_seen, key, name, kind);
  return frame_put(d, ev, kind, name, s.p, s.n);
}

int dec_event(struct dec_file *d, const struct idx_event *ev,
              enum idx_class cls, uint64_t hash)
{
  if (ev->ph != 'X' || !(ev->has & IDX_HAS_TS) || !(ev->has & IDX_HAS_DUR) ||
      ev->dur_ns < 0)
    return 0;
  if (hash == 0)
    hash = agg_name_hash(ev->name);
  switch (cls) {
  case IDX_CLASS_PYTHON: return on_python(d, ev, hash);
  case IDX_CLASS_CPU_OP: return on_op(d, ev, hash);
  case IDX_CLASS_LABEL_CPU:
    return str_is(ev->cat, "user_annotation") ? on_annotation(d, ev) : 0;
  case IDX_CLASS_RUNTIME: return on_runtime(d, ev);
  case IDX_CLASS_KERNEL:
    return d->mode == DEC_RUN ? on_device(d, ev, DEC_KERNEL, hash) : 0;
  case IDX_CLASS_COPY:
    return d->mode == DEC_RUN ? on_device(d, ev, DEC_COPY, hash) : 0;
  case IDX_CLASS_MEMSET:
    return d->mode == DEC_RUN ? on_device(d, ev, DEC_MEMSET, hash) : 0;
  default: return 0;
  }
}
