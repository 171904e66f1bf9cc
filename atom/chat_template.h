/*
 * Whether ATOM's bench formats its prompts with the model's chat template
 * (--use-chat-template), decided as ATOM decides it (docs/ATOM.md, "Chat
 * template"), and whether that run would crash:
 *
 *   - the request's bench_args say --use-chat-template: used;
 *   - a models.json preset applies: its variant's bench_args decide (ATOM
 *     CI passes them as they are; an empty string means no template);
 *   - otherwise the model's own files (the seed skill's rule, extended as
 *     ATOM's chat_encoders.py reads a model folder): one
 *     encoding/encoding_*.py is the model's encoder; several, ATOM refuses
 *     to choose (chat_encoders.py:53) and falls back to the tokenizer's
 *     template; a non-null chat_template in tokenizer_config.json, or a
 *     chat_template.jinja, is the tokenizer's template.
 *
 * With the template used and neither an encoder nor a tokenizer template,
 * ATOM's bench raises in apply_chat_template (benchmark_serving.py:190,
 * transformers: no chat template set): tr_chat_decide() says so, before
 * anything is launched.
 *
 * Any thread; tr_chat_probe() reads the model folder (blocks on disk).
 */
#ifndef TR_CHAT_TEMPLATE_H
#define TR_CHAT_TEMPLATE_H

#include <stdbool.h>

#include "common/tr.h"

/* What a model folder holds. */
struct tr_chat_probe {
  bool folder;         /* the model is a local folder traced could read */
  int encoders;        /* encoding/encoding_*.py files */
  char encoder[128];   /* the first of them (sorted) */
  bool tokenizer_tpl;  /* tokenizer_config.json: a non-null chat_template */
  bool jinja;          /* chat_template.jinja */
};

/* Reads model's folder (files opened under it, no link followed). A model
 * that is no readable folder (a hub id, a missing folder) gives
 * folder == false and 0; a tokenizer_config.json that cannot be read as
 * JSON is an error (err field "model"). */
int tr_chat_probe(const char *model, struct tr_chat_probe *out,
                  struct tr_err *err);

/* Who asked for the template before the model's own files are looked at:
 * the request's or the preset's bench_args. */
enum tr_chat_given {
  TR_CHAT_NOT_GIVEN, /* neither: the model's files decide */
  TR_CHAT_REQUEST,   /* the request's bench_args hold --use-chat-template */
  TR_CHAT_PRESET_ON, /* the preset variant's bench_args hold it */
  TR_CHAT_PRESET_OFF /* a preset applies and its bench_args do not */
};

struct tr_chat {
  bool use;         /* the bench gets --use-chat-template */
  char rule[160];   /* which rule decided, for the capture's record */
  char applies[160];/* what the bench will apply when use: "encoder
                       encoding/encoding_dsv4.py", "the tokenizer's
                       template (...)" */
};

/* Decides from given and the probe. Returns 0, or TR_EINVAL (err field
 * "bench_args", or "model" when the model's files asked for it) when the
 * template is used and the bench would crash for want of one. */
int tr_chat_decide(enum tr_chat_given given, const struct tr_chat_probe *p,
                   struct tr_chat *out, struct tr_err *err);

#endif
