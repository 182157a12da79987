/* The motion program (csrc/gpu/motion_program.c) on the emulator against the
 * CPU kernel vdnn_motion_integer: the same float on every plane pair of
 * gpu_planes.h, NaN where a sample is out of range, its arguments refused. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "gpu/programs.h"
#include "gpu_planes.h"
#include "vmaf_kernels.h"

static int same_as_cpu(const uint16_t *prev, const uint16_t *cur, int w, int h, int bpc,
                       const char *what)
{
    return gpu_same_as_cpu("motion", vdnn_motion_integer, vk_motion, prev, cur, w, h, bpc, what);
}

int main(void)
{
    uint16_t *a = gpu_plane_alloc(), *b = gpu_plane_alloc();
    if (!a || !b)
        return 1;
    int cases = 0;
    for (GpuCase c = GPU_CASE_START; gpu_next_pair(&c, a, b);) {
        CHECK(same_as_cpu(a, b, c.w, c.h, c.bpc, c.kind_name));
        CHECK(same_as_cpu(b, a, c.w, c.h, c.bpc, c.kind_name));
        cases++;
    }
    /* the smallest frame, and a first frame (prev = cur: 0) */
    gpu_pair(GPU_NOISE, 3, 3, 8, 1, a, b);
    CHECK(same_as_cpu(a, b, 3, 3, 8, "3x3"));
    float zero = -1;
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, a, 3, 3, 8, &zero), 0);
    CHECK(zero == 0.0f);

    /* a sample above 2^bpc - 1: the CPU kernel refuses, the program gives NaN */
    gpu_pair(GPU_SCENE, 64, 36, 10, 3, a, b);
    b[64 * 20 + 7] = 1024;
    double cpu = 0;
    const VdnnPlane pa = {a, 64, 64, 36, 10}, pb = {b, 64, 64, 36, 10};
    CHECK_EQ_INT(vdnn_motion_integer(&vdnn_kernel_env_malloc, &pa, &pb, &cpu), -EINVAL);
    float got = 0;
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, 64, 36, 10, &got), 0);
    CHECK(isnan(got));
    /* every sample at 65535 against 0 at 8 bits: the vertical pass's values
     * reach 2^24, where the horizontal pass's int32 sums overflowed (the
     * sanitizer build's UBSan caught it); still NaN, in either order */
    for (int i = 0; i < 64 * 36; i++)
        a[i] = 0, b[i] = 65535;
    for (int bpc = 8; bpc <= 15; bpc++) {
        got = 0;
        CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, 64, 36, bpc, &got), 0);
        CHECK(isnan(got));
        got = 0;
        CHECK_EQ_INT(vk_motion(&vk_emulator, b, a, 64, 36, bpc, &got), 0);
        CHECK(isnan(got));
    }

    /* arguments */
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, 2, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, 64, 2, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, 64, 36, 7, &got), -EINVAL);
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, 64, 36, 17, &got), -EINVAL);
    CHECK_EQ_INT(vk_motion(&vk_emulator, NULL, b, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, 64, 36, 10, NULL), -EINVAL);
    CHECK_EQ_INT(vk_motion(NULL, a, b, 64, 36, 10, &got), -EINVAL);
    CHECK_EQ_INT(vk_motion(&vk_emulator, a, b, VK_MAX_DIMENSION + 1, 3, 10, &got), -EINVAL);
    /* the op glue's scatter of a program's scores to separate outputs */
    const float scores[5] = {1.5f, -2.0f, 3.25f, NAN, 5.0f};
    float o[5] = {0, 0, 0, 0, 0};
    float *const dst[5] = {&o[4], &o[3], &o[2], &o[1], &o[0]};
    CHECK_EQ_INT(vk_scatter(&vk_emulator, scores, dst, 5), 0);
    CHECK(o[4] == 1.5f && o[3] == -2.0f && o[2] == 3.25f && isnan(o[1]) && o[0] == 5.0f);
    CHECK_EQ_INT(vk_scatter(&vk_emulator, scores, dst, 6), -EINVAL);
    CHECK_EQ_INT(vk_scatter(&vk_emulator, scores, dst, 0), -EINVAL);
    /* ... and its widening of an 8-bit plane (an op fed UINT8) */
    {
        enum { W = 37, H = 5 };
        uint8_t narrow[W * H];
        uint16_t wide[W * H + 1];
        for (int i = 0; i < W * H; i++)
            narrow[i] = (uint8_t)(i * 7 + 3);
        wide[W * H] = 0xBEEF; /* past the plane: untouched */
        CHECK_EQ_INT(vk_widen(&vk_emulator, narrow, wide, W, H), 0);
        int same = wide[W * H] == 0xBEEF;
        for (int i = 0; i < W * H; i++)
            same &= wide[i] == narrow[i];
        CHECK(same);
        CHECK_EQ_INT(vk_widen(&vk_emulator, narrow, wide, 0, H), -EINVAL);
        CHECK_EQ_INT(vk_widen(&vk_emulator, NULL, wide, W, H), -EINVAL);
        CHECK_EQ_INT(vk_widen(&vk_emulator, narrow, wide, VK_MAX_DIMENSION + 1, 1), -EINVAL);
    }
    printf("%d plane pairs, both orders\n", cases);
    free(a);
    free(b);
    return check_report();
}
