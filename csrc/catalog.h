/* Internal: model names for the rest of the library (the public side is
 * include/vmafdnn/catalog.h). */
#ifndef VMAFDNN_CATALOG_INTERNAL_H
#define VMAFDNN_CATALOG_INTERNAL_H

/* 1 when `name` is a path (contains '/' or ends in ".onnx"), 0 when it is
 * a model name to look up on the search path. name must not be NULL. */
int vdnn_catalog_is_path(const char *name);

/* Resolves a model name or path as vmaf_dnn_model_resolve() does, into a
 * new string *out that the caller frees. Returns 0 or that function's codes
 * (-EINVAL, -ENOENT, -ENAMETOOLONG, -ENOMEM), with a message. */
int vdnn_catalog_resolve(const char *name, char **out);

#endif
