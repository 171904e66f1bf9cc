#include "atom/chat_template.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"

#define TOKENIZER_MAX ((size_t)8 << 20) /* tokenizer_config.json ceiling */

/* chat_encoders.py:50 globs encoding/encoding_*.py and sorts: counted
 * here, the first name kept. */
static void count_encoders(const char *model, struct tr_chat_probe *p)
{
  int fd = tr_open_dir(model, "encoding", NULL, NULL);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *e;

  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return;
  }
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);

    if (strncmp(e->d_name, "encoding_", 9) != 0 || n < 12 ||
        strcmp(e->d_name + n - 3, ".py") != 0)
      continue;
    if (p->encoders++ == 0 || strcmp(e->d_name, p->encoder) < 0)
      snprintf(p->encoder, sizeof(p->encoder), "%.*s",
               (int)sizeof(p->encoder) - 1, e->d_name);
  }
  closedir(d);
}

/* A file of the model folder exists as a regular file (opened under the
 * folder, no link followed, nothing waited on). */
static bool model_file(const char *model, const char *name)
{
  int fd = tr_open_file(model, name, 0, NULL, NULL);

  if (fd < 0)
    return false;
  close(fd);
  return true;
}

int tr_chat_probe(const char *model, struct tr_chat_probe *out,
                  struct tr_err *err)
{
  int fd = tr_open_dir(NULL, model, NULL, NULL), rc;
  struct tr_err why = { 0 };
  char *text = NULL;
  json_t *doc, *t;

  memset(out, 0, sizeof(*out));
  if (fd < 0)
    return 0;
  close(fd);
  out->folder = true;
  count_encoders(model, out);
  out->jinja = model_file(model, "chat_template.jinja");
  rc = tr_read_file(model, "tokenizer_config.json", TOKENIZER_MAX, &text, NULL,
                    &why);
  if (rc == -ENOENT || rc == -ENOTDIR)
    return 0;
  /* A link, a FIFO, a file too big: the request's fault, said as such. */
  if (rc < 0)
    return tr_err_set(err, TR_EINVAL, "model", "model: %s", why.msg);
  doc = json_loads(text, 0, NULL);
  free(text);
  if (!json_is_object(doc)) {
    json_decref(doc);
    return tr_err_set(err, TR_EFORMAT, "model",
                      "%s/tokenizer_config.json is not a JSON object "
                      "(the bench's tokenizer load would fail)",
                      model);
  }
  t = json_object_get(doc, "chat_template");
  out->tokenizer_tpl = t != NULL && !json_is_null(t);
  json_decref(doc);
  return 0;
}

/* What apply_chat_template will use (chat_encoders.py:107-121): the one
 * encoder, else the tokenizer's template; "" when there is none. */
static void what_applies(const struct tr_chat_probe *p, struct tr_chat *c)
{
  if (p->encoders == 1)
    snprintf(c->applies, sizeof(c->applies), "the encoder encoding/%s",
             p->encoder);
  else if (p->tokenizer_tpl)
    snprintf(c->applies, sizeof(c->applies),
             "the tokenizer's template (tokenizer_config.json)");
  else if (p->jinja)
    snprintf(c->applies, sizeof(c->applies),
             "the tokenizer's template (chat_template.jinja)");
  else
    c->applies[0] = '\0';
}

/* The model's own files: does it ship a template? */
static void by_model(const struct tr_chat_probe *p, struct tr_chat *c)
{
  c->use = p->encoders > 0 || p->tokenizer_tpl || p->jinja;
  if (p->encoders == 1)
    snprintf(c->rule, sizeof(c->rule), "the model's encoder encoding/%s",
             p->encoder);
  else if (p->encoders > 1)
    snprintf(c->rule, sizeof(c->rule),
             "the model has %d encoding/encoding_*.py files: ATOM refuses "
             "to choose and uses the tokenizer's template",
             p->encoders);
  else if (p->tokenizer_tpl)
    snprintf(c->rule, sizeof(c->rule),
             "a non-null chat_template in tokenizer_config.json");
  else if (p->jinja)
    snprintf(c->rule, sizeof(c->rule), "the model's chat_template.jinja");
  else
    snprintf(c->rule, sizeof(c->rule),
             p->folder ? "the model ships no chat template"
                       : "the model is no folder traced can read");
}

int tr_chat_decide(enum tr_chat_given given, const struct tr_chat_probe *p,
                   struct tr_chat *out, struct tr_err *err)
{
  memset(out, 0, sizeof(*out));
  switch (given) {
  case TR_CHAT_REQUEST:
    out->use = true;
    snprintf(out->rule, sizeof(out->rule), "the request's bench_args");
    break;
  case TR_CHAT_PRESET_ON:
    out->use = true;
    snprintf(out->rule, sizeof(out->rule), "the preset's bench_args");
    break;
  case TR_CHAT_PRESET_OFF:
    snprintf(out->rule, sizeof(out->rule),
             "the preset's bench_args (no --use-chat-template)");
    break;
  case TR_CHAT_NOT_GIVEN: by_model(p, out); break;
  }
  what_applies(p, out);
  /* A model traced cannot read (a hub id) is the bench's to load. */
  if (!out->use || out->applies[0] != '\0' || !p->folder)
    return 0;
  return tr_err_set(
      err, TR_EINVAL, given == TR_CHAT_NOT_GIVEN ? "model" : "bench_args",
      "--use-chat-template (%s) would crash ATOM's bench: the model has %s "
      "and no tokenizer chat template (no chat_template in "
      "tokenizer_config.json, no chat_template.jinja), so "
      "apply_chat_template raises",
      out->rule,
      p->encoders > 1 ? "several encoding/encoding_*.py (ATOM refuses to "
                        "choose)"
                      : "no encoder");
}
