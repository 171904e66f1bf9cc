/*
 * What ATOM would do with a launch that traced can see coming, and so
 * settles before anything runs (docs/ATOM.md, "What traced foresees"):
 *
 *   - DeepSeek-V4 under ATOM's default --level 3 hits a cluster_dims bug in
 *     Inductor's autotune: traced passes --level 0 (the seed's skill);
 *   - a preset's --draft-model that is a Hugging Face id would be
 *     downloaded: the folder of that name beside the model is launched
 *     instead, as for a variant's path;
 *   - with the bench starting the profiler, only the completions backends
 *     reach /start_profile (backend_request_func.py);
 *   - the GPUs a launch takes and the share of each it asks, which GPU
 *     memory held from outside a container must leave free.
 *
 * Any thread; tr_atom_level() and tr_atom_draft_model() read the file
 * system (a model's config.json, a folder's existence).
 */
#ifndef TR_ATOM_LAUNCH_H
#define TR_ATOM_LAUNCH_H

#include <jansson.h>
#include <stdbool.h>

#include "atom/preset.h"
#include "common/config.h"
#include "common/tr.h"

/* ATOM's default compilation level (arg_utils.py:60,196). */
#define TR_ATOM_LEVEL_DEFAULT 3
/* The start script's default GPU_MEM_UTIL (start_atom_server.sh:19). */
#define TR_ATOM_GPU_MEM_UTIL  0.9
/* GPUs a launch may name, at most. */
#define TR_ATOM_GPUS_MAX      64

struct tr_atom_level {
  bool add;      /* traced adds "--level 0" */
  int level;     /* the level the server gets */
  char why[320]; /* the rule that decided, for the plan */
};

/* The level of a launch of model (its folder) with server words (every
 * word the server gets, the preset's and the request's). preset_path:
 * the applied preset's "path" (a hub id), or NULL. A DeepSeek-V4 model (by
 * its preset, or by an architecture DeepseekV4* in the folder's
 * config.json) gets --level 0 unless the words set --level, or set a
 * --cudagraph-mode that needs level 3 (PIECEWISE and its kin,
 * arg_utils.py:199-207). Never fails: out says what applies. */
void tr_atom_level(const char *model, const char *preset_path,
                   char *const *words, struct tr_atom_level *out);

/* The fix a cluster_dims failure names (static text). */
const char *tr_atom_level_fix(void);

/* A preset's words (owned, NULL-terminated; changed in place): each
 * --draft-model value that is not an absolute path (a Hugging Face id) is
 * replaced by the folder of its last component beside model, when that
 * folder exists under model_roots. Without it: left as it is with
 * allow_hub_ids (ATOM downloads it), else TR_EINVAL (field "variant")
 * naming the folder looked for. note (may be NULL) gets
 * {"preset": id, "launched": folder or id, "why"}. */
int tr_atom_draft_model(const struct cfg *cfg, const char *model, char **words,
                        json_t *note, struct tr_err *err);

/* With the bench starting the profiler (profile_control bench), the
 * bench's backend (the last --backend of words, else the script's vllm)
 * must send /start_profile through a completions request function:
 * TR_EINVAL (field "bench_args") naming why otherwise. */
int tr_atom_bench_backend(const struct cfg *cfg, char *const *words,
                          struct tr_err *err);

/* The GPUs a launch of `workers` workers takes: the first `workers` of
 * HIP_VISIBLE_DEVICES (or ROCR_, CUDA_) as env (the server's additions;
 * traced's own environment where they are silent) names them, else
 * 0..workers-1; into gpus (at most TR_ATOM_GPUS_MAX), returning how many.
 * *util gets the share of each it asks: the last --gpu-memory-utilization
 * of words, else env's GPU_MEM_UTIL, else the start script's 0.9. */
int tr_atom_launch_gpus(char *const *words, json_t *env, int workers, int *gpus,
                        double *util);

/* A capture request (params, validated) judged by the rules above before
 * it is queued: the bench's backend (the request's bench_args and the
 * preset variant's), and the preset's --draft-model for the model folder
 * launched (model, resolved; NULL: a hub id, not judged). pre: the
 * preset that applies (pre->model NULL: none). */
int tr_atom_request_check(const struct cfg *cfg, const struct tr_preset *pre,
                          json_t *params, const char *model,
                          struct tr_err *err);

#endif
