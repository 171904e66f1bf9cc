/*
 * What ATOM's scripts kill by name (docs/ATOM.md, "What ATOM's scripts
 * kill"): the start script `pkill`s 'atom.entrypoints', then `pkill -9`s
 * 'multiprocessing.spawn' and 'multiprocessing.resource_tracker'
 * (start_atom_server.sh:29-34); the stop script `pkill`s each of its
 * PATTERNS array (stop_atom_server.sh:15-21, 36-62), 'lm_eval' among them.
 * Any process of the PID namespace whose command line matches goes, GPU or
 * not. traced reads the patterns from the scripts it runs, not from a copy
 * of them, so that an ATOM that changes its list is judged by its own.
 *
 * A small reading of bash: comments, quotes, arrays (NAME=( 'a' "b" c )),
 * for loops over an array ("${NAME[@]}"), scalar assignments, and the
 * commands `pkill` (not pgrep: it only counts) with their last word as the
 * pattern, -f matching the whole command line. Any thread; reads a file.
 */
#ifndef TR_ATOM_SCRIPTS_H
#define TR_ATOM_SCRIPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/tr.h"

#define TR_KILL_PATTERNS_MAX 64
#define TR_SCRIPT_MAX        ((size_t)1 << 20) /* bytes of a script read */

struct tr_kill_pattern {
  char *pattern; /* an extended regular expression (pkill's) */
  bool full;     /* -f: matched against the whole command line, else
                    against the process name */
  int line;      /* where the pkill stands (1-based) */
};

struct tr_kill_patterns {
  struct tr_kill_pattern v[TR_KILL_PATTERNS_MAX];
  size_t n;
  char unresolved[160]; /* a pattern word that could not be read ("$x"),
                           or "" */
};

/* The patterns of the pkill commands of the script text (NUL-terminated),
 * appended to out (duplicates left out). Returns 0, or TR_ENOMEM. */
int tr_kill_patterns_parse(const char *text, struct tr_kill_patterns *out);

/* The same of the script at path (at most TR_SCRIPT_MAX bytes read).
 * Returns 0, or a negative code with err naming the file. */
int tr_kill_patterns_read(const char *path, struct tr_kill_patterns *out,
                          struct tr_err *err);

void tr_kill_patterns_free(struct tr_kill_patterns *p);

#endif
