/* Internal: the dialect the library's GPU kernels are written in (csrc/gpu/
 * *_kernels.h), one source for two compilers:
 *
 *   - NVRTC, at run time (cuda_kernels.c): CUDA C++, one thread per index;
 *   - the host C compiler, with the library: each kernel becomes a plain C
 *     function that emulate.c calls once per index, in order, on one thread.
 *     The tests hold those functions, bit for bit, to the CPU kernels
 *     (vmaf_kernels.h), so the code a GPU runs is the code tested here.
 *
 * Rules that keep the two the same program:
 *   - a kernel reads nothing that its own launch writes, except through the
 *     VK_ATOMIC_* macros (integer atomics: their result does not depend on
 *     the order the threads run in; there are no float atomics);
 *   - no shared memory, no barriers, no warp functions, no float atomics;
 *   - C that is also C++: no implicit void * conversions, no VLAs, no
 *     designated initialisers, no `restrict` (VK_RESTRICT);
 *   - integer types from this header (NVRTC has no <stdint.h>);
 *   - float arithmetic written as the CPU kernels write it (neither
 *     compiler contracts a * b + c into an FMA: cuda_kernels.c passes
 *     --fmad=false, and this header turns contraction off on the host).
 *
 * A kernel:
 *     VK_KERNEL name(VK_IDX const uint16_t *a, int w, int h) {
 *         const int x = VK_X, y = VK_Y;
 *         if (x >= w || y >= h) return;
 *         ...
 *     }
 *     VK_THUNK(name, VK_ARG(0, const uint16_t *), VK_ARG(1, int), VK_ARG(2, int))
 * VK_IDX is the emulator's index parameter (nothing on the GPU); VK_THUNK
 * defines, on the host only, name_thunk(index, args), which unpacks the
 * arguments the way cuLaunchKernel takes them (an array of pointers to each
 * argument). A launch covers w x h x d indices (backend.h). */
#ifndef VDNN_GPU_DIALECT_H
#define VDNN_GPU_DIALECT_H

#ifdef __CUDACC_RTC__

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

#define VK_KERNEL extern "C" __global__ void
#define VK_FN static __device__ __forceinline__
#define VK_RESTRICT __restrict__
#define VK_IDX
#define VK_X ((int)(blockIdx.x * blockDim.x + threadIdx.x))
#define VK_Y ((int)(blockIdx.y * blockDim.y + threadIdx.y))
#define VK_Z ((int)blockIdx.z)
#define VK_ATOMIC_ADD_U32(p, v) atomicAdd((unsigned int *)(p), (unsigned int)(v))
#define VK_ATOMIC_ADD_U64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define VK_ATOMIC_OR_U32(p, v) atomicOr((unsigned int *)(p), (unsigned int)(v))
#define VK_THUNK(name, ...)
#define VK_NAN __int_as_float(0x7fc00000)

#else

#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

typedef struct VkIdx {
    int x, y, z;
} VkIdx;

#define VK_KERNEL static void
#define VK_FN static inline
#define VK_RESTRICT
#define VK_IDX VkIdx vk_idx,
#define VK_X (vk_idx.x)
#define VK_Y (vk_idx.y)
#define VK_Z (vk_idx.z)
/* One thread at a time: a plain read-modify-write is the atomic. */
#define VK_ATOMIC_ADD_U32(p, v) ((void)(*(uint32_t *)(p) += (uint32_t)(v)))
#define VK_ATOMIC_ADD_U64(p, v) ((void)(*(uint64_t *)(p) += (uint64_t)(v)))
#define VK_ATOMIC_OR_U32(p, v) ((void)(*(uint32_t *)(p) |= (uint32_t)(v)))
#define VK_ARG(i, type) (*(type *)vk_args[i])
#define VK_THUNK(name, ...)                                                              \
    static void name##_thunk(VkIdx vk_idx, void *const *vk_args)                         \
    {                                                                                    \
        name(vk_idx, __VA_ARGS__);                                                       \
    }
#define VK_NAN (__builtin_nanf(""))

#endif

/* Row or column i of a window over n, mirrored without repeating the edge
 * (-1 -> 1, n -> n - 2): vmaf_kernels.h's vdnn_mirror. */
VK_FN int vk_mirror(int i, int n)
{
    if (i < 0)
        return -i;
    if (i >= n)
        return 2 * n - i - 2;
    return i;
}

#endif
