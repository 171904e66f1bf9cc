/*
 * daemon/layout.c follows nothing (docs/SECURITY.md): a link as a rank folder,
 * as a half, as a trace file or as the folder itself refuses the scan, naming
 * it; a FIFO named like a trace is refused without being opened; names
 * the scan does not use may be links; the layout's root is the folder
 * scanned (a single file's folder).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/layout.h"
#include "tests/check.h"

static char base[64], top[128], outside[128];

static void path_of(char *buf, size_t size, const char *rel)
{
  snprintf(buf, size, "%s/%s", top, rel);
}

static void make_dir(const char *rel)
{
  char path[256];

  path_of(path, sizeof(path), rel);
  CHECK_INT(mkdir(path, 0755), 0);
}

static void make_file(const char *rel)
{
  char path[256];
  FILE *f;

  path_of(path, sizeof(path), rel);
  f = fopen(path, "w");
  CHECK(f != NULL);
  fputs("{}", f);
  fclose(f);
}

static void make_link(const char *target, const char *rel)
{
  char path[256];

  path_of(path, sizeof(path), rel);
  CHECK_INT(symlink(target, path), 0);
}

/* A fresh top folder holding rank_0 with one good trace. */
static void fresh(void)
{
  char cmd[300];

  snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", top, top);
  CHECK_INT(system(cmd), 0);
  make_dir("rank_0");
  make_file("rank_0/a.pt.trace.json.gz");
}

/* The scan of top fails with code, its message naming rel. */
static void refused(int code, const char *rel)
{
  struct cap_layout *l = NULL;
  struct tr_err err = { 0 };
  char name[256];

  path_of(name, sizeof(name), rel);
  CHECK_INT(cap_layout_scan(top, &l, &err), code);
  CHECK(l == NULL);
  if (strstr(err.msg, name) == NULL) {
    fprintf(stderr, "message \"%s\" does not name %s\n", err.msg, name);
    exit(1);
  }
}

static void links_refused(void)
{
  fresh();
  make_link("/etc", "rank_1");
  refused(-ELOOP, "rank_1");
  fresh();
  make_link(outside, "prefill");
  refused(-ELOOP, "prefill");
  fresh();
  make_link("/etc/passwd", "rank_0/b.pt.trace.json.gz");
  refused(-ELOOP, "rank_0/b.pt.trace.json.gz");
  fresh();
  make_link("/etc/passwd", "rank_0/b.json");
  refused(-ELOOP, "rank_0/b.json");
}

static void folder_of_files_links(void)
{
  char cmd[300];

  snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", top, top);
  CHECK_INT(system(cmd), 0);
  make_file("a.json.gz");
  make_link("/etc/passwd", "b.json");
  refused(-ELOOP, "b.json");
}

static void fifo_refused(void)
{
  char path[256];

  fresh();
  path_of(path, sizeof(path), "rank_0/b.pt.trace.json");
  CHECK_INT(mkfifo(path, 0644), 0);
  refused(TR_EFORMAT, "rank_0/b.pt.trace.json");
}

static void other_names_left_alone(void)
{
  struct cap_layout *l = NULL;
  struct tr_err err = { 0 };
  char path[256];

  fresh();
  make_link("/etc", "notes");
  make_link("/etc/passwd", "rank_0/readme.txt");
  CHECK_INT(cap_layout_scan(top, &l, &err), 0);
  CHECK_INT(l->n, 1);
  CHECK_STR(l->root, top);
  path_of(path, sizeof(path), "rank_0/a.pt.trace.json.gz");
  CHECK_STR(l->ranks[0].file, path);
  cap_layout_free(l);
  /* A single file: the root is its folder. */
  CHECK_INT(cap_layout_scan(path, &l, &err), 0);
  path_of(path, sizeof(path), "rank_0");
  CHECK_STR(l->root, path);
  cap_layout_free(l);
}

static void top_is_link(void)
{
  struct cap_layout *l = NULL;
  struct tr_err err = { 0 };
  char link[256];

  fresh();
  snprintf(link, sizeof(link), "%s/toplink", base);
  CHECK_INT(symlink(top, link), 0);
  CHECK_INT(cap_layout_scan(link, &l, &err), -ELOOP);
  CHECK(strstr(err.msg, link) != NULL);
  unlink(link);
}

int main(void)
{
  char cmd[200];

  snprintf(base, sizeof(base), "/tmp/traced_layout_XXXXXX");
  CHECK(mkdtemp(base) != NULL);
  snprintf(top, sizeof(top), "%s/top", base);
  snprintf(outside, sizeof(outside), "%s/outside", base);
  CHECK_INT(mkdir(outside, 0755), 0);
  RUN(links_refused);
  RUN(folder_of_files_links);
  RUN(fifo_refused);
  RUN(other_names_left_alone);
  RUN(top_is_link);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
  CHECK_INT(system(cmd), 0);
  return 0;
}
