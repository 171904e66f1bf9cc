/*
 * cap_plan: what a capture will run, decided before it runs: the argv of
 * each ATOM script, the server's environment, and the ATOM know-how of
 * docs/ATOM.md a person would otherwise forget (PROMPT_MULTIPLIER 1,
 * ATOM_PROFILER_MORE on the server and never the bench, --use-chat-template
 * where the workload needs it, the presets of ATOM CI's models.json, words
 * that survive the start script's re-splitting, a fresh trace folder).
 *
 * atom_plan_build() runs on a pool thread (it reads files and makes
 * folders); the plan is read-only afterwards.
 */
#ifndef DAEMON_PLAN_H
#define DAEMON_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atom/launch.h"
#include "common/config.h"
#include "common/tr.h"

struct cap_plan {
  char **start_argv;  /* NULL-terminated, owned */
  char **start_env;   /* "K=V" additions for the server */
  char **warmup_argv; /* profile_control daemon: the warm-up run before
                         /start_profile; NULL with profile_control bench */
  char **bench_argv;  /* the run the trace holds */
  char **stop_argv;
  char *model; /* the model path launched (a variant may name
                  another checkpoint) */
  int tp;
  int pp_pcp;             /* pipeline x prefill-context parallel sizes */
  int ranks_argv;         /* workers the argv asks for: tp x dp x pp_pcp */
  bool fake_eplb;         /* --fake-eplb: only the workers of the devices
                             there are export (docs/ATOM.md, "Ranks") */
  int profiler_timeout_s; /* the server's ATOM_PROFILER_TIMEOUT */
  int gpus[TR_ATOM_GPUS_MAX]; /* the GPUs the launch takes */
  int ngpus;
  double gpu_util; /* the share of each it asks (--gpu-memory-utilization) */
  json_t *extra;          /* for the capture's extra: commands, preset,
                             launch, level, chat_template, max_num_seqs,
                             atom_folders */
};

/* The folders of one capture, and the launch it shares (a sweep's
 * points share one: docs/SWEEPS.md). */
struct cap_dirs {
  const char *trace; /* --torch-profiler-dir: <trace_root>/<id>, or a
                        sweep's launch folder */
  const char *log;   /* <trace_root>/logs/<id> */
  const char *work;  /* the scripts' working folder, fresh and empty */
  bool joins;        /* trace is the folder of a server already up (a
                        sweep's, launched by an earlier point): kept as
                        it is, not made fresh */
  int conc_max;      /* a sweep's largest concurrency, which the launch's
                        MAX_NUM_SEQS must hold; 0: the request's conc */
};

/* Makes the folders (a non-empty trace folder is moved aside, never
 * deleted; the folders ATOM writes to without making them), judges the
 * request again (atom/policy.h: a link may have moved since it was
 * accepted), reads models.json and the model's chat template, and builds
 * the plan for the request params (borrowed). Caller frees *out with
 * atom_plan_free(). Errors name the request field at fault where one is. */
int atom_plan_build(const struct cfg *cfg, json_t *params,
                    const struct cap_dirs *dirs, struct cap_plan **out,
                    struct tr_err *err);
void atom_plan_free(struct cap_plan *p);

/* The folders ATOM's scripts write to but never make (docs/ATOM.md,
 * "Folders"): server_log's (start_atom_server.sh:20,81 tee under
 * set -euo pipefail) and bench_result's (run_benchmark.sh:24,75 and the
 * bench's --result-filename). Made with their parents, mode 0755, owned by
 * traced's user, which ATOM's scripts run as. Returns 0 or -errno, err
 * naming the folder; made (may be NULL) gets the folders made. Pool
 * threads. */
int cap_atom_folders(const struct cfg *cfg, json_t *made, struct tr_err *err);

/* Words of an argv as JSON, and a word made to survive ATOM's start
 * script (exposed for tests): a JSON object or array word is written
 * compact with its blanks and glob characters escaped as \uXXXX (json.loads
 * reads them back), any other word is returned as is. New string. */
json_t *cap_words_json(char *const *words);
char *cap_word_for_shell(const char *word);

#endif
