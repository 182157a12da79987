#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "model_file.h"

static int open_errno(int e)
{
    switch (e) {
    case ENOENT: case ENOTDIR: case ELOOP: case ENAMETOOLONG: return -ENOENT;
    case EACCES: case EPERM: return -EACCES;
    case EISDIR: return -EISDIR;
    case ENOMEM: return -ENOMEM;
    default: return -EIO;
    }
}

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

/* Whether the resolved `file` lies inside the directory `jail`. The prefix
 * comparison includes the trailing '/', so /models2/x is not inside
 * /models; both sides are realpath()s, so symlinks cannot escape. */
static int check_jail(const char *file, const char *path, const char *jail)
{
    char dir[PATH_MAX];
    if (!realpath(jail, dir))
        return vdnn_fail(-EACCES, "model directory %s is not usable: %s", jail, strerror(errno));
    size_t n = strlen(dir);
    int inside = strncmp(file, dir, n) == 0 && (file[n] == '/' || (n == 1 && dir[0] == '/'));
    if (!inside)
        return vdnn_fail(-EACCES, "model %s resolves to %s, outside the model directory %s",
                         path, file, dir);
    return 0;
}

int vdnn_model_file_read(const char *path, size_t max_bytes, const char *jail,
                         VdnnModelFile *out)
{
    memset(out, 0, sizeof(*out));
    if (!path || !*path)
        return vdnn_fail(-EINVAL, "model path is NULL or empty");

    char resolved[PATH_MAX];
    if (!realpath(path, resolved))
        return vdnn_fail(open_errno(errno), "cannot open model %s: %s", path, strerror(errno));
    int rc = jail ? check_jail(resolved, path, jail) : 0;
    if (rc)
        return rc;

    /* O_NONBLOCK: opening a FIFO must not hang; it is refused by fstat. */
    int fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return vdnn_fail(open_errno(errno), "cannot open model %s: %s", path, strerror(errno));
    rc = read_fd(fd, path, max_bytes, out);
    close(fd);
    if (rc)
        return rc;

    out->path = strdup(resolved);
    char *slash = strrchr(resolved, '/');
    if (slash)
        *(slash == resolved ? slash + 1 : slash) = '\0';
    out->dir = strdup(resolved);
    if (!out->path || !out->dir) {
        vdnn_model_file_free(out);
        return vdnn_fail(-ENOMEM, "out of memory");
    }
    return 0;
}

void vdnn_model_file_free(VdnnModelFile *mf)
{
    free(mf->bytes);
    free(mf->path);
    free(mf->dir);
    memset(mf, 0, sizeof(*mf));
}
