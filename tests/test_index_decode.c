/*
 * The decode unit's parts alone: host stacks (index/host/hoststack.c: nesting,
 * equal starts, frames that overlap without nesting, the cap on stacks,
 * op instances), replay matching (index/decode/dec_match.c: exact, on several
 * streams, short placed one way only, short with two placements,
 * copies and memsets), capture trace names and execution_details.json
 * (index/decode/dec_files.c), the walk's ring of launches
 * (index/decode/dec_ring.c).
 */
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"
#include "tests/check.h"

static uint32_t name(struct hs_trie *t, enum hs_kind k, const char *s)
{
  uint32_t id;

  CHECK_INT(hs_trie_name(t, k, s, strlen(s), &id), 0);
  return id;
}

/* The frame texts of node's stack, outermost first, joined by '/'. */
static const char *path(const struct hs_trie *t, uint32_t node)
{
  static char buf[512];
  const char *parts[64];
  size_t n = 0, len = 0, lens[64];

  for (; node != HS_ROOT; node = hs_trie_node(t, node)->parent, n++)
    parts[n] = hs_trie_text(t, hs_trie_node(t, node)->name, &lens[n]);
  buf[0] = '\0';
  while (n-- > 0)
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%.*s",
                            len ? "/" : "", (int)lens[n], parts[n]);
  return buf;
}

/* A trie and one lane of a fresh set of lanes, the lane named as
 * hs_lanes_id() names it. */
struct lane_fx {
  struct hs_trie t;
  struct hs_lanes l;
  uint32_t lane;
};

static void lane_open(struct lane_fx *f, int64_t pid, int64_t tid,
                      const char *ps, const char *ts)
{
  CHECK_INT(hs_trie_init(&f->t, 0), 0);
  CHECK_INT(hs_lanes_init(&f->l), 0);
  CHECK_INT(hs_lanes_id(&f->l, pid, tid, ps, ps ? strlen(ps) : 0, ts,
                        ts ? strlen(ts) : 0, &f->lane),
            0);
}

static void lane_close(struct lane_fx *f)
{
  hs_lanes_free(&f->l);
  hs_trie_free(&f->t);
}

static void push(struct lane_fx *f, int64_t start, int64_t end, uint32_t node)
{
  CHECK_INT(hs_lanes_push(&f->l, &f->t, f->lane, start, end, node, 0), 0);
}

/* The lane's stack now, as path() writes it. */
static const char *top(struct lane_fx *f)
{
  return path(&f->t, hs_lanes_top(&f->l, f->lane));
}

static void hs_nesting(void)
{
  struct lane_fx f;
  uint32_t mod, op, inner;

  lane_open(&f, 7, 8, NULL, NULL);
  mod = name(&f.t, HS_MODULE, "Layer_0");
  op = name(&f.t, HS_OP, "aten::linear");
  inner = name(&f.t, HS_OP, "aten::mm");
  /* Pushed in start order; the same start: the longer is outside. */
  push(&f, 100, 200, mod);
  push(&f, 110, 150, inner);
  push(&f, 110, 190, op);
  CHECK_STR(top(&f), "Layer_0/aten::linear/aten::mm");
  CHECK_INT(hs_lanes_first_launch(&f.l, &f.t, f.lane, NULL), 1);
  CHECK_INT(hs_lanes_first_launch(&f.l, &f.t, f.lane, NULL), 0);
  hs_lanes_advance(&f.l, &f.t, f.lane, 150); /* the end is outside */
  CHECK_STR(top(&f), "Layer_0/aten::linear");
  CHECK_INT(hs_lanes_first_launch(&f.l, &f.t, f.lane, NULL), 1);
  hs_lanes_advance(&f.l, &f.t, f.lane, 200);
  CHECK_INT(hs_lanes_top(&f.l, f.lane), HS_ROOT);
  lane_close(&f);
}

static void hs_same_span_and_overlap(void)
{
  struct lane_fx f;
  uint32_t a, b, m;

  lane_open(&f, 0, 0, "CPU functions", "main");
  a = name(&f.t, HS_OP, "b_op");
  b = name(&f.t, HS_OP, "a_op");
  m = name(&f.t, HS_MODULE, "Mlp_3");
  /* One span: the module outside the ops, then byte order. */
  push(&f, 10, 20, a);
  push(&f, 10, 20, m);
  push(&f, 10, 20, b);
  CHECK_STR(top(&f), "Mlp_3/a_op/b_op");
  hs_lanes_advance(&f.l, &f.t, f.lane, 20);
  /* Overlap without nesting: [30, 50) then [40, 60): at 55 only the
   * second is open, though it sat above the first. */
  push(&f, 30, 50, a);
  push(&f, 40, 60, b);
  CHECK_STR(top(&f), "b_op/a_op");
  hs_lanes_advance(&f.l, &f.t, f.lane, 55);
  CHECK_STR(top(&f), "a_op");
  lane_close(&f);
}

static void hs_trie_cap(void)
{
  struct hs_trie t;
  uint32_t n1, n2, n3, x, y;

  CHECK_INT(hs_trie_init(&t, 3), 0); /* the root and two stacks */
  x = name(&t, HS_OP, "x");
  y = name(&t, HS_OP, "y");
  CHECK_INT(hs_trie_child(&t, HS_ROOT, x, &n1), 0);
  CHECK_INT(hs_trie_child(&t, n1, y, &n2), 0);
  CHECK_INT(hs_trie_child(&t, n2, x, &n3), 0);
  CHECK_INT(n3, n2); /* beyond the cap: the frame adds no stack */
  CHECK_INT(t.folded, 1);
  CHECK_INT(hs_trie_child(&t, HS_ROOT, x, &n3), 0);
  CHECK_INT(n3, n1); /* a known stack is still found */
  hs_trie_free(&t);
}

/* ---- matching ---- */

struct lib_fx {
  struct dec_lib *lib;
  uint32_t a, b, c;
};

/* A library of one graph whose launches are the kernel names of spec
 * ("abca": a, b, c, a; 'm' a memcpy launch). */
static uint32_t graph(struct lib_fx *f, const char *spec)
{
  struct dec_lib *lib = f->lib;
  struct dec_graph *g;
  size_t n = strlen(spec);

  CHECK_INT(agg_grow(&lib->graphs, &lib->graphs_cap, lib->ngraphs,
                     sizeof(*g)),
            0);
  CHECK_INT(agg_grow(&lib->launches, &lib->launches_cap,
                     lib->nlaunches + n, sizeof(*lib->launches)),
            0);
  g = &lib->graphs[lib->ngraphs];
  g->first = (uint32_t)lib->nlaunches;
  g->n = (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    struct dec_launch *l = &lib->launches[lib->nlaunches++];

    l->node = (uint32_t)(100 + i);
    l->cls = spec[i] == 'm' ? DEC_COPY : DEC_KERNEL;
    l->name = spec[i] == 'a' ? f->a : spec[i] == 'b' ? f->b : f->c;
  }
  lib->nfiles = 1;
  return (uint32_t)lib->ngraphs++;
}

/* Replay records of spec, on the streams of `streams` ("0101"). */
static size_t records(struct lib_fx *f, const char *spec, const char *streams,
                      struct dec_rk *k)
{
  size_t n = strlen(spec);

  for (size_t i = 0; i < n; i++) {
    memset(&k[i], 0, sizeof(k[i]));
    k[i].cls = spec[i] == 'm' ? DEC_COPY : DEC_KERNEL;
    k[i].name = spec[i] == 'a' ? f->a : spec[i] == 'b' ? f->b : f->c;
    k[i].stream = streams ? (uint32_t)(streams[i] - '0') : 0;
    k[i].start = (int64_t)i * 10;
    k[i].dur = 5;
  }
  return n;
}

static void match_cases(void)
{
  struct lib_fx f;
  struct dec_rk k[16];
  uint32_t at[16], g1, g2, cand[2];
  struct dec_match m = { 0, 0, 0, at };
  size_t n;

  CHECK_INT(dec_lib_new(0, NULL, &f.lib), 0); /* nothing spills */
  CHECK_INT(dec_name(f.lib, "a", 1, &f.a), 0);
  CHECK_INT(dec_name(f.lib, "b", 1, &f.b), 0);
  CHECK_INT(dec_name(f.lib, "c", 1, &f.c), 0);
  g1 = graph(&f, "abcma");
  g2 = graph(&f, "aab");
  /* Exactly: the second candidate, the first has another count. */
  cand[0] = g2;
  cand[1] = g1;
  n = records(&f, "abcma", NULL, k);
  dec_match_replay(f.lib, cand, 2, k, n, &m);
  CHECK_INT(m.graph, g1);
  CHECK_INT(m.is_short, 0);
  CHECK_INT(at[3], 3);
  /* Several streams: time order interleaves them; each launch takes the
   * head that fits it. */
  n = records(&f, "acbma", "01010", k);
  dec_match_replay(f.lib, &g1, 1, k, n, &m);
  CHECK_INT(m.graph, g1);
  CHECK_INT(at[1], 2); /* the c at index 1 is the graph's third launch */
  CHECK_INT(at[2], 1);
  /* Short, one placement: abca without its m. */
  n = records(&f, "abca", NULL, k);
  dec_match_replay(f.lib, &g1, 1, k, n, &m);
  CHECK_INT(m.graph, g1);
  CHECK_INT(m.is_short, 1);
  CHECK_INT(at[3], 4);
  /* Short, two placements: aab without one a. */
  n = records(&f, "ab", NULL, k);
  dec_match_replay(f.lib, &g2, 1, k, n, &m);
  CHECK_INT(m.graph, DEC_NONE);
  CHECK_INT(m.reason, R_COUNT);
  /* Same count, other names. */
  n = records(&f, "abb", NULL, k);
  dec_match_replay(f.lib, &g2, 1, k, n, &m);
  CHECK_INT(m.graph, DEC_NONE);
  CHECK_INT(m.reason, R_NAMES);
  /* No candidate. */
  dec_match_replay(f.lib, cand, 0, k, n, &m);
  CHECK_INT(m.reason, R_NO_GRAPH);
  f.lib->nfiles = 0; /* graph() counted a file it did not add */
  dec_match_replay(f.lib, cand, 0, k, n, &m);
  CHECK_INT(m.reason, R_NO_CAPTURE);
  dec_lib_free(f.lib);
}

/* ---- capture trace names ---- */

static int count_entries(void *ud, const char *file, int64_t bs,
                         enum idx_graph_mode mode)
{
  int *n = ud;

  CHECK(strchr(file, '/') == NULL);
  CHECK(bs >= 0);
  CHECK(mode == IDX_GRAPH_FULL || mode == IDX_GRAPH_PIECEWISE);
  (*n)++;
  return 0;
}

static void capture_names(void)
{
  static const char details[] =
      "[{\"file\":\"bs_32_rank0.json.gz\",\"batch_size\":32,\"mode\":\"FULL\"},"
      "{\"file\":\"../x\",\"batch_size\":8,\"mode\":\"FULL\"},"
      "{\"file\":\"p.json\",\"batch_size\":8,\"mode\":\"PIECEWISE\"},"
      "{\"file\":\"q.json\",\"batch_size\":\"8\",\"mode\":\"FULL\"},"
      "{\"file\":\"r.json\",\"batch_size\":8,\"mode\":\"full\"}]";
  struct tr_err err = { 0 };
  int64_t bs, q, rank;
  int n = 0;

  CHECK_INT(idx_capture_name("bs_128_q_4_rank3.json.gz", &bs, &q, &rank), 1);
  CHECK_INT(bs, 128);
  CHECK_INT(q, 4);
  CHECK_INT(rank, 3);
  CHECK_INT(idx_capture_name("bs_8_rank0.json", &bs, &q, &rank), 1);
  CHECK_INT(q, -1);
  CHECK_INT(idx_capture_name("bs_8_rank0.pt.trace.json.gz", &bs, &q, &rank),
            0);
  CHECK_INT(idx_capture_name("bs__q_1_rank0.json.gz", &bs, &q, &rank), 0);
  CHECK_INT(idx_capture_name("x_bs_8_rank0.json.gz", &bs, &q, &rank), 0);
  CHECK_INT(idx_capture_details(details, sizeof(details) - 1, count_entries,
                                &n, &err),
            0);
  CHECK_INT(n, 2); /* a path, a text batch size, a lower-case mode: out */
  CHECK(idx_capture_details("{}", 2, count_entries, &n, &err) == TR_EINVAL);
}

/* dec_ring.c against a list of every launch in arrival order, used as
 * the walk uses the ring: a correlation seen again unindexes the older,
 * a full ring's oldest is unindexed before the push drops it. Few
 * correlations, so they repeat and collide; more pushes than places, so
 * the ring wraps, and its index grows from 16 slots to 128. */
#define RING_MAX  64
#define RING_OPS  5000
#define RING_KEYS 97

struct ring_ref {
  int64_t corr;
  int val, indexed;
};

static const int *ref_get(const struct ring_ref *ref, size_t n, int64_t c)
{
  for (size_t i = n; i-- > 0;)
    if (ref[i].indexed && ref[i].corr == c)
      return &ref[i].val;
  return NULL;
}

static void ref_unindex(struct ring_ref *ref, size_t n, int64_t c)
{
  for (size_t i = n; i-- > 0;)
    if (ref[i].indexed && ref[i].corr == c)
      ref[i].indexed = 0;
}

static void ring_against_list(void)
{
  static struct ring_ref ref[RING_OPS];
  struct dec_ring r;
  const int64_t *oldest;
  uint32_t x = 12345;
  size_t n = 0;
  int64_t c;

  CHECK_INT(dec_ring_init(&r, sizeof(int), RING_MAX), 0);
  for (int op = 0; op < RING_OPS; op++) {
    x = x * 1103515245u + 12345u;
    c = (int64_t)((x >> 8) % RING_KEYS) << 20;
    dec_ring_unindex(&r, c);
    ref_unindex(ref, n, c);
    CHECK(((oldest = dec_ring_oldest(&r)) != NULL) == (n >= RING_MAX));
    if (oldest != NULL) {
      CHECK(*oldest == ref[n - RING_MAX].corr);
      ref_unindex(ref, n, *oldest);
      dec_ring_unindex(&r, *oldest);
    }
    ref[n] = (struct ring_ref){ c, op, 1 };
    CHECK_INT(dec_ring_push(&r, c, &op), 0);
    n++;
    for (int64_t k = 0; k < RING_KEYS; k++) {
      const int *want = ref_get(ref, n, k << 20),
                *got = dec_ring_get(&r, k << 20);

      CHECK((want == NULL) == (got == NULL));
      if (want != NULL && got != NULL)
        CHECK_INT(*got, *want);
    }
  }
  CHECK(r.cap == 128);
  dec_ring_free(&r);
}

int main(void)
{
  RUN(hs_nesting);
  RUN(hs_same_span_and_overlap);
  RUN(hs_trie_cap);
  RUN(match_cases);
  RUN(capture_names);
  RUN(ring_against_list);
  return 0;
}
