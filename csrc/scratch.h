/* Internal: growing fp32 scratch planes (alone: a luma plane; in pairs: the
 * input and output of a model), reused from frame to frame. */
#ifndef VMAFDNN_SCRATCH_H
#define VMAFDNN_SCRATCH_H

#include <stddef.h>

/* Makes *a hold at least n floats (*capacity is its size, updated).
 * Contents are not kept. On failure *a stays valid and *capacity unchanged.
 * Returns 0 or -ENOMEM (message names `what`). */
int vdnn_grow_floats(float **a, size_t *capacity, size_t n, const char *what);

/* Makes *a and *b hold at least n floats each (*capacity is their common
 * size, updated). Contents are not kept. On failure the buffers stay valid
 * (possibly one of them grown) and *capacity unchanged.
 * Returns 0 or -ENOMEM (message names `what`). */
int vdnn_grow_float_pair(float **a, float **b, size_t *capacity, size_t n, const char *what);

#endif
