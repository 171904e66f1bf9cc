/*
 * daemon/layout.c and daemon/logscan.c on real temp folders and files:
 * ATOM's rank folders (docs/ATOM.md), export completeness, rank order and
 * labels, each rank's capture traces (docs/DECODE.md: ATOM's names,
 * execution_details.json, never taken for the run trace); the server log
 * scan (only this launch's bytes, a truncated log
 * rescanned from 0, a marker cut by a read boundary); UTF-8 repair of
 * the text that goes into error messages.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/text.h"
#include "daemon/cap_int.h"

static char root[256];

static void make_dir(const char *rel)
{
  char path[512];

  snprintf(path, sizeof(path), "%s/%s", root, rel);
  CHECK(mkdir(path, 0755) == 0);
}

/* Writes a file of `size` bytes (relative to root). */
static void make_file(const char *rel, size_t size)
{
  char path[512];
  FILE *f;

  snprintf(path, sizeof(path), "%s/%s", root, rel);
  f = fopen(path, "w");
  CHECK(f != NULL);
  for (size_t i = 0; i < size; i++)
    fputc('x', f);
  fclose(f);
}

static void fresh_root(void)
{
  char cmd[300];

  if (root[0] != '\0') {
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    CHECK(system(cmd) == 0);
  }
  snprintf(root, sizeof(root), "/tmp/test_capture_layout.XXXXXX");
  CHECK(mkdtemp(root) != NULL);
}

static struct cap_layout *scan(const char *path)
{
  struct cap_layout *l = NULL;
  struct tr_err err = { 0 };

  CHECK_INT(cap_layout_scan(path, &l, &err), 0);
  return l;
}

/* rank_0..rank_3, sizes known: complete, numbered by rank, labelled by
 * folder, even though readdir order is arbitrary and rank_10 sorts
 * before rank_2 as text. */
static void layout_plain_ranks(void)
{
  const int ranks[] = { 2, 0, 3, 1 };
  struct cap_layout *l;
  char rel[64], msg[512];

  fresh_root();
  for (int i = 0; i < 4; i++) {
    snprintf(rel, sizeof(rel), "rank_%d", ranks[i]);
    make_dir(rel);
    snprintf(rel, sizeof(rel),
             "rank_%d/M_ts_20261129_090000_%03d"
             ".pt.trace.json.gz",
             ranks[i], ranks[i]);
    make_file(rel, 100 + (size_t)ranks[i]);
  }
  l = scan(root);
  CHECK_INT(l->n, 4);
  CHECK_INT(l->plain, 1);
  CHECK_INT(l->exported, 4);
  CHECK_INT(l->orphan_json, 0);
  CHECK_INT(l->bytes_total, 100 + 101 + 102 + 103);
  for (int r = 0; r < 4; r++) {
    snprintf(rel, sizeof(rel), "rank_%d", r);
    CHECK_STR(l->ranks[r].label, rel);
    CHECK_INT(l->ranks[r].tp, r);
    CHECK_INT(l->ranks[r].bytes, 100 + r);
    CHECK(strstr(l->ranks[r].file, ".pt.trace.json.gz") != NULL);
  }
  CHECK_INT(cap_layout_complete(l, 4, msg, sizeof(msg)), 1);
  CHECK_STR(msg, "");
  /* Expecting 5 ranks: rank_4 is missing and named. */
  CHECK_INT(cap_layout_complete(l, 5, msg, sizeof(msg)), 0);
  CHECK_STR(msg, "rank 4: no rank_4 folder");
  cap_layout_free(l);
}

/* An orphan .json (export died midway, or still running), an empty rank
 * folder, a missing one and two .gz: each named, rank by rank. */
static void layout_incomplete_export(void)
{
  struct cap_layout *l;
  char msg[1024];

  fresh_root();
  make_dir("rank_0");
  make_file("rank_0/a.pt.trace.json.gz", 10);
  make_dir("rank_1");
  make_file("rank_1/a.pt.trace.json", 10);
  make_dir("rank_2");
  make_dir("rank_4");
  make_file("rank_4/a.pt.trace.json.gz", 10);
  make_file("rank_4/b.pt.trace.json.gz", 10);
  l = scan(root);
  CHECK_INT(l->n, 4);
  CHECK_INT(l->exported, 1);
  CHECK_INT(l->orphan_json, 1);
  CHECK_INT(cap_layout_complete(l, 5, msg, sizeof(msg)), 0);
  CHECK_STR(msg, "rank 1: orphan .json left: the exporter died mid-export; "
                 "rank 2: no .pt.trace.json.gz in rank_2; "
                 "rank 3: no rank_3 folder; "
                 "rank 4: 2 .gz files in rank_4 (expected one)");
  /* The orphan's rank still has a file to index (an import may hold
   * plain .json exports). */
  CHECK(l->ranks[1].file != NULL);
  CHECK(l->ranks[2].file == NULL);
  cap_layout_free(l);
}

/* prefill/ and decode/ halves, dp and pp prefixes: sorted by half, pp,
 * dp, tp; labels are relative folders. */
static void layout_halves_and_prefixes(void)
{
  static const char *const dirs[] = {
    "decode",
    "prefill",
    "decode/dp1_tp0",
    "decode/dp0_tp1",
    "decode/dp0_tp0",
    "prefill/pp1_rank_0",
    "prefill/pp0_rank_1",
    "prefill/pp0_rank_0",
  };
  static const char *const order[] = {
    "prefill/pp0_rank_0", "prefill/pp0_rank_1", "prefill/pp1_rank_0",
    "decode/dp0_tp0",     "decode/dp0_tp1",     "decode/dp1_tp0",
  };
  struct cap_layout *l;
  char rel[128], msg[512];

  fresh_root();
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    make_dir(dirs[i]);
    if (i >= 2) {
      snprintf(rel, sizeof(rel), "%s/x.pt.trace.json.gz", dirs[i]);
      make_file(rel, 7);
    }
  }
  make_dir("not_a_rank");
  l = scan(root);
  CHECK_INT(l->n, 6);
  CHECK_INT(l->plain, 0);
  for (size_t i = 0; i < 6; i++)
    CHECK_STR(l->ranks[i].label, order[i]);
  CHECK_INT(l->ranks[0].half, 1);
  CHECK_INT(l->ranks[2].pp, 1);
  CHECK_INT(l->ranks[5].dp, 1);
  CHECK_INT(cap_layout_complete(l, 6, msg, sizeof(msg)), 1);
  CHECK_INT(cap_layout_complete(l, 8, msg, sizeof(msg)), 0);
  CHECK_STR(msg, "6 of 8 rank folders");
  cap_layout_free(l);
}

/* Imports: one file; a folder of files (one rank per file, by name). */
static void layout_files(void)
{
  struct cap_layout *l;
  char path[512];

  fresh_root();
  make_file("b.json", 5);
  make_file("a.json.gz", 3);
  make_file("notes.txt", 3);
  l = scan(root);
  CHECK_INT(l->n, 2);
  CHECK_STR(l->ranks[0].label, "a.json.gz");
  CHECK_STR(l->ranks[1].label, "b.json");
  CHECK_INT(l->bytes_total, 8);
  CHECK_INT(l->plain, 0);
  cap_layout_free(l);
  snprintf(path, sizeof(path), "%s/b.json", root);
  l = scan(path);
  CHECK_INT(l->n, 1);
  CHECK_STR(l->ranks[0].label, "b.json");
  CHECK_STR(l->ranks[0].file, path);
  CHECK_INT(l->ranks[0].bytes, 5);
  cap_layout_free(l);
  snprintf(path, sizeof(path), "%s/none", root);
  CHECK(cap_layout_scan(path, &l, NULL) < 0);
}

/* Capture traces (docs/DECODE.md): ATOM's rank_N/capture_traces with
 * its names (another rank's skipped only in a shared folder), the run
 * trace never one of them, an older ATOM's capture_graph_* beside the run
 * trace left out; an import folder's capture_traces with
 * execution_details.json; a link refused. */
static void layout_captures(void)
{
  static const char details[] =
      "[{\"file\": \"g.json.gz\", \"batch_size\": 32, \"mode\": \"FULL\"},"
      " {\"file\": \"p.json.gz\", \"batch_size\": 8, "
      "\"mode\": \"PIECEWISE\"}]";
  struct cap_layout *l;
  struct tr_err err = { 0 };
  char path[600];
  FILE *f;

  fresh_root();
  make_dir("rank_0");
  make_dir("rank_0/capture_traces");
  make_file("rank_0/M_ts_20261129_090000_000.pt.trace.json.gz", 10);
  make_file("rank_0/capture_graph_M_ts_20261129_080000_000.pt.trace.json.gz",
            5);
  make_file("rank_0/capture_traces/bs_16_q_1_rank0.json.gz", 3);
  make_file("rank_0/capture_traces/bs_8_q_1_rank0.json.gz", 3);
  make_file("rank_0/capture_traces/notes.txt", 3);
  l = scan(root);
  CHECK_INT(l->n, 1);
  CHECK_INT(l->ranks[0].gz_count, 1); /* the legacy capture trace is none */
  CHECK(strstr(l->ranks[0].file, "/M_ts_") != NULL);
  CHECK_INT(l->ranks[0].ncaps, 2);
  CHECK(strstr(l->ranks[0].caps[0].path,
               "rank_0/capture_traces/bs_16_q_1_rank0.json.gz") != NULL);
  CHECK_INT(l->ranks[0].caps[0].bs, 16);
  CHECK_INT(l->ranks[0].caps[1].q, 1);
  CHECK_INT(l->ranks[0].caps[1].mode, IDX_GRAPH_AUTO);
  cap_layout_free(l);

  fresh_root(); /* an import: the run trace and capture_traces beside */
  make_dir("capture_traces");
  make_file("run.json.gz", 10);
  make_file("capture_traces/g.json.gz", 4);
  make_file("capture_traces/p.json.gz", 4);
  snprintf(path, sizeof(path), "%s/capture_traces/execution_details.json",
           root);
  f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(details, f);
  fclose(f);
  l = scan(root);
  CHECK_INT(l->n, 1);
  CHECK_INT(l->ranks[0].ncaps, 2);
  CHECK_INT(l->ranks[0].caps[0].bs, 32);
  CHECK_INT(l->ranks[0].caps[0].mode, IDX_GRAPH_FULL);
  CHECK_INT(l->ranks[0].caps[1].mode, IDX_GRAPH_PIECEWISE);
  cap_layout_free(l);
  snprintf(path, sizeof(path), "%s/run.json.gz", root);
  l = scan(path); /* the single file: the same captures */
  CHECK_INT(l->ranks[0].ncaps, 2);
  cap_layout_free(l);

  fresh_root(); /* a capture trace that is a link: refused */
  make_dir("rank_0");
  make_dir("rank_0/capture_traces");
  make_file("rank_0/M_ts_20261129_090000_000.pt.trace.json.gz", 10);
  snprintf(path, sizeof(path), "%s/rank_0/capture_traces/bs_8_rank0.json.gz",
           root);
  CHECK(symlink("/etc/passwd", path) == 0);
  CHECK(cap_layout_scan(root, &l, &err) == -ELOOP);
  CHECK(strstr(err.msg, "bs_8_rank0.json.gz") != NULL);
}

static void write_text(const char *path, const char *mode, const char *text)
{
  FILE *f = fopen(path, mode);

  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

static char *read_all(const char *path)
{
  FILE *f = fopen(path, "r");
  char *buf = calloc(1, 1 << 20);

  CHECK(f != NULL && buf != NULL);
  CHECK(fread(buf, 1, (1 << 20) - 1, f) < (1 << 20));
  fclose(f);
  return buf;
}

/* A scanner of root/atom_server.log copying to root/server.log, its
 * snapshot taken when the log held old (a previous run's lines). */
static void scan_setup(struct cap_scan *s, char *src, char *copy, size_t size,
                       const char *old)
{
  memset(s, 0, sizeof(*s));
  snprintf(src, size, "%s/atom_server.log", root);
  snprintf(copy, size, "%s/server.log", root);
  s->src = src;
  s->copy = copy;
  s->trace_dir = "/t/7";
  unlink(copy);
  write_text(src, "w", old);
  cap_scan_snapshot(s);
}

/* A marker from the previous run (before the snapshot) never counts;
 * bytes after it are scanned and copied. */
static void logscan_only_new_bytes(void)
{
  struct cap_scan s;
  char src[300], copy[300];
  char *text;

  fresh_root();
  scan_setup(&s, src, copy, sizeof(src),
             "old run\nMemory access fault by GPU node-2\n");
  write_text(src, "a", "new run loading\n");
  cap_scan_run(&s);
  CHECK(s.marker == NULL);
  text = read_all(copy);
  CHECK_STR(text, "new run loading\n");
  free(text);
  write_text(src, "a", "worker 3: proc died, exit 9\n");
  cap_scan_run(&s);
  CHECK_STR(s.marker, "proc died");
  CHECK_STR(s.marker_line, "worker 3: proc died, exit 9");
}

/* The launcher truncates the log and writes it again: a log that shrank,
 * or that grew past our offset with other bytes, is read from byte 0. */
static void logscan_truncated_log(void)
{
  struct cap_scan s;
  char src[300], copy[300], big[400];
  char *text;

  fresh_root();
  scan_setup(&s, src, copy, sizeof(src),
             "an old run's long log, with no marker in it\n");
  write_text(src, "w", "InductorError: new\n"); /* shorter */
  cap_scan_run(&s);
  CHECK_STR(s.marker, "InductorError");
  text = read_all(copy);
  CHECK_STR(text, "InductorError: new\n");
  free(text);

  scan_setup(&s, src, copy, sizeof(src), "short old log\n");
  memset(big, 'y', sizeof(big));
  big[sizeof(big) - 1] = '\0';
  write_text(src, "w", "HSA_STATUS_ERROR at start\n");
  write_text(src, "a", big); /* longer, rewritten */
  cap_scan_run(&s);
  CHECK_STR(s.marker, "HSA_STATUS_ERROR");
}

/* A marker split across two reads is still found. */
static void logscan_marker_across_reads(void)
{
  struct cap_scan s;
  char src[300], copy[300];

  fresh_root();
  scan_setup(&s, src, copy, sizeof(src), "");
  write_text(src, "a", "rank 1 got a SHUTDOWN sig");
  cap_scan_run(&s);
  CHECK(s.marker == NULL);
  write_text(src, "a", "nal from the engine\n");
  cap_scan_run(&s);
  CHECK_STR(s.marker, "SHUTDOWN signal");
}

/* ATOM's profiler lines (model_runner.py, api_server.py) are counted per
 * line, exports only under this capture's folder; the first failure is
 * kept; a line cut by a read is read whole. */
static void logscan_profiler_lines(void)
{
  struct cap_scan s;
  char src[300], copy[300];
  const char *pre = "2026-11-29 10:00:00,123 - atom - INFO - ";

  fresh_root();
  scan_setup(&s, src, copy, sizeof(src),
             "Rank 0: profiler started (detailed=False, dir=/x)\n");
  write_text(src, "a", "");
  for (int r = 0; r < 2; r++) {
    char line[300];

    snprintf(line, sizeof(line),
             "%sRank %d: profiler started (detailed=False, dir=/t/7/rank_%d)\n"
             "%sRank %d: stopping profiler...\n",
             pre, r, r, pre, r);
    write_text(src, "a", line);
  }
  write_text(src, "a",
             "INFO: Rank 0: trace exported to /t/7/rank_0/m_ts_1.pt."
             "trace.json.gz (1.5 MB, 0.3s)\n"
             "Rank 1: trace exported to /t/70/rank_1/m.pt.trace.json.gz"
             " (1.0 MB, 0.1s)\n"
             "ERROR Rank 1: failed to export trace to /t/7/rank_1/m.pt");
  cap_scan_run(&s);
  CHECK_INT(s.profilers_started, 2); /* the one before the snapshot is old */
  CHECK_INT(s.profilers_stopping, 2);
  CHECK_INT(s.traces_exported, 1); /* /t/70 is not /t/7 */
  CHECK(strstr(s.last_exported, "/t/7/rank_0/") != NULL);
  CHECK_STR(s.export_failed, ""); /* its line has not ended yet */
  write_text(src, "a",
             ".trace.json.gz\nTraceback (most recent call last):\n"
             "ERROR Rank 2: failed to export trace to /t/7/rank_2/x\n"
             "ERROR Failed to start profiling: no\n");
  cap_scan_run(&s);
  CHECK_STR(s.export_failed,
            "ERROR Rank 1: failed to export trace to /t/7/rank_1/m.pt.trace."
            "json.gz");
  CHECK_STR(s.start_failed, "ERROR Failed to start profiling: no");
  CHECK(s.marker == NULL);
  CHECK(s.bytes_seen > 0);
}

/* Log tails and messages become valid JSON strings: invalid UTF-8
 * (overlong, surrogate, past U+10FFFF, cut short) and control bytes turn
 * into '?', valid text and newlines stay. */
static void utf8_repair(void)
{
  char text[] = "ok \xC3\xA9 \xC0\x80 \xED\xA0\x80 \xF4\x90\x80\x80"
                " \x01\tx\n\xE2\x82";
  json_t *js;

  tr_make_utf8(text);
  CHECK_STR(text, "ok \xC3\xA9 ?? ??? ???? ?\tx\n??");
  js = json_string(text);
  CHECK(js != NULL);
  json_decref(js);
}

int main(void)
{
  char cmd[300];

  RUN(layout_plain_ranks);
  RUN(layout_incomplete_export);
  RUN(layout_halves_and_prefixes);
  RUN(layout_files);
  RUN(layout_captures);
  RUN(logscan_only_new_bytes);
  RUN(logscan_truncated_log);
  RUN(logscan_marker_across_reads);
  RUN(logscan_profiler_lines);
  RUN(utf8_repair);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
  CHECK(system(cmd) == 0);
  return 0;
}
