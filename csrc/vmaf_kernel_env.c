/* The kernels' malloc-backed env (vmaf_kernels.h), for tests and tools; the
 * library's sessions give the kernels an env of their own that charges the
 * session's memory budget (ort_custom_ops.c). */
#include <stdlib.h>

#include "vmaf_kernels.h"

static void *aligned_alloc_64(void *opaque, size_t size)
{
    (void)opaque;
    void *p = NULL;
    return posix_memalign(&p, 64, size ? size : 1) == 0 ? p : NULL;
}

static void release_block(void *opaque, void *block)
{
    (void)opaque;
    free(block);
}

const VdnnKernelEnv vdnn_kernel_env_malloc = {
    .alloc = aligned_alloc_64,
    .release = release_block,
    .cancelled = NULL,
    .opaque = NULL,
};
