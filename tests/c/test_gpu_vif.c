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
#include "gpu_gain_contract.h"
#include "gpu_planes.h"
#include "vmaf_kernels.h"

static int same_as_cpu(const uint16_t *ref, const uint16_t *dist, int w, int h, int bpc,
                       double egl, const char *what)
{
    const VdnnPlane r = gpu_plane(ref, w, h, bpc), d = gpu_plane(dist, w, h, bpc);
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

/* vdnn_vif_integer's return code, for gpu_gain_contract */
static int vif_rc(const VdnnPlane *ref, const VdnnPlane *dist, double egl)
{
    double scales[4];
    return vdnn_vif_integer(&vdnn_kernel_env_malloc, ref, dist, egl, scales);
}

int main(void)
{
    CHECK(log2_table_exact());

    uint16_t *a = gpu_plane_alloc(), *b = gpu_plane_alloc();
    if (!a || !b)
        return 1;
    int cases = 0, limited = 0;
    for (GpuCase c = GPU_CASE_START; gpu_next_pair(&c, a, b);) {
        CHECK(same_as_cpu(a, b, c.w, c.h, c.bpc, 100.0, c.kind_name));
        CHECK(same_as_cpu(b, a, c.w, c.h, c.bpc, 100.0, c.kind_name));
        cases++;
        /* the gain limit changes one clamp, not the frame's size:
         * 1080p (the test's time under the sanitizers, -O0) once */
        if (c.w * c.h >= 1920 * 1080)
            continue;
        CHECK(same_as_cpu(a, b, c.w, c.h, c.bpc, 1.0, c.kind_name));
        CHECK(same_as_cpu(b, a, c.w, c.h, c.bpc, 1.0, c.kind_name));
        limited++;
    }
    /* the smallest frame, and an odd one just above it */
    gpu_pair(GPU_SCENE, 16, 16, 8, 1, a, b);
    CHECK(same_as_cpu(a, b, 16, 16, 8, 100.0, "16x16"));
    gpu_pair(GPU_NOISE, 17, 19, 12, 2, a, b);
    CHECK(same_as_cpu(a, b, 17, 19, 12, 100.0, "17x19"));

    gpu_gain_contract("vif", vk_vif, 4, 16, vif_rc, a, b);
    printf("%d plane pairs, both orders, gain limit 100; %d of them also at 1\n", cases,
           limited);
    free(a);
    free(b);
    return check_report();
}
