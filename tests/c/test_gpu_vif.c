/* The VIF program (csrc/gpu/vif_program.c) on the emulator against the CPU
 * kernel vdnn_vif_integer: the same four floats on every plane pair of
 * gpu_planes.h, both orders, enhancement-gain limit 100 (and 1 on all but
 * the 1080p pairs); NaN where a sample is out of range; its arguments
 * refused; and the log2 table its kernel fills, every entry, against the
 * one vmaf_vif.c makes with log2f. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu/programs.h"
/* the kernels themselves, for vif_log2_table (the others' thunks unused) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gpu/vif_kernels.h"
#pragma GCC diagnostic pop
#include "gpu_planes.h"
#include "vmaf_kernels.h"

static int same_as_cpu(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
                       double egl, const char *what)
{
    const VdnnPlane r = {ref, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    const VdnnPlane d = {dist, w, (unsigned)w, (unsigned)h, (unsigned)bpc};
    double want[4] = {-1, -1, -1, -1};
    float got[4] = {-1, -1, -1, -1};
    const int rc_cpu = vdnn_vif_integer(&vdnn_kernel_env_malloc, &r, &d, egl, want);
    const int rc_gpu = vk_vif(&vk_emulator, ref, dist, w, h, bpc, egl, got);
    int same = !rc_cpu && !rc_gpu;
    for (int s = 0; s < 4; s++) {
        const float cpu = (float)want[s];
        same = same && memcmp(&got[s], &cpu, sizeof cpu) == 0;
    }
    if (!same) {
        fprintf(stderr, "vif %s %dx%d %d-bit egl %g (rc cpu %d, gpu %d):\n", what, w, h, bpc,
                egl, rc_cpu, rc_gpu);
        for (int s = 0; s < 4; s++)
            fprintf(stderr, "  scale %d: cpu %.9g gpu %.9g\n", s, want[s], (double)got[s]);
    }
    return same;
}

/* vif_log2_table's table, every entry, against vmaf_vif.c's
 * round(log2f(i) * 2048). */
static int log2_table_exact(void)
{
    static uint16_t table[32768];
    uint16_t *t = table;
    void *args[] = {&t};
    const VkKernelRef k = VK_REF(vif_log2_table);
    if (vk_emulator.launch(vk_emulator.self, &k, 32768, 1, 1, args))
        return 0;
    int bad = 0;
    for (int i = 32768; i < 65536; i++) {
        const uint16_t want = (uint16_t)round(log2f((float)i) * 2048);
        if (table[i - 32768] != want && bad++ < 10)
            fprintf(stderr, "log2 table at %d: %u, log2f gives %u\n", i,
                    (unsigned)table[i - 32768], (unsigned)want);
    }
    return bad == 0;
}

int main(void)
{
    CHECK(log2_table_exact());

    const size_t most = 1920 * 1080;
    uint16_t *a = malloc(most * sizeof(uint16_t)), *b = malloc(most * sizeof(uint16_t));
    if (!a || !b)
        return 1;
    int cases = 0, limited = 0;
    for (int s = 0; s < GPU_N_SIZES; s++)
        for (int d = 0; d < GPU_N_DEPTHS; d++)
            for (int kind = 0; kind < GPU_KINDS; kind++) {
                const int w = gpu_sizes[s][0], h = gpu_sizes[s][1], bpc = gpu_depths[d];
                gpu_pair(kind, w, h, bpc, (uint64_t)(s * 31 + d * 7 + kind), a, b);
                const char *what = gpu_kind_names[kind];
                CHECK(same_as_cpu(a, b, w, h, bpc, 100.0, what));
                CHECK(same_as_cpu(b, a, w, h, bpc, 100.0, what));
                cases++;
                /* the gain limit changes one clamp, not the frame's size:
                 * 1080p (the test's time under the sanitizers, -O0) once */
                if (w * h >= 1920 * 1080)
                    continue;
                CHECK(same_as_cpu(a, b, w, h, bpc, 1.0, what));
                CHECK(same_as_cpu(b, a, w, h, bpc, 1.0, what));
                limited++;
            }
    /* the smallest frame, and an odd one just above it */
    gpu_pair(GPU_SCENE, 16, 16, 8, 1, a, b);
    CHECK(same_as_cpu(a, b, 16, 16, 8, 100.0, "16x16"));
    gpu_pair(GPU_NOISE, 17, 19, 12, 2, a, b);
    CHECK(same_as_cpu(a, b, 17, 19, 12, 100.0, "17x19"));

    /* a sample above 2^bpc - 1: the CPU kernel refuses, the program gives NaN */
    gpu_pair(GPU_SCENE, 64, 36, 10, 3, a, b);
    b[64 * 20 + 7] = 1024;
    double cpu[4] = {0, 0, 0, 0};
    const VdnnPlane pa = {a, 64, 64, 36, 10}, pb = {b, 64, 64, 36, 10};
    CHECK_EQ_INT(vdnn_vif_integer(&vdnn_kernel_env_malloc, &pa, &pb, 100.0, cpu), -EINVAL);
    float got[4] = {0, 0, 0, 0};
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 10, 100.0, got), 0);
    for (int s = 0; s < 4; s++)
        CHECK(isnan(got[s]));
    /* in ref, at 8 bits, in the last row */
    gpu_pair(GPU_NOISE, 64, 36, 8, 4, a, b);
    a[64 * 35 + 63] = 256;
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 8, 1.0, got), 0);
    for (int s = 0; s < 4; s++)
        CHECK(isnan(got[s]));

    /* arguments */
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 15, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 15, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 7, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 17, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 10, 0.5, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 10, 100.5, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 10, NAN, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, NULL, b, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, NULL, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 64, 36, 10, 100.0, NULL), -EINVAL);
    CHECK_EQ_INT(vk_vif(NULL, a, b, 64, 36, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, VK_MAX_DIMENSION + 1, 16, 10, 100.0, got), -EINVAL);
    CHECK_EQ_INT(vk_vif(&vk_emulator, a, b, 16, VK_MAX_DIMENSION + 1, 10, 100.0, got), -EINVAL);
    printf("%d plane pairs, both orders, gain limit 100; %d of them also at 1\n", cases,
           limited);
    free(a);
    free(b);
    return check_report();
}
