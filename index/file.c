/*
 * idx_file(): one trace file, start to end. The source inflates on its own
 * thread; here chunks go to the reader, whose events go to the
 * aggregation; at the end the aggregation builds the rank summary. The
 * rank's capture traces (idx_options.captures) are read first into the
 * decode library the run trace's replays are matched against
 * (index/decode/decode.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/agg/agg.h"
#include "index/decode/decode.h"
#include "index/read/read.h"
#include "index/index.h"
#include "index/slice/slice.h"

#define PROGRESS_EVERY (4u << 20) /* file bytes between progress calls */

/* Device time records held in memory before a sorted run is spilled
 * (agg_runs.c): 1.5 MB. A small buffer is full, and so resident, on a 1 GB
 * trace as on a 4 GB one, which keeps peak memory flat in the file's size;
 * a bigger one only spills less (24 bytes a kernel to a temporary file). */
#define TIME_RECORDS (1u << 16)

struct run {
  struct idx_agg agg;
  const atomic_bool *cancel;
  struct slice_figs *figs; /* with points: what slices will need */
};

/* Checks the cancel flag between events too: a single gzip chunk can
 * hold a hundred thousand of them. */
static int on_event(void *ud, const struct idx_doc *doc,
                    const struct idx_event *ev)
{
  struct run *run = ud;

  if (idx_cancelled(run->cancel))
    return TR_ECONFLICT;
  if (run->figs != NULL)
    slice_figs_event(run->figs, doc, ev);
  return idx_agg_event(&run->agg, doc, ev);
}

int idx_file_fail(struct tr_err *err, const struct tr_err *local, int rc,
                  const char *path)
{
  if (rc == TR_ECONFLICT && local->code == 0)
    return tr_err_set(err, rc, "", "%s: cancelled", path);
  if (local->code == 0)
    return tr_err_set(err, rc, "", "%s: indexing failed: %s", path,
                      tr_strerror(rc));
  if (strstr(local->msg, path) != NULL)
    return tr_err_set(err, rc, local->field, "%s", local->msg);
  return tr_err_set(err, rc, local->field, "%s: %s", path, local->msg);
}

/* A capture trace's events go to its decode file alone. */
struct cap_run {
  struct dec_file *dec;
  const atomic_bool *cancel;
};

static int on_capture_event(void *ud, const struct idx_doc *doc,
                            const struct idx_event *ev)
{
  struct cap_run *run = ud;

  if (idx_cancelled(run->cancel))
    return TR_ECONFLICT;
  if (ev->ph != 'X')
    return 0;
  return dec_event(run->dec, ev, idx_format_get(doc->format)->classify(ev),
                   0);
}

/* Reads one capture trace into lib. A trace that cannot be read is
 * counted (the summary warns) and left out; a cancel or running out of
 * memory fails the rank. */
static int read_capture(const char *root, struct dec_lib *lib,
                        const struct idx_capture *cap,
                        const struct idx_options *opt, struct tr_err *err)
{
  struct idx_options o = *opt;
  struct cap_run run = { NULL, opt->cancel };
  struct idx_reader *rd = NULL;
  struct tr_err local = { 0 };
  struct idx_read got;
  int rc;

  o.on_progress = NULL;
  o.points_path = NULL; /* the run trace's points, not a capture's */
  if ((rc = dec_file_new(lib, DEC_CAPTURE, cap, &run.dec)) == 0 &&
      (rc = idx_reader_new(IDX_FORMAT_AUTO, on_capture_event, &run, &rd)) ==
          0) {
    idx_reader_keep_text(rd); /* the op models read arguments */
    rc = idx_read_under(root, cap->path, rd, &o, &got, &local);
  }
  if (rc == 0)
    rc = dec_end(run.dec, &local);
  idx_reader_free(rd);
  dec_file_free(run.dec);
  if (rc == TR_ECONFLICT || rc == TR_ENOMEM)
    return idx_file_fail(err, &local, rc, cap->path);
  if (rc != 0)
    dec_lib_capture_failed(lib);
  return 0;
}

/* The decode library of the rank from its capture traces, and the run
 * trace's decode file, attached to agg's decode pass (which frees it). */
static int decode_open(const char *root, const struct idx_options *opt,
                       struct idx_agg *agg, struct dec_lib **lib,
                       struct tr_err *err)
{
  int rc;

  if (dec_lib_new(opt->max_kernel_names, &agg->spill, lib) != 0)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  for (size_t i = 0; i < opt->ncaptures; i++)
    if ((rc = read_capture(root, *lib, &opt->captures[i], opt, err)) != 0)
      return rc;
  if (dec_file_new(*lib, DEC_RUN, NULL, &agg->decode->file) != 0)
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  return 0;
}

/* TR_ELIMIT once the reader has taken more JSON than opt allows. */
static int check_inflated(const struct idx_reader *rd,
                          const struct idx_options *opt, struct tr_err *err)
{
  uint64_t n = idx_reader_doc(rd)->json_bytes;

  if (opt->max_inflated_bytes == 0 || n <= opt->max_inflated_bytes)
    return 0;
  return tr_err_set(err, TR_ELIMIT, "",
                    "the trace inflates to more than max_rank_inflated_bytes "
                    "(%llu bytes of JSON): refused",
                    (unsigned long long)opt->max_inflated_bytes);
}

/* Pumps the source into the reader until the end of the input. */
static int pump(struct idx_source *src, struct idx_reader *rd,
                const struct idx_options *opt, struct tr_err *err)
{
  uint64_t next_report = PROGRESS_EVERY;
  struct idx_chunk c;
  int hinted = 0, scale, rc;
  unsigned depth;

  for (;;) {
    if (idx_cancelled(opt->cancel))
      return TR_ECONFLICT;
    if ((rc = idx_source_next(src, &c, err)) != 0)
      return rc;
    if (c.len == 0)
      return idx_reader_finish(rd, err);
    if (opt->points_path != NULL)
      idx_reader_mark(rd);
    if ((rc = idx_reader_feed_chunk(rd, &c, err)) != 0 ||
        (rc = check_inflated(rd, opt, err)) != 0)
      return rc;
    /* Once in traceEvents, the source's thread may walk ahead. */
    if (!hinted && (hinted = idx_reader_walk_hint(rd, &depth, &scale)))
      idx_source_hint(src, depth, scale);
    if (opt->on_progress != NULL && idx_source_read_bytes(src) >= next_report) {
      opt->on_progress(opt->ud, idx_source_read_bytes(src));
      next_report = idx_source_read_bytes(src) + PROGRESS_EVERY;
    }
  }
}

int idx_side_open(const char *path, FILE **f, char **tmp, struct tr_err *err)
{
  int fd;

  if (asprintf(tmp, "%s.tmp", path) < 0) {
    *tmp = NULL;
    return tr_err_set(err, TR_ENOMEM, "", "out of memory");
  }
  (void)unlink(*tmp);
  fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || (*f = fdopen(fd, "wb")) == NULL) {
    int e = errno;

    if (fd >= 0)
      close(fd);
    return tr_err_set(err, -e, "", "%s: %s", *tmp, strerror(e));
  }
  return 0;
}

int idx_side_close(FILE *f, char *tmp, const char *path, int rc,
                   struct tr_err *err)
{
  if (f != NULL && fclose(f) != 0 && rc == 0)
    rc = tr_err_set(err, TR_EIO, "", "%s: %s", tmp, strerror(errno));
  if (tmp != NULL && rc == 0 && rename(tmp, path) != 0)
    rc = tr_err_set(err, -errno, "", "%s: %s", path, strerror(errno));
  if (tmp != NULL && rc != 0)
    (void)unlink(tmp);
  free(tmp);
  return rc;
}

int idx_threads(int asked)
{
  long cores;

  if (asked > 0)
    return asked;
  cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores >= 2 ? 2 : 1;
}

int idx_read_under(const char *root, const char *path, struct idx_reader *rd,
                   const struct idx_options *opt, struct idx_read *got,
                   struct tr_err *err)
{
  struct idx_source *src = NULL;
  uint64_t spacing =
      opt->points_spacing ? opt->points_spacing : IDX_POINT_SPACING;
  struct idx_points *pts;
  int rc = idx_source_open_points(
      root, path,
      IDX_SOURCE_SCAN | (idx_threads(opt->threads) > 1 ? IDX_SOURCE_THREAD : 0),
      opt->points_path != NULL ? spacing : 0, &src, err);

  memset(got, 0, sizeof(*got));
  if (rc == 0)
    rc = pump(src, rd, opt, err);
  if (rc == 0 && opt->points_path != NULL &&
      (rc = idx_source_stat(src, &got->st)) != 0)
    tr_err_set(err, rc, "", "%s: %s", path, strerror(-rc));
  if (rc == 0) {
    got->file_bytes = idx_source_file_bytes(src);
    if ((pts = idx_source_points(src)) != NULL) {
      got->points = *pts; /* taken: the source's is left empty */
      memset(pts, 0, sizeof(*pts));
    }
    if (opt->on_progress != NULL)
      opt->on_progress(opt->ud, idx_source_read_bytes(src));
  }
  idx_source_close(src);
  return rc;
}

/* The points read to opt->points_path.tmp (*o), then the slicer's
 * figures so far when they can serve it (its findings follow as the
 * time pass makes them; else *figs_on is 0). 0 or negative with err. */
static int points_begin(struct idx_read *got, struct slice_figs *figs,
                        const struct idx_doc *doc,
                        const struct idx_options *opt,
                        struct idx_points_out *o, int *figs_on,
                        struct tr_err *err)
{
  int rc = idx_points_open(&got->points, opt->points_path, &got->st, o, err);

  *figs_on = 0;
  if (rc != 0)
    return rc;
  rc = slice_figs_write(figs, doc, o->f);
  *figs_on = rc == 0;
  if (rc == TR_EIO)
    return tr_err_set(err, rc, "", "%s: %s", o->tmp, strerror(errno));
  return 0;
}

/* The points file done: the figures' counts, then renamed into place
 * (rc 0) or removed. Returns rc or the failure. */
static int points_end(struct slice_figs *figs, int figs_on,
                      const struct idx_options *opt, struct idx_points_out *o,
                      int rc, struct tr_err *err)
{
  uint64_t len = 0;

  if (rc == 0 && figs_on && slice_figs_seal(figs, &len) != 0)
    rc = tr_err_set(err, TR_EIO, "", "%s: %s", o->tmp, strerror(errno));
  return idx_points_close(o, opt->points_path, len, rc, err);
}

/* The file is read: what the summary needs of the reader into *doc, then
 * the reader and the access points (written out) freed, so that the walk
 * after it, where indexing peaks (docs/BENCHMARKS.md), does not hold them
 * too. */
static void read_done(struct idx_reader **rd, struct idx_doc *doc,
                      struct idx_read *got)
{
  *doc = *idx_reader_doc(*rd);
  doc->chunk = NULL; /* the reader's */
  doc->chunk_len = 0;
  idx_reader_free(*rd);
  *rd = NULL;
  idx_points_free(&got->points);
}

int idx_file(const char *path, const struct idx_options *opt, json_t **out,
             struct tr_err *err)
{
  return idx_file_under(NULL, path, opt, out, err);
}

int idx_file_under(const char *root, const char *path,
                   const struct idx_options *opt, json_t **out,
                   struct tr_err *err)
{
  struct agg_tree t;
  struct idx_sink sink;

  agg_tree_sink(&t, &sink);
  return agg_tree_take(&t, idx_file_sink(root, path, opt, &sink, err), out);
}

int idx_file_sink(const char *root, const char *path,
                  const struct idx_options *opt, const struct idx_sink *sink,
                  struct tr_err *err)
{
  static const struct idx_options defaults = { .format = IDX_FORMAT_AUTO,
                                               .rank = -1 };
  struct agg_file_info info = { path, 0, -1, 0 };
  struct dec_lib *lib = NULL;
  struct idx_reader *rd = NULL;
  struct tr_err local = { 0 };
  struct slice_figs figs = { 0 };
  struct idx_read got = { 0 };
  struct idx_points_out pout = { NULL, NULL };
  char *coll_tmp = NULL;
  struct idx_doc doc;
  struct run run;
  int rc = 0, figs_on = 0;

  if (opt == NULL)
    opt = &defaults;
  run.cancel = opt->cancel;
  run.figs = opt->points_path != NULL ? &figs : NULL;
  if (idx_agg_init(&run.agg, opt->rules, TIME_RECORDS) != 0)
    return tr_err_set(err, TR_ENOMEM, "", "%s: out of memory", path);
  idx_agg_cap_names(&run.agg, opt->max_kernel_names);
  run.agg.gpu_roof = opt->gpu_roof;
  run.agg.spill.cancel = opt->cancel; /* the walks stop on it too */
  run.agg.spill.dir = opt->spill_dir;
  run.agg.spill.max_bytes = opt->max_spill_bytes;
  if (run.figs != NULL) {
    slice_figs_init(&figs, &run.agg);
    run.agg.on_finding = slice_figs_finding;
    run.agg.finding_ud = &figs;
  }
  if ((rc = decode_open(root, opt, &run.agg, &lib, &local)) == 0 &&
      opt->collectives_path != NULL)
    rc = idx_side_open(opt->collectives_path, &run.agg.coll_out, &coll_tmp,
                       &local);
  if (rc == 0 && (rc = idx_reader_new(opt->format, on_event, &run, &rd)) == 0)
    idx_reader_keep_text(rd); /* the op models read arguments */
  if (rc == 0)
    rc = idx_read_under(root, path, rd, opt, &got, &local);
  /* The points first, so that the time pass's findings go after them. */
  if (rc == 0 && opt->points_path != NULL)
    rc = points_begin(&got, &figs, idx_reader_doc(rd), opt, &pout, &figs_on,
                      &local);
  if (rc == 0) {
    info.file_bytes = got.file_bytes;
    info.rank = opt->rank;
    info.threads = idx_threads(opt->threads);
    read_done(&rd, &doc, &got);
    rc = idx_agg_rows(&run.agg, &doc, &info, sink, &local);
  }
  if (opt->points_path != NULL)
    rc = points_end(&figs, figs_on, opt, &pout, rc, &local);
  idx_points_free(&got.points);
  slice_figs_free(&figs);
  agg_spill_blame(&run.agg.spill, rc, &local);
  if (opt->collectives_path != NULL)
    rc = idx_side_close(run.agg.coll_out, coll_tmp, opt->collectives_path,
                        rc, &local);
  idx_reader_free(rd);
  idx_agg_free(&run.agg); /* its decode file, which borrows lib, too */
  dec_lib_free(lib);
  /* A pass that a cancel stopped names its own step ("time pass
   * failed"): the rank was cancelled, and says so. */
  if (rc == TR_ECONFLICT && idx_cancelled(opt->cancel))
    tr_err_clear(&local);
  return rc == 0 ? 0 : idx_file_fail(err, &local, rc, path);
}
