/*
 * The capture runner's rule (daemon/cap_int.h): a phase never calls
 * another phase, and nothing but capture.c's phase table calls a phase.
 * Read from the sources: each row of TR_PHASE_MAP has its
 * daemon/phase_<name>.c, which defines no function other files may call
 * but phase_<name>_enter() and phase_<name>_budget_s(), and no file of
 * daemon/ names those two (capture.c and cap_int.h paste them from the
 * rows). What two phases share is a helper in a file of its own.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/lifecycle.h"

static const char *const phases[] = {
#define XX(e, name, ...) #name,
  TR_PHASE_MAP(XX)
#undef XX
};

static FILE *open_src(const char *file)
{
  const char *src = getenv("SRC_DIR");
  char path[1024];

  snprintf(path, sizeof(path), "%s/daemon/%s", src ? src : ".", file);
  return fopen(path, "r");
}

/* The function a line of a file defines or declares at its start, into
 * name ("" when the line is none: a static one, a type, a body's line). */
static void outside_name(const char *line, char *name, size_t size)
{
  const char *open = strchr(line, '('), *end = open, *start;

  name[0] = '\0';
  if (!islower((unsigned char)line[0]) || open == NULL ||
      strncmp(line, "static ", 7) == 0 || strncmp(line, "struct ", 7) == 0 ||
      strncmp(line, "enum ", 5) == 0 || strncmp(line, "typedef ", 8) == 0)
    return;
  start = end;
  while (start > line &&
         (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
    start--;
  snprintf(name, size, "%.*s", (int)(end - start), start);
}

/* phase_<p>.c defines nothing another file may call but its two. */
static void capture_phase_defines_its_two(void)
{
  for (size_t p = 0; p < TR_NPHASE; p++) {
    char file[128], line[1024], name[128], enter[128], budget[128];
    FILE *f;

    snprintf(file, sizeof(file), "phase_%s.c", phases[p]);
    snprintf(enter, sizeof(enter), "phase_%s_enter", phases[p]);
    snprintf(budget, sizeof(budget), "phase_%s_budget_s", phases[p]);
    f = open_src(file);
    if (f == NULL)
      fprintf(stderr, "daemon/%s is missing\n", file);
    CHECK(f != NULL);
    while (fgets(line, sizeof(line), f) != NULL) {
      outside_name(line, name, sizeof(name));
      if (name[0] != '\0' && strcmp(name, enter) != 0 &&
          strcmp(name, budget) != 0)
        fprintf(stderr,
                "daemon/%s defines %s for other files: a helper "
                "two phases share goes in a file of its own\n",
                file, name);
      CHECK(name[0] == '\0' || strcmp(name, enter) == 0 ||
            strcmp(name, budget) == 0);
    }
    fclose(f);
  }
}

/* No file of daemon/ calls a phase by its name. */
static void capture_nothing_calls_a_phase(void)
{
  const char *src = getenv("SRC_DIR");
  char dir[1024], line[1024];
  size_t files = 0;
  struct dirent *e;
  DIR *d;

  snprintf(dir, sizeof(dir), "%s/daemon", src ? src : ".");
  CHECK((d = opendir(dir)) != NULL);
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    FILE *f;

    if (n < 3 || (strcmp(e->d_name + n - 2, ".c") != 0 &&
                  strcmp(e->d_name + n - 2, ".h") != 0))
      continue;
    CHECK((f = open_src(e->d_name)) != NULL);
    while (fgets(line, sizeof(line), f) != NULL) {
      for (size_t p = 0; p < TR_NPHASE; p++) {
        char enter[128], budget[128], own[128];

        snprintf(own, sizeof(own), "phase_%s.c", phases[p]);
        snprintf(enter, sizeof(enter), "phase_%s_enter(", phases[p]);
        snprintf(budget, sizeof(budget), "phase_%s_budget_s(", phases[p]);
        if (strcmp(e->d_name, own) == 0)
          continue;
        if (strstr(line, enter) != NULL || strstr(line, budget) != NULL)
          fprintf(stderr, "daemon/%s calls phase %s\n", e->d_name, phases[p]);
        CHECK(strstr(line, enter) == NULL && strstr(line, budget) == NULL);
      }
    }
    fclose(f);
    files++;
  }
  closedir(d);
  CHECK(files > 20);
}

int main(void)
{
  RUN(capture_phase_defines_its_two);
  RUN(capture_nothing_calls_a_phase);
  return 0;
}
