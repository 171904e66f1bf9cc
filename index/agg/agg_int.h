/*
 * The insides of index/agg/'s own passes, which other rooms do not read:
 * the device pass's and the families pass's state (the samples pass reads
 * both), the cover of step labels (idle time and collectives), the family
 * rules, and the collectives' side file (agg_coll.c writes it,
 * coll_match.c reads it). Internal to index/agg/.
 */
#ifndef IDX_AGG_INT_H
#define IDX_AGG_INT_H

#include "index/agg/agg.h"

/* ---- the device pass (agg_device.c) ---- */

struct agg_launch { /* by launch id: (shape, registers, shared) */
  uint32_t shape;
  uint32_t has; /* IDX_HAS_REGS | IDX_HAS_SHMEM */
  int64_t regs, shmem;
  struct agg_stat s;
};

struct agg_named { /* runtime API rows, by runtime name id */
  struct agg_stat s;
  struct agg_hist hist;
  uint32_t call;       /* its AGG_CALL_* bits, once call_known */
  uint32_t call_known; /* (agg_device.c's record_call()) */
};

struct agg_copy {
  struct agg_stat s;
  int64_t bytes, max_bytes;
};

/* Kernels, their launches and copies, and the host API calls, one event
 * at a time; what the samples pass reads too (the copies' time). */
struct agg_device {
  struct agg_map launches_map;
  struct agg_launch *launches;
  size_t launches_cap;
  /* Distinct shapes, and launch rows, kept (idx_agg.shape_cap: a trace
   * of one shape per launch must not grow the tables with its events);
   * beyond it a kernel of a new shape is counted without grid and block
   * (shapes_folded counts them), one of a new launch row without
   * registers and shared memory (launches_folded). */
  uint64_t shapes_folded, launches_folded;
  struct agg_named *runtime;
  size_t runtime_cap;
  struct agg_copy copies[AGG_COPY_KINDS];
  /* Launch join (ROCm): kernels waiting for their runtime launch event,
   * and runtime launch events waiting for their kernel, by correlation. */
  struct agg_corr k_pending, rt_pending;
  /* Copy join (ROCm 6.2): copies without bytes waiting for their runtime
   * call, and runtime calls' bytes waiting for their copy. */
  struct agg_corr c_pending, rtc_pending;
  uint64_t kernel_events;
  /* Kernel and runtime names met lately (agg_seen; one block, kseen's). */
  struct agg_seen *kseen, *rseen;
  struct agg_row *krows; /* the kernel names in the kernels table's order */
  size_t nkrows;
};

/* ---- categories and families (rules.c, family.c, agg_family.c) ---- */

/* rules.c: the first family rule matching name (demangled), into *out;
 * 0 when none matches. */
enum agg_fam_action {
  AGG_FAM_KEEP,
  AGG_FAM_TILE,
  AGG_FAM_ORDINAL,
  AGG_FAM_ARG,
  AGG_FAM_AS
};

struct agg_family_rule {
  enum agg_fam_action action;
  int arg;        /* AGG_FAM_ARG: from 1 */
  const char *as; /* AGG_FAM_AS: borrowed from the rules */
};

int agg_family_rule(const struct idx_rules *rules, const char *name,
                    struct agg_family_rule *out);

/* family.c: idx_family() of name whose demangled form is demangled
 * (NULL: not mangled). A new string, or NULL when out of memory. */
char *agg_family_of(const struct idx_rules *rules, const char *name,
                    const char *demangled);

struct agg_family { /* by family id */
  struct agg_stat s;
  struct agg_hist hist;
  uint32_t kernels; /* distinct names */
  uint32_t top;     /* name id of its largest total */
};

/* The families pass (agg_family.c): its figures, which the samples pass
 * reads too. */
struct agg_families {
  struct agg_family *v; /* by family id (fam_map) */
  size_t cap;
  struct agg_map famstep_map; /* (family, kind) */
  struct agg_famstep *famsteps;
  size_t famsteps_cap;
};

/* Which step kind covers a time, as the labels of the step side arrive in
 * start order (agg_idle.c): kind k covers t while t is before the largest
 * end of its labels so far; of the kinds covering t, the one whose latest
 * label started last wins (ties: the kind seen first). */
struct agg_cover {
  int64_t start[AGG_MAX_STEP_KINDS]; /* the latest label's start */
  int64_t end[AGG_MAX_STEP_KINDS];   /* the largest end; INT64_MIN: none */
};
void agg_cover_init(struct agg_cover *c);
void agg_cover_label(struct agg_cover *c, uint32_t k, int64_t start,
                     int64_t end);
/* The covering kind of t among the first nk, or -1. */
int agg_cover_kind(const struct agg_cover *c, uint32_t nk, int64_t t);

/* ---- the collectives' side file ---- */

/* The collectives of one rank as its index writes them for the
 * capture-level matching (coll_match.c): a compact file, native byte order
 * (written and read by the same traced, on the same machine), in the
 * capture's log folder.
 *
 *   records  struct coll_rec, nrecs of them, in the order each collective
 *            ended; a key is one stream, where kernels run one after the
 *            other, so a key's records are in start order
 *   keys     at keys_at: per key, u32 n, the family's n bytes, u32 lane
 *            (the key's ordinal among the keys of its family, in order of
 *            first start), i64 stream (the trace's own number, -1: none)
 *   kinds    at kinds_at: per step kind, u32 n and the kind's n bytes
 *   trailer  struct coll_trailer, the last bytes of the file
 */
#define COLL_MAGIC    0x31444e5254434c43ull /* "CLCTRND1" */
#define COLL_TEXT_MAX 4096                  /* bytes of a family or kind */

struct coll_rec {
  int64_t start_ns;   /* absolute, as the rank's trace */
  int64_t dur_ns;     /* the kernel's duration */
  int64_t exposed_ns; /* of it, with no compute kernel running */
  uint32_t key;       /* into the keys */
  int32_t kind;       /* into the kinds: the step kind whose label covers
                         its start (agg_cover_kind()), -1: none */
};

struct coll_trailer {
  uint64_t magic;
  uint64_t nrecs, nkeys, nkinds;
  uint64_t keys_at, kinds_at; /* byte offsets */
  int64_t t0_ns, tend_ns;     /* the rank's span (the summary's t0_ns) */
};

#endif
