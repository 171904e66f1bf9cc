/*
 * The temporary files a rank spills to (time records, collectives, folded
 * names' hashes, run-label texts: agg_runs.c, agg_fold.c): where they go
 * and how much they may hold, together (docs/SECURITY.md).
 *
 * They go to the rank's spill folder (idx_options.spill_dir: the daemon's
 * state folder, else $TMPDIR, else /tmp), as files without a name
 * (O_TMPFILE; where the file system has none, a file made and unlinked at
 * once), so that nothing is left behind after a crash. Every byte written
 * is counted against max_bytes, and the disk must keep SPILL_RESERVE (or a
 * twentieth of its size, if less) free: a trace of millions of events
 * cannot fill the disk that holds the database.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "index/kit/kit.h"

#define SPILL_RESERVE (1ull << 30) /* bytes the disk keeps free */
#define SPILL_CHECK   (1ull << 20) /* bytes written between looks at it */

const char *agg_spill_dir(const struct agg_spill *sp)
{
  const char *tmp = getenv("TMPDIR");

  if (sp->dir != NULL && *sp->dir != '\0')
    return sp->dir;
  return tmp != NULL && *tmp != '\0' ? tmp : "/tmp";
}

/* A new file without a name in dir, read-write. */
static int open_unnamed(const char *dir)
{
  char path[4096];
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
    return fd;
  if ((size_t)snprintf(path, sizeof(path), "%s/traced-spill-XXXXXX", dir) >=
      sizeof(path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0)
    (void)unlink(path);
  return fd;
}

int agg_spill_open(struct agg_spill *sp, FILE **out)
{
  const char *dir = agg_spill_dir(sp);
  int fd = open_unnamed(dir), e = errno;
  FILE *f = fd >= 0 ? fdopen(fd, "w+b") : NULL;

  if (f == NULL) {
    e = fd >= 0 ? errno : e;
    if (fd >= 0)
      close(fd);
    snprintf(sp->why, sizeof(sp->why), "cannot make a spill file in %s: %s",
             dir, strerror(e));
    return -e;
  }
  *out = f;
  return 0;
}

/* TR_ELIMIT (why set) when n more bytes would leave the disk of the spill
 * folder with less than its reserve free. */
static int check_disk(struct agg_spill *sp, uint64_t n)
{
  struct statvfs v;
  uint64_t free_bytes, reserve;

  if (statvfs(agg_spill_dir(sp), &v) != 0)
    return 0; /* the write itself will say */
  free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
  reserve = (uint64_t)v.f_blocks * v.f_frsize / 20;
  if (reserve > SPILL_RESERVE)
    reserve = SPILL_RESERVE;
  if (free_bytes >= reserve + n)
    return 0;
  snprintf(sp->why, sizeof(sp->why),
           "spilling temporary records to %s would leave its disk with "
           "less than %llu bytes free (%llu free): refused",
           agg_spill_dir(sp), (unsigned long long)reserve,
           (unsigned long long)free_bytes);
  return TR_ELIMIT;
}

void agg_spill_blame(const struct agg_spill *sp, int rc, struct tr_err *err)
{
  if (rc == 0 || sp->why[0] == '\0')
    return;
  tr_err_clear(err);
  tr_err_set(err, rc, "", "%s", sp->why);
}

int agg_spill_write(struct agg_spill *sp, FILE *f, const void *p, size_t n)
{
  int rc;

  if (sp->max_bytes > 0 && sp->bytes + n > sp->max_bytes) {
    snprintf(sp->why, sizeof(sp->why),
             "the trace's temporary records need more than "
             "max_rank_spill_bytes (%llu bytes): refused",
             (unsigned long long)sp->max_bytes);
    return TR_ELIMIT;
  }
  if (sp->bytes + n >= sp->next_check) {
    if ((rc = check_disk(sp, n)) != 0)
      return rc;
    sp->next_check = sp->bytes + n + SPILL_CHECK;
  }
  if (n > 0 && fwrite(p, 1, n, f) != n) {
    snprintf(sp->why, sizeof(sp->why), "writing a spill file in %s: %s",
             agg_spill_dir(sp), strerror(errno));
    return TR_EIO;
  }
  sp->bytes += n;
  return 0;
}
