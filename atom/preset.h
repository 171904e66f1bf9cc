/*
 * preset: a model's launch settings from ATOM CI's models.json
 * (.github/benchmark/models.json; docs/ATOM.md, "Launch settings per
 * model"): the entry a model path matches, its variants, and the argv
 * words of its shell-text fields. The API checks a request's "variant"
 * with it, the capture runner builds the scripts' argv from it.
 *
 * Any thread. tr_preset_find() reads the file: it blocks on disk.
 */
#ifndef TR_PRESET_H
#define TR_PRESET_H

#include <jansson.h>

#include "common/config.h"
#include "common/tr.h"

#define TR_PRESET_FILE_MAX ((size_t)16 << 20) /* models.json ceiling */

struct tr_preset {
  json_t *model;     /* the models[] entry; owned reference */
  json_t *variant;   /* the chosen variants[] entry, or NULL; owned */
  const char *match; /* what matched: the entry's "path" (borrowed from
                        model) */
  json_t *scenarios; /* the ISL/OSL pairs and concurrency lists ATOM CI
                        runs it at (.github/scripts/catalog.py:148): the
                        variant's "scenarios", else the entry's, else the
                        file's "default_scenarios", not yet bounded by the
                        variant's conc_min/conc_max; owned, may be NULL */
};

/*
 * Finds model's entry in the models.json at path: its "path" or "display",
 * or a variant's "path", has the same last component as model. variant is
 * the label asked for; NULL or "" asks for the base variant (label "",
 * which an entry may lack: then no variant). Returns 1 and fills out, 0
 * when no entry matches (out untouched), or a negative code: the file
 * cannot be read or is not models.json (field "models_json"), a variant
 * was asked for and there is no entry (TR_EINVAL, field "variant"), or the
 * entry has no such variant (TR_EINVAL, field "variant", the message
 * listing the labels that exist). Caller frees out with tr_preset_free().
 */
int tr_preset_find(const char *path, const char *model, const char *variant,
                   struct tr_preset *out, struct tr_err *err);
void tr_preset_free(struct tr_preset *p);

/* The models.json presets come from (docs/ATOM.md, "Presets"): the
 * models_json setting; unset, ATOM's own file beside the scripts traced
 * drives, <atom_scripts>/../.github/benchmark/models.json, when it is
 * there. Copies the path into buf and returns it, or returns NULL with
 * *why (static text) saying why there is none. Reads the file system. */
const char *tr_preset_file(const struct cfg *cfg, char *buf, size_t size,
                           const char **why);

/* The model folder a capture launches: model, or with a variant that
 * names another checkpoint ("path"), the folder of that name beside it.
 * New string, NULL when out of memory. */
char *tr_preset_model_path(const char *model, const struct tr_preset *p);

/* A string member of the entry's "config" ("extra_args", "kv_cache_dtype"),
 * or NULL. */
const char *tr_preset_config_str(const struct tr_preset *p, const char *key);

/*
 * The words of shell text as a POSIX shell splits them, without
 * expansions: blanks separate, '...' is literal, "..." keeps its blanks
 * and takes \" \\ \$ \` escapes, a backslash outside quotes escapes the
 * next byte. ATOM CI's extra_args quote JSON values this way
 * (`--online_quant_config '{"a": 1}'`). Returns a new NULL-terminated
 * array (free with tr_words_free()), or NULL with err set (field, as
 * given) on an unbalanced quote or out of memory.
 */
char **tr_shell_words(const char *text, const char *field, struct tr_err *err);
void tr_words_free(char **words);

#endif
