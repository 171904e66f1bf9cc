/*
 * The publisher: a node's outbox (store/fleet_out.c) sent to the fleet's
 * PostgreSQL, one capture per transaction, oldest first, retried with
 * backoff while PostgreSQL is down or refuses; the outbox is in the
 * node's SQLite, so a restart loses nothing.
 *
 * Where it runs: libuv's thread pool, one step at a time (a step: the
 * outbox's head read, the capture exported from SQLite in one snapshot,
 * sent in one transaction, the head removed), scheduled by a timer on the
 * loop. Not on the loop with uv_poll and libpq's non-blocking calls:
 * a publish begins with blocking SQLite reads and the JSON of up to
 * megabytes of rows, which belong in the pool anyway; libpq resolves
 * host names synchronously even in PQconnectStart(), and a DNS lookup
 * must never run on the loop; and with one publish at a time, blocking
 * calls bounded by connect_timeout, statement_timeout and TCP timeouts
 * (fleet_pg_connect()) cost one pool thread for at most those bounds
 * (the pool has one thread more for it: daemon.c), where non-blocking
 * ones would cost a state machine as long as this file.
 *
 * Never lost, never doubled: a capture's row is keyed by (node, UUID) and
 * inserted ON CONFLICT DO NOTHING, its tables only when the row is new,
 * in the same transaction; the outbox row is removed only after the
 * commit. A crash between the two sends it again, which changes nothing.
 * A delete leaves a tombstone (deleted, its tables gone) so that the lab
 * views hear of it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reals.h"
#include "fleet/fleet_int.h"

#define IDLE_MS        1000  /* the outbox is looked at this often */
#define BACKOFF_MIN_MS 1000  /* after a failure, doubling... */
#define BACKOFF_MAX_MS 60000 /* ...up to */
#define BACKFILL_MAX   256   /* captures put in the outbox by one step */
#define CONNECT_S      5

enum step { STEP_IDLE, STEP_MORE, STEP_FAILED };

struct fleet_pub {
  uv_loop_t *loop;
  const struct cfg *cfg;
  uv_timer_t timer;
  uv_work_t work;
  bool busy, stopping;
  void (*done)(void *ud);
  void *done_ud;
  unsigned backoff_ms;
  uint64_t granted_at; /* uv_now() when backfill budget was last given */
  bool fault_after_commit;

  /* The step's own: touched by one pool job at a time. */
  struct store *st;
  PGconn *pg;
  bool backfilling; /* until a backfill finds nothing */
  int budget;       /* captures the step may backfill */
  enum step step;
  char logged[512]; /* the last failure said on stderr */

  pthread_mutex_t cancel_lock; /* guards cancel: the loop reads it */
  PGcancel *cancel;
};

/* ---- one step (a pool thread) ---- */

static void drop_connection(struct fleet_pub *p)
{
  pthread_mutex_lock(&p->cancel_lock);
  PQfreeCancel(p->cancel);
  p->cancel = NULL;
  pthread_mutex_unlock(&p->cancel_lock);
  PQfinish(p->pg);
  p->pg = NULL;
  atomic_store(&fleet_stats.connected, false);
}

/* RLS lets a node's role write the rows of the node named as it; a role
 * that bypasses RLS (the owner, a superuser) may publish as any node. */
static int check_role(struct fleet_pub *p, struct tr_err *err)
{
  PGresult *r = NULL;
  int rc = fleet_pg_exec(
      p->pg,
      "SELECT current_user::text, r.rolsuper OR r.rolbypassrls OR"
      " pg_has_role(current_user, c.relowner, 'USAGE')"
      " FROM pg_roles r, pg_class c WHERE r.rolname = current_user"
      " AND c.oid = 'fleet.captures'::regclass",
      0, NULL, &r, err);

  if (rc == 0 && PQntuples(r) == 1 &&
      strcmp(PQgetvalue(r, 0, 0), p->cfg->node_name) != 0 &&
      strcmp(PQgetvalue(r, 0, 1), "t") != 0)
    rc = tr_err_set(err, TR_EAUTH, "node_name",
                    "node_name is \"%s\" but fleet_dsn's role is \"%s\": a "
                    "node's role is named as the node, and may write only "
                    "that node's rows (docs/FLEET.md)",
                    p->cfg->node_name, PQgetvalue(r, 0, 0));
  PQclear(r);
  return rc;
}

static int register_node(struct fleet_pub *p, struct tr_err *err)
{
  const char *vals[] = { p->cfg->node_name, p->cfg->node_url, TRACED_VERSION };

  return fleet_pg_exec(
      p->pg,
      "INSERT INTO fleet.nodes(node, url, traced_version, seen_at)"
      " VALUES($1, $2, $3, now()) ON CONFLICT (node) DO UPDATE SET"
      " url = excluded.url, traced_version = excluded.traced_version,"
      " seen_at = now()",
      3, vals, NULL, err);
}

static int connect_fleet(struct fleet_pub *p, struct tr_err *err)
{
  int rc;

  if (!fleet_pg_broken(p->pg))
    return 0;
  drop_connection(p);
  rc = fleet_pg_connect(p->cfg->fleet_dsn, p->cfg->node_name, CONNECT_S,
                        p->cfg->fleet_timeout_s * 1000, &p->pg, err);
  if (rc == 0)
    rc = fleet_schema_ready(p->pg, true, err);
  if (rc == 0)
    rc = check_role(p, err);
  if (rc == 0)
    rc = register_node(p, err);
  if (rc < 0) {
    drop_connection(p);
    return rc;
  }
  pthread_mutex_lock(&p->cancel_lock);
  p->cancel = PQgetCancel(p->pg);
  pthread_mutex_unlock(&p->cancel_lock);
  atomic_store(&fleet_stats.connected, true);
  return 0;
}

static int exec(struct fleet_pub *p, const char *sql, struct tr_err *err)
{
  return fleet_pg_exec(p->pg, sql, 0, NULL, NULL, err);
}

/* sql on this node's capture uuid: $1 the node, $2 the uuid. */
static int exec_capture(struct fleet_pub *p, const char *sql, const char *uuid,
                        struct tr_err *err)
{
  const char *vals[] = { p->cfg->node_name, uuid };

  return fleet_pg_exec(p->pg, sql, 2, vals, NULL, err);
}

/* Gives the row of (node, uuid) the next change seq, under the lock that
 * orders the fleet's changes (released by the commit). */
static int take_seq(struct fleet_pub *p, const char *uuid, struct tr_err *err)
{
  char lock[32];
  const char *lock_vals[] = { lock };
  int rc;

  snprintf(lock, sizeof(lock), "%lld", FLEET_LOCK_SEQ);
  rc = fleet_pg_exec(p->pg, "SELECT pg_advisory_xact_lock($1)", 1, lock_vals,
                     NULL, err);
  if (rc == 0)
    rc = exec_capture(p,
                      "UPDATE fleet.captures SET"
                      " seq = nextval('fleet.change_seq')"
                      " WHERE node = $1 AND uuid = $2::uuid",
                      uuid, err);
  return rc;
}

/* A member of the brief as text (NULL when absent or null); numbers and
 * objects as their JSON. buf holds what is made. */
static const char *text_of(json_t *v, char *buf, size_t size)
{
  if (json_is_string(v))
    return json_string_value(v);
  if (v == NULL || json_is_null(v))
    return NULL;
  if (json_is_integer(v)) {
    snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    return buf;
  }
  return NULL;
}

#define CAPTURE_PARAMS 16

/* The statement inserting the capture's row, and its n tables only when
 * the row is new: one (name, rows) pair of parameters each after the
 * capture's CAPTURE_PARAMS. */
static char *insert_sql(size_t n)
{
  struct tr_buf b = { 0 };

  tr_buf_printf(&b, "WITH c AS (INSERT INTO fleet.captures(node, uuid, id,"
                    " kind, status, label, model, config, gpu, created_at,"
                    " finished_at, verdict, figures, capture, store_version,"
                    " traced_version) VALUES($1, $2::uuid, $3::bigint, $4,"
                    " $5, $6, $7, $8, $9, $10::timestamptz,"
                    " $11::timestamptz, $12, $13::jsonb, $14::jsonb,"
                    " $15::int, $16) ON CONFLICT (node, uuid) DO NOTHING"
                    " RETURNING node, uuid)"
                    " INSERT INTO fleet.capture_tables(node, uuid, tbl, rows)"
                    " SELECT c.node, c.uuid, v.tbl, v.rows FROM c, (VALUES");
  for (size_t i = 0; i < n; i++)
    tr_buf_printf(&b, "%s($%zu::text, $%zu::text)", i ? ", " : " ",
                  CAPTURE_PARAMS + 2 * i + 1, CAPTURE_PARAMS + 2 * i + 2);
  tr_buf_printf(&b, ") AS v(tbl, rows)");
  return b.failed ? (tr_buf_free(&b), NULL) : b.p;
}

/* The capture's row and its tables, inserted only when the row is new:
 * *fresh says whether it was. */
static int insert_capture(struct fleet_pub *p, const char *uuid, json_t *x,
                          const struct store_fleet_tables *t, bool *fresh,
                          struct tr_err *err)
{
  json_t *brief = json_object_get(x, "brief");
  size_t nvals = CAPTURE_PARAMS + 2 * t->n;
  const char **vals = calloc(nvals, sizeof(*vals));
  char id[32], version[16];
  char *figures = tr_json_dumps(json_object_get(x, "figures"),
                                JSON_COMPACT | JSON_ENCODE_ANY);
  char *cap = tr_json_dumps(brief, JSON_COMPACT);
  char *sql = insert_sql(t->n);
  PGresult *r = NULL;
  int rc = vals && figures && cap && sql
               ? 0
               : tr_err_set(err, TR_ENOMEM, "", "fleet: out of memory");

  if (rc == 0) {
    const char *head[CAPTURE_PARAMS] = {
      p->cfg->node_name,
      uuid,
      text_of(json_object_get(brief, "id"), id, sizeof(id)),
      json_string_value(json_object_get(brief, "kind")),
      json_string_value(json_object_get(brief, "status")),
      json_string_value(json_object_get(brief, "label")),
      json_string_value(
          json_object_get(json_object_get(brief, "params"), "model")),
      json_string_value(json_object_get(x, "config")),
      json_string_value(json_object_get(x, "gpu")),
      json_string_value(json_object_get(brief, "created_at")),
      json_string_value(json_object_get(brief, "finished_at")),
      json_string_value(
          json_object_get(json_object_get(brief, "verdict"), "verdict")),
      figures,
      cap,
      text_of(json_object_get(x, "store_version"), version, sizeof(version)),
      TRACED_VERSION
    };

    memcpy(vals, head, sizeof(head));
    for (size_t i = 0; i < t->n; i++) {
      vals[CAPTURE_PARAMS + 2 * i] = t->t[i].name;
      vals[CAPTURE_PARAMS + 2 * i + 1] = t->text.p + t->t[i].at;
    }
    rc = fleet_pg_exec(p->pg, sql, (int)nvals, vals, &r, err);
  }
  if (rc == 0)
    *fresh = strtoll(PQcmdTuples(r), NULL, 10) > 0;
  PQclear(r);
  free(vals);
  free(figures);
  free(cap);
  free(sql);
  return rc;
}

/* BEGIN, body(p, ctx), then COMMIT, or ROLLBACK when body failed. */
static int transaction(struct fleet_pub *p,
                       int (*body)(struct fleet_pub *, const void *ctx,
                                   struct tr_err *),
                       const void *ctx, struct tr_err *err)
{
  int rc = exec(p, "BEGIN", err);

  if (rc == 0)
    rc = body(p, ctx, err);
  if (rc == 0)
    rc = exec(p, "COMMIT", err);
  else if (!fleet_pg_broken(p->pg))
    PQclear(PQexec(p->pg, "ROLLBACK"));
  return rc;
}

struct publish {
  const struct store_outbox_item *it;
  json_t *x;
  const struct store_fleet_tables *tables;
};

/* The capture and its tables; a new change seq when it is new. */
static int publish_body(struct fleet_pub *p, const void *ctx,
                        struct tr_err *err)
{
  const struct publish *c = ctx;
  bool fresh = false;
  int rc = insert_capture(p, c->it->uuid, c->x, c->tables, &fresh, err);

  return rc == 0 && fresh ? take_seq(p, c->it->uuid, err) : rc;
}

/* The tombstone: the row stays (deleted, a new seq), its tables go. */
static int delete_body(struct fleet_pub *p, const void *ctx, struct tr_err *err)
{
  const struct store_outbox_item *it = ctx;
  int rc = exec_capture(p,
                        "DELETE FROM fleet.capture_tables"
                        " WHERE node = $1 AND uuid = $2::uuid",
                        it->uuid, err);

  if (rc == 0)
    rc = exec_capture(p,
                      "UPDATE fleet.captures SET deleted = true,"
                      " deleted_at = now(), capture = NULL, figures = NULL"
                      " WHERE node = $1 AND uuid = $2::uuid AND NOT deleted",
                      it->uuid, err);
  return rc == 0 ? take_seq(p, it->uuid, err) : rc;
}

static void refresh_stats(struct fleet_pub *p)
{
  int64_t length = 0, oldest = 0;

  if (store_outbox_stats(p->st, &length, &oldest, NULL) == 0) {
    atomic_store(&fleet_stats.outbox, length);
    atomic_store(&fleet_stats.oldest_ms, oldest);
  }
}

/* The head of the outbox sent: 0, or an error (PostgreSQL's refusals of
 * this capture are counted on its row). */
static int send_one(struct fleet_pub *p, const struct store_outbox_item *it,
                    struct tr_err *err)
{
  struct store_fleet_tables tables = { 0 };
  json_t *x = NULL;
  int rc =
      it->del ? 0 : store_fleet_export(p->st, it->capture_id, &x, &tables, err);

  if (rc == TR_ENOTFOUND) { /* deleted since: its delete row follows */
    store_fleet_tables_free(&tables);
    return store_outbox_done(p->st, it->seq, err);
  }
  if (rc == 0 && it->del) {
    rc = transaction(p, delete_body, it, err);
  } else if (rc == 0) {
    const struct publish c = { it, x, &tables };

    rc = transaction(p, publish_body, &c, err);
  }
  json_decref(x);
  store_fleet_tables_free(&tables);
  if (rc == 0 && p->fault_after_commit)
    raise(SIGKILL); /* tests: a crash between the commit and the outbox */
  if (rc == 0) {
    atomic_fetch_add(it->del ? &fleet_stats.deleted : &fleet_stats.published,
                     1);
    return store_outbox_done(p->st, it->seq, err);
  }
  if (!fleet_pg_broken(p->pg))
    store_outbox_failed(p->st, it->seq, err->msg, NULL);
  return rc;
}

/* Old captures into the outbox, at most the budget the loop gave: the
 * backfill ends when it finds fewer than it may take. */
static int backfill(struct fleet_pub *p, struct tr_err *err)
{
  int added = 0;
  int rc = store_outbox_backfill(p->st, p->budget, &added, err);

  if (rc == 0) {
    p->backfilling = added == p->budget;
    atomic_fetch_add(&fleet_stats.backfilled, (uint64_t)added);
  }
  return rc;
}

/* One step: the outbox's head sent. PostgreSQL is connected to only when
 * there is something to send. */
static enum step step(struct fleet_pub *p, struct tr_err *err)
{
  struct store_outbox_item it;
  int rc = 0;

  if (p->st == NULL && store_open(p->cfg->db, STORE_RW, &p->st, err) != 0) {
    p->st = NULL;
    return STEP_FAILED;
  }
  if (p->backfilling && p->budget > 0)
    rc = backfill(p, err);
  refresh_stats(p);
  if (rc == 0)
    rc = store_outbox_next(p->st, &it, err);
  if (rc == 0)
    rc = connect_fleet(p, err);
  if (rc == 0)
    rc = send_one(p, &it, err);
  if (rc < 0 && fleet_pg_broken(p->pg))
    drop_connection(p);
  refresh_stats(p);
  return rc < 0 ? STEP_FAILED : rc == 1 ? STEP_IDLE : STEP_MORE;
}

static void run_step(uv_work_t *w)
{
  struct fleet_pub *p = w->data;
  struct tr_err err = { 0 };

  p->step = step(p, &err);
  if (p->step == STEP_FAILED) {
    atomic_fetch_add(&fleet_stats.failures, 1);
    fleet_stats_error(false, err.msg);
    if (strcmp(err.msg, p->logged) != 0)
      fprintf(stderr, "traced: fleet: %s (retrying)\n", err.msg);
    snprintf(p->logged, sizeof(p->logged), "%s", err.msg);
  } else if (p->logged[0] != '\0') {
    fprintf(stderr, "traced: fleet: publishing again\n");
    p->logged[0] = '\0';
    fleet_stats_error(false, NULL);
  }
}

/* ---- the loop's side ---- */

static void on_timer(uv_timer_t *t);

static void on_closed(uv_handle_t *h)
{
  struct fleet_pub *p = h->data;

  if (p->done != NULL)
    p->done(p->done_ud);
}

static void after_step(uv_work_t *w, int status)
{
  struct fleet_pub *p = w->data;
  uint64_t wait = IDLE_MS;

  (void)status;
  p->busy = false;
  if (p->stopping) {
    uv_close((uv_handle_t *)&p->timer, on_closed);
    return;
  }
  if (p->step == STEP_FAILED) {
    wait = p->backoff_ms;
    p->backoff_ms =
        p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : p->backoff_ms * 2;
  } else {
    p->backoff_ms = BACKOFF_MIN_MS;
    if (p->step == STEP_MORE)
      wait = 0;
  }
  uv_timer_start(&p->timer, on_timer, wait, 0);
}

/* Backfill's budget: fleet_backfill_per_s for each second since the last
 * grant, at most BACKFILL_MAX at once. */
static int grant(struct fleet_pub *p)
{
  uint64_t now = uv_now(p->loop);
  uint64_t n =
      (now - p->granted_at) * (uint64_t)p->cfg->fleet_backfill_per_s / 1000;

  if (n == 0)
    return 0;
  p->granted_at = now;
  return n > BACKFILL_MAX ? BACKFILL_MAX : (int)n;
}

static void on_timer(uv_timer_t *t)
{
  struct fleet_pub *p = t->data;

  if (p->busy || p->stopping)
    return;
  p->budget = p->backfilling ? grant(p) : 0;
  p->busy = true;
  uv_queue_work(p->loop, &p->work, run_step, after_step);
}

int fleet_pub_start(uv_loop_t *loop, const struct cfg *cfg,
                    struct fleet_pub **out, struct tr_err *err)
{
  struct fleet_pub *p;
  const char *fault = getenv("TRACED_FLEET_FAULT");

  if (fleet_dsn_check(cfg->fleet_dsn, err) != 0)
    return TR_EINVAL;
  p = calloc(1, sizeof(*p));
  if (p == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  p->loop = loop;
  p->cfg = cfg;
  p->backoff_ms = BACKOFF_MIN_MS;
  p->backfilling = true;
  /* One backfill second's worth at once, then the rate. */
  p->granted_at = uv_now(loop) - 1000;
  p->fault_after_commit = fault != NULL && !strcmp(fault, "exit_after_commit");
  p->work.data = p;
  pthread_mutex_init(&p->cancel_lock, NULL);
  uv_timer_init(loop, &p->timer);
  p->timer.data = p;
  atomic_store(&fleet_stats.publishing, true);
  uv_timer_start(&p->timer, on_timer, 0, 0);
  *out = p;
  return 0;
}

void fleet_pub_stop(struct fleet_pub *p, void (*done)(void *ud), void *ud)
{
  char why[256];

  if (p == NULL || p->stopping)
    return;
  p->stopping = true;
  p->done = done;
  p->done_ud = ud;
  if (!p->busy) {
    uv_close((uv_handle_t *)&p->timer, on_closed);
    return;
  }
  /* The step ends at its next libpq call's answer: cut it short. */
  pthread_mutex_lock(&p->cancel_lock);
  if (p->cancel != NULL)
    PQcancel(p->cancel, why, sizeof(why));
  pthread_mutex_unlock(&p->cancel_lock);
}

void fleet_pub_free(struct fleet_pub *p)
{
  if (p == NULL)
    return;
  drop_connection(p);
  store_close(p->st);
  pthread_mutex_destroy(&p->cancel_lock);
  atomic_store(&fleet_stats.publishing, false);
  free(p);
}
