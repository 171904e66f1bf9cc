/*
 * The capture runner's internals.
 *
 *   capture.c         the state machine: the phase table, the transitions,
 *                     failure, cancel, deadlines (its diagram is there)
 *   phase_<name>.c    each phase's body, one file per phase of
 *                     TR_PHASE_MAP (common/lifecycle.h); a phase calls the
 *                     transitions of capture.c and the helpers below, never
 *                     another phase
 *   runner.c          the queues, cancel, shutdown; recover.c start-up
 *   work.c            the thread pool and the ordered state writes
 *   watch.c           the server's signs of life; logscan.c its log
 *   bench.c           runs of ATOM's bench script and their result file
 *   plan.c            the scripts' argv; layout.c the trace folder
 *   proc.c, atom_http.c   processes and the HTTP client of ATOM
 *
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
#include "daemon/logscan.h"
#include "daemon/plan.h"
#include "daemon/proc.h"
#include "daemon/runner.h"
#include "index/index.h"
#include "store/store.h"

struct cap_job;
struct cap_runner;

/* ---- the phases (capture.c holds the table) ---- */

/* Each row of TR_PHASE_MAP has, in daemon/phase_<name>.c:
 *   void phase_<name>_enter(struct cap_job *job)   acts, once the phase is
 *                                                  stored
 *   int phase_<name>_budget_s(const struct cap_job *job)   its deadline
 *                                                  (0: none) */
#define XX(e, name, log)                                                       \
  void phase_##name##_enter(struct cap_job *job);                              \
  int phase_##name##_budget_s(const struct cap_job *job);
TR_PHASE_MAP(XX)
#undef XX

enum cap_end {
  END_NONE,
  END_FAILED,
  END_CANCELLED,
  END_INTERRUPTED,
  END_SHUTDOWN /* indexing stops; the row stays running for recovery */
};

/* A job the runner took from the queue: QUEUED's body decides where it
 * goes first (phase_queued.c). */
void cap_start(struct cap_job *job);

/* Moves job to phase to: stores it (status running, or done for DONE; the
 * first move of a queued capture claims it) with merges (taken, may be
 * NULL), arms the phase's deadline, and enters it once committed (not when
 * the job ended meanwhile). */
void cap_enter(struct cap_job *job, enum tr_phase to, json_t *merges);

/* Failure, cancel and interruption, from any phase; the first call wins.
 * log: the log to quote ("server", "bench"...; NULL: none). */
void cap_fail(struct cap_job *job, enum cap_end how, const char *log,
              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Re-arms the phase's deadline for secs from now. */
void cap_arm_deadline(struct cap_job *job, int secs);

/* logs/<id>/<which>.log (which: "server" gives the server log's copy). */
const char *cap_log_path(const struct cap_job *job, const char *which,
                         char *buf, size_t size);

/* Spawns an ATOM script (argv, env additions may be NULL) with its output
 * in log which, a deadline, and the capture's mark in its environment;
 * on failure the job fails and *slot stays NULL. */
int cap_spawn(struct cap_job *job, char **argv, char **env, const char *which,
              int deadline_s, cap_proc_exit_cb cb, struct cap_proc **slot);

/* An ATOM script ended: true when it succeeded; else the job fails here,
 * naming the script and how it ended (limit: its deadline). */
bool cap_script_ok(struct cap_job *job, const char *which, int64_t status,
                   int sig, bool timed_out, int limit);

/* Merges obj (taken) into the progress column; folded into a progress
 * write still waiting, so a fast stream of updates costs one write per
 * round-trip. */
void cap_job_progress(struct cap_job *job, json_t *obj);

/* A state write of merges (taken) without a phase change, in order. */
void cap_job_merge(struct cap_job *job, json_t *merges);

/* ---- the thread pool (work.c) ---- */

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
 * instead. */
void cap_job_queue_new(struct cap_job *job, size_t size,
                       void (*run)(struct cap_work *),
                       void (*done)(struct cap_work *));

/* Pool threads: a store connection for this job alone; give it back. */
struct store *cap_db_take(struct cap_runner *r, struct tr_err *err);
void cap_db_give(struct cap_runner *r, struct store *st);

/* One state write, done in the pool after the job's earlier ones (a FIFO
 * per job). status/phase: enum values, or -1 for none; merges taken (may
 * be NULL); tail: a log whose last bytes go into merges.error.log_tail
 * (copied; may be NULL). then(job) runs on the loop once committed, unless
 * the job is ending and always is false. claim: only while the row is
 * still queued. A write the store refuses is retried (a full disk); one
 * that cannot be made fails the job (see work.c). */
struct cap_write {
  int status, phase;
  json_t *merges;
  const char *tail;
  void (*then)(struct cap_job *job);
  bool always, claim;
};
void cap_job_write(struct cap_job *job, const struct cap_write *w);

/* Pool thread: the last bytes of a text file, from a line start, as valid
 * UTF-8, or NULL. Caller frees. */
char *cap_read_tail(const char *path, size_t max_bytes);

/* ---- the server's signs of life (watch.c) ---- */

/* dead: NULL while the server lives, else why it is dead (borrowed). */
typedef void (*cap_watch_cb)(struct cap_job *job, const char *dead);

struct cap_watch {
  cap_watch_cb cb; /* a round in flight calls it; NULL: none */
  bool again;      /* a fresh round was asked for meanwhile */
  bool probe, again_probe;
  int pending;               /* parts of the round still out */
  bool scanning;             /* a log scan is in the pool */
  bool waiting;              /* a round waits for that scan to come back */
  struct cap_http_req *conn; /* the connect probe */
  bool refused;              /* the probe of this round was refused */
  int refusals;              /* rounds in a row whose probe was refused */
  bool group_lives;          /* the server's group had a live member */
  char why[512];
};

/* A look at the server: this launch's new log bytes (fatal markers), its
 * process group (the launcher's), and with probe a connect to its port.
 * Death is only what cannot be slow (docs/ATOM.md: a server exporting in
 * /stop_profile answers nothing for minutes): a fatal marker, the group
 * gone, or connections refused twice in a row. cap_watch_tick() skips
 * when a round is out; cap_watch_fresh() makes sure the round that answers
 * started after the call. cb runs on the loop, not once the job ended. */
void cap_watch_tick(struct cap_job *job, bool probe, cap_watch_cb cb);
void cap_watch_fresh(struct cap_job *job, bool probe, cap_watch_cb cb);
/* Drops a round in flight (its callback is not called). */
void cap_watch_stop(struct cap_job *job);
/* Records the server log's end as this launch's start, then calls then. */
void cap_watch_snapshot(struct cap_job *job, void (*then)(struct cap_job *));

/* ---- bench runs (bench.c) ---- */

/* BENCHMARK's steps (phase_benchmark.c). */
enum cap_step { CAP_STEP_WARMUP, CAP_STEP_PROFILE_START, CAP_STEP_RUN };

struct cap_bench {
  enum cap_step step;
  struct cap_proc *proc;             /* a run in progress, else NULL */
  void (*on_exit)(struct cap_job *); /* the phase waiting for it */
  int64_t start_ns, end_ns;          /* of the last run */
  int64_t status;                    /* its exit */
  int sig;
  bool timed_out;
  bool done;      /* the profiled run exited */
  json_t *result; /* its result file, when usable */
  json_t *note;   /* extra.bench_result */
};

/* Runs the bench script with argv; job->bench.on_exit(job) is called when
 * it exits (the exit is in job->bench). */
int cap_bench_start(struct cap_job *job, char **argv);
/* Pool: reads the result file written during the last run into
 * job->bench.result/note, then calls then(job) on the loop. */
void cap_bench_read(struct cap_job *job, void (*then)(struct cap_job *));
/* The capture's "bench" (the result, when usable) and extra.bench_result
 * (what was read and why) as merges for a state write. */
json_t *cap_bench_merges(struct cap_job *job);
/* What the profiler calls of ATOM may take. */
int cap_profile_timeout_ms(const struct cap_job *job);

/* ---- the verdicts' webhook (webhook.c) ---- */

struct cap_webhook;
int cap_webhook_new(uv_loop_t *loop, struct cap_http *http,
                    const struct cfg *cfg, struct cap_webhook **out);
/* POSTs body (taken) to webhook_url, with retries; nothing when unset. */
void cap_webhook_send(struct cap_webhook *w, int64_t id, json_t *body);
/* Drops what waits, frees w; done(ud) once closed. NULL w: done now. */
void cap_webhook_close(struct cap_webhook *w, void (*done)(void *ud), void *ud);

/* ---- the finish (finish.c) ---- */

/* Every rank of job is indexed: its collectives matched, its tables
 * summed and its verdict made (store_capture_finish()) in the pool, then
 * DONE is entered with merges (taken); a failure fails the job. */
void cap_finish_start(struct cap_job *job, json_t *merges);

/* ---- runner and jobs ---- */

struct cap_runner {
  uv_loop_t *loop;
  const struct cfg *cfg;
  struct cap_http *http;
  struct cap_webhook *webhook;
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
  struct cap_orphan *orphans; /* final writes the store refused */
  uv_timer_t orphan_timer;
};

struct cap_op;

/* INDEXING's state (phase_indexing.c). */
struct cap_index {
  size_t next_rank; /* next rank to hand out */
  int running, indexed, failed;
  bool finishing; /* every rank is in: the finish runs (finish.c) */
  uint64_t bytes_reported;
  _Atomic uint64_t *read; /* per rank, written by index workers */
  bool *skip;             /* recovered: stored before a restart */
  char *failures;         /* "rank 2 (rank_2): ..." */
};

/* EXPORTING's state (phase_exporting.c). */
struct cap_export {
  int polls;
  bool busy;          /* a folder scan is in the pool */
  bool stop_answered; /* profile_control daemon: /stop_profile */
  int ranks_expected;
  const char *ranks_source; /* "server_info" or "argv" (static) */
};

struct cap_job {
  struct cap_runner *r;
  int64_t id;
  bool is_import;
  bool recovered; /* re-indexed after a restart */
  enum tr_phase phase;
  enum cap_end ending;  /* END_NONE while the job runs */
  bool finished;        /* cap_job_finish ran */
  atomic_bool cancel;   /* read by index workers */
  json_t *params;       /* the request, owned */
  json_t *stored_ranks; /* recovered: ranks already stored */
  char *trace_dir, *log_dir, *work_dir;
  struct cap_plan *plan;
  struct cap_proc *launcher; /* kept: the server lives in its group */
  struct cap_proc *child;    /* the stop script */
  uv_timer_t deadline;       /* the phase's deadline */
  int deadline_s;
  uv_timer_t tick;           /* polls of the phase */
  uv_timer_t progress_timer; /* indexing progress, throttled */
  int open_handles;
  struct cap_http_req *http; /* the phase's ATOM call */
  int64_t ready_since_ns;    /* WAITING_READY began */
  int64_t launch_exit;       /* the start script's exit status */
  struct cap_watch watch;
  struct cap_scan scan;
  struct cap_bench bench;
  struct cap_export export;
  struct cap_layout *layout;
  struct cap_index index;
  struct cap_op *ops_head, *ops_tail;
  bool op_busy;
  int works;       /* pool jobs of this job in flight */
  json_t *verdict; /* made at the finish, for the webhook once done */
};

/* runner.c */
/* Ends the job: frees its slot (the next one may start), releases its
 * processes, timers and ATOM calls. Memory goes in cap_job_release(). */
void cap_job_finish(struct cap_job *job);
/* Frees a finished job once no pool work and no handle refers to it. */
void cap_job_release(struct cap_job *job);
void cap_runner_pump(struct cap_runner *r);
void cap_runner_check_down(struct cap_runner *r);
/* A job the store would not let end (a full disk): its final status and
 * error (taken, may be NULL) are written from the runner, retried until
 * the store takes them. */
void cap_runner_orphan(struct cap_runner *r, int64_t id, int status,
                       json_t *error);
/* Starts retrying the orphans, once the runner's timer exists (recover()
 * queues them before it does). */
void cap_runner_orphans_arm(struct cap_runner *r);
/* Shutdown: forgets the final writes still refused (said on stderr). */
void cap_runner_orphans_free(struct cap_runner *r);

/* phase_indexing.c: hands out ranks to the pool, index_jobs at a time over
 * all jobs. */
void cap_index_pump(struct cap_runner *r);
/* Where rank's collectives go (logs/<id>/collectives/rank_<r>.bin), a new
 * string; with make (pool threads only) the folder is made first. NULL
 * when out of memory or the folder cannot be made. */
char *cap_coll_path(const struct cap_job *job, size_t rank, bool make);

void cap_invariants(const struct cap_job *job);

#endif
