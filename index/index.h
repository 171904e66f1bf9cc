/*
 * idx: the trace indexer. Reads one rank's trace (kineto or mcTracer JSON,
 * plain or gzip) in a single streaming pass and computes its rank summary
 * (docs/API.md, "Rank summary"). Memory grows with the number of distinct
 * kernel names and launch shapes, never with the file size.
 *
 * Threads: idx_file() blocks for as long as the file takes (seconds for a
 * GB): call it from a worker thread (uv_queue_work), never from the loop.
 * Unless told to use one thread (idx_options.threads), it starts one
 * helper thread of its own to inflate while it parses. Everything here is
 * reentrant: many files may be indexed at once.
 */
#ifndef IDX_INDEX_H
#define IDX_INDEX_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "common/tr.h"

/* Trace formats. Each has one row in index/read/format.c (name, unit,
 * detection, classification); IDX_FORMAT_AUTO detects. */
enum idx_format {
  IDX_FORMAT_AUTO,
  IDX_FORMAT_KINETO,
  IDX_FORMAT_MCTRACER,
  IDX_FORMAT_COUNT /* not a format: the number of rows */
};

/* The format named name ("auto", "kineto", "mctracer") into *out; 0, or
 * TR_EINVAL for a name that is none. */
int idx_format_parse(const char *name, enum idx_format *out);

/* The name of f ("auto" for IDX_FORMAT_AUTO). Static string. */
const char *idx_format_name(enum idx_format f);

/* Every name, "auto" first, joined by sep into buf (cut to size); buf. */
const char *idx_format_names(char *buf, size_t size, const char *sep);

/* Category rules: an ordered table of name patterns (first match wins).
 * Built-in rules always apply after the user's. */
struct idx_rules;

/* Loads user rules from a file of `category  pattern` lines (pattern:
 * substring, or `^prefix`, case-insensitive; `#` comments) and returns a
 * table with them ahead of the built-in rules. path NULL or "": built-ins
 * only. Caller frees with idx_rules_free(). */
int idx_rules_load(const char *path, struct idx_rules **out,
                   struct tr_err *err);
void idx_rules_free(struct idx_rules *rules);

/* The category of a kernel (or copy) name under rules ("gemm", "attention",
 * "moe", "communication", "custom", "routing", "copy", "memset",
 * "elementwise", "normalization", "softmax_topk", "sync", "other").
 * Returned string is static. */
const char *idx_category(const struct idx_rules *rules, const char *name);

/* The readable form of an Itanium-mangled name (_Z...: libiberty's
 * demangler, and why not __cxa_demangle: family.c) as a new string (caller
 * frees), or NULL when name is not mangled, cannot be demangled, or memory ran
 * out. */
char *idx_demangle(const char *name);

/* The family of a kernel name under rules (family.c): demangled, without
 * template and parameter lists, then as the first family rule says (tile
 * fields, Triton ordinals, a template argument...). A new string (caller
 * frees), or NULL when out of memory. */
char *idx_family(const struct idx_rules *rules, const char *name);

/* The default cap on distinct kernel names per rank (config key
 * max_kernel_names). */
#define IDX_MAX_KERNEL_NAMES CFG_MAX_KERNEL_NAMES

/* How a server captured a set of graphs (docs/DECODE.md, "Captures"):
 * FULL, one graph for the whole forward, replayed once a step; PIECEWISE,
 * several graphs a step with eager parts between them, the i-th graph for
 * the i-th graph launch of a step. AUTO: FULL when the capture trace holds
 * one graph, PIECEWISE when it holds more. */
enum idx_graph_mode { IDX_GRAPH_AUTO, IDX_GRAPH_FULL, IDX_GRAPH_PIECEWISE };

/* A capture trace of a rank: the profile a server wrote while it captured
 * its CUDA/HIP graphs, where every launch still sits under its op and
 * module (ATOM with --mark-trace: rank_N/capture_traces/
 * bs_<bs>_q_<q>_rank<N>.json.gz; SGLang and vLLM: capture_traces/ with
 * execution_details.json). */
struct idx_capture {
  const char *path;
  int64_t bs; /* the graphs' batch size; -1 unknown */
  int64_t q;  /* ATOM's q bucket (max query length); -1 unknown */
  enum idx_graph_mode mode;
};

/* ATOM's capture trace name "bs_<bs>_q_<q>_rank<N>.json.gz" (the _q_
 * part may be absent: older ATOM) into *bs, *q (-1 when absent) and
 * *rank; 1 when base is one, else 0 (nothing written). */
int idx_capture_name(const char *base, int64_t *bs, int64_t *q, int64_t *rank);

/* The entries of an execution_details.json text (SGLang, vLLM, TraceLens:
 * [{"file", "batch_size", "mode": "FULL"|"PIECEWISE"}]), each to fn with
 * the file's name (a plain name: no '/', not "." or ".."), its batch size
 * and mode; entries that are none of these are skipped. 0, or TR_EINVAL
 * with err saying why the text is not such a list. */
int idx_capture_details(const char *text, size_t n,
                        int (*fn)(void *ud, const char *file, int64_t bs,
                                  enum idx_graph_mode mode),
                        void *ud, struct tr_err *err);

/* The capture traces in the folder dir (a capture_traces/ folder; the
 * CLI's --captures): by its execution_details.json when it has one, else
 * every ATOM-named file (of rank `rank` when rank >= 0), by name. *out: a
 * new array of *n entries whose paths are new strings; caller frees with
 * idx_captures_free(). 0 (no folder, or none in it: *n 0) or an error. */
int idx_captures_find(const char *dir, int rank, struct idx_capture **out,
                      size_t *n, struct tr_err *err);
void idx_captures_free(struct idx_capture *c, size_t n);

struct idx_options {
  enum idx_format format;        /* IDX_FORMAT_AUTO detects */
  const struct idx_rules *rules; /* borrowed; NULL: built-ins */
  int rank;                      /* stored as "rank"; -1: from the trace
                                    (distributedInfo.rank) or null */
  /* Called now and then from the indexing thread with the bytes of the
   * file read so far (compressed bytes for .gz). May be NULL. */
  void (*on_progress)(void *ud, uint64_t file_bytes_read);
  void *ud;
  /* When non-NULL and set true by another thread, indexing stops soon with
   * TR_ECONFLICT ("cancelled"). */
  const atomic_bool *cancel;
  /* Distinct kernel names (and host API names) kept per rank; beyond, new
   * names fold into one row "(N more names)" (index/kit/agg_fold.c). 0:
   * IDX_MAX_KERNEL_NAMES. */
  uint32_t max_kernel_names;
  /* Threads idx_file() may keep busy for this file, the caller's own
   * included: 1 does everything on the calling thread; 2 or more inflate
   * on a thread of idx_file()'s while the caller parses and aggregates.
   * 0: as the machine allows (2 when it has 2 cores or more). A caller
   * indexing several files at once passes its cores / files (the daemon:
   * cores / index_jobs). */
  int threads;
  /* Where to write the rank's collectives for the capture-level matching
   * (idx_collectives_match()): a new file at that path (written beside it
   * as path.tmp, then renamed; never through a link). NULL: none. */
  const char *collectives_path;
  /* Where to write the run trace's access points (index/read/read.h: where a
   * slice may start inflating), every points_spacing output bytes (0:
   * IDX_POINT_SPACING); written as path.tmp, then renamed. NULL: none,
   * and the source is read exactly as without points. */
  const char *points_path;
  uint64_t points_spacing;
  /* What the file may cost (docs/SECURITY.md), each refused with an error
   * naming its setting: JSON bytes inflated (max_rank_inflated_bytes) and
   * bytes of temporary files (max_rank_spill_bytes), 0: no cap; the
   * temporary files go to spill_dir (NULL: $TMPDIR, else /tmp), whose
   * disk keeps 1 GiB (or a twentieth of it) free whatever the cap. */
  uint64_t max_inflated_bytes;
  uint64_t max_spill_bytes;
  const char *spill_dir;
  /* The rank's capture traces (borrowed; docs/DECODE.md): each is read
   * before the run trace, and the run trace's graph replays are matched
   * to the graphs they captured. None: replays stay unmatched (counted). */
  const struct idx_capture *captures;
  size_t ncaptures;
  /* The roof the op groups are put against (docs/PERF.md, "The roof"):
   * the gpu_roof setting, a GPU of the table or a roof by hand; NULL or
   * "": the one the trace's deviceProperties name picks. */
  const char *gpu_roof;
};

/* True once cancel (idx_options' own, borrowed, may be NULL) is set:
 * every step that looks at the flag asks here. */
static inline bool idx_cancelled(const atomic_bool *cancel)
{
  return cancel != NULL && atomic_load(cancel);
}

/*
 * Indexes the trace at path and returns its rank summary as a new JSON
 * object in *out (caller json_decref()s): every field of docs/API.md's rank
 * summary, with the long tables. On failure *out is untouched, err says
 * which file and which byte offset, and the return is negative. A file that
 * is cut short, not JSON, or without a traceEvents array is a failure, never
 * a partial summary.
 */
int idx_file(const char *path, const struct idx_options *opt, json_t **out,
             struct tr_err *err);

/* idx_file() of a file that must lie under the folder root, opened without
 * following any link below it (common/file.h's tr_open_file()): the
 * daemon gives the capture's or import's folder. idx_file() is root NULL:
 * the path is trusted up to its last component, which is still never a
 * link, a FIFO or a folder. */
int idx_file_under(const char *root, const char *path,
                   const struct idx_options *opt, json_t **out,
                   struct tr_err *err);

/* Where idx_file_sink() hands a rank summary, piece by piece: first its
 * head (an object holding every member of the summary but the tables),
 * then every row of every table (table: the summary's member, "kernels",
 * "launches"..., common/summary.h's TR_SUM_TABLES), each row as the
 * summary's array would hold it. head and row are borrowed for the call.
 * A non-zero return stops indexing; idx_file_sink() returns it, with err
 * (the callback's, which should say why). */
struct idx_sink {
  int (*on_head)(void *ud, json_t *head, struct tr_err *err);
  int (*on_row)(void *ud, const char *table, json_t *row, struct tr_err *err);
  void *ud;
  /* Optional: a row as its JSON text instead (p[0..n), borrowed for the
   * call), byte for byte what tr_json_dump_callback() of the row on_row
   * would be handed writes with JSON_COMPACT (common/reals.h): no object
   * is made (`traced index`, index/agg/agg_text.c). NULL: on_row. */
  int (*on_text)(void *ud, const char *table, const char *p, size_t n,
                 struct tr_err *err);
};

/* idx_file_under() whose summary goes to sink instead of into one
 * document: each row is built, handed over and freed in turn, so memory
 * is the aggregation's alone (the daemon stores rows as they come). On
 * failure after the head was handed over, the sink has had part of the
 * rows: its owner drops them. */
int idx_file_sink(const char *root, const char *path,
                  const struct idx_options *opt, const struct idx_sink *sink,
                  struct tr_err *err);

/* One rank's collectives for idx_collectives_match(). */
struct idx_coll_rank {
  const char *path; /* its idx_options.collectives_path, borrowed */
  int rank;         /* the capture's rank number */
  int group;        /* ranks match only within one group: a disaggregated
                       server's halves, pipeline stages */
};

/*
 * Matches the collectives of the n ranks across ranks (index/agg/coll_match.c)
 * and answers, in *out (caller json_decref()s): {t0_ns (the earliest
 * rank's t0), span_ns, matched (instances), families, steps, instances,
 * timeline (the rows of common/summary.h's TR_CAP_TABLES, instances the
 * `keep` of the largest skew, worst first; timeline in `bins` bins over
 * the span), warnings [{code, message}]}. A rank whose file cannot be
 * read is left out with a warning. Blocks on its reads: a worker thread.
 */
int idx_collectives_match(const struct idx_coll_rank *ranks, size_t n,
                          size_t keep, int bins, json_t **out,
                          struct tr_err *err);

/* ---- slices: a window of the raw trace (slice.c) ---- */

/* Where a slice's text goes: n bytes at p, in order. A non-zero return
 * stops the slice, and idx_slice_under() returns it. */
typedef int (*idx_write_fn)(void *ud, const char *p, size_t n);

struct idx_slice_opts {
  enum idx_format format;        /* as the rank was indexed; AUTO detects */
  const struct idx_rules *rules; /* borrowed; NULL: built-ins */
  uint32_t max_kernel_names;     /* as idx_options' */
  int64_t t0_ns;                 /* the rank's t0_ns (its summary) */
  int64_t start_ns, end_ns;      /* the window, relative to t0_ns as the
                                    phases are; start_ns < end_ns */
  bool findings;                 /* add traced's tracks: steps, idle */
  const atomic_bool *cancel;     /* as idx_options' */
  int threads;                   /* as idx_options' */
  uint64_t max_inflated_bytes;   /* as idx_options' */
  uint64_t max_spill_bytes;      /* as idx_options' */
  const char *spill_dir;         /* as idx_options' */
  /* The rank's access points (idx_options.points_path when it was
   * indexed): when they are of this file and hold the slicer's figures,
   * only the parts of the file that meet the window are read, the rest
   * told by the figures (docs/SLICES.md); the text is the same byte for
   * byte. NULL, or a points file that is missing, stale or without
   * them: the whole file is read. For idx_slice_ranks(), each rank's. */
  const char *points_path;
};

/* What a slice holds (its last member, traced_slice, says the same). */
struct idx_slice_stats {
  uint64_t events_read;     /* elements of traceEvents handed over */
  uint64_t events_kept;     /* in the window, metadata included */
  uint64_t metadata_events; /* ph "M", kept whatever their time */
  uint64_t events_mended;   /* kept after mending (slice_json.c) */
  uint64_t events_dropped;  /* in the window but not mendable JSON */
  uint64_t members_kept, members_dropped; /* top-level members */
  uint64_t steps, idle;                   /* findings written */
  /* Not in traced_slice: how it was read. */
  uint64_t text_bytes;       /* JSON text inflated */
  uint64_t pieces, pieces_read; /* with points: traceEvents' pieces, and
                                   those read (else both 0) */
};

/*
 * Streams to write a kineto JSON document holding exactly the events of
 * the trace at path (opened under root as idx_file_under() does) that
 * overlap [t0_ns + start_ns, t0_ns + end_ns), byte for byte, with the
 * metadata: every ph "M" event and every top-level member but
 * traceEvents, in file order; with findings, traced's steps and idle
 * stretches that overlap the window as two more tracks (a process of its
 * own); last, a member traced_slice with the window and the counts. One
 * streaming pass; memory as for idx_file() (the findings need its time
 * pass) plus 64 KiB, never the window's size. Blocks as idx_file() does.
 * On failure after some text was written, the text is cut short: the
 * writer's consumer must drop it. *stats may be NULL.
 */
int idx_slice_under(const char *root, const char *path,
                    const struct idx_slice_opts *o, idx_write_fn write,
                    void *ud, struct idx_slice_stats *stats,
                    struct tr_err *err);

/* One rank of an all-ranks slice (idx_slice_ranks()). */
struct idx_slice_rank {
  const char *path;       /* borrowed; opened under root */
  enum idx_format format; /* as the rank was indexed */
  int rank;
  int64_t t0_ns;           /* the rank's own, reported in traced_slice */
  const char *points_path; /* as idx_slice_opts' (borrowed; NULL: none) */
};

/*
 * Streams to write one Chrome trace event document holding each rank's
 * window, ranks[0..n) in that order: the events idx_slice_under() keeps
 * for it (with o's window, o->t0_ns the capture's, and o's findings),
 * each rank's processes given pids of their own and names saying the
 * rank (slice_ranks.c says how); last traced_slice, with each rank's
 * counts. o->format is not used (each rank's is). The ranks are read one
 * after the other, memory as for one. Blocks; errors and a cut text as
 * idx_slice_under()'s.
 */
int idx_slice_ranks(const char *root, const struct idx_slice_rank *ranks,
                    size_t n, const struct idx_slice_opts *o,
                    idx_write_fn write, void *ud, struct tr_err *err);

/* `traced index [--format F] [--rules FILE] FILE...`: argv[0] is "index".
 * Returns the process exit status (0, 1 a file failed, 2 usage). */
int idx_cli_main(int argc, char **argv);

#endif
