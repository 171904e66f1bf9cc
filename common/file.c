/*
 * The safe open of common/file.h. A path under a root is opened in two
 * steps: its folder, walked from root's descriptor without following any
 * link (openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) in one call, else a
 * component at a time with O_NOFOLLOW), then its last component from that
 * folder's descriptor: fstatat() first, so that a FIFO or a device is
 * refused without being opened at all, then openat(O_NOFOLLOW | O_NONBLOCK)
 * and fstat() again on what was opened (it may have been swapped between
 * the two). ".." is refused outright: what lies under root is then a plain
 * question of the path's text, the same for files that exist and files that
 * do not.
 */
#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum want { WANT_FILE, WANT_DIR };

static atomic_bool no_openat2; /* the kernel lacks it, or a test said so */

void tr_file_use_openat2(bool on)
{
  atomic_store(&no_openat2, !on);
}

const char *tr_file_kind(mode_t m)
{
  if (S_ISDIR(m))
    return "a folder";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISCHR(m) || S_ISBLK(m))
    return "a device";
  if (S_ISSOCK(m))
    return "a socket";
  if (S_ISLNK(m))
    return "a symbolic link";
  return "a regular file";
}

static int sys_fail(struct tr_err *err, int rc, const char *path)
{
  return tr_err_set(err, rc, "", "%s: %s", path, strerror(-rc));
}

static int link_fail(struct tr_err *err, const char *path, const char *name)
{
  if (strcmp(path, name) == 0)
    return tr_err_set(err, -ELOOP, "",
                      "%s is a symbolic link: traced follows none here", path);
  return tr_err_set(err, -ELOOP, "",
                    "%s: %s is a symbolic link: traced follows none here", path,
                    name);
}

/* The part of path below root (as written, else as resolved): path itself
 * when relative; NULL when path does not lie under root. */
static const char *below_one(const char *root, const char *path)
{
  size_t n = strlen(root);

  while (n > 1 && root[n - 1] == '/')
    n--;
  if (n == 1 && root[0] == '/')
    return path[0] == '/' ? path + 1 : NULL;
  if (strncmp(path, root, n) != 0 || (path[n] != '\0' && path[n] != '/'))
    return NULL;
  return path + n;
}

static const char *below(const char *root, const char *path)
{
  const char *rel;
  char *real;

  /* root as written first: a relative root and a path made from it
   * ("traces/5", "traces/5/rank_0/x.gz") match too. */
  if (path[0] != '/' && root[0] == '/')
    return path;
  rel = below_one(root, path);
  if (rel == NULL && path[0] != '/')
    return path;
  if (rel == NULL && (real = realpath(root, NULL)) != NULL) {
    rel = below_one(real, path);
    free(real);
  }
  return rel;
}

/* True when a component of rel is "..". */
static bool climbs(const char *rel)
{
  for (const char *c = rel; *c != '\0';) {
    const char *end = strchrnul(c, '/');

    if (end - c == 2 && c[0] == '.' && c[1] == '.')
      return true;
    c = *end == '/' ? end + 1 : end;
  }
  return false;
}

static int dup_fd(int fd)
{
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);

  return copy >= 0 ? copy : -errno;
}

static bool is_link(int dfd, const char *name)
{
  struct stat sb;

  return fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISLNK(sb.st_mode);
}

/* Opens the folder dir (relative, no "..") below rootfd a component at a
 * time, each with O_NOFOLLOW. dir is cut in place. */
static int walk(int rootfd, char *dir, const char *path, struct tr_err *err)
{
  int cur = dup_fd(rootfd);

  for (char *c = dir; cur >= 0 && *c != '\0';) {
    char *end = strchrnul(c, '/');
    bool last = *end == '\0';
    int next;

    *end = '\0';
    if (c[0] != '\0' && strcmp(c, ".") != 0) {
      next = openat(
          cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      if (next < 0) {
        int rc = -errno;

        /* O_DIRECTORY | O_NOFOLLOW on a link answers ENOTDIR. */
        if (rc == -ELOOP || (rc == -ENOTDIR && is_link(cur, c))) {
          close(cur);
          return link_fail(err, path, c);
        }
        close(cur);
        return sys_fail(err, rc, path);
      }
      close(cur);
      cur = next;
    }
    c = last ? end : end + 1;
  }
  return cur >= 0 ? cur : sys_fail(err, cur, path);
}

/* The folder dir below rootfd in one call where the kernel can; any failure
 * is asked again of walk(), which names the component at fault. */
static int open_folder(int rootfd, char *dir, const char *path,
                       struct tr_err *err)
{
  struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                          .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                     RESOLVE_NO_MAGICLINKS };
  long fd;

  if (dir[0] == '\0')
    return dup_fd(rootfd);
  if (!atomic_load(&no_openat2)) {
    fd = syscall(SYS_openat2, rootfd, dir, &how, sizeof(how));
    if (fd >= 0)
      return (int)fd;
    if (errno == ENOSYS)
      atomic_store(&no_openat2, true);
  }
  return walk(rootfd, dir, path, err);
}

/* 0 when sb is what was wanted, within max_bytes; else the refusal. */
static int check(const struct stat *sb, enum want w, uint64_t max_bytes,
                 const char *path, const char *name, struct tr_err *err)
{
  if (S_ISLNK(sb->st_mode))
    return link_fail(err, path, name);
  if (w == WANT_DIR && !S_ISDIR(sb->st_mode))
    return tr_err_set(err, TR_EFORMAT, "", "%s is not a folder (%s)", path,
                      tr_file_kind(sb->st_mode));
  if (w == WANT_FILE && !S_ISREG(sb->st_mode))
    return tr_err_set(err, TR_EFORMAT, "", "%s is not a regular file (%s)",
                      path, tr_file_kind(sb->st_mode));
  if (w == WANT_FILE && max_bytes > 0 && (uint64_t)sb->st_size > max_bytes)
    return tr_err_set(err, TR_ELIMIT, "", "%s is larger than %llu bytes", path,
                      (unsigned long long)max_bytes);
  return 0;
}

/* Opens name in the folder dfd: refused by its fstatat() before any open,
 * then checked again by fstat() of what was opened. */
static int open_last(int dfd, const char *name, enum want w, uint64_t max_bytes,
                     struct stat *st, const char *path, struct tr_err *err)
{
  int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
              (w == WANT_DIR ? O_DIRECTORY : 0);
  struct stat sb;
  int fd, rc;

  if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
    return sys_fail(err, -errno, path);
  if (st != NULL)
    *st = sb;
  if ((rc = check(&sb, w, max_bytes, path, name, err)) != 0)
    return rc;
  fd = openat(dfd, name, flags);
  if (fd < 0) {
    rc = -errno;
    return rc == -ELOOP || (rc == -ENOTDIR && is_link(dfd, name))
               ? link_fail(err, path, name)
               : sys_fail(err, rc, path);
  }
  rc = fstat(fd, &sb) != 0 ? sys_fail(err, -errno, path) : 0;
  if (rc == 0 && st != NULL)
    *st = sb;
  if (rc == 0)
    rc = check(&sb, w, max_bytes, path, name, err);
  if (rc == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    rc = sys_fail(err, -errno, path);
  if (rc != 0) {
    close(fd);
    return rc;
  }
  return fd;
}

/* rel (below root, no "..") from rootfd: its folder, then its last part. */
static int open_below(int rootfd, const char *rel, enum want w,
                      uint64_t max_bytes, struct stat *st, const char *path,
                      struct tr_err *err)
{
  char buf[PATH_MAX], none[1] = "";
  char *dir = buf, *name;
  size_t n = strlen(rel);
  int dfd, fd;

  while (n > 0 && rel[n - 1] == '/')
    n--;
  if (n >= sizeof(buf))
    return sys_fail(err, -ENAMETOOLONG, path);
  memcpy(buf, rel, n);
  buf[n] = '\0';
  name = strrchr(buf, '/');
  if (name != NULL) {
    *name++ = '\0';
  } else {
    name = buf;
    dir = none;
  }
  if (name[0] == '\0')
    name = ".";
  dfd = open_folder(rootfd, dir, path, err);
  if (dfd < 0)
    return dfd;
  fd = open_last(dfd, name, w, max_bytes, st, path, err);
  close(dfd);
  return fd;
}

static int open_entry(const char *root, const char *path, enum want w,
                      uint64_t max_bytes, struct stat *st, struct tr_err *err)
{
  const char *rel;
  int rootfd, fd;

  if (path == NULL || path[0] == '\0')
    return tr_err_set(err, -ENOENT, "", "no path given");
  if (root == NULL)
    return open_last(AT_FDCWD, path, w, max_bytes, st, path, err);
  rel = below(root, path);
  if (rel == NULL)
    return tr_err_set(err, -EACCES, "", "%s is not under %s", path, root);
  if (climbs(rel))
    return tr_err_set(err, -EACCES, "", "%s: \"..\" is not allowed under %s",
                      path, root);
  while (*rel == '/')
    rel++;
  rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0)
    return tr_err_set(err, -errno, "", "%s: cannot open its root %s: %s", path,
                      root, strerror(errno));
  fd = open_below(rootfd, rel[0] != '\0' ? rel : ".", w, max_bytes, st, path,
                  err);
  close(rootfd);
  return fd;
}

int tr_open_file(const char *root, const char *path, uint64_t max_bytes,
                 struct stat *st, struct tr_err *err)
{
  return open_entry(root, path, WANT_FILE, max_bytes, st, err);
}

int tr_open_dir(const char *root, const char *path, struct stat *st,
                struct tr_err *err)
{
  return open_entry(root, path, WANT_DIR, 0, st, err);
}

int tr_read_file(const char *root, const char *path, size_t max_bytes,
                 char **out, size_t *len, struct tr_err *err)
{
  struct stat sb;
  size_t used = 0, cap;
  char *buf, *grown;
  ssize_t n = 1;
  int fd = tr_open_file(root, path, max_bytes, &sb, err);

  if (fd < 0)
    return fd;
  /* One byte more than allowed shows a file that grew while read. */
  cap = (size_t)sb.st_size + 2;
  if (max_bytes > 0 && cap > max_bytes + 2)
    cap = max_bytes + 2;
  buf = malloc(cap);
  while (buf != NULL && n > 0) {
    if (used + 1 == cap) {
      cap = max_bytes > 0 && cap * 2 > max_bytes + 2 ? max_bytes + 2 : cap * 2;
      grown = used + 1 < cap ? realloc(buf, cap) : NULL;
      if (grown == NULL)
        break;
      buf = grown;
    }
    n = read(fd, buf + used, cap - 1 - used);
    if (n > 0)
      used += (size_t)n;
    else if (n < 0 && errno == EINTR)
      n = 1;
  }
  close(fd);
  if (buf == NULL || n > 0) {
    free(buf);
    return max_bytes > 0 && used > max_bytes
               ? tr_err_set(err, TR_ELIMIT, "", "%s is larger than %zu bytes",
                            path, max_bytes)
               : tr_err_set(err, TR_ENOMEM, "", "%s: out of memory", path);
  }
  if (n < 0) {
    free(buf);
    return sys_fail(err, -errno, path);
  }
  buf[used] = '\0';
  *out = buf;
  if (len != NULL)
    *len = used;
  return 0;
}

const char *tr_path_root(char *const *roots, const char *real)
{
  for (char *const *p = roots; p != NULL && *p != NULL; p++) {
    size_t n = strlen(*p);

    while (n > 1 && (*p)[n - 1] == '/')
      n--;
    if (n == 1 && (*p)[0] == '/')
      return real[0] == '/' ? *p : NULL;
    if (strncmp(real, *p, n) == 0 && (real[n] == '\0' || real[n] == '/'))
      return *p;
  }
  return NULL;
}
