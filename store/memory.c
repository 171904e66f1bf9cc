/*
 * The memory timeline's route (GET /captures/<id>/memory/timeline,
 * docs/ANALYSIS.md "Memory"): each rank's stored buckets of each device
 * (TR_MEMORY_BUCKETS over the span, only buckets with events) merged into
 * at most ?buckets= rows a device: bucket i goes to row
 * i * buckets / TR_MEMORY_BUCKETS. A row keeps the events' own
 * figures: their count, the least and largest Total Allocated, the
 * largest Total Reserved, from its first bucket's start to its last's
 * end. All ranks: every rank's rows, each with its rank.
 */
#include "store/store_int.h"

#define MEMORY_TIMELINE_DEFAULT 256

static int memory_timeline_rows(struct store *st, const void *ctx,
                                const struct store_query *q, json_t **out,
                                struct tr_err *err)
{
  static const char sql[] =
      "SELECT r.rank AS rank, t.device AS device, min(t.idx) AS \"index\","
      " min(t.start_ns) AS start_ns, max(t.end_ns) AS end_ns,"
      " sum(t.events) AS events,"
      " min(t.allocated_min_bytes) AS allocated_min_bytes,"
      " max(t.allocated_max_bytes) AS allocated_max_bytes,"
      " max(t.reserved_max_bytes) AS reserved_max_bytes"
      " FROM ranks r JOIN memory_timeline t ON t.rank_id = r.id"
      " WHERE r.capture_id = ?1 AND r.status = 'done'"
      " AND (?2 < 0 OR r.rank = ?2)"
      " GROUP BY r.rank, t.device, t.idx * ?3 / ?4"
      " ORDER BY r.rank, t.device, min(t.idx)";
  sqlite3_stmt *s;
  int rc = store__prep(st, sql, &s, err, "%ld%d%d%d", q->capture_id, q->rank,
                       q->buckets > 0 ? q->buckets : MEMORY_TIMELINE_DEFAULT,
                       TR_MEMORY_BUCKETS);

  (void)ctx;
  if (rc < 0)
    return rc;
  if ((rc = store__rows(st, s, out, err)) == 0)
    store__rank_key(q, *out, "rank");
  return rc;
}

const struct store__sql store__sql_memory_timeline = {
  memory_timeline_rows, NULL, store__check_buckets, NULL
};
