/*
 * A rank's slice figures (slice.h): recorded beside the indexing,
 * and their bytes in the points file, little-endian, every count checked
 * on decode:
 *
 *   format u32, step_side u32, found_complete u32, delivered u64,
 *   max_pid i64, array_end i64, npieces u64, nmeta u64, nfound u64,
 *   text_len u64, found_len u64, nblocks u64 (84 bytes)
 *   pieces: off u64, elems u64, lo i64, hi i64, flags u32 (36 bytes)
 *   metas: off u64, elems u64, at u64, len u32 (28 bytes)
 *   the metas' text (text_len bytes)
 *   the findings (found_len bytes), each packed, as a trace has a hundred
 *   thousand idle stretches a GB: a byte what | cause << 1; its start
 *   less the last one's, its length and its between_ns, each a zigzag
 *   LEB128 varint; a step then its kind's and its label's text, each
 *   after its length as a varint.
 *   the findings' index: a block per SLICE_FOUND_BLOCK findings, at u64,
 *   last i64, lo i64, hi i64 (32 bytes).
 */
#include <stdlib.h>
#include <string.h>

#include "index/slice/slice.h"

#define HEAD_BYTES  84
#define PIECE_BYTES 36
#define META_BYTES  28
#define BLOCK_BYTES 32
#define VARINT_MAX  10 /* bytes of a 64-bit LEB128 varint */
#define WB_BYTES    (64u << 10) /* findings written at a time */

void slice_figs_init(struct slice_figs *f, struct idx_agg *agg)
{
  f->max_pid = INT64_MIN;
  f->array_end = -1;
  f->found_complete = 1;
  f->agg = agg;
}

void slice_figs_free(struct slice_figs *f)
{
  free(f->piece);
  free(f->meta);
  free(f->block);
  if (!f->borrowed) {
    free(f->found);
    free(f->text);
  }
  free(f->wb);
  memset(f, 0, sizeof(*f));
}

/* ---- recording ---- */

/* Appends n bytes of text; its offset in *at. 0 or TR_ENOMEM. */
static int add_text(struct slice_figs *f, const char *p, size_t n, uint64_t *at)
{
  if (n > 0 && agg_grow(&f->text, &f->text_cap, f->text_len + n - 1, 1) != 0)
    return TR_ENOMEM;
  memcpy(f->text + f->text_len, p, n);
  *at = f->text_len;
  f->text_len += n;
  return 0;
}

/* A new piece begins at the reader's last mark. */
static void new_piece(struct slice_figs *f, const struct idx_doc *doc)
{
  struct slice_piece *p;

  f->seen_marks = doc->marks;
  if (f->npieces == SLICE_FIGS_PIECES_MAX)
    return; /* the last piece grows instead */
  if (agg_grow(&f->piece, &f->pieces_cap, f->npieces, sizeof(*f->piece)) !=
      0) {
    f->broken = 1;
    return;
  }
  p = &f->piece[f->npieces++];
  *p = (struct slice_piece){ doc->mark_off, doc->mark_events, INT64_MAX,
                             INT64_MIN, 0 };
}

/* Stores the M event's text with its place: 1, or 0 when it cannot (its
 * text is not in the chunk, or past the limit). */
static int keep_meta(struct slice_figs *f, const struct idx_doc *doc,
                     const struct idx_event *ev)
{
  const char *p = ev->raw.p;
  struct slice_meta *m;

  if (p == NULL || doc->chunk == NULL || p < doc->chunk ||
      p + ev->raw.n > doc->chunk + doc->chunk_len ||
      f->text_len + ev->raw.n > SLICE_FIGS_META_MAX)
    return 0;
  if (agg_grow(&f->meta, &f->meta_cap, f->nmeta, sizeof(*f->meta)) != 0) {
    f->broken = 1;
    return 0;
  }
  m = &f->meta[f->nmeta];
  m->off = doc->json_bytes + (uint64_t)(p - doc->chunk);
  m->elems = doc->events - 1;
  m->len = (uint32_t)ev->raw.n;
  if (add_text(f, p, ev->raw.n, &m->at) != 0) {
    f->broken = 1;
    return 0;
  }
  f->nmeta++;
  return 1;
}

void slice_figs_other(struct slice_figs *f, const struct idx_doc *doc,
                      const struct idx_event *ev)
{
  struct slice_piece *p;

  if (doc->marks != f->seen_marks)
    new_piece(f, doc);
  if (f->npieces == 0)
    return; /* before the first piece: the head, which is always read */
  p = &f->piece[f->npieces - 1];
  if (ev->ph != 'M')
    slice_piece_widen(p, ev);
  else if (!keep_meta(f, doc, ev))
    p->flags |= SLICE_PIECE_READ;
}

/* A step kind's name longer than this is not stored: the findings are
 * then incomplete, and a slice with findings reads the whole file. */
#define KIND_TEXT 1024

/* A finding's bytes before they are written: its head, and for a step
 * two texts of at most KIND_TEXT and AGG_LABEL_TEXT bytes. */
struct found_buf {
  uint8_t b[1 + 5 * VARINT_MAX + KIND_TEXT + AGG_LABEL_TEXT];
  size_t n;
};

static void put_varint(struct found_buf *o, uint64_t v)
{
  while (v >= 0x80) {
    o->b[o->n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  o->b[o->n++] = (uint8_t)v;
}

static void put_text(struct found_buf *o, const char *p, size_t n)
{
  put_varint(o, n);
  memcpy(o->b + o->n, p, n);
  o->n += n;
}

/* Writes the findings held to out: 0, or -1 with the figures broken. */
static int flush(struct slice_figs *f)
{
  if (f->wb_n > 0 && fwrite(f->wb, 1, f->wb_n, f->out) != f->wb_n)
    f->broken = 1;
  f->wb_n = 0;
  return f->broken ? -1 : 0;
}

void slice_found_of(struct idx_agg *a, const struct agg_finding *fd,
                    char *label, struct slice_found *out)
{
  *out = (struct slice_found){ (int)fd->what, fd->cause, fd->start_ns,
                               fd->end_ns, fd->between_ns, "", label, 0, 0 };
  label[0] = '\0';
  if (fd->what != AGG_FOUND_STEP)
    return;
  out->kind = a->kinds_map.keys[fd->kind].p;
  out->kind_n = a->kinds_map.keys[fd->kind].n;
  if (agg_labels_get(&a->labels, fd->label, label, AGG_LABEL_TEXT + 1) != 0)
    label[0] = '\0';
  out->label_n = strlen(label);
}

/* The block of the finding about to be added, opened when it is the
 * first of one; NULL when out of memory. */
static struct slice_found_block *found_block(struct slice_figs *f)
{
  if (f->nfound % SLICE_FOUND_BLOCK == 0) {
    if (agg_grow(&f->block, &f->blocks_cap, f->nblocks, sizeof(*f->block)) !=
        0)
      return NULL;
    f->block[f->nblocks++] = (struct slice_found_block){
      f->found_len, f->found_last, INT64_MAX, INT64_MIN
    };
  }
  return &f->block[f->nblocks - 1];
}

void slice_figs_finding(void *ud, const struct agg_finding *fd)
{
  struct slice_figs *f = ud;
  char label[AGG_LABEL_TEXT + 1];
  struct found_buf o = { .n = 0 };
  struct slice_found_block *k;
  struct slice_found x;

  if (f->out == NULL || !f->found_complete || f->broken)
    return;
  slice_found_of(f->agg, fd, label, &x);
  if (x.kind_n > KIND_TEXT) {
    f->found_complete = 0;
    return;
  }
  o.b[o.n++] = (uint8_t)((fd->what == AGG_FOUND_STEP ? 0 : 1) | fd->cause << 1);
  /* Differences taken modulo 2^64: any pair of times fits. */
  put_varint(&o, agg_zigzag((int64_t)((uint64_t)fd->start_ns -
                                      (uint64_t)f->found_last)));
  put_varint(&o, agg_zigzag((int64_t)((uint64_t)fd->end_ns -
                                      (uint64_t)fd->start_ns)));
  put_varint(&o, agg_zigzag(fd->between_ns));
  if (x.what == AGG_FOUND_STEP) {
    put_text(&o, x.kind, x.kind_n);
    put_text(&o, x.label, x.label_n);
  }
  if (f->found_len + o.n > SLICE_FIGS_FOUND_MAX ||
      (k = found_block(f)) == NULL) {
    f->found_complete = 0;
    return;
  }
  if (f->wb_n + o.n > WB_BYTES && flush(f) != 0)
    return;
  if (x.start_ns < k->lo)
    k->lo = x.start_ns;
  if (x.end_ns > k->hi)
    k->hi = x.end_ns;
  memcpy(f->wb + f->wb_n, o.b, o.n);
  f->wb_n += o.n;
  f->found_len += o.n;
  f->found_last = fd->start_ns;
  f->nfound++;
}

/* A varint at *p (before end) into *v: 0, or -1 when cut or too long. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
  *v = 0;
  for (unsigned sh = 0; sh < 64; sh += 7) {
    if (*p == end)
      return -1;
    *v |= (uint64_t)(**p & 0x7f) << sh;
    if (!(*(*p)++ & 0x80))
      return 0;
  }
  return -1;
}

/* A text after its length: 0, or -1 when it runs past end. */
static int get_text(const uint8_t **p, const uint8_t *end, const char **s,
                    size_t *n)
{
  uint64_t len;

  if (get_varint(p, end, &len) != 0 || len > (uint64_t)(end - *p))
    return -1;
  *s = (const char *)*p;
  *n = (size_t)len;
  *p += len;
  return 0;
}

/* The finding at b (before end) into *f, *last its start after: the
 * bytes it took, or 0 when it is not one. */
static size_t read_found(const uint8_t *b, const uint8_t *end, int64_t *last,
                         struct slice_found *f)
{
  const uint8_t *p = b;
  uint64_t start, len, between;

  if (p == end || get_varint((++p, &p), end, &start) != 0 ||
      get_varint(&p, end, &len) != 0 || get_varint(&p, end, &between) != 0)
    return 0;
  f->what = *b & 1 ? AGG_FOUND_IDLE : AGG_FOUND_STEP;
  f->cause = *b >> 1;
  /* Wrapping as the recorder's subtraction did. */
  f->start_ns = (int64_t)((uint64_t)*last + (uint64_t)agg_unzigzag(start));
  f->end_ns = (int64_t)((uint64_t)f->start_ns + (uint64_t)agg_unzigzag(len));
  f->between_ns = agg_unzigzag(between);
  f->kind = f->label = "";
  f->kind_n = f->label_n = 0;
  if (f->what == AGG_FOUND_STEP &&
      (get_text(&p, end, &f->kind, &f->kind_n) != 0 ||
       get_text(&p, end, &f->label, &f->label_n) != 0))
    return 0;
  if (f->what == AGG_FOUND_IDLE && f->cause >= AGG_IDLE_CAUSES)
    return 0;
  *last = f->start_ns;
  return (size_t)(p - b);
}

int slice_figs_found(const struct slice_figs *g, size_t *at, int64_t *last,
                     struct slice_found *f)
{
  size_t n;

  if (*at >= g->found_len)
    return 0;
  n = read_found(g->found + *at, g->found + g->found_len, last, f);
  *at = n > 0 ? *at + n : g->found_len;
  return n > 0;
}

static uint8_t *put(uint8_t *b, uint64_t v, int n)
{
  for (int i = 0; i < n; i++)
    b[i] = (uint8_t)(v >> (8 * i));
  return b + n;
}

static uint64_t get(const uint8_t **b, int n)
{
  uint64_t v = 0;

  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | (*b)[i];
  *b += n;
  return v;
}

/* The head with the counts as they are now. */
static void encode_head(const struct slice_figs *f, uint8_t *b)
{
  b = put(b, f->format, 4);
  b = put(b, f->step_side, 4);
  b = put(b, (uint64_t)f->found_complete, 4);
  b = put(b, f->delivered, 8);
  b = put(b, (uint64_t)f->max_pid, 8);
  b = put(b, (uint64_t)f->array_end, 8);
  b = put(b, f->npieces, 8);
  b = put(b, f->nmeta, 8);
  b = put(b, f->nfound, 8);
  b = put(b, f->text_len, 8);
  b = put(b, f->found_len, 8);
  put(b, f->nblocks, 8);
}

int slice_figs_write(struct slice_figs *f, const struct idx_doc *doc,
                     FILE *out)
{
  uint8_t b[HEAD_BYTES > PIECE_BYTES ? HEAD_BYTES : PIECE_BYTES];
  int ok;

  f->format = (uint32_t)doc->format;
  f->step_side = (uint32_t)f->agg->step_side;
  f->array_end = doc->array_end;
  if (f->broken || f->npieces == 0 || f->array_end < 0 ||
      (uint64_t)f->array_end < f->piece[f->npieces - 1].off ||
      (f->wb = malloc(WB_BYTES)) == NULL)
    return TR_EFORMAT;
  f->head_at = ftell(out);
  encode_head(f, b);
  ok = f->head_at >= 0 && fwrite(b, 1, HEAD_BYTES, out) == HEAD_BYTES;
  for (size_t i = 0; ok && i < f->npieces; i++) {
    const struct slice_piece *p = &f->piece[i];
    uint8_t *q = put(b, p->off, 8);

    q = put(q, p->elems, 8);
    q = put(q, (uint64_t)p->lo, 8);
    q = put(q, (uint64_t)p->hi, 8);
    put(q, p->flags, 4);
    ok = fwrite(b, 1, PIECE_BYTES, out) == PIECE_BYTES;
  }
  for (size_t i = 0; ok && i < f->nmeta; i++) {
    uint8_t *q = put(b, f->meta[i].off, 8);

    q = put(q, f->meta[i].elems, 8);
    q = put(q, f->meta[i].at, 8);
    put(q, f->meta[i].len, 4);
    ok = fwrite(b, 1, META_BYTES, out) == META_BYTES;
  }
  if (ok && f->text_len > 0)
    ok = fwrite(f->text, 1, f->text_len, out) == f->text_len;
  if (!ok)
    return TR_EIO;
  f->out = out;
  return 0;
}

/* The findings' index, after them. 0 or -1. */
static int write_blocks(struct slice_figs *f)
{
  uint8_t b[BLOCK_BYTES];

  for (size_t i = 0; i < f->nblocks; i++) {
    const struct slice_found_block *k = &f->block[i];
    uint8_t *q = put(b, k->at, 8);

    q = put(q, (uint64_t)k->last, 8);
    q = put(q, (uint64_t)k->lo, 8);
    put(q, (uint64_t)k->hi, 8);
    if (fwrite(b, 1, BLOCK_BYTES, f->out) != BLOCK_BYTES)
      return -1;
  }
  return 0;
}

int slice_figs_seal(struct slice_figs *f, uint64_t *len)
{
  uint8_t b[HEAD_BYTES];

  if (flush(f) != 0 || write_blocks(f) != 0)
    return TR_EIO;
  /* The step side is settled by the time pass, which came after. */
  f->step_side = (uint32_t)f->agg->step_side;
  encode_head(f, b);
  if (fseek(f->out, f->head_at, SEEK_SET) != 0 ||
      fwrite(b, 1, HEAD_BYTES, f->out) != HEAD_BYTES ||
      fseek(f->out, 0, SEEK_END) != 0)
    return TR_EIO;
  *len = HEAD_BYTES + f->npieces * PIECE_BYTES + f->nmeta * META_BYTES +
         f->text_len + f->found_len + f->nblocks * BLOCK_BYTES;
  return 0;
}

/* The counts of the head, checked against the bytes there are. */
static int decode_head(const uint8_t **b, size_t len, struct slice_figs *f)
{
  uint64_t np, nm, nb;

  if (len < HEAD_BYTES)
    return TR_EFORMAT;
  f->format = (uint32_t)get(b, 4);
  f->step_side = (uint32_t)get(b, 4);
  f->found_complete = get(b, 4) != 0;
  f->delivered = get(b, 8);
  f->max_pid = (int64_t)get(b, 8);
  f->array_end = (int64_t)get(b, 8);
  np = get(b, 8);
  nm = get(b, 8);
  f->nfound = get(b, 8);
  f->text_len = get(b, 8);
  f->found_len = get(b, 8);
  nb = get(b, 8);
  len -= HEAD_BYTES;
  if (f->format >= IDX_FORMAT_COUNT || np == 0 || np > SLICE_FIGS_PIECES_MAX ||
      np > len / PIECE_BYTES || nm > len / META_BYTES || f->array_end < 0 ||
      f->text_len > len || f->found_len > len || nb > len / BLOCK_BYTES ||
      nb > f->nfound / SLICE_FOUND_BLOCK + 1)
    return TR_EFORMAT;
  if (len != np * PIECE_BYTES + nm * META_BYTES + f->text_len +
                 f->found_len + nb * BLOCK_BYTES)
    return TR_EFORMAT;
  f->npieces = np;
  f->nmeta = nm;
  f->nblocks = nb;
  return 0;
}

/* The pieces: offsets and element counts rising, before the array's end. */
static int decode_pieces(const uint8_t **b, struct slice_figs *f)
{
  for (size_t i = 0; i < f->npieces; i++) {
    struct slice_piece *p = &f->piece[i];

    p->off = get(b, 8);
    p->elems = get(b, 8);
    p->lo = (int64_t)get(b, 8);
    p->hi = (int64_t)get(b, 8);
    p->flags = (uint32_t)get(b, 4);
    if (p->off > (uint64_t)f->array_end ||
        (i > 0 && (p->off <= p[-1].off || p->elems <= p[-1].elems)))
      return TR_EFORMAT;
  }
  return 0;
}

/* The metas: each in the text, after the first piece, offsets rising. */
static int decode_metas(const uint8_t **b, struct slice_figs *f)
{
  for (size_t i = 0; i < f->nmeta; i++) {
    struct slice_meta *m = &f->meta[i];

    m->off = get(b, 8);
    m->elems = get(b, 8);
    m->at = get(b, 8);
    m->len = (uint32_t)get(b, 4);
    if (m->at > f->text_len || m->len > f->text_len - m->at ||
        m->off < f->piece[0].off || m->off > (uint64_t)f->array_end ||
        m->elems < f->piece[0].elems ||
        (i > 0 && (m->off <= m[-1].off || m->elems <= m[-1].elems)))
      return TR_EFORMAT;
  }
  return 0;
}

/* The findings' index: its blocks in the findings, in order (a slice
 * reads a block's findings checked, as ever, from its at). */
static int decode_blocks(const uint8_t **b, struct slice_figs *f)
{
  for (size_t i = 0; i < f->nblocks; i++) {
    struct slice_found_block *k = &f->block[i];

    k->at = get(b, 8);
    k->last = (int64_t)get(b, 8);
    k->lo = (int64_t)get(b, 8);
    k->hi = (int64_t)get(b, 8);
    if (k->at >= f->found_len || (i == 0 && k->at != 0) ||
        (i > 0 && k->at <= k[-1].at))
      return TR_EFORMAT;
  }
  /* Complete, the findings are all in blocks. */
  if (f->found_complete &&
      f->nblocks != (f->nfound + SLICE_FOUND_BLOCK - 1) / SLICE_FOUND_BLOCK)
    return TR_EFORMAT;
  return 0;
}

int slice_figs_decode(const uint8_t *b, size_t len, struct slice_figs *f)
{
  int rc;

  memset(f, 0, sizeof(*f));
  if ((rc = decode_head(&b, len, f)) != 0)
    return rc;
  f->borrowed = 1;
  f->piece = malloc(f->npieces * sizeof(*f->piece));
  f->meta = malloc((f->nmeta ? f->nmeta : 1) * sizeof(*f->meta));
  f->block = malloc((f->nblocks ? f->nblocks : 1) * sizeof(*f->block));
  if (f->piece == NULL || f->meta == NULL || f->block == NULL)
    rc = TR_ENOMEM;
  if (rc == 0 && (rc = decode_pieces(&b, f)) == 0 &&
      (rc = decode_metas(&b, f)) == 0) {
    /* Each finding is checked as it is read (slice_figs_found()). */
    f->text = (char *)b;
    f->found = (uint8_t *)b + f->text_len;
    b += f->text_len + f->found_len;
    rc = decode_blocks(&b, f);
  }
  if (rc != 0)
    slice_figs_free(f);
  return rc;
}
