/*
 * The fleet's schema in PostgreSQL, as versioned migrations: step i takes
 * the schema from version i to i+1 (fleet.schema_migrations records each
 * version applied). Applied in one transaction under an advisory lock, so
 * two nodes starting at once never race: the second waits, then finds the
 * work done. Never edit a released step: append one.
 *
 * Who may do what (docs/FLEET.md): the role that migrates owns the
 * tables; traced_node's members (a node's role, named as the node) read
 * and write only their own node's rows (row-level security: node =
 * current_user); traced_reader's members (a lab view) read everything and
 * write nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_int.h"

/*
 * Version 1.
 *
 * nodes: one row per node that published, with the URL its raw traces
 * are fetched from.
 * captures: one row per capture of a node, keyed by the node and the
 * capture's UUID (ids repeat across nodes and restart when a node's
 * database is made anew); the columns the lab view lists and filters by,
 * the capture object without its ranks (capture), the trend's figures;
 * deleted: a tombstone, kept so that a lab view following the changes
 * hears of the delete; seq: the change order, given at the end of each
 * transaction under FLEET_LOCK_SEQ.
 * capture_tables: a capture's rows, one row per store table, as the JSON
 * text of an array of {column: value} (store_fleet_export()). Text, not
 * json or jsonb: it is stored and read back whole, and PostgreSQL's JSON
 * parse of it cost more than the whole publish otherwise (a capture's
 * timeline alone is 4096 rows a rank); a query that wants its members
 * casts it (json_array_elements(rows::json)). lz4 where the server has
 * it: several times faster than pglz at about the same size.
 */
static const char v1[] =
    "DO $$ BEGIN"
    " IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traced_node')"
    " THEN CREATE ROLE traced_node NOLOGIN; END IF;"
    " IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traced_reader')"
    " THEN CREATE ROLE traced_reader NOLOGIN; END IF;"
    " END $$;"
    "CREATE TABLE fleet.meta(key text PRIMARY KEY, value text NOT NULL);"
    "INSERT INTO fleet.meta VALUES ('fleet_id', gen_random_uuid()::text);"
    "CREATE TABLE fleet.nodes("
    " node text PRIMARY KEY,"
    " url text,"
    " traced_version text,"
    " seen_at timestamptz NOT NULL DEFAULT now());"
    "CREATE SEQUENCE fleet.change_seq;"
    "CREATE TABLE fleet.captures("
    " node text NOT NULL,"
    " uuid uuid NOT NULL,"
    " id bigint NOT NULL,"
    " seq bigint NOT NULL DEFAULT 0,"
    " deleted boolean NOT NULL DEFAULT false,"
    " kind text NOT NULL,"
    " status text NOT NULL,"
    " label text,"
    " model text,"
    " config text,"
    " gpu text,"
    " created_at timestamptz,"
    " finished_at timestamptz,"
    " verdict text,"
    " figures jsonb,"
    " capture jsonb,"
    " store_version int NOT NULL,"
    " traced_version text,"
    " published_at timestamptz NOT NULL DEFAULT now(),"
    " deleted_at timestamptz,"
    " PRIMARY KEY (node, uuid));"
    "CREATE INDEX captures_seq ON fleet.captures(seq);"
    "CREATE INDEX captures_ref ON fleet.captures(node, id);"
    "CREATE INDEX captures_config ON fleet.captures(config, gpu, finished_at);"
    "CREATE TABLE fleet.capture_tables("
    " node text NOT NULL,"
    " uuid uuid NOT NULL,"
    " tbl text NOT NULL,"
    " rows text NOT NULL,"
    " PRIMARY KEY (node, uuid, tbl),"
    " FOREIGN KEY (node, uuid) REFERENCES fleet.captures ON DELETE CASCADE);"
    "DO $$ BEGIN ALTER TABLE fleet.capture_tables ALTER COLUMN rows"
    " SET COMPRESSION lz4; EXCEPTION WHEN OTHERS THEN NULL; END $$;"
    "ALTER TABLE fleet.nodes ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE fleet.captures ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE fleet.capture_tables ENABLE ROW LEVEL SECURITY;"
    "CREATE POLICY own_rows ON fleet.nodes TO traced_node"
    " USING (node = current_user) WITH CHECK (node = current_user);"
    "CREATE POLICY own_rows ON fleet.captures TO traced_node"
    " USING (node = current_user) WITH CHECK (node = current_user);"
    "CREATE POLICY own_rows ON fleet.capture_tables TO traced_node"
    " USING (node = current_user) WITH CHECK (node = current_user);"
    "CREATE POLICY read_all ON fleet.nodes FOR SELECT TO traced_reader"
    " USING (true);"
    "CREATE POLICY read_all ON fleet.captures FOR SELECT TO traced_reader"
    " USING (true);"
    "CREATE POLICY read_all ON fleet.capture_tables FOR SELECT"
    " TO traced_reader USING (true);"
    "GRANT USAGE ON SCHEMA fleet TO traced_node, traced_reader;"
    "GRANT SELECT ON fleet.schema_migrations, fleet.meta"
    " TO traced_node, traced_reader;"
    "GRANT SELECT, INSERT, UPDATE, DELETE ON fleet.nodes, fleet.captures,"
    " fleet.capture_tables TO traced_node;"
    "GRANT USAGE ON SEQUENCE fleet.change_seq TO traced_node;"
    "GRANT SELECT ON fleet.nodes, fleet.captures, fleet.capture_tables"
    " TO traced_reader;";

static const char *const steps[] = { v1 };
const int fleet_schema_version = (int)(sizeof(steps) / sizeof(steps[0]));

static int exec(PGconn *c, const char *sql, struct tr_err *err)
{
  return fleet_pg_exec(c, sql, 0, NULL, NULL, err);
}

/* The first column of the first row as an integer (0: none or null). */
static int64_t first_int(PGresult *r)
{
  return PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)
             ? strtoll(PQgetvalue(r, 0, 0), NULL, 10)
             : 0;
}

int fleet_schema_have(PGconn *c, int *have, struct tr_err *err)
{
  PGresult *r = NULL;
  int rc = fleet_pg_exec(c,
                         "SELECT to_regclass('fleet.schema_migrations')"
                         " IS NOT NULL",
                         0, NULL, &r, err);
  bool exists = rc == 0 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;

  PQclear(r);
  r = NULL;
  if (rc == 0 && exists)
    rc = fleet_pg_exec(c, "SELECT max(version) FROM fleet.schema_migrations", 0,
                       NULL, &r, err);
  if (rc == 0)
    *have = exists ? (int)first_int(r) : 0;
  PQclear(r);
  return rc;
}

static int newer(int have, struct tr_err *err)
{
  return tr_err_set(err, TR_ECONFLICT, "fleet_dsn",
                    "the fleet's schema is version %d, newer than this "
                    "traced's %d: upgrade traced (nothing is lost: "
                    "captures wait in the outbox)",
                    have, fleet_schema_version);
}

/* Inside the transaction, under the lock: the missing steps. */
static int migrate_in(PGconn *c, int *from, struct tr_err *err)
{
  int rc = exec(c,
                "CREATE SCHEMA IF NOT EXISTS fleet;"
                "CREATE TABLE IF NOT EXISTS fleet.schema_migrations("
                " version int PRIMARY KEY,"
                " applied_at timestamptz NOT NULL DEFAULT now(),"
                " traced_version text)",
                err);

  if (rc == 0)
    rc = fleet_schema_have(c, from, err);
  if (rc == 0 && *from > fleet_schema_version)
    rc = newer(*from, err);
  for (int v = *from; rc == 0 && v < fleet_schema_version; v++) {
    char version[16];
    const char *vals[] = { version, TRACED_VERSION };

    snprintf(version, sizeof(version), "%d", v + 1);
    rc = exec(c, steps[v], err);
    if (rc == 0)
      rc = fleet_pg_exec(c,
                         "INSERT INTO fleet.schema_migrations(version,"
                         " traced_version) VALUES($1, $2)",
                         2, vals, NULL, err);
  }
  return rc;
}

int fleet_schema_migrate(PGconn *c, int *from, struct tr_err *err)
{
  char lock[64];
  const char *vals[] = { lock };
  int rc;

  snprintf(lock, sizeof(lock), "%lld", FLEET_LOCK_MIGRATE);
  rc = fleet_pg_exec(c, "SELECT pg_advisory_lock($1)", 1, vals, NULL, err);
  if (rc < 0)
    return rc;
  rc = exec(c, "BEGIN", err);
  if (rc == 0)
    rc = migrate_in(c, from, err);
  if (rc == 0)
    rc = exec(c, "COMMIT", err);
  else
    PQclear(PQexec(c, "ROLLBACK"));
  PQclear(PQexecParams(c, "SELECT pg_advisory_unlock($1)", 1, NULL, vals, NULL,
                       NULL, 0));
  return rc;
}

int fleet_schema_ready(PGconn *c, bool may_migrate, struct tr_err *err)
{
  struct tr_err why = { 0 };
  int have = 0, from = 0;
  int rc = fleet_schema_have(c, &have, err);

  if (rc < 0 || have == fleet_schema_version)
    return rc;
  if (have > fleet_schema_version)
    return newer(have, err);
  if (may_migrate && fleet_schema_migrate(c, &from, &why) == 0)
    return 0;
  if (why.code == TR_ECONFLICT)
    return tr_err_set(err, why.code, why.field, "%s", why.msg);
  return tr_err_set(err, TR_ECONFLICT, "fleet_dsn",
                    "the fleet's schema is version %d, this traced needs "
                    "%d%s%s: run `traced fleet migrate` as the schema's "
                    "owner",
                    have, fleet_schema_version,
                    why.code ? " and could not migrate it: " : "", why.msg);
}

int fleet_schema_id(PGconn *c, char *id, struct tr_err *err)
{
  PGresult *r = NULL;
  int rc =
      fleet_pg_exec(c, "SELECT value FROM fleet.meta WHERE key = 'fleet_id'", 0,
                    NULL, &r, err);

  if (rc == 0 && PQntuples(r) != 1)
    rc = tr_err_set(err, TR_EIO, "fleet_dsn", "the fleet has no fleet_id");
  if (rc == 0)
    snprintf(id, 64, "%s", PQgetvalue(r, 0, 0));
  PQclear(r);
  return rc;
}
