/*
 * Stage 1 (read_int.h): the portable kernel, the kernel selection, and the
 * driver that runs a kernel over whole blocks and finishes the last,
 * partial block here.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/tr.h"
#include "index/read/read_int.h"

/* Byte classes of the portable kernel, one bit each. */
enum {
  B_QUOTE = 1,
  B_BS = 2,
  B_WS = 4,
  B_OP = 8,   /* , : [ ] { } */
  B_BAD = 16, /* none of the others, nor + - . 0-9 A-Z a-z */
  B_HB = 32   /* >= 0x80, or a backslash */
};

static uint8_t classes[256];

static void init_classes(void)
{
  const char *s;
  int c;

  for (c = 0; c < 256; c++)
    classes[c] = c >= 0x80 ? B_HB | B_BAD : B_BAD;
  classes['"'] = B_QUOTE;
  classes['\\'] = B_BS | B_HB | B_BAD;
  classes[' '] = classes['\t'] = classes['\n'] = classes['\r'] = B_WS;
  for (s = ",:[]{}"; *s; s++)
    classes[(unsigned char)*s] = B_OP;
  for (s = "+-."; *s; s++)
    classes[(unsigned char)*s] = 0;
  for (c = '0'; c <= '9'; c++)
    classes[c] = 0;
  for (c = 'A'; c <= 'Z'; c++)
    classes[c] = classes[c + 32] = 0;
}

/* Bit 0 of each of the 8 bytes of x (each 0 or 1) gathered into bits
 * 0..7. */
static uint64_t gather8(uint64_t x)
{
  return (x * 0x0102040810204080ull) >> 56;
}

/* The raw masks of the 64 bytes at p, eight bytes at a time: their class
 * bytes side by side in a word, one class bit at a time gathered. */
static void raw_generic(const uint8_t *p, struct idx_scan_raw *r)
{
  const uint64_t ones = 0x0101010101010101ull;
  uint64_t w, x;
  unsigned i, k, sh;

  memset(r, 0, sizeof(*r));
  for (i = 0; i < 64; i += 8) {
    for (w = 0, k = 0; k < 8; k++)
      w |= (uint64_t)classes[p[i + k]] << (8 * k);
    memcpy(&x, p + i, 8);
    sh = i;
    r->b0 |= gather8(x & ones) << sh;
    r->b1 |= gather8((x >> 1) & ones) << sh;
    r->quote |= gather8(w & ones) << sh;
    r->bs |= gather8((w >> 1) & ones) << sh;
    r->ws |= gather8((w >> 2) & ones) << sh;
    r->op |= gather8((w >> 3) & ones) << sh;
    r->bad |= gather8((w >> 4) & ones) << sh;
    r->hb |= gather8((w >> 5) & ones) << sh;
  }
}

void idx_scan_generic(struct idx_scan_map *m, size_t b0,
                      struct idx_scan_carry *c, const uint8_t *p,
                      size_t nblocks)
{
  struct idx_scan_carry cc;
  struct idx_scan_raw r;
  size_t b;

  cc = *c; /* in registers: m's stores cannot alias it */
  for (b = 0; b < nblocks; b++, p += 64) {
    raw_generic(p, &r);
    idx_scan_finish(m, b0 + b, &cc, &r, 64, idx_scan_pxor_shift);
  }
  *c = cc;
}

typedef void (*kernel_fn)(struct idx_scan_map *m, size_t b0,
                          struct idx_scan_carry *c, const uint8_t *p,
                          size_t nblocks);

struct kernel {
  const char *name;
  kernel_fn run;   /* NULL: no scan */
  int (*ok)(void); /* the CPU can run it */
  int wide;        /* AVX2 at least: the layouts' strings 32 bytes a time */
};

static int always(void)
{
  return 1;
}

#if defined(__x86_64__)
static int has_sse2(void)
{
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse2");
}

static int has_avx2(void)
{
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul");
}

static int has_avx512(void)
{
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("pclmul");
}
#endif

/* Best first; "none" last, never picked on its own. */
static const struct kernel kernels[] = {
#if defined(__x86_64__)
  { "avx512", idx_scan_avx512, has_avx512, 1 },
  { "avx2", idx_scan_avx2, has_avx2, 1 },
  { "sse2", idx_scan_sse2, has_sse2, 0 },
#endif
  { "generic", idx_scan_generic, always, 0 },
  { "none", NULL, always, 0 },
};

#define NKERNELS (sizeof(kernels) / sizeof(kernels[0]))

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct kernel *chosen;

static const struct kernel *find(const char *name)
{
  size_t i;

  for (i = 0; i < NKERNELS; i++)
    if (strcmp(kernels[i].name, name) == 0 && kernels[i].ok())
      return &kernels[i];
  return NULL;
}

/* TRACED_SCAN when it names a kernel the CPU runs, else the best. */
static void choose(void)
{
  const char *env = getenv("TRACED_SCAN");
  size_t i;

  init_classes();
  if (env != NULL && (chosen = find(env)) != NULL)
    return;
  for (i = 0; chosen == NULL; i++)
    if (kernels[i].run != NULL && kernels[i].ok())
      chosen = &kernels[i];
}

int idx_scan_select(const char *name)
{
  const struct kernel *k;

  pthread_once(&once, choose);
  k = find(name);
  if (k == NULL)
    return TR_EINVAL;
  chosen = k;
  return 0;
}

const char *idx_scan_name(void)
{
  pthread_once(&once, choose);
  return chosen->name;
}

int idx_scan_enabled(void)
{
  pthread_once(&once, choose);
  return chosen->run != NULL;
}

int idx_scan_wide(void)
{
  pthread_once(&once, choose);
  return chosen->wide;
}

/* Room for nblocks blocks. 0 or TR_ENOMEM. */
static int reserve(struct idx_scan_map *m, size_t nblocks)
{
  size_t cap = m->cap ? m->cap : 64, words;
  uint64_t *tok, *dirty;

  if (nblocks <= m->cap && m->tok != NULL)
    return 0;
  while (cap < nblocks)
    cap *= 2;
  words = (cap + 63) / 64;
  tok = realloc(m->tok, cap * sizeof(*tok));
  if (tok != NULL)
    m->tok = tok;
  dirty = realloc(m->dirty, words * sizeof(*dirty));
  if (dirty != NULL)
    m->dirty = dirty;
  if (tok == NULL || dirty == NULL)
    return TR_ENOMEM;
  m->cap = cap;
  return 0;
}

int idx_scan_run(struct idx_scan_map *m, struct idx_scan_carry *c,
                 const char *text, size_t len)
{
  size_t whole = len / 64, rest = len % 64;
  uint8_t tail[64];
  struct idx_scan_raw r;

  pthread_once(&once, choose);
  if (reserve(m, whole + (rest != 0)) != 0)
    return TR_ENOMEM;
  m->base = text;
  m->len = len;
  m->depth = c->depth;
  m->nblocks = whole + (rest != 0);
  m->any_dirty = 0;
  memset(m->dirty, 0, (m->nblocks + 63) / 64 * sizeof(*m->dirty));
  if (whole > 0)
    (chosen->run != NULL ? chosen->run : idx_scan_generic)(
        m, 0, c, (const uint8_t *)text, whole);
  if (rest != 0) {
    memset(tail, ' ', sizeof(tail));
    memcpy(tail, text + whole * 64, rest);
    raw_generic(tail, &r);
    idx_scan_finish(m, whole, c, &r, (unsigned)rest, idx_scan_pxor_shift);
  }
  return 0;
}

void idx_scan_map_free(struct idx_scan_map *m)
{
  if (m == NULL)
    return;
  free(m->tok);
  free(m->dirty);
  memset(m, 0, sizeof(*m));
}
