/*
 * The lab view: a traced with fleet_view serves every node's captures.
 *
 * Its own database file (<db>.fleet) holds a mirror of the fleet's list
 * and the captures asked for, copied in (store/fleet_lab.c); the HTTP
 * threads answer from that file with the store's own queries, so a
 * capture's figures are its node's, byte for byte.
 *
 * How PostgreSQL is read, and who waits for it:
 *   - a follower thread polls the changes (fleet.captures WHERE seq > the
 *     last one applied, in pages) every POLL_MS and applies them to the
 *     mirror; lists, trends and baselines read the mirror only, so an
 *     HTTP thread never waits for PostgreSQL to list;
 *   - a capture's rows are read when it is first asked for, by the HTTP
 *     thread asking, on a connection of that thread's own whose
 *     statement_timeout is fleet_read_timeout_ms; after a connection
 *     failure the others fail at once for DOWN_MS (503) instead of each
 *     waiting for its own connect_timeout, unless the follower reaches
 *     PostgreSQL again first (it ends that window at once). Copies answer
 *     from then on (and keep answering while PostgreSQL is away), up to
 *     fleet_cache_mb, oldest copy out first.
 * Only reads are made (SELECT; on a hot standby too: docs/FLEET.md).
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/perthread.h"
#include "fleet/fleet_int.h"

#define POLL_MS     500
#define BACKOFF_MAX 30000
#define PAGE        500 /* changes read at once */
#define NODES_EVERY 10  /* polls between reads of the nodes */
#define CONNECT_S   2   /* libpq's least connect_timeout */
#define DOWN_MS     2000

struct lab_thread {
  struct tr_perthread_item link;
  struct store *st[2]; /* [STORE_RW], [STORE_RO] */
  PGconn *pg;
};

struct fleet_lab {
  const struct cfg *cfg;
  char *path; /* <db>.fleet */
  pthread_t follower;
  bool started;
  pthread_mutex_t lock; /* guards the members below */
  pthread_cond_t wake;
  bool stopping;
  void (*on_drop)(void *ud, int64_t id);
  void *drop_ud;
  struct tr_perthread threads; /* each HTTP thread's struct lab_thread */
  atomic_int_least64_t down_until_ms;
};

/* ---- the follower ---- */

/* Calls on_drop for each id, then frees ids. Under the lock: once
 * fleet_lab_on_drop() has taken the callback away, it is not running. */
static void dropped(struct fleet_lab *lab, int64_t *ids, size_t n)
{
  pthread_mutex_lock(&lab->lock);
  for (size_t i = 0; lab->on_drop != NULL && i < n; i++)
    lab->on_drop(lab->drop_ud, ids[i]);
  pthread_mutex_unlock(&lab->lock);
  free(ids);
}

static const char *value(PGresult *r, int row, int col)
{
  return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static int64_t int_value(PGresult *r, int row, int col)
{
  const char *v = value(r, row, col);

  return v != NULL ? strtoll(v, NULL, 10) : 0;
}

/* The page of changes after seq, as rows pointing into r. */
static struct store_fleet_row *rows_of(PGresult *r, int n)
{
  struct store_fleet_row *rows = calloc((size_t)n + 1, sizeof(*rows));

  for (int i = 0; rows != NULL && i < n; i++) {
    struct store_fleet_row *x = &rows[i];

    x->node = value(r, i, 0);
    x->uuid = value(r, i, 1);
    x->id = int_value(r, i, 2);
    x->seq = int_value(r, i, 3);
    x->deleted = strcmp(PQgetvalue(r, i, 4), "t") == 0;
    x->kind = value(r, i, 5);
    x->status = value(r, i, 6);
    x->label = value(r, i, 7);
    x->model = value(r, i, 8);
    x->config = value(r, i, 9);
    x->gpu = value(r, i, 10);
    x->created_at = int_value(r, i, 11);
    x->finished_at = int_value(r, i, 12);
    x->verdict = value(r, i, 13);
    x->figures = value(r, i, 14);
    x->brief = value(r, i, 15);
  }
  return rows;
}

#define NS_OF(col) "(extract(epoch FROM " col ") * 1000000)::bigint * 1000"

/* The nodes as the fleet has them now (their urls, versions, last seen). */
static int follow_nodes(struct store *st, PGconn *pg, struct tr_err *err)
{
  PGresult *r = NULL;
  json_t *nodes = json_array();
  int rc = fleet_pg_exec(
      pg,
      "SELECT node, url, traced_version, " NS_OF("seen_at") " FROM fleet.nodes",
      0, NULL, &r, err);

  for (int i = 0; rc == 0 && i < PQntuples(r); i++)
    json_array_append_new(
        nodes, json_pack("{s:s?,s:s?,s:s?,s:I}", "node", value(r, i, 0), "url",
                         value(r, i, 1), "traced_version", value(r, i, 2),
                         "seen_at", (json_int_t)int_value(r, i, 3)));
  if (rc == 0)
    rc = store_fleet_nodes_set(st, nodes, err);
  json_decref(nodes);
  PQclear(r);
  return rc;
}

/* The changes after $1, in the order they were committed (rows_of()'s
 * columns). */
static const char changes_sql[] =
    "SELECT node, uuid::text, id, seq, deleted, kind, status, label, model,"
    " config, gpu, " NS_OF("created_at") ", " NS_OF(
        "finished_at") ","
                       " verdict, figures::text, capture::text FROM "
                       "fleet.captures"
                       " WHERE seq > $1 ORDER BY seq LIMIT 500";

/* The changes after the last followed, applied; the nodes read first
 * when there are any, or when nodes_due. */
static int follow_changes(struct fleet_lab *lab, struct store *st, PGconn *pg,
                          const char *fleet, bool nodes_due, bool *more,
                          struct tr_err *err)
{
  char followed[64], after[32];
  const char *vals[] = { after };
  struct store_fleet_row *rows = NULL;
  int64_t seq = 0, *drop = NULL;
  size_t ndrop = 0;
  PGresult *r = NULL;
  int n = 0;
  int rc = store_fleet_follow_get(st, followed, &seq, err);

  if (rc == 0 && strcmp(followed, fleet) != 0)
    seq = 0; /* another fleet: read it from its start */
  snprintf(after, sizeof(after), "%lld", (long long)seq);
  if (rc == 0)
    rc = fleet_pg_exec(pg, changes_sql, 1, vals, &r, err);
  if (rc == 0 && (n = PQntuples(r)) > 0 && (rows = rows_of(r, n)) == NULL)
    rc = tr_err_set(err, TR_ENOMEM, "", "fleet follow");
  /* A node registers before it publishes (fleet/publish.c), so nodes read
   * after the changes hold every node they name: no capture is listed
   * here before its node's url. */
  if (rc == 0 && (n > 0 || nodes_due))
    rc = follow_nodes(st, pg, err);
  if (rc == 0 && (n > 0 || strcmp(followed, fleet) != 0))
    rc = store_fleet_apply(st, fleet, n > 0 ? rows[n - 1].seq : seq, rows,
                           (size_t)n, &drop, &ndrop, err);
  if (rc == 0) {
    dropped(lab, drop, ndrop);
    atomic_store(&fleet_stats.followed_seq, n > 0 ? rows[n - 1].seq : seq);
    *more = n == PAGE;
  }
  free(rows);
  PQclear(r);
  return rc;
}

/* The follower's connection and state, its thread's own. */
struct follow {
  struct store *st;
  PGconn *pg;
  char fleet[64];
  unsigned polls;
};

static int follow_once(struct fleet_lab *lab, struct follow *f, bool *more,
                       struct tr_err *err)
{
  int rc = 0;

  if (f->st == NULL && store_open(lab->path, STORE_RW, &f->st, err) != 0) {
    f->st = NULL;
    return TR_EDB;
  }
  if (fleet_pg_broken(f->pg)) {
    PQfinish(f->pg);
    f->pg = NULL;
    rc = fleet_pg_connect(lab->cfg->fleet_dsn, "lab view", CONNECT_S,
                          lab->cfg->fleet_read_timeout_ms, &f->pg, err);
    if (rc == 0)
      rc = fleet_schema_ready(f->pg, false, err);
    if (rc == 0)
      rc = fleet_schema_id(f->pg, f->fleet, err);
    f->polls = 0;
  }
  if (rc == 0)
    rc = follow_changes(lab, f->st, f->pg, f->fleet,
                        f->polls++ % NODES_EVERY == 0, more, err);
  return rc;
}

static void evict(struct fleet_lab *lab, struct store *st)
{
  int64_t *drop = NULL;
  size_t n = 0;

  if (st != NULL &&
      store_fleet_evict(st, (int64_t)lab->cfg->fleet_cache_mb << 20, &drop, &n,
                        NULL) == 0)
    dropped(lab, drop, n);
}

/* Sleeps ms, or until stopped: false when stopping. */
static bool nap(struct fleet_lab *lab, unsigned ms)
{
  struct timespec until;
  bool go;

  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (long)(ms % 1000) * 1000000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&lab->lock);
  while (!lab->stopping &&
         pthread_cond_timedwait(&lab->wake, &lab->lock, &until) == 0)
    ;
  go = !lab->stopping;
  pthread_mutex_unlock(&lab->lock);
  return go;
}

static void *follow_main(void *arg)
{
  struct fleet_lab *lab = arg;
  struct follow f = { 0 };
  unsigned wait = POLL_MS, backoff = POLL_MS;
  char logged[512] = "";

  do {
    struct tr_err err = { 0 };
    bool more = false;

    if (follow_once(lab, &f, &more, &err) == 0) {
      atomic_store(&fleet_stats.heard_ms, fleet_now_ms());
      atomic_store(&lab->down_until_ms, 0); /* it is back: readers try */
      fleet_stats_error(true, NULL);
      if (logged[0] != '\0')
        fprintf(stderr, "traced: fleet: the lab view reads the fleet again\n");
      logged[0] = '\0';
      wait = more ? 0 : POLL_MS;
      backoff = POLL_MS;
    } else {
      atomic_fetch_add(&fleet_stats.follow_failures, 1);
      fleet_stats_error(true, err.msg);
      if (strcmp(logged, err.msg) != 0)
        fprintf(stderr, "traced: fleet: lab view: %s (retrying)\n", err.msg);
      snprintf(logged, sizeof(logged), "%s", err.msg);
      PQfinish(f.pg);
      f.pg = NULL;
      wait = backoff;
      backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
    }
    evict(lab, f.st);
  } while (nap(lab, wait));
  PQfinish(f.pg);
  store_close(f.st);
  return NULL;
}

/* ---- the HTTP threads' side ---- */

static struct lab_thread *thread_of(struct fleet_lab *lab, struct tr_err *err)
{
  return tr_perthread_get(&lab->threads, sizeof(struct lab_thread), err);
}

static struct store *store_of(struct fleet_lab *lab, int mode,
                              struct tr_err *err)
{
  struct lab_thread *t = thread_of(lab, err);

  if (t == NULL)
    return NULL;
  if (t->st[mode] == NULL &&
      store_open(lab->path, mode, &t->st[mode], err) != 0)
    t->st[mode] = NULL;
  return t->st[mode];
}

struct store *fleet_lab_store(struct fleet_lab *lab, struct tr_err *err)
{
  return store_of(lab, STORE_RO, err);
}

static bool is_uuid(const char *s)
{
  size_t n = strlen(s);

  if (n != 36)
    return false;
  for (size_t i = 0; i < n; i++)
    if (i == 8 || i == 13 || i == 18 || i == 23
            ? s[i] != '-'
            : !isxdigit((unsigned char)s[i]))
      return false;
  return true;
}

bool fleet_ref_syntax(const char *text)
{
  return strchr(text, ':') != NULL || is_uuid(text);
}

/* "node:id" into node and *id, or a UUID into uuid. */
static int parse_ref(const char *ref, const char *field, char *node,
                     int64_t *id, char *uuid, struct tr_err *err)
{
  const char *colon = strchr(ref, ':');
  size_t n = colon ? (size_t)(colon - ref) : 0;
  char *end = NULL;
  long long v;

  if (colon == NULL && is_uuid(ref)) {
    snprintf(uuid, 40, "%s", ref);
    return 0;
  }
  if (colon != NULL && colon[1] >= '1' && colon[1] <= '9') {
    v = strtoll(colon + 1, &end, 10);
    if (n > 0 && n <= 63 && *end == '\0' && v > 0 &&
        strspn(ref, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                    "0123456789._-") == n) {
      memcpy(node, ref, n);
      node[n] = '\0';
      *id = v;
      return 0;
    }
  }
  return tr_err_set(err, TR_EINVAL, field,
                    "%s must be a capture id, node:id or a capture's UUID",
                    field);
}

/* A connection of this thread's own to read the fleet. */
static int reader(struct fleet_lab *lab, struct lab_thread *t,
                  struct tr_err *err)
{
  int64_t now = fleet_now_ms();
  int rc;

  if (!fleet_pg_broken(t->pg))
    return 0;
  if (now < atomic_load(&lab->down_until_ms))
    return tr_err_set(err, TR_EIO, "",
                      "the fleet's PostgreSQL could not be "
                      "reached a moment ago");
  PQfinish(t->pg);
  t->pg = NULL;
  rc = fleet_pg_connect(lab->cfg->fleet_dsn, "lab view", CONNECT_S,
                        lab->cfg->fleet_read_timeout_ms, &t->pg, err);
  if (rc < 0)
    atomic_store(&lab->down_until_ms, now + DOWN_MS);
  return rc;
}

/* The capture's tables as published: {table: rows}, *bytes of text. */
static int fetch(struct fleet_lab *lab, struct lab_thread *t,
                 const struct store_fleet_ref *ref, json_t **out,
                 int64_t *bytes, struct tr_err *err)
{
  int64_t max = (int64_t)lab->cfg->fleet_cache_mb << 20;
  char limit[32];
  const char *vals[] = { ref->node, ref->uuid, limit };
  json_t *tables = json_object();
  PGresult *r = NULL;
  int rc;

  snprintf(limit, sizeof(limit), "%lld", (long long)max);
  rc = fleet_pg_exec(t->pg,
                     "SELECT tbl, CASE WHEN pg_column_size(rows) <= $3::bigint"
                     " THEN rows::text END FROM fleet.capture_tables"
                     " WHERE node = $1 AND uuid = $2::uuid",
                     3, vals, &r, err);
  if (rc == 0 && PQntuples(r) == 0)
    rc = tr_err_set(err, TR_ENOTFOUND, "id", "the fleet no longer has %s:%lld",
                    ref->node, (long long)ref->id);
  *bytes = 0;
  for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
    json_t *rows;

    *bytes += PQgetlength(r, i, 1);
    if (PQgetisnull(r, i, 1) || *bytes > max)
      rc = tr_err_set(err, TR_ELIMIT, "id",
                      "%s:%lld is larger than fleet_cache_mb (%d MiB)",
                      ref->node, (long long)ref->id, lab->cfg->fleet_cache_mb);
    else if ((rows = json_loadb(PQgetvalue(r, i, 1),
                                (size_t)PQgetlength(r, i, 1), 0, NULL)) == NULL)
      rc = tr_err_set(err, TR_EIO, "id", "%s:%lld: table %s is not JSON",
                      ref->node, (long long)ref->id, PQgetvalue(r, i, 0));
    else
      json_object_set_new(tables, PQgetvalue(r, i, 0), rows);
  }
  PQclear(r);
  if (rc == 0)
    *out = tables;
  else
    json_decref(tables);
  return rc;
}

/* ref's rows read on this thread's connection; once more on a new one
 * when the one kept from before turns out broken (the server restarted
 * since: libpq learns it at the first statement). */
static int fetch_fresh(struct fleet_lab *lab, struct lab_thread *t,
                       const struct store_fleet_ref *ref, json_t **out,
                       int64_t *bytes, struct tr_err *err)
{
  bool kept = !fleet_pg_broken(t->pg);
  int rc = reader(lab, t, err);

  if (rc == 0)
    rc = fetch(lab, t, ref, out, bytes, err);
  if (rc == TR_EIO && kept && fleet_pg_broken(t->pg)) {
    tr_err_clear(err);
    rc = reader(lab, t, err);
    if (rc == 0)
      rc = fetch(lab, t, ref, out, bytes, err);
  }
  if (rc == TR_EIO && fleet_pg_broken(t->pg))
    atomic_store(&lab->down_until_ms, fleet_now_ms() + DOWN_MS);
  return rc;
}

/* ref copied in from PostgreSQL: ref->cache_id set. */
static int copy_in(struct fleet_lab *lab, struct store_fleet_ref *ref,
                   struct tr_err *err)
{
  struct lab_thread *t = thread_of(lab, err);
  struct store *rw = store_of(lab, STORE_RW, err);
  json_t *tables = NULL;
  int64_t bytes = 0;
  int rc = t != NULL && rw != NULL
               ? fetch_fresh(lab, t, ref, &tables, &bytes, err)
               : TR_EDB;

  if (rc == 0)
    rc = store_fleet_import(rw, ref->node, ref->uuid, tables, bytes,
                            &ref->cache_id, err);
  if (rc == 0)
    atomic_fetch_add(&fleet_stats.copies, 1);
  json_decref(tables);
  return rc;
}

int fleet_lab_get(struct fleet_lab *lab, const char *ref, const char *field,
                  struct store_fleet_ref *out, struct tr_err *err)
{
  char node[64] = "", uuid[40] = "";
  int64_t id = 0;
  struct store *ro;
  int rc = parse_ref(ref, field, node, &id, uuid, err);

  if (rc < 0)
    return rc;
  ro = store_of(lab, STORE_RO, err);
  if (ro == NULL)
    return TR_EDB;
  rc = store_fleet_resolve(ro, node, id, uuid[0] ? uuid : NULL, out, err);
  if (rc == TR_ENOTFOUND)
    snprintf(err->field, sizeof(err->field), "%s", field);
  if (rc == 0 && out->cache_id == 0)
    rc = copy_in(lab, out, err);
  return rc;
}

int fleet_lab_baseline(struct fleet_lab *lab, const struct store_fleet_ref *ref,
                       struct store_fleet_ref *out, struct tr_err *err)
{
  struct store *ro = store_of(lab, STORE_RO, err);
  int rc = ro != NULL ? store_fleet_baseline(ro, ref, out, err) : TR_EDB;

  if (rc == 0 && out->cache_id == 0)
    rc = copy_in(lab, out, err);
  return rc;
}

/* ---- start and stop ---- */

void fleet_lab_on_drop(struct fleet_lab *lab, void (*fn)(void *ud, int64_t id),
                       void *ud)
{
  pthread_mutex_lock(&lab->lock);
  lab->on_drop = fn;
  lab->drop_ud = ud;
  pthread_mutex_unlock(&lab->lock);
}

int fleet_lab_start(const struct cfg *cfg, struct fleet_lab **out,
                    struct tr_err *err)
{
  struct fleet_lab *lab;
  struct store *st = NULL;
  int rc;

  if (fleet_dsn_check(cfg->fleet_dsn, err) != 0)
    return TR_EINVAL;
  lab = calloc(1, sizeof(*lab));
  if (lab == NULL || asprintf(&lab->path, "%s.fleet", cfg->db) < 0) {
    free(lab);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  if (tr_perthread_init(&lab->threads) != 0) {
    free(lab->path);
    free(lab);
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  lab->cfg = cfg;
  pthread_mutex_init(&lab->lock, NULL);
  pthread_cond_init(&lab->wake, NULL);
  /* Made (and migrated) before any thread opens it. */
  rc = store_open(lab->path, STORE_RW, &st, err);
  store_close(st);
  if (rc == 0 && pthread_create(&lab->follower, NULL, follow_main, lab) != 0)
    rc = tr_err_set(err, TR_ENOMEM, "", "cannot start the lab view's thread");
  if (rc < 0) {
    fleet_lab_stop(lab);
    return rc;
  }
  lab->started = true;
  atomic_store(&fleet_stats.started_ms, fleet_now_ms());
  atomic_store(&fleet_stats.following, true);
  *out = lab;
  return 0;
}

void fleet_lab_stop(struct fleet_lab *lab)
{
  struct lab_thread *t;

  if (lab == NULL)
    return;
  pthread_mutex_lock(&lab->lock);
  lab->stopping = true;
  pthread_cond_signal(&lab->wake);
  pthread_mutex_unlock(&lab->lock);
  if (lab->started)
    pthread_join(lab->follower, NULL);
  while ((t = tr_perthread_pop(&lab->threads)) != NULL) {
    store_close(t->st[STORE_RW]);
    store_close(t->st[STORE_RO]);
    PQfinish(t->pg);
    free(t);
  }
  atomic_store(&fleet_stats.following, false);
  tr_perthread_destroy(&lab->threads);
  pthread_cond_destroy(&lab->wake);
  pthread_mutex_destroy(&lab->lock);
  free(lab->path);
  free(lab);
}
