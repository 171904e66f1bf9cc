/*
 * common/file.c: the safe open of files read for a client. Every case runs
 * twice, with openat2() and with the component-by-component walk, in a
 * private temp folder:
 *
 *   root/good.json         "{\"ok\": 1}"
 *   root/big.json          100 bytes
 *   root/sub/inner.json    a file one folder down
 *   root/last -> good.json          a link as the last component
 *   root/mid -> sub                 a link as a middle component
 *   root/out -> <outside>/secret    a link out of root
 *   root/fifo.json         a FIFO (opening it for reading would block)
 *   <outside>/secret       what no call may ever return
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "tests/check.h"

static char base[64], root[128], outside[128];

static void put(const char *dir, const char *name, const char *text)
{
  char path[256];
  FILE *f;

  snprintf(path, sizeof(path), "%s/%s", dir, name);
  f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

static void at(char *buf, size_t size, const char *dir, const char *name)
{
  snprintf(buf, size, "%s/%s", dir, name);
}

static void setup(void)
{
  char path[256], target[256];

  snprintf(base, sizeof(base), "/tmp/traced_file_XXXXXX");
  CHECK(mkdtemp(base) != NULL);
  at(root, sizeof(root), base, "root");
  at(outside, sizeof(outside), base, "outside");
  CHECK_INT(mkdir(root, 0755), 0);
  CHECK_INT(mkdir(outside, 0755), 0);
  put(root, "good.json", "{\"ok\": 1}");
  put(root, "big.json",
      "0123456789012345678901234567890123456789"
      "0123456789012345678901234567890123456789"
      "01234567890123456789");
  put(outside, "secret", "SECRET");
  at(path, sizeof(path), root, "sub");
  CHECK_INT(mkdir(path, 0755), 0);
  put(path, "inner.json", "inner");
  at(path, sizeof(path), root, "last");
  CHECK_INT(symlink("good.json", path), 0);
  at(path, sizeof(path), root, "mid");
  CHECK_INT(symlink("sub", path), 0);
  at(path, sizeof(path), root, "out");
  at(target, sizeof(target), outside, "secret");
  CHECK_INT(symlink(target, path), 0);
  at(path, sizeof(path), root, "fifo.json");
  CHECK_INT(mkfifo(path, 0644), 0);
}

static void teardown(void)
{
  char cmd[256];

  snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
  CHECK_INT(system(cmd), 0);
}

/* The result of tr_open_file(root, root/rel); err's message must name
 * the path. */
static int try_open(const char *r, const char *rel, uint64_t max,
                    struct stat *st, struct tr_err *err)
{
  char path[256];
  int fd;

  tr_err_clear(err);
  if (rel[0] == '/')
    snprintf(path, sizeof(path), "%s", rel);
  else
    at(path, sizeof(path), root, rel);
  fd = tr_open_file(r, path, max, st, err);
  if (fd < 0)
    CHECK(strstr(err->msg, path) != NULL);
  return fd;
}

static void file_good(void)
{
  struct tr_err err = { 0 };
  struct stat st;
  char *text = NULL;
  size_t len = 0;
  char path[256];
  int fd = try_open(root, "good.json", 0, &st, &err);

  CHECK(fd >= 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK_INT(st.st_size, 9);
  CHECK_INT(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  close(fd);
  /* One folder down, relative to root, and with the root itself given
   * through a link (roots are resolved). */
  fd = try_open(root, "sub/inner.json", 5, NULL, &err);
  CHECK(fd >= 0);
  close(fd);
  fd = tr_open_file(root, "sub/inner.json", 0, NULL, &err);
  CHECK(fd >= 0);
  close(fd);
  at(path, sizeof(path), base, "rootlink");
  CHECK_INT(symlink(root, path), 0);
  fd = try_open(path, "good.json", 0, NULL, &err);
  CHECK(fd >= 0);
  close(fd);
  CHECK_INT(unlink(path), 0);
  /* A relative root, and a path made from it or relative to it. */
  CHECK_INT(chdir(base), 0);
  fd = tr_open_file("root", "root/sub/inner.json", 0, NULL, &err);
  CHECK(fd >= 0);
  close(fd);
  fd = tr_open_file("root/sub", "inner.json", 0, NULL, &err);
  CHECK(fd >= 0);
  close(fd);
  fd = tr_open_file("root", path, 0, NULL, &err); /* rootlink: gone */
  CHECK_INT(fd, -EACCES);
  CHECK_INT(chdir("/"), 0);
  CHECK_INT(tr_read_file(root, "good.json", 9, &text, &len, &err), 0);
  CHECK_STR(text, "{\"ok\": 1}");
  CHECK_INT(len, 9);
  free(text);
}

static void file_links_refused(void)
{
  struct tr_err err = { 0 };
  char path[256];

  CHECK_INT(try_open(root, "last", 0, NULL, &err), -ELOOP);
  CHECK(strstr(err.msg, "symbolic link") != NULL);
  CHECK_INT(try_open(root, "mid/inner.json", 0, NULL, &err), -ELOOP);
  CHECK(strstr(err.msg, "mid is a symbolic link") != NULL);
  CHECK_INT(try_open(root, "out", 0, NULL, &err), -ELOOP);
  /* Without a root only the last component is checked. */
  at(path, sizeof(path), root, "last");
  CHECK_INT(tr_open_file(NULL, path, 0, NULL, &err), -ELOOP);
  at(path, sizeof(path), root, "mid/inner.json");
  tr_err_clear(&err);
  close(tr_open_file(NULL, path, 0, NULL, &err));
  CHECK_INT(err.code, 0);
  CHECK_INT(tr_read_file(root, "out", 0, &(char *){ NULL }, NULL, &err),
            -ELOOP);
}

static void file_outside_refused(void)
{
  struct tr_err err = { 0 };
  char path[256], missing[256];

  CHECK_INT(try_open(root, "../outside/secret", 0, NULL, &err), -EACCES);
  CHECK_INT(try_open(root, "sub/../good.json", 0, NULL, &err), -EACCES);
  at(path, sizeof(path), outside, "secret");
  CHECK_INT(try_open(root, path, 0, NULL, &err), -EACCES);
  /* Existing or not, outside is outside: the same answer. */
  at(missing, sizeof(missing), outside, "missing");
  CHECK_INT(try_open(root, missing, 0, NULL, &err), -EACCES);
  /* A name that merely starts like root is not under it. */
  snprintf(path, sizeof(path), "%sx/good.json", root);
  CHECK_INT(try_open(root, path, 0, NULL, &err), -EACCES);
  CHECK_INT(try_open(root, "missing.json", 0, NULL, &err), -ENOENT);
}

static void file_fifo_never_blocks(void)
{
  struct tr_err err = { 0 };
  struct timespec t0, t1;
  struct stat st;
  char path[256];

  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_INT(try_open(root, "fifo.json", 0, &st, &err), TR_EFORMAT);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(strstr(err.msg, "not a regular file (a FIFO)") != NULL);
  at(path, sizeof(path), root, "fifo.json");
  CHECK_INT(tr_open_file(NULL, path, 0, NULL, &err), TR_EFORMAT);
  CHECK_INT(tr_read_file(root, "fifo.json", 10, &(char *){ NULL }, NULL, &err),
            TR_EFORMAT);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK(t1.tv_sec - t0.tv_sec < 2);
}

static void file_folder_and_size(void)
{
  struct tr_err err = { 0 };
  struct stat st;
  char *text = NULL;
  int fd;

  CHECK_INT(try_open(root, "sub", 0, &st, &err), TR_EFORMAT);
  CHECK(S_ISDIR(st.st_mode));
  CHECK(strstr(err.msg, "(a folder)") != NULL);
  CHECK_INT(try_open(root, root, 0, &st, &err), TR_EFORMAT);
  CHECK(S_ISDIR(st.st_mode));
  CHECK_INT(try_open(root, "big.json", 99, &st, &err), TR_ELIMIT);
  CHECK_INT(st.st_size, 100);
  CHECK(strstr(err.msg, "larger than 99 bytes") != NULL);
  fd = try_open(root, "big.json", 100, NULL, &err);
  CHECK(fd >= 0);
  close(fd);
  CHECK_INT(tr_read_file(root, "big.json", 99, &text, NULL, &err), TR_ELIMIT);
  CHECK(text == NULL);
  CHECK_INT(tr_read_file(root, "big.json", 100, &text, NULL, &err), 0);
  CHECK_INT(strlen(text), 100);
  free(text);
}

static void dir_open(void)
{
  struct tr_err err = { 0 };
  struct stat st;
  char path[256];
  int fd;

  at(path, sizeof(path), root, "sub");
  fd = tr_open_dir(root, path, NULL, &err);
  CHECK(fd >= 0);
  CHECK(fstatat(fd, "inner.json", &st, 0) == 0);
  close(fd);
  fd = tr_open_dir(root, root, NULL, &err);
  CHECK(fd >= 0);
  close(fd);
  at(path, sizeof(path), root, "mid");
  tr_err_clear(&err);
  CHECK_INT(tr_open_dir(root, path, NULL, &err), -ELOOP);
  CHECK_INT(tr_open_dir(NULL, path, NULL, &err), -ELOOP);
  at(path, sizeof(path), root, "good.json");
  tr_err_clear(&err);
  CHECK_INT(tr_open_dir(root, path, &st, &err), TR_EFORMAT);
  CHECK(S_ISREG(st.st_mode));
  CHECK(strstr(err.msg, "not a folder") != NULL);
}

static void run_all(void)
{
  RUN(file_good);
  RUN(file_links_refused);
  RUN(file_outside_refused);
  RUN(file_fifo_never_blocks);
  RUN(file_folder_and_size);
  RUN(dir_open);
}

int main(void)
{
  setup();
  fprintf(stderr, "== with openat2\n");
  run_all();
  tr_file_use_openat2(false);
  fprintf(stderr, "== component walk\n");
  run_all();
  teardown();
  return 0;
}
