/*
 * The schema as a list of migration steps. Step i (0-based) takes a
 * database from PRAGMA user_version i to i+1; store__migrate() applies the
 * missing ones in order, one transaction each. Never edit a released step:
 * append a new one (and never edit a field-list row a released step
 * expanded: add a row with the next `since`).
 */
#include "common/summary.h"
#include "store/store_int.h"

/*
 * Version 1.
 *
 * captures: one row per capture or import; id is the API id. AUTOINCREMENT
 * so that a deleted capture's id (and its <trace_root>/<id>/ folder, and
 * links people pasted) is never handed to a new one. Timestamps are ns
 * since the epoch; params/progress/error/bench/extra are JSON text.
 *
 * ranks: one row per indexed (or failed) rank, with every scalar of the
 * rank summary (docs/API.md) as a column; trace_rank is the summary's own
 * "rank" (distributedInfo.rank, may be NULL), rank the capture's number
 * for it (what ?rank= selects).
 *
 * names: kernel and host API names, interned: the same few thousand names
 * repeat on every rank of every capture.
 *
 * The per-rank tables hang off ranks with ON DELETE CASCADE, ranks off
 * captures, so deleting a capture removes everything of it. avg_ns and
 * share are not stored: they are derived from total/count and from the
 * rank's kernel_ns/device_ns when read, which also serves all-ranks sums.
 */
/* clang-format off */
/*
 * Version 1's captures table named name, its status and phase columns
 * given (each with its trailing comma). Steps 1 and 2 both create it, and
 * must create the same columns in the same order: step 2's INSERT ...
 * SELECT * copies version 1's rows by position. Frozen with them.
 */
#define CAPTURES_V1(name, status, phase)                                       \
  "CREATE TABLE " name "("                                                     \
  " id INTEGER PRIMARY KEY AUTOINCREMENT,"                                     \
  " kind TEXT NOT NULL CHECK(kind IN ('capture','import')),"                   \
  " label TEXT,"                                                               \
  " params TEXT NOT NULL DEFAULT '{}'," status phase                           \
  " created_at INTEGER NOT NULL,"                                              \
  " started_at INTEGER,"                                                       \
  " finished_at INTEGER,"                                                      \
  " phase_started_at INTEGER,"                                                 \
  " progress TEXT NOT NULL DEFAULT '{}',"                                      \
  " error TEXT,"                                                               \
  " bench TEXT,"                                                               \
  " extra TEXT NOT NULL DEFAULT '{}');"

static const char step1[] =
    CAPTURES_V1(
        "captures",
        " status TEXT NOT NULL CHECK(status IN ('queued','running','done',"
        "  'failed','cancelled','interrupted')),",
        " phase TEXT NOT NULL CHECK(phase IN ('queued','stopping','launching',"
        "  'waiting_ready','benchmark','exporting','indexing','done')),")
    "CREATE INDEX captures_queue ON captures(status, kind, id);"
    "CREATE TABLE names("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE ranks("
    " id INTEGER PRIMARY KEY,"
    " capture_id INTEGER NOT NULL REFERENCES captures(id) ON DELETE CASCADE,"
    " rank INTEGER NOT NULL,"
    " label TEXT,"
    " file TEXT,"
    " status TEXT NOT NULL CHECK(status IN ('done','failed')),"
    " error TEXT,"
    " trace_rank INTEGER,"
    " format TEXT,"
    " device TEXT,"
    " file_bytes INTEGER, json_bytes INTEGER, events INTEGER,"
    " skipped_events INTEGER, t0_ns INTEGER, span_ns INTEGER,"
    " kernel_events INTEGER, kernel_ns INTEGER, distinct_kernels INTEGER,"
    " memcpy_count INTEGER, memcpy_bytes INTEGER, memcpy_ns INTEGER,"
    " memset_count INTEGER, memset_ns INTEGER, device_ns INTEGER,"
    " gpu_busy_ns INTEGER, runtime_events INTEGER, runtime_ns INTEGER,"
    " UNIQUE(capture_id, rank));"
    "CREATE TABLE kernels("
    " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE,"
    " name_id INTEGER NOT NULL REFERENCES names(id),"
    " category TEXT NOT NULL,"
    " count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
    " min_ns INTEGER NOT NULL, max_ns INTEGER NOT NULL,"
    " median_ns INTEGER NOT NULL, first_ns INTEGER NOT NULL,"
    " last_ns INTEGER NOT NULL,"
    " PRIMARY KEY(rank_id, name_id)) WITHOUT ROWID;"
    "CREATE TABLE launches("
    " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE,"
    " name_id INTEGER NOT NULL REFERENCES names(id),"
    " grid TEXT, block TEXT,"
    " registers_per_thread INTEGER, shared_bytes INTEGER,"
    " count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
    " min_ns INTEGER NOT NULL, max_ns INTEGER NOT NULL);"
    "CREATE INDEX launches_rank ON launches(rank_id);"
    "CREATE TABLE categories("
    " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE,"
    " category TEXT NOT NULL,"
    " count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
    " PRIMARY KEY(rank_id, category)) WITHOUT ROWID;"
    "CREATE TABLE memcpy("
    " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL,"
    " count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
    " bytes INTEGER NOT NULL, max_bytes INTEGER NOT NULL,"
    " PRIMARY KEY(rank_id, kind)) WITHOUT ROWID;"
    "CREATE TABLE runtime("
    " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE,"
    " name_id INTEGER NOT NULL REFERENCES names(id),"
    " count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
    " median_ns INTEGER NOT NULL, max_ns INTEGER NOT NULL,"
    " PRIMARY KEY(rank_id, name_id)) WITHOUT ROWID;"
    "CREATE TABLE steps("
    " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE,"
    " kind TEXT NOT NULL,"
    " count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
    " tokens INTEGER NOT NULL, padded INTEGER NOT NULL,"
    " kernel_ns INTEGER NOT NULL, source TEXT NOT NULL,"
    " PRIMARY KEY(rank_id, kind)) WITHOUT ROWID;"
    "CREATE TABLE phases("
    " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE,"
    " idx INTEGER NOT NULL,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    " busy_ns INTEGER NOT NULL, kernel_events INTEGER NOT NULL,"
    " cause TEXT NOT NULL,"
    " top_kernels TEXT NOT NULL, top_launches TEXT NOT NULL,"
    " PRIMARY KEY(rank_id, idx)) WITHOUT ROWID;";

/*
 * Version 2: captures without CHECKs on status and phase. The words are
 * common/lifecycle.h's and checked there, so that a new phase needs no
 * table rebuild again. SQLite cannot drop a CHECK in place: the table is
 * rebuilt (https://www.sqlite.org/lang_altertable.html, "Making Other
 * Kinds Of Table Schema Changes"; migrate() turns foreign keys off around
 * it, or dropping the old table would cascade into ranks). The
 * AUTOINCREMENT counter moves with it, so no id is ever handed out twice.
 */
static const char step2[] =
    CAPTURES_V1("captures_v2", " status TEXT NOT NULL,",
                " phase TEXT NOT NULL,")
    "INSERT INTO captures_v2 SELECT * FROM captures;"
    "DELETE FROM sqlite_sequence WHERE name = 'captures_v2';"
    "UPDATE sqlite_sequence SET name = 'captures_v2' WHERE name = 'captures';"
    "DROP TABLE captures;"
    "ALTER TABLE captures_v2 RENAME TO captures;"
    "CREATE INDEX captures_queue ON captures(status, kind, id);";
/* clang-format on */

/*
 * From version 3 on, a step's SQL is expanded from the field list
 * (common/summary.h): the rows whose `since` is that step's version. A
 * row's column definition by TYPE: in a new table NOT NULL, since every
 * row has it; added to an existing table nullable, since the rows stored
 * before have none. Derived members (AVG, SHARE, RATIO) have no column.
 */
/* clang-format off */
#define NEW_INT(c)       ", " #c " INTEGER NOT NULL"
#define NEW_INT_NULL(c)  ", " #c " INTEGER"
#define NEW_TEXT(c)      ", " #c " TEXT NOT NULL"
#define NEW_TEXT_NULL(c) ", " #c " TEXT"
#define NEW_NAME(c)      ", " #c " INTEGER NOT NULL REFERENCES names(id)"
#define NEW_JSON(c)      ", " #c " TEXT NOT NULL"
#define NEW_JSON_NULL(c) ", " #c " TEXT"
#define NEW_REAL(c)      ", " #c " REAL NOT NULL"
#define NEW_REAL_NULL(c) ", " #c " REAL"
#define NEW_AVG(c)
#define NEW_SHARE(c)
#define NEW_RATIO(c)
#define NEW_PART(c)
#define ADD_INT(t, c)       "ALTER TABLE " t " ADD COLUMN " #c " INTEGER;"
#define ADD_INT_NULL(t, c)  ADD_INT(t, c)
#define ADD_TEXT(t, c)      "ALTER TABLE " t " ADD COLUMN " #c " TEXT;"
#define ADD_TEXT_NULL(t, c) ADD_TEXT(t, c)
#define ADD_JSON(t, c)      ADD_TEXT(t, c)
#define ADD_JSON_NULL(t, c) ADD_TEXT(t, c)
#define ADD_REAL(t, c)      "ALTER TABLE " t " ADD COLUMN " #c " REAL;"
#define ADD_REAL_NULL(t, c) ADD_REAL(t, c)
#define ADD_AVG(t, c)
#define ADD_SHARE(t, c)
#define ADD_RATIO(t, c)
#define ADD_PART(t, c)

/* Version 3 expands the rows of since 3 only (a row of a later version
 * adds its empty IN3_<version> here: the compiler asks for it). */
#define IN3_1(x)
#define IN3_2(x)
#define IN3_3(x) x
#define IN3_4(x)
#define IN3_5(x)
#define IN3_6(x)
#define IN3_8(x)
#define IN3_9(x)
#define IN3_10(x)
#define IN3_11(x)
#define NEW3(key, col, ty, all, since) IN3_##since(NEW_##ty(col))
#define ADD3_RANK(key, col, ty, all, since) IN3_##since(ADD_##ty("ranks", col))
#define ADD3_KERNEL(key, col, ty, all, since)                                \
  IN3_##since(ADD_##ty("kernels", col))
#define ADD3_STEP(key, col, ty, all, since) IN3_##since(ADD_##ty("steps", col))
#define OF_RANK                                                            \
  " rank_id INTEGER NOT NULL REFERENCES ranks(id) ON DELETE CASCADE"

/*
 * Version 3: the analysis of why the GPU waits. Step-time distributions
 * and the steady state on steps; demangled names and families on kernels;
 * idle time, launch delays and the timeline's bucket width on ranks; new
 * tables for the batch-size buckets, the step-time histograms, the outlier
 * steps, idle time by cause,
 * the utilisation timeline, the families and their time per step kind.
 * The idle table's step may be NULL (outside steps), so it keeps a rowid.
 */
static const char step3[] =
    TR_SUM_RANK(ADD3_RANK) TR_SUM_KERNEL(ADD3_KERNEL) TR_SUM_STEP(ADD3_STEP)
    "CREATE TABLE step_buckets(" OF_RANK TR_SUM_STEP_BUCKET(NEW3)
    ", PRIMARY KEY(rank_id, kind, dim, lo)) WITHOUT ROWID;"
    "CREATE TABLE step_histogram(" OF_RANK TR_SUM_STEP_HIST(NEW3)
    ", PRIMARY KEY(rank_id, kind, lo_ns)) WITHOUT ROWID;"
    "CREATE TABLE step_outliers(" OF_RANK TR_SUM_STEP_OUTLIER(NEW3)
    ", PRIMARY KEY(rank_id, kind, role, idx)) WITHOUT ROWID;"
    "CREATE TABLE idle(" OF_RANK TR_SUM_IDLE(NEW3) ");"
    "CREATE INDEX idle_rank ON idle(rank_id);"
    "CREATE TABLE timeline(" OF_RANK TR_SUM_TIMELINE(NEW3)
    ", PRIMARY KEY(rank_id, idx)) WITHOUT ROWID;"
    "CREATE TABLE families(" OF_RANK TR_SUM_FAMILY(NEW3)
    ", PRIMARY KEY(rank_id, family)) WITHOUT ROWID;"
    "CREATE TABLE family_steps(" OF_RANK TR_SUM_FAMILY_STEP(NEW3)
    ", PRIMARY KEY(rank_id, family, step)) WITHOUT ROWID;";
/* clang-format on */

/* clang-format off */
/* Version 4 expands the rows of since 4 only. */
#define IN4_1(x)
#define IN4_2(x)
#define IN4_3(x)
#define IN4_4(x) x
#define IN4_5(x)
#define IN4_6(x)
#define IN4_8(x)
#define IN4_9(x)
#define IN4_10(x)
#define IN4_11(x)
#define ADD4_RANK(key, col, ty, all, since) IN4_##since(ADD_##ty("ranks", col))

/*
 * Version 4: the cap on distinct names per rank (index/kit/agg_fold.c): how
 * many kernel and host API names folded into one row, and the summary's
 * warnings ([{code, message}] as JSON text).
 */
static const char step4[] = TR_SUM_RANK(ADD4_RANK);
/* clang-format on */

/* clang-format off */
/* Version 5 expands the rows of since 5 only. */
#define IN5_1(x)
#define IN5_2(x)
#define IN5_3(x)
#define IN5_4(x)
#define IN5_5(x) x
#define IN5_6(x)
#define IN5_8(x)
#define IN5_9(x)
#define IN5_10(x)
#define IN5_11(x)
#define NEW5(key, col, ty, all, since) IN5_##since(NEW_##ty(col))
#define ADD5_RANK(key, col, ty, all, since) IN5_##since(ADD_##ty("ranks", col))
#define OF_CAPTURE                                                         \
  " capture_id INTEGER NOT NULL REFERENCES captures(id) ON DELETE CASCADE"

/*
 * Version 5: across ranks and across runs (docs/ANALYSIS.md: the summed
 * tables). Each rank's collective totals; the capture's collective tables
 * (common/summary.h's TR_CAP_TABLES); capture_results: one row per
 * capture written when its ranks are all indexed, before it is done
 * (summed: its all-ranks tables are in sum_rows; collectives: the
 * matching's t0_ns, span_ns, matched and warnings; its verdict and the
 * baseline it was judged against); sum_rows: the all-ranks answer of
 * each summed table, row by row, as the JSON text the live query gives
 * (row), in that query's order (seq), with the columns its filters and
 * sorts read; sum_texts: each summed table's whole answer in that
 * order as one text (rows, "[...]") with the end of each row in it (ends:
 * native uint32 offsets), so that an answer without filters is a prefix
 * of one text; baselines: the capture pinned for a configuration (the
 * canonical JSON of model, tp, isl, osl, conc, variant and more).
 */
static const char step5[] =
    TR_SUM_RANK(ADD5_RANK)
    "CREATE TABLE collective_families(" OF_CAPTURE TR_COLL_FAMILY(NEW5)
    ", PRIMARY KEY(capture_id, family, rank)) WITHOUT ROWID;"
    "CREATE TABLE collective_steps(" OF_CAPTURE TR_COLL_STEP(NEW5) ");"
    "CREATE INDEX collective_steps_capture ON collective_steps(capture_id);"
    "CREATE TABLE collective_instances(" OF_CAPTURE TR_COLL_INSTANCE(NEW5)
    ", PRIMARY KEY(capture_id, family, lane, idx)) WITHOUT ROWID;"
    "CREATE INDEX collective_instances_skew ON"
    " collective_instances(capture_id, skew_ns DESC);"
    "CREATE TABLE collective_timeline(" OF_CAPTURE TR_COLL_TIMELINE(NEW5)
    ", PRIMARY KEY(capture_id, bin, rank)) WITHOUT ROWID;"
    "CREATE TABLE capture_results("
    " capture_id INTEGER PRIMARY KEY REFERENCES captures(id)"
    "  ON DELETE CASCADE,"
    " summed INTEGER NOT NULL DEFAULT 0,"
    " collectives TEXT,"
    " verdict TEXT,"
    " verdict_code TEXT,"
    " baseline_id INTEGER);"
    "CREATE TABLE sum_rows(" OF_CAPTURE ","
    " tbl TEXT NOT NULL, seq INTEGER NOT NULL,"
    " name TEXT, category TEXT, family TEXT, kind TEXT,"
    " count INTEGER, total_ns INTEGER, avg_ns INTEGER,"
    " row TEXT NOT NULL,"
    " PRIMARY KEY(capture_id, tbl, seq)) WITHOUT ROWID;"
    "CREATE TABLE sum_texts(" OF_CAPTURE ","
    " tbl TEXT NOT NULL, rows TEXT NOT NULL, ends BLOB NOT NULL,"
    " PRIMARY KEY(capture_id, tbl));"
    "CREATE TABLE baselines("
    " config TEXT PRIMARY KEY,"
    " capture_id INTEGER NOT NULL REFERENCES captures(id) ON DELETE CASCADE,"
    " pinned_at INTEGER NOT NULL);"
    "CREATE INDEX baselines_capture ON baselines(capture_id);";
/* clang-format on */

/* clang-format off */
/* Version 6 expands the rows of since 6 only. */
#define IN6_1(x)
#define IN6_2(x)
#define IN6_3(x)
#define IN6_4(x)
#define IN6_5(x)
#define IN6_6(x) x
#define IN6_8(x)
#define IN6_9(x)
#define IN6_10(x)
#define IN6_11(x)
#define NEW6(key, col, ty, all, since) IN6_##since(NEW_##ty(col))

/*
 * Version 6: verdicts from each figure's own noise. Each rank's single
 * steps with the figures tracked in them (index/agg/agg_samples.c); and
 * capture_figures, written with a capture's results: per figure (step
 * time of a kind, category, family, kernel: figure, name) and stratum
 * (the kind and its batch-size bucket, or the profiler step: store/
 * figures.c), the steps counted (n), their 20% trimmed mean (loc, ns) and
 * its standard error (se, ns; NULL below two steps) with its degrees of
 * freedom (df): what a verdict of this capture, or against it, and the
 * history of its configuration read.
 */
static const char step6[] =
    "CREATE TABLE sample_figures(" OF_RANK TR_SUM_SAMPLE_FIGURE(NEW6)
    ", PRIMARY KEY(rank_id, idx)) WITHOUT ROWID;"
    "CREATE TABLE step_samples(" OF_RANK TR_SUM_STEP_SAMPLE(NEW6)
    ", PRIMARY KEY(rank_id, kind, ordinal)) WITHOUT ROWID;"
    "CREATE TABLE capture_figures(" OF_CAPTURE ","
    " figure TEXT NOT NULL, name TEXT NOT NULL, stratum TEXT NOT NULL,"
    " n INTEGER NOT NULL, loc REAL NOT NULL, se REAL, df REAL,"
    " PRIMARY KEY(capture_id, figure, name, stratum)) WITHOUT ROWID;";
/* clang-format on */

/*
 * Version 7: the fleet (docs/FLEET.md): what a node publishes to the lab's
 * PostgreSQL, and what a lab view keeps of it.
 *
 * fleet_node: one row, whether this database publishes (fleet_dsn is set:
 * the daemon writes it at every start).
 * fleet_ids: a capture's identity in the fleet, a random UUID given when
 * it first reaches a final state (or is backfilled): ids repeat across
 * nodes and restart when a database is made anew, UUIDs never do.
 * fleet_outbox: what is not published yet, oldest first: "publish" rows
 * written by the trigger below in the same transaction as the capture's
 * final state, "delete" rows in the same transaction as its deletion
 * (which also takes back a publish not sent yet: the delete is sent
 * anyway, since that publish may have reached PostgreSQL just before a
 * crash). At most one publish and one delete row per capture: the outbox
 * is bounded by the captures the node has had.
 *
 * The lab view's side, in its own database file (<db>.fleet, made by the
 * same steps): fleet_index mirrors the fleet's capture list (followed in
 * PostgreSQL's change order, seq), cache_id naming the capture's rows
 * once they were copied into this file's own tables to be answered by
 * the store's queries; fleet_nodes the nodes and their URLs; fleet_follow
 * how far the mirror has followed, and of which fleet.
 *
 * The final statuses are common/lifecycle.h's (test_store_fleet checks
 * that each one fires the trigger).
 */
static const char step7[] =
    "CREATE TABLE fleet_node("
    " id INTEGER PRIMARY KEY CHECK(id = 1),"
    " enabled INTEGER NOT NULL DEFAULT 0);"
    "INSERT INTO fleet_node(id, enabled) VALUES(1, 0);"
    "CREATE TABLE fleet_ids("
    " capture_id INTEGER PRIMARY KEY,"
    " uuid TEXT NOT NULL UNIQUE);"
    "CREATE TABLE fleet_outbox("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " capture_id INTEGER NOT NULL,"
    " uuid TEXT NOT NULL,"
    " op TEXT NOT NULL CHECK(op IN ('publish','delete')),"
    " queued_ms INTEGER NOT NULL,"
    " tries INTEGER NOT NULL DEFAULT 0,"
    " last_error TEXT,"
    " UNIQUE(capture_id, op));"
    "CREATE TRIGGER fleet_final AFTER UPDATE OF status ON captures"
    " WHEN new.status IN " STORE__FINAL " AND old.status NOT IN " STORE__FINAL
    " AND (SELECT enabled FROM fleet_node WHERE id = 1)"
    " BEGIN"
    "  INSERT OR IGNORE INTO fleet_ids(capture_id, uuid)"
    "   VALUES(new.id, " STORE__UUID ");"
    "  INSERT OR IGNORE INTO fleet_outbox(capture_id, uuid, op, queued_ms)"
    "   SELECT new.id, uuid, 'publish', " STORE__NOW_MS
    "   FROM fleet_ids WHERE capture_id = new.id;"
    " END;"
    "CREATE TRIGGER fleet_gone AFTER DELETE ON captures"
    " WHEN EXISTS (SELECT 1 FROM fleet_ids WHERE capture_id = old.id)"
    " BEGIN"
    "  DELETE FROM fleet_outbox WHERE capture_id = old.id"
    "   AND op = 'publish';"
    "  INSERT OR IGNORE INTO fleet_outbox(capture_id, uuid, op, queued_ms)"
    "   SELECT old.id, uuid, 'delete', " STORE__NOW_MS
    "   FROM fleet_ids WHERE capture_id = old.id;"
    "  DELETE FROM fleet_ids WHERE capture_id = old.id;"
    " END;"
    "CREATE TABLE fleet_index("
    " lid INTEGER PRIMARY KEY,"
    " node TEXT NOT NULL, uuid TEXT NOT NULL, id INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " kind TEXT NOT NULL, status TEXT NOT NULL, label TEXT, model TEXT,"
    " config TEXT, gpu TEXT, created_at INTEGER, finished_at INTEGER,"
    " verdict TEXT, figures TEXT, brief TEXT NOT NULL,"
    " cache_id INTEGER, cache_bytes INTEGER,"
    " UNIQUE(node, uuid));"
    "CREATE INDEX fleet_index_ref ON fleet_index(node, id, seq);"
    "CREATE INDEX fleet_index_created ON fleet_index(created_at, lid);"
    "CREATE INDEX fleet_index_config ON"
    " fleet_index(config, gpu, finished_at);"
    "CREATE INDEX fleet_index_cached ON fleet_index(cache_id)"
    " WHERE cache_id IS NOT NULL;"
    "CREATE TABLE fleet_nodes("
    " node TEXT PRIMARY KEY, url TEXT, traced_version TEXT,"
    " seen_at INTEGER);"
    "CREATE TABLE fleet_follow("
    " id INTEGER PRIMARY KEY CHECK(id = 1),"
    " fleet TEXT NOT NULL, seq INTEGER NOT NULL);";

/* clang-format off */
/* Version 8 expands the rows of since 8 only. */
#define IN8_1(x)
#define IN8_2(x)
#define IN8_3(x)
#define IN8_4(x)
#define IN8_5(x)
#define IN8_6(x)
#define IN8_7(x)
#define IN8_8(x) x
#define IN8_9(x)
#define IN8_10(x)
#define IN8_11(x)
#define NEW8(key, col, ty, all, since) IN8_##since(NEW_##ty(col))
#define ADD8_RANK(key, col, ty, all, since) IN8_##since(ADD_##ty("ranks", col))

/*
 * Version 8: decode opened up (index/decode/decode.h, docs/DECODE.md). Each
 * rank's completeness (capture traces, replays matched or not, kernels
 * without a launch or an op); device time per step kind by module, layer,
 * op, (layer, module), (op, module) and module kernel; the repeated
 * blocks; the step kinds and their median step by layer, module and
 * kernel. Their step, module, layer and op may be NULL, so the tables
 * keep a rowid.
 */
static const char step8[] =
    TR_SUM_RANK(ADD8_RANK)
    "CREATE TABLE decode_modules(" OF_RANK TR_SUM_DEC_MODULE(NEW8) ");"
    "CREATE INDEX decode_modules_rank ON decode_modules(rank_id);"
    "CREATE TABLE decode_layers(" OF_RANK TR_SUM_DEC_LAYER(NEW8) ");"
    "CREATE INDEX decode_layers_rank ON decode_layers(rank_id);"
    "CREATE TABLE decode_ops(" OF_RANK TR_SUM_DEC_OP(NEW8) ");"
    "CREATE INDEX decode_ops_rank ON decode_ops(rank_id);"
    "CREATE TABLE decode_layer_modules(" OF_RANK
    TR_SUM_DEC_LAYER_MODULE(NEW8) ");"
    "CREATE INDEX decode_layer_modules_rank ON decode_layer_modules(rank_id);"
    "CREATE TABLE decode_op_modules(" OF_RANK TR_SUM_DEC_OP_MODULE(NEW8) ");"
    "CREATE INDEX decode_op_modules_rank ON decode_op_modules(rank_id);"
    "CREATE TABLE decode_kernels(" OF_RANK TR_SUM_DEC_KERNEL(NEW8) ");"
    "CREATE INDEX decode_kernels_rank ON decode_kernels(rank_id);"
    "CREATE TABLE decode_steps(" OF_RANK TR_SUM_DEC_STEP(NEW8)
    ", PRIMARY KEY(rank_id, step)) WITHOUT ROWID;"
    "CREATE TABLE decode_blocks(" OF_RANK TR_SUM_DEC_BLOCK(NEW8) ");"
    "CREATE INDEX decode_blocks_rank ON decode_blocks(rank_id);"
    "CREATE TABLE decode_median(" OF_RANK TR_SUM_DEC_MEDIAN(NEW8) ");"
    "CREATE INDEX decode_median_rank ON decode_median(rank_id);";
/* clang-format on */


/* clang-format off */
/* Version 9 expands the rows of since 9 only. */
#define IN9_1(x)
#define IN9_2(x)
#define IN9_3(x)
#define IN9_4(x)
#define IN9_5(x)
#define IN9_6(x)
#define IN9_7(x)
#define IN9_8(x)
#define IN9_9(x) x
#define IN9_10(x)
#define IN9_11(x)
#define NEW9(key, col, ty, all, since) IN9_##since(NEW_##ty(col))
#define ADD9_RANK(key, col, ty, all, since) IN9_##since(ADD_##ty("ranks", col))
#define ADD9_KERNEL(key, col, ty, all, since)                                \
  IN9_##since(ADD_##ty("kernels", col))
#define ADD9_FAMILY(key, col, ty, all, since)                                \
  IN9_##since(ADD_##ty("families", col))

/*
 * Version 9: the critical path (index/cpath*.c, docs/CRITICAL_PATH.md).
 * Host events and steps analysed on ranks; time on the path and launch
 * cost on kernels and families; per step kind, per step, the picked
 * steps' paths, per kernel and family and kind, the idle culprits (step
 * and culprit may be NULL, so it keeps a rowid), kernel sequences and the
 * median step's kernels.
 */
static const char step9[] =
    TR_SUM_RANK(ADD9_RANK) TR_SUM_KERNEL(ADD9_KERNEL)
    TR_SUM_FAMILY(ADD9_FAMILY)
    "CREATE TABLE critical_kinds(" OF_RANK TR_SUM_CRIT_KIND(NEW9)
    ", PRIMARY KEY(rank_id, step)) WITHOUT ROWID;"
    "CREATE TABLE critical_steps(" OF_RANK TR_SUM_CRIT_STEP(NEW9)
    ", PRIMARY KEY(rank_id, idx)) WITHOUT ROWID;"
    "CREATE TABLE critical_segments(" OF_RANK TR_SUM_CRIT_SEGMENT(NEW9)
    ", PRIMARY KEY(rank_id, idx, seq)) WITHOUT ROWID;"
    "CREATE TABLE kernel_paths(" OF_RANK TR_SUM_KERNEL_PATH(NEW9)
    ", PRIMARY KEY(rank_id, name_id, step)) WITHOUT ROWID;"
    "CREATE TABLE family_paths(" OF_RANK TR_SUM_FAMILY_PATH(NEW9)
    ", PRIMARY KEY(rank_id, family, step)) WITHOUT ROWID;"
    "CREATE TABLE idle_culprits(" OF_RANK TR_SUM_CULPRIT(NEW9) ");"
    "CREATE INDEX idle_culprits_rank ON idle_culprits(rank_id);"
    "CREATE TABLE kernel_sequences(" OF_RANK TR_SUM_SEQUENCE(NEW9)
    ", PRIMARY KEY(rank_id, step, n, sequence)) WITHOUT ROWID;"
    "CREATE TABLE median_sequence(" OF_RANK TR_SUM_MEDIAN_SEQ(NEW9)
    ", PRIMARY KEY(rank_id, step, position)) WITHOUT ROWID;";
/* clang-format on */

/*
 * Version 10: sweeps (docs/SWEEPS.md). sweeps: one row per sweep, its own
 * id space (AUTOINCREMENT, as captures), params its validated request (the
 * points' common members, the ladder, the scenario), status the words of
 * common/lifecycle.h, error {message, point} when the server's death ended
 * it. sweep_points: which captures are its points, hanging off each point
 * (so the fleet publishes it with the capture: docs/FLEET.md), its place
 * and what it runs at; sweep_id is not a foreign key, since a lab view's
 * copy of a point has no sweep row.
 */
static const char step10[] =
    "CREATE TABLE sweeps("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " label TEXT,"
    " params TEXT NOT NULL DEFAULT '{}',"
    " status TEXT NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " started_at INTEGER,"
    " finished_at INTEGER,"
    " error TEXT);"
    "CREATE INDEX sweeps_status ON sweeps(status, id);"
    "CREATE TABLE sweep_points("
    " capture_id INTEGER PRIMARY KEY REFERENCES captures(id)"
    "  ON DELETE CASCADE,"
    " sweep_id INTEGER NOT NULL,"
    " point INTEGER NOT NULL,"
    " conc INTEGER NOT NULL,"
    " isl INTEGER NOT NULL,"
    " osl INTEGER NOT NULL,"
    " UNIQUE(sweep_id, point));";

/* clang-format off */
/* Version 11 expands the rows of since 11 only. */
#define IN11_1(x)
#define IN11_2(x)
#define IN11_3(x)
#define IN11_4(x)
#define IN11_5(x)
#define IN11_6(x)
#define IN11_7(x)
#define IN11_8(x)
#define IN11_9(x)
#define IN11_10(x)
#define IN11_11(x) x
#define NEW11(key, col, ty, all, since) IN11_##since(NEW_##ty(col))
#define ADD11_RANK(key, col, ty, all, since)                               \
  IN11_##since(ADD_##ty("ranks", col))

/*
 * Version 11: what ATOM_PROFILER_MORE buys (docs/PERF.md). Each rank's
 * roof and op completeness; its op groups with their work, kernel time and
 * roof; its memory per device, over time and by the ops that allocated;
 * its kernel time by source line.
 */
static const char step11[] =
    TR_SUM_RANK(ADD11_RANK)
    "CREATE TABLE op_perf(" OF_RANK TR_SUM_OP_PERF(NEW11)
    ", PRIMARY KEY(rank_id, op, params, recompute)) WITHOUT ROWID;"
    "CREATE TABLE memory(" OF_RANK TR_SUM_MEMORY(NEW11)
    ", PRIMARY KEY(rank_id, device)) WITHOUT ROWID;"
    "CREATE TABLE memory_timeline(" OF_RANK TR_SUM_MEMORY_TIMELINE(NEW11)
    ", PRIMARY KEY(rank_id, device, idx)) WITHOUT ROWID;"
    "CREATE TABLE memory_ops(" OF_RANK TR_SUM_MEMORY_OP(NEW11) ");"
    "CREATE INDEX memory_ops_rank ON memory_ops(rank_id);"
    "CREATE TABLE sources(" OF_RANK TR_SUM_DEC_SOURCE(NEW11) ");"
    "CREATE INDEX sources_rank ON sources(rank_id);";
/* clang-format on */

const char *const store__migrations[] = { step1, step2,  step3, step4,
                                          step5, step6,  step7, step8,
                                          step9, step10, step11 };
const int store__schema_version =
    (int)(sizeof(store__migrations) / sizeof(store__migrations[0]));
