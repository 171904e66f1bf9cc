/*
 * Op groups and their kernel time (docs/PERF.md): the room's face to the
 * decode walk, which owns the host stacks and the launches.
 *
 *   - event pass: pf_proto() reads a modeled CPU op's arguments from its
 *     event's text into a proto (the op and its arguments; one per
 *     distinct pair, so a trace's millions of instances cost a few
 *     thousand protos);
 *   - time-ordered walk: each op frame with a proto opens an instance
 *     (pf_inst_open()); a launch under it adds to its pending count
 *     (pf_inst_launch()), each device record of the launch to its busy
 *     time (pf_inst_record(), records come in start order: the busy time
 *     is the union of their intervals, TraceLens's subtree busy time), the
 *     launch's first record settles it (pf_inst_settle()); an instance
 *     whose frame has ended and that waits for no record is closed into
 *     its group (pf_tick()). A graph replay's kernels go to the capture
 *     trace's op instances that launched them (pf_replay_*()).
 *   - the rows: the pass below decode (agg.h's AGG_PASS_MAP, perf_rows.c)
 *     reads the groups decode's walks filled (idx_agg.op_groups): its
 *     head puts the rank's scalars and picks the roof, pf_op_perf_rows()
 *     writes the op_perf table against it.
 *
 * Memory: protos and groups are capped (max_groups, the rank's kernel
 * names cap; protos four times that; their arguments' text 16 MiB), the
 * open instances at PF_OPEN (beyond, an instance is not tracked: counted,
 * and the summary warns). Internal to index/; one thread at a time.
 */
#ifndef IDX_PERF_H
#define IDX_PERF_H

#include <stdint.h>

#include "common/roof.h"
#include "index/agg/agg.h"

#define PF_NONE UINT32_MAX
#define PF_OPEN (1u << 16) /* instances open at once */

struct pf_lib;

/* A library for one rank (its capture traces and run trace share it);
 * max_groups 0: IDX_MAX_KERNEL_NAMES. Caller frees with pf_lib_free(). */
int pf_lib_new(uint32_t max_groups, struct pf_lib **out);
void pf_lib_free(struct pf_lib *lib);

/* The proto of a CPU op event named name[0..n) (the name as decode keeps
 * it, name_id its frame name id there: the model is looked up once per
 * name) into *proto: PF_NONE when traced has no model of the op, the
 * event carries no arguments or they are past the caps. 0 or TR_ENOMEM. */
int pf_proto(struct pf_lib *lib, const struct idx_event *ev, uint32_t name_id,
             const char *name, size_t n, uint32_t *proto);

/* ---- instances (the walk) ---- */

/* Bits of an instance. */
enum {
  PF_I_RECOMPUTE = 1, /* under torch.utils.checkpoint's recompute_fn */
  PF_I_NESTED = 2     /* inside another modeled op's instance */
};

/* Where the annotated models (perf_int.h's PF_OP_ANNOT) read a step's
 * label: fn(ud, label, buf, size) writes label number label's text into
 * buf (NUL-terminated, "" when none). */
void pf_lib_labels(struct pf_lib *lib,
                   int (*fn)(void *ud, int64_t label, char *buf, size_t size),
                   void *ud);

/* Opens an instance of proto whose frame spans [start, end), in the step
 * whose label is number label (-1: none); flags PF_I_*. *inst: its id, or
 * PF_NONE when the open instances are at PF_OPEN (counted). */
int pf_inst_open(struct pf_lib *lib, uint32_t proto, int64_t start, int64_t end,
                 int64_t label, unsigned flags, uint32_t *inst);
/* An op with a model opened inside inst: inst is then no outer op's row
 * (PF_OP_OUTER). */
void pf_inst_inner(struct pf_lib *lib, uint32_t inst);
/* A launch under inst: one more record awaited. */
void pf_inst_launch(struct pf_lib *lib, uint32_t inst);
/* A device record [start, start + dur) of a launch under inst; trans:
 * the GEMM transposes its name tells (pf_transposes()). */
void pf_inst_record(struct pf_lib *lib, uint32_t inst, int64_t start,
                    int64_t dur, uint8_t trans);
/* A launch under inst has had its records (or was lost). */
void pf_inst_settle(struct pf_lib *lib, uint32_t inst);
/* The walk is at time now: instances ended and settled are closed. 0 or
 * TR_ENOMEM. */
int pf_tick(struct pf_lib *lib, int64_t now);
/* The end of the walk: every instance closed. */
int pf_end(struct pf_lib *lib);

/* ---- graph replays ---- */

/* A capture trace's op instance: its proto, the capture instance it is
 * inside (PF_NONE: none), flags, the graph whose capture window it
 * started in (PF_NONE: none) and its frame's end. Capture instances are
 * numbered in the order they are made (pf_capture_count()). */
int pf_capture_inst(struct pf_lib *lib, uint32_t proto, uint32_t parent,
                    unsigned flags, uint32_t graph, int64_t end,
                    uint32_t *cinst);
uint32_t pf_capture_count(const struct pf_lib *lib);
/* The enclosing capture instance of cinst (PF_NONE: none). */
uint32_t pf_capture_parent(const struct pf_lib *lib, uint32_t cinst);
/* One replay of a graph: pf_replay_record() for each of its device
 * records in start order with the innermost capture instance above the
 * launch that recorded it, then pf_replay_end() with the replay's step
 * label (-1: none), the graph and its capture instances [first, end)
 * ending by win_end: each of them is an instance of the replay, with the
 * records it had (TraceLens merges the whole capture window into every
 * replay, its ops without kernels included). */
int pf_replay_record(struct pf_lib *lib, uint32_t cinst, int64_t start,
                     int64_t dur, uint8_t trans);
int pf_replay_end(struct pf_lib *lib, int64_t label, uint32_t graph,
                  uint32_t first, uint32_t end, int64_t win_end);

/* The transposes a GEMM kernel's name tells (TraceLens's
 * gemm_name_parser): 1 + 3 ta + tb, each 0 false, 1 true, 2 unknown; 0
 * when it is no GEMM name it reads. The caller keeps it per name. */
uint8_t pf_transposes(const char *name, size_t n);

/* ---- the rows ---- */

/* The pass: the roof the op groups are put against, which its head
 * picks (the gpu_roof setting's, idx_agg.gpu_roof, else the one of the
 * trace's deviceProperties name, idx_agg.dev_name: docs/PERF.md). */
struct agg_perf {
  struct tr_roof roof;
  int have_roof;
};

#endif
