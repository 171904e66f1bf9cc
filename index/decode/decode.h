/*
 * Decode opened up (docs/DECODE.md): every device record of a rank gets
 * the op, the module and the layer above its launch. An eager kernel takes
 * them from the run trace's own host stacks (index/host/host.h); a kernel
 * replayed from a CUDA/HIP graph takes them from the launch that recorded
 * it while the graph was captured, read from the rank's capture traces.
 *
 * Use, per rank: dec_lib_new(); for each capture trace dec_file_new(
 * DEC_CAPTURE), its events through dec_event(), dec_end(); then the run
 * trace the same way with DEC_RUN (its decode pass, dec_pass.c, calls
 * dec_event() for every event), and dec_put_rank() fills the rank
 * summary's decode figures. Memory: the distinct stacks, names and capture
 * launches of the rank, the events in flight, and sorted runs of 32-byte
 * records (cpu frames, launches, device records) spilled to a temporary file as
 * the time records are (agg_runs.c).
 *
 * Internal to index/; one thread at a time per dec_lib.
 */
#ifndef IDX_DECODE_H
#define IDX_DECODE_H

#include "index/agg/agg.h"
#include "index/read/read.h"
#include "index/index.h"

struct dec_lib;
struct dec_file;

enum dec_mode {
  DEC_RUN,    /* the run trace: attribution and tables */
  DEC_CAPTURE /* a capture trace: its graphs' launches into the library */
};

/* A library for one rank; max_names caps distinct kernel names (0:
 * IDX_MAX_KERNEL_NAMES); its files' records spill to sp (borrowed: the
 * rank's, so that they count against its bounds). Caller frees with
 * dec_lib_free(). */
int dec_lib_new(uint32_t max_names, struct agg_spill *sp,
                struct dec_lib **out);
void dec_lib_free(struct dec_lib *lib);
/* A capture trace of lib could not be read (the summary warns). */
void dec_lib_capture_failed(struct dec_lib *lib);

/* A file of the rank; cap describes a capture trace (DEC_CAPTURE; its
 * path is kept for messages), NULL for the run trace. The file borrows
 * lib until dec_file_free(). */
int dec_file_new(struct dec_lib *lib, enum dec_mode mode,
                 const struct idx_capture *cap, struct dec_file **out);
void dec_file_free(struct dec_file *d);

/* One event of the file, in file order, with its class (read.h) and the
 * hash of its name (agg_name_hash(); 0: not found yet, found here when
 * needed). 0 or a negative error (out of memory, a spill failed). */
int dec_event(struct dec_file *d, const struct idx_event *ev,
              enum idx_class cls, uint64_t hash);

/* 0 when dec_event() would take nothing of ev: the test every event
 * passes before the call, inline, since nine in ten events of a trace
 * are python_function frames, many of them builtins ("<built-in method
 * ...>"), which no rule of dec_event.c takes. */
static inline int dec_wants(const struct idx_event *ev, enum idx_class cls)
{
  if (cls == IDX_CLASS_PYTHON) /* a module, a checkpoint's recompute, a
                                 source line: no builtin */
    return ev->name.n > 6 && ev->name.p[0] != '<';
  return cls != IDX_CLASS_NONE && cls != IDX_CLASS_LABEL_GPU &&
         cls != IDX_CLASS_SYNC;
}

/* End of the file's events: the time-ordered walk. A capture trace adds
 * its graphs to the library; a run trace computes its tables. */
int dec_end(struct dec_file *d, struct tr_err *err);
/* The part of dec_end() that may write spill files (sealing the records),
 * whose accounting a rank's threads share: called first on the thread
 * that spills, it lets dec_end() run on another one beside the time pass
 * (agg_json.c), which reads only what decode alone owns. */
int dec_seal(struct dec_file *d, struct tr_err *err);

/* The run trace's figures into the summary: its scalars (completeness)
 * into r; d NULL (decode not run): zeros. The rows of its tables (the
 * decode_* rows of common/summary.h's TR_TABLE_MAP) are dec_*_rows(). */
void dec_put_rank(const struct dec_file *d, struct agg_sum_rank *r);

/* The summary's warnings about the decode figures (stacks or names
 * capped, replays left unmatched, steps closed before their kernels
 * came) appended to w. */
void dec_warnings(const struct dec_file *d, json_t *w);

/* The pass (agg.h's AGG_PASS_MAP, dec_pass.c): the run trace's decode file,
 * attached by its caller, fed every event of the run trace; its walk
 * (dec_end) runs beside the walk of the other passes when the file may use
 * two threads. file NULL: decode does not run (a slice's findings). */
struct agg_decode {
  struct dec_file *file; /* taken: freed with the pass */
  struct agg_beside beside;
  struct tr_err err; /* the walk's failure, beside */
};

#endif
