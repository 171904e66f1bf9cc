/*
 * slice: the face of index/slice/ (index/slice/README.md); the slices
 * themselves are index.h's idx_slice*(). A rank's slice figures: what a
 * slice must know of the whole trace to
 * read only the parts of it that meet its window (docs/SLICES.md).
 * Recorded while the rank is indexed (index/file.c), stored in its
 * access points file (index/read/read.h), read back by the slicer
 * (index/slice/slice.c).
 *
 * traceEvents is cut into pieces at element boundaries, one at the first
 * element of each chunk of text the reader is fed (idx_reader_mark()).
 * For each piece: where it starts, the elements before it, and the hull
 * of its events' spans as the slicer judges a span (slice.c, in_window);
 * ph "M" events, which every slice keeps whatever their time, are stored
 * whole with their place, so that a slice need not read their pieces.
 * Besides: the events handed over, the largest numeric pid, where
 * traceEvents closes, the format, and the time pass's findings (steps and
 * idle stretches, their names as text).
 *
 * Not thread-safe; one recorder per rank.
 */
#ifndef IDX_SLICE_H
#define IDX_SLICE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "index/agg/agg.h"
#include "index/read/read.h"

/* What a rank's figures may weigh: past either, what is past is not
 * kept and the slicer reads those parts of the file instead (meta) or
 * makes findings by reading the whole file (findings). */
#define SLICE_FIGS_META_MAX   (4u << 20)  /* bytes of ph "M" event text */
#define SLICE_FIGS_FOUND_MAX  (16u << 20) /* bytes of findings */
#define SLICE_FIGS_PIECES_MAX (1u << 22)  /* pieces (a 4 GB trace: ~4,000) */

/* A piece must be read whatever the window: it holds a ph "M" event
 * whose text is not stored. */
#define SLICE_PIECE_READ 1u

struct slice_piece {
  uint64_t off;   /* document offset of its first element */
  uint64_t elems; /* elements of traceEvents before it */
  int64_t lo, hi; /* every span of its events lies in [lo, hi); lo >= hi:
                     it has none */
  uint32_t flags; /* SLICE_PIECE_* */
};

/* A stored ph "M" event: its text is text[at, at + len). */
struct slice_meta {
  uint64_t off, elems; /* as a piece's, for this one element */
  uint64_t at;
  uint32_t len;
};

/* Findings per block of the findings' index: a slice walks only the
 * blocks whose hull meets its window. */
#define SLICE_FOUND_BLOCK 1024

/* A block of SLICE_FOUND_BLOCK findings (the last one fewer): where its
 * first one starts in the packed findings, the start it is told from,
 * and the hull of their spans. */
struct slice_found_block {
  uint64_t at;
  int64_t last;
  int64_t lo, hi; /* lo > hi: none recorded */
};

/* A finding of the time pass (agg.h's struct agg_finding) with its kind
 * and label as text (borrowed from the figures), as slice_figs_found()
 * reads it back. */
struct slice_found {
  int what, cause;
  int64_t start_ns, end_ns, between_ns;
  const char *kind, *label;
  size_t kind_n, label_n;
};

struct slice_figs {
  uint32_t format;    /* enum idx_format, as the reader settled it */
  uint32_t step_side; /* agg.h's AGG_SIDE_* */
  int found_complete; /* every finding is stored */
  uint64_t delivered; /* events handed over (a slice's events_read) */
  int64_t max_pid;    /* largest numeric pid; INT64_MIN: none */
  int64_t array_end;  /* offset of traceEvents' ']' */
  struct slice_piece *piece;
  size_t npieces, pieces_cap;
  struct slice_meta *meta;
  size_t nmeta, meta_cap;
  uint8_t *found; /* decoded: the findings, packed (slice_figs.c) */
  size_t nfound, found_len;
  struct slice_found_block *block; /* the findings' index */
  size_t nblocks, blocks_cap;
  char *text; /* the metas' text */
  size_t text_len, text_cap;
  int borrowed; /* decoded: text and found lie in the decoded bytes */
  /* Recording. The findings go straight to the points file, as a trace
   * has hundreds of thousands of them (never all in memory). */
  uint32_t seen_marks; /* the reader's marks taken so far */
  int broken;          /* out of memory or a failed write */
  struct idx_agg *agg; /* whose findings (borrowed) */
  FILE *out;           /* slice_figs_write()'s, borrowed */
  long head_at;        /* where the figures begin in it */
  uint8_t *wb;         /* findings not yet written to out */
  size_t wb_n;
  int64_t found_last; /* the last finding's start */
};

/* Zero-filled, then this: ready to record the events and the findings
 * of agg (borrowed). */
void slice_figs_init(struct slice_figs *f, struct idx_agg *agg);

/* slice_figs_event() of an event that begins a piece, is ph "M", or
 * comes before the first piece. */
void slice_figs_other(struct slice_figs *f, const struct idx_doc *doc,
                      const struct idx_event *ev);

/* An event's span as a slice judges it: [ts, ts + dur) for ph "X" with
 * a dur, else [ts, ts + 1 ns); saturated at INT64_MAX. */
static inline void slice_span(const struct idx_event *ev, int64_t *b,
                              int64_t *e)
{
  *b = *e = ev->ts_ns;
  if (ev->ph == 'X' && (ev->has & IDX_HAS_DUR) &&
      __builtin_add_overflow(*b, ev->dur_ns, e))
    *e = INT64_MAX;
  if (*e <= *b)
    *e = *b < INT64_MAX ? *b + 1 : *b;
}

/* Widens the piece's hull by the event's span, when it has a time. */
static inline void slice_piece_widen(struct slice_piece *p,
                                     const struct idx_event *ev)
{
  int64_t b, e;

  if (!(ev->has & IDX_HAS_TS))
    return; /* never in a slice */
  slice_span(ev, &b, &e);
  if (b < p->lo)
    p->lo = b;
  if (e > p->hi)
    p->hi = e;
}

/* Records an event handed over by the reader (idx_event_cb's arguments).
 * Inline, as it runs for every event: the common one widens its piece's
 * hull; the rest is slice_figs_other()'s. */
static inline void slice_figs_event(struct slice_figs *f,
                                    const struct idx_doc *doc,
                                    const struct idx_event *ev)
{
  f->delivered++;
  if ((ev->has & IDX_HAS_PID) && ev->pid > f->max_pid)
    f->max_pid = ev->pid;
  if (__builtin_expect(
          doc->marks != f->seen_marks || ev->ph == 'M' || f->npieces == 0, 0)) {
    slice_figs_other(f, doc, ev);
    return;
  }
  slice_piece_widen(&f->piece[f->npieces - 1], ev);
}

/* The agg's finding fd as a slice draws it, its label written to label
 * (AGG_LABEL_TEXT + 1 bytes), its kind's name borrowed from a. */
void slice_found_of(struct idx_agg *a, const struct agg_finding *fd,
                    char *label, struct slice_found *out);

/* Records a finding of the agg's time pass (an idx_agg.on_finding, ud
 * the struct slice_figs). */
void slice_figs_finding(void *ud, const struct agg_finding *fd);

/* After the reading, before the time pass: the figures so far to out,
 * where the findings will follow. 0; TR_EFORMAT when they cannot serve a
 * slice (out of memory, no piece, traceEvents never closed: nothing is
 * written, no finding is kept); TR_EIO. */
int slice_figs_write(struct slice_figs *f, const struct idx_doc *doc,
                     FILE *out);

/* After the time pass: the findings' counts into what was written, and
 * the bytes written in all into *len. 0 or TR_EIO. */
int slice_figs_seal(struct slice_figs *f, uint64_t *len);

/* b[0..len) into *f (caller frees with slice_figs_free()), every count,
 * offset and order checked; the texts and findings are left in b, which
 * must outlive *f. 0, TR_EFORMAT or TR_ENOMEM. */
int slice_figs_decode(const uint8_t *b, size_t len, struct slice_figs *f);

void slice_figs_free(struct slice_figs *f);

/* Reads the finding at *at (0 to begin) of g's findings into *f and
 * moves *at and *last (0 to begin) past it: 1, or 0 after the last
 * (or at bytes that are not a finding: the rest is not read). */
int slice_figs_found(const struct slice_figs *g, size_t *at, int64_t *last,
                     struct slice_found *f);

#endif
