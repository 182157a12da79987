/* Internal: whether a path may be handed to dlopen().
 *
 * dlopen() opens a path with a blocking open(2) and reads it: a FIFO with no
 * writer would hang it forever, /dev/zero feed it without end. The library
 * hands it only a regular file (or a bare name, which the loader searches
 * for itself): ORT's library and its EP libraries (ort_backend.c), NVRTC
 * (cuda_kernels.c). */
#ifndef VMAFDNN_LOADABLE_H
#define VMAFDNN_LOADABLE_H

#include <sys/stat.h>

/* 0 when `path` is a regular file (*sb filled), or -1 with errno set: as
 * stat(2), or EISDIR for a directory, EINVAL for anything else not a
 * regular file. */
int vdnn_loadable_file(const char *path, struct stat *sb);

#endif
