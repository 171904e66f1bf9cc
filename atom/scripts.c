#include "atom/scripts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "atom/preset.h"
#include "common/file.h"

#define WORDS_MAX 64 /* words of one command kept */
#define NAMES_MAX 64 /* arrays, loops and scalars remembered */

/* A name bound by the script: an array's items, a for loop's variable
 * (then items is NULL and array names the array), or a scalar (one item). */
struct binding {
  char name[64];
  char array[64];
  char **items;
};

struct lexer {
  const char *p;
  int line;
  struct binding names[NAMES_MAX];
  size_t nnames;
  bool oom;
};

struct word {
  char *s;
  bool redir; /* a redirection (2>/dev/null, >&2) */
};

struct text {
  char *s;
  size_t n, cap;
  bool oom;
};

static void put(struct text *t, char c)
{
  if (t->n + 2 > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    char *s = realloc(t->s, cap);

    if (s == NULL) {
      t->oom = true;
      return;
    }
    t->s = s;
    t->cap = cap;
  }
  t->s[t->n++] = c;
  t->s[t->n] = '\0';
}

/* Skips "$( ... )" (p at '$'), nested parentheses and quotes counted. */
static const char *skip_subst(const char *p, int *line)
{
  int depth = 0;
  char q = 0;

  for (p++; *p != '\0'; p++) {
    if (*p == '\n')
      (*line)++;
    if (q != 0) {
      q = *p == q ? 0 : q;
    } else if (*p == '\'' || *p == '"') {
      q = *p;
    } else if (*p == '(') {
      depth++;
    } else if (*p == ')' && --depth == 0) {
      return p + 1;
    }
  }
  return p;
}

static bool word_end(char c)
{
  return c == '\0' || strchr(" \t\n;&|()`", c) != NULL;
}

/* Reads one word at lx->p (not at a separator): quotes removed, "$..."
 * kept as written, a "$(...)" left out. */
static struct word read_word(struct lexer *lx)
{
  struct text t = { 0 };
  struct word w = { 0 };
  const char *p = lx->p;

  while (!word_end(*p)) {
    if ((*p == '>' || *p == '<') &&
        strspn(t.s ? t.s : "", "0123456789") == t.n) {
      w.redir = true;
      while (!word_end(*p) || (*p == '&' && p[-1] == '>'))
        put(&t, *p++);
      break;
    }
    if (*p == '\'') {
      for (p++; *p != '\0' && *p != '\''; p++)
        put(&t, *p);
      p += *p == '\'';
    } else if (*p == '"') {
      for (p++; *p != '\0' && *p != '"'; p++) {
        if (*p == '\\' && strchr("\"\\$`", p[1]) != NULL)
          p++;
        put(&t, *p);
      }
      p += *p == '"';
    } else if (*p == '\\' && p[1] != '\0') {
      if (p[1] != '\n')
        put(&t, p[1]);
      p += 2;
    } else if (*p == '$' && p[1] == '(') {
      p = skip_subst(p, &lx->line);
    } else {
      put(&t, *p++);
    }
  }
  lx->p = p;
  lx->oom = lx->oom || t.oom;
  w.s = t.s != NULL ? t.s : strdup("");
  lx->oom = lx->oom || w.s == NULL;
  return w;
}

/* Blanks, line continuations and comments before the next word or
 * separator. */
static void skip_blanks(struct lexer *lx)
{
  for (;;) {
    if (*lx->p == ' ' || *lx->p == '\t') {
      lx->p++;
    } else if (lx->p[0] == '\\' && lx->p[1] == '\n') {
      lx->p += 2;
      lx->line++;
    } else if (*lx->p == '#') {
      lx->p += strcspn(lx->p, "\n");
    } else {
      return;
    }
  }
}

static struct binding *bind(struct lexer *lx, const char *name)
{
  struct binding *b = NULL;

  for (size_t i = 0; i < lx->nnames && b == NULL; i++)
    if (strcmp(lx->names[i].name, name) == 0)
      b = &lx->names[i];
  if (b == NULL && lx->nnames < NAMES_MAX)
    b = &lx->names[lx->nnames++];
  if (b != NULL) {
    tr_words_free(b->items);
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%.63s", name);
  }
  return b;
}

/* NAME=( items ) from lx->p at '(' (newlines and comments inside). */
static void read_array(struct lexer *lx, const char *name)
{
  struct binding *b = bind(lx, name);
  char **items = calloc(WORDS_MAX + 1, sizeof(*items));
  size_t n = 0;

  lx->p++;
  for (;;) {
    skip_blanks(lx);
    if (*lx->p == '\n') {
      lx->p++;
      lx->line++;
      continue;
    }
    if (*lx->p == ')' || *lx->p == '\0')
      break;
    if (word_end(*lx->p)) {
      lx->p++;
      continue;
    }
    struct word w = read_word(lx);

    if (items != NULL && n < WORDS_MAX)
      items[n++] = w.s;
    else
      free(w.s);
  }
  lx->p += *lx->p == ')';
  lx->oom = lx->oom || items == NULL;
  if (b != NULL)
    b->items = items;
  else
    tr_words_free(items);
}

/* The name of a variable word ("$pat", "${pat}"), or "" */
static void var_name(const char *w, char *out, size_t size)
{
  size_t n;

  out[0] = '\0';
  if (w[0] != '$')
    return;
  w += 1 + (w[1] == '{');
  n = strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                "0123456789_");
  if (n > 0 && n < size)
    snprintf(out, size, "%.*s", (int)n, w);
}

static const struct binding *find(const struct lexer *lx, const char *name)
{
  for (size_t i = 0; i < lx->nnames; i++)
    if (strcmp(lx->names[i].name, name) == 0)
      return &lx->names[i];
  return NULL;
}

static void add(struct tr_kill_patterns *out, const char *pattern, bool full,
                int line, bool *oom)
{
  for (size_t i = 0; i < out->n; i++)
    if (out->v[i].full == full && strcmp(out->v[i].pattern, pattern) == 0)
      return;
  if (out->n >= TR_KILL_PATTERNS_MAX)
    return;
  if ((out->v[out->n].pattern = strdup(pattern)) == NULL) {
    *oom = true;
    return;
  }
  out->v[out->n].full = full;
  out->v[out->n++].line = line;
}

/* A pkill command's words (w[0] "pkill"): its last word is the pattern. */
static void on_pkill(struct lexer *lx, struct word *w, size_t n,
                     struct tr_kill_patterns *out)
{
  const char *pat = NULL;
  const struct binding *b;
  bool full = false;
  char name[64];

  for (size_t i = 1; i < n; i++) {
    if (w[i].redir)
      continue;
    if (w[i].s[0] == '-' && w[i].s[1] != '-' && strchr(w[i].s, 'f'))
      full = true;
    else if (strcmp(w[i].s, "--full") == 0)
      full = true;
    pat = w[i].s;
  }
  if (pat == NULL || pat[0] == '-')
    return;
  var_name(pat, name, sizeof(name));
  if (name[0] == '\0') {
    add(out, pat, full, lx->line, &lx->oom);
    return;
  }
  b = find(lx, name);
  if (b != NULL && b->items == NULL)
    b = find(lx, b->array);
  for (size_t i = 0; b != NULL && b->items != NULL && b->items[i]; i++)
    add(out, b->items[i], full, lx->line, &lx->oom);
  if ((b == NULL || b->items == NULL) && out->unresolved[0] == '\0')
    snprintf(out->unresolved, sizeof(out->unresolved), "%.100s (line %d)", pat,
             lx->line);
}

/* "for VAR in "${NAME[@]}"": VAR stands for NAME's items. */
static void on_for(struct lexer *lx, struct word *w, size_t n)
{
  struct binding *b;

  if (n < 4 || strcmp(w[2].s, "in") != 0 || strncmp(w[3].s, "${", 2) != 0 ||
      strstr(w[3].s, "[@]}") == NULL)
    return;
  if ((b = bind(lx, w[1].s)) != NULL)
    snprintf(b->array, sizeof(b->array), "%.*s",
             (int)(strcspn(w[3].s + 2, "[")), w[3].s + 2);
}

static bool keyword(const char *s)
{
  static const char *const kw[] = { "if",   "then",  "else",  "elif",
                                    "do",   "while", "until", "!",
                                    "time", "{",     "}",     "exec" };

  for (size_t i = 0; i < sizeof(kw) / sizeof(*kw); i++)
    if (strcmp(s, kw[i]) == 0)
      return true;
  return false;
}

/* One command's words, then what they mean. */
static void on_command(struct lexer *lx, struct word *w, size_t n,
                       struct tr_kill_patterns *out)
{
  size_t i = 0;
  const char *eq;

  while (i < n && (keyword(w[i].s) || w[i].redir))
    i++;
  if (i < n && (eq = strchr(w[i].s, '=')) != NULL && eq != w[i].s &&
      i + 1 == n) {
    char name[64];
    struct binding *b;

    snprintf(name, sizeof(name), "%.*s", (int)(eq - w[i].s) & 63, w[i].s);
    if ((b = bind(lx, name)) != NULL &&
        ((b->items = calloc(2, sizeof(char *))) == NULL ||
         (b->items[0] = strdup(eq + 1)) == NULL))
      lx->oom = true;
  } else if (i < n && strcmp(w[i].s, "pkill") == 0) {
    on_pkill(lx, w + i, n - i, out);
  } else if (i < n && strcmp(w[i].s, "for") == 0) {
    on_for(lx, w + i, n - i);
  }
}

/* Reads the next command (up to a separator); false at the end. */
static bool next_command(struct lexer *lx, struct tr_kill_patterns *out)
{
  struct word w[WORDS_MAX];
  size_t n = 0;

  for (;;) {
    skip_blanks(lx);
    if (*lx->p == '\0' || (word_end(*lx->p) && *lx->p != ' ')) {
      bool more = *lx->p != '\0';

      if (*lx->p == '\n')
        lx->line++;
      lx->p += more;
      on_command(lx, w, n, out);
      for (size_t i = 0; i < n; i++)
        free(w[i].s);
      return more;
    }
    struct word x = read_word(lx);
    size_t len = strlen(x.s);

    if (!x.redir && len > 1 && x.s[len - 1] == '=' && *lx->p == '(') {
      x.s[len - 1] = '\0';
      read_array(lx, x.s);
      free(x.s);
    } else if (n < WORDS_MAX) {
      w[n++] = x;
    } else {
      free(x.s);
    }
  }
}

int tr_kill_patterns_parse(const char *text, struct tr_kill_patterns *out)
{
  struct lexer lx = { .p = text, .line = 1 };

  while (next_command(&lx, out) && !lx.oom)
    ;
  for (size_t i = 0; i < lx.nnames; i++)
    tr_words_free(lx.names[i].items);
  return lx.oom ? TR_ENOMEM : 0;
}

int tr_kill_patterns_read(const char *path, struct tr_kill_patterns *out,
                          struct tr_err *err)
{
  char *text = NULL;
  int rc = tr_read_file(NULL, path, TR_SCRIPT_MAX, &text, NULL, err);

  if (rc == 0 && (rc = tr_kill_patterns_parse(text, out)) != 0)
    tr_err_set(err, rc, "", "out of memory");
  free(text);
  return rc;
}

void tr_kill_patterns_free(struct tr_kill_patterns *p)
{
  for (size_t i = 0; p != NULL && i < p->n; i++)
    free(p->v[i].pattern);
  if (p != NULL)
    p->n = 0;
}
