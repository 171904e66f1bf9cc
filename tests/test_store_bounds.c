/*
 * The store's part of docs/SECURITY.md: the queue bound is counted in the
 * insert's own transaction (concurrent inserts never pass it), a list page
 * stops at its byte budget, and DELETE's decision (store_capture_end) is made
 * from one reading of the status, so that a capture finishing while it is being
 * cancelled is never deleted.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/lifecycle.h"
#include "tests/check.h"
#include "tests/test_store_util.h"

static char path[256];

static struct store *open_rw(void)
{
  struct tr_err err = { 0 };
  struct store *st = NULL;

  CHECK_INT(store_open(path, STORE_RW, &st, &err), 0);
  return st;
}

static const char *status_of(struct store *st, int64_t id)
{
  static char buf[16];
  struct tr_err err = { 0 };
  json_t *cap = NULL;

  if (store_capture_get(st, id, &cap, &err) != 0)
    return "gone";
  snprintf(buf, sizeof(buf), "%s",
           json_string_value(json_object_get(cap, "status")));
  json_decref(cap);
  return buf;
}

#define WRITERS    4
#define PER_WRITER 50
#define MAX_QUEUED 120

static void *insert_many(void *arg)
{
  struct store *st = open_rw();
  int *busy = arg;

  for (int i = 0; i < PER_WRITER; i++) {
    struct tr_err err = { 0 };
    int64_t id;
    int rc =
        store_capture_insert(st, "capture", NULL, NULL, MAX_QUEUED, &id, &err);

    if (rc == TR_EBUSY) {
      CHECK_STR(err.field, "queue");
      (*busy)++;
    } else {
      CHECK_INT(rc, 0);
    }
  }
  store_close(st);
  return NULL;
}

static void store_queue_bound(void)
{
  struct tr_err err = { 0 };
  struct store *st = open_rw();
  pthread_t t[WRITERS];
  int busy[WRITERS] = { 0 }, refused = 0;
  int64_t id;
  bool was;

  for (int i = 0; i < WRITERS; i++)
    CHECK_INT(pthread_create(&t[i], NULL, insert_many, &busy[i]), 0);
  for (int i = 0; i < WRITERS; i++) {
    pthread_join(t[i], NULL);
    refused += busy[i];
  }
  CHECK_INT(refused, WRITERS * PER_WRITER - MAX_QUEUED);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM captures WHERE status ="
                     " 'queued'",
                     -1),
            MAX_QUEUED);
  /* Room again once one leaves the queue; none without a bound. */
  CHECK_INT(store_capture_cancel_queued(st, 1, &was, &err), 0);
  CHECK(was);
  CHECK_INT(
      store_capture_insert(st, "import", NULL, NULL, MAX_QUEUED, &id, &err), 0);
  CHECK_INT(
      store_capture_insert(st, "import", NULL, NULL, MAX_QUEUED, &id, &err),
      TR_EBUSY);
  tr_err_clear(&err);
  CHECK_INT(store_capture_insert(st, "import", NULL, NULL, 0, &id, &err), 0);
  store_close(st);
}

static void store_list_budget(void)
{
  struct store_list_filter f = { .kind = "import", .limit = 100 };
  struct tr_err err = { 0 };
  struct store *st = open_rw();
  json_t *list = NULL;
  char label[1001];
  int64_t id;

  memset(label, 'x', sizeof(label) - 1);
  label[sizeof(label) - 1] = '\0';
  for (int i = 0; i < 10; i++)
    CHECK_INT(store_capture_insert(st, "import", label, NULL, 0, &id, &err), 0);
  f.max_bytes = 3500;
  CHECK_INT(store_capture_list(st, &f, &list, &err), 0);
  CHECK(json_array_size(list) >= 2 && json_array_size(list) <= 3);
  json_decref(list);
  list = NULL;
  f.max_bytes = 1; /* never an empty page */
  CHECK_INT(store_capture_list(st, &f, &list, &err), 0);
  CHECK_INT(json_array_size(list), 1);
  json_decref(list);
  store_close(st);
}

static void store_end_decides(void)
{
  struct tr_err err = { 0 };
  struct store *st = open_rw();
  enum store_end what;
  int64_t queued, running, done;

  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &queued, &err),
            0);
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &running, &err),
            0);
  CHECK_INT(store_capture_insert(st, "capture", NULL, NULL, 0, &done, &err), 0);
  CHECK_INT(store_capture_set_phase(st, running, "running", "launching", &err),
            0);
  CHECK_INT(store_capture_set_phase(st, done, "done", "done", &err), 0);
  CHECK_INT(store_capture_end(st, queued, &what, &err), 0);
  CHECK_INT(what, STORE_END_CANCELLED);
  CHECK_STR(status_of(st, queued), "cancelled");
  CHECK_INT(store_capture_end(st, running, &what, &err), 0);
  CHECK_INT(what, STORE_END_RUNNING);
  CHECK_STR(status_of(st, running), "running");
  CHECK_INT(store_capture_end(st, done, &what, &err), 0);
  CHECK_INT(what, STORE_END_DELETED);
  CHECK_STR(status_of(st, done), "gone");
  CHECK_INT(store_capture_end(st, done, &what, &err), TR_ENOTFOUND);
  store_close(st);
}

/* The runner's side of the race: claims the capture, then finishes it. */
struct runner {
  int64_t id;
  int claimed; /* the claim won: the DELETE came after it */
  pthread_barrier_t *go;
  struct timespec late; /* before the claim */
};

static void *run_one(void *arg)
{
  struct runner *run = arg;
  struct store *st = open_rw();
  struct store_apply claim = { true, TR_STATUS_RUNNING, TR_PHASE_INDEXING, NULL,
                               NULL };
  struct tr_err err = { 0 };

  pthread_barrier_wait(run->go);
  nanosleep(&run->late, NULL);
  run->claimed = store_capture_apply(st, run->id, &claim, &err) == 0;
  if (run->claimed)
    CHECK_INT(store_capture_set_phase(st, run->id, "done", "done", &err), 0);
  store_close(st);
  return NULL;
}

/* A DELETE racing a capture's claim and end, many times: when the store
 * says it cancelled or left it running, the capture is there at the end,
 * cancelled or done, never deleted. */
static void store_end_race(void)
{
  struct tr_err err = { 0 };
  struct store *st = open_rw();
  int outcomes[3] = { 0 };
  pthread_barrier_t go;

  pthread_barrier_init(&go, NULL, 2);
  for (int i = 0; i < 300; i++) {
    /* One side or the other 0 to 300 us late: the DELETE lands before the
     * claim, between it and the end, or after. */
    struct timespec late = { 0, (i / 2 % 31) * 10000 }, none = { 0, 0 };
    struct runner run = { 0, 0, &go, i % 2 ? late : none };
    enum store_end what;
    pthread_t t;
    const char *end;

    CHECK_INT(store_capture_insert(st, "import", NULL, NULL, 0, &run.id, &err),
              0);
    CHECK_INT(pthread_create(&t, NULL, run_one, &run), 0);
    pthread_barrier_wait(&go);
    nanosleep(i % 2 ? &none : &late, NULL);
    CHECK_INT(store_capture_end(st, run.id, &what, &err), 0);
    pthread_join(t, NULL);
    end = status_of(st, run.id);
    outcomes[what]++;
    if (what == STORE_END_CANCELLED) {
      CHECK(!run.claimed);
      CHECK_STR(end, "cancelled");
    } else if (what == STORE_END_RUNNING) {
      CHECK(run.claimed);
      CHECK_STR(end, "done");
    } else {
      CHECK(run.claimed);
      CHECK_STR(end, "gone");
    }
  }
  fprintf(stderr, "   cancelled %d, left running %d, deleted %d\n",
          outcomes[STORE_END_CANCELLED], outcomes[STORE_END_RUNNING],
          outcomes[STORE_END_DELETED]);
  pthread_barrier_destroy(&go);
  store_close(st);
}

/* max_rank_db_bytes (store_rank_open()): a summary whose values pass the
 * cap is refused row by row, with an error naming the setting, and
 * nothing of the rank is stored; under the cap it is stored whole. The
 * count: 8 bytes an integer, text as stored, a new name twice. */
static void store_rank_bytes_cap(void)
{
  static char names[50][16];
  struct fx_kernel k[50];
  struct fx_rank r = { k, 50, NULL, 0, 50, 7 };
  struct tr_err err = { 0 };
  struct store *st = open_rw();
  struct store_rank_writer *w = NULL;
  json_t *sum, *rows, *row;
  int64_t id;
  size_t i;
  int rc = 0;

  for (i = 0; i < 50; i++) {
    snprintf(names[i], sizeof(names[i]), "kernel_%02zu", i);
    k[i] = (struct fx_kernel){ names[i], "gemm", 3, 300, 90, 110, 100 };
  }
  sum = fx_summary(0, &r);
  CHECK_INT(store_capture_insert(st, "import", "cap", NULL, 0, &id, &err), 0);
  CHECK_INT(store_rank_open(st, id, 0, "rank_0", sum, 2000, &w, &err), 0);
  rows = json_object_get(sum, "kernels");
  json_array_foreach(rows, i, row) {
    if (rc == 0)
      rc = store_rank_row(w, "kernels", row, &err);
  }
  CHECK_INT(rc, TR_ELIMIT);
  CHECK(strstr(err.msg, "max_rank_db_bytes (2000 bytes)") != NULL);
  CHECK_INT(store_rank_close(w, rc, &err), TR_ELIMIT);
  CHECK_INT(
      fx_count(path, "SELECT count(*) FROM ranks WHERE capture_id = ?1", id),
      0);
  CHECK_STR(status_of(st, id), "queued");
  tr_err_clear(&err);
  CHECK_INT(store_rank_insert(st, id, 0, "rank_0", sum, &err), 0);
  CHECK_INT(fx_count(path,
                     "SELECT count(*) FROM kernels k JOIN ranks r ON"
                     " r.id = k.rank_id WHERE r.capture_id = ?1",
                     id),
            50);
  json_decref(sum);
  store_close(st);
}

int main(void)
{
  fx_db_path(path, sizeof(path));
  RUN(store_queue_bound);
  RUN(store_list_budget);
  RUN(store_end_decides);
  RUN(store_end_race);
  RUN(store_rank_bytes_cap);
  fx_db_remove(path);
  return 0;
}
