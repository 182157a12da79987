/* vdnn_loadable_file (loadable.h). */
#include <errno.h>
#include <sys/stat.h>

#include "loadable.h"

int vdnn_loadable_file(const char *path, struct stat *sb)
{
    if (stat(path, sb) != 0)
        return -1;
    if (!S_ISREG(sb->st_mode)) {
        errno = S_ISDIR(sb->st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    return 0;
}
