#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/file.h"
#include "common/net.h"
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
  /* The scripts' deadlines from their worst cases (docs/ATOM.md, "The
   * launch and its budget"): stop 5+2+3+60*(3+1)+5+3*3 = 264 s, start
   * 2+3+30*(3+1)+2*3+5+120*(1+3+1) = 736 s, a fifth more each. */
  CHECK_INT(cfg.stop_timeout_s, 316);
  CHECK_INT(cfg.launch_timeout_s, 883);
  CHECK_INT(cfg.ready_max_s, 3600);
  CHECK_INT(cfg.export_max_s, 7200);
  CHECK_STR(cfg.model_roots[0], "/data");
  CHECK(cfg.model_roots[1] == NULL);
  CHECK(!cfg.allow_trust_remote_code && !cfg.allow_hub_ids);
  CHECK(cfg.import_roots[0] == NULL);
  CHECK_STR(cfg.perfetto_ui_url, "https://ui.perfetto.dev");
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
  CHECK_STR(tr_path_root(cfg.import_roots, "/b/x/y"), "/b/");
  CHECK_STR(tr_path_root(cfg.import_roots, "/a"), "/a");
  CHECK(tr_path_root(cfg.import_roots, "/ab") == NULL);
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

/* perfetto_ui_url reaches the dashboard: an http(s) URL of URL bytes, or
 * empty (no "open in Perfetto"). */
static void config_perfetto_ui_url(void)
{
  static const char *const bad[] = { "javascript:alert(1)", "ui.perfetto.dev",
                                     "https://a b", "https://x/\"><script>",
                                     "https://x/{y}" };
  static const char *const good[] = { "", "http://127.0.0.1:9001/ui/",
                                      "https://perfetto.lab.example/#!/" };
  struct cfg cfg;
  struct tr_err err = { 0 };

  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cfg_defaults(&cfg);
    if (cfg_set(&cfg, "perfetto_ui_url", bad[i], &err) == 0)
      CHECK(cfg_finish(&cfg, &err) < 0);
    CHECK_STR(err.field, "perfetto_ui_url");
    tr_err_clear(&err);
    cfg_free(&cfg);
  }
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    cfg_defaults(&cfg);
    CHECK_INT(cfg_set(&cfg, "perfetto_ui_url", good[i], &err), 0);
    CHECK_INT(cfg_finish(&cfg, &err), 0);
    CHECK_STR(cfg.perfetto_ui_url, good[i]);
    cfg_free(&cfg);
  }
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
    CHECK(tr_listen_loopback(cfg.listen));
  }
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
    CHECK_INT(cfg_set(&cfg, "listen", no[i], &err), 0);
    CHECK(!tr_listen_loopback(cfg.listen));
  }
  CHECK_INT(cfg_set(&cfg, "listen", "127.1.nip.io:7700", &err), 0);
  CHECK(cfg_finish(&cfg, &err) < 0);
  CHECK_STR(err.field, "auth_token");
  cfg_free(&cfg);
}

/* config/traced.conf documents every setting, and only those: one
 * "#key = value" line each, the value what traced runs with by default
 * (derived ones included; index_jobs and node_name, the machine's cores
 * and name, excepted). */
static void config_example_file_is_the_rows(void)
{
  const char *dir = getenv("SRC_DIR");
  char path[1024], line[4096], value[4096];
  bool seen[128] = { false };
  struct tr_err err = { 0 };
  struct cfg cfg;
  size_t n = 0;
  FILE *f;

  snprintf(path, sizeof(path), "%s/config/traced.conf", dir ? dir : ".");
  CHECK((f = fopen(path, "r")) != NULL);
  cfg_defaults(&cfg);
  CHECK_INT(cfg_finish(&cfg, &err), 0);
  while (fgets(line, sizeof(line), f) != NULL) {
    size_t key = strspn(line + 1, "abcdefghijklmnopqrstuvwxyz_");
    char *text = line + 1 + key + 2;
    size_t i = 0;

    line[strcspn(line, "\n")] = '\0';
    if (line[0] != '#' || key == 0 || strncmp(line + 1 + key, " =", 2) != 0 ||
        (*text != '\0' && *text++ != ' '))
      continue; /* prose */
    line[1 + key] = '\0';
    while (cfg_names[i] != NULL && strcmp(cfg_names[i], line + 1) != 0)
      i++;
    if (cfg_names[i] == NULL)
      fprintf(stderr, "config/traced.conf: %s is no setting\n", line + 1);
    CHECK(cfg_names[i] != NULL);
    CHECK(!seen[i]);
    seen[i] = true;
    CHECK_INT(cfg_text(&cfg, cfg_names[i], value, sizeof(value)), 0);
    if (strcmp(cfg_names[i], "index_jobs") != 0 &&
        strcmp(cfg_names[i], "node_name") != 0)
      CHECK_STR(text, value);
  }
  fclose(f);
  for (n = 0; cfg_names[n] != NULL; n++) {
    if (!seen[n])
      fprintf(stderr, "config/traced.conf does not document %s\n",
              cfg_names[n]);
    CHECK(seen[n]);
  }
  CHECK(n <= sizeof(seen));
  cfg_free(&cfg);
}

/* The text of path, NUL-terminated, or NULL. Caller frees. */
static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  int c;

  while (f != NULL && out != NULL && (c = fgetc(f)) != EOF)
    fputc(c, out);
  if (out != NULL)
    fclose(out);
  if (f == NULL) {
    free(text);
    return NULL;
  }
  fclose(f);
  return text;
}

/* docs/API.md's table of configuration keys is the rows, as
 * `traced --help-markdown` prints them (cfg_markdown()): every setting
 * with its values, default and help, none other. */
static void config_api_md_is_the_rows(void)
{
  static const char open_mark[] = "<!-- settings: traced --help-markdown -->\n",
                    close_mark[] = "<!-- /settings -->\n";
  const char *dir = getenv("SRC_DIR");
  char path[1024], *doc, *from, *to, *want = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&want, &len);

  snprintf(path, sizeof(path), "%s/docs/API.md", dir ? dir : ".");
  CHECK((doc = slurp(path)) != NULL);
  CHECK(f != NULL);
  cfg_markdown(f);
  fclose(f);
  from = strstr(doc, open_mark);
  CHECK(from != NULL);
  from += sizeof(open_mark) - 1;
  to = strstr(from, close_mark);
  CHECK(to != NULL);
  *to = '\0';
  if (strcmp(from, want) != 0)
    fprintf(stderr,
            "docs/API.md's configuration keys are not CFG_SETTINGS': put "
            "`build/traced --help-markdown` between its marks\n");
  CHECK_STR(from, want);
  free(want);
  free(doc);
}

/* The byte caps: digits with K, M, G or T, at least 1M; the defaults fit a
 * real 30 GB rank (docs/SECURITY.md). */
static void config_byte_caps(void)
{
  static const char *const bad[] = { "512K", "0", "-1G", "1X",
                                     "1 G",  "G", "1GG", "9999999999999T" };
  struct cfg cfg;
  struct tr_err err = { 0 };

  cfg_defaults(&cfg);
  CHECK_INT(cfg.max_rank_db_bytes, 256ll << 20);
  CHECK_INT(cfg.max_rank_inflated_bytes, 64ll << 30);
  CHECK_INT(cfg.max_rank_spill_bytes, 16ll << 30);
  CHECK_INT(cfg_set(&cfg, "max-rank-db-bytes", "1M", &err), 0);
  CHECK_INT(cfg.max_rank_db_bytes, 1 << 20);
  CHECK_INT(cfg_set(&cfg, "max_rank_inflated_bytes", "2T", &err), 0);
  CHECK_INT(cfg.max_rank_inflated_bytes, 2ll << 40);
  CHECK_INT(cfg_set(&cfg, "max_rank_spill_bytes", "3000000", &err), 0);
  CHECK_INT(cfg.max_rank_spill_bytes, 3000000);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    tr_err_clear(&err);
    CHECK_INT(cfg_set(&cfg, "max_rank_spill_bytes", bad[i], &err), TR_EINVAL);
    CHECK_STR(err.field, "max_rank_spill_bytes");
    CHECK_INT(cfg.max_rank_spill_bytes, 3000000);
  }
  cfg_free(&cfg);
}

/* The fleet's keys (docs/FLEET.md): node_name from the host name, a name
 * that is a role name and a URL segment, node_url an http(s) URL made
 * from listen, fleet_view a boolean that needs fleet_dsn. */
static void config_fleet_keys(void)
{
  static const char *const bad[][2] = {
    { "node_name", "a:b" },
    { "node_name", "has space" },
    { "node_url", "javascript:1" },
    { "node_url", "http://a b" },
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
  RUN(config_perfetto_ui_url);
  RUN(config_loopback_is_numeric);
  RUN(config_example_file_is_the_rows);
  RUN(config_api_md_is_the_rows);
  RUN(config_byte_caps);
  RUN(config_fleet_keys);
  return 0;
}
