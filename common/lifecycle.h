/*
 * The capture lifecycle's vocabulary, defined once: the statuses and the
 * phases of docs/API.md, and the members of a capture request with their
 * defaults. Every module derives its words from these lists (the libuv
 * UV_HANDLE_TYPE_MAP way): the daemon's phase table (daemon/capture.c), the
 * store's checks, the API's validation and /lifecycle.js, which the
 * dashboard loads. Adding a phase is one row here and the daemon's
 * phase_<name>.c; the compiler finds the rest. Any thread.
 */
#ifndef TR_LIFECYCLE_H
#define TR_LIFECYCLE_H

#include <stdbool.h>

/* XX(ENUM, name, final): a capture's status. */
#define TR_STATUS_MAP(XX)                                                      \
  XX(QUEUED, queued, false)                                                    \
  XX(RUNNING, running, false)                                                  \
  XX(DONE, done, true)                                                         \
  XX(FAILED, failed, true)                                                     \
  XX(CANCELLED, cancelled, true)                                               \
  XX(INTERRUPTED, interrupted, true)

/*
 * XX(ENUM, name, log, from, server): a capture's phase, in the order a
 * capture runs them. log names the log a failure in the phase quotes
 * ("stop", "launcher", "bench", "server", or NULL). from is the set of
 * phases it may be entered from (TR_FROM(...); QUEUED is where every
 * capture starts, entered from none), asserted by every move
 * (daemon/capture.c's cap_enter, as SQLite's pager.c asserts its states).
 * server says what the phase means for the ATOM server the capture
 * launched (an import launches none): TR_LAUNCH, the phase brings the
 * server up, so a point of a sweep whose server serves skips it and a
 * point failing in it ends its sweep (docs/SWEEPS.md); TR_HELD, it holds
 * the GPUs and no rank exports yet, so a failure stops it and a fatal
 * line of its log ends the capture; TR_LOGGED, its log holds this
 * launch's lines (the start script truncates it: docs/ATOM.md), whose
 * phases are told by offset and copied at the job's end. A sweep's point
 * moves the files of its window out of the sweep's launch folder in
 * COLLECTING. The daemon expands the same rows
 * into its phase table, pasting the name into the functions that act
 * (phase_<name>_enter) and budget (phase_<name>_budget_s);
 * docs/ARCHITECTURE.md lists what adding a phase touches.
 */
#define TR_PHASE_MAP(XX)                                                       \
  XX(QUEUED, queued, NULL, 0, 0)                                               \
  XX(STOPPING, stopping, "stop", TR_FROM(QUEUED), TR_LAUNCH)                   \
  XX(LAUNCHING, launching, "launcher", TR_FROM(STOPPING),                      \
     TR_LAUNCH | TR_HELD)                                                      \
  XX(WAITING_READY, waiting_ready, "server", TR_FROM(LAUNCHING),               \
     TR_LAUNCH | TR_HELD | TR_LOGGED)                                          \
  XX(BENCHMARK, benchmark, "bench", TR_FROM(WAITING_READY) | TR_FROM(QUEUED),  \
     TR_HELD | TR_LOGGED)                                                      \
  XX(EXPORTING, exporting, "server", TR_FROM(BENCHMARK), TR_LOGGED)            \
  XX(COLLECTING, collecting, NULL, TR_FROM(EXPORTING), TR_LOGGED)              \
  XX(INDEXING, indexing, NULL,                                                 \
     TR_FROM(QUEUED) | TR_FROM(EXPORTING) | TR_FROM(COLLECTING), TR_LOGGED)    \
  XX(FINISHING, finishing, NULL, TR_FROM(INDEXING), TR_LOGGED)                 \
  XX(DONE, done, NULL, TR_FROM(FINISHING), TR_LOGGED)

/* The bit of phase e in a row's from. */
#define TR_FROM(e) (1u << TR_PHASE_##e)
/* A row's server. */
#define TR_HELD    1u
#define TR_LOGGED  2u
#define TR_LAUNCH  4u

/* XX(ENUM, name): what a capture is: one traced runs against ATOM, or
 * traces taken elsewhere (POST /imports). Each kind has its own queue and
 * its own slot in the runner. */
#define TR_KIND_MAP(XX)                                                        \
  XX(CAPTURE, capture)                                                         \
  XX(IMPORT, import)

enum tr_kind {
#define XX(e, name) TR_KIND_##e,
  TR_KIND_MAP(XX)
#undef XX
      TR_NKIND
};

enum tr_status {
#define XX(e, name, final) TR_STATUS_##e,
  TR_STATUS_MAP(XX)
#undef XX
      TR_NSTATUS
};

enum tr_phase {
#define XX(e, name, ...) TR_PHASE_##e,
  TR_PHASE_MAP(XX)
#undef XX
      TR_NPHASE
};

/* The name of s or p ("queued"...); "?" when out of range. Static. */
const char *tr_status_name(enum tr_status s);
const char *tr_phase_name(enum tr_phase p);
/* True when p's row of TR_PHASE_MAP has server (TR_HELD, TR_LOGGED). */
bool tr_phase_server(enum tr_phase p, unsigned server);
/* The kinds' names by enum tr_kind, NULL-terminated. */
extern const char *const tr_kind_names[];
/* True for done, failed, cancelled and interrupted: never left. */
bool tr_status_final(enum tr_status s);
/* The status or phase called name; -1 when none is (or name is NULL). */
int tr_status_parse(const char *name);
int tr_phase_parse(const char *name);

/*
 * XX(name, type, lo, hi, default): the members of POST /captures
 * (docs/API.md), with their range and the default filled in when a
 * request omits one. Types: MODEL (a path, required), INT, BOOL, WORDS
 * (argv words), ENV (object of strings), TEXT (free text, no default).
 * tp has no default here: a models.json preset gives it, else
 * TR_DEFAULT_TP (the daemon decides, see atom/plan.c).
 */
#define TR_REQUEST_MAP(XX)                                                     \
  XX(model, MODEL, 0, 0, 0)                                                    \
  XX(tp, INT, 1, 64, 0)                                                        \
  XX(isl, INT, 1, 1048576, 1024)                                               \
  XX(osl, INT, 1, 1048576, 1024)                                               \
  XX(conc, INT, 1, 65536, 64)                                                  \
  XX(more, BOOL, 0, 0, 0)                                                      \
  XX(mark_trace, BOOL, 0, 0, 0)                                                \
  XX(prompt_multiplier, INT, 1, 1000, 1)                                       \
  XX(variant, TEXT, 0, 0, 0)                                                   \
  XX(server_args, WORDS, 0, 0, 0)                                              \
  XX(bench_args, WORDS, 0, 0, 0)                                               \
  XX(env, ENV, 0, 0, 0)                                                        \
  XX(label, TEXT, 0, 0, 0)

/* The TP of a request that gives none and matches no preset. */
#define TR_DEFAULT_TP 8

enum tr_member_type {
  TR_M_MODEL,
  TR_M_INT,
  TR_M_BOOL,
  TR_M_WORDS,
  TR_M_ENV,
  TR_M_TEXT
};

struct tr_member {
  const char *name;
  enum tr_member_type type;
  long long lo, hi, dflt; /* INT: range and default (0: none) */
};

/* The rows of TR_REQUEST_MAP, in order; tr_members_n of them. */
extern const struct tr_member tr_members[];
extern const unsigned tr_members_n;

/* The row called name, or NULL. */
const struct tr_member *tr_member_find(const char *name);

#endif
