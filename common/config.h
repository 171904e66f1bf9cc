/*
 * cfg: traced's configuration, from a `key = value` file and `--key value`
 * command-line overrides (docs/API.md, "Configuration keys"). Loaded once at
 * start-up on the main thread; read-only afterwards, so any thread may read.
 *
 * One row per setting (Redis's standardConfig): CFG_SETTINGS below. The
 * struct's members, the defaults, the parsing of file and argv, the bounds,
 * `traced --help` and the checks all come from the rows; config/traced.conf
 * documents each (test_config fails when it lists a key that is not a row,
 * misses one, or says another default). docs/ARCHITECTURE.md says what
 * adding a setting touches.
 */
#ifndef TR_CONFIG_H
#define TR_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "common/tr.h"

/* The default of max_kernel_names: distinct kernel names kept per rank.
 * A trace of made-up names then costs the daemon under 128 MB (each name
 * kept is a few KB of summary rows: tests/test_name_bomb.py). */
#define CFG_MAX_KERNEL_NAMES 10000

#define CFG_ENV_ALLOW                                                          \
  "ATOM_ AITER_ HSA_ HIP_ AMD_ V4_ NCCL_ RCCL_ MIOPEN_ TORCH_ PYTORCH_"

/* profile_control's values, in the order of its row. */
enum cfg_profile_control { CFG_PROFILE_BENCH, CFG_PROFILE_DAEMON };

/*
 * XX(name, TYPE, default, check, help): a setting.
 *   TYPE     STR()            text                      (char *)
 *            INT(lo, hi)      an integer in [lo, hi]    (int)
 *            LIST(seps)       words split at any of seps (char **,
 *                             NULL-terminated)
 *            ENUM(v0, v1...)  one of the words, stored as its index (int)
 *   default  the value as the file would give it; NULL: none (the check
 *            derives it)
 *   check    a function of config.c, run by cfg_finish() once every value
 *            is read (in row order): checks the value against the others,
 *            derives what it must; NULL: none
 *   help     one line for `traced --help`
 */
#define CFG_SETTINGS(XX)                                                       \
  XX(listen, STR(), "127.0.0.1:7700", check_listen,                            \
     "address:port of the HTTP API (not loopback: auth_token needed)")         \
  XX(auth_token, STR(), "", check_auth,                                        \
     "a bearer token every request but GET /healthz must carry")               \
  XX(auth_token_file, STR(), "", NULL,                                         \
     "a file only root reads holding auth_token (mode 0600)")                  \
  XX(allowed_hosts, LIST(" ,"), "", NULL,                                      \
     "names the Host header may give besides the listen address")              \
  XX(max_connections, INT(16, 1000000), "512", NULL,                           \
     "HTTP connections at once, in all")                                       \
  XX(max_connections_per_client, INT(1, 1000000), "64", NULL,                  \
     "HTTP connections at once from one address")                              \
  XX(request_timeout_s, INT(1, 3600), "10", NULL,                              \
     "seconds for a request's headers and body to arrive")                     \
  XX(idle_timeout_s, INT(1, 86400), "60", NULL,                                \
     "seconds a silent connection is kept")                                    \
  XX(db, STR(), "/var/lib/traced/traced.db", NULL, "the SQLite database")      \
  XX(trace_root, STR(), "/var/lib/traced/traces", NULL,                        \
     "each capture's trace folder <trace_root>/<id>, logs under logs/")        \
  XX(atom_scripts, STR(), "/app/ATOM/scripts", NULL,                           \
     "the folder of ATOM's start, bench and stop scripts")                     \
  XX(start_script, STR(), "", default_script,                                  \
     "the start script (default: start_atom_server.sh in atom_scripts)")       \
  XX(bench_script, STR(), "", default_script,                                  \
     "the bench script (default: run_benchmark.sh in atom_scripts)")           \
  XX(stop_script, STR(), "", default_script,                                   \
     "the stop script (default: stop_atom_server.sh in atom_scripts)")         \
  XX(atom_host, STR(), "127.0.0.1", NULL, "the ATOM server's host")            \
  XX(atom_port, INT(1, 65535), "8000", NULL, "the ATOM server's port")         \
  XX(server_log, STR(), "/app/logs_claude/atom_server.log", NULL,              \
     "ATOM's server log, scanned for fatal markers and export lines")          \
  XX(bench_result, STR(), "/app/logs_claude/benchmark.json", NULL,             \
     "the bench's result file, kept with the capture")                         \
  XX(models_json, STR(), "", NULL,                                             \
     "ATOM CI's models.json: presets by model (empty: none)")                  \
  XX(stop_timeout_s, INT(1, 86400), "120", NULL,                               \
     "seconds the stop script may take")                                       \
  XX(launch_timeout_s, INT(1, 86400), "300", NULL,                             \
     "seconds the start script may take")                                      \
  XX(ready_timeout_s, INT(1, 86400), "900", NULL,                              \
     "seconds the server may take to answer GET /v1/models")                   \
  XX(ready_poll_s, INT(1, 3600), "5", NULL,                                    \
     "seconds between two GET /v1/models")                                     \
  XX(bench_timeout_s, INT(1, 604800), "3600", NULL,                            \
     "seconds the benchmark may take")                                         \
  XX(export_poll_s, INT(1, 3600), "10", NULL,                                  \
     "seconds between two looks at the exported traces")                       \
  XX(export_max_polls, INT(1, 100000), "60", NULL,                             \
     "looks at the exported traces before the export fails")                   \
  XX(profile_control, ENUM("bench", "daemon"), "bench", NULL,                  \
     "who starts the profiler: the bench's --profile, or traced")              \
  XX(profiler_timeout_s, INT(1, 86400), "300", NULL,                           \
     "ATOM_PROFILER_TIMEOUT of the server, unless set otherwise")              \
  XX(index_jobs, INT(1, 256), NULL, default_jobs,                              \
     "ranks indexed at once (default: the number of cores)")                   \
  XX(category_rules, STR(), "", NULL,                                          \
     "a file of category and family rules before the built-in ones")           \
  XX(max_kernel_names, INT(100, 10000000), "10000", NULL,                      \
     "distinct kernel names (and launch shapes) kept per rank")                \
  XX(regression_threshold_pct, INT(0, 1000), "5", NULL,                        \
     "a verdict's change counts beyond this percentage (and the noise)")       \
  XX(webhook_url, STR(), "", check_webhook,                                    \
     "http(s) URL POSTed each finished capture's verdict (empty: none)")       \
  XX(webhook_timeout_s, INT(1, 600), "10", NULL,                               \
     "seconds one webhook attempt may take")                                   \
  XX(webhook_retries, INT(0, 10), "3", NULL,                                   \
     "webhook attempts after the first, 1, 2, 4... s apart")                   \
  XX(max_queued, INT(1, 1000000), "256", NULL,                                 \
     "captures and imports waiting, at most (429 beyond)")                     \
  XX(max_params_bytes, INT(1024, 16 << 20), "65536", NULL,                     \
     "a capture request, validated, at most (413 beyond)")                     \
  XX(list_limit, INT(1, 1000000), "50", NULL, "GET /captures' default limit")  \
  XX(list_limit_max, INT(1, 1000000), "500", check_list_limit,                 \
     "GET /captures' largest limit")                                           \
  XX(table_limit, INT(1, 1000000), "100", NULL,                                \
     "the default limit of the tables whose rows grow, and of /diff")          \
  XX(table_limit_max, INT(1, 1000000), "1000", check_table_limit,              \
     "the largest limit of every table (the others' default)")                 \
  XX(max_response_bytes, INT(65536, 1 << 30), "16777216", NULL,                \
     "a JSON answer, at most (413 beyond)")                                    \
  XX(slice_min_bytes_per_s, INT(0, 1 << 30), "65536", NULL,                    \
     "a slice's client reading slower while traced waits for it loses it")     \
  XX(slice_window_s, INT(1, 3600), "20", NULL,                                 \
     "seconds over which slice_min_bytes_per_s is measured")                   \
  XX(slice_timeout_s, INT(1, 86400), "1800", NULL,                             \
     "seconds a slice may take, read or not")                                  \
  XX(answer_cache_mb, INT(0, 65536), "64", NULL,                               \
     "MiB of answers about done captures kept in memory (0: none)")            \
  XX(import_roots, LIST(":"), "", resolve_roots,                               \
     "folders POST /imports may read from (empty: imports refused)")           \
  XX(env_allow, LIST(" ,"), CFG_ENV_ALLOW, NULL,                               \
     "name prefixes a capture request's env may set")

#define CFG_CTYPE_STR()       char *
#define CFG_CTYPE_INT(lo, hi) int
#define CFG_CTYPE_LIST(seps)  char **
#define CFG_CTYPE_ENUM(...)   int

struct cfg {
#define CFG_MEMBER_(name, TYPE, dflt, check, help) CFG_CTYPE_##TYPE name;
  CFG_SETTINGS(CFG_MEMBER_)
#undef CFG_MEMBER_
};

/* Fills cfg with the rows' defaults. Caller frees with cfg_free(). */
void cfg_defaults(struct cfg *cfg);

/* Reads FILE over cfg. Unknown keys and bad values fail with err naming
 * the key and the line, never the value (it may be a secret). */
int cfg_load_file(struct cfg *cfg, const char *path, struct tr_err *err);

/* Sets one key ("ready_timeout_s" or "ready-timeout-s") from text. err
 * names the key alone. */
int cfg_set(struct cfg *cfg, const char *key, const char *value,
            struct tr_err *err);

/* Runs each row's check once every value is read (bounds between
 * settings, auth on a non-loopback listen, derived script paths and
 * defaults, resolved import roots). */
int cfg_finish(struct cfg *cfg, struct tr_err *err);

/* The settings' names, in row order, NULL-terminated. */
extern const char *const cfg_names[];

/* Setting name's value in cfg as the file would give it (a list joined by
 * its first separator), into buf of size bytes (cut to fit). TR_EINVAL
 * for an unknown name. */
int cfg_text(const struct cfg *cfg, const char *name, char *buf, size_t size);

/* `traced --help`'s settings: each row as --name, its help line and its
 * value in cfg (the defaults, finished: what traced would run with). */
void cfg_usage(FILE *out, const struct cfg *cfg);

/* Why no request may set the variable name (a static phrase: "it names a
 * library to load"), whatever env_allow says, with the matching pattern
 * of the built-in deny list ("*_LIB") in *pattern (may be NULL); NULL
 * when the list does not forbid it. */
const char *cfg_env_denied(const char *name, const char **pattern);

/* True when name starts with one of cfg->env_allow and the deny list does
 * not forbid it. */
bool cfg_env_allowed(const struct cfg *cfg, const char *name);

void cfg_free(struct cfg *cfg);

#endif
