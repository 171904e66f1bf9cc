/*
 * cap_layout: reads a trace folder as ATOM lays it out (docs/ATOM.md,
 * "Where traces land"): one folder per rank, `rank_<r>`, `dp<d>_tp<r>`,
 * either with a `pp<p>_` prefix, and a disaggregated server's `prefill/`
 * and `decode/` halves, each with its own set of ranks. Also a single
 * trace file, or a folder of trace files, for imports.
 *
 * Pure file-system reads: blocks on disk, so call it from a worker thread
 * (uv_queue_work) or before the loop runs. Reentrant.
 */
#ifndef DAEMON_LAYOUT_H
#define DAEMON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/tr.h"

struct cap_rank {
  char *label;     /* folder relative to the root ("rank_3",
                      "prefill/pp1_dp0_tp2") or the file's name */
  char *file;      /* the trace to index: the one .gz, else a plain
                      .json (imports); NULL when the folder has none */
  int half;        /* 0 none, 1 prefill, 2 decode */
  int pp, dp, tp;  /* -1 when the name has no such part */
  int gz_count;    /* *.pt.trace.json.gz (or *.json.gz) files */
  int orphan_json; /* *.json left beside: an export still running, or
                      one that died midway */
  uint64_t bytes;  /* size of file */
  uint64_t written; /* sizes of every .json and .json.gz of the folder:
                       grows while the rank exports */
};

struct cap_layout {
  char *root;             /* the folder scanned (a single file's folder):
                             every rank's file lies below it, and the
                             indexer opens them under it */
  struct cap_rank *ranks; /* sorted by half, pp, dp, tp, label: the
                             index is the rank number in the capture */
  size_t n;
  int plain;            /* every rank folder is rank_<r>, no halves */
  int exported;         /* ranks with exactly one .gz and no .json */
  int orphan_json;      /* .json files over all ranks */
  uint64_t bytes_total; /* sum of bytes of ranks with a file */
  uint64_t written;     /* sum of the ranks' written */
};

/*
 * Scans path: a trace file (one rank, label = its name), a folder of rank
 * folders, or a folder of trace files (one rank each). A folder with
 * nothing in it gives n == 0. Caller frees *out with cap_layout_free().
 * Nothing is followed (docs/SECURITY.md): path itself, a half, a rank folder or
 * a trace file that is a symbolic link refuses the whole scan (-ELOOP), and so
 * does a trace name or rank folder of another kind (a FIFO named x.json:
 * TR_EFORMAT), err naming it; other names are left alone, and an entry that
 * vanishes while the scan runs is skipped. No file is opened. Errors: -errno
 * when path cannot be read.
 */
int cap_layout_scan(const char *path, struct cap_layout **out,
                    struct tr_err *err);
void cap_layout_free(struct cap_layout *l);

/*
 * Whether a capture's export is complete for tp ranks: with plain rank_<r>
 * folders, every rank_0..rank_<tp-1> holds exactly one .gz and no .json;
 * with other layouts, at least tp rank folders and all of them so. Returns
 * 1 complete, 0 not; msg (may be NULL) gets what is missing, rank by rank
 * ("rank_3: no .gz yet; rank_5: orphan .json left ...").
 */
int cap_layout_complete(const struct cap_layout *l, int tp, char *msg,
                        size_t size);

#endif
