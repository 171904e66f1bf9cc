/*
 * cfg: traced's configuration, from a `key = value` file and `--key value`
 * command-line overrides (docs/API.md, "Configuration keys"). Loaded once at
 * start-up on the main thread; read-only afterwards, so any thread may read.
 */
#ifndef TR_CONFIG_H
#define TR_CONFIG_H

#include <stdbool.h>

#include "common/tr.h"

/* The default of max_kernel_names: distinct kernel names kept per rank.
 * A trace of made-up names then costs the daemon under 128 MB (each name
 * kept is a few KB of summary rows: tests/test_name_bomb.py). */
#define CFG_MAX_KERNEL_NAMES 10000

enum cfg_profile_control { CFG_PROFILE_BENCH, CFG_PROFILE_DAEMON };

struct cfg {
  char *listen; /* "127.0.0.1:7700" */
  char *db;
  char *trace_root;
  char *atom_scripts;
  char *start_script; /* full paths, derived from atom_scripts unless set */
  char *bench_script;
  char *stop_script;
  int atom_port;
  char *atom_host;
  char *server_log;
  char *bench_result;
  int ready_timeout_s;
  int ready_poll_s;
  int bench_timeout_s;
  int export_poll_s;
  int export_max_polls;
  enum cfg_profile_control profile_control;
  char **import_roots;   /* NULL-terminated; empty: imports refused */
  char *auth_token;      /* "" when unset */
  char *auth_token_file; /* where auth_token is read from; "" when unset */
  char **allowed_hosts;  /* NULL-terminated names the Host header may give
                            besides the listen address and loopback */
  int index_jobs;
  char **env_allow;       /* NULL-terminated name prefixes */
  char *models_json;      /* ATOM's models.json for presets; "" when unset */
  char *category_rules;   /* extra category rules file; "" when unset */
  int max_queued;         /* captures and imports waiting, at most */
  int max_params_bytes;   /* a capture request, validated, at most */
  int list_limit;         /* GET /captures' default limit */
  int list_limit_max;     /* and its largest */
  int table_limit;        /* the table routes' and /diff's default limit */
  int table_limit_max;    /* and their largest */
  int max_response_bytes; /* a JSON answer, at most */
  int max_connections;    /* HTTP connections at once, in all */
  int max_connections_per_client; /* from one client address */
  int request_timeout_s;          /* to receive a request's headers and body */
  int idle_timeout_s;             /* a connection silent this long is closed */
  int max_kernel_names;           /* distinct kernel names kept per rank */
  int stop_timeout_s;             /* the stop script's deadline */
  int launch_timeout_s;           /* the start script's deadline */
  /* ATOM_PROFILER_TIMEOUT of the server when neither the capture's env nor
   * traced's own environment sets it (ATOM's default: 300 s). */
  int profiler_timeout_s;
  /* Answers about done captures kept in memory (api/cache.c), MiB; 0:
   * none (every request goes to the store). */
  int answer_cache_mb;
  /* Regression verdicts (store/verdict.c): a change counts only beyond
   * max(this, the noise band), in percent. */
  int regression_threshold_pct;
  /* POSTed the verdict of every capture and import that finishes (daemon/
   * webhook.c); "" when unset. http:// or https:// only. */
  char *webhook_url;
  int webhook_timeout_s; /* one attempt, at most */
  int webhook_retries;   /* attempts after the first, backing off */
  /* The fleet (docs/FLEET.md): the lab's PostgreSQL as a libpq conninfo
   * without a password ("" when unset: nothing is published); this
   * node's name in it (default: the host name) and the URL its raw traces
   * and slices are fetched from (default: http://<listen>); fleet_view
   * serves the fleet's captures too. */
  char *fleet_dsn;
  char *node_name;
  char *node_url;
  bool fleet_view;
  int fleet_outbox_max_age_s; /* /healthz degraded beyond */
  int fleet_backfill_per_s;   /* old captures put in the outbox a second */
  int fleet_timeout_s;        /* a publish or a migration, at most */
  int fleet_read_timeout_ms;  /* a lab view's read of PostgreSQL */
  int fleet_cache_mb;         /* the lab view's copies of captures */
};

/* Fills cfg with the defaults of docs/API.md. Caller frees with cfg_free(). */
void cfg_defaults(struct cfg *cfg);

/* Reads FILE over cfg. Unknown keys and bad values fail with err naming
 * the key and the line. */
int cfg_load_file(struct cfg *cfg, const char *path, struct tr_err *err);

/* Sets one key ("ready_timeout_s" or "ready-timeout-s") from text. */
int cfg_set(struct cfg *cfg, const char *key, const char *value,
            struct tr_err *err);

/* Checks the whole configuration (ports, timeouts, auth on non-loopback
 * listen) and derives the script paths. */
int cfg_finish(struct cfg *cfg, struct tr_err *err);

/* True when addr (numeric text, no brackets) is a loopback address:
 * 127.0.0.0/8, ::1, ::ffff:127.x. A name is never loopback here. */
bool cfg_address_loopback(const char *addr);

/* True when cfg->listen's host is a loopback address or "localhost". */
bool cfg_listen_loopback(const struct cfg *cfg);

/* Why no request may set the variable name (a static phrase: "it names a
 * library to load"), whatever env_allow says, with the matching pattern
 * of the built-in deny list ("*_LIB") in *pattern (may be NULL); NULL
 * when the list does not forbid it. */
const char *cfg_env_denied(const char *name, const char **pattern);

/* True when name starts with one of cfg->env_allow and the deny list does
 * not forbid it. */
bool cfg_env_allowed(const struct cfg *cfg, const char *name);

/* The one of cfg->import_roots (resolved at cfg_finish()) that the real
 * path `real` lies inside, or NULL. Borrowed from cfg. */
const char *cfg_import_root(const struct cfg *cfg, const char *real);

/* Overwrites the value of --auth-token in argv (with '*'), so that ps and
 * /proc/<pid>/cmdline no longer show it. After the arguments are read. */
void cfg_hide_args(int argc, char **argv);

void cfg_free(struct cfg *cfg);

#endif
