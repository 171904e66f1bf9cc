/*
 * Decode as a pass of the aggregation (decode.h, agg.h's AGG_PASS_MAP):
 * every event of the run trace to its file, its walk beside the other
 * passes' once the events are read, its figures into the summary.
 */
#include <stdlib.h>
#include <string.h>

#include "index/decode/decode_int.h"

int agg_decode_new(struct idx_agg *a)
{
  return (a->decode = calloc(1, sizeof(*a->decode))) == NULL ? TR_ENOMEM : 0;
}

void agg_decode_free(struct idx_agg *a)
{
  if (a->decode == NULL)
    return;
  (void)agg_beside_end(&a->decode->beside);
  dec_file_free(a->decode->file);
  free(a->decode);
  a->decode = NULL;
}

int agg_decode_event(struct idx_agg *a, const struct idx_doc *doc,
                     const struct idx_event *ev, enum idx_class cls)
{
  struct dec_file *d = a->decode->file;
  uint64_t key;

  (void)doc;
  if (d == NULL)
    return 0;
  if (cls == IDX_CLASS_INSTANT)
    return dec_memory(d, ev);
  if (!dec_wants(ev, cls))
    return 0;
  key = agg_ev_hash(a, ev);
  /* A Python function met lately as no frame (most of them): nothing to
   * take, known here without the call (dec_event.c's on_python()). */
  if (cls == IDX_CLASS_PYTHON) {
    const struct agg_seen *seen = agg_seen_find(d->lib->py_seen, key);

    if (seen != NULL && seen->aux == 0)
      return 0;
  }
  return dec_event(d, ev, cls, key);
}

/* Decode's walk (dec_end), beside the walk of the other passes when the
 * file may use two threads: the two read only what each owns, and what
 * the walk could spill was written before (dec_seal). */
static int run(void *ud, void *item)
{
  return dec_end(item, ud);
}

int agg_decode_seal(struct idx_agg *a, struct tr_err *err)
{
  struct agg_decode *d = a->decode;
  int rc;

  agg_beside_start(&d->beside, a->threads > 1 && d->file != NULL, run, &d->err);
  if (d->file == NULL)
    return 0;
  /* The words for the rooms its walk feeds (agg.h's idx_agg). */
  a->op_groups = d->file->lib->perf;
  a->mem = d->file->mem;
  dec_span(d->file, a->t0_ns, a->tend_ns);
  if ((rc = dec_seal(d->file, err)) != 0)
    return rc;
  (void)agg_beside_put(&d->beside, d->file);
  return 0;
}

int agg_decode_end(struct idx_agg *a, struct tr_err *err)
{
  struct agg_decode *d = a->decode;

  if (agg_beside_end(&d->beside) == 0)
    return 0;
  *err = d->err;
  return d->beside.rc;
}

void agg_decode_head(struct idx_agg *a, struct agg_sum_rank *r)
{
  if (a->decode->file != NULL)
    dec_warnings(a->decode->file, r->warnings);
  dec_put_rank(a->decode->file, r);
}
