/* Opening a model file (and its sidecar and external data) without a
 * check-then-open race: see model_file.h for the rules. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "model_file.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

/* The kernel's own limit on symbolic links in one resolution. */
#define MAX_HOPS 40

/* <linux/openat2.h>, spelled out: older C libraries lack it. */
struct vdnn_open_how {
    uint64_t flags, mode, resolve;
};
#define VDNN_RESOLVE_NO_MAGICLINKS 0x02
#define VDNN_RESOLVE_BENEATH 0x08

static atomic_int walk_mode = VDNN_WALK_AUTO;
static atomic_bool no_openat2; /* the kernel (or a seccomp filter) refused it once */

int vdnn_model_file_walk_mode(int mode)
{
    return atomic_exchange(&walk_mode, mode);
}

int vdnn_beneath_errno(int rc)
{
    return rc == -EXDEV ? -EACCES : rc;
}

/* A /proc symbolic link may be a magic link (an open file, not a name):
 * RESOLVE_NO_MAGICLINKS refuses those, so links on procfs are refused here. */
static bool on_procfs(int fd)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/* ------------------------------------------------------------------------ */
/* Directories beneath a root: openat2, or the walk                         */
/* ------------------------------------------------------------------------ */

typedef struct Ident {
    dev_t dev;
    ino_t ino;
} Ident;

/* Resolves directory `dir` beneath root with RESOLVE_BENEATH's rules by
 * hand: one component at a time with O_NOFOLLOW, links read from the
 * descriptor that was opened and spliced into what is left, ".." popped
 * against the inodes walked through (a mismatch means the tree moved under
 * the walk; it is refused as an escape rather than trusted). */
static int walk_dir(int root, const char *dir, int *out)
{
    char rem[PATH_MAX], tgt[PATH_MAX];
    Ident ids[VDNN_WALK_MAX_DEPTH + 1];
    size_t depth = 0;
    unsigned hops = 0;
    struct stat st;
    int cur, rc = 0;

    if (strlen(dir) >= sizeof(rem))
        return -ENAMETOOLONG;
    strcpy(rem, dir);
    if (fstat(root, &st))
        return -errno;
    ids[0] = (Ident){ st.st_dev, st.st_ino };
    if ((cur = fcntl(root, F_DUPFD_CLOEXEC, 0)) < 0)
        return -errno;

    char *p = rem;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, "/");
        char comp[NAME_MAX + 1];
        if (n > NAME_MAX) {
            rc = -ENAMETOOLONG;
            break;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        p += n;
        if (strcmp(comp, ".") == 0)
            continue;
        bool up = strcmp(comp, "..") == 0;
        if (up && depth == 0) {
            rc = -EXDEV;
            break;
        }
        int next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC | (up ? O_DIRECTORY : 0));
        if (next < 0 || fstat(next, &st)) {
            rc = -errno;
            if (next >= 0)
                close(next);
            break;
        }
        if (up) {
            if (st.st_dev != ids[depth - 1].dev || st.st_ino != ids[depth - 1].ino) {
                close(next);
                rc = -EXDEV;
                break;
            }
            close(cur);
            cur = next;
            depth--;
        } else if (S_ISDIR(st.st_mode)) {
            if (depth == VDNN_WALK_MAX_DEPTH) {
                close(next);
                rc = -ENAMETOOLONG;
                break;
            }
            ids[++depth] = (Ident){ st.st_dev, st.st_ino };
            close(cur);
            cur = next;
        } else if (S_ISLNK(st.st_mode)) {
            ssize_t len = on_procfs(next) ? (errno = ELOOP, -1)
                                          : readlinkat(next, "", tgt, sizeof(tgt));
            int e = len < 0 ? errno : ++hops > MAX_HOPS ? ELOOP : 0;
            close(next);
            size_t rest = strlen(p);
            if (e) {
                rc = -e;
                break;
            }
            if ((size_t)len + 1 + rest >= sizeof(rem)) {
                rc = -ENAMETOOLONG;
                break;
            }
            if (len > 0 && tgt[0] == '/') {
                rc = -EXDEV;
                break;
            }
            /* rem = target + "/" + what was left after the link */
            memmove(rem + len + 1, p, rest + 1);
            memcpy(rem, tgt, (size_t)len);
            rem[len] = '/';
            p = rem;
        } else {
            close(next);
            rc = -ENOTDIR;
            break;
        }
    }
    if (rc) {
        close(cur);
        return rc;
    }
    *out = cur;
    return 0;
}

/* Directory `dir` (may be "") beneath root: the kernel's openat2 when it has
 * it, else the walk. */
static int open_dir_beneath(int root, const char *dir, int *out)
{
    int mode = atomic_load(&walk_mode);
    if (mode == VDNN_WALK_FALLBACK || (mode == VDNN_WALK_AUTO && atomic_load(&no_openat2)))
        return walk_dir(root, dir, out);

    struct vdnn_open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = VDNN_RESOLVE_BENEATH | VDNN_RESOLVE_NO_MAGICLINKS,
    };
    /* EAGAIN: a rename raced a ".."; the kernel asks for a retry. */
    for (int tries = 0; tries < 16; tries++) {
        long fd = syscall(SYS_openat2, root, *dir ? dir : ".", &how, sizeof(how));
        if (fd >= 0) {
            *out = (int)fd;
            return 0;
        }
        if (errno != EAGAIN)
            break;
    }
    int e = errno;
    if (mode == VDNN_WALK_AUTO && (e == ENOSYS || e == EPERM || e == EAGAIN)) {
        if (e != EAGAIN)
            atomic_store(&no_openat2, true);
        return walk_dir(root, dir, out);
    }
    return -e;
}

/* ------------------------------------------------------------------------ */
/* The file                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct Opened {
    int fd, dir_fd;
    char name[NAME_MAX + 1];
} Opened;

/* Opens `path` relative to root (AT_FDCWD allowed when !beneath): its
 * directory part as above (or plainly, without `beneath`), the final
 * component with O_NOFOLLOW, and a final symbolic link is read from that
 * directory and resolved again from root, so the directory kept is the one
 * that holds the file that was opened. Allocates nothing. */
static int open_at(int root, const char *path, bool beneath, bool keep_dir, Opened *o)
{
    char buf[PATH_MAX], tgt[PATH_MAX];
    unsigned hops = 0;

    if (strlen(path) >= sizeof(buf))
        return -ENAMETOOLONG;
    strcpy(buf, path);
    for (;;) {
        if (beneath && buf[0] == '/')
            return -EXDEV;
        char *slash = strrchr(buf, '/');
        const char *dir = "", *base = slash ? slash + 1 : buf;
        char name[NAME_MAX + 1];
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
            dir = buf; /* names a directory: opened as "." in it, refused later */
            base = ".";
        } else if (slash) {
            *slash = '\0';
            dir = slash == buf ? "/" : buf;
        }
        if (strlen(base) > NAME_MAX)
            return -ENAMETOOLONG;
        strcpy(name, base);

        int dfd, rc;
        if (beneath) {
            rc = open_dir_beneath(root, dir, &dfd);
        } else {
            dfd = openat(root, *dir ? dir : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
            rc = dfd < 0 ? -errno : 0;
        }
        if (rc)
            return rc;
        /* O_NONBLOCK: a FIFO must not hang the open (the caller refuses it
         * after fstat); O_NOCTTY: a terminal must not become ours. */
        int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
            o->fd = fd;
            o->dir_fd = keep_dir ? dfd : -1;
            if (!keep_dir)
                close(dfd);
            strcpy(o->name, name);
            return 0;
        }
        int e = errno;
        ssize_t len = -1;
        if (e == ELOOP) { /* the final component is a symbolic link */
            if (on_procfs(dfd))
                errno = ELOOP;
            else
                len = readlinkat(dfd, name, tgt, sizeof(tgt));
            e = len < 0 ? (errno == EINVAL ? ELOOP : errno) : 0;
        }
        close(dfd);
        if (e)
            return -e;
        if (++hops > MAX_HOPS)
            return -ELOOP;
        if ((size_t)len == sizeof(tgt))
            return -ENAMETOOLONG;
        tgt[len] = '\0';
        if (tgt[0] == '/') {
            if (beneath)
                return -EXDEV;
            strcpy(buf, tgt);
            continue;
        }
        /* A relative target is relative to the link's directory. */
        size_t d = strlen(dir);
        if (d + 1 + (size_t)len >= sizeof(buf))
            return -ENAMETOOLONG;
        if (dir != buf) { /* dir was "" or "/" */
            memcpy(buf, dir, d);
            memcpy(buf + d, tgt, (size_t)len + 1);
        } else {
            buf[d] = '/';
            memcpy(buf + d + 1, tgt, (size_t)len + 1);
        }
    }
}

int vdnn_open_beneath(int root_fd, const char *rel, int *fd_out)
{
    Opened o;
    int rc = open_at(root_fd, rel, true, false, &o);
    if (!rc)
        *fd_out = o.fd;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The model                                                                */
/* ------------------------------------------------------------------------ */

/* Everything is checked on the open descriptor, never on the path again. */
static int read_fd(int fd, const char *path, size_t max_bytes, VdnnModelFile *out)
{
    struct stat st;
    if (fstat(fd, &st))
        return vdnn_fail(-EIO, "cannot stat model %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return vdnn_fail(-EISDIR, "model %s is not a regular file", path);
    if ((uintmax_t)st.st_size > (uintmax_t)max_bytes)
        return vdnn_fail(-E2BIG, "model %s is %jd bytes, over the %zu-byte cap", path,
                         (intmax_t)st.st_size, max_bytes);
    if (st.st_size == 0)
        return vdnn_fail(-EBADMSG, "model %s is empty", path);

    size_t size = (size_t)st.st_size;
    uint8_t *bytes = malloc(size);
    if (!bytes)
        return vdnn_fail(-ENOMEM, "out of memory reading model %s (%zu bytes)", path, size);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, bytes + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(bytes);
            return vdnn_fail(-EIO, "cannot read model %s: %s", path,
                             n < 0 ? strerror(errno) : "file shrank while being read");
        }
        got += (size_t)n;
    }
    out->bytes = bytes;
    out->size = size;
    return 0;
}

/* The codes of the header, one readable message each. */
static int open_failed(int rc, const char *path, const char *jail)
{
    switch (rc) {
    case -EXDEV:
        return vdnn_fail(-EACCES,
                         "model %s leads outside the model directory %s (through \"..\", an "
                         "absolute symbolic link or one that climbs out of it)",
                         path, jail);
    case -ELOOP:
        return vdnn_fail(-ELOOP, "cannot open model %s: more than %d symbolic links, or a /proc "
                         "magic link", path, MAX_HOPS);
    case -ENOENT: case -ENOTDIR: case -ENAMETOOLONG: case -EACCES: case -ENOMEM:
        return vdnn_fail(rc, "cannot open model %s: %s", path, strerror(-rc));
    case -EPERM:
        return vdnn_fail(-EACCES, "cannot open model %s: %s", path, strerror(-rc));
    case -ENXIO: case -ENODEV: case -EOPNOTSUPP: /* a socket or a device */
        return vdnn_fail(-EISDIR, "model %s is not a regular file", path);
    default:
        return vdnn_fail(-EIO, "cannot open model %s: %s", path, strerror(-rc));
    }
}

/* Finds where `path` enters the jail: the first leading part of it (made
 * absolute) that is the jail's inode. Only which entry beneath the jail is
 * opened depends on this; the walk from the jail's descriptor decides
 * whether it stays inside. *rel points into buf. */
static int beneath_jail(const char *path, int jail_fd, const char *jail, char *buf, size_t cap,
                        const char **rel)
{
    struct stat js, st;
    if (fstat(jail_fd, &js))
        return vdnn_fail(-EIO, "cannot stat model directory %s: %s", jail, strerror(errno));
    size_t n = 0;
    if (path[0] != '/') {
        if (!getcwd(buf, cap))
            return vdnn_fail(errno == ERANGE ? -ENAMETOOLONG : -EACCES,
                             "cannot resolve model %s against the working directory: %s", path,
                             strerror(errno));
        n = strlen(buf);
        buf[n++] = '/';
    }
    if (n + strlen(path) >= cap)
        return vdnn_fail(-ENAMETOOLONG, "model path %s is too long", path);
    strcpy(buf + n, path);

    for (size_t i = 0;; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        bool same = stat(i ? buf : "/", &st) == 0 && st.st_dev == js.st_dev &&
                    st.st_ino == js.st_ino;
        buf[i] = c;
        if (same) {
            *rel = buf + i + (c == '/');
            return 0;
        }
        if (!c)
            return vdnn_fail(-EACCES, "model %s lies outside the model directory %s", path, jail);
    }
}

/* A path naming dir_fd for ORT, which takes a folder by name. */
static char *name_dir_fd(int dir_fd, const char *path)
{
    char proc[64];
    struct stat a, b;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dir_fd);
    if (stat(proc, &a) == 0 && fstat(dir_fd, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return strdup(proc);
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* Opens the model as vdnn_model_file_read() documents, messages included. */
static int open_model(const char *path, const char *jail, Opened *o)
{
    if (!path || !*path)
        return vdnn_fail(-EINVAL, "model path is NULL or empty");
    int rc;
    if (jail) {
        int jfd = open(jail, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (jfd < 0) {
            int e = errno == EPERM ? EACCES : errno;
            return vdnn_fail(-e, "model directory %s is not usable: %s", jail, strerror(e));
        }
        char abs[2 * PATH_MAX];
        const char *rel = NULL;
        rc = beneath_jail(path, jfd, jail, abs, sizeof(abs), &rel);
        if (!rc && (rc = open_at(jfd, rel, true, true, o)))
            rc = open_failed(rc, path, jail);
        close(jfd);
    } else if ((rc = open_at(AT_FDCWD, path, false, true, o))) {
        rc = open_failed(rc, path, NULL);
    }
    return rc;
}

int vdnn_model_file_read(const char *path, size_t max_bytes, const char *jail,
                         VdnnModelFile *out)
{
    memset(out, 0, sizeof(*out));
    out->dir_fd = -1;
    Opened o;
    int rc = open_model(path, jail, &o);
    if (rc)
        return rc;
    rc = read_fd(o.fd, path, max_bytes, out);
    close(o.fd);
    if (rc) {
        close(o.dir_fd);
        return rc;
    }
    out->dir_fd = o.dir_fd;
    out->path = strdup(path);
    out->name = strdup(o.name);
    out->dir = name_dir_fd(o.dir_fd, path);
    if (!out->path || !out->name || !out->dir) {
        vdnn_model_file_free(out);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    return 0;
}

int vdnn_model_file_locate(const char *path, const char *jail, int *dir_fd,
                           char (*name)[NAME_MAX + 1])
{
    Opened o;
    int rc = open_model(path, jail, &o);
    if (rc)
        return rc;
    struct stat st;
    rc = fstat(o.fd, &st) ? vdnn_fail(-EIO, "cannot stat model %s: %s", path, strerror(errno))
         : !S_ISREG(st.st_mode) ? vdnn_fail(-EISDIR, "model %s is not a regular file", path)
                                : 0;
    close(o.fd);
    if (rc) {
        close(o.dir_fd);
        return rc;
    }
    *dir_fd = o.dir_fd;
    memcpy(*name, o.name, sizeof(o.name));
    return 0;
}

void vdnn_model_file_free(VdnnModelFile *mf)
{
    if (mf->bytes && mf->dir_fd >= 0) /* a zeroed struct holds no descriptor */
        close(mf->dir_fd);
    free(mf->bytes);
    free(mf->path);
    free(mf->name);
    free(mf->dir);
    memset(mf, 0, sizeof(*mf));
    mf->dir_fd = -1;
}
