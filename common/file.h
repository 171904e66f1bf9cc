/*
 * Opening files on a client's behalf. traced runs as root beside users who
 * may own the folders it reads (an import folder, a model folder), so every
 * file it opens for a client goes through here: it must lie under its root
 * after resolving, no symbolic link is followed on the way, nothing blocks
 * (a FIFO answers "not a regular file" at once, never hangs a thread), and
 * its size is bounded before anything is read.
 *
 * Errors (also in err, naming the path as given):
 *   -EACCES     the path does not lie under root, or climbs with "..": the
 *               answer comes before the file system is asked anything, so it
 *               is the same for a path that exists and one that does not
 *   -ELOOP      a symbolic link on the way (the component is named)
 *   TR_EFORMAT  not a regular file (a FIFO, a folder, a device, a socket);
 *               tr_open_dir(): not a folder
 *   TR_ELIMIT   larger than max_bytes
 *   -errno      anything else (-ENOENT...)
 *
 * Any thread; the calls do file-system I/O (never on the libuv loop).
 */
#ifndef TR_FILE_H
#define TR_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/tr.h"

/* Opens path read-only for a client: its resolved path must lie under root
 * (itself resolved; NULL: no root check), no symbolic link is followed (in
 * any component when root is given: walk from root's descriptor, e.g.
 * openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) with a component-by-component
 * O_NOFOLLOW fallback), it is opened O_NONBLOCK (a FIFO never blocks; the
 * flag is cleared after), O_CLOEXEC, and fstat must show a regular file of
 * at most max_bytes (0: no bound). Returns the fd or a negative code with
 * err naming the file: TR_EFORMAT "not a regular file", TR_ELIMIT "larger
 * than N bytes", -EACCES "outside root", -ELOOP "a symbolic link", -errno.
 * st (may be NULL) gets fstat, also when the file is refused for its type or
 * size (a caller that takes folders too reads S_ISDIR there). A relative
 * path is taken relative to root. Without root, links in the folders above
 * the last component are followed (the path is trusted up to its file). */
int tr_open_file(const char *root, const char *path, uint64_t max_bytes,
                 struct stat *st, struct tr_err *err);

/* tr_open_file() and a read of the whole file into a new NUL-terminated
 * buffer (*out, caller frees), *len its length (may be NULL). A file that
 * grows past max_bytes while it is read is TR_ELIMIT too. */
int tr_read_file(const char *root, const char *path, size_t max_bytes,
                 char **out, size_t *len, struct tr_err *err);

/* Opens the folder path (O_DIRECTORY) as tr_open_file() opens a file: under
 * root, no link followed. path equal to root opens root itself. TR_EFORMAT
 * "not a folder" (st, may be NULL, says what it is). Returns the fd. */
int tr_open_dir(const char *root, const char *path, struct stat *st,
                struct tr_err *err);

/* What a file of mode m is, for a message: "a regular file", "a folder",
 * "a FIFO", "a device", "a socket", "a symbolic link". Static text. */
const char *tr_file_kind(mode_t m);

/* The one of roots (NULL-terminated real paths; "/" is every absolute
 * path) that the real path `real` lies inside, or NULL: the folder an
 * import may be read from (import_roots). Borrowed from roots. */
const char *tr_path_root(char *const *roots, const char *real);

/* openat2() is used where the kernel has it (Linux 5.6); off, every call
 * walks the path a component at a time, as it does on older kernels. On by
 * default; the tests run both ways. */
void tr_file_use_openat2(bool on);

#endif
