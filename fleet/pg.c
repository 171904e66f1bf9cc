/*
 * libpq connections as traced makes them: every one blocking and bounded
 * (connect_timeout, statement_timeout, TCP keepalives, tcp_user_timeout),
 * so that a server that went away costs a thread seconds, never hangs it
 * (https://www.postgresql.org/docs/15/libpq-connect.html).
 */
#include <stdio.h>
#include <string.h>

#include "fleet/fleet_int.h"

int fleet_dsn_check(const char *dsn, struct tr_err *err)
{
  char *why = NULL;
  PQconninfoOption *opts = PQconninfoParse(dsn, &why);
  bool password = false;
  int rc = 0;

  if (opts == NULL) {
    if (why != NULL)
      why[strcspn(why, "\n")] = '\0'; /* libpq ends it with a newline */
    rc = tr_err_set(err, TR_EINVAL, "fleet_dsn",
                    "fleet_dsn is not a libpq connection string: %s",
                    why != NULL ? why : "out of memory");
    PQfreemem(why);
    return rc;
  }
  for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
    if (strcmp(o->keyword, "password") == 0 && o->val != NULL)
      password = true;
  PQconninfoFree(opts);
  if (password)
    return tr_err_set(err, TR_EINVAL, "fleet_dsn",
                      "fleet_dsn holds a password: put it in a file only "
                      "traced reads (passfile=FILE, or ~/.pgpass) instead");
  return 0;
}

/* libpq's message of one line: its first. */
static void first_line(char *msg)
{
  msg[strcspn(msg, "\n")] = '\0';
}

int fleet_pg_connect(const char *dsn, const char *app, int connect_s,
                     int statement_ms, PGconn **out, struct tr_err *err)
{
  char timeout[16], options[128], user_timeout[16], name[128];
  const char *const keys[] = { "connect_timeout",
                               "options",
                               "keepalives",
                               "keepalives_idle",
                               "keepalives_interval",
                               "keepalives_count",
                               "tcp_user_timeout",
                               "application_name",
                               "dbname",
                               NULL };
  const char *vals[10];
  PGconn *c;

  snprintf(timeout, sizeof(timeout), "%d", connect_s < 2 ? 2 : connect_s);
  snprintf(options, sizeof(options),
           "-c statement_timeout=%d -c lock_timeout=%d"
           " -c idle_in_transaction_session_timeout=%d",
           statement_ms, statement_ms, 2 * statement_ms);
  snprintf(user_timeout, sizeof(user_timeout), "%d", statement_ms);
  snprintf(name, sizeof(name), "traced %s", app);
  vals[0] = timeout;
  vals[1] = options;
  vals[2] = "1";
  vals[3] = "10";
  vals[4] = "5";
  vals[5] = "3";
  vals[6] = user_timeout;
  vals[7] = name;
  vals[8] = dsn; /* expanded in place: its settings win over those above */
  vals[9] = NULL;
  c = PQconnectdbParams(keys, vals, 1);
  if (c == NULL)
    return tr_err_set(err, TR_ENOMEM, "fleet_dsn", "libpq: out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    char msg[400];

    snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c));
    first_line(msg);
    PQfinish(c);
    return tr_err_set(err, TR_EIO, "fleet_dsn",
                      "cannot connect to the fleet's PostgreSQL: %s", msg);
  }
  *out = c;
  return 0;
}

int fleet_pg_exec(PGconn *c, const char *sql, int n, const char *const *vals,
                  PGresult **res, struct tr_err *err)
{
  /* Without parameters, the simple protocol: sql may hold several
   * statements (the migrations do). */
  PGresult *r = n == 0 ? PQexec(c, sql)
                       : PQexecParams(c, sql, n, NULL, vals, NULL, NULL, 0);
  ExecStatusType st = PQresultStatus(r);
  char msg[400];
  int rc;

  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
    if (res != NULL)
      *res = r;
    else
      PQclear(r);
    return 0;
  }
  snprintf(msg, sizeof(msg), "%s",
           r != NULL ? PQresultErrorMessage(r) : PQerrorMessage(c));
  first_line(msg);
  if (msg[0] == '\0')
    snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c));
  first_line(msg);
  rc = tr_err_set(err, TR_EIO,
                  r != NULL && PQresultErrorField(r, PG_DIAG_SQLSTATE)
                      ? PQresultErrorField(r, PG_DIAG_SQLSTATE)
                      : "",
                  "%s", msg);
  PQclear(r);
  return rc;
}

bool fleet_pg_broken(PGconn *c)
{
  return c == NULL || PQstatus(c) != CONNECTION_OK;
}
