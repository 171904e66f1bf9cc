/*
 * The rank summary as JSON: the exact field list and orders of the data
 * contract (docs/API.md, "Rank summary"): its head, each pass's scalars
 * (their head hooks, agg.c), then each table of common/summary.h's
 * TR_TABLE_MAP by its rows function. Durations and timestamps are integer
 * ns, first/last/start/end relative to t0; avg is floor(total / count);
 * share is total / denominator rounded half up to 6 decimals (0 when the
 * denominator is 0).
 */
#include <stdlib.h>
#include <string.h>

#include "index/agg/agg.h"

/* Total descending, then name ascending, then id. */
static int row_cmp(const void *x, const void *y)
{
  const struct agg_row *a = x, *b = y;
  size_t n = a->n < b->n ? a->n : b->n;
  int d;

  if (a->total != b->total)
    return a->total > b->total ? -1 : 1;
  d = n ? memcmp(a->p, b->p, n) : 0;
  if (d != 0)
    return d;
  if (a->n != b->n)
    return a->n < b->n ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

int agg_key_cmp(const struct agg_key *x, const struct agg_key *y)
{
  size_t n = x->n < y->n ? x->n : y->n;
  int d = n ? memcmp(x->p, y->p, n) : 0;

  return d ? d : (x->n > y->n) - (x->n < y->n);
}

uint32_t *agg_order(uint32_t n, int (*cmp)(const void *, const void *, void *),
                    const void *ud)
{
  uint32_t *order = malloc((n + 1) * sizeof(*order));

  for (uint32_t i = 0; order != NULL && i < n; i++)
    order[i] = i;
  if (order != NULL)
    qsort_r(order, n, sizeof(*order), cmp, (void *)ud);
  return order;
}

json_t *agg_json_strn(const char *p, size_t n)
{
  json_t *s = json_stringn_nocheck(p ? p : "", p ? n : 0);

  return s ? s : json_string("");
}

json_t *agg_json_xyz(const int64_t v[3], int present)
{
  if (!present)
    return json_null();
  return json_pack("[III]", (json_int_t)v[0], (json_int_t)v[1],
                   (json_int_t)v[2]);
}

double agg_share(int64_t total, int64_t den)
{
  unsigned __int128 q;

  if (den <= 0 || total <= 0)
    return 0.0;
  q = ((unsigned __int128)total * 2000000u + (uint64_t)den) /
      ((unsigned __int128)den * 2u);
  return (double)q / 1e6;
}

int64_t agg_avg(const struct agg_stat *s)
{
  return s->count ? s->total_ns / (int64_t)s->count : 0;
}

struct agg_row *
agg_sorted_rows(size_t n, size_t *nout,
                int (*fill)(void *ud, uint32_t id, struct agg_row *r), void *ud)
{
  struct agg_row *rows = malloc((n ? n : 1) * sizeof(*rows));
  size_t i, k = 0;

  if (rows == NULL)
    return NULL;
  for (i = 0; i < n; i++) {
    rows[k].id = (uint32_t)i;
    if (fill(ud, (uint32_t)i, &rows[k]))
      k++;
  }
  qsort(rows, k, sizeof(*rows), row_cmp);
  *nout = k;
  return rows;
}

void agg_row_set(struct agg_row *r, int64_t total, const struct agg_key *k)
{
  r->total = total;
  r->p = k->p;
  r->n = k->n;
}

void agg_out_row(struct agg_out *o, json_t *row)
{
  if (row == NULL && o->rc == 0)
    o->rc = tr_err_set(o->err, TR_ENOMEM, "", "out of memory");
  if (o->rc == 0)
    o->rc = o->sink->on_row(o->sink->ud, o->table, row, o->err);
  json_decref(row);
}

void agg_out_array(struct agg_out *o, json_t *rows)
{
  json_t *row;
  size_t i;

  if (rows == NULL)
    agg_out_row(o, NULL);
  json_array_foreach(rows, i, row)
    agg_out_row(o, json_incref(row));
  json_decref(rows);
}

/* ---- the head ---- */

static struct agg_opt rank_value(const struct idx_doc *doc,
                                 const struct agg_file_info *info)
{
  struct agg_opt o = { 1, info->rank };

  if (info->rank < 0) {
    o.set = doc->rank >= 0;
    o.v = doc->rank;
  }
  return o;
}

static struct agg_txt device_value(const struct idx_agg *a,
                                   const struct idx_doc *doc)
{
  if (doc->device[0] != '\0')
    return agg_txt(doc->device);
  if (idx_format_get(doc->format)->meta_device && a->meta_device[0] != '\0')
    return agg_txt(a->meta_device);
  return agg_txt(NULL);
}

/* The scalars of the summary: identity, the file and the span, then each
 * pass's (its head hook). */
static json_t *summary_head(struct idx_agg *a, const struct idx_doc *doc,
                            const struct agg_file_info *info)
{
  struct agg_sum_rank r = { 0 };

  /* A reminder that a new member needs its filler: 12 here, the others
   * the passes' heads (agg_<pass>_head()). */
  AGG_SUM_FILLS(TR_SUM_RANK, 62);
  if (a->t0_ns > a->tend_ns) /* no timed event */
    a->t0_ns = a->tend_ns = 0;
  r.rank = rank_value(doc, info);
  r.file = agg_txt(info->path);
  r.format = agg_txt(idx_format_get(doc->format)->name);
  r.file_bytes = (int64_t)info->file_bytes;
  r.json_bytes = (int64_t)doc->json_bytes;
  r.events = (int64_t)doc->events;
  r.skipped_events = (int64_t)(doc->skipped + a->skipped);
  r.t0_ns = a->t0_ns;
  r.span_ns = a->tend_ns - a->t0_ns;
  r.device = device_value(a, doc);
  a->dev_name = r.device.p; /* the op groups' roof (index/perf/) */
  r.gpu_busy_ns = a->gpu_busy_ns;
  r.idle_ns = r.span_ns - a->gpu_busy_ns;
  r.warnings = json_array();
  agg_heads(a, &r);
  return agg_sum_rank_json(&r);
}

/* The head, then every table in the summary's order: common/summary.h's
 * TR_TABLE_MAP, each row's rows function. */
static int emit(struct idx_agg *a, const struct idx_doc *doc,
                const struct agg_file_info *info, struct agg_out *o)
{
  json_t *head = summary_head(a, doc, info);
  int rc;

  if (head == NULL)
    return tr_err_set(o->err, TR_ENOMEM, "", "%s: out of memory", info->path);
  rc = o->sink->on_head(o->sink->ud, head, o->err);
  json_decref(head);
  if (rc != 0)
    return rc;
#define XX(name, rows)                                                         \
  o->table = #name;                                                            \
  rows(a, o);
  TR_SUM_WRITERS(XX)
#undef XX
  return o->rc;
}

int idx_agg_rows(struct idx_agg *a, const struct idx_doc *doc,
                 const struct agg_file_info *info, const struct idx_sink *sink,
                 struct tr_err *err)
{
  struct agg_out o = { sink, NULL, err, 0, { 0 } };
  int rc;

  a->path = info->path;
  a->threads = info->threads;
  if ((rc = agg_walk(a, err)) != 0)
    return rc;
  rc = emit(a, doc, info, &o);
  tr_buf_free(&o.text);
  return rc;
}

/* ---- the whole summary as one document ---- */

static int tree_head(void *ud, json_t *head, struct tr_err *err)
{
  struct agg_tree *t = ud;

  (void)err;
  t->doc = json_incref(head);
  agg_sum_tables_new(t->doc);
  return 0;
}

static int tree_row(void *ud, const char *table, json_t *row,
                    struct tr_err *err)
{
  struct agg_tree *t = ud;

  if (json_array_append(json_object_get(t->doc, table), row) != 0)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  return 0;
}

void agg_tree_sink(struct agg_tree *t, struct idx_sink *out)
{
  t->doc = NULL;
  out->on_head = tree_head;
  out->on_row = tree_row;
  out->ud = t;
  out->on_text = NULL; /* the rows as objects, into the document */
}

int agg_tree_take(struct agg_tree *t, int rc, json_t **out)
{
  if (rc != 0)
    json_decref(t->doc);
  else
    *out = t->doc;
  t->doc = NULL;
  return rc;
}

int idx_agg_summary(struct idx_agg *a, const struct idx_doc *doc,
                    const struct agg_file_info *info, json_t **out,
                    struct tr_err *err)
{
  struct agg_tree t;
  struct idx_sink sink;

  agg_tree_sink(&t, &sink);
  return agg_tree_take(&t, idx_agg_rows(a, doc, info, &sink, err), out);
}
