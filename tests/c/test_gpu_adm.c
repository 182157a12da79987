/* The ADM program (csrc/gpu/adm_program.c) on the emulator against the CPU
 * kernel vdnn_adm_integer: the same five floats (adm2, the four scales) on
 * every plane pair of gpu_planes.h, both orders, with the gain limits of
 * vmaf_v0.6.1 (100) and its neg variant (1) and a non-integer one (the CPU
 * kernel's generic paths); NaN where a sample is out of range; its
 * arguments refused. And the kernels' cube root against libm's powf. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
/* adm_cbrtf (the kernels themselves are not called here) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/adm_kernels.h"
#pragma GCC diagnostic pop
#include "gpu/programs.h"
#include "gpu_planes.h"
#include "vmaf_kernels.h"

static int same_as_cpu(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
                       double egl, const char *what)
{
    const VdnnPlane r = {ref, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    const VdnnPlane d = {dist, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    double adm2 = -1, scales[4] = {-1, -1, -1, -1};
    float got[5] = {-1, -1, -1, -1, -1};
    const int rc_cpu = vdnn_adm_integer(&vdnn_kernel_env_malloc, &r, &d, egl, &adm2, scales);
    const int rc_gpu = vk_adm(&vk_emulator, ref, dist, w, h, bpc, egl, got);
    const double want[5] = {adm2, scales[0], scales[1], scales[2], scales[3]};
    int ok = !rc_cpu && !rc_gpu;
    for (int i = 0; i < 5; i++)
        ok &= got[i] == (float)want[i];
    if (!ok) {
        fprintf(stderr, "adm %s %dx%d %d-bit egl %g: rc cpu %d, gpu %d\n", what, w, h, bpc, egl,
                rc_cpu, rc_gpu);
        for (int i = 0; i < 5; i++)
            fprintf(stderr, "  [%d] cpu %.9g gpu %.9g\n", i, (double)(float)want[i],
                    (double)got[i]);
    }
    return ok;
}

/* adm_cbrtf is glibc's powf(x, 1/3f): every 4099th float pattern (both
 * signs, zeros, subnormals, infinities, NaNs among them). */
static void cube_root_is_powf(void)
{
    int bad = 0;
    for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
        const float x = adm_as_float((uint32_t)u);
        const float want = powf(x, 1.0f / 3.0f), got = adm_cbrtf(x);
        if (!(isnan(want) ? isnan(got) : adm_as_u32(got) == adm_as_u32(want)) && bad++ < 5)
            fprintf(stderr, "adm_cbrtf(%a) = %a, powf %a\n", (double)x, (double)got,
                    (double)want);
    }
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    cube_root_is_powf();
    const size_t most = 1920 * 1080;
    uint16_t *a = malloc(most * sizeof(uint16_t)), *b = malloc(most * sizeof(uint16_t));
    if (!a || !b)
        return 1;
    static const double egls[] = {100.0, 1.0, 2.5};
    int cases = 0;
    for (int s = 0; s < GPU_N_SIZES; s++)
        for (int d = 0; d < GPU_N_DEPTHS; d++)
            for (int kind = 0; kind < GPU_KINDS; kind++) {
                const int w = gpu_sizes[s][0], h = gpu_sizes[s][1], bpc = gpu_depths[d];
                gpu_pair(kind, w, h, bpc, (uint64_t)(s * 31 + d * 7 + kind), a, b);
                for (int e = 0; e < 3; e++) {
                    /* the generic paths once per size and depth at 1080p */
                    if (e == 2 && w * h > 500000 && kind != GPU_SCENE)
                        continue;
                    CHECK(same_as_cpu(a, b, w, h, bpc, egls[e], gpu_kind_names[kind]));
                    CHECK(same_as_cpu(b, a, w, h, bpc, egls[e], gpu_kind_names[kind]));
                    cases++;
                }
            }

    /* a sample above 2^bpc - 1: the CPU kernel refuses, the program gives NaN */
    gpu_pair(GPU_SCENE, 64, 36, 10, 3, a, b);
    b[64 * 20 + 7] = 1024;
    double adm2 = 0, scales[4];
    const VdnnPlane pa = {a, 64, 64, 36, 10}, pb = {b, 64, 64, 36, 10};
    CHECK_EQ_INT(vdnn_adm_integer(&vdnn_kernel_env_malloc, &pa, &pb, 100.0, &adm2, scales),
                 -EINVAL);
    float got[5] = {0, 0, 0, 0, 0};
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 10, 100.0, got), 0);
    for (int i = 0; i < 5; i++)
        CHECK(isnan(got[i]));
    /* in the reference, at the last sample */
    gpu_pair(GPU_NOISE, 64, 36, 8, 4, a, b);
    a[64 * 36 - 1] = 256;
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 8, 1.0, got), 0);
    for (int i = 0; i < 5; i++)
        CHECK(isnan(got[i]));

    /* arguments */
    gpu_pair(GPU_SCENE, 64, 36, 10, 3, a, b);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 32, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 32, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 7, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 17, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 10, 0.5, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 10, 100.5, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 10, NAN, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, NULL, b, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, NULL, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 64, 36, 10, 100.0, NULL), -EINVAL);
    CHECK_EQ_INT(vk_adm(NULL, a, b, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, VK_MAX_DIMENSION + 1, 33, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_adm(&vk_emulator, a, b, 33, VK_MAX_DIMENSION + 1, 10, 100.0, got), -EINVAL);
    printf("%d plane pairs x gain limits, both orders\n", cases);
    free(a);
    free(b);
    return check_report();
}
