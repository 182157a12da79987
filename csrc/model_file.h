/* Internal: opening a model file, and what it brings along, without races.
 *
 * The model is opened first and everything is then checked on what was
 * opened: there is no check of a path followed by a second open of it. With
 * a jail (the policy's model_dir) the path is walked from a descriptor of the
 * jail directory with the rules of openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS), by the kernel where it has openat2 and by a
 * component-wise openat(O_NOFOLLOW) walk that gives the same answers where it
 * does not:
 *
 *   - relative symbolic links are followed as long as every step stays
 *     beneath the jail; an absolute symbolic link, or a ".." that would climb
 *     above the jail, is refused (-EACCES, "outside the model directory"),
 *     even when its target would lie inside;
 *   - more than 40 symbolic links in one resolution, or a /proc magic link,
 *     is -ELOOP;
 *   - a directory renamed away while the walk climbs through ".." is caught
 *     (the kernel retries; the walk compares the inode it reached with the
 *     one it came through and refuses on a mismatch).
 *
 * The model's bytes are read once from that descriptor, so the bytes that
 * are scanned are the bytes ORT loads. The descriptor of the directory that
 * holds the file actually opened (after following symbolic links) is kept:
 * the sidecar and external data files are opened beneath it with the same
 * rules, jail or no jail, so they are never looked up beside the path as
 * given and never reached through a link that leaves the model's directory.
 */
#ifndef VMAFDNN_MODEL_FILE_H
#define VMAFDNN_MODEL_FILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef struct VdnnModelFile {
    uint8_t *bytes;  /* the whole file, owned */
    size_t size;
    char *path;      /* the path as the caller gave it, for messages, owned */
    char *name;      /* the file's name in dir_fd (symbolic links followed), owned */
    int dir_fd;      /* O_PATH descriptor of the directory holding the file
                        actually opened, owned; -1 in a zeroed struct */
    char *dir;       /* a path that names dir_fd ("/proc/self/fd/N" where /proc
                        is mounted, else the directory of `path` as given): the
                        folder ORT resolves external data in, owned */
} VdnnModelFile;

/* Reads the regular file at `path` (at most max_bytes) into `out`.
 * Without a `jail` directory (NULL) the path is opened as open(2) would,
 * symbolic links followed, relative to the working directory. With one, the
 * path (absolute or relative to the working directory) must name an entry
 * beneath the jail: the first leading part of it that is the jail directory
 * itself (the same inode, so any spelling of the jail works) is where the
 * walk starts, and the rest is resolved beneath a descriptor of the jail by
 * the rules above. A FIFO, device or directory is refused without blocking.
 *
 * Returns 0, or with a message:
 *   -EINVAL        path NULL or empty, or containing no file name
 *   -ENOENT        a component does not exist (or the jail does not)
 *   -EACCES        permission denied, or the path leads outside the jail
 *                  (not beneath it, "..", an absolute symbolic link)
 *   -ELOOP         more than 40 symbolic links, or a /proc magic link
 *   -ENOTDIR       a component that must be a directory is not one (or the
 *                  jail is not a directory)
 *   -ENAMETOOLONG  the path, a component, or a symbolic link expansion is
 *                  too long (or the walk nests more than
 *                  VDNN_WALK_MAX_DEPTH directories below the jail)
 *   -EISDIR        a directory, FIFO, device or any other non-regular file
 *   -E2BIG         larger than max_bytes
 *   -EBADMSG       an empty file
 *   -ENOMEM, -EIO  (a read error or a file that shrank)
 * On failure `out` is left zeroed (dir_fd -1). */
int vdnn_model_file_read(const char *path, size_t max_bytes, const char *jail,
                         VdnnModelFile *out);

/* Opens the model at `path` as vdnn_model_file_read() does (same rules, same
 * codes but -E2BIG and -EBADMSG) without reading it, and hands back the
 * descriptor of the directory holding the file actually opened (the caller
 * closes it) and the file's name in it. For what lies beside a model that
 * is opened elsewhere (the sidecar of a context model). */
int vdnn_model_file_locate(const char *path, const char *jail, int *dir_fd,
                           char (*name)[NAME_MAX + 1]);

/* Frees what vdnn_model_file_read() allocated and closes dir_fd; safe on a
 * zeroed struct. */
void vdnn_model_file_free(VdnnModelFile *mf);

/* How deep the fallback walk may nest directories below its starting point. */
#define VDNN_WALK_MAX_DEPTH 256

/* Opens the regular-file candidate `rel` beneath the directory descriptor
 * root_fd by the rules above (symbolic links followed only while they stay
 * beneath root_fd, the final one included), read-only, non-blocking,
 * close-on-exec, and stores the descriptor in *fd_out. It does not check the
 * file type: the caller fstat()s the descriptor. Allocates nothing (the scan
 * calls it). Returns 0 or a negative errno without setting a message:
 * -EXDEV when the path leads outside root_fd (absolute, "..", an absolute
 * symbolic link), -ELOOP, -ENOENT, -ENOTDIR, -ENAMETOOLONG, -EACCES, ...;
 * vdnn_beneath_errno() turns -EXDEV into the code callers return. */
int vdnn_open_beneath(int root_fd, const char *rel, int *fd_out);

/* -EXDEV (leads outside) becomes -EACCES; any other code is returned as is. */
int vdnn_beneath_errno(int rc);

/* Test hook: which mechanism resolves paths beneath a directory.
 * VDNN_WALK_AUTO: openat2 where the kernel has it, else the openat() walk
 * (decided once); VDNN_WALK_OPENAT2 / VDNN_WALK_FALLBACK force one.
 * Returns the previous mode. Not for concurrent use with opens. */
enum { VDNN_WALK_AUTO, VDNN_WALK_OPENAT2, VDNN_WALK_FALLBACK };
int vdnn_model_file_walk_mode(int mode);

#endif
