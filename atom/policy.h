/*
 * What a capture request may ask of ATOM (docs/ATOM.md, "What a request
 * may pass"): least authority for a request that makes root run ATOM's
 * scripts, server and bench.
 *
 *   - Every word of server_args and bench_args is judged by ATOM's own
 *     option set (atom/options.h): an allow-list, exact spellings only.
 *     Options that name an address are traced's alone; options traced sets
 *     from the request's members are refused; values are checked by kind
 *     (numbers, choices, JSON); values that name a file or folder must
 *     resolve under model_roots, links resolved; a hub id only with
 *     allow_hub_ids; --trust-remote-code only where the preset sets it or
 *     allow_trust_remote_code; a deployment over several nodes
 *     (--kv-transfer-config, ATOM_DP_*) is refused: traced supports one.
 *   - env: names on env_allow (exact names, and prefixes written with a
 *     trailing '_' or '*'), then the deny list as a second guard; a
 *     variable that names a file or folder takes values under model_roots.
 *   - model: a folder under model_roots, or a hub id with allow_hub_ids.
 *
 * Values from the preset file (models.json, the admin's) are trusted as
 * they are and never pass through here.
 *
 * Any thread; the checks that resolve paths read the file system.
 */
#ifndef API_POLICY_H
#define API_POLICY_H

#include <jansson.h>
#include <stdbool.h>

#include "atom/options.h"
#include "common/config.h"
#include "common/tr.h"

/* Judges the words of member ("server_args" or "bench_args", an array of
 * strings) for prog. preset_trusts: the preset sets --trust-remote-code.
 * Errors name the word ("server_args[3]"). */
int api_policy_words(const struct cfg *cfg, enum tr_atom_prog prog,
                     json_t *words, const char *member, bool preset_trusts,
                     struct tr_err *err);

/* Judges the request's env object (names and values). */
int api_policy_env(const struct cfg *cfg, json_t *env, struct tr_err *err);

/* The model: an absolute path resolving under model_roots (*resolved, a
 * new string, gets the resolved path), or a hub id when allow_hub_ids
 * (*resolved NULL). field names it in errors. */
int api_policy_model(const struct cfg *cfg, const char *model,
                     const char *field, char **resolved, struct tr_err *err);

/* A path a request names: absolute, no "..", resolving under model_roots
 * after its links are resolved (a path that does not exist yet resolves
 * through its deepest existing folder). *resolved (may be NULL) gets the
 * resolved path, a new string. */
int api_policy_path(const struct cfg *cfg, const char *path,
                    const char *field, char **resolved, struct tr_err *err);

/* Why no request may set the variable name, whatever env_allow says (a
 * static phrase), with the matching deny pattern in *pattern (may be
 * NULL); NULL when the deny list does not forbid it. */
const char *api_env_denied(const char *name, const char **pattern);

#endif
