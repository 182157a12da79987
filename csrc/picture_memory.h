/* Picture buffers (vmaf_dnn_picture_buffer_alloc): memory for the planes
 * of the pictures a caller reads into a context, from the host-accessible
 * memory of its models' EP device where there is one, and the process-wide
 * registry that tells a model and a run that a picture lies in such memory,
 * so its samples go to the device from where they lie. Thread-safe. */
#ifndef VDNN_PICTURE_MEMORY_H
#define VDNN_PICTURE_MEMORY_H

#include <stddef.h>

#include "ort_backend.h"

/* A buffer of `bytes` for `owner` (a context: it keeps some freed buffers
 * for its next allocations until vdnn_picture_buffers_disown), from
 * `memory` (NULL: plain memory, aligned to 64 bytes). Where `memory`
 * cannot give the block, plain memory instead. 0, -EINVAL (bytes 0) or
 * -ENOMEM; *out NULL on failure. */
int vdnn_picture_buffer_new(const void *owner, const VdnnHostMemory *memory, size_t bytes,
                            void **out);

/* Gives a buffer of vdnn_picture_buffer_new back. 0 (also for NULL) or
 * -EINVAL: not a buffer of vdnn_picture_buffer_new, or freed already. */
int vdnn_picture_buffer_free(void *data);

/* The owner goes away: the buffers it keeps are given back, those still
 * out are given back when they are freed. */
void vdnn_picture_buffers_disown(const void *owner);

/* Whether [p, p + bytes) lies in one live picture buffer of `memory`
 * (non-NULL). */
int vdnn_picture_memory_holds(const VdnnHostMemory *memory, const void *p, size_t bytes);

#endif
