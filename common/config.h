/*
 * cfg: traced's configuration, from a `key = value` file and `--key value`
 * command-line overrides (docs/API.md, "Configuration keys"). Loaded once at
 * start-up on the main thread; read-only afterwards, so any thread may read.
 *
 * One row per setting (Redis's standardConfig): CFG_SETTINGS below. The
 * struct's members, the defaults, the parsing of file and argv, the bounds,
 * `traced --help` (and --help-markdown, docs/API.md's table) and the checks
 * all come from the rows; config/traced.conf documents each (test_config
 * fails when it lists a key that is not a row, misses one, or says another
 * default, and when docs/API.md's table is not the rows).
 * docs/ARCHITECTURE.md says what adding a setting touches.
 */
#ifndef TR_CONFIG_H
#define TR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/tr.h"

/* The default of max_kernel_names: distinct kernel names kept per rank.
 * A trace of made-up names then costs the daemon under 128 MB (each name
 * kept is a few KB of summary rows: tests/test_name_bomb.py). */
#define CFG_MAX_KERNEL_NAMES 10000

/* Prefixes (a trailing '_') and exact names; atom/policy.c judges with
 * them and its deny list (docs/ATOM.md, "What a request may pass"). The
 * exact names are the start script's knobs and models.json's. */
#define CFG_ENV_ALLOW                                                          \
  "ATOM_ AITER_ HSA_ HIP_ AMD_ V4_ NCCL_ RCCL_ MIOPEN_ TORCH_ PYTORCH_ "       \
  "MAX_NUM_SEQS KV_CACHE_DTYPE GPU_MEM_UTIL GPU_MAX_HW_QUEUES"

/* The deadlines of ATOM's stop and start scripts (stop_timeout_s,
 * launch_timeout_s): each script's own worst case read from its code
 * (docs/ATOM.md, "Budgets"), a fifth more. CFG_SMI_S bounds one rocm-smi
 * call, CFG_CURL_S one curl of the local server. The rows give them as
 * text; config.c asserts they agree. */
#define CFG_SMI_S  3
#define CFG_CURL_S 1
/* stop_atom_server.sh: 5 checks 1 s apart after SIGTERM, SIGKILL and 2 s,
 * a last SIGKILL and 3 s, 60 rocm-smi checks 1 s apart, then the force
 * kill: rocm-smi, 5 s, rocm-smi twice. */
#define CFG_STOP_WORST_S                                                       \
  (5 * 1 + 2 + 3 + 60 * (CFG_SMI_S + 1) + 5 + 3 * CFG_SMI_S)
/* start_atom_server.sh: the pre-flight's 2 + 3 s, 30 rocm-smi checks 1 s
 * apart, the force kill (rocm-smi twice, 5 s), then 120 tries of curl,
 * rocm-smi and 1 s before it falls through. */
#define CFG_LAUNCH_WORST_S                                                     \
  (2 + 3 + 30 * (CFG_SMI_S + 1) + 2 * CFG_SMI_S + 5 +                          \
   120 * (CFG_CURL_S + CFG_SMI_S + 1))
#define CFG_STOP_TIMEOUT_S   (CFG_STOP_WORST_S * 6 / 5)
#define CFG_LAUNCH_TIMEOUT_S (CFG_LAUNCH_WORST_S * 6 / 5)

/* profile_control's values, in the order of its row. */
enum cfg_profile_control { CFG_PROFILE_BENCH, CFG_PROFILE_DAEMON };

/*
 * XX(name, TYPE, default, check, help): a setting.
 *   TYPE     STR()            text                      (char *)
 *            INT(lo, hi)      an integer in [lo, hi]    (int)
 *            BYTES()          a byte count, at least 1M: digits, then K,
 *                             M, G or T (powers of 1024) (int64_t)
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
  XX(auth_retry_delay_ms, INT(0, 60000), "2000", NULL,                         \
     "most ms a 401 waits for an address that keeps failing (0: none)")        \
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
     "ATOM CI's models.json (empty: ATOM's own; none: no presets)")            \
  XX(take_over_foreign_gpu, ENUM("false", "true"), "false", NULL,              \
     "let ATOM's scripts kill what is not ATOM's (GPU jobs, pkill matches)")   \
  XX(kfd_path, STR(), "/dev/kfd", NULL,                                        \
     "the KFD device: processes with it open hold the GPUs here")              \
  XX(stop_timeout_s, INT(1, 86400), "316", NULL,                               \
     "seconds the stop script may take")                                       \
  XX(launch_timeout_s, INT(1, 86400), "883", NULL,                             \
     "seconds the start script may take")                                      \
  XX(ready_timeout_s, INT(1, 86400), "900", NULL,                              \
     "seconds the ready gate waits without a new server-log byte")             \
  XX(ready_max_s, INT(10, 86400 * 7), "3600", NULL,                            \
     "seconds the ready gate may take in all, log growing or not")             \
  XX(ready_poll_s, INT(1, 3600), "5", NULL,                                    \
     "seconds between two GET /v1/models")                                     \
  XX(bench_timeout_s, INT(1, 604800), "3600", NULL,                            \
     "seconds the benchmark may take")                                         \
  XX(export_poll_s, INT(1, 3600), "10", NULL,                                  \
     "seconds between two looks at the exported traces")                       \
  XX(export_max_polls, INT(1, 100000), "60", NULL,                             \
     "looks in a row without progress before the export fails")               \
  XX(export_max_s, INT(10, 86400 * 7), "7200", NULL,                           \
     "seconds the export may take in all, progressing or not")                 \
  XX(profile_control, ENUM("bench", "daemon"), "bench", NULL,                  \
     "who starts the profiler: the bench's --profile, or traced")              \
  XX(profiler_timeout_s, INT(1, 86400), "300", NULL,                           \
     "ATOM_PROFILER_TIMEOUT of the server, unless set otherwise")              \
  XX(time_scale, INT(1, 1000), "1", NULL,                                      \
     "ATOM's seconds in a real one (1; more only on the simulator)")           \
  XX(index_jobs, INT(1, 256), NULL, default_jobs,                              \
     "ranks indexed at once (default: the number of cores)")                   \
  XX(category_rules, STR(), "", NULL,                                          \
     "a file of category and family rules before the built-in ones")           \
  XX(max_kernel_names, INT(100, 10000000), "10000", NULL,                      \
     "distinct kernel names (and launch shapes) kept per rank")                \
  XX(gpu_roof, STR(), "", check_gpu_roof,                                      \
     "the roof ops are put against (empty: the trace's GPU; docs/PERF.md)")    \
  XX(regression_threshold_pct, INT(0, 1000), "5", NULL,                        \
     "a verdict's change counts beyond this percentage (and the noise)")       \
  XX(webhook_url, STR(), "", check_url,                                    \
     "http(s) URL POSTed each finished capture's verdict (empty: none)")       \
  XX(webhook_timeout_s, INT(1, 600), "10", NULL,                               \
     "seconds one webhook attempt may take")                                   \
  XX(webhook_retries, INT(0, 10), "3", NULL,                                   \
     "webhook attempts after the first, 1, 2, 4... s apart")                   \
  XX(max_queued, INT(1, 1000000), "256", NULL,                                 \
     "captures and imports waiting, at most (429 beyond)")                     \
  XX(max_params_bytes, INT(1024, 16 << 20), "65536", NULL,                     \
     "a capture request, validated, at most (413 beyond)")                     \
  XX(sweep_points_max, INT(1, 4096), "64", NULL,                               \
     "points of one sweep (docs/SWEEPS.md), at most (400 beyond)")             \
  XX(sweep_knee_pct, INT(1, 1000), "10", NULL,                                 \
     "a sweep's knee: past it a doubling gains less throughput than this")     \
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
  XX(perfetto_ui_url, STR(), "https://ui.perfetto.dev", check_ui_url,          \
     "the Perfetto UI the dashboard opens slices in (empty: no such link)")    \
  XX(answer_cache_mb, INT(0, 65536), "64", NULL,                               \
     "MiB of answers about done captures kept in memory (0: none)")            \
  XX(max_rank_db_bytes, BYTES(), "256M", NULL,                                 \
     "bytes one rank's summary may add to the database")                       \
  XX(max_rank_inflated_bytes, BYTES(), "64G", NULL,                            \
     "JSON bytes one rank's trace may inflate to")                             \
  XX(max_rank_spill_bytes, BYTES(), "16G", NULL,                               \
     "bytes one rank may spill to temporary files under the state folder")     \
  XX(rank_index_timeout_s, INT(1, 604800), "1800", NULL,                       \
     "seconds one rank's indexing may take before the rank fails")             \
  XX(import_roots, LIST(":"), "", resolve_roots,                               \
     "folders POST /imports may read from (empty: imports refused)")           \
  XX(env_allow, LIST(" ,"), CFG_ENV_ALLOW, NULL,                               \
     "names and prefixes (ending in _ or *) a capture request's env may set") \
  XX(model_roots, LIST(":"), "/data", resolve_roots,                           \
     "folders a request's model and every path it names must lie in")          \
  XX(allow_trust_remote_code, ENUM("false", "true"), "false", NULL,            \
     "a request may pass --trust-remote-code without a preset setting it")     \
  XX(allow_hub_ids, ENUM("false", "true"), "false", NULL,                      \
     "a request may name Hugging Face ids (downloaded and loaded)")          \
  XX(fleet_dsn, STR(), "", NULL,                                               \
     "the lab's PostgreSQL (libpq conninfo, no password; empty: none)")       \
  XX(node_name, STR(), "", default_node_name,                                  \
     "this node's name in the fleet (default: the host name)")                 \
  XX(node_url, STR(), "", default_node_url,                                    \
     "where a lab view sends people for raw traces (default: http://<listen>)") \
  XX(fleet_view, ENUM("false", "true"), "false", check_fleet_view,             \
     "serve every node's captures too (a lab view)")                           \
  XX(fleet_outbox_max_age_s, INT(1, 86400 * 30), "600", NULL,                  \
     "seconds a capture may wait to be published before /healthz degrades")   \
  XX(fleet_backfill_per_s, INT(1, 100000), "20", NULL,                         \
     "older captures put in the outbox a second")                              \
  XX(fleet_timeout_s, INT(1, 3600), "30", NULL,                                \
     "seconds a publish or a migration may take")                              \
  XX(fleet_read_timeout_ms, INT(100, 600000), "5000", NULL,                    \
     "milliseconds a lab view's read of PostgreSQL may take")                  \
  XX(fleet_cache_mb, INT(1, 1 << 20), "2048", NULL,                            \
     "MiB of captures a lab view keeps copied from PostgreSQL")

#define CFG_CTYPE_STR()       char *
#define CFG_CTYPE_INT(lo, hi) int
#define CFG_CTYPE_BYTES()     int64_t
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

/* `traced --help-markdown`: every row as a line of docs/API.md's table
 * of configuration keys (its type and bounds, its default as the file
 * would give it, its help line); test_config fails while the doc differs. */
void cfg_markdown(FILE *out);

void cfg_free(struct cfg *cfg);

#endif
