/*
 * The store's side of the fleet (store/fleet_out.c, fleet_lab.c;
 * docs/FLEET.md) without a PostgreSQL: the outbox the triggers fill in
 * the transaction of a final status or a delete, the backfill, the order
 * rows are sent in; a capture of real traces published and copied into
 * another database answering every table, for every rank and all, byte
 * for byte as its own node does; the lab view's index (refs, filters,
 * baselines across nodes, deletes, another fleet, eviction).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lifecycle.h"
#include "tests/check.h"
#include "tests/test_store_traces.h"
#include "tests/test_store_util.h"

static struct store *open_db(char *path, size_t size)
{
  struct tr_err err = { 0 };
  struct store *st = NULL;

  fx_db_path(path, size);
  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  return st;
}

static int64_t capture_in(struct store *st, const char *status)
{
  struct tr_err err = { 0 };
  int64_t id;

  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &id, &err), 0);
  CHECK_INT(store_capture_set_phase(st, id, "running", "stopping", &err), 0);
  if (status != NULL)
    CHECK_INT(store_capture_set_phase(st, id, status, "indexing", &err), 0);
  return id;
}

static bool uuid_v4(const char *u)
{
  if (strlen(u) != 36 || u[14] != '4' || !strchr("89ab", u[19]))
    return false;
  for (int i = 0; i < 36; i++)
    if (i == 8 || i == 13 || i == 18 || i == 23
            ? u[i] != '-'
            : !strchr("0123456789abcdef", u[i]))
      return false;
  return true;
}

/* Every final status (common/lifecycle.h) puts the capture in the outbox,
 * once, in its own transaction; nothing without fleet_dsn; a delete
 * replaces what was not sent and is sent even when nothing publishes. */
static void store_fleet_outbox_triggers(void)
{
  struct store_outbox_item it, seen[TR_NSTATUS];
  struct tr_err err = { 0 };
  char path[256];
  struct store *st = open_db(path, sizeof(path));
  int64_t length = 0, oldest = 0, quiet, id[TR_NSTATUS];
  char first[40];
  int n = 0;

  quiet = capture_in(st, "done");
  CHECK_INT(fx_count(path, "SELECT count(*) FROM fleet_outbox", -1), 0);
  CHECK_INT(store_fleet_enable(st, true, &err), 0);
  for (int s = 0; s < TR_NSTATUS; s++) {
    if (!tr_status_final((enum tr_status)s))
      continue;
    id[n] = capture_in(st, tr_status_name((enum tr_status)s));
    /* A final status is never left: a second write changes nothing. */
    store_capture_set_phase(st, id[n], tr_status_name((enum tr_status)s),
                            "done", NULL);
    n++;
  }
  CHECK_INT(n, 4);
  CHECK_INT(store_outbox_stats(st, &length, &oldest, &err), 0);
  CHECK_INT(length, n);
  CHECK(oldest > tr_now_ns() / 1000000 - 60000);
  for (int i = 0; i < n; i++) {
    CHECK_INT(store_outbox_next(st, &seen[i], &err), 0);
    CHECK_INT(seen[i].capture_id, id[i]);
    CHECK(!seen[i].del && uuid_v4(seen[i].uuid));
    for (int j = 0; j < i; j++)
      CHECK(strcmp(seen[i].uuid, seen[j].uuid) != 0);
    CHECK_INT(store_outbox_done(st, seen[i].seq, &err), 0);
  }
  CHECK_INT(store_outbox_next(st, &it, &err), 1);
  snprintf(first, sizeof(first), "%s", seen[0].uuid);
  /* A capture still queued, cancelled: final too. */
  {
    bool was = false;
    int64_t q;

    CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &q, &err), 0);
    CHECK_INT(store_capture_cancel_queued(st, q, &was, &err), 0);
    CHECK(was);
    CHECK_INT(store_outbox_next(st, &it, &err), 0);
    CHECK_INT(it.capture_id, q);
    /* Deleted before it was sent: the delete takes its place, same uuid. */
    CHECK_INT(store_capture_delete(st, q, &err), 0);
    CHECK_INT(fx_count(path, "SELECT count(*) FROM fleet_outbox", -1), 1);
    CHECK_INT(store_outbox_next(st, &seen[0], &err), 0);
    CHECK(seen[0].del && seen[0].capture_id == q);
    CHECK_STR(seen[0].uuid, it.uuid);
    CHECK_INT(store_outbox_done(st, seen[0].seq, &err), 0);
  }
  /* Published, then deleted with the fleet off: still a delete row. */
  CHECK_INT(store_fleet_enable(st, false, &err), 0);
  CHECK_INT(store_capture_delete(st, id[0], &err), 0);
  CHECK_INT(store_capture_delete(st, quiet, &err), 0);
  CHECK_INT(store_outbox_next(st, &it, &err), 0);
  CHECK(it.del && it.capture_id == id[0]);
  CHECK_STR(it.uuid, first);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM fleet_outbox", -1), 1);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM fleet_ids WHERE"
                     " capture_id = ?1",
                     id[0]),
            0);
  store_close(st);
  fx_db_remove(path);
}

/* Old captures get an identity and a publish row, oldest first, at most
 * as many a call as asked; the refused go behind the others. */
static void store_fleet_backfill_and_order(void)
{
  struct store_outbox_item a, b;
  struct tr_err err = { 0 };
  char path[256];
  struct store *st = open_db(path, sizeof(path));
  int64_t old[5];
  int added = 0;

  for (int i = 0; i < 5; i++)
    old[i] = capture_in(st, i == 4 ? NULL : "done");
  CHECK_INT(store_outbox_backfill(st, 2, &added, &err), 0);
  CHECK_INT(added, 2);
  CHECK_INT(store_outbox_backfill(st, 10, &added, &err), 0);
  CHECK_INT(added, 2); /* the running one waits for its final status */
  CHECK_INT(store_outbox_backfill(st, 10, &added, &err), 0);
  CHECK_INT(added, 0);
  CHECK_INT(store_outbox_next(st, &a, &err), 0);
  CHECK_INT(a.capture_id, old[0]);
  CHECK_INT(store_outbox_failed(st, a.seq, "disk full", &err), 0);
  CHECK_INT(store_outbox_next(st, &b, &err), 0);
  CHECK_INT(b.capture_id, old[1]);
  CHECK_INT(
      fx_count(path, "SELECT tries FROM fleet_outbox WHERE seq = ?1", a.seq),
      1);
  store_close(st);
  fx_db_remove(path);
}

/* ---- a published capture, copied ---- */

static const char *const traces[] = {
  "torch113cpu__atom_run_labels.pt.trace.json.gz",
  "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
  "tracelens__vllm_decode_full_graph_execution.json.gz",
};
enum { NTRACES = sizeof(traces) / sizeof(traces[0]) };

/* A done import of the real traces as its ranks, with a label that is
 * not UTF-8 (published as {"$hex"}). */
static int64_t real_capture(struct store *st)
{
  struct store_finish f = { NULL, 5 };
  struct tr_err err = { 0 };
  json_t *params = json_pack("{s:s,s:i}", "model", "/m/x", "tp", NTRACES);
  json_t *v = NULL;
  int64_t cap;

  CHECK_INT(store_capture_insert(st, "import", "bad \xff label", params, 0,
                                 &cap, &err),
            0);
  json_decref(params); /* borrowed by the store */
  fx_index_ranks(st, cap, traces, NTRACES);
  CHECK_INT(store_capture_finish(st, cap, &f, &v, &err), 0);
  json_decref(v);
  CHECK_INT(store_capture_set_phase(st, cap, "done", "done", &err), 0);
  return cap;
}

static char *table_text(struct store *st, enum tr_table t, int64_t cap,
                        int rank, const char *by)
{
  struct store_query q = { .capture_id = cap, .rank = rank, .by = by };
  struct tr_err err = { 0 };
  json_t *rows = NULL;
  char *text;

  if (tr_tables[t].per_capture && rank >= 0 &&
      strcmp(tr_tables[t].name, "collective_instances") == 0)
    return strdup("[]"); /* every rank's: rank does not apply */
  CHECK_INT(store_table(st, t, &q, &rows, &err), 0);
  text = json_dumps(rows, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(rows);
  return text;
}

/* The text the route sends for a summed table of a done capture. */
static char *summed_text(struct store *st, enum tr_table t, int64_t cap,
                         const char *by)
{
  struct store_query q = { .capture_id = cap, .rank = -1, .by = by };
  struct tr_buf b = { 0 };
  struct tr_err err = { 0 };

  CHECK_INT(store_table_text(st, t, &q, &b, &err), 0);
  return b.p;
}

/* Every table's answer, for each rank and all, and each value of by; the
 * summed ones also as the text their route sends (the copy is summed
 * again: the sums are not published). */
static void same_answers(struct store *a, int64_t ida, struct store *b,
                         int64_t idb)
{
  int answers = 0;

  for (int t = 0; t < TR_NTABLES; t++)
    for (int rank = -1; rank < NTRACES; rank++)
      for (int k = 0; k == 0 || (tr_tables[t].by && tr_tables[t].by[k]); k++) {
        const char *by = tr_tables[t].by ? tr_tables[t].by[k] : NULL;
        char *x = table_text(a, (enum tr_table)t, ida, rank, by);
        char *y = table_text(b, (enum tr_table)t, idb, rank, by);

        if (strcmp(x, y) != 0)
          fprintf(stderr, "%s rank %d by %s:\n node %.300s\n copy %.300s\n",
                  tr_tables[t].name, rank, by ? by : "-", x, y);
        CHECK_STR(y, x);
        answers++;
        free(x);
        free(y);
        if (rank >= 0 || !(tr_tables[t].flags & TR_T_SUMMED))
          continue;
        x = summed_text(a, (enum tr_table)t, ida, by);
        y = summed_text(b, (enum tr_table)t, idb, by);
        CHECK_STR(y, x);
        free(x);
        free(y);
      }
  CHECK(answers > 4 * TR_NTABLES);
}

/* The index row the lab view would have followed for the capture. */
static void follow(struct store *lab, const char *fleet, int64_t seq,
                   const char *node, const char *uuid, int64_t id,
                   const char *config, const char *gpu, int64_t finished)
{
  struct store_fleet_row row = { .node = node,
                                 .uuid = uuid,
                                 .id = id,
                                 .seq = seq,
                                 .kind = "import",
                                 .status = "done",
                                 .config = config,
                                 .gpu = gpu,
                                 .created_at = finished - 1000,
                                 .finished_at = finished,
                                 .brief = "{}" };
  struct tr_err err = { 0 };
  int64_t *drop = NULL;
  size_t ndrop = 0;

  CHECK_INT(store_fleet_apply(lab, fleet, seq, &row, 1, &drop, &ndrop, &err),
            0);
  free(drop);
}

static void store_fleet_copy_answers(void)
{
  struct store_outbox_item it;
  struct tr_err err = { 0 };
  char pa[256], pb[256];
  struct store *node = open_db(pa, sizeof(pa));
  struct store *lab = open_db(pb, sizeof(pb));
  json_t *x = NULL, *tables, *back, *ca = NULL, *cb = NULL, *rows;
  struct store_fleet_tables out = { 0 };
  int64_t cap, copy = 0, again = 0;
  const char *key;
  char *text;

  CHECK_INT(store_fleet_enable(node, true, &err), 0);
  capture_in(lab, "failed"); /* ids differ between the two files */
  cap = real_capture(node);
  CHECK_INT(store_outbox_next(node, &it, &err), 0);
  CHECK_INT(it.capture_id, cap);
  CHECK_INT(store_fleet_export(node, cap, &x, &out, &err), 0);
  tables = json_object();
  for (size_t i = 0; i < out.n; i++) {
    json_t *rows = json_loads(out.text.p + out.t[i].at, 0, NULL);

    CHECK(rows != NULL && json_is_array(rows));
    json_object_set_new(tables, out.t[i].name, rows);
  }
  store_fleet_tables_free(&out);
  for (const char *t = "kernels\0launches\0idle\0timeline\0capture_results\0"
                       "collective_families\0ranks\0captures\0";
       *t; t += strlen(t) + 1)
    CHECK(json_object_get(tables, t) != NULL);
  CHECK(json_object_get(tables, "sum_rows") == NULL);
  CHECK(json_object_get(tables, "baselines") == NULL);
  CHECK_INT(json_array_size(json_object_get(tables, "ranks")), NTRACES);
  CHECK_STR(
      json_string_value(json_object_get(
          json_object_get(
              json_array_get(json_object_get(tables, "captures"), 0), "label"),
          "$hex")),
      "62616420ff206c6162656c");
  CHECK_STR(json_string_value(json_object_get(x, "config")),
            "[\"/m/x\",3,null,null,null,null,0]");
  /* Table by table, as the lab view reads them from PostgreSQL. */
  back = json_object();
  json_object_foreach(tables, key, rows) {
    text = json_dumps(rows, JSON_COMPACT);
    json_object_set_new(back, key, json_loads(text, 0, NULL));
    free(text);
  }
  follow(lab, "fleet-1", 1, "n1", it.uuid, cap, "[]", "", 5);
  CHECK_INT(store_fleet_import(lab, "n1", it.uuid, back, 1000, &copy, &err), 0);
  CHECK(copy != cap);
  CHECK_INT(store_fleet_import(lab, "n1", it.uuid, back, 1000, &again, &err),
            0);
  CHECK_INT(again, copy); /* copied once */
  same_answers(node, cap, lab, copy);
  CHECK_INT(store_capture_get(node, cap, &ca, &err), 0);
  CHECK_INT(store_capture_get(lab, copy, &cb, &err), 0);
  json_object_set_new(cb, "id", json_integer(cap));
  CHECK(json_equal(ca, cb));
  CHECK_INT(fx_count(pb,
                     "SELECT count(*) FROM captures WHERE label ="
                     " CAST(x'62616420ff206c6162656c' AS TEXT)"
                     " AND id = ?1",
                     copy),
            1);
  json_decref(ca);
  json_decref(cb);
  json_decref(back);
  json_decref(tables);
  json_decref(x);
  store_close(node);
  store_close(lab);
  fx_db_remove(pa);
  fx_db_remove(pb);
}

/* ---- the lab view's index ---- */

static const char *const U[] = { "00000000-0000-4000-8000-000000000001",
                                 "00000000-0000-4000-8000-000000000002",
                                 "00000000-0000-4000-8000-000000000003",
                                 "00000000-0000-4000-8000-000000000004" };

/* The list's text, parsed. */
static json_t *listed(struct store *st, const struct store_fleet_filter *f)
{
  struct tr_buf b = { 0 };
  struct tr_err err = { 0 };
  json_t *v;

  CHECK_INT(store_fleet_list(st, f, &b, &err), 0);
  v = json_loads(b.p, 0, NULL);
  CHECK(v != NULL);
  tr_buf_free(&b);
  return v;
}

static void store_fleet_index(void)
{
  struct store_fleet_filter f = { .limit = 10 };
  struct store_fleet_ref ref, base;
  struct tr_err err = { 0 };
  char path[256];
  struct store *st = open_db(path, sizeof(path));
  json_t *list = NULL,
         *tables =
             json_pack("{s:[{s:s,s:s,s:s,s:s,s:I}],s:[]}", "captures", "kind",
                       "import", "status", "done", "phase", "done", "params",
                       "{}", "created_at", (json_int_t)1, "ranks");
  int64_t *drop = NULL, copy = 0;
  size_t ndrop = 0;

  /* n1:5 twice (its database made anew), n2:5, n2:6 of another GPU. */
  follow(st, "F", 1, "n1", U[0], 5, "[\"m\",8]", "MI300X", 100);
  follow(st, "F", 2, "n2", U[1], 5, "[\"m\",8]", "MI300X", 200);
  follow(st, "F", 3, "n2", U[2], 6, "[\"m\",8]", "MI355X", 300);
  follow(st, "F", 4, "n1", U[3], 5, "[\"m\",8]", "MI300X", 400);
  CHECK_INT(store_fleet_resolve(st, "n1", 5, NULL, &ref, &err), 0);
  CHECK_STR(ref.uuid, U[3]);
  CHECK_INT(store_fleet_resolve(st, NULL, 0, U[0], &ref, &err), 0);
  CHECK_STR(ref.node, "n1");
  CHECK_INT(store_fleet_resolve(st, "n3", 5, NULL, &ref, &err), TR_ENOTFOUND);
  /* The baseline: same configuration and GPU, any node, before it. */
  CHECK_INT(store_fleet_resolve(st, "n1", 5, NULL, &ref, &err), 0);
  CHECK_INT(store_fleet_baseline(st, &ref, &base, &err), 0);
  CHECK_STR(base.uuid, U[1]);
  CHECK_INT(store_fleet_resolve(st, "n2", 6, NULL, &ref, &err), 0);
  CHECK_INT(store_fleet_baseline(st, &ref, &base, &err), 1);
  /* The list: newest first, refs, filters, pages. */
  list = listed(st, &f);
  CHECK_INT(json_array_size(json_object_get(list, "captures")), 4);
  CHECK_STR(json_string_value(json_object_get(
                json_array_get(json_object_get(list, "captures"), 0), "ref")),
            "n1:5");
  CHECK_STR(json_string_value(json_object_get(
                json_array_get(json_object_get(list, "captures"), 3), "ref")),
            U[0]);
  json_decref(list);
  f.node = "n2";
  f.gpu = "MI355X";
  list = listed(st, &f);
  CHECK_INT(json_array_size(json_object_get(list, "captures")), 1);
  json_decref(list);
  f = (struct store_fleet_filter){ .limit = 3 };
  list = listed(st, &f);
  CHECK(json_is_string(json_object_get(list, "next_before")));
  CHECK_INT(sscanf(json_string_value(json_object_get(list, "next_before")),
                   "%" SCNd64 ".%" SCNd64, &f.before_at, &f.before_lid),
            2);
  json_decref(list);
  list = listed(st, &f);
  CHECK_INT(json_array_size(json_object_get(list, "captures")), 1);
  json_decref(list);
  /* A copy; its capture deleted in the fleet: the copy goes. */
  CHECK_INT(store_fleet_import(st, "n2", U[1], tables, 10, &copy, &err), 0);
  {
    struct store_fleet_row gone = {
      .node = "n2", .uuid = U[1], .id = 5, .seq = 5, .deleted = true
    };

    CHECK_INT(store_fleet_apply(st, "F", 5, &gone, 1, &drop, &ndrop, &err), 0);
    CHECK_INT(ndrop, 1);
    CHECK_INT(drop[0], copy);
    free(drop);
  }
  CHECK_INT(fx_count(path, "SELECT count(*) FROM captures WHERE id = ?1", copy),
            0);
  /* Copies past the bound go, oldest first. */
  CHECK_INT(store_fleet_import(st, "n1", U[0], tables, 10, &copy, &err), 0);
  CHECK_INT(store_fleet_import(st, "n1", U[3], tables, 10, &copy, &err), 0);
  CHECK_INT(store_fleet_evict(st, 15, &drop, &ndrop, &err), 0);
  CHECK_INT(ndrop, 1);
  CHECK(drop[0] != copy);
  free(drop);
  /* Another fleet: nothing of the old one stays. */
  follow(st, "G", 1, "n9", U[2], 1, NULL, NULL, 1);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM fleet_index", -1), 1);
  CHECK_INT(fx_count(path, "SELECT count(*) FROM captures", -1), 0);
  json_decref(tables);
  store_close(st);
  fx_db_remove(path);
}

int main(void)
{
  RUN(store_fleet_outbox_triggers);
  RUN(store_fleet_backfill_and_order);
  RUN(store_fleet_copy_answers);
  RUN(store_fleet_index);
  return 0;
}
