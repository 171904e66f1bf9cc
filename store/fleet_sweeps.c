/*
 * Sweeps in a lab view (docs/SWEEPS.md, docs/FLEET.md): a node publishes
 * each point of a sweep as the capture it is, its brief saying its sweep
 * (the capture object's "sweep"), so the lab's mirror of the fleet
 * (fleet_index) knows every node's sweeps without a table of its own: a
 * sweep of the fleet is its node and the node's sweep id ("node:id"),
 * and its points are that node's published captures naming it.
 */
#include "store/store_int.h"

#define SWEEP_OF(i) "json_extract(" i ".brief, '$.sweep.id')"

int store_fleet_sweeps(struct store *st, int limit, json_t **out,
                       struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(
      st,
      "SELECT i.node || ':' || " SWEEP_OF(
          "i") " AS ref, i.node,"
               " " SWEEP_OF(
                   "i") " AS id,"
                        " min(json_extract(i.brief, '$.params.model')) AS "
                        "model,"
                        " count(*) AS points_published,"
                        " sum(i.status = 'done') AS points_done,"
                        " json_group_array(json_extract(i.brief, "
                        "'$.sweep.conc')) AS conc_json,"
                        " min(i.created_at) AS created_at, max(i.finished_at) "
                        "AS finished_at"
                        " FROM fleet_index i WHERE " SWEEP_OF(
                            "i") " IS NOT NULL"
                                 " GROUP BY i.node, " SWEEP_OF(
                                     "i") " ORDER BY min(i.created_at) DESC "
                                          "LIMIT ?1",
      &s, err, "%d", limit > 0 ? limit : 50);

  *out = NULL;
  return rc < 0 ? rc : store__rows(st, s, out, err);
}

int store_fleet_sweep_points(struct store *st, const char *node, int64_t sweep,
                             json_t **out, struct tr_err *err)
{
  sqlite3_stmt *s;
  int rc = store__prep(
      st,
      "SELECT i.id FROM fleet_index i WHERE i.node = ?1"
      " AND " SWEEP_OF(
          "i") " = ?2 AND i.seq = (SELECT max(j.seq)"
               " FROM fleet_index j WHERE j.node = i.node AND j.id = i.id)"
               " ORDER BY json_extract(i.brief, '$.sweep.point')",
      &s, err, "%s%ld", node, sweep);

  *out = NULL;
  return rc < 0 ? rc : store__rows(st, s, out, err);
}
