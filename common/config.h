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
  char **import_roots; /* NULL-terminated; empty: imports refused */
  char *auth_token;    /* "" when unset */
  int index_jobs;
  char **env_allow;     /* NULL-terminated name prefixes */
  char *models_json;    /* ATOM's models.json for presets; "" when unset */
  char *category_rules; /* extra category rules file; "" when unset */
  int max_kernel_names; /* distinct kernel names kept per rank */
  int stop_timeout_s;   /* the stop script's deadline */
  int launch_timeout_s; /* the start script's deadline */
  /* ATOM_PROFILER_TIMEOUT of the server when neither the capture's env nor
   * traced's own environment sets it (ATOM's default: 300 s). */
  int profiler_timeout_s;
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

/* True when name starts with one of cfg->env_allow. */
bool cfg_env_allowed(const struct cfg *cfg, const char *name);

/* True when the real path `real` lies inside one of cfg->import_roots. */
bool cfg_import_allowed(const struct cfg *cfg, const char *real);

void cfg_free(struct cfg *cfg);

#endif
