/*
 * A capture request judged against ATOM (atom/request.c): what
 * POST /captures asks of atom/ once its members have their shape. HTTP
 * threads; reads the file system (the model's folder, models.json).
 */
#ifndef ATOM_REQUEST_H
#define ATOM_REQUEST_H

#include <jansson.h>

#include "common/config.h"
#include "atom/preset.h"
#include "common/tr.h"

/* server_args or bench_args (member), an array of strings: a word with a
 * space must be JSON without spaces inside its strings, stored compact in
 * arr (ATOM's start and bench scripts split their extra words again at
 * whitespace); TR_EINVAL naming "member[i]" otherwise. What each word may
 * do is atom_request_judge()'s, once the preset is known. */
int atom_request_words(json_t *arr, const char *member, struct tr_err *err);

/* The request obj (every member checked, defaults filled in) against
 * cfg's policy (atom/policy.h): the model and what its preset launches,
 * every word, the env, the chat template, then more's window
 * (ATOM_PROFILER_MORE needs prompt_multiplier 1). 0, or TR_EINVAL (or
 * another error) naming the member. obj is borrowed; its words may have
 * been made compact. */
int atom_request_judge(const struct cfg *cfg, json_t *obj, struct tr_err *err);

/* The preset of obj's model and variant (atom/preset.h): 1 and *pre
 * filled (free it with tr_preset_free()), 0 when there is no models.json
 * or no entry of it matches, or an error naming "variant" or
 * "models_json". */
int atom_request_preset(const struct cfg *cfg, json_t *obj,
                        struct tr_preset *pre, struct tr_err *err);

#endif
