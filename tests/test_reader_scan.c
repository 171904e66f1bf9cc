/*
 * Stage 1 of the reader (index/read/read_int.h): every kernel the CPU runs
 * gives the masks of a byte-at-a-time reference, whole and in pieces with the
 * carry between them, on real traces and on random text made of the bytes that
 * matter (quotes, backslashes, brackets, high bytes).
 */
#include <stdlib.h>

#include "check.h"
#include "index/read/read_int.h"
#include "test_reader.h"

/* The masks by definition, one byte at a time; depth[i]: the nesting
 * before byte i (depth has len + 1 entries). */
static void reference(const char *text, size_t len, struct idx_scan_map *m,
                      int64_t *depth)
{
  int64_t d = 0;
  int in_str = 0, esc = 0, q, ws, op, alpha, scalar, sep, ok;
  int prev_scalar = 0, prev_close = 0, prev_value = 0; /* byte i - 1 */
  unsigned char c;
  size_t i, b;

  m->nblocks = (len + 63) / 64;
  m->tok = calloc(m->nblocks + 1, 8);
  m->dirty = calloc(m->nblocks / 64 + 1, 8);
  CHECK(m->tok != NULL && m->dirty != NULL);
  for (i = 0; i < len; i++) {
    c = (unsigned char)text[i];
    b = i / 64;
    depth[i] = d;
    q = c == '"' && !esc;
    esc = !esc && c == '\\';
    in_str ^= q;
    ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    op = c != 0 && strchr(",:[]{}", c) != NULL;
    alpha = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
            (c >= 'A' && c <= 'Z') || c == '+' || c == '-' || c == '.';
    scalar = !in_str && !ws && !op && !q;
    sep = !in_str && (c == ':' || c == ',');
    ok = (c == ':' && prev_close) || (c == ',' && prev_value);
    if (q || (op && !in_str && !sep) || (scalar && !prev_scalar))
      m->tok[b] |= 1ull << (i % 64);
    if (c == '\\' || c >= 0x80 || (scalar && !alpha) || (sep && !ok))
      m->dirty[b / 64] |= 1ull << (b % 64);
    if (!in_str && (c == '{' || c == '['))
      d++;
    if (!in_str && (c == '}' || c == ']'))
      d--;
    prev_scalar = scalar;
    prev_close = q && !in_str;
    prev_value = prev_close || scalar || (!in_str && (c == '}' || c == ']'));
  }
}

/* Bit b of a dirty bitmap. */
static int dirty_at(const uint64_t *dirty, size_t b)
{
  return (int)((dirty[b / 64] >> (b % 64)) & 1);
}

/* Scans text in pieces of `piece` bytes (0: whole), with the carry. The
 * dirty bits must match; the tokens wherever the parser may use them: in
 * a clean block after a clean block (a kernel may count a bad byte as an
 * operator, which moves where the next number starts). */
static void compare(const char *text, size_t len, size_t piece)
{
  struct idx_scan_map want = { 0 }, got = { 0 };
  struct idx_scan_carry carry = { 0 };
  int64_t *depth = malloc((len + 1) * sizeof(*depth));
  size_t off = 0, n, b;

  CHECK(depth != NULL);
  reference(text, len, &want, depth);
  if (piece == 0)
    piece = len;
  for (; off < len; off += n) {
    n = len - off < piece ? len - off : piece;
    CHECK_INT(idx_scan_run(&got, &carry, text + off, n), 0);
    CHECK_INT(got.nblocks, (n + 63) / 64);
    CHECK_INT(got.depth, depth[off]);
    for (b = 0; b < got.nblocks; b++) {
      size_t wb = off / 64 + b; /* pieces are multiples of 64 */
      int used = !dirty_at(want.dirty, wb) &&
                 (wb == 0 || !dirty_at(want.dirty, wb - 1));

      if ((used && got.tok[b] != want.tok[wb]) ||
          dirty_at(got.dirty, b) != dirty_at(want.dirty, wb))
        fprintf(stderr, "%s: piece %zu block %zu differs\n", idx_scan_name(),
                piece, wb);
      if (used)
        CHECK_INT(got.tok[b], want.tok[wb]);
      CHECK_INT(dirty_at(got.dirty, b), dirty_at(want.dirty, wb));
    }
  }
  idx_scan_map_free(&got);
  free(depth);
  free(want.tok);
  free(want.dirty);
}

static const char *const kernels[] = { "avx512", "avx2", "sse2", "generic" };

/* Random text of the bytes stage 1 cares about. */
static void random_text(char *t, size_t n, unsigned seed)
{
  static const char alphabet[] =
      "\"\"\"\\\\\\{}[]:,  \n\t\r0123abz+-.@_\x01\x7f"
      "\x0c\x1a\xc3\xa9\xff";
  size_t i;

  for (i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    t[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
  }
}

void scan_kernels_match(void)
{
  static const size_t pieces[] = { 0, 64, 128, 4096 };
  size_t k, i, n, runs = 0;
  char *text = malloc(20000), path[1024];
  const char *best = idx_scan_name();
  unsigned seed;

  CHECK(text != NULL);
  for (k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
    if (idx_scan_select(kernels[k]) != 0)
      continue; /* the CPU lacks it */
    runs++;
    for (seed = 1; seed < 300; seed++) {
      n = 1 + seed * 61 % 19999;
      random_text(text, n, seed);
      for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
        compare(text, n, pieces[i]);
    }
    {
      char *json = trace_text("tracelens__mi300_resnet_act_checkpoint.json.gz",
                              path, sizeof(path), &n);

      compare(json, n, 0);
      compare(json, n, 1u << 20);
      free(json);
    }
  }
  CHECK(runs >= 1);
  CHECK(idx_scan_select("mmx") != 0);
  CHECK_INT(idx_scan_select(best), 0);
  free(text);
}
