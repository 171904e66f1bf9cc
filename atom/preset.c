#include "atom/preset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The last component of path, without trailing slashes: [*out, +len). */
static size_t base_of(const char *path, const char **out)
{
  size_t n = strlen(path);
  const char *p;

  while (n > 1 && path[n - 1] == '/')
    n--;
  for (p = path + n; p > path && p[-1] != '/'; p--)
    ;
  *out = p;
  return (size_t)(path + n - p);
}

static bool same_base(const char *a, const char *b)
{
  const char *x, *y;
  size_t nx, ny;

  if (a == NULL || b == NULL)
    return false;
  nx = base_of(a, &x);
  ny = base_of(b, &y);
  return nx > 0 && nx == ny && memcmp(x, y, nx) == 0;
}

static const char *str_of(json_t *o, const char *key)
{
  return json_string_value(json_object_get(o, key));
}

static bool entry_matches(json_t *entry, const char *model)
{
  size_t i;
  json_t *v;

  if (same_base(str_of(entry, "path"), model) ||
      same_base(str_of(entry, "display"), model))
    return true;
  json_array_foreach(json_object_get(entry, "variants"), i, v) {
    if (same_base(str_of(v, "path"), model))
      return true;
  }
  return false;
}

/* models.json is the operator's file: links are fine, but never a FIFO
 * that would hold the thread, nor a file without bound. */
static json_t *load(const char *path, struct tr_err *err)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  json_error_t jerr;
  struct stat st;
  json_t *doc = NULL;

  if (fd < 0) {
    tr_err_set(err, -errno, "models_json", "cannot open %s: %s", path,
               strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (size_t)st.st_size > TR_PRESET_FILE_MAX)
    tr_err_set(err, TR_EFORMAT, "models_json",
               "%s is not a regular file of at most %zu bytes", path,
               TR_PRESET_FILE_MAX);
  else if ((doc = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr)) == NULL)
    tr_err_set(err, TR_EFORMAT, "models_json", "%s: %s (line %d)", path,
               jerr.text, jerr.line);
  close(fd);
  return doc;
}

/* The variant of entry labelled label ("" for the base), or NULL. */
static json_t *find_variant(json_t *entry, const char *label)
{
  size_t i;
  json_t *v;

  json_array_foreach(json_object_get(entry, "variants"), i, v) {
    const char *l = str_of(v, "label");

    if (strcmp(l ? l : "", label) == 0)
      return v;
  }
  return NULL;
}

static int no_variant(json_t *entry, const char *model, const char *label,
                      struct tr_err *err)
{
  char list[512] = "";
  size_t i, used = 0;
  json_t *v;

  json_array_foreach(json_object_get(entry, "variants"), i, v) {
    const char *l = str_of(v, "label");

    if (used < sizeof(list))
      used += (size_t)snprintf(list + used, sizeof(list) - used, "%s\"%s\"",
                               used ? ", " : "", l ? l : "");
  }
  return tr_err_set(err, TR_EINVAL, "variant",
                    "variant \"%s\" is not one of %s's: %s", label, model,
                    used ? list : "(none)");
}

/* The scenarios ATOM CI runs entry and variant at: the first non-empty
 * list of variant.scenarios, entry.scenarios, the file's
 * default_scenarios (catalog.py:148, "variant.scenarios or
 * model.scenarios or default_scenarios"). A new reference, or NULL. */
static json_t *scenarios_of(json_t *doc, json_t *entry, json_t *variant)
{
  json_t *lists[3] = {
    json_object_get(variant, "scenarios"), json_object_get(entry, "scenarios"),
    json_is_object(doc) ? json_object_get(doc, "default_scenarios") : NULL
  };

  for (int i = 0; i < 3; i++)
    if (json_array_size(lists[i]) > 0)
      return json_incref(lists[i]);
  return NULL;
}

int tr_preset_find(const char *path, const char *model, const char *variant,
                   struct tr_preset *out, struct tr_err *err)
{
  const char *label = variant ? variant : "";
  json_t *doc = load(path, err), *list, *entry, *hit = NULL, *v;
  size_t i;
  int rc = 0;

  if (doc == NULL)
    return err && err->code ? err->code : TR_EFORMAT;
  list = json_is_array(doc) ? doc : json_object_get(doc, "models");
  json_array_foreach(list, i, entry) {
    if (hit == NULL && json_is_object(entry) && entry_matches(entry, model))
      hit = entry;
  }
  if (hit == NULL && label[0] != '\0')
    rc = tr_err_set(err, TR_EINVAL, "variant",
                    "variant \"%s\" asked for, but %s has no entry in %s",
                    label, model, path);
  else if (hit != NULL && (v = find_variant(hit, label)) == NULL &&
           label[0] != '\0')
    rc = no_variant(hit, model, label, err);
  else if (hit != NULL) {
    out->model = json_incref(hit);
    out->variant = json_incref(find_variant(hit, label));
    out->match =
        str_of(hit, "path") ? str_of(hit, "path") : str_of(hit, "display");
    out->scenarios = scenarios_of(doc, hit, out->variant);
    rc = 1;
  }
  json_decref(doc);
  return rc;
}

const char *tr_preset_file(const struct cfg *cfg, char *buf, size_t size,
                           const char **why)
{
  size_t n;

  if (strcmp(cfg->models_json, "none") == 0) {
    *why = "models_json = none";
    return NULL;
  }
  if (cfg->models_json[0] != '\0') {
    snprintf(buf, size, "%s", cfg->models_json);
    return buf;
  }
  /* The folder above atom_scripts, written out (not "scripts/.."). */
  n = strlen(cfg->atom_scripts);
  while (n > 1 && cfg->atom_scripts[n - 1] == '/')
    n--;
  while (n > 0 && cfg->atom_scripts[n - 1] != '/')
    n--;
  snprintf(buf, size, "%.*s.github/benchmark/models.json", (int)n,
           cfg->atom_scripts);
  if (n > 0 && access(buf, F_OK) == 0)
    return buf;
  *why = "models_json is not set and ATOM's own file is not beside the "
         "scripts (<atom_scripts>/../.github/benchmark/models.json)";
  return NULL;
}

char *tr_preset_model_path(const char *model, const struct tr_preset *p)
{
  const char *vpath = str_of(p->variant, "path"), *vbase;
  const char *slash = strrchr(model, '/');
  char *out;
  size_t n;

  if (vpath == NULL)
    return strdup(model);
  n = base_of(vpath, &vbase);
  if (slash == NULL)
    return strndup(vbase, n);
  if (asprintf(&out, "%.*s/%.*s", (int)(slash - model), model, (int)n,
               vbase) < 0)
    return NULL;
  return out;
}

void tr_preset_free(struct tr_preset *p)
{
  if (p == NULL)
    return;
  json_decref(p->model);
  json_decref(p->variant);
  json_decref(p->scenarios);
  p->model = p->variant = p->scenarios = NULL;
  p->match = NULL;
}

const char *tr_preset_config_str(const struct tr_preset *p, const char *key)
{
  return str_of(json_object_get(p->model, "config"), key);
}

/* ---- shell words ---- */

struct wordbuf {
  char **v;
  size_t n, cap;
  char *cur; /* the word being built */
  size_t len, room;
  bool open; /* a word is started (quotes make "" a word) */
};

static int put_byte(struct wordbuf *b, char c)
{
  if (b->len + 2 > b->room) {
    size_t room = b->room ? 2 * b->room : 64;
    char *grown = realloc(b->cur, room);

    if (grown == NULL)
      return -1;
    b->cur = grown;
    b->room = room;
  }
  b->cur[b->len++] = c;
  b->open = true;
  return 0;
}

static int end_word(struct wordbuf *b)
{
  if (!b->open)
    return 0;
  if (b->n + 2 > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 8;
    char **grown = realloc(b->v, cap * sizeof(*grown));

    if (grown == NULL)
      return -1;
    b->v = grown;
    b->cap = cap;
  }
  if (put_byte(b, '\0') != 0)
    return -1;
  b->v[b->n++] = b->cur;
  b->v[b->n] = NULL;
  b->cur = NULL;
  b->len = b->room = 0;
  b->open = false;
  return 0;
}

/* One byte of text at *p, advancing *p; quote is the quoting now in force
 * ('\'', '"' or 0). Returns 0, or -1 out of memory. */
static int step(struct wordbuf *b, const char **p, char *quote)
{
  char c = *(*p)++;

  if (*quote == '\'') {
    if (c == '\'')
      *quote = 0;
    return c == '\'' ? 0 : put_byte(b, c);
  }
  if (*quote == '"') {
    if (c == '"') {
      *quote = 0;
      return 0;
    }
    if (c == '\\' && strchr("\"\\$`", **p) != NULL && **p != '\0')
      c = *(*p)++;
    return put_byte(b, c);
  }
  if (c == ' ' || c == '\t' || c == '\n')
    return end_word(b);
  if (c == '\'' || c == '"') {
    *quote = c;
    b->open = true;
    return 0;
  }
  if (c == '\\' && **p != '\0')
    c = *(*p)++;
  return put_byte(b, c);
}

char **tr_shell_words(const char *text, const char *field, struct tr_err *err)
{
  struct wordbuf b = { 0 };
  const char *p = text ? text : "";
  char quote = 0;
  int rc = 0;

  while (rc == 0 && *p != '\0')
    rc = step(&b, &p, &quote);
  if (rc == 0 && quote != 0)
    rc = tr_err_set(err, TR_EINVAL, field, "%s: unbalanced %c quote", field,
                    quote);
  else if (rc == 0)
    rc = end_word(&b);
  else
    rc = tr_err_set(err, TR_ENOMEM, field, "out of memory");
  if (rc == 0 && b.v == NULL && (b.v = calloc(1, sizeof(*b.v))) == NULL)
    rc = tr_err_set(err, TR_ENOMEM, field, "out of memory");
  free(b.cur);
  if (rc != 0) {
    tr_words_free(b.v);
    return NULL;
  }
  return b.v;
}

void tr_words_free(char **words)
{
  for (char **w = words; w != NULL && *w != NULL; w++)
    free(*w);
  free(words);
}
