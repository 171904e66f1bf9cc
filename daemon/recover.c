/*
 * Start-up of the runner and recovery of what a previous traced left
 * "running" (a crash, a kill -9, a power cut): nothing may stay running
 * forever. A capture whose trace folder is complete (every expected rank
 * has its one .gz and no .json) is indexed; any other becomes
 * "interrupted" with the phase it was in. An import is indexed again.
 *
 * This runs in cap_runner_new(), before the loop runs and before the HTTP
 * API starts: nothing waits on the loop yet, so these blocking reads and
 * one-row writes delay only the start-up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cap_int.h"

static void push_id(struct cap_runner *r, int kind, int64_t id)
{
  int64_t *grown =
      realloc(r->recover[kind], (r->nrecover[kind] + 1) * sizeof(*grown));

  if (grown == NULL)
    return;
  r->recover[kind] = grown;
  grown[r->nrecover[kind]++] = id;
}

static void interrupt(struct store *st, int64_t id, const char *phase,
                      const char *why)
{
  char msg[1024];
  json_t *error;
  struct tr_err err = { 0 };

  snprintf(msg, sizeof(msg),
           "traced stopped during %s (crash or restart); "
           "the capture cannot resume: %s",
           phase, why);
  error =
      json_pack("{s:s,s:s,s:n}", "phase", phase, "message", msg, "log_tail");
  if (store_capture_merge(st, id, "error", error, &err) != 0 ||
      store_capture_set_phase(st, id, "interrupted", phase, &err) != 0)
    fprintf(stderr, "traced: capture %lld: %s\n", (long long)id, err.msg);
  json_decref(error);
  fprintf(stderr, "traced: capture %lld interrupted in %s: %s\n", (long long)id,
          phase, why);
}

static void recover_capture(struct cap_runner *r, struct store *st, int64_t id,
                            json_t *obj)
{
  const char *phase = json_string_value(json_object_get(obj, "phase"));
  int tp = cap_param_int(json_object_get(obj, "params"), "tp", 8);
  struct cap_layout *l = NULL;
  char dir[4096], problems[1024] = "";

  phase = phase ? phase : "queued";
  snprintf(dir, sizeof(dir), "%s/%lld", r->cfg->trace_root, (long long)id);
  if (cap_layout_scan(dir, &l, NULL) != 0)
    snprintf(problems, sizeof(problems), "no trace folder %.900s", dir);
  else if (cap_layout_complete(l, tp, problems, sizeof(problems)))
    problems[0] = '\0';
  cap_layout_free(l);
  if (problems[0] == '\0') {
    fprintf(stderr,
            "traced: capture %lld: trace folder complete after a "
            "restart in %s: indexing it\n",
            (long long)id, phase);
    push_id(r, 0, id);
  } else {
    interrupt(st, id, phase, problems);
  }
}

static int recover(struct cap_runner *r, struct tr_err *err)
{
  static const char *const kinds[] = { "capture", "import" };
  struct store *st;
  int rc;

  if ((rc = store_open(r->cfg->db, STORE_RW, &st, err)) != 0)
    return rc;
  for (int kind = 0; kind < 2 && rc == 0; kind++) {
    int64_t *ids = NULL;
    size_t n = 0;

    rc = store_capture_ids(st, "running", kinds[kind], &ids, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
      json_t *obj = NULL;

      if (store_capture_get(st, ids[i], &obj, NULL) != 0)
        continue;
      if (kind == 0)
        recover_capture(r, st, ids[i], obj);
      else
        push_id(r, 1, ids[i]);
      json_decref(obj);
    }
    free(ids);
  }
  store_close(st);
  return rc;
}

/* Index workers must never hold every pool thread: the state writes and
 * log scans need one. libuv reads the variable once, at its first
 * uv_queue_work, which has not happened yet when this runs. */
static void size_thread_pool(const struct cfg *cfg)
{
  char value[16];

  if (getenv("UV_THREADPOOL_SIZE") != NULL)
    return;
  snprintf(value, sizeof(value), "%d", cfg->index_jobs + 2);
  setenv("UV_THREADPOOL_SIZE", value, 0);
}

int cap_runner_new(uv_loop_t *loop, const struct cfg *cfg,
                   struct cap_runner **out, struct tr_err *err)
{
  struct cap_runner *r = calloc(1, sizeof(*r));
  int rc;

  if (r == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  r->loop = loop;
  r->cfg = cfg;
  pthread_mutex_init(&r->db_lock, NULL);
  size_thread_pool(cfg);
  if ((rc = idx_rules_load(cfg->category_rules, &r->rules, err)) != 0 ||
      (rc = recover(r, err)) != 0 ||
      (rc = cap_http_new(loop, &r->http, err)) != 0) {
    cap_runner_free(r);
    return rc;
  }
  *out = r;
  return 0;
}
