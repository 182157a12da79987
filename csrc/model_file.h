/* Internal: reading a model file once, so the bytes that are checked are the
 * bytes ONNX Runtime loads (no second open of the path by ORT). */
#ifndef VMAFDNN_MODEL_FILE_H
#define VMAFDNN_MODEL_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Default cap on a model file's size. */
#define VDNN_MODEL_MAX_BYTES_DEFAULT ((size_t)50 << 20)

typedef struct VdnnModelFile {
    uint8_t *bytes;  /* the whole file, owned */
    size_t size;
    char *path;      /* realpath() of the file, owned */
    char *dir;       /* its directory (for external data), owned */
} VdnnModelFile;

/* Reads the regular file at `path` (at most max_bytes) into `out`. With a
 * `jail` directory (NULL: none) the file, after resolving every symlink, must
 * lie inside it.
 * Returns 0, -EINVAL (path NULL or empty), -ENOENT, -EACCES (unreadable, or
 * outside the jail), -EISDIR (a
 * directory or any other non-regular file), -E2BIG (larger than max_bytes),
 * -EBADMSG (empty file), -ENOMEM, -EIO (a read error). On failure `out` is
 * left zeroed. */
int vdnn_model_file_read(const char *path, size_t max_bytes, const char *jail,
                         VdnnModelFile *out);

/* Frees what vdnn_model_file_read() allocated; safe on a zeroed struct. */
void vdnn_model_file_free(VdnnModelFile *mf);

#endif
