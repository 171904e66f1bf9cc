/*
 * The model folders ATOM loads code from (atom/policy.h,
 * atom_policy_folder()). ATOM's bench script passes --trust-remote-code on
 * every run (run_benchmark.sh:84), so the bench's tokenizer load runs the
 * Python a tokenizer_config.json or config.json names in its auto_map,
 * whatever the request or allow_trust_remote_code say; the server does the
 * same with --trust-remote-code. Whoever may write such a folder, a file in
 * it or a folder above it (and so swap it) runs code as the server's user,
 * root under the shipped unit. So a folder is taken only when root or
 * traced's own user alone may write all of that, and an auto_map only where
 * remote code is allowed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atom/policy.h"
#include "common/file.h"

/* Entries judged at most under one folder, and how deep: a model folder
 * holds a few hundred files (DeepSeek-R1: 163 weight shards), transformers
 * and ATOM read its top level and encoding/ (chat_encoders.py:50). A
 * folder past the count is refused: it cannot be judged. */
#define WALK_MAX_ENTRIES 65536
#define WALK_MAX_DEPTH   8
/* config.json and tokenizer_config.json are read up to this. */
#define CONFIG_MAX       ((size_t)8 << 20)

/* True when a user other than root or traced's own may write what st
 * describes: it is theirs, or its group or others may write it. A folder
 * above the model's may be writable by others when it is sticky (/tmp):
 * then no one but the owner may rename what it holds. */
static bool others_write(const struct stat *st, bool above)
{
  if (st->st_uid != 0 && st->st_uid != geteuid())
    return true;
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) == 0)
    return false;
  return !(above && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX));
}

static int refuse(const char *field, const char *path, const struct stat *st,
                  const char *what, struct tr_err *err)
{
  return tr_err_set(err, TR_EINVAL, field,
                    "%s: %.300s%s may be written by a user other than root "
                    "or traced's (mode %04o, owner uid %u): ATOM would run "
                    "the Python it holds (the bench loads its tokenizer "
                    "with --trust-remote-code, run_benchmark.sh:84); make "
                    "it root's and writable by no one else",
                    field, path, what, (unsigned)(st->st_mode & 07777),
                    (unsigned)st->st_uid);
}

/* The folders above path, from its parent up to "/". */
static int judge_above(const char *path, const char *field, struct tr_err *err)
{
  char up[PATH_MAX];
  struct stat st;
  char *slash;

  if (snprintf(up, sizeof(up), "%s", path) >= (int)sizeof(up))
    return tr_err_set(err, TR_EINVAL, field, "%s: the path is too long", field);
  while ((slash = strrchr(up, '/')) != NULL) {
    if (slash == up && up[1] == '\0')
      break;                   /* "/" was the last */
    slash[slash == up] = '\0'; /* "/a/b" -> "/a", "/a" -> "/" */
    if (stat(up, &st) == 0 && others_write(&st, true))
      return refuse(field, up, &st, " (a folder above it)", err);
  }
  return 0;
}

struct walk {
  const char *field;
  unsigned entries;
  char path[PATH_MAX];
};

/* Every entry under the folder fd_dir (taken) names, path being its name:
 * links are judged by what they point to (that is what is read), folders
 * descended into up to WALK_MAX_DEPTH. */
static int judge_under(struct walk *w, int fd_dir, size_t len, int depth,
                       struct tr_err *err)
{
  DIR *d = fdopendir(fd_dir);
  struct dirent *e;
  struct stat st;
  int rc = 0, fd;

  if (d == NULL) {
    close(fd_dir);
    return 0; /* nothing traced can list: nor can ATOM */
  }
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (++w->entries > WALK_MAX_ENTRIES) {
      rc = tr_err_set(err, TR_EINVAL, w->field,
                      "%s: more than %d files under the folder: traced "
                      "cannot judge who may write them",
                      w->field, WALK_MAX_ENTRIES);
      break;
    }
    if (fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
        snprintf(w->path + len, sizeof(w->path) - len, "/%s", e->d_name) >=
            (int)(sizeof(w->path) - len))
      continue; /* a dangling link is read by no one */
    if (others_write(&st, false))
      rc = refuse(w->field, w->path, &st, "", err);
    else if (S_ISDIR(st.st_mode) && depth < WALK_MAX_DEPTH &&
             (fd = openat(dirfd(d), e->d_name,
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
      rc = judge_under(w, fd, len + 1 + strlen(e->d_name), depth + 1, err);
    w->path[len] = '\0';
  }
  closedir(d);
  return rc;
}

/* config.json or tokenizer_config.json of the folder: an auto_map names
 * Python of the folder's own that transformers imports. */
static int judge_auto_map(const char *folder, const char *name, bool trusts,
                          const char *field, struct tr_err *err)
{
  struct tr_err why = { 0 };
  char *text = NULL;
  json_t *doc;
  bool mapped;
  int rc = tr_read_file(folder, name, CONFIG_MAX, &text, NULL, &why);

  if (rc == -ENOENT || rc == -ENOTDIR)
    return 0;
  if (rc < 0)
    return tr_err_set(err, TR_EINVAL, field, "%s: %s", field, why.msg);
  doc = json_loads(text, 0, NULL);
  free(text);
  mapped = json_object_get(doc, "auto_map") != NULL;
  json_decref(doc);
  if (!mapped || trusts)
    return 0;
  return tr_err_set(err, TR_EINVAL, field,
                    "%s: %.300s/%s has an auto_map: loading it runs the "
                    "folder's own Python (ATOM's bench passes "
                    "--trust-remote-code on every run, run_benchmark.sh:84); "
                    "only where the models.json preset sets "
                    "trust_remote_code, or with allow_trust_remote_code = "
                    "true",
                    field, folder, name);
}

int atom_policy_folder(const struct cfg *cfg, const char *real, bool trusts,
                       const char *field, struct tr_err *err)
{
  struct walk w = { .field = field };
  struct stat st;
  int fd, rc;

  trusts = trusts || cfg->allow_trust_remote_code;
  if ((fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    return 0; /* no folder (yet): the server's own error will say */
  if (fstat(fd, &st) == 0 && others_write(&st, false)) {
    close(fd);
    return refuse(field, real, &st, "", err);
  }
  if ((rc = judge_above(real, field, err)) != 0) {
    close(fd);
    return rc;
  }
  snprintf(w.path, sizeof(w.path), "%s", real);
  if ((rc = judge_under(&w, fd, strlen(w.path), 1, err)) != 0)
    return rc;
  rc = judge_auto_map(real, "config.json", trusts, field, err);
  return rc != 0 ? rc
                 : judge_auto_map(real, "tokenizer_config.json", trusts, field,
                                  err);
}
