/*
 * A capture request (POST /captures, after api/validate.c has checked its
 * members' shape) judged against ATOM: its words as ATOM's scripts will
 * split them, what it may make root do (atom/policy.c: the model and the
 * checkpoint a preset launches, every word, the env), the chat template
 * ATOM's bench would use, and the profiler's limits. atom/plan.c judges
 * the request again where it names files, when it runs.
 */
#include "atom/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atom/chat_template.h"
#include "atom/launch.h"
#include "atom/policy.h"
#include "atom/preset.h"
#include "common/reals.h"

/* A word holding a space must be JSON whose compact form has none: ATOM's
 * start and bench scripts pass their extra words unquoted ($EXTRA_ARGS),
 * so the shell splits them again at whitespace; a JSON value is stored
 * (and passed) compact. Any other word with a space could never reach the
 * server intact. */
static int check_spaced(json_t *arr, size_t i, const char *item,
                        const char *target, struct tr_err *err)
{
  const char *w = json_string_value(json_array_get(arr, i));
  json_t *v = json_loads(w, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
  char *compact =
      v != NULL ? tr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  int rc = 0;

  if (compact == NULL || strchr(compact, ' ') != NULL)
    rc = tr_err_set(err, TR_EINVAL, item,
                    "%s holds a space and is not JSON without spaces inside "
                    "its strings: ATOM's scripts split their extra words "
                    "again at whitespace, so it cannot reach %s intact; "
                    "give each word on its own",
                    item, target);
  else if (json_array_set_new(arr, i, json_string(compact)) != 0)
    rc = tr_err_set(err, TR_ENOMEM, item, "out of memory");
  free(compact);
  json_decref(v);
  return rc;
}

int atom_request_words(json_t *arr, const char *member, struct tr_err *err)
{
  char item[64];
  size_t i;
  json_t *w;

  json_array_foreach(arr, i, w) {
    snprintf(item, sizeof(item), "%s[%zu]", member, i);
    if (strchr(json_string_value(w), ' ') != NULL &&
        check_spaced(arr, i, item,
                     strcmp(member, "bench_args") ? "the server" : "the bench",
                     err) != 0)
      return TR_EINVAL;
  }
  return 0;
}

/* The preset of the request (models.json: the admin's file, small; read
 * here so that a variant that is not there is a 400 naming the labels
 * that are). Returns 1 found, 0 none, or an error. */
int atom_request_preset(const struct cfg *cfg, json_t *obj,
                        struct tr_preset *pre, struct tr_err *err)
{
  const char *variant = json_string_value(json_object_get(obj, "variant"));
  const char *why, *file;
  char path[4096];

  if ((file = tr_preset_file(cfg, path, sizeof(path), &why)) == NULL) {
    if (variant != NULL && variant[0] != '\0')
      return tr_err_set(err, TR_EINVAL, "variant",
                        "variant \"%s\" asked for, but there is no "
                        "models.json: %s",
                        variant, why);
    return 0;
  }
  return tr_preset_find(file, json_string_value(json_object_get(obj, "model")),
                        variant, pre, err);
}

/* Whether the bench would crash on --use-chat-template (ATOM's rules:
 * atom/chat_template.h), for the model the capture launches. */
static int check_template(const struct tr_preset *pre, json_t *obj,
                          const char *model, struct tr_err *err)
{
  json_t *words = json_object_get(obj, "bench_args");
  char **req = NULL, **var = NULL;
  enum tr_chat_given given = TR_CHAT_NOT_GIVEN;
  struct tr_chat_probe probe;
  struct tr_chat chat;
  size_t i, n = 0;
  json_t *w;
  int rc;

  if ((req = calloc(json_array_size(words) + 1, sizeof(*req))) == NULL)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  json_array_foreach(words, i, w)
    req[n++] = (char *)json_string_value(w);
  if (tr_atom_opt_given(TR_ATOM_BENCH, req, "--use-chat-template"))
    given = TR_CHAT_REQUEST;
  else if (pre->model != NULL) {
    var = tr_shell_words(
        json_string_value(json_object_get(pre->variant, "bench_args")),
        "bench_args", NULL);
    given = tr_atom_opt_given(TR_ATOM_BENCH, var, "--use-chat-template")
                ? TR_CHAT_PRESET_ON
                : TR_CHAT_PRESET_OFF;
  }
  rc = tr_chat_probe(model, &probe, err);
  if (rc == 0)
    rc = tr_chat_decide(given, &probe, &chat, err);
  tr_words_free(var);
  free(req);
  return rc;
}

/* What the request may make root do (atom/policy.c): the model and the
 * checkpoint it launches, every word, the env, the chat template. */
static int check_authority(const struct cfg *cfg, json_t *obj,
                           struct tr_err *err)
{
  struct tr_preset pre = { 0 };
  char *real = NULL, *launched = NULL, *launched_real = NULL;
  bool trusts;
  int rc;

  rc = atom_policy_model(cfg, json_string_value(json_object_get(obj, "model")),
                         "model", &real, err);
  if (rc == 0 && (rc = atom_request_preset(cfg, obj, &pre, err)) > 0)
    rc = 0;
  if (rc == 0 && pre.model != NULL && real != NULL &&
      ((launched = tr_preset_model_path(real, &pre)) == NULL ||
       (rc = atom_policy_path(cfg, launched, "variant", &launched_real, err)) !=
           0))
    rc = rc ? rc : tr_err_set(err, TR_ENOMEM, "", "out of memory");
  trusts = json_is_true(json_object_get(json_object_get(pre.model, "config"),
                                        "trust_remote_code"));
  if (rc == 0 && real != NULL)
    rc = atom_policy_folder(cfg, launched_real ? launched_real : real, trusts,
                            launched_real ? "variant" : "model", err);
  if (rc == 0)
    rc = atom_policy_words(cfg, TR_ATOM_SERVER,
                           json_object_get(obj, "server_args"), "server_args",
                           trusts, err);
  if (rc == 0)
    rc = atom_policy_words(cfg, TR_ATOM_BENCH,
                           json_object_get(obj, "bench_args"), "bench_args",
                           false, err);
  if (rc == 0)
    rc = atom_policy_env(cfg, json_object_get(obj, "env"), err);
  if (rc == 0)
    rc = tr_atom_request_check(cfg, &pre, obj,
                               launched_real ? launched_real : real, err);
  if (rc == 0 && real != NULL)
    rc = check_template(&pre, obj, launched_real ? launched_real : real, err);
  tr_preset_free(&pre);
  free(real);
  free(launched);
  free(launched_real);
  return rc;
}

int atom_request_judge(const struct cfg *cfg, json_t *obj, struct tr_err *err)
{
  int rc = check_authority(cfg, obj, err);

  /* ATOM_PROFILER_MORE=1 (docs/ATOM.md): traces grow 3-4x and the export
   * has OOMed workers on 8 ranks; only a short window (about CONC*1
   * prompts) is safe. */
  if (rc == 0 && json_is_true(json_object_get(obj, "more")) &&
      json_integer_value(json_object_get(obj, "prompt_multiplier")) != 1)
    rc = tr_err_set(err, TR_EINVAL, "more",
                    "more: true needs prompt_multiplier 1: with shapes, "
                    "stacks and memory the trace grows 3-4x and its "
                    "export has run workers out of memory, so it is "
                    "allowed only with a short window");
  return rc;
}
