#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "tests/check.h"

static void config_defaults_match_api_md(void)
{
  struct cfg cfg;
  struct tr_err err = { 0 };

  cfg_defaults(&cfg);
  CHECK_INT(cfg_finish(&cfg, &err), 0);
  CHECK_STR(cfg.listen, "127.0.0.1:7700");
  CHECK_INT(cfg.atom_port, 8000);
  CHECK_INT(cfg.ready_timeout_s, 900);
  CHECK_INT(cfg.export_max_polls, 60);
  CHECK_STR(cfg.start_script, "/app/ATOM/scripts/start_atom_server.sh");
  CHECK(cfg_env_allowed(&cfg, "ATOM_PROFILER_MORE"));
  CHECK(!cfg_env_allowed(&cfg, "LD_PRELOAD"));
  CHECK(cfg.import_roots[0] == NULL);
  cfg_free(&cfg);
}

static void config_file_and_overrides(void)
{
  char path[] = "/tmp/traced_cfg_XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  struct cfg cfg;
  struct tr_err err = { 0 };

  fprintf(f, "# comment\nready_poll_s = 2\nimport_roots = /a:/b/\n"
             "profile_control = daemon  # trailing\n");
  fclose(f);
  cfg_defaults(&cfg);
  CHECK_INT(cfg_load_file(&cfg, path, &err), 0);
  CHECK_INT(cfg_set(&cfg, "ready-timeout-s", "30", &err), 0);
  CHECK_INT(cfg_finish(&cfg, &err), 0);
  CHECK_INT(cfg.ready_poll_s, 2);
  CHECK_INT(cfg.ready_timeout_s, 30);
  CHECK_INT(cfg.profile_control, CFG_PROFILE_DAEMON);
  CHECK_STR(cfg_import_root(&cfg, "/b/x/y"), "/b/");
  CHECK_STR(cfg_import_root(&cfg, "/a"), "/a");
  CHECK(cfg_import_root(&cfg, "/ab") == NULL);
  cfg_free(&cfg);
  unlink(path);
}

static void config_rejects_bad_values(void)
{
  struct cfg cfg;
  struct tr_err err = { 0 };

  cfg_defaults(&cfg);
  CHECK(cfg_set(&cfg, "atom_port", "70000", &err) < 0);
  CHECK_STR(err.field, "atom_port");
  tr_err_clear(&err);
  CHECK(cfg_set(&cfg, "no_such_key", "1", &err) < 0);
  tr_err_clear(&err);
  CHECK_INT(cfg_set(&cfg, "listen", "127.0.0.1:http", &err), 0);
  CHECK(cfg_finish(&cfg, &err) < 0);
  CHECK_STR(err.field, "listen");
  tr_err_clear(&err);
  CHECK_INT(cfg_set(&cfg, "listen", "0.0.0.0:7700", &err), 0);
  CHECK(cfg_finish(&cfg, &err) < 0);
  CHECK_STR(err.field, "auth_token");
  cfg_free(&cfg);
}

/* Loopback is a numeric address (or the name localhost), never a name
 * that merely starts like one: 127.1.nip.io resolves anywhere. */
static void config_loopback_is_numeric(void)
{
  static const char *const yes[] = { "127.0.0.1:7700", "127.8.9.10:1",
                                     "[::1]:7700", "localhost:7700",
                                     "[::ffff:127.0.0.1]:7700" };
  static const char *const no[] = { "127.1.nip.io:7700", "127.0.0.1.evil:80",
                                    "0.0.0.0:7700",      "[::]:7700",
                                    "10.1.2.3:7700",     "localhost.evil:1" };
  struct cfg cfg;
  struct tr_err err = { 0 };

  cfg_defaults(&cfg);
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    CHECK_INT(cfg_set(&cfg, "listen", yes[i], &err), 0);
    CHECK(cfg_listen_loopback(&cfg));
  }
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
    CHECK_INT(cfg_set(&cfg, "listen", no[i], &err), 0);
    CHECK(!cfg_listen_loopback(&cfg));
  }
  CHECK_INT(cfg_set(&cfg, "listen", "127.1.nip.io:7700", &err), 0);
  CHECK(cfg_finish(&cfg, &err) < 0);
  CHECK_STR(err.field, "auth_token");
  cfg_free(&cfg);
}

/* The fleet's keys (docs/FLEET.md): node_name from the host name, a name
 * that is a role name and a URL segment, node_url an http(s) URL made
 * from listen, fleet_view a boolean that needs fleet_dsn. */
static void config_fleet_keys(void)
{
  static const char *const bad[][2] = {
    { "node_name", "a:b" },       { "node_name", "has space" },
    { "node_url", "javascript:1" }, { "node_url", "http://a b" },
  };
  struct cfg cfg;
  struct tr_err err = { 0 };
  char host[256] = "";

  cfg_defaults(&cfg);
  CHECK_INT(cfg_finish(&cfg, &err), 0);
  gethostname(host, sizeof(host) - 1);
  host[strcspn(host, ".")] = '\0';
  CHECK_STR(cfg.node_name, host[0] ? host : "localhost");
  CHECK_STR(cfg.node_url, "http://127.0.0.1:7700");
  CHECK(!cfg.fleet_view && cfg.fleet_dsn[0] == '\0');
  CHECK(cfg_set(&cfg, "fleet_view", "yes", &err) < 0);
  CHECK_STR(err.field, "fleet_view");
  tr_err_clear(&err);
  CHECK_INT(cfg_set(&cfg, "fleet-view", "true", &err), 0);
  CHECK(cfg_finish(&cfg, &err) < 0);
  CHECK_STR(err.field, "fleet_view");
  cfg_free(&cfg);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    tr_err_clear(&err);
    cfg_defaults(&cfg);
    CHECK_INT(cfg_set(&cfg, bad[i][0], bad[i][1], &err), 0);
    CHECK(cfg_finish(&cfg, &err) < 0);
    CHECK_STR(err.field, bad[i][0]);
    cfg_free(&cfg);
  }
}

int main(void)
{
  RUN(config_defaults_match_api_md);
  RUN(config_file_and_overrides);
  RUN(config_rejects_bad_values);
  RUN(config_loopback_is_numeric);
  RUN(config_fleet_keys);
  return 0;
}
