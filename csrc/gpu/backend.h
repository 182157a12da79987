/* Internal: what the GPU kernels' host programs (the *_program.c files) run
 * on. A backend launches kernels and holds the memory they work in; the
 * programs never know which one:
 *
 *   - emulate.c: the host, every kernel a C function called once per index
 *     (the tests, and the reference the GPU is held to);
 *   - cuda_kernels.c: a CUDA stream, the kernels compiled by NVRTC.
 *
 * Every call is in stream order: a launch sees the memory every earlier
 * call of the same backend left, nothing is waited for on the host, and a
 * block given back with release may still be read by launches made before
 * (the backend reuses it only after them). Pointers handed to kernels are
 * the backend's (device memory on CUDA).
 *
 * Return codes: 0, -ENOMEM (alloc), or what the backend's launch or copies
 * fail with (-EIO for a CUDA error, the message recorded with vdnn_fail). */
#ifndef VDNN_GPU_BACKEND_H
#define VDNN_GPU_BACKEND_H

#include <stddef.h>

#include "dialect.h"

/* A kernel as both backends find it: the CUDA function's name, and the
 * emulator's entry point. */
typedef struct VkKernelRef {
    const char *name;
    void (*thunk)(VkIdx idx, void *const *args);
} VkKernelRef;

#define VK_REF(name) {#name, name##_thunk}

typedef struct VkBackend {
    /* Runs k once for every index of w x h x d (x < w, y < h, z < d; each
     * at least 1); args: a pointer to each of the kernel's arguments, in
     * order (read before it returns). */
    int (*launch)(void *self, const VkKernelRef *k, unsigned w, unsigned h, unsigned d,
                  void *const *args);
    /* `bytes` of the backend's memory, zeroed (the programs rely on it:
     * sums and flags start at 0); *out NULL on failure. */
    int (*alloc)(void *self, size_t bytes, void **out);
    /* Gives a block back (NULL-safe). */
    void (*release)(void *self, void *block);
    /* `bytes` of host memory at src into the backend's dst, in stream
     * order (src may be reused once it returns). */
    int (*upload)(void *self, void *dst, const void *src, size_t bytes);
    /* `bytes` of the backend's src into host memory at dst, once every
     * earlier call is done (the host waits). */
    int (*download)(void *self, void *dst, const void *src, size_t bytes);
    void *self;
} VkBackend;

/* The emulator: a backend on the host (alloc: calloc). */
extern const VkBackend vk_emulator;

#endif
