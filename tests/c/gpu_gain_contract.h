/* What the two programs with an enhancement-gain limit (vk_adm in
 * test_gpu_adm.c, vk_vif in test_gpu_vif.c) both owe: NaN in every score
 * where a sample is out of range, and their arguments refused. One test
 * program includes it once. */
#ifndef VMAFDNN_TEST_GPU_GAIN_CONTRACT_H
#define VMAFDNN_TEST_GPU_GAIN_CONTRACT_H

#include <errno.h>
#include <math.h>

#include "check.h"
#include "gpu/programs.h"
#include "gpu_planes.h"

typedef int (*GpuGainProgram)(const VkBackend *, const uint16_t *, const uint16_t *, int, int,
                              int, double, float *);

/* The CPU kernel on ref and dist at gain limit egl; its return code. */
typedef int (*GpuGainKernelRc)(const VdnnPlane *ref, const VdnnPlane *dist, double egl);

/* A sample above 2^bpc - 1, in dist at 10 bits, then in ref at 8 (its last
 * sample): the CPU kernel refuses the first, the program (n scores) gives
 * NaN for both; then arguments refused, min_side the smallest width and
 * height the program takes. a, b: room for 64 x 36 samples each. The
 * checks' lines are this file's: name says whose they were. */
static void gpu_gain_contract(const char *name, GpuGainProgram gpu, int n, int min_side,
                              GpuGainKernelRc cpu, uint16_t *a, uint16_t *b)
{
    const int failed = check_failed;
    float got[8] = {0};
    gpu_pair(GPU_SCENE, 64, 36, 10, 3, a, b);
    b[64 * 20 + 7] = 1024;
    const VdnnPlane pa = gpu_plane(a, 64, 36, 10), pb = gpu_plane(b, 64, 36, 10);
    CHECK_EQ_INT(cpu(&pa, &pb, 100.0), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 10, 100.0, got), 0);
    for (int i = 0; i < n; i++)
        CHECK(isnan(got[i]));
    gpu_pair(GPU_NOISE, 64, 36, 8, 4, a, b);
    a[64 * 36 - 1] = 256;
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 8, 1.0, got), 0);
    for (int i = 0; i < n; i++)
        CHECK(isnan(got[i]));

    const int lo = min_side - 1, big = VK_MAX_DIMENSION + 1;
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, lo, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, lo, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 7, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 17, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 10, 0.5, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 10, 100.5, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 10, NAN, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, NULL, b, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, NULL, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, 64, 36, 10, 100.0, NULL), -EINVAL);
    CHECK_EQ_INT(gpu(NULL, a, b, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, big, min_side, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(gpu(&vk_emulator, a, b, min_side, big, 10, 100.0, got), -EINVAL);
    if (check_failed != failed)
        fprintf(stderr, "(%s's contract)\n", name);
}

#endif
