/* The GPU kernels' emulator (backend.h): each kernel run on the calling
 * thread, once per index, x fastest. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

static int emulate_launch(void *self, const VkKernelRef *k, unsigned w, unsigned h, unsigned d,
                          void *const *args)
{
    (void)self;
    if (!k || !k->thunk || !w || !h || !d)
        return -EINVAL;
    VkIdx idx;
    for (idx.z = 0; idx.z < (int)d; idx.z++)
        for (idx.y = 0; idx.y < (int)h; idx.y++)
            for (idx.x = 0; idx.x < (int)w; idx.x++)
                k->thunk(idx, args);
    return 0;
}

static int emulate_alloc(void *self, size_t bytes, void **out)
{
    (void)self;
    *out = calloc(1, bytes ? bytes : 1);
    return *out ? 0 : -ENOMEM;
}

static void emulate_release(void *self, void *block)
{
    (void)self;
    free(block);
}

/* Both copies: the emulator's memory is the host's. */
static int emulate_copy(void *self, void *dst, const void *src, size_t bytes)
{
    (void)self;
    if (bytes)
        memcpy(dst, src, bytes);
    return 0;
}

const VkBackend vk_emulator = {emulate_launch, emulate_alloc, emulate_release, emulate_copy,
                               emulate_copy, NULL};
