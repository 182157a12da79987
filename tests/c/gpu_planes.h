/* Plane pairs for the GPU kernels' tests (test_gpu_*.c): each test holds a
 * program on the emulator (csrc/gpu/programs.h) to its CPU kernel
 * (vmaf_kernels.h) on these, bit for bit.
 *
 * gpu_pair(kind, w, h, bpc, seed, ref, dist) fills two w x h planes:
 *   GPU_NOISE   independent uniform samples (every code path, no structure)
 *   GPU_SCENE   a smooth picture with texture, dist a noisy, shifted copy
 *               (what a clip looks like: small errors, masking, gains)
 *   GPU_EXTREME samples at 0 and 2^bpc - 1 in blocks, dist inverted in part
 *   GPU_SAME    dist equal to ref (perfect scores)
 * The sizes and depths every test runs: GPU_SIZES (odd, even, small, wide,
 * 1080p-like) x 8, 10, 12, 16 bits; gpu_next_pair walks them all (a and b
 * from gpu_plane_alloc hold any of them). gpu_same_as_cpu holds a
 * one-score program to its CPU kernel on a pair. */
#ifndef VMAFDNN_TEST_GPU_PLANES_H
#define VMAFDNN_TEST_GPU_PLANES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/programs.h"
#include "vmaf_kernels.h"

enum { GPU_NOISE, GPU_SCENE, GPU_EXTREME, GPU_SAME, GPU_KINDS };

static const char *const gpu_kind_names[GPU_KINDS] = {"noise", "scene", "extreme", "same"};

static const int gpu_sizes[][2] = {{33, 33}, {64, 36}, {97, 61}, {322, 178}, {480, 270},
                                   {641, 37}, {40, 300}, {1920, 1080}};
#define GPU_N_SIZES (int)(sizeof(gpu_sizes) / sizeof(gpu_sizes[0]))
static const int gpu_depths[] = {8, 10, 12, 16};
#define GPU_N_DEPTHS (int)(sizeof(gpu_depths) / sizeof(gpu_depths[0]))

static uint32_t gpu_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static void gpu_pair(int kind, int w, int h, int bpc, uint64_t seed, uint16_t *ref,
                     uint16_t *dist)
{
    const int peak = (1 << bpc) - 1;
    uint64_t s = seed * 2654435761u + 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * w + x;
            int r, d;
            switch (kind) {
            case GPU_NOISE:
                r = (int)(gpu_rand(&s) % (uint32_t)(peak + 1));
                d = (int)(gpu_rand(&s) % (uint32_t)(peak + 1));
                break;
            case GPU_SCENE: {
                const double v = 0.5 + 0.3 * sin(x / 7.0 + y / 23.0) * cos(y / 11.0) +
                                 0.1 * sin(x * y / 300.0);
                const double n = ((double)(gpu_rand(&s) % 1001) - 500.0) / 500.0;
                r = (int)lround(v * peak + 0.02 * peak * n);
                const double m = ((double)(gpu_rand(&s) % 1001) - 500.0) / 500.0;
                const double vs = 0.5 + 0.3 * sin((x + 1) / 7.0 + y / 23.0) * cos(y / 11.0) +
                                  0.1 * sin((x + 1) * y / 300.0);
                d = (int)lround(vs * peak + 0.05 * peak * m);
                break;
            }
            case GPU_EXTREME:
                r = ((x / 5 + y / 3) & 1) ? peak : 0;
                d = (x < w / 2) ? peak - r : r;
                break;
            default:
                r = (int)(gpu_rand(&s) % (uint32_t)(peak + 1));
                d = r;
                break;
            }
            ref[i] = (uint16_t)(r < 0 ? 0 : r > peak ? peak : r);
            dist[i] = (uint16_t)(d < 0 ? 0 : d > peak ? peak : d);
        }
}

/* Room for one plane of the largest of gpu_sizes (free it). */
static inline uint16_t *gpu_plane_alloc(void)
{
    size_t most = 0;
    for (int i = 0; i < GPU_N_SIZES; i++)
        if ((size_t)gpu_sizes[i][0] * gpu_sizes[i][1] > most)
            most = (size_t)gpu_sizes[i][0] * gpu_sizes[i][1];
    return malloc(most * sizeof(uint16_t));
}

/* A packed w x h plane of bpc-bit samples at p, as the CPU kernels take it. */
static inline VdnnPlane gpu_plane(const uint16_t *p, int w, int h, int bpc)
{
    const VdnnPlane plane = {p, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    return plane;
}

/* Where a walk over every size x depth x kind stands: the indices (a test
 * may thin the walk by them) and what they mean. */
typedef struct GpuCase {
    int size, depth, kind;
    int w, h, bpc;
    const char *kind_name;
} GpuCase;

#define GPU_CASE_START {0, 0, -1, 0, 0, 0, NULL}

/* Steps c to the next case, kinds fastest, then depths, then sizes; 0 after
 * the last. */
static inline int gpu_next_case(GpuCase *c)
{
    if (++c->kind == GPU_KINDS) {
        c->kind = 0;
        if (++c->depth == GPU_N_DEPTHS) {
            c->depth = 0;
            if (++c->size == GPU_N_SIZES)
                return 0;
        }
    }
    c->w = gpu_sizes[c->size][0];
    c->h = gpu_sizes[c->size][1];
    c->bpc = gpu_depths[c->depth];
    c->kind_name = gpu_kind_names[c->kind];
    return 1;
}

/* The case's pair: its seed is its own, so each case is the same whatever
 * else a test runs. */
static inline void gpu_case_pair(const GpuCase *c, uint16_t *ref, uint16_t *dist)
{
    gpu_pair(c->kind, c->w, c->h, c->bpc, (uint64_t)(c->size * 31 + c->depth * 7 + c->kind), ref,
             dist);
}

/* gpu_next_case, then the new case's pair in ref and dist. */
static inline int gpu_next_pair(GpuCase *c, uint16_t *ref, uint16_t *dist)
{
    if (!gpu_next_case(c))
        return 0;
    gpu_case_pair(c, ref, dist);
    return 1;
}

/* A one-score program (vk_motion, vk_psnr, vk_ssim) on the emulator against
 * its CPU kernel on planes a and b: 1 when it gives (float) of the kernel's
 * double, bit for bit, else 0 with both values on stderr. */
typedef int (*GpuCpuKernel)(const VdnnKernelEnv *, const VdnnPlane *, const VdnnPlane *,
                            double *);
typedef int (*GpuProgram)(const VkBackend *, const uint16_t *, const uint16_t *, int, int, int,
                          float *);

static inline int gpu_same_as_cpu(const char *name, GpuCpuKernel cpu, GpuProgram gpu,
                                  const uint16_t *a, const uint16_t *b, int w, int h, int bpc,
                                  const char *what)
{
    const VdnnPlane pa = gpu_plane(a, w, h, bpc), pb = gpu_plane(b, w, h, bpc);
    double want = -1;
    float got = -1;
    const int rc_cpu = cpu(&vdnn_kernel_env_malloc, &pa, &pb, &want);
    const int rc_gpu = gpu(&vk_emulator, a, b, w, h, bpc, &got);
    const float cpu_float = (float)want;
    if (rc_cpu || rc_gpu || memcmp(&got, &cpu_float, sizeof got) != 0) {
        fprintf(stderr, "%s %s %dx%d %d-bit: cpu %.9g (rc %d), gpu %.9g (rc %d)\n", name, what, w,
                h, bpc, want, rc_cpu, (double)got, rc_gpu);
        return 0;
    }
    return 1;
}

#endif
