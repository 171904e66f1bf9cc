/*
 * What a capture request may ask of ATOM (docs/ATOM.md, "What a request
 * may pass"): least authority for a request that makes root run ATOM's
 * scripts, server and bench.
 *
 *   - Every word of server_args and bench_args is judged by ATOM's own
 *     option set (atom/options.h): an allow-list, exact spellings only.
 *     Options that name an address are traced's alone; options traced sets
 *     from the request's members are refused; values are checked by kind
 *     (numbers, choices, JSON); no word may hold what the shell splits
 *     or expands (ATOM's scripts pass them on unquoted); values that name
 *     a file or folder must
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
int atom_policy_words(const struct cfg *cfg, enum tr_atom_prog prog,
                      json_t *words, const char *member, bool preset_trusts,
                      struct tr_err *err);

/* Judges the request's env object (names and values). */
int atom_policy_env(const struct cfg *cfg, json_t *env, struct tr_err *err);

/* The model: an absolute path resolving under model_roots (*resolved, a
 * new string, gets the resolved path), or a hub id when allow_hub_ids
 * (*resolved NULL). field names it in errors. */
int atom_policy_model(const struct cfg *cfg, const char *model,
                      const char *field, char **resolved, struct tr_err *err);

/* A path a request names: absolute, no "..", resolving under model_roots
 * after its links are resolved (a path that does not exist yet resolves
 * through its deepest existing folder). *resolved (may be NULL) gets the
 * resolved path, a new string. */
int atom_policy_path(const struct cfg *cfg, const char *path, const char *field,
                     char **resolved, struct tr_err *err);

/* A model folder ATOM loads (the model, --draft-model, the bench's
 * --tokenizer), real already resolved under model_roots: 0, or TR_EINVAL
 * naming field and the path when a user other than root or traced's own
 * may write it, anything under it (links judged by their targets) or a
 * folder above it that is not sticky; or when its config.json or
 * tokenizer_config.json has an auto_map (Python of the folder's own,
 * which ATOM's bench runs: it always passes --trust-remote-code) and
 * neither trusts (the preset sets trust_remote_code) nor
 * allow_trust_remote_code allows remote code; or when one of those two
 * files is a link or too big to read. A path that is no folder passes.
 * Reads the file system (a walk of the folder, bounded). */
int atom_policy_folder(const struct cfg *cfg, const char *real, bool trusts,
                       const char *field, struct tr_err *err);

/* A word a script expands unquoted (docs/ATOM.md, "Scripts"): 0, or
 * TR_EINVAL naming item when it holds a blank, a glob character, a
 * backslash or a control character, which the shell would split or expand.
 * Every server and bench word passes it (the words of a JSON value's
 * objects and arrays are escaped instead: cap_word_for_shell()). */
int atom_policy_shell_word(const char *word, const char *item,
                           struct tr_err *err);

/* Why no request may set the variable name, whatever env_allow says (a
 * static phrase), with the matching deny pattern in *pattern (may be
 * NULL); NULL when the deny list does not forbid it. */
const char *api_env_denied(const char *name, const char **pattern);

#endif
