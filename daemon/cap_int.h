/*
 * The capture runner's internals.
 *
 *   capture.c         the state machine: the phase table, the transitions,
 *                     failure, cancel, deadlines (its diagram is there)
 *   phase_<name>.c    each phase's body, one file per phase of
 *                     TR_PHASE_MAP (common/lifecycle.h); a phase calls the
 *                     transitions of capture.c and the helpers below, never
 *                     another phase, and nothing but capture.c's table
 *                     calls a phase: what two of them (or a phase and the
 *                     runner) need is a helper in a file of its own
 *   runner.c          the runner's new and free, the queues, cancel,
 *                     shutdown; recover.c what a previous traced left
 *   work.c            the thread pool and the ordered state writes
 *   index_ranks.c     ranks indexed in the pool (INDEXING, FINISHING, the
 *                     runner); exports.c ranks exporting (EXPORTING, a
 *                     cancel's drain, COLLECTING's partial workload)
 *   job_plan.c        the job's plan (STOPPING, or BENCHMARK for a sweep's
 *                     point that joins a server already up)
 *   sweep.c           a sweep's server handed from point to point, the
 *                     files of a point's window collected (COLLECTING,
 *                     recover.c): docs/SWEEPS.md
 *   watch.c           the server's signs of life; logscan.c its log
 *   bench.c           runs of ATOM's bench script and their result file
 *   layout.c          the trace folder (atom/plan.c: the scripts' argv)
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
#include "atom/plan.h"
#include "atom/scripts.h"
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
#define XX(e, name, ...)                                                       \
  void phase_##name##_enter(struct cap_job *job);                              \
  int phase_##name##_budget_s(const struct cap_job *job);
TR_PHASE_MAP(XX)
#undef XX

enum cap_end {
  END_NONE,
  END_FAILED,
  END_CANCELLED,
  END_INTERRUPTED,
  END_SHUTDOWN, /* indexing stops; the row stays running for recovery */
  END_REQUEUED  /* the store refused its claim: the row stays queued */
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

/* The runner's clock against ATOM's: every wait on ATOM (deadlines, polls,
 * the profile calls) is counted in ATOM's seconds, which pass time_scale
 * times faster than real ones (1 but on a simulator whose clock runs as
 * fast, SIM_TIME_SCALE: docs/TESTS.md). cap_ms: secs of ATOM's time in
 * real milliseconds (at least 1); cap_secs_since: ATOM's whole seconds
 * since since_ns (tr_now_ns()). Bounds of traced's own quick work (one
 * curl, SIGTERM's grace) are real time. */
uint64_t cap_ms(const struct cap_job *job, int64_t secs);
int64_t cap_secs_since(const struct cap_job *job, int64_t since_ns);

/* logs/<id>/<which>.log (which: "server" gives the server log's copy). */
const char *cap_log_path(const struct cap_job *job, const char *which,
                         char *buf, size_t size);

/* Spawns an ATOM script (argv, env additions may be NULL) with its output
 * in log which, a deadline (ATOM's seconds), and the capture's mark in its
 * environment; on failure the job fails and *slot stays NULL. */
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
  int tries;              /* retries so far (cap_work_retry) */
  uint64_t due_ms;        /* a retry waiting: when it runs (uv_now) */
  struct cap_work *later; /* the runner's list of retries waiting */
};

/* Queues w (allocated by the caller with malloc, freed after done()). */
void cap_work_queue(struct cap_runner *r, struct cap_job *job,
                    struct cap_work *w, void (*run)(struct cap_work *),
                    void (*done)(struct cap_work *));

/* A zeroed work of size bytes (a struct that starts with struct cap_work)
 * for job, to fill and then queue with cap_work_queue(); NULL when out of
 * memory, the job failed instead. */
void *cap_job_work_new(struct cap_job *job, size_t size);

/* cap_job_work_new() queued at once, for a work with nothing to fill. */
void cap_job_queue_new(struct cap_job *job, size_t size,
                       void (*run)(struct cap_work *),
                       void (*done)(struct cap_work *));

/* The one rule for a store that refuses. cap_store_refused(): rc says the
 * store refused (a full disk, an I/O error), not the request. Loop: from
 * w's done(), queues w (its fields as run() left them) to run again after
 * a delay, doubling from 100 ms; false when it may not: traced stops, or
 * (unless until_taken, whose delay stops growing at 5 s) it was tried 6
 * times already; the caller then does what the refusal means. */
bool cap_store_refused(int rc);
bool cap_work_retry(struct cap_work *w, bool until_taken);
/* (Re)starts the runner's timer for the works waiting to be tried again;
 * a no-op until cap_runner_new() has made the timer. */
void cap_work_arm_later(struct cap_runner *r);
/* Shutdown: every retry waiting is done() now, and retries no more. */
void cap_work_give_up(struct cap_runner *r);

/* Pool threads: the thread's priority lowered to the indexer's (the HTTP
 * threads and the loop go first), and given back. */
int cap_nice_lower(void);
void cap_nice_restore(int old);

/* Pool threads: a store connection for this job alone; give it back. */
struct store *cap_db_take(struct cap_runner *r, struct tr_err *err);
void cap_db_give(struct cap_runner *r, struct store *st);

/* One state write, done in the pool after the job's earlier ones (a FIFO
 * per job). status/phase: enum values, or -1 for none; merges taken (may
 * be NULL); tail: a log whose last bytes go into merges.error.log_tail
 * (copied; may be NULL). then(job) runs on the loop once committed, unless
 * the job is ending and always is false. claim: only while the row is
 * still queued. A write the store refuses is retried (cap_work_retry);
 * one that cannot be made leaves a claimed capture queued, and fails any
 * other (see work.c). */
struct cap_write {
  int status, phase;
  json_t *merges;
  const char *tail;
  void (*then)(struct cap_job *job);
  bool always, claim;
  bool ends_sweep; /* a final write whose point ends its sweep (the server
                      died: docs/SWEEPS.md), for merges.error.message */
  bool quote;      /* merges.error.message ends with tail's decisive line
                      (cap_log_decisive()), read with it on the pool */
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
  bool died;                 /* the last round found the server dead */
  enum tr_phase dead_phase;  /* the phase the cause of death belongs to:
                                a fatal marker's, by its line's offset */
  bool errors_pending;       /* cap_watch_errors_from() waits for the scan */
  uint64_t errors_from;
  char why[1024];
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
/* Records the server log's size as the start of phase (cap_enter). */
void cap_watch_mark_phase(struct cap_job *job, enum tr_phase phase);
/* The phase in which the server log's byte at offset at was written. */
enum tr_phase cap_watch_phase_of(const struct cap_job *job, uint64_t at);
/* The server log's size now (0 when it is not a regular file). */
uint64_t cap_watch_log_size(const struct cap_job *job);
/* What the server log of this launch says decided its end
 * (cap_scan_decisive(), and the fix a cluster_dims marker names), as
 * "the server log says: ...", into buf. Between scans. */
void cap_watch_cause(const struct cap_job *job, char *buf, size_t size);
/* The log's error lines count from offset on (cap_scan_errors_from). */
void cap_watch_errors_from(struct cap_job *job, uint64_t offset);

/* ---- processes as /proc shows them (holders.c; pool threads) ---- */

/* /proc/<pid>/cmdline, its arguments joined by blanks (as pkill -f reads
 * it), or NULL. Caller frees. */
char *cap_proc_command(pid_t pid);
/* True when /proc has pid (in this PID namespace). */
bool cap_proc_exists(pid_t pid);
/* Why pid (command line cmd) is ATOM's own, or NULL when it is foreign
 * (static text). */
const char *cap_proc_atom_why(pid_t pid, const char *cmd);
/* The processes with a descriptor open on the KFD device at kfd_path
 * (ROCm/rocm-systems#3752), at most max, into pids; returns how many. */
size_t cap_kfd_holders(const char *kfd_path, pid_t *pids, size_t max);
/* The processes the pkill patterns of the two scripts (pats[i] may be
 * NULL; scripts[i] their names) would kill, traced excepted: each appended
 * to matches ({pid, command, atom, why, pattern, script, line}), the
 * foreign ones also described in foreign (size bytes, appended). */
void cap_kill_matches(const struct tr_kill_patterns *pats[2],
                      const char *scripts[2], json_t *matches, char *foreign,
                      size_t size);

/* ---- who holds the GPUs (gpu.c) ---- */

struct cap_gpu {
  void (*then)(struct cap_job *job); /* a check in flight continues here */
  char which[32];                     /* its record ("gpu-before-stop") */
  uint64_t from;                      /* its output's offset in gpu.log */
  bool asked;       /* rocm-smi ran: its output is there to read */
  bool stop_failed; /* the stop script exited 1 before this check */
};

/* Judges who holds the GPUs and whom ATOM's scripts would kill (docs/
 * ATOM.md, "Someone else's GPU job", "What ATOM's scripts kill"): runs
 * `rocm-smi --showpids --showpidgpus --showmemuse` (as the child, its
 * output appended to log "gpu"), reads the local holders of kfd_path and
 * the processes the start and stop scripts' pkill patterns match; then(job)
 * runs when every local one is ATOM's (or take_over_foreign_gpu is set)
 * and memory held from outside this container leaves the launch what it
 * asks; else the job fails naming them. extra.<which> records them. */
void cap_gpu_check(struct cap_job *job, const char *which,
                   void (*then)(struct cap_job *));
/* What a check may take, for a phase's budget. */
int cap_gpu_check_budget_s(void);
/* True when an executable rocm-smi is on traced's PATH (the scripts
 * inherit it). */
bool cap_rocm_smi_on_path(void);

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
  char partial[160];          /* "the bench completed N of M prompts", or
                                 "": the capture fails once exported */
  int64_t profile_started_ns; /* daemon: /start_profile answered */
};

/* Makes ATOM's folders, then runs the bench script with argv (borrowed
 * until it runs); job->bench.on_exit(job) is called when it exits (the
 * exit is in job->bench). */
void cap_bench_start(struct cap_job *job, char **argv);
/* Pool: reads the result file written during the last run into
 * job->bench.result/note, then calls then(job) on the loop. */
void cap_bench_read(struct cap_job *job, void (*then)(struct cap_job *));
/* The capture's "bench" (the result, when usable) and extra.bench_result
 * (what was read and why) as merges for a state write. */
json_t *cap_bench_merges(struct cap_job *job);
/* What ATOM's /stop_profile (stop) or /start_profile may take, in ATOM's
 * seconds. */
int cap_profile_timeout_s(const struct cap_job *job, bool stop);

/* ---- the verdicts' webhook (webhook.c) ---- */

struct cap_webhook;
int cap_webhook_new(uv_loop_t *loop, struct cap_http *http,
                    const struct cfg *cfg, struct cap_webhook **out);
/* POSTs body (taken) to webhook_url, with retries; nothing when unset. */
void cap_webhook_send(struct cap_webhook *w, int64_t id, json_t *body);
/* Drops what waits, frees w; done(ud) once closed. NULL w: done now. */
void cap_webhook_close(struct cap_webhook *w, void (*done)(void *ud), void *ud);

/* ---- runner and jobs ---- */

/* One kind's queue (common/lifecycle.h's TR_KIND_MAP): captures have the
 * GPU slot, imports a slot beside it. */
struct cap_queue {
  struct cap_job *job; /* its slot: the job running, or NULL */
  _Atomic int64_t id;  /* the job's id for other threads: 0 when idle */
  int64_t *recover;    /* ids to index first after a restart */
  size_t nrecover;
  bool picking;    /* a look-up of the queue is in the pool */
  bool pick_again; /* woken while it was */
};

/* The server a sweep's points share (sweep.c, docs/SWEEPS.md): kept by
 * the runner between one point's end and the next one's start. */
struct cap_sweep {
  int64_t id;                /* the sweep, 0: none kept */
  struct cap_proc *launcher; /* the launching point's, its group the
                                server's */
  int ranks_expected;        /* as its ready gate settled them */
  const char *ranks_source;  /* static */
  int64_t launched_by;       /* the point that launched it */
};

struct cap_runner {
  uv_loop_t *loop;
  const struct cfg *cfg;
  struct cap_http *http;
  struct cap_webhook *webhook;
  struct idx_rules *rules;
  struct cap_queue queues[TR_NKIND];
  bool purging, purge_again; /* the trash is emptied in the pool */
  int index_running;         /* rank jobs in the pool, all jobs */
  int works;                 /* pool jobs in flight */
  int jobs;                  /* jobs not yet freed */
  bool stopping;
  bool http_closed;
  void (*down)(void *ud);
  void *down_ud;
  pthread_mutex_t db_lock; /* guards dbs */
  struct store **dbs;      /* idle connections for pool threads */
  size_t ndbs, dbs_cap;
  struct cap_work *later; /* work waiting to be tried again */
  uv_timer_t later_timer;
  struct cap_sweep sweep; /* the server a sweep's next point may join */
};

struct cap_op;

struct rank_work; /* a rank in the pool (index_ranks.c) */

/* INDEXING's state (phase_indexing.c, index_ranks.c). */
struct cap_index {
  size_t next_rank; /* next rank to hand out */
  int running, indexed, failed;
  uint64_t bytes_reported;
  _Atomic uint64_t *read; /* per rank, written by index workers */
  bool *skip;             /* recovered: stored before a restart */
  struct rank_work **works; /* per rank, while it is in the pool */
  char *failures;         /* "rank 2 (rank_2): ..." */
  /* A rank is in, counted, the job still running: INDEXING's. */
  void (*rank_done)(struct cap_job *job);
};

/* EXPORTING's state (phase_exporting.c). */
struct cap_export {
  int polls;
  int quiet_polls;    /* polls in a row without progress */
  bool busy;          /* a folder scan is in the pool */
  bool stop_answered; /* profile_control daemon: /stop_profile */
  int ranks_expected;
  const char *ranks_source; /* "server_info" or "argv" (static) */
  int64_t started_ns;       /* EXPORTING began (or the drain did) */
  uint64_t last_written;    /* the last poll's figures, for progress */
  uint64_t last_log_bytes;
  int last_exported, last_completed;
  void (*drained)(struct cap_job *job); /* the drain's continuation */
  int64_t next_look_ns;                 /* the drain's next folder scan */
};

/* ---- the job's plan (job_plan.c) ---- */

/* Builds the job's plan in the pool (atom/plan.h: its folders; a sweep's
 * point launches into, or joins, its sweep's launch folder), records it
 * (extra), then calls then(job); a plan that cannot be made fails the
 * job. */
void cap_job_plan(struct cap_job *job, void (*then)(struct cap_job *job));

/* The plan of a job already ended, for its stop script alone (a sweep's
 * point that joined the server and ended while its plan was being made:
 * capture.c's cleanup): not recorded; then(job) with it, or the job
 * finished when it cannot be made. */
void cap_job_plan_to_stop(struct cap_job *job,
                          void (*then)(struct cap_job *job));

/* ---- sweeps (sweep.c, docs/SWEEPS.md) ---- */

/* A job the runner starts: for a point of the sweep whose server the
 * runner keeps, it joins (job->joins, the server's process group and
 * ranks); anything else drops the server kept (it stays up, as after a
 * capture). */
void cap_sweep_join(struct cap_job *job);
/* A job ends (cap_job_finish): a point whose window was collected and
 * whose server no look found dead hands the server to the runner for the
 * next point (job->launcher is then NULL); any other drops it. */
void cap_sweep_keep(struct cap_job *job);
/* Drops the server kept (shutdown): its handle closed, the server left. */
void cap_sweep_drop(struct cap_runner *r);
/* <trace_root>/sweeps/<id>/launch, the folder a sweep's server exports
 * into (--torch-profiler-dir). New string, NULL when out of memory. */
char *cap_sweep_launch_dir(const char *root, int64_t sweep);
/* Moves every file of the rank folders under from to the same path under
 * to (made as needed), the graph-capture traces of --mark-trace
 * (capture_traces/) hard-linked instead: they stay for the next point.
 * No link is followed; what is there already is kept. Idempotent. Any
 * thread; blocks on the file system. 0, or a negative errno with err
 * naming the file. */
int cap_sweep_collect(const char *from, const char *to, struct tr_err *err);

/* ---- ranks exporting (exports.c) ---- */

/* Queues a scan of job's trace folder (with scan_log, of the server log
 * first) in the pool; done(job, l) on the loop with its layout (taken;
 * NULL when the folder cannot be read). false when out of memory:
 * nothing is queued. */
bool cap_export_scan(struct cap_job *job, bool scan_log,
                     void (*done)(struct cap_job *job, struct cap_layout *l));
/* A cancel while ranks may export: true when they may (EXPORTING, or
 * BENCHMARK once the profiler is stopping). */
bool cap_export_running(const struct cap_job *job);
/* Waits, after the job ended, until the exports end or the export's
 * deadline passes, then calls then(job); the job's tick timer is used. */
void cap_export_drain(struct cap_job *job, void (*then)(struct cap_job *job));
/* The bench completed fewer prompts than it sent (job->bench.partial):
 * the capture fails, its traces kept (docs/ATOM.md, "A partial
 * workload"). */
void cap_export_fail_partial(struct cap_job *job);

/* WAITING_READY's progress (phase_waiting_ready.c). */
struct cap_ready {
  uint64_t log_bytes;  /* the launch's log bytes at the last growth */
  int64_t progress_ns; /* when it last grew */
};

struct cap_job {
  struct cap_runner *r;
  int64_t id;
  enum tr_kind kind;
  bool is_import; /* kind is TR_KIND_IMPORT */
  bool recovered; /* re-indexed after a restart */
  enum tr_phase phase;
  enum cap_end ending;  /* END_NONE while the job runs */
  bool finished;        /* cap_job_finish ran */
  json_t *params;       /* the request, owned */
  json_t *stored_ranks; /* recovered: ranks already stored */
  char *trace_dir, *log_dir, *work_dir;
  struct cap_plan *plan;
  char *export_dir; /* where the server exports: trace_dir, or a sweep's
                       launch folder (COLLECTING moves the files) */
  int64_t sweep_id; /* a sweep's point: its sweep, else 0 */
  int sweep_point, sweep_conc_max;
  bool joins;                /* a point joining its sweep's server: no launch */
  bool collected;            /* its window left the launch folder */
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
  struct cap_gpu gpu;
  struct cap_scan scan;
  uint64_t log_at[TR_NPHASE]; /* the server log's size as each phase began */
  unsigned log_marked;        /* the phases log_at holds (bits) */
  struct cap_bench bench;
  struct cap_export export;
  struct cap_ready ready;
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
/* recover.c: what a previous traced left running, into r's queues (or
 * interrupted), from cap_runner_new() before the loop runs. */
int cap_recover(struct cap_runner *r, struct tr_err *err);
/* A job the store would not let end (a full disk): its final status,
 * phase and error (taken, may be NULL) are written from the runner, tried
 * until the store takes them; at shutdown they are forgotten (said on
 * stderr: the next start marks the capture interrupted). */
void cap_runner_orphan(struct cap_runner *r, int64_t id, int status, int phase,
                       json_t *error);

/* ---- ranks indexed in the pool (index_ranks.c) ---- */

/* Hands out the ranks of the jobs in INDEXING to the pool, index_jobs at
 * a time over all jobs, each kind's in turn. */
void cap_index_pump(struct cap_runner *r);
/* Where rank's collectives go (logs/<id>/collectives/rank_<r>.bin), a new
 * string; with make (pool threads only) the folder is made first. NULL
 * when out of memory or the folder cannot be made. */
char *cap_coll_path(const struct cap_job *job, size_t rank, bool make);
/* The deadline of reading job's traces (INDEXING, and FINISHING, which
 * reads their side files): 10 minutes and a second per MiB of trace. */
int cap_trace_budget_s(const struct cap_job *job);
/* Adds "; <what>" to job->index.failures (at most 4 KiB are kept). */
void cap_index_failure(struct cap_job *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The trace bytes read so far over job's ranks. */
uint64_t cap_index_bytes_read(const struct cap_job *job);
/* Stops job's ranks in the pool: each one's indexer stops at its next
 * look at its flag (a chunk read, an event, a block of the walk) and its
 * rows are rolled back, none recorded as failed; a job that ends (a
 * failure, a cancel, traced stopping) calls it before anything waits
 * for its ranks. */
void cap_index_cancel(struct cap_job *job);
/* Stops, as failed, the ranks of job indexed for longer than
 * rank_index_timeout_s (INDEXING's tick, each second). */
void cap_index_deadlines(struct cap_job *job);

void cap_invariants(const struct cap_job *job);

/* A failure's message made of a callee's (struct tr_err) and a few words
 * of its own ("cannot store: ..."). */
#define CAP_MSG_MAX (TR_ERR_MSG + 88)

#endif
