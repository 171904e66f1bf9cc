/*
 * The capture runner's internals, shared by daemon/runner.c (queues,
 * cancel, shutdown), recover.c (start-up and recovery after a crash),
 * capture.c (the state machine: its diagram and transitions are there),
 * export.c (end of the bench, export polling), index_jobs.c (indexing,
 * done), work.c (thread-pool jobs and ordered state writes), plan.c (argv
 * and environment of the ATOM scripts) and logscan.c (the server log).
 * Loop thread unless a function says otherwise.
 */
#ifndef DAEMON_CAP_INT_H
#define DAEMON_CAP_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/config.h"
#include "common/lifecycle.h"
#include "common/tr.h"
#include "daemon/atom_http.h"
#include "daemon/layout.h"
#include "daemon/proc.h"
#include "daemon/runner.h"
#include "index/index.h"
#include "store/store.h"

/* The API's phases (docs/API.md), in the order a capture runs them. */
enum cap_phase {
  CAP_QUEUED,
  CAP_STOPPING,
  CAP_LAUNCHING,
  CAP_WAITING_READY,
  CAP_BENCHMARK,
  CAP_EXPORTING,
  CAP_INDEXING,
  CAP_DONE
};

const char *cap_phase_name(enum cap_phase p);

struct cap_job;
struct cap_runner;

/* ---- thread-pool jobs (work.c) ---- */

/* A uv_work_t with its owner. Types of work embed it first. run() is on a
 * pool thread and touches only its own fields and a store connection from
 * cap_db_take(); done() is on the loop. */
struct cap_work {
  uv_work_t req;
  struct cap_runner *r;
  struct cap_job *job; /* NULL for runner-wide work */
  void (*run)(struct cap_work *w);
  void (*done)(struct cap_work *w);
};

/* Queues w (allocated by the caller with malloc, freed after done()). */
void cap_work_queue(struct cap_runner *r, struct cap_job *job,
                    struct cap_work *w, void (*run)(struct cap_work *),
                    void (*done)(struct cap_work *));

/* Allocates a zeroed work of size bytes (a struct that starts with struct
 * cap_work) and queues it for job; when the allocation fails the job fails
 * instead. For works that need no fields set before they run. */
void cap_job_queue_new(struct cap_job *job, size_t size,
                       void (*run)(struct cap_work *),
                       void (*done)(struct cap_work *));

/* Pool threads: a store connection for this job alone; give it back. */
struct store *cap_db_take(struct cap_runner *r, struct tr_err *err);
void cap_db_give(struct cap_runner *r, struct store *st);

/*
 * Ordered state writes of one job, done in the pool one after the other:
 * merges (an object of column -> object, taken), then status/phase (static
 * strings, or NULL for no phase change). tail_path (copied, may be NULL):
 * its last bytes go into merges.error.log_tail. then(job) runs on the loop
 * once committed, only when the job is not ending (see cap_fail) unless
 * always is set.
 */
void cap_job_write(struct cap_job *job, const char *status, const char *phase,
                   json_t *merges, const char *tail_path,
                   void (*then)(struct cap_job *job), bool always);

/* cap_job_write(job, "running", phase, merges, NULL, then, false) for the
 * first move of a queued job, done only if its row is still "queued" (the
 * API cancels queued ones in the store); otherwise the job ends, with no
 * write. */
void cap_job_claim(struct cap_job *job, const char *phase, json_t *merges,
                   void (*then)(struct cap_job *job));

/* Merges obj (taken) into the progress column; folded into a progress
 * write still waiting in the queue, so a fast stream of updates costs one
 * write per round-trip. */
void cap_job_progress(struct cap_job *job, json_t *obj);

/* Replaces what is not valid UTF-8 in text (a log cut mid-character, a
 * binary blurt, a path in another encoding) and control characters but
 * newline and tab with '?', so that it makes a JSON string. Any thread. */
void cap_make_utf8(char *text);

/* Pool thread: the last bytes of a text file, from a line start, as valid
 * UTF-8, or NULL. Caller frees. */
char *cap_read_tail(const char *path, size_t max_bytes);

/* ---- the server log (logscan.c) ---- */

/* What one capture knows of the server log. One scan at a time runs in the
 * pool with it; the loop reads it only between scans. */
struct cap_scan {
  char *src;            /* cfg->server_log (borrowed) */
  char *copy;           /* logs/<id>/server.log: this launch's bytes */
  uint64_t offset;      /* next byte of src to read */
  unsigned char fp[64]; /* the bytes of src just before offset */
  size_t fp_len;
  char carry[32]; /* tail of the last read, for a marker cut in
                     two by a read boundary */
  size_t carry_len;
  const char *marker; /* found: static string, else NULL */
  char line[256];     /* the line holding it */
};

/* Pool thread: records the end of src as this launch's start. */
void cap_scan_snapshot(struct cap_scan *s);
/* Pool thread: reads at most a few MiB of src past offset, copying them
 * to copy and looking for the fatal markers. When src shrank or its bytes
 * before offset changed (the launcher truncated and rewrote it), starts
 * again from byte 0: a marker of an earlier run never counts. */
void cap_scan_run(struct cap_scan *s);

/* ---- the ATOM commands (plan.c) ---- */

struct cap_plan {
  char **start_argv; /* NULL-terminated, owned */
  char **start_env;  /* "K=V" additions for the server */
  char **bench_argv;
  char **stop_argv;
  json_t *extra;     /* commands, preset, use_chat_template... */
  char *moved_aside; /* where an old non-empty trace folder went */
};

/* Pool thread: makes the trace folder fresh (moving a non-empty one
 * aside) and the log folder, reads the model's tokenizer_config.json and
 * the presets of cfg->models_json, and builds the argv of every script.
 * params borrowed. Caller frees *out with cap_plan_free(). */
int cap_plan_build(const struct cfg *cfg, json_t *params, const char *trace_dir,
                   const char *log_dir, struct cap_plan **out,
                   struct tr_err *err);
void cap_plan_free(struct cap_plan *p);
/* An integer member of the request, or dflt. */
int cap_param_int(json_t *params, const char *key, int dflt);

/* ---- runner and jobs ---- */

struct cap_runner {
  uv_loop_t *loop;
  const struct cfg *cfg;
  struct cap_http *http;
  struct idx_rules *rules;
  struct cap_job *capture;    /* the GPU slot */
  struct cap_job *import;     /* imports run beside it */
  _Atomic int64_t capture_id; /* for other threads: 0 when idle */
  _Atomic int64_t import_id;
  int64_t *recover[2]; /* ids to index after a restart:
                          [0] captures, [1] imports */
  size_t nrecover[2];
  bool picking[2];    /* a queue look-up is in the pool */
  bool pick_again[2]; /* woken while it was */
  int index_running;  /* rank jobs in the pool, all jobs */
  int works;          /* pool jobs in flight */
  int jobs;           /* jobs not yet freed */
  bool stopping;
  bool http_closed;
  void (*down)(void *ud);
  void *down_ud;
  pthread_mutex_t db_lock; /* guards dbs */
  struct store **dbs;      /* idle connections for pool threads */
  size_t ndbs, dbs_cap;
};

struct cap_op;

enum cap_end {
  END_NONE,
  END_FAILED,
  END_CANCELLED,
  END_INTERRUPTED,
  END_SHUTDOWN
};

struct cap_job {
  struct cap_runner *r;
  int64_t id;
  bool is_import;
  bool recovered; /* re-indexed after a restart */
  enum cap_phase phase;
  enum cap_end ending;  /* END_NONE while the job runs */
  bool finished;        /* cap_job_finish ran */
  json_t *params;       /* the request, owned */
  json_t *stored_ranks; /* recovered: ranks already stored */
  char *trace_dir, *log_dir;
  struct cap_plan *plan;
  struct cap_proc *launcher; /* kept: the server lives in its group */
  struct cap_proc *child;    /* the stop script or the bench */
  uv_timer_t deadline;       /* the phase's deadline */
  int deadline_s;            /* ... armed for this many seconds */
  uv_timer_t tick;           /* polls of the phase */
  uv_timer_t progress_timer; /* indexing progress, throttled */
  int open_handles;
  struct cap_http_req *http; /* one ATOM call at a time */
  int live_failures;         /* consecutive failed liveness checks */
  struct cap_scan scan;
  bool scan_busy;
  const char *marker_seen; /* a fatal marker waiting for a phase */
  char marker_line[256];
  int64_t bench_start_ns, bench_end_ns;
  int export_polls;
  bool export_busy;
  struct cap_layout *layout;
  size_t next_rank; /* indexing: next rank to hand out */
  int ranks_running, ranks_indexed, ranks_failed;
  uint64_t bytes_done; /* of finished ranks */
  uint64_t bytes_reported;
  _Atomic uint64_t *rank_read; /* per rank, written by index workers */
  bool *rank_skip;             /* recovered: stored before a restart */
  char *failures;              /* "rank 2 (rank_2): ..." */
  volatile bool cancel;        /* stops idx_file early */
  struct cap_op *ops_head, *ops_tail;
  bool op_busy;
  int works; /* pool jobs of this job in flight */
};

/* runner.c */
/* Ends the job: frees its slot (the next one may start), releases its
 * processes, timers and ATOM calls. Memory goes in cap_job_release(). */
void cap_job_finish(struct cap_job *job);
/* Frees a finished job once no pool work and no handle refers to it. */
void cap_job_release(struct cap_job *job);
void cap_runner_pump(struct cap_runner *r);
void cap_runner_check_down(struct cap_runner *r);

/* capture.c: the transitions and their helpers. */
void cap_enter_stopping(struct cap_job *job);
/* Stores phase `to` (status running, phase_started_at) with merges
 * (taken, may be NULL), arms its deadline, and calls act once committed
 * (not when the job ended meanwhile). */
void cap_transition(struct cap_job *job, enum cap_phase to, json_t *merges,
                    void (*act)(struct cap_job *));
void cap_arm_deadline(struct cap_job *job, int secs);
const char *cap_log_path(const struct cap_job *job, const char *which,
                         char *buf, size_t size);
/* Queues a scan of the server log's new bytes, unless one runs. */
void cap_queue_scan(struct cap_job *job);
/* Spawns the bench script. */
void cap_bench_run(struct cap_job *job);

/* export.c: the end of BENCHMARK and EXPORTING. */
/* Begins the bench: with profile_control=daemon after /start_profile. */
void cap_bench_start(struct cap_job *job);
/* The bench exited 0: /stop_profile (daemon), its result, then export. */
void cap_bench_exited(struct cap_job *job);

/* index_jobs.c: INDEXING and DONE. */
void cap_enter_indexing(struct cap_job *job);
void cap_enter_done(struct cap_job *job);
/* Failure, cancel and interruption: the end of a job, from any phase. The
 * first call wins. tail_path: the log to quote (may be NULL). */
void cap_fail(struct cap_job *job, enum cap_end how, const char *tail_path,
              const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void cap_invariants(const struct cap_job *job);

/* Hands out ranks to the pool, index_jobs at a time over all jobs. */
void cap_index_pump(struct cap_runner *r);

#endif
